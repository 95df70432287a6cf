// The direct transport's host-side plan (device_plan.hpp): per item the sender and offset the
// fused kernel reads, the same-round conflicts that must be staged, and who waits for whom.
// The emulation below runs a plan as the direct transport does, with the ranks of a round in
// two opposite orders (every kernel of a round may run before or after any other): both must
// give the exact AllReduce for every registry algorithm, which holds only if every unstaged
// source is a range its sender does not write in that round.
#include <gtest/gtest.h>

#include <algorithm>
#include <array>
#include <cstring>
#include <set>
#include <string>
#include <vector>

#include "algorithms/registry.hpp"
#include "common/error.hpp"
#include "gpu_backend/cuda/device_plan.hpp"
#include "gpu_backend/float16.hpp"
#include "gpu_backend/host_executor.hpp"

namespace ssim::gpu {
namespace {

PreparedCollective prepare(const alg::Schedule& s, std::uint64_t bytes, lowering::DType dtype) {
  PreparedCollective c;
  c.label = s.algorithm;
  c.plan = lowering::lower(s, bytes, dtype, lowering::dtype_size(dtype));
  c.device = build_device_plans(c.plan);
  return c;
}

// Per round: staged copies from the round-start data, then each rank's kernel in `order`,
// wave by wave, reading unstaged sources from the sender's data as it is at that moment.
template <class T>
CheckReport emulate_direct(const PreparedCollective& c, bool reverse) {
  const lowering::Plan& plan = c.plan;
  const auto n = static_cast<std::size_t>(plan.ranks);
  std::vector<std::vector<T>> data(n), scratch(n);
  for (std::size_t r = 0; r < n; ++r) {
    data[r].resize(plan.layout.padded_count());
    fill_input(plan, static_cast<int>(r), std::as_writable_bytes(std::span(data[r])));
    scratch[r].resize(plan.rank_plans[r].scratch_bytes / sizeof(T) + 1);
  }
  for (int k = 0; k < plan.rounds; ++k) {
    const auto round = static_cast<std::size_t>(k);
    for (std::size_t r = 0; r < n; ++r) {
      const int idx = c.device[r].step_at_round[round];
      if (idx < 0) continue;
      for (const StagedCopy& sc : c.device[r].steps[static_cast<std::size_t>(idx)].staged) {
        std::memcpy(
            reinterpret_cast<std::byte*>(scratch[r].data()) + sc.scratch_offset,
            reinterpret_cast<const std::byte*>(data[static_cast<std::size_t>(sc.rank)].data()) +
                sc.source_offset,
            sc.bytes);
      }
    }
    std::vector<std::size_t> order(n);
    for (std::size_t r = 0; r < n; ++r) order[r] = reverse ? n - 1 - r : r;
    for (std::size_t r : order) {
      const int idx = c.device[r].step_at_round[round];
      if (idx < 0) continue;
      for (const ApplyWave& w : c.device[r].steps[static_cast<std::size_t>(idx)].waves) {
        for (std::size_t a = w.first; a < w.first + w.count; ++a) {
          const ApplyItem& it = c.device[r].items[a];
          const DirectSource& src = c.device[r].sources[a];
          const std::vector<T>& from =
              src.staged ? scratch[r] : data[static_cast<std::size_t>(src.rank)];
          EXPECT_EQ(src.offset % sizeof(T), 0u);
          const std::size_t first = src.offset / sizeof(T);
          for (std::uint64_t e = 0; e < it.count; ++e) {
            T& dst = data[r][it.dst + e];
            if (it.op == kApplyReduce) {
              dst += from[first + e];
            } else {
              dst = from[first + e];
            }
          }
        }
      }
    }
  }
  CheckReport report;
  for (std::size_t r = 0; r < n; ++r)
    check_output(plan, static_cast<int>(r), std::as_bytes(std::span(data[r])), report);
  return report;
}

CheckReport emulate_direct(const PreparedCollective& c, bool reverse) {
  switch (c.plan.layout.dtype) {
    case lowering::DType::float32:
      return emulate_direct<float>(c, reverse);
    case lowering::DType::float64:
      return emulate_direct<double>(c, reverse);
    case lowering::DType::int32:
      return emulate_direct<std::int32_t>(c, reverse);
    case lowering::DType::int64:
      return emulate_direct<std::int64_t>(c, reverse);
    case lowering::DType::float16:
      return emulate_direct<Half>(c, reverse);
    case lowering::DType::bfloat16:
      return emulate_direct<BFloat16>(c, reverse);
  }
  return {};
}

constexpr std::array<lowering::DType, 6> kTypes = {
    lowering::DType::float32, lowering::DType::float64, lowering::DType::int32,
    lowering::DType::int64,   lowering::DType::float16, lowering::DType::bfloat16};

// Every registered algorithm, n = 2..12, both orders of a round's kernels: exact.
TEST(DirectPlan, ExactInEitherOrderForEveryAlgorithm) {
  for (const alg::AlgorithmInfo& info : alg::algorithms()) {
    if (info.in_network) continue;  // switch reductions: switch_reduce_test, nvls_test
    for (int n = 2; n <= 12; ++n) {
      if (!info.supports_ranks(n)) continue;
      const lowering::DType dtype = kTypes[static_cast<std::size_t>(n) % kTypes.size()];
      const alg::Schedule s = alg::generate(info.name, n, alg::Options{});
      const std::uint64_t bytes =
          (2 * static_cast<std::uint64_t>(s.chunks) + 1) * lowering::dtype_size(dtype);
      const PreparedCollective c = prepare(s, bytes, dtype);
      for (bool reverse : {false, true}) {
        const CheckReport r = emulate_direct(c, reverse);
        EXPECT_TRUE(r.ok()) << info.name << " n=" << n << (reverse ? " reversed" : "") << ": "
                            << r.to_string();
      }
    }
  }
}

// The rule itself: an item is staged exactly when its sender writes an overlapping range in
// the same round; sources parallel the items; senders and stagers list the right ranks.
TEST(DirectPlan, StagedExactlyWhereTheSenderWritesTheSourceInTheSameRound) {
  for (const alg::AlgorithmInfo& info : alg::algorithms()) {
    if (info.in_network) continue;  // switch reductions: switch_reduce_test, nvls_test
    for (int n : {2, 3, 4, 5, 8}) {
      if (!info.supports_ranks(n)) continue;
      const alg::Schedule s = alg::generate(info.name, n, alg::Options{});
      const PreparedCollective c = prepare(s, 4 * s.chunks * 4, lowering::DType::float32);
      const std::uint64_t elem = 4;
      for (std::size_t r = 0; r < c.device.size(); ++r) {
        const DeviceRankPlan& dp = c.device[r];
        ASSERT_EQ(dp.sources.size(), dp.items.size());
        for (const DeviceStep& ds : dp.steps) {
          std::set<int> senders;
          for (const ApplyWave& w : ds.waves) {
            for (std::size_t a = w.first; a < w.first + w.count; ++a) {
              const DirectSource& src = dp.sources[a];
              senders.insert(src.rank);
              // The sender's writes this round (its items' destinations).
              const DeviceRankPlan& sp = c.device[static_cast<std::size_t>(src.rank)];
              const int sidx = sp.step_at_round[static_cast<std::size_t>(ds.round)];
              ASSERT_GE(sidx, 0);
              const DeviceStep& sstep = sp.steps[static_cast<std::size_t>(sidx)];
              // The source range in the sender's data (staged: where the copy came from).
              std::uint64_t begin = src.offset;
              if (src.staged) {
                bool found = false;
                for (const StagedCopy& sc : ds.staged) {
                  if (sc.rank == src.rank && src.offset >= sc.scratch_offset &&
                      src.offset < sc.scratch_offset + sc.bytes) {
                    begin = sc.source_offset + (src.offset - sc.scratch_offset);
                    found = true;
                  }
                }
                ASSERT_TRUE(found) << info.name << " rank " << r;
                EXPECT_TRUE(std::binary_search(sstep.stagers.begin(), sstep.stagers.end(),
                                               static_cast<int>(r)));
              }
              const std::uint64_t end = begin + dp.items[a].count * elem;
              bool overlap = false;
              for (const ApplyWave& sw : sstep.waves) {
                for (std::size_t b = sw.first; b < sw.first + sw.count; ++b) {
                  const std::uint64_t wb = sp.items[b].dst * elem;
                  const std::uint64_t we = wb + sp.items[b].count * elem;
                  overlap = overlap || (wb < end && begin < we);
                }
              }
              EXPECT_EQ(src.staged, overlap)
                  << info.name << " n=" << n << " rank " << r << " round " << ds.round;
            }
          }
          EXPECT_EQ(std::vector<int>(senders.begin(), senders.end()), ds.senders) << info.name;
        }
      }
    }
  }
}

// Two ranks that swap the same chunk in one round: both must stage, and each waits for the
// other's copy.
TEST(DirectPlan, ASwapOfOneChunkIsStagedBothWays) {
  alg::Schedule s = alg::Schedule::make(alg::Collective::allreduce, "swap", 2, 1);
  s.rounds.push_back({});
  s.rounds[0].transfers.push_back(alg::Transfer{0, 1, 0, 1, alg::Op::reduce});
  s.rounds[0].transfers.push_back(alg::Transfer{1, 0, 0, 1, alg::Op::reduce});
  const PreparedCollective c = prepare(s, 64, lowering::DType::float32);
  for (int r = 0; r < 2; ++r) {
    const DeviceStep& ds = c.device[static_cast<std::size_t>(r)].steps.at(0);
    ASSERT_EQ(ds.staged.size(), 1u);
    EXPECT_EQ(ds.staged[0], (StagedCopy{1 - r, 0, 0, 64}));
    EXPECT_EQ(ds.stagers, std::vector<int>{1 - r});
    EXPECT_EQ(ds.senders, std::vector<int>{1 - r});
    EXPECT_TRUE(c.device[static_cast<std::size_t>(r)].sources.at(0).staged);
  }
  EXPECT_EQ(same_round_conflicts(c.device), (std::vector<SameRoundConflict>{{0, 0, 1}, {0, 1, 0}}));
  for (bool reverse : {false, true}) EXPECT_TRUE(emulate_direct(c, reverse).ok());
}

// A ring never reads what its sender writes in the same round: nothing staged; rank r reads
// from r - 1 only.
TEST(DirectPlan, ARingStagesNothing) {
  const alg::Schedule s = alg::generate("ring", 8, alg::Options{});
  const PreparedCollective c = prepare(s, 8 * 1024, lowering::DType::float32);
  EXPECT_TRUE(same_round_conflicts(c.device).empty());
  for (int r = 0; r < 8; ++r) {
    for (const DeviceStep& ds : c.device[static_cast<std::size_t>(r)].steps) {
      EXPECT_TRUE(ds.staged.empty());
      EXPECT_TRUE(ds.stagers.empty());
      EXPECT_EQ(ds.senders, std::vector<int>{(r + 7) % 8});
    }
  }
}

// Which registry schedules have same-round conflicts at n = 2..9 (printed for the record;
// the direct transport's emulated tests run every one of them).
TEST(DirectPlan, SameRoundConflictsOfTheRegistry) {
  std::string conflicted;
  for (const alg::AlgorithmInfo& info : alg::algorithms()) {
    if (info.in_network) continue;  // switch reductions: switch_reduce_test, nvls_test
    std::string at;
    for (int n = 2; n <= 9; ++n) {
      if (!info.supports_ranks(n)) continue;
      const alg::Schedule s = alg::generate(info.name, n, alg::Options{});
      const PreparedCollective c = prepare(s, 4 * s.chunks * 4, lowering::DType::float32);
      if (!same_round_conflicts(c.device).empty()) at += " " + std::to_string(n);
    }
    if (!at.empty()) conflicted += info.name + " (n =" + at + "); ";
  }
  std::cout << "same-round conflicts: " << (conflicted.empty() ? "none" : conflicted) << "\n";
  EXPECT_FALSE(conflicted.empty());  // the staging path is exercised by registry schedules
}

TEST(DirectPlan, TransportNames) {
  EXPECT_EQ(parse_transport("direct"), Transport::direct);
  EXPECT_EQ(to_string(Transport::direct), "direct");
  EXPECT_THROW(parse_transport("p2p"), InputError);
}

}  // namespace
}  // namespace ssim::gpu
