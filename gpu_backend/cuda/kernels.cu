#include <cuda_bf16.h>
#include <cuda_fp16.h>

#include <algorithm>

#include "gpu_backend/cuda/kernels.hpp"

namespace ssim::gpu {

namespace {

// Element conversions: arithmetic types as they are, the 16-bit types through float.
template <class T>
__device__ __forceinline__ T from_float(float v) {
  return static_cast<T>(v);
}
template <>
__device__ __forceinline__ __half from_float<__half>(float v) {
  return __float2half_rn(v);
}
template <>
__device__ __forceinline__ __nv_bfloat16 from_float<__nv_bfloat16>(float v) {
  return __float2bfloat16_rn(v);
}
template <class T>
__device__ __forceinline__ double to_double(T v) {
  return static_cast<double>(v);
}
template <>
__device__ __forceinline__ double to_double<__half>(__half v) {
  return static_cast<double>(__half2float(v));
}
template <>
__device__ __forceinline__ double to_double<__nv_bfloat16>(__nv_bfloat16 v) {
  return static_cast<double>(__bfloat162float(v));
}
template <class T>
__device__ __forceinline__ T from_u64(std::uint64_t v) {
  return static_cast<T>(v);
}
template <>
__device__ __forceinline__ __half from_u64<__half>(std::uint64_t v) {
  return __float2half_rn(static_cast<float>(v));
}
template <>
__device__ __forceinline__ __nv_bfloat16 from_u64<__nv_bfloat16>(std::uint64_t v) {
  return __float2bfloat16_rn(static_cast<float>(v));
}

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

// The direct transport's fused kernel. Block (x, y) works on item y, on tiles of
// blockDim.x * kDirectVectorsPerThread vectors: tile t = blockIdx.x, blockIdx.x + gridDim.x, ...
// (one tile per block unless the grid was capped). Each thread first loads its vectors of the
// source (and, to reduce, of its own data), then adds and stores, so several loads per thread
// are in flight; consecutive threads touch consecutive vectors (coalesced). The source is read
// once, the destination read once (reduce) and written once: 3 bytes of traffic per reduced
// byte, 2 per copied byte. The unaligned head and tail go element by element.
template <class T>
__global__ void direct_kernel(T* __restrict__ data, const DirectItem* __restrict__ items) {
  const DirectItem item = items[blockIdx.y];
  T* dst = data + item.dst;
  const T* src = reinterpret_cast<const T*>(item.src_addr);
  const VectorSplit split =
      split_for_vectors(reinterpret_cast<std::uint64_t>(dst), item.src_addr, item.count, sizeof(T));
  const bool reduce = item.op == kApplyReduce;
  constexpr int kU = kDirectVectorsPerThread;
  Pack<T>* dv = reinterpret_cast<Pack<T>*>(dst + split.head);
  const Pack<T>* sv = reinterpret_cast<const Pack<T>*>(src + split.head);
  const std::uint64_t vectors = (split.tail - split.head) / Pack<T>::kSize;
  const std::uint64_t tile = static_cast<std::uint64_t>(blockDim.x) * kU;
  for (std::uint64_t base = static_cast<std::uint64_t>(blockIdx.x) * tile; base < vectors;
       base += static_cast<std::uint64_t>(gridDim.x) * tile) {
    Pack<T> s[kU];
    Pack<T> d[kU];
#pragma unroll
    for (int u = 0; u < kU; ++u) {
      const std::uint64_t i = base + static_cast<std::uint64_t>(u) * blockDim.x + threadIdx.x;
      if (i < vectors) s[u] = sv[i];
    }
    if (reduce) {
#pragma unroll
      for (int u = 0; u < kU; ++u) {
        const std::uint64_t i = base + static_cast<std::uint64_t>(u) * blockDim.x + threadIdx.x;
        if (i < vectors) d[u] = dv[i];
      }
#pragma unroll
      for (int u = 0; u < kU; ++u) {
#pragma unroll
        for (int k = 0; k < Pack<T>::kSize; ++k) d[u].v[k] += s[u].v[k];
      }
    }
#pragma unroll
    for (int u = 0; u < kU; ++u) {
      const std::uint64_t i = base + static_cast<std::uint64_t>(u) * blockDim.x + threadIdx.x;
      if (i < vectors) dv[i] = reduce ? d[u] : s[u];
    }
  }

  const std::uint64_t scalars = scalar_count(split, item.count);
  const std::uint64_t stride = static_cast<std::uint64_t>(gridDim.x) * blockDim.x;
  for (std::uint64_t j = static_cast<std::uint64_t>(blockIdx.x) * blockDim.x + threadIdx.x;
       j < scalars; j += stride) {
    const std::uint64_t e = scalar_element(split, j);
    if (reduce) {
      dst[e] += src[e];
    } else {
      dst[e] = src[e];
    }
  }
}

__device__ __forceinline__ std::uint64_t globaltimer() {
  std::uint64_t t;
  asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t));
  return t;
}

