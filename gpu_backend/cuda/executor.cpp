#include "gpu_backend/cuda/executor.hpp"

#include <cuda_runtime.h>
#include <nccl.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <exception>
#include <numeric>
#include <thread>
#include <utility>

#include "common/error.hpp"
#include "gpu_backend/cuda/check.hpp"
#include "gpu_backend/cuda/kernels.hpp"

namespace ssim::gpu {

namespace {

ncclDataType_t nccl_type(lowering::DType dtype) {
  switch (dtype) {
    case lowering::DType::float32:
      return ncclFloat32;
    case lowering::DType::float64:
      return ncclFloat64;
    case lowering::DType::int32:
      return ncclInt32;
    case lowering::DType::int64:
      return ncclInt64;
    case lowering::DType::float16:
      return ncclFloat16;
    case lowering::DType::bfloat16:
      return ncclBfloat16;
  }
  SSIM_CHECK(false, "unknown dtype");
  return ncclFloat32;
}

using Clock = std::chrono::steady_clock;

// An iteration's results reduced over the processes (one process per GPU): kMaxima values
// by max, then kSums by sum, in the group's sync buffer. The maxima: max finish, UINT64_MAX -
// min arrival, max arrival, the straggler's measured delay, max own time, UINT64_MAX - min own
// time, rank 0's own time; the sums: wrong, checked, sum of own times (own: finish - start).
constexpr int kMaxima = 7;
constexpr int kSums = 3;
constexpr std::size_t kSumsOffset = 64;
constexpr std::size_t kSyncBytes = 128;
static_assert(kMaxima * sizeof(std::uint64_t) <= kSumsOffset &&
              kSumsOffset + kSums * sizeof(std::uint64_t) <= kSyncBytes);

// Apply-kernel blocks per SM: 8 blocks of 256 threads fill an SM's 2048 thread slots; 64 per
// SM (8 rounds of them) keep each block's share small, so blocks finish and free SM slots
// for the higher-priority stamp kernels of other ranks while the kernel still runs.
constexpr int kApplyBlocksPerSm = 64;
// The direct kernel's grid cap per SM: 8 resident blocks per SM times 8 rounds of them, so a
// block does one or a few tiles and finishes (launch_direct) while the grid still covers
// every SM.
constexpr int kDirectBlocksPerSm = 64;

std::optional<testing::DirectDependency> g_skip;

// Device memory on one GPU, freed on destruction.
class DeviceBuffer {
 public:
  DeviceBuffer() = default;
  DeviceBuffer(int device, std::size_t bytes) : device_(device) {
    SSIM_CUDA(cudaSetDevice(device));
    SSIM_CUDA(cudaMalloc(&ptr_, std::max<std::size_t>(bytes, 1)));
  }
  DeviceBuffer(DeviceBuffer&& o) noexcept
      : device_(o.device_), ptr_(std::exchange(o.ptr_, nullptr)) {}
  DeviceBuffer& operator=(DeviceBuffer&& o) noexcept {
    if (this != &o) {
      release();
      device_ = o.device_;
      ptr_ = std::exchange(o.ptr_, nullptr);
    }
    return *this;
  }
  ~DeviceBuffer() { release(); }
  std::byte* get() const { return static_cast<std::byte*>(ptr_); }

 private:
  void release() noexcept {
    if (!ptr_) return;
    SSIM_CUDA_WARN(cudaSetDevice(device_));
    SSIM_CUDA_WARN(cudaFree(ptr_));
    ptr_ = nullptr;
  }
  int device_ = 0;
  void* ptr_ = nullptr;
};

class Event {
 public:
  Event() = default;
  Event(int device, unsigned flags) : device_(device) {
    SSIM_CUDA(cudaSetDevice(device));
    SSIM_CUDA(cudaEventCreateWithFlags(&event_, flags));
  }
  Event(Event&& o) noexcept : device_(o.device_), event_(std::exchange(o.event_, nullptr)) {}
  Event& operator=(Event&& o) noexcept {
    if (this != &o) {
      release();
      device_ = o.device_;
      event_ = std::exchange(o.event_, nullptr);
    }
    return *this;
  }
  ~Event() { release(); }
  cudaEvent_t get() const { return event_; }

 private:
  void release() noexcept {
    if (!event_) return;
    SSIM_CUDA_WARN(cudaSetDevice(device_));
    SSIM_CUDA_WARN(cudaEventDestroy(event_));
    event_ = nullptr;
  }
  int device_ = 0;
  cudaEvent_t event_ = nullptr;
};

// Mapped, pinned host memory: written by kernels, read by the host while they run.
class MappedStamps {
 public:
  MappedStamps() = default;
  explicit MappedStamps(std::size_t slots) : slots_(slots) {
    void* p = nullptr;
    SSIM_CUDA(cudaHostAlloc(&p, std::max<std::size_t>(slots, 1) * sizeof(std::uint64_t),
                            cudaHostAllocMapped | cudaHostAllocPortable));
    host_ = static_cast<std::uint64_t*>(p);
    void* d = nullptr;
    SSIM_CUDA(cudaHostGetDevicePointer(&d, p, 0));
    device_ = static_cast<std::uint64_t*>(d);
    clear();
  }
  MappedStamps(MappedStamps&& o) noexcept
      : slots_(o.slots_), host_(std::exchange(o.host_, nullptr)), device_(o.device_) {}
  MappedStamps& operator=(MappedStamps&& o) noexcept {
    if (this != &o) {
      release();
      slots_ = o.slots_;
      host_ = std::exchange(o.host_, nullptr);
      device_ = o.device_;
    }
    return *this;
  }
  ~MappedStamps() { release(); }
  void clear() { std::memset(host_, 0, slots_ * sizeof(std::uint64_t)); }
  std::uint64_t read(std::size_t i) const {
    return reinterpret_cast<const volatile std::uint64_t*>(host_)[i];
  }
  std::uint64_t* device_slot(std::size_t i) const { return device_ + i; }

