#include "gpu_backend/host_executor.hpp"

#include <gtest/gtest.h>

#include <array>
#include <string>

#include "algorithms/generators.hpp"
#include "algorithms/registry.hpp"
#include "common/error.hpp"

namespace ssim::gpu {
namespace {

using alg::Op;

constexpr std::array<lowering::DType, 6> kTypes = {
    lowering::DType::float32, lowering::DType::float64, lowering::DType::int32,
    lowering::DType::int64,   lowering::DType::float16, lowering::DType::bfloat16};

// Two elements per chunk plus one: count = 2 * chunks + 1 is never a multiple of chunks
// (chunks >= 2), so every run also exercises the padding (3 elements per chunk).
std::uint64_t small_bytes(const alg::Schedule& s, lowering::DType dtype) {
  return (2 * static_cast<std::uint64_t>(s.chunks) + 1) * lowering::dtype_size(dtype);
}

void expect_exact(const alg::Schedule& s, lowering::DType dtype, const std::string& what) {
  const HostRunResult r = run_on_host(s, small_bytes(s, dtype), dtype);
  EXPECT_TRUE(r.check.ok()) << what << " (" << to_string(dtype) << "): " << r.check.to_string();
  EXPECT_EQ(r.check.checked,
            static_cast<std::uint64_t>(s.ranks) * (2 * static_cast<std::uint64_t>(s.chunks) + 1))
      << what;
}

// Every registered algorithm with its default options, n = 2..32; the element type cycles
// with n so each type meets every algorithm.
TEST(HostExecutor, EveryAlgorithmIsExactForTwoToThirtyTwoRanks) {
  for (const alg::AlgorithmInfo& info : alg::algorithms()) {
    if (info.in_network) continue;  // switch reductions: switch_reduce_test, nvls_test
    for (int n = 2; n <= 32; ++n) {
      if (!info.supports_ranks(n)) continue;
      const alg::Schedule s = alg::generate(info.name, n, alg::Options{});
      expect_exact(s, kTypes[static_cast<std::size_t>(n) % kTypes.size()],
                   info.name + " n=" + std::to_string(n));
    }
  }
}

// Half and bfloat16 for every algorithm; ring also at 64 and 128 ranks, where bfloat16's
// sums reach n * M = 256 exactly (M = 4, 2) and half's 2048 (M = 32, 16).
TEST(HostExecutor, SixteenBitFloatsAreExactForEveryAlgorithm) {
  for (const alg::AlgorithmInfo& info : alg::algorithms()) {
    if (info.in_network) continue;  // switch reductions: switch_reduce_test, nvls_test
    for (int n : {2, 3, 5, 8, 16, 64, 128}) {
      if (!info.supports_ranks(n) || (n > 16 && info.name != "ring")) continue;
      const alg::Schedule s = alg::generate(info.name, n, alg::Options{});
      expect_exact(s, lowering::DType::float16, info.name + " n=" + std::to_string(n));
      expect_exact(s, lowering::DType::bfloat16, info.name + " n=" + std::to_string(n));
    }
  }
}

TEST(HostExecutor, ValueModulusKeepsEverySumExact) {
  EXPECT_EQ(value_modulus(lowering::DType::float32, 8), 1031u);
  EXPECT_EQ(value_modulus(lowering::DType::int64, 1024), 1031u);
  EXPECT_EQ(value_modulus(lowering::DType::float16, 2), 1024u);
  EXPECT_EQ(value_modulus(lowering::DType::float16, 8), 256u);
  EXPECT_EQ(value_modulus(lowering::DType::float16, 1024), 2u);
  EXPECT_EQ(value_modulus(lowering::DType::bfloat16, 8), 32u);
  EXPECT_EQ(value_modulus(lowering::DType::bfloat16, 128), 2u);
  for (lowering::DType t : kTypes) {
    for (int n : {2, 7, 8, 100, 128}) {
      EXPECT_LE(value_modulus(t, n) * static_cast<std::uint64_t>(n), exact_integer_limit(t));
    }
  }
  try {
    value_modulus(lowering::DType::bfloat16, 129);
    FAIL() << "bfloat16 sums over 129 ranks cannot all be exact";
  } catch (const InputError& e) {
    EXPECT_NE(std::string(e.what()).find("bfloat16 holds every integer only up to 256, so the "
                                         "exact check allows at most 128 ranks"),
              std::string::npos)
        << e.what();
  }
  // The same error from a run.
  EXPECT_THROW(run_on_host(alg::generate("ring", 130, alg::Options{}), 130 * 2 * 64,
                           lowering::DType::bfloat16),
               InputError);
}

// A wrong sum in half is caught: a ring whose first transfer copies instead of reducing.
TEST(HostExecutor, BrokenScheduleIsCaughtInHalf) {
  alg::Schedule s = alg::generate("ring", 8, alg::Options{});
  s.rounds[0].transfers[0].op = Op::copy;
  const HostRunResult r = run_on_host(s, 4096, lowering::DType::float16);
  EXPECT_FALSE(r.check.ok());
  EXPECT_GT(r.check.wrong, 0u);
}

TEST(HostExecutor, StragglerAwareAlgorithmsAreExactForEveryStragglerPosition) {
  for (const alg::AlgorithmInfo& info : alg::algorithms()) {
    if (info.in_network) continue;  // switch reductions: switch_reduce_test, nvls_test
    if (!info.straggler_aware) continue;
    for (int n : {3, 4, 5, 8, 12, 16, 31, 32}) {
      if (!info.supports_ranks(n)) continue;
      for (int straggler = 0; straggler < n; ++straggler) {
        alg::Options opts;
        opts.set("straggler", std::to_string(straggler));
        expect_exact(
            alg::generate(info.name, n, opts), lowering::DType::float32,
            info.name + " n=" + std::to_string(n) + " straggler=" + std::to_string(straggler));
      }
    }
  }
}

// Both ranks send everything to each other in one round and reduce: correct only if each
// sends its round-start data (sending after applying would count its own value twice).
TEST(HostExecutor, TwoWayExchangeInOneRoundUsesRoundStartData) {
  alg::Schedule s = alg::Schedule::make(alg::Collective::allreduce, "exchange", 2, 1);
  alg::Round& r = s.add_round();
  r.add(0, 1, 0, 1, Op::reduce);
  r.add(1, 0, 0, 1, Op::reduce);
  const HostRunResult res = run_on_host(s, 7 * 4, lowering::DType::float32);
  EXPECT_TRUE(res.check.ok()) << res.check.to_string();
  EXPECT_EQ(res.check.checked, 14u);
}

// Ring over 3 ranks with the first transfer (round 0: rank 0 -> 1, chunk (0-0-1) mod 3 = 2)
// turned from reduce into copy: rank 1's chunk 2 becomes v0 instead of v0 + v1; round 1 adds
// v2 on rank 2 and the allgather spreads v0 + v2 to everyone. With 2 elements per chunk,
// chunk 2 is elements 4 and 5 on all 3 ranks: 6 of 18 wrong, the first is rank 0 element 4.
// input_value(r, 4) = (r + 1) * 5 + 1: v0 = 6, v1 = 11, v2 = 16; expected 33, got 6 + 16 = 22.
TEST(HostExecutor, BrokenScheduleReportsFirstWrongRankAndElement) {
  alg::Schedule s = alg::generate("ring", 3, alg::Options{});
  ASSERT_EQ(s.rounds[0].transfers[0], (alg::Transfer{0, 1, 2, 3, Op::reduce}));
  s.rounds[0].transfers[0].op = Op::copy;
  // The tight layout (alignment 4 B = one float32): 2 elements per chunk.
  const HostRunResult r = run_on_host(lowering::lower(s, 6 * 4, lowering::DType::float32, 4));
  EXPECT_FALSE(r.check.ok());
  EXPECT_EQ(r.check.checked, 18u);
  EXPECT_EQ(r.check.wrong, 6u);
  EXPECT_EQ(r.check.first_rank, 0);
  EXPECT_EQ(r.check.first_element, 4u);
  EXPECT_EQ(r.check.expected, 33.0);
  EXPECT_EQ(r.check.actual, 22.0);
  EXPECT_EQ(r.check.to_string(),
            "6 of 18 elements wrong; first: rank 0 element 4 expected 33 got 22");
}

// ReduceScatter and AllGather on their own: ring halves over 4 ranks, chunk c owned by rank c.
TEST(HostExecutor, ReduceScatterAndAllGatherEndStates) {
  const std::vector<int> all = alg::iota_ranks(4);
  alg::Schedule rs = alg::Schedule::make(alg::Collective::reduce_scatter, "ring-rs", 4, 4);
  alg::append_ring_reduce_scatter(rs, all, 0);
  const HostRunResult r1 = run_on_host(rs, 8 * 4, lowering::DType::int32);
  EXPECT_TRUE(r1.check.ok()) << r1.check.to_string();
  EXPECT_EQ(r1.check.checked, 8u);  // only each owner's 2 elements

  alg::Schedule ag = alg::Schedule::make(alg::Collective::allgather, "ring-ag", 4, 4);
  alg::append_ring_allgather(ag, all, 0);
  const HostRunResult r2 = run_on_host(ag, 8 * 4, lowering::DType::int32);
  EXPECT_TRUE(r2.check.ok()) << r2.check.to_string();
  EXPECT_EQ(r2.check.checked, 32u);

  // Without its last round (member i sends chunk (i - 2) mod 4 to i + 1) every rank lacks one
  // chunk, still 0: 4 ranks x 2 elements wrong. Rank 0 lacks chunk (3 - 2) mod 4 = 1, i.e.
  // elements 2 and 3; expected the owner's input_value(1, 2) = 2 * 3 + 1 = 7.
  // The tight layout (alignment 4 B = one int32): 2 elements per chunk.
  ag.rounds.pop_back();
  const HostRunResult r3 = run_on_host(lowering::lower(ag, 8 * 4, lowering::DType::int32, 4));
  EXPECT_EQ(r3.check.wrong, 8u);
  EXPECT_EQ(r3.check.first_rank, 0);
  EXPECT_EQ(r3.check.first_element, 2u);
  EXPECT_EQ(r3.check.expected, 7.0);
  EXPECT_EQ(r3.check.actual, 0.0);
}

// In any correct AllReduce every rank's result contains the straggler's contribution, so no
// rank can finish before the straggler starts.
TEST(HostExecutor, StartDelayHoldsBackEveryRank) {
  HostRunOptions opts;
  opts.start_delay.assign(4, Seconds{0});
  opts.start_delay[2] = Seconds{0.02};
  const HostRunResult r =
      run_on_host(alg::generate("ring", 4, alg::Options{}), 64, lowering::DType::float32, opts);
  EXPECT_TRUE(r.check.ok()) << r.check.to_string();
  ASSERT_EQ(r.ranks.size(), 4u);
  EXPECT_GE(r.ranks[2].start.value, 0.02);
  for (const RankTiming& t : r.ranks) {
    EXPECT_GE(t.finish.value, r.ranks[2].start.value);
    EXPECT_LE(t.finish.value, r.time.value);
  }
  EXPECT_DOUBLE_EQ(r.time_from_last_arrival.value, r.time.value - r.ranks[2].start.value);

  opts.start_delay.pop_back();
  EXPECT_THROW(
      run_on_host(alg::generate("ring", 4, alg::Options{}), 64, lowering::DType::float32, opts),
      InputError);
}

// No global barrier, but a transfer needs both ends. Round 0: 0 -> 1; round 1: 1 -> 2, with
// rank 2 starting 0.2 s late. Rank 0 is done after round 0 and finishes long before rank 2
// starts; rank 1's round-1 send completes only once rank 2 has taken it. (Not an AllReduce,
// so the values are not checked.)
TEST(HostExecutor, RanksProgressIndependentlyButTransfersNeedBothEnds) {
  alg::Schedule s = alg::Schedule::make(alg::Collective::allreduce, "chain", 3, 1);
  s.add_round().add(0, 1, 0, 1, Op::reduce);
  s.add_round().add(1, 2, 0, 1, Op::reduce);
  HostRunOptions opts;
  opts.check = false;
  opts.start_delay = {Seconds{0}, Seconds{0}, Seconds{0.2}};
  const HostRunResult r = run_on_host(s, 16, lowering::DType::float32, opts);
  EXPECT_EQ(r.check.checked, 0u);
  EXPECT_LT(r.ranks[0].finish.value, r.ranks[2].start.value);
  EXPECT_GE(r.ranks[1].finish.value, r.ranks[2].start.value);
}

// A hand-made plan in which rank 1 waits for a message rank 0 never sends: the run ends with
// an InternalError naming the wait instead of hanging.
TEST(HostExecutor, UnmatchedReceiveTimesOut) {
  lowering::Plan plan;
  plan.ranks = 2;
  plan.rounds = 1;
  plan.layout = lowering::make_layout(8, 2, lowering::DType::float32);
  plan.rank_plans.resize(2);
  plan.rank_plans[1].steps.push_back(
      lowering::Step{0, {}, {lowering::P2P{0, 0, 1}}, {lowering::Apply{Op::reduce, 0, 0, 1}}, 4});
  plan.rank_plans[1].scratch_bytes = 4;
  HostRunOptions opts;
  opts.wait_timeout = Seconds{0.05};
  try {
    run_on_host(plan, opts);
    FAIL() << "the receive has no sender";
  } catch (const InternalError& e) {
    EXPECT_NE(
        std::string(e.what()).find("rank 1 waiting for its round-0 data from rank 0 timed out"),
        std::string::npos)
        << e.what();
  }
}

}  // namespace
}  // namespace ssim::gpu
