#include "gpu_backend/cuda/executor.hpp"

#include <cuda_runtime.h>
#include <nccl.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <exception>
#include <numeric>
#include <utility>

#include "common/error.hpp"
#include "gpu_backend/cuda/check.hpp"
#include "gpu_backend/cuda/kernels.hpp"

namespace ssim::gpu {

namespace {

ncclDataType_t nccl_type(DType dtype) {
  switch (dtype) {
    case DType::float32:
      return ncclFloat32;
    case DType::float64:
      return ncclFloat64;
    case DType::int32:
      return ncclInt32;
    case DType::int64:
      return ncclInt64;
  }
  SSIM_CHECK(false, "unknown dtype");
  return ncclFloat32;
}

// Apply-kernel blocks per SM: 8 blocks of 256 threads fill an SM's 2048 thread slots.
constexpr int kApplyBlocksPerSm = 8;

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

Seconds elapsed(const Event& from, const Event& to) {
  float ms = 0;
  SSIM_CUDA(cudaEventElapsedTime(&ms, from.get(), to.get()));
  return Seconds{static_cast<double>(ms) * 1e-3};
}

struct LocalRank {
  int rank = 0;
  int device = 0;
  ncclComm_t comm = nullptr;  // null for the single-GPU transport
  cudaStream_t stream = nullptr;
  int clock_khz = 0;
  int sm_count = 0;
};

// While an exception unwinds, operations may still be in flight (or a peer gone): abort
// instead of the orderly destroy, which could wait for them.
void release_comm(ncclComm_t comm) noexcept {
  if (!comm) return;
  if (std::uncaught_exceptions() > 0) {
    SSIM_NCCL_WARN(ncclCommAbort(comm));
  } else {
    SSIM_NCCL_WARN(ncclCommDestroy(comm));
  }
}

std::string device_name(int device) {
  cudaDeviceProp p{};
  SSIM_CUDA(cudaGetDeviceProperties(&p, device));
  return p.name;
}

}  // namespace

struct DeviceGroup::Impl {
  Transport transport = Transport::nccl;
  int ranks = 0;
  bool one_process_per_gpu = false;
  std::string name;  // GPU name of the first local rank
  std::vector<LocalRank> local;
  DeviceBuffer sync;  // one process per GPU: barrier and result reduction, 32 bytes

  Impl() = default;
  Impl(const Impl&) = delete;
  Impl& operator=(const Impl&) = delete;
  ~Impl() {
    for (LocalRank& l : local) {
      release_comm(l.comm);
      if (l.stream) {
        SSIM_CUDA_WARN(cudaSetDevice(l.device));
        SSIM_CUDA_WARN(cudaStreamDestroy(l.stream));
      }
    }
  }

  // Adds a rank whose communicator (if any) exists; owns it from here on.
  void add_rank(int rank, int device, ncclComm_t comm) {
    local.push_back(LocalRank{rank, device, comm});
    init(local.back());
  }

  void init(LocalRank& l) {
    SSIM_CUDA(cudaSetDevice(l.device));
    SSIM_CUDA(cudaStreamCreateWithFlags(&l.stream, cudaStreamNonBlocking));
    SSIM_CUDA(cudaDeviceGetAttribute(&l.clock_khz, cudaDevAttrClockRate, l.device));
    SSIM_CUDA(cudaDeviceGetAttribute(&l.sm_count, cudaDevAttrMultiProcessorCount, l.device));
    if (name.empty()) name = device_name(l.device);
  }

  void synchronize_local() {
    for (const LocalRank& l : local) {
      SSIM_CUDA(cudaSetDevice(l.device));
      SSIM_CUDA(cudaStreamSynchronize(l.stream));
    }
  }

  // Every rank of every process has finished what it issued before.
  void barrier() {
    synchronize_local();
    if (!one_process_per_gpu) return;
    const LocalRank& l = local.front();
    SSIM_CUDA(cudaSetDevice(l.device));
    SSIM_NCCL(ncclAllReduce(sync.get(), sync.get(), 1, ncclFloat64, ncclSum, l.comm, l.stream));
    SSIM_CUDA(cudaStreamSynchronize(l.stream));
  }

