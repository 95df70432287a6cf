// Internals of the CUDA/NCCL executor (executor.hpp), shared by executor.cpp and the three
// transports, one file each (transport_nccl.cpp, transport_direct.cpp,
// transport_single_gpu.cpp): the state of a device group and of a collective run, and
// TransportOps, the table of what differs between transports. Not part of the backend's API.
#pragma once

#include <cuda_runtime.h>
#include <nccl.h>

#include <algorithm>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <exception>
#include <optional>
#include <string>
#include <thread>
#include <type_traits>
#include <utility>
#include <vector>

#include "common/error.hpp"
#include "gpu_backend/cuda/check.hpp"
#include "gpu_backend/cuda/executor.hpp"
#include "gpu_backend/cuda/handles.hpp"
#include "gpu_backend/cuda/kernels.hpp"

namespace ssim::gpu {

using Clock = std::chrono::steady_clock;

// Apply-kernel blocks per SM: 8 blocks of 256 threads fill an SM's 2048 thread slots; 64 per
// SM (8 rounds of them) keep each block's share small, so blocks finish and free SM slots
// for the higher-priority stamp kernels of other ranks while the kernel still runs.
constexpr int kApplyBlocksPerSm = 64;
// The direct kernel's grid cap per SM: 8 resident blocks per SM times 8 rounds of them, so a
// block does one or a few tiles and finishes (launch_direct) while the grid still covers
// every SM.
constexpr int kDirectBlocksPerSm = 64;

// An iteration's stamps reduced over this process's ranks (CollectiveRun::Impl::run), then
// over every process (DeviceGroup::Impl::combine): each field of `max` by max, of `sum` by
// sum. A minimum travels as UINT64_MAX - value, so that a max gives it.
struct IterationTotals {
  struct Maxima {
    std::uint64_t finish = 0;             // the last finish
    std::uint64_t first_arrival_neg = 0;  // UINT64_MAX - the first arrival
    std::uint64_t last_arrival = 0;
    std::uint64_t straggler_delay = 0;    // its arrival - its start; 0 without a delay
    std::uint64_t longest_own = 0;        // own: a rank's finish - start
    std::uint64_t shortest_own_neg = 0;   // UINT64_MAX - the shortest own time
    std::uint64_t rank0_own = 0;
  } max;
  struct Sums {
    std::uint64_t wrong = 0;    // elements that differ from the exact result
    std::uint64_t checked = 0;  // elements compared
    std::uint64_t own = 0;      // the ranks' own times, summed
  } sum;
  static constexpr std::size_t kMaxima = sizeof(Maxima) / sizeof(std::uint64_t);
  static constexpr std::size_t kSums = sizeof(Sums) / sizeof(std::uint64_t);
};
static_assert(std::is_standard_layout_v<IterationTotals::Maxima> &&
              std::is_standard_layout_v<IterationTotals::Sums>);
// The group's sync buffer (one process per GPU): the maxima at 0, the sums at kSumsOffset.
constexpr std::size_t kSumsOffset = 64;
constexpr std::size_t kSyncBytes = 128;
static_assert(sizeof(IterationTotals::Maxima) <= kSumsOffset &&
              kSumsOffset + sizeof(IterationTotals::Sums) <= kSyncBytes);

struct LocalRank {
  int rank = 0;
  int device = 0;
  ncclComm_t comm = nullptr;  // null for the single-GPU transport
  cudaStream_t stream = nullptr;
  int sm_count = 0;
  int stamp_priority = 0;  // the device's greatest launch priority: stamps and the delay spin
};

// The split of Phase1::nccl_rs: per local rank its communicator (null for the straggler).
struct Split {
  std::vector<int> members;
  std::vector<ncclComm_t> comms;  // parallel to DeviceGroup::Impl::local
};

// What differs between the transports, as a table (NCCL keeps its transports in one array of
// such entries, src/transport.cc): one entry per Transport, each defined in its own file. The
// executor calls through its group's entry and compares no Transport values.
struct TransportOps {
  Transport kind = Transport::nccl;
  // Runs NCCL collectives: the `nccl` algorithm's ncclAllReduce and Phase1::nccl_rs.
  bool nccl_collectives = false;
  // Launch::graph captures one graph forked from rank 0's stream over every rank's stream;
  // false: one graph per rank stream (NCCL's grouped calls across the captured streams).
  bool one_graph = false;
  // Ranks that share one device share rank 0's start stamp (CollectiveRun::Impl::shared_start).
  bool shared_start = false;
  // After the common per-rank state exists: the transport's own (events, uploads); optional.
  void (CollectiveRun::Impl::*prepare)() = nullptr;
  // After rank i's arrival stamp, on its stream; optional.
  void (CollectiveRun::Impl::*arrived)(std::size_t i) = nullptr;
  // The collective after the arrivals, on every local rank's stream.
  void (CollectiveRun::Impl::*issue)() = nullptr;
  // The result CSV's device column: GPU name and transport.
  std::string (*describe)(const DeviceGroup::Impl& group) = nullptr;
};
extern const TransportOps kNcclTransport;       // transport_nccl.cpp
extern const TransportOps kDirectTransport;     // transport_direct.cpp
extern const TransportOps kSingleGpuTransport;  // transport_single_gpu.cpp

// InputError unless this machine has `needed` GPUs (`what` says for what).
void require_devices(int needed, const std::string& what);
// InputError unless ranks >= 1.
void require_ranks(int ranks);
std::string device_name(int device);

struct DeviceGroup::Impl {
  const TransportOps* ops = nullptr;  // the transport: transport_*.cpp
  int ranks = 0;
  bool one_process_per_gpu = false;
  bool broken = false;  // a watchdog timeout or an error mid-iteration: abort, not destroy
  std::string name;     // GPU name of the first local rank
  std::vector<LocalRank> local;
  std::vector<Split> splits;
  DeviceBuffer sync;  // one process per GPU: barrier and result reduction, kSyncBytes

