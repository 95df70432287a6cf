// libFuzzer harness: `stragglesim verify`: the streamed schedule JSON reader (the CLI's path),
// the memory check on the verifier's symbolic state and the verifier (fuzz/fuzz_support.hpp);
// and, differentially, the DOM reader + verify(): both must reach the same verdict and message
// (a difference aborts, so it is a finding), except where only the streamed reader refuses
// nesting deeper than 512 levels.
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <sstream>
#include <string>

#include "algorithms/schedule_json.hpp"
#include "algorithms/verifier.hpp"
#include "experiments/config/resource_check.hpp"
#include "fuzz/fuzz_support.hpp"

namespace {

template <typename F>
std::string outcome(F&& check) {
  try {
    const ssim::alg::VerifyResult v = check();
    return v.ok() ? "ok: " + ssim::alg::format_summary(v.summary) : "invalid: " + v.error->to_string();
  } catch (const ssim::InputError& e) {
    return std::string("input: ") + e.what();
  } catch (const ssim::ResourceError& e) {
    return std::string("resource: ") + e.what();
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::string text = ssim::fuzz::text(data, size);
  const auto memory = [](const ssim::alg::Schedule& h) {
    ssim::experiments::check_verify_memory(ssim::fuzz::budget(), h.ranks, h.chunks);
  };
  const std::string streamed = outcome([&] {
    std::istringstream in(text);
    return ssim::alg::verify_schedule_json(in, "fuzz.json", memory).result;
  });
  const std::string dom = outcome([&] {
    const ssim::alg::Schedule s = ssim::alg::read_schedule_json(text, "fuzz.json");
    memory(s);
    return ssim::alg::verify(s);
  });
  if (streamed != dom && streamed.find("nested deeper than") == std::string::npos) {
    std::fprintf(stderr, "streamed and DOM readers differ:\n  streamed: %s\n  DOM:      %s\n", streamed.c_str(),
                 dom.c_str());
    std::abort();
  }
  return 0;
}
