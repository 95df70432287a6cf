// libFuzzer harness: `stragglesim calibrate`'s reader and fits on arbitrary text: point-to-point
// sweeps, result CSVs of collective runs and nccl-tests logs (fuzz/fuzz_support.hpp).
#include <cstddef>
#include <cstdint>
#include <sstream>

#include "calibration/calibration.hpp"
#include "fuzz/fuzz_support.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  return ssim::fuzz::expect_clean_errors([&] {
    std::istringstream in(ssim::fuzz::text(data, size));
    (void)ssim::calib::calibrate(in, "fuzz.csv", ssim::calib::CalibrationOptions{});
  });
}
