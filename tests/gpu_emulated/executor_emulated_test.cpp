// The real CUDA/NCCL executor (gpu_backend/cuda/executor.cpp) on the CPU stand-in of CUDA and
// NCCL (emulator.hpp): every algorithm at n in {3..8, 16} with the straggler at the first, a
// middle and the last rank, phase 1 as ncclReduceScatter, the single-GPU transport, NCCL's
// own AllReduce; and what the stand-in must catch (a receive without a send, a pointer outside
// its buffer). Every test ends with no fault recorded unless it expects one.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "algorithms/registry.hpp"
#include "common/error.hpp"
#include "gpu_backend/cuda/check.hpp"
#include "gpu_backend/cuda/executor.hpp"
#include "tests/gpu_emulated/emulator.hpp"

namespace ssim::gpu {
namespace {

class Emulated : public ::testing::Test {
 protected:
  void SetUp() override { emu::reset(emu::Config{16, 4}); }
  void TearDown() override {
    if (!expect_faults_) {
      EXPECT_EQ(emu::faults(), std::vector<std::string>{});
    }
    emu::reset();
  }
  bool expect_faults_ = false;
};

PreparedCollective prepared(const std::string& algorithm, int ranks, std::uint64_t bytes,
                            DType dtype, Phase1 phase1 = Phase1::schedule, int straggler = -1) {
  alg::Options options;
  if (straggler >= 0 && algorithm != "nccl" && alg::find_algorithm(algorithm).straggler_aware)
    options.set("straggler", std::to_string(straggler));
  return prepare_collective({algorithm, ranks, options, bytes, dtype, phase1});
}

// 7 elements per chunk plus 3: padding, and chunk offsets that are not 16-byte aligned.
std::uint64_t bytes_for(const std::string& algorithm, int ranks, DType dtype) {
  const int chunks = algorithm == "nccl" ? 1 : alg::generate(algorithm, ranks, {}).chunks;
  return (7 * static_cast<std::uint64_t>(chunks) + 3) * dtype_size(dtype);
}

std::vector<int> straggler_positions(int n) { return {0, n / 2, n - 1}; }

void expect_exact(DeviceGroup& group, PreparedCollective c, IterationSettings settings,
                  const std::string& what) {
  const std::uint64_t expected_checked =
      static_cast<std::uint64_t>(c.plan.ranks) * c.plan.layout.count;
  CollectiveRun run(group, std::move(c), settings);
  for (int it = 0; it < 2; ++it) {  // the second run checks that inputs are reset
    const IterationResult r = run.run();
    ASSERT_TRUE(r.wrong.has_value()) << what;
    EXPECT_EQ(*r.wrong, 0u) << what << ": " << r.local.to_string();
    EXPECT_EQ(r.checked, expected_checked) << what;
    EXPECT_GT(r.time.value, 0.0) << what;
    EXPECT_GE(r.time.value, r.after_last_arrival.value) << what;
  }
}

const std::vector<int> kRanks = {3, 4, 5, 6, 7, 8, 16};

TEST_F(Emulated, EveryAlgorithmEveryStragglerOverNccl) {
  for (int n : kRanks) {
    DeviceGroup group = DeviceGroup::all_local(n);
    for (const alg::AlgorithmInfo& info : alg::algorithms()) {
      if (!info.supports_ranks(n)) continue;
      for (int straggler : straggler_positions(n)) {
        const std::string what =
            info.name + " n=" + std::to_string(n) + " straggler " + std::to_string(straggler);
        expect_exact(group,
                     prepared(info.name, n, bytes_for(info.name, n, DType::float32),
                              DType::float32, Phase1::schedule, straggler),
                     IterationSettings{Seconds{1e-4}, straggler, true}, what);
        if (!info.straggler_aware) break;  // the schedule does not depend on the straggler
      }
    }
  }
}

TEST_F(Emulated, EveryDtypeEveryAlgorithm) {
  for (int n : {3, 8}) {
    DeviceGroup group = DeviceGroup::all_local(n);
    for (DType dtype : {DType::float32, DType::float64, DType::int32, DType::int64}) {
      for (const alg::AlgorithmInfo& info : alg::algorithms()) {
        if (!info.supports_ranks(n)) continue;
        expect_exact(group, prepared(info.name, n, bytes_for(info.name, n, dtype), dtype),
                     IterationSettings{}, info.name + " " + std::string(to_string(dtype)));
      }
      expect_exact(group, prepared("nccl", n, bytes_for("nccl", n, dtype) * 5, dtype),
                   IterationSettings{Seconds{1e-4}, n - 1, true}, "nccl");
    }
  }
}

TEST_F(Emulated, Phase1AsNcclReduceScatter) {
  for (int n : kRanks) {
    DeviceGroup group = DeviceGroup::all_local(n);
    for (const alg::AlgorithmInfo& info : alg::algorithms()) {
      if (!info.straggler_aware || !info.supports_ranks(n)) continue;
      for (int straggler : straggler_positions(n)) {
        PreparedCollective c;
        try {
          c = prepared(info.name, n, bytes_for(info.name, n, DType::float32), DType::float32,
                       Phase1::nccl_rs, straggler);
        } catch (const InputError&) {
          continue;  // this schedule's phase 1 is not a ring reduce-scatter at this n
        }
        expect_exact(group, std::move(c), IterationSettings{Seconds{1e-4}, straggler, true},
                     info.name + "+nccl-rs n=" + std::to_string(n) + " straggler " +
                         std::to_string(straggler));
      }
    }
  }
}

TEST_F(Emulated, EveryAlgorithmOnTheSingleGpuTransport) {
  for (int n : kRanks) {
    DeviceGroup group = DeviceGroup::single_gpu(n, 0);
    for (const alg::AlgorithmInfo& info : alg::algorithms()) {
      if (!info.supports_ranks(n)) continue;
      for (int straggler : straggler_positions(n)) {
        expect_exact(group,
                     prepared(info.name, n, bytes_for(info.name, n, DType::int32), DType::int32,
                              Phase1::schedule, straggler),
                     IterationSettings{Seconds{1e-4}, straggler, true},
                     info.name + " single-gpu n=" + std::to_string(n));
        if (!info.straggler_aware) break;
      }
    }
  }
}

// The stand-in's clock is virtual: a 5 ms spin lasts exactly 5 ms.
TEST_F(Emulated, DelayIsMeasuredAndSubtracted) {
  DeviceGroup group = DeviceGroup::all_local(4);
  CollectiveRun run(group, prepared("ring", 4, 1 << 16, DType::float32),
                    IterationSettings{Seconds{0.005}, 3, true});
  const IterationResult r = run.run();
  EXPECT_EQ(r.wrong, std::optional<std::uint64_t>(0));
  EXPECT_NEAR(r.delay.value, 0.005, 1e-6);
  EXPECT_GT(r.time.value, r.delay.value);
  EXPECT_NEAR(r.after_last_arrival.value, r.time.value - r.delay.value, 1e-9);
}

// Ring over 3 ranks with one receive dropped from rank 1's first step: its sender waits forever.
TEST_F(Emulated, AMissingReceiveIsDetectedInsteadOfHanging) {
  expect_faults_ = true;
  PreparedCollective c = prepared("ring", 3, bytes_for("ring", 3, DType::float32),
                                  DType::float32);
  Step& step = c.plan.rank_plans[1].steps[0];
  ASSERT_FALSE(step.recvs.empty());
  step.recvs.clear();
  step.applies.clear();
  c.device = build_device_plans(c.plan);
  DeviceGroup group = DeviceGroup::all_local(3);
  CollectiveRun run(group, std::move(c), IterationSettings{});
  try {
    run.run();
    FAIL() << "a send without a receive must not complete";
  } catch (const DeviceError& e) {
    EXPECT_NE(std::string(e.what()).find("would block forever"), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("send to rank 1 of rank 0"), std::string::npos)
        << e.what();
  }
}

// An apply item that runs past the end of the data buffer is an illegal address.
TEST_F(Emulated, AnOutOfBoundsApplyIsAFault) {
  expect_faults_ = true;
  PreparedCollective c = prepared("ring", 3, bytes_for("ring", 3, DType::float32),
                                  DType::float32);
  c.device[2].items.back().count += 1000;
  c.device[2].steps.back().waves.back().max_count += 1000;
  DeviceGroup group = DeviceGroup::all_local(3);
  CollectiveRun run(group, std::move(c), IterationSettings{});
  EXPECT_THROW(run.run(), DeviceError);
  const std::vector<std::string> f = emu::faults();
  ASSERT_FALSE(f.empty());
  EXPECT_NE(f.front().find("apply data"), std::string::npos) << f.front();
  EXPECT_NE(f.front().find("past the end of their allocation"), std::string::npos) << f.front();
}

}  // namespace
}  // namespace ssim::gpu
