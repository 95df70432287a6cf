// What one operation costs the GPU to start, apart from its bytes: the shared-device model's
// launch_time (a share of the device's launch capacity per operation) and copy_latency /
// apply_latency (each operation's own delay), measured directly instead of fitted.
//
//   cmake --build build --target launch_probe && build/gpu_backend/launch_probe
//   (scripts/gpu_campaign.sh runs it as its step 7; or nvcc -O2 -arch=sm_90 -o launch_probe THIS)
//
// k streams (4 to 64), each a rank with a 4 KiB buffer and a 4 KiB scratch. One round: every
// rank copies its left neighbour's buffer into its scratch (cudaMemcpyAsync, device to device,
// as the single-gpu transport copies) and then adds the scratch into its buffer (one small
// kernel). Three patterns, each captured in one CUDA graph of R rounds and replayed:
//  - ring: a rank's copy of round j waits for its neighbour's add of round j-1 (an event), as a
//    ring AllReduce's rounds do: per round, the dependency chain and k copies + k adds;
//  - free: no waits between streams: the k streams' 2R operations only compete to start;
//  - chain: one stream, R copies and adds in a row: the per-operation delay alone.
// Prints, per pattern and k, the median time per round over 20 replays (3 warm-up) and per
// operation (round time / 2k for ring and free, / 2 for chain). At 4 KiB the bytes cost
// nanoseconds, so the figures are the operations' own costs. Compare with the model: a ring
// round of k ranks costs copy_latency + apply_latency + 2k x launch_time there.
#include <cuda_runtime.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <vector>

#include "probe_support.cuh"

__global__ void add(float* __restrict__ d, const float* __restrict__ s, int n) {
  const int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) d[i] += s[i];
}

constexpr int kElems = 1024;  // 4 KiB of float
constexpr int kRounds = 64;

// pattern 0 ring, 1 free, 2 chain (k must be 1 for chain)
double run(int k, int pattern) {
  std::vector<float*> buf(k), scratch(k);
  std::vector<cudaStream_t> st(k);
  std::vector<cudaEvent_t> done(static_cast<std::size_t>(k) * kRounds);
  for (int r = 0; r < k; ++r) {
    CK(cudaMalloc(&buf[r], kElems * sizeof(float)));
    CK(cudaMalloc(&scratch[r], kElems * sizeof(float)));
    CK(cudaMemset(buf[r], 0, kElems * sizeof(float)));
    CK(cudaStreamCreateWithFlags(&st[r], cudaStreamNonBlocking));
  }
  for (auto& e : done) CK(cudaEventCreateWithFlags(&e, cudaEventDisableTiming));
  cudaStream_t origin = st[0];
  cudaEvent_t fork, join;
  CK(cudaEventCreateWithFlags(&fork, cudaEventDisableTiming));
  CK(cudaEventCreateWithFlags(&join, cudaEventDisableTiming));
  CK(cudaStreamBeginCapture(origin, cudaStreamCaptureModeGlobal));
  CK(cudaEventRecord(fork, origin));
  for (int r = 1; r < k; ++r) CK(cudaStreamWaitEvent(st[r], fork, 0));
  for (int j = 0; j < kRounds; ++j) {
    for (int r = 0; r < k; ++r) {
      const int left = (r + k - 1) % k;
      if (pattern == 0 && j > 0 && k > 1)
        CK(cudaStreamWaitEvent(st[r], done[static_cast<std::size_t>(j - 1) * k + left], 0));
      CK(cudaMemcpyAsync(scratch[r], buf[pattern == 0 ? left : r], kElems * sizeof(float),
                         cudaMemcpyDeviceToDevice, st[r]));
      add<<<(kElems + 255) / 256, 256, 0, st[r]>>>(buf[r], scratch[r], kElems);
      CK(cudaGetLastError());
      CK(cudaEventRecord(done[static_cast<std::size_t>(j) * k + r], st[r]));
    }
  }
  for (int r = 1; r < k; ++r) {
    CK(cudaEventRecord(join, st[r]));
    CK(cudaStreamWaitEvent(origin, join, 0));
  }
  cudaGraph_t g;
  CK(cudaStreamEndCapture(origin, &g));
  cudaGraphExec_t exec;
  CK(cudaGraphInstantiate(&exec, g, 0));
  const double t = replay_median(exec, origin, 3, 20);
  CK(cudaGraphExecDestroy(exec));
  CK(cudaGraphDestroy(g));
  for (auto& e : done) CK(cudaEventDestroy(e));
  CK(cudaEventDestroy(fork));
  CK(cudaEventDestroy(join));
  for (int r = 0; r < k; ++r) {
    CK(cudaFree(buf[r]));
    CK(cudaFree(scratch[r]));
    CK(cudaStreamDestroy(st[r]));
  }
  return t;
}

int main() {
  cudaDeviceProp p{};
  CK(cudaGetDeviceProperties(&p, 0));
  std::printf("# %s, %d SMs, L2 %d bytes, %d rounds per graph, 4 KiB per operation\n", p.name,
              p.multiProcessorCount, p.l2CacheSize, kRounds);
  std::printf("pattern streams round_us op_us\n");
  const double chain = run(1, 2) / kRounds;
  std::printf("chain 1 %.3f %.3f\n", chain * 1e6, chain / 2 * 1e6);
  for (int pattern : {0, 1}) {
    for (int k : {4, 8, 16, 32, 64}) {
      const double round = run(k, pattern) / kRounds;
      std::printf("%s %d %.3f %.3f\n", pattern == 0 ? "ring" : "free", k, round * 1e6,
                  round / (2.0 * k) * 1e6);
    }
  }
  return 0;
}
