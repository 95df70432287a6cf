// The kernels' CPU versions (kernels_cpu.cpp) behind kernels.hpp, every element type including
// half and bfloat16: fill, reduce through the apply kernel, count wrong elements; and the
// 16-bit conversions they rest on.
#include <gtest/gtest.h>
#include <nccl.h>

#include <cstdint>
#include <string>
#include <vector>

#include "gpu_backend/cuda/kernels.hpp"
#include "gpu_backend/host_executor.hpp"
#include "tests/gpu_emulated/emulator.hpp"
#include "tests/gpu_emulated/half.hpp"

namespace ssim::gpu {
namespace {

TEST(EmulatedHalf, ConversionsRoundToNearestEven) {
  for (int i = -2048; i <= 2048; ++i)
    ASSERT_EQ(emu::to_float(emu::to_half(static_cast<float>(i))), static_cast<float>(i)) << i;
  EXPECT_EQ(emu::to_float(emu::to_half(2049.0f)), 2048.0f);  // ties to even
  EXPECT_EQ(emu::to_float(emu::to_half(2051.0f)), 2052.0f);
  EXPECT_EQ(emu::to_float(emu::to_half(65504.0f)), 65504.0f);
  EXPECT_EQ(emu::to_float(emu::to_half(1e-7f)), 1.0f / (1 << 24) * 2);  // a subnormal
  EXPECT_EQ(emu::to_float(emu::to_half(0.1f)), 0.0999755859375f);
  for (int i = -256; i <= 256; ++i)
    ASSERT_EQ(emu::to_float(emu::to_bfloat16(static_cast<float>(i))), static_cast<float>(i)) << i;
  EXPECT_EQ(emu::to_float(emu::to_bfloat16(257.0f)), 256.0f);
  EXPECT_EQ(emu::to_float(emu::to_bfloat16(259.0f)), 260.0f);
}

ExpectedSums sums_for(int ranks, std::uint64_t modulus) {
  ExpectedSums s{};
  for (std::uint64_t j = 0; j < kInputPeriod; ++j) {
    for (int r = 0; r < ranks; ++r)
      s.value[j] += static_cast<double>(input_value_int(r, j, modulus));
  }
  return s;
}

// `ranks` buffers filled as ranks 0..n-1 with inputs of modulus M, reduced into rank 0's by
// apply kernels, checked.
std::uint64_t reduce_and_count(int dtype, std::size_t elem, int ranks, std::uint64_t count,
                               std::uint64_t modulus) {
  emu::reset(emu::Config{1, 4});
  cudaStream_t s;
  cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking);
  std::vector<void*> bufs(static_cast<std::size_t>(ranks));
  for (int r = 0; r < ranks; ++r) {
    cudaMalloc(&bufs[static_cast<std::size_t>(r)], count * elem);
    EXPECT_EQ(launch_fill(dtype, bufs[static_cast<std::size_t>(r)], count, count, r, modulus, 8, s),
              cudaSuccess);
  }
  const ApplyItem item{0, 0, count, kApplyReduce, 0};
  void* items = nullptr;
  cudaMalloc(&items, sizeof item);
  cudaMemcpyAsync(items, &item, sizeof item, cudaMemcpyHostToDevice, s);
  for (int r = 1; r < ranks; ++r) {
    EXPECT_EQ(launch_apply(dtype, bufs[0], bufs[static_cast<std::size_t>(r)],
                           static_cast<const ApplyItem*>(items), 1, count, 8, s),
              cudaSuccess);
  }
  void* wrong = nullptr;
  cudaMalloc(&wrong, 8);
  cudaMemsetAsync(wrong, 0, 8, s);
  EXPECT_EQ(launch_count_wrong(dtype, bufs[0], count, sums_for(ranks, modulus),
                               static_cast<unsigned long long*>(wrong), 8, s),
            cudaSuccess);
  unsigned long long out = 0;
  cudaMemcpyAsync(&out, wrong, 8, cudaMemcpyDeviceToHost, s);
  EXPECT_EQ(cudaStreamSynchronize(s), cudaSuccess);
  EXPECT_TRUE(emu::faults().empty());
  emu::reset();
  return out;
}

TEST(EmulatedKernels, FillReduceAndCheckEveryType) {
  EXPECT_EQ(reduce_and_count(kDtypeFloat32, 4, 16, 1000, 1031), 0u);
  EXPECT_EQ(reduce_and_count(kDtypeFloat64, 8, 16, 1000, 1031), 0u);
  EXPECT_EQ(reduce_and_count(kDtypeInt32, 4, 16, 1000, 1031), 0u);
  EXPECT_EQ(reduce_and_count(kDtypeInt64, 8, 16, 1000, 1031), 0u);
  // With the modulus of value_modulus every 16-bit sum is exact, up to the rank limit.
  for (int n : {2, 4, 16, 128, 1024}) {
    EXPECT_EQ(
        reduce_and_count(kDtypeFloat16, 2, n, 200, value_modulus(lowering::DType::float16, n)), 0u)
        << n;
  }
  for (int n : {2, 4, 16, 128}) {
    EXPECT_EQ(
        reduce_and_count(kDtypeBfloat16, 2, n, 200, value_modulus(lowering::DType::bfloat16, n)),
        0u)
        << n;
  }
  // With the 32-bit types' modulus 1031 the 16-bit sums round, and the check sees it.
  EXPECT_GT(reduce_and_count(kDtypeFloat16, 2, 16, 1000, 1031), 0u);
  EXPECT_GT(reduce_and_count(kDtypeBfloat16, 2, 4, 61, 1031), 0u);
}

TEST(EmulatedKernels, FillRejectsAZeroModulus) {
  emu::reset(emu::Config{1, 4});
  cudaStream_t s;
  cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking);
  void* buf = nullptr;
  cudaMalloc(&buf, 64);
  EXPECT_EQ(launch_fill(kDtypeFloat16, buf, 32, 32, 0, 0, 8, s), cudaErrorInvalidValue);
  emu::reset();
}