 private:
  void release() noexcept {
    if (host_) SSIM_CUDA_WARN(cudaFreeHost(host_));
    host_ = nullptr;
  }
  std::size_t slots_ = 0;
  std::uint64_t* host_ = nullptr;
  std::uint64_t* device_ = nullptr;
};

// Keeps an NCCL group open only as long as the scope: an exception between ncclGroupStart and
// ncclGroupEnd still closes the group (NCCL's group state is per thread and would otherwise
// swallow every later call).
class NcclGroup {
 public:
  NcclGroup() { SSIM_NCCL(ncclGroupStart()); }
  NcclGroup(const NcclGroup&) = delete;
  NcclGroup& operator=(const NcclGroup&) = delete;
  ~NcclGroup() {
    if (open_) SSIM_NCCL_WARN(ncclGroupEnd());
  }
  void end() {
    open_ = false;
    SSIM_NCCL(ncclGroupEnd());
  }

 private:
  bool open_ = true;
};

struct LocalRank {
  int rank = 0;
  int device = 0;
  ncclComm_t comm = nullptr;  // null for the single-GPU transport
  cudaStream_t stream = nullptr;
  int sm_count = 0;
  int stamp_priority = 0;  // the device's greatest launch priority: stamps and the delay spin
};

std::string device_name(int device) {
  cudaDeviceProp p{};
  SSIM_CUDA(cudaGetDeviceProperties(&p, device));
  return p.name;
}

// The split of Phase1::nccl_rs: per local rank its communicator (null for the straggler).
struct Split {
  std::vector<int> members;
  std::vector<ncclComm_t> comms;  // parallel to DeviceGroup::Impl::local
};

}  // namespace

struct DeviceGroup::Impl {
  Transport transport = Transport::nccl;
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

