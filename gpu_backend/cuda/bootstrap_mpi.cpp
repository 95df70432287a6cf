#include "gpu_backend/cuda/bootstrap_mpi.hpp"

#include <cstdlib>

#include "common/error.hpp"

#if defined(STRAGGLESIM_GPU_WITH_MPI)
#include <mpi.h>
#endif

namespace ssim::gpu {

bool launched_by_mpirun() {
  for (const char* var : {"OMPI_COMM_WORLD_SIZE", "PMIX_RANK", "PMI_SIZE", "PMI_RANK",
                          "MV2_COMM_WORLD_SIZE", "MPI_LOCALNRANKS"}) {
    if (std::getenv(var)) return true;
  }
  return false;
}

#if defined(STRAGGLESIM_GPU_WITH_MPI)

bool built_with_mpi() { return true; }

std::unique_ptr<MpiSession> MpiSession::start(int* argc, char*** argv) {
  if (MPI_Init(argc, argv) != MPI_SUCCESS) throw InputError("MPI_Init failed");
  std::unique_ptr<MpiSession> s(new MpiSession);
  MPI_Comm_rank(MPI_COMM_WORLD, &s->rank_);
  MPI_Comm_size(MPI_COMM_WORLD, &s->size_);
  MPI_Comm node;
  MPI_Comm_split_type(MPI_COMM_WORLD, MPI_COMM_TYPE_SHARED, s->rank_, MPI_INFO_NULL, &node);
  MPI_Comm_rank(node, &s->local_rank_);
  MPI_Comm_free(&node);
  return s;
}

MpiSession::~MpiSession() { MPI_Finalize(); }

void MpiSession::abort(int code) {
  MPI_Abort(MPI_COMM_WORLD, code);
  std::exit(code);
}

UniqueIdBytes MpiIdExchange::share(int rank, const std::function<UniqueIdBytes()>& make) {
  UniqueIdBytes id{};
  if (rank == 0) id = make();
  if (MPI_Bcast(id.data(), static_cast<int>(id.size()), MPI_BYTE, 0, MPI_COMM_WORLD) != MPI_SUCCESS)
    throw InputError("MPI_Bcast of the NCCL id failed");
  return id;
}

#else

bool built_with_mpi() { return false; }

std::unique_ptr<MpiSession> MpiSession::start(int*, char***) {
  throw InputError(
      "started by mpirun, but stragglesim-gpu was built without MPI (install an MPI, e.g. "
      "Debian libopenmpi-dev, and rebuild), or run one process per GPU with "
      "--rank/--nranks/--id-file");
}

MpiSession::~MpiSession() = default;

void MpiSession::abort(int code) { std::exit(code); }

UniqueIdBytes MpiIdExchange::share(int, const std::function<UniqueIdBytes()>&) {
  throw InputError("stragglesim-gpu was built without MPI");
}

#endif

}  // namespace ssim::gpu
