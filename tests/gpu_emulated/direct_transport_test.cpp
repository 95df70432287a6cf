// The direct transport (executor.cpp, issue_direct_rounds) on the CPU stand-in: every registry
// algorithm at several rank counts (same-round conflicts included), every dtype, graph and
// eager, with and without a delay, all ranks on one device and one rank per device (peer
// access); the stand-in's race check must stay silent, and it must catch one dropped
// dependency of each kind (the executor's test hook) and a kernel that reads a peer's memory
// without peer access.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdint>
#include <string>
#include <vector>

#include "algorithms/registry.hpp"
#include "common/error.hpp"
#include "gpu_backend/cuda/check.hpp"
#include "gpu_backend/cuda/executor.hpp"
#include "gpu_backend/cuda/kernels.hpp"
#include "tests/gpu_emulated/emulator.hpp"

namespace ssim::gpu {
namespace {

class Direct : public ::testing::Test {
 protected:
  void SetUp() override { emu::reset(emu::Config{8, 4}); }
  void TearDown() override {
    testing::skip_direct_dependency(std::nullopt);
    if (!expect_faults_) {
      EXPECT_EQ(emu::faults(), std::vector<std::string>{});
    }
    emu::reset();
  }
  bool expect_faults_ = false;
};

PreparedCollective prepared(const std::string& algorithm, int ranks, std::uint64_t bytes,
                            lowering::DType dtype) {
  return prepare_collective({algorithm, ranks, alg::Options{}, bytes, dtype, Phase1::schedule});
}

// 5 aligned chunks' worth of elements plus 3: padding and a tail that is not a whole vector.
std::uint64_t bytes_for(const std::string& algorithm, int ranks, lowering::DType dtype) {
  const int chunks = alg::generate(algorithm, ranks, {}).chunks;
  return (5 * 128 / lowering::dtype_size(dtype) * static_cast<std::uint64_t>(chunks) + 3) *
         lowering::dtype_size(dtype);
}

std::vector<int> on_one_device(int ranks) {
  return std::vector<int>(static_cast<std::size_t>(ranks), 0);
}
std::vector<int> one_per_device(int ranks) {
  std::vector<int> d;
  for (int r = 0; r < ranks; ++r) d.push_back(r % 8);
  return d;
}

void expect_exact(DeviceGroup& group, const PreparedCollective& c, IterationSettings settings,
                  const std::string& what_in) {
  const std::uint64_t expected_checked =
      static_cast<std::uint64_t>(c.plan.ranks) * c.plan.layout.count;
  for (Launch launch : {Launch::graph, Launch::eager}) {
    settings.launch = launch;
    const std::string what = what_in + " launch " + std::string(to_string(launch));
    CollectiveRun run(group, c, settings);
    for (int it = 0; it < 2; ++it) {
      const IterationResult r = run.run(true);
      ASSERT_TRUE(r.wrong.has_value()) << what;
      EXPECT_EQ(*r.wrong, 0u) << what << ": " << r.local.to_string();
      EXPECT_EQ(r.checked, expected_checked) << what;
      EXPECT_GE(r.time.value, settings.delay.value) << what;
      ASSERT_EQ(emu::faults(), std::vector<std::string>{}) << what;
    }
  }
}

constexpr lowering::DType kTypes[] = {lowering::DType::float32, lowering::DType::float64,
                                      lowering::DType::int32,   lowering::DType::int64,
                                      lowering::DType::float16, lowering::DType::bfloat16};

// Every algorithm at n in {2, 3, 4, 5, 8}, one device, the dtypes in turn, with and without a
// delay on the last rank.
TEST_F(Direct, EveryAlgorithmOnOneDevice) {
  int case_index = 0;
  for (const alg::AlgorithmInfo& info : alg::algorithms()) {
    if (info.in_network) continue;  // switch reductions: switch_reduce_test, nvls_test
    if (info.name == kNcclAlgorithm) continue;  // ncclAllReduce: the NCCL transport only
    for (int n : {2, 3, 4, 5, 8}) {
      if (!info.supports_ranks(n)) continue;
      const lowering::DType dtype = kTypes[case_index++ % 6];
      DeviceGroup group = DeviceGroup::direct(n, on_one_device(n));
      EXPECT_EQ(group.transport(), Transport::direct);
      const PreparedCollective c = prepared(info.name, n, bytes_for(info.name, n, dtype), dtype);
      for (double delay : {0.0, 20e-6}) {
        IterationSettings s;
        s.delay = Seconds{delay};
        s.straggler = delay > 0 ? n - 1 : -1;
        expect_exact(group, c, s,
                     info.name + " n=" + std::to_string(n) + " " + std::string(to_string(dtype)) +
                         " delay " + std::to_string(delay));
      }
    }
  }
}

// Every dtype for the schedules with same-round conflicts and for ring.
TEST_F(Direct, EveryDtype) {
  for (const std::string name : {"ring", "rhd", "direct", "stragglar"}) {
    for (int n : {4, 8}) {
      if (!alg::find_algorithm(name).supports_ranks(n)) continue;
      for (lowering::DType dtype : kTypes) {
        DeviceGroup group = DeviceGroup::direct(n, on_one_device(n));
        expect_exact(group, prepared(name, n, bytes_for(name, n, dtype), dtype),
                     IterationSettings{},
                     name + " n=" + std::to_string(n) + " " + std::string(to_string(dtype)));
      }
    }
  }
}

// One rank per device: every kernel reads a peer device's memory (peer access enabled by
// DeviceGroup::direct), and the events that order the rounds cross devices.
TEST_F(Direct, OneRankPerDeviceThroughPeerAccess) {
  for (const alg::AlgorithmInfo& info : alg::algorithms()) {
    if (info.in_network) continue;  // switch reductions: switch_reduce_test, nvls_test
    if (info.name == kNcclAlgorithm) continue;  // ncclAllReduce: the NCCL transport only
    for (int n : {3, 8}) {
      if (!info.supports_ranks(n)) continue;
      DeviceGroup group = DeviceGroup::direct(n, one_per_device(n));
      EXPECT_EQ(group.device_of(n - 1), n - 1);
      IterationSettings s;
      s.delay = Seconds{10e-6};
      s.straggler = 0;
      expect_exact(group,
                   prepared(info.name, n, bytes_for(info.name, n, lowering::DType::float32),
                            lowering::DType::float32),
                   s, info.name + " n=" + std::to_string(n) + " across devices");
    }
  }
}

TEST_F(Direct, WithoutPeerAccessAClearInputError) {
  emu::reset(emu::Config{8, 4, /*peer_access=*/false});
  try {
    DeviceGroup::direct(4, one_per_device(4));
    FAIL() << "no InputError";
  } catch (const InputError& e) {
    EXPECT_NE(std::string(e.what()).find("GPU 0 cannot access GPU 1"), std::string::npos)
        << e.what();
    EXPECT_NE(std::string(e.what()).find("--transport nccl"), std::string::npos) << e.what();
  }
  // All ranks on one device need no peer access.
  DeviceGroup group = DeviceGroup::direct(4, on_one_device(4));
  expect_exact(group, prepared("ring", 4, 4096, lowering::DType::float32), IterationSettings{},
               "ring");
}

// A kernel that reads another device's memory without peer access faults, as on a GPU.
TEST_F(Direct, AKernelReadingAPeerWithoutPeerAccessFaults) {
  expect_faults_ = true;
  void* peer = nullptr;
  ASSERT_EQ(cudaSetDevice(1), cudaSuccess);
  ASSERT_EQ(cudaMalloc(&peer, 256), cudaSuccess);
  ASSERT_EQ(cudaSetDevice(0), cudaSuccess);
  void* mine = nullptr;
  void* items = nullptr;
  ASSERT_EQ(cudaMalloc(&mine, 256), cudaSuccess);
  ASSERT_EQ(cudaMalloc(&items, sizeof(DirectItem)), cudaSuccess);
  DirectItem item{0, reinterpret_cast<std::uint64_t>(peer), 64, kApplyCopy, 0};
  ASSERT_EQ(cudaMemcpy(items, &item, sizeof item, cudaMemcpyHostToDevice), cudaSuccess);
  cudaStream_t stream = nullptr;
  ASSERT_EQ(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking), cudaSuccess);
  ASSERT_EQ(
      launch_direct(kDtypeFloat32, mine, static_cast<const DirectItem*>(items), 1, 64, 4, stream),
      cudaSuccess);
  EXPECT_EQ(cudaStreamSynchronize(stream), cudaErrorIllegalAddress);
  const std::vector<std::string> f = emu::faults();
  ASSERT_EQ(f.size(), 1u);
  EXPECT_NE(f[0].find("belongs to device 1"), std::string::npos) << f[0];
  // With peer access the same read is fine.
  emu::reset(emu::Config{8, 4});
  ASSERT_EQ(cudaSetDevice(1), cudaSuccess);
  ASSERT_EQ(cudaMalloc(&peer, 256), cudaSuccess);
  ASSERT_EQ(cudaSetDevice(0), cudaSuccess);
  ASSERT_EQ(cudaDeviceEnablePeerAccess(1, 0), cudaSuccess);
  ASSERT_EQ(cudaMalloc(&mine, 256), cudaSuccess);
  ASSERT_EQ(cudaMalloc(&items, sizeof(DirectItem)), cudaSuccess);
  item.src_addr = reinterpret_cast<std::uint64_t>(peer);
  ASSERT_EQ(cudaMemcpy(items, &item, sizeof item, cudaMemcpyHostToDevice), cudaSuccess);
  ASSERT_EQ(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking), cudaSuccess);
  ASSERT_EQ(
      launch_direct(kDtypeFloat32, mine, static_cast<const DirectItem*>(items), 1, 64, 4, stream),
      cudaSuccess);
  EXPECT_EQ(cudaStreamSynchronize(stream), cudaSuccess);
  EXPECT_EQ(emu::faults(), std::vector<std::string>{});
}

