// The alpha-beta dataflow pass on several threads gives the single-threaded result bit for bit.
#include <gtest/gtest.h>

#include <cstring>
#include <random>
#include <string>
#include <vector>

#include "algorithms/registry.hpp"
#include "sim/executor.hpp"
#include "tests/sim/fixtures.hpp"
#include "topologies/generators.hpp"

namespace ssim::sim {
namespace {

bool same_bits(double a, double b) { return std::memcmp(&a, &b, sizeof a) == 0; }

void expect_identical(const IterationResult& a, const IterationResult& b, const std::string& what) {
  ASSERT_EQ(a.finish.size(), b.finish.size()) << what;
  for (std::size_t r = 0; r < a.finish.size(); ++r)
    ASSERT_TRUE(same_bits(a.finish[r].value, b.finish[r].value)) << what << " rank " << r;
  EXPECT_TRUE(same_bits(a.completion.value, b.completion.value)) << what;
  EXPECT_EQ(a.link_bytes, b.link_bytes) << what;
  EXPECT_EQ(a.transfers, b.transfers) << what;
}

// Every round is split, however small (parallel_round = 1), over 2, 3 and 8 threads: the
// algorithms whose rounds use each port once take the parallel path, the random schedules
// (ports serving several transfers) fall back to the sequential one round by round.
TEST(ExecutorThreads, ResultsIdenticalForAnyThreadCount) {
  std::mt19937_64 rng(77);
  int parallel_cases = 0;
  for (const char* name :
       {"ring", "rhd", "dbtree", "stragglar", "halving_doubling", "direct", "random"}) {
    for (int n : {5, 16, 33, 64}) {
      alg::Schedule s =
          std::string(name) == "random" ? testing::random_schedule(rng, n, 8) : alg::Schedule{};
      if (std::string(name) != "random") {
        if (!alg::find_algorithm(name).supports_ranks(n)) continue;
        s = alg::generate(name, n, alg::Options{});
      }
      const topo::Topology t =
          n % 2 ? testing::switch_of(n, 450e9, 3e-6)
                : topo::make_ring(
                      {.ranks = n, .bandwidth = BytesPerSecond{50e9}, .latency = Seconds{1e-6}});
      Executor ex(s, t, NetworkConfig{NetworkKind::alphabeta, SecondsPerByte{1e-11}},
                  Bytes{static_cast<std::uint64_t>(s.chunks) * 4099 + 5});
      for (int iteration = 0; iteration < 2; ++iteration) {
        const std::vector<Seconds> arrival =
            testing::at(testing::random_arrivals(rng, n, iteration == 0 ? 1 : 1000, 1e-6));
        RunOptions one;
        if (s.straggler) one.rank_map = straggler_rank_map(s, static_cast<int>(rng() % n));
        const IterationResult base = ex.run(arrival, one);
        for (int threads : {2, 3, 8}) {
          RunOptions many = one;
          many.threads = threads;
          many.parallel_round = 1;
          expect_identical(ex.run(arrival, many), base,
                           std::string(name) + " n=" + std::to_string(n) + " threads " +
                               std::to_string(threads));
          ++parallel_cases;
        }
      }
    }
  }
  EXPECT_GE(parallel_cases, 100);
}

// A streamed source and a round size at the default threshold (16384 transfers): a round of
// independent transfers, repeated.
class RepeatedRound final : public RoundSource {
 public:
  RepeatedRound(int n, int rounds) : n_(n), left_(rounds) {  // n a power of two
    for (int i = 0; i < n; ++i)
      round_.add(i, (i * 7 + 3) % n, 0, 1, alg::Op::reduce);  // a permutation without fixed points
  }
  int ranks() const override { return n_; }
  int chunks() const override { return 1; }
  const alg::Round* next() override { return left_-- > 0 ? &round_ : nullptr; }

 private:
  int n_;
  int left_;
  alg::Round round_;
};

TEST(ExecutorThreads, DefaultThresholdOnALargeRound) {
  const int n = 16384;
  const topo::Topology t = testing::switch_of(n, 450e9, 3e-6);
  std::mt19937_64 rng(5);
  const std::vector<Seconds> arrival = testing::at(testing::random_arrivals(rng, n, 100, 1e-6));
  RouteCache routes(t);
  RepeatedRound one_source(n, 6);
  const IterationResult base =
      run_alphabeta(one_source, routes, SecondsPerByte{1e-11}, Bytes{1 << 20}, arrival);
  for (int threads : {2, 3, 8}) {
    RepeatedRound source(n, 6);
    RunOptions o;
    o.threads = threads;
    expect_identical(
        run_alphabeta(source, routes, SecondsPerByte{1e-11}, Bytes{1 << 20}, arrival, o), base,
        "threads " + std::to_string(threads));
  }
}

}  // namespace
}  // namespace ssim::sim
