#include "sim/simulation.hpp"

#include <gtest/gtest.h>

#include <sstream>

#include "algorithms/cost_model.hpp"
#include "common/error.hpp"
#include "topologies/generators.hpp"

namespace ssim::sim {
namespace {

SimulationConfig base_config(int n) {
  SimulationConfig c;
  c.topology =
      topo::make_switch({.ranks = n, .bandwidth = BytesPerSecond{100e9}, .latency = Seconds{2e-6}});
  c.algorithm = "ring";
  c.size = Bytes{std::uint64_t{1} << 20};
  return c;
}

TEST(Simulation, NoDelaysGiveTheClosedForm) {
  SimulationConfig c = base_config(8);
  c.iterations = 3;
  const SimulationResult r = run_simulation(c);
  const double want = alg::ring_cost(8, 1 << 20, alg::CostParams{2e-6, 1 / 100e9, 0});
  ASSERT_EQ(r.iterations.size(), 3u);
  EXPECT_NEAR(r.mean_completion.value, want, 1e-9 * want);
  EXPECT_NEAR(r.mean_after_last_arrival.value, want, 1e-9 * want);
  EXPECT_DOUBLE_EQ(r.algbw.value, (1 << 20) / r.mean_after_last_arrival.value);
  EXPECT_DOUBLE_EQ(r.busbw.value, r.algbw.value * 2 * 7 / 8);
  EXPECT_EQ(r.rounds, 14u);
  EXPECT_EQ(r.transfers, 14u * 8u);
  EXPECT_FALSE(r.straggler_aware);
  EXPECT_FALSE(r.traced.has_value());
}

SimulationConfig noisy_config(std::uint64_t seed) {
  SimulationConfig c = base_config(8);
  c.delays.base = Distribution::exponential(Seconds{20e-6});
  c.delays.stragglers.push_back(
      {.rank = 5, .extra = Distribution::constant(Seconds{1e-3}), .persistence = 0.7});
  c.policy = StragglerPolicy::previous;
  c.iterations = 40;
  c.seed = seed;
  c.network = NetworkKind::flow;
  return c;
}

TEST(Simulation, SameSeedSameResults) {
  const SimulationResult a = run_simulation(noisy_config(11));
  const SimulationResult b = run_simulation(noisy_config(11));
  ASSERT_EQ(a.iterations.size(), b.iterations.size());
  for (std::size_t i = 0; i < a.iterations.size(); ++i) {
    EXPECT_EQ(a.iterations[i].completion, b.iterations[i].completion);
    EXPECT_EQ(a.iterations[i].after_last_arrival, b.iterations[i].after_last_arrival);
    EXPECT_EQ(a.iterations[i].last_rank, b.iterations[i].last_rank);
  }
  EXPECT_EQ(a.mean_completion, b.mean_completion);
  EXPECT_EQ(a.link_bytes, b.link_bytes);
  const SimulationResult other = run_simulation(noisy_config(12));
  EXPECT_NE(a.mean_completion, other.mean_completion);
}

TEST(Simulation, StragglerPredictionRelabelsTheSchedule) {
  // direct is straggler-aware (built for rank n-1). The straggler is rank 2, always, 1 ms late.
  // oracle maps the schedule's straggler onto rank 2; fixed keeps it on rank 7 (a wrong guess),
  // which must cost more after the last arrival.
  SimulationConfig c = base_config(8);
  c.algorithm = "direct";
  c.delays.stragglers.push_back(
      {.rank = 2, .extra = Distribution::constant(Seconds{1e-3}), .persistence = 1.0});
  c.iterations = 2;
  c.policy = StragglerPolicy::oracle;
  const SimulationResult oracle = run_simulation(c);
  c.policy = StragglerPolicy::fixed;
  const SimulationResult fixed = run_simulation(c);
  ASSERT_TRUE(oracle.straggler_aware);
  EXPECT_EQ(oracle.prediction_accuracy, 1.0);
  EXPECT_EQ(fixed.prediction_accuracy, 0.0);
  EXPECT_EQ(fixed.iterations[0].predicted_straggler, 7);
  EXPECT_LT(oracle.mean_after_last_arrival.value, fixed.mean_after_last_arrival.value);
}

TEST(Simulation, TracesTheRequestedIteration) {
  SimulationConfig c = base_config(4);
  c.iterations = 3;
  c.trace_iteration = 1;
  const SimulationResult r = run_simulation(c);
  ASSERT_TRUE(r.traced.has_value());
  EXPECT_EQ(r.traced->timeline.size(), r.transfers);
  EXPECT_NE(r.trace_json.find("\"traceEvents\""), std::string::npos);
  EXPECT_NE(r.trace_json.find("iteration 1"), std::string::npos);
}

// Streamed to trace_out, the trace is the same text as the one kept in trace_json, and the
// result keeps neither it nor the timeline.
TEST(Simulation, StreamsTheTraceWithoutKeepingIt) {
  for (NetworkKind kind : {NetworkKind::alphabeta, NetworkKind::flow}) {
    SimulationConfig c = base_config(6);
    c.network = kind;
    c.iterations = 3;
    c.trace_iteration = 2;
    const SimulationResult kept = run_simulation(c);
    std::ostringstream out;
    c.trace_out = &out;
    const SimulationResult streamed = run_simulation(c);
    EXPECT_FALSE(streamed.traced.has_value());
    EXPECT_TRUE(streamed.trace_json.empty());
    EXPECT_EQ(out.str(), kept.trace_json) << to_string(kind);
    EXPECT_NE(out.str().find("\"send queue\""), std::string::npos);
    EXPECT_EQ(out.str().find("\"link ") != std::string::npos, kind == NetworkKind::flow);
  }
  SimulationConfig c = base_config(4);
  c.trace_iteration = 0;
  c.trace_links = 2;
  EXPECT_THROW(run_simulation(c), InputError);  // alphabeta: no link rates
  c.network = NetworkKind::flow;
  c.trace_links = -1;
  EXPECT_THROW(run_simulation(c), InputError);
}

TEST(Simulation, RejectsBadConfigurations) {
  SimulationConfig c = base_config(4);
  c.iterations = 0;
  EXPECT_THROW(run_simulation(c), InputError);
  c = base_config(4);
  c.size = Bytes{0};
  EXPECT_THROW(run_simulation(c), InputError);
  c = base_config(4);
  c.trace_iteration = 1;
  EXPECT_THROW(run_simulation(c), InputError);
  c = base_config(4);
  c.algorithm = "nope";
  EXPECT_THROW(run_simulation(c), InputError);
}

}  // namespace
}  // namespace ssim::sim
