// The real CUDA/NCCL executor (gpu_backend/cuda/executor.cpp) on the CPU stand-in of CUDA and
// NCCL (emulator.hpp): every algorithm at n in {3..8, 16} with the straggler at the first, a
// middle and the last rank, phase 1 as ncclReduceScatter, the single-GPU transport, NCCL's
// own AllReduce; and what the stand-in must catch (a receive without a send, a pointer outside
// its buffer). Every test ends with no fault recorded unless it expects one.
#include <gtest/gtest.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdint>
#include <string>
#include <thread>
#include <vector>

#include "algorithms/registry.hpp"
#include "common/error.hpp"
#include "gpu_backend/cuda/bootstrap.hpp"
#include "gpu_backend/cuda/check.hpp"
#include "gpu_backend/cuda/executor.hpp"
#include "gpu_backend/cuda/kernels.hpp"
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
                            lowering::DType dtype, Phase1 phase1 = Phase1::schedule,
                            int straggler = -1) {
  alg::Options options;
  if (straggler >= 0 && algorithm != "nccl" && alg::find_algorithm(algorithm).straggler_aware)
    options.set("straggler", std::to_string(straggler));
  return prepare_collective({algorithm, ranks, options, bytes, dtype, phase1});
}

// 7 elements per chunk plus 3: padding, and chunk offsets that are not 16-byte aligned.
std::uint64_t bytes_for(const std::string& algorithm, int ranks, lowering::DType dtype) {
  const int chunks = algorithm == "nccl" ? 1 : alg::generate(algorithm, ranks, {}).chunks;
  return (7 * static_cast<std::uint64_t>(chunks) + 3) * lowering::dtype_size(dtype);
}

std::vector<int> straggler_positions(int n) { return {0, n / 2, n - 1}; }

// Both launch modes: graphs captured once and launched twice, and eager issue.
void expect_exact(DeviceGroup& group, const PreparedCollective& c, IterationSettings settings,
                  const std::string& what_in,
                  std::vector<Launch> launches = {Launch::graph, Launch::eager}) {
  const std::uint64_t expected_checked =
      static_cast<std::uint64_t>(c.plan.ranks) * c.plan.layout.count;
  for (Launch launch : launches) {
    settings.launch = launch;
    const std::string what = what_in + " launch " + std::string(to_string(launch));
    CollectiveRun run(group, c, settings);
    for (int it = 0; it < 2; ++it) {  // the second run checks that inputs are reset
      const IterationResult r = run.run(true);
      ASSERT_TRUE(r.wrong.has_value()) << what;
      EXPECT_EQ(*r.wrong, 0u) << what << ": " << r.local.to_string();
      EXPECT_EQ(r.checked, expected_checked) << what;
      EXPECT_GT(r.time.value, 0.0) << what;
      EXPECT_GE(r.time.value, r.after_last_arrival.value) << what;
      EXPECT_GE(r.time.value, settings.delay.value) << what;
    }
  }
}

const std::vector<int> kRanks = {3, 4, 5, 6, 7, 8, 16};

TEST_F(Emulated, EveryAlgorithmEveryStragglerOverNccl) {
  for (int n : kRanks) {
    DeviceGroup group = DeviceGroup::all_local(n);
    for (const alg::AlgorithmInfo& info : alg::algorithms()) {
      if (info.in_network) continue;  // switch reductions: switch_reduce_test, nvls_test
      if (!info.supports_ranks(n)) continue;
      for (int straggler : straggler_positions(n)) {
        const std::string what =
            info.name + " n=" + std::to_string(n) + " straggler " + std::to_string(straggler);
        expect_exact(group,
                     prepared(info.name, n, bytes_for(info.name, n, lowering::DType::float32),
                              lowering::DType::float32, Phase1::schedule, straggler),
                     IterationSettings{Seconds{1e-4}, straggler}, what);
        if (!info.straggler_aware) break;  // the schedule does not depend on the straggler
      }
    }
  }
}

TEST_F(Emulated, EveryDtypeEveryAlgorithm) {
  for (int n : kRanks) {
    DeviceGroup group = DeviceGroup::all_local(n);
    for (lowering::DType dtype :
         {lowering::DType::float32, lowering::DType::float64, lowering::DType::int32,
          lowering::DType::int64, lowering::DType::float16, lowering::DType::bfloat16}) {
      for (const alg::AlgorithmInfo& info : alg::algorithms()) {
        if (info.in_network) continue;  // switch reductions: switch_reduce_test, nvls_test
        if (!info.supports_ranks(n)) continue;
        expect_exact(
            group,
            prepared(info.name, n, bytes_for(info.name, n, dtype), dtype, Phase1::schedule, n - 1),
            IterationSettings{Seconds{1e-5}, n - 1},
            info.name + " n=" + std::to_string(n) + " " + std::string(to_string(dtype)));
      }
      expect_exact(group, prepared("nccl", n, bytes_for("nccl", n, dtype) * 5, dtype),
                   IterationSettings{Seconds{1e-4}, n - 1}, "nccl");
    }
  }
}

