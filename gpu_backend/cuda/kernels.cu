#include <algorithm>

#include "gpu_backend/cuda/kernels.hpp"

namespace ssim::gpu {

namespace {

template <class T>
struct alignas(kVectorBytes) Pack {
  static constexpr int kSize = static_cast<int>(kVectorBytes / sizeof(T));
  T v[kSize];
};

// Block (x, y) works on item y; the x blocks of an item stride over it. Each item's aligned
// middle goes as 16-byte vectors, its unaligned head and tail element by element.
template <class T>
__global__ void apply_kernel(T* __restrict__ data, const T* __restrict__ scratch,
                             const ApplyItem* __restrict__ items) {
  const ApplyItem item = items[blockIdx.y];
  T* dst = data + item.dst;
  const T* src = scratch + item.src;
  const VectorSplit split =
      split_for_vectors(reinterpret_cast<std::uint64_t>(dst), reinterpret_cast<std::uint64_t>(src),
                        item.count, sizeof(T));
  const bool reduce = item.op == kApplyReduce;
  const std::uint64_t first = static_cast<std::uint64_t>(blockIdx.x) * blockDim.x + threadIdx.x;
  const std::uint64_t stride = static_cast<std::uint64_t>(gridDim.x) * blockDim.x;

  Pack<T>* dv = reinterpret_cast<Pack<T>*>(dst + split.head);
  const Pack<T>* sv = reinterpret_cast<const Pack<T>*>(src + split.head);
  const std::uint64_t vectors = (split.tail - split.head) / Pack<T>::kSize;
  for (std::uint64_t i = first; i < vectors; i += stride) {
    const Pack<T> s = sv[i];
    if (reduce) {
      Pack<T> d = dv[i];
#pragma unroll
      for (int k = 0; k < Pack<T>::kSize; ++k) d.v[k] += s.v[k];
      dv[i] = d;
    } else {
      dv[i] = s;
    }
  }

  const std::uint64_t scalars = scalar_count(split, item.count);
  for (std::uint64_t j = first; j < scalars; j += stride) {
    const std::uint64_t e = scalar_element(split, j);
    if (reduce) {
      dst[e] += src[e];
    } else {
      dst[e] = src[e];
    }
  }
}

__global__ void spin_kernel(long long cycles) {
  const long long start = clock64();
  while (clock64() - start < cycles) {
  }
}

template <class T>
cudaError_t launch_typed(void* data, const void* scratch, const ApplyItem* items, int n_items,
                         std::uint64_t max_count, int max_blocks, cudaStream_t stream) {
  if (n_items < 1 || n_items > 65535 || max_blocks < 1) return cudaErrorInvalidValue;
  const std::uint64_t per_block = static_cast<std::uint64_t>(kApplyThreads) * Pack<T>::kSize;
  const std::uint64_t wanted = std::max<std::uint64_t>(1, (max_count + per_block - 1) / per_block);
  const std::uint64_t cap = std::max(1, max_blocks / n_items);
  const dim3 grid(static_cast<unsigned>(std::min(wanted, cap)), static_cast<unsigned>(n_items));
  apply_kernel<T><<<grid, kApplyThreads, 0, stream>>>(static_cast<T*>(data),
                                                      static_cast<const T*>(scratch), items);
  return cudaGetLastError();
}

}  // namespace

cudaError_t launch_apply(int dtype, void* data, const void* scratch, const ApplyItem* items,
                         int n_items, std::uint64_t max_count, int max_blocks,
                         cudaStream_t stream) {
  switch (dtype) {
    case kDtypeFloat32:
      return launch_typed<float>(data, scratch, items, n_items, max_count, max_blocks, stream);
    case kDtypeFloat64:
      return launch_typed<double>(data, scratch, items, n_items, max_count, max_blocks, stream);
    case kDtypeInt32:
      return launch_typed<int>(data, scratch, items, n_items, max_count, max_blocks, stream);
    case kDtypeInt64:
      return launch_typed<long long>(data, scratch, items, n_items, max_count, max_blocks, stream);
  }
  return cudaErrorInvalidValue;
}

cudaError_t launch_spin(long long cycles, cudaStream_t stream) {
  if (cycles < 0) return cudaErrorInvalidValue;
  spin_kernel<<<1, 1, 0, stream>>>(cycles);
  return cudaGetLastError();
}

}  // namespace ssim::gpu
