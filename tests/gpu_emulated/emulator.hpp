// The CPU stand-in of the CUDA runtime and NCCL on which the real CUDA/NCCL executor
// (gpu_backend/cuda/*.cpp, compiled again with the host compiler) runs in CI. It implements
// exactly the calls in include/cuda_runtime_api.h and include/nccl.h, on host memory:
//
//   streams   each stream is a queue executed in issue order; every stream behaves as
//             cudaStreamNonBlocking (the only kind the backend creates); the legacy default
//             stream (0) is refused for asynchronous work;
//   events    a record completes when the stream reaches it; a wait binds, as in CUDA, to the
//             event's latest record at the time of the call;
//   graphs    cudaStreamBeginCapture records every call issued to the capturing stream (and to
//             streams that join it by waiting on an event recorded in the capture) instead of
//             running it; the rules CUDA enforces are enforced (no synchronisation or eager
//             event wait inside a capture, every joined stream joined back before
//             cudaStreamEndCapture); cudaGraphLaunch replays the captured work, one hidden
//             stream per joined stream, with graph-private events;
//   NCCL      communicators from ncclCommInitAll / ncclCommInitRank (a unique id, ranks may
//             be threads) / ncclCommSplit; ncclSend/ncclRecv matched in issue order per
//             (communicator, sender, receiver), count and type must agree; a group's
//             operations on one stream run as one unit that finishes when every transfer in it
//             has found its peer; ncclAllReduce/ncclReduceScatter matched by sequence number
//             per communicator; ncclCommAbort fails the communicator's pending operations;
//   memory    cudaMalloc'd memory belongs to one device: every pointer a copy, a kernel or an
//             NCCL call touches is checked (whole range inside one allocation, on the device
//             that runs the work; mapped host memory is reachable from every device). A
//             violation is a fault: recorded (faults()), printed, and the device's sticky error
//             becomes cudaErrorIllegalAddress, as after a real illegal access;
//   blocking  a call that would wait forever on a GPU (synchronising a stream whose work can
//             never run, an ncclCommInitRank that no peer joins, ...) returns
//             cudaErrorEmulatedDeadlock / ncclSystemError and records a fault naming every
//             stuck stream and what it waits for. With several host threads using the stand-in
//             this is decided once every one of them is blocked in it.
//   races     every access of a kernel or copy to device memory (kernels declare theirs with
//             KernelContext::read/write) is checked against the earlier accesses to the same
//             bytes: when one of them writes, they come from different streams and no chain of
//             stream order, event record/wait (graph dependencies too) or host synchronisation
//             orders them, it is a fault naming both, even where this run's order happened to
//             be right. Vector clocks per stream carry that order (a stream's epoch counts its
//             kernels). NCCL calls are not tracked (each rank's buffers are its stream's);
//   peers     a kernel may read another device's memory only after the current device called
//             cudaDeviceEnablePeerAccess for it (cudaDeviceCanAccessPeer says yes unless
//             Config::peer_access is false); else a fault, as the GPU's illegal access;
//   priority  kernels launched with a priority (launch(..., priority); kernels_cpu.cpp passes
//             the one the executor gives cudaLaunchKernelEx) must lie in the range that
//             cudaDeviceGetStreamPriorityRange reports ([-5, 0], lower is higher), else the
//             launch fails; they are counted (Counters::priority_kernels, captured ones too),
//             keep their priority through graph capture, and among the work ready at once a
//             higher-priority kernel runs first;
//   time      a virtual nanosecond clock per stream, the stand-in's %globaltimer: work starts
//             at max(stream time, what it waits for) and takes a fixed cost plus its bytes at a
//             fixed rate; a transfer ends at max(both ends' start) + its cost; the spin kernel
//             advances its stream by the delay asked. The streams share one timeline, as
//             %globaltimer does: the host's clock is the latest time of work it has seen
//             finish (a synchronize, a successful query), and work it issues afterwards starts
//             no earlier, so an idle stream does not lag behind a host barrier. Times are
//             therefore deterministic with one host thread (with several, the order in which
//             they see work finish may move their later work), and the executor's timing
//             arithmetic can be checked exactly.
//
// The executor's kernels (gpu_backend/cuda/kernels.cu) cannot run here; kernels_cpu.cpp
// implements the host launch functions of kernels.hpp with launch() below.
#pragma once

#include <cuda_runtime_api.h>

#include <cstdint>
#include <functional>
#include <string>
#include <utility>
#include <vector>

namespace ssim::emu {

struct Config {
  int devices = 8;
  int sm_count = 4;
  bool peer_access = true;  // what cudaDeviceCanAccessPeer answers between two devices
};

// Drops every stream, event, graph, allocation and communicator and starts over with `config`.
void reset(const Config& config = {});
// The devices a fresh process starts with: SSIM_EMU_DEVICES from the environment, else 8.
Config config_from_environment();

// Faults since the last reset or clear_faults(), oldest first.
std::vector<std::string> faults();
void clear_faults();

struct Counters {
  std::uint64_t kernels = 0;           // kernel launches issued eagerly
  std::uint64_t captured_kernels = 0;  // kernel launches recorded into graphs
  std::uint64_t nccl_groups = 0;       // NCCL operations issued eagerly (one per stream per group)
  std::uint64_t captured_nccl = 0;     // NCCL operations recorded into graphs
  std::uint64_t graph_launches = 0;
  std::uint64_t live_streams = 0;
  std::uint64_t live_allocations = 0;
  std::uint64_t live_comms = 0;
  std::uint64_t priority_kernels = 0;  // launches (eager or captured) above the default priority
};

// The range cudaDeviceGetStreamPriorityRange reports: 0 (least) to -5 (greatest).
inline constexpr int kLeastPriority = 0;
inline constexpr int kGreatestPriority = -5;
Counters counters();

// What a CPU kernel body sees while it runs.
class KernelContext {
 public:
  int device() const { return device_; }
  std::uint64_t now_ns() const { return now_; }
  void advance_ns(std::uint64_t ns) { now_ += ns; }
  // Throws (a fault) unless [p, p + bytes) lies in memory this device may touch.
  void check(const void* p, std::uint64_t bytes, const char* what) const;
  // The kernel reads [p, p + bytes): check() (a peer device's memory too once
  // cudaDeviceEnablePeerAccess allowed it), then the race check (emulator.hpp, races).
  void read(const void* p, std::uint64_t bytes, const char* what) const;
  // The kernel writes [p, p + bytes): check(), then the race check.
  void write(const void* p, std::uint64_t bytes, const char* what) const;
  // The race check alone (the memory was checked otherwise).
  void record_access(const void* p, std::uint64_t bytes, bool write, const char* what) const;
  // Throws a fault with this message.
  [[noreturn]] void fail(const std::string& message) const;

 private:
  friend struct Runtime;
  int device_ = 0;
  std::uint64_t now_ = 0;
  CUstream_st* stream_ = nullptr;
  std::uint64_t epoch_ = 0;
};

// Issues (or, during capture, records) a kernel on `stream`: `body` runs when the stream
// reaches it. `pointers` are checked at launch time (device memory of the stream's device);
// the body checks what it finds in device memory itself. The kernel takes `cost_ns` of
// virtual time plus whatever the body advances. `priority`: the launch attribute (0: default).
cudaError_t launch(cudaStream_t stream, const char* name,
                   std::vector<std::pair<const void*, std::uint64_t>> pointers,
                   std::function<void(KernelContext&)> body, std::uint64_t cost_ns,
                   int priority = 0);

}  // namespace ssim::emu
