// The settings of `stragglesim-mpi` as typed values, every check on them, and the collective
// each size runs: pure host code (no MPI calls), so bad input fails identically on every rank
// and is tested without mpirun.
//
//   MpiSweepConfig o;
//   o.algorithm = "stragglar";  o.delay = parse_time("5ms");
//   o.sizes = size_sweep(parse_size("1M"), parse_size("64M"), 4);
//   validate_mpi_options(o, world_size);        // InputError on the first problem
//   const MpiCollective c = prepare_mpi_collective(o, world_size, o.sizes[0]);
//
// The rank count is the MPI world size (mpirun -np N): one process per rank.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "common/units.hpp"
#include "gpu_backend/nccl_tests_flags.hpp"
#include "lowering/plan.hpp"

namespace ssim::gpu {

// The algorithm name that runs the MPI library's own MPI_Allreduce instead of a schedule.
inline constexpr std::string_view kMpiAlgorithm = "mpi";

// The flags of gpu_backend/nccl_tests_flags.hpp (shared with stragglesim-gpu), checked and typed;
// the algorithm is a registry name or kMpiAlgorithm, the CSV and JSON are written by rank 0.
struct MpiSweepConfig : NcclTestsSettings {
  std::vector<std::string> args;  // the command line, for the JSON
};

// The collective one size runs. For kMpiAlgorithm the plan is that of a one-chunk schedule
// without rounds: it gives the buffer layout and the check's expected values.
struct MpiCollective {
  std::string label;  // the result CSV's algorithm column
  bool mpi_allreduce = false;
  lowering::Plan plan;
};

// Everything that can be checked before any communication, including preparing every size
// (so a size too small for the algorithm's chunks fails here). `ranks` is the world size.
void validate_mpi_options(const MpiSweepConfig& o, int ranks);

// The rank that gets the delay: --straggler, default n-1.
int straggler_rank(const MpiSweepConfig& o, int ranks);

// Generates and lowers the schedule (straggler-aware schedules are built for the delayed
// rank), or for kMpiAlgorithm the one-chunk plan. InputError on bad input.
MpiCollective prepare_mpi_collective(const MpiSweepConfig& o, int ranks, std::uint64_t bytes);

}  // namespace ssim::gpu
