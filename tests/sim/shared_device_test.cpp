// The shared-device machine model (sim/shared_device.hpp) against hand-derived times.
#include "sim/shared_device.hpp"

#include <gtest/gtest.h>

#include <vector>

#include "algorithms/registry.hpp"
#include "common/error.hpp"
#include "sim/simulation.hpp"
#include "tests/sim/fixtures.hpp"
#include "topologies/generators.hpp"

namespace ssim::sim {
namespace {

using testing::at;

constexpr double kB = 1e9;  // memory bandwidth, bytes per second

topo::SharedDevice device(double copy_latency = 0, double apply_latency = 0) {
  topo::SharedDevice d;
  d.memory_bandwidth = BytesPerSecond{kB};
  d.copy_latency = Seconds{copy_latency};
  d.apply_latency = Seconds{apply_latency};
  return d;
}

IterationResult run(const alg::Schedule& s, const topo::SharedDevice& d, std::uint64_t bytes,
                    std::vector<double> arrival, const RunOptions& options = {}) {
  const topo::Topology t = topo::make_shared_device({.ranks = s.ranks, .device = d});
  Executor ex(s, t, NetworkConfig{}, Bytes{bytes});
  return ex.run(at(arrival), options);
}

void expect_finish(const IterationResult& r, std::vector<double> want) {
  ASSERT_EQ(r.finish.size(), want.size());
  for (std::size_t i = 0; i < want.size(); ++i)
    EXPECT_NEAR(r.finish[i].value, want[i], 1e-12 + 1e-12 * want[i]) << "rank " << i;
}

TEST(SharedDevice, TwoConcurrentCopiesShareTheBandwidth) {
  // Ranks 0 and 1 swap one chunk of b bytes; the applies move nothing (factors 0). Both copies
  // (2b memory bytes each) run at once, each at B/2: 2b / (B/2) = 4b/B.
  alg::Schedule s = alg::Schedule::make(alg::Collective::allreduce, "hand", 2, 1);
  alg::Round& r = s.add_round();
  r.add(0, 1, 0, 1, alg::Op::copy);
  r.add(1, 0, 0, 1, alg::Op::copy);
  topo::SharedDevice d = device();
  d.apply_copy_factor = 0;
  const std::uint64_t b = 1'000'000;
  expect_finish(run(s, d, b, {0, 0}), {4.0 * b / kB, 4.0 * b / kB});
  // With one copy per operation capped at B/4 each takes 2b / (B/4) = 8b/B.
  d.operation_bandwidth = BytesPerSecond{kB / 4};
  expect_finish(run(s, d, b, {0, 0}), {8.0 * b / kB, 8.0 * b / kB});
}

TEST(SharedDevice, ARanksOperationsSerializeAndLaunchCostsAdd) {
  // Rank 1 receives from 0 and from 2 in one round: its two copies run one after another,
  // each paying the copy latency L and 2b bytes alone at B; then its apply (latency A, two
  // reduces of b: 6b bytes). The senders' applies (nothing to apply: A alone) wait for rank 1's
  // copies and run beside rank 1's apply, at the same time.
  const alg::Schedule s = testing::into_rank_one(1, 1, alg::Op::reduce);
  const double L = 3e-6, A = 5e-6;
  const std::uint64_t b = 4'000'000;
  const double copies = 2 * (L + 2.0 * b / kB);
  expect_finish(run(s, device(L, A), b, {0, 0, 0}),
                {copies + A, copies + A + 6.0 * b / kB, copies + A});
  // Capped at B/2 per operation, serialized copies cannot use the whole device: 2b / (B/2) each.
  topo::SharedDevice capped = device(L, A);
  capped.operation_bandwidth = BytesPerSecond{kB / 2};
  const double slow = 2 * (L + 4.0 * b / kB);
  expect_finish(run(s, capped, b, {0, 0, 0}), {slow + A, slow + A + 12.0 * b / kB, slow + A});
}

TEST(SharedDevice, ACopyWaitsForItsSenderAndTheSenderForTheCopy) {
  // Round 0: 0 -> 1 (reduce, b bytes). Rank 0 arrives at T. Rank 1's copy starts at T:
  // T + L + 2b/B; then rank 1's apply (A + 3b/B) and rank 0's (A, nothing to apply) start
  // together; rank 0's apply waited for the copy out of it.
  alg::Schedule s = alg::Schedule::make(alg::Collective::allreduce, "hand", 2, 1);
  s.add_round().add(0, 1, 0, 1, alg::Op::reduce);
  const double T = 1e-3, L = 2e-6, A = 7e-6;
  const std::uint64_t b = 1 << 20;
  const double copied = T + L + 2.0 * b / kB;
  const IterationResult r = run(s, device(L, A), b, {T, 0});
  expect_finish(r, {copied + A, copied + A + 3.0 * b / kB});
  EXPECT_DOUBLE_EQ(r.after_last_arrival.value, copied + A + 3.0 * b / kB - T);
  EXPECT_DOUBLE_EQ(r.completion.value, copied + A + 3.0 * b / kB);
  // Relabelled: schedule rank 0 played by physical rank 1 (who now arrives late).
  RunOptions o;
  o.rank_map = {1, 0};
  expect_finish(run(s, device(L, A), b, {0, T}, o), {copied + A + 3.0 * b / kB, copied + A});
}

TEST(SharedDevice, LaunchesAtOnceShareTheLaunchTime) {
  // The swap of the first test with no bytes to move (all factors 0), latency L and launch time
  // T: both copies launch at once, each taking 2T of launch time after L; then both applies,
  // again L + 2T. Alone (rank 1 only receives), each operation takes L + T.
  alg::Schedule s = alg::Schedule::make(alg::Collective::allreduce, "hand", 2, 1);
  alg::Round& r = s.add_round();
  r.add(0, 1, 0, 1, alg::Op::copy);
  r.add(1, 0, 0, 1, alg::Op::copy);
  topo::SharedDevice d = device(1e-6, 1e-6);
  d.launch_time = Seconds{0.5e-6};
  d.memory_bandwidth = BytesPerSecond{1e30};  // the bytes take no time
  expect_finish(run(s, d, 1024, {0, 0}), {2 * (1e-6 + 1e-6), 2 * (1e-6 + 1e-6)});
  alg::Schedule one = alg::Schedule::make(alg::Collective::allreduce, "hand", 2, 1);
  one.add_round().add(0, 1, 0, 1, alg::Op::copy);
  // Rank 1's copy (L + T) alone; then both applies launch at once (L + 2T).
  expect_finish(run(one, d, 1024, {0, 0}), {1.5e-6 + 2e-6, 1.5e-6 + 2e-6});
}

TEST(SharedDevice, RingOnFourRanks) {
  // No latencies. Each reduce-scatter round: 4 copies of b/4 (2b memory bytes in all) at once,
  // then 4 reduces (3b): 5b/B. Each allgather round: 2b of copies, 2b of applied copies: 4b/B.
  // Three rounds of each: 27b/B, on every rank.
  const alg::Schedule s = alg::generate("ring", 4, alg::Options{});
  const std::uint64_t b = 1 << 24;
  const double t = 27.0 * b / kB;
  expect_finish(run(s, device(), b, {0, 0, 0, 0}), {t, t, t, t});
  // The transport without a scratch copy (copy_factor 0): 3b/B and 2b/B per round.
  topo::SharedDevice fused = device();
  fused.copy_factor = 0;
  const double f = 15.0 * b / kB;
  expect_finish(run(s, fused, b, {0, 0, 0, 0}), {f, f, f, f});
}

TEST(SharedDevice, DirectReadsInTheKernelAndTheSenderWaitsForItsReaders) {
  // copy_factor 0 (the direct transport). Round 0: 0 -> 1 (reduce); round 1: 2 -> 0 (copy).
  // Rank 1's kernel reads rank 0's data: A + 3b/B. Rank 0's round-0 kernel (nothing to apply)
  // needs no copy out of it: A. Rank 0's round-1 kernel waits for rank 1's read of round 0
  // (write after read), then A + 2b/B. Rank 2 only sends: A.
  alg::Schedule s = alg::Schedule::make(alg::Collective::allreduce, "hand", 3, 1);
  s.add_round().add(0, 1, 0, 1, alg::Op::reduce);
  s.add_round().add(2, 0, 0, 1, alg::Op::copy);
  const double L = 2e-6, A = 7e-6;
  const std::uint64_t b = 1 << 20;
  topo::SharedDevice d = device(L, A);
  d.copy_factor = 0;
  const double read = A + 3.0 * b / kB;
  expect_finish(run(s, d, b, {0, 0, 0}), {read + A + 2.0 * b / kB, read, A});
  // A straggling sender: rank 1's kernel waits for rank 0's arrival T (read after write).
  const double T = 1e-3;
  expect_finish(run(s, d, b, {T, 0, 0}), {T + read + A + 2.0 * b / kB, T + read, A});
}

TEST(SharedDevice, DirectStagesAReceiveTheSenderOverwritesInTheSameRound) {
  // copy_factor 0. Ranks 0 and 1 swap chunk 0 (reduce): each sender writes the range it sends,
  // so both receives are staged: copies of apply_copy_factor x b at once (L + 4b/B), then the
  // kernels, each after its own copy and the copy out of it, reduce at once: A + 6b/B.
  alg::Schedule s = alg::Schedule::make(alg::Collective::allreduce, "hand", 2, 1);
  alg::Round& r = s.add_round();
  r.add(0, 1, 0, 1, alg::Op::reduce);
  r.add(1, 0, 0, 1, alg::Op::reduce);
  const double L = 2e-6, A = 7e-6;
  const std::uint64_t b = 1 << 20;
  topo::SharedDevice d = device(L, A);
  d.copy_factor = 0;
  const double t = L + 4.0 * b / kB + A + 6.0 * b / kB;
  expect_finish(run(s, d, b, {0, 0}), {t, t});
}

TEST(SharedDevice, UnalignedChunksCostTheirFactor) {
  // Ring on 4 ranks as above: 27b/B. With 4 x 1048577 bytes every chunk has an odd length, so
  // every byte counts unaligned_factor times; 4 x 2^22 bytes are aligned and pay nothing more.
  const alg::Schedule s = alg::generate("ring", 4, alg::Options{});
  topo::SharedDevice d = device();
  d.unaligned_factor = 1.5;
  const std::uint64_t odd = 4 * 1048577ull, even = 4ull << 22;
  const double t_odd = 27.0 * 1.5 * static_cast<double>(odd) / kB;
  const double t_even = 27.0 * static_cast<double>(even) / kB;
  expect_finish(run(s, d, odd, {0, 0, 0, 0}), {t_odd, t_odd, t_odd, t_odd});
  expect_finish(run(s, d, even, {0, 0, 0, 0}), {t_even, t_even, t_even, t_even});
  d.unaligned_factor = 0.5;
  EXPECT_THROW(topo::make_shared_device({.ranks = 4, .device = d}), InputError);
}

TEST(SharedDevice, AnOddChunkMakesEveryCopyOfTheRunUnaligned) {
  // Rank 0 sends the whole buffer (chunks 0..3 of 3) to rank 1, which copies it (2b) and
  // reduces it (3b): 5b/B. At b = 2^20 the range is 16-byte aligned but the chunk (b/3) is not;
  // the GPU copies 3 padded chunks of an odd stride, so every byte counts unaligned_factor
  // times. At b = 3 x 2^20 the chunk is aligned and nothing more is paid.
  alg::Schedule s = alg::Schedule::make(alg::Collective::allreduce, "hand", 2, 3);
  s.add_round().add(0, 1, 0, 3, alg::Op::reduce);
  topo::SharedDevice d = device();
  d.unaligned_factor = 1.5;
  const std::uint64_t odd = 1ull << 20, even = 3ull << 20;
  const double t_odd = 5.0 * 1.5 * static_cast<double>(odd) / kB;
  const double t_even = 5.0 * static_cast<double>(even) / kB;
  expect_finish(run(s, d, odd, {0, 0}), {2.0 * 1.5 * static_cast<double>(odd) / kB, t_odd});
  expect_finish(run(s, d, even, {0, 0}), {2.0 * static_cast<double>(even) / kB, t_even});
  // The direct transport (no scratch copies, kernels that hardly care about the stride) keeps
  // the range's own rule: the aligned whole buffer pays nothing more.
  d.copy_factor = 0;
  expect_finish(run(s, d, odd, {0, 0}), {0, 3.0 * static_cast<double>(odd) / kB});
}

TEST(SharedDevice, RunSimulationUsesTheModelForEitherNetworkKind) {
  SimulationConfig c;
  c.topology = topo::make_shared_device({.ranks = 4, .device = device()});
  c.algorithm = "ring";
  c.size = Bytes{1 << 24};
  for (NetworkKind k : {NetworkKind::alphabeta, NetworkKind::flow}) {
    c.network = k;
    for (RoundFeed feed : {RoundFeed::materialized, RoundFeed::streamed}) {
      c.rounds = feed;
      const SimulationResult r = run_simulation(c);
      EXPECT_NEAR(r.mean_completion.value, 27.0 * (1 << 24) / kB, 1e-15);
    }
  }
  c.trace_iteration = 0;
  EXPECT_THROW(run_simulation(c), InputError);
}

TEST(SharedDevice, GeneratorChecksItsParameters) {
  EXPECT_THROW(topo::make_shared_device({.ranks = 1, .device = device()}), InputError);
  topo::SharedDevice d = device();
  d.memory_bandwidth = BytesPerSecond{0};
  EXPECT_THROW(topo::make_shared_device({.ranks = 2, .device = d}), InputError);
  d = device();
  d.reduce_factor = -1;
  EXPECT_THROW(topo::make_shared_device({.ranks = 2, .device = d}), InputError);
  d = device();
  d.copy_latency = Seconds{-1e-6};
  EXPECT_THROW(topo::make_shared_device({.ranks = 2, .device = d}), InputError);
  d = device();
  d.launch_time = Seconds{-1e-6};
  EXPECT_THROW(topo::make_shared_device({.ranks = 2, .device = d}), InputError);
  const topo::Topology t = topo::make_shared_device({.ranks = 3, .device = device()});
  EXPECT_EQ(t.gpu_count(), 3);
  ASSERT_TRUE(t.shared_device.has_value());
  EXPECT_TRUE(topo::Topology(t).shared_device.has_value());
}

}  // namespace
}  // namespace ssim::sim
