// NCCL's Ring with channels (nccl_ring) and Tree (nccl_tree): correctness through the verifier
// for many (nodes, gpus_per_node, channels) shapes, the rail-aligned ring orders, NCCL's double
// binary tree (the trees drawn in NVIDIA/nccl src/graph/trees.cc), the chain inside a node,
// nccl_ring's closed form against the schedule's exact cost, and bad options.
#include <gtest/gtest.h>

#include <algorithm>
#include <map>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "algorithms/cost_model.hpp"
#include "algorithms/generators.hpp"
#include "algorithms/nccl_options.hpp"
#include "algorithms/registry.hpp"
#include "algorithms/verifier.hpp"
#include "common/error.hpp"

namespace ssim::alg {
namespace {

Options opts(std::initializer_list<std::pair<const char*, std::string>> kv) {
  Options o;
  for (const auto& [k, v] : kv) o.set(k, v);
  return o;
}

struct Shape {
  int nodes, g;
};

std::vector<Shape> shapes() {
  std::vector<Shape> v;
  for (int nodes = 1; nodes <= 7; ++nodes) {
    for (int g = 1; g <= 9; ++g) {
      if (nodes * g >= 2) v.push_back({nodes, g});
    }
  }
  for (Shape s : {Shape{2, 8}, Shape{4, 8}, Shape{16, 8}, Shape{3, 16}, Shape{33, 2}})
    v.push_back(s);
  return v;
}

std::string label(const Shape& s, int c) {
  return std::to_string(s.nodes) + "x" + std::to_string(s.g) + " channels=" + std::to_string(c);
}

TEST(NcclRing, VerifiesForManyShapesChannelsAndLoops) {
  for (const Shape& sh : shapes()) {
    const int n = sh.nodes * sh.g;
    for (int c : {1, 2, 3, 8, 17}) {
      if (n > 40 && c > 8) continue;  // the large shapes with fewer channels (test time)
      for (int loops : {1, 3}) {
        const Options o = opts({{"gpus_per_node", std::to_string(sh.g)},
                                {"channels", std::to_string(c)},
                                {"loops", std::to_string(loops)}});
        const Schedule s = generate("nccl_ring", n, o);
        const std::string what = label(sh, c) + " loops=" + std::to_string(loops);
        const VerifyResult v = verify(s);
        ASSERT_TRUE(v.ok()) << what << ": " << v.error->to_string();
        EXPECT_EQ(s.chunks, c * loops * n) << what;
        EXPECT_EQ(static_cast<int>(s.rounds.size()), 2 * (n - 1) * loops) << what;
        // One transfer per channel per rank and round, each way.
        EXPECT_EQ(v.summary.max_sends_per_rank_round, c) << what;
        EXPECT_EQ(v.summary.max_receives_per_rank_round, c) << what;
      }
    }
  }
}

// One channel on one node (the default there) is the textbook ring, transfer for transfer.
TEST(NcclRing, OneChannelOnOneNodeIsRing) {
  for (int n : {2, 3, 8, 13}) {
    for (const Options& o : {opts({{"channels", "1"}}), Options{}}) {
      Schedule s = generate("nccl_ring", n, o);
      const Schedule ring = generate("ring", n, Options{});
      EXPECT_EQ(s.chunks, ring.chunks);
      ASSERT_EQ(s.rounds.size(), ring.rounds.size());
      for (std::size_t k = 0; k < s.rounds.size(); ++k) EXPECT_EQ(s.rounds[k], ring.rounds[k]) << n;
    }
  }
  // Across nodes the default is one channel per rail (at most 8), two per head for the tree.
  EXPECT_EQ(generate("nccl_ring", 16, opts({{"gpus_per_node", "8"}})).chunks, 8 * 16);
  EXPECT_EQ(generate("nccl_ring", 12, opts({{"gpus_per_node", "3"}})).chunks, 3 * 12);
  EXPECT_EQ(generate("nccl_tree", 16, opts({{"gpus_per_node", "8"}})).chunks, 16 * 16);
  EXPECT_EQ(generate("nccl_tree", 16, Options{}).chunks, 16);
}

// Per channel: the ring visits every node's GPUs in one stretch (N crossings), and every
// crossing stays on one rail (same local index) except the last one for G = 2 and an odd node
// count; with C a multiple of G every rank sends and receives the same number of crossings,
// so every NIC of a node carries traffic.
TEST(NcclRing, ChannelsCrossNodesOnDistinctRails) {
  for (const Shape& sh : shapes()) {
    if (sh.nodes < 2 || sh.g < 2) continue;
    const int n = sh.nodes * sh.g;
    for (int c : {sh.g, 2 * sh.g}) {
      const Schedule s = generate(
          "nccl_ring", n,
          opts({{"gpus_per_node", std::to_string(sh.g)}, {"channels", std::to_string(c)}}));
      const Round& r = s.rounds.front();
      std::vector<int> out(static_cast<std::size_t>(n)), in(static_cast<std::size_t>(n));
      int off_rail = 0;
      for (int ch = 0; ch < c; ++ch) {
        int crossings = 0;
        for (int i = 0; i < n; ++i) {
          const Transfer& t = r.transfers[static_cast<std::size_t>(ch * n + i)];
          if (t.src / sh.g == t.dst / sh.g) continue;
          ++crossings;
          ++out[static_cast<std::size_t>(t.src)];
          ++in[static_cast<std::size_t>(t.dst)];
          EXPECT_EQ((t.src / sh.g + 1) % sh.nodes, t.dst / sh.g) << label(sh, c);
          off_rail += t.src % sh.g != t.dst % sh.g ? 1 : 0;
        }
        EXPECT_EQ(crossings, sh.nodes) << label(sh, c) << " channel " << ch;
      }
      const bool odd_pair = sh.g == 2 && sh.nodes % 2 == 1;
      EXPECT_EQ(off_rail, odd_pair ? c : 0) << label(sh, c);
      if (odd_pair) continue;
      for (int rank = 0; rank < n; ++rank) {
        EXPECT_EQ(out[static_cast<std::size_t>(rank)], c / sh.g)
            << label(sh, c) << " rank " << rank;
        EXPECT_EQ(in[static_cast<std::size_t>(rank)], c / sh.g) << label(sh, c) << " rank " << rank;
      }
    }
  }
}

TEST(NcclRing, ClosedFormEqualsTheSchedulesExactCost) {
  const CostParams p{3e-6, 1.0 / 450e9, 2e-12};
  for (const Shape& sh : {Shape{1, 5}, Shape{2, 8}, Shape{3, 4}, Shape{5, 1}}) {
    const int n = sh.nodes * sh.g;
    for (int c : {1, 3, 8}) {
      for (int loops : {1, 2}) {
        const Options o = opts({{"gpus_per_node", std::to_string(sh.g)},
                                {"channels", std::to_string(c)},
                                {"loops", std::to_string(loops)}});
        const Schedule s = generate("nccl_ring", n, o);
        const double bytes = 4096.0 * s.chunks;
        const double want = find_algorithm("nccl_ring").cost(n, bytes, p, o);
        EXPECT_NEAR(schedule_cost(s, bytes, p), want, 1e-12 * want) << label(sh, c);
        EXPECT_NEAR(want, nccl_ring_cost(n, bytes, c, loops, p), 1e-15 * want);
      }
    }
  }
  // The bandwidth term does not depend on the channels; each channel adds latency per step.
  const CostParams beta_only{0, 1.0 / 450e9, 0};
  EXPECT_DOUBLE_EQ(nccl_ring_cost(16, 1 << 30, 8, 1, beta_only), ring_cost(16, 1 << 30, beta_only));
}

// The trees drawn in NVIDIA/nccl src/graph/trees.cc: the binary tree over 14 indices, the
// mirrored second tree over 12 and the shifted one over 13.
TEST(NcclTree, DoubleBinaryTreeIsNcclsConstruction) {
  const std::vector<int> b14 = nccl_btree_parents(14);
  const std::vector<int> want14 = {-1, 2, 4, 2, 8, 6, 4, 6, 0, 10, 12, 10, 8, 12};
  EXPECT_EQ(b14, want14);
  const std::vector<int> mirror12 = nccl_dtree_parents(12, 1);
  // Root 11; 11 -> 3; 3 -> 1, 7; 1 -> 0, 2; 7 -> 5, 9; 5 -> 4, 6; 9 -> 8, 10.
  const std::vector<int> want12 = {1, 3, 1, 11, 5, 7, 5, 3, 9, 7, 9, -1};
  EXPECT_EQ(mirror12, want12);
  const std::vector<int> shift13 = nccl_dtree_parents(13, 1);
  // Root 1; 1 -> 9; 9 -> 5, 0; 5 -> 3, 7; 0 -> 11; 3 -> 2, 4; 7 -> 6, 8; 11 -> 10, 12.
  const std::vector<int> want13 = {9, -1, 3, 5, 3, 9, 7, 5, 7, 1, 11, 0, 11};
  EXPECT_EQ(shift13, want13);
  // Every index has at most two children in each tree, and the two trees differ from 2 up.
  for (int nodes = 1; nodes <= 70; ++nodes) {
    for (int which : {0, 1}) {
      const std::vector<int> p = nccl_dtree_parents(nodes, which);
      std::vector<int> children(static_cast<std::size_t>(nodes));
      int roots = 0;
      for (int j = 0; j < nodes; ++j) {
        if (p[static_cast<std::size_t>(j)] < 0) {
          ++roots;
        } else {
          ++children[static_cast<std::size_t>(p[static_cast<std::size_t>(j)])];
        }
      }
      EXPECT_EQ(roots, 1) << nodes;
      EXPECT_LE(*std::max_element(children.begin(), children.end()), 2) << nodes;
    }
    if (nodes >= 2) {
      EXPECT_NE(nccl_dtree_parents(nodes, 0), nccl_dtree_parents(nodes, 1)) << nodes;
    }
  }
}

TEST(NcclTree, VerifiesForManyShapesChannelsAndSegments) {
  for (const Shape& sh : shapes()) {
    const int n = sh.nodes * sh.g;
    for (int c : {1, 2, 3, 8}) {
      for (int seg : {1, 4}) {
        const Options o = opts({{"gpus_per_node", std::to_string(sh.g)},
                                {"channels", std::to_string(c)},
                                {"segments", std::to_string(seg)}});
        const Schedule s = generate("nccl_tree", n, o);
        const std::string what = label(sh, c) + " segments=" + std::to_string(seg);
        const VerifyResult v = verify(s);
        ASSERT_TRUE(v.ok()) << what << ": " << v.error->to_string();
        EXPECT_EQ(s.chunks, c * seg) << what;
        // Every non-root rank sends each segment of each channel up once and receives it back.
        EXPECT_EQ(static_cast<int>(s.transfer_count()), 2 * c * seg * (n - 1)) << what;
      }
    }
  }
}

// Inside a node a channel is a chain from its head (a local's only parent is the previous
// local of the chain); across nodes only heads talk, on their own rail; channels 2k and 2k+1
// share a head and use the two trees.
TEST(NcclTree, ChainInsideNodesHeadsOnOneRail) {
  for (const Shape& sh : {Shape{2, 8}, Shape{5, 4}, Shape{6, 3}, Shape{7, 1}}) {
    const int n = sh.nodes * sh.g;
    const int c = 2 * sh.g;
    const Schedule s = generate("nccl_tree", n,
                                opts({{"gpus_per_node", std::to_string(sh.g)},
                                      {"channels", std::to_string(c)},
                                      {"segments", "1"}}));
    std::map<int, std::set<std::pair<int, int>>> up;  // channel -> (child, parent)
    for (const Round& r : s.rounds) {
      for (const Transfer& t : r.transfers) {
        if (t.op == Op::reduce) up[t.chunk_begin].insert({t.src, t.dst});
      }
    }
    ASSERT_EQ(static_cast<int>(up.size()), c);
    for (const auto& [ch, edges] : up) {
      const int head = (ch / 2) % sh.g;
      EXPECT_EQ(static_cast<int>(edges.size()), n - 1);
      std::set<std::pair<int, int>> node_edges;
      for (const auto& [child, parent] : edges) {
        const int cl = child % sh.g, pl = parent % sh.g;
        if (child / sh.g == parent / sh.g) {
          EXPECT_EQ(cl, (pl + 1) % sh.g) << label(sh, c) << " channel " << ch;
        } else {
          EXPECT_EQ(cl, head) << label(sh, c) << " channel " << ch;
          EXPECT_EQ(pl, head) << label(sh, c) << " channel " << ch;
          node_edges.insert({child / sh.g, parent / sh.g});
        }
      }
      std::set<std::pair<int, int>> want;
      const std::vector<int> p = nccl_dtree_parents(sh.nodes, ch % 2);
      for (int j = 0; j < sh.nodes; ++j) {
        if (p[static_cast<std::size_t>(j)] >= 0) want.insert({j, p[static_cast<std::size_t>(j)]});
      }
      EXPECT_EQ(node_edges, want) << label(sh, c) << " channel " << ch;
    }
  }
}

// Reduce and broadcast overlap: P + 2D - 1 rounds with D the deepest depth (node tree depth
// plus the chain), e.g. 2 x 8: D = 1 + 7.
TEST(NcclTree, PipelineLength) {
  const Schedule s = generate(
      "nccl_tree", 16, opts({{"gpus_per_node", "8"}, {"channels", "2"}, {"segments", "10"}}));
  EXPECT_EQ(s.rounds.size(), 10u + 2 * 8 - 1);
  const Schedule one_node = generate("nccl_tree", 6, opts({{"channels", "1"}, {"segments", "3"}}));
  EXPECT_EQ(one_node.rounds.size(), 3u + 2 * 5 - 1);  // a chain of 6
}

TEST(Nccl, BadOptionsAreClearErrors) {
  struct Bad {
    const char* algorithm;
    int n;
    Options o;
    const char* needle;
  };
  const Bad cases[] = {
      {"nccl_ring", 16, opts({{"gpus_per_node", "6"}}), "must divide the rank count 16"},
      {"nccl_tree", 12, opts({{"gpus_per_node", "5"}}), "must divide the rank count 12"},
      {"nccl_ring", 16, opts({{"channels", "0"}}), "channels=0: must be in [1, 64]"},
      {"nccl_tree", 16, opts({{"channels", "65"}}), "channels=65: must be in [1, 64]"},
      {"nccl_ring", 16, opts({{"loops", "0"}}), "loops=0: must be in [1, 4096]"},
      {"nccl_tree", 16, opts({{"segments", "x"}}), "segments=x: expected an integer"},
      {"nccl_ring", 16, opts({{"segments", "4"}}), "has no option 'segments'"},
      {"nccl_ring", 65536, opts({{"channels", "64"}, {"loops", "4096"}}), "chunks, more than"},
  };
  for (const Bad& b : cases) {
    try {
      (void)generate(b.algorithm, b.n, b.o);
      ADD_FAILURE() << b.algorithm << ": no error for " << b.needle;
    } catch (const InputError& e) {
      EXPECT_NE(std::string(e.what()).find(b.needle), std::string::npos) << e.what();
      EXPECT_NE(std::string(e.what()).find(b.algorithm), std::string::npos) << e.what();
    }
  }
}

TEST(Registry, OptionsAndNvlsKernelsComeFromTheEntries) {
  EXPECT_TRUE(find_algorithm("hierarchical").takes("gpus_per_node"));
  EXPECT_FALSE(find_algorithm("ring").takes("gpus_per_node"));
  EXPECT_TRUE(find_algorithm("stragglar").takes("stragglers"));
  EXPECT_FALSE(find_algorithm("stragglar").takes("stragglerz"));
  EXPECT_EQ(lookup_algorithm("no_such"), nullptr);
  EXPECT_EQ(lookup_algorithm("ring"), &find_algorithm("ring"));
  // Which schedules run an NVLS kernel: nvls, nvls_tree and nccl with algo=nvls or nvls_tree.
  const auto nvls = [](const std::string& algorithm, const std::string& algo) {
    Schedule s;
    s.algorithm = algorithm;
    if (!algo.empty()) s.options["algo"] = algo;
    return runs_nvls_kernel(s);
  };
  EXPECT_TRUE(nvls("nvls", ""));
  EXPECT_TRUE(nvls("nvls_tree", ""));
  EXPECT_TRUE(nvls("nccl", "nvls"));
  EXPECT_TRUE(nvls("nccl", "nvls_tree"));
  EXPECT_FALSE(nvls("nccl", "ring"));
  EXPECT_FALSE(nvls("nccl", ""));
  EXPECT_FALSE(nvls("ring", "nvls"));  // only nccl's algo names a kernel
  EXPECT_FALSE(nvls("no_such", ""));
  EXPECT_FALSE(nvls("nccl", "no_such"));
}

// nccl's options typed for NCCL's tuner (algorithms/nccl_options.hpp): read with nccl's own
// checks and messages, and a pick written back with the given options' text kept.
TEST(NcclRequest, ReadsChecksAndWritesBack) {
  const NcclRequest none(16, Options{});
  EXPECT_EQ(none.algo(), "");
  EXPECT_FALSE(none.proto());
  EXPECT_EQ(none.channels_or(7), 7);
  EXPECT_FALSE(none.has_pipeline());
  const NcclRequest forced(16, opts({{"algo", "NVLS"}, {"proto", "Simple"}, {"pipeline", "04"}}));
  EXPECT_EQ(forced.algo(), "nvls");
  EXPECT_TRUE(forced.proto() == Protocol::simple);
  EXPECT_TRUE(forced.has_pipeline());
  // The registry's refusals, word for word.
  for (const Options& bad : {opts({{"algo", "bogus"}}), opts({{"proto", "fast"}}),
                             opts({{"algo", "nvls"}, {"proto", "ll"}}), opts({{"channels", "65"}}),
                             opts({{"gpus_per_node", "5"}})}) {
    std::string registry;
    try {
      find_algorithm("nccl").check_options(16, bad);
    } catch (const InputError& e) {
      registry = e.what();
    }
    ASSERT_FALSE(registry.empty());
    try {
      (void)NcclRequest(16, bad);
      ADD_FAILURE() << registry;
    } catch (const InputError& e) {
      EXPECT_EQ(e.what(), registry);
    }
  }
  // channels is read late for the algorithms that do not use it.
  const NcclRequest late(16, opts({{"algo", "nvls"}, {"channels", "0"}}));
  EXPECT_THROW((void)late.channels_or(16), InputError);
  EXPECT_EQ(NcclRequest(16, opts({{"channels", "24"}})).channels_or(3), 24);

  const auto written = [](const NcclRequest& r, NcclPick pick) {
    return r.schedule_options(pick).values();
  };
  using Values = std::map<std::string, std::string>;
  const NcclRequest ring(16, opts({{"loops", "2"}, {"gpus_per_node", "08"}}));
  EXPECT_EQ(written(ring, {"ring", Protocol::ll128, 12, 8, 0}), (Values{{"algo", "ring"},
                                                                        {"channels", "12"},
                                                                        {"gpus_per_node", "08"},
                                                                        {"loops", "2"},
                                                                        {"proto", "ll128"}}));
  EXPECT_EQ(written(none, {"nvls", Protocol::simple, 16, 16, 32}),
            (Values{{"algo", "nvls"}, {"pipeline", "32"}, {"proto", "simple"}}));
  EXPECT_EQ(written(forced, {"nvls", Protocol::simple, 16, 16, 32}),
            (Values{{"algo", "nvls"}, {"pipeline", "04"}, {"proto", "simple"}}));
  EXPECT_EQ(
      written(none, {"nvls_tree", Protocol::simple, 16, 8, 2}),
      (Values{
          {"algo", "nvls_tree"}, {"gpus_per_node", "8"}, {"pipeline", "2"}, {"proto", "simple"}}));
  const NcclRequest chain(16, opts({{"segments", "3"}, {"pipeline", "2"}, {"loops", "2"}}));
  EXPECT_EQ(written(chain, {"collnet_chain", Protocol::simple, 5, 8, 0}),
            (Values{{"algo", "collnet_chain"},
                    {"channels", "5"},
                    {"gpus_per_node", "8"},
                    {"proto", "simple"},
                    {"segments", "3"}}));
  EXPECT_EQ(written(chain, {"collnet_direct", Protocol::simple, 5, 8, 0}),
            (Values{{"algo", "collnet_direct"},
                    {"gpus_per_node", "8"},
                    {"pipeline", "2"},
                    {"proto", "simple"}}));
}

}  // namespace
}  // namespace ssim::alg
