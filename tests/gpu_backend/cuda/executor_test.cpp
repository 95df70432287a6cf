// The CUDA/NCCL executor on real devices; every test skips on machines without enough GPUs.
#include "gpu_backend/cuda/executor.hpp"

#include <gtest/gtest.h>
#include <unistd.h>

#include <array>
#include <future>
#include <string>

#include "algorithms/registry.hpp"
#include "common/error.hpp"
#include "tests/gpu_backend/cuda/device_support.hpp"

namespace ssim::gpu {
namespace {

constexpr std::array<DType, 4> kTypes = {DType::float32, DType::float64, DType::int32,
                                         DType::int64};

PreparedCollective prepared(const std::string& algorithm, int ranks, std::uint64_t bytes,
                            DType dtype, Phase1 phase1 = Phase1::schedule,
                            alg::Options options = {}) {
  return prepare_collective({algorithm, ranks, std::move(options), bytes, dtype, phase1});
}

// Elements per rank for a schedule of `chunks` chunks: small = 2 per chunk plus 1 (padding,
// 3-element chunks whose offsets are not 16-byte aligned); large = 4099 per chunk plus 1
// (the vector path, chunk offsets misaligned by 4 B for float32 and int32).
std::uint64_t small_count(int chunks) { return 2 * static_cast<std::uint64_t>(chunks) + 1; }
std::uint64_t large_count(int chunks) { return 4099 * static_cast<std::uint64_t>(chunks) + 1; }

void expect_exact(DeviceGroup& group, PreparedCollective c, const std::string& what) {
  const std::uint64_t expected_checked =
      static_cast<std::uint64_t>(c.plan.ranks) * c.plan.layout.count;
  CollectiveRun run(group, std::move(c), IterationSettings{});
  for (int it = 0; it < 2; ++it) {  // the second run checks that inputs are reset
    const IterationResult r = run.run(true);
    ASSERT_TRUE(r.wrong.has_value()) << what;
    EXPECT_EQ(*r.wrong, 0u) << what << ": " << r.local.to_string();
    EXPECT_EQ(r.checked, expected_checked) << what;
    EXPECT_GT(r.time.value, 0.0) << what;
    EXPECT_EQ(r.delay.value, 0.0) << what;
    // Without a delay the ranks still arrive a few microseconds apart (their start on the GPU).
    EXPECT_LE(r.after_last_arrival.value, r.time.value) << what;
    EXPECT_NEAR(r.after_last_arrival.value, r.time.value, 1e-3) << what;
  }
}

TEST(SingleGpuExecutor, EveryAlgorithmIsExact) {
  SSIM_REQUIRE_GPUS(1);
  for (int n : {2, 3, 4, 5, 8}) {
    DeviceGroup group = DeviceGroup::single_gpu(n, 0);
    for (const alg::AlgorithmInfo& info : alg::algorithms()) {
      if (!info.supports_ranks(n)) continue;
      const int chunks = alg::generate(info.name, n, alg::Options{}).chunks;
      for (std::size_t t = 0; t < kTypes.size(); ++t) {
        const DType dtype = kTypes[t];
        const std::uint64_t count = t % 2 == 0 ? small_count(chunks) : large_count(chunks);
        expect_exact(group, prepared(info.name, n, count * dtype_size(dtype), dtype),
                     info.name + " n=" + std::to_string(n) + " " + std::string(to_string(dtype)));
      }
    }
  }
}

// Ring over 3 ranks with round 0's first transfer (rank 0 -> 1, chunk 2) turned into a copy:
// the same 6 of 18 wrong elements the host executor reports (host_executor_test.cpp), first
// rank 0 element 4, expected 33, got 22.
TEST(SingleGpuExecutor, ABrokenScheduleIsCaughtWithRankAndElement) {
  SSIM_REQUIRE_GPUS(1);
  alg::Schedule s = alg::generate("ring", 3, alg::Options{});
  s.rounds[0].transfers[0].op = alg::Op::copy;
  PreparedCollective c;
  c.label = "broken";
  c.plan = lower(s, 6 * 4, DType::float32);
  c.device = build_device_plans(c.plan);
  DeviceGroup group = DeviceGroup::single_gpu(3, 0);
  CollectiveRun run(group, std::move(c), IterationSettings{});
  const IterationResult r = run.run(true);
  EXPECT_EQ(r.wrong, std::optional<std::uint64_t>(6));
  EXPECT_EQ(r.local.to_string(),
            "6 of 18 elements wrong; first: rank 0 element 4 expected 33 got 22");
}

TEST(SingleGpuExecutor, DelayIsMeasuredAndSubtracted) {
  SSIM_REQUIRE_GPUS(1);
  DeviceGroup group = DeviceGroup::single_gpu(4, 0);
  CollectiveRun run(group, prepared("ring", 4, 1 << 20, DType::float32),
                    IterationSettings{Seconds{0.002}, 3});
  const IterationResult r = run.run(true);
  EXPECT_EQ(r.wrong, std::optional<std::uint64_t>(0));
  // The spin runs on %globaltimer: the measured delay is the one asked for, plus the stamp.
  EXPECT_GE(r.delay.value, 0.0019);
  EXPECT_LT(r.delay.value, 0.1);
  EXPECT_GE(r.time.value, r.delay.value);
  // time - delay differs from after_last_arrival by how much later than the first rank the
  // straggler started: microseconds.
  EXPECT_NEAR(r.after_last_arrival.value, r.time.value - r.delay.value, 1e-4);
  ASSERT_EQ(r.stamps.size(), 4u);
  EXPECT_GE(r.stamps[3].arrival, r.stamps[3].start + 2'000'000u);
}

TEST(SingleGpuExecutor, RejectsNcclCollectives) {
  SSIM_REQUIRE_GPUS(1);
  DeviceGroup group = DeviceGroup::single_gpu(4, 0);
  EXPECT_THROW(CollectiveRun(group, prepared("nccl", 4, 1024, DType::float32), {}), InputError);
  EXPECT_THROW(CollectiveRun(group, prepared("ring", 3, 1024, DType::float32), {}), InputError);
}

TEST(NcclExecutor, EveryAlgorithmNcclAndPhase1AsReduceScatter) {
  SSIM_REQUIRE_GPUS(2);
  const int n = std::min(testing::gpu_count(), 8);
  DeviceGroup group = DeviceGroup::all_local(n);
  for (const alg::AlgorithmInfo& info : alg::algorithms()) {
    if (!info.supports_ranks(n)) continue;
    const int chunks = alg::generate(info.name, n, alg::Options{}).chunks;
    expect_exact(group, prepared(info.name, n, large_count(chunks) * 4, DType::float32), info.name);
  }
  expect_exact(group, prepared("nccl", n, 1000003 * 8, DType::int64), "nccl");
  if (n >= 3) {
    for (int straggler : {0, n - 1}) {
      alg::Options opts;
      opts.set("straggler", std::to_string(straggler));
      expect_exact(
          group,
          prepared("direct", n, large_count(n - 1) * 4, DType::float32, Phase1::nccl_rs, opts),
          "direct+nccl-rs straggler " + std::to_string(straggler));
    }
  }
  CollectiveRun delayed(group, prepared("nccl", n, 1 << 20, DType::float32),
                        IterationSettings{Seconds{0.002}, n - 1});
  const IterationResult r = delayed.run(true);
  EXPECT_EQ(r.wrong, std::optional<std::uint64_t>(0));
  EXPECT_GE(r.delay.value, 0.0019);
  EXPECT_GE(r.time.value, r.delay.value);
}

// Two "processes" as two threads, one GPU each, the NCCL id through a file.
TEST(NcclExecutor, OneRankPerProcessThroughAnIdFile) {
  SSIM_REQUIRE_GPUS(2);
  const std::string id = "/tmp/ssim_executor_test_" + std::to_string(getpid()) + ".id";
  auto rank = [&](int r) {
    FileIdExchange ids(id, Seconds{30});
    DeviceGroup group = DeviceGroup::one_rank(r, 2, r, ids);
    CollectiveRun run(group, prepared("ring", 2, large_count(2) * 4, DType::float32),
                      IterationSettings{Seconds{0.001}, 1});
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
  EXPECT_GE(r0.delay.value, 0.0009);
}

}  // namespace
}  // namespace ssim::gpu
