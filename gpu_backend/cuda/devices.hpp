// What the CUDA runtime and NCCL see on this machine.
//
//   DeviceReport r = query_devices();   // never throws for "no GPU": r.devices is empty
//   std::cout << format_device_report(r);
#pragma once

#include <string>
#include <vector>

namespace ssim::gpu {

struct DeviceInfo {
  int index = 0;
  std::string name;
  double memory_gib = 0;
  int sm_count = 0;
  int compute_major = 0;
  int compute_minor = 0;
};

struct DeviceReport {
  int runtime_version = 0;       // CUDA runtime, e.g. 13000
  int driver_version = 0;        // 0 when no driver is present
  int nccl_version = 0;          // e.g. 22803
  std::string no_device_reason;  // why devices is empty, if it is
  std::vector<DeviceInfo> devices;
};

DeviceReport query_devices();
std::string format_device_report(const DeviceReport& r);
// ncclGetVersion's code as "major.minor.patch" (22803 -> "2.28.3"; codes before NCCL 2.9 are
// major * 1000 + minor * 100 + patch); "" for 0.
std::string format_nccl_version(int code);

}  // namespace ssim::gpu
