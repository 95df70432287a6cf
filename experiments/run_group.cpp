#include "experiments/run_group.hpp"

#include <cstdlib>

namespace ssim::exp {

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

std::unique_ptr<RunGroup> join_run_group() {
#if STRAGGLESIM_MPI_RUNS
  if (started_by_mpi_launcher()) return join_mpi_run_group();
#endif
  return nullptr;
}

}  // namespace ssim::exp
