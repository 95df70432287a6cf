// The measured drivers' shared flag definition: declared once on a CLI11 app, parsed and
// resolved as both stragglesim-gpu run and stragglesim-mpi do.
#include "gpu_backend/nccl_tests_flags.hpp"

#include <gtest/gtest.h>

#include <CLI/CLI.hpp>
#include <cstdlib>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "common/error.hpp"

namespace ssim::gpu {
namespace {

NcclTestsSettings parse(std::vector<std::string> args) {
  CLI::App app{"test"};
  NcclTestsFlags flags;
  add_nccl_tests_flags(app, flags, "mpi (MPI_Allreduce)");
  args.insert(args.begin(), "prog");
  std::vector<const char*> argv;
  for (const std::string& a : args) argv.push_back(a.c_str());
  app.parse(static_cast<int>(argv.size()), argv.data());
  return resolve_nccl_tests_flags(flags);
}

std::string error_of(const std::vector<std::string>& args) {
  try {
    parse(args);
  } catch (const InputError& e) {
    return e.what();
  }
  return "(no error)";
}

TEST(NcclTestsFlags, DefaultsAreNcclTests) {
  const NcclTestsSettings s = parse({});
  EXPECT_EQ(s.sizes, std::vector<std::uint64_t>{32u << 20});
  EXPECT_EQ(s.iterations, 20);
  EXPECT_EQ(s.warmup, 5);
  EXPECT_EQ(s.check_iterations, 1);
  EXPECT_EQ(s.dtype, lowering::DType::float32);
  EXPECT_EQ(s.average, RankAverage::mean);
  EXPECT_EQ(s.algorithm, "ring");
  EXPECT_TRUE(s.csv.empty());
  EXPECT_TRUE(s.json.empty());
}

TEST(NcclTestsFlags, EveryFlag) {
  const NcclTestsSettings s =
      parse({"-b",          "1K", "-e",     "4K",    "-i", "1K",         "-n",      "7",
             "-w",          "2",  "-c",     "3",     "-o", "sum",        "-d",      "bf16",
             "-a",          "2",  "--algo", "tree",  "-O", "segments=4", "--delay", "5ms",
             "--straggler", "1",  "--csv",  "r.csv", "-J", "r.json"});
  EXPECT_EQ(s.sizes, (std::vector<std::uint64_t>{1024, 2048, 3072, 4096}));
  EXPECT_EQ(s.iterations, 7);
  EXPECT_EQ(s.warmup, 2);
  EXPECT_EQ(s.check_iterations, 3);
  EXPECT_EQ(s.dtype, lowering::DType::bfloat16);
  EXPECT_EQ(s.average, RankAverage::min);
  EXPECT_EQ(s.algorithm, "tree");
  EXPECT_EQ(s.algorithm_options.at("segments"), "4");
  EXPECT_DOUBLE_EQ(s.delay.value, 5e-3);
  EXPECT_EQ(s.straggler, 1);
  EXPECT_EQ(s.csv, "r.csv");
  EXPECT_EQ(s.json, "r.json");
  EXPECT_EQ(parse({"-b", "1K", "-e", "64K", "-f", "4"}).sizes,
            (std::vector<std::uint64_t>{1024, 4096, 16384, 65536}));
  EXPECT_EQ(parse({"--datatype", "half"}).dtype, lowering::DType::float16);
}

TEST(NcclTestsFlags, BadValuesNameTheFlag) {
  EXPECT_EQ(error_of({"-o", "prod"}),
            "-o/--op 'prod': the schedules reduce by sum, the only operation supported "
            "(nccl-tests' prod, min, max, avg are not)");
  EXPECT_EQ(error_of({"-a", "-1"}), "-a must be 0 (rank 0), 1 (mean), 2 (min) or 3 (max), got -1");
  EXPECT_EQ(error_of({"-f", "2", "-i", "1K"}),
            "-f (size factor) and -i (size increment) exclude each other");
  EXPECT_EQ(error_of({"-b", "1K", "-e", "2K", "-f", "1"}), "-f (size factor) must be >= 2, got 1");
  // -f 0 was taken for "not given" (the default 2); with one size it was not checked at all.
  EXPECT_EQ(error_of({"-b", "1K", "-e", "4K", "-f", "0"}), "-f (size factor) must be >= 2, got 0");
  EXPECT_EQ(error_of({"-b", "1K", "-f", "0"}), "-f (size factor) must be >= 2, got 0");
  EXPECT_EQ(error_of({"-c", "-2"}), "-c (checked iterations) must be >= 0, got -2");
  EXPECT_EQ(error_of({"-n", "0"}), "-n (iterations) must be >= 1, got 0");
  EXPECT_EQ(error_of({"-O", "x"}), "-O/--option expects KEY=VALUE, got 'x'");
  EXPECT_EQ(error_of({"-O", "straggler=1"}),
            "set the straggler with --straggler, not -O straggler=...");
  EXPECT_NE(error_of({"-d", "fp8"}).find("unknown data type 'fp8'"), std::string::npos);
  EXPECT_NE(error_of({"-i", "0", "-b", "1K", "-e", "2K"}).find("-i (size increment) must be > 0"),
            std::string::npos);
}

TEST(NcclTestsFlags, AnOptionKeyGivenTwiceIsAnError) {
  EXPECT_EQ(error_of({"-O", "segments=4", "-O", "segments=8"}),
            "-O/--option 'segments=8': segments is given twice");
}

// Without --ranks (the rank count would come from the devices) or under a wrong mpirun -np, a
// bad -O value or --straggler is still said as such, before any device or process count.
std::string options_error(const std::string& algorithm, std::map<std::string, std::string> o,
                          std::optional<int> straggler) {
  try {
    check_options_for_some_rank_count(algorithm, o, straggler);
  } catch (const InputError& e) {
    return e.what();
  }
  return "(no error)";
}

TEST(NcclTestsFlags, OptionsAreCheckedBeforeTheRankCountIsKnown) {
  EXPECT_EQ(options_error("tree", {{"segments", "4"}}, std::nullopt), "(no error)");
  EXPECT_EQ(options_error("stragglar", {}, 5), "(no error)");
  EXPECT_EQ(options_error("hierarchical", {{"gpus_per_node", "4"}}, std::nullopt), "(no error)");
  EXPECT_NE(options_error("tree", {{"segments", "0"}}, std::nullopt).find("segments"),
            std::string::npos);
  EXPECT_NE(options_error("stragglar", {{"stragglers", "0"}}, std::nullopt).find("stragglers"),
            std::string::npos);
  EXPECT_NE(options_error("ring", {{"bogus", "1"}}, std::nullopt).find("has no option 'bogus'"),
            std::string::npos);
  EXPECT_EQ(options_error("ring", {}, -1), "--straggler must be a rank >= 0, got -1");
}

TEST(NcclTestsFlags, RankAverages) {
  const std::vector<double> t = {3.0, 1.0, 2.0, 6.0};
  EXPECT_EQ(combine(RankAverage::rank0, t), 3.0);
  EXPECT_EQ(combine(RankAverage::mean, t), 3.0);
  EXPECT_EQ(combine(RankAverage::min, t), 1.0);
  EXPECT_EQ(combine(RankAverage::max, t), 6.0);
  EXPECT_EQ(to_string(RankAverage::rank0), "rank 0");
}

}  // namespace
}  // namespace ssim::gpu

namespace ssim::gpu {
namespace {

TEST(NcclTestsFlags, NcclEnvironmentForTheRows) {
  ::setenv("NCCL_PROTO", "Simple", 1);
  ::unsetenv("NCCL_ALGO");
  EXPECT_EQ(nccl_env("NCCL_PROTO"), "Simple");
  EXPECT_EQ(nccl_env("NCCL_ALGO"), "");
  ::unsetenv("NCCL_PROTO");
}

}  // namespace
}  // namespace ssim::gpu
