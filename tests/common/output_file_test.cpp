// common/output_file.hpp in process: what each kind of path becomes, and what is left on disk
// when a writer is dropped without commit(). The CLI tests (tests/experiments/
// cli_output_files_test.cpp) check the same rules through every command.
#include "common/output_file.hpp"

#include <gtest/gtest.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>

namespace ssim {
namespace {

namespace fs = std::filesystem;

std::string slurp(const std::string& path) {
  std::ifstream in(path);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

class OutputFileTest : public ::testing::Test {
 protected:
  void SetUp() override {
    char tmpl[] = "/tmp/ssim_output_file_XXXXXX";
    dir_ = mkdtemp(tmpl);
  }
  void TearDown() override { fs::remove_all(dir_); }
  std::string path(const std::string& name) const { return dir_ + "/" + name; }
  std::size_t entries() const {
    return static_cast<std::size_t>(std::distance(fs::directory_iterator(dir_), {}));
  }
  std::string dir_;
};

TEST_F(OutputFileTest, NameAppearsOnlyAtCommit) {
  {
    OutputFile out(path("a.txt"));
    out.stream() << "first\n";
    out.flush();
    EXPECT_FALSE(fs::exists(path("a.txt"))) << "visible before commit";
    EXPECT_EQ(entries(), 1u);  // the temporary
    out.commit();
  }
  EXPECT_EQ(slurp(path("a.txt")), "first\n");
  {
    OutputFile out(path("a.txt"));
    out.stream() << "second, never committed\n";
    out.flush();
  }
  EXPECT_EQ(slurp(path("a.txt")), "first\n") << "a dropped writer changed the file";
  EXPECT_EQ(entries(), 1u) << "the temporary was left behind";
}

TEST_F(OutputFileTest, PublishThenAppendIsTheJournalPattern) {
  {
    OutputFile out(path("j.jsonl"));
    out.stream() << "header\n";
    out.publish();
    EXPECT_EQ(slurp(path("j.jsonl")), "header\n");
    out.stream() << "line 1\n";
    out.flush();
    EXPECT_EQ(slurp(path("j.jsonl")), "header\nline 1\n");
  }  // no commit: a published file stays
  EXPECT_EQ(slurp(path("j.jsonl")), "header\nline 1\n");
  {
    OutputFile again = OutputFile::append(path("j.jsonl"));
    again.stream() << "line 2\n";
    again.commit();
  }
  EXPECT_EQ(slurp(path("j.jsonl")), "header\nline 1\nline 2\n");
  EXPECT_EQ(entries(), 1u);
  EXPECT_THROW(OutputFile::append(path("missing.jsonl")), InputError);
  EXPECT_THROW(OutputFile::append(dir_), InputError);
  ASSERT_EQ(mkfifo(path("fifo").c_str(), 0600), 0);
  EXPECT_THROW(OutputFile::append(path("fifo")), InputError) << "a FIFO journal would block";
}

TEST_F(OutputFileTest, RefusedPathsAndMessages) {
  try {
    OutputFile out(dir_);
    FAIL() << "a directory was accepted";
  } catch (const InputError& e) {
    EXPECT_EQ(std::string(e.what()).rfind(dir_ + ": is a directory", 0), 0u) << e.what();
  }
  try {
    OutputFile out(path("no/such/folder/x.txt"));
    FAIL() << "a missing folder was accepted";
  } catch (const InputError& e) {
    EXPECT_EQ(std::string(e.what()), path("no/such/folder/x.txt") +
                                         ": cannot open file for writing: No such file or "
                                         "directory");
  }
  fs::create_symlink("loop", path("loop"));
  EXPECT_THROW(OutputFile out(path("loop")), InputError);
  EXPECT_EQ(entries(), 1u);  // the link only
}

TEST_F(OutputFileTest, WriteErrorOnAFullDeviceIsAnOutputError) {
  if (geteuid() != 0 || mknod(path("full").c_str(), S_IFCHR | 0666, makedev(1, 7)) != 0)
    GTEST_SKIP() << "cannot make device nodes here (needs root)";
  OutputFile out(path("full"));
  out.stream() << "lost\n";
  try {
    out.commit();
    FAIL() << "a write to a full device succeeded";
  } catch (const OutputError& e) {
    EXPECT_EQ(std::string(e.what()), path("full") + ": write failed: No space left on device");
  }
  struct stat st {};
  ASSERT_EQ(lstat(path("full").c_str(), &st), 0);
  EXPECT_TRUE(S_ISCHR(st.st_mode));
}

}  // namespace
}  // namespace ssim
