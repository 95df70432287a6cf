// libFuzzer harness: `validate --timeline`'s reader of round-by-round timelines (as
// stragglesim-gpu run --timeline writes them) and the comparison of each run with its
// simulation, on an 8-GPU switch (the shipped timelines' H200 node); nothing is printed.
#include <cstddef>
#include <cstdint>

#include "experiments/cli/commands.hpp"
#include "fuzz/fuzz_support.hpp"
#include "topologies/generators.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  static const ssim::topo::Topology node = ssim::topo::make_switch(
      {8, ssim::BytesPerSecond{360e9}, ssim::Seconds{2e-6}});
  return ssim::fuzz::expect_clean_errors([&] {
    (void)ssim::experiments::compare_timeline(ssim::fuzz::text(data, size), "fuzz.csv", node);
  });
}
