// Shared by the libFuzzer harnesses (fuzz/*_fuzz.cpp): the expected outcomes of bad input and the
// resource limits the CLI would apply.
//
// A harness calls the loader the way the CLI does and treats ssim::InputError (bad input, with a
// message) and ssim::ResourceError (refused as too large) as the expected outcomes of a fuzzed
// input; any other exception, a crash or a sanitizer report escapes and is a finding.
//
//   extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
//     return ssim::fuzz::expect_clean_errors([&] { load(ssim::fuzz::text(data, size)); });
//   }
#pragma once
#include <cstddef>
#include <cstdint>
#include <string>

#include "common/error.hpp"
#include "common/memory_budget.hpp"

namespace ssim::fuzz {

// The budget a harness checks estimates against before building anything large, as the CLI
// does with --max-memory: small enough that one input stays well under libFuzzer's 2 GB RSS limit.
inline MemoryBudget budget() {
  return MemoryBudget::of(std::uint64_t{256} << 20, "the fuzz harness's 256MiB");
}

inline std::string text(const std::uint8_t* data, std::size_t size) {
  return std::string(reinterpret_cast<const char*>(data), size);
}

template <typename F>
int expect_clean_errors(F&& body) {
  try {
    body();
  } catch (const InputError&) {
  } catch (const ResourceError&) {
  }
  return 0;
}

}  // namespace ssim::fuzz
