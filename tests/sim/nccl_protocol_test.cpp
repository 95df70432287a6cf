// NCCL's protocols as the simulator costs them (sim/protocol.hpp), in both network models,
// against closed forms, and NCCL's own choice (sim/nccl_tuner.hpp): its estimate by hand from
// tuning.cc's constants, its picks at the ends of the size range, and its refusals.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <string>
#include <vector>

#include "algorithms/nccl_options.hpp"
#include "algorithms/protocol.hpp"
#include "algorithms/registry.hpp"
#include "common/error.hpp"
#include "sim/executor.hpp"
#include "sim/nccl_tuner.hpp"
#include "sim/simulation.hpp"
#include "tests/sim/fixtures.hpp"
#include "topologies/generators.hpp"

namespace ssim::sim {
namespace {

constexpr double kAlpha = 3e-6;
constexpr double kBw = 400e9;

alg::Options opts(std::initializer_list<std::pair<const char*, std::string>> kv) {
  alg::Options o;
  for (const auto& [k, v] : kv) o.set(k, v);
  return o;
}

// NCCL's choice for the `nccl` options `o` and the options it resolves them to, as
// run_simulation makes them: read, chosen on the machine, written back.
struct Resolved : NcclChoice {
  alg::Options options;
};
Resolved choose(const topo::Topology& t, Bytes size, const alg::Options& o,
                bool pipelined = SimulationConfig{}.pipelined_kernels) {
  const alg::NcclRequest request(t.gpu_count(), o);
  Resolved r;
  static_cast<NcclChoice&>(r) = nccl_choose(t, size, request, pipelined);
  r.options = request.schedule_options(r);
  return r;
}

// `nodes` nodes of `g` GPUs on NVLink (kBw, kAlpha), a 50 GB/s NIC each (2 us), one rail switch
// per local index and one spine (50 GB/s, 1 us).
topo::Topology rail_nodes(int nodes, int g) {
  return topo::make_hierarchical({.nodes = nodes,
                                  .gpus_per_node = g,
                                  .nvlink_bandwidth = BytesPerSecond{kBw},
                                  .nvlink_latency = Seconds{kAlpha},
                                  .nic_bandwidth = BytesPerSecond{50e9},
                                  .nic_latency = Seconds{2e-6},
                                  .fabric = topo::FabricKind::rail_optimized,
                                  .spines = 1,
                                  .spine_bandwidth = BytesPerSecond{50e9},
                                  .spine_latency = Seconds{1e-6}});
}

// Seconds per data byte of one transfer of a one-channel NCCL collective whose route moves it
// at `route_inverse` seconds per byte after the protocol's wire and efficiency: the protocol's
// own cap and the graph's per-channel bandwidth on the wire (nccl_channel_bandwidth;
// sim/protocol.hpp "channel"), in both models (one channel: the alpha-beta port's cap is the
// channel's).
double per_byte(const ProtocolCost& c, double route_inverse, const topo::Topology& t,
                NetworkKind /*kind*/) {
  const double inv = std::max(route_inverse, c.channel_bandwidth > 0 ? 1 / c.channel_bandwidth : 0);
  return std::max(inv, c.wire / nccl_channel_bandwidth(t));
}

double run(const alg::Schedule& s, const topo::Topology& t, NetworkKind kind, std::uint64_t bytes,
           bool pipelined = false) {
  NetworkConfig network{kind, SecondsPerByte{0.0}};
  network.pipelined_kernels = pipelined;
  Executor ex(s, t, network, Bytes{bytes});
  const std::vector<Seconds> arrival(static_cast<std::size_t>(s.ranks), Seconds{0});
  return ex.run(arrival).completion.value;
}

// One channel's ring on a switch: the launch, then 2(n-1) steps of
// f alpha + (s/n) max(wire / (efficiency b), 1 / cap), in both models (nothing shared), for each
// protocol with NCCL's Hopper figures (a switch is one node: the NVLink efficiency applies); the
// cap is also the channel's share of the graph (b / 16 on the wire).
TEST(NcclProtocolSim, RingOnASwitchMatchesTheClosedForm) {
  const int n = 8;
  const topo::Topology t = testing::switch_of(n, kBw, kAlpha);
  const ProtocolTable table = nccl_default_protocols();
  for (const char* proto : {"simple", "ll", "ll128"}) {
    const alg::Schedule s = alg::generate("nccl_ring", n, opts({{"proto", proto}}));
    ASSERT_EQ(alg::to_string(alg::schedule_protocol(s)), proto);
    const ProtocolCost& c = table.of(*alg::parse_protocol(proto));
    for (std::uint64_t bytes : {8ull * 64, 8ull << 20}) {
      const double chunk = static_cast<double>(bytes) / n;
      for (NetworkKind kind : {NetworkKind::alphabeta, NetworkKind::flow}) {
        const double inv = per_byte(c, c.wire / (c.efficiency_intra * kBw), t, kind);
        const double want = c.launch + 2.0 * (n - 1) * (c.latency_intra * kAlpha + chunk * inv);
        const double got = run(s, t, kind, bytes);
        EXPECT_NEAR(got, want, 1e-9 * want) << proto << " " << bytes << " " << to_string(kind);
      }
    }
  }
  // The figures themselves: LL halves the bandwidth, LL128 loses 8 of 128 bytes and is capped at
  // 36.7 GB/s a channel (here below 400 GB/s / (128/120)), and both cut Simple's latency.
  EXPECT_DOUBLE_EQ(table.ll.wire, 2.0);
  EXPECT_DOUBLE_EQ(table.ll128.wire, 128.0 / 120.0);
  EXPECT_DOUBLE_EQ(table.ll128.channel_bandwidth, 36.7e9);
  EXPECT_NEAR(table.ll.latency_intra, 0.6 / 3.4, 1e-12);
  EXPECT_NEAR(table.ll128.latency_inter, 4.0 / 14.0, 1e-12);
  // NCCL's Ring base latencies and its Hopper NVLink figure (20.6 of 25 GB/s per link).
  EXPECT_DOUBLE_EQ(table.simple.launch, 8.4e-6);
  EXPECT_DOUBLE_EQ(table.ll.launch, 6.6e-6);
  EXPECT_DOUBLE_EQ(table.ll128.launch, 14e-6);
  EXPECT_DOUBLE_EQ(table.simple.efficiency_intra, 20.6 / 25);
}

// A schedule that names no protocol is costed by its routes alone: no launch, no NVLink
// efficiency, no channel cap, Simple's latencies; naming Simple adds exactly the launch, the
// efficiency and the channel's cap.
TEST(NcclProtocolSim, NoProtocolNoNcclCosts) {
  const int n = 8;
  const topo::Topology t = testing::switch_of(n, kBw, kAlpha);
  const std::uint64_t bytes = 8ull << 20;
  const double chunk = static_cast<double>(bytes) / n;
  const alg::Schedule plain = alg::generate("nccl_ring", n, alg::Options{});
  const alg::Schedule simple = alg::generate("nccl_ring", n, opts({{"proto", "simple"}}));
  const ProtocolCost c = nccl_default_protocols().simple;
  for (NetworkKind kind : {NetworkKind::alphabeta, NetworkKind::flow}) {
    const double want_plain = 2.0 * (n - 1) * (kAlpha + chunk / kBw);
    const double want_simple =
        c.launch + 2.0 * (n - 1) * (kAlpha + chunk * per_byte(c, 1 / (c.efficiency_intra * kBw),
                                                                t, kind));
    EXPECT_NEAR(run(plain, t, kind, bytes), want_plain, 1e-9 * want_plain) << to_string(kind);
    EXPECT_NEAR(run(simple, t, kind, bytes), want_simple, 1e-9 * want_simple) << to_string(kind);
  }
}

// network: {protocol: simple} makes every schedule that names none NCCL's send/recv under
// Simple: `ring` then pays the launch and the NVLink efficiency, exactly as nccl_ring
// proto=simple does; a schedule's own proto still wins.
TEST(NcclProtocolSim, NetworkProtocolAppliesToSchedulesWithoutOne) {
  SimulationConfig c;
  c.topology = testing::switch_of(8, kBw, kAlpha);
  c.algorithm = "ring";
  c.size = Bytes{8ull << 20};
  c.network = NetworkKind::flow;
  const double plain = run_simulation(c).mean_completion.value;
  c.protocol = alg::Protocol::simple;
  const double simple = run_simulation(c).mean_completion.value;
  const ProtocolCost p = nccl_default_protocols().simple;
  const double chunk = static_cast<double>(c.size.value) / 8;
  EXPECT_NEAR(plain, 14 * (kAlpha + chunk / kBw), 1e-9 * plain);
  EXPECT_NEAR(simple, p.launch + 14 * (kAlpha + chunk / (p.efficiency_intra * kBw)), 1e-9 * simple);
  // nccl_ring proto=ll keeps its own protocol under a network-wide Simple.
  c.algorithm = "nccl_ring";
  c.options = opts({{"proto", "ll"}});
  const double ll = run_simulation(c).mean_completion.value;
  c.protocol.reset();
  EXPECT_DOUBLE_EQ(run_simulation(c).mean_completion.value, ll);
}

// Pipelined steps are a collective kernel's: a schedule run as NCCL's send/recv under a
// network-wide protocol issues each round as its own group (the GPU backend does), so with
// steps pipelined it keeps the per-round rule, bit for bit (on a switch whose 3 us latency is
// below NCCL's 3.4 us Simple step, a pipelined `ring` would otherwise pay the step), while
// nccl_ring proto=simple changes.
TEST(NcclProtocolSim, SendRecvRoundsStayPerRoundWhenPipelined) {
  SimulationConfig c;
  c.topology = testing::switch_of(8, kBw, kAlpha);
  c.size = Bytes{8ull << 20};
  c.network = NetworkKind::flow;
  c.protocol = alg::Protocol::simple;
  for (const char* algorithm : {"ring", "stragglar", "rhd"}) {
    c.algorithm = algorithm;
    c.pipelined_kernels = false;
    const double per_round = run_simulation(c).mean_completion.value;
    c.pipelined_kernels = true;
    EXPECT_EQ(run_simulation(c).mean_completion.value, per_round) << algorithm;
  }
  c.algorithm = "nccl_ring";
  c.options = opts({{"proto", "simple"}});
  c.pipelined_kernels = false;
  const double per_round = run_simulation(c).mean_completion.value;
  c.pipelined_kernels = true;
  EXPECT_NE(run_simulation(c).mean_completion.value, per_round);
}

// The launch is paid from each rank's own arrival: a rank that arrives late starts its kernel
// late, so on two ranks the ring ends a launch after the later arrival plus its two steps (each
// waits for the last one's data), per round and pipelined (where a step's latency is at least
// NCCL's per-step hardware latency, LL's 0.6 us within a node).
TEST(NcclProtocolSim, LaunchCountsFromEachRanksArrival) {
  const topo::Topology t = testing::switch_of(2, kBw, kAlpha);
  const alg::Schedule s = alg::generate("nccl_ring", 2, opts({{"proto", "ll"}}));
  const ProtocolCost c = nccl_default_protocols().ll;
  const std::uint64_t bytes = 1 << 10;
  const std::vector<Seconds> arrival{Seconds{0}, Seconds{50e-6}};
  for (NetworkKind kind : {NetworkKind::alphabeta, NetworkKind::flow}) {
    for (bool pipelined : {false, true}) {
      const double latency = pipelined ? std::max(c.latency_intra * kAlpha, c.step_intra)
                                       : c.latency_intra * kAlpha;
      const double step =
          latency + bytes / 2.0 * per_byte(c, c.wire / (c.efficiency_intra * kBw), t, kind);
      NetworkConfig network{kind, SecondsPerByte{0.0}};
      network.pipelined_kernels = pipelined;
      Executor ex(s, t, network, Bytes{bytes});
      const double want = 50e-6 + c.launch + 2 * step;
      EXPECT_NEAR(ex.run(arrival).completion.value, want, 1e-9 * want)
          << to_string(kind) << pipelined;
    }
  }
}

// Across nodes the route's latency is scaled by the inter-node factor and the NVLink efficiency
// does not apply: two ranks on two nodes of one GPU each, one transfer each way per step.
TEST(NcclProtocolSim, AcrossNodesTheInterNodeFactorApplies) {
  const topo::Topology t = rail_nodes(2, 1);
  const double latency = t.route_summary(0, 1).latency.value;
  const double bw = t.route_summary(0, 1).bandwidth.value;
  const ProtocolCost ll = nccl_default_protocols().ll;
  const alg::Schedule s =
      alg::generate("nccl_ring", 2, opts({{"proto", "ll"}, {"gpus_per_node", "1"}}));
  const std::uint64_t bytes = 1 << 20;
  for (NetworkKind kind : {NetworkKind::alphabeta, NetworkKind::flow}) {
    const double want = ll.launch + 2.0 * (ll.latency_inter * latency +
                                           bytes / 2.0 * per_byte(ll, ll.wire / bw, t, kind));
    EXPECT_NEAR(run(s, t, kind, bytes), want, 1e-9 * want) << to_string(kind);
  }
  // Two nodes of one GPU: NCCL's graph is the NIC's 50 GB/s over 2 channels, and LL moves half
  // of a channel's wire bytes as data, so the flow model's channel moves 12.5 GB/s of data.
  EXPECT_DOUBLE_EQ(nccl_channel_bandwidth(t), 25e9);
}

// In the flow model the cap binds a channel even where the link has room: on a link of
// 400 GB/s, NCCL's graph gives a channel 400 / 16 = 25 GB/s on the wire, so LL128 moves one
// transfer at 25 x 120/128 = 23.4 GB/s of data (below its own 36.7), Simple at 25 GB/s and LL
// at 12.5; two channels at twice that. Without the graph's cap (the mode before) LL128 moved
// 36.7 GB/s and Simple and LL the link's share.
TEST(NcclProtocolSim, FlowModelCapsEachChannel) {
  const topo::Topology t = testing::switch_of(2, kBw, 0.0);
  ASSERT_DOUBLE_EQ(nccl_channel_bandwidth(t), kBw / 16);
  const std::uint64_t bytes = 64ull << 20;
  const ProtocolTable table = nccl_default_protocols();
  for (const auto& [proto, rate] : {std::pair{"ll128", 25e9 * 120 / 128}, std::pair{"simple", 25e9},
                                    std::pair{"ll", 12.5e9}}) {
    for (int channels : {1, 2}) {
      const alg::Schedule s = alg::generate(
          "nccl_ring", 2, opts({{"proto", proto}, {"channels", std::to_string(channels)}}));
      const double launch = table.of(*alg::parse_protocol(proto)).launch;
      const double want = launch + 2.0 * (bytes / 2.0 / channels) / rate;  // launch + steps
      EXPECT_NEAR(run(s, t, NetworkKind::flow, bytes), want, 1e-9 * want) << proto << channels;
    }
  }
  // The cap is the ring graph's: NCCL's Ring kernel (nccl_ring, nccl algo=ring), not its Tree
  // (whose graph has speeds of its own) nor a schedule of another name.
  auto kernel = [](const char* algorithm, const char* algo) {
    alg::Schedule s = alg::Schedule::make(alg::Collective::allreduce, algorithm, 2, 2);
    if (algo) s.options["algo"] = algo;
    return alg::runs_ring_kernel(s);
  };
  EXPECT_TRUE(kernel("nccl_ring", nullptr));
  EXPECT_TRUE(kernel("nccl", "ring"));
  EXPECT_FALSE(kernel("nccl", "tree"));
  EXPECT_FALSE(kernel("nccl_tree", nullptr));
  EXPECT_FALSE(kernel("chain", nullptr));
  const alg::Schedule tree =
      alg::generate("nccl_tree", 2, opts({{"proto", "simple"}, {"channels", "1"}}));
  const alg::Schedule ring =
      alg::generate("nccl_ring", 2, opts({{"proto", "simple"}, {"channels", "1"}}));
  EXPECT_LT(run(tree, t, NetworkKind::flow, bytes), run(ring, t, NetworkKind::flow, bytes));
  // Sixteen channels share the link as they did: the cap is the graph's share, not below it.
  const alg::Schedule all =
      alg::generate("nccl_ring", 2, opts({{"proto", "simple"}, {"channels", "16"}}));
  const double want = table.simple.launch +
                      2.0 * (bytes / 2.0) / (table.simple.efficiency_intra * kBw);
  EXPECT_NEAR(run(all, t, NetworkKind::flow, bytes), want, 1e-9 * want);
}

// In the alpha-beta model a rank's one send port serves its C channels in turn, so the port
// moves at most C channels' cap: LL128 on 2 ranks of a 400 GB/s switch, a channel's cap
// min(36.7, 25 x 120/128) = 23.4 GB/s of data, takes the launch and 2 steps of
// s/2 max(w / (e b), 1 / (C cap)): 1 and 2 channels at their caps, 16 at the link's share.
// With the cap applied to each transfer (as before), 16 channels took 16 times as long as one
// channel's cap allows.
TEST(NcclProtocolSim, AlphaBetaPortCapsChannelsTogether) {
  const topo::Topology t = testing::switch_of(2, kBw, 0.0);
  const ProtocolCost c = nccl_default_protocols().ll128;
  const double cap = std::min(c.channel_bandwidth, 25e9 * 120 / 128);
  const std::uint64_t bytes = 64ull << 20;
  for (int channels : {1, 2, 16}) {
    const alg::Schedule s = alg::generate(
        "nccl_ring", 2, opts({{"proto", "ll128"}, {"channels", std::to_string(channels)}}));
    const double inv = std::max(c.wire / (c.efficiency_intra * kBw), 1 / (channels * cap));
    const double want = c.launch + 2.0 * (bytes / 2.0) * inv;
    EXPECT_NEAR(run(s, t, NetworkKind::alphabeta, bytes), want, 1e-9 * want) << channels;
  }
}

// LL's bus bandwidth is at most NCCL's llMaxBw (141 GB/s on one Hopper node), which C channels
// share: on a switch of 8 at 400 GB/s, 16 LL channels move 141 / 16 = 8.8 GB/s of data each (the
// graph's share alone, 12.5, binds no longer), 4 channels 12.5 each (141 / 4 is more); two nodes
// take the multi-node figure.
TEST(NcclProtocolSim, LlChannelsShareNcclsLlCap) {
  const int n = 8;
  const topo::Topology t = testing::switch_of(n, kBw, kAlpha);
  ASSERT_DOUBLE_EQ(nccl_ll_max_bandwidth(t), 141e9);
  const ProtocolCost ll = nccl_default_protocols().ll;
  const std::uint64_t bytes = 64ull << 20;
  for (const auto& [channels, rate] : {std::pair{16, 141e9 / 16}, std::pair{4, 12.5e9}}) {
    const alg::Schedule s = alg::generate(
        "nccl_ring", n, opts({{"proto", "ll"}, {"channels", std::to_string(channels)}}));
    ASSERT_EQ(alg::schedule_channels(s), channels);
    const double chunk = static_cast<double>(bytes) / (n * channels);
    const double want = ll.launch + 2.0 * (n - 1) * (ll.latency_intra * kAlpha + chunk / rate);
    EXPECT_NEAR(run(s, t, NetworkKind::flow, bytes), want, 1e-9 * want) << channels;
  }
  EXPECT_DOUBLE_EQ(nccl_ll_max_bandwidth(rail_nodes(2, 8)), 39e9);
  EXPECT_DOUBLE_EQ(nccl_ll_max_bandwidth(rail_nodes(4, 8)), 20.4e9);
}

// A chain A -> B -> C of two segments, pipelined (round 0: A sends segment 0; round 1: A sends
// segment 1 while B forwards segment 0; round 2: B forwards segment 1); 2 MiB, 1 MiB a segment.
alg::Schedule two_step_chain(bool protocol) {
  alg::Schedule s = alg::Schedule::make(alg::Collective::allreduce, "chain", 3, 2);
  s.add_round().add(0, 1, 0, 1, alg::Op::copy);
  alg::Round& middle = s.add_round();
  middle.add(0, 1, 1, 2, alg::Op::copy);
  middle.add(1, 2, 0, 1, alg::Op::copy);
  s.add_round().add(1, 2, 1, 2, alg::Op::copy);
  if (protocol) s.options["proto"] = "simple";
  return s;
}

// NCCL's steps overlap their latencies (NetworkConfig::pipelined_kernels, sim/protocol.hpp): on
// a switch of latency a (10 us, above NCCL's 3.4 us Simple step), a segment serializing for t,
// A's second send leaves once its first has (a latency before that lands), and B forwards each
// segment as it lands, so the chain takes launch + 2 a + 3 t, where the per-round rule (every
// rank's round waits for its transfers to land) takes launch + 3 (a + t): one latency saved,
// in both network models. Without a protocol, or not pipelined, the per-round rule, exactly.
TEST(NcclProtocolSim, PipelinedStepsOverlapTheirLatencies) {
  const double a = 10e-6;
  const std::uint64_t bytes = 2ull << 20;
  const double m = static_cast<double>(bytes) / 2;
  const topo::Topology t = testing::switch_of(3, kBw, a);
  const ProtocolCost c = nccl_default_protocols().simple;
  for (NetworkKind kind : {NetworkKind::alphabeta, NetworkKind::flow}) {
    const std::string k(to_string(kind));
    // Not NCCL's Ring kernel: no channel cap (sim/executor.cpp).
    const double step = m / (c.efficiency_intra * kBw);
    EXPECT_NEAR(run(two_step_chain(true), t, kind, bytes, true), c.launch + 2 * a + 3 * step,
                1e-12) << k;
    EXPECT_NEAR(run(two_step_chain(true), t, kind, bytes), c.launch + 3 * (a + step), 1e-12) << k;
    const double plain = 3 * (a + m / kBw);
    EXPECT_NEAR(run(two_step_chain(false), t, kind, bytes, true), plain, 1e-12) << k;
    EXPECT_EQ(run(two_step_chain(false), t, kind, bytes, true),
              run(two_step_chain(false), t, kind, bytes)) << k;
  }
}

// Pipelined, a step never forwards what has not landed: on a ring every step forwards the last
// one's data, so each of nccl_ring's 2(n-1) L steps takes max(a, NCCL's 3.4 us Simple step) +
// (s / (n L)) w / b after the launch, but a loop's first step, which sends the rank's own data:
// it leaves once the rank's last send of the loop before has left, so each further loop
// overlaps one latency. In both models.
TEST(NcclProtocolSim, PipelinedRingWaitsForItsData) {
  const int n = 4;
  const topo::Topology t = testing::switch_of(n, kBw, kAlpha);
  const ProtocolCost c = nccl_default_protocols().simple;
  const std::uint64_t bytes = 12ull << 20;
  const double a = std::max(kAlpha, c.step_intra);
  ASSERT_DOUBLE_EQ(a, 3.4e-6);
  for (int loops : {1, 3}) {
    const alg::Schedule s = alg::generate(
        "nccl_ring", n, opts({{"proto", "simple"}, {"loops", std::to_string(loops)}}));
    const double chunk = static_cast<double>(bytes) / (n * loops);
    for (NetworkKind kind : {NetworkKind::alphabeta, NetworkKind::flow}) {
      const double step = a + chunk * per_byte(c, 1 / (c.efficiency_intra * kBw), t, kind);
      const double want = c.launch + 2.0 * (n - 1) * loops * step - (loops - 1) * a;
      EXPECT_NEAR(run(s, t, kind, bytes, true), want, 1e-9 * want)
          << loops << " " << to_string(kind);
    }
  }
}

// Pipelined, a channel waits for its own data only (sim/protocol.hpp, "per connection"): rank 1
// forwards two streams, channel A (from rank 0 over a 200 us link, to rank 2) and channel B
// (from rank 4 over a 1 us link, to rank 3), K rounds of one chunk each, as a ring's channels
// forward theirs. B's sends follow B's earlier sends and B's data, not A's: B is all delivered
// before A's first chunk has even reached rank 1. Were a rank's sends kept in round order
// across its channels (the mode before), B's second send would wait for A's first, which
// waits for the slow link. The flow model (alpha-beta serves a rank's sends on one port in
// schedule order, so its B waits for A there).
TEST(NcclProtocolSim, PipelinedChannelsWaitForTheirOwnDataOnly) {
  constexpr int K = 4;
  topo::Topology t;
  for (int g = 0; g < 5; ++g) t.add_gpu("gpu" + std::to_string(g));
  const double slow = 200e-6, fast = 1e-6;
  t.add_link(0, 1, BytesPerSecond{kBw}, Seconds{slow});
  t.add_link(4, 1, BytesPerSecond{kBw}, Seconds{fast});
  t.add_link(1, 2, BytesPerSecond{kBw}, Seconds{fast});
  t.add_link(1, 3, BytesPerSecond{kBw}, Seconds{fast});
  alg::Schedule s = alg::Schedule::make(alg::Collective::allreduce, "two_streams", 5, 2 * K);
  for (int k = 0; k <= K; ++k) {
    alg::Round& r = s.add_round();
    if (k >= 1) {
      r.add(1, 2, k - 1, k, alg::Op::copy);          // A forwards what came from 0
      r.add(1, 3, K + k - 1, K + k, alg::Op::copy);  // B forwards what came from 4
    }
    if (k < K) {
      r.add(0, 1, k, k + 1, alg::Op::copy);
      r.add(4, 1, K + k, K + k + 1, alg::Op::copy);
    }
  }
  s.options["proto"] = "simple";
  NetworkConfig network{NetworkKind::flow, SecondsPerByte{0.0}};
  network.pipelined_kernels = true;
  Executor ex(s, t, network, Bytes{1 << 20});
  RunOptions o;
  o.record_timeline = true;
  const IterationResult r = ex.run(std::vector<Seconds>(5, Seconds{0}), o);
  double b_last = 0, a_first = 1;
  for (const TransferRecord& x : r.timeline) {
    if (x.src == 1 && x.dst == 3) b_last = std::max(b_last, x.end.value);
    if (x.src == 0) a_first = std::min(a_first, x.end.value);
  }
  ASSERT_GT(a_first, slow);
  EXPECT_LT(b_last, a_first);
  // B: the launch, then per chunk at most NCCL's 3.4 us step and its serialization, twice.
  const ProtocolCost c = nccl_default_protocols().simple;
  EXPECT_LT(b_last, c.launch + (K + 1) * 2 * (c.step_intra + 1e-6));
}

// NCCL's estimate for a one-node ring with LL, by hand from tuning.cc: base 6.6 us + 14 steps x
// 0.6 us, bandwidth min(141, bw/2) x n / 2(n-1).
TEST(NcclTuner, EstimateIsTuningCcs) {
  const int n = 8;
  const topo::Topology t = testing::switch_of(n, kBw, kAlpha);
  const Resolved c = choose(t, Bytes{4096}, alg::Options{});
  bool found = false;
  for (const NcclEstimate& e : c.table) {
    if (e.algo == "ring" && e.proto == alg::Protocol::ll) {
      found = true;
      EXPECT_NEAR(e.latency_us, 6.6 + 14 * 0.6, 1e-9);
      const double bw = std::min(141.0, kBw / 1e9 * 0.5) * n / (2.0 * (n - 1));
      EXPECT_NEAR(e.time_us, 6.6 + 14 * 0.6 + 4096 / (1000 * bw), 1e-6);
    }
  }
  EXPECT_TRUE(found);
  EXPECT_EQ(c.proto, alg::Protocol::ll);  // small: LL
  EXPECT_NEAR(c.estimate_us, 6.6 + 14 * 0.6 + 4096 / (1000 * std::min(141.0, 200.0) * 8 / 14), 1.0);
}

// Small sizes take LL, large ones Simple; NVLS where the switch reduces on one node at 1 GiB.
TEST(NcclTuner, ChoosesByEstimate) {
  const topo::Topology plain = testing::switch_of(8, kBw, kAlpha);
  EXPECT_EQ(choose(plain, Bytes{8}, alg::Options{}).proto, alg::Protocol::ll);
  const Resolved big = choose(plain, Bytes{1ull << 30}, alg::Options{});
  EXPECT_EQ(big.proto, alg::Protocol::simple);
  EXPECT_EQ(big.algo, "ring");
  EXPECT_EQ(big.channels, 16);
  EXPECT_EQ(choose(plain, Bytes{8}, alg::Options{}).channels, 1);  // cut for 8 bytes
  topo::Topology reducing = testing::switch_of(8, kBw, kAlpha);
  reducing.set_switch_reduction(8, {BytesPerSecond{kBw}, Seconds{1e-6}});  // vertex 8: the switch
  EXPECT_EQ(choose(reducing, Bytes{1ull << 30}, alg::Options{}).algo, "nvls");
  // Forced: the cheapest of what is allowed.
  const Resolved forced = choose(plain, Bytes{8}, opts({{"algo", "tree"}}));
  EXPECT_EQ(forced.algo, "tree");
  EXPECT_EQ(choose(plain, Bytes{8}, opts({{"proto", "simple"}})).proto, alg::Protocol::simple);
}

// NVLS chosen by nccl gets the pipeline depth of least time: simulated (alpha-beta, where the
// closed form is exact) it is no slower than half or twice that depth, and at 1 GiB it pipelines
// (depth > 1) and beats the unpipelined schedule, which pays the reduction and the multicast one
// after the other.
TEST(NcclTuner, NvlsGetsThePipelineOfLeastTime) {
  topo::Topology t = testing::switch_of(8, kBw, kAlpha);
  t.set_switch_reduction(8, {BytesPerSecond{274e9}, Seconds{1e-6}});
  for (std::uint64_t bytes : {1ull << 20, 1ull << 30}) {
    const Resolved c = choose(t, Bytes{bytes}, opts({{"algo", "nvls"}}));
    ASSERT_EQ(c.algo, "nvls");
    const int p = c.options.get_int("pipeline", 1, 1, 1024);
    auto time_at = [&](int depth) {
      alg::Options o = c.options;
      o.set("pipeline", std::to_string(depth));
      return run(alg::generate("nccl", 8, o), t, NetworkKind::alphabeta, bytes);
    };
    const double at_p = time_at(p);
    if (p > 1) {
      EXPECT_LE(at_p, time_at(p / 2)) << bytes;
    }
    if (p < 1024) {
      EXPECT_LE(at_p, time_at(p * 2)) << bytes;
    }
    if (bytes == 1ull << 30) {
      EXPECT_GT(p, 1);
      EXPECT_LT(at_p, 0.8 * time_at(1));
    }
  }
}

// Two nodes of 8 GPUs: NVLink 400 GB/s, one 50 GB/s NIC per GPU on a rail-optimized fabric.
topo::Topology two_nodes_of_8() {
  return topo::make_hierarchical({.nodes = 2,
                                  .gpus_per_node = 8,
                                  .nvlink_bandwidth = BytesPerSecond{400e9},
                                  .nvlink_latency = Seconds{kAlpha},
                                  .nic_bandwidth = BytesPerSecond{50e9},
                                  .nic_latency = Seconds{2e-6},
                                  .fabric = topo::FabricKind::rail_optimized,
                                  .spines = 0,
                                  .spine_bandwidth = BytesPerSecond{50e9},
                                  .spine_latency = Seconds{1e-6}});
}

// `t` (nodes of `g` GPUs) with every node's NVSwitch reducing at `bandwidth`, 1 us (NVLS): the
// switch at the end of each node's first GPU's NVLink.
topo::Topology with_nvswitch_reduction(topo::Topology t, int g, double bandwidth = 274e9) {
  for (int j = 0; j < t.gpu_count() / g; ++j) {
    for (int l : t.out_links(t.vertex_of_rank(j * g)))
      if (t.link(l).link_class == "nvlink")
        t.set_switch_reduction(t.link(l).to, {BytesPerSecond{bandwidth}, Seconds{1e-6}});
  }
  return t;
}

// Two nodes of 8 whose NVSwitches reduce: NCCL's NVLS_TREE is a candidate (Simple only), its
// estimate by hand from tuning.cc (no base latency, 25 us of NVLink, 2 log2(2) x 20.9 us of
// network; bus bandwidth 8 heads (the NVLS graph's channels, one per GPU, not its 16 CTAs) x
// min(NVLS's 2 x 0.85 x 7/8 of a head's NVLink, twice a head's share of the node's NICs on two
// nodes, 57.7 GB/s), x n / 2(n-1)); at 1 GiB it is NCCL's choice, with the node size and a
// pipeline; forced where it cannot run, refused.
TEST(NcclTuner, NvlsTreeAcrossNodes) {
  const double nvlink = 400e9, nic = 50e9;
  const topo::Topology plain = two_nodes_of_8();
  const topo::Topology t = with_nvswitch_reduction(plain, 8);
  const Resolved big = choose(t, Bytes{1ull << 30}, alg::Options{});
  EXPECT_EQ(big.algo, "nvls_tree");
  EXPECT_EQ(big.proto, alg::Protocol::simple);
  EXPECT_EQ(big.options.get_string("gpus_per_node", ""), "8");
  EXPECT_GT(big.options.get_int("pipeline", 1, 1, 1024), 1);
  bool found = false;
  for (const NcclEstimate& e : big.table) {
    if (e.algo != "nvls_tree") continue;
    found = true;
    EXPECT_EQ(e.proto, alg::Protocol::simple);  // the only protocol it has
    EXPECT_NEAR(e.latency_us, 25 + 2 * 20.9, 1e-9);
    const double head_nvlink = nvlink / 1e9 / 8 * 0.85 * 7 / 8 * 2;
    const double head_nics = 8 * nic / 1e9 / 8 * 2;
    const double bus = 8 * std::min({head_nvlink, head_nics, 57.7});
    EXPECT_NEAR(bus, 8 * 57.7, 1e-9);  // the per-head cap binds here
    EXPECT_NEAR(e.bandwidth_gbs, bus * 16 / 30, 1e-9);
  }
  EXPECT_TRUE(found);
  // It runs: simulated, NCCL's choice equals the same options forced.
  SimulationConfig c;
  c.topology = t;
  c.algorithm = "nccl";
  c.size = Bytes{64ull << 20};
  c.network = NetworkKind::flow;
  const SimulationResult chosen = run_simulation(c);
  c.options = choose(t, c.size, alg::Options{}).options;
  EXPECT_DOUBLE_EQ(run_simulation(c).mean_completion.value, chosen.mean_completion.value);
  // Refused: where the NVSwitches do not reduce, with another protocol.
  std::string m;
  try {
    (void)choose(plain, Bytes{1 << 20}, opts({{"algo", "nvls_tree"}}));
  } catch (const InputError& e) {
    m = e.what();
  }
  EXPECT_NE(m.find("algo=nvls_tree"), std::string::npos) << m;
  EXPECT_NE(m.find("does not reduce"), std::string::npos) << m;
  EXPECT_NE(m.find("allowed here: ring, tree"), std::string::npos) << m;
  EXPECT_THROW((void)choose(t, Bytes{1 << 20}, opts({{"algo", "nvls_tree"}, {"proto", "ll"}})),
               InputError);
}

std::string error_of(const topo::Topology& t, const alg::Options& o);  // below

// `nodes` nodes of `g` GPUs as two_nodes_of_8, every rail's fabric switch reducing (SHARP at
// 50 GB/s, 1 us) when `sharp`.
topo::Topology rails_of(int nodes, int g, bool sharp) {
  topo::Topology t = topo::make_hierarchical({.nodes = nodes,
                                              .gpus_per_node = g,
                                              .nvlink_bandwidth = BytesPerSecond{400e9},
                                              .nvlink_latency = Seconds{kAlpha},
                                              .nic_bandwidth = BytesPerSecond{50e9},
                                              .nic_latency = Seconds{2e-6},
                                              .fabric = topo::FabricKind::rail_optimized,
                                              .spines = 0,
                                              .spine_bandwidth = BytesPerSecond{50e9},
                                              .spine_latency = Seconds{1e-6}});
  for (int local = 0; local < g && sharp; ++local) {
    for (int l : t.out_links(t.vertex_of_rank(local)))
      if (t.link(l).link_class == "nic")
        t.set_switch_reduction(t.link(l).to, {BytesPerSecond{50e9}, Seconds{1e-6}});
  }
  return t;
}

// NCCL_ALGO=NVLSTree's bus bandwidth is at most heads x perChMaxNVLSTreeBw (tuning.cc), an
// algorithm bandwidth of 8 x 57.7 GB/s x 16/30 on 2 nodes of 8 and 8 x 45.5 x 32/62 on 4; none on
// one node. The simulator holds NCCL's NVLS_TREE kernel to it through its switches' reductions:
// with switches that reduce at 10 TB/s, `nccl algo=nvls_tree` at 1 GiB takes at least 1 GiB over
// the cap in both models (and less than 5% more in the flow model, pipelined: the fill),
// while the same schedule without NCCL's protocol (`nvls_tree`, costed by its routes) is faster.
TEST(NcclTuner, NvlsTreeKernelStaysUnderNcclsPerHeadCap) {
  auto reducing = [](int nodes, double bandwidth) {
    return with_nvswitch_reduction(rails_of(nodes, 8, false), 8, bandwidth);
  };
  const topo::Topology t = reducing(2, 10e12);
  EXPECT_NEAR(nccl_nvls_tree_bandwidth(t), 8 * 57.7e9 * 16 / 30, 1);
  EXPECT_NEAR(nccl_nvls_tree_bandwidth(reducing(4, 10e12)), 8 * 45.5e9 * 32 / 62, 1);
  EXPECT_TRUE(std::isinf(nccl_nvls_tree_bandwidth(rails_of(1, 8, false))));
  const std::uint64_t bytes = 1ull << 30;
  const double bound = static_cast<double>(bytes) / nccl_nvls_tree_bandwidth(t);
  for (NetworkKind kind : {NetworkKind::flow, NetworkKind::alphabeta}) {
    for (bool pipelined : {false, true}) {
      SimulationConfig c;
      c.topology = t;
      c.algorithm = "nccl";
      c.options = opts({{"algo", "nvls_tree"}, {"pipeline", "64"}});
      c.size = Bytes{bytes};
      c.network = kind;
      c.pipelined_kernels = pipelined;
      const double kernel = run_simulation(c).mean_completion.value;
      EXPECT_GE(kernel, bound) << to_string(kind) << pipelined;
      if (kind == NetworkKind::flow && pipelined) {
        EXPECT_LE(kernel, 1.05 * bound);  // and the fill: a few of its 64 slices
      }
      c.algorithm = "nvls_tree";
      c.options = opts({{"gpus_per_node", "8"}, {"pipeline", "64"}});
      EXPECT_LT(run_simulation(c).mean_completion.value, 0.95 * kernel)
          << to_string(kind) << pipelined;
    }
  }
}

// Pipelined, NVLS_TREE's depth is NCCL's own chunking (enqueue.cc): one 128 KiB chunk per
// concurrent operation (16 CTAs x 8 heads) a slice, 64 KiB below 4 slices' worth (64 MiB), 32
// KiB below one (4 MiB here), 64 KiB from 4 nodes; per round, the depth of least estimated time.
TEST(NcclTuner, PipelinedNvlsTreeTakesNcclsChunks) {
  auto with_reduction = [](int nodes) {
    return with_nvswitch_reduction(rails_of(nodes, 8, false), 8);
  };
  const topo::Topology t = with_reduction(2);
  auto depth = [&](const topo::Topology& on, std::uint64_t bytes, bool pipelined) {
    const alg::NcclRequest r(on.gpu_count(), opts({{"algo", "nvls_tree"}}));
    return nccl_choose(on, Bytes{bytes}, r, pipelined).pipeline;
  };
  const std::uint64_t MiB = 1ull << 20;
  EXPECT_EQ(depth(t, 1 * MiB, true), 1);        // 32 KiB chunks, 1/4 of a slice
  EXPECT_EQ(depth(t, 4 * MiB, true), 1);        // 32 KiB x 128 = 4 MiB
  EXPECT_EQ(depth(t, 16 * MiB, true), 2);       // 64 KiB x 128 = 8 MiB
  EXPECT_EQ(depth(t, 64 * MiB, true), 4);       // 128 KiB x 128 = 16 MiB
  EXPECT_EQ(depth(t, 8192 * MiB, true), 512);
  EXPECT_EQ(depth(t, 65536 * MiB, true), 1024);  // at most 1024
  EXPECT_EQ(depth(with_reduction(4), 64 * MiB, true), 8);  // 64 KiB from 4 nodes
  EXPECT_NE(depth(t, 8192 * MiB, false), 512);  // per round: least estimated time
}

// CollNet where every rail's switch reduces (4 nodes of 8; NVLink 400 GB/s, 50 GB/s NICs): its
// estimates by hand from tuning.cc (Simple only, no base latency; Direct: 2 (3.7 + 7 x 0.4) us
// of NVLink + 31 us of network, bus bandwidth the CollNet graph's 8 channels x min(48 GB/s,
// twice a NIC) = 384 GB/s (under the GPU's 400 GB/s of NVLink) x 0.85 on Hopper; Chain:
// 2 x 7 x 2.8 + 30 us, 384 GB/s; both halved into algorithm bandwidth). By those estimates
// NCCL picks Tree/LL at 8 B (35.2 us), CollNet Direct at 4 MiB (69.7 us against Chain's 91.0
// and Tree/LL128's 106), CollNet Chain at 64 MiB (419 us against Direct's 455, Ring/LL128's and
// Tree/LL128's 498) and Ring at 1 GiB (5597 us against Chain's 5661); never CollNet where the
// rails do not reduce. The choice runs (the options it fills), and is refused where NCCL would
// not run it.
TEST(NcclTuner, CollnetWhereTheFabricReduces) {
  const topo::Topology t = rails_of(4, 8, true), plain = rails_of(4, 8, false);
  const Resolved c4 = choose(t, Bytes{4ull << 20}, alg::Options{});
  EXPECT_EQ(c4.algo, "collnet_direct");
  EXPECT_EQ(c4.proto, alg::Protocol::simple);
  EXPECT_EQ(c4.options.get_string("gpus_per_node", ""), "8");
  EXPECT_TRUE(c4.options.has("pipeline"));
  const Resolved c64 = choose(t, Bytes{64ull << 20}, alg::Options{});
  EXPECT_EQ(c64.algo, "collnet_chain");
  EXPECT_EQ(c64.channels, 24);  // 2 x 8, 50% more with CollNet (connect.cc)
  EXPECT_EQ(c64.options.get_string("channels", ""), "24");
  EXPECT_EQ(choose(t, Bytes{8}, alg::Options{}).algo, "tree");
  EXPECT_EQ(choose(t, Bytes{1ull << 30}, alg::Options{}).algo, "ring");
  int seen = 0;
  for (const NcclEstimate& e : c64.table) {
    if (e.algo == "collnet_direct") {
      ++seen;
      EXPECT_EQ(e.proto, alg::Protocol::simple);
      EXPECT_NEAR(e.latency_us, 2 * (3.7 + 7 * 0.4) + 31, 1e-9);
      EXPECT_NEAR(e.bandwidth_gbs, 384 * 0.85 * 0.5, 1e-9);
    } else if (e.algo == "collnet_chain") {
      ++seen;
      EXPECT_EQ(e.proto, alg::Protocol::simple);
      EXPECT_NEAR(e.latency_us, 2 * 7 * 2.8 + 30, 1e-9);
      EXPECT_NEAR(e.bandwidth_gbs, 384 * 0.5, 1e-9);
    }
  }
  EXPECT_EQ(seen, 2);  // one protocol each
  for (std::uint64_t bytes : {8ull, 4ull << 20, 64ull << 20, 1ull << 30}) {
    for (const NcclEstimate& e : choose(plain, Bytes{bytes}, alg::Options{}).table)
      EXPECT_EQ(e.algo.rfind("collnet", 0), std::string::npos) << bytes;
  }
  // It runs: simulated, NCCL's choice equals the same options forced (both network models).
  SimulationConfig sc;
  sc.topology = t;
  sc.algorithm = "nccl";
  for (std::uint64_t bytes : {4ull << 20, 64ull << 20}) {
    for (NetworkKind kind : {NetworkKind::alphabeta, NetworkKind::flow}) {
      sc.size = Bytes{bytes};
      sc.network = kind;
      sc.options = alg::Options{};
      const SimulationResult chosen = run_simulation(sc);
      EXPECT_EQ(chosen.nccl_algo, bytes == 4ull << 20 ? "collnet_direct" : "collnet_chain");
      sc.options = choose(t, sc.size, alg::Options{}).options;
      EXPECT_DOUBLE_EQ(run_simulation(sc).mean_completion.value, chosen.mean_completion.value);
    }
  }
  // Forced, and refused where NCCL would not run it, naming the rail, the cause, what is allowed.
  EXPECT_EQ(choose(t, Bytes{8}, opts({{"algo", "collnet_chain"}})).algo, "collnet_chain");
  std::string m = error_of(plain, opts({{"algo", "collnet_direct"}}));
  EXPECT_NE(m.find("no reducing fabric switch that joins the GPUs of rail 0"), std::string::npos)
      << m;
  EXPECT_NE(m.find("allowed here: ring, tree"), std::string::npos) << m;
  m = error_of(t, opts({{"algo", "collnet_chain"}, {"proto", "ll128"}}));
  EXPECT_NE(m.find("CollNetChain with the Simple protocol only"), std::string::npos) << m;
  m = error_of(rails_of(4, 1, true), opts({{"algo", "collnet_direct"}}));
  EXPECT_NE(m.find("without an NVSwitch"), std::string::npos) << m;
  EXPECT_NE(m.find("allowed here: ring, tree, collnet_chain"), std::string::npos) << m;
  m = error_of(rails_of(2, 16, true), opts({{"algo", "collnet_chain"}}));
  EXPECT_NE(m.find("at most 8 GPUs per node"), std::string::npos) << m;
}

// LL128 across nodes only where a GPU reaches its NIC through PCIe switches or NVLink (NCCL's
// rule): with the NIC behind the host bridge (nic path phb) or another socket (sys) NCCL's
// estimate never picks it, forcing it is refused, and a copy of the topology keeps the path.
TEST(NcclTuner, Ll128AcrossNodesFollowsTheNicPath) {
  topo::Topology t = two_nodes_of_8();
  const Bytes size{8ull << 20};
  const auto picks_ll128 = [&](const topo::Topology& top) {
    const Resolved c = choose(top, size, opts({{"algo", "ring"}}));
    bool listed = false;
    for (const NcclEstimate& e : c.table) listed |= e.proto == alg::Protocol::ll128;
    return std::make_pair(c.proto == alg::Protocol::ll128, listed);
  };
  EXPECT_EQ(picks_ll128(t), std::make_pair(true, true));  // pxb (default): LL128 at 8 MiB
  for (const char* path : {"phb", "sys"}) {
    t.nic_path = path;
    const topo::Topology copy = t;
    EXPECT_EQ(copy.nic_path, path);
    EXPECT_EQ(picks_ll128(copy), std::make_pair(false, false)) << path;
    EXPECT_THROW((void)choose(copy, size, opts({{"proto", "ll128"}})), InputError) << path;
  }
  t.nic_path = "pxn";
  EXPECT_EQ(picks_ll128(t).second, true);
}

std::string error_of(const topo::Topology& t, const alg::Options& o) {
  try {
    (void)choose(t, Bytes{1 << 20}, o);
  } catch (const InputError& e) {
    return e.what();
  }
  return "";
}

// Bad input: one message naming the option, the value and what is allowed.
TEST(NcclTuner, RefusesWhatNcclWouldNotRun) {
  const topo::Topology plain = testing::switch_of(8, kBw, kAlpha);
  std::string m = error_of(plain, opts({{"algo", "nvls"}}));
  EXPECT_NE(m.find("algo=nvls"), std::string::npos) << m;
  EXPECT_NE(m.find("no switch that reduces"), std::string::npos) << m;
  EXPECT_NE(m.find("allowed here: ring, tree"), std::string::npos) << m;
  m = error_of(plain, opts({{"algo", "nvls"}, {"proto", "ll128"}}));
  EXPECT_NE(m.find("proto=ll128"), std::string::npos) << m;
  EXPECT_NE(m.find("Simple protocol only"), std::string::npos) << m;
  m = error_of(plain, opts({{"algo", "rings"}}));
  EXPECT_NE(m.find("algo=rings"), std::string::npos) << m;
  EXPECT_NE(m.find("ring, tree, nvls, nvls_tree, collnet_direct, collnet_chain"), std::string::npos)
      << m;
  m = error_of(plain, opts({{"proto", "ll64"}}));
  EXPECT_NE(m.find("proto=ll64"), std::string::npos) << m;
  EXPECT_NE(m.find("simple, ll, ll128"), std::string::npos) << m;
  m = error_of(plain, opts({{"algo", "collnet_chain"}}));  // one node
  EXPECT_NE(m.find("CollNet reduces across nodes"), std::string::npos) << m;
  m = error_of(plain, opts({{"algo", "collnet_direct"}, {"proto", "ll"}}));
  EXPECT_NE(m.find("CollNetDirect with the Simple protocol only"), std::string::npos) << m;
  m = error_of(plain, opts({{"algo", "nvls_tree"}}));  // one node
  EXPECT_NE(m.find("NVLS_TREE runs across nodes"), std::string::npos) << m;
}

// run_simulation runs NCCL's choice: the result equals nccl with that choice forced.
TEST(NcclTuner, SimulationRunsTheChoice) {
  SimulationConfig c;
  c.topology = testing::switch_of(8, kBw, kAlpha);
  c.algorithm = "nccl";
  c.size = Bytes{4096};
  const SimulationResult auto_run = run_simulation(c);
  const Resolved choice = choose(c.topology, c.size, alg::Options{});
  c.options = choice.options;
  EXPECT_DOUBLE_EQ(run_simulation(c).mean_completion.value, auto_run.mean_completion.value);
  c.options = opts({{"algo", "ring"}, {"proto", "simple"}, {"channels", "1"}});
  EXPECT_GT(run_simulation(c).mean_completion.value, auto_run.mean_completion.value);
}

}  // namespace
}  // namespace ssim::sim
