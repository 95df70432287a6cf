// The schedule verifier: replays a schedule symbolically, tracking for every (rank, chunk)
// the set of ranks whose contribution it holds, and reports the first problem.
//
//   VerifyResult r = verify(schedule);
//   if (!r.ok()) std::cerr << r.error->to_string() << "\n";
//   else std::cout << format_summary(r.summary);
//
// Errors: out-of-range ranks or chunks, src == dst, empty chunk ranges, sending data the
// sender does not hold, double counting (a reduce whose two sides share a contribution),
// conflicting writes to one (rank, chunk) in a round, and a wrong end state:
//   allreduce      every rank holds every chunk with every contribution exactly once;
//   reduce_scatter chunk c is complete on its owner rank c * ranks / chunks;
//   allgather      starts with chunk c only on its owner (complete); ends complete everywhere.
// SymbolicState is public so tests can check invariants between rounds.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "algorithms/schedule.hpp"

namespace ssim::alg {

struct VerifyError {
  int round = -1;     // -1: not tied to a round (header or end state)
  int transfer = -1;  // index within the round, -1 when not tied to a transfer
  std::string message;
  std::string to_string() const;
};

struct ScheduleSummary {
  int ranks = 0;
  int chunks = 0;
  int rounds = 0;
  std::size_t transfers = 0;
  int max_sends_per_rank_round = 0;     // most transfers one rank sends in one round
  int max_receives_per_rank_round = 0;  // most transfers one rank receives in one round
  std::vector<std::int64_t> chunks_sent;      // per rank, over the whole schedule
  std::vector<std::int64_t> chunks_received;  // per rank
  std::vector<std::pair<std::string, int>> phases;  // consecutive phase labels and their round counts
};

struct VerifyResult {
  std::optional<VerifyError> error;
  ScheduleSummary summary;
  bool ok() const { return !error.has_value(); }
};

// The owner of chunk c for reduce_scatter / allgather: c * ranks / chunks.
int chunk_owner(int chunk, int ranks, int chunks);

// Bytes of the symbolic state for `ranks` and `chunks` (a bit per rank, chunk and contributor),
// as a double: large inputs do not wrap. SymbolicState throws ResourceError beyond
// kMaxSymbolicStateBytes; callers with a memory budget check this first.
double symbolic_state_bytes(int ranks, int chunks);
inline constexpr double kMaxSymbolicStateBytes = 0x1p46;  // 64 TiB: no machine verifies more

class SymbolicState {
 public:
  SymbolicState(Collective collective, int ranks, int chunks);

  // Applies one round with the DESIGN.md semantics; returns the first problem, if any.
  std::optional<VerifyError> apply(const Round& round, int round_index);

  bool has(int rank, int chunk, int contributor) const;
  int count(int rank, int chunk) const;  // number of contributions held
  bool complete(int rank, int chunk) const { return count(rank, chunk) == ranks_; }
  // Ranks whose contribution is missing from (rank, chunk), ascending.
  std::vector<int> missing(int rank, int chunk) const;

  int ranks() const { return ranks_; }
  int chunks() const { return chunks_; }

 private:
  const std::uint64_t* set(int rank, int chunk) const {
    return bits_.data() + (static_cast<std::size_t>(rank) * chunks_ + chunk) * words_;
  }
  std::uint64_t* set(int rank, int chunk) {
    return bits_.data() + (static_cast<std::size_t>(rank) * chunks_ + chunk) * words_;
  }

  int ranks_;
  int chunks_;
  int words_;
  std::vector<std::uint64_t> bits_;
};

// Structural and semantic check of a whole schedule, plus its summary.
VerifyResult verify(const Schedule& schedule);

// Multi-line human-readable summary.
std::string format_summary(const ScheduleSummary& s);

}  // namespace ssim::alg
