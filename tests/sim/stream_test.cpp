// Streamed schedules (RoundFeed::streamed: rounds generated one at a time per iteration) give
// exactly the results of materialized ones, for every algorithm, with stragglers and rank
// relabelling, on a topology where the alpha-beta model shares links and one where it cannot,
// under both network models.
#include <gtest/gtest.h>

#include "sim/simulation.hpp"
#include "topologies/generators.hpp"

namespace ssim::sim {
namespace {

void expect_same(const SimulationResult& a, const SimulationResult& b, const std::string& where) {
  EXPECT_EQ(a.rounds, b.rounds) << where;
  EXPECT_EQ(a.transfers, b.transfers) << where;
  EXPECT_EQ(a.chunks, b.chunks) << where;
  EXPECT_EQ(a.straggler_aware, b.straggler_aware) << where;
  ASSERT_EQ(a.iterations.size(), b.iterations.size()) << where;
  for (std::size_t i = 0; i < a.iterations.size(); ++i) {
    const IterationSummary &x = a.iterations[i], &y = b.iterations[i];
    EXPECT_EQ(x.completion.value, y.completion.value) << where << " iteration " << i;
    EXPECT_EQ(x.after_last_arrival.value, y.after_last_arrival.value) << where;
    EXPECT_EQ(x.last_rank, y.last_rank) << where;
    EXPECT_EQ(x.predicted_straggler, y.predicted_straggler) << where;
    ASSERT_EQ(x.finish.size(), y.finish.size()) << where;
    for (std::size_t r = 0; r < x.finish.size(); ++r)
      EXPECT_EQ(x.finish[r].value, y.finish[r].value) << where << " rank " << r;
  }
  EXPECT_EQ(a.mean_completion.value, b.mean_completion.value) << where;
  EXPECT_EQ(a.link_bytes, b.link_bytes) << where;
  EXPECT_EQ(a.link_utilization, b.link_utilization) << where;
  ASSERT_EQ(a.shared_link.has_value(), b.shared_link.has_value()) << where;
  if (a.shared_link) {
    EXPECT_EQ(a.shared_link->describe(), b.shared_link->describe()) << where;
  }
}

TEST(StreamedRounds, EqualMaterializedForEveryAlgorithm) {
  for (const alg::AlgorithmInfo& info : alg::algorithms()) {
    if (info.in_network) continue;  // switch reductions: switch_reduce_test, nvls_test
    for (int n : {5, 8, 13}) {
      if (!info.supports_ranks(n)) continue;
      for (const bool ring : {false, true}) {
       for (const NetworkKind model : {NetworkKind::alphabeta, NetworkKind::flow}) {
        SimulationConfig c;
        c.network = model;
        c.topology =
            ring ? topo::make_ring(
                       {.ranks = n, .bandwidth = BytesPerSecond{50e9}, .latency = Seconds{1e-6}})
                 : topo::make_switch(
                       {.ranks = n, .bandwidth = BytesPerSecond{100e9}, .latency = Seconds{2e-6}});
        c.algorithm = info.name;
        c.size = Bytes{(std::uint64_t{1} << 20) + 3};  // a remainder in the last chunk
        c.gamma = SecondsPerByte{1e-12};
        c.delays.base = Distribution::exponential(Seconds{20e-6});
        c.delays.stragglers.push_back(
            {.rank = n / 2, .extra = Distribution::constant(Seconds{1e-3}), .persistence = 0.6});
        c.policy = StragglerPolicy::previous;
        c.iterations = 6;
        c.seed = 7;
        c.per_rank_times = true;
        c.rounds = RoundFeed::materialized;
        const SimulationResult m = run_simulation(c);
        c.rounds = RoundFeed::streamed;
        ASSERT_TRUE(streams_rounds(c));
        const SimulationResult s = run_simulation(c);
        expect_same(m, s,
                    info.name + " n=" + std::to_string(n) + (ring ? " ring" : " switch") +
                        (model == NetworkKind::flow ? " flow" : ""));
       }
      }
    }
  }
}

TEST(StreamedRounds, OnlyWhereTheModelAllows) {
  SimulationConfig c;
  c.topology =
      topo::make_switch({.ranks = 8, .bandwidth = BytesPerSecond{100e9}, .latency = Seconds{2e-6}});
  c.size = Bytes{1 << 20};
  c.rounds = RoundFeed::streamed;
  EXPECT_TRUE(streams_rounds(c));
  c.trace_iteration = 0;  // traces need the schedule
  EXPECT_FALSE(streams_rounds(c));
  c.trace_iteration.reset();
  c.network = NetworkKind::flow;  // the event engine takes rounds as ranks reach them
  EXPECT_TRUE(streams_rounds(c));
  c.network = NetworkKind::alphabeta;
  c.algorithm = "stragglar";
  c.adaptive_fallbacks = {"ring"};  // candidates run twice per iteration
  EXPECT_FALSE(streams_rounds(c));
  c.adaptive_fallbacks.clear();
  c.rounds = RoundFeed::automatic;  // small: materialized once and reused
  EXPECT_FALSE(streams_rounds(c));
  c.topology = topo::make_switch(
      {.ranks = 2048, .bandwidth = BytesPerSecond{100e9}, .latency = Seconds{2e-6}});
  EXPECT_TRUE(streams_rounds(c));
}

}  // namespace
}  // namespace ssim::sim