  Impl() = default;
  Impl(const Impl&) = delete;
  Impl& operator=(const Impl&) = delete;
  ~Impl() {
    std::vector<ncclComm_t> comms;
    for (const Split& s : splits) {
      for (ncclComm_t c : s.comms) {
        if (c) comms.push_back(c);
      }
    }
    for (const LocalRank& l : local) {
      if (l.comm) comms.push_back(l.comm);
    }
    // While an exception unwinds, or after a timeout, operations may still be in flight (or a
    // peer gone): abort instead of the orderly finalize, which could wait for them.
    if (broken || std::uncaught_exceptions() > 0) {
      for (ncclComm_t c : comms) SSIM_NCCL_WARN(ncclCommAbort(c));
    } else {
      // Finalize in one group: every communicator flushes its work at once, none waits for a
      // peer that is still finalizing another.
      SSIM_NCCL_WARN(ncclGroupStart());
      for (ncclComm_t c : comms) SSIM_NCCL_WARN(ncclCommFinalize(c));
      SSIM_NCCL_WARN(ncclGroupEnd());
      for (ncclComm_t c : comms) SSIM_NCCL_WARN(ncclCommDestroy(c));
    }
    for (LocalRank& l : local) {
      if (l.stream) {
        SSIM_CUDA_WARN(cudaSetDevice(l.device));
        SSIM_CUDA_WARN(cudaStreamDestroy(l.stream));
      }
    }
  }

  void add_rank(int rank, int device, ncclComm_t comm) {
    local.push_back(LocalRank{rank, device, comm});
    init(local.back());
  }

  void init(LocalRank& l) {
    SSIM_CUDA(cudaSetDevice(l.device));
    SSIM_CUDA(cudaStreamCreateWithFlags(&l.stream, cudaStreamNonBlocking));
    SSIM_CUDA(cudaDeviceGetAttribute(&l.sm_count, cudaDevAttrMultiProcessorCount, l.device));
    int least = 0;
    SSIM_CUDA(cudaDeviceGetStreamPriorityRange(&least, &l.stamp_priority));
    if (name.empty()) name = device_name(l.device);
  }

  void synchronize_local() {
    for (const LocalRank& l : local) {
      SSIM_CUDA(cudaSetDevice(l.device));
      SSIM_CUDA(cudaStreamSynchronize(l.stream));
    }
  }

