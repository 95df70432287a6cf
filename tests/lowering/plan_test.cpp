#include "lowering/plan.hpp"

#include <gtest/gtest.h>

#include "algorithms/registry.hpp"
#include "common/error.hpp"

namespace ssim::lowering {
namespace {

using alg::Op;

TEST(DType, NamesAndSizes) {
  EXPECT_EQ(parse_dtype("float32"), DType::float32);
  EXPECT_EQ(parse_dtype("float"), DType::float32);
  EXPECT_EQ(parse_dtype("double"), DType::float64);
  EXPECT_EQ(parse_dtype("int"), DType::int32);
  EXPECT_EQ(parse_dtype("int64"), DType::int64);
  EXPECT_EQ(to_string(DType::float64), "float64");
  EXPECT_EQ(dtype_size(DType::float32), 4u);
  EXPECT_EQ(dtype_size(DType::int64), 8u);
  EXPECT_EQ(parse_dtype("float16"), DType::float16);
  EXPECT_EQ(parse_dtype("half"), DType::float16);
  EXPECT_EQ(parse_dtype("fp16"), DType::float16);
  EXPECT_EQ(parse_dtype("bfloat16"), DType::bfloat16);
  EXPECT_EQ(parse_dtype("bf16"), DType::bfloat16);
  EXPECT_EQ(to_string(DType::float16), "float16");
  EXPECT_EQ(to_string(DType::bfloat16), "bfloat16");
  EXPECT_EQ(dtype_size(DType::float16), 2u);
  EXPECT_EQ(dtype_size(DType::bfloat16), 2u);
  EXPECT_THROW(parse_dtype("quad"), InputError);
  EXPECT_THROW(parse_dtype("fp8"), InputError);
}

// The tight rule (align = element size): pad by less than one element per chunk.
TEST(Padding, TightRuleElementCountPaddedToAMultipleOfChunks) {
  // 20 B float32 = 5 elements over 3 chunks: chunk = ceil(5/3) = 2 elements, padded to 6 = 24 B.
  const BufferLayout l = make_layout(20, 3, DType::float32, 4);
  EXPECT_EQ(l.count, 5u);
  EXPECT_EQ(l.chunk_count, 2u);
  EXPECT_EQ(l.padded_count(), 6u);
  EXPECT_EQ(l.chunk_offset_bytes(2), 16u);
  EXPECT_EQ(padded_bytes(20, 3, DType::float32, 4), 24u);
  // Divisible sizes are not padded: 24 B = 6 elements, 2 per chunk.
  EXPECT_EQ(padded_bytes(24, 3, DType::float32, 4), 24u);
  // 9 float64 over 8 chunks: chunk = 2 elements, 16 elements = 128 B.
  EXPECT_EQ(padded_bytes(72, 8, DType::float64, 8), 128u);
  // Exactly one element per chunk is the smallest size allowed.
  EXPECT_EQ(padded_bytes(16, 4, DType::int32, 4), 16u);
}

// The default rule: chunks are whole multiples of 128 B.
TEST(Padding, ChunksAreRoundedToTheAlignment) {
  // 5 float32 over 3 chunks: ceil(5/3) = 2 elements, rounded up to 32 (128 B); 384 B in all.
  const BufferLayout l = make_layout(20, 3, DType::float32);
  EXPECT_EQ(l.align, 128u);
  EXPECT_EQ(l.count, 5u);
  EXPECT_EQ(l.chunk_count, 32u);
  EXPECT_EQ(l.padded_bytes(), 384u);
  EXPECT_EQ(l.chunk_offset_bytes(2), 256u);
  // 1 MiB + 4 B of float32 over 8 chunks: ceil(262145 / 8) = 32769 elements -> 32800
  // (131200 B = 1025 * 128).
  const BufferLayout m = make_layout((1u << 20) + 4, 8, DType::float32);
  EXPECT_EQ(m.chunk_count, 32800u);
  EXPECT_EQ(m.chunk_offset_bytes(1) % 128, 0u);
  // Sizes that already split into 128 B multiples are not padded.
  EXPECT_EQ(padded_bytes(1u << 20, 8, DType::float64), 1u << 20);
  // One chunk has no inner boundary: never padded.
  EXPECT_EQ(padded_bytes(1000, 1, DType::float64), 1000u);
  // Another alignment: 4 KiB.
  const BufferLayout k = make_layout(3 * 4096 + 8, 3, DType::float64, 4096);
  EXPECT_EQ(k.chunk_count * 8, 2 * 4096u);
  EXPECT_EQ(k.padded_bytes(), 6 * 4096u);
  // The padding stays below chunks * (align + element size).
  for (std::uint64_t bytes : {4u, 400u, 4096u, 65540u, 1000004u}) {
    for (int chunks : {1, 2, 3, 7, 64}) {
      if (bytes / 4 < static_cast<std::uint64_t>(chunks)) continue;
      EXPECT_LT(padded_bytes(bytes, chunks, DType::float32) - bytes,
                static_cast<std::uint64_t>(chunks) * (128 + 4))
          << bytes << " B, " << chunks << " chunks";
    }
  }
}

TEST(Padding, AlignmentMustBeAPowerOfTwoAtLeastTheElementSize) {
  EXPECT_NO_THROW(check_align(4, DType::float32));
  EXPECT_NO_THROW(check_align(128, DType::float64));
  for (std::uint64_t bad : {0u, 2u, 96u, 100u}) {
    EXPECT_THROW(check_align(bad, DType::float32), InputError) << bad;
  }
  try {
    make_layout(64, 2, DType::float64, 4);
    FAIL() << "4 B alignment is below a float64 element";
  } catch (const InputError& e) {
    EXPECT_NE(std::string(e.what()).find("alignment 4 B must be a power of two and at least the "
                                         "float64 element size (8 B)"),
              std::string::npos)
        << e.what();
  }
}

// Every send, receive and apply of every registered algorithm, n = 2..64, three sizes, two
// types per n (all six over the n), starts on a multiple of the alignment (128 B by default;
// 256 B and 4 KiB for every eighth n).
TEST(Alignment, EveryTransferOfEveryAlgorithmStartsOnTheBoundary) {
  const DType types[] = {DType::float32, DType::float64, DType::int32,
                         DType::int64,   DType::float16, DType::bfloat16};
  std::uint64_t plans = 0;
  for (const alg::AlgorithmInfo& info : alg::algorithms()) {
    if (info.in_network) continue;  // switch reductions: switch_reduce_test, nvls_test
    for (int n = 2; n <= 64; ++n) {
      if (!info.supports_ranks(n)) continue;
      const alg::Schedule s = alg::generate(info.name, n, alg::Options{});
      const auto chunks = static_cast<std::uint64_t>(s.chunks);
      // Two types per rank count, cycling, so every type meets every algorithm.
      for (std::size_t ti : {static_cast<std::size_t>(n) % std::size(types),
                             static_cast<std::size_t>(n + 3) % std::size(types)}) {
        const DType t = types[ti];
        const std::uint64_t elem = dtype_size(t);
        for (std::uint64_t bytes : {(3 * chunks + 1) * elem, (std::uint64_t{1} << 20) + elem,
                                    (1000003 * chunks / 7 + chunks) * elem}) {
          for (std::uint64_t align :
               {std::uint64_t{128}, std::uint64_t{256}, std::uint64_t{4096}}) {
            if (align != 128 && n % 8 != 0) continue;  // other alignments: a sample
            const Plan plan = lower(s, bytes, t, align);
            const AlignmentCount c = count_aligned(plan, align);
            ASSERT_GT(c.sends, 0u) << info.name << " n=" << n;
            EXPECT_EQ(c.sends_aligned, c.sends) << info.name << " n=" << n << " " << bytes << " B";
            EXPECT_EQ(c.recvs_aligned, c.recvs) << info.name << " n=" << n << " " << bytes << " B";
            EXPECT_EQ(c.applies_aligned, c.applies) << info.name << " n=" << n;
            ++plans;
          }
        }
      }
    }
  }
  EXPECT_GT(plans, 1500u);
}

// The tight rule reproduces the misalignment the issue found: StragglAR at n=8 sends from
// offsets that are not multiples of 128 B once a chunk is not a multiple of 32 float32.
TEST(Alignment, TightRuleLeavesStragglarMisaligned) {
  const alg::Schedule s = alg::generate("stragglar", 8, alg::Options{});
  const Plan tight = lower(s, (1u << 20) + 4, DType::float32, 4);
  const AlignmentCount c = count_aligned(tight, 128);
  EXPECT_LT(c.sends_aligned, c.sends);
  const AlignmentCount aligned = count_aligned(lower(s, (1u << 20) + 4, DType::float32), 128);
  EXPECT_EQ(aligned.sends_aligned, aligned.sends);
}

TEST(Padding, RejectsPartialElementsAndTooSmallSizes) {
  try {
    padded_bytes(10, 2, DType::float32);
    FAIL() << "10 B is not a whole number of float32";
  } catch (const InputError& e) {
    EXPECT_NE(std::string(e.what()).find("not a whole number of float32"), std::string::npos)
        << e.what();
  }
  try {
    padded_bytes(12, 4, DType::float32);  // 3 elements, 4 chunks
    FAIL() << "3 elements cannot fill 4 chunks";
  } catch (const InputError& e) {
    EXPECT_NE(std::string(e.what()).find("too small for a schedule of 4 chunks"), std::string::npos)
        << e.what();
  }
  EXPECT_THROW(padded_bytes(0, 1, DType::int32), InputError);
  EXPECT_THROW(padded_bytes(16, 0, DType::int32), InputError);
}

// 3 ranks, 3 chunks; 20 B of float32 = 5 elements, padded to 2 elements (8 B) per chunk.
//   round 0: 0 -> 1 chunks [0,2) reduce; 1 -> 0 chunk [1,2) reduce; 2 -> 0 chunk [2,3) copy
//   round 1: 0 -> 2 chunks [0,3) copy
// Not an AllReduce; lowering does not care.
TEST(Lower, HandBuiltThreeRankScheduleStepByStep) {
  alg::Schedule s = alg::Schedule::make(alg::Collective::allreduce, "hand", 3, 3);
  alg::Round& r0 = s.add_round("exchange");
  r0.add(0, 1, 0, 2, Op::reduce);
  r0.add(1, 0, 1, 2, Op::reduce);
  r0.add(2, 0, 2, 3, Op::copy);
  s.add_round("fan-out").add(0, 2, 0, 3, Op::copy);

  const Plan plan = lower(s, 20, DType::float32, 4);  // the tight rule: offsets in elements
  EXPECT_EQ(plan.ranks, 3);
  EXPECT_EQ(plan.rounds, 2);
  EXPECT_EQ(plan.layout.padded_bytes(), 24u);
  ASSERT_EQ(plan.rank_plans.size(), 3u);

  // Rank 0, round 0: sends chunks 0-1 (offset 0, 4 elements) to 1; receives chunk 1 from 1
  // into scratch 0 and chunk 2 from 2 into scratch 8; reduces chunk 1 (offset 8), copies chunk 2
  // (offset 16). Round 1: sends all 6 elements to 2, receives nothing.
  const auto& p0 = plan.rank_plans[0];
  ASSERT_EQ(p0.steps.size(), 2u);
  EXPECT_EQ(p0.steps[0], (Step{0,
                               {P2P{1, 0, 4}},
                               {P2P{1, 0, 2}, P2P{2, 8, 2}},
                               {Apply{Op::reduce, 8, 0, 2}, Apply{Op::copy, 16, 8, 2}},
                               16}));
  EXPECT_EQ(p0.steps[1], (Step{1, {P2P{2, 0, 6}}, {}, {}, 0}));
  EXPECT_EQ(p0.scratch_bytes, 16u);

  // Rank 1 takes part in round 0 only: sends chunk 1 (offset 8, 2 elements), receives 4
  // elements from 0 and reduces them into chunks 0-1.
  const auto& p1 = plan.rank_plans[1];
  ASSERT_EQ(p1.steps.size(), 1u);
  EXPECT_EQ(p1.steps[0],
            (Step{0, {P2P{0, 8, 2}}, {P2P{0, 0, 4}}, {Apply{Op::reduce, 0, 0, 4}}, 16}));
  EXPECT_EQ(p1.scratch_bytes, 16u);

  // Rank 2: round 0 sends chunk 2 (offset 16); round 1 receives all 6 elements and copies them.
  const auto& p2 = plan.rank_plans[2];
  ASSERT_EQ(p2.steps.size(), 2u);
  EXPECT_EQ(p2.steps[0], (Step{0, {P2P{0, 16, 2}}, {}, {}, 0}));
  EXPECT_EQ(p2.steps[1], (Step{1, {}, {P2P{0, 0, 6}}, {Apply{Op::copy, 0, 0, 6}}, 24}));
  EXPECT_EQ(p2.scratch_bytes, 24u);

  const PlanSummary sum = summarize(plan);
  // Rank 0 sends 4 + 6 elements = 40 B and receives 2 + 2 = 16 B.
  EXPECT_EQ(sum.ranks[0].groups, 2);
  EXPECT_EQ(sum.ranks[0].bytes_sent, 40u);
  EXPECT_EQ(sum.ranks[0].bytes_received, 16u);
  EXPECT_EQ(sum.ranks[1].bytes_sent, 8u);
  EXPECT_EQ(sum.ranks[2].bytes_received, 24u);
  EXPECT_EQ(sum.total_bytes_sent, 40u + 8u + 8u);
  EXPECT_EQ(sum.max_scratch_bytes, 24u);
  EXPECT_EQ(sum.max_groups, 2);
}

TEST(Lower, RingSummary) {
  // Ring over 4 ranks, 64 B float32 = 16 elements, 4 chunks of 4 elements (16 B). Each rank
  // sends and receives one chunk in each of the 2(n-1) = 6 rounds: 96 B each way, 16 B scratch.
  const Plan plan = lower(alg::generate("ring", 4, alg::Options{}), 64, DType::float32, 4);
  const PlanSummary sum = summarize(plan);
  ASSERT_EQ(sum.ranks.size(), 4u);
  for (const RankSummary& r : sum.ranks) {
    EXPECT_EQ(r.groups, 6);
    EXPECT_EQ(r.sends, 6);
    EXPECT_EQ(r.recvs, 6);
    EXPECT_EQ(r.bytes_sent, 96u);
    EXPECT_EQ(r.bytes_received, 96u);
    EXPECT_EQ(r.scratch_bytes, 16u);
  }
  const std::string text = format_summary(plan, sum);
  EXPECT_NE(text.find("plan ring: 4 ranks, 6 rounds, 4 chunks of 4 float32 elements"),
            std::string::npos)
      << text;
  EXPECT_NE(text.find("rank 3: 6 groups, 6 sends (96 B), 6 receives (96 B), scratch 16 B"),
            std::string::npos)
      << text;
}

TEST(Lower, RejectsStructurallyBrokenSchedules) {
  alg::Schedule s = alg::Schedule::make(alg::Collective::allreduce, "bad", 2, 2);
  s.add_round().add(0, 1, 0, 1, Op::reduce);
  s.rounds[0].add(1, 1, 0, 1, Op::reduce);
  try {
    lower(s, 64, DType::float32);
    FAIL() << "a transfer from rank 1 to itself must be rejected";
  } catch (const InputError& e) {
    EXPECT_NE(std::string(e.what()).find("round 0, transfer 1"), std::string::npos) << e.what();
  }
  s.rounds[0].transfers[1] = alg::Transfer{1, 0, 1, 3, Op::reduce};
  EXPECT_THROW(lower(s, 64, DType::float32), InputError);  // chunk 2 does not exist
  s.rounds[0].transfers[1] = alg::Transfer{1, 2, 0, 1, Op::reduce};
  EXPECT_THROW(lower(s, 64, DType::float32), InputError);  // rank 2 does not exist
}

TEST(CheckMatching, CatchesCountMismatchAndUnmatchedOperations) {
  const Plan good = lower(alg::generate("ring", 3, alg::Options{}), 36, DType::float32);
  EXPECT_NO_THROW(check_matching(good));

  Plan bad_count = good;
  bad_count.rank_plans[1].steps[0].recvs[0].count += 1;
  EXPECT_THROW(check_matching(bad_count), InternalError);

  Plan missing_recv = good;
  Step& step = missing_recv.rank_plans[2].steps[0];
  step.recvs.clear();
  step.applies.clear();
  EXPECT_THROW(check_matching(missing_recv), InternalError);

  Plan missing_send = good;
  missing_send.rank_plans[0].steps[0].sends.clear();
  EXPECT_THROW(check_matching(missing_send), InternalError);
}

}  // namespace
}  // namespace ssim::lowering
