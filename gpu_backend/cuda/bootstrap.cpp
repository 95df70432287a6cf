#include "gpu_backend/cuda/bootstrap.hpp"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <system_error>
#include <thread>

#include "common/error.hpp"
#include "common/output_file.hpp"

namespace ssim::gpu {

namespace fs = std::filesystem;

FileIdExchange::FileIdExchange(std::string path, Seconds timeout)
    : path_(std::move(path)), timeout_(timeout) {
  if (path_.empty()) throw InputError("--id-file must name a file");
}

UniqueIdBytes FileIdExchange::share(int rank, const std::function<UniqueIdBytes()>& make) {
  if (rank == 0) {
    std::error_code ec;
    if (fs::exists(path_, ec)) {
      throw InputError("--id-file " + path_ +
                       " already exists; remove it (it may be left from an earlier run) and "
                       "start rank 0 again");
    }
    const UniqueIdBytes id = make();
    const std::string tmp = path_ + ".tmp." + std::to_string(getpid());
    const int fd = ::open(tmp.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0644);
    if (fd < 0)
      throw InputError("cannot write the NCCL id to " + tmp + ": " + std::strerror(errno));
    const bool written =
        ::write(fd, id.data(), id.size()) == static_cast<ssize_t>(id.size()) && ::fsync(fd) == 0;
    const int write_errno = errno;
    ::close(fd);
    if (!written) {
      ::unlink(tmp.c_str());
      throw OutputError("cannot write the NCCL id to " + tmp + ": " + std::strerror(write_errno));
    }
    // link() fails when the path exists (even as a dangling link): nothing is replaced. On a
    // file system without hard links, rename() after the check above.
    bool linked = ::link(tmp.c_str(), path_.c_str()) == 0;
    int link_errno = errno;
    if (!linked && (link_errno == EPERM || link_errno == EOPNOTSUPP)) {
      linked = ::rename(tmp.c_str(), path_.c_str()) == 0;
      link_errno = errno;
    }
    ::unlink(tmp.c_str());
    if (!linked) {
      if (link_errno == EEXIST) {
        throw InputError("--id-file " + path_ +
                         " already exists; remove it (it may be left from an earlier run) and "
                         "start rank 0 again");
      }
      throw InputError("cannot create --id-file " + path_ + ": " + std::strerror(link_errno));
    }
    struct stat st {};
    if (::lstat(path_.c_str(), &st) == 0) {
      created_ = true;
      created_dev_ = st.st_dev;
      created_ino_ = st.st_ino;
      created_id_ = id;
    }
    return id;
  }

  using Clock = std::chrono::steady_clock;
  const auto deadline = Clock::now() + std::chrono::duration_cast<Clock::duration>(
                                           std::chrono::duration<double>(timeout_.value));
  while (true) {
    std::ifstream in(path_, std::ios::binary);
    if (in) {
      UniqueIdBytes id{};
      in.read(id.data(), static_cast<std::streamsize>(id.size()));
      const bool whole = in.gcount() == static_cast<std::streamsize>(id.size());
      in.peek();
      if (!whole || !in.eof()) {
        throw InputError("--id-file " + path_ + " does not hold a " +
                         std::to_string(kUniqueIdBytes) + "-byte NCCL id");
      }
      return id;
    }
    if (Clock::now() >= deadline) {
      throw InputError("rank " + std::to_string(rank) + ": no NCCL id in --id-file " + path_ +
                       " after " + format_time(timeout_) +
                       "; start rank 0 with the same --id-file (or raise --id-timeout)");
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
}

void FileIdExchange::finished(int rank) {
  if (rank != 0 || !created_) return;
  struct stat st {};
  if (::lstat(path_.c_str(), &st) == 0 && S_ISREG(st.st_mode) && st.st_dev == created_dev_ &&
      st.st_ino == created_ino_ && st.st_size == static_cast<off_t>(kUniqueIdBytes)) {
    UniqueIdBytes held{};
    std::ifstream in(path_, std::ios::binary);
    if (in.read(held.data(), static_cast<std::streamsize>(held.size())) && held == created_id_)
      ::unlink(path_.c_str());
  }
  created_ = false;
}

}  // namespace ssim::gpu
