#include "algorithms/verifier.hpp"

#include <gtest/gtest.h>

#include <algorithm>
#include <random>
#include <string>
#include <utility>
#include <vector>

#include "algorithms/chunk_sizes.hpp"
#include "algorithms/registry.hpp"

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

// The reference the compact SymbolicState is checked against: one explicit set of contributors
// per (rank, chunk), the straightforward reading of DESIGN.md's round semantics. Verdicts are
// compared as (round, transfer, kind of error); the double-count rank as the smallest shared one.
class ReferenceState {
 public:
  ReferenceState(Collective collective, int ranks, int chunks)
      : n_(ranks), chunks_(chunks), sets_(static_cast<std::size_t>(ranks) * chunks, std::vector<char>(ranks, 0)) {
    for (int r = 0; r < ranks; ++r) {
      for (int c = 0; c < chunks; ++c) {
        if (collective == Collective::allgather) {
          if (chunk_owner(c, ranks, chunks) == r) std::fill(at(r, c).begin(), at(r, c).end(), 1);
        } else {
          at(r, c)[r] = 1;
        }
      }
    }
  }
  std::vector<char>& at(int r, int c) { return sets_[static_cast<std::size_t>(r) * chunks_ + c]; }
  int count(int r, int c) { return static_cast<int>(std::count(at(r, c).begin(), at(r, c).end(), 1)); }

  // "" when fine, else "<round>/<transfer>/<kind>[/<rank>]".
  std::string apply(const Round& round, int ri) {
    struct W {
      int dst, chunk, src, t;
      Op op;
    };
    std::vector<W> writes;
    for (std::size_t i = 0; i < round.transfers.size(); ++i) {
      const Transfer& t = round.transfers[i];
      const std::string where = std::to_string(ri) + "/" + std::to_string(i) + "/";
      if (t.src < 0 || t.src >= n_ || t.dst < 0 || t.dst >= n_) return where + "range";
      if (t.src == t.dst) return where + "same";
      if (t.chunk_begin >= t.chunk_end) return where + "empty";
      if (t.chunk_begin < 0 || t.chunk_end > chunks_) return where + "chunks";
      for (int c = t.chunk_begin; c < t.chunk_end; ++c) {
        if (count(t.src, c) == 0) return where + "nodata";
        writes.push_back({t.dst, c, t.src, static_cast<int>(i), t.op});
      }
    }
    std::stable_sort(writes.begin(), writes.end(),
                     [](const W& a, const W& b) { return a.dst != b.dst ? a.dst < b.dst : a.chunk < b.chunk; });
    std::vector<std::pair<std::pair<int, int>, std::vector<char>>> out;
    for (std::size_t g = 0; g < writes.size();) {
      std::size_t e = g;
      while (e < writes.size() && writes[e].dst == writes[g].dst && writes[e].chunk == writes[g].chunk) ++e;
      const bool copy = std::any_of(writes.begin() + g, writes.begin() + e, [](const W& w) { return w.op == Op::copy; });
      if (copy && e - g > 1) return std::to_string(ri) + "/" + std::to_string(writes[g + 1].t) + "/conflict";
      std::vector<char> acc = copy ? at(writes[g].src, writes[g].chunk) : at(writes[g].dst, writes[g].chunk);
      if (!copy) {
        for (std::size_t k = g; k < e; ++k) {
          const std::vector<char>& s = at(writes[k].src, writes[k].chunk);
          for (int w = 0; w < n_; ++w) {
            if (acc[w] && s[w]) return std::to_string(ri) + "/" + std::to_string(writes[k].t) + "/double/" + std::to_string(w);
            acc[w] |= s[w];
          }
        }
      }
      out.push_back({{writes[g].dst, writes[g].chunk}, acc});
      g = e;
    }
    for (auto& [cell, set] : out) at(cell.first, cell.second) = set;
    return "";
  }

 private:
  int n_, chunks_;
  std::vector<std::vector<char>> sets_;
};

std::string kind_of(const VerifyError& e) {
  const std::string& m = e.message;
  std::string kind = m.find("out of range") != std::string::npos            ? "range"
                     : m.find("same rank") != std::string::npos             ? "same"
                     : m.find("empty chunk range") != std::string::npos     ? "empty"
                     : m.find("chunk range outside") != std::string::npos   ? "chunks"
                     : m.find("holds no data") != std::string::npos         ? "nodata"
                     : m.find("conflicting writes") != std::string::npos    ? "conflict"
                     : m.find("double count") != std::string::npos          ? "double"
                                                                             : "other";
  std::string out = std::to_string(e.round) + "/" + std::to_string(e.transfer) + "/" + kind;
  if (kind == "double") {
    const std::size_t at = m.find("contribution of rank ") + 21;
    out += "/" + m.substr(at, m.find(' ', at) - at);
  }
  return out;
}