  // Waits for a cross-process NCCL call on the first local rank's stream by polling, so a gone
  // or stuck peer process ends in a WatchdogTimeout instead of a hang.
  void wait_cross_process(Clock::time_point deadline, const char* what) {
    const LocalRank& l = local.front();
    while (true) {
      const cudaError_t e = cudaStreamQuery(l.stream);
      if (e == cudaSuccess) return;
      if (e != cudaErrorNotReady) SSIM_CUDA(e);
      ncclResult_t async = ncclSuccess;
      SSIM_NCCL(ncclCommGetAsyncError(l.comm, &async));
      if (async != ncclSuccess && async != ncclInProgress) {
        broken = true;
        throw DeviceError(std::string(what) +
                          ": NCCL reports an asynchronous error: " + ncclGetErrorString(async));
      }
      if (Clock::now() >= deadline) {
        broken = true;
        throw WatchdogTimeout("watchdog: rank " + std::to_string(l.rank) + ": " + what +
                              " did not complete within --timeout: another process is gone "
                              "or stuck");
      }
      std::this_thread::sleep_for(std::chrono::microseconds(50));
    }
  }

  // Every rank of every process has finished what it issued before.
  void barrier(Clock::time_point deadline) {
    synchronize_local();
    if (!one_process_per_gpu) return;
    const LocalRank& l = local.front();
    SSIM_CUDA(cudaSetDevice(l.device));
    SSIM_NCCL(ncclAllReduce(sync.get(), sync.get(), 1, ncclFloat64, ncclSum, l.comm, l.stream));
    wait_cross_process(deadline, "the barrier before the iteration");
  }

  // Every field of `t.max` by max and of `t.sum` by sum, over all processes (in place).
  void combine(IterationTotals& t, Clock::time_point deadline) {
    if (!one_process_per_gpu) return;
    const LocalRank& l = local.front();
    std::byte* d = sync.get();
    SSIM_CUDA(cudaSetDevice(l.device));
    SSIM_CUDA(cudaMemcpyAsync(d, &t.max, sizeof t.max, cudaMemcpyHostToDevice, l.stream));
    SSIM_CUDA(cudaMemcpyAsync(d + kSumsOffset, &t.sum, sizeof t.sum, cudaMemcpyHostToDevice,
                              l.stream));
    {
      NcclGroup group;
      SSIM_NCCL(ncclAllReduce(d, d, IterationTotals::kMaxima, ncclUint64, ncclMax, l.comm,
                              l.stream));
      SSIM_NCCL(ncclAllReduce(d + kSumsOffset, d + kSumsOffset, IterationTotals::kSums, ncclUint64,
                              ncclSum, l.comm, l.stream));
      group.end();
    }
    SSIM_CUDA(cudaMemcpyAsync(&t.max, d, sizeof t.max, cudaMemcpyDeviceToHost, l.stream));
    SSIM_CUDA(cudaMemcpyAsync(&t.sum, d + kSumsOffset, sizeof t.sum, cudaMemcpyDeviceToHost,
                              l.stream));
    wait_cross_process(deadline, "combining the results of the processes");
  }