  // Max of `maxima` and sum of `sums` over all processes (in place).
  void combine(double (&maxima)[2], std::uint64_t (&sums)[2]) {
    if (!one_process_per_gpu) return;
    const LocalRank& l = local.front();
    std::byte* d = sync.get();
    SSIM_CUDA(cudaSetDevice(l.device));
    SSIM_CUDA(cudaMemcpyAsync(d, maxima, sizeof maxima, cudaMemcpyHostToDevice, l.stream));
    SSIM_CUDA(cudaMemcpyAsync(d + 16, sums, sizeof sums, cudaMemcpyHostToDevice, l.stream));
    SSIM_NCCL(ncclGroupStart());
    SSIM_NCCL(ncclAllReduce(d, d, 2, ncclFloat64, ncclMax, l.comm, l.stream));
    SSIM_NCCL(ncclAllReduce(d + 16, d + 16, 2, ncclUint64, ncclSum, l.comm, l.stream));
    SSIM_NCCL(ncclGroupEnd());
    SSIM_CUDA(cudaMemcpyAsync(maxima, d, sizeof maxima, cudaMemcpyDeviceToHost, l.stream));
    SSIM_CUDA(cudaMemcpyAsync(sums, d + 16, sizeof sums, cudaMemcpyDeviceToHost, l.stream));
    SSIM_CUDA(cudaStreamSynchronize(l.stream));
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
  impl->sync = DeviceBuffer(device, 32);
  SSIM_CUDA(cudaMemset(impl->sync.get(), 0, 32));
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
  if (g.one_process_per_gpu) return g.name + ", nccl, one process per GPU";
  return g.name + " x" + std::to_string(g.ranks) + ", nccl";
}

// -------------------------------------------------------------------------------------------

namespace {

struct RankState {
  int rank = 0;
  DeviceBuffer data;
  DeviceBuffer scratch;
  DeviceBuffer items;
  std::vector<std::byte> input;
  std::vector<std::byte> output;
  Event start, arrived, end;   // timing
  Event ready, copied;         // single-GPU transport ordering
  ncclComm_t split = nullptr;  // Phase1::nccl_rs, non-stragglers
  int key = -1;                // the chunk this member owns after phase 1
};

}  // namespace

struct CollectiveRun::Impl {
  DeviceGroup::Impl& group;
  PreparedCollective c;
  IterationSettings settings;
  std::vector<RankState> states;  // parallel to group.local

  Impl(DeviceGroup::Impl& g, PreparedCollective collective, IterationSettings s)
      : group(g), c(std::move(collective)), settings(s) {}
  Impl(const Impl&) = delete;
  Impl& operator=(const Impl&) = delete;
  ~Impl() {
    for (RankState& s : states) release_comm(s.split);
  }

  const DeviceRankPlan& device_plan(std::size_t i) const {
    return c.device[static_cast<std::size_t>(states[i].rank)];
  }
  const RankPlan& rank_plan(std::size_t i) const {
    return c.plan.rank_plans[static_cast<std::size_t>(states[i].rank)];
  }

