#include "algorithms/verifier.hpp"

#include <gtest/gtest.h>

#include "common/error.hpp"

namespace ssim::alg {
namespace {

// Hand-built 2-rank allreduce: swap chunk halves with reduce, then swap back with copy.
//   R0: 0 sends c1 to 1 (1 reduces), 1 sends c0 to 0 (0 reduces) -> 0 has c0 complete, 1 has c1.
//   R1: 0 sends c0 to 1 (copy), 1 sends c1 to 0 (copy)            -> both complete.
Schedule two_rank_allreduce() {
  Schedule s = Schedule::make(Collective::allreduce, "hand", 2, 2);
  Round& r0 = s.add_round("reduce-scatter");
  r0.add(0, 1, 1, 2, Op::reduce);
  r0.add(1, 0, 0, 1, Op::reduce);
  Round& r1 = s.add_round("allgather");
  r1.add(0, 1, 0, 1, Op::copy);
  r1.add(1, 0, 1, 2, Op::copy);
  return s;
}

std::string error_of(const Schedule& s) {
  const VerifyResult v = verify(s);
  return v.ok() ? std::string("ok") : v.error->to_string();
}

TEST(Verifier, AcceptsHandBuiltAllreduce) {
  const VerifyResult v = verify(two_rank_allreduce());
  ASSERT_TRUE(v.ok()) << v.error->to_string();
  EXPECT_EQ(v.summary.rounds, 2);
  EXPECT_EQ(v.summary.transfers, 4u);
  EXPECT_EQ(v.summary.max_sends_per_rank_round, 1);
  EXPECT_EQ(v.summary.chunks_sent, (std::vector<std::int64_t>{2, 2}));
  ASSERT_EQ(v.summary.phases.size(), 2u);
  EXPECT_EQ(v.summary.phases[0].first, "reduce-scatter");
}

TEST(Verifier, TwoWayExchangeReadsRoundStartState) {
  // Both ranks reduce chunk 0 from each other in one round: each reads the other's
  // round-start data {0} and {1}, so both end with {0,1} - no double count.
  Schedule s = Schedule::make(Collective::allreduce, "swap", 2, 1);
  Round& r = s.add_round();
  r.add(0, 1, 0, 1, Op::reduce);
  r.add(1, 0, 0, 1, Op::reduce);
  EXPECT_EQ(error_of(s), "ok");
}

TEST(Verifier, DetectsDoubleCount) {
  Schedule s = two_rank_allreduce();
  s.rounds[1].transfers[0].op = Op::reduce;  // rank 1 adds c0 {0,1} onto its c0 {1}: 1 counted twice
  const VerifyResult v = verify(s);
  ASSERT_FALSE(v.ok());
  EXPECT_EQ(v.error->round, 1);
  EXPECT_EQ(v.error->transfer, 0);
  EXPECT_NE(v.error->message.find("double count"), std::string::npos) << v.error->message;
}

TEST(Verifier, DetectsMissingContributions) {
  Schedule s = two_rank_allreduce();
  s.rounds.pop_back();
  const VerifyResult v = verify(s);
  ASSERT_FALSE(v.ok());
  EXPECT_EQ(v.error->round, -1);
  EXPECT_NE(v.error->message.find("at the end rank 1 holds chunk 0 without the contributions of ranks 0"),
            std::string::npos)
      << v.error->message;
}

TEST(Verifier, DetectsStructuralErrors) {
  {
    Schedule s = two_rank_allreduce();
    s.rounds[0].transfers[1].dst = 5;
    EXPECT_NE(error_of(s).find("round 0, transfer 1: (1 -> 5"), std::string::npos) << error_of(s);
    EXPECT_NE(error_of(s).find("destination rank out of range"), std::string::npos);
  }
  {
    Schedule s = two_rank_allreduce();
    s.rounds[0].transfers[0].src = -1;
    EXPECT_NE(error_of(s).find("source rank out of range"), std::string::npos) << error_of(s);
  }
  {
    Schedule s = two_rank_allreduce();
    s.rounds[1].transfers[1].dst = 1;
    EXPECT_NE(error_of(s).find("round 1, transfer 1"), std::string::npos);
    EXPECT_NE(error_of(s).find("same rank"), std::string::npos) << error_of(s);
  }
  {
    Schedule s = two_rank_allreduce();
    s.rounds[0].transfers[0].chunk_end = 1;  // [1, 1)
    EXPECT_NE(error_of(s).find("empty chunk range"), std::string::npos) << error_of(s);
  }
  {
    Schedule s = two_rank_allreduce();
    s.rounds[0].transfers[0].chunk_end = 3;
    EXPECT_NE(error_of(s).find("chunk range outside [0, 2)"), std::string::npos) << error_of(s);
  }
  {
    Schedule s = two_rank_allreduce();
    s.straggler = 2;
    EXPECT_NE(error_of(s).find("straggler 2 out of range"), std::string::npos) << error_of(s);
  }
}

TEST(Verifier, DetectsConflictingCopies) {
  // Three ranks: 0 and 1 both copy chunk 0 into rank 2 in the same round.
  Schedule s = Schedule::make(Collective::allreduce, "bad", 3, 1);
  Round& r = s.add_round();
  r.add(0, 2, 0, 1, Op::copy);
  r.add(1, 2, 0, 1, Op::copy);
  const VerifyResult v = verify(s);
  ASSERT_FALSE(v.ok());
  EXPECT_EQ(v.error->transfer, 1);
  EXPECT_NE(v.error->message.find("conflicting writes"), std::string::npos) << v.error->message;
}

TEST(Verifier, TwoReducesIntoOneChunkInOneRoundAreSummed) {
  // Ranks 1 and 2 both reduce chunk 0 into rank 0 in round 0: 0 holds {0,1,2}. Then 0 copies
  // to 1 and 2 in round 1: a correct 3-rank allreduce of one chunk.
  Schedule s = Schedule::make(Collective::allreduce, "fan-in", 3, 1);
  Round& r0 = s.add_round();
  r0.add(1, 0, 0, 1, Op::reduce);
  r0.add(2, 0, 0, 1, Op::reduce);
  Round& r1 = s.add_round();
  r1.add(0, 1, 0, 1, Op::copy);
  r1.add(0, 2, 0, 1, Op::copy);
  const VerifyResult v = verify(s);
  ASSERT_TRUE(v.ok()) << v.error->to_string();
  EXPECT_EQ(v.summary.max_sends_per_rank_round, 2);
  EXPECT_EQ(v.summary.max_receives_per_rank_round, 2);
}

TEST(Verifier, SendingDataNotHeldIsAnError) {
  Schedule s = Schedule::make(Collective::allgather, "ag", 2, 2);
  s.add_round().add(0, 1, 1, 2, Op::copy);  // chunk 1 belongs to rank 1; rank 0 holds nothing of it
  const VerifyResult v = verify(s);
  ASSERT_FALSE(v.ok());
  EXPECT_NE(v.error->message.find("holds no data"), std::string::npos) << v.error->message;
}

TEST(Verifier, ReduceScatterAndAllgatherEndStates) {
  // reduce_scatter over 2 ranks: rank 0 must own chunk 0, rank 1 chunk 1.
  Schedule rs = Schedule::make(Collective::reduce_scatter, "rs", 2, 2);
  Round& r = rs.add_round();
  r.add(0, 1, 1, 2, Op::reduce);
  r.add(1, 0, 0, 1, Op::reduce);
  EXPECT_TRUE(verify(rs).ok());
  Schedule wrong = rs;
  std::swap(wrong.rounds[0].transfers[0].chunk_begin, wrong.rounds[0].transfers[1].chunk_begin);
  std::swap(wrong.rounds[0].transfers[0].chunk_end, wrong.rounds[0].transfers[1].chunk_end);
  EXPECT_FALSE(verify(wrong).ok());

  Schedule ag = Schedule::make(Collective::allgather, "ag", 2, 2);
  Round& a = ag.add_round();
  a.add(0, 1, 0, 1, Op::copy);
  a.add(1, 0, 1, 2, Op::copy);
  EXPECT_TRUE(verify(ag).ok());
  ag.rounds[0].transfers.pop_back();
  EXPECT_FALSE(verify(ag).ok());
}

TEST(Verifier, SymbolicStateTracksContributions) {
  const Schedule s = two_rank_allreduce();
  SymbolicState st(Collective::allreduce, 2, 2);
  EXPECT_EQ(st.count(0, 0), 1);
  ASSERT_FALSE(st.apply(s.rounds[0], 0).has_value());
  EXPECT_TRUE(st.complete(0, 0));
  EXPECT_FALSE(st.complete(0, 1));
  EXPECT_EQ(st.missing(0, 1), std::vector<int>{1});
  EXPECT_TRUE(st.has(1, 1, 0));
}

TEST(Schedule, RelabelAndChunkBytes) {
  Schedule s = two_rank_allreduce();
  s.straggler = 1;
  s.relabel({1, 0});
  EXPECT_EQ(s.rounds[0].transfers[0].src, 1);
  EXPECT_EQ(*s.straggler, 0);
  EXPECT_TRUE(verify(s).ok());
  // 10 bytes in 3 chunks: 3, 3, 4 (the last absorbs the remainder).
  EXPECT_EQ(chunk_bytes(10, 3, 0, 1).length, 3u);
  EXPECT_EQ(chunk_bytes(10, 3, 2, 3).offset, 6u);
  EXPECT_EQ(chunk_bytes(10, 3, 2, 3).length, 4u);
  EXPECT_EQ(chunk_bytes(10, 3, 1, 3).length, 7u);
}

}  // namespace
}  // namespace ssim::alg

namespace ssim::alg {
namespace {

// Issue 15: 2^24 ranks x 2^22 chunks (both within the schedule reader's limits) made
// ranks * chunks * words wrap to 0 and the first write crash. The product is checked first.
TEST(Verifier, StateTooLargeToHoldIsAResourceErrorNotAWrap) {
  EXPECT_DOUBLE_EQ(symbolic_state_bytes(16777216, 4194304),
                   16777216.0 * 4194304.0 * 262144.0 * 8.0);
  try {
    SymbolicState state(Collective::allreduce, 16777216, 4194304);
    FAIL() << "expected a ResourceError";
  } catch (const ResourceError& e) {
    EXPECT_NE(std::string(e.what()).find("verifying 16777216 ranks x 4194304 chunks needs"),
              std::string::npos)
        << e.what();
  }
  const SymbolicState small(Collective::allreduce, 4, 4);
  EXPECT_EQ(small.count(0, 0), 1);
}

}  // namespace
}  // namespace ssim::alg
