// Calibration by simulation: fit the parameters of a topology kind so that the simulator
// reproduces measured collective runs (`stragglesim calibrate RUNS.csv ... --topology-kind
// shared_device`), and the comparison it reports on the rows it used and on rows held out.
//
//   SimFitOptions o;
//   o.kind = "shared_device";
//   o.holdout_filters = {"delay_s>0"};
//   SimFit fit = fit_by_simulation(read_measured_files({"graph-d0-ring.csv", ...}), o);
//   fit.values;            // parameter -> value in SI units (bytes/s, seconds, factors)
//   fit.rows;              // every compared row with its error, fitted or held out
//
// What is compared: the measured quantity a simulation also produces, per row: time_s (first
// arrival to last finish) when nobody is delayed, after_last_arrival_s when delay_s > 0. Rows
// are grouped into points (file, algorithm, ranks, bytes, delay_s, straggler, dtype, options);
// the fit minimizes the root mean square of (simulated - median measured) / median measured over
// the fitted points with calib::minimize_positive (log-parameters, bounds, seeded restarts), and
// simulates each distinct (algorithm, ranks, bytes, delay, straggler, options) once per
// evaluation, its schedule generated once. Kinds and their parameters (SI units):
//   shared_device  memory_bandwidth, copy_latency, apply_latency, launch_time, unaligned_factor
//                  (fitted by default), operation_bandwidth (fitted with `fit`, else no cap),
//                  copy_factor, reduce_factor, apply_copy_factor (fixed at 2, 3, 2 unless given)
//   switch         bandwidth, latency (fitted; alpha-beta model), gamma (fixed, default 0)
// Each row is simulated with the schedule it ran: its own options column (rows whose options
// differ are different runs), or, in a file without that column, the options stated for its
// algorithm in `algorithm_options` (calib::RunOptionsResolver; a bad option is an InputError
// naming the file, line and column). Algorithms whose schedule depends on a node structure
// (option gpus_per_node) are skipped, with a note, when a row neither records nor was stated
// its options, so that no row is compared with a schedule that did not run.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "algorithms/registry.hpp"
#include "calibration/calibration.hpp"
#include "topologies/topology.hpp"

namespace ssim::experiments {

struct MeasuredFile {
  std::string name;
  std::vector<calib::MeasuredRun> runs;
};
// Reads each result CSV (read_input: "-" is stdin).
std::vector<MeasuredFile> read_measured_files(const std::vector<std::string>& paths);

struct SimFitOptions {
  std::string kind = "shared_device";
  std::map<std::string, double> fixed;  // parameter -> value, not fitted
  std::vector<std::string> fit;         // parameters fitted beyond the kind's default set
  // Held-out rows: those matching any filter "COLUMN OP VALUE" (COLUMN: algorithm, ranks,
  // bytes, delay_s, straggler, dtype, file (glob on the file's base name); OP: = != < <= > >=),
  // plus a seeded fraction of the points.
  std::vector<std::string> holdout_filters;
  double holdout_fraction = 0;
  std::uint64_t seed = 0;
  // Per algorithm: the options of rows without an options column (-O / --algorithm-option).
  std::map<std::string, alg::Options> algorithm_options;
  int threads = 1;
  int max_evaluations = 4000;
  // The schedules of the distinct simulations are kept for the whole fit: their estimated
  // memory (resource_check.hpp's bytes per transfer) is checked against this budget before
  // each is built (ResourceError naming the row); 0: the default budget (half the memory).
  std::uint64_t max_memory = 0;
  // The fit's estimated time (max_evaluations evaluations of the fitted cases, each timed as
  // resource_check.hpp times a simulation, over `threads`) is checked against this limit before
  // the fit starts (ResourceError); a --max-time value, "" for the default (an hour).
  std::string max_time;
};

// One measured row and its simulated counterpart.
struct ComparedRow {
  std::string file;
  int line = 0;
  std::string algorithm;
  int ranks = 0;
  std::uint64_t bytes = 0;
  double delay = 0;
  std::string dtype;
  double measured = 0;   // seconds: time_s, or after_last_arrival_s when delayed
  double simulated = 0;  // the same quantity
  bool held_out = false;
  double error() const { return (simulated - measured) / measured; }
};

struct SimFit {
  std::string kind;
  std::vector<std::string> parameters;  // every parameter of the kind, in a fixed order
  std::vector<std::string> fitted;      // those fitted
  std::map<std::string, double> values;
  double objective = 0;  // RMS relative error over the fitted points
  int evaluations = 0;
  bool converged = false;
  std::size_t fitted_points = 0, held_out_points = 0, simulations = 0;
  std::vector<ComparedRow> rows;
  std::vector<std::string> notes;  // skipped rows and why
  std::vector<std::string> sources;
};

// Fits (see the header comment). InputError: no usable row, fewer fitted points than
// parameters, an unknown or malformed parameter, filter or kind, bounds excluding every value;
// a fit that does not converge is returned with converged = false (the caller refuses it).
SimFit fit_by_simulation(const std::vector<MeasuredFile>& files, const SimFitOptions& options);

// A prediction without a fit: every row of `files` simulated on `options.kind` with the
// parameters at `values` (those missing at the kind's defaults; options.fixed and options.fit are
// replaced), compared with the measured ones; objective is the RMS over the points not held out.
// Used to check a calibrated file against runs of another machine (docs/calibration.md).
SimFit compare_by_simulation(const std::vector<MeasuredFile>& files, SimFitOptions options,
                             const std::map<std::string, double>& values);

// The parameters (as fit_by_simulation names them) of a shared_device topology, e.g. one loaded
// from a calibrated file; InputError for another kind.
std::map<std::string, double> topology_parameters(const topo::Topology& topology);

// The topology of `kind` with these parameter values (missing ones at their defaults).
topo::Topology make_fitted_topology(const std::string& kind,
                                    const std::map<std::string, double>& values, int ranks);

// The simulated time of one run (completion when delay is 0, else after the last arrival) of
// `algorithm` with `options` on `topology`: the straggler (straggler-aware schedules are built
// for it) arrives `delay` after the others.
double simulate_point(const topo::Topology& topology, const std::string& algorithm,
                      const alg::Options& options, std::uint64_t bytes, double delay,
                      int straggler);

// The delay in [lo, hi] at which `a` and `b` take equally long after the last arrival (bisection
// to `tolerance` seconds; a is assumed slower at lo and faster at hi, or the other way round);
// nullopt when they do not cross in [lo, hi].
std::optional<double> crossover_delay(const topo::Topology& topology, const std::string& a,
                                      const std::string& b, std::uint64_t bytes, int straggler,
                                      double lo, double hi, double tolerance = 1e-6);

// Quantile of |error| over rows selected by `held_out` (nullopt: all) and algorithm ("" = all).
double abs_error_quantile(const std::vector<ComparedRow>& rows, double q,
                          std::optional<bool> held_out = std::nullopt,
                          const std::string& algorithm = "");

}  // namespace ssim::experiments
