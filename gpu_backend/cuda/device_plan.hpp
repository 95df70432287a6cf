// Host-side preparation of a collective for the CUDA/NCCL executor: the schedule, its Plan
// (plan.hpp), and per rank the apply items the kernel reads. No CUDA here, so all of it is
// tested on machines without a GPU.
//
//   CollectiveSpec spec{"stragglar", 8, opts, 64 << 20, DType::float32, Phase1::nccl_rs};
//   const PreparedCollective c = prepare_collective(spec);   // InputError on bad input
//   for (const DeviceStep& step : c.device[r].steps)
//     for (const ApplyWave& w : step.waves)   // one kernel launch per wave, usually one
//       launch_apply(..., c.device[r].items.data() + w.first, w.count, w.max_count, ...);
//
// Waves. The kernel applies a launch's items in parallel, so they must write disjoint data
// ranges. A Step's applies are split, in order, into waves: an item joins the wave after the
// last wave holding an item whose data range overlaps its own. Items that do not overlap
// commute, so this keeps the order the IR defines for every element; a step without
// overlapping applies (every schedule in the registry today) is one wave, one launch.
//
// Phase 1 as ncclReduceScatter (Phase1::nccl_rs). Accepted only when the schedule names a
// straggler and its rounds labelled "reduce-scatter" are its first rounds and are exactly a
// ring reduce-scatter (generators.hpp, append_ring_reduce_scatter) among the n-1
// non-stragglers, in some ring order, over chunks 0..n-2. The ring order gives each member
// the chunk it ends up owning; that is its key in the split communicator, so ncclReduceScatter
// (in place: recvbuff = sendbuff + key * chunk) leaves every member holding the same chunk the
// schedule would. The ring also leaves partial sums in the chunks a member does not own, and
// NCCL leaves something else there; so the rest of the schedule must not read those chunks
// before overwriting them with a copy, nor leave them in place at the end. Anything else is
// an InputError saying which condition failed.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "algorithms/registry.hpp"
#include "algorithms/schedule.hpp"
#include "gpu_backend/cuda/apply_item.hpp"
#include "lowering/plan.hpp"

