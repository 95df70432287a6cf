// The CUDA/NCCL executor, one test source compiled twice with the same assertions:
//   gpu_backend_cuda_tests  against CUDA and NCCL (label `gpu`): on a machine with GPUs; every
//                           test skips where there are fewer GPUs than it needs;
//   gpu_emulated_tests      against the CPU stand-in of CUDA and NCCL (tests/gpu_emulated,
//                           SSIM_TEST_ON_EMULATOR): on every machine, in CI, with 8 emulated
//                           GPUs, and no fault of the stand-in may be left at the end of a test.
// So a test that rots (a layout that leaves nothing to catch, a tolerance the hardware does not
// keep) fails in CI first. Timing assertions state only what the hardware guarantees: each
// rank's stamps are in stream order, no rank finishes an AllReduce before the last rank
// arrives (every output depends on every input), the straggler's spin lasts at least the delay
// asked, and time >= time after the last arrival. How far apart ranks start is a property of
// the machine, measured (scripts/gpu_campaign.sh), not asserted.
#include "gpu_backend/cuda/executor.hpp"

#include <gtest/gtest.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <cstdint>
#include <future>
#include <string>
#include <vector>

#include "algorithms/registry.hpp"
#include "common/error.hpp"
#include "gpu_backend/cuda/kernels.hpp"
#include "tests/gpu_backend/cuda/device_support.hpp"
#ifdef SSIM_TEST_ON_EMULATOR
#include "tests/gpu_emulated/emulator.hpp"
#endif

