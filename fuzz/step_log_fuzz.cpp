// libFuzzer harness: `fit-delays`' step-log reader (experiments/config/delay_files.hpp) on
// arbitrary text: rank,step,seconds or timestamps, as a training job logs them.
#include <cstddef>
#include <cstdint>
#include <sstream>

#include "experiments/config/delay_files.hpp"
#include "fuzz/fuzz_support.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  return ssim::fuzz::expect_clean_errors([&] {
    std::istringstream in(ssim::fuzz::text(data, size));
    (void)ssim::experiments::read_step_log(in, "fuzz.csv");
  });
}
