// libFuzzer harness: `fit-delays`' reader of PyTorch profiler traces (Chrome trace JSON, one file
// per rank; experiments/config/delay_files.hpp) and the fit the command makes of their step
// times (sim::fit_delays). The input holds the traces one after another, separated by a line
// "---" (a JSON text has no line of its own there: a string cannot hold a raw newline).
#include <cstddef>
#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "experiments/config/delay_files.hpp"
#include "fuzz/fuzz_support.hpp"
#include "sim/delay_fit.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  return ssim::fuzz::expect_clean_errors([&] {
    const std::string text = ssim::fuzz::text(data, size);
    std::vector<std::pair<std::string, std::string>> traces;
    const std::string separator = "\n---\n";
    std::size_t begin = 0;
    while (true) {
      const std::size_t end = text.find(separator, begin);
      traces.emplace_back("rank" + std::to_string(traces.size()) + ".json",
                          text.substr(begin, end == std::string::npos ? end : end - begin));
      if (end == std::string::npos) break;
      begin = end + separator.size();
    }
    const std::vector<std::vector<double>> times = ssim::experiments::read_profiler_traces(traces);
    (void)ssim::sim::fit_delays(times);
  });
}
