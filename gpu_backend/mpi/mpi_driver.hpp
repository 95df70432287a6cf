// `stragglesim-mpi`'s sweep: validates the options on every rank, prepares every size, runs
// each (warm-up, then timed and checked iterations), prints an nccl-tests-like table and
// writes the result CSV (result_csv.hpp, source "measured", device "mpi:<host>"). Only rank 0
// prints and writes; every rank returns the same outcome.
//
//   MpiSweepConfig o;  o.algorithm = "stragglar";  o.sizes = {1 << 20};
//   const MpiSweepOutcome r = run_mpi_sweep(o, MPI_COMM_WORLD, std::cout);
//   return r.wrong == 0 ? 0 : 1;
//
// Setup errors (bad options, a size too small for the chunks, an unwritable -o, memory) are
// agreed on before any run (agree_on_errors): every rank throws the same AgreedInputError, so the
// caller can print it once from rank 0 and exit from every rank.
#pragma once

#include <mpi.h>

#include <cstdint>
#include <iosfwd>
#include <string>

#include "gpu_backend/mpi/mpi_options.hpp"

namespace ssim::gpu {

struct MpiSweepOutcome {
  std::uint64_t wrong = 0;    // over every iteration, size and rank
  std::string first_failure;  // the first wrong element (rank, element, size, iteration)
};

// Collective over comm; `out` is written on rank 0 only.
MpiSweepOutcome run_mpi_sweep(const MpiSweepConfig& options, MPI_Comm comm, std::ostream& out);

}  // namespace ssim::gpu
