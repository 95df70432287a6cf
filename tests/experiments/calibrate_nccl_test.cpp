// fit_nccl_logs (experiments/runner/calibrate_nccl.hpp): nccl-tests rows made by simulating
// `nccl` on a machine with known figures are fitted back to those figures from another start;
// holdouts, the log's forced algorithm and the refusals.
#include "experiments/runner/calibrate_nccl.hpp"

#include <gtest/gtest.h>

#include <cmath>

#include "common/error.hpp"
#include "topologies/generators.hpp"

namespace ssim::experiments {
namespace {

// 2 nodes x 2 GPUs; the parameters are named as a hierarchical topology file's keys.
topo::Topology machine(const std::map<std::string, double>& v) {
  return topo::make_hierarchical({.nodes = 2,
                                  .gpus_per_node = 2,
                                  .nvlink_bandwidth = BytesPerSecond{v.at("nvlink.bandwidth")},
                                  .nvlink_latency = Seconds{v.at("nvlink.latency")},
                                  .nic_bandwidth = BytesPerSecond{v.at("nic.bandwidth")},
                                  .nic_latency = Seconds{v.at("nic.latency")},
                                  .fabric = topo::FabricKind::rail_optimized,
                                  .spines = 1,
                                  .spine_bandwidth = BytesPerSecond{50e9},
                                  .spine_latency = Seconds{1e-6}});
}

const std::map<std::string, double> kTruth = {{"nvlink.bandwidth", 200e9},
                                              {"nvlink.latency", 2e-6},
                                              {"nic.bandwidth", 20e9},
                                              {"nic.latency", 3e-6}};

// A log of `ranks` ranks whose out-of-place times are `nccl` (with `options`) on the true
// machine, 256 KiB to 64 MiB, NCCL's steps per round: pipelined (the default), a step across
// nodes costs at least NCCL's 14 us, which hides this machine's 3 us NIC latency from any fit.
NcclLogInput log_of(const std::string& name, const alg::Options& options) {
  NcclLogInput in;
  in.name = name;
  in.log.ranks = 4;
  int line = 10;
  for (std::uint64_t bytes = std::uint64_t{1} << 18; bytes <= (std::uint64_t{1} << 26); bytes *= 4) {
    sim::SimulationConfig c;
    c.topology = machine(kTruth);
    c.network = sim::NetworkKind::flow;
    c.pipelined_kernels = false;
    c.algorithm = "nccl";
    c.options = options;
    c.options.set("gpus_per_node", "2");
    c.size = Bytes{bytes};
    calib::NcclTestsRow row;
    row.line = line++;
    row.bytes = bytes;
    row.out_of_place.time_us = sim::run_simulation(c).iterations.front().completion.value * 1e6;
    in.log.rows.push_back(row);
  }
  return in;
}

NcclLogFitOptions options_from(double nic_start) {
  NcclLogFitOptions o;
  for (const auto& [name, value] : kTruth) {
    const bool fitted = name.starts_with("nic.");
    o.parameters.push_back({name, fitted ? (name == "nic.bandwidth" ? nic_start : 1e-6) : value, fitted});
  }
  o.topology = machine;
  o.pipelined_steps = false;  // as the logs were made (log_of)
  return o;
}

TEST(CalibrateNccl, RecoversTheNicFiguresTheLogsWereMadeWith) {
  alg::Options ring;
  ring.set("algo", "ring");
  std::vector<NcclLogInput> logs = {log_of("ring.txt", ring), log_of("choice.txt", {})};
  logs[0].log.nccl_algo = "Ring";  // as the log's command line would say (NCCL_ALGO=Ring)
  logs[0].log.nccl_algo_line = 3;
  NcclLogFitOptions o = options_from(50e9);
  o.holdout = {"file=choice.*"};
  const NcclLogFit fit = fit_nccl_logs(logs, o);
  ASSERT_TRUE(fit.converged);
  EXPECT_NEAR(fit.values.at("nic.bandwidth") / 20e9, 1.0, 1e-3);
  EXPECT_NEAR(fit.values.at("nic.latency") / 3e-6, 1.0, 2e-2);
  EXPECT_EQ(fit.values.at("nvlink.bandwidth"), 200e9);  // held
  EXPECT_LT(fit.objective, 1e-3);
  EXPECT_EQ(fit.log_options.at("ring.txt"), "algo=ring;gpus_per_node=2");
  EXPECT_EQ(fit.log_options.at("choice.txt"), "gpus_per_node=2");
  EXPECT_EQ(fit.simulations, 5u);  // the held-out log is simulated only at the end
  std::size_t held = 0;
  for (const NcclLogRow& r : fit.rows) {
    held += r.held_out ? 1 : 0;
    EXPECT_EQ(r.held_out, r.file == "choice.txt");
    EXPECT_NEAR(r.error(), 0.0, 5e-3) << r.file << " " << r.bytes;  // held out too: same machine
  }
  EXPECT_EQ(held, 5u);
}

TEST(CalibrateNccl, RefusesWhatItCannotFit) {
  const std::vector<NcclLogInput> logs = {log_of("a.txt", {})};
  const auto error = [&](NcclLogFitOptions o, std::vector<NcclLogInput> l) {
    try {
      (void)fit_nccl_logs(l, o);
    } catch (const InputError& e) {
      return std::string(e.what());
    }
    return std::string("(no error)");
  };
  NcclLogFitOptions o = options_from(50e9);
  o.holdout = {"ranks>2"};
  EXPECT_NE(error(o, logs).find("unknown column 'ranks'"), std::string::npos) << error(o, logs);
  o.holdout = {"bytes>=0"};
  EXPECT_NE(error(o, logs).find("no row of the logs is left to fit"), std::string::npos);
  o.holdout = {};
  std::vector<NcclLogInput> wrong = logs;
  wrong[0].log.ranks = 8;
  wrong[0].log.ranks_line = 6;
  EXPECT_NE(error(o, wrong).find("a.txt:6: the log ran 8 ranks"), std::string::npos) << error(o, wrong);
  std::vector<NcclLogInput> nvls = logs;  // no switch reduces on this machine
  nvls[0].log.nccl_algo = "NVLS";
  nvls[0].log.nccl_algo_line = 2;
  EXPECT_NE(error(o, nvls).find("a.txt"), std::string::npos) << error(o, nvls);
  EXPECT_NE(error(o, nvls).find("nvls"), std::string::npos) << error(o, nvls);
}

}  // namespace
}  // namespace ssim::experiments
