// Lowering of a schedule to a point-to-point plan: what each rank issues, round by round,
// on real buffers of a given size and element type. The executors (gpu_backend/: host, MPI,
// CUDA/NCCL) run a Plan and never look at the schedule again; `stragglesim lower` prints one.
// This layer depends on algorithms/ only: no time, no GPUs.
//
//   const alg::Schedule s = alg::generate("ring", 4, alg::Options{});
//   const Plan plan = lower(s, 1 << 20, DType::float32);   // throws ssim::InputError on a bad size
//   for (const Step& step : plan.rank_plans[r].steps) {
//     // ncclGroupStart();
//     // for (send : step.sends) ncclSend(data + send.offset, send.count, ..., send.peer, ...);
//     // for (recv : step.recvs) ncclRecv(scratch + recv.offset, recv.count, ..., recv.peer, ...);
//     // ncclGroupEnd();  then step.applies in order: data[offset..] (+)= scratch[scratch_offset..]
//   }
//   std::cout << format_summary(plan, summarize(plan));
//
// One Step per round in which the rank takes part. Sends read the rank's data buffer as it
// was at the start of the round (nothing is applied before the group ends); receives always
// land in a per-rank scratch buffer and are applied to the data buffer after the group, in
// the order of the round's transfers. This is the IR's round semantics (DESIGN.md), and it
// makes a two-way exchange within one round well defined.
//
// Padding rule (aligned chunks). A buffer of `bytes` bytes holds count = bytes / dtype_size
// elements; the schedule cuts it into `chunks` chunks of equal size. With one chunk that is
// the buffer, chunk_count = count. With more, chunk_count = ceil(count / chunks) rounded up to
// a multiple of align / dtype_size elements, so every chunk is a multiple of `align` bytes
// (default kDefaultAlign = 128 B) and every chunk boundary lies on a multiple of `align`.
// Sends read whole chunk ranges and receives land in scratch at sums of whole chunk ranges,
// each rounded up to a multiple of `align` (which changes only a one-chunk schedule's layout),
// so every send, receive and apply of every schedule starts at a multiple of `align` bytes
// from its buffer's start (cudaMalloc returns 256-byte aligned buffers). The element count is
// padded up to chunk_count * chunks; executors allocate padded_bytes(bytes, chunks, dtype)
// per rank; the padding elements travel and are reduced like the others but are not checked.
// The padding is less than chunks * (align + dtype_size) bytes: for 64 chunks at 128 B under
// 8.5 KiB, nothing at large sizes, a lot at tiny ones (4 KiB over 64 chunks travels as 8 KiB).
// align = dtype_size gives the tight rule (pad by less than one element per chunk). Every
// chunk is the same size, so every message of a given chunk width has the same length (the
// IR's byte rule instead lets the last chunk absorb the remainder). Rejected with ssim::InputError: a byte size that is not a multiple
// of the element size, fewer elements than chunks, an alignment that is not a power of two
// at least the element size.
//
// Matching: lower() checks (SSIM_CHECK) that within every round each send from a to b has
// exactly one receive on b from a with the same count, in the same order among the sends
// from a to b. With NCCL grouped point-to-point this is what makes a plan deadlock-free.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "algorithms/schedule.hpp"

namespace ssim::lowering {

// Element types of the buffers; the reduction is always a sum. float16 is IEEE binary16
// (CUDA's half), bfloat16 the upper half of a float32.
enum class DType : std::uint8_t { float32, float64, int32, int64, float16, bfloat16 };

// "float32", "float64", "int32", "int64", "float16", "bfloat16".
std::string_view to_string(DType dtype);
// Those names, and as nccl-tests and CUDA spell them: "float", "double", "int", "half",
// "fp16", "bf16"; anything else is an InputError listing them.
DType parse_dtype(std::string_view name);
std::size_t dtype_size(DType dtype);

// Chunk boundaries, sends and receives start on multiples of this many bytes by default.
inline constexpr std::uint64_t kDefaultAlign = 128;
// The largest alignment: a page. Every chunk is padded to a multiple of it, so a larger one
// would pad a small buffer to gigabytes or terabytes per rank.
inline constexpr std::uint64_t kMaxAlign = 4096;
// InputError unless `align` is a power of two and at least dtype_size(dtype).
void check_align(std::uint64_t align, DType dtype);

// The element layout of one rank's buffer under the padding rule above.
struct BufferLayout {
  DType dtype = DType::float32;
  int chunks = 1;
  std::uint64_t align = kDefaultAlign;  // bytes; chunk boundaries are multiples of it
  std::uint64_t bytes = 0;              // as asked for
  std::uint64_t count = 0;              // real elements: bytes / dtype_size
  std::uint64_t chunk_count = 0;        // elements per chunk: ceil(count / chunks)

