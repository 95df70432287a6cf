// libFuzzer harness: the `stragglesim simulate` config loader on arbitrary YAML text, then the
// memory check the CLI makes before simulating (fuzz/fuzz_support.hpp).
#include <cstddef>
#include <cstdint>

#include "experiments/config/config.hpp"
#include "experiments/config/resource_check.hpp"
#include "fuzz/fuzz_support.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  return ssim::fuzz::expect_clean_errors([&] {
    const auto reader =
        ssim::experiments::ConfigReader::from_string(ssim::fuzz::text(data, size), "fuzz.yaml");
    const ssim::sim::SimulationConfig c = ssim::experiments::load_simulation_config(reader);
    ssim::experiments::check_simulation_memory(ssim::fuzz::budget(), c);
    (void)ssim::experiments::simulation_time_note(c);
  });
}
