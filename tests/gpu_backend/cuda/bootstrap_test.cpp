#include "gpu_backend/cuda/bootstrap.hpp"

#include <gtest/gtest.h>
#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <future>
#include <string>
#include <thread>

#include "common/error.hpp"

namespace ssim::gpu {
namespace {

namespace fs = std::filesystem;

class IdFile : public ::testing::Test {
 protected:
  void SetUp() override {
    char dir[] = "/tmp/ssim_id_XXXXXX";
    dir_ = mkdtemp(dir);
    path_ = dir_ + "/nccl.id";
  }
  void TearDown() override { fs::remove_all(dir_); }

  static UniqueIdBytes id_with(char fill) {
    UniqueIdBytes id;
    id.fill(fill);
    id[0] = 'S';
    return id;
  }

  std::string dir_;
  std::string path_;
};

TEST_F(IdFile, RankZeroPublishesOthersReceiveTheSameBytes) {
  FileIdExchange ids0(path_, Seconds{5});
  FileIdExchange ids1(path_, Seconds{5});
  // Rank 1 starts first and waits; rank 0 publishes 50 ms later.
  auto waiter =
      std::async(std::launch::async, [&] { return ids1.share(1, [] { return UniqueIdBytes{}; }); });
  std::this_thread::sleep_for(std::chrono::milliseconds(50));
  const UniqueIdBytes made = ids0.share(0, [] { return id_with('x'); });
  EXPECT_EQ(made, id_with('x'));
  EXPECT_EQ(waiter.get(), id_with('x'));
  EXPECT_EQ(fs::file_size(path_), kUniqueIdBytes);
  // Only the final file is left: the temporary was renamed.
  int files = 0;
  for (const auto& entry : fs::directory_iterator(dir_)) files += entry.is_regular_file();
  EXPECT_EQ(files, 1);
  ids1.finished(1);
  EXPECT_TRUE(fs::exists(path_));
  ids0.finished(0);
  EXPECT_FALSE(fs::exists(path_));
}

TEST_F(IdFile, RankZeroRefusesALeftoverFile) {
  std::ofstream(path_) << "stale";
  FileIdExchange ids(path_, Seconds{1});
  try {
    ids.share(0, [] { return id_with('y'); });
    FAIL() << "used a leftover id file";
  } catch (const InputError& e) {
    EXPECT_NE(std::string(e.what()).find("already exists; remove it"), std::string::npos)
        << e.what();
  }
}

// Rank 0 never writes over a path it did not create (a dangling link, a device) and removes
// the id file at the end only if it is still the one it made.
TEST_F(IdFile, RankZeroRemovesOnlyItsOwnFile) {
  fs::create_symlink(dir_ + "/elsewhere", path_);
  FileIdExchange linked(path_, Seconds{1});
  EXPECT_THROW(linked.share(0, [] { return id_with('z'); }), InputError);
  EXPECT_TRUE(fs::is_symlink(path_));
  EXPECT_FALSE(fs::exists(dir_ + "/elsewhere")) << "written through a dangling link";
  fs::remove(path_);

  FileIdExchange ids(path_, Seconds{1});
  ids.share(0, [] { return id_with('w'); });
  fs::remove(path_);  // the new file may get the same inode number
  std::ofstream(path_) << "someone else's file";
  ids.finished(0);
  EXPECT_TRUE(fs::exists(path_)) << "removed a file rank 0 did not create";
}

TEST_F(IdFile, OtherRanksTimeOutWithAClearMessage) {
  FileIdExchange ids(path_, Seconds{0.05});
  try {
    ids.share(3, [] { return UniqueIdBytes{}; });
    FAIL() << "no id was published";
  } catch (const InputError& e) {
    EXPECT_NE(
        std::string(e.what()).find("rank 3: no NCCL id in --id-file " + path_ + " after 50.000ms"),
        std::string::npos)
        << e.what();
  }
}

TEST_F(IdFile, AFileOfTheWrongSizeIsRejected) {
  std::ofstream(path_) << "short";
  FileIdExchange ids(path_, Seconds{1});
  EXPECT_THROW(ids.share(1, [] { return UniqueIdBytes{}; }), InputError);
  EXPECT_THROW(FileIdExchange("", Seconds{1}), InputError);
}

}  // namespace
}  // namespace ssim::gpu
