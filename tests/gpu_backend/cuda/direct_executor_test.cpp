// The direct transport on a real GPU (label gpu; skipped without one): every registry
// algorithm at 8 ranks on GPU 0, graph and eager, with and without a delay, sizes with an odd
// tail; every dtype for the schedules with same-round conflicts; one rank per GPU where the
// machine has several with peer access. Each checked iteration must be exact.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "algorithms/registry.hpp"
#include "gpu_backend/cuda/executor.hpp"
#include "tests/gpu_backend/cuda/device_support.hpp"

namespace ssim::gpu {
namespace {

PreparedCollective prepared(const std::string& algorithm, int ranks, std::uint64_t bytes,
                            lowering::DType dtype) {
  return prepare_collective({algorithm, ranks, alg::Options{}, bytes, dtype, Phase1::schedule});
}

void expect_exact(DeviceGroup& group, const PreparedCollective& c, IterationSettings s,
                  const std::string& what_in) {
  for (Launch launch : {Launch::graph, Launch::eager}) {
    s.launch = launch;
    const std::string what = what_in + " " + std::string(to_string(launch));
    CollectiveRun run(group, c, s);
    for (int it = 0; it < 2; ++it) {
      const IterationResult r = run.run(true);
      ASSERT_TRUE(r.wrong.has_value()) << what;
      EXPECT_EQ(*r.wrong, 0u) << what << ": " << r.local.to_string();
      EXPECT_EQ(r.checked, static_cast<std::uint64_t>(c.plan.ranks) * c.plan.layout.count) << what;
      EXPECT_GE(r.delay.value, s.delay.value) << what;
    }
  }
}

TEST(DirectExecutor, EveryAlgorithmOnOneGpu) {
  SSIM_REQUIRE_GPUS(1);
  const int n = 8;
  DeviceGroup group = DeviceGroup::direct(n, std::vector<int>(n, 0));
  for (const alg::AlgorithmInfo& info : alg::algorithms()) {
    if (info.in_network) continue;  // switch reductions: switch_reduce_test, nvls_test
    if (info.name == kNcclAlgorithm) continue;  // ncclAllReduce: the NCCL transport only
    if (!info.supports_ranks(n)) continue;
    for (std::uint64_t bytes : {std::uint64_t{4100}, std::uint64_t{(3u << 20) + 12}}) {
      for (double delay : {0.0, 1e-3}) {
        IterationSettings s;
        s.delay = Seconds{delay};
        s.straggler = delay > 0 ? n - 1 : -1;
        s.timeout = Seconds{30.0};
        expect_exact(group, prepared(info.name, n, bytes, lowering::DType::float32), s,
                     info.name + " " + std::to_string(bytes) + " B delay " + std::to_string(delay));
      }
    }
  }
}

TEST(DirectExecutor, EveryDtypeWithSameRoundConflicts) {
  SSIM_REQUIRE_GPUS(1);
  for (const std::string name : {"ring", "direct", "stragglar", "straggler_tree"}) {
    for (int n : {3, 8}) {
      if (!alg::find_algorithm(name).supports_ranks(n)) continue;
      DeviceGroup group = DeviceGroup::direct(n, std::vector<int>(static_cast<std::size_t>(n), 0));
      for (lowering::DType dtype :
           {lowering::DType::float32, lowering::DType::float64, lowering::DType::int32,
            lowering::DType::int64, lowering::DType::float16, lowering::DType::bfloat16}) {
        IterationSettings s;
        s.timeout = Seconds{30.0};
        expect_exact(group, prepared(name, n, (1u << 20) + 6 * lowering::dtype_size(dtype), dtype),
                     s, name + " n=" + std::to_string(n) + " " + std::string(to_string(dtype)));
      }
    }
  }
}

TEST(DirectExecutor, OneRankPerGpuThroughPeerAccess) {
  SSIM_REQUIRE_GPUS(2);
  const int n = testing::gpu_count();
  std::vector<int> devices;
  for (int r = 0; r < n; ++r) devices.push_back(r);
  DeviceGroup group = DeviceGroup::direct(n, devices);  // InputError without peer access
  for (const std::string name : {"ring", "stragglar"}) {
    if (!alg::find_algorithm(name).supports_ranks(n)) continue;
    IterationSettings s;
    s.timeout = Seconds{30.0};
    expect_exact(group, prepared(name, n, 1u << 20, lowering::DType::float32), s, name);
  }
}

}  // namespace
}  // namespace ssim::gpu
