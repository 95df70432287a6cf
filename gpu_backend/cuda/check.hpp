// Checking wrappers for every CUDA and NCCL call: a failure throws ssim::gpu::DeviceError
// naming the call, the file and line, and the library's own error string. Release paths
// (destructors), which must not throw, use the _WARN forms: same message, on stderr.
//
//   SSIM_CUDA(cudaSetDevice(dev));
//   SSIM_NCCL(ncclGroupStart());
//   SSIM_CUDA_WARN(cudaFree(ptr));          // in a destructor
#pragma once

#include <cuda_runtime.h>
#include <nccl.h>

#include <cstdio>
#include <stdexcept>
#include <string>

#include "common/error.hpp"

namespace ssim::gpu {

// The device could not do what the run needs (no CUDA device, a failed CUDA or NCCL call): a
// resource error in the one error policy (common/error.hpp, exit 3), not the user's input and
// not a broken invariant of ours.
class DeviceError : public ResourceError {
 public:
  using ResourceError::ResourceError;
};

// The executor's watchdog gave up on an iteration (executor.hpp): the message names the ranks
// and rounds that did not finish.
class WatchdogTimeout : public DeviceError {
 public:
  using DeviceError::DeviceError;
};

[[noreturn]] inline void cuda_failed(cudaError_t e, const char* call, const char* file, int line) {
  throw DeviceError(std::string("CUDA call ") + call + " failed at " + file + ":" +
                    std::to_string(line) + ": " + cudaGetErrorName(e) + " (" +
                    cudaGetErrorString(e) + ")");
}

[[noreturn]] inline void nccl_failed(ncclResult_t r, const char* call, const char* file, int line) {
  throw DeviceError(std::string("NCCL call ") + call + " failed at " + file + ":" +
                    std::to_string(line) + ": " + ncclGetErrorString(r));
}

inline void cuda_warn(cudaError_t e, const char* call, const char* file, int line) noexcept {
  std::fprintf(stderr, "stragglesim-gpu: warning: CUDA call %s failed at %s:%d: %s (%s)\n", call,
               file, line, cudaGetErrorName(e), cudaGetErrorString(e));
}

inline void nccl_warn(ncclResult_t r, const char* call, const char* file, int line) noexcept {
  std::fprintf(stderr, "stragglesim-gpu: warning: NCCL call %s failed at %s:%d: %s\n", call, file,
               line, ncclGetErrorString(r));
}

}  // namespace ssim::gpu

#define SSIM_CUDA(call)                                                    \
  do {                                                                     \
    const cudaError_t ssim_cuda_err_ = (call);                             \
    if (ssim_cuda_err_ != cudaSuccess)                                     \
      ::ssim::gpu::cuda_failed(ssim_cuda_err_, #call, __FILE__, __LINE__); \
  } while (0)

#define SSIM_NCCL(call)                                                    \
  do {                                                                     \
    const ncclResult_t ssim_nccl_res_ = (call);                            \
    if (ssim_nccl_res_ != ncclSuccess)                                     \
      ::ssim::gpu::nccl_failed(ssim_nccl_res_, #call, __FILE__, __LINE__); \
  } while (0)

#define SSIM_CUDA_WARN(call)                                             \
  do {                                                                   \
    const cudaError_t ssim_cuda_err_ = (call);                           \
    if (ssim_cuda_err_ != cudaSuccess)                                   \
      ::ssim::gpu::cuda_warn(ssim_cuda_err_, #call, __FILE__, __LINE__); \
  } while (0)

#define SSIM_NCCL_WARN(call)                                             \
  do {                                                                   \
    const ncclResult_t ssim_nccl_res_ = (call);                          \
    if (ssim_nccl_res_ != ncclSuccess)                                   \
      ::ssim::gpu::nccl_warn(ssim_nccl_res_, #call, __FILE__, __LINE__); \
  } while (0)
