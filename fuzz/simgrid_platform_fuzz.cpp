// libFuzzer harness: the SimGrid platform reader (`topology: {simgrid: FILE}`, XML 4.1 with one
// Full zone or a FLAT cluster) on arbitrary text (fuzz/fuzz_support.hpp).
#include <cstddef>
#include <cstdint>

#include "experiments/config/config.hpp"
#include "fuzz/fuzz_support.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  return ssim::fuzz::expect_clean_errors([&] {
    const ssim::topo::Topology t =
        ssim::experiments::simgrid_platform(ssim::fuzz::text(data, size), "fuzz.xml");
    if (t.gpu_count() >= 2) (void)t.route(0, t.gpu_count() - 1);
  });
}