// Runs one collective after another on one device group (both launch modes, two iterations
// each) and checks what the barrier before every iteration guarantees on one timeline: an
// iteration starts after the previous one (of any run) finished, so the straggler's delay
// lies inside the measured time.
struct Timed {
  PreparedCollective collective;
  IterationSettings settings;
  std::string what;
};

void expect_ordered(DeviceGroup& group, std::vector<Timed> runs) {
  std::uint64_t previous_finish = 0;
  for (Timed& t : runs) {
    for (Launch launch : {Launch::graph, Launch::eager}) {
      t.settings.launch = launch;
      const std::string what = t.what + " launch " + std::string(to_string(launch));
      CollectiveRun run(group, t.collective, t.settings);
      for (int it = 0; it < 2; ++it) {
        const IterationResult r = run.run(true);
        EXPECT_EQ(r.wrong, std::optional<std::uint64_t>(0)) << what;
        EXPECT_GE(r.time.value, t.settings.delay.value) << what << " iteration " << it;
        EXPECT_NEAR(r.delay.value, t.settings.delay.value, 1e-6) << what;
        std::uint64_t finish = 0;
        for (const RankStamps& st : r.stamps) {
          EXPECT_GE(st.start, previous_finish)
              << what << " iteration " << it << ": rank " << st.rank
              << " started before the previous iteration finished";
          finish = std::max(finish, st.finish);
        }
        previous_finish = finish;
      }
    }
  }
}

// Regression: a straggler-aware schedule leaves the straggler's stream idle while the others
// still work; the next collective's straggler must not start "earlier" than the barrier and
// so spin partly in the past (nccl measured 50 us under a 100 us delay). Every order.
TEST_F(Emulated, ADelayIsMeasuredWhateverRanBeforeIt) {
  for (int n : {3, 4, 6}) {
    DeviceGroup group = DeviceGroup::all_local(n);
    for (const alg::AlgorithmInfo& info : alg::algorithms()) {
      if (info.in_network) continue;  // switch reductions: switch_reduce_test, nvls_test
      if (!info.straggler_aware || !info.supports_ranks(n)) continue;
      for (int straggler : {n - 1, 0}) {
        auto aware = [&](double delay) {
          return Timed{prepared(info.name, n, bytes_for(info.name, n, lowering::DType::float32),
                                lowering::DType::float32, Phase1::schedule, straggler),
                       IterationSettings{Seconds{delay}, straggler},
                       info.name + " n=" + std::to_string(n) + " straggler " +
                           std::to_string(straggler) + " delay " + std::to_string(delay)};
        };
        auto nccl = [&](double delay) {
          return Timed{prepared("nccl", n, bytes_for("nccl", n, lowering::DType::float32) * 5,
                                lowering::DType::float32),
                       IterationSettings{Seconds{delay}, straggler},
                       "nccl n=" + std::to_string(n) + " delay " + std::to_string(delay)};
        };
        expect_ordered(group, {aware(1e-5), nccl(1e-4)});
        expect_ordered(group, {nccl(1e-5), aware(1e-4)});
        expect_ordered(group, {aware(1e-5), aware(1e-4), aware(0), nccl(1e-4)});
      }
    }
  }
}