struct Dropped {
  std::vector<std::string> faults;
  std::uint64_t wrong = 0;
  bool threw = false;
};

// Runs one checked iteration with one dependency dropped (the executor's test hook).
Dropped run_without(const std::string& algorithm, int n, testing::DirectDependency dep,
                    Launch launch) {
  emu::reset(emu::Config{8, 4});
  testing::skip_direct_dependency(dep);
  Dropped out;
  {
    DeviceGroup group = DeviceGroup::direct(n, on_one_device(n));
    IterationSettings s;
    s.launch = launch;
    s.timeout = Seconds{5.0};
    try {
      CollectiveRun run(group,
                        prepared(algorithm, n, bytes_for(algorithm, n, lowering::DType::float32),
                                 lowering::DType::float32),
                        s);
      out.wrong = run.run(true).wrong.value_or(0);
    } catch (const std::exception&) {
      out.threw = true;  // a race is a fault: the device's sticky error fails the iteration
    }
  }
  testing::skip_direct_dependency(std::nullopt);
  out.faults = emu::faults();
  return out;
}

bool names_a_race(const std::vector<std::string>& faults) {
  return std::any_of(faults.begin(), faults.end(), [](const std::string& f) {
    return f.find("races with") != std::string::npos;
  });
}

// Ring over 4 ranks: rank 1's round-1 kernel reads chunk data rank 0's round-0 kernel wrote;
// nothing else orders the two, so without that RAW wait the race check names the race.
TEST_F(Direct, ADroppedReadAfterWriteDependencyIsCaught) {
  expect_faults_ = true;
  for (Launch launch : {Launch::graph, Launch::eager}) {
    const Dropped raw = run_without("ring", 4, {1, 0, 0, 'r'}, launch);
    EXPECT_TRUE(names_a_race(raw.faults)) << ::testing::PrintToString(raw.faults);
    EXPECT_TRUE(raw.threw);
  }
  // The hook drops nothing when no dependency is named.
  emu::reset(emu::Config{8, 4});
  DeviceGroup group = DeviceGroup::direct(4, on_one_device(4));
  expect_exact(group, prepared("ring", 4, 4096, lowering::DType::float32), IterationSettings{},
               "ring");
}

