// The CUDA/NCCL executor: runs a PreparedCollective (device_plan.hpp) on GPUs, times it on the
// GPUs' own clock and checks every element on the device.
//
//   DeviceGroup group = DeviceGroup::all_local(8);       // ncclCommInitAll over GPUs 0..7
//   CollectiveRun run(group, prepare_collective(spec), {Seconds{0.005}, /*straggler=*/7});
//   const IterationResult r = run.run(/*check=*/true);   // one timed, checked iteration
//   std::cout << r.after_last_arrival.value << " s, " << r.wrong.value_or(0) << " wrong\n";
//
// A DeviceGroup is the ranks this process drives and how they talk:
//   all_local   one process, rank r on GPU r, communicators from ncclCommInitAll;
//   one_rank    one process per GPU: this process is `rank` of `ranks`, the NCCL unique id
//               comes through an IdExchange (bootstrap.hpp: a file, or MPI), ncclCommInitRank;
//   single_gpu  every rank on one GPU with its own buffers and stream (Transport::single_gpu);
//   direct      every rank in this process, rank r on devices[r] (one GPU, or GPUs with peer
//               access): Transport::direct.
// It owns the communicators (and the split communicators of Phase1::nccl_rs, made once per
// group and reused by every size); on destruction they are finalized in one NCCL group and
// destroyed, or aborted after a failure.
//
// The body of an iteration, per rank on its stream: stamp `start` (%globaltimer), on the
// straggler spin `delay` on %globaltimer, stamp `arrival`, then per schedule round: the ranks
// of this process that take part issue one ncclGroupStart; ncclSend/ncclRecv (data + offset ->
// scratch) ...; ncclGroupEnd, then one apply-kernel launch each (one per wave when applies
// overlap) and a stamp of the round's end; finally stamp `finish`. With the single-GPU
// transport a receive is a cudaMemcpyAsync on the receiver's stream after an event the sender
// records when it reaches the round, and the sender's applies wait for an event recorded after
// that copy: both ends must reach the round, as with NCCL. Phase1::nccl_rs replaces the
// phase-1 rounds by one ncclReduceScatter on the split communicator (color 0, key = the chunk a
// member owns; the straggler NCCL_SPLIT_NOCOLOR). The `nccl` algorithm is one in-place
// ncclAllReduce.
//
// Launch::graph captures that body once per CollectiveRun (NCCL point-to-point supports stream
// capture): one graph per rank stream for NCCL, one graph forked over every rank's stream for
// the single-GPU transport; each iteration then launches the graphs. Launch::eager issues it
// call by call. Either way an iteration is: fill the input on the device (fill kernel), wait
// until every rank of every process is idle (a one-element ncclAllReduce across processes),
// launch the body, then the watchdog polls each rank's completion event and
// ncclCommGetAsyncError until done, or until `timeout` (counted from the first run() of this
// CollectiveRun) has passed: then it aborts the communicators and throws WatchdogTimeout
// naming each rank and the round it did not finish.
//
// Times come from the stamps only (mapped host memory written by a one-thread kernel): time =
// max finish - min arrival, after_last_arrival = max finish - max arrival over every rank of
// every process, delay = the straggler's arrival - its start (measured, not the one asked
// for). %globaltimer is one clock per GPU; the driver sets the GPUs of one machine from the
// same host clock, GPUs of different machines are not comparable (see docs/gpu.md). Check:
// a kernel counts the elements that differ from the exact AllReduce; one number per rank comes
// back; only when it is not 0 is the buffer copied back to find the first wrong element.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "common/units.hpp"
#include "gpu_backend/cuda/bootstrap.hpp"
#include "gpu_backend/cuda/device_plan.hpp"
#include "gpu_backend/host_executor.hpp"
#include "gpu_backend/nccl_tests_flags.hpp"