namespace ssim::gpu {
namespace {

// On the stand-in: a fresh emulated machine per test, and no fault left at its end.
class DeviceTest : public ::testing::Test {
 protected:
  void SetUp() override {
#ifdef SSIM_TEST_ON_EMULATOR
    emu::reset();
#endif
  }
  void TearDown() override {
#ifdef SSIM_TEST_ON_EMULATOR
    EXPECT_EQ(emu::faults(), std::vector<std::string>{});
    emu::reset();
#endif
  }
};
class SingleGpuExecutor : public DeviceTest {};
class NcclExecutor : public DeviceTest {};

// Every rank on GPU 0, through the transports that run schedules there.
constexpr std::array<Transport, 2> kOneGpuTransports = {Transport::direct, Transport::single_gpu};
DeviceGroup one_gpu_group(Transport transport, int ranks) {
  return transport == Transport::direct
             ? DeviceGroup::direct(ranks, std::vector<int>(static_cast<std::size_t>(ranks), 0))
             : DeviceGroup::single_gpu(ranks, 0);
}

constexpr std::array<lowering::DType, 4> kTypes = {lowering::DType::float32,
                                                   lowering::DType::float64, lowering::DType::int32,
                                                   lowering::DType::int64};

PreparedCollective prepared(const std::string& algorithm, int ranks, std::uint64_t bytes,
                            lowering::DType dtype, Phase1 phase1 = Phase1::schedule,
                            alg::Options options = {}) {
  return prepare_collective({algorithm, ranks, std::move(options), bytes, dtype, phase1});
}

// Elements per rank for a schedule of `chunks` chunks: small = 2 per chunk plus 1 (padding,
// 3-element chunks whose offsets are not 16-byte aligned); large = 4099 per chunk plus 1
// (the vector path, chunk offsets misaligned by 4 B for float32 and int32).
std::uint64_t small_count(int chunks) { return 2 * static_cast<std::uint64_t>(chunks) + 1; }
std::uint64_t large_count(int chunks) { return 4099 * static_cast<std::uint64_t>(chunks) + 1; }

// What the hardware guarantees of one iteration's times (see the header comment). `whole`:
// this process drives every rank, so the causality check sees every arrival.
void expect_causal(const IterationResult& r, const IterationSettings& settings, bool whole,
                   const std::string& what) {
  EXPECT_GT(r.time.value, 0.0) << what;
  EXPECT_GE(r.after_last_arrival.value, 0.0) << what;
  EXPECT_LE(r.after_last_arrival.value, r.time.value) << what;
  std::uint64_t max_arrival = 0;
  for (const RankStamps& st : r.stamps) max_arrival = std::max(max_arrival, st.arrival);
  for (const RankStamps& st : r.stamps) {
    const std::string rank = what + " rank " + std::to_string(st.rank);
    EXPECT_LE(st.start, st.arrival) << rank;
    EXPECT_LE(st.arrival, st.finish) << rank;
    std::uint64_t last = st.arrival;
    for (std::uint64_t end : st.round_end) {
      if (end == 0) continue;  // a round this rank takes no part in
      EXPECT_GE(end, last) << rank << ": rounds end in stream order";
      last = end;
    }
    EXPECT_GE(st.finish, last) << rank;
    if (whole) {
      EXPECT_GE(st.finish, max_arrival) << rank << " finished before the last arrival";
    }
  }
  if (settings.delay.value > 0) {
    EXPECT_GE(r.delay.value, settings.delay.value) << what;
    for (const RankStamps& st : r.stamps) {
      if (st.rank == settings.straggler) {
        EXPECT_GE(st.arrival - st.start,
                  static_cast<std::uint64_t>(settings.delay.value * 1e9 + 0.5))
            << what;
      }
    }
  } else {
    EXPECT_EQ(r.delay.value, 0.0) << what;
  }
}

void expect_exact(DeviceGroup& group, PreparedCollective c, const std::string& what,
                  IterationSettings settings = {}) {
  const std::uint64_t expected_checked =
      static_cast<std::uint64_t>(c.plan.ranks) * c.plan.layout.count;
  const bool whole = group.local_ranks().size() == static_cast<std::size_t>(c.plan.ranks);
  for (Launch launch : {Launch::graph, Launch::eager}) {
    settings.launch = launch;
    const std::string label = what + " launch " + std::string(to_string(launch));
    CollectiveRun run(group, c, settings);
    for (int it = 0; it < 2; ++it) {  // the second run checks that inputs are reset
      const IterationResult r = run.run(true);
      ASSERT_TRUE(r.wrong.has_value()) << label;
      EXPECT_EQ(*r.wrong, 0u) << label << ": " << r.local.to_string();
      EXPECT_EQ(r.checked, expected_checked) << label;
      expect_causal(r, settings, whole, label);
    }
  }
}

TEST_F(SingleGpuExecutor, EveryAlgorithmIsExact) {
  SSIM_REQUIRE_GPUS(1);
  for (Transport transport : kOneGpuTransports) {
    for (int n : {2, 3, 4, 5, 8}) {
      DeviceGroup group = one_gpu_group(transport, n);
      for (const alg::AlgorithmInfo& info : alg::algorithms()) {
        if (info.in_network) continue;  // switch reductions: switch_reduce_test, nvls_test
        if (info.name == kNcclAlgorithm) continue;  // ncclAllReduce: the NCCL transport only
        if (!info.supports_ranks(n)) continue;
        const int chunks = alg::generate(info.name, n, alg::Options{}).chunks;
        for (std::size_t t = 0; t < kTypes.size(); ++t) {
          const lowering::DType dtype = kTypes[t];
          const std::uint64_t count = t % 2 == 0 ? small_count(chunks) : large_count(chunks);
          // Every other type with the last rank delayed: no rank may finish before it arrives
          // (a receiver that read a sender's data without waiting for its arrival would).
          const IterationSettings settings =
              t % 2 == 1 ? IterationSettings{Seconds{1e-4}, n - 1} : IterationSettings{};
          expect_exact(group, prepared(info.name, n, count * lowering::dtype_size(dtype), dtype),
                       info.name + " n=" + std::to_string(n) + " " + std::string(to_string(dtype)) +
                           " " + std::string(to_string(transport)),
                       settings);
        }
      }
    }
  }
}

// --copy kernel: the single-GPU transport's receives copied by launch_copy instead of
// cudaMemcpyAsync; every algorithm still exact, with and without a delay.
TEST_F(SingleGpuExecutor, KernelCopiesAreExact) {
  SSIM_REQUIRE_GPUS(1);
  for (int n : {3, 8}) {
    DeviceGroup group = DeviceGroup::single_gpu(n, 0);
    for (const alg::AlgorithmInfo& info : alg::algorithms()) {
      if (info.in_network || !info.supports_ranks(n)) continue;
      if (info.name == kNcclAlgorithm) continue;  // ncclAllReduce: the NCCL transport only
      const int chunks = alg::generate(info.name, n, alg::Options{}).chunks;
      for (int t : {0, 1}) {
        const lowering::DType dtype = t == 0 ? lowering::DType::float32 : lowering::DType::int64;
        const std::uint64_t count = t == 0 ? small_count(chunks) : large_count(chunks);
        IterationSettings settings =
            t == 1 ? IterationSettings{Seconds{1e-4}, n - 1} : IterationSettings{};
        settings.copy = CopyMode::kernel;
        expect_exact(group, prepared(info.name, n, count * lowering::dtype_size(dtype), dtype),
                     info.name + " n=" + std::to_string(n) + " kernel copies", settings);
      }
    }
  }
}

// launch_copy itself at every relative alignment: 16-byte vectors where both addresses allow,
// bytes one by one otherwise; nothing outside [dst, dst + bytes) is touched.
TEST_F(SingleGpuExecutor, LaunchCopyAtEveryAlignment) {
  SSIM_REQUIRE_GPUS(1);
  ASSERT_EQ(cudaSetDevice(0), cudaSuccess);
  cudaStream_t stream = nullptr;
  ASSERT_EQ(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking), cudaSuccess);
  constexpr std::size_t kBuffer = 1 << 16;
  unsigned char* src = nullptr;
  unsigned char* dst = nullptr;
  ASSERT_EQ(cudaMalloc(reinterpret_cast<void**>(&src), kBuffer), cudaSuccess);
  ASSERT_EQ(cudaMalloc(reinterpret_cast<void**>(&dst), kBuffer), cudaSuccess);
  std::vector<unsigned char> in(kBuffer), out(kBuffer), expect(kBuffer);
  for (std::size_t i = 0; i < kBuffer; ++i) in[i] = static_cast<unsigned char>(i * 7 + 3);
  ASSERT_EQ(cudaMemcpyAsync(src, in.data(), kBuffer, cudaMemcpyHostToDevice, stream), cudaSuccess);
  for (std::size_t so : {0, 1, 4, 15, 16}) {
    for (std::size_t d_o : {0, 3, 16}) {
      for (std::size_t bytes : {1, 17, 4096, 40000}) {
        std::vector<unsigned char> zero(kBuffer, 0xAB);
        ASSERT_EQ(cudaMemcpyAsync(dst, zero.data(), kBuffer, cudaMemcpyHostToDevice, stream),
                  cudaSuccess);
        ASSERT_EQ(launch_copy(dst + d_o, src + so, bytes, 4, stream), cudaSuccess);
        ASSERT_EQ(cudaMemcpyAsync(out.data(), dst, kBuffer, cudaMemcpyDeviceToHost, stream),
                  cudaSuccess);
        ASSERT_EQ(cudaStreamSynchronize(stream), cudaSuccess);
        expect = zero;
        std::copy(in.begin() + static_cast<std::ptrdiff_t>(so),
                  in.begin() + static_cast<std::ptrdiff_t>(so + bytes),
                  expect.begin() + static_cast<std::ptrdiff_t>(d_o));
        EXPECT_EQ(out, expect) << "src+" << so << " dst+" << d_o << " " << bytes << " B";
      }
    }
  }
  EXPECT_EQ(cudaFree(src), cudaSuccess);
  EXPECT_EQ(cudaFree(dst), cudaSuccess);
  EXPECT_EQ(cudaStreamDestroy(stream), cudaSuccess);
}

// Ring over 3 ranks with round 0's first transfer (rank 0 -> 1, chunk 2) turned into a copy:
// the same 6 of 18 wrong elements the host executor reports (host_executor_test.cpp), first
// rank 0 element 4, expected 33, got 22. The layout is tight (4-byte alignment): under the
// default 128-byte alignment the 6 elements would all sit in chunk 0 and the broken chunk
// would be empty, leaving nothing to catch; the first assertion keeps the test from going
// vacuous that way again.
TEST_F(SingleGpuExecutor, ABrokenScheduleIsCaughtWithRankAndElement) {
  SSIM_REQUIRE_GPUS(1);
  alg::Schedule s = alg::generate("ring", 3, alg::Options{});
  s.rounds[0].transfers[0].op = alg::Op::copy;
  PreparedCollective c;
  c.label = "broken";
  c.plan = lowering::lower(s, 6 * 4, lowering::DType::float32, 4);
  const alg::Transfer& broken = s.rounds[0].transfers[0];
  ASSERT_LT(c.plan.layout.chunk_offset_bytes(broken.chunk_begin), c.plan.layout.bytes)
      << "the broken chunk holds no real element: the test could not fail";
  c.device = build_device_plans(c.plan);
  for (Transport transport : kOneGpuTransports) {
    DeviceGroup group = one_gpu_group(transport, 3);
    CollectiveRun run(group, c, IterationSettings{});
    const IterationResult r = run.run(true);
    EXPECT_EQ(r.wrong, std::optional<std::uint64_t>(6)) << to_string(transport);
    EXPECT_EQ(r.local.to_string(),
              "6 of 18 elements wrong; first: rank 0 element 4 expected 33 got 22")
        << to_string(transport);
  }
}

TEST_F(SingleGpuExecutor, DelayIsMeasuredAndSubtracted) {
  SSIM_REQUIRE_GPUS(1);
  for (Transport transport : kOneGpuTransports) {
    DeviceGroup group = one_gpu_group(transport, 4);
    for (int straggler : {0, 3}) {
      const IterationSettings settings{Seconds{0.002}, straggler};
      CollectiveRun run(group, prepared("ring", 4, 1 << 20, lowering::DType::float32), settings);
      for (int it = 0; it < 2; ++it) {
        const IterationResult r = run.run(true);
        EXPECT_EQ(r.wrong, std::optional<std::uint64_t>(0));
        expect_causal(r, settings, true, "straggler " + std::to_string(straggler));
        // The spin runs on %globaltimer: the delay measured is the one asked for plus at most
        // the time the spin kernel waited to start (generously bounded).
        EXPECT_LT(r.delay.value, 0.1);
        ASSERT_EQ(r.stamps.size(), 4u);
        EXPECT_EQ(r.stamps[static_cast<std::size_t>(straggler)].arrival -
                      r.stamps[static_cast<std::size_t>(straggler)].start,
                  static_cast<std::uint64_t>(r.delay.value * 1e9 + 0.5));
      }
    }
  }
}

TEST_F(SingleGpuExecutor, RejectsNcclCollectives) {
  SSIM_REQUIRE_GPUS(1);
  DeviceGroup group = DeviceGroup::single_gpu(4, 0);
  EXPECT_THROW(CollectiveRun(group, prepared("nccl", 4, 1024, lowering::DType::float32), {}),
               InputError);
  EXPECT_THROW(CollectiveRun(group, prepared("ring", 3, 1024, lowering::DType::float32), {}),
               InputError);
}

TEST_F(NcclExecutor, EveryAlgorithmNcclAndPhase1AsReduceScatter) {
  SSIM_REQUIRE_GPUS(2);
  const int n = std::min(testing::gpu_count(), 8);
  DeviceGroup group = DeviceGroup::all_local(n);
  for (const alg::AlgorithmInfo& info : alg::algorithms()) {
    if (info.in_network) continue;  // switch reductions: switch_reduce_test, nvls_test
    if (!info.supports_ranks(n)) continue;
    const int chunks = alg::generate(info.name, n, alg::Options{}).chunks;
    expect_exact(group, prepared(info.name, n, large_count(chunks) * 4, lowering::DType::float32),
                 info.name);
  }
  expect_exact(group, prepared("nccl", n, 1000003 * 8, lowering::DType::int64), "nccl");
  if (n >= 3) {
    for (int straggler : {0, n - 1}) {
      alg::Options opts;
      opts.set("straggler", std::to_string(straggler));
      expect_exact(group,
                   prepared("direct", n, large_count(n - 1) * 4, lowering::DType::float32,
                            Phase1::nccl_rs, opts),
                   "direct+nccl-rs straggler " + std::to_string(straggler),
                   IterationSettings{Seconds{0.001}, straggler});
    }
  }
  const IterationSettings settings{Seconds{0.002}, n - 1};
  CollectiveRun delayed(group, prepared("nccl", n, 1 << 20, lowering::DType::float32), settings);
  const IterationResult r = delayed.run(true);
  EXPECT_EQ(r.wrong, std::optional<std::uint64_t>(0));
  expect_causal(r, settings, true, "nccl delayed");
}

// Two "processes" as two threads, one GPU each, the NCCL id through a file.
TEST_F(NcclExecutor, OneRankPerProcessThroughAnIdFile) {
  SSIM_REQUIRE_GPUS(2);
  const std::string id = "/tmp/ssim_executor_test_" + std::to_string(getpid()) + ".id";
  const IterationSettings settings{Seconds{0.001}, 1};
  auto rank = [&](int r) {
    FileIdExchange ids(id, Seconds{30});
    DeviceGroup group = DeviceGroup::one_rank(r, 2, r, ids);
    CollectiveRun run(group, prepared("ring", 2, large_count(2) * 4, lowering::DType::float32),
                      settings);
    return run.run(true);
  };
  auto other = std::async(std::launch::async, rank, 1);
  const IterationResult r0 = rank(0);
  const IterationResult r1 = other.get();
  EXPECT_EQ(r0.wrong, std::optional<std::uint64_t>(0));
  EXPECT_EQ(r1.wrong, std::optional<std::uint64_t>(0));
  // Both processes report the same combined numbers.
  EXPECT_EQ(r0.time.value, r1.time.value);
  EXPECT_EQ(r0.delay.value, r1.delay.value);
  EXPECT_EQ(r0.checked, 2 * large_count(2));
  expect_causal(r0, settings, false, "process 0");
  expect_causal(r1, settings, false, "process 1");
}

}  // namespace
}  // namespace ssim::gpu
