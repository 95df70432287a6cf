// The MPI executor: one process per rank runs its part of a lowered Plan (plan.hpp) with
// point-to-point MPI on host buffers, or the library's MPI_Allreduce as the baseline; it
// injects a straggler's late arrival, times every iteration and checks every element.
//
//   MPI_Comm comm = MPI_COMM_WORLD;
//   const MpiWorld world = describe_world(comm);
//   MpiIterationSettings s;  s.delay = Seconds{5e-3};  s.straggler = world.size - 1;
//   MpiCollectiveRun run(comm, world, prepare_mpi_collective(options, world.size, 1 << 20), s);
//   const MpiIterationResult r = run.run(/*check=*/true);   // collective over comm
//   if (r.wrong && *r.wrong > 0) std::cerr << r.local.to_string() << "\n";
//
// One iteration, on every rank: refill the data buffer with the input (fill_input), then
// MPI_Barrier; the straggler sleeps `delay` (its start is taken after the sleep, so any
// oversleep counts as delay); each rank takes its start, runs its steps and takes its finish.
// A step is the IR's round (DESIGN.md): MPI_Irecv of every receive into scratch, MPI_Isend of
// every send straight from the data buffer (nothing is applied before the round's MPI_Waitall,
// so that is the round-start data), MPI_Waitall, then the reduce/copy applies in order. The
// message tag is the round number (mod 2^15); with lower()'s matching rule and MPI's
// non-overtaking order between a pair of ranks every receive gets its send.
//
// Times (one clock for every rank, see mpi_support.hpp):
//   time               = max finish - min start   (first arrival to last finish)
//   after_last_arrival = max finish - max start   (last arrival to last finish)
// exactly the simulator's two measures; and nccl-tests' own measure, each rank's finish -
// start combined over ranks (-a: rank 0, mean, min, max), from one MPI_Allgather of every
// rank's (start, finish). Messages over 1 GiB are split into pieces of at most
// 1 GiB (MPI counts are int), identically on both sides.
#pragma once

#include <mpi.h>

#include <cstdint>
#include <memory>
#include <optional>

#include "common/units.hpp"
#include "gpu_backend/host_executor.hpp"
#include "gpu_backend/mpi/mpi_options.hpp"
#include "gpu_backend/mpi/mpi_support.hpp"
#include "gpu_backend/nccl_tests_flags.hpp"

namespace ssim::gpu {

struct MpiIterationSettings {
  Seconds delay;                            // the straggler's arrival delay; 0: none
  int straggler = -1;                       // the delayed rank; -1: none
  RankAverage average = RankAverage::mean;  // how rank_time combines the ranks (-a)
};

struct MpiIterationResult {
  Seconds time;
  Seconds after_last_arrival;
  Seconds delay_measured;  // max start - min start: the arrival spread seen
  Seconds rank_time;       // each rank's finish - start, combined over ranks as settings.average
  std::optional<std::uint64_t> wrong;  // over every rank; empty when not checked
  CheckReport local;                   // this rank's check
};

class MpiCollectiveRun {
 public:
  // Allocates and fills this rank's buffers; no communication.
  MpiCollectiveRun(MPI_Comm comm, const MpiWorld& world, MpiCollective collective,
                   MpiIterationSettings settings);
  ~MpiCollectiveRun();
  MpiCollectiveRun(const MpiCollectiveRun&) = delete;
  MpiCollectiveRun& operator=(const MpiCollectiveRun&) = delete;

  // One iteration; collective over comm (every rank calls it the same number of times).
  MpiIterationResult run(bool check);
  const MpiCollective& collective() const { return collective_; }

  class Buffers;  // the typed buffers and the rank's loop (mpi_executor.cpp)

 private:
  MPI_Comm comm_;
  MpiWorld world_;
  MpiCollective collective_;
  MpiIterationSettings settings_;
  std::unique_ptr<Buffers> buffers_;
};

}  // namespace ssim::gpu
