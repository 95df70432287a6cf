// The output-folder lock (common/folder_lock.hpp): one holder at a time, named to the next; the
// lock file is removed by its holder; anything but a regular file at its name is refused and
// left alone.
#include "common/folder_lock.hpp"

#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <optional>

#include "common/error.hpp"

namespace ssim {
namespace {

namespace fs = std::filesystem;

class FolderLockTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = "/tmp/ssim_folder_lock_" +
           std::string(::testing::UnitTest::GetInstance()->current_test_info()->name()) + "_" +
           std::to_string(::getpid());
    fs::remove_all(dir_);
    fs::create_directories(dir_);
    lock_path_ = dir_ + "/" + FolderLock::kFileName;
  }
  void TearDown() override { fs::remove_all(dir_); }
  std::string refusal() {
    try {
      FolderLock second(dir_);
    } catch (const InputError& e) {
      return e.what();
    }
    return "";
  }
  std::string dir_, lock_path_;
};

TEST_F(FolderLockTest, OneHolderAtATimeNamedToTheNext) {
  std::optional<FolderLock> first(std::in_place, dir_);
  ASSERT_TRUE(fs::is_regular_file(lock_path_));
  const std::string why = refusal();
  EXPECT_NE(why.find(dir_ + ": the folder is in use by another stragglesim (pid " +
                     std::to_string(getpid()) + ": "),
            std::string::npos)
      << why;
  first.reset();
  EXPECT_FALSE(fs::exists(lock_path_));
  EXPECT_EQ(refusal(), "");  // free again
  EXPECT_FALSE(fs::exists(lock_path_));
}

TEST_F(FolderLockTest, ALeftOverLockFileDoesNotBlock) {
  std::ofstream(lock_path_) << "pid 1: a holder that died\n";
  EXPECT_EQ(refusal(), "");
}

TEST_F(FolderLockTest, OnlyARegularFileIsUsedAndNothingElseIsTouched) {
  const std::string target = dir_ + "/precious";
  std::ofstream(target) << "keep me\n";
  fs::create_symlink(target, lock_path_);
  EXPECT_NE(refusal().find(lock_path_ + ": is a symbolic link"), std::string::npos);
  EXPECT_TRUE(fs::is_symlink(lock_path_));
  std::ifstream in(target);
  std::string text;
  std::getline(in, text);
  EXPECT_EQ(text, "keep me");
  fs::remove(lock_path_);
  ASSERT_EQ(mkfifo(lock_path_.c_str(), 0644), 0);
  EXPECT_NE(refusal().find(lock_path_ + ": is not a regular file"), std::string::npos);
  EXPECT_TRUE(fs::is_fifo(lock_path_));
}

}  // namespace
}  // namespace ssim
