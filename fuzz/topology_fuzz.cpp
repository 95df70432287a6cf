// libFuzzer harness: the topology loader (configs/topologies/*.yaml, `calibrate --topology`) on
// arbitrary YAML text (fuzz/fuzz_support.hpp).
#include <cstddef>
#include <cstdint>

#include "experiments/config/config.hpp"
#include "fuzz/fuzz_support.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  return ssim::fuzz::expect_clean_errors([&] {
    const auto reader =
        ssim::experiments::ConfigReader::from_string(ssim::fuzz::text(data, size), "fuzz.yaml");
    const ssim::topo::Topology t =
        ssim::experiments::load_topology(reader.root(), reader.directory());
    (void)ssim::experiments::load_calibrated_gamma(reader.root());
    (void)t.gpu_count();
  });
}
