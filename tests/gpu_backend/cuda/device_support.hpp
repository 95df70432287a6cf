// Test support: how many CUDA devices this machine has, and a skip for tests that need some.
//
//   TEST(Executor, Something) {
//     SSIM_REQUIRE_GPUS(1);      // GTEST_SKIP with CUDA's reason when there are fewer
//     ...
//   }
#pragma once

#include <gtest/gtest.h>

#include <string>

#include "gpu_backend/cuda/devices.hpp"

namespace ssim::gpu::testing {

inline const DeviceReport& device_report() {
  static const DeviceReport report = query_devices();
  return report;
}

inline int gpu_count() { return static_cast<int>(device_report().devices.size()); }

inline std::string why_fewer_gpus(int needed) {
  return "needs " + std::to_string(needed) + " GPU(s), found " + std::to_string(gpu_count()) +
         (device_report().no_device_reason.empty() ? std::string()
                                                   : ": " + device_report().no_device_reason);
}

}  // namespace ssim::gpu::testing

#define SSIM_REQUIRE_GPUS(n)                                   \
  do {                                                         \
    if (::ssim::gpu::testing::gpu_count() < (n))               \
      GTEST_SKIP() << ::ssim::gpu::testing::why_fewer_gpus(n); \
  } while (0)
