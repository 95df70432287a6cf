// The timing kernels' launch priority on the CPU stand-in: every stamp and the delay spin are
// launched at the device's greatest priority (cudaDeviceGetStreamPriorityRange), eagerly and
// captured into graphs, for every transport; the data kernels at the default; a priority
// outside the range is refused; the spin ends at the start stamp + the delay.
#include <gtest/gtest.h>

#include <cstdint>
#include <string>
#include <vector>

#include "gpu_backend/cuda/executor.hpp"
#include "gpu_backend/cuda/kernels.hpp"
#include "tests/gpu_emulated/emulator.hpp"

namespace ssim::gpu {
namespace {

class StampPriority : public ::testing::Test {
 protected:
  void SetUp() override { emu::reset(emu::Config{8, 4}); }
  void TearDown() override {
    EXPECT_EQ(emu::faults(), std::vector<std::string>{});
    emu::reset();
  }
};

PreparedCollective ring(int n) {
  return prepare_collective(
      {"ring", n, alg::Options{}, 4096, lowering::DType::float32, Phase1::schedule});
}

// Ring over 4 ranks has 6 rounds, every rank in each: per rank start, arrival, 6 round ends
// and finish = 9 stamps, plus the straggler's spin: 4 * 9 + 1 = 37 priority kernels per body.
// With every rank on one GPU (direct, single-gpu) one shared start stamp stands for every
// rank's start and for the arrival of all but the straggler: 1 + 4 * 7 + 1 (the straggler's
// arrival) + 1 (its spin) = 31.
TEST_F(StampPriority, StampsAndSpinRunAtTheGreatestPriority) {
  int least = 1, greatest = 1;
  ASSERT_EQ(cudaDeviceGetStreamPriorityRange(&least, &greatest), cudaSuccess);
  EXPECT_EQ(least, 0);
  EXPECT_LT(greatest, least);
  for (Transport t : {Transport::direct, Transport::single_gpu, Transport::nccl}) {
    for (Launch launch : {Launch::graph, Launch::eager}) {
      emu::reset(emu::Config{8, 4});
      DeviceGroup group = t == Transport::direct       ? DeviceGroup::direct(4, {0, 0, 0, 0})
                          : t == Transport::single_gpu ? DeviceGroup::single_gpu(4, 0)
                                                       : DeviceGroup::all_local(4);
      IterationSettings s{Seconds{1e-4}, 3};
      s.launch = launch;
      CollectiveRun run(group, ring(4), s);
      const IterationResult r = run.run(true);
      EXPECT_EQ(r.wrong, std::optional<std::uint64_t>(0));
      EXPECT_EQ(emu::counters().priority_kernels, t == Transport::nccl ? 37u : 31u)
          << to_string(t) << " " << to_string(launch);
    }
  }
}

TEST_F(StampPriority, APriorityOutsideTheRangeIsRefused) {
  cudaStream_t stream = nullptr;
  ASSERT_EQ(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking), cudaSuccess);
  void* slot = nullptr;
  ASSERT_EQ(cudaMalloc(&slot, 8), cudaSuccess);
  EXPECT_EQ(launch_stamp(static_cast<std::uint64_t*>(slot), emu::kGreatestPriority - 1, stream),
            cudaErrorInvalidValue);
  EXPECT_EQ(emu::faults().size(), 1u);
  EXPECT_EQ(emu::counters().priority_kernels, 0u);
  // A fault leaves the device's sticky error set, as on a GPU: start over.
  emu::reset(emu::Config{8, 4});
  ASSERT_EQ(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking), cudaSuccess);
  ASSERT_EQ(cudaMalloc(&slot, 8), cudaSuccess);
  EXPECT_EQ(launch_stamp(static_cast<std::uint64_t*>(slot), emu::kGreatestPriority, stream),
            cudaSuccess);
  EXPECT_EQ(cudaStreamSynchronize(stream), cudaSuccess);
  EXPECT_EQ(emu::counters().priority_kernels, 1u);
}

// The spin waits until its start stamp + the delay: when it starts late (here its stream first
// waits 3 ms for another stream), the arrival is still 5 ms after the start stamp, not 8.
TEST_F(StampPriority, TheSpinEndsAtTheStartStampPlusTheDelay) {
  cudaStream_t a = nullptr, b = nullptr;
  ASSERT_EQ(cudaStreamCreateWithFlags(&a, cudaStreamNonBlocking), cudaSuccess);
  ASSERT_EQ(cudaStreamCreateWithFlags(&b, cudaStreamNonBlocking), cudaSuccess);
  void* host = nullptr;
  ASSERT_EQ(cudaHostAlloc(&host, 3 * sizeof(std::uint64_t), cudaHostAllocMapped), cudaSuccess);
  auto* slots = static_cast<std::uint64_t*>(host);
  cudaEvent_t busy = nullptr;
  ASSERT_EQ(cudaEventCreateWithFlags(&busy, cudaEventDisableTiming), cudaSuccess);
  const int p = emu::kGreatestPriority;
  ASSERT_EQ(launch_stamp(&slots[0], p, a), cudaSuccess);  // a's start
  ASSERT_EQ(launch_stamp(&slots[2], p, b), cudaSuccess);
  ASSERT_EQ(launch_spin(&slots[2], 3'000'000, p, b), cudaSuccess);  // b busy for 3 ms
  ASSERT_EQ(cudaEventRecord(busy, b), cudaSuccess);
  ASSERT_EQ(cudaStreamWaitEvent(a, busy, 0), cudaSuccess);  // a's spin starts ~3 ms late
  ASSERT_EQ(launch_spin(&slots[0], 5'000'000, p, a), cudaSuccess);
  ASSERT_EQ(launch_stamp(&slots[1], p, a), cudaSuccess);  // a's arrival
  ASSERT_EQ(cudaStreamSynchronize(a), cudaSuccess);
  EXPECT_EQ(slots[1] - slots[0], 5'000'000u);
  EXPECT_EQ(cudaEventDestroy(busy), cudaSuccess);
  EXPECT_EQ(cudaFreeHost(host), cudaSuccess);
}

}  // namespace
}  // namespace ssim::gpu
