#include "algorithms/verifier.hpp"

#include <algorithm>
#include <bit>
#include <sstream>

#include "common/error.hpp"

namespace ssim::alg {
namespace {

std::string describe(const Transfer& t) {
  std::ostringstream os;
  os << t.src << " -> " << t.dst << ", chunks [" << t.chunk_begin << ", " << t.chunk_end << "), "
     << to_string(t.op);
  return os.str();
}

std::string list_ranks(const std::vector<int>& ranks) {
  std::ostringstream os;
  const std::size_t shown = std::min<std::size_t>(ranks.size(), 8);
  for (std::size_t i = 0; i < shown; ++i) os << (i ? ", " : "") << ranks[i];
  if (ranks.size() > shown) os << " and " << ranks.size() - shown << " more";
  return os.str();
}

struct PendingWrite {
  int dst;
  int chunk;
  int src;
  int transfer;
  Op op;
};

}  // namespace

std::string VerifyError::to_string() const {
  std::ostringstream os;
  if (round >= 0) {
    os << "round " << round;
    if (transfer >= 0) os << ", transfer " << transfer;
    os << ": ";
  }
  os << message;
  return os.str();
}

int chunk_owner(int chunk, int ranks, int chunks) {
  return static_cast<int>(static_cast<std::int64_t>(chunk) * ranks / chunks);
}

double symbolic_state_bytes(int ranks, int chunks) {
  return static_cast<double>(ranks) * static_cast<double>(chunks) *
         static_cast<double>((ranks + 63) / 64) * 8.0;
}

SymbolicState::SymbolicState(Collective collective, int ranks, int chunks)
    : ranks_(ranks), chunks_(chunks), words_((ranks + 63) / 64) {
  SSIM_CHECK(ranks > 0 && chunks > 0, "symbolic state needs ranks and chunks");
  // ranks * chunks * words wraps 64 bits for inputs the schedule reader accepts (2^24 ranks,
  // 2^22 chunks); the product is checked in doubles before anything is allocated.
  if (const double bytes = symbolic_state_bytes(ranks, chunks); bytes > kMaxSymbolicStateBytes) {
    std::ostringstream os;
    os << "verifying " << ranks << " ranks x " << chunks << " chunks needs " << bytes / 0x1p40
       << " TiB of symbolic state (a bit per rank, chunk and contributor); use fewer ranks or "
          "chunks";
    throw ResourceError(os.str());
  }
  bits_.assign(static_cast<std::size_t>(ranks) * chunks * words_, 0);
  for (int r = 0; r < ranks; ++r) {
    for (int c = 0; c < chunks; ++c) {
      std::uint64_t* s = set(r, c);
      if (collective == Collective::allgather) {
        if (chunk_owner(c, ranks, chunks) == r) {
          for (int w = 0; w < ranks; ++w) s[w / 64] |= std::uint64_t{1} << (w % 64);
        }
      } else {
        s[r / 64] |= std::uint64_t{1} << (r % 64);
      }
    }
  }
}

bool SymbolicState::has(int rank, int chunk, int contributor) const {
  return (set(rank, chunk)[contributor / 64] >> (contributor % 64)) & 1u;
}

int SymbolicState::count(int rank, int chunk) const {
  const std::uint64_t* s = set(rank, chunk);
  int total = 0;
  for (int w = 0; w < words_; ++w) total += std::popcount(s[w]);
  return total;
}

std::vector<int> SymbolicState::missing(int rank, int chunk) const {
  std::vector<int> out;
  for (int k = 0; k < ranks_; ++k) {
    if (!has(rank, chunk, k)) out.push_back(k);
  }
  return out;
}

std::optional<VerifyError> SymbolicState::apply(const Round& round, int round_index) {
  std::vector<PendingWrite> writes;
  for (std::size_t i = 0; i < round.transfers.size(); ++i) {
    const Transfer& t = round.transfers[i];
    const int ti = static_cast<int>(i);
    auto fail = [&](const std::string& what) {
      std::string message = "(";  // appended: GCC 12 warns (-Wrestrict) on "(" + std::string&&
      message.append(describe(t)).append(") ").append(what);
      return VerifyError{round_index, ti, message};
    };
    if (t.src < 0 || t.src >= ranks_) return fail("source rank out of range [0, " + std::to_string(ranks_) + ")");
    if (t.dst < 0 || t.dst >= ranks_) return fail("destination rank out of range [0, " + std::to_string(ranks_) + ")");
    if (t.src == t.dst) return fail("source and destination are the same rank");
    if (t.chunk_begin >= t.chunk_end) return fail("empty chunk range");
    if (t.chunk_begin < 0 || t.chunk_end > chunks_) {
      return fail("chunk range outside [0, " + std::to_string(chunks_) + ")");
    }
    for (int c = t.chunk_begin; c < t.chunk_end; ++c) {
      if (count(t.src, c) == 0) {
        return fail("rank " + std::to_string(t.src) + " sends chunk " + std::to_string(c) +
                    " but holds no data for it");
      }
      writes.push_back(PendingWrite{t.dst, c, t.src, ti, t.op});
    }
  }
  std::stable_sort(writes.begin(), writes.end(), [](const PendingWrite& a, const PendingWrite& b) {
    return a.dst != b.dst ? a.dst < b.dst : a.chunk < b.chunk;
  });

  // New values are computed from the round-start state and committed only at the end.
  std::vector<std::uint64_t> results;
  std::vector<std::pair<int, int>> targets;
  std::vector<std::uint64_t> acc(words_);
  for (std::size_t g = 0; g < writes.size();) {
    std::size_t end = g;
    while (end < writes.size() && writes[end].dst == writes[g].dst && writes[end].chunk == writes[g].chunk) ++end;
    const int dst = writes[g].dst;
    const int chunk = writes[g].chunk;
    const bool any_copy = std::any_of(writes.begin() + g, writes.begin() + end,
                                      [](const PendingWrite& w) { return w.op == Op::copy; });
    if (any_copy && end - g > 1) {
      const PendingWrite& second = writes[g + 1];
      return VerifyError{round_index, second.transfer,
                         "conflicting writes: rank " + std::to_string(dst) + " receives chunk " +
                             std::to_string(chunk) + " more than once in this round and one is a copy "
                             "(also written by transfer " + std::to_string(writes[g].transfer) + ")"};
    }
    if (any_copy) {
      const std::uint64_t* s = set(writes[g].src, chunk);
      acc.assign(s, s + words_);
    } else {
      const std::uint64_t* d = set(dst, chunk);
      acc.assign(d, d + words_);
      for (std::size_t k = g; k < end; ++k) {
        const std::uint64_t* s = set(writes[k].src, chunk);
        for (int w = 0; w < words_; ++w) {
          if (const std::uint64_t overlap = acc[w] & s[w]) {
            const int who = w * 64 + std::countr_zero(overlap);
            return VerifyError{round_index, writes[k].transfer,
                               "double count: reducing chunk " + std::to_string(chunk) + " from rank " +
                                   std::to_string(writes[k].src) + " into rank " + std::to_string(dst) +
                                   " adds the contribution of rank " + std::to_string(who) + " twice"};
          }
          acc[w] |= s[w];
        }
      }
    }
    results.insert(results.end(), acc.begin(), acc.end());
    targets.emplace_back(dst, chunk);
    g = end;
  }
  for (std::size_t k = 0; k < targets.size(); ++k) {
    std::copy_n(results.begin() + static_cast<std::ptrdiff_t>(k * words_), words_,
                set(targets[k].first, targets[k].second));
  }
  return std::nullopt;
}

VerifyResult verify(const Schedule& schedule) {
  VerifyResult result;
  ScheduleSummary& sum = result.summary;
  sum.ranks = schedule.ranks;
  sum.chunks = schedule.chunks;
  sum.rounds = static_cast<int>(schedule.rounds.size());
  sum.transfers = schedule.transfer_count();
  if (schedule.ranks < 1) {
    result.error = VerifyError{-1, -1, "ranks must be >= 1, got " + std::to_string(schedule.ranks)};
    return result;
  }
  if (schedule.chunks < 1) {
    result.error = VerifyError{-1, -1, "chunks must be >= 1, got " + std::to_string(schedule.chunks)};
    return result;
  }
  if (schedule.straggler && (*schedule.straggler < 0 || *schedule.straggler >= schedule.ranks)) {
    result.error = VerifyError{-1, -1, "straggler " + std::to_string(*schedule.straggler) +
                                           " out of range [0, " + std::to_string(schedule.ranks) + ")"};
    return result;
  }
  sum.chunks_sent.assign(schedule.ranks, 0);
  sum.chunks_received.assign(schedule.ranks, 0);

  SymbolicState state(schedule.collective, schedule.ranks, schedule.chunks);
  std::vector<int> sends(schedule.ranks, 0);
  std::vector<int> receives(schedule.ranks, 0);
  for (std::size_t ri = 0; ri < schedule.rounds.size(); ++ri) {
    const Round& round = schedule.rounds[ri];
    if (auto err = state.apply(round, static_cast<int>(ri))) {
      result.error = std::move(err);
      return result;
    }
    if (sum.phases.empty() || sum.phases.back().first != round.phase) sum.phases.emplace_back(round.phase, 0);
    ++sum.phases.back().second;
    for (const Transfer& t : round.transfers) {
      sum.max_sends_per_rank_round = std::max(sum.max_sends_per_rank_round, ++sends[t.src]);
      sum.max_receives_per_rank_round = std::max(sum.max_receives_per_rank_round, ++receives[t.dst]);
      sum.chunks_sent[t.src] += t.chunk_count();
      sum.chunks_received[t.dst] += t.chunk_count();
    }
    for (const Transfer& t : round.transfers) sends[t.src] = receives[t.dst] = 0;
  }

  for (int c = 0; c < schedule.chunks; ++c) {
    for (int r = 0; r < schedule.ranks; ++r) {
      if (schedule.collective == Collective::reduce_scatter && chunk_owner(c, schedule.ranks, schedule.chunks) != r) {
        continue;
      }
      if (!state.complete(r, c)) {
        result.error = VerifyError{-1, -1, "at the end rank " + std::to_string(r) + " holds chunk " +
                                               std::to_string(c) + " without the contributions of ranks " +
                                               list_ranks(state.missing(r, c))};
        return result;
      }
    }
  }
  return result;
}

std::string format_summary(const ScheduleSummary& s) {
  std::ostringstream os;
  os << "ranks: " << s.ranks << "\nchunks: " << s.chunks << "\nrounds: " << s.rounds
     << "\ntransfers: " << s.transfers << "\nmax sends per rank in one round: " << s.max_sends_per_rank_round
     << "\nmax receives per rank in one round: " << s.max_receives_per_rank_round;
  if (!s.chunks_sent.empty()) {
    auto [lo, hi] = std::minmax_element(s.chunks_sent.begin(), s.chunks_sent.end());
    std::int64_t total = 0;
    for (auto v : s.chunks_sent) total += v;
    os << "\nchunks sent per rank: min " << *lo << " (rank " << lo - s.chunks_sent.begin() << "), max " << *hi
       << " (rank " << hi - s.chunks_sent.begin() << "), total " << total;
  }
  if (!s.phases.empty()) {
    os << "\nphases:";
    for (const auto& [name, count] : s.phases) os << " " << (name.empty() ? "(unlabelled)" : name) << " x" << count;
  }
  os << "\n";
  return os.str();
}

}  // namespace ssim::alg
