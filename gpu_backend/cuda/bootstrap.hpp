// How the processes of a one-process-per-GPU run agree on the NCCL unique id: rank 0 makes
// it, every other rank must receive the same 128 bytes before ncclCommInitRank.
//
//   FileIdExchange ids("/shared/run42.ncclid", Seconds{60});
//   const UniqueIdBytes id = ids.share(rank, [] { ncclUniqueId u; ncclGetUniqueId(&u); ... });
//   ncclCommInitRank(&comm, nranks, id_from_bytes, rank);
//   ids.finished(rank);                     // rank 0 removes the file: everyone has joined
//
// IdExchange is the seam for other bootstraps: an MPI one (rank 0's id broadcast with
// MPI_Bcast over MPI_COMM_WORLD, rank and size from MPI) implements share() the same way;
// nothing else in the executor changes.
//
// FileIdExchange: rank 0 writes the id to `<path>.tmp.<pid>` (created exclusively) and links
// it to `path` (link() never replaces a file), so a reader sees either no file or the whole id.
// The other ranks poll for `path` until the timeout. Rank 0 refuses to start when `path`
// already exists (an id left by an earlier run would send the other ranks to a run that is
// gone; a device or any other file is never written over) and in finished() removes it if it is
// still the file it created. Ranks > 0
// cannot tell a leftover id from a fresh one, so remove the file before launching. The path
// must be on a file system every process sees (for several nodes: a shared one).
#pragma once

#include <array>
#include <functional>
#include <string>

#include "common/units.hpp"

namespace ssim::gpu {

inline constexpr std::size_t kUniqueIdBytes = 128;  // NCCL_UNIQUE_ID_BYTES
using UniqueIdBytes = std::array<char, kUniqueIdBytes>;

class IdExchange {
 public:
  virtual ~IdExchange() = default;
  // Rank 0 calls make() and publishes its result; every rank returns the published id.
  virtual UniqueIdBytes share(int rank, const std::function<UniqueIdBytes()>& make) = 0;
  // Called by every rank once its communicator exists.
  virtual void finished(int rank) = 0;
};

class FileIdExchange : public IdExchange {
 public:
  FileIdExchange(std::string path, Seconds timeout);
  // InputError: rank 0 finds the file already there or cannot write it; another rank sees
  // no complete id within the timeout.
  UniqueIdBytes share(int rank, const std::function<UniqueIdBytes()>& make) override;
  void finished(int rank) override;

 private:
  std::string path_;
  Seconds timeout_;
  // The file rank 0 created (device, inode and the id in it), removed by finished() only if
  // it is still there.
  bool created_ = false;
  unsigned long long created_dev_ = 0, created_ino_ = 0;
  UniqueIdBytes created_id_{};
};

}  // namespace ssim::gpu
