// The executor's two kernels, behind host launch functions. Each launch returns the launch
// error (cudaGetLastError) so the caller wraps it in SSIM_CUDA:
//
//   SSIM_CUDA(launch_apply(kDtypeFloat32, data, scratch, d_items, n_items, max_count,
//                          max_blocks, stream));
//   SSIM_CUDA(launch_spin(static_cast<long long>(0.005 * clock_khz * 1e3), stream));  // 5 ms
//
// apply: one launch applies all items of a step (grid.y = item); items of one launch must
// write disjoint data ranges, since they run in parallel (device_plan.hpp splits a step into
// such waves). spin: one thread busy-waits `cycles` SM clock cycles (clock64), the injected
// straggler delay.
#pragma once

#include <cuda_runtime_api.h>

#include <cstdint>

#include "gpu_backend/cuda/apply_item.hpp"

namespace ssim::gpu {

// Element type codes for the kernels; the same order as ssim::gpu::DType (plan.hpp), which
// this header does not include so that nvcc never sees the C++20 host headers.
inline constexpr int kDtypeFloat32 = 0;
inline constexpr int kDtypeFloat64 = 1;
inline constexpr int kDtypeInt32 = 2;
inline constexpr int kDtypeInt64 = 3;

// Threads per block of the apply kernel.
inline constexpr int kApplyThreads = 256;

// `items` is a device array of `n_items` (1..65535) items; `max_count` the largest count
// among them (sizes the grid); `max_blocks` caps the blocks over all items.
cudaError_t launch_apply(int dtype, void* data, const void* scratch, const ApplyItem* items,
                         int n_items, std::uint64_t max_count, int max_blocks, cudaStream_t stream);

cudaError_t launch_spin(long long cycles, cudaStream_t stream);

}  // namespace ssim::gpu
