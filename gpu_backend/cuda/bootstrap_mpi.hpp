// Multi-node bootstrap through MPI: `mpirun -np 16 stragglesim-gpu run ...` starts one process
// per GPU on any number of nodes; rank and size come from MPI_COMM_WORLD, the GPU is the
// node-local rank (MPI_Comm_split_type shared) modulo the node's GPUs, and rank 0's NCCL unique
// id reaches every rank by MPI_Bcast. Built when MPI is found (STRAGGLESIM_GPU_WITH_MPI);
// otherwise MpiSession::start throws InputError, and the file bootstrap (bootstrap.hpp) is the
// way to run one process per GPU.
//
//   if (launched_by_mpirun()) {
//     auto mpi = MpiSession::start(&argc, &argv);        // MPI_Init; MPI_Finalize on destruction
//     MpiIdExchange ids;
//     DeviceGroup g = DeviceGroup::one_rank(mpi->rank(), mpi->size(), device, ids);
//   }
#pragma once

#include <memory>

#include "gpu_backend/cuda/bootstrap.hpp"

namespace ssim::gpu {

// The environment of a process started by mpirun/mpiexec/srun (Open MPI, MPICH/PMI, PMIx).
bool launched_by_mpirun();
bool built_with_mpi();

class MpiSession {
 public:
  static std::unique_ptr<MpiSession> start(int* argc, char*** argv);
  ~MpiSession();
  MpiSession(const MpiSession&) = delete;
  MpiSession& operator=(const MpiSession&) = delete;

  int rank() const { return rank_; }
  int size() const { return size_; }
  int local_rank() const { return local_rank_; }  // among the ranks of this node
  // Ends every rank of the job (a rank that failed must not leave the others in NCCL calls).
  [[noreturn]] void abort(int code);

 private:
  MpiSession() = default;
  int rank_ = 0;
  int size_ = 1;
  int local_rank_ = 0;
};

class MpiIdExchange : public IdExchange {
 public:
  // Rank 0 makes the id, MPI_Bcast gives it to every rank of MPI_COMM_WORLD.
  UniqueIdBytes share(int rank, const std::function<UniqueIdBytes()>& make) override;
  void finished(int) override {}
};

}  // namespace ssim::gpu
