// In-network reductions in the simulator (alpha-beta model) and the `nvls` algorithm: a
// hand-derived case, the closed form against the simulator, the bytes on the links, the refusals.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <iostream>
#include <map>
#include <string>
#include <vector>

#include "algorithms/generators.hpp"
#include "algorithms/registry.hpp"
#include "algorithms/verifier.hpp"
#include "common/error.hpp"
#include "sim/executor.hpp"
#include "topologies/generators.hpp"

namespace ssim::sim {
namespace {

// n GPUs on one switch: links of `bandwidth` each way, GPU-to-GPU latency `alpha` (alpha/2 per
// link); the switch reduces at `reduce_bw` with latency `reduce_lat` (no reduction when 0).
topo::Topology reducing_switch(int n, double bandwidth, double alpha, double reduce_bw,
                               double reduce_lat) {
  topo::Topology t = topo::make_switch(
      {.ranks = n, .bandwidth = BytesPerSecond{bandwidth}, .latency = Seconds{alpha}});
  if (reduce_bw > 0) t.set_switch_reduction(n, {BytesPerSecond{reduce_bw}, Seconds{reduce_lat}});
  return t;
}

IterationResult run(const alg::Schedule& s, const topo::Topology& t, std::uint64_t bytes,
                    std::vector<Seconds> arrival = {}, NetworkKind kind = NetworkKind::alphabeta) {
  if (arrival.empty()) arrival.assign(static_cast<std::size_t>(s.ranks), Seconds{0});
  Executor ex(s, t, NetworkConfig{kind, SecondsPerByte{0}}, Bytes{bytes});
  return ex.run(arrival);
}

alg::Schedule nvls(int n, int pipeline = 1) {
  alg::Options o;
  o.set("pipeline", std::to_string(pipeline));
  return alg::generate("nvls", n, o);
}

TEST(Nvls, VerifiesForManyRankCountsAndPipelines) {
  for (int n = 2; n <= 40; ++n) {
    for (int p : {1, 2, 5}) {
      const alg::VerifyResult v = alg::verify(nvls(n, p));
      ASSERT_TRUE(v.ok()) << n << " " << p << ": " << v.error->to_string();
      EXPECT_EQ(v.summary.rounds, p + 1);
    }
  }
}

// 4 ranks, links of 100 GB/s, alpha 2 us (1 us per link), the switch reduces at 150 GB/s with
// 0.5 us latency; s = 4 MB, pipeline 1: four chunks of 1 MB.
//   round 0 (reduce-scatter): each rank sends its 4 chunks up (4 MB / 100 GB/s = 40 us), gets
//     its reduced chunk down (1 MB: 10 us); the switch reduces 4 MB (26.67 us at 150 GB/s).
//     Latency 1 + 0.5 + 1 us. End 2.5 + 40 = 42.5 us.
//   round 1 (multicast): each rank sends 1 MB up (10 us), gets 3 MB down (30 us); no reduction.
//     Latency 1 + 1 us. End 42.5 + 2 + 30 = 74.5 us.
// At 50 GB/s of reduction the switch is the bottleneck of round 0 (80 us): 82.5 + 32 = 114.5 us.
TEST(Nvls, HandDerivedAlphaBeta) {
  const alg::Schedule s = nvls(4);
  const IterationResult fast = run(s, reducing_switch(4, 100e9, 2e-6, 150e9, 0.5e-6), 4'000'000);
  EXPECT_NEAR(fast.completion.value, 74.5e-6, 1e-15);
  const IterationResult slow = run(s, reducing_switch(4, 100e9, 2e-6, 50e9, 0.5e-6), 4'000'000);
  EXPECT_NEAR(slow.completion.value, 114.5e-6, 1e-15);
  // Every rank's up link carries s + s/n, its down link s/n + (n-1) s/n = s.
  const topo::Topology t = reducing_switch(4, 100e9, 2e-6, 150e9, 0.5e-6);
  for (int r = 0; r < 4; ++r) {
    for (int l : t.out_links(t.vertex_of_rank(r))) EXPECT_EQ(fast.link_bytes[l], 5'000'000u) << r;
    for (int l : t.in_links(t.vertex_of_rank(r))) EXPECT_EQ(fast.link_bytes[l], 4'000'000u) << r;
  }
}

// The closed form (nvls.cpp) equals the simulation wherever the chunks divide evenly.
TEST(Nvls, ClosedFormEqualsSimulation) {
  for (int n : {2, 3, 4, 8, 16}) {
    for (int p : {1, 2, 4, 8}) {
      for (double reduce_bw : {1e12, 300e9, 100e9}) {
        const double bw = 450e9, alpha = 3e-6, lat = 0.7e-6;
        const std::uint64_t bytes = std::uint64_t{1} << 26;  // divisible by n p for these n, p
        if (bytes % static_cast<std::uint64_t>(n * p) != 0) continue;
        const IterationResult r =
            run(nvls(n, p), reducing_switch(n, bw, alpha, reduce_bw, lat), bytes);
        alg::CostParams c{.alpha = alpha,
                          .beta = 1 / bw,
                          .gamma = 0,
                          .switch_beta = 1 / reduce_bw,
                          .switch_latency = lat};
        alg::Options o;
        o.set("pipeline", std::to_string(p));
        const double want = alg::find_algorithm("nvls").cost(n, static_cast<double>(bytes), c, o);
        EXPECT_NEAR(r.completion.value, want, 1e-12 * want) << n << " " << p << " " << reduce_bw;
      }
    }
  }
  // Pipelining pays off for large messages: with the links the bottleneck, 8 slices on 8 ranks
  // take 9 alpha + s beta (1 + 7 (1+1/8) + 7/8) / 8 = 9 alpha + (78/64) s beta, within 13/12 of
  // the s (1+1/n) beta = (72/64) s beta that every rank's up link must carry.
  const alg::CostParams c{
      .alpha = 3e-6, .beta = 1 / 450e9, .gamma = 0, .switch_beta = 0, .switch_latency = 0};
  const double s = 1 << 30;
  EXPECT_LT(alg::nvls_cost(8, s, 8, c), alg::nvls_cost(8, s, 1, c));
  EXPECT_NEAR(alg::nvls_cost(8, s, 8, c), 9 * 3e-6 + 78.0 / 64 * s / 450e9, 1e-15);
}

// A late rank delays everything by its delay: its contribution must reach the switch before
// any chunk is reduced (nothing is hidden).
TEST(Nvls, AStragglerIsNotHidden) {
  const topo::Topology t = reducing_switch(8, 450e9, 3e-6, 1e12, 0.5e-6);
  const alg::Schedule s = nvls(8, 4);
  const IterationResult base = run(s, t, 1 << 24);
  std::vector<Seconds> arrival(8, Seconds{0});
  arrival[5] = Seconds{1e-3};
  const IterationResult late = run(s, t, 1 << 24, arrival);
  EXPECT_NEAR(late.after_last_arrival.value, base.completion.value, 1e-15);
  EXPECT_NEAR(late.completion.value, 1e-3 + base.completion.value, 1e-15);
}

// The straggler-aware variant of docs/in_network_reduction.md, built here to measure it (it is
// not registered): while rank n-1 is late, the early ranks reduce-scatter through the switch
// (P rounds: chunk p(n-1)+c summed over the early ranks, to rank c); after it arrives, round k
// reduces {c, n-1} of slice k to c and c multicasts slice k-1 to everyone else.
alg::Schedule straggler_aware_nvls(int n, int slices) {
  const int e = n - 1, late = n - 1;
  alg::Schedule s = alg::Schedule::make(alg::Collective::allreduce, "nvls-aware", n, e * slices);
  std::vector<int> early;
  for (int r = 0; r < e; ++r) early.push_back(r);
  for (int p = 0; p < slices; ++p) {
    alg::Round& r = s.add_round("early-reduce-scatter");
    for (int c = 0; c < e; ++c) r.switch_reduces.push_back({early, {c}, p * e + c, p * e + c + 1});
  }
  for (int k = 0; k <= slices; ++k) {
    alg::Round& r = s.add_round("fold-in-straggler");
    for (int c = 0; c < e; ++c) {
      if (k < slices) r.switch_reduces.push_back({{c, late}, {c}, k * e + c, k * e + c + 1});
      if (k >= 1) {
        std::vector<int> others;
        for (int x = 0; x < n; ++x)
          if (x != c) others.push_back(x);
        r.switch_reduces.push_back({{c}, others, (k - 1) * e + c, (k - 1) * e + c});
        r.switch_reduces.back().chunk_end += 1;
      }
    }
  }
  return s;
}

// After the straggler arrives the variant moves its s bytes up and s down (the others' links
// carry less), and the switch still reduces s bytes: with q = s/P,
//   T_after = (P+1) alpha + P lambda + P max(q beta, q beta_r) + q beta,
// against nvls's max(q beta, q beta_r) + (P-1) max(q (1+1/n) beta, q beta_r) + q (n-1)/n beta
// (+ the same latencies). Where the switch's reduction bandwidth binds (beta_r > (1+1/n) beta,
// as assumed for DGX H100: 274 GB/s < 429 GB/s) the variant loses q beta / n; where the links
// bind it wins s beta (P-2)/(n P), at most 1/(n+1) of nvls's time.
TEST(Nvls, StragglerAwareVariantWinsOnlyWhenTheLinksBind) {
  const int n = 8, slices = 8;
  const double bw = 450.0 * (1 << 30), alpha = 3e-6, lambda = 1e-6, delay = 10e-3;
  const std::uint64_t bytes = std::uint64_t{7}
                              << 27;  // 896 MiB: chunks of s / (7 x 8) and s / (8 x 8)
  const alg::Schedule aware = straggler_aware_nvls(n, slices);
  ASSERT_TRUE(alg::verify(aware).ok()) << alg::verify(aware).error->to_string();
  std::vector<Seconds> arrival(static_cast<std::size_t>(n), Seconds{0});
  arrival.back() = Seconds{delay};
  const double q = static_cast<double>(bytes) / slices, beta = 1 / bw;
  for (const double reduce_bw : {274e9, 1e15}) {
    const topo::Topology t = reducing_switch(n, bw, alpha, reduce_bw, lambda);
    const double a = run(aware, t, bytes, arrival).after_last_arrival.value;
    const double v = run(nvls(n, slices), t, bytes, arrival).after_last_arrival.value;
    const double br = 1 / reduce_bw;
    const double want_a =
        (slices + 1) * alpha + slices * lambda + slices * std::max(q * beta, q * br) + q * beta;
    EXPECT_NEAR(a, want_a, 1e-12 * want_a) << reduce_bw;
    std::cout << "n=8, 896 MiB, P=8, straggler 10 ms late, reduction " << reduce_bw / 1e9
              << " GB/s: nvls " << v * 1e6 << " us after the last arrival, aware variant "
              << a * 1e6 << " us\n";
    if (reduce_bw < bw / (1 + 1.0 / n)) {
      EXPECT_NEAR(a - v, q * beta / n, 1e-9 * v);  // loses
    } else {
      EXPECT_NEAR(v - a, static_cast<double>(bytes) * beta * (slices - 2) / (n * slices),
                  1e-9 * v);  // wins
    }
  }
}

TEST(Nvls, RefusesWhereItCannotRun) {
  const alg::Schedule s = nvls(4);
  try {
    run(s, reducing_switch(4, 100e9, 2e-6, 0, 0), 1 << 20);
    FAIL() << "ran without a reducing switch";
  } catch (const InputError& e) {
    EXPECT_NE(std::string(e.what()).find(
                  "round 0, switch reduction 0: topology 'switch(4)' has no reducing switch "
                  "that joins ranks {0, 1, 2, 3}"),
              std::string::npos)
        << e.what();
  }
  try {  // the flow model: the same message
    run(s, reducing_switch(4, 100e9, 2e-6, 0, 0), 1 << 20, {}, NetworkKind::flow);
    FAIL() << "ran without a reducing switch";
  } catch (const InputError& e) {
    EXPECT_NE(std::string(e.what()).find(
                  "round 0, switch reduction 0: topology 'switch(4)' has no reducing switch "
                  "that joins ranks {0, 1, 2, 3}"),
              std::string::npos)
        << e.what();
  }
  const topo::Topology t = reducing_switch(4, 100e9, 2e-6, 1e12, 0);
  for (NetworkKind kind : {NetworkKind::alphabeta, NetworkKind::flow}) {
    Executor ex(s, t, NetworkConfig{kind, SecondsPerByte{0}}, Bytes{1 << 20});
    RunOptions o;
    o.record_timeline = true;
    EXPECT_THROW(ex.run(std::vector<Seconds>(4, Seconds{0}), o), InputError);
  }
  Executor ex(s, t, NetworkConfig{}, Bytes{1 << 20});  // the alpha-beta event engine
  RunOptions o;
  o.use_event_engine = true;
  EXPECT_THROW(ex.run(std::vector<Seconds>(4, Seconds{0}), o), InputError);
}

// The flow model, by hand. 4 ranks on a switch, links of B = 100 GB/s each way with 1 us of
// latency, the switch reduces at R = 150 GB/s with 0.5 us latency; 8 chunks of 1 MB.
//   round 0: A = {0,1}>>{0} chunk 0 (1 MB), B = {2,3}>>{2} chunks 1..3 (3 MB).
//     Each is one flow over its members' up links, the switch's reduction throughput and its
//     receiver's down link, after 1 + 0.5 + 1 = 2.5 us. A and B share only the switch: max-min
//     gives each R/2 = 75 GB/s (the links, 100 GB/s, do not bind). A ends at
//     2.5 + 1 MB / 75 GB/s = 15.8333 us. B then runs alone at min(B, R) = 100 GB/s with 2 MB
//     left: it ends at 15.8333 + 20 = 35.8333 us.
//   round 1: M = {0}>>{1,2,3} chunk 0 (1 MB), a multicast: one flow over up0 and the three down
//     links, no reduction (latency 1 + 1 = 2 us). It starts when ranks 0..3 have all reached
//     round 1 (35.8333 us) and moves at 100 GB/s: ends at 35.8333 + 2 + 10 = 47.8333 us.
//   Rank 0 and 1 are done with round 0 at 15.8333 us, 2 and 3 at 35.8333 us, all at 47.8333.
// Link bytes: up0 2 MB (A + M), up1 1 MB, up2 = up3 3 MB, down0 1 MB, down1 1 MB, down2 4 MB
// (B + M), down3 1 MB: a multicast crosses each receiver's link once.
// The alpha-beta batch (docs/in_network_reduction.md) ends A and B together at
// 2.5 + max(3 MB / B, 4 MB / R) = 32.5 us and M at 32.5 + 2 + 10 = 44.5 us: it takes the largest
// load of any one resource, the makespan of an ideal sharing, while max-min splits the switch
// evenly, so A finishes 16.7 us earlier and B 3.3 us later than the batch says.
alg::Schedule two_reductions_then_multicast() {
  alg::Schedule s = alg::Schedule::make(alg::Collective::allreduce, "hand", 4, 8);
  alg::Round r0, r1;
  r0.switch_reduces.push_back(alg::SwitchReduce{{0, 1}, {0}, 0, 1});
  r0.switch_reduces.push_back(alg::SwitchReduce{{2, 3}, {2}, 1, 4});
  r1.switch_reduces.push_back(alg::SwitchReduce{{0}, {1, 2, 3}, 0, 1});
  s.rounds = {r0, r1};
  return s;
}

TEST(NvlsFlow, HandDerived) {
  const alg::Schedule s = two_reductions_then_multicast();
  const topo::Topology t = reducing_switch(4, 100e9, 2e-6, 150e9, 0.5e-6);
  for (bool reference : {false, true}) {
    Executor ex(s, t, NetworkConfig{NetworkKind::flow, SecondsPerByte{0}, reference},
                Bytes{8'000'000});
    const IterationResult r = ex.run(std::vector<Seconds>(4, Seconds{0}));
    EXPECT_NEAR(r.completion.value, 47.5e-6 + 1e-6 / 3, 1e-15) << reference;
    for (int rank = 0; rank < 4; ++rank)
      EXPECT_NEAR(r.finish[rank].value, 47.5e-6 + 1e-6 / 3, 1e-15) << rank;
    EXPECT_EQ(r.transfers, 0u);
    const std::vector<std::uint64_t> up{2'000'000, 1'000'000, 3'000'000, 3'000'000};
    const std::vector<std::uint64_t> down{1'000'000, 1'000'000, 4'000'000, 1'000'000};
    for (int rank = 0; rank < 4; ++rank) {
      for (int l : t.out_links(t.vertex_of_rank(rank))) EXPECT_EQ(r.link_bytes[l], up[rank]);
      for (int l : t.in_links(t.vertex_of_rank(rank))) EXPECT_EQ(r.link_bytes[l], down[rank]);
    }
  }
  // Round 0 alone shows when each rank is done.
  alg::Schedule first = s;
  first.rounds.pop_back();
  const IterationResult r0 =
      run(first, t, 8'000'000, std::vector<Seconds>(4, Seconds{0}), NetworkKind::flow);
  EXPECT_NEAR(r0.finish[0].value, 15.5e-6 + 1e-6 / 3, 1e-15);
  EXPECT_NEAR(r0.finish[1].value, 15.5e-6 + 1e-6 / 3, 1e-15);
  EXPECT_NEAR(r0.finish[2].value, 35.5e-6 + 1e-6 / 3, 1e-15);
  EXPECT_NEAR(r0.finish[3].value, 35.5e-6 + 1e-6 / 3, 1e-15);
  // The alpha-beta batch differs, for the reason above.
  const IterationResult ab = run(s, t, 8'000'000);
  EXPECT_NEAR(ab.completion.value, 44.5e-6, 1e-15);
  const IterationResult ab0 = run(first, t, 8'000'000);
  for (int rank = 0; rank < 4; ++rank) EXPECT_NEAR(ab0.finish[rank].value, 32.5e-6, 1e-15);
}

// Where no two operations contend unevenly the flow model equals the alpha-beta model: one
// reduction per round, and nvls, whose rounds load every link and the switch evenly (every
// flow of a round ends when the batch does), with a straggler.
TEST(NvlsFlow, EqualsAlphaBetaWithoutContention) {
  const topo::Topology t = reducing_switch(4, 100e9, 2e-6, 150e9, 0.5e-6);
  alg::Schedule one = alg::Schedule::make(alg::Collective::allreduce, "hand", 4, 4);
  alg::Round r0, r1;
  r0.switch_reduces.push_back(alg::SwitchReduce{{0, 1, 2, 3}, {1}, 0, 4});
  r1.switch_reduces.push_back(alg::SwitchReduce{{1}, {0, 2, 3}, 0, 4});
  one.rounds = {r0, r1};
  const std::vector<Seconds> late{Seconds{0}, Seconds{3e-6}, Seconds{1e-6}, Seconds{0}};
  const IterationResult f = run(one, t, 4'000'000, late, NetworkKind::flow);
  const IterationResult a = run(one, t, 4'000'000, late);
  EXPECT_NEAR(f.completion.value, a.completion.value, 1e-15);
  // 3 us + 2.5 us + 4 MB / 100 GB/s, then 2 us + 4 MB / 100 GB/s.
  EXPECT_NEAR(f.completion.value, 3e-6 + 2.5e-6 + 40e-6 + 2e-6 + 40e-6, 1e-15);
  for (int n : {2, 4, 8}) {
    for (int p : {1, 3}) {
      for (double reduce_bw : {1e12, 300e9, 100e9}) {
        const topo::Topology tn = reducing_switch(n, 450e9, 3e-6, reduce_bw, 0.7e-6);
        const std::uint64_t bytes = std::uint64_t{1} << 26;  // divisible by n * p * 8
        std::vector<Seconds> arrival(static_cast<std::size_t>(n), Seconds{0});
        arrival[static_cast<std::size_t>(n - 1)] = Seconds{50e-6};
        const alg::Schedule s = nvls(n, p);
        const IterationResult fa = run(s, tn, bytes * 3, arrival, NetworkKind::flow);
        const IterationResult aa = run(s, tn, bytes * 3, arrival);
        // Pipelined with the links binding (reduction at 1e12 B/s), the rounds that both reduce
        // and multicast contend: a multicast pays no reduction latency, so it starts lambda
        // before the round's reductions and meanwhile runs alone at B/(n-1) (n-1 multicasts
        // share each down link), which the batch does not credit: each of the P-1 middle rounds
        // ends lambda/(n-1) earlier in the flow model. Elsewhere the models agree.
        const double gain = p > 1 && reduce_bw == 1e12 ? (p - 1) * 0.7e-6 / (n - 1) : 0.0;
        EXPECT_NEAR(aa.completion.value - fa.completion.value, gain, 1e-12 * aa.completion.value)
            << n << " " << p << " " << reduce_bw;
        EXPECT_EQ(fa.link_bytes, aa.link_bytes);
      }
    }
  }
}

// A reduction and a point-to-point transfer share a link in the flow model (the alpha-beta
// model would serialize them at the rank's port). Links of 100 GB/s, 1 us each; 2 chunks of
// 1 MB. Round 0: {0,1}>>{0} chunk 0 and the copy 1 -> 2 of chunk 1, both over rank 1's up link:
// max-min gives each 50 GB/s; both end at 2 us + 1 MB / 50 GB/s = 22 us (the reduction's
// latency 1 + 0 + 1 us, the copy's route 2 us).
TEST(NvlsFlow, SharesLinksWithTransfers) {
  const topo::Topology t = reducing_switch(3, 100e9, 2e-6, 1e12, 0);
  alg::Schedule s = alg::Schedule::make(alg::Collective::allreduce, "hand", 3, 2);
  alg::Round r0;
  r0.switch_reduces.push_back(alg::SwitchReduce{{0, 1}, {0}, 0, 1});
  r0.add(1, 2, 1, 2, alg::Op::copy);
  s.rounds = {r0};
  const IterationResult f = run(s, t, 2'000'000, {}, NetworkKind::flow);
  EXPECT_NEAR(f.completion.value, 22e-6, 1e-15);
  EXPECT_EQ(f.transfers, 1u);
  // Alpha-beta: the copy first (12 us), then the batch: 12 + 2 + 10 = 24 us.
  EXPECT_NEAR(run(s, t, 2'000'000).completion.value, 24e-6, 1e-15);
}

// nvls_tree on `nodes` nodes of g GPUs (rail-optimized, no spines): NVLink of 400 GB/s and
// 2 us GPU to GPU, NICs of 50 GB/s and 1.5 us per link (3 us between nodes on a rail); each
// node's NVSwitch reduces at `reduce_bw` with 0.6 us latency (none when reduce_bw is 0).
topo::Topology nvls_cluster(int nodes, int g, double reduce_bw, double rail_reduce_bw = 0) {
  topo::Topology t = topo::make_hierarchical({.nodes = nodes,
                                              .gpus_per_node = g,
                                              .nvlink_bandwidth = BytesPerSecond{400e9},
                                              .nvlink_latency = Seconds{2e-6},
                                              .nic_bandwidth = BytesPerSecond{50e9},
                                              .nic_latency = Seconds{1.5e-6},
                                              .fabric = topo::FabricKind::rail_optimized,
                                              .spines = 0,
                                              .spine_bandwidth = BytesPerSecond{50e9},
                                              .spine_latency = Seconds{1e-6}});
  if (reduce_bw > 0) {
    for (int j = 0; j < nodes; ++j) {
      for (int l : t.out_links(t.vertex_of_rank(j * g))) {
        if (t.link(l).link_class == "nvlink")
          t.set_switch_reduction(t.link(l).to, {BytesPerSecond{reduce_bw}, Seconds{0.6e-6}});
      }
    }
  }
  if (rail_reduce_bw > 0) {  // SHARP in every rail switch
    for (int local = 0; local < g; ++local) {
      for (int l : t.out_links(t.vertex_of_rank(local))) {
        if (t.link(l).link_class == "nic")
          t.set_switch_reduction(t.link(l).to, {BytesPerSecond{rail_reduce_bw}, Seconds{0.6e-6}});
      }
    }
  }
  return t;
}

alg::Schedule nvls_tree(int n, int g) {
  alg::Options o;
  o.set("gpus_per_node", std::to_string(g));
  return alg::generate("nvls_tree", n, o);
}

TEST(NvlsTree, VerifiesForManyShapes) {
  for (int g : {2, 3, 4, 8}) {
    for (int nodes : {1, 2, 3, 5}) {
      const alg::VerifyResult v = alg::verify(nvls_tree(g * nodes, g));
      ASSERT_TRUE(v.ok()) << g << "x" << nodes << ": " << v.error->to_string();
      EXPECT_EQ(v.summary.rounds, 2 + 2 * (nodes - 1));
    }
  }
}

// The closed form (alg::nvls_tree_cost, intra = the NVSwitch, inter = a rail) equals the
// simulation in both network models (no link is shared unevenly: the rails are separate).
TEST(NvlsTree, ClosedFormEqualsSimulation) {
  for (int g : {2, 4, 8}) {
    for (int nodes : {1, 2, 3, 4}) {
      for (double reduce_bw : {1e12, 200e9}) {
        const int n = g * nodes;
        const topo::Topology t = nvls_cluster(nodes, g, reduce_bw);
        const alg::Schedule s = nvls_tree(n, g);
        const std::uint64_t bytes = std::uint64_t{3} << 20 << 3;  // divisible by g * nodes
        const alg::CostParams intra{.alpha = 2e-6,
                                    .beta = 1 / 400e9,
                                    .switch_beta = 1 / reduce_bw,
                                    .switch_latency = 0.6e-6};
        const alg::CostParams inter{.alpha = 3e-6, .beta = 1 / 50e9};
        const double want = alg::nvls_tree_cost(n, static_cast<double>(bytes), g, intra, inter);
        for (NetworkKind kind : {NetworkKind::alphabeta, NetworkKind::flow}) {
          const IterationResult r = run(s, t, bytes, {}, kind);
          EXPECT_NEAR(r.completion.value, want, 1e-12 * want)
              << g << "x" << nodes << " " << reduce_bw << " " << to_string(kind);
        }
      }
    }
  }
  // By hand, 2 nodes of 4, reduction at 200 GB/s, s = 8 MB: 2 x 2 us + 0.6 us + 8 MB / 200 GB/s
  // (the switch binds: 40 us > 20 us up the links) + 3/4 x 8 MB / 400 GB/s (15 us), then a ring
  // of 2 nodes on 2 MB pieces: 2 x (3 us + 1 MB / 50 GB/s) = 46 us. 105.6 us in all.
  const IterationResult r = run(nvls_tree(8, 4), nvls_cluster(2, 4, 200e9), 8'000'000);
  EXPECT_NEAR(r.completion.value, 105.6e-6, 1e-15);
}

// The inter-node AllReduce as an option (dbtree: NCCL's NVLS_TREE): every variant verifies,
// has the inter algorithm's rounds between the two switch rounds, and its closed form (the
// inter algorithm's own) equals the alpha-beta simulation. In the flow model a tree's inner
// ranks send to two children through one NIC, which the closed form does not charge; the ring
// and the halving-doubling ones agree there too.
TEST(NvlsTree, InterNodeAlgorithms) {
  for (const char* inter : {"ring", "rhd", "halving_doubling", "tree", "dbtree"}) {
    for (int nodes : {2, 3, 4, 8}) {
      const int g = 4, n = g * nodes;
      alg::Options o;
      o.set("gpus_per_node", std::to_string(g));
      o.set("inter", inter);
      const alg::Schedule s = alg::generate("nvls_tree", n, o);
      const alg::VerifyResult v = alg::verify(s);
      ASSERT_TRUE(v.ok()) << inter << " " << nodes << ": " << v.error->to_string();
      const alg::Schedule alone = alg::generate(inter, nodes, alg::Options{});
      EXPECT_EQ(s.rounds.size(), alone.rounds.size() + 2) << inter << " " << nodes;
      const topo::Topology t = nvls_cluster(nodes, g, 200e9);
      const std::uint64_t bytes = std::uint64_t{3} << 20 << 6;
      const alg::CostParams intra{
          .alpha = 2e-6, .beta = 1 / 400e9, .switch_beta = 1 / 200e9, .switch_latency = 0.6e-6};
      const alg::CostParams rail{.alpha = 3e-6, .beta = 1 / 50e9};
      const double want = alg::nvls_tree_cost(n, static_cast<double>(bytes), g, intra, rail, inter);
      EXPECT_NEAR(alg::find_algorithm("nvls_tree").cost(n, static_cast<double>(bytes), intra, o),
                  alg::nvls_tree_cost(n, static_cast<double>(bytes), g, intra, intra, inter),
                  1e-15);
      const IterationResult r = run(s, t, bytes, {}, NetworkKind::alphabeta);
      EXPECT_NEAR(r.completion.value, want, 1e-12 * want) << inter << " " << nodes;
      if (std::string(inter) == "ring" || std::string(inter) == "halving_doubling") {
        const IterationResult f = run(s, t, bytes, {}, NetworkKind::flow);
        EXPECT_NEAR(f.completion.value, want, 1e-12 * want) << inter << " " << nodes << " flow";
      }
    }
  }
  // Large pieces: the ring across nodes is bandwidth-optimal, the pipelined double binary tree
  // (16 segments per tree, its default) is not.
  const topo::Topology t = nvls_cluster(8, 4, 200e9);
  alg::Options ring, dbtree;
  for (alg::Options* o : {&ring, &dbtree}) o->set("gpus_per_node", "4");
  dbtree.set("inter", "dbtree");
  const auto time = [&](const alg::Options& o, std::uint64_t bytes) {
    return run(alg::generate("nvls_tree", 32, o), t, bytes, {}, NetworkKind::alphabeta)
        .completion.value;
  };
  EXPECT_GT(time(dbtree, 1ull << 30), time(ring, 1ull << 30));
  // An unknown inter algorithm is refused naming the option and the valid ones.
  alg::Options bad;
  bad.set("gpus_per_node", "4");
  bad.set("inter", "direct");
  try {
    alg::generate("nvls_tree", 8, bad);
    FAIL() << "inter=direct accepted";
  } catch (const InputError& e) {
    EXPECT_NE(std::string(e.what()).find("nvls_tree option inter=direct: unknown inter-node "
                                         "algorithm (valid: ring, rhd, halving_doubling, tree, "
                                         "dbtree)"),
              std::string::npos)
        << e.what();
  }
}

// pipeline=P streams P slices through the three phases: slice p's stage k runs in round p + k,
// so the schedule has P + 1 + R rounds (R: the inter algorithm's) and P G B chunks; every shape
// verifies; one slice is the unpipelined schedule exactly.
TEST(NvlsTree, PipelinedVerifiesAndOverlapsThePhases) {
  for (const char* inter : {"ring", "dbtree"}) {
    for (int nodes : {2, 3}) {
      for (int slices : {1, 2, 5}) {
        const int g = 4, n = g * nodes;
        alg::Options o;
        o.set("gpus_per_node", std::to_string(g));
        o.set("inter", inter);
        o.set("pipeline", std::to_string(slices));
        const alg::Schedule s = alg::generate("nvls_tree", n, o);
        const alg::VerifyResult v = alg::verify(s);
        ASSERT_TRUE(v.ok()) << inter << " " << nodes << " " << slices << ": "
                            << v.error->to_string();
        const alg::Schedule alone = alg::generate(inter, nodes, alg::Options{});
        EXPECT_EQ(s.rounds.size(), slices + 1 + alone.rounds.size()) << inter << " " << slices;
        EXPECT_EQ(s.chunks, slices * g * alone.chunks);
        const alg::ScheduleSize size = alg::find_algorithm("nvls_tree").size(n, o);
        EXPECT_GE(size.rounds, static_cast<double>(s.rounds.size()));  // dbtree's is a bound
        if (std::string(inter) == "ring") {
          EXPECT_EQ(size.rounds, static_cast<double>(s.rounds.size()));
        }
        EXPECT_EQ(size.chunks, static_cast<double>(s.chunks));
        if (slices == 1) {
          o.set("pipeline", "1");
          alg::Options plain;
          plain.set("gpus_per_node", std::to_string(g));
          plain.set("inter", inter);
          const alg::Schedule old = alg::generate("nvls_tree", n, plain);
          ASSERT_EQ(old.rounds.size(), s.rounds.size());
          for (std::size_t k = 0; k < s.rounds.size(); ++k) {
            EXPECT_EQ(old.rounds[k].transfers.size(), s.rounds[k].transfers.size());
            EXPECT_EQ(old.rounds[k].switch_reduces.size(), s.rounds[k].switch_reduces.size());
            EXPECT_EQ(old.rounds[k].phase, s.rounds[k].phase);
          }
        }
      }
    }
  }
  // At 1 GiB on 2 nodes of 8 (switch reducing at 274 GB/s), the flow model overlaps the node's
  // reduction, the crossing and the multicast: 16 slices take less than 0.7 of one, and no less
  // than the switch's bound s / 274 GB/s.
  const topo::Topology t = nvls_cluster(2, 8, 274e9);
  const std::uint64_t bytes = 1ull << 30;
  auto time = [&](int slices) {
    alg::Options o;
    o.set("gpus_per_node", "8");
    o.set("pipeline", std::to_string(slices));
    return run(alg::generate("nvls_tree", 16, o), t, bytes, {}, NetworkKind::flow)
        .completion.value;
  };
  const double one = time(1), sixteen = time(16);
  EXPECT_LT(sixteen, 0.7 * one);
  EXPECT_GT(sixteen, static_cast<double>(bytes) / 274e9);
  // No closed form with overlapping slices: asked for one, the cost says so.
  alg::Options o;
  o.set("gpus_per_node", "8");
  o.set("pipeline", "4");
  EXPECT_THROW(alg::find_algorithm("nvls_tree").cost(16, 1e6, alg::CostParams{}, o), InputError);
}

TEST(NvlsTree, RefusedWithoutAReducingNvlinkSwitch) {
  try {
    run(nvls_tree(8, 4), nvls_cluster(2, 4, 0), 1 << 20);
    FAIL() << "ran without a reducing switch";
  } catch (const InputError& e) {
    EXPECT_NE(std::string(e.what()).find("round 0, switch reduction 0: topology"),
              std::string::npos)
        << e.what();
    EXPECT_NE(std::string(e.what()).find("has no reducing switch that joins ranks {0, 1, 2, 3}"),
              std::string::npos)
        << e.what();
  }
  EXPECT_THROW(nvls_tree(8, 1), InputError);  // one GPU per node: no NVSwitch
  EXPECT_THROW(nvls_tree(8, 3), InputError);  // does not divide
}

alg::Schedule collnet(int n, int g) {
  alg::Options o;
  o.set("gpus_per_node", std::to_string(g));
  return alg::generate("collnet", n, o);
}

// collnet: verified for many shapes, its closed form (alg::collnet_cost: intra = the node's
// NVLink ring, inter = a rail's reducing switch) equals both network models.
//   By hand, 2 nodes of 4, rails reducing at 200 GB/s, s = 8 MB: ring reduce-scatter
//   3 x (2 us + 2 MB / 400 GB/s) = 21 us; the rail switches (one per piece) 3 us + 0.6 us +
//   max(2 MB / 50 GB/s up and down, 2 MB / 200 GB/s) = 43.6 us; ring all-gather 21 us: 85.6 us.
TEST(Collnet, VerifiedAndClosedFormEqualsSimulation) {
  for (int g : {1, 2, 3, 4, 8}) {
    for (int nodes : {2, 3, 5}) {
      const alg::VerifyResult v = alg::verify(collnet(g * nodes, g));
      ASSERT_TRUE(v.ok()) << g << "x" << nodes << ": " << v.error->to_string();
      EXPECT_EQ(v.summary.rounds, 2 * (g - 1) + 1);
    }
  }
  for (int g : {2, 4, 8}) {
    for (int nodes : {2, 3, 4}) {
      for (double rail_bw : {1e12, 20e9}) {
        const int n = g * nodes;
        const topo::Topology t = nvls_cluster(nodes, g, 0, rail_bw);
        const std::uint64_t bytes = std::uint64_t{3} << 23;
        const alg::CostParams intra{.alpha = 2e-6, .beta = 1 / 400e9};
        const alg::CostParams inter{
            .alpha = 3e-6, .beta = 1 / 50e9, .switch_beta = 1 / rail_bw, .switch_latency = 0.6e-6};
        const double want = alg::collnet_cost(n, static_cast<double>(bytes), g, intra, inter);
        for (NetworkKind kind : {NetworkKind::alphabeta, NetworkKind::flow}) {
          EXPECT_NEAR(run(collnet(n, g), t, bytes, {}, kind).completion.value, want, 1e-12 * want)
              << g << "x" << nodes << " " << rail_bw << " " << to_string(kind);
        }
      }
    }
  }
  EXPECT_NEAR(run(collnet(8, 4), nvls_cluster(2, 4, 0, 200e9), 8'000'000).completion.value, 85.6e-6,
              1e-15);
  try {  // the rails do not reduce
    run(collnet(8, 4), nvls_cluster(2, 4, 1e12), 1 << 20);
    FAIL() << "ran without reducing rail switches";
  } catch (const InputError& e) {
    EXPECT_NE(std::string(e.what()).find("has no reducing switch that joins ranks {0, 4}"),
              std::string::npos)
        << e.what();
  }
  EXPECT_THROW(collnet(8, 8), InputError);  // one node: nothing to reduce across
}

alg::Schedule collnet_direct(int n, int g, int pipeline = 1) {
  return alg::generate("collnet_direct", n,
                       alg::Options({{"gpus_per_node", std::to_string(g)},
                                     {"pipeline", std::to_string(pipeline)}}));
}

alg::Schedule collnet_chain(int n, int g, int channels, int segments) {
  return alg::generate("collnet_chain", n,
                       alg::Options({{"gpus_per_node", std::to_string(g)},
                                     {"channels", std::to_string(channels)},
                                     {"segments", std::to_string(segments)}}));
}

double run_gamma(const alg::Schedule& s, const topo::Topology& t, std::uint64_t bytes,
                 double gamma) {
  Executor ex(s, t, NetworkConfig{NetworkKind::alphabeta, SecondsPerByte{gamma}}, Bytes{bytes});
  return ex.run(std::vector<Seconds>(static_cast<std::size_t>(s.ranks), Seconds{0}))
      .completion.value;
}

// NCCL's CollNet Direct (algorithms/collnet.cpp): verified for many shapes and pipeline depths,
// its closed form (alg::collnet_direct_cost) equals the alpha-beta model (a GPU's G-1 sends one
// after another, gamma included) and, with `flow`, the flow model (at once on its NVLink).
//   By hand, 2 nodes of 4, rails reducing at 200 GB/s, s = 8 MB, alpha-beta: scatter 3 x (2 us
//   + 2 MB / 400 GB/s) = 21 us; the rail switches 3 us + 0.6 us + 2 MB / 50 GB/s = 43.6 us;
//   gather 21 us: 85.6 us (collnet's, whose rings cost the same here); flow: scatter 2 us +
//   6 MB / 400 GB/s = 17 us, twice, + 43.6 us = 77.6 us.
TEST(CollnetDirect, VerifiedAndClosedFormEqualsSimulation) {
  for (int g : {1, 2, 3, 4, 8}) {
    for (int nodes : {2, 3, 5}) {
      for (int p : {1, 2, 5}) {
        const alg::VerifyResult v = alg::verify(collnet_direct(g * nodes, g, p));
        ASSERT_TRUE(v.ok()) << g << "x" << nodes << " P=" << p << ": " << v.error->to_string();
        EXPECT_EQ(v.summary.rounds, p + (g == 1 ? 0 : 2)) << g << "x" << nodes << " P=" << p;
      }
    }
  }
  for (int g : {2, 4, 8}) {
    for (int nodes : {2, 3}) {
      for (double rail_bw : {1e12, 20e9}) {
        const int n = g * nodes;
        const topo::Topology t = nvls_cluster(nodes, g, 0, rail_bw);
        const std::uint64_t bytes = std::uint64_t{3} << 23;
        const alg::CostParams intra{.alpha = 2e-6, .beta = 1 / 400e9, .gamma = 1e-12};
        const alg::CostParams inter{
            .alpha = 3e-6, .beta = 1 / 50e9, .switch_beta = 1 / rail_bw, .switch_latency = 0.6e-6};
        const double s = static_cast<double>(bytes);
        const double ab = alg::collnet_direct_cost(n, s, g, intra, inter);
        EXPECT_NEAR(run_gamma(collnet_direct(n, g), t, bytes, 1e-12), ab, 1e-12 * ab)
            << g << "x" << nodes << " " << rail_bw;
        alg::CostParams no_gamma = intra;
        no_gamma.gamma = 0;
        const double flow = alg::collnet_direct_cost(n, s, g, no_gamma, inter, true);
        EXPECT_NEAR(run(collnet_direct(n, g), t, bytes, {}, NetworkKind::flow).completion.value,
                    flow, 1e-12 * flow)
            << g << "x" << nodes << " " << rail_bw;
      }
    }
  }
  const topo::Topology t = nvls_cluster(2, 4, 0, 200e9);
  EXPECT_NEAR(run(collnet_direct(8, 4), t, 8'000'000).completion.value, 85.6e-6, 1e-15);
  EXPECT_NEAR(run(collnet_direct(8, 4), t, 8'000'000, {}, NetworkKind::flow).completion.value,
              77.6e-6, 1e-15);
  // Pipelined, the scatter, the fabric and the gather of successive slices overlap: 1 GiB in
  // 16 slices (flow model) takes about the fabric's s/G / 50 GB/s = 5.37 ms, its bound, plus
  // a slice's scatter and gather, against 9.40 ms (2.01 + 5.37 + 2.01) in one slice.
  const std::uint64_t gib = std::uint64_t{1} << 30;
  const double fabric = static_cast<double>(gib) / 4 / 50e9;
  const double one = run(collnet_direct(8, 4), t, gib, {}, NetworkKind::flow).completion.value;
  const double sixteen =
      run(collnet_direct(8, 4, 16), t, gib, {}, NetworkKind::flow).completion.value;
  EXPECT_GT(one, 1.7 * fabric);
  EXPECT_GT(sixteen, fabric);
  EXPECT_LT(sixteen, 1.07 * fabric);
  EXPECT_THROW((void)alg::find_algorithm("collnet_direct")
                   .cost(8, 1e6, alg::CostParams{}, alg::Options({{"gpus_per_node", "4"},
                                                                  {"pipeline", "2"}})),
               InputError);  // no closed form pipelined
  try {  // the rails do not reduce
    run(collnet_direct(8, 4), nvls_cluster(2, 4, 1e12), 1 << 20);
    FAIL() << "ran without reducing rail switches";
  } catch (const InputError& e) {
    EXPECT_NE(std::string(e.what()).find("has no reducing switch that joins ranks {0, 4}"),
              std::string::npos)
        << e.what();
  }
  EXPECT_THROW(collnet_direct(8, 8), InputError);  // one node: nothing to reduce across
}

// NCCL's CollNet Chain: verified for many shapes, channel counts and segment counts; with one
// segment and C <= G or a multiple of G its closed form (alg::collnet_chain_cost) equals both
// network models (gamma in the alpha-beta one).
//   By hand, 2 nodes of 4, 4 channels (one per rail), s = 8 MB, rails reducing at 200 GB/s:
//   3 steps up of 2 us + 2 MB / 400 GB/s = 7 us, the switches 43.6 us, 3 steps down of 7 us:
//   85.6 us; one channel: 3 x (2 + 20) us up and down, 3 + 0.6 + 160 us in rail 0: 295.6 us.
TEST(CollnetChain, VerifiedAndClosedFormEqualsSimulation) {
  for (int g : {1, 2, 3, 4, 8}) {
    for (int nodes : {2, 3, 5}) {
      for (int c : {1, 2, 3, 2 * g}) {
        for (int seg : {1, 4}) {
          const alg::VerifyResult v = alg::verify(collnet_chain(g * nodes, g, c, seg));
          ASSERT_TRUE(v.ok()) << g << "x" << nodes << " C=" << c << " P=" << seg << ": "
                              << v.error->to_string();
          EXPECT_EQ(v.summary.rounds, seg + 2 * (g - 1));
        }
      }
    }
  }
  for (int g : {2, 4, 8}) {
    for (int c : {1, g / 2, g, 2 * g}) {
      for (double rail_bw : {1e12, 20e9}) {
        const int nodes = 3, n = g * nodes;
        const topo::Topology t = nvls_cluster(nodes, g, 0, rail_bw);
        const std::uint64_t bytes = std::uint64_t{3} << 23;
        const alg::CostParams intra{.alpha = 2e-6, .beta = 1 / 400e9, .gamma = 1e-12};
        const alg::CostParams inter{
            .alpha = 3e-6, .beta = 1 / 50e9, .switch_beta = 1 / rail_bw, .switch_latency = 0.6e-6};
        const double s = static_cast<double>(bytes);
        const alg::Schedule sched = collnet_chain(n, g, c, 1);
        const double ab = alg::collnet_chain_cost(n, s, g, c, intra, inter);
        EXPECT_NEAR(run_gamma(sched, t, bytes, 1e-12), ab, 1e-12 * ab)
            << g << " C=" << c << " " << rail_bw;
        alg::CostParams no_gamma = intra;
        no_gamma.gamma = 0;
        const double flow = alg::collnet_chain_cost(n, s, g, c, no_gamma, inter, true);
        EXPECT_NEAR(run(sched, t, bytes, {}, NetworkKind::flow).completion.value, flow,
                    1e-12 * flow)
            << g << " C=" << c << " " << rail_bw;
      }
    }
  }
  const topo::Topology t = nvls_cluster(2, 4, 0, 200e9);
  EXPECT_NEAR(run(collnet_chain(8, 4, 4, 1), t, 8'000'000).completion.value, 85.6e-6, 1e-15);
  EXPECT_NEAR(run(collnet_chain(8, 4, 1, 1), t, 8'000'000).completion.value, 295.6e-6, 1e-15);
  // Pipelined in 16 segments the chains' steps overlap the fabric's: 1 GiB takes within 11% of
  // the fabric's bound s/G / 50 GB/s = 5.37 ms (flow model), against 9.40 ms in one segment.
  const std::uint64_t gib = std::uint64_t{1} << 30;
  const double fabric = static_cast<double>(gib) / 4 / 50e9;
  const double one = run(collnet_chain(8, 4, 4, 1), t, gib, {}, NetworkKind::flow).completion.value;
  const double sixteen =
      run(collnet_chain(8, 4, 4, 16), t, gib, {}, NetworkKind::flow).completion.value;
  EXPECT_GT(one, 1.7 * fabric);
  EXPECT_GT(sixteen, fabric);
  EXPECT_LT(sixteen, 1.11 * fabric);
  EXPECT_THROW((void)alg::collnet_chain_cost(8, 1e6, 2, 3, alg::CostParams{}, alg::CostParams{}),
               InputError);  // 3 chains on 2 rails: no closed form
  EXPECT_THROW((void)alg::find_algorithm("collnet_chain")
                   .cost(8, 1e6, alg::CostParams{}, alg::Options(std::map<std::string, std::string>{{"gpus_per_node", "4"}})),
               InputError);  // 16 segments by default: no closed form
  EXPECT_THROW(collnet_chain(8, 8, 1, 1), InputError);  // one node
  EXPECT_THROW(collnet_chain(8, 4, 65, 1), InputError);  // more than NCCL's 64 channels
}

}  // namespace
}  // namespace ssim::sim
