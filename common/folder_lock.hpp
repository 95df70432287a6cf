// One program at a time per output folder: an advisory lock (flock) on DIR/.stragglesim.lock,
// a file the program creates, which holds the pid and command line of the holder and is
// removed when the holder lets go. The kernel drops the lock when the holder dies, however it
// dies (kill -9 included), so a stale lock file never blocks a later run.
//
//   ssim::FolderLock lock(dir);   // InputError naming the holder (pid, command) when taken
//
// The lock file is opened without following links and must be a regular file; anything else at
// its name is refused, never removed or truncated.
#pragma once

#include <string>

namespace ssim {

class FolderLock {
 public:
  // `dir` must exist. InputError when another process holds the lock, or the lock file cannot
  // be created.
  explicit FolderLock(const std::string& dir);
  ~FolderLock();  // removes the lock file (still its own) and releases the lock
  FolderLock(const FolderLock&) = delete;
  FolderLock& operator=(const FolderLock&) = delete;

  static constexpr const char* kFileName = ".stragglesim.lock";

 private:
  std::string path_;
  int fd_ = -1;
};

}  // namespace ssim