TEST_F(Emulated, Phase1AsNcclReduceScatter) {
  for (int n : kRanks) {
    DeviceGroup group = DeviceGroup::all_local(n);
    for (const alg::AlgorithmInfo& info : alg::algorithms()) {
      if (info.in_network) continue;  // switch reductions: switch_reduce_test, nvls_test
      if (!info.straggler_aware || !info.supports_ranks(n)) continue;
      for (int straggler : straggler_positions(n)) {
        PreparedCollective c;
        try {
          c = prepared(info.name, n, bytes_for(info.name, n, lowering::DType::float32),
                       lowering::DType::float32, Phase1::nccl_rs, straggler);
        } catch (const InputError&) {
          continue;  // this schedule's phase 1 is not a ring reduce-scatter at this n
        }
        expect_exact(group, std::move(c), IterationSettings{Seconds{1e-4}, straggler},
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
      if (info.in_network) continue;  // switch reductions: switch_reduce_test, nvls_test
      if (info.name == kNcclAlgorithm) continue;  // ncclAllReduce: the NCCL transport only
      if (!info.supports_ranks(n)) continue;
      for (int straggler : straggler_positions(n)) {
        expect_exact(group,
                     prepared(info.name, n, bytes_for(info.name, n, lowering::DType::int32),
                              lowering::DType::int32, Phase1::schedule, straggler),
                     IterationSettings{Seconds{1e-4}, straggler},
                     info.name + " single-gpu n=" + std::to_string(n));
        if (!info.straggler_aware) break;
      }
    }
  }
}

// The stand-in's clock is virtual and deterministic: the spin ends exactly 5 ms after the
// start stamp (it waits until start + delay), and the results are the stamps' arithmetic.
TEST_F(Emulated, TimesComeFromTheStamps) {
  DeviceGroup group = DeviceGroup::all_local(4);
  for (Launch launch : {Launch::graph, Launch::eager}) {
    IterationSettings settings{Seconds{0.005}, 3};
    settings.launch = launch;
    CollectiveRun run(group, prepared("ring", 4, 1 << 16, lowering::DType::float32), settings);
    const IterationResult r = run.run(true);
    EXPECT_EQ(r.wrong, std::optional<std::uint64_t>(0));
    EXPECT_NEAR(r.delay.value, 0.005, 1e-6);
    ASSERT_EQ(r.stamps.size(), 4u);
    std::uint64_t max_finish = 0, min_arrival = UINT64_MAX, max_arrival = 0;
    for (const RankStamps& st : r.stamps) {
      max_finish = std::max(max_finish, st.finish);
      min_arrival = std::min(min_arrival, st.arrival);
      max_arrival = std::max(max_arrival, st.arrival);
      ASSERT_EQ(st.round_end.size(), 6u);  // ring at n=4: 2(n-1) rounds, every rank in each
      std::uint64_t last = st.arrival;
      for (std::uint64_t t : st.round_end) {
        EXPECT_GT(t, last) << "rounds end in order";
        last = t;
      }
      EXPECT_GE(st.finish, last);
    }
    EXPECT_EQ(r.stamps[3].arrival - r.stamps[3].start, 5'000'000u);
    EXPECT_EQ(r.origin, min_arrival);
    EXPECT_DOUBLE_EQ(r.time.value, static_cast<double>(max_finish - min_arrival) * 1e-9);
    EXPECT_DOUBLE_EQ(r.after_last_arrival.value,
                     static_cast<double>(max_finish - max_arrival) * 1e-9);
    // Everything after the straggler's arrival takes the stand-in's few microseconds per round.
    EXPECT_LT(r.after_last_arrival.value, 1e-3);
    EXPECT_GT(r.time.value, 0.005);
  }
}

// With --launch graph the timed region holds no host-issued work: per iteration the host
// issues one fill kernel per rank and launches one graph per rank; every NCCL call and every
// apply kernel comes from the graphs.
TEST_F(Emulated, GraphLaunchIssuesNoNcclCallOrApplyPerIteration) {
  DeviceGroup group = DeviceGroup::all_local(8);
  CollectiveRun run(
      group, prepared("stragglar", 8, 1 << 16, lowering::DType::float32, Phase1::schedule, 7),
      IterationSettings{Seconds{1e-4}, 7});
  const emu::Counters before = emu::counters();
  EXPECT_GT(before.captured_nccl, 0u);
  EXPECT_GT(before.captured_kernels, 0u);
  const IterationResult r = run.run(false);
  const emu::Counters after = emu::counters();
  EXPECT_EQ(after.nccl_groups - before.nccl_groups, 0u);
  EXPECT_EQ(after.kernels - before.kernels, 8u);  // the fill kernels
  EXPECT_EQ(after.graph_launches - before.graph_launches, 8u);
  EXPECT_FALSE(r.wrong.has_value());
  // The single-GPU transport: one graph forked over every rank's stream.
  DeviceGroup single = DeviceGroup::single_gpu(5, 0);
  CollectiveRun one(single, prepared("dbtree", 5, 1 << 12, lowering::DType::float32),
                    IterationSettings{});
  const emu::Counters b = emu::counters();
  EXPECT_EQ(one.run(true).wrong, std::optional<std::uint64_t>(0));
  const emu::Counters a = emu::counters();
  EXPECT_EQ(a.graph_launches - b.graph_launches, 1u);
  EXPECT_EQ(a.nccl_groups - b.nccl_groups, 0u);
}

// The split communicator of --phase1 nccl-rs is made once per device group, not per size.
TEST_F(Emulated, SplitCommunicatorIsMadeOncePerGroup) {
  DeviceGroup group = DeviceGroup::all_local(6);
  const std::uint64_t comms_before = emu::counters().live_comms;
  for (std::uint64_t bytes :
       {std::uint64_t{1} << 12, std::uint64_t{1} << 14, std::uint64_t{1} << 16}) {
    CollectiveRun run(group,
                      prepared("direct", 6, bytes, lowering::DType::float32, Phase1::nccl_rs, 5),
                      IterationSettings{Seconds{1e-5}, 5});
    EXPECT_EQ(run.run(true).wrong, std::optional<std::uint64_t>(0));
  }
  EXPECT_EQ(emu::counters().live_comms - comms_before, 5u);  // the 5 members' split comms
}

// A wrong element is counted on the device and located on the host.
TEST_F(Emulated, ABrokenScheduleIsCaughtWithRankAndElement) {
  alg::Schedule s = alg::generate("ring", 3, alg::Options{});
  s.rounds[0].transfers[0].op = alg::Op::copy;
  PreparedCollective c;
  c.label = "broken";
  c.plan = lowering::lower(s, 6 * 4, lowering::DType::float32,
                           4);  // tight layout: the 6 elements span the 3 chunks
  c.device = build_device_plans(c.plan);
  DeviceGroup group = DeviceGroup::all_local(3);
  CollectiveRun run(group, std::move(c), IterationSettings{});
  const IterationResult r = run.run(true);
  EXPECT_EQ(r.wrong, std::optional<std::uint64_t>(6));
  EXPECT_EQ(r.local.to_string(),
            "6 of 18 elements wrong; first: rank 0 element 4 expected 33 got 22");
}

// Ring over 3 ranks with one receive dropped from rank 1's first step. NCCL matches sends and
// receives per peer pair in issue order, so rank 0's round-0 send meets rank 1's round-1
// receive, and so on, until rank 0's last send (round 3) finds no receive. The watchdog gives
// up after --timeout and names who is stuck where; ranks 1 and 2 finished (with wrong data).
TEST_F(Emulated, WatchdogNamesTheRankAndRoundThatDidNotFinish) {
  for (Launch launch : {Launch::graph, Launch::eager}) {
    PreparedCollective c = prepared("ring", 3, bytes_for("ring", 3, lowering::DType::float32),
                                    lowering::DType::float32);
    lowering::Step& step = c.plan.rank_plans[1].steps[0];
    ASSERT_FALSE(step.recvs.empty());
    step.recvs.clear();
    step.applies.clear();
    c.device = build_device_plans(c.plan);
    DeviceGroup group = DeviceGroup::all_local(3);
    IterationSettings settings;
    settings.launch = launch;
    settings.timeout = Seconds{0.1};
    CollectiveRun run(group, std::move(c), settings);
    try {
      run.run(true);
      FAIL() << "a send without a receive must not complete";
    } catch (const WatchdogTimeout& e) {
      const std::string m = e.what();
      EXPECT_EQ(m,
                "watchdog: ring at 96 B did not finish within --timeout 100.000ms: rank 0 did "
                "not finish round 3");
    }
  }
}

// An apply item that runs past the end of the data buffer is an illegal address.
TEST_F(Emulated, AnOutOfBoundsApplyIsAFault) {
  expect_faults_ = true;
  PreparedCollective c =
      prepared("ring", 3, bytes_for("ring", 3, lowering::DType::float32), lowering::DType::float32);
  c.device[2].items.back().count += 1000;
  c.device[2].steps.back().waves.back().max_count += 1000;
  DeviceGroup group = DeviceGroup::all_local(3);
  CollectiveRun run(group, std::move(c), IterationSettings{});
  EXPECT_THROW(run.run(true), DeviceError);
  const std::vector<std::string> f = emu::faults();
  ASSERT_FALSE(f.empty());
  EXPECT_NE(f.front().find("apply data"), std::string::npos) << f.front();
  EXPECT_NE(f.front().find("past the end of their allocation"), std::string::npos) << f.front();
}

// One "process" per GPU as threads of this process, the NCCL id through a file: the ranks
// rendezvous in ncclCommInitRank, time and check results are combined across them.
TEST_F(Emulated, OneRankPerProcessThroughAnIdFile) {
  const std::string id = "/tmp/ssim_emulated_test_" + std::to_string(getpid()) + ".id";
  constexpr int kRanks = 3;
  std::vector<IterationResult> results(kRanks);
  std::vector<std::string> errors(kRanks);
  auto rank = [&](int r) {
    try {
      FileIdExchange ids(id, Seconds{30});
      DeviceGroup group = DeviceGroup::one_rank(r, kRanks, r, ids);
      CollectiveRun run(
          group,
          prepared("stragglar", kRanks, 1 << 12, lowering::DType::float32, Phase1::schedule, 1),
          IterationSettings{Seconds{0.001}, 1});
      run.run(false);
      results[static_cast<std::size_t>(r)] = run.run(true);
    } catch (const std::exception& e) {
      errors[static_cast<std::size_t>(r)] = e.what();
    }
  };
  std::vector<std::thread> threads;
  for (int r = 1; r < kRanks; ++r) threads.emplace_back(rank, r);
  rank(0);
  for (std::thread& t : threads) t.join();
  for (int r = 0; r < kRanks; ++r) {
    const auto i = static_cast<std::size_t>(r);
    ASSERT_EQ(errors[i], "") << "rank " << r;
    EXPECT_EQ(results[i].wrong, std::optional<std::uint64_t>(0));
    EXPECT_EQ(results[i].checked, kRanks * (1u << 12) / 4);
    // Every process reports the same combined numbers.
    EXPECT_EQ(results[i].time.value, results[0].time.value);
    EXPECT_EQ(results[i].after_last_arrival.value, results[0].after_last_arrival.value);
    EXPECT_NEAR(results[i].delay.value, 0.001, 1e-6);
    ASSERT_EQ(results[i].stamps.size(), 1u);
    EXPECT_EQ(results[i].stamps[0].rank, r);
  }
}

// One process per GPU where the other process never starts the iteration: rank 0's barrier
// is polled, so the watchdog ends it instead of a hang.
TEST_F(Emulated, WatchdogCoversTheBarrierAcrossProcesses) {
  const std::string id = "/tmp/ssim_emulated_barrier_" + std::to_string(getpid()) + ".id";
  std::string error0;
  std::atomic<bool> done{false};
  std::thread other([&] {
    FileIdExchange ids(id, Seconds{30});
    DeviceGroup group = DeviceGroup::one_rank(1, 2, 1, ids);
    while (!done) std::this_thread::sleep_for(std::chrono::milliseconds(1));
  });
  try {
    FileIdExchange ids(id, Seconds{30});
    DeviceGroup group = DeviceGroup::one_rank(0, 2, 0, ids);
    IterationSettings settings;
    settings.timeout = Seconds{0.1};
    CollectiveRun run(group, prepared("ring", 2, 1 << 10, lowering::DType::float32), settings);
    run.run(true);
  } catch (const WatchdogTimeout& e) {
    error0 = e.what();
  }
  done = true;
  other.join();
  EXPECT_EQ(error0,
            "watchdog: rank 0: the barrier before the iteration did not complete within "
            "--timeout: another process is gone or stuck");
}

// The device-side input and expected values are the host executor's, for every dtype and
// rank count (the modulus M = value_modulus(dtype, ranks)).
TEST(DeviceCheckValues, MatchTheHostExecutor) {
  for (lowering::DType dtype :
       {lowering::DType::float32, lowering::DType::float64, lowering::DType::int32,
        lowering::DType::int64, lowering::DType::float16, lowering::DType::bfloat16}) {
    for (int ranks : {2, 8, 128, 1024}) {
      if (dtype == lowering::DType::bfloat16 && ranks > 128) continue;
      const std::uint64_t m = value_modulus(dtype, ranks);
      for (int r : {0, 1, 7, ranks - 1}) {
        for (std::uint64_t i = 0; i < 200; ++i) {
          ASSERT_EQ(static_cast<double>(input_value_int(r, i, m)), input_value(r, i, m))
              << r << " " << i;
        }
      }
    }
  }
}

// bfloat16 sums stay exact up to 128 ranks; beyond, preparing the collective is an InputError
// naming the limit (before any device work).
TEST(DeviceCheckValues, Bfloat16BeyondItsRankLimitIsAnInputError) {
  EXPECT_NO_THROW(prepared("ring", 128, 1 << 12, lowering::DType::bfloat16));
  for (const char* algorithm : {"ring", "nccl"}) {
    try {
      prepared(algorithm, 129, 1 << 12, lowering::DType::bfloat16);
      ADD_FAILURE() << algorithm << ": expected an InputError";
    } catch (const InputError& e) {
      EXPECT_NE(std::string(e.what()).find("at most 128 ranks"), std::string::npos) << e.what();
    }
  }
  EXPECT_NO_THROW(prepared("nccl", 1024, 1 << 12, lowering::DType::float16));
}

}  // namespace
}  // namespace ssim::gpu