// Waits until the start stamp + ns. The stamp kernel before it on the stream wrote *start
// (volatile, __threadfence_system) and has completed, so the value is there.
__global__ void spin_kernel(const std::uint64_t* start, std::uint64_t ns) {
  const std::uint64_t until = *reinterpret_cast<const volatile std::uint64_t*>(start) + ns;
  while (globaltimer() < until) {
  }
}

// One thread at `priority` (cudaLaunchKernelEx with cudaLaunchAttributePriority).
template <class... Params, class... Args>
cudaError_t launch_one_thread(void (*kernel)(Params...), int priority, cudaStream_t stream,
                              Args... args) {
  cudaLaunchConfig_t config{};
  config.gridDim = dim3(1);
  config.blockDim = dim3(1);
  config.dynamicSmemBytes = 0;
  config.stream = stream;
  cudaLaunchAttribute attribute{};
  attribute.id = cudaLaunchAttributePriority;
  attribute.val.priority = priority;
  config.attrs = &attribute;
  config.numAttrs = 1;
  const cudaError_t e = cudaLaunchKernelEx(&config, kernel, args...);
  return e != cudaSuccess ? e : cudaGetLastError();
}

__global__ void stamp_kernel(std::uint64_t* slot) {
  *reinterpret_cast<volatile std::uint64_t*>(slot) = globaltimer();
  __threadfence_system();
}

template <class T>
__global__ void fill_kernel(T* __restrict__ data, std::uint64_t count, std::uint64_t padded,
                            int rank, std::uint64_t modulus) {
  const std::uint64_t stride = static_cast<std::uint64_t>(gridDim.x) * blockDim.x;
  for (std::uint64_t i = static_cast<std::uint64_t>(blockIdx.x) * blockDim.x + threadIdx.x;
       i < padded; i += stride) {
    data[i] = i < count ? from_u64<T>(input_value_int(rank, i, modulus)) : from_float<T>(0.0f);
  }
}

template <class T>
__global__ void count_wrong_kernel(const T* __restrict__ data, std::uint64_t count,
                                   ExpectedSums sums, unsigned long long* wrong) {
  const std::uint64_t stride = static_cast<std::uint64_t>(gridDim.x) * blockDim.x;
  unsigned long long mine = 0;
  for (std::uint64_t i = static_cast<std::uint64_t>(blockIdx.x) * blockDim.x + threadIdx.x;
       i < count; i += stride) {
    if (to_double(data[i]) != sums.value[i % kInputPeriod]) ++mine;
  }
  if (mine) atomicAdd(wrong, mine);
}

int grid_for(std::uint64_t elements, int max_blocks) {
  const std::uint64_t wanted = (elements + kApplyThreads - 1) / kApplyThreads;
  return static_cast<int>(std::max<std::uint64_t>(1, std::min<std::uint64_t>(wanted, max_blocks)));
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

template <class T>
cudaError_t direct_typed(void* data, const DirectItem* items, int n_items, std::uint64_t max_count,
                         int max_blocks, cudaStream_t stream) {
  if (n_items < 1 || n_items > 65535 || max_blocks < 1) return cudaErrorInvalidValue;
  const std::uint64_t per_block =
      static_cast<std::uint64_t>(kApplyThreads) * kDirectVectorsPerThread * Pack<T>::kSize;
  const std::uint64_t wanted = std::max<std::uint64_t>(1, (max_count + per_block - 1) / per_block);
  const dim3 grid(static_cast<unsigned>(std::min<std::uint64_t>(wanted, max_blocks)),
                  static_cast<unsigned>(n_items));
  direct_kernel<T><<<grid, kApplyThreads, 0, stream>>>(static_cast<T*>(data), items);
  return cudaGetLastError();
}

}  // namespace

cudaError_t launch_direct(int dtype, void* data, const DirectItem* items, int n_items,
                          std::uint64_t max_count, int max_blocks, cudaStream_t stream) {
  switch (dtype) {
    case kDtypeFloat32:
      return direct_typed<float>(data, items, n_items, max_count, max_blocks, stream);
    case kDtypeFloat64:
      return direct_typed<double>(data, items, n_items, max_count, max_blocks, stream);
    case kDtypeInt32:
      return direct_typed<int>(data, items, n_items, max_count, max_blocks, stream);
    case kDtypeInt64:
      return direct_typed<long long>(data, items, n_items, max_count, max_blocks, stream);
    case kDtypeFloat16:
      return direct_typed<__half>(data, items, n_items, max_count, max_blocks, stream);
    case kDtypeBfloat16:
      return direct_typed<__nv_bfloat16>(data, items, n_items, max_count, max_blocks, stream);
  }
  return cudaErrorInvalidValue;
}

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
    case kDtypeFloat16:
      return launch_typed<__half>(data, scratch, items, n_items, max_count, max_blocks, stream);
    case kDtypeBfloat16:
      return launch_typed<__nv_bfloat16>(data, scratch, items, n_items, max_count, max_blocks,
                                         stream);
  }
  return cudaErrorInvalidValue;
}

