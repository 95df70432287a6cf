// What the apply kernel reads: one reduce or copy of a received range, and how a thread
// block splits an item into an unaligned head, 16-byte vectors and a tail. Plain C++17 with
// host/device annotations under nvcc, so the host tests check the split and the kernel runs
// the same code.
//
//   ApplyItem item{/*dst=*/5, /*src=*/0, /*count=*/100, kApplyReduce};   // element offsets
//   const VectorSplit s = split_for_vectors(data_addr + 5 * 4, scratch_addr, 100, 4);
//   // [s.head, s.tail) as 16-byte vectors; scalar_element(s, j), j < scalar_count(s, 100),
//   // one by one: the unaligned head [0, s.head) and the tail [s.tail, 100)
#pragma once

#include <cstdint>

#if defined(__CUDACC__)
#define SSIM_HOST_DEVICE __host__ __device__
#else
#define SSIM_HOST_DEVICE
#endif

namespace ssim::gpu {

inline constexpr std::uint32_t kApplyReduce = 0;  // data[dst + i] += scratch[src + i]
inline constexpr std::uint32_t kApplyCopy = 1;    // data[dst + i] = scratch[src + i]

// Offsets and count in elements of the buffer's type (not bytes).
struct ApplyItem {
  std::uint64_t dst = 0;  // into the rank's data buffer
  std::uint64_t src = 0;  // into the rank's scratch buffer
  std::uint64_t count = 0;
  std::uint32_t op = kApplyCopy;
  std::uint32_t reserved = 0;
};

// What the direct transport's fused kernel reads (launch_direct, kernels.hpp): reduce or copy
// `count` elements from `src_addr` (a device address: the sender's data buffer, on this GPU
// or a peer GPU, or this rank's scratch where the source was staged) into the rank's data
// buffer at element `dst`.
struct DirectItem {
  std::uint64_t dst = 0;       // elements into the rank's data buffer
  std::uint64_t src_addr = 0;  // byte address of the first source element
  std::uint64_t count = 0;
  std::uint32_t op = kApplyCopy;
  std::uint32_t reserved = 0;
};

inline constexpr std::uint64_t kVectorBytes = 16;

// Elements [head, tail) are handled as whole 16-byte vectors: both addresses are 16-byte
// aligned there. That needs dst and src to share their offset modulo 16; when they do not
// (or the item is shorter than the head), head = tail = count and everything is scalar.
struct VectorSplit {
  std::uint64_t head = 0;
  std::uint64_t tail = 0;
};

SSIM_HOST_DEVICE inline VectorSplit split_for_vectors(std::uint64_t dst_addr,
                                                      std::uint64_t src_addr, std::uint64_t count,
                                                      std::uint64_t elem_size) {
  const std::uint64_t misalign = dst_addr % kVectorBytes;
  if (misalign != src_addr % kVectorBytes || misalign % elem_size != 0) return {count, count};
  const std::uint64_t head = ((kVectorBytes - misalign) % kVectorBytes) / elem_size;
  if (head >= count) return {count, count};
  const std::uint64_t per_vector = kVectorBytes / elem_size;
  const std::uint64_t vectors = (count - head) / per_vector;
  return {head, head + vectors * per_vector};
}

// The elements outside [head, tail): `j` in [0, scalar_count) names element
// scalar_element(split, j); together with the vectors every element is covered once.
SSIM_HOST_DEVICE inline std::uint64_t scalar_count(const VectorSplit& split, std::uint64_t count) {
  return split.head + (count - split.tail);
}
SSIM_HOST_DEVICE inline std::uint64_t scalar_element(const VectorSplit& split, std::uint64_t j) {
  return j < split.head ? j : split.tail + (j - split.head);
}

}  // namespace ssim::gpu
