#include "sim/executor.hpp"

#include <gtest/gtest.h>

#include <random>
#include <vector>

#include "algorithms/registry.hpp"
#include "common/error.hpp"
#include "tests/algorithms/round_timing.hpp"
#include "tests/sim/fixtures.hpp"
#include "topologies/generators.hpp"

namespace ssim::sim {
namespace {

using testing::at;
using testing::into_rank_one;
using testing::random_arrivals;
using testing::random_schedule;
using testing::unit_switch;

TEST(Executor, PortsServeTransfersInScheduleOrder) {
  // Round 0: 0 -> 1 and 2 -> 1, 4 bytes each (one chunk), all arrive at 0. Rank 1's receive
  // port takes 0 -> 1 first: [0, 5]; then 2 -> 1: [5, 10]. Finish: rank 0 at 5, ranks 1, 2 at 10.
  const alg::Schedule s = into_rank_one(1, 1, alg::Op::copy);
  const topo::Topology t = unit_switch(3);
  Executor ex(s, t, NetworkConfig{}, Bytes{4});
  for (bool events : {false, true}) {
    RunOptions o;
    o.use_event_engine = events;
    o.record_timeline = true;
    const IterationResult res = ex.run(at({0, 0, 0}), o);
    EXPECT_EQ(res.finish[0].value, 5);
    EXPECT_EQ(res.finish[1].value, 10);
    EXPECT_EQ(res.finish[2].value, 10);
    ASSERT_EQ(res.timeline.size(), 2u);
    EXPECT_EQ(res.timeline[1].start.value, 5);
    EXPECT_EQ(res.timeline[1].src_ready.value, 0);
    // Rank 1 arrives at 3: 0 -> 1 runs [3, 8], then 2 -> 1 [8, 13].
    const IterationResult late = ex.run(at({0, 3, 0}), o);
    EXPECT_EQ(late.finish[0].value, 8);
    EXPECT_EQ(late.finish[1].value, 13);
    EXPECT_EQ(late.timeline[0].dst_ready.value, 3);
    EXPECT_EQ(late.completion.value, 13);
    EXPECT_EQ(late.after_last_arrival.value, 10);
  }
}

TEST(Executor, RoundEndsPerRankFromTheTimeline) {
  // The schedule of ReductionDoesNotHoldTheReceivePort: round 0 0 -> 1, 2 -> 1 (reduce, 2 s per
  // reduction), round 1 1 -> 0. Rank 0's round 0 ends when its send's last byte arrived (5),
  // rank 2's at 10; rank 1's when its second reduction is done (12). Round 1 (copy [12, 17]) ends
  // at 17 on both of its ranks; rank 2 takes no part in it.
  alg::Schedule s = into_rank_one(1, 1, alg::Op::reduce);
  s.add_round().add(1, 0, 0, 1, alg::Op::copy);
  const topo::Topology t = unit_switch(3);
  Executor ex(s, t, NetworkConfig{NetworkKind::alphabeta, SecondsPerByte{0.5}}, Bytes{4});
  RunOptions o;
  o.record_timeline = true;
  const auto ends = round_ends(ex.run(at({0, 0, 0}), o), s.rounds.size());
  ASSERT_EQ(ends.size(), 3u);
  ASSERT_EQ(ends[0].size(), 2u);
  EXPECT_EQ(ends[0][0], Seconds{5});
  EXPECT_EQ(ends[1][0], Seconds{12});
  EXPECT_EQ(ends[2][0], Seconds{10});
  EXPECT_EQ(ends[0][1], Seconds{17});
  EXPECT_EQ(ends[1][1], Seconds{17});
  EXPECT_FALSE(ends[2][1].has_value());
}

TEST(Executor, FlowModelSharesTheReceiversLink) {
  // Same round in the flow model: ports do not serialize. Both flows wait the 1 s latency, then
  // share rank 1's down link (1 B/s) at 0.5 B/s each: 4 bytes take 8 s, both end at 1 + 8 = 9
  // (the alpha-beta model gives 5 and 10, see above).
  const alg::Schedule s = into_rank_one(1, 1, alg::Op::copy);
  const topo::Topology t = unit_switch(3);
  Executor ex(s, t, NetworkConfig{NetworkKind::flow, SecondsPerByte{0}}, Bytes{4});
  const IterationResult res = ex.run(at({0, 0, 0}));
  EXPECT_DOUBLE_EQ(res.finish[0].value, 9);
  EXPECT_DOUBLE_EQ(res.finish[1].value, 9);
  EXPECT_DOUBLE_EQ(res.finish[2].value, 9);
  EXPECT_EQ(res.link_bytes.size(), static_cast<std::size_t>(t.link_count()));
}

TEST(Executor, FlowModelUnequalFlowsIntoOneLink) {
  // 2 chunks of 4 bytes (8 bytes). 0 -> 1 sends chunk 0 (4 B), 2 -> 1 sends chunks 0..2 (8 B).
  // Both start at 0, become active at 1 (latency) and share rank 1's down link: 0.5 B/s each.
  // 0 -> 1 is done after 4 / 0.5 = 8 s, at 9; by then 2 -> 1 has sent 4 B and gets the whole
  // link: 4 more bytes at 1 B/s, done at 13. Rank 1 reduces 8 B at gamma = 0.25 s/B after 2 -> 1
  // (2 s, until 15) and 4 B after 0 -> 1 (1 s, until 10).
  const alg::Schedule s = into_rank_one(2, 2, alg::Op::reduce);
  const topo::Topology t = unit_switch(3);
  Executor ex(s, t, NetworkConfig{NetworkKind::flow, SecondsPerByte{0.25}}, Bytes{8});
  RunOptions o;
  o.record_timeline = true;
  const IterationResult res = ex.run(at({0, 0, 0}), o);
  EXPECT_DOUBLE_EQ(res.finish[0].value, 9);
  EXPECT_DOUBLE_EQ(res.finish[2].value, 13);
  EXPECT_DOUBLE_EQ(res.finish[1].value, 15);
  EXPECT_DOUBLE_EQ(res.timeline[0].done.value, 10);
  EXPECT_DOUBLE_EQ(res.timeline[1].end.value, 13);
  EXPECT_EQ(res.timeline[1].start.value, 0);
}

TEST(Executor, ReductionDoesNotHoldTheReceivePort) {
  // 0 -> 1 then 2 -> 1 in one round, reduce, 4 B each, gamma 0.5 s/B (2 s per reduction).
  // Port: [0, 5] and [5, 10]; reductions end at 7 and 12: rank 1 finishes at 12, not 14.
  // Next round 1 -> 0 (copy, 4 B): rank 0 finished round 0 at 5, rank 1 at 12: runs [12, 17].
  alg::Schedule s = into_rank_one(1, 1, alg::Op::reduce);
  s.add_round().add(1, 0, 0, 1, alg::Op::copy);
  const topo::Topology t = unit_switch(3);
  Executor ex(s, t, NetworkConfig{NetworkKind::alphabeta, SecondsPerByte{0.5}}, Bytes{4});
  for (bool events : {false, true}) {
    RunOptions o;
    o.use_event_engine = events;
    const IterationResult res = ex.run(at({0, 0, 0}), o);
    EXPECT_EQ(res.finish[1].value, 17);
    EXPECT_EQ(res.finish[0].value, 17);
    EXPECT_EQ(res.finish[2].value, 10);
  }
}

TEST(Executor, DataflowPassMatchesReferenceEvaluator) {
  // On a switch every route costs latency + m / bandwidth: the reference evaluator's alpha-beta.
  std::mt19937_64 rng(7);
  const alg::CostParams p{2e-6, 1.0 / 100e9, 3e-12};
  for (int n : {2, 3, 5, 8}) {
    const topo::Topology t = testing::switch_of(n, 100e9, 2e-6);
    for (int trial = 0; trial < 5; ++trial) {
      const alg::Schedule s = random_schedule(rng, n, 6);
      const std::vector<double> arrive = random_arrivals(rng, n, 1000, 1e-7);
      const double bytes = 1000.0 * s.chunks + static_cast<double>(rng() % 7);
      Executor ex(s, t, NetworkConfig{NetworkKind::alphabeta, SecondsPerByte{p.gamma}},
                  Bytes{static_cast<std::uint64_t>(bytes)});
      const IterationResult res = ex.run(at(arrive));
      const alg::testing::Timing ref = alg::testing::evaluate_rounds(s, bytes, p, arrive);
      for (int r = 0; r < n; ++r) {
        EXPECT_NEAR(res.finish[r].value, ref.finish[r], 1e-12 * ref.makespan)
            << n << " " << trial << " " << r;
      }
    }
  }
}

TEST(Executor, EventEngineEqualsDataflowPassExactly) {
  // Heterogeneous routes (NVLink inside nodes, NICs and a spine across) so route lookups matter.
  const topo::Topology t = topo::make_hierarchical({.nodes = 3,
                                                    .gpus_per_node = 2,
                                                    .nvlink_bandwidth = BytesPerSecond{400e9},
                                                    .nvlink_latency = Seconds{1e-6},
                                                    .nic_bandwidth = BytesPerSecond{50e9},
                                                    .nic_latency = Seconds{2e-6},
                                                    .fabric = topo::FabricKind::leaf_spine,
                                                    .spines = 2,
                                                    .spine_bandwidth = BytesPerSecond{25e9},
                                                    .spine_latency = Seconds{1e-6},
                                                    .nodes_per_leaf = 1});
  std::mt19937_64 rng(99);
  for (int trial = 0; trial < 20; ++trial) {
    const alg::Schedule s = random_schedule(rng, 6, 8);
    Executor ex(s, t, NetworkConfig{NetworkKind::alphabeta, SecondsPerByte{1e-11}}, Bytes{1 << 20});
    const std::vector<double> arrive = random_arrivals(rng, 6, 100, 1e-6);
    RunOptions pass, events;
    pass.record_timeline = events.record_timeline = true;
    events.use_event_engine = true;
    pass.rank_map = events.rank_map = straggler_rank_map(s, static_cast<int>(rng() % 6));
    const IterationResult a = ex.run(at(arrive), pass);
    const IterationResult b = ex.run(at(arrive), events);
    for (int r = 0; r < 6; ++r) EXPECT_EQ(a.finish[r], b.finish[r]);
    ASSERT_EQ(a.timeline.size(), b.timeline.size());
    for (std::size_t i = 0; i < a.timeline.size(); ++i) {
      const TransferRecord &x = a.timeline[i], &y = b.timeline[i];
      EXPECT_EQ(x.src, y.src);
      EXPECT_EQ(x.dst, y.dst);
      EXPECT_EQ(x.bytes, y.bytes);
      EXPECT_EQ(x.src_ready, y.src_ready) << trial << " " << i;
      EXPECT_EQ(x.dst_ready, y.dst_ready) << trial << " " << i;
      EXPECT_EQ(x.start, y.start);
      EXPECT_EQ(x.end, y.end);
      EXPECT_EQ(x.done, y.done);
    }
    EXPECT_EQ(a.link_bytes, b.link_bytes);
    EXPECT_GT(b.events, 0u);
  }
}

TEST(Executor, RankMapEqualsRelabelledSchedule) {
  std::mt19937_64 rng(5);
  const topo::Topology t = topo::make_fat_tree({.k = 4,
                                                .tiers = 2,
                                                .bandwidth = BytesPerSecond{10e9},
                                                .latency = Seconds{1e-6},
                                                .oversubscription = 2.0,
                                                .ranks = 8});
  for (NetworkKind kind : {NetworkKind::alphabeta, NetworkKind::flow}) {
    for (int trial = 0; trial < 10; ++trial) {
      const alg::Schedule s = random_schedule(rng, 8, 6);
      const int predicted = static_cast<int>(rng() % 8);
      const std::vector<int> perm = straggler_rank_map(s, predicted);
      EXPECT_EQ(perm[*s.straggler], predicted);
      alg::Schedule moved = s;
      moved.relabel(perm);
      EXPECT_EQ(moved.straggler, predicted);
      const std::vector<double> arrive = random_arrivals(rng, 8, 50, 1e-6);
      Executor ex(s, t, NetworkConfig{kind, SecondsPerByte{0}}, Bytes{1 << 16});
      Executor ex_moved(moved, t, NetworkConfig{kind, SecondsPerByte{0}}, Bytes{1 << 16});
      RunOptions o;
      o.rank_map = perm;
      const IterationResult a = ex.run(at(arrive), o);
      const IterationResult b = ex_moved.run(at(arrive));
      EXPECT_EQ(a.finish, b.finish);
      EXPECT_EQ(a.link_bytes, b.link_bytes);
    }
  }
}

// A schedule built for a node structure (gpus_per_node) is shifted, not swapped: the predicted
// rank plays the straggler and every node and rail stays together.
TEST(Executor, RankMapKeepsNodesForNodeStructuredSchedules) {
  alg::Options o;
  o.set("gpus_per_node", "4");
  o.set("straggler", "11");
  const alg::Schedule s = alg::generate("stragglar_hier", 12, o);
  for (int predicted = 0; predicted < 12; ++predicted) {
    const std::vector<int> perm = straggler_rank_map(s, predicted);
    EXPECT_EQ(perm[11], predicted);
    std::vector<int> seen(12, 0);
    for (int r = 0; r < 12; ++r) {
      ++seen[static_cast<std::size_t>(perm[r])];
      // Same node -> same node, same rail -> same rail.
      EXPECT_EQ(perm[r] / 4, perm[r / 4 * 4] / 4) << predicted << " " << r;
      EXPECT_EQ(perm[r] % 4, perm[r % 4] % 4) << predicted << " " << r;
    }
    for (int c : seen) EXPECT_EQ(c, 1);
  }
  // Without the option: the plain swap.
  const alg::Schedule flat = alg::generate("stragglar", 12, alg::Options{});
  const std::vector<int> swap = straggler_rank_map(flat, 0);
  EXPECT_EQ(swap[11], 0);
  EXPECT_EQ(swap[0], 11);
  EXPECT_EQ(swap[5], 5);
}

TEST(Executor, SummaryOfARingOnASwitch) {
  // Ring, n = 4, 4096 B: 6 rounds of one 1024 B chunk, each 1 us + 1024 B / 1 GB/s = 2.024 us.
  // Everyone arrives at 1 us except rank 2 at 3 us. Rank 2 delays its neighbours' first round;
  // we only check the definitions here: completion from the first arrival, algbw from the last.
  const alg::Schedule s = alg::generate("ring", 4, alg::Options{});
  const topo::Topology t = testing::switch_of(4, 1e9, 1e-6);
  Executor ex(s, t, NetworkConfig{}, Bytes{4096});
  const IterationResult r = ex.run(at({1e-6, 1e-6, 3e-6, 1e-6}));
  EXPECT_EQ(r.first_arrival.value, 1e-6);
  EXPECT_EQ(r.last_arrival.value, 3e-6);
  EXPECT_DOUBLE_EQ(r.completion.value, r.last_finish.value - 1e-6);
  EXPECT_DOUBLE_EQ(r.after_last_arrival.value, r.last_finish.value - 3e-6);
  EXPECT_DOUBLE_EQ(r.algbw.value, 4096 / r.after_last_arrival.value);
  EXPECT_DOUBLE_EQ(r.busbw.value, r.algbw.value * 2 * 3 / 4);
  EXPECT_EQ(r.transfers, 24u);
  // Every GPU sends 6 chunks of 1024 B up to the switch and receives 6 down.
  std::uint64_t total = 0;
  for (int l = 0; l < t.link_count(); ++l) {
    EXPECT_EQ(r.link_bytes[l], 6u * 1024u);
    EXPECT_DOUBLE_EQ(r.link_utilization[l], 6 * 1024 / (1e9 * r.completion.value));
    total += r.link_bytes[l];
  }
  EXPECT_EQ(total, 2u * 24u * 1024u);
  // All arriving together: the closed form 6 * 2.024 us.
  const IterationResult z = ex.run(at({0, 0, 0, 0}));
  EXPECT_NEAR(z.completion.value, 6 * 2.024e-6, 1e-18);
}

TEST(Executor, RejectsMismatchedTopology) {
  const alg::Schedule s = alg::generate("ring", 4, alg::Options{});
  const topo::Topology t = unit_switch(5);
  EXPECT_THROW(Executor(s, t, NetworkConfig{}, Bytes{64}), InputError);
  const topo::Topology ok = unit_switch(4);
  EXPECT_THROW(
      Executor(s, ok, NetworkConfig{NetworkKind::alphabeta, SecondsPerByte{-1}}, Bytes{64}),
      InputError);
}

TEST(Network, ParsesModelNames) {
  EXPECT_EQ(parse_network_kind("flow"), NetworkKind::flow);
  EXPECT_EQ(parse_network_kind("alphabeta"), NetworkKind::alphabeta);
  EXPECT_EQ(to_string(NetworkKind::flow), "flow");
  EXPECT_THROW(parse_network_kind("packet"), InputError);
}

}  // namespace
}  // namespace ssim::sim