__global__ void copy_kernel(unsigned char* __restrict__ dst, const unsigned char* __restrict__ src,
                            std::uint64_t bytes) {
  const std::uint64_t first = static_cast<std::uint64_t>(blockIdx.x) * blockDim.x + threadIdx.x;
  const std::uint64_t stride = static_cast<std::uint64_t>(gridDim.x) * blockDim.x;
  std::uint64_t done = 0;
  if (reinterpret_cast<std::uint64_t>(dst) % 16 == 0 &&
      reinterpret_cast<std::uint64_t>(src) % 16 == 0) {
    const std::uint64_t vectors = bytes / 16;
    auto* d = reinterpret_cast<uint4*>(dst);
    const auto* s = reinterpret_cast<const uint4*>(src);
    for (std::uint64_t i = first; i < vectors; i += stride) d[i] = s[i];
    done = vectors * 16;
  }
  for (std::uint64_t i = done + first; i < bytes; i += stride) dst[i] = src[i];
}

cudaError_t launch_copy(void* dst, const void* src, std::uint64_t bytes, int max_blocks,
                        cudaStream_t stream) {
  if (dst == nullptr || src == nullptr || max_blocks < 1) return cudaErrorInvalidValue;
  if (bytes == 0) return cudaSuccess;
  constexpr int kThreads = 256;
  const std::uint64_t wanted = (bytes / 16 + kThreads - 1) / kThreads;
  const auto blocks = static_cast<unsigned>(
      std::max<std::uint64_t>(1, std::min<std::uint64_t>(wanted, max_blocks)));
  copy_kernel<<<blocks, kThreads, 0, stream>>>(static_cast<unsigned char*>(dst),
                                               static_cast<const unsigned char*>(src), bytes);
  return cudaGetLastError();
}

cudaError_t launch_spin(const std::uint64_t* start, std::uint64_t ns, int priority,
                        cudaStream_t stream) {
  if (start == nullptr) return cudaErrorInvalidValue;
  return launch_one_thread(spin_kernel, priority, stream, start, ns);
}

cudaError_t launch_stamp(std::uint64_t* slot, int priority, cudaStream_t stream) {
  if (slot == nullptr) return cudaErrorInvalidValue;
  return launch_one_thread(stamp_kernel, priority, stream, slot);
}

namespace {
template <class T>
cudaError_t fill_typed(void* data, std::uint64_t count, std::uint64_t padded, int rank,
                       std::uint64_t modulus, int max_blocks, cudaStream_t stream) {
  fill_kernel<T><<<grid_for(padded, max_blocks), kApplyThreads, 0, stream>>>(
      static_cast<T*>(data), count, padded, rank, modulus);
  return cudaGetLastError();
}
template <class T>
cudaError_t count_typed(const void* data, std::uint64_t count, const ExpectedSums& sums,
                        unsigned long long* wrong, int max_blocks, cudaStream_t stream) {
  count_wrong_kernel<T><<<grid_for(count, max_blocks), kApplyThreads, 0, stream>>>(
      static_cast<const T*>(data), count, sums, wrong);
  return cudaGetLastError();
}
}  // namespace

cudaError_t launch_fill(int dtype, void* data, std::uint64_t count, std::uint64_t padded_count,
                        int rank, std::uint64_t modulus, int max_blocks, cudaStream_t stream) {
  if (max_blocks < 1 || modulus < 1 || count > padded_count) return cudaErrorInvalidValue;
  switch (dtype) {
    case kDtypeFloat32:
      return fill_typed<float>(data, count, padded_count, rank, modulus, max_blocks, stream);
    case kDtypeFloat64:
      return fill_typed<double>(data, count, padded_count, rank, modulus, max_blocks, stream);
    case kDtypeInt32:
      return fill_typed<int>(data, count, padded_count, rank, modulus, max_blocks, stream);
    case kDtypeInt64:
      return fill_typed<long long>(data, count, padded_count, rank, modulus, max_blocks, stream);
    case kDtypeFloat16:
      return fill_typed<__half>(data, count, padded_count, rank, modulus, max_blocks, stream);
    case kDtypeBfloat16:
      return fill_typed<__nv_bfloat16>(data, count, padded_count, rank, modulus, max_blocks,
                                       stream);
  }
  return cudaErrorInvalidValue;
}

cudaError_t launch_count_wrong(int dtype, const void* data, std::uint64_t count,
                               const ExpectedSums& sums, unsigned long long* wrong, int max_blocks,
                               cudaStream_t stream) {
  if (max_blocks < 1 || wrong == nullptr) return cudaErrorInvalidValue;
  switch (dtype) {
    case kDtypeFloat32:
      return count_typed<float>(data, count, sums, wrong, max_blocks, stream);
    case kDtypeFloat64:
      return count_typed<double>(data, count, sums, wrong, max_blocks, stream);
    case kDtypeInt32:
      return count_typed<int>(data, count, sums, wrong, max_blocks, stream);
    case kDtypeInt64:
      return count_typed<long long>(data, count, sums, wrong, max_blocks, stream);
    case kDtypeFloat16:
      return count_typed<__half>(data, count, sums, wrong, max_blocks, stream);
    case kDtypeBfloat16:
      return count_typed<__nv_bfloat16>(data, count, sums, wrong, max_blocks, stream);
  }
  return cudaErrorInvalidValue;
}

}  // namespace ssim::gpu