namespace ssim::gpu {

// The algorithm name that runs NCCL's own ncclAllReduce instead of a schedule.
inline constexpr std::string_view kNcclAlgorithm = "nccl";

enum class Phase1 : std::uint8_t { schedule, nccl_rs };
std::string_view to_string(Phase1 phase1);
// "schedule" or "nccl-rs"; anything else is an InputError listing them.
Phase1 parse_phase1(std::string_view name);

// nccl: NCCL point-to-point between GPUs, one rank per GPU. single_gpu: every rank on one
// GPU with its own buffers, sends and receives become device-to-device copies into scratch
// and the apply kernel applies them; the same kernels run, so kernels and reduce rates can be
// checked on a machine with one GPU. direct: every rank in this process, on one GPU or on
// GPUs with peer access to each other; a round is one fused kernel per rank that loads each
// received range straight from the sender's data buffer and reduces or copies it into place
// (DirectStep below).
enum class Transport : std::uint8_t { nccl, single_gpu, direct };
std::string_view to_string(Transport transport);
// "nccl", "single-gpu" or "direct"; anything else is an InputError listing them.
Transport parse_transport(std::string_view name);

// graph: each size's iteration (every rank's rounds: grouped point-to-point and apply kernels,
// the delay and the timer stamps) is captured once into CUDA graphs and launched per
// iteration, so the host's issue cost stays outside the timed region. eager: issued call by
// call every iteration (for comparison).
enum class Launch : std::uint8_t { graph, eager };
std::string_view to_string(Launch launch);
// "graph" or "eager"; anything else is an InputError listing them.
Launch parse_launch(std::string_view name);

// How the single-GPU transport copies a receive into the receiver's scratch: memcpy
// (cudaMemcpyAsync, device to device) or kernel (launch_copy: 16-byte vectors). The memcpy
// slows down by up to a third for chunks of an odd stride (8 MiB + 128 B) where the kernel
// does not (data/measured/unaligned/2026-11-26).
enum class CopyMode : std::uint8_t { memcpy, kernel };
std::string_view to_string(CopyMode mode);
// "memcpy" or "kernel"; anything else is an InputError listing them.
CopyMode parse_copy_mode(std::string_view name);

// The kernel's code for a DType (kernels.hpp).
int kernel_dtype(lowering::DType dtype);

// Items [first, first + count) of DeviceRankPlan::items; max_count sizes the grid.
struct ApplyWave {
  std::size_t first = 0;
  std::size_t count = 0;
  std::uint64_t max_count = 0;
  bool operator==(const ApplyWave&) const = default;
};

// Where the direct transport's kernel reads an item (parallel to DeviceRankPlan::items): the
// sender's data buffer at `offset` bytes, or, when `staged`, this rank's scratch at `offset`.
struct DirectSource {
  int rank = 0;  // the sender
  bool staged = false;
  std::uint64_t offset = 0;
  bool operator==(const DirectSource&) const = default;
};

// A receive the direct transport copies into the receiver's scratch before the round's
// kernel: the sender writes, in the same round, a range that overlaps what it sends (a
// same-round conflict), so reading its data during the round would race with that write.
struct StagedCopy {
  int rank = 0;                      // the sender
  std::uint64_t source_offset = 0;   // bytes into the sender's data buffer
  std::uint64_t scratch_offset = 0;  // bytes into this rank's scratch
  std::uint64_t bytes = 0;
  bool operator==(const StagedCopy&) const = default;
};

struct DeviceStep {
  int round = 0;
  std::vector<ApplyWave> waves;
  // For each receive of the step, the byte offset in the sender's data buffer of the
  // matching send (the i-th send from a to b in a round matches the i-th receive on b from
  // a): what the single-GPU transport copies from.
  std::vector<std::uint64_t> recv_source_offsets;
  // The direct transport (the synchronization rules below):
  std::vector<int> senders;        // ranks this step reads from (directly or staged), increasing
  std::vector<StagedCopy> staged;  // same-round conflicts: copied into scratch first
  std::vector<int> stagers;        // ranks that stage from this rank in this round, increasing
};

struct DeviceRankPlan {
  std::vector<ApplyItem> items;       // every step's items, step by step, wave by wave
  std::vector<DirectSource> sources;  // parallel to items: the direct transport's sources
  std::vector<DeviceStep> steps;      // parallel to RankPlan::steps
  std::vector<int> step_at_round;     // plan.rounds entries: index into steps, or -1
};

// The direct transport's synchronization, from these plans (the executor issues it as event
// waits, which become graph dependencies when captured):
//   RAW  the round-k kernel (and staged copies) of rank r waits for the last kernel before
//        round k of every rank in DeviceStep::senders, or for that rank's arrival (the end of
//        its delay) when it has run none yet;
//   WAR  a rank's next kernel after round k waits for the round-k kernels of every rank that
//        read from it in round k (they list it in senders);
//   same round  a receive whose source range overlaps a range the sender writes in the same
//        round is staged (DeviceStep::staged) and the sender's round-k kernel waits for that
//        copy; every other read of the round runs concurrently with the sender's kernel,
//        which writes only ranges no receiver reads.
// Same-round conflicts of a plan: (round, sender, receiver) per staged copy, for tests and
// `stragglesim-gpu` to report.
struct SameRoundConflict {
  int round = 0;
  int sender = 0;
  int receiver = 0;
  bool operator==(const SameRoundConflict&) const = default;
};
std::vector<SameRoundConflict> same_round_conflicts(const std::vector<DeviceRankPlan>& plans);

// InternalError when an offset is not a whole number of elements.
std::vector<DeviceRankPlan> build_device_plans(const lowering::Plan& plan);

struct RingReduceScatter {
  std::vector<int> members;  // members[i] ends up owning chunk i: its key in the split comm
  int rounds = 0;            // the schedule's first `rounds` rounds
};

RingReduceScatter find_phase1_ring_reduce_scatter(const alg::Schedule& schedule);

struct CollectiveSpec {
  std::string algorithm;  // a registry name or kNcclAlgorithm
  int ranks = 0;
  alg::Options options;  // the generator's options
  std::uint64_t bytes = 0;
  lowering::DType dtype = lowering::DType::float32;
  Phase1 phase1 = Phase1::schedule;
};

struct PreparedCollective {
  std::string label;  // the result CSV's algorithm column: "ring", "nccl", "stragglar+nccl-rs"
  bool nccl_allreduce = false;
  // The lowered schedule; for kNcclAlgorithm a plan of one chunk and no steps, which gives
  // the buffer layout and the check's expected values.
  lowering::Plan plan;
  std::vector<DeviceRankPlan> device;
  std::optional<RingReduceScatter> phase1;  // set for Phase1::nccl_rs
};

// Generates, lowers and prepares; every InputError a run can hit on the host side (unknown
// algorithm, unsupported ranks, bad options, a size too small for the chunks, a schedule
// that nccl-rs cannot replace) comes from here, before any device is touched.
PreparedCollective prepare_collective(const CollectiveSpec& spec);

}  // namespace ssim::gpu
