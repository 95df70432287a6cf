// libFuzzer harness: `stragglesim verify` on a binary schedule (algorithms/schedule_bin.hpp): the
// streamed reader, the CLI's memory check on the verifier's state and the verifier. Bad input must
// end in an InputError naming the byte (or a ResourceError from the memory check); and what reads
// cleanly must read the same through the in-memory reader and write back to the same bytes.
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <sstream>
#include <string>

#include "algorithms/schedule_bin.hpp"
#include "algorithms/verifier.hpp"
#include "experiments/config/resource_check.hpp"
#include "fuzz/fuzz_support.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::string bytes = ssim::fuzz::text(data, size);
  const auto memory = [](const ssim::alg::Schedule& h) {
    ssim::experiments::check_verify_memory(ssim::fuzz::budget(), h.ranks, h.chunks);
  };
  ssim::fuzz::expect_clean_errors([&] {
    std::istringstream in(bytes);
    ssim::alg::verify_schedule_file(in, "fuzz.bin", memory);
  });
  ssim::fuzz::expect_clean_errors([&] {
    const ssim::alg::Schedule s = ssim::alg::read_schedule_bin(bytes, "fuzz.bin");
    // A file that reads is the writer's output, except for non-canonical varints and the phase
    // table: reading the rewritten bytes must give the same schedule.
    if (ssim::alg::read_schedule_bin(ssim::alg::schedule_to_bin(s), "again.bin") != s) {
      std::fprintf(stderr, "a binary schedule does not read back the same after writing\n");
      std::abort();
    }
  });
  return 0;
}
