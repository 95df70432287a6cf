// The single-GPU transport: every rank on one GPU with its own buffers and stream; a receive
// is a copy on the receiver's stream once the sender has reached the round (events).
#include <vector>

#include "gpu_backend/cuda/executor_impl.hpp"

namespace ssim::gpu {

namespace {

std::string describe_single_gpu(const DeviceGroup::Impl& g) { return g.name + ", single-gpu"; }

}  // namespace

constinit const TransportOps kSingleGpuTransport{
    .kind = Transport::single_gpu,
    .nccl_collectives = false,
    .one_graph = true,
    .shared_start = true,
    .prepare = nullptr,
    .arrived = nullptr,
    .issue = &CollectiveRun::Impl::issue_single_gpu_rounds,
    .describe = &describe_single_gpu,
};

DeviceGroup DeviceGroup::single_gpu(int ranks, int device) {
  require_ranks(ranks);
  require_devices(device + 1, "the single-gpu transport on GPU " + std::to_string(device));
  auto impl = std::make_unique<Impl>();
  impl->ops = &kSingleGpuTransport;
  impl->ranks = ranks;
  for (int r = 0; r < ranks; ++r) impl->add_rank(r, device, nullptr);
  return DeviceGroup(std::move(impl));
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

}  // namespace ssim::gpu
