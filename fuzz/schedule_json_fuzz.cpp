// libFuzzer harness: `stragglesim verify`'s path, verify_schedule_json (the fast scanner of the
// files `schedule` writes, which gives up on anything else and hands the input to the nlohmann
// SAX reader; the memory check on the verifier's symbolic state, fuzz/fuzz_support.hpp's budget;
// the verifier round by round), and, differentially, the whole-document path:
// read_schedule_json(text) (the SAX reader alone, every round kept), the same memory check, then
// verify() on the whole schedule. Both must reach the same verdict and message; a difference
// aborts, so it is a finding. Both reach the SAX reader's refusals (syntax, duplicate keys,
// nesting deeper than 512 levels) with the same message.
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
  const std::string verified = outcome([&] {
    std::istringstream in(text);
    return ssim::alg::verify_schedule_json(in, "fuzz.json", memory).result;
  });
  const std::string whole = outcome([&] {
    const ssim::alg::Schedule s = ssim::alg::read_schedule_json(text, "fuzz.json");
    memory(s);
    return ssim::alg::verify(s);
  });
  if (verified != whole) {
    std::fprintf(stderr,
                 "verify_schedule_json and read_schedule_json + verify() differ:\n"
                 "  verify_schedule_json:         %s\n"
                 "  read_schedule_json + verify(): %s\n",
                 verified.c_str(), whole.c_str());
    std::abort();
  }
  return 0;
}
