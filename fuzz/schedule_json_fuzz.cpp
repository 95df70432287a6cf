// libFuzzer harness: `stragglesim verify`: the schedule JSON reader, the memory check on the
// verifier's symbolic state, and the verifier (fuzz/fuzz_support.hpp).
#include <cstddef>
#include <cstdint>

#include "algorithms/schedule_json.hpp"
#include "algorithms/verifier.hpp"
#include "experiments/resource_check.hpp"
#include "fuzz/fuzz_support.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  return ssim::fuzz::expect_clean_errors([&] {
    const ssim::alg::Schedule s =
        ssim::alg::read_schedule_json(ssim::fuzz::text(data, size), "fuzz.json");
    ssim::exp::check_verify_memory(ssim::fuzz::budget(), s.ranks, s.chunks);
    const ssim::alg::VerifyResult v = ssim::alg::verify(s);
    if (v.ok())
      (void)ssim::alg::format_summary(v.summary);
    else
      (void)v.error->to_string();
  });
}