  std::uint64_t padded_count() const { return chunk_count * static_cast<std::uint64_t>(chunks); }
  std::uint64_t padded_bytes() const { return padded_count() * dtype_size(dtype); }
  std::uint64_t chunk_offset_bytes(int chunk) const {
    return static_cast<std::uint64_t>(chunk) * chunk_count * dtype_size(dtype);
  }
};

// Throws InputError when bytes is not a multiple of the element size or holds fewer
// elements than chunks (or chunks < 1), or on a bad alignment (check_align).
BufferLayout make_layout(std::uint64_t bytes, int chunks, DType dtype,
                         std::uint64_t align = kDefaultAlign);
// The per-rank buffer size executors allocate: make_layout(...).padded_bytes().
std::uint64_t padded_bytes(std::uint64_t bytes, int chunks, DType dtype,
                           std::uint64_t align = kDefaultAlign);

// One ncclSend or ncclRecv: `offset` in bytes into the data buffer (send) or the scratch
// buffer (receive), `count` in elements.
struct P2P {
  int peer = 0;
  std::uint64_t offset = 0;
  std::uint64_t count = 0;
  bool operator==(const P2P&) const = default;
};

// Applied after the group: reduce data[offset..] += scratch[scratch_offset..], or
// copy data[offset..] = scratch[scratch_offset..]; offsets in bytes, count in elements.
struct Apply {
  alg::Op op = alg::Op::copy;
  std::uint64_t offset = 0;
  std::uint64_t scratch_offset = 0;
  std::uint64_t count = 0;
  bool operator==(const Apply&) const = default;
};

// A rank's part of one round: one group of sends and receives, then the applies in order.
struct Step {
  int round = 0;  // index of the schedule round
  std::vector<P2P> sends;
  std::vector<P2P> recvs;
  std::vector<Apply> applies;
  std::uint64_t scratch_bytes = 0;  // scratch this step's receives use
  bool operator==(const Step&) const = default;
};

struct RankPlan {
  std::vector<Step> steps;
  std::uint64_t scratch_bytes = 0;  // max over the steps
};

struct Plan {
  alg::Collective collective = alg::Collective::allreduce;
  std::string algorithm;
  int ranks = 0;
  int rounds = 0;  // rounds of the schedule, including any without transfers
  BufferLayout layout;
  std::vector<RankPlan> rank_plans;  // one per rank
};

// Lowers `schedule` for per-rank buffers of `bytes` bytes of `dtype`, chunk boundaries on
// multiples of `align` bytes (padding rule above). The schedule is not
// verified (a wrong schedule lowers to a plan that computes the wrong numbers, which is what
// the executors' checks are for), but its structure is: ranks, chunk ranges and src != dst,
// else InputError naming the round and transfer.
Plan lower(const alg::Schedule& schedule, std::uint64_t bytes, DType dtype,
           std::uint64_t align = kDefaultAlign);

// The matching check described above; lower() runs it. Throws InternalError naming the
// round and the pair of ranks on the first mismatch.
void check_matching(const Plan& plan);

struct RankSummary {
  int groups = 0;  // steps, i.e. ncclGroupStart/End pairs
  int sends = 0;
  int recvs = 0;
  std::uint64_t bytes_sent = 0;
  std::uint64_t bytes_received = 0;
  std::uint64_t scratch_bytes = 0;
};

struct PlanSummary {
  std::vector<RankSummary> ranks;
  std::uint64_t total_bytes_sent = 0;
  std::uint64_t max_scratch_bytes = 0;
  int max_groups = 0;
};

PlanSummary summarize(const Plan& plan);
// A header line (algorithm, ranks, sizes, padding) and one line per rank.
std::string format_summary(const Plan& plan, const PlanSummary& summary);

// How many sends, receives (their scratch offset) and applies (data and scratch offset) of a
// plan start on a multiple of `boundary` bytes; `stragglesim lower` prints it.
struct AlignmentCount {
  std::uint64_t sends = 0, sends_aligned = 0;
  std::uint64_t recvs = 0, recvs_aligned = 0;
  std::uint64_t applies = 0, applies_aligned = 0;
};
AlignmentCount count_aligned(const Plan& plan, std::uint64_t boundary);

}  // namespace ssim::lowering
