// MPI plumbing of the MPI executor: the checking wrapper every MPI call goes through, a
// description of the process group (hosts, library, which clock makes the ranks' timestamps
// comparable), and agreement on setup errors so that bad input ends every rank, never hangs one.
//
//   MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);   // errors reach the wrapper
//   SSIM_MPI(MPI_Barrier(comm));                                 // MpiError on failure
//   const MpiWorld world = describe_world(comm);                 // collective
//   std::string error;  try { ... } catch (const std::exception& e) { error = e.what(); }
//   agree_on_errors(comm, error);   // every rank throws AgreedInputError(first failing message)
//
// Clocks. Rank timestamps are compared across processes (time = last finish - first arrival),
// so they must come from one clock:
//   wtime_global    MPI_Wtime when the library says it is global (MPI_WTIME_IS_GLOBAL);
//   steady_one_node all ranks on one host: std::chrono::steady_clock (CLOCK_MONOTONIC, one
//                   clock for every process of the host; Open MPI's MPI_Wtime subtracts a
//                   per-process offset, so it is not comparable between processes);
//   barrier_relative otherwise: each rank's times count from its own exit of the barrier that
//                   starts the iteration, which adds the barrier's exit skew to the error.
#pragma once

#include <mpi.h>

#include <stdexcept>
#include <string>
#include <string_view>

#include "common/error.hpp"
#include "common/output_file.hpp"

namespace ssim::gpu {

// An MPI call failed: a resource error in the one error policy (common/error.hpp, exit 3).
class MpiError : public ResourceError {
 public:
  using ResourceError::ResourceError;
};

// An InputError every rank of the communicator throws alike (agree_on_errors): the caller may
// report it once and exit on every rank. Any other exception is known to one rank only.
class AgreedInputError : public InputError {
 public:
  using InputError::InputError;
};

// A failed write of rank 0's output files, agreed on like AgreedInputError: exit 3.
class AgreedOutputError : public OutputError {
 public:
  using OutputError::OutputError;
};

// Throws MpiError naming the call, file:line and MPI's error string when rc != MPI_SUCCESS.
void mpi_check(int rc, const char* call, const char* file, int line);

#define SSIM_MPI(call) ::ssim::gpu::mpi_check((call), #call, __FILE__, __LINE__)

enum class MpiClock : unsigned char { wtime_global, steady_one_node, barrier_relative };
std::string_view to_string(MpiClock clock);

struct MpiWorld {
  int rank = 0;
  int size = 0;
  int nodes = 1;        // distinct hosts (shared-memory domains)
  std::string host;     // rank 0's host name
  std::string library;  // first line of MPI_Get_library_version
  MpiClock clock = MpiClock::barrier_relative;
  // The result CSV's device column: "mpi:<host>", or "mpi:<host>+<k>" for k more nodes.
  std::string device() const;
};

// Collective over comm.
MpiWorld describe_world(MPI_Comm comm);

// Seconds on the clock's time line (absolute for the global clocks).
double clock_now(MpiClock clock);

// Collective: when any rank passes a non-empty message, every rank throws AgreedInputError with the
// message of the lowest such rank (prefixed "rank R: " when that rank is not 0 and the others
// did not fail alike). Returns normally when every message is empty.
void agree_on_errors(MPI_Comm comm, const std::string& local_error);

}  // namespace ssim::gpu
