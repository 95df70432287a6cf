// The alpha-beta dataflow pass on several threads gives the single-threaded result bit for bit.
#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <cstring>
#include <numeric>
#include <random>
#include <stdexcept>
#include <string>
#include <vector>

#include "algorithms/registry.hpp"
#include "sim/executor.hpp"
#include "sim/fork_join.hpp"
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

// The team runs every chunk of every step exactly once, whatever the chunk count (fewer chunks
// than threads included), and rethrows an exception of a chunk after the step.
TEST(ForkJoin, EveryChunkOnceAndErrorsRethrown) {
  for (int parts : {1, 2, 3, 8}) {
    ForkJoin team(parts);
    std::vector<std::atomic<int>> runs(64);
    for (int step = 0; step < 2000; ++step) {
      const std::size_t chunks = static_cast<std::size_t>(step % 65);
      for (std::atomic<int>& r : runs) r.store(0);
      team.run(chunks, [&](std::size_t c) { runs[c].fetch_add(1); });
      for (std::size_t c = 0; c < runs.size(); ++c)
        ASSERT_EQ(runs[c].load(), c < chunks ? 1 : 0) << parts << " parts, step " << step;
    }
    std::atomic<int> ran{0};
    EXPECT_THROW(team.run(9,
                          [&](std::size_t c) {
                            ran.fetch_add(1);
                            if (c == 4) throw std::runtime_error("chunk 4");
                          }),
                 std::runtime_error);
    EXPECT_EQ(ran.load(), 9);
    team.run(3, [&](std::size_t) { ran.fetch_add(1); });  // still usable
    EXPECT_EQ(ran.load(), 12);
  }
}

// Rounds of n transfers: a permutation without fixed points, then the same with one sender
// twice (a shared send port), then with one receiver twice: the shared rounds fall back to the
// sequential pass after the parallel attempt, which must leave no trace (bytes, ready times).
class MixedRounds final : public RoundSource {
 public:
  MixedRounds(int n, int rounds, std::uint64_t seed) : n_(n), left_(rounds) {
    std::mt19937_64 rng(seed);
    std::vector<int> perm(static_cast<std::size_t>(n));
    std::iota(perm.begin(), perm.end(), 0);
    for (alg::Round& round : rounds_) {
      std::shuffle(perm.begin(), perm.end(), rng);
      for (int i = 0; i < n; ++i)  // i -> the next in a random cycle over all ranks
        round.add(perm[i], perm[(i + 1) % n], i % 4, i % 4 + 1 + i % 3,
                  i % 2 ? alg::Op::reduce : alg::Op::copy);
    }
    rounds_[1].transfers[7].src = rounds_[1].transfers[n / 2].src;
    if (rounds_[1].transfers[7].src == rounds_[1].transfers[7].dst) rounds_[1].transfers[7].dst = 0;
    rounds_[2].transfers[n - 1].dst = rounds_[2].transfers[3].dst;
    if (rounds_[2].transfers[n - 1].src == rounds_[2].transfers[n - 1].dst)
      rounds_[2].transfers[n - 1].src = rounds_[2].transfers[3].src;
  }
  int ranks() const override { return n_; }
  int chunks() const override { return 8; }
  const alg::Round* next() override {
    if (left_ == 0) return nullptr;
    --left_;
    return &rounds_[static_cast<std::size_t>(left_ % 3)];
  }

 private:
  int n_;
  int left_;
  alg::Round rounds_[3];
};

// At the scale the threads are for (rounds of n = 4096 and 8192 transfers, the default
// threshold): generated ring and rhd rounds, and rounds with shared ports, on a single switch
// (the star pass) and on a switch with one extra link (not a star: the route cache, new routes
// found after the parallel step), with a random rank map: 2 and 3 threads give the
// single-threaded result bit for bit.
TEST(ExecutorThreads, LargeRoundsAtTheDefaultThreshold) {
  struct Case {
    int n;
    bool star;
    const char* source;
  };
  const Case cases[] = {{4096, true, "ring"},  {4096, true, "rhd"},   {4096, true, "mixed"},
                        {8192, true, "rhd"},   {8192, true, "mixed"}, {4096, false, "ring"},
                        {4096, false, "mixed"}};
  std::mt19937_64 rng(11);
  for (const Case& c : cases) {
    const int n = c.n;
    topo::Topology t = testing::switch_of(n, 450e9, 3e-6);
    if (!c.star) {
      const int dead = t.add_switch("dead-end");
      t.add_link(t.vertex_of_rank(0), dead, BytesPerSecond{1e9}, Seconds{0});
    }
    ASSERT_EQ(RouteCache(t).star() != nullptr, c.star);
    const std::vector<Seconds> arrival = testing::at(testing::random_arrivals(rng, n, 1000, 1e-6));
    std::vector<int> map(static_cast<std::size_t>(n));
    std::iota(map.begin(), map.end(), 0);
    std::shuffle(map.begin(), map.end(), rng);
    const std::string source = c.source;
    auto run = [&](int threads) {
      RouteCache routes(t);
      RunOptions o;
      o.threads = threads;
      o.rank_map = map;
      if (source == "mixed") {
        MixedRounds rounds(n, 9, 3);
        return run_alphabeta(rounds, routes, SecondsPerByte{1e-11}, Bytes{(1 << 20) + 3}, arrival,
                             o);
      }
      alg::GeneratedRounds g = alg::generate_rounds(source, n, alg::Options{});
      StreamRounds rounds(g.header, std::move(g.stream));
      return run_alphabeta(rounds, routes, SecondsPerByte{1e-11}, Bytes{(1 << 20) + 3}, arrival, o);
    };
    const IterationResult base = run(1);
    for (int threads : {2, 3})
      expect_identical(run(threads), base,
                       source + " n=" + std::to_string(n) + (c.star ? " switch" : " general") +
                           " threads " + std::to_string(threads));
  }
}

// A trace sees every transfer whatever the thread count: traced runs are sequential.
class Collect final : public TimelineSink {
 public:
  void transfer_side(const TransferRecord& r, Side side) override {
    records.push_back({r.round, r.index, r.src, r.dst, static_cast<int>(side)});
    ends.push_back(r.end.value);
  }
  std::vector<std::vector<int>> records;
  std::vector<double> ends;
};

TEST(ExecutorThreads, TracedRunsSeeEveryTransfer) {
  const int n = 64;
  const alg::Schedule s = alg::generate("ring", n, alg::Options{});
  const topo::Topology t = testing::switch_of(n, 450e9, 3e-6);
  Executor ex(s, t, NetworkConfig{NetworkKind::alphabeta, SecondsPerByte{1e-11}}, Bytes{1 << 20});
  std::mt19937_64 rng(2);
  const std::vector<Seconds> arrival = testing::at(testing::random_arrivals(rng, n, 100, 1e-6));
  Collect one, two;
  RunOptions o;
  o.trace = &one;
  (void)ex.run(arrival, o);
  o.trace = &two;
  o.threads = 2;
  o.parallel_round = 1;
  (void)ex.run(arrival, o);
  EXPECT_EQ(one.records.size(), 2 * s.transfer_count());
  EXPECT_EQ(two.records, one.records);
  EXPECT_EQ(two.ends, one.ends);
}

}  // namespace
}  // namespace ssim::sim
