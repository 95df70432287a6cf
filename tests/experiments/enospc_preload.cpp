// A full disk for the CLI tests, loaded with LD_PRELOAD: once SSIM_ENOSPC_AFTER bytes have been
// written to regular files whose path contains SSIM_ENOSPC_MATCH, write() on such files writes
// what still fits (a short write) and then fails with ENOSPC, as a full file system does.
// Standard output and error, and files elsewhere, are left alone. Deterministic: the budget is a
// byte count. Used where mounting a small tmpfs is not allowed (CI containers).
#include <dlfcn.h>
#include <sys/stat.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>

namespace {

std::atomic<long long> remaining{-1};  // bytes left; -1: no limit
const char* match = nullptr;
std::atomic<bool> initialized{false};

bool on_the_full_disk(int fd) {
  struct stat st {};
  if (fstat(fd, &st) != 0 || !S_ISREG(st.st_mode) || match == nullptr) return false;
  char link[64];
  char path[4096];
  std::snprintf(link, sizeof link, "/proc/self/fd/%d", fd);
  const ssize_t n = readlink(link, path, sizeof path - 1);
  if (n < 0) return false;
  path[n] = '\0';
  return std::strstr(path, match) != nullptr;
}

}  // namespace

extern "C" ssize_t write(int fd, const void* buf, size_t count) {
  using WriteFn = ssize_t (*)(int, const void*, size_t);
  static const WriteFn real_write = reinterpret_cast<WriteFn>(dlsym(RTLD_NEXT, "write"));
  if (!initialized.load()) {
    const char* after = std::getenv("SSIM_ENOSPC_AFTER");
    match = std::getenv("SSIM_ENOSPC_MATCH");
    remaining = after != nullptr ? std::atoll(after) : -1;
    initialized = true;
  }
  if (remaining.load() < 0 || count == 0 || !on_the_full_disk(fd))
    return real_write(fd, buf, count);
  const long long left = remaining.load();
  if (left <= 0) {
    errno = ENOSPC;
    return -1;
  }
  if (static_cast<long long>(count) > left) count = static_cast<size_t>(left);
  const ssize_t written = real_write(fd, buf, count);
  if (written > 0) remaining -= written;
  return written;
}
