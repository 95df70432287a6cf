// Owned CUDA and NCCL resources, released on destruction: one move-only template
// (CudaHandle) for everything that is a handle plus the device it lives on, and the
// executor's three kinds built on it (device memory, events, mapped host stamps), plus the
// scope of an NCCL group. Internal to gpu_backend/cuda (executor_impl.hpp, transport_*.cpp).
#pragma once

#include <cuda_runtime.h>
#include <nccl.h>

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <utility>

#include "gpu_backend/cuda/check.hpp"

namespace ssim::gpu {

// `value` on `device`, released once by Release{}(device, value) unless moved from. Release
// must not throw (it runs in destructors, also while an exception unwinds): it warns.
template <class T, class Release>
class CudaHandle {
 public:
  CudaHandle() = default;
  CudaHandle(int device, T value) : device_(device), value_(value) {}
  CudaHandle(const CudaHandle&) = delete;
  CudaHandle& operator=(const CudaHandle&) = delete;
  CudaHandle(CudaHandle&& o) noexcept : device_(o.device_), value_(std::exchange(o.value_, T{})) {}
  CudaHandle& operator=(CudaHandle&& o) noexcept {
    if (this != &o) {
      reset();
      device_ = o.device_;
      value_ = std::exchange(o.value_, T{});
    }
    return *this;
  }
  ~CudaHandle() { reset(); }

  T get() const { return value_; }
  int device() const { return device_; }
  explicit operator bool() const { return value_ != T{}; }
  void reset() noexcept {
    if (value_ != T{}) Release{}(device_, value_);
    value_ = T{};
  }

 private:
  int device_ = 0;
  T value_{};
};

struct FreeDeviceMemory {
  void operator()(int device, void* p) const noexcept {
    SSIM_CUDA_WARN(cudaSetDevice(device));
    SSIM_CUDA_WARN(cudaFree(p));
  }
};
struct DestroyEvent {
  void operator()(int device, cudaEvent_t e) const noexcept {
    SSIM_CUDA_WARN(cudaSetDevice(device));
    SSIM_CUDA_WARN(cudaEventDestroy(e));
  }
};
struct FreeHostMemory {
  void operator()(int, void* p) const noexcept { SSIM_CUDA_WARN(cudaFreeHost(p)); }
};
struct DestroyGraph {
  void operator()(int, cudaGraph_t g) const noexcept { SSIM_CUDA_WARN(cudaGraphDestroy(g)); }
};
struct DestroyGraphExec {
  void operator()(int, cudaGraphExec_t g) const noexcept {
    SSIM_CUDA_WARN(cudaGraphExecDestroy(g));
  }
};

using Graph = CudaHandle<cudaGraph_t, DestroyGraph>;
using GraphExec = CudaHandle<cudaGraphExec_t, DestroyGraphExec>;

// Device memory on one GPU (at least one byte, so that an empty buffer still has an address).
class DeviceBuffer {
 public:
  DeviceBuffer() = default;
  DeviceBuffer(int device, std::size_t bytes) {
    SSIM_CUDA(cudaSetDevice(device));
    void* p = nullptr;
    SSIM_CUDA(cudaMalloc(&p, std::max<std::size_t>(bytes, 1)));
    memory_ = CudaHandle<void*, FreeDeviceMemory>(device, p);
  }
  std::byte* get() const { return static_cast<std::byte*>(memory_.get()); }

 private:
  CudaHandle<void*, FreeDeviceMemory> memory_;
};

class Event {
 public:
  Event() = default;
  Event(int device, unsigned flags) {
    SSIM_CUDA(cudaSetDevice(device));
    cudaEvent_t e = nullptr;
    SSIM_CUDA(cudaEventCreateWithFlags(&e, flags));
    event_ = CudaHandle<cudaEvent_t, DestroyEvent>(device, e);
  }
  cudaEvent_t get() const { return event_.get(); }

 private:
  CudaHandle<cudaEvent_t, DestroyEvent> event_;
};

// Mapped, pinned host memory: written by kernels, read by the host while they run.
class MappedStamps {
 public:
  MappedStamps() = default;
  explicit MappedStamps(std::size_t slots) : slots_(slots) {
    void* p = nullptr;
    SSIM_CUDA(cudaHostAlloc(&p, std::max<std::size_t>(slots, 1) * sizeof(std::uint64_t),
                            cudaHostAllocMapped | cudaHostAllocPortable));
    host_ = CudaHandle<void*, FreeHostMemory>(0, p);
    void* d = nullptr;
    SSIM_CUDA(cudaHostGetDevicePointer(&d, p, 0));
    device_ = static_cast<std::uint64_t*>(d);
    clear();
  }
  void clear() { std::memset(host_.get(), 0, slots_ * sizeof(std::uint64_t)); }
  std::uint64_t read(std::size_t i) const {
    return static_cast<const volatile std::uint64_t*>(host_.get())[i];
  }
  std::uint64_t* device_slot(std::size_t i) const { return device_ + i; }

 private:
  std::size_t slots_ = 0;
  CudaHandle<void*, FreeHostMemory> host_;
  std::uint64_t* device_ = nullptr;  // the same memory as the device sees it
};

// Keeps an NCCL group open only as long as the scope: an exception between ncclGroupStart and
// ncclGroupEnd still closes the group (NCCL's group state is per thread and would otherwise
// swallow every later call).
class NcclGroup {
 public:
  NcclGroup() { SSIM_NCCL(ncclGroupStart()); }
  NcclGroup(const NcclGroup&) = delete;
  NcclGroup& operator=(const NcclGroup&) = delete;
  ~NcclGroup() {
    if (open_) SSIM_NCCL_WARN(ncclGroupEnd());
  }
  void end() {
    open_ = false;
    SSIM_NCCL(ncclGroupEnd());
  }

 private:
  bool open_ = true;
};

}  // namespace ssim::gpu