  // Max of `maxima` and sum of `sums` over all processes (in place).
  void combine(std::uint64_t (&maxima)[kMaxima], std::uint64_t (&sums)[kSums],
               Clock::time_point deadline) {
    if (!one_process_per_gpu) return;
    const LocalRank& l = local.front();
    std::byte* d = sync.get();
    SSIM_CUDA(cudaSetDevice(l.device));
    SSIM_CUDA(cudaMemcpyAsync(d, maxima, sizeof maxima, cudaMemcpyHostToDevice, l.stream));
    SSIM_CUDA(
        cudaMemcpyAsync(d + kSumsOffset, sums, sizeof sums, cudaMemcpyHostToDevice, l.stream));
    {
      NcclGroup group;
      SSIM_NCCL(ncclAllReduce(d, d, kMaxima, ncclUint64, ncclMax, l.comm, l.stream));
      SSIM_NCCL(ncclAllReduce(d + kSumsOffset, d + kSumsOffset, kSums, ncclUint64, ncclSum, l.comm,
                              l.stream));
      group.end();
    }
    SSIM_CUDA(cudaMemcpyAsync(maxima, d, sizeof maxima, cudaMemcpyDeviceToHost, l.stream));
    SSIM_CUDA(
        cudaMemcpyAsync(sums, d + kSumsOffset, sizeof sums, cudaMemcpyDeviceToHost, l.stream));
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

DeviceGroup::DeviceGroup(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}
DeviceGroup::DeviceGroup(DeviceGroup&&) noexcept = default;
DeviceGroup& DeviceGroup::operator=(DeviceGroup&&) noexcept = default;
DeviceGroup::~DeviceGroup() = default;

namespace {

void require_devices(int needed, const std::string& what) {
  int count = 0;
  SSIM_CUDA(cudaGetDeviceCount(&count));
  if (count < needed) {
    throw InputError(what + " needs " + std::to_string(needed) + " GPU(s), this machine has " +
                     std::to_string(count));
  }
}

void require_ranks(int ranks) {
  if (ranks < 1) throw InputError("a device group needs >= 1 rank, got " + std::to_string(ranks));
}

}  // namespace

DeviceGroup DeviceGroup::all_local(int ranks) {
  require_ranks(ranks);
  require_devices(ranks, "the nccl transport with " + std::to_string(ranks) + " ranks");
  auto impl = std::make_unique<Impl>();
  impl->transport = Transport::nccl;
  impl->ranks = ranks;
  std::vector<int> devices(static_cast<std::size_t>(ranks));
  std::iota(devices.begin(), devices.end(), 0);
  std::vector<ncclComm_t> comms(static_cast<std::size_t>(ranks), nullptr);
  SSIM_NCCL(ncclCommInitAll(comms.data(), ranks, devices.data()));
  // Owned by impl from here on, so a failure below still destroys every communicator.
  for (int r = 0; r < ranks; ++r)
    impl->local.push_back(LocalRank{r, r, comms[static_cast<std::size_t>(r)]});
  for (LocalRank& l : impl->local) impl->init(l);
  return DeviceGroup(std::move(impl));
}

DeviceGroup DeviceGroup::one_rank(int rank, int ranks, int device, IdExchange& ids) {
  require_ranks(ranks);
  if (rank < 0 || rank >= ranks) {
    throw InputError("rank " + std::to_string(rank) + " outside [0, " + std::to_string(ranks) +
                     ")");
  }
  require_devices(device + 1, "--device " + std::to_string(device));
  auto impl = std::make_unique<Impl>();
  impl->transport = Transport::nccl;
  impl->ranks = ranks;
  impl->one_process_per_gpu = true;
  SSIM_CUDA(cudaSetDevice(device));
  static_assert(sizeof(ncclUniqueId) == kUniqueIdBytes, "NCCL unique id size changed");
  const UniqueIdBytes bytes = ids.share(rank, [] {
    ncclUniqueId id;
    SSIM_NCCL(ncclGetUniqueId(&id));
    UniqueIdBytes out{};
    std::memcpy(out.data(), &id, sizeof id);
    return out;
  });
  ncclUniqueId id;
  std::memcpy(&id, bytes.data(), sizeof id);
  ncclComm_t comm = nullptr;
  SSIM_NCCL(ncclCommInitRank(&comm, ranks, id, rank));
  ids.finished(rank);
  impl->add_rank(rank, device, comm);
  impl->sync = DeviceBuffer(device, kSyncBytes);
  const LocalRank& l = impl->local.front();
  SSIM_CUDA(cudaMemsetAsync(impl->sync.get(), 0, kSyncBytes, l.stream));
  SSIM_CUDA(cudaStreamSynchronize(l.stream));
  return DeviceGroup(std::move(impl));
}

DeviceGroup DeviceGroup::direct(int ranks, const std::vector<int>& devices) {
  require_ranks(ranks);
  if (devices.size() != static_cast<std::size_t>(ranks)) {
    throw InputError("the direct transport needs one GPU per rank: " + std::to_string(ranks) +
                     " ranks, " + std::to_string(devices.size()) + " GPU(s) given");
  }
  int count = 0;
  SSIM_CUDA(cudaGetDeviceCount(&count));
  for (int d : devices) {
    if (d < 0 || d >= count) {
      throw InputError("the direct transport on GPU " + std::to_string(d) + ": this machine has " +
                       std::to_string(count) + " GPU(s)");
    }
  }
  // A kernel of rank r reads the data of every rank it receives from: each pair of distinct
  // GPUs needs peer access, both ways (checked before anything is enabled).
  std::vector<int> distinct = devices;
  std::sort(distinct.begin(), distinct.end());
  distinct.erase(std::unique(distinct.begin(), distinct.end()), distinct.end());
  for (int a : distinct) {
    for (int b : distinct) {
      if (a == b) continue;
      int can = 0;
      SSIM_CUDA(cudaDeviceCanAccessPeer(&can, a, b));
      if (!can) {
        throw InputError("--transport direct: GPU " + std::to_string(a) + " cannot access GPU " +
                         std::to_string(b) +
                         "'s memory (no CUDA peer access between them); use --transport nccl");
      }
    }
  }
  for (int a : distinct) {
    SSIM_CUDA(cudaSetDevice(a));
    for (int b : distinct) {
      if (a == b) continue;
      const cudaError_t e = cudaDeviceEnablePeerAccess(b, 0);
      if (e == cudaErrorPeerAccessAlreadyEnabled) {
        static_cast<void>(cudaGetLastError());  // not an error here: clear it
        continue;
      }
      SSIM_CUDA(e);
    }
  }
  auto impl = std::make_unique<Impl>();
  impl->transport = Transport::direct;
  impl->ranks = ranks;
  for (int r = 0; r < ranks; ++r) impl->add_rank(r, devices[static_cast<std::size_t>(r)], nullptr);
  return DeviceGroup(std::move(impl));
}

DeviceGroup DeviceGroup::single_gpu(int ranks, int device) {
  require_ranks(ranks);
  require_devices(device + 1, "the single-gpu transport on GPU " + std::to_string(device));
  auto impl = std::make_unique<Impl>();
  impl->transport = Transport::single_gpu;
  impl->ranks = ranks;
  for (int r = 0; r < ranks; ++r) impl->add_rank(r, device, nullptr);
  return DeviceGroup(std::move(impl));
}

Transport DeviceGroup::transport() const { return impl_->transport; }
int DeviceGroup::ranks() const { return impl_->ranks; }
bool DeviceGroup::one_process_per_gpu() const { return impl_->one_process_per_gpu; }

std::vector<int> DeviceGroup::local_ranks() const {
  std::vector<int> out;
  for (const LocalRank& l : impl_->local) out.push_back(l.rank);
  return out;
}

int DeviceGroup::device_of(int local_rank) const {
  for (const LocalRank& l : impl_->local) {
    if (l.rank == local_rank) return l.device;
  }
  throw InputError("rank " + std::to_string(local_rank) + " is not run by this process");
}

std::string DeviceGroup::description() const {
  const Impl& g = *impl_;
  if (g.transport == Transport::single_gpu) return g.name + ", single-gpu";
  if (g.transport == Transport::direct) {
    bool one = true;
    for (const LocalRank& l : g.local) one = one && l.device == g.local.front().device;
    return one ? g.name + ", direct" : g.name + " x" + std::to_string(g.ranks) + ", direct";
  }
  if (g.one_process_per_gpu) return g.name + ", nccl, one process per GPU";
  return g.name + " x" + std::to_string(g.ranks) + ", nccl";
}

// -------------------------------------------------------------------------------------------

namespace {

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
  cudaGraph_t graph = nullptr;
  cudaGraphExec_t exec = nullptr;
};

// The check's exact AllReduce result per residue (kernels.hpp), for inputs of modulus M.
ExpectedSums expected_sums(int ranks, std::uint64_t modulus) {
  ExpectedSums s{};
  for (std::uint64_t j = 0; j < kInputPeriod; ++j) {
    std::uint64_t sum = 0;
    for (int r = 0; r < ranks; ++r) sum += input_value_int(r, j, modulus);
    s.value[j] = static_cast<double>(sum);
  }
  return s;
}

}  // namespace

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
  ~Impl() {
    for (RankState& s : states) {
      if (s.exec) SSIM_CUDA_WARN(cudaGraphExecDestroy(s.exec));
      if (s.graph) SSIM_CUDA_WARN(cudaGraphDestroy(s.graph));
    }
  }

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
  // The test hook (executor.hpp): true for the one dependency a test asked to drop.
  static bool skip_dependency(int rank, int on, int round, char kind) {
    return g_skip && g_skip->rank == rank && g_skip->on == on && g_skip->round == round &&
           g_skip->kind == kind;
  }

