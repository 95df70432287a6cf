#include "lowering/plan.hpp"

#include <algorithm>
#include <map>
#include <sstream>
#include <tuple>

#include "common/error.hpp"

namespace ssim::lowering {

std::string_view to_string(DType dtype) {
  switch (dtype) {
    case DType::float32:
      return "float32";
    case DType::float64:
      return "float64";
    case DType::int32:
      return "int32";
    case DType::int64:
      return "int64";
    case DType::float16:
      return "float16";
    case DType::bfloat16:
      return "bfloat16";
  }
  return "?";
}

DType parse_dtype(std::string_view name) {
  if (name == "float32" || name == "float") return DType::float32;
  if (name == "float64" || name == "double") return DType::float64;
  if (name == "int32" || name == "int") return DType::int32;
  if (name == "int64") return DType::int64;
  if (name == "float16" || name == "half" || name == "fp16") return DType::float16;
  if (name == "bfloat16" || name == "bf16") return DType::bfloat16;
  throw InputError("unknown data type '" + std::string(name) +
                   "' (expected float32 (float), float64 (double), int32 (int), int64, float16 "
                   "(half, fp16) or bfloat16 (bf16))");
}

std::size_t dtype_size(DType dtype) {
  switch (dtype) {
    case DType::float32:
      return 4;
    case DType::int32:
      return 4;
    case DType::float64:
      return 8;
    case DType::int64:
      return 8;
    case DType::float16:
    case DType::bfloat16:
      return 2;
  }
  return 0;
}

void check_align(std::uint64_t align, DType dtype) {
  const std::uint64_t size = dtype_size(dtype);
  if (align == 0 || (align & (align - 1)) != 0 || align < size) {
    throw InputError("alignment " + std::to_string(align) +
                     " B must be a power of two and at least the " + std::string(to_string(dtype)) +
                     " element size (" + std::to_string(size) + " B)");
  }
  if (align > kMaxAlign) {
    throw InputError("alignment " + std::to_string(align) + " B is above the largest, " +
                     std::to_string(kMaxAlign) + " B (every chunk is padded to a multiple of it)");
  }
}

BufferLayout make_layout(std::uint64_t bytes, int chunks, DType dtype, std::uint64_t align) {
  if (chunks < 1)
    throw InputError("a schedule needs at least 1 chunk, got " + std::to_string(chunks));
  check_align(align, dtype);
  const std::uint64_t size = dtype_size(dtype);
  const std::string type(to_string(dtype));
  if (bytes % size != 0) {
    throw InputError("size " + std::to_string(bytes) + " B is not a whole number of " + type +
                     " elements (" + std::to_string(size) + " B each)");
  }
  const std::uint64_t count = bytes / size;
  const auto n = static_cast<std::uint64_t>(chunks);
  if (count < n) {
    throw InputError("size " + std::to_string(bytes) + " B (" + std::to_string(count) + " " + type +
                     " elements) is too small for a schedule of " + std::to_string(chunks) +
                     " chunks: need at least one element per chunk (" + std::to_string(n * size) +
                     " B)");
  }
  std::uint64_t chunk_count = count;
  if (chunks > 1) {
    const std::uint64_t step = align / size;  // elements per alignment unit, a power of two
    chunk_count = (count + n - 1) / n;
    chunk_count = (chunk_count + step - 1) / step * step;
  }
  return BufferLayout{dtype, chunks, align, bytes, count, chunk_count};
}

std::uint64_t padded_bytes(std::uint64_t bytes, int chunks, DType dtype, std::uint64_t align) {
  return make_layout(bytes, chunks, dtype, align).padded_bytes();
}

namespace {

void check_structure(const alg::Schedule& s) {
  if (s.ranks < 1)
    throw InputError("schedule has " + std::to_string(s.ranks) + " ranks (need >= 1)");
  for (std::size_t ri = 0; ri < s.rounds.size(); ++ri) {
    if (!s.rounds[ri].switch_reduces.empty()) {
      throw InputError(
          "schedule round " + std::to_string(ri) +
          ": in-network reductions (switch_reduces) cannot be lowered to "
          "point-to-point plans (on NVLS-capable GPUs they would be multimem.ld_reduce "
          "and multimem.st on a multicast buffer, which the executors do not implement)");
    }
    const auto& transfers = s.rounds[ri].transfers;
    for (std::size_t ti = 0; ti < transfers.size(); ++ti) {
      const alg::Transfer& t = transfers[ti];
      auto fail = [&](const std::string& what) {
        throw InputError("schedule round " + std::to_string(ri) + ", transfer " +
                         std::to_string(ti) + ": " + what);
      };
      const std::string range = "[0, " + std::to_string(s.ranks) + ")";
      if (t.src < 0 || t.src >= s.ranks)
        fail("source rank " + std::to_string(t.src) + " outside " + range);
      if (t.dst < 0 || t.dst >= s.ranks)
        fail("destination rank " + std::to_string(t.dst) + " outside " + range);
      if (t.src == t.dst) fail("source and destination are both rank " + std::to_string(t.src));
      if (t.chunk_begin < 0 || t.chunk_begin >= t.chunk_end || t.chunk_end > s.chunks) {
        fail("chunk range [" + std::to_string(t.chunk_begin) + ", " + std::to_string(t.chunk_end) +
             ") is empty or outside [0, " + std::to_string(s.chunks) + ")");
      }
    }
  }
}

}  // namespace

Plan lower(const alg::Schedule& schedule, std::uint64_t bytes, DType dtype, std::uint64_t align) {
  check_structure(schedule);
  Plan plan;
  plan.collective = schedule.collective;
  plan.algorithm = schedule.algorithm;
  plan.ranks = schedule.ranks;
  plan.rounds = static_cast<int>(schedule.rounds.size());
  plan.layout = make_layout(bytes, schedule.chunks, dtype, align);
  plan.rank_plans.resize(static_cast<std::size_t>(schedule.ranks));
  const BufferLayout& layout = plan.layout;
  const std::uint64_t elem = dtype_size(dtype);

  // The step a rank is filling for the current round, created on its first transfer.
  std::vector<Step*> current(plan.rank_plans.size());
  for (int ri = 0; ri < plan.rounds; ++ri) {
    std::fill(current.begin(), current.end(), nullptr);
    auto step_of = [&](int rank) -> Step& {
      Step*& step = current[static_cast<std::size_t>(rank)];
      if (!step) {
        auto& steps = plan.rank_plans[static_cast<std::size_t>(rank)].steps;
        steps.push_back(Step{});
        step = &steps.back();
        step->round = ri;
      }
      return *step;
    };
    for (const alg::Transfer& t : schedule.rounds[static_cast<std::size_t>(ri)].transfers) {
      const std::uint64_t offset = layout.chunk_offset_bytes(t.chunk_begin);
      const std::uint64_t count = layout.chunk_count * static_cast<std::uint64_t>(t.chunk_count());
      step_of(t.src).sends.push_back(P2P{t.dst, offset, count});
      Step& recv = step_of(t.dst);
      recv.recvs.push_back(P2P{t.src, recv.scratch_bytes, count});
      recv.applies.push_back(Apply{t.op, offset, recv.scratch_bytes, count});
      // Each receive starts on an `align` boundary of scratch; whole chunk ranges already end on
      // one except a one-chunk schedule's (its chunk is not rounded up), e.g. oneshot's n-1
      // full-buffer receives in one round.
      recv.scratch_bytes += (count * elem + align - 1) / align * align;
    }
  }
  for (RankPlan& rp : plan.rank_plans) {
    for (const Step& step : rp.steps)
      rp.scratch_bytes = std::max(rp.scratch_bytes, step.scratch_bytes);
  }
  check_matching(plan);
  return plan;
}

void check_matching(const Plan& plan) {
  // (round, src, dst) -> counts in issue order, once as the senders see it, once as the receivers
  // do.
  using Key = std::tuple<int, int, int>;
  std::map<Key, std::vector<std::uint64_t>> sent;
  std::map<Key, std::vector<std::uint64_t>> received;
  for (int r = 0; r < plan.ranks; ++r) {
    int last_round = -1;
    for (const Step& step : plan.rank_plans[static_cast<std::size_t>(r)].steps) {
      SSIM_CHECK(step.round > last_round && step.round < plan.rounds,
                 "rank " + std::to_string(r) + ": steps must be in increasing round order");
      last_round = step.round;
      SSIM_CHECK(step.recvs.size() == step.applies.size(), "rank " + std::to_string(r) + " round " +
                                                               std::to_string(step.round) +
                                                               ": one apply per receive");
      for (const P2P& s : step.sends) sent[{step.round, r, s.peer}].push_back(s.count);
      for (const P2P& v : step.recvs) received[{step.round, v.peer, r}].push_back(v.count);
    }
  }
  auto describe = [](const Key& k) {
    return "round " + std::to_string(std::get<0>(k)) + ", rank " + std::to_string(std::get<1>(k)) +
           " -> rank " + std::to_string(std::get<2>(k));
  };
  for (const auto& [key, counts] : sent) {
    auto it = received.find(key);
    SSIM_CHECK(it != received.end(), describe(key) + ": sends without a matching receive");
    SSIM_CHECK(it->second == counts, describe(key) + ": send and receive counts differ");
  }
  for (const auto& [key, counts] : received) {
    SSIM_CHECK(sent.count(key) == 1, describe(key) + ": receives without a matching send");
  }
}

PlanSummary summarize(const Plan& plan) {
  PlanSummary out;
  const std::uint64_t elem = dtype_size(plan.layout.dtype);
  for (const RankPlan& rp : plan.rank_plans) {
    RankSummary rs;
    rs.groups = static_cast<int>(rp.steps.size());
    rs.scratch_bytes = rp.scratch_bytes;
    for (const Step& step : rp.steps) {
      rs.sends += static_cast<int>(step.sends.size());
      rs.recvs += static_cast<int>(step.recvs.size());
      for (const P2P& s : step.sends) rs.bytes_sent += s.count * elem;
      for (const P2P& v : step.recvs) rs.bytes_received += v.count * elem;
    }
    out.total_bytes_sent += rs.bytes_sent;
    out.max_scratch_bytes = std::max(out.max_scratch_bytes, rs.scratch_bytes);
    out.max_groups = std::max(out.max_groups, rs.groups);
    out.ranks.push_back(rs);
  }
  return out;
}

std::string format_summary(const Plan& plan, const PlanSummary& summary) {
  const BufferLayout& l = plan.layout;
  std::ostringstream os;
  os << "plan " << (plan.algorithm.empty() ? "(unnamed)" : plan.algorithm) << ": " << plan.ranks
     << " ranks, " << plan.rounds << " rounds, " << l.chunks << " chunks of " << l.chunk_count
     << " " << to_string(l.dtype) << " elements; " << l.bytes << " B per rank padded to "
     << l.padded_bytes() << " B (chunks aligned to " << l.align << " B); "
     << summary.total_bytes_sent << " B sent in all, max scratch " << summary.max_scratch_bytes
     << " B\n";
  for (std::size_t r = 0; r < summary.ranks.size(); ++r) {
    const RankSummary& s = summary.ranks[r];
    os << "  rank " << r << ": " << s.groups << " groups, " << s.sends << " sends (" << s.bytes_sent
       << " B), " << s.recvs << " receives (" << s.bytes_received << " B), scratch "
       << s.scratch_bytes << " B\n";
  }
  return os.str();
}

AlignmentCount count_aligned(const Plan& plan, std::uint64_t boundary) {
  SSIM_CHECK(boundary > 0, "alignment boundary must be > 0");
  AlignmentCount c;
  auto on = [boundary](std::uint64_t offset) { return offset % boundary == 0 ? 1u : 0u; };
  for (const RankPlan& rp : plan.rank_plans) {
    for (const Step& step : rp.steps) {
      for (const P2P& s : step.sends) {
        ++c.sends;
        c.sends_aligned += on(s.offset);
      }
      for (const P2P& v : step.recvs) {
        ++c.recvs;
        c.recvs_aligned += on(v.offset);
      }
      for (const Apply& a : step.applies) {
        ++c.applies;
        c.applies_aligned += on(a.offset) & on(a.scratch_offset);
      }
    }
  }
  return c;
}

}  // namespace ssim::lowering
