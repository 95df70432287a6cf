// Which part of a single-GPU-transport round slows down when the chunk stride is not a
// power-of-two multiple (32 MiB + 128 B instead of 32 MiB)? 8 ranks, each with a data buffer of
// 8 chunks and one scratch chunk, one CUDA stream each. A round: rank r copies chunk r of rank
// r-1's data into its scratch (cudaMemcpyAsync, device to device), then adds its scratch into
// its own chunk r (a float4 kernel). Timed: the copies alone, the adds alone, both; median of
// 20 after 3 warm-up rounds; and the same with a float4 copy kernel in place of
// cudaMemcpyAsync. Prints GB/s of bytes read + written.
#include <cuda_runtime.h>
#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <vector>
#define CK(x) do { cudaError_t e = (x); if (e != cudaSuccess) { std::printf("%s: %s\n", #x, cudaGetErrorString(e)); std::exit(1); } } while (0)

__global__ void add4(float4* __restrict__ d, const float4* __restrict__ s, size_t n) {
  for (size_t i = blockIdx.x * size_t(blockDim.x) + threadIdx.x; i < n; i += size_t(gridDim.x) * blockDim.x) {
    float4 a = d[i], b = s[i];
    a.x += b.x; a.y += b.y; a.z += b.z; a.w += b.w;
    d[i] = a;
  }
}

__global__ void copy4(float4* __restrict__ d, const float4* __restrict__ s, size_t n) {
  for (size_t i = blockIdx.x * size_t(blockDim.x) + threadIdx.x; i < n; i += size_t(gridDim.x) * blockDim.x) d[i] = s[i];
}

int main() {
  const int n = 8;
  const size_t sizes[] = {32u << 20, (32u << 20) + 128, (32u << 20) + 256, (32u << 20) + 4096,
                          8u << 20, (8u << 20) + 128};
  cudaStream_t st[n];
  cudaEvent_t join[n];
  for (int r = 0; r < n; ++r) { CK(cudaStreamCreateWithFlags(&st[r], cudaStreamNonBlocking)); CK(cudaEventCreateWithFlags(&join[r], cudaEventDisableTiming)); }
  cudaEvent_t t0, t1;
  CK(cudaEventCreate(&t0)); CK(cudaEventCreate(&t1));
  int sms = 0; CK(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, 0));
  for (size_t chunk : sizes) {
    std::vector<char*> data(n), scratch(n);
    for (int r = 0; r < n; ++r) { CK(cudaMalloc(&data[r], chunk * n)); CK(cudaMalloc(&scratch[r], chunk)); CK(cudaMemset(data[r], 0, chunk * n)); CK(cudaMemset(scratch[r], 0, chunk)); }
    auto round = [&](int what) {
      CK(cudaEventRecord(t0, st[0]));
      for (int r = 1; r < n; ++r) CK(cudaStreamWaitEvent(st[r], t0));
      for (int r = 0; r < n; ++r) {
        char* own = data[r] + chunk * r;
        if (what & 4) copy4<<<sms * 2, 512, 0, st[r]>>>(reinterpret_cast<float4*>(scratch[r]), reinterpret_cast<const float4*>(data[(r + n - 1) % n] + chunk * r), chunk / 16);
        if (what & 1) CK(cudaMemcpyAsync(scratch[r], data[(r + n - 1) % n] + chunk * r, chunk, cudaMemcpyDeviceToDevice, st[r]));
        if (what & 2) add4<<<sms * 2, 512, 0, st[r]>>>(reinterpret_cast<float4*>(own), reinterpret_cast<const float4*>(scratch[r]), chunk / 16);
        CK(cudaEventRecord(join[r], st[r]));
      }
      for (int r = 1; r < n; ++r) CK(cudaStreamWaitEvent(st[0], join[r]));
      CK(cudaEventRecord(t1, st[0]));
      CK(cudaEventSynchronize(t1));
      float ms = 0; CK(cudaEventElapsedTime(&ms, t0, t1));
      return ms;
    };
    std::printf("chunk=%zu", chunk);
    for (int what : {1, 2, 3, 4, 6}) {
      std::vector<float> t;
      for (int i = 0; i < 23; ++i) { float ms = round(what); if (i >= 3) t.push_back(ms); }
      std::sort(t.begin(), t.end());
      const double bytes = double(n) * chunk * (what == 1 || what == 4 ? 2 : what == 2 ? 3 : 5);
      const char* name = what == 1 ? "memcpy" : what == 2 ? "add" : what == 3 ? "memcpy+add" : what == 4 ? "copykernel" : "copykernel+add";
      std::printf(" %s=%.0f", name, bytes / (t[t.size() / 2] * 1e-3) / 1e9);
    }
    std::printf("\n");
    for (int r = 0; r < n; ++r) { CK(cudaFree(data[r])); CK(cudaFree(scratch[r])); }
  }
  return 0;
}
