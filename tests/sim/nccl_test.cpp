// NCCL's Ring with channels and Tree (algorithms/nccl.cpp) in both network models: the ring's
// closed form on a switch (alpha-beta: a rank's channels one after another on its port; flow:
// all at once, sharing the link), and on 2 nodes x 8 GPUs with one NIC per GPU on a
// rail-optimized fabric (the machine of NVIDIA/nccl-tests issue 309's tables), where the
// channels put traffic on every NIC.
#include <gtest/gtest.h>

#include <algorithm>
#include <string>
#include <vector>

#include "algorithms/cost_model.hpp"
#include "algorithms/registry.hpp"
#include "sim/executor.hpp"
#include "tests/sim/fixtures.hpp"
#include "topologies/generators.hpp"

namespace ssim::sim {
namespace {

constexpr double kAlpha = 3e-6;
constexpr double kNvlink = 450.0 * 1024 * 1024 * 1024;  // 450 GiB/s
constexpr double kNic = 50e9;                           // 400 Gb/s
constexpr std::uint64_t kGiB = 1ull << 30;

alg::Options opts(std::initializer_list<std::pair<const char*, std::string>> kv) {
  alg::Options o;
  for (const auto& [k, v] : kv) o.set(k, v);
  return o;
}

IterationResult run(const alg::Schedule& s, const topo::Topology& t, NetworkKind kind,
                    std::uint64_t bytes) {
  Executor ex(s, t, NetworkConfig{kind, SecondsPerByte{0.0}}, Bytes{bytes});
  const std::vector<Seconds> arrival(static_cast<std::size_t>(s.ranks), Seconds{0});
  return ex.run(arrival);
}

// On a non-blocking switch: alpha-beta equals nccl_ring_cost (the C transfers of a rank served
// one after another), the flow model runs them at once: 2(n-1) L (alpha + s/(L n) beta).
TEST(NcclRingSim, ChannelsOnASwitchInBothModels) {
  for (int n : {4, 7}) {
    const topo::Topology t = testing::switch_of(n, kNvlink, kAlpha);
    for (int c : {1, 4}) {
      for (int loops : {1, 2}) {
        const alg::Options o =
            opts({{"channels", std::to_string(c)}, {"loops", std::to_string(loops)}});
        const alg::Schedule s = alg::generate("nccl_ring", n, o);
        const std::uint64_t bytes = 8192ull * static_cast<std::uint64_t>(s.chunks);
        const double sb = static_cast<double>(bytes);
        const alg::CostParams p{kAlpha, 1.0 / kNvlink, 0};
        const std::string what = "n=" + std::to_string(n) + " channels=" + std::to_string(c) +
                                 " loops=" + std::to_string(loops);
        const double ab = run(s, t, NetworkKind::alphabeta, bytes).completion.value;
        EXPECT_NEAR(ab, alg::nccl_ring_cost(n, sb, c, loops, p), 1e-9 * ab) << what;
        const double flow = run(s, t, NetworkKind::flow, bytes).completion.value;
        const double want = 2.0 * (n - 1) * loops * (kAlpha + sb / (loops * n) / kNvlink);
        EXPECT_NEAR(flow, want, 1e-9 * want) << what;
      }
    }
  }
}

topo::Topology two_by_eight() {
  return topo::make_hierarchical({.nodes = 2,
                                  .gpus_per_node = 8,
                                  .nvlink_bandwidth = BytesPerSecond{kNvlink},
                                  .nvlink_latency = Seconds{kAlpha},
                                  .nic_bandwidth = BytesPerSecond{kNic},
                                  .nic_latency = Seconds{1e-6},
                                  .fabric = topo::FabricKind::rail_optimized,
                                  .spines = 1,
                                  .spine_bandwidth = BytesPerSecond{kNic},
                                  .spine_latency = Seconds{1e-6}});
}

// Bytes sent by every GPU into its NIC (links of class "nic" out of a GPU).
std::vector<std::uint64_t> nic_up_bytes(const topo::Topology& t, const IterationResult& r) {
  std::vector<std::uint64_t> out;
  for (int id = 0; id < t.link_count(); ++id) {
    const topo::Link& l = t.link(id);
    if (l.link_class == "nic" && t.node(l.from).kind == topo::NodeKind::gpu)
      out.push_back(r.link_bytes[static_cast<std::size_t>(id)]);
  }
  return out;
}

// 2 x 8 GPUs, one 400 Gb/s NIC each, rail-optimized. With 8 channels every NIC sends the same
// bytes, and in the flow model the time is within 5% of the NIC bound 2(n-1)/n s / (8 NICs);
// one channel sends on 2 NICs only, and the textbook ring is 8 times slower.
TEST(NcclRingSim, EightChannelsUseEveryNicOfTwoNodes) {
  const topo::Topology t = two_by_eight();
  const alg::Schedule eight =
      alg::generate("nccl_ring", 16, opts({{"gpus_per_node", "8"}, {"channels", "8"}}));
  const alg::Schedule one =
      alg::generate("nccl_ring", 16, opts({{"gpus_per_node", "8"}, {"channels", "1"}}));
  const double bound = 2.0 * 15 / 16 * static_cast<double>(kGiB) / (8 * kNic);
  for (NetworkKind kind : {NetworkKind::flow, NetworkKind::alphabeta}) {
    const IterationResult r8 = run(eight, t, kind, kGiB);
    const std::vector<std::uint64_t> up8 = nic_up_bytes(t, r8);
    ASSERT_EQ(up8.size(), 16u);
    for (std::uint64_t b : up8) EXPECT_EQ(b, up8.front()) << to_string(kind);
    EXPECT_GT(up8.front(), 0u);
    const std::vector<std::uint64_t> up1 = nic_up_bytes(t, run(one, t, kind, kGiB));
    EXPECT_EQ(std::count_if(up1.begin(), up1.end(), [](std::uint64_t b) { return b > 0; }), 2)
        << to_string(kind);
    EXPECT_GE(r8.completion.value, bound) << to_string(kind);
    if (kind == NetworkKind::flow) {
      EXPECT_LE(r8.completion.value, 1.05 * bound);
    }
  }
  const alg::Schedule ring = alg::generate("ring", 16, alg::Options{});
  const double ring_flow = run(ring, t, NetworkKind::flow, kGiB).completion.value;
  EXPECT_GT(ring_flow, 7.5 * run(eight, t, NetworkKind::flow, kGiB).completion.value);
}

// The tree on the same machine, both models: every rank finishes, never faster than its NIC
// bound (each node sends s/2 up one tree and s/2 down the other over its 8 NICs), and in the
// flow model faster than the one-channel ring.
TEST(NcclTreeSim, RunsOnTwoNodesInBothModels) {
  const topo::Topology t = two_by_eight();
  const alg::Schedule tree = alg::generate(
      "nccl_tree", 16, opts({{"gpus_per_node", "8"}, {"channels", "16"}, {"segments", "32"}}));
  const double bound = static_cast<double>(kGiB) / (8 * kNic);
  const alg::Schedule ring = alg::generate("ring", 16, alg::Options{});
  for (NetworkKind kind : {NetworkKind::flow, NetworkKind::alphabeta}) {
    const IterationResult r = run(tree, t, kind, kGiB);
    for (Seconds f : r.finish) EXPECT_GT(f.value, 0.0);
    EXPECT_GE(r.completion.value, bound) << to_string(kind);
    const std::vector<std::uint64_t> up = nic_up_bytes(t, r);
    for (std::uint64_t b : up) EXPECT_EQ(b, up.front()) << to_string(kind);
    EXPECT_LT(r.completion.value, run(ring, t, kind, kGiB).completion.value) << to_string(kind);
  }
}

}  // namespace
}  // namespace ssim::sim
