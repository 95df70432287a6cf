// The NCCL transport: ranks talk through NCCL communicators (ncclSend/ncclRecv per round in
// one group call; the `nccl` algorithm is one ncclAllReduce, Phase1::nccl_rs one
// ncclReduceScatter on a split communicator).
#include <cstring>
#include <numeric>

#include "gpu_backend/cuda/executor_impl.hpp"

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

std::string describe_nccl(const DeviceGroup::Impl& g) {
  if (g.one_process_per_gpu) return g.name + ", nccl, one process per GPU";
  return g.name + " x" + std::to_string(g.ranks) + ", nccl";
}

}  // namespace

constinit const TransportOps kNcclTransport{
    .kind = Transport::nccl,
    .nccl_collectives = true,
    .one_graph = false,
    .shared_start = false,
    .prepare = nullptr,
    .arrived = nullptr,
    .issue = &CollectiveRun::Impl::issue_nccl,
    .describe = &describe_nccl,
};

DeviceGroup DeviceGroup::all_local(int ranks) {
  require_ranks(ranks);
  require_devices(ranks, "the nccl transport with " + std::to_string(ranks) + " ranks");
  auto impl = std::make_unique<Impl>();
  impl->ops = &kNcclTransport;
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
  impl->ops = &kNcclTransport;
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

void CollectiveRun::Impl::issue_nccl() {
  if (!c.nccl_allreduce) {
    issue_nccl_rounds();
    return;
  }
  const ncclDataType_t type = nccl_type(c.plan.layout.dtype);
  NcclGroup group_call;
  for (std::size_t i = 0; i < states.size(); ++i) {
    const LocalRank& l = group.local[i];
    SSIM_NCCL(ncclAllReduce(states[i].data.get(), states[i].data.get(), c.plan.layout.count, type,
                            ncclSum, l.comm, l.stream));
  }
  group_call.end();
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

}  // namespace ssim::gpu
