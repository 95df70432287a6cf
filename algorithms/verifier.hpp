// The schedule verifier: replays a schedule symbolically, tracking for every (rank, chunk)
// the set of ranks whose contribution it holds (exactly, in compact form: see SymbolicState),
// and reports the first problem.
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
  std::size_t switch_reduces = 0;       // in-network reductions (Round::switch_reduces)
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

// Bytes of the symbolic state for `ranks` and `chunks` (8 bytes per rank and chunk; pooled sets
// of non-run contributor sets come on top), as a double: large inputs do not wrap.
// SymbolicState throws ResourceError beyond kMaxSymbolicStateBytes; callers with a memory budget
// check this first.
double symbolic_state_bytes(int ranks, int chunks);
inline constexpr double kMaxSymbolicStateBytes = 0x1p46;  // 64 TiB: no machine verifies more

// The contribution sets of every (rank, chunk), kept compact: a set that is one cyclic run of
// ranks (k, k+1, ..., k+len-1 mod ranks: what ring, halving-doubling, direct and StragglAR build)
// is stored in the cell itself; any other set is an immutable sorted list of rank intervals in a
// reference-counted pool, shared by every cell that holds it (a copy shares, a reduce makes a new
// one). Memory is 8 bytes per (rank, chunk) plus the distinct non-run sets alive (trees: about
// log2(ranks) intervals each). Checks are exact: no fingerprints, so no false accept.
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
  // Distinct pooled (non-run) sets alive now: a measure of the state's size beyond 8 B per cell.
  std::size_t pooled_sets() const { return pool_.size() - free_.size(); }

  // A half-open interval of ranks [lo, hi).
  struct Interval {
    std::int32_t lo, hi;
  };

 private:
  // A cell: bit 63 clear = a cyclic run, start in bits 32..62, length in bits 0..31 (0 = empty);
  // bit 63 set = index into pool_.
  using Cell = std::uint64_t;
  static constexpr Cell kPooled = Cell{1} << 63;
  struct PoolSet {
    std::vector<Interval> intervals;  // sorted, disjoint, non-adjacent
    std::int64_t count = 0;
    std::uint32_t refs = 0;
  };

  Cell& cell(int rank, int chunk) { return cells_[static_cast<std::size_t>(rank) * chunks_ + chunk]; }
  Cell cell(int rank, int chunk) const { return cells_[static_cast<std::size_t>(rank) * chunks_ + chunk]; }
  Cell run(std::int64_t start, std::int64_t length) const;
  // The set of a cell as sorted linear intervals (a wrapping run gives two).
  void intervals(Cell c, std::vector<Interval>& out) const;
  std::int64_t size_of(Cell c) const;
  // A cell for the set `iv` (sorted, disjoint): a run when it is one cyclically, else pooled.
  Cell make(std::vector<Interval>& iv);
  void retain(Cell c);
  void release(Cell c);

  struct PendingWrite {
    static constexpr std::size_t kNoSum = ~std::size_t{0};
    int dst;
    int chunk;
    int src;       // -1 for the write of an in-network reduction
    int transfer;  // index in the round, or -1 - k for in-network reduction k
    Op op;
    std::size_t sum = kNoSum;  // an in-network reduction's result: index into Scratch::sums
  };
  // Buffers reused from round to round.
  struct Scratch {
    std::vector<PendingWrite> writes;
    std::vector<std::pair<std::size_t, Cell>> results;
    std::vector<Interval> acc, src, merged;
    std::vector<Cell> sums;  // the round's in-network sums, one reference each
  };

  int ranks_;
  int chunks_;
  Scratch scratch_;
  std::vector<Cell> cells_;
  std::vector<PoolSet> pool_;
  std::vector<std::uint32_t> free_;
};

// Structural and semantic check of a whole schedule, plus its summary.
VerifyResult verify(const Schedule& schedule);

// The same check fed one round at a time (a streamed schedule: registry.hpp's generate_rounds),
// holding the symbolic state and the per-rank counts but no rounds:
//   RoundVerifier v(header);                         // a Schedule whose rounds are ignored
//   while (const Round* r = stream.next()) if (!v.add(*r)) break;
//   VerifyResult result = v.finish();                // the first error, or the end-state check
class RoundVerifier {
 public:
  explicit RoundVerifier(const Schedule& header);
  // False once an error was found (the rounds after it are ignored).
  bool add(const Round& round);
  VerifyResult finish();

 private:
  Collective collective_;
  VerifyResult result_;
  std::optional<SymbolicState> state_;
  std::vector<int> sends_, receives_;
};

// Multi-line human-readable summary.
std::string format_summary(const ScheduleSummary& s);

}  // namespace ssim::alg
