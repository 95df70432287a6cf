// The CPU stand-in itself (emulator.hpp): what it must catch for the executor suite to mean
// anything: streams in issue order, events bound to the record current at the call, capture
// rules, NCCL matching in issue order, device ownership of every pointer, and calls that would
// block forever.
#include "tests/gpu_emulated/emulator.hpp"

#include <gtest/gtest.h>
#include <nccl.h>

#include <cstdint>
#include <cstring>
#include <string>
#include <vector>

namespace ssim::emu {
namespace {

class Emulator : public ::testing::Test {
 protected:
  void SetUp() override { reset(Config{4, 4}); }
  void TearDown() override { reset(); }
  static bool fault_mentions(const std::string& part) {
    for (const std::string& f : faults()) {
      if (f.find(part) != std::string::npos) return true;
    }
    return false;
  }
};

cudaStream_t stream_on(int device) {
  cudaSetDevice(device);
  cudaStream_t s = nullptr;
  EXPECT_EQ(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking), cudaSuccess);
  return s;
}

void* device_memory(int device, std::size_t bytes) {
  cudaSetDevice(device);
  void* p = nullptr;
  EXPECT_EQ(cudaMalloc(&p, bytes), cudaSuccess);
  return p;
}

TEST_F(Emulator, CopiesRunInIssueOrderAndAreCheckedAgainstTheirAllocation) {
  cudaStream_t s = stream_on(0);
  auto* d = static_cast<int*>(device_memory(0, 16));
  const int in[4] = {1, 2, 3, 4};
  int out[4] = {};
  EXPECT_EQ(cudaMemcpyAsync(d, in, 16, cudaMemcpyHostToDevice, s), cudaSuccess);
  EXPECT_EQ(cudaMemsetAsync(d + 2, 0, 8, s), cudaSuccess);
  EXPECT_EQ(cudaMemcpyAsync(out, d, 16, cudaMemcpyDeviceToHost, s), cudaSuccess);
  EXPECT_EQ(cudaStreamSynchronize(s), cudaSuccess);
  EXPECT_EQ(std::vector<int>(out, out + 4), (std::vector<int>{1, 2, 0, 0}));
  EXPECT_TRUE(faults().empty());
  // One element past the end; a host pointer where device memory belongs; the legacy stream.
  EXPECT_EQ(cudaMemcpyAsync(d + 1, in, 16, cudaMemcpyHostToDevice, s), cudaErrorInvalidValue);
  EXPECT_TRUE(fault_mentions("run past the end of their allocation"));
  EXPECT_EQ(cudaMemcpyAsync(out, in, 16, cudaMemcpyHostToDevice, s), cudaErrorInvalidValue);
  EXPECT_TRUE(fault_mentions("are not device memory"));
  EXPECT_EQ(cudaMemcpyAsync(d, in, 16, cudaMemcpyHostToDevice, 0), cudaErrorInvalidResourceHandle);
}

TEST_F(Emulator, AKernelTouchingAnotherDevicesMemoryIsAFault) {
  void* on1 = device_memory(1, 64);
  cudaStream_t s0 = stream_on(0);
  EXPECT_EQ(launch(s0, "probe", {{on1, 64}}, nullptr, 0), cudaErrorInvalidValue);
  EXPECT_TRUE(fault_mentions("belongs to device 1, the work runs on device 0"));
  clear_faults();
  // Found only when the kernel runs: the fault becomes the sticky error.
  EXPECT_EQ(launch(
                s0, "probe", {}, [on1](KernelContext& k) { k.check(on1, 8, "x"); }, 0),
            cudaSuccess);
  EXPECT_EQ(cudaStreamSynchronize(s0), cudaErrorIllegalAddress);
  // A launch on a stream of a device that is not current.
  cudaStream_t s1 = stream_on(1);
  cudaSetDevice(0);
  EXPECT_EQ(launch(s1, "probe", {}, nullptr, 0), cudaErrorInvalidResourceHandle);
}

TEST_F(Emulator, AWaitBindsToTheRecordCurrentAtTheCall) {
  cudaStream_t a = stream_on(0), b = stream_on(0);
  cudaEvent_t e;
  cudaEventCreateWithFlags(&e, cudaEventDisableTiming);
  std::vector<int> order;
  launch(
      a, "a1", {}, [&](KernelContext&) { order.push_back(1); }, 0);
  cudaEventRecord(e, a);
  cudaStreamWaitEvent(b, e, 0);
  launch(
      b, "b", {}, [&](KernelContext&) { order.push_back(2); }, 0);
  launch(
      a, "a2", {}, [&](KernelContext&) { order.push_back(3); }, 0);
  cudaEventRecord(e, a);  // a later record: b still waits for the first one only
  EXPECT_EQ(cudaStreamSynchronize(b), cudaSuccess);
  EXPECT_EQ(cudaStreamSynchronize(a), cudaSuccess);
  ASSERT_EQ(order.size(), 3u);
  EXPECT_EQ(order[0], 1);
}

TEST_F(Emulator, CaptureRecordsInsteadOfRunningAndEnforcesCudaRules) {
  cudaStream_t s = stream_on(0), t = stream_on(0);
  int runs = 0;
  cudaEvent_t fork, join, outside;
  cudaEventCreateWithFlags(&fork, cudaEventDisableTiming);
  cudaEventCreateWithFlags(&join, cudaEventDisableTiming);
  cudaEventCreateWithFlags(&outside, cudaEventDisableTiming);
  ASSERT_EQ(cudaStreamBeginCapture(s, cudaStreamCaptureModeThreadLocal), cudaSuccess);
  launch(
      s, "k", {}, [&](KernelContext&) { ++runs; }, 0);
  cudaEventRecord(fork, s);
  cudaStreamWaitEvent(t, fork, 0);  // t joins the capture
  launch(
      t, "k", {}, [&](KernelContext&) { ++runs; }, 0);
  cudaEventRecord(join, t);
  cudaStreamWaitEvent(s, join, 0);  // ... and is joined back
  cudaGraph_t g = nullptr;
  ASSERT_EQ(cudaStreamEndCapture(s, &g), cudaSuccess);
  EXPECT_EQ(runs, 0);
  cudaGraphExec_t x = nullptr;
  ASSERT_EQ(cudaGraphInstantiate(&x, g, 0), cudaSuccess);
  cudaGraphLaunch(x, s);
  cudaGraphLaunch(x, s);
  EXPECT_EQ(cudaStreamSynchronize(s), cudaSuccess);
  EXPECT_EQ(runs, 4);
  EXPECT_EQ(counters().graph_launches, 2u);
  cudaGraphExecDestroy(x);
  cudaGraphDestroy(g);

  // A stream that joined and was not joined back.
  cudaStreamBeginCapture(s, cudaStreamCaptureModeThreadLocal);
  cudaEventRecord(fork, s);
  cudaStreamWaitEvent(t, fork, 0);
  launch(t, "k", {}, nullptr, 0);
  EXPECT_EQ(cudaStreamEndCapture(s, &g), cudaErrorStreamCaptureUnjoined);
  // Synchronising inside a capture, and waiting on an event recorded outside it.
  cudaEventRecord(outside, t);
  cudaStreamBeginCapture(s, cudaStreamCaptureModeThreadLocal);
  EXPECT_EQ(cudaStreamSynchronize(s), cudaErrorStreamCaptureUnsupported);
  EXPECT_EQ(cudaStreamWaitEvent(s, outside, 0), cudaErrorStreamCaptureIsolation);
  EXPECT_EQ(cudaStreamEndCapture(s, &g), cudaErrorStreamCaptureInvalidated);
}

TEST_F(Emulator, NcclMatchesInIssueOrderPerPeerPairAndDetectsAMissingPeer) {
  ncclComm_t comms[2];
  const int devs[2] = {0, 1};
  ASSERT_EQ(ncclCommInitAll(comms, 2, devs), ncclSuccess);
  cudaStream_t s0 = stream_on(0), s1 = stream_on(1);
  auto* a = static_cast<float*>(device_memory(0, 8));
  auto* b = static_cast<float*>(device_memory(1, 8));
  const float in[2] = {5, 6};
  cudaSetDevice(0);
  cudaMemcpyAsync(a, in, 8, cudaMemcpyHostToDevice, s0);
  // Two sends 0 -> 1, two receives: the first send lands in the first receive.
  ncclGroupStart();
  ncclSend(a, 1, ncclFloat32, 1, comms[0], s0);
  ncclSend(a + 1, 1, ncclFloat32, 1, comms[0], s0);
  ncclRecv(b + 1, 1, ncclFloat32, 0, comms[1], s1);
  ncclRecv(b, 1, ncclFloat32, 0, comms[1], s1);
  ASSERT_EQ(ncclGroupEnd(), ncclSuccess);
  float out[2] = {};
  cudaSetDevice(1);
  cudaMemcpyAsync(out, b, 8, cudaMemcpyDeviceToHost, s1);
  EXPECT_EQ(cudaStreamSynchronize(s1), cudaSuccess);
  EXPECT_EQ(out[0], 6);
  EXPECT_EQ(out[1], 5);
  // A send nobody receives: synchronising would hang on a GPU.
  cudaSetDevice(0);
  ASSERT_EQ(ncclSend(a, 2, ncclFloat32, 1, comms[0], s0), ncclSuccess);
  EXPECT_EQ(cudaStreamSynchronize(s0), cudaErrorEmulatedDeadlock);
  EXPECT_TRUE(fault_mentions("send to rank 1 of rank 0: the peer never issued the matching call"));
  EXPECT_NE(std::string(cudaGetErrorString(cudaErrorEmulatedDeadlock)).find("would block forever"),
            std::string::npos);
  // A buffer on the wrong device.
  EXPECT_EQ(ncclRecv(a, 1, ncclFloat32, 0, comms[1], s1), ncclInvalidArgument);
  // Abort fails the pending send; the stream drains.
  EXPECT_EQ(ncclCommAbort(comms[0]), ncclSuccess);
  EXPECT_EQ(cudaStreamQuery(s0), cudaErrorIllegalAddress);  // the sticky error of the faults above
}

TEST_F(Emulator, SplitGroupsByColorOrdersByKeyAndLeavesNoColorOut) {
  ncclComm_t comms[4], split[4];
  const int devs[4] = {0, 1, 2, 3};
  ASSERT_EQ(ncclCommInitAll(comms, 4, devs), ncclSuccess);
  ncclGroupStart();
  const int keys[4] = {2, 0, 1, 0};
  for (int r = 0; r < 4; ++r)
    ncclCommSplit(comms[r], r == 3 ? NCCL_SPLIT_NOCOLOR : 0, keys[r], &split[r], nullptr);
  ASSERT_EQ(ncclGroupEnd(), ncclSuccess);
  EXPECT_EQ(split[3], nullptr);
  // ReduceScatter on the split: rank order is by key (1, 2, 0).
  std::vector<cudaStream_t> st;
  std::vector<float*> buf;
  float v[3][3];  // alive until the copies ran: they are asynchronous
  for (int r = 0; r < 3; ++r) {
    st.push_back(stream_on(r));
    buf.push_back(static_cast<float*>(device_memory(r, 12)));
    for (int i = 0; i < 3; ++i)
      v[r][i] = static_cast<float>((r + 1) * (i == 0 ? 1 : i == 1 ? 10 : 100));
    cudaMemcpyAsync(buf.back(), v[r], 12, cudaMemcpyHostToDevice, st.back());
  }
  ncclGroupStart();
  for (int r = 0; r < 3; ++r) {
    const int new_rank = keys[r];
    ncclReduceScatter(buf[r], buf[r] + new_rank, 1, ncclFloat32, ncclSum, split[r], st[r]);
  }
  ASSERT_EQ(ncclGroupEnd(), ncclSuccess);
  for (int r = 0; r < 3; ++r) {
    float out = 0;
    cudaSetDevice(r);
    cudaMemcpyAsync(&out, buf[r] + keys[r], 4, cudaMemcpyDeviceToHost, st[r]);
    EXPECT_EQ(cudaStreamSynchronize(st[r]), cudaSuccess);
    const float expected[3] = {6, 60, 600};
    EXPECT_EQ(out, expected[keys[r]]) << r;
  }
  EXPECT_TRUE(faults().empty());
}

// The clock is one timeline, as %globaltimer is: work the host issues after it saw other
// work finish (a stream synchronize, an event query, a graph launch after either) starts no
// earlier than that work ended, even on a stream that was idle and behind all along.
TEST_F(Emulator, WorkIssuedAfterTheHostSawWorkFinishStartsAfterIt) {
  cudaStream_t busy = stream_on(0);
  cudaStream_t idle = stream_on(1);
  std::uint64_t busy_end = 0, idle_start = 0;
  auto spin = [](std::uint64_t ns, std::uint64_t* end) {
    return [ns, end](KernelContext& k) {
      k.advance_ns(ns);
      *end = k.now_ns();
    };
  };
  auto stamp = [](std::uint64_t* at) { return [at](KernelContext& k) { *at = k.now_ns(); }; };
  // After cudaStreamSynchronize.
  cudaSetDevice(0);
  ASSERT_EQ(launch(busy, "spin", {}, spin(1'000'000, &busy_end), 0), cudaSuccess);
  ASSERT_EQ(cudaStreamSynchronize(busy), cudaSuccess);
  cudaSetDevice(1);
  ASSERT_EQ(launch(idle, "stamp", {}, stamp(&idle_start), 0), cudaSuccess);
  ASSERT_EQ(cudaStreamSynchronize(idle), cudaSuccess);
  EXPECT_GE(busy_end, 1'000'000u);
  EXPECT_GE(idle_start, busy_end);
  // After polling an event to completion.
  cudaEvent_t done = nullptr;
  cudaSetDevice(0);
  ASSERT_EQ(cudaEventCreateWithFlags(&done, cudaEventDisableTiming), cudaSuccess);
  ASSERT_EQ(launch(busy, "spin", {}, spin(2'000'000, &busy_end), 0), cudaSuccess);
  ASSERT_EQ(cudaEventRecord(done, busy), cudaSuccess);
  while (cudaEventQuery(done) == cudaErrorNotReady) {
  }
  cudaSetDevice(1);
  ASSERT_EQ(launch(idle, "stamp", {}, stamp(&idle_start), 0), cudaSuccess);
  ASSERT_EQ(cudaStreamSynchronize(idle), cudaSuccess);
  EXPECT_GE(busy_end, 3'000'000u);
  EXPECT_GE(idle_start, busy_end);
  // Work issued before the host saw anything keeps its own stream's time: no false order.
  std::uint64_t early = 0;
  cudaSetDevice(0);
  ASSERT_EQ(launch(busy, "spin", {}, spin(5'000'000, &busy_end), 0), cudaSuccess);
  cudaSetDevice(1);
  ASSERT_EQ(launch(idle, "stamp", {}, stamp(&early), 0), cudaSuccess);
  cudaSetDevice(0);
  ASSERT_EQ(cudaDeviceSynchronize(), cudaSuccess);
  cudaSetDevice(1);
  ASSERT_EQ(cudaDeviceSynchronize(), cudaSuccess);
  EXPECT_LT(early, busy_end);
  ASSERT_EQ(cudaEventDestroy(done), cudaSuccess);
  EXPECT_TRUE(faults().empty());
}

}  // namespace
}  // namespace ssim::emu