// Random schedules (mostly reduces and copies of held data, some broken on purpose), applied
// round by round to both states: the same first error, and between rounds the same sets.
TEST(Verifier, CompactStateAgreesWithExplicitSets) {
  std::mt19937 rng(20261123);
  int errors_seen = 0, complete_seen = 0;
  for (int trial = 0; trial < 3000; ++trial) {
    const int n = 2 + static_cast<int>(rng() % 9);
    const int chunks = 1 + static_cast<int>(rng() % 5);
    const Collective coll = rng() % 5 == 0 ? Collective::allgather : Collective::allreduce;
    SymbolicState compact(coll, n, chunks);
    ReferenceState ref(coll, n, chunks);
    const int rounds = 1 + static_cast<int>(rng() % 14);
    for (int ri = 0; ri < rounds; ++ri) {
      Round round;
      const int transfers = 1 + static_cast<int>(rng() % 4);
      for (int t = 0; t < transfers; ++t) {
        const int src = static_cast<int>(rng() % n);
        int dst = static_cast<int>(rng() % n);
        if (dst == src && rng() % 8 != 0) dst = (dst + 1) % n;
        const int b = static_cast<int>(rng() % chunks);
        const int e = rng() % 10 == 0 ? b : b + 1 + static_cast<int>(rng() % (chunks - b));
        round.add(src, dst, b, e, rng() % 3 == 0 ? Op::copy : Op::reduce);
      }
      const std::string want = ref.apply(round, ri);
      const std::optional<VerifyError> got = compact.apply(round, ri);
      ASSERT_EQ(got ? kind_of(*got) : std::string(), want) << "trial " << trial << (got ? ": " + got->message : "");
      if (got) {
        ++errors_seen;
        break;
      }
      for (int r = 0; r < n; ++r) {
        for (int c = 0; c < chunks; ++c) {
          ASSERT_EQ(compact.count(r, c), ref.count(r, c)) << "trial " << trial << " rank " << r << " chunk " << c;
          for (int k = 0; k < n; ++k) ASSERT_EQ(compact.has(r, c, k), ref.at(r, c)[k] != 0);
          if (compact.complete(r, c)) ++complete_seen;
        }
      }
    }
  }
  EXPECT_GT(errors_seen, 500);
  EXPECT_GT(complete_seen, 100);
}

// Copies share sets and dead sets are recycled: after a whole binary-tree allreduce (whose
// partial sums are not runs of ranks) every cell is complete and few pooled sets are alive.
TEST(Verifier, CompactStateRecyclesSets) {
  const Schedule s = generate("tree", 64, Options{});
  SymbolicState st(s.collective, s.ranks, s.chunks);
  std::size_t most = 0;
  for (std::size_t ri = 0; ri < s.rounds.size(); ++ri) {
    ASSERT_FALSE(st.apply(s.rounds[ri], static_cast<int>(ri)).has_value());
    most = std::max(most, st.pooled_sets());
  }
  EXPECT_GT(most, 0u);  // trees do need pooled sets
  for (int r = 0; r < s.ranks; ++r) {
    for (int c = 0; c < s.chunks; ++c) ASSERT_TRUE(st.complete(r, c));
  }
  EXPECT_EQ(st.pooled_sets(), 0u);  // the full set is a run: every pooled set was released
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
  // Empty ranges carry nothing, the last chunk's included.
  EXPECT_EQ(chunk_bytes(10, 3, 3, 3).length, 0u);
}

// ChunkSizes and chunk_bytes (which uses it) against the rule summed chunk by chunk: every
// chunk floor(total / chunks) bytes, the last one total - (chunks - 1) * floor(total / chunks).
TEST(Schedule, GpusPerNodeFromTheOptions) {
  Schedule s;
  EXPECT_EQ(schedule_gpus_per_node(s), 0);  // absent
  for (const auto& [text, g] : std::vector<std::pair<std::string, int>>{
           {"8", 8}, {"1", 1}, {"-2", -2}, {"8x", 0}, {"x", 0}, {"", 0}, {" 8", 0}}) {
    s.options["gpus_per_node"] = text;
    EXPECT_EQ(schedule_gpus_per_node(s), g) << "'" << text << "'";
  }
}

TEST(Schedule, ChunkSizesSumChunkByChunk) {
  for (const std::uint64_t total : {0ull, 1ull, 10ull, 1000003ull, (1ull << 40) + 17}) {
    for (const int chunks : {1, 3, 7, 64}) {
      const std::uint64_t each = total / static_cast<std::uint64_t>(chunks);
      const ChunkSizes sizes(total, chunks);
      for (int b = 0; b <= chunks; ++b) {
        std::uint64_t length = 0;
        for (int e = b; e <= chunks; ++e) {
          EXPECT_EQ(sizes.length(b, e), length) << total << " bytes, chunks " << b << ".." << e;
          EXPECT_EQ(sizes.length(Transfer{0, 1, b, e, Op::copy}), length);
          EXPECT_EQ(sizes.range(b, e).offset, each * static_cast<std::uint64_t>(b));
          EXPECT_EQ(chunk_bytes(total, chunks, b, e).length, length);
          EXPECT_EQ(chunk_bytes(total, chunks, b, e).offset, each * static_cast<std::uint64_t>(b));
          if (e < chunks) length += e == chunks - 1 ? total - each * (chunks - 1) : each;
        }
      }
    }
  }
}

}  // namespace
}  // namespace ssim::alg

namespace ssim::alg {
namespace {

// Issue 15: 2^24 ranks x 2^22 chunks (both within the schedule reader's limits) made
// ranks * chunks * words wrap to 0 and the first write crash. The product is checked first
// (now 8 bytes per rank and chunk, the compact state's cells).
TEST(Verifier, StateTooLargeToHoldIsAResourceErrorNotAWrap) {
  EXPECT_DOUBLE_EQ(symbolic_state_bytes(16777216, 4194304), 16777216.0 * 4194304.0 * 8.0);
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
