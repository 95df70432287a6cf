// `stragglesim-gpu run`'s output files (--csv, -J, --timeline) go through the common writer
// (common/output_file.hpp): a device node is written in place and stays the same node, a full
// one is exit 3 naming the file, a directory is refused, a full standard output is exit 3.
// Device nodes are made by the test (mknod, as root; skipped otherwise), never /dev/null or
// /dev/full themselves.
#include <fcntl.h>
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <string>

#include "tests/experiments/cli_support.hpp"  // run_cli: STRAGGLESIM_BIN is stragglesim-gpu-emulated

namespace ssim::gpu {
namespace {

using ssim::testing::CommandResult;
using ssim::testing::expect_char_device;
using ssim::testing::make_char_device;
using ssim::testing::run_cli;
using ssim::testing::slurp;

bool contains(const std::string& text, const std::string& part) {
  return text.find(part) != std::string::npos;
}

class EmulatedOutputFiles : public ::testing::Test {
 protected:
  void SetUp() override {
    char tmpl[] = "/tmp/ssim_gpu_outfiles_XXXXXX";
    dir_ = mkdtemp(tmpl);
  }
  void TearDown() override { std::filesystem::remove_all(dir_); }
  std::string path(const std::string& name) const { return dir_ + "/" + name; }

  bool make_device(const std::string& name, unsigned major_number, unsigned minor_number) const {
    return make_char_device(path(name), major_number, minor_number);
  }
  void expect_device(const std::string& name, unsigned major_number, unsigned minor_number,
                     const std::string& after) const {
    expect_char_device(path(name), major_number, minor_number, after);
  }

  std::string dir_;
};

constexpr const char* kRun = "run --algo ring --ranks 4 -b 4K -n 2 ";

TEST_F(EmulatedOutputFiles, DeviceNodesAreWrittenInPlace) {
  if (!make_device("null", 1, 3) || !make_device("full", 1, 7))
    GTEST_SKIP() << "cannot make device nodes here (needs root)";
  for (const std::string flag : {"--csv", "-J", "--timeline"}) {
    const std::string to_null = std::string(kRun) + flag + " " + path("null");
    const CommandResult ok = run_cli(to_null);
    EXPECT_EQ(ok.rc, 0) << to_null << "\n" << ok.err;
    expect_device("null", 1, 3, to_null);
    const std::string to_full = std::string(kRun) + flag + " " + path("full");
    const CommandResult full = run_cli(to_full);
    EXPECT_EQ(full.rc, 3) << to_full << "\n" << full.err;
    EXPECT_TRUE(contains(full.err, path("full") + ": write failed: No space left on device"))
        << to_full << "\n"
        << full.err;
    expect_device("full", 1, 7, to_full);
  }
  // Standard output on the full device: the table is lost, so the run fails.
  const std::string cmd =
      std::string(STRAGGLESIM_BIN) + " " + kRun + " >" + path("full") + " 2>" + path("err");
  const int status = std::system(cmd.c_str());
  EXPECT_EQ(WIFEXITED(status) ? WEXITSTATUS(status) : -1, 3);
  EXPECT_TRUE(contains(slurp(path("err")),
                       "stragglesim-gpu: error: standard output: write failed: No space left"))
      << slurp(path("err"));
  expect_device("full", 1, 7, "a run with stdout on it");
}

TEST_F(EmulatedOutputFiles, DirectoryIsRefusedAndFilesAreWholeOrAbsent) {
  std::filesystem::create_directory(path("folder"));
  const CommandResult r = run_cli(std::string(kRun) + "--csv " + path("folder"));
  EXPECT_EQ(r.rc, 1) << r.err;
  EXPECT_TRUE(
      contains(r.err, "cannot write the result CSV --csv " + path("folder") + ": is a directory"))
      << r.err;
  EXPECT_TRUE(std::filesystem::is_empty(path("folder")));
  // A regular file is replaced whole, with no temporary left beside it.
  const std::string csv = path("runs.csv");
  ASSERT_EQ(run_cli(std::string(kRun) + "--csv " + csv).rc, 0);
  const std::string first = slurp(csv);
  EXPECT_FALSE(first.empty());
  ASSERT_EQ(run_cli(std::string(kRun) + "--csv " + csv).rc, 0);
  for (const auto& entry : std::filesystem::directory_iterator(dir_))
    EXPECT_FALSE(contains(entry.path().filename().string(), ".tmp")) << entry.path();
}

// Output paths are checked before the device is looked for: without a GPU a bad path is said,
// not "no CUDA device" (a user learns of it on the laptop, not after a queue wait).
TEST_F(EmulatedOutputFiles, BadOutputPathsAreSaidWithoutADevice) {
  std::filesystem::create_directory(path("folder"));
  setenv("SSIM_EMU_DEVICES", "0", 1);
  const CommandResult timeline = run_cli(std::string(kRun) + "--timeline " + path("folder"));
  const CommandResult missing =
      run_cli(std::string(kRun) + "-J " + path("no/such/folder/runs.json"));
  const bool devices = make_device("full", 1, 7);
  const CommandResult full =
      devices ? run_cli(std::string(kRun) + "--csv " + path("full")) : CommandResult{};
  const CommandResult none = run_cli(std::string(kRun) + "--csv " + path("runs.csv"));
  unsetenv("SSIM_EMU_DEVICES");
  EXPECT_EQ(timeline.rc, 1) << timeline.err;
  EXPECT_TRUE(contains(timeline.err, "--timeline " + path("folder") + ": is a directory"))
      << timeline.err;
  EXPECT_EQ(missing.rc, 1) << missing.err;
  EXPECT_TRUE(contains(missing.err, "cannot write the JSON -J " + path("no/such/folder/runs.json")))
      << missing.err;
  if (devices) {
    EXPECT_EQ(full.rc, 3) << full.err;
    EXPECT_TRUE(contains(full.err, path("full") + ": write failed: No space left on device"))
        << full.err;
  }
  // A good path: the device is looked for, and its absence leaves no file behind.
  EXPECT_EQ(none.rc, 3) << none.err;
  EXPECT_TRUE(contains(none.err, "no CUDA device")) << none.err;
  EXPECT_FALSE(std::filesystem::exists(path("runs.csv")));
  for (const auto& entry : std::filesystem::directory_iterator(dir_))
    EXPECT_FALSE(contains(entry.path().filename().string(), ".tmp")) << entry.path();
}

}  // namespace
}  // namespace ssim::gpu
