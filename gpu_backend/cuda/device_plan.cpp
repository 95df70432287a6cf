#include "gpu_backend/cuda/device_plan.hpp"

#include <algorithm>
#include <map>
#include <tuple>

#include "algorithms/generators.hpp"
#include "common/error.hpp"
#include "gpu_backend/cuda/kernels.hpp"
#include "gpu_backend/host_executor.hpp"

namespace ssim::gpu {

std::string_view to_string(Phase1 phase1) {
  return phase1 == Phase1::schedule ? "schedule" : "nccl-rs";
}

Phase1 parse_phase1(std::string_view name) {
  if (name == "schedule") return Phase1::schedule;
  if (name == "nccl-rs") return Phase1::nccl_rs;
  throw InputError("unknown phase-1 mode '" + std::string(name) +
                   "' (expected schedule or nccl-rs)");
}

std::string_view to_string(Transport transport) {
  switch (transport) {
    case Transport::nccl:
      return "nccl";
    case Transport::single_gpu:
      return "single-gpu";
    case Transport::direct:
      return "direct";
  }
  return "?";
}

Transport parse_transport(std::string_view name) {
  if (name == "nccl") return Transport::nccl;
  if (name == "single-gpu") return Transport::single_gpu;
  if (name == "direct") return Transport::direct;
  throw InputError("unknown transport '" + std::string(name) +
                   "' (expected direct, single-gpu or nccl)");
}

std::string_view to_string(Launch launch) { return launch == Launch::graph ? "graph" : "eager"; }

Launch parse_launch(std::string_view name) {
  if (name == "graph") return Launch::graph;
  if (name == "eager") return Launch::eager;
  throw InputError("unknown launch mode '" + std::string(name) + "' (expected graph or eager)");
}

std::string_view to_string(CopyMode mode) { return mode == CopyMode::memcpy ? "memcpy" : "kernel"; }

CopyMode parse_copy_mode(std::string_view name) {
  if (name == "memcpy") return CopyMode::memcpy;
  if (name == "kernel") return CopyMode::kernel;
  throw InputError("unknown copy mode '" + std::string(name) + "' (expected memcpy or kernel)");
}

int kernel_dtype(lowering::DType dtype) {
  switch (dtype) {
    case lowering::DType::float32:
      return kDtypeFloat32;
    case lowering::DType::float64:
      return kDtypeFloat64;
    case lowering::DType::int32:
      return kDtypeInt32;
    case lowering::DType::int64:
      return kDtypeInt64;
    case lowering::DType::float16:
      return kDtypeFloat16;
    case lowering::DType::bfloat16:
      return kDtypeBfloat16;
  }
  SSIM_CHECK(false, "unknown dtype");
  return 0;
}

namespace {

bool overlaps(const ApplyItem& a, const ApplyItem& b) {
  return a.dst < b.dst + b.count && b.dst < a.dst + a.count;
}

std::uint64_t elements(std::uint64_t bytes, std::uint64_t elem, const char* what) {
  SSIM_CHECK(bytes % elem == 0, std::string(what) + " offset is not a whole number of elements");
  return bytes / elem;
}

}  // namespace

std::vector<DeviceRankPlan> build_device_plans(const lowering::Plan& plan) {
  const std::uint64_t elem = lowering::dtype_size(plan.layout.dtype);
  std::vector<DeviceRankPlan> out(plan.rank_plans.size());

  // Sender offsets in issue order per (round, src, dst), consumed by the receives in order.
  std::map<std::tuple<int, int, int>, std::vector<std::uint64_t>> sends;
  for (int r = 0; r < plan.ranks; ++r) {
    for (const lowering::Step& step : plan.rank_plans[static_cast<std::size_t>(r)].steps) {
      for (const lowering::P2P& s : step.sends) sends[{step.round, r, s.peer}].push_back(s.offset);
    }
  }
  std::map<std::tuple<int, int, int>, std::size_t> taken;

  // Per (round, rank): the byte ranges the rank's applies write in that round, to find
  // same-round conflicts (a receive whose source the sender overwrites in the same round).
  std::map<std::pair<int, int>, std::vector<std::pair<std::uint64_t, std::uint64_t>>> written;
  for (int r = 0; r < plan.ranks; ++r) {
    for (const lowering::Step& step : plan.rank_plans[static_cast<std::size_t>(r)].steps) {
      for (const lowering::Apply& a : step.applies)
        written[{step.round, r}].emplace_back(a.offset, a.offset + a.count * elem);
    }
  }
  auto overwritten = [&](int round, int rank, std::uint64_t begin, std::uint64_t end) {
    auto it = written.find({round, rank});
    if (it == written.end()) return false;
    for (const auto& [b, e] : it->second) {
      if (b < end && begin < e) return true;
    }
    return false;
  };

  for (int r = 0; r < plan.ranks; ++r) {
    const lowering::RankPlan& rp = plan.rank_plans[static_cast<std::size_t>(r)];
    DeviceRankPlan& dp = out[static_cast<std::size_t>(r)];
    dp.step_at_round.assign(static_cast<std::size_t>(plan.rounds), -1);
    for (const lowering::Step& step : rp.steps) {
      dp.step_at_round[static_cast<std::size_t>(step.round)] = static_cast<int>(dp.steps.size());
      DeviceStep ds;
      ds.round = step.round;
      std::vector<DirectSource> recv_sources;
      for (const lowering::P2P& v : step.recvs) {
        const auto key = std::make_tuple(step.round, v.peer, r);
        const std::size_t k = taken[key]++;
        auto it = sends.find(key);
        SSIM_CHECK(it != sends.end() && k < it->second.size(), "receive without a matching send");
        const std::uint64_t source = it->second[k];
        ds.recv_source_offsets.push_back(source);
        const std::uint64_t bytes = v.count * elem;
        const bool staged = overwritten(step.round, v.peer, source, source + bytes);
        if (staged) ds.staged.push_back(StagedCopy{v.peer, source, v.offset, bytes});
        recv_sources.push_back(DirectSource{v.peer, staged, staged ? v.offset : source});
        ds.senders.push_back(v.peer);
      }
      std::sort(ds.senders.begin(), ds.senders.end());
      ds.senders.erase(std::unique(ds.senders.begin(), ds.senders.end()), ds.senders.end());

      // Lowering pairs receive i with apply i (same scratch range); the direct transport
      // reads apply i's source where receive i would have come from.
      SSIM_CHECK(step.applies.size() == step.recvs.size(), "applies and receives differ");
      std::vector<ApplyItem> items;
      std::vector<DirectSource> item_sources;
      std::vector<int> wave_of;
      int waves = 0;
      for (std::size_t ai = 0; ai < step.applies.size(); ++ai) {
        const lowering::Apply& a = step.applies[ai];
        const lowering::P2P& v = step.recvs[ai];
        SSIM_CHECK(a.scratch_offset >= v.offset &&
                       a.scratch_offset + a.count * elem <= v.offset + v.count * elem,
                   "apply outside its receive's scratch range");
        DirectSource src = recv_sources[ai];
        src.offset += a.scratch_offset - v.offset;
        item_sources.push_back(src);
        const ApplyItem item{elements(a.offset, elem, "apply data"),
                             elements(a.scratch_offset, elem, "apply scratch"), a.count,
                             a.op == alg::Op::reduce ? kApplyReduce : kApplyCopy, 0};
        int wave = 0;
        for (std::size_t j = 0; j < items.size(); ++j) {
          if (overlaps(items[j], item)) wave = std::max(wave, wave_of[j] + 1);
        }
        items.push_back(item);
        wave_of.push_back(wave);
        waves = std::max(waves, wave + 1);
      }
      for (int w = 0; w < waves; ++w) {
        ApplyWave wave;
        wave.first = dp.items.size();
        for (std::size_t j = 0; j < items.size(); ++j) {
          if (wave_of[j] != w) continue;
          dp.items.push_back(items[j]);
          dp.sources.push_back(item_sources[j]);
          wave.max_count = std::max(wave.max_count, items[j].count);
        }
        wave.count = dp.items.size() - wave.first;
        ds.waves.push_back(wave);
      }
      dp.steps.push_back(std::move(ds));
    }
  }
  // Who stages from whom: the sender's kernel of that round waits for those copies.
  for (int r = 0; r < plan.ranks; ++r) {
    for (const DeviceStep& ds : out[static_cast<std::size_t>(r)].steps) {
      for (const StagedCopy& c : ds.staged) {
        DeviceRankPlan& sender = out[static_cast<std::size_t>(c.rank)];
        const int idx = sender.step_at_round[static_cast<std::size_t>(ds.round)];
        SSIM_CHECK(idx >= 0, "a staged receive from a rank without a step in that round");
        std::vector<int>& st = sender.steps[static_cast<std::size_t>(idx)].stagers;
        if (std::find(st.begin(), st.end(), r) == st.end()) st.push_back(r);
      }
    }
  }
  for (DeviceRankPlan& dp : out) {
    for (DeviceStep& ds : dp.steps) std::sort(ds.stagers.begin(), ds.stagers.end());
  }
  return out;
}

std::vector<SameRoundConflict> same_round_conflicts(const std::vector<DeviceRankPlan>& plans) {
  std::vector<SameRoundConflict> out;
  for (std::size_t r = 0; r < plans.size(); ++r) {
    for (const DeviceStep& ds : plans[r].steps) {
      for (const StagedCopy& c : ds.staged) {
        const SameRoundConflict x{ds.round, c.rank, static_cast<int>(r)};
        if (std::find(out.begin(), out.end(), x) == out.end()) out.push_back(x);
      }
    }
  }
  std::sort(out.begin(), out.end(), [](const SameRoundConflict& a, const SameRoundConflict& b) {
    return std::tie(a.round, a.sender, a.receiver) < std::tie(b.round, b.sender, b.receiver);
  });
  return out;
}

namespace {

std::vector<alg::Transfer> sorted(std::vector<alg::Transfer> t) {
  std::sort(t.begin(), t.end(), [](const alg::Transfer& a, const alg::Transfer& b) {
    return std::tie(a.src, a.dst, a.chunk_begin, a.chunk_end, a.op) <
           std::tie(b.src, b.dst, b.chunk_begin, b.chunk_end, b.op);
  });
  return t;
}

// Rejects schedules that would compute something else once the ring's partial sums are
// replaced by whatever ncclReduceScatter leaves in the chunks a member does not own.
void check_partial_sums_unused(const alg::Schedule& s, const RingReduceScatter& rs) {
  const int m = static_cast<int>(rs.members.size());
  std::vector<std::vector<bool>> partial(static_cast<std::size_t>(s.ranks),
                                         std::vector<bool>(static_cast<std::size_t>(s.chunks)));
  for (int i = 0; i < m; ++i) {
    for (int c = 0; c < m; ++c) {
      if (c != i)
        partial[static_cast<std::size_t>(rs.members[i])][static_cast<std::size_t>(c)] = true;
    }
  }
  auto fail = [](const std::string& what) {
    throw InputError("--phase1 nccl-rs: " + what +
                     "; the schedule uses the ring's partial sums, which ncclReduceScatter does "
                     "not produce (use --phase1 schedule)");
  };
  for (std::size_t ri = static_cast<std::size_t>(rs.rounds); ri < s.rounds.size(); ++ri) {
    const auto& transfers = s.rounds[ri].transfers;
    for (const alg::Transfer& t : transfers) {
      for (int c = t.chunk_begin; c < t.chunk_end; ++c) {
        if (partial[static_cast<std::size_t>(t.src)][static_cast<std::size_t>(c)]) {
          fail("round " + std::to_string(ri) + " sends chunk " + std::to_string(c) + " from rank " +
               std::to_string(t.src));
        }
      }
    }
    for (const alg::Transfer& t : transfers) {
      if (t.op != alg::Op::copy) continue;
      for (int c = t.chunk_begin; c < t.chunk_end; ++c)
        partial[static_cast<std::size_t>(t.dst)][static_cast<std::size_t>(c)] = false;
    }
  }
  for (int r = 0; r < s.ranks; ++r) {
    for (int c = 0; c < s.chunks; ++c) {
      if (partial[static_cast<std::size_t>(r)][static_cast<std::size_t>(c)]) {
        fail("rank " + std::to_string(r) + " ends with chunk " + std::to_string(c) +
             " as left by phase 1");
      }
    }
  }
}

}  // namespace

RingReduceScatter find_phase1_ring_reduce_scatter(const alg::Schedule& s) {
  const std::string name = s.algorithm.empty() ? "the schedule" : "'" + s.algorithm + "'";
  auto fail = [&](const std::string& why) -> void {
    throw InputError(
        "--phase1 nccl-rs needs a straggler-aware schedule whose first rounds, "
        "labelled reduce-scatter, are a ring reduce-scatter among the n-1 "
        "non-stragglers over chunks 0..n-2; " +
        name + ": " + why);
  };
  if (!s.straggler) fail("it names no straggler");
  const int n = s.ranks;
  const int m = n - 1;
  const int straggler = *s.straggler;

  RingReduceScatter rs;
  while (static_cast<std::size_t>(rs.rounds) < s.rounds.size() &&
         s.rounds[static_cast<std::size_t>(rs.rounds)].phase == "reduce-scatter") {
    ++rs.rounds;
  }
  if (rs.rounds == 0) fail("round 0 is not labelled reduce-scatter");
  for (std::size_t ri = static_cast<std::size_t>(rs.rounds); ri < s.rounds.size(); ++ri) {
    if (s.rounds[ri].phase == "reduce-scatter")
      fail("round " + std::to_string(ri) + " is labelled reduce-scatter after phase 1 ended");
  }
  if (rs.rounds != m - 1) {
    fail(std::to_string(rs.rounds) + " reduce-scatter rounds, a ring among " + std::to_string(m) +
         " ranks has " + std::to_string(m - 1));
  }
  if (s.chunks < m) fail(std::to_string(s.chunks) + " chunks, fewer than n-1");

  // Round 0 of the ring: members[i] sends chunk i-1 (mod m) to members[i+1].
  rs.members.assign(static_cast<std::size_t>(m), -1);
  for (const alg::Transfer& t : s.rounds[0].transfers) {
    if (t.src == straggler || t.dst == straggler) fail("round 0 involves the straggler");
    if (t.chunk_begin < 0 || t.chunk_begin >= m) fail("round 0 sends a chunk outside 0..n-2");
    int& slot = rs.members[static_cast<std::size_t>((t.chunk_begin + 1) % m)];
    if (slot != -1) fail("round 0 sends chunk " + std::to_string(t.chunk_begin) + " twice");
    slot = t.src;
  }
  std::vector<int> seen = rs.members;
  std::sort(seen.begin(), seen.end());
  std::vector<int> expected;
  for (int r = 0; r < n; ++r) {
    if (r != straggler) expected.push_back(r);
  }
  if (seen != expected) fail("round 0 is not one send from each non-straggler");

  alg::Schedule ref = alg::Schedule::make(s.collective, s.algorithm, n, s.chunks);
  alg::append_ring_reduce_scatter(ref, rs.members, 0);
  for (int ri = 0; ri < rs.rounds; ++ri) {
    const auto k = static_cast<std::size_t>(ri);
    if (sorted(s.rounds[k].transfers) != sorted(ref.rounds[k].transfers))
      fail("round " + std::to_string(ri) + " differs from the ring's");
  }
  check_partial_sums_unused(s, rs);
  return rs;
}

PreparedCollective prepare_collective(const CollectiveSpec& spec) {
  PreparedCollective out;
  // The check's sums are exact in the dtype only up to a rank count (bfloat16: 128); beyond,
  // value_modulus is an InputError naming the limit, before any plan or device work.
  const auto check_rank_limit = [&] { static_cast<void>(value_modulus(spec.dtype, spec.ranks)); };
  if (spec.algorithm == kNcclAlgorithm) {
    if (!spec.options.values().empty())
      throw InputError("algorithm nccl (ncclAllReduce) takes no options");
    if (spec.phase1 != Phase1::schedule)
      throw InputError("--phase1 nccl-rs applies to schedules, not to algorithm nccl");
    if (spec.ranks < 1) throw InputError("--ranks must be >= 1, got " + std::to_string(spec.ranks));
    out.label = std::string(kNcclAlgorithm);
    out.nccl_allreduce = true;
    check_rank_limit();
    const alg::Schedule none =
        alg::Schedule::make(alg::Collective::allreduce, out.label, spec.ranks, 1);
    out.plan = lowering::lower(none, spec.bytes, spec.dtype);
    out.device = build_device_plans(out.plan);
    return out;
  }

  bool known = false;
  std::string names;
  for (const alg::AlgorithmInfo& a : alg::algorithms()) {
    known = known || a.name == spec.algorithm;
    names += a.name + ", ";
  }
  if (!known) {
    throw InputError("unknown algorithm '" + spec.algorithm + "' (valid: " + names +
                     std::string(kNcclAlgorithm) + ")");
  }
  const alg::Schedule schedule = alg::generate(spec.algorithm, spec.ranks, spec.options);
  check_rank_limit();
  out.label = schedule.algorithm;
  if (spec.phase1 == Phase1::nccl_rs) {
    out.phase1 = find_phase1_ring_reduce_scatter(schedule);
    out.label += "+nccl-rs";
  }
  out.plan = lowering::lower(schedule, spec.bytes, spec.dtype);
  out.device = build_device_plans(out.plan);
  return out;
}

}  // namespace ssim::gpu
