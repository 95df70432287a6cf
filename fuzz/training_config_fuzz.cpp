// libFuzzer harness: `train`'s YAML loader on arbitrary text, then the memory and time
// estimate the CLI checks before it runs (experiments/config/resource_check.hpp); nothing is
// simulated. The text has no folder: files it names resolve against the working directory.
#include <cstddef>
#include <cstdint>

#include "experiments/config/config.hpp"
#include "experiments/config/resource_check.hpp"
#include "experiments/config/training.hpp"
#include "fuzz/fuzz_support.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  return ssim::fuzz::expect_clean_errors([&] {
    const ssim::experiments::ConfigReader reader =
        ssim::experiments::ConfigReader::from_string(ssim::fuzz::text(data, size), "fuzz.yaml");
    const ssim::sim::TrainingConfig c = ssim::experiments::load_training_config(reader);
    ssim::experiments::check_training_resources(
        ssim::fuzz::budget(), ssim::TimeBudget::of(3600, "the fuzz harness's hour"), c);
  });
}