  void setup();
  void split_communicator();
  void apply(std::size_t i, const DeviceStep& step);
  void issue_nccl_rounds();
  void issue_single_gpu_rounds();
  IterationResult run();
};

void CollectiveRun::Impl::setup() {
  if (c.plan.ranks != group.ranks) {
    throw InputError("collective for " + std::to_string(c.plan.ranks) +
                     " ranks on a device group of " + std::to_string(group.ranks));
  }
  if (group.transport == Transport::single_gpu && (c.nccl_allreduce || c.phase1)) {
    throw InputError("algorithm " + c.label +
                     " uses NCCL collectives, which the single-gpu transport does not run");
  }
  if (settings.delay.value < 0) throw InputError("the straggler delay must be >= 0");
  if (settings.delay.value > 0 && (settings.straggler < 0 || settings.straggler >= group.ranks)) {
    throw InputError("straggler rank " + std::to_string(settings.straggler) + " outside [0, " +
                     std::to_string(group.ranks) + ")");
  }
  const std::uint64_t bytes = c.plan.layout.padded_bytes();
  states.reserve(group.local.size());
  for (const LocalRank& l : group.local) {
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
    if (!dp.items.empty()) {
      SSIM_CUDA(cudaMemcpy(s.items.get(), dp.items.data(), dp.items.size() * sizeof(ApplyItem),
                           cudaMemcpyHostToDevice));
    }
    s.input.resize(bytes);
    fill_input(c.plan, l.rank, s.input);
    s.output.resize(bytes);
    s.start = Event(l.device, cudaEventDefault);
    s.arrived = Event(l.device, cudaEventDefault);
    s.end = Event(l.device, cudaEventDefault);
    s.ready = Event(l.device, cudaEventDisableTiming);
    s.copied = Event(l.device, cudaEventDisableTiming);
  }
  if (c.phase1) split_communicator();
}

void CollectiveRun::Impl::split_communicator() {
  const std::vector<int>& members = c.phase1->members;
  for (RankState& s : states) {
    auto it = std::find(members.begin(), members.end(), s.rank);
    s.key = it == members.end() ? -1 : static_cast<int>(it - members.begin());
  }
  // Collective over the parent communicator: every rank calls it, the straggler with
  // NCCL_SPLIT_NOCOLOR (it gets no communicator). One thread driving several ranks must
  // group the calls.
  SSIM_NCCL(ncclGroupStart());
  for (std::size_t i = 0; i < states.size(); ++i) {
    RankState& s = states[i];
    SSIM_NCCL(ncclCommSplit(group.local[i].comm, s.key >= 0 ? 0 : NCCL_SPLIT_NOCOLOR,
                            std::max(s.key, 0), &s.split, nullptr));
  }
  SSIM_NCCL(ncclGroupEnd());
}

void CollectiveRun::Impl::apply(std::size_t i, const DeviceStep& step) {
  if (step.waves.empty()) return;
  const LocalRank& l = group.local[i];
  RankState& s = states[i];
  const auto* items = reinterpret_cast<const ApplyItem*>(s.items.get());
  SSIM_CUDA(cudaSetDevice(l.device));
  for (const ApplyWave& w : step.waves) {
    SSIM_CUDA(launch_apply(kernel_dtype(c.plan.layout.dtype), s.data.get(), s.scratch.get(),
                           items + w.first, static_cast<int>(w.count), w.max_count,
                           kApplyBlocksPerSm * l.sm_count, l.stream));
  }
}

void CollectiveRun::Impl::issue_nccl_rounds() {
  const ncclDataType_t type = nccl_type(c.plan.layout.dtype);
  const BufferLayout& layout = c.plan.layout;
  for (int k = 0; k < c.plan.rounds; ++k) {
    const auto round = static_cast<std::size_t>(k);
    if (c.phase1 && k < c.phase1->rounds) {
      if (k > 0) continue;
      SSIM_NCCL(ncclGroupStart());
      for (std::size_t i = 0; i < states.size(); ++i) {
        RankState& s = states[i];
        if (!s.split) continue;
        SSIM_NCCL(ncclReduceScatter(s.data.get(), s.data.get() + layout.chunk_offset_bytes(s.key),
                                    layout.chunk_count, type, ncclSum, s.split,
                                    group.local[i].stream));
      }
      SSIM_NCCL(ncclGroupEnd());
      continue;
    }
    bool any = false;
    for (std::size_t i = 0; i < states.size() && !any; ++i)
      any = device_plan(i).step_at_round[round] >= 0;
    if (!any) continue;
    SSIM_NCCL(ncclGroupStart());
    for (std::size_t i = 0; i < states.size(); ++i) {
      const int idx = device_plan(i).step_at_round[round];
      if (idx < 0) continue;
      const Step& step = rank_plan(i).steps[static_cast<std::size_t>(idx)];
      const LocalRank& l = group.local[i];
      RankState& s = states[i];
      for (const P2P& p : step.sends)
        SSIM_NCCL(ncclSend(s.data.get() + p.offset, p.count, type, p.peer, l.comm, l.stream));
      for (const P2P& p : step.recvs)
        SSIM_NCCL(ncclRecv(s.scratch.get() + p.offset, p.count, type, p.peer, l.comm, l.stream));
    }
    SSIM_NCCL(ncclGroupEnd());
    for (std::size_t i = 0; i < states.size(); ++i) {
      const int idx = device_plan(i).step_at_round[round];
      if (idx >= 0) apply(i, device_plan(i).steps[static_cast<std::size_t>(idx)]);
    }
  }
}

void CollectiveRun::Impl::issue_single_gpu_rounds() {
  // Every rank is local and states[r] is rank r.
  const std::uint64_t elem = dtype_size(c.plan.layout.dtype);
  SSIM_CUDA(cudaSetDevice(group.local.front().device));
  std::vector<std::size_t> in_round;
  for (int k = 0; k < c.plan.rounds; ++k) {
    const auto round = static_cast<std::size_t>(k);
    in_round.clear();
    for (std::size_t i = 0; i < states.size(); ++i) {
      if (device_plan(i).step_at_round[round] >= 0) in_round.push_back(i);
    }
    if (in_round.empty()) continue;
    auto step_of = [&](std::size_t i) -> const Step& {
      return rank_plan(i).steps[static_cast<std::size_t>(device_plan(i).step_at_round[round])];
    };
    // Each rank marks where it reached the round: its data as of the round's start.
    for (std::size_t i : in_round)
      SSIM_CUDA(cudaEventRecord(states[i].ready.get(), group.local[i].stream));
    // Receivers copy once the sender has reached the round.
    for (std::size_t i : in_round) {
      const Step& step = step_of(i);
      if (step.recvs.empty()) continue;
      const DeviceStep& ds =
          device_plan(i).steps[static_cast<std::size_t>(device_plan(i).step_at_round[round])];
      const cudaStream_t stream = group.local[i].stream;
      for (std::size_t v = 0; v < step.recvs.size(); ++v) {
        const P2P& p = step.recvs[v];
        const RankState& sender = states[static_cast<std::size_t>(p.peer)];
        SSIM_CUDA(cudaStreamWaitEvent(stream, sender.ready.get(), 0));
        SSIM_CUDA(cudaMemcpyAsync(states[i].scratch.get() + p.offset,
                                  sender.data.get() + ds.recv_source_offsets[v], p.count * elem,
                                  cudaMemcpyDeviceToDevice, stream));
      }
      SSIM_CUDA(cudaEventRecord(states[i].copied.get(), stream));
    }
    // Senders may change their data only once their receivers have copied it.
    for (std::size_t i : in_round) {
      for (const P2P& p : step_of(i).sends) {
        SSIM_CUDA(cudaStreamWaitEvent(group.local[i].stream,
                                      states[static_cast<std::size_t>(p.peer)].copied.get(), 0));
      }
    }
    for (std::size_t i : in_round)
      apply(i, device_plan(i).steps[static_cast<std::size_t>(device_plan(i).step_at_round[round])]);
  }
}

IterationResult CollectiveRun::Impl::run() {
  const std::uint64_t bytes = c.plan.layout.padded_bytes();
  for (std::size_t i = 0; i < states.size(); ++i) {
    const LocalRank& l = group.local[i];
    SSIM_CUDA(cudaSetDevice(l.device));
    SSIM_CUDA(cudaMemcpyAsync(states[i].data.get(), states[i].input.data(), bytes,
                              cudaMemcpyHostToDevice, l.stream));
  }
  group.barrier();

  const bool delayed = settings.delay.value > 0;
  for (std::size_t i = 0; i < states.size(); ++i) {
    const LocalRank& l = group.local[i];
    RankState& s = states[i];
    SSIM_CUDA(cudaSetDevice(l.device));
    SSIM_CUDA(cudaEventRecord(s.start.get(), l.stream));
    if (delayed && s.rank == settings.straggler) {
      const double cycles = settings.delay.value * l.clock_khz * 1e3;
      SSIM_CUDA(launch_spin(static_cast<long long>(std::llround(cycles)), l.stream));
    }
    SSIM_CUDA(cudaEventRecord(s.arrived.get(), l.stream));
  }

  if (c.nccl_allreduce) {
    const ncclDataType_t type = nccl_type(c.plan.layout.dtype);
    SSIM_NCCL(ncclGroupStart());
    for (std::size_t i = 0; i < states.size(); ++i) {
      const LocalRank& l = group.local[i];
      SSIM_NCCL(ncclAllReduce(states[i].data.get(), states[i].data.get(), c.plan.layout.count, type,
                              ncclSum, l.comm, l.stream));
    }
    SSIM_NCCL(ncclGroupEnd());
  } else if (group.transport == Transport::nccl) {
    issue_nccl_rounds();
  } else {
    issue_single_gpu_rounds();
  }

  for (std::size_t i = 0; i < states.size(); ++i) {
    SSIM_CUDA(cudaSetDevice(group.local[i].device));
    SSIM_CUDA(cudaEventRecord(states[i].end.get(), group.local[i].stream));
  }
  double maxima[2] = {0, 0};  // time, delay
  for (std::size_t i = 0; i < states.size(); ++i) {
    RankState& s = states[i];
    SSIM_CUDA(cudaSetDevice(group.local[i].device));
    SSIM_CUDA(cudaEventSynchronize(s.end.get()));
    maxima[0] = std::max(maxima[0], elapsed(s.start, s.end).value);
    if (delayed && s.rank == settings.straggler) maxima[1] = elapsed(s.start, s.arrived).value;
  }

  IterationResult result;
  if (settings.check) {
    for (std::size_t i = 0; i < states.size(); ++i) {
      RankState& s = states[i];
      SSIM_CUDA(cudaSetDevice(group.local[i].device));
      SSIM_CUDA(cudaMemcpy(s.output.data(), s.data.get(), bytes, cudaMemcpyDeviceToHost));
      check_output(c.plan, s.rank, s.output, result.local);
    }
  }
  std::uint64_t sums[2] = {result.local.wrong, result.local.checked};
  group.combine(maxima, sums);
  result.time = Seconds{maxima[0]};
  result.delay = Seconds{maxima[1]};
  result.after_last_arrival = Seconds{std::max(0.0, maxima[0] - maxima[1])};
  if (settings.check) result.wrong = sums[0];
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

IterationResult CollectiveRun::run() { return impl_->run(); }

const PreparedCollective& CollectiveRun::collective() const { return impl_->c; }

}  // namespace ssim::gpu
