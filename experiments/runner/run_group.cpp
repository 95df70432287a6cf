#include "experiments/runner/run_group.hpp"

#include <cstdlib>
#include <string>

#include "common/error.hpp"

namespace ssim::experiments {

#if STRAGGLESIM_MPI_RUNS
std::unique_ptr<RunGroup> join_mpi_run_group();  // experiments/mpi/run_group_mpi.cpp
#endif

bool started_by_mpi_launcher() {
  // Open MPI's mpirun, PMIx (Open MPI 5, srun --mpi=pmix), PMI-1/2 (MPICH's hydra, srun
  // --mpi=pmi2) and MPICH's own launcher.
  for (const char* name :
       {"OMPI_COMM_WORLD_SIZE", "PMIX_RANK", "PMI_SIZE", "PMI_RANK", "MPI_LOCALNRANKS"}) {
    if (std::getenv(name) != nullptr) return true;
  }
  return false;
}

int launcher_world_size() {
  for (const char* name : {"OMPI_COMM_WORLD_SIZE", "PMI_SIZE"}) {
    if (const char* v = std::getenv(name)) return std::atoi(v);
  }
  return 0;
}

std::unique_ptr<RunGroup> join_run_group() {
#if STRAGGLESIM_MPI_RUNS
  if (started_by_mpi_launcher()) return join_mpi_run_group();
#else
  if (launcher_world_size() > 1) {
    // Each process would run every run into the same folder.
    throw InputError(
        "this stragglesim was built without MPI, so under mpirun (" +
        std::to_string(launcher_world_size()) +
        " processes) every process would run the whole experiment into the same folder; "
        "rebuild with MPI (Debian: libopenmpi-dev openmpi-bin) or run it without mpirun");
  }
#endif
  return nullptr;
}

}  // namespace ssim::experiments
