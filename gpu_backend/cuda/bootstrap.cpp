#include "gpu_backend/cuda/bootstrap.hpp"

#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <system_error>
#include <thread>

#include "common/error.hpp"

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
    {
      std::ofstream out(tmp, std::ios::binary | std::ios::trunc);
      out.write(id.data(), static_cast<std::streamsize>(id.size()));
      out.close();
      if (!out) throw InputError("cannot write the NCCL id to " + tmp);
    }
    fs::rename(tmp, path_, ec);
    if (ec) {
      fs::remove(tmp, ec);
      throw InputError("cannot rename " + tmp + " to --id-file " + path_);
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
  if (rank != 0) return;
  std::error_code ec;
  fs::remove(path_, ec);
}

}  // namespace ssim::gpu