// The stand-in's ncclAllReduce in half precision: 1000.5 + 1000.5 = 2001 is exact, + 0.5 is
// 2001.5, between two halves (spacing 1 above 1024): ties to even, 2002.
TEST(EmulatedKernels, NcclAllReduceInHalfPrecision) {
  emu::reset(emu::Config{3, 4});
  ncclComm_t comms[3];
  const int devs[3] = {0, 1, 2};
  ASSERT_EQ(ncclCommInitAll(comms, 3, devs), ncclSuccess);
  const float in[3] = {1000.5f, 1000.5f, 0.5f};
  std::vector<emu::Half> host(3);
  std::vector<void*> buf(3);
  std::vector<cudaStream_t> st(3);
  for (int r = 0; r < 3; ++r) {
    cudaSetDevice(r);
    cudaStreamCreateWithFlags(&st[r], cudaStreamNonBlocking);
    cudaMalloc(&buf[r], 2);
    host[r] = emu::to_half(in[r]);
    cudaMemcpyAsync(buf[r], &host[r], 2, cudaMemcpyHostToDevice, st[r]);
  }
  ncclGroupStart();
  for (int r = 0; r < 3; ++r)
    ncclAllReduce(buf[r], buf[r], 1, ncclFloat16, ncclSum, comms[r], st[r]);
  ASSERT_EQ(ncclGroupEnd(), ncclSuccess);
  for (int r = 0; r < 3; ++r) {
    emu::Half out;
    cudaSetDevice(r);
    cudaMemcpyAsync(&out, buf[r], 2, cudaMemcpyDeviceToHost, st[r]);
    ASSERT_EQ(cudaStreamSynchronize(st[r]), cudaSuccess);
    EXPECT_EQ(emu::to_float(out), 2002.0f);
  }
  emu::reset();
}

}  // namespace
}  // namespace ssim::gpu
