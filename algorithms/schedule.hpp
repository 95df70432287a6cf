// The schedule IR: the contract between the algorithm layer and every executor
// (see docs/DESIGN.md, "The schedule IR").
//
// A Schedule is a collective over `ranks` ranks whose buffers are cut into `chunks` equal
// chunks (the last absorbs the remainder). It is a list of rounds; a round is a list of
// transfers {src, dst, chunks [begin, end), op}. Every transfer of a round reads the
// sender's data as it was at the start of the round; receivers apply what they received
// (reduce: dst += src, copy: dst = src) after the round.
//
//   Schedule s = Schedule::make(Collective::allreduce, "ring", /*ranks=*/4, /*chunks=*/4);
//   Round& r = s.add_round("reduce-scatter");
//   r.add(0, 1, 0, 1, Op::reduce);
//
// Nothing here knows about time, links or GPUs.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace ssim::alg {

enum class Op : std::uint8_t { reduce, copy };
enum class Collective : std::uint8_t { allreduce, reduce_scatter, allgather };

std::string_view to_string(Op op);
std::string_view to_string(Collective c);
// Throw ssim::InputError on unknown names.
Op parse_op(std::string_view name);
Collective parse_collective(std::string_view name);

struct Transfer {
  std::int32_t src = 0;
  std::int32_t dst = 0;
  std::int32_t chunk_begin = 0;  // inclusive
  std::int32_t chunk_end = 0;    // exclusive
  Op op = Op::copy;

  std::int32_t chunk_count() const { return chunk_end - chunk_begin; }
  bool operator==(const Transfer&) const = default;
};

// An in-network reduction (NVLS, SHARP): the switch that all `members` and `receivers` are
// attached to sums chunks [chunk_begin, chunk_end) of every member, as each held them at the
// start of the round, and delivers the sum to every receiver (multicast), which replaces its
// chunks with it after the round (like a copy). With one member it is a multicast of that
// member's chunks. The switch is named only through the ranks: which switch, and whether it
// can reduce, is the simulator's question (its topology), not the schedule's.
struct SwitchReduce {
  std::vector<int> members;    // contributors, distinct
  std::vector<int> receivers;  // distinct; may include members
  std::int32_t chunk_begin = 0;
  std::int32_t chunk_end = 0;

  std::int32_t chunk_count() const { return chunk_end - chunk_begin; }
  bool operator==(const SwitchReduce&) const = default;
};

struct Round {
  std::string phase;  // optional label: "reduce-scatter", "straggler-exchange", "broadcast", ...
  std::vector<Transfer> transfers;
  std::vector<SwitchReduce> switch_reduces;  // in-network reductions (empty for most schedules)

  void add(int src, int dst, int chunk_begin, int chunk_end, Op op) {
    transfers.push_back(Transfer{src, dst, chunk_begin, chunk_end, op});
  }
  bool operator==(const Round&) const = default;
};

struct Schedule {
  Collective collective = Collective::allreduce;
  std::string algorithm;
  int ranks = 0;
  int chunks = 0;
  std::optional<int> straggler;                // the rank the schedule was built for, if any
  // Schedules built for several late ranks (stragglar stragglers=k, k >= 2): those ranks in
  // the arrival order the schedule expects, the last one == straggler; empty otherwise.
  std::vector<int> late;
  std::map<std::string, std::string> options;  // generator options, as given (metadata)
  std::vector<Round> rounds;

  static Schedule make(Collective collective, std::string algorithm, int ranks, int chunks);

  Round& add_round(std::string phase = {});
  std::size_t transfer_count() const;
  // Whether any round has an in-network reduction (executors that cannot run one refuse).
  bool has_switch_reduces() const;
  // Appends `other`'s rounds (same ranks and chunks required).
  void append(const Schedule& other);
  // Renames ranks: rank r becomes perm[r] everywhere (transfers, straggler and late ranks).
  // perm must be a permutation of 0..ranks-1.
  void relabel(const std::vector<int>& perm);

  bool operator==(const Schedule&) const = default;
};

// Byte range of chunks [begin, end) of a `total_bytes` buffer cut into `chunks` chunks:
// every chunk has floor(total/chunks) bytes and the last one absorbs the remainder.
struct ByteRange {
  std::uint64_t offset = 0;
  std::uint64_t length = 0;
};
ByteRange chunk_bytes(std::uint64_t total_bytes, int chunks, int chunk_begin, int chunk_end);

// The node size a schedule was built for (rank = node * G + local): its gpus_per_node option
// read as an integer (it may be < 1), 0 when absent or not an integer.
int schedule_gpus_per_node(const Schedule& schedule);

}  // namespace ssim::alg
