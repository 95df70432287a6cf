// The direct transport: every rank in this process, rank r on devices[r] (one GPU, or GPUs
// with peer access); a round's kernel reads its senders' buffers directly (device_plan.hpp).
#include <algorithm>
#include <optional>

#include "gpu_backend/cuda/executor_impl.hpp"

namespace ssim::gpu {

namespace {

std::optional<testing::DirectDependency> g_skip;

// The test hook (executor.hpp): true for the one dependency a test asked to drop.
bool skip_dependency(int rank, int on, int round, char kind) {
  return g_skip && g_skip->rank == rank && g_skip->on == on && g_skip->round == round &&
         g_skip->kind == kind;
}

std::string describe_direct(const DeviceGroup::Impl& g) {
  bool one = true;
  for (const LocalRank& l : g.local) one = one && l.device == g.local.front().device;
  return one ? g.name + ", direct" : g.name + " x" + std::to_string(g.ranks) + ", direct";
}

}  // namespace

constinit const TransportOps kDirectTransport{
    .kind = Transport::direct,
    .nccl_collectives = false,
    .one_graph = true,
    .shared_start = true,
    .prepare = &CollectiveRun::Impl::prepare_direct,
    .arrived = &CollectiveRun::Impl::direct_arrived,
    .issue = &CollectiveRun::Impl::issue_direct_rounds,
    .describe = &describe_direct,
};

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
  impl->ops = &kDirectTransport;
  impl->ranks = ranks;
  for (int r = 0; r < ranks; ++r) impl->add_rank(r, devices[static_cast<std::size_t>(r)], nullptr);
  return DeviceGroup(std::move(impl));
}

// The direct transport's events: per round, after the rank's kernel and after its staged
// copies (only where it has them), and after its arrival; then its items.
void CollectiveRun::Impl::prepare_direct() {
  for (std::size_t i = 0; i < states.size(); ++i) {
    const LocalRank& l = group.local[i];
    const DeviceRankPlan& dp = device_plan(i);
    RankState& s = states[i];
    s.arrived = Event(l.device, cudaEventDisableTiming);
    s.after_round.resize(static_cast<std::size_t>(c.plan.rounds));
    s.staged_round.resize(static_cast<std::size_t>(c.plan.rounds));
    for (const DeviceStep& step : dp.steps) {
      const auto k = static_cast<std::size_t>(step.round);
      if (!step.waves.empty()) s.after_round[k] = Event(l.device, cudaEventDisableTiming);
      if (!step.staged.empty()) s.staged_round[k] = Event(l.device, cudaEventDisableTiming);
    }
  }
  upload_direct_items();
}

void CollectiveRun::Impl::direct_arrived(std::size_t i) {
  SSIM_CUDA(cudaEventRecord(states[i].arrived.get(), group.local[i].stream));
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

namespace testing {
void skip_direct_dependency(std::optional<DirectDependency> dependency) { g_skip = dependency; }
}  // namespace testing

}  // namespace ssim::gpu