namespace ssim::gpu {

class DeviceGroup {
 public:
  static DeviceGroup all_local(int ranks);
  static DeviceGroup one_rank(int rank, int ranks, int device, IdExchange& ids);
  static DeviceGroup single_gpu(int ranks, int device);
  // Rank r on devices[r] (the same GPU for all, or GPUs with CUDA peer access to each other,
  // which this enables); InputError naming a GPU pair without peer access.
  static DeviceGroup direct(int ranks, const std::vector<int>& devices);

  DeviceGroup(DeviceGroup&&) noexcept;
  DeviceGroup& operator=(DeviceGroup&&) noexcept;
  ~DeviceGroup();

  Transport transport() const;
  int ranks() const;
  bool one_process_per_gpu() const;
  std::vector<int> local_ranks() const;  // increasing
  int device_of(int local_rank) const;
  // GPU name and transport, for the result CSV's device column.
  std::string description() const;

  struct Impl;

 private:
  friend class CollectiveRun;
  explicit DeviceGroup(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
};

struct IterationSettings {
  Seconds delay;       // spin on the straggler's stream; 0: none
  int straggler = -1;  // the delayed rank
  Launch launch = Launch::graph;
  CopyMode copy = CopyMode::memcpy;  // the single-GPU transport's copies into scratch
  Seconds timeout{60.0};             // the watchdog's budget for every run() of one CollectiveRun
  RankAverage average = RankAverage::mean;  // how rank_time combines the ranks' own times
};

// One rank's stamps of one iteration, nanoseconds of its GPU's %globaltimer.
struct RankStamps {
  int rank = 0;
  std::uint64_t start = 0;    // before the delay
  std::uint64_t arrival = 0;  // after the delay
  std::uint64_t finish = 0;
  std::vector<std::uint64_t> round_end;  // per schedule round; 0 where the rank takes no part
};

struct IterationResult {
  Seconds time;                // max finish - min arrival, every rank of every process
  Seconds delay;               // measured on the straggler; 0 without a delay
  Seconds after_last_arrival;  // max finish - max arrival
  // Each rank's own finish - start (start: before its delay), combined over every rank of
  // every process as settings.average says (nccl-tests' -a: rank 0, mean, min, max).
  Seconds rank_time;
  std::optional<std::uint64_t> wrong;  // every rank of every process; empty without check
  std::uint64_t checked = 0;
  CheckReport local;               // this process's ranks only: where the first wrong element is
  std::uint64_t origin = 0;        // min arrival over every rank: the timeline's zero
  std::vector<RankStamps> stamps;  // this process's ranks
};

class CollectiveRun {
 public:
  // Allocates buffers and uploads apply items on every local rank (on its stream); for
  // Phase1::nccl_rs, gets the group's split communicator (collective the first time: every
  // process constructs the same runs in the same order); for Launch::graph, captures the
  // body. InputError when the collective does not fit the group (ranks, transport).
  CollectiveRun(DeviceGroup& group, PreparedCollective collective, IterationSettings settings);
  CollectiveRun(CollectiveRun&&) noexcept;
  ~CollectiveRun();

  // One iteration; `check`: count wrong elements on the device. WatchdogTimeout (check.hpp)
  // when the budget runs out; the group is then unusable.
  IterationResult run(bool check);
  const PreparedCollective& collective() const;

  struct Impl;

 private:
  std::unique_ptr<Impl> impl_;
};

namespace testing {
// A test hook: the direct transport leaves out the one event wait that matches, so a test can
// check that the stand-in's race check catches a missing dependency. kind 'r' (RAW): `rank`'s
// round kernel waits for the kernel of round `round` of sender `on`; 'w' (WAR): `rank`'s next
// kernel waits for reader `on`'s kernel of round `round`; 's': `rank`'s round-`round` kernel
// waits for the staged copies of `on`. Takes effect for CollectiveRuns constructed (graph) or
// iterations issued (eager) after the call; std::nullopt restores every wait.
struct DirectDependency {
  int rank = 0;
  int on = 0;
  int round = 0;
  char kind = 'r';
};
void skip_direct_dependency(std::optional<DirectDependency> dependency);
}  // namespace testing

}  // namespace ssim::gpu