// Every single wait dropped in turn (each kind, every rank, peer and round): some waits are
// redundant (another chain of events orders the same accesses), but none may be dropped
// silently: a run either stays exact without a fault, or the race check names a race. And a
// write-after-read and a staging wait are among those caught.
TEST_F(Direct, EveryDroppedDependencyIsCaughtOrRedundant) {
  expect_faults_ = true;
  int caught_war = 0, caught_raw = 0, caught_staged = 0;
  for (const std::string name : {"ring", "tree", "direct", "rhd"}) {
    const int n = 4;
    const PreparedCollective c =
        prepared(name, n, bytes_for(name, n, lowering::DType::float32), lowering::DType::float32);
    for (char kind : {'r', 'w', 's'}) {
      for (int round = 0; round < c.plan.rounds; ++round) {
        for (int rank = 0; rank < n; ++rank) {
          for (int on = 0; on < n; ++on) {
            if (on == rank) continue;
            const Dropped d = run_without(name, n, {rank, on, round, kind}, Launch::graph);
            const bool race = names_a_race(d.faults);
            const std::string what = name + " drop " + std::string(1, kind) + " rank " +
                                     std::to_string(rank) + " on " + std::to_string(on) +
                                     " round " + std::to_string(round);
            if (!race) {
              EXPECT_EQ(d.faults, std::vector<std::string>{}) << what;
              EXPECT_FALSE(d.threw) << what;
              EXPECT_EQ(d.wrong, 0u) << what;
            }
            if (race) (kind == 'r' ? caught_raw : kind == 'w' ? caught_war : caught_staged)++;
          }
        }
      }
    }
  }
  EXPECT_GT(caught_raw, 0);
  EXPECT_GT(caught_war, 0);
  EXPECT_GT(caught_staged, 0);
}

TEST_F(Direct, RejectsNcclCollectivesAndBadPlacement) {
  DeviceGroup group = DeviceGroup::direct(4, on_one_device(4));
  EXPECT_THROW(CollectiveRun(group, prepared("nccl", 4, 4096, lowering::DType::float32), {}),
               InputError);
  EXPECT_THROW(DeviceGroup::direct(4, {0, 0, 0}), InputError);
  EXPECT_THROW(DeviceGroup::direct(2, {0, 9}), InputError);
  EXPECT_NE(group.description().find("direct"), std::string::npos);
}

}  // namespace
}  // namespace ssim::gpu
