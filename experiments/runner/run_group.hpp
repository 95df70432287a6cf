// The processes that share one `stragglesim run`: `mpirun -np K stragglesim run EXP.yaml` (or
// `srun --mpi=pmix`) starts K of them; rank 0 leads. It reads and writes every file (journal,
// results, plots), prints, and hands the runs out on request to the other ranks, which run them
// on their own --jobs threads and send each result back (journal.hpp's JSON of a run). Rank 0
// runs its share on its own threads as well.
//
//   std::unique_ptr<RunGroup> g = join_run_group();  // nullptr: this process alone
//   if (g && g->rank() != 0) {                         // a helper rank
//     g->serve(e, jobs);                               // until rank 0 says stop
//     return;
//   }
//   options.peers = g ? g->peers() : nullptr;          // rank 0: run_experiment uses them
//
// join_run_group starts MPI only when built with MPI and started by an MPI launcher (its
// variables are in the environment); otherwise, or in a world of one process, nothing of MPI
// is touched and the single-process path runs as it always has. Only the calling thread ever
// calls MPI (MPI_THREAD_FUNNELED).
//
// Stopping. Rank 0's destructor tells every rank that has not been told yet to stop (after its
// runs in flight, whose results it discards) and then leaves MPI, so an error on rank 0 at any
// point (a bad YAML, a failing run, a file it cannot write) ends every rank without a hang. A
// helper rank that cannot load the experiment says so with decline(why); rank 0 reports it.
#pragma once

#include <memory>
#include <string>

#include "experiments/runner/experiment.hpp"

namespace ssim::experiments {

class RunGroup {
 public:
  virtual ~RunGroup() = default;
  virtual int rank() const = 0;
  virtual int size() const = 0;
  // Rank 0: the other ranks, for RunnerOptions::peers; nullptr in a world of one.
  virtual RunPeers* peers() = 0;
  // Other ranks: run what rank 0 hands out on `jobs` threads (0: hardware concurrency) until
  // told to stop.
  virtual void serve(const Experiment& e, int jobs) = 0;
  // Other ranks: take no runs. `why` empty: nothing to do (--dry-run); else the error that
  // kept this rank from loading the experiment, which rank 0 reports.
  virtual void decline(const std::string& why) = 0;
};

// The run group of this process, or nullptr (see above).
std::unique_ptr<RunGroup> join_run_group();

// True when an MPI launcher started this process (mpirun, mpiexec, srun with PMI or PMIx).
bool started_by_mpi_launcher();
// The number of processes the launcher says it started (Open MPI's or PMI's variable), or 0
// when it does not say. A build without MPI refuses to run in a world of more than one.
int launcher_world_size();

}  // namespace ssim::experiments
