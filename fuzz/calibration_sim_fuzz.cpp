// libFuzzer harness: calibration by simulation (experiments/runner/calibrate_sim.hpp) on an
// arbitrary result CSV: the reader's range checks, the grouping into simulated cases under the
// fuzz budget, and a fit of at most 3 evaluations of the shared_device kind.
#include <cstddef>
#include <cstdint>
#include <sstream>

#include "calibration/calibration.hpp"
#include "experiments/runner/calibrate_sim.hpp"
#include "fuzz/fuzz_support.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  return ssim::fuzz::expect_clean_errors([&] {
    std::istringstream in(ssim::fuzz::text(data, size));
    const std::vector<ssim::experiments::MeasuredFile> files = {
        {"fuzz.csv", ssim::calib::read_measured_runs(in, "fuzz.csv")}};
    ssim::experiments::SimFitOptions o;
    o.max_evaluations = 3;
    o.max_memory = ssim::fuzz::budget().bytes();
    // The CLI's time guard with a limit of a second instead of its default hour: a fit the
    // estimate lets through must finish within libFuzzer's timeout (10 s, ASan included), so
    // that a timeout is an estimate that is wrong, not a fit that is merely allowed to be long.
    o.max_time = "1s";
    (void)ssim::experiments::fit_by_simulation(files, o);
  });
}
