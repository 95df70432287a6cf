// The CUDA/NCCL executor: runs a PreparedCollective (device_plan.hpp) on GPUs, times it with
// CUDA events and checks every element.
//
//   DeviceGroup group = DeviceGroup::all_local(8);       // ncclCommInitAll over GPUs 0..7
//   CollectiveRun run(group, prepare_collective(spec), {Seconds{0.005}, /*straggler=*/7, true});
//   const IterationResult r = run.run();                 // one timed, checked iteration
//   std::cout << r.after_last_arrival.value << " s, " << r.wrong.value_or(0) << " wrong\n";
//
// A DeviceGroup is the ranks this process drives and how they talk:
//   all_local   one process, rank r on GPU r, communicators from ncclCommInitAll;
//   one_rank    one process per GPU: this process is `rank` of `ranks`, the NCCL unique id
//               comes through an IdExchange (bootstrap.hpp), ncclCommInitRank;
//   single_gpu  every rank on one GPU with its own buffers and stream (Transport::single_gpu).
//
// One iteration: copy each rank's input (fill_input) to its buffer, synchronize (one process:
// every stream; one process per GPU: a one-element ncclAllReduce as a barrier), then on every
// rank's stream record `start`, run the spin kernel on the straggler's stream (delay * clock
// rate cycles, clock rate from cudaDevAttrClockRate) and record `arrived`, issue the plan,
// record `end`. Per schedule round, the ranks of this process that take part issue one
// ncclGroupStart; ncclSend/ncclRecv (data + offset -> scratch) ...; ncclGroupEnd, then one
// apply-kernel launch each (one per wave when applies overlap). With the single-GPU transport
// a receive is a cudaMemcpyAsync on the receiver's stream after an event the sender records
// when it reaches the round, and the sender's applies wait for an event recorded after that
// copy: both ends must reach the round, as with NCCL. Phase1::nccl_rs replaces the phase-1
// rounds by one ncclReduceScatter on a communicator split off for the non-stragglers
// (ncclCommSplit: color 0, key = the chunk a member owns; the straggler NCCL_SPLIT_NOCOLOR).
// The `nccl` algorithm is one in-place ncclAllReduce.
//
// Times: per rank, start to end (cudaEventElapsedTime); `time` is the maximum over all ranks
// (of every process), `delay` the measured spin on the straggler, and after_last_arrival =
// time - delay, the StragglAR paper's "time minus delay". Check: copy each rank's buffer back
// and compare with check_output (host_executor.hpp); `wrong` sums every rank of every process.
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

namespace ssim::gpu {

class DeviceGroup {
 public:
  static DeviceGroup all_local(int ranks);
  static DeviceGroup one_rank(int rank, int ranks, int device, IdExchange& ids);
  static DeviceGroup single_gpu(int ranks, int device);

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
  bool check = true;
};

struct IterationResult {
  Seconds time;                        // max over ranks, start (before the delay) to end
  Seconds delay;                       // measured spin on the straggler; 0 without a delay
  Seconds after_last_arrival;          // time - delay
  std::optional<std::uint64_t> wrong;  // every rank of every process; empty without check
  std::uint64_t checked = 0;
  CheckReport local;  // this process's ranks only: where the first wrong element is
};

class CollectiveRun {
 public:
  // Allocates buffers and uploads apply items on every local rank; for Phase1::nccl_rs,
  // splits the communicator (collective: every process constructs the same runs in the
  // same order). InputError when the collective does not fit the group (ranks, transport).
  CollectiveRun(DeviceGroup& group, PreparedCollective collective, IterationSettings settings);
  CollectiveRun(CollectiveRun&&) noexcept;
  ~CollectiveRun();

  IterationResult run();
  const PreparedCollective& collective() const;

  struct Impl;

 private:
  std::unique_ptr<Impl> impl_;
};

}  // namespace ssim::gpu
