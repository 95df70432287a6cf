// Fidelity of the simulator against closed forms and hand-solved cases.
#include <gtest/gtest.h>

#include <random>
#include <vector>

#include "algorithms/cost_model.hpp"
#include "algorithms/registry.hpp"
#include "algorithms/stragglar.hpp"
#include "sim/executor.hpp"
#include "tests/sim/fixtures.hpp"
#include "topologies/generators.hpp"

namespace ssim::sim {
namespace {

constexpr double kAlpha = 3e-6;
constexpr double kBandwidth = 450e9;

topo::Topology nvswitch(int n) { return testing::switch_of(n, kBandwidth, kAlpha); }

std::vector<int> rank_counts() {
  std::vector<int> ns;
  for (int n = 2; n <= 64; ++n) ns.push_back(n);
  ns.push_back(128);
  ns.push_back(256);
  return ns;
}

// With every rank present at 0 and nothing shared (a non-blocking switch), the alpha-beta
// simulation of every registered algorithm equals its closed form AlgorithmInfo::cost.
TEST(Fidelity, AlphaBetaEqualsClosedFormOfEveryAlgorithm) {
  int checked = 0;
  for (const alg::AlgorithmInfo& info : alg::algorithms()) {
    if (info.in_network) continue;  // switch reductions: switch_reduce_test, nvls_test
    for (int n : rank_counts()) {
      if (!info.supports_ranks(n)) continue;
      const alg::Schedule s = alg::generate(info.name, n, alg::Options{});
      const topo::Topology t = nvswitch(n);
      const std::vector<Seconds> arrival(static_cast<std::size_t>(n), Seconds{0});
      for (std::uint64_t per_chunk : {8ull, 1000ull, 65536ull}) {
        const std::uint64_t bytes = per_chunk * static_cast<std::uint64_t>(s.chunks);
        for (double gamma : {0.0, 2e-12}) {
          const alg::CostParams p{kAlpha, 1.0 / kBandwidth, gamma};
          const double want = info.cost(n, static_cast<double>(bytes), p, alg::Options{});
          Executor ex(s, t, NetworkConfig{NetworkKind::alphabeta, SecondsPerByte{gamma}},
                      Bytes{bytes});
          const IterationResult r = ex.run(arrival);
          EXPECT_NEAR(r.completion.value, want, 1e-9 * want)
              << info.name << " n=" << n << " bytes=" << bytes << " gamma=" << gamma;
          ++checked;
        }
      }
    }
  }
  EXPECT_GE(checked, 6 * 65);  // at least ring over every rank count
}

// At most one send and one receive per rank and round: on a switch no link ever carries two
// flows (a rank's next transfer waits for its round to end), so the flow model must agree
// with the alpha-beta model, arrivals and reductions included.
TEST(Fidelity, FlowEqualsAlphaBetaWhenNoLinkIsShared) {
  std::mt19937_64 rng(2024);
  int ring_checked = 0;
  for (const alg::AlgorithmInfo& info : alg::algorithms()) {
    if (info.in_network) continue;  // switch reductions: switch_reduce_test, nvls_test
    for (int n : {2, 3, 5, 8, 13, 16, 32}) {
      if (!info.supports_ranks(n)) continue;
      const alg::Schedule s = alg::generate(info.name, n, alg::Options{});
      bool one_port_each = true;
      for (const alg::Round& round : s.rounds) {
        std::vector<int> sends(static_cast<std::size_t>(n)), recvs(static_cast<std::size_t>(n));
        for (const alg::Transfer& x : round.transfers) {
          one_port_each = one_port_each && ++sends[x.src] <= 1 && ++recvs[x.dst] <= 1;
        }
      }
      if (!one_port_each) continue;
      const topo::Topology t = nvswitch(n);
      const std::vector<Seconds> arrival =
          testing::at(testing::random_arrivals(rng, n, 1000, 1e-7));
      const Bytes bytes{static_cast<std::uint64_t>(s.chunks) * 4096 + 3};
      Executor ab(s, t, NetworkConfig{NetworkKind::alphabeta, SecondsPerByte{1e-12}}, bytes);
      Executor flow(s, t, NetworkConfig{NetworkKind::flow, SecondsPerByte{1e-12}}, bytes);
      const IterationResult a = ab.run(arrival);
      const IterationResult f = flow.run(arrival);
      for (int r = 0; r < n; ++r) {
        EXPECT_NEAR(f.finish[r].value, a.finish[r].value, 1e-12 * a.last_finish.value)
            << info.name << " n=" << n << " rank " << r;
      }
      EXPECT_EQ(f.link_bytes, a.link_bytes);
      ring_checked += info.name == "ring" ? 1 : 0;
    }
  }
  EXPECT_EQ(ring_checked, 7);  // the ring qualifies at every n
}

// Two flows through one oversubscribed leaf-spine link of a 2-tier fat tree (k = 4: 4 leaves
// with 2 hosts each, 2 spines; host links B = 10 GB/s, leaf-spine links B / 2 = 5 GB/s, 1 us per
// link). Transfers 0 -> 2 and 1 -> 3 both leave leaf 0 for leaf 1; deterministic routing sends
// both over the same spine (checked below), so they share leaf0 -> spine and spine -> leaf1:
// each gets 5 / 2 = 2.5 GB/s. Both wait the 4-hop latency (4 us), then move m = 1 MB in
// m / 2.5 GB/s = 400 us: both end at 404 us. Transfer 2 -> 0 in the other direction shares no
// link with them: its bottleneck is a 5 GB/s leaf-spine link, so it ends at 4 + 200 = 204 us.
// In the alpha-beta model nothing is shared: 0 -> 2 and 1 -> 3 end at 204 us too.
TEST(Fidelity, FlowModelSharesAnOversubscribedUplink) {
  const topo::Topology t = topo::make_fat_tree({.k = 4,
                                                .tiers = 2,
                                                .bandwidth = BytesPerSecond{10e9},
                                                .latency = Seconds{1e-6},
                                                .oversubscription = 2.0,
                                                .ranks = 8});
  const topo::Route r02 = t.route(0, 2), r13 = t.route(1, 3), r20 = t.route(2, 0);
  ASSERT_EQ(r02.links.size(), 4u);
  ASSERT_EQ(r13.links.size(), 4u);
  EXPECT_EQ(r02.links[1], r13.links[1]);  // leaf 0 -> spine
  EXPECT_EQ(r02.links[2], r13.links[2]);  // spine -> leaf 1
  for (int a : r20.links) {
    for (int b : r02.links) EXPECT_NE(a, b);
  }
  alg::Schedule s = alg::Schedule::make(alg::Collective::allreduce, "hand", 8, 1);
  alg::Round& round = s.add_round();
  round.add(0, 2, 0, 1, alg::Op::copy);
  round.add(1, 3, 0, 1, alg::Op::copy);
  round.add(2, 0, 0, 1, alg::Op::copy);
  const std::vector<Seconds> arrival(8, Seconds{0});
  Executor flow(s, t, NetworkConfig{NetworkKind::flow, SecondsPerByte{0}}, Bytes{1000000});
  RunOptions o;
  o.record_timeline = true;
  const IterationResult f = flow.run(arrival, o);
  EXPECT_NEAR(f.timeline[0].end.value, 404e-6, 1e-15);
  EXPECT_NEAR(f.timeline[1].end.value, 404e-6, 1e-15);
  EXPECT_NEAR(f.timeline[2].end.value, 204e-6, 1e-15);
  Executor ab(s, t, NetworkConfig{NetworkKind::alphabeta, SecondsPerByte{0}}, Bytes{1000000});
  const IterationResult a = ab.run(arrival, o);
  EXPECT_NEAR(a.timeline[0].end.value, 204e-6, 1e-15);
  EXPECT_NEAR(a.timeline[1].end.value, 204e-6, 1e-15);
  // Leaf 0's uplink carried both megabytes.
  EXPECT_EQ(f.link_bytes[r02.links[1]], 2000000u);
}

// On a bidirectional 16-ring, flow model: halving_doubling's first step pairs neighbours (r,
// r XOR 1), so each of its 16 half-buffer flows has a directed link to itself and ends at exactly
// latency + (s/2) / bandwidth = 1 us + 32 MiB / 100 GB/s. rhd's first step pairs r with r XOR 8,
// eight hops away, so its flows share links and the whole run is more than twice as slow (the
// shape ASTRA-sim users know as halvingDoubling vs our farthest-first rhd).
TEST(Fidelity, NearestFirstHalvingDoublingAvoidsSharingOnARing) {
  const topo::Topology t =
      topo::make_ring({.ranks = 16, .bandwidth = BytesPerSecond{100e9}, .latency = Seconds{1e-6}});
  const std::uint64_t bytes = 64ull << 20;
  const std::vector<Seconds> arrival(16, Seconds{0});
  RunOptions o;
  o.record_timeline = true;
  const alg::Schedule hd = alg::generate("halving_doubling", 16, alg::Options{});
  const IterationResult a = Executor(hd, t, NetworkConfig{NetworkKind::flow, SecondsPerByte{0}}, Bytes{bytes}).run(arrival, o);
  for (const TransferRecord& r : a.timeline) {
    if (r.round != 0) continue;
    EXPECT_NEAR(r.end.value, 1e-6 + (bytes / 2) / 100e9, 1e-15) << r.src << " -> " << r.dst;
  }
  const alg::Schedule rhd = alg::generate("rhd", 16, alg::Options{});
  const IterationResult b = Executor(rhd, t, NetworkConfig{NetworkKind::flow, SecondsPerByte{0}}, Bytes{bytes}).run(arrival, o);
  EXPECT_LT(2 * a.completion.value, b.completion.value);
}

// Direct with the straggler late enough that the n-1 others have finished their ring AllReduce:
// the run ends direct_ideal_cost after the straggler arrives (one full-buffer exchange, reduced
// on both sides, then ceil(log2 n) - 1 doubling broadcast rounds of the full buffer), for any
// straggler rank the schedule is built for and any rank that actually plays it.
TEST(Fidelity, DirectFinishesItsIdealCostAfterTheStraggler) {
  std::mt19937_64 rng(3);
  for (int n : rank_counts()) {
    alg::Options options;
    options.set("straggler", std::to_string(static_cast<int>(rng() % static_cast<unsigned>(n))));
    const alg::Schedule s = alg::generate("direct", n, options);
    const int actual = static_cast<int>(rng() % static_cast<unsigned>(n));
    const double bytes = 512.0 * s.chunks;
    const alg::CostParams p{kAlpha, 1.0 / kBandwidth, 1e-12};
    const double delay = 2 * alg::ring_cost(n - 1, bytes, p) + 1e-3;
    std::vector<Seconds> arrival(static_cast<std::size_t>(n), Seconds{0});
    arrival[actual] = Seconds{delay};
    const topo::Topology t = nvswitch(n);
    Executor ex(s, t, NetworkConfig{NetworkKind::alphabeta, SecondsPerByte{p.gamma}},
                Bytes{static_cast<std::uint64_t>(bytes)});
    RunOptions o;
    o.rank_map = straggler_rank_map(s, actual);
    const IterationResult r = ex.run(arrival, o);
    const double want = alg::direct_ideal_cost(n, bytes, p);
    EXPECT_NEAR(r.after_last_arrival.value, want, 1e-9 * want) << "n=" << n;
  }
}

// StragglAR with the straggler late enough that the n-1 others finish phase 1 (their ring
// ReduceScatter) first: the run ends stragglar_ideal_cost = R * (alpha + c * beta) +
// (n-1) * gamma * c after the straggler arrives (c = s/(n-1), R phase-2 rounds, the straggler
// reducing in each of its n-1 exchanges). R is also read off the schedule: the rounds after
// the "reduce-scatter" ones. The actual straggler is a random rank, mapped onto the schedule's.
TEST(Fidelity, StragglarFinishesItsIdealCostAfterTheStraggler) {
  const alg::AlgorithmInfo& info = alg::find_algorithm("stragglar");
  std::mt19937_64 rng(4);
  int checked = 0;
  for (int n : rank_counts()) {
    if (!info.supports_ranks(n)) continue;
    const alg::Schedule s = alg::generate("stragglar", n, alg::Options{});
    ASSERT_TRUE(s.straggler.has_value());
    std::size_t phase1 = 0;
    while (phase1 < s.rounds.size() && s.rounds[phase1].phase == "reduce-scatter") ++phase1;
    const int R = static_cast<int>(s.rounds.size() - phase1);
    EXPECT_EQ(R, alg::stragglar_rounds(n)) << "n=" << n;
    const double bytes = 4096.0 * s.chunks;
    const double c = bytes / (n - 1);
    const topo::Topology t = nvswitch(n);
    for (double gamma : {0.0, 2e-12}) {
      const alg::CostParams p{kAlpha, 1.0 / kBandwidth, gamma};
      const double delay = 2 * alg::stragglar_phase1_cost(n, bytes, p) + 1e-3;
      const int actual = static_cast<int>(rng() % static_cast<unsigned>(n));
      std::vector<Seconds> arrival(static_cast<std::size_t>(n), Seconds{0});
      arrival[actual] = Seconds{delay};
      Executor ex(s, t, NetworkConfig{NetworkKind::alphabeta, SecondsPerByte{gamma}},
                  Bytes{static_cast<std::uint64_t>(bytes)});
      RunOptions o;
      o.rank_map = straggler_rank_map(s, actual);
      const IterationResult r = ex.run(arrival, o);
      const double want = alg::stragglar_ideal_cost(n, bytes, p);
      EXPECT_NEAR(want, R * (kAlpha + c / kBandwidth) + (n - 1) * gamma * c, 1e-12 * want);
      EXPECT_NEAR(r.after_last_arrival.value, want, 1e-9 * want) << "n=" << n << " R=" << R;
      const double total = alg::stragglar_cost_with_delay(n, bytes, p, delay);
      EXPECT_NEAR(r.completion.value, total, 1e-9 * total) << "n=" << n;
      ++checked;
    }
  }
  EXPECT_GT(checked, 0);
}

}  // namespace
}  // namespace ssim::sim
