#include "common/folder_lock.hpp"

#include <fcntl.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <thread>

#include "common/error.hpp"

namespace ssim {
namespace {

// This process's command line, arguments separated by spaces (from /proc/self/cmdline).
std::string own_command_line() {
  std::ifstream in("/proc/self/cmdline", std::ios::binary);
  std::stringstream ss;
  ss << in.rdbuf();
  std::string text = ss.str();
  while (!text.empty() && text.back() == '\0') text.pop_back();
  for (char& c : text) {
    if (c == '\0' || c == '\n') c = ' ';
  }
  return text.empty() ? std::string("stragglesim") : text.substr(0, 2000);
}

// The holder writes its name right after it takes the lock: a reader that comes in between
// waits for it a little (up to about 0.5 s) before it gives up on the name.
std::string read_holder(int fd) {
  std::string text;
  for (int attempt = 0; attempt < 100 && text.empty(); ++attempt) {
    if (attempt > 0) std::this_thread::sleep_for(std::chrono::milliseconds(5));
    char buf[2048];
    const ssize_t n = pread(fd, buf, sizeof buf - 1, 0);
    text = n > 0 ? std::string(buf, static_cast<std::size_t>(n)) : std::string();
    while (!text.empty() && text.back() == '\n') text.pop_back();
  }
  return text.empty() ? std::string("a process that has not written its name yet") : text;
}

}  // namespace

FolderLock::FolderLock(const std::string& dir)
    : path_((std::filesystem::path(dir) / kFileName).string()) {
  // The file may be removed by its holder between our open and our flock: then the lock taken
  // is on a file no longer at the path, and we try again.
  for (int attempt = 0; attempt < 100; ++attempt) {
    const int fd =
        open(path_.c_str(), O_RDWR | O_CREAT | O_NOFOLLOW | O_CLOEXEC | O_NONBLOCK, 0644);
    if (fd < 0) {
      const int err = errno;
      if (err == ELOOP)
        throw InputError(
            path_ + ": is a symbolic link; the output folder's lock file must be a regular file");
      throw InputError(path_ +
                       ": cannot create the output folder's lock file: " + std::strerror(err));
    }
    struct stat st {};
    if (fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) {
      close(fd);
      throw InputError(path_ +
                       ": is not a regular file; the output folder's lock file must be one");
    }
    if (flock(fd, LOCK_EX | LOCK_NB) != 0) {
      const int err = errno;
      if (err == EWOULDBLOCK) {
        const std::string holder = read_holder(fd);
        close(fd);
        throw InputError(dir + ": the folder is in use by another stragglesim (" + holder +
                         "); wait for it to end, or give another output folder");
      }
      close(fd);
      throw InputError(path_ + ": cannot lock the output folder: " + std::strerror(err));
    }
    struct stat now {};
    if (stat(path_.c_str(), &now) != 0 || now.st_ino != st.st_ino || now.st_dev != st.st_dev) {
      close(fd);
      continue;
    }
    const std::string holder = "pid " + std::to_string(getpid()) + ": " + own_command_line() + "\n";
    if (ftruncate(fd, 0) != 0 ||
        pwrite(fd, holder.data(), holder.size(), 0) != static_cast<ssize_t>(holder.size())) {
      const int err = errno;
      unlink(path_.c_str());
      close(fd);
      throw InputError(path_ +
                       ": cannot write the output folder's lock file: " + std::strerror(err));
    }
    fd_ = fd;
    return;
  }
  throw InputError(
      path_ + ": the output folder's lock file keeps changing; is another program removing it?");
}

FolderLock::~FolderLock() {
  if (fd_ < 0) return;
  // Removed while still held, so that no other process can have locked the file at this path.
  struct stat mine {
  }, now{};
  if (fstat(fd_, &mine) == 0 && stat(path_.c_str(), &now) == 0 && mine.st_ino == now.st_ino &&
      mine.st_dev == now.st_dev)
    unlink(path_.c_str());
  close(fd_);
}

}  // namespace ssim
