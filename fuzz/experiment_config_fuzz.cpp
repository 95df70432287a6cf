// libFuzzer harness: the `stragglesim run` experiment loader (sweeps included) on arbitrary YAML
// text, then the memory check the CLI makes before running (fuzz/fuzz_support.hpp).
#include <cstddef>
#include <cstdint>

#include "experiments/config/config.hpp"
#include "experiments/config/resource_check.hpp"
#include "experiments/runner/experiment.hpp"
#include "fuzz/fuzz_support.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  return ssim::fuzz::expect_clean_errors([&] {
    const auto reader =
        ssim::experiments::ConfigReader::from_string(ssim::fuzz::text(data, size), "fuzz.yaml");
    const ssim::experiments::Experiment e = ssim::experiments::load_experiment(reader);
    ssim::experiments::check_experiment_memory(ssim::fuzz::budget(), e, 1);
    (void)ssim::experiments::experiment_time_note(e, 1);
  });
}
