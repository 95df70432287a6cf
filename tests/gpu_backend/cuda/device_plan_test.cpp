#include "gpu_backend/cuda/device_plan.hpp"

#include <gtest/gtest.h>

#include <array>
#include <cstring>
#include <string>
#include <vector>

#include "algorithms/generators.hpp"
#include "algorithms/registry.hpp"
#include "common/error.hpp"
#include "gpu_backend/float16.hpp"
#include "gpu_backend/host_executor.hpp"

namespace ssim::gpu {
namespace {

using alg::Op;

// Poison for the chunks ncclReduceScatter leaves unspecified in the emulation below: any
// schedule that reads them produces wrong numbers.
constexpr double kPoison = -7777;

// Runs a PreparedCollective on the host exactly as the CUDA executor issues it: per round,
// every receive first copies the sender's round-start data (at recv_source_offsets) into
// scratch, then every rank applies its items wave by wave; nccl-rs rounds are one
// reduce-scatter of chunks 0..n-2 among the members. Within a wave the kernel runs items in
// parallel, so the emulation first asserts that they write disjoint ranges.
template <class T>
CheckReport emulate(const PreparedCollective& c) {
  const lowering::Plan& plan = c.plan;
  const lowering::BufferLayout& l = plan.layout;
  const auto n = static_cast<std::size_t>(plan.ranks);
  std::vector<std::vector<T>> data(n), scratch(n);
  for (std::size_t r = 0; r < n; ++r) {
    data[r].resize(l.padded_count());
    fill_input(plan, static_cast<int>(r), std::as_writable_bytes(std::span(data[r])));
    scratch[r].resize(plan.rank_plans[r].scratch_bytes / sizeof(T));
  }
  for (int k = 0; k < plan.rounds; ++k) {
    const auto round = static_cast<std::size_t>(k);
    if (c.phase1 && k < c.phase1->rounds) {
      if (k > 0) continue;
      const std::vector<int>& members = c.phase1->members;
      std::vector<T> sum(l.chunk_count * members.size(), T{});
      for (int m : members) {
        for (std::size_t e = 0; e < sum.size(); ++e) sum[e] += data[static_cast<std::size_t>(m)][e];
      }
      for (std::size_t i = 0; i < members.size(); ++i) {
        auto& d = data[static_cast<std::size_t>(members[i])];
        for (std::size_t e = 0; e < sum.size(); ++e)
          d[e] = e / l.chunk_count == i ? sum[e] : static_cast<T>(kPoison);
      }
      continue;
    }
    for (std::size_t r = 0; r < n; ++r) {
      const int idx = c.device[r].step_at_round[round];
      if (idx < 0) continue;
      const lowering::Step& step = plan.rank_plans[r].steps[static_cast<std::size_t>(idx)];
      const DeviceStep& ds = c.device[r].steps[static_cast<std::size_t>(idx)];
      EXPECT_EQ(ds.round, k);
      for (std::size_t v = 0; v < step.recvs.size(); ++v) {
        const lowering::P2P& p = step.recvs[v];
        std::memcpy(
            scratch[r].data() + p.offset / sizeof(T),
            data[static_cast<std::size_t>(p.peer)].data() + ds.recv_source_offsets[v] / sizeof(T),
            p.count * sizeof(T));
      }
    }
    for (std::size_t r = 0; r < n; ++r) {
      const int idx = c.device[r].step_at_round[round];
      if (idx < 0) continue;
      for (const ApplyWave& w : c.device[r].steps[static_cast<std::size_t>(idx)].waves) {
        for (std::size_t a = w.first; a < w.first + w.count; ++a) {
          const ApplyItem& it = c.device[r].items[a];
          for (std::size_t b = w.first; b < a; ++b) {
            const ApplyItem& o = c.device[r].items[b];
            EXPECT_FALSE(it.dst < o.dst + o.count && o.dst < it.dst + it.count)
                << "overlapping items in one wave, rank " << r << " round " << k;
          }
          for (std::uint64_t e = 0; e < it.count; ++e) {
            T& dst = data[r][it.dst + e];
            const T src = scratch[r][it.src + e];
            if (it.op == kApplyReduce) {
              dst += src;  // in T's own precision (Half, BFloat16: add in float, round back)
            } else {
              dst = src;
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

CheckReport emulate(const PreparedCollective& c) {
  switch (c.plan.layout.dtype) {
    case lowering::DType::float32:
      return emulate<float>(c);
    case lowering::DType::float64:
      return emulate<double>(c);
    case lowering::DType::int32:
      return emulate<std::int32_t>(c);
    case lowering::DType::int64:
      return emulate<std::int64_t>(c);
    case lowering::DType::float16:
      return emulate<Half>(c);
    case lowering::DType::bfloat16:
      return emulate<BFloat16>(c);
  }
  return {};
}

PreparedCollective prepare(const alg::Schedule& s, std::uint64_t bytes, lowering::DType dtype) {
  PreparedCollective c;
  c.label = s.algorithm;
  // The tight layout (alignment = element size): the tests below count offsets in elements.
  c.plan = lowering::lower(s, bytes, dtype, lowering::dtype_size(dtype));
  c.device = build_device_plans(c.plan);
  return c;
}

constexpr std::array<lowering::DType, 6> kTypes = {
    lowering::DType::float32, lowering::DType::float64, lowering::DType::int32,
    lowering::DType::int64,   lowering::DType::float16, lowering::DType::bfloat16};

// Every registered algorithm, n = 2..12, 2 * chunks + 1 elements (padding in every run;
// chunk offsets of 3 elements are not 16-byte aligned), each type in turn: the device plan
// computes the exact AllReduce.
TEST(DevicePlan, EmulationIsExactForEveryAlgorithm) {
  for (const alg::AlgorithmInfo& info : alg::algorithms()) {
    if (info.in_network) continue;  // switch reductions: switch_reduce_test, nvls_test
    for (int n = 2; n <= 12; ++n) {
      if (!info.supports_ranks(n)) continue;
      const lowering::DType dtype = kTypes[static_cast<std::size_t>(n) % kTypes.size()];
      const alg::Schedule s = alg::generate(info.name, n, alg::Options{});
      const std::uint64_t bytes =
          (2 * static_cast<std::uint64_t>(s.chunks) + 1) * lowering::dtype_size(dtype);
      const CheckReport r = emulate(prepare(s, bytes, dtype));
      EXPECT_TRUE(r.ok()) << info.name << " n=" << n << ": " << r.to_string();
      EXPECT_EQ(r.checked, static_cast<std::uint64_t>(n) * (2 * s.chunks + 1)) << info.name;
    }
  }
}

// Ring over 3 ranks, 2 float32 elements per chunk (8 B): in round 0 member i sends chunk
// (i - 1) mod 3 to i + 1, so rank 1 receives chunk 2 from rank 0 (source offset 16 B) and
// rank 0 receives chunk 1 from rank 2 (offset 8 B). Rank 1 applies one reduce of 2 elements
// at element offset 2 * 2 = 4 from scratch 0.
TEST(DevicePlan, ItemsAndSourceOffsetsOfARing) {
  const alg::Schedule s = alg::generate("ring", 3, alg::Options{});
  const PreparedCollective c = prepare(s, 24, lowering::DType::float32);
  ASSERT_EQ(c.device.size(), 3u);
  const DeviceRankPlan& r1 = c.device[1];
  ASSERT_EQ(r1.steps.size(), 4u);  // 2(n-1) rounds
  EXPECT_EQ(r1.step_at_round, (std::vector<int>{0, 1, 2, 3}));
  EXPECT_EQ(r1.steps[0].recv_source_offsets, (std::vector<std::uint64_t>{16}));
  EXPECT_EQ(c.device[0].steps[0].recv_source_offsets, (std::vector<std::uint64_t>{8}));
  ASSERT_EQ(r1.steps[0].waves.size(), 1u);
  EXPECT_EQ(r1.steps[0].waves[0], (ApplyWave{0, 1, 2}));
  const ApplyItem& item = r1.items[0];
  EXPECT_EQ(item.dst, 4u);  // chunk 2
  EXPECT_EQ(item.src, 0u);
  EXPECT_EQ(item.count, 2u);
  EXPECT_EQ(item.op, kApplyReduce);
  // Allgather rounds copy.
  EXPECT_EQ(r1.items[r1.steps[2].waves[0].first].op, kApplyCopy);
}

// Rank 2 receives four transfers in one round, in this order: chunk 0 from rank 0, chunk 0
// from rank 1 (overlaps the first), chunk 1 from rank 0 (overlaps neither), chunk 1 from rank
// 1 (overlaps the third). Waves: {0->2 c0, 0->2 c1}, then {1->2 c0, 1->2 c1}. Then rank 2
// sends the sums back: a correct AllReduce over 3 ranks with 2 chunks.
TEST(DevicePlan, OverlappingAppliesGoToLaterWaves) {
  alg::Schedule s = alg::Schedule::make(alg::Collective::allreduce, "star", 3, 2);
  alg::Round& in = s.add_round();
  in.add(0, 2, 0, 1, Op::reduce);
  in.add(1, 2, 0, 1, Op::reduce);
  in.add(0, 2, 1, 2, Op::reduce);
  in.add(1, 2, 1, 2, Op::reduce);
  alg::Round& out = s.add_round();
  out.add(2, 0, 0, 2, Op::copy);
  out.add(2, 1, 0, 2, Op::copy);
  // 2 chunks of 3 int32 elements.
  const PreparedCollective c = prepare(s, 24, lowering::DType::int32);
  const DeviceStep& step = c.device[2].steps[0];
  ASSERT_EQ(step.waves.size(), 2u);
  EXPECT_EQ(step.waves[0], (ApplyWave{0, 2, 3}));
  EXPECT_EQ(step.waves[1], (ApplyWave{2, 2, 3}));
  EXPECT_EQ(c.device[2].items[0].dst, 0u);  // 0->2 chunk 0
  EXPECT_EQ(c.device[2].items[1].dst, 3u);  // 0->2 chunk 1
  EXPECT_EQ(c.device[2].items[2].dst, 0u);  // 1->2 chunk 0
  const CheckReport r = emulate(c);
  EXPECT_TRUE(r.ok()) << r.to_string();
}

TEST(Phase1, DirectIsARingReduceScatterForEveryStraggler) {
  for (int n : {3, 4, 5, 8, 9}) {
    for (int straggler = 0; straggler < n; ++straggler) {
      alg::Options opts;
      opts.set("straggler", std::to_string(straggler));
      const alg::Schedule s = alg::generate("direct", n, opts);
      const RingReduceScatter rs = find_phase1_ring_reduce_scatter(s);
      EXPECT_EQ(rs.rounds, n - 2);
      ASSERT_EQ(rs.members.size(), static_cast<std::size_t>(n - 1));
      for (int m : rs.members) EXPECT_NE(m, straggler);

      // Replacing phase 1 (and poisoning the chunks it leaves unspecified) keeps the result.
      CollectiveSpec spec{"direct",
                          n,
                          opts,
                          4 * (2 * static_cast<std::uint64_t>(n - 1) + 1),
                          lowering::DType::float32,
                          Phase1::nccl_rs};
      const PreparedCollective c = prepare_collective(spec);
      EXPECT_EQ(c.label, "direct+nccl-rs");
      const CheckReport r = emulate(c);
      EXPECT_TRUE(r.ok()) << "n=" << n << " straggler=" << straggler << ": " << r.to_string();
    }
  }
}

// Direct with straggler n-1 uses members 0..n-2 in order: member i ends up owning chunk i.
TEST(Phase1, MembersAreInOwnershipOrder) {
  const RingReduceScatter rs =
      find_phase1_ring_reduce_scatter(alg::generate("direct", 5, alg::Options{}));
  EXPECT_EQ(rs.members, (std::vector<int>{0, 1, 2, 3}));
}

void expect_rejected(const alg::Schedule& s, const std::string& why) {
  try {
    find_phase1_ring_reduce_scatter(s);
    ADD_FAILURE() << "accepted; expected: " << why;
  } catch (const InputError& e) {
    EXPECT_NE(std::string(e.what()).find(why), std::string::npos) << e.what();
  }
}

TEST(Phase1, RejectsWhatNcclReduceScatterCannotReplace) {
  expect_rejected(alg::generate("ring", 4, alg::Options{}), "it names no straggler");

  alg::Schedule d = alg::generate("direct", 5, alg::Options{});
  alg::Schedule moved = d;
  moved.rounds[1].transfers[0].op = Op::copy;
  expect_rejected(moved, "round 1 differs from the ring's");

  alg::Schedule unlabelled = d;
  unlabelled.rounds[0].phase = "warm-up";
  expect_rejected(unlabelled, "round 0 is not labelled reduce-scatter");

  alg::Schedule shorter = d;
  shorter.rounds[2].phase = "allgather";  // direct n=5: phase 1 is rounds 0..2
  expect_rejected(shorter, "2 reduce-scatter rounds, a ring among 4 ranks has 3");

  alg::Schedule late = d;
  late.rounds.back().phase = "reduce-scatter";
  expect_rejected(late, "is labelled reduce-scatter after phase 1 ended");

  alg::Schedule with_straggler = d;
  with_straggler.rounds[0].transfers[0].dst = 4;
  expect_rejected(with_straggler, "round 0 involves the straggler");

  // A full ring allreduce among all n ranks: its reduce-scatter includes the "straggler".
  alg::Schedule all = alg::generate("ring", 5, alg::Options{});
  all.straggler = 4;
  expect_rejected(all, "4 reduce-scatter rounds, a ring among 4 ranks has 3");
}

// After phase 1 of direct over 4 ranks (members 0, 1, 2; member i owns chunk i), rank 0's
// chunk 1 is a ring partial sum; a schedule that sends it on uses a value NCCL does not give.
TEST(Phase1, RejectsSchedulesThatReadThePartialSums) {
  alg::Schedule s = alg::Schedule::make(alg::Collective::allreduce, "partial", 4, 3);
  s.straggler = 3;
  const std::vector<int> members = {0, 1, 2};
  alg::append_ring_reduce_scatter(s, members, 0);
  s.add_round("oops").add(0, 3, 1, 2, Op::copy);
  expect_rejected(s, "round 2 sends chunk 1 from rank 0");

  // Overwriting it with a copy first is fine as far as phase 1 is concerned; leaving any
  // partial sum in place to the end is not.
  alg::Schedule t = alg::Schedule::make(alg::Collective::allreduce, "leftover", 4, 3);
  t.straggler = 3;
  alg::append_ring_reduce_scatter(t, members, 0);
  t.add_round("fix").add(1, 0, 1, 2, Op::copy);
  expect_rejected(t, "rank 0 ends with chunk 2 as left by phase 1");
}

void expect_input_error(const CollectiveSpec& spec, const std::string& what) {
  try {
    prepare_collective(spec);
    ADD_FAILURE() << "no error; expected: " << what;
  } catch (const InputError& e) {
    EXPECT_NE(std::string(e.what()).find(what), std::string::npos) << e.what();
  }
}

TEST(PrepareCollective, BadInput) {
  expect_input_error({"bogus", 4, {}, 1024, lowering::DType::float32, Phase1::schedule},
                     "unknown algorithm 'bogus' (valid: ring, ");
  expect_input_error({"bogus", 4, {}, 1024, lowering::DType::float32, Phase1::schedule}, ", nccl)");
  // Ring over 4 ranks has 4 chunks: 8 B of float32 is 2 elements.
  expect_input_error({"ring", 4, {}, 8, lowering::DType::float32, Phase1::schedule},
                     "is too small for a schedule of 4 chunks");
  expect_input_error({"ring", 4, {}, 6, lowering::DType::float32, Phase1::schedule},
                     "not a whole number of float32 elements");
  alg::Options seg;
  seg.set("segments", "4");
  expect_input_error({"nccl", 4, seg, 1024, lowering::DType::float32, Phase1::schedule},
                     "takes no options");
  expect_input_error({"nccl", 4, {}, 1024, lowering::DType::float32, Phase1::nccl_rs},
                     "not to algorithm nccl");
  expect_input_error({"ring", 4, {}, 1024, lowering::DType::float32, Phase1::nccl_rs},
                     "it names no straggler");
}

// The nccl baseline: one chunk, no steps; the layout sizes the buffers and the check.
TEST(PrepareCollective, NcclBaselineIsOneChunkWithoutSteps) {
  const PreparedCollective c =
      prepare_collective({"nccl", 8, {}, 1000, lowering::DType::float64, Phase1::schedule});
  EXPECT_TRUE(c.nccl_allreduce);
  EXPECT_EQ(c.label, "nccl");
  EXPECT_EQ(c.plan.layout.count, 125u);
  EXPECT_EQ(c.plan.layout.padded_bytes(), 1000u);
  ASSERT_EQ(c.device.size(), 8u);
  for (const DeviceRankPlan& d : c.device) EXPECT_TRUE(d.steps.empty());
}

TEST(Names, TransportPhase1AndKernelTypes) {
  EXPECT_EQ(parse_transport("single-gpu"), Transport::single_gpu);
  EXPECT_EQ(to_string(Transport::nccl), "nccl");
  EXPECT_THROW(parse_transport("mpi"), InputError);
  EXPECT_EQ(parse_phase1("nccl-rs"), Phase1::nccl_rs);
  EXPECT_EQ(to_string(Phase1::schedule), "schedule");
  EXPECT_THROW(parse_phase1("rs"), InputError);
  // kernels.hpp: float32 0, float64 1, int32 2, int64 3.
  EXPECT_EQ(kernel_dtype(lowering::DType::float32), 0);
  EXPECT_EQ(kernel_dtype(lowering::DType::float64), 1);
  EXPECT_EQ(kernel_dtype(lowering::DType::int32), 2);
  EXPECT_EQ(kernel_dtype(lowering::DType::int64), 3);
}

}  // namespace
}  // namespace ssim::gpu
