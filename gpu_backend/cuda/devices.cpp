#include "gpu_backend/cuda/devices.hpp"

#include <sstream>

#include "gpu_backend/cuda/check.hpp"

namespace ssim::gpu {

DeviceReport query_devices() {
  DeviceReport r;
  SSIM_CUDA(cudaRuntimeGetVersion(&r.runtime_version));
  SSIM_NCCL(ncclGetVersion(&r.nccl_version));
  // No driver or no device is a normal answer on build machines, not an error.
  if (cudaDriverGetVersion(&r.driver_version) != cudaSuccess || r.driver_version == 0) {
    r.no_device_reason = "no CUDA driver is installed";
    return r;
  }
  int count = 0;
  const cudaError_t e = cudaGetDeviceCount(&count);
  if (e != cudaSuccess) {
    r.no_device_reason = std::string("cudaGetDeviceCount: ") + cudaGetErrorString(e);
    return r;
  }
  if (count == 0) r.no_device_reason = "the driver reports no CUDA device";
  for (int d = 0; d < count; ++d) {
    cudaDeviceProp p{};
    SSIM_CUDA(cudaGetDeviceProperties(&p, d));
    r.devices.push_back(DeviceInfo{d, p.name,
                                   static_cast<double>(p.totalGlobalMem) / (1024.0 * 1024 * 1024),
                                   p.multiProcessorCount, p.major, p.minor});
  }
  return r;
}

std::string format_device_report(const DeviceReport& r) {
  std::ostringstream os;
  os << "CUDA runtime " << r.runtime_version / 1000 << "." << (r.runtime_version % 1000) / 10
     << ", driver "
     << (r.driver_version ? std::to_string(r.driver_version / 1000) + "." +
                                std::to_string((r.driver_version % 1000) / 10)
                          : std::string("none"))
     << ", NCCL " << format_nccl_version(r.nccl_version) << "\n";
  if (r.devices.empty()) os << "no GPU: " << r.no_device_reason << "\n";
  for (const DeviceInfo& d : r.devices) {
    os << "GPU " << d.index << ": " << d.name << ", " << d.memory_gib << " GiB, " << d.sm_count
       << " SMs, sm_" << d.compute_major << d.compute_minor << "\n";
  }
  return os.str();
}

std::string format_nccl_version(int code) {
  if (code <= 0) return "";
  const bool old = code < 20900;  // NCCL_VERSION_CODE before 2.9: X * 1000 + Y * 100 + Z
  const int major = old ? code / 1000 : code / 10000;
  const int minor = old ? (code % 1000) / 100 : (code % 10000) / 100;
  return std::to_string(major) + "." + std::to_string(minor) + "." + std::to_string(code % 100);
}

}  // namespace ssim::gpu
