// The flow model (batched starts and ends, re-solving only the components they touch) against
// the reference flow model (NetworkConfig::reference_flow: every start and end its own event,
// followed by a re-solve of every flow in the network), on random topologies, schedules,
// arrivals and sizes. Both compute the same max-min fair sharing; only the order of floating-
// point operations may differ, so every rank's finish time must agree to 1e-12 relative.
#include <gtest/gtest.h>

#include <cmath>
#include <random>
#include <string>
#include <vector>

#include "algorithms/registry.hpp"
#include "sim/executor.hpp"
#include "tests/sim/fixtures.hpp"
#include "topologies/generators.hpp"

namespace ssim::sim {
namespace {

constexpr double kTolerance = 1e-12;

// A random small topology with shared links (ring, torus, oversubscribed fat tree,
// hierarchical) or without (switch), and its name for messages.
topo::Topology random_topology(std::mt19937_64& rng, std::string& name) {
  const BytesPerSecond bw{1e9 * static_cast<double>(1 + rng() % 100)};
  const Seconds lat{1e-7 * static_cast<double>(rng() % 40)};  // zero latency included
  switch (rng() % 5) {
    case 0: {
      const int n = 2 + static_cast<int>(rng() % 15);
      name = "ring " + std::to_string(n);
      return topo::make_ring({.ranks = n, .bandwidth = bw, .latency = lat});
    }
    case 1: {
      const int x = 2 + static_cast<int>(rng() % 3), y = 2 + static_cast<int>(rng() % 3);
      name = "torus " + std::to_string(x) + "x" + std::to_string(y);
      return topo::make_torus2d({.x = x, .y = y, .bandwidth = bw, .latency = lat});
    }
    case 2: {
      const double over = 1.0 + static_cast<double>(rng() % 4);
      name = "fat tree k=4 over " + std::to_string(over);
      return topo::make_fat_tree(
          {.k = 4, .tiers = 2, .bandwidth = bw, .latency = lat, .oversubscription = over});
    }
    case 3: {
      const int nodes = 2 + static_cast<int>(rng() % 3);
      name = "hierarchical " + std::to_string(nodes) + "x4";
      return topo::make_hierarchical({.nodes = nodes,
                                      .gpus_per_node = 4,
                                      .nvlink_bandwidth = BytesPerSecond{bw.value * 4},
                                      .nvlink_latency = lat,
                                      .nic_bandwidth = bw,
                                      .nic_latency = lat,
                                      .fabric = topo::FabricKind::rail_optimized,
                                      .spines = static_cast<int>(rng() % 3),
                                      .spine_bandwidth = BytesPerSecond{bw.value / 2},
                                      .spine_latency = lat});
    }
    default: {
      const int n = 2 + static_cast<int>(rng() % 15);
      name = "switch " + std::to_string(n);
      return topo::make_switch({.ranks = n, .bandwidth = bw, .latency = lat});
    }
  }
}

void expect_same_finishes(const IterationResult& fast, const IterationResult& ref,
                          const std::string& what) {
  ASSERT_EQ(fast.finish.size(), ref.finish.size()) << what;
  for (std::size_t r = 0; r < ref.finish.size(); ++r) {
    const double a = fast.finish[r].value, b = ref.finish[r].value;
    ASSERT_LE(std::abs(a - b), kTolerance * std::abs(b)) << what << " rank " << r;
  }
  EXPECT_EQ(fast.link_bytes, ref.link_bytes) << what;
}

TEST(FlowDifferential, BatchedComponentSolveAgreesWithFullResolve) {
  std::mt19937_64 rng(20261124);
  const std::vector<std::string> algorithms = {"ring",   "rhd",       "direct",
                                               "dbtree", "stragglar", "halving_doubling"};
  int cases = 0;
  for (int trial = 0; trial < 150; ++trial) {
    std::string topo_name;
    const topo::Topology t = random_topology(rng, topo_name);
    const int n = t.gpu_count();
    alg::Schedule s;
    std::string alg_name = "random";
    if (rng() % 3 == 0) {
      s = testing::random_schedule(rng, n, 1 + static_cast<int>(rng() % 6));
    } else {
      alg_name = algorithms[rng() % algorithms.size()];
      if (!alg::find_algorithm(alg_name).supports_ranks(n)) alg_name = "ring";
      s = alg::generate(alg_name, n, alg::Options{});
    }
    const Bytes bytes{static_cast<std::uint64_t>(s.chunks) * (1 + rng() % 100000) + rng() % 7};
    const SecondsPerByte gamma{rng() % 2 ? 0.0 : 1e-12 * static_cast<double>(rng() % 5)};
    NetworkConfig fast_config{NetworkKind::flow, gamma};
    NetworkConfig ref_config = fast_config;
    ref_config.reference_flow = true;
    Executor fast(s, t, fast_config, bytes);
    Executor ref(s, t, ref_config, bytes);
    for (int iteration = 0; iteration < 3; ++iteration) {
      // Iteration 0: everyone at 0 (the symmetric case with the most simultaneous events);
      // then arrivals on a coarse grid (ties) or a fine one.
      const unsigned slots = iteration == 0 ? 1 : iteration == 1 ? 4 : 1000;
      const std::vector<Seconds> arrival =
          testing::at(testing::random_arrivals(rng, n, slots, 1e-6));
      RunOptions options;
      if (s.straggler) options.rank_map = straggler_rank_map(s, static_cast<int>(rng() % n));
      const std::string what = topo_name + ", " + alg_name + ", " + std::to_string(bytes.value) +
                               " B, trial " + std::to_string(trial) + " iteration " +
                               std::to_string(iteration);
      expect_same_finishes(fast.run(arrival, options), ref.run(arrival, options), what);
      ++cases;
    }
  }
  EXPECT_EQ(cases, 450);
}

// A ring on a ring topology shares no link: every flow is alone, and the two models agree to
// the last bit. rhd shares links heavily; the reference ends the flows of a round one at a time
// (the others' leftovers of a few ulps are rescheduled), the batch ends them together, so the
// two agree to rounding. Both show the batching in the event count: one engine event per
// distinct time instead of one per start and end.
TEST(FlowDifferential, SymmetricRoundsOnARingTopology) {
  for (const char* name : {"ring", "rhd"}) {
    const int n = 64;
    const topo::Topology t =
        topo::make_ring({.ranks = n, .bandwidth = BytesPerSecond{50e9}, .latency = Seconds{1e-6}});
    const alg::Schedule s = alg::generate(name, n, alg::Options{});
    NetworkConfig ref_config{NetworkKind::flow, SecondsPerByte{0}};
    ref_config.reference_flow = true;
    Executor fast(s, t, NetworkConfig{NetworkKind::flow, SecondsPerByte{0}}, Bytes{64 << 20});
    Executor ref(s, t, ref_config, Bytes{64 << 20});
    const std::vector<Seconds> arrival(static_cast<std::size_t>(n), Seconds{0});
    const IterationResult a = fast.run(arrival), b = ref.run(arrival);
    if (std::string(name) == "ring") {
      for (int r = 0; r < n; ++r) EXPECT_EQ(a.finish[r].value, b.finish[r].value) << r;
    } else {
      expect_same_finishes(a, b, name);
    }
    // Besides the n arrivals: about two events per round (its starts, its ends; exactly two
    // for the ring) against at least two per transfer (more with superseded completions).
    const std::uint64_t rounds = s.rounds.size(), transfers = s.transfer_count();
    if (std::string(name) == "ring") {
      EXPECT_EQ(a.events, n + 2 * rounds);
      EXPECT_EQ(b.events, n + 2 * transfers);
    } else {
      EXPECT_LE(a.events, n + 4 * rounds);
      EXPECT_GE(b.events, n + 2 * transfers);
    }
  }
}

}  // namespace
}  // namespace ssim::sim
