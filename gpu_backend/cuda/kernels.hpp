// The executor's kernels, behind host launch functions. Each launch returns the launch error
// (cudaGetLastError) so the caller wraps it in SSIM_CUDA:
//
//   SSIM_CUDA(launch_stamp(&stamps[0], prio, stream));              // %globaltimer -> stamps[0]
//   SSIM_CUDA(launch_spin(&stamps[0], 5'000'000, prio, stream));    // until stamps[0] + 5 ms
//   SSIM_CUDA(launch_apply(kDtypeFloat32, data, scratch, d_items, n_items, max_count,
//                          max_blocks, stream));
//   SSIM_CUDA(launch_fill(kDtypeFloat32, data, count, padded, rank, modulus, max_blocks, stream));
//   SSIM_CUDA(launch_count_wrong(kDtypeFloat32, data, count, sums, d_wrong, max_blocks, stream));
//
// apply: one launch applies all items of a step (grid.y = item); items of one launch must
// write disjoint data ranges, since they run in parallel (device_plan.hpp splits a step into
// such waves). stamp: one thread writes the device's global nanosecond timer (%globaltimer) to
// a slot (mapped host memory, so the host can read it while the GPU still runs). spin: one
// thread busy-waits until %globaltimer reaches the start stamp + `ns`: the injected
// straggler delay, on the same clock as the stamps. Both at a launch priority (below). fill: the
// check's input (input_value_int below, with the modulus value_modulus(dtype, ranks) of
// host_executor.hpp) for elements [0, count), 0 for the padding up to padded_count. count_wrong:
// adds to *wrong the elements of [0, count) that differ from the AllReduce's exact result,
// sums.value[i % kInputPeriod].
//
// tests/gpu_emulated/kernels_cpu.cpp implements the same functions on the CPU stand-in.
#pragma once

#include <cuda_runtime_api.h>

#include <cstdint>

#include "gpu_backend/cuda/apply_item.hpp"

namespace ssim::gpu {

// Element type codes for the kernels; the same order as lowering::DType (lowering/plan.hpp), which
// this header does not include so that nvcc never sees the C++20 host headers. The 16-bit
// types reduce in their own precision; fill writes input_value_int with the caller's modulus
// M = value_modulus(dtype, ranks) (host_executor.hpp), so every partial sum is an integer
// within the type's exact integers (2048 for half, 256 for bfloat16) and the check is exact.
inline constexpr int kDtypeFloat32 = 0;
inline constexpr int kDtypeFloat64 = 1;
inline constexpr int kDtypeInt32 = 2;
inline constexpr int kDtypeInt64 = 3;
inline constexpr int kDtypeFloat16 = 4;   // __half; sums in half precision, as NCCL's
inline constexpr int kDtypeBfloat16 = 5;  // __nv_bfloat16

// Threads per block of the apply, fill and check kernels.
inline constexpr int kApplyThreads = 256;
// 16-byte vectors each thread of a direct-kernel block moves per tile (loads first, then
// stores: several loads in flight per thread).
inline constexpr int kDirectVectorsPerThread = 4;

// The check's input values, the host executor's input_value (host_executor.hpp) as integers:
// rank r's element i is ((r + 1) * (i mod 61 + 1)) mod M + 1, M the modulus (1031 for the
// 32- and 64-bit types, smaller for the 16-bit ones at many ranks).
inline constexpr std::uint64_t kInputPeriod = 61;
SSIM_HOST_DEVICE inline std::uint64_t input_value_int(int rank, std::uint64_t element,
                                                      std::uint64_t modulus) {
  return (static_cast<std::uint64_t>(rank) + 1) * (element % kInputPeriod + 1) % modulus + 1;
}

// The AllReduce's exact result per residue i mod kInputPeriod.
struct ExpectedSums {
  double value[kInputPeriod];
};

// `items` is a device array of `n_items` (1..65535) items; `max_count` the largest count
// among them (sizes the grid); `max_blocks` caps the blocks over all items.
cudaError_t launch_apply(int dtype, void* data, const void* scratch, const ApplyItem* items,
                         int n_items, std::uint64_t max_count, int max_blocks, cudaStream_t stream);

// A device-to-device copy of `bytes` bytes as a kernel: 16-byte vectors when both addresses are
// 16-byte aligned (the rest byte by byte), the grid capped at `max_blocks` blocks.
cudaError_t launch_copy(void* dst, const void* src, std::uint64_t bytes, int max_blocks,
                        cudaStream_t stream);

// The direct transport's fused kernel: for each of the `n_items` (1..65535) items, loads the
// source (another rank's data buffer, directly) and reduces it into, or copies it over, `data`,
// writing once. Items of one launch must write disjoint ranges (as apply's). Each block does a
// bounded tile of one item and exits (kDirectVectorsPerThread 16-byte vectors per thread), so
// blocks keep finishing and a higher-priority kernel gets an SM quickly; `max_blocks` caps the
// grid's x extent beyond which blocks stride.
cudaError_t launch_direct(int dtype, void* data, const DirectItem* items, int n_items,
                          std::uint64_t max_count, int max_blocks, cudaStream_t stream);

// The timing kernels run at `priority` (the launch attribute cudaLaunchAttributePriority,
// also kept by graph kernel nodes; pass the device's greatest priority from
// cudaDeviceGetStreamPriorityRange) so that the block scheduler gives them the next free SM
// slot ahead of the data kernels of other ranks: a stamp measures when its stream got there,
// not how long it queued. spin: busy-waits until %globaltimer reaches *start + ns, `start`
// the slot of the rank's start stamp (written by the stamp kernel before it on the stream),
// so a spin that starts late does not add its queueing to the delay.
cudaError_t launch_spin(const std::uint64_t* start, std::uint64_t ns, int priority,
                        cudaStream_t stream);
cudaError_t launch_stamp(std::uint64_t* slot, int priority, cudaStream_t stream);
cudaError_t launch_fill(int dtype, void* data, std::uint64_t count, std::uint64_t padded_count,
                        int rank, std::uint64_t modulus, int max_blocks, cudaStream_t stream);
cudaError_t launch_count_wrong(int dtype, const void* data, std::uint64_t count,
                               const ExpectedSums& sums, unsigned long long* wrong, int max_blocks,
                               cudaStream_t stream);

}  // namespace ssim::gpu
