// Calibration of a machine by simulation from nccl-tests logs (`stragglesim calibrate LOG...
// --topology FILE`): the parameters of a topology (its bandwidth and latency keys) are fitted so
// that the simulated algorithm (`nccl` by default: what NCCL runs for that size and machine)
// takes the logs' measured out-of-place times, with rows held out and reported apart.
//
//   NcclLogFitOptions o;
//   o.parameters = {{"nic.bandwidth", 50e9, true}, {"nic.latency", 2e-6, true}, ...};
//   o.topology = [&](const std::map<std::string, double>& v) { return load_topology_with(file, v); };
//   NcclLogFit fit = fit_nccl_logs({{"t15.txt", parse_nccl_tests(text, "t15.txt")}}, o);
//
// Each log is simulated with the options it ran under: NCCL_ALGO / NCCL_PROTO from its command
// line (a forced algorithm or protocol, calib::nccl_algo_option) unless `options` gives them,
// and the topology's gpus_per_node. The objective is the root mean square of (simulated -
// measured) / measured over the fitted rows (one simulation per distinct log and size), minimised
// with calib::minimize_positive on log-parameters within [start / 100, start x 100].
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <string>
#include <vector>

#include "algorithms/registry.hpp"
#include "calibration/nccl_tests.hpp"
#include "sim/simulation.hpp"
#include "topologies/topology.hpp"

namespace ssim::experiments {

struct NcclLogInput {
  std::string name;  // for messages and the `file` holdout column
  calib::NcclTestsLog log;
};

struct NcclLogParameter {
  std::string name;  // e.g. "nic.bandwidth"
  double value = 0;  // the start of a fit, or the value held (SI units)
  bool fitted = false;
};

struct NcclLogFitOptions {
  std::vector<NcclLogParameter> parameters;
  // The topology with the parameters at these values (every parameter is given).
  std::function<topo::Topology(const std::map<std::string, double>&)> topology;
  std::string algorithm = "nccl";
  alg::Options options;  // for every log; a log's NCCL_ALGO / NCCL_PROTO fill algo / proto
  sim::NetworkKind network = sim::NetworkKind::flow;
  bool pipelined_steps = true;  // NCCL kernels' steps (sim::NetworkConfig::pipelined_kernels)
  // Rows left out of the fit and reported apart: "bytes OP SIZE" (OP: = != < <= > >=) or
  // "file=GLOB" / "file!=GLOB" (on the log's base name); a row matching any is held out.
  std::vector<std::string> holdout;
  int max_evaluations = 4000;
  std::uint64_t seed = 0;
};

struct NcclLogRow {
  std::string file;
  int line = 0;
  std::uint64_t bytes = 0;
  double measured = 0;   // out-of-place time, seconds
  double simulated = 0;  // with the fitted parameters
  bool held_out = false;
  double error() const { return (simulated - measured) / measured; }
};

struct NcclLogFit {
  std::map<std::string, double> values;  // every parameter, fitted or held
  std::vector<std::string> fitted;
  std::map<std::string, std::string> log_options;  // log name -> the options it was simulated with
  std::vector<std::string> notes;                  // e.g. an NCCL_ALGO list NCCL chose from
  double objective = 0;  // RMS relative error over the fitted rows
  int evaluations = 0;
  bool converged = false;
  std::size_t simulations = 0;  // distinct (log, size) simulations per evaluation (fitted rows')
  std::vector<NcclLogRow> rows;
};

// Fits (see the header comment). InputError naming the log, line and value: a log whose rank
// count is not the topology's GPU count, an NCCL_ALGO/NCCL_PROTO the algorithm refuses on this
// machine, a malformed holdout, no fitted row, fewer fitted rows than parameters plus one. A
// fit that does not converge is returned with converged = false (the caller refuses it).
NcclLogFit fit_nccl_logs(const std::vector<NcclLogInput>& logs, const NcclLogFitOptions& options);

}  // namespace ssim::experiments
