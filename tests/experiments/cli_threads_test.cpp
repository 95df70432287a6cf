// --threads on simulate, run and advise: bad values are usage errors (exit 2) naming the flag;
// the default is one thread; any thread count gives the same output.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <string>

#include "cli_support.hpp"

namespace ssim::testing {
namespace {

TEST(CliThreads, BadValuesAreUsageErrors) {
  for (const std::string command : {"simulate x.yaml", "run x.yaml", "advise --topology x"}) {
    for (const std::string value :
         {"0", "-1", "abc", "1.5", "2x", "1025", "99999999999999999999"}) {
      const CommandResult r = run_cli(command + " --threads " + value);
      EXPECT_EQ(r.rc, 2) << command << " " << value << "\n" << r.err;
      EXPECT_EQ(
          r.err.rfind("stragglesim: error: --threads: must be a whole number from 1 to 1024", 0),
          0u)
          << command << " " << value << "\n"
          << r.err;
      EXPECT_NE(r.err.find("got '" + value + "'"), std::string::npos) << r.err;
    }
  }
}

// One thread unless --threads says otherwise (docs/scale.md "Threads": on a loaded machine a
// second thread cost CPU and wall time); the help says so on every command that takes the flag.
TEST(CliThreads, DefaultIsOneThread) {
  for (const std::string command : {"simulate", "run", "advise"}) {
    const CommandResult r = run_cli(command + " --help");
    ASSERT_EQ(r.rc, 0) << command << "\n" << r.err;
    const std::size_t at = r.out.find("--threads");
    ASSERT_NE(at, std::string::npos) << command << "\n" << r.out;
    EXPECT_NE(r.out.find("(default 1:", at), std::string::npos) << command << "\n" << r.out;
  }
}

// rhd on 16384 ranks: 28 rounds of 16384 transfers, each at the default threshold of the
// parallel pass, with stragglers and a gamma; the JSON (per-rank times included) is the same text.
TEST(CliThreads, SimulateOutputIdenticalForAnyThreadCount) {
  const std::string path = (std::filesystem::temp_directory_path() /
                            ("ssim_threads_" + std::to_string(::getpid()) + ".yaml"))
                               .string();
  std::ofstream(path)
      << "topology: {kind: switch, ranks: 16384, bandwidth: 450GB/s, latency: 3us}\n"
         "network: {model: alphabeta, gamma: 0.01ns/B}\n"
         "collective: {algorithm: rhd, size: 64MiB}\n"
         "delays:\n"
         "  base: {distribution: exponential, mean: 20us}\n"
         "  persistent: [{rank: 17, delay: 1ms}]\n"
         "iterations: 1\n"
         "seed: 4\n";
  const CommandResult one = run_cli("simulate " + path + " --json --per-rank --threads 1");
  ASSERT_EQ(one.rc, 0) << one.err;
  for (const char* threads : {"2", "3", "8"}) {
    const CommandResult many =
        run_cli("simulate " + path + " --json --per-rank --threads " + threads);
    ASSERT_EQ(many.rc, 0) << many.err;
    EXPECT_EQ(many.out, one.out) << "--threads " << threads;
  }
  std::filesystem::remove(path);
}

}  // namespace
}  // namespace ssim::testing
