// Fixtures shared by the simulator's tests (tests/sim/*_test.cpp): small topologies, arrival
// vectors, hand-made and random schedules, and max-min systems written as data.
//
//   const topo::Topology t = unit_switch(3);               // a transfer of m bytes costs 1 + m s
//   Executor ex(into_rank_one(1, 1, alg::Op::copy), t, NetworkConfig{}, Bytes{4});
//   const IterationResult r = ex.run(at({0, 3, 0}));
//   expect_rates({10, 4}, {{{0, 1}}, {{0}}, {{1}}}, {2, 8, 2});   // links, flows, max-min rates
#pragma once

#include <gtest/gtest.h>

#include <cstddef>
#include <random>
#include <vector>

#include "algorithms/schedule.hpp"
#include "common/units.hpp"
#include "sim/maxmin.hpp"
#include "topologies/generators.hpp"

namespace ssim::sim::testing {

// A single switch with the given per-link bandwidth (B/s) and GPU-to-GPU latency (s).
inline topo::Topology switch_of(int n, double bandwidth, double latency) {
  return topo::make_switch(
      {.ranks = n, .bandwidth = BytesPerSecond{bandwidth}, .latency = Seconds{latency}});
}

// 1 B/s links and a GPU-to-GPU latency of 1 s: a transfer of m bytes costs 1 + m seconds.
inline topo::Topology unit_switch(int n) { return switch_of(n, 1.0, 1.0); }

inline std::vector<Seconds> at(const std::vector<double>& t) {
  std::vector<Seconds> out;
  out.reserve(t.size());
  for (double v : t) out.push_back(Seconds{v});
  return out;
}

// n arrival times on the grid {0, step, ..., (slots - 1) step}, drawn from rng.
inline std::vector<double> random_arrivals(std::mt19937_64& rng, int n, unsigned slots,
                                           double step) {
  std::vector<double> out(static_cast<std::size_t>(n));
  for (double& a : out) a = static_cast<double>(rng() % slots) * step;
  return out;
}

// One round on 3 ranks in which ranks 0 and 2 both send to rank 1: 0 -> 1 chunks [0, 1) and
// 2 -> 1 chunks [0, end2), in that order, both with `op`; the buffer has `chunks` chunks.
inline alg::Schedule into_rank_one(int chunks, int end2, alg::Op op) {
  alg::Schedule s = alg::Schedule::make(alg::Collective::allreduce, "hand", 3, chunks);
  alg::Round& r = s.add_round();
  r.add(0, 1, 0, 1, op);
  r.add(2, 1, 0, end2, op);
  return s;
}

// Any transfer list is executable (the executor does not verify): random rounds on n >= 2
// ranks, with a random straggler.
inline alg::Schedule random_schedule(std::mt19937_64& rng, int n, int rounds) {
  const int chunks = 1 + static_cast<int>(rng() % 5);
  alg::Schedule s = alg::Schedule::make(alg::Collective::allreduce, "random", n, chunks);
  for (int k = 0; k < rounds; ++k) {
    alg::Round& r = s.add_round(k % 2 ? "odd" : "even");
    const int count = static_cast<int>(rng() % static_cast<unsigned>(2 * n));
    for (int i = 0; i < count; ++i) {
      const int src = static_cast<int>(rng() % static_cast<unsigned>(n));
      const int dst = (src + 1 + static_cast<int>(rng() % static_cast<unsigned>(n - 1))) % n;
      const int b = static_cast<int>(rng() % static_cast<unsigned>(chunks));
      const int e = b + static_cast<int>(rng() % static_cast<unsigned>(chunks - b + 1));
      r.add(src, dst, b, e, rng() % 2 ? alg::Op::reduce : alg::Op::copy);
    }
  }
  s.straggler = static_cast<int>(rng() % static_cast<unsigned>(n));
  return s;
}

// A flow of a max-min system: the links it crosses (indices into the capacities) and its cap.
struct FlowSpec {
  std::vector<int> links;
  double cap = MaxMinSolver::unlimited;
};

// Builds the system (links in order, then flows in order), solves it, and checks every
// flow's rate against `expected`.
inline void expect_rates(const std::vector<double>& capacities, const std::vector<FlowSpec>& flows,
                         const std::vector<double>& expected) {
  ASSERT_EQ(flows.size(), expected.size());
  MaxMinSolver s;
  for (double c : capacities) s.add_link(c);
  std::vector<int> ids;
  for (const FlowSpec& f : flows) ids.push_back(s.add_flow(f.links, f.cap));
  s.solve();
  for (std::size_t i = 0; i < ids.size(); ++i) {
    EXPECT_DOUBLE_EQ(s.rate(ids[i]), expected[i]) << "flow " << i;
  }
}

}  // namespace ssim::sim::testing
