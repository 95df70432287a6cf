// Whether the apply kernel's read of a scratch buffer that a copy has just written comes from
// the L2 cache, and up to what size: the question the shared-device model cannot settle from
// the 8-rank runs (docs/DESIGN.md, shared_device: "reuse through the L2 cache").
//
//   cmake --build build --target cache_probe && build/gpu_backend/cache_probe
//   (scripts/gpu_campaign.sh runs it as its step 8; or nvcc -O2 -arch=sm_90 -o cache_probe THIS)
//
// k streams (1, 2, 4, 8), each a "rank" with a source, a scratch and a destination buffer of s
// bytes. One repetition on every stream: copy source -> scratch (cudaMemcpyAsync, device to
// device, as the single-gpu transport copies), then add the scratch into the destination (one
// kernel, dst += scratch). The k streams run side by side with no waits between them, so the
// bytes written by copies and not yet read by an add reach k x s: the window the cache would
// have to hold. Three variants, each captured in one CUDA graph of R repetitions and replayed
// (median of 10 replays after 2 warm-up ones):
//  - hot:  copy, then add at once (what every AllReduce round does);
//  - cold: copy, then a write of a 256 MiB flush buffer on the same stream, then add: the
//          scratch has left the cache when the add reads it; the flush alone is timed too
//          (flush) and taken off;
//  - copy: copies only; add: adds only (of a scratch written long before).
// Printed per variant, k and s: the time per repetition and the memory traffic as the model
// counts it (a copy 2 s: read + write; an add 3 s: two reads, one write) over that time. Where
// hot's rate is above cold's, the add's scratch read came from the cache; the window k x s at
// which the two meet is the cache's reach. Compare: the model prices every byte at
// memory_bandwidth (configs/topologies/h200_single_gpu.yaml), whatever the window.
#include <cuda_runtime.h>

#include <algorithm>
#include <cstddef>
#include <cstdio>
#include <cstdlib>
#include <vector>

#include "probe_support.cuh"

__global__ void add(float4* __restrict__ d, const float4* __restrict__ s, std::size_t n) {
  for (std::size_t i = blockIdx.x * static_cast<std::size_t>(blockDim.x) + threadIdx.x; i < n;
       i += static_cast<std::size_t>(gridDim.x) * blockDim.x) {
    float4 a = d[i];
    const float4 b = s[i];
    a.x += b.x;
    a.y += b.y;
    a.z += b.z;
    a.w += b.w;
    d[i] = a;
  }
}

constexpr std::size_t kFlushBytes = 256u << 20;  // well above the 50 MiB L2 of GH100
constexpr int kReps = 8;

enum class Variant { hot, cold, flush, copy, add };

struct Rank {
  float4 *src = nullptr, *scratch = nullptr, *dst = nullptr, *flush = nullptr;
  cudaStream_t stream = nullptr;
};

// Seconds per repetition of `v` on k streams of s bytes each.
double run(Variant v, int k, std::size_t s, int blocks) {
  const std::size_t n = s / sizeof(float4);
  std::vector<Rank> ranks(static_cast<std::size_t>(k));
  for (Rank& r : ranks) {
    CK(cudaMalloc(&r.src, s));
    CK(cudaMalloc(&r.scratch, s));
    CK(cudaMalloc(&r.dst, s));
    CK(cudaMemset(r.src, 0, s));
    CK(cudaMemset(r.scratch, 0, s));
    CK(cudaMemset(r.dst, 0, s));
    if (v == Variant::cold || v == Variant::flush) CK(cudaMalloc(&r.flush, kFlushBytes));
    CK(cudaStreamCreateWithFlags(&r.stream, cudaStreamNonBlocking));
  }
  cudaStream_t origin = ranks[0].stream;
  cudaEvent_t fork, join;
  CK(cudaEventCreateWithFlags(&fork, cudaEventDisableTiming));
  CK(cudaEventCreateWithFlags(&join, cudaEventDisableTiming));
  CK(cudaStreamBeginCapture(origin, cudaStreamCaptureModeGlobal));
  CK(cudaEventRecord(fork, origin));
  for (int r = 1; r < k; ++r)
    CK(cudaStreamWaitEvent(ranks[static_cast<std::size_t>(r)].stream, fork, 0));
  for (int j = 0; j < kReps; ++j) {
    for (const Rank& r : ranks) {
      if (v != Variant::add && v != Variant::flush)
        CK(cudaMemcpyAsync(r.scratch, r.src, s, cudaMemcpyDeviceToDevice, r.stream));
      if (v == Variant::cold || v == Variant::flush)
        CK(cudaMemsetAsync(r.flush, j & 0xff, kFlushBytes, r.stream));
      if (v == Variant::hot || v == Variant::cold || v == Variant::add) {
        add<<<blocks, 256, 0, r.stream>>>(r.dst, r.scratch, n);
        CK(cudaGetLastError());
      }
    }
  }
  for (int r = 1; r < k; ++r) {
    CK(cudaEventRecord(join, ranks[static_cast<std::size_t>(r)].stream));
    CK(cudaStreamWaitEvent(origin, join, 0));
  }
  cudaGraph_t g;
  CK(cudaStreamEndCapture(origin, &g));
  cudaGraphExec_t exec;
  CK(cudaGraphInstantiate(&exec, g, 0));
  const double t = replay_median(exec, origin, 2, 10) / kReps;
  CK(cudaGraphExecDestroy(exec));
  CK(cudaGraphDestroy(g));
  CK(cudaEventDestroy(fork));
  CK(cudaEventDestroy(join));
  for (Rank& r : ranks) {
    CK(cudaFree(r.src));
    CK(cudaFree(r.scratch));
    CK(cudaFree(r.dst));
    if (r.flush) CK(cudaFree(r.flush));
    CK(cudaStreamDestroy(r.stream));
  }
  return t;
}

int main() {
  cudaDeviceProp p{};
  CK(cudaGetDeviceProperties(&p, 0));
  // Four blocks per SM: a grid-stride add that fills the device at every buffer size.
  const int blocks = p.multiProcessorCount * 4;
  std::printf("# %s, %d SMs, L2 %d bytes, %d repetitions per graph, add kernel %d blocks x 256\n",
              p.name, p.multiProcessorCount, p.l2CacheSize, kReps, blocks);
  std::printf(
      "# counted bytes: copy 2 s, add 3 s per stream and repetition; cold_minus_flush: "
      "cold with the flush's own time taken off\n");
  std::printf(
      "streams bytes window_MiB hot_us cold_minus_flush_us copy_us add_us hot_TBps "
      "cold_TBps\n");
  const std::size_t MiB = 1u << 20;
  for (int k : {1, 2, 4, 8}) {
    for (std::size_t s_mib : {1, 2, 4, 8, 16, 32, 64}) {
      const std::size_t s = s_mib * MiB;
      if (static_cast<std::size_t>(k) * (3 * s + kFlushBytes) > p.totalGlobalMem / 2) continue;
      const double hot = run(Variant::hot, k, s, blocks);
      const double cold = run(Variant::cold, k, s, blocks) - run(Variant::flush, k, s, blocks);
      const double copy = run(Variant::copy, k, s, blocks);
      const double add_only = run(Variant::add, k, s, blocks);
      const double counted = 5.0 * static_cast<double>(s) * k;
      std::printf("%d %zu %zu %.2f %.2f %.2f %.2f %.3f %.3f\n", k, s, k * s_mib, hot * 1e6,
                  cold * 1e6, copy * 1e6, add_only * 1e6, counted / hot * 1e-12,
                  cold > 0 ? counted / cold * 1e-12 : 0.0);
    }
  }
  return 0;
}
