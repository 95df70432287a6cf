// The `eager` prediction policy (eager conditional execution): the rank that arrives last plays
// the straggler, and the early ranks start once they have all arrived and agreed on it
// (detection latency). Hand-derived cases against oracle and the closed forms.
#include <gtest/gtest.h>

#include "algorithms/cost_model.hpp"
#include "algorithms/registry.hpp"
#include "sim/simulation.hpp"
#include "topologies/generators.hpp"

namespace ssim::sim {
namespace {

constexpr double kAlpha = 3e-6, kBandwidth = 100e9;

SimulationConfig stragglar_config(int n, double delay, StragglerPolicy policy) {
  SimulationConfig c;
  c.topology = topo::make_switch(
      {.ranks = n, .bandwidth = BytesPerSecond{kBandwidth}, .latency = Seconds{kAlpha}});
  c.algorithm = "stragglar";
  c.size = Bytes{std::uint64_t{64} << 20};
  if (delay > 0) {
    c.delays.stragglers.push_back({.rank = 2, .extra = Distribution::constant(Seconds{delay})});
  }
  c.policy = policy;
  return c;
}

TEST(Eager, StartTimes) {
  const std::vector<Seconds> arrival = {Seconds{1}, Seconds{4}, Seconds{2}, Seconds{9}};
  const std::vector<int> late = {3};
  const std::vector<Seconds> start = eager_start(arrival, late, Seconds{0.5});
  // The early ranks agree at max(1, 4, 2) + 0.5; the straggler starts on arrival.
  EXPECT_EQ(start, (std::vector<Seconds>{Seconds{4.5}, Seconds{4.5}, Seconds{4.5}, Seconds{9}}));
  // A late rank that arrives before the agreement waits for it too.
  const std::vector<int> late2 = {1, 3};
  EXPECT_EQ(eager_start(arrival, late2, Seconds{8}),
            (std::vector<Seconds>{Seconds{10}, Seconds{10}, Seconds{10}, Seconds{10}}));
}

// The switch's route crosses two links of latency alpha each: 2 alpha per message.
TEST(Eager, DefaultDetectionIsLog2RoundsOfAlpha) {
  for (int n : {2, 3, 8, 9, 64}) {
    const SimulationConfig c = stragglar_config(n, 0, StragglerPolicy::eager);
    const double route = c.topology.route(1, 0).latency.value;
    const int rounds = n <= 2 ? 1 : (n <= 4 ? 2 : (n <= 8 ? 3 : (n <= 16 ? 4 : 6)));
    EXPECT_DOUBLE_EQ(default_detection(c.topology).value, rounds * route) << n;
  }
}

// Nobody late on a topology where the rank numbering matters (2 nodes of 4 GPUs, rail fabric):
// oracle and eager must run the schedule for its default straggler (rank n-1, the identity
// numbering), not for the lowest rank of the tie; the iterations are counted as "no rank late".
TEST(Oracle, WithoutDelayRunsTheDefaultStragglerNotATieBreak) {
  SimulationConfig c;
  c.topology = topo::make_hierarchical({.nodes = 2,
                                        .gpus_per_node = 4,
                                        .nvlink_bandwidth = BytesPerSecond{450e9},
                                        .nvlink_latency = Seconds{2e-6},
                                        .nic_bandwidth = BytesPerSecond{50e9},
                                        .nic_latency = Seconds{5e-6},
                                        .spines = 1,
                                        .spine_bandwidth = BytesPerSecond{50e9},
                                        .spine_latency = Seconds{1e-6}});
  c.algorithm = "stragglar";
  c.size = Bytes{std::uint64_t{64} << 20};
  c.iterations = 2;
  c.policy = StragglerPolicy::oracle;
  const SimulationResult tie = run_simulation(c);
  EXPECT_EQ(tie.no_late_iterations, 2);
  EXPECT_EQ(tie.default_straggler, 7);
  EXPECT_EQ(tie.iterations[0].predicted_straggler, 7);
  c.policy = StragglerPolicy::fixed;
  c.straggler = 7;
  const SimulationResult identity = run_simulation(c);
  EXPECT_DOUBLE_EQ(tie.mean_completion.value, identity.mean_completion.value);
  // The tie-break this replaces (rank 0 playing the straggler) costs differently here, so the
  // comparison above can tell the two apart.
  c.straggler = 0;
  const SimulationResult rank0 = run_simulation(c);
  EXPECT_NE(rank0.mean_completion.value, identity.mean_completion.value);
}

// Nobody late (ties: rank n-1 counts as last): every rank waits for the agreement, so eager is
// oracle shifted by the detection latency, in both metrics.
TEST(Eager, WithoutDelayItIsOraclePlusDetection) {
  for (int n : {3, 8, 13}) {
    const SimulationResult oracle = run_simulation(stragglar_config(n, 0, StragglerPolicy::oracle));
    SimulationConfig c = stragglar_config(n, 0, StragglerPolicy::eager);
    c.detection = Seconds{40e-6};
    const SimulationResult eager = run_simulation(c);
    EXPECT_NEAR(eager.mean_completion.value, oracle.mean_completion.value + 40e-6, 1e-12) << n;
    EXPECT_NEAR(eager.mean_after_last_arrival.value, oracle.mean_after_last_arrival.value + 40e-6,
                1e-12)
        << n;
    EXPECT_DOUBLE_EQ(eager.prediction_accuracy, 1.0);
  }
}

// A straggler late by d >= D (detection): the early ranks start at D instead of 0, which is
// oracle with the straggler late by d - D, shifted by D. So eager's time after the straggler
// arrives is oracle's at delay d - D: the same once d - D hides phase 1, more below that.
TEST(Eager, IsOracleWithTheDelayShortenedByTheDetection) {
  const double detection = 0.1e-3;
  double hidden = 0;
  for (double d : {0.15e-3, 0.3e-3, 0.6e-3, 3e-3, 5e-3}) {
    SimulationConfig c = stragglar_config(8, d, StragglerPolicy::eager);
    c.detection = Seconds{detection};
    const SimulationResult eager = run_simulation(c);
    const SimulationResult shorter =
        run_simulation(stragglar_config(8, d - detection, StragglerPolicy::oracle));
    EXPECT_NEAR(eager.mean_after_last_arrival.value, shorter.mean_after_last_arrival.value, 1e-12)
        << d;
    EXPECT_NEAR(eager.mean_completion.value, detection + shorter.mean_completion.value, 1e-12) << d;
    EXPECT_EQ(eager.iterations[0].predicted_straggler, 2);
    const SimulationResult oracle = run_simulation(stragglar_config(8, d, StragglerPolicy::oracle));
    EXPECT_GE(eager.mean_after_last_arrival.value, oracle.mean_after_last_arrival.value - 1e-12);
    if (d <= 0.6e-3) {  // d - D does not hide phase 1 (~0.58 ms): eager pays up to D more
      EXPECT_GT(eager.mean_after_last_arrival.value, oracle.mean_after_last_arrival.value + 50e-6)
          << d;
    }
    if (d >= 3e-3) {  // phase 1 hidden either way
      EXPECT_NEAR(eager.mean_after_last_arrival.value, oracle.mean_after_last_arrival.value, 1e-12);
      hidden = oracle.mean_after_last_arrival.value;
    }
  }
  EXPECT_GT(hidden, 0);
}

// Baselines are not straggler-aware: eager changes nothing for them.
TEST(Eager, BaselinesIgnoreIt) {
  SimulationConfig c = stragglar_config(8, 1e-3, StragglerPolicy::eager);
  c.algorithm = "ring";
  SimulationConfig o = c;
  o.policy = StragglerPolicy::oracle;
  EXPECT_EQ(run_simulation(c).mean_completion, run_simulation(o).mean_completion);
}

// k = 2 late ranks: the two latest play the late roles; the others start after the third-latest
// arrival plus the detection.
TEST(Eager, TwoLateRanks) {
  SimulationConfig c = stragglar_config(8, 0, StragglerPolicy::eager);
  c.delays.stragglers.push_back({.rank = 1, .extra = Distribution::constant(Seconds{2e-3})});
  c.delays.stragglers.push_back({.rank = 5, .extra = Distribution::constant(Seconds{4e-3})});
  c.options.set("stragglers", "2");
  c.detection = Seconds{0};
  SimulationConfig o = c;
  o.policy = StragglerPolicy::oracle;
  // With no detection latency and the early ranks all at 0, eager is oracle.
  EXPECT_NEAR(run_simulation(c).mean_completion.value, run_simulation(o).mean_completion.value,
              1e-12);
  c.detection = Seconds{10e-3};  // longer than both delays: everyone starts at 10 ms
  const SimulationResult r = run_simulation(c);
  SimulationConfig none = o;
  none.delays.stragglers.clear();
  const double all_together = run_simulation(none).mean_completion.value;
  EXPECT_NEAR(r.mean_completion.value, 10e-3 + all_together, 1e-9);
}

}  // namespace
}  // namespace ssim::sim