  // The split communicator of `members` (Phase1::nccl_rs), made on first use. Collective over
  // the parent communicator: every rank calls it, the straggler with NCCL_SPLIT_NOCOLOR (it
  // gets no communicator); one thread driving several ranks groups the calls.
  const Split& split(const std::vector<int>& members) {
    for (const Split& s : splits) {
      if (s.members == members) return s;
    }
    Split s;
    s.members = members;
    s.comms.assign(local.size(), nullptr);
    {
      NcclGroup group;
      for (std::size_t i = 0; i < local.size(); ++i) {
        auto it = std::find(members.begin(), members.end(), local[i].rank);
        const int key = it == members.end() ? -1 : static_cast<int>(it - members.begin());
        SSIM_NCCL(ncclCommSplit(local[i].comm, key >= 0 ? 0 : NCCL_SPLIT_NOCOLOR, std::max(key, 0),
                                &s.comms[i], nullptr));
      }
      group.end();
    }
    splits.push_back(std::move(s));
    return splits.back();
  }
};

// Stamp slots per rank: start, arrival, one per round, finish.
constexpr std::size_t kStartSlot = 0;
constexpr std::size_t kArrivalSlot = 1;
constexpr std::size_t kFirstRoundSlot = 2;

struct RankState {
  int rank = 0;
  DeviceBuffer data;
  DeviceBuffer scratch;
  DeviceBuffer items;
  DeviceBuffer wrong;            // one unsigned long long: the device check's count
  std::vector<std::byte> input;  // host fill for collectives other than AllReduce
  MappedStamps stamps;
  Event done;                           // recorded after the body, outside any graph
  Event started;                        // one device: after the shared start stamp (rank 0)
  Event ready, copied, fork, join;      // single-GPU transport ordering and graph fork/join
  DeviceBuffer direct_items;            // the direct transport's DirectItems (parallel to items)
  std::vector<DirectItem> direct_host;  // their host copy, alive until the upload is done
  // The direct transport, per round: recorded after the rank's kernel of that round, and
  // after its staged copies (only where it has them); `arrived` after its arrival stamp.
  std::vector<Event> after_round, staged_round;
  Event arrived;
  ncclComm_t split = nullptr;  // Phase1::nccl_rs, non-stragglers (owned by the group)
  int key = -1;                // the chunk this member owns after phase 1
  Graph graph;  // Launch::graph: the captured body (rank 0 only where one graph serves all)
  GraphExec exec;
};

struct CollectiveRun::Impl {
  DeviceGroup::Impl& group;
  PreparedCollective c;
  IterationSettings settings;
  std::vector<RankState> states;  // parallel to group.local
  bool device_check = false;      // AllReduce: fill and check on the device
  std::uint64_t modulus = 0;      // the inputs' value_modulus(dtype, ranks)
  ExpectedSums expected{};
  std::optional<std::chrono::steady_clock::time_point> deadline;

  Impl(DeviceGroup::Impl& g, PreparedCollective collective, IterationSettings s)
      : group(g), c(std::move(collective)), settings(s) {}
  Impl(const Impl&) = delete;
  Impl& operator=(const Impl&) = delete;
  const DeviceRankPlan& device_plan(std::size_t i) const {
    return c.device[static_cast<std::size_t>(states[i].rank)];
  }
  const lowering::RankPlan& rank_plan(std::size_t i) const {
    return c.plan.rank_plans[static_cast<std::size_t>(states[i].rank)];
  }
  std::size_t finish_slot() const {
    return kFirstRoundSlot + static_cast<std::size_t>(c.plan.rounds);
  }
  int max_blocks(std::size_t i) const { return kApplyBlocksPerSm * group.local[i].sm_count; }
  int direct_max_blocks(std::size_t i) const {
    return kDirectBlocksPerSm * group.local[i].sm_count;
  }

  void setup();
  void stamp(std::size_t i, std::size_t slot);
  // Every rank on one GPU (single-gpu, direct on one device): the ranks are all ready when an
  // iteration starts, so one stamp on rank 0's stream is every rank's start, and every rank
  // but the straggler arrives then. Stamped per rank instead, a rank's stamp kernel queues
  // behind the other ranks' kernels (milliseconds at 1 GiB on an H200): the queue, not the
  // arrival. The straggler still spins until that start + its delay and stamps its arrival.
  bool shared_start() const {
    if (!group.ops->shared_start || group.local.empty()) return false;
    for (const LocalRank& l : group.local) {
      if (l.device != group.local[0].device) return false;
    }
    return true;
  }
  bool is_straggler(std::size_t i) const {
    return settings.delay.value > 0 && states[i].rank == settings.straggler;
  }
  const MappedStamps& start_stamps(std::size_t i) const {
    return shared_start() ? states[0].stamps : states[i].stamps;
  }
  std::uint64_t start_of(std::size_t i) const { return start_stamps(i).read(kStartSlot); }
  std::uint64_t arrival_of(std::size_t i) const {
    return shared_start() && !is_straggler(i) ? start_of(i) : states[i].stamps.read(kArrivalSlot);
  }
  void apply(std::size_t i, const DeviceStep& step);
  void issue_body();
  // The transports' own parts (TransportOps), defined in transport_<name>.cpp.
  void issue_nccl();
  void issue_nccl_rounds();
  void issue_single_gpu_rounds();
  void prepare_direct();
  void upload_direct_items();
  void direct_arrived(std::size_t i);
  void issue_direct_rounds();
  void capture();
  void wait_for_completion();
  [[noreturn]] void timeout();
  IterationResult run(bool check);
};

}  // namespace ssim::gpu