  void setup();
  void upload_direct_items();
  void stamp(std::size_t i, std::size_t slot);
  // Every rank on one GPU (single-gpu, direct on one device): the ranks are all ready when an
  // iteration starts, so one stamp on rank 0's stream is every rank's start, and every rank
  // but the straggler arrives then. Stamped per rank instead, a rank's stamp kernel queues
  // behind the other ranks' kernels (milliseconds at 1 GiB on an H200): the queue, not the
  // arrival. The straggler still spins until that start + its delay and stamps its arrival.
  bool shared_start() const {
    if (group.transport == Transport::nccl || group.local.empty()) return false;
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
  void issue_nccl_rounds();
  void issue_single_gpu_rounds();
  void issue_direct_rounds();
  void capture();
  void wait_for_completion();
  [[noreturn]] void timeout();
  IterationResult run(bool check);
};

void CollectiveRun::Impl::setup() {
  if (c.plan.ranks != group.ranks) {
    throw InputError("collective for " + std::to_string(c.plan.ranks) +
                     " ranks on a device group of " + std::to_string(group.ranks));
  }
  if (group.transport != Transport::nccl && (c.nccl_allreduce || c.phase1)) {
    throw InputError("algorithm " + c.label + " uses NCCL collectives, which the " +
                     std::string(to_string(group.transport)) + " transport does not run");
  }
  if (settings.delay.value < 0) throw InputError("the straggler delay must be >= 0");
  if (settings.delay.value > 0 && (settings.straggler < 0 || settings.straggler >= group.ranks)) {
    throw InputError("straggler rank " + std::to_string(settings.straggler) + " outside [0, " +
                     std::to_string(group.ranks) + ")");
  }
  if (settings.timeout.value <= 0) throw InputError("the watchdog timeout must be > 0");
  device_check = c.plan.collective == alg::Collective::allreduce;
  // InputError beyond the ranks at which the dtype's sums stay exact (bfloat16: 128).
  modulus = value_modulus(c.plan.layout.dtype, c.plan.ranks);
  expected = expected_sums(c.plan.ranks, modulus);
  const std::uint64_t bytes = c.plan.layout.padded_bytes();
  const Split* split = c.phase1 ? &group.split(c.phase1->members) : nullptr;
  states.reserve(group.local.size());
  for (std::size_t i = 0; i < group.local.size(); ++i) {
    const LocalRank& l = group.local[i];
    states.emplace_back();
    RankState& s = states.back();
    s.rank = l.rank;
    const DeviceRankPlan& dp = c.device[static_cast<std::size_t>(l.rank)];
    for (const DeviceStep& step : dp.steps) {
      for (const ApplyWave& w : step.waves)
        SSIM_CHECK(w.count >= 1 && w.count <= 65535, "apply wave must have 1..65535 items");
    }
    s.data = DeviceBuffer(l.device, bytes);
    s.scratch =
        DeviceBuffer(l.device, c.plan.rank_plans[static_cast<std::size_t>(l.rank)].scratch_bytes);
    s.items = DeviceBuffer(l.device, dp.items.size() * sizeof(ApplyItem));
    s.wrong = DeviceBuffer(l.device, sizeof(unsigned long long));
    // On the stream that reads them, so no legacy-stream ordering is assumed.
    if (!dp.items.empty()) {
      SSIM_CUDA(cudaMemcpyAsync(s.items.get(), dp.items.data(), dp.items.size() * sizeof(ApplyItem),
                                cudaMemcpyHostToDevice, l.stream));
    }
    if (!device_check) {
      s.input.resize(bytes);
      fill_input(c.plan, l.rank, s.input);
    }
    s.stamps = MappedStamps(finish_slot() + 1);
    s.done = Event(l.device, cudaEventDisableTiming);
    s.started = Event(l.device, cudaEventDisableTiming);
    s.ready = Event(l.device, cudaEventDisableTiming);
    s.copied = Event(l.device, cudaEventDisableTiming);
    s.fork = Event(l.device, cudaEventDisableTiming);
    s.join = Event(l.device, cudaEventDisableTiming);
    if (group.transport == Transport::direct) {
      s.arrived = Event(l.device, cudaEventDisableTiming);
      s.after_round.resize(static_cast<std::size_t>(c.plan.rounds));
      s.staged_round.resize(static_cast<std::size_t>(c.plan.rounds));
      for (const DeviceStep& step : dp.steps) {
        const auto k = static_cast<std::size_t>(step.round);
        if (!step.waves.empty()) s.after_round[k] = Event(l.device, cudaEventDisableTiming);
        if (!step.staged.empty()) s.staged_round[k] = Event(l.device, cudaEventDisableTiming);
      }
    }
    if (split) {
      s.split = split->comms[i];
      auto it = std::find(split->members.begin(), split->members.end(), l.rank);
      s.key = it == split->members.end() ? -1 : static_cast<int>(it - split->members.begin());
    }
  }
  if (group.transport == Transport::direct) upload_direct_items();
  group.synchronize_local();  // the item uploads read pageable host memory
  if (settings.launch == Launch::graph) capture();
}

// The direct transport's items: each apply item with its source as a device address, the
// sender's data buffer (same GPU or a peer GPU) or, where staged, this rank's scratch.
void CollectiveRun::Impl::upload_direct_items() {
  const std::uint64_t elem = lowering::dtype_size(c.plan.layout.dtype);
  for (std::size_t i = 0; i < states.size(); ++i) {
    const DeviceRankPlan& dp = device_plan(i);
    RankState& s = states[i];
    s.direct_host.clear();
    for (std::size_t j = 0; j < dp.items.size(); ++j) {
      const ApplyItem& a = dp.items[j];
      const DirectSource& src = dp.sources[j];
      const std::byte* base =
          src.staged ? s.scratch.get() : states[static_cast<std::size_t>(src.rank)].data.get();
      DirectItem d;
      d.dst = a.dst;
      d.src_addr = reinterpret_cast<std::uint64_t>(base + src.offset);
      d.count = a.count;
      d.op = a.op;
      SSIM_CHECK(a.count == 0 || src.offset + a.count * elem > src.offset,
                 "direct item source overflows");
      s.direct_host.push_back(d);
    }
    const LocalRank& l = group.local[i];
    s.direct_items = DeviceBuffer(l.device, s.direct_host.size() * sizeof(DirectItem));
    if (!s.direct_host.empty()) {
      SSIM_CUDA(cudaSetDevice(l.device));
      SSIM_CUDA(cudaMemcpyAsync(s.direct_items.get(), s.direct_host.data(),
                                s.direct_host.size() * sizeof(DirectItem), cudaMemcpyHostToDevice,
                                l.stream));
    }
  }
}

void CollectiveRun::Impl::stamp(std::size_t i, std::size_t slot) {
  SSIM_CUDA(cudaSetDevice(group.local[i].device));
  SSIM_CUDA(launch_stamp(states[i].stamps.device_slot(slot), group.local[i].stamp_priority,
                         group.local[i].stream));
}

void CollectiveRun::Impl::apply(std::size_t i, const DeviceStep& step) {
  if (step.waves.empty()) return;
  const LocalRank& l = group.local[i];
  RankState& s = states[i];
  const auto* items = reinterpret_cast<const ApplyItem*>(s.items.get());
  SSIM_CUDA(cudaSetDevice(l.device));
  for (const ApplyWave& w : step.waves) {
    SSIM_CUDA(launch_apply(kernel_dtype(c.plan.layout.dtype), s.data.get(), s.scratch.get(),
                           items + w.first, static_cast<int>(w.count), w.max_count, max_blocks(i),
                           l.stream));
  }
}

void CollectiveRun::Impl::issue_nccl_rounds() {
  const ncclDataType_t type = nccl_type(c.plan.layout.dtype);
  const lowering::BufferLayout& layout = c.plan.layout;
  for (int k = 0; k < c.plan.rounds; ++k) {
    const auto round = static_cast<std::size_t>(k);
    if (c.phase1 && k < c.phase1->rounds) {
      if (k + 1 < c.phase1->rounds) continue;  // one ReduceScatter, stamped as the last round
      NcclGroup group_call;
      for (std::size_t i = 0; i < states.size(); ++i) {
        RankState& s = states[i];
        if (!s.split) continue;
        SSIM_NCCL(ncclReduceScatter(s.data.get(), s.data.get() + layout.chunk_offset_bytes(s.key),
                                    layout.chunk_count, type, ncclSum, s.split,
                                    group.local[i].stream));
      }
      group_call.end();
      for (std::size_t i = 0; i < states.size(); ++i) {
        if (states[i].split) stamp(i, kFirstRoundSlot + round);
      }
      continue;
    }
    bool any = false;
    for (std::size_t i = 0; i < states.size() && !any; ++i)
      any = device_plan(i).step_at_round[round] >= 0;
    if (!any) continue;
    {
      NcclGroup group_call;
      for (std::size_t i = 0; i < states.size(); ++i) {
        const int idx = device_plan(i).step_at_round[round];
        if (idx < 0) continue;
        const lowering::Step& step = rank_plan(i).steps[static_cast<std::size_t>(idx)];
        const LocalRank& l = group.local[i];
        RankState& s = states[i];
        for (const lowering::P2P& p : step.sends)
          SSIM_NCCL(ncclSend(s.data.get() + p.offset, p.count, type, p.peer, l.comm, l.stream));
        for (const lowering::P2P& p : step.recvs)
          SSIM_NCCL(ncclRecv(s.scratch.get() + p.offset, p.count, type, p.peer, l.comm, l.stream));
      }
      group_call.end();
    }
    for (std::size_t i = 0; i < states.size(); ++i) {
      const int idx = device_plan(i).step_at_round[round];
      if (idx < 0) continue;
      apply(i, device_plan(i).steps[static_cast<std::size_t>(idx)]);
      stamp(i, kFirstRoundSlot + round);
    }
  }
}

void CollectiveRun::Impl::issue_single_gpu_rounds() {
  // Every rank is local and states[r] is rank r.
  const std::uint64_t elem = lowering::dtype_size(c.plan.layout.dtype);
  SSIM_CUDA(cudaSetDevice(group.local.front().device));
  std::vector<std::size_t> in_round;
  for (int k = 0; k < c.plan.rounds; ++k) {
    const auto round = static_cast<std::size_t>(k);
    in_round.clear();
    for (std::size_t i = 0; i < states.size(); ++i) {
      if (device_plan(i).step_at_round[round] >= 0) in_round.push_back(i);
    }
    if (in_round.empty()) continue;
    auto step_of = [&](std::size_t i) -> const lowering::Step& {
      return rank_plan(i).steps[static_cast<std::size_t>(device_plan(i).step_at_round[round])];
    };
    // Each rank marks where it reached the round: its data as of the round's start.
    for (std::size_t i : in_round)
      SSIM_CUDA(cudaEventRecord(states[i].ready.get(), group.local[i].stream));
    // Receivers copy once the sender has reached the round.
    for (std::size_t i : in_round) {
      const lowering::Step& step = step_of(i);
      if (step.recvs.empty()) continue;
      const DeviceStep& ds =
          device_plan(i).steps[static_cast<std::size_t>(device_plan(i).step_at_round[round])];
      const cudaStream_t stream = group.local[i].stream;
      for (std::size_t v = 0; v < step.recvs.size(); ++v) {
        const lowering::P2P& p = step.recvs[v];
        const RankState& sender = states[static_cast<std::size_t>(p.peer)];
        SSIM_CUDA(cudaStreamWaitEvent(stream, sender.ready.get(), 0));
        if (settings.copy == CopyMode::kernel) {
          SSIM_CUDA(launch_copy(states[i].scratch.get() + p.offset,
                                sender.data.get() + ds.recv_source_offsets[v], p.count * elem,
                                max_blocks(i), stream));
        } else {
          SSIM_CUDA(cudaMemcpyAsync(states[i].scratch.get() + p.offset,
                                    sender.data.get() + ds.recv_source_offsets[v], p.count * elem,
                                    cudaMemcpyDeviceToDevice, stream));
        }
      }
      SSIM_CUDA(cudaEventRecord(states[i].copied.get(), stream));
    }
    // Senders may change their data only once their receivers have copied it.
    for (std::size_t i : in_round) {
      for (const lowering::P2P& p : step_of(i).sends) {
        SSIM_CUDA(cudaStreamWaitEvent(group.local[i].stream,
                                      states[static_cast<std::size_t>(p.peer)].copied.get(), 0));
      }
    }
    for (std::size_t i : in_round) {
      apply(i, device_plan(i).steps[static_cast<std::size_t>(device_plan(i).step_at_round[round])]);
      stamp(i, kFirstRoundSlot + round);
    }
  }
}

// The direct transport (the rules in device_plan.hpp). Per round k, first the staged copies
// of every rank (after the RAW waits), then every rank's kernel: it waits for the last kernel
// before k of each rank it reads from, or that rank's arrival when it has none yet (RAW), for the
// kernels of the ranks that read from it since its own last kernel (WAR), and for the copies of the
// ranks that stage from it in this round; nothing orders the kernels of one round behind each
// other. Every wait is on an event recorded once per round (after_round[k]), so what it names does
// not depend on when the host issues it.
void CollectiveRun::Impl::issue_direct_rounds() {
  // Every rank is local and states[r] is rank r.
  const std::size_t n = states.size();
  std::vector<int> last(n, -1);  // the round of each rank's last kernel issued
  // Per rank: (reader, round) pairs whose kernels read its data since its last kernel.
  std::vector<std::vector<std::pair<std::size_t, int>>> readers(n);
  auto wait = [&](std::size_t i, const Event& e) {
    SSIM_CUDA(cudaStreamWaitEvent(group.local[i].stream, e.get(), 0));
  };
  // A sender with no kernel yet: its arrival (after its delay), so that no rank reads a
  // straggler's data before the straggler has arrived.
  auto wait_last = [&](std::size_t i, std::size_t sender) {
    if (sender == i) return;
    if (last[sender] < 0) {
      if (!skip_dependency(static_cast<int>(i), static_cast<int>(sender), -1, 'r'))
        wait(i, states[sender].arrived);
      return;
    }
    const int k = last[sender];
    if (!skip_dependency(static_cast<int>(i), static_cast<int>(sender), k, 'r'))
      wait(i, states[sender].after_round[static_cast<std::size_t>(k)]);
  };
  for (int k = 0; k < c.plan.rounds; ++k) {
    const auto round = static_cast<std::size_t>(k);
    std::vector<std::size_t> in_round;
    for (std::size_t i = 0; i < n; ++i) {
      if (device_plan(i).step_at_round[round] >= 0) in_round.push_back(i);
    }
    if (in_round.empty()) continue;
    auto step_of = [&](std::size_t i) -> const DeviceStep& {
      return device_plan(i).steps[static_cast<std::size_t>(device_plan(i).step_at_round[round])];
    };
    for (std::size_t i : in_round) {
      const DeviceStep& ds = step_of(i);
      if (ds.staged.empty()) continue;
      SSIM_CUDA(cudaSetDevice(group.local[i].device));
      std::vector<int> from;
      for (const StagedCopy& sc : ds.staged) from.push_back(sc.rank);
      std::sort(from.begin(), from.end());
      from.erase(std::unique(from.begin(), from.end()), from.end());
      for (int f : from) wait_last(i, static_cast<std::size_t>(f));
      for (const StagedCopy& sc : ds.staged) {
        SSIM_CUDA(
            cudaMemcpyAsync(states[i].scratch.get() + sc.scratch_offset,
                            states[static_cast<std::size_t>(sc.rank)].data.get() + sc.source_offset,
                            sc.bytes, cudaMemcpyDeviceToDevice, group.local[i].stream));
      }
      SSIM_CUDA(cudaEventRecord(states[i].staged_round[round].get(), group.local[i].stream));
    }
    for (std::size_t i : in_round) {
      const DeviceStep& ds = step_of(i);
      SSIM_CUDA(cudaSetDevice(group.local[i].device));
      if (!ds.waves.empty()) {
        for (int f : ds.senders) wait_last(i, static_cast<std::size_t>(f));
        for (const auto& [reader, rk] : readers[i]) {
          if (!skip_dependency(static_cast<int>(i), static_cast<int>(reader), rk, 'w'))
            wait(i, states[reader].after_round[static_cast<std::size_t>(rk)]);
        }
        readers[i].clear();
        for (int t : ds.stagers) {
          if (!skip_dependency(static_cast<int>(i), t, k, 's'))
            wait(i, states[static_cast<std::size_t>(t)].staged_round[round]);
        }
        const LocalRank& l = group.local[i];
        const auto* items = reinterpret_cast<const DirectItem*>(states[i].direct_items.get());
        for (const ApplyWave& w : ds.waves) {
          SSIM_CUDA(launch_direct(kernel_dtype(c.plan.layout.dtype), states[i].data.get(),
                                  items + w.first, static_cast<int>(w.count), w.max_count,
                                  direct_max_blocks(i), l.stream));
        }
        SSIM_CUDA(cudaEventRecord(states[i].after_round[round].get(), l.stream));
      }
      stamp(i, kFirstRoundSlot + round);
    }
    for (std::size_t i : in_round) {
      const DeviceStep& ds = step_of(i);
      if (ds.waves.empty()) continue;
      last[i] = k;
      for (int f : ds.senders) readers[static_cast<std::size_t>(f)].emplace_back(i, k);
    }
  }
}

// Everything between the barrier and the completion events, on every local rank's stream.
void CollectiveRun::Impl::issue_body() {
  const bool shared = shared_start();
  if (shared) {
    stamp(0, kStartSlot);
    SSIM_CUDA(cudaEventRecord(states[0].started.get(), group.local[0].stream));
    for (std::size_t i = 1; i < states.size(); ++i)
      SSIM_CUDA(cudaStreamWaitEvent(group.local[i].stream, states[0].started.get(), 0));
  }
  for (std::size_t i = 0; i < states.size(); ++i) {
    if (!shared) stamp(i, kStartSlot);
    if (is_straggler(i)) {
      // Until the start stamp + delay: queueing before the spin runs does not lengthen it.
      SSIM_CUDA(cudaSetDevice(group.local[i].device));
      SSIM_CUDA(launch_spin(start_stamps(i).device_slot(kStartSlot),
                            static_cast<std::uint64_t>(std::llround(settings.delay.value * 1e9)),
                            group.local[i].stamp_priority, group.local[i].stream));
    }
    if (!shared || is_straggler(i)) stamp(i, kArrivalSlot);
    if (group.transport == Transport::direct)
      SSIM_CUDA(cudaEventRecord(states[i].arrived.get(), group.local[i].stream));
  }
  if (c.nccl_allreduce) {
    const ncclDataType_t type = nccl_type(c.plan.layout.dtype);
    NcclGroup group_call;
    for (std::size_t i = 0; i < states.size(); ++i) {
      const LocalRank& l = group.local[i];
      SSIM_NCCL(ncclAllReduce(states[i].data.get(), states[i].data.get(), c.plan.layout.count, type,
                              ncclSum, l.comm, l.stream));
    }
    group_call.end();
  } else if (group.transport == Transport::nccl) {
    issue_nccl_rounds();
  } else if (group.transport == Transport::direct) {
    issue_direct_rounds();
  } else {
    issue_single_gpu_rounds();
  }
  for (std::size_t i = 0; i < states.size(); ++i) stamp(i, finish_slot());
}

// Captures the body: NCCL, one graph per rank stream (NCCL's grouped calls across the
// captured streams of one thread); single-GPU and direct, one graph that forks from rank 0's
// stream over every rank's stream and joins back.
void CollectiveRun::Impl::capture() {
  const bool single = group.transport != Transport::nccl;
  for (std::size_t i = 0; i < states.size(); ++i) {
    if (single && i > 0) break;
    SSIM_CUDA(cudaSetDevice(group.local[i].device));
    SSIM_CUDA(cudaStreamBeginCapture(group.local[i].stream, cudaStreamCaptureModeThreadLocal));
  }
  try {
    if (single) {
      SSIM_CUDA(cudaEventRecord(states[0].fork.get(), group.local[0].stream));
      for (std::size_t i = 1; i < states.size(); ++i)
        SSIM_CUDA(cudaStreamWaitEvent(group.local[i].stream, states[0].fork.get(), 0));
    }
    issue_body();
    if (single) {
      for (std::size_t i = 1; i < states.size(); ++i) {
        SSIM_CUDA(cudaEventRecord(states[i].join.get(), group.local[i].stream));
        SSIM_CUDA(cudaStreamWaitEvent(group.local[0].stream, states[i].join.get(), 0));
      }
    }
  } catch (...) {
    // End every capture so the streams are usable (and destroyable) again.
    for (std::size_t i = 0; i < states.size(); ++i) {
      if (single && i > 0) break;
      cudaGraph_t g = nullptr;
      if (cudaStreamEndCapture(group.local[i].stream, &g) == cudaSuccess && g)
        SSIM_CUDA_WARN(cudaGraphDestroy(g));
    }
    throw;
  }
  for (std::size_t i = 0; i < states.size(); ++i) {
    if (single && i > 0) break;
    SSIM_CUDA(cudaSetDevice(group.local[i].device));
    SSIM_CUDA(cudaStreamEndCapture(group.local[i].stream, &states[i].graph));
  }
  for (std::size_t i = 0; i < states.size(); ++i) {
    if (single && i > 0) break;
    SSIM_CUDA(cudaSetDevice(group.local[i].device));
    SSIM_CUDA(cudaGraphInstantiate(&states[i].exec, states[i].graph, 0));
  }
}

// Names every local rank that did not finish and the first round it did not finish.
void CollectiveRun::Impl::timeout() {
  std::string who;
  for (std::size_t i = 0; i < states.size(); ++i) {
    const MappedStamps& st = states[i].stamps;
    if (st.read(finish_slot()) != 0) continue;
    std::string where;
    if (arrival_of(i) == 0) {
      where = start_of(i) == 0 ? "did not start" : "did not arrive (still in its delay)";
    } else {
      const DeviceRankPlan& dp = device_plan(i);
      int stuck = -1;
      for (int k = 0; k < c.plan.rounds && stuck < 0; ++k) {
        const auto slot = kFirstRoundSlot + static_cast<std::size_t>(k);
        const bool takes_part = c.phase1 && k < c.phase1->rounds
                                    ? (k + 1 == c.phase1->rounds && states[i].split)
                                    : dp.step_at_round[static_cast<std::size_t>(k)] >= 0;
        if (takes_part && st.read(slot) == 0) stuck = k;
      }
      where = stuck >= 0 ? "did not finish round " + std::to_string(stuck)
                         : "did not finish (after its last round)";
    }
    who += (who.empty() ? "" : "; ") + std::string("rank ") + std::to_string(states[i].rank) + " " +
           where;
  }
  group.broken = true;
  for (const LocalRank& l : group.local) {
    if (l.comm) SSIM_NCCL_WARN(ncclCommAbort(l.comm));
  }
  for (const Split& s : group.splits) {
    for (ncclComm_t comm : s.comms) {
      if (comm) SSIM_NCCL_WARN(ncclCommAbort(comm));
    }
  }
  // Aborted: the destructor must not touch them again.
  for (LocalRank& l : group.local) l.comm = nullptr;
  group.splits.clear();
  throw WatchdogTimeout("watchdog: " + c.label + " at " + std::to_string(c.plan.layout.bytes) +
                        " B did not finish within --timeout " + format_time(settings.timeout) +
                        ": " + (who.empty() ? std::string("every local rank finished") : who));
}

// Polls every rank's completion event and its communicators' asynchronous errors.
void CollectiveRun::Impl::wait_for_completion() {
  std::vector<bool> finished(states.size(), false);
  std::size_t left = states.size();
  while (left > 0) {
    for (std::size_t i = 0; i < states.size(); ++i) {
      if (finished[i]) continue;
      SSIM_CUDA(cudaSetDevice(group.local[i].device));
      const cudaError_t e = cudaEventQuery(states[i].done.get());
      if (e == cudaSuccess) {
        finished[i] = true;
        --left;
        continue;
      }
      if (e != cudaErrorNotReady) SSIM_CUDA(e);
      for (ncclComm_t comm : {group.local[i].comm, states[i].split}) {
        if (!comm) continue;
        ncclResult_t async = ncclSuccess;
        SSIM_NCCL(ncclCommGetAsyncError(comm, &async));
        if (async != ncclSuccess && async != ncclInProgress) {
          group.broken = true;
          throw DeviceError("rank " + std::to_string(states[i].rank) +
                            ": NCCL reports an asynchronous error: " + ncclGetErrorString(async));
        }
      }
    }
    if (left == 0) break;
    if (Clock::now() >= *deadline) timeout();
    std::this_thread::sleep_for(std::chrono::microseconds(50));
  }
}

IterationResult CollectiveRun::Impl::run(bool check) {
  if (!deadline) {
    deadline = std::chrono::steady_clock::now() +
               std::chrono::duration_cast<std::chrono::steady_clock::duration>(
                   std::chrono::duration<double>(settings.timeout.value));
  }
  const lowering::BufferLayout& layout = c.plan.layout;
  const std::uint64_t bytes = layout.padded_bytes();
  for (std::size_t i = 0; i < states.size(); ++i) {
    const LocalRank& l = group.local[i];
    RankState& s = states[i];
    SSIM_CUDA(cudaSetDevice(l.device));
    if (device_check) {
      SSIM_CUDA(launch_fill(kernel_dtype(layout.dtype), s.data.get(), layout.count,
                            layout.padded_count(), l.rank, modulus, max_blocks(i), l.stream));
    } else {
      SSIM_CUDA(
          cudaMemcpyAsync(s.data.get(), s.input.data(), bytes, cudaMemcpyHostToDevice, l.stream));
    }
    s.stamps.clear();  // the stream is idle: the previous iteration completed
  }
  group.barrier(*deadline);

  if (settings.launch == Launch::graph) {
    const std::size_t graphs = group.transport != Transport::nccl ? 1 : states.size();
    for (std::size_t i = 0; i < graphs; ++i) {
      SSIM_CUDA(cudaSetDevice(group.local[i].device));
      SSIM_CUDA(cudaGraphLaunch(states[i].exec, group.local[i].stream));
    }
  } else {
    issue_body();
  }
  for (std::size_t i = 0; i < states.size(); ++i) {
    SSIM_CUDA(cudaSetDevice(group.local[i].device));
    SSIM_CUDA(cudaEventRecord(states[i].done.get(), group.local[i].stream));
  }
  wait_for_completion();

  IterationResult result;
  // Over this process's ranks (the order of kMaxima above); then over every process.
  std::uint64_t maxima[kMaxima] = {0, 0, 0, 0, 0, 0, 0};
  std::uint64_t sums[kSums] = {0, 0, 0};  // wrong, checked, sum of own times
  for (std::size_t i = 0; i < states.size(); ++i) {
    const MappedStamps& st = states[i].stamps;
    RankStamps rs;
    rs.rank = states[i].rank;
    rs.start = start_of(i);
    rs.arrival = arrival_of(i);
    rs.finish = st.read(finish_slot());
    for (int k = 0; k < c.plan.rounds; ++k)
      rs.round_end.push_back(st.read(kFirstRoundSlot + static_cast<std::size_t>(k)));
    SSIM_CHECK(rs.start != 0 && rs.arrival >= rs.start && rs.finish >= rs.arrival,
               "rank " + std::to_string(rs.rank) + ": missing or unordered timer stamps");
    maxima[0] = std::max(maxima[0], rs.finish);
    maxima[1] = std::max(maxima[1], UINT64_MAX - rs.arrival);
    maxima[2] = std::max(maxima[2], rs.arrival);
    if (settings.delay.value > 0 && rs.rank == settings.straggler)
      maxima[3] = rs.arrival - rs.start;
    const std::uint64_t own = rs.finish - rs.start;
    maxima[4] = std::max(maxima[4], own);
    maxima[5] = std::max(maxima[5], UINT64_MAX - own);
    if (rs.rank == 0) maxima[6] = own;
    sums[2] += own;
    result.stamps.push_back(std::move(rs));
  }

  if (check) {
    std::vector<unsigned long long> wrong(states.size(), 0);
    for (std::size_t i = 0; i < states.size(); ++i) {
      const LocalRank& l = group.local[i];
      RankState& s = states[i];
      SSIM_CUDA(cudaSetDevice(l.device));
      if (!device_check) {
        wrong[i] = 1;  // checked on the host below
        continue;
      }
      auto* counter = reinterpret_cast<unsigned long long*>(s.wrong.get());
      SSIM_CUDA(cudaMemsetAsync(counter, 0, sizeof *counter, l.stream));
      SSIM_CUDA(launch_count_wrong(kernel_dtype(layout.dtype), s.data.get(), layout.count, expected,
                                   counter, max_blocks(i), l.stream));
      SSIM_CUDA(
          cudaMemcpyAsync(&wrong[i], counter, sizeof *counter, cudaMemcpyDeviceToHost, l.stream));
    }
    group.synchronize_local();
    for (std::size_t i = 0; i < states.size(); ++i) {
      if (wrong[i] == 0) {
        result.local.checked += layout.count;
        continue;
      }
      // Copy back only what is wrong (or not checked on the device), to say where.
      const LocalRank& l = group.local[i];
      std::vector<std::byte> output(bytes);
      SSIM_CUDA(cudaSetDevice(l.device));
      SSIM_CUDA(cudaMemcpyAsync(output.data(), states[i].data.get(), bytes, cudaMemcpyDeviceToHost,
                                l.stream));
      SSIM_CUDA(cudaStreamSynchronize(l.stream));
      check_output(c.plan, states[i].rank, output, result.local);
    }
    sums[0] = result.local.wrong;
    sums[1] = result.local.checked;
  }
  group.combine(maxima, sums, *deadline);
  const std::uint64_t min_arrival = UINT64_MAX - maxima[1];
  result.origin = min_arrival;
  result.time = Seconds{static_cast<double>(maxima[0] - min_arrival) * 1e-9};
  result.after_last_arrival = Seconds{static_cast<double>(maxima[0] - maxima[2]) * 1e-9};
  result.delay = Seconds{static_cast<double>(maxima[3]) * 1e-9};
  double rank_time_ns = 0;
  switch (settings.average) {
    case RankAverage::rank0:
      rank_time_ns = static_cast<double>(maxima[6]);
      break;
    case RankAverage::mean:
      rank_time_ns = static_cast<double>(sums[2]) / static_cast<double>(c.plan.ranks);
      break;
    case RankAverage::min:
      rank_time_ns = static_cast<double>(UINT64_MAX - maxima[5]);
      break;
    case RankAverage::max:
      rank_time_ns = static_cast<double>(maxima[4]);
      break;
  }
  result.rank_time = Seconds{rank_time_ns * 1e-9};
  if (check) result.wrong = sums[0];
  result.checked = sums[1];
  return result;
}

CollectiveRun::CollectiveRun(DeviceGroup& group, PreparedCollective collective,
                             IterationSettings settings)
    : impl_(std::make_unique<Impl>(*group.impl_, std::move(collective), settings)) {
  impl_->setup();
}

CollectiveRun::CollectiveRun(CollectiveRun&&) noexcept = default;
CollectiveRun::~CollectiveRun() = default;

IterationResult CollectiveRun::run(bool check) { return impl_->run(check); }

namespace testing {
void skip_direct_dependency(std::optional<DirectDependency> dependency) { g_skip = dependency; }
}  // namespace testing

const PreparedCollective& CollectiveRun::collective() const { return impl_->c; }

}  // namespace ssim::gpu
