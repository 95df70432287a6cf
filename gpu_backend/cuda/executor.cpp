#include "gpu_backend/cuda/executor.hpp"

#include <cuda_runtime.h>
#include <nccl.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <exception>
#include <thread>
#include <utility>

#include "common/error.hpp"
#include "gpu_backend/cuda/check.hpp"
#include "gpu_backend/cuda/executor_impl.hpp"
#include "gpu_backend/cuda/kernels.hpp"

namespace ssim::gpu {

std::string device_name(int device) {
  cudaDeviceProp p{};
  SSIM_CUDA(cudaGetDeviceProperties(&p, device));
  return p.name;
}

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

DeviceGroup::DeviceGroup(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}
DeviceGroup::DeviceGroup(DeviceGroup&&) noexcept = default;
DeviceGroup& DeviceGroup::operator=(DeviceGroup&&) noexcept = default;
DeviceGroup::~DeviceGroup() = default;

Transport DeviceGroup::transport() const { return impl_->ops->kind; }
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

std::string DeviceGroup::description() const { return impl_->ops->describe(*impl_); }

// -------------------------------------------------------------------------------------------

namespace {

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

void CollectiveRun::Impl::setup() {
  if (c.plan.ranks != group.ranks) {
    throw InputError("collective for " + std::to_string(c.plan.ranks) +
                     " ranks on a device group of " + std::to_string(group.ranks));
  }
  if (!group.ops->nccl_collectives && (c.nccl_allreduce || c.phase1)) {
    throw InputError("algorithm " + c.label + " uses NCCL collectives, which the " +
                     std::string(to_string(group.ops->kind)) + " transport does not run");
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
    if (split) {
      s.split = split->comms[i];
      auto it = std::find(split->members.begin(), split->members.end(), l.rank);
      s.key = it == split->members.end() ? -1 : static_cast<int>(it - split->members.begin());
    }
  }
  if (group.ops->prepare) (this->*group.ops->prepare)();
  group.synchronize_local();  // the item uploads read pageable host memory
  if (settings.launch == Launch::graph) capture();
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
    if (group.ops->arrived) (this->*group.ops->arrived)(i);
  }
  (this->*group.ops->issue)();
  for (std::size_t i = 0; i < states.size(); ++i) stamp(i, finish_slot());
}

// Captures the body: NCCL, one graph per rank stream (NCCL's grouped calls across the
// captured streams of one thread); single-GPU and direct, one graph that forks from rank 0's
// stream over every rank's stream and joins back.
void CollectiveRun::Impl::capture() {
  const bool single = group.ops->one_graph;
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
    cudaGraph_t graph = nullptr;
    SSIM_CUDA(cudaStreamEndCapture(group.local[i].stream, &graph));
    states[i].graph = Graph(group.local[i].device, graph);
  }
  for (std::size_t i = 0; i < states.size(); ++i) {
    if (single && i > 0) break;
    SSIM_CUDA(cudaSetDevice(group.local[i].device));
    cudaGraphExec_t exec = nullptr;
    SSIM_CUDA(cudaGraphInstantiate(&exec, states[i].graph.get(), 0));
    states[i].exec = GraphExec(group.local[i].device, exec);
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
    const std::size_t graphs = group.ops->one_graph ? 1 : states.size();
    for (std::size_t i = 0; i < graphs; ++i) {
      SSIM_CUDA(cudaSetDevice(group.local[i].device));
      SSIM_CUDA(cudaGraphLaunch(states[i].exec.get(), group.local[i].stream));
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
  IterationTotals t;  // over this process's ranks; then (combine) over every process
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
    t.max.finish = std::max(t.max.finish, rs.finish);
    t.max.first_arrival_neg = std::max(t.max.first_arrival_neg, UINT64_MAX - rs.arrival);
    t.max.last_arrival = std::max(t.max.last_arrival, rs.arrival);
    if (settings.delay.value > 0 && rs.rank == settings.straggler)
      t.max.straggler_delay = rs.arrival - rs.start;
    const std::uint64_t own = rs.finish - rs.start;
    t.max.longest_own = std::max(t.max.longest_own, own);
    t.max.shortest_own_neg = std::max(t.max.shortest_own_neg, UINT64_MAX - own);
    if (rs.rank == 0) t.max.rank0_own = own;
    t.sum.own += own;
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
    t.sum.wrong = result.local.wrong;
    t.sum.checked = result.local.checked;
  }
  group.combine(t, *deadline);
  const std::uint64_t min_arrival = UINT64_MAX - t.max.first_arrival_neg;
  result.origin = min_arrival;
  result.time = Seconds{static_cast<double>(t.max.finish - min_arrival) * 1e-9};
  result.after_last_arrival =
      Seconds{static_cast<double>(t.max.finish - t.max.last_arrival) * 1e-9};
  result.delay = Seconds{static_cast<double>(t.max.straggler_delay) * 1e-9};
  double rank_time_ns = 0;
  switch (settings.average) {
    case RankAverage::rank0:
      rank_time_ns = static_cast<double>(t.max.rank0_own);
      break;
    case RankAverage::mean:
      rank_time_ns = static_cast<double>(t.sum.own) / static_cast<double>(c.plan.ranks);
      break;
    case RankAverage::min:
      rank_time_ns = static_cast<double>(UINT64_MAX - t.max.shortest_own_neg);
      break;
    case RankAverage::max:
      rank_time_ns = static_cast<double>(t.max.longest_own);
      break;
  }
  result.rank_time = Seconds{rank_time_ns * 1e-9};
  if (check) result.wrong = t.sum.wrong;
  result.checked = t.sum.checked;
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

const PreparedCollective& CollectiveRun::collective() const { return impl_->c; }

}  // namespace ssim::gpu
