#include "algorithms/verifier.hpp"

#include <algorithm>
#include <iterator>
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

std::string describe(const SwitchReduce& g) {
  std::ostringstream os;
  os << "switch reduction of ranks {" << list_ranks(g.members) << "} to {"
     << list_ranks(g.receivers) << "}, chunks [" << g.chunk_begin << ", " << g.chunk_end << ")";
  return os.str();
}

// "transfer 3" or, for the writes of in-network reductions (negative ids), "switch reduction 0".
std::string writer_name(int id) {
  return id >= 0 ? "transfer " + std::to_string(id) : "switch reduction " + std::to_string(-id - 1);
}

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
  return static_cast<double>(ranks) * static_cast<double>(chunks) * 8.0;
}

SymbolicState::SymbolicState(Collective collective, int ranks, int chunks) : ranks_(ranks), chunks_(chunks) {
  SSIM_CHECK(ranks > 0 && chunks > 0, "symbolic state needs ranks and chunks");
  // Checked in doubles before anything is allocated: the schedule reader accepts 2^24 ranks and
  // 2^22 chunks, whose product of cells would not fit a machine.
  if (const double bytes = symbolic_state_bytes(ranks, chunks); bytes > kMaxSymbolicStateBytes) {
    std::ostringstream os;
    os << "verifying " << ranks << " ranks x " << chunks << " chunks needs " << bytes / 0x1p40
       << " TiB of symbolic state (8 bytes per rank and chunk); use fewer ranks or chunks";
    throw ResourceError(os.str());
  }
  cells_.resize(static_cast<std::size_t>(ranks) * static_cast<std::size_t>(chunks));
  for (int r = 0; r < ranks; ++r) {
    for (int c = 0; c < chunks; ++c) {
      if (collective == Collective::allgather) {
        cell(r, c) = chunk_owner(c, ranks, chunks) == r ? run(0, ranks) : run(0, 0);
      } else {
        cell(r, c) = run(r, 1);
      }
    }
  }
}

SymbolicState::Cell SymbolicState::run(std::int64_t start, std::int64_t length) const {
  if (length <= 0) return 0;
  if (length >= ranks_) return static_cast<Cell>(ranks_);  // the full set, start 0
  return (static_cast<Cell>(start % ranks_) << 32) | static_cast<Cell>(length);
}

void SymbolicState::intervals(Cell c, std::vector<Interval>& out) const {
  out.clear();
  if (c & kPooled) {
    const std::vector<Interval>& iv = pool_[c & ~kPooled].intervals;
    out.assign(iv.begin(), iv.end());
    return;
  }
  const std::int64_t length = static_cast<std::int64_t>(c & 0xffffffffu);
  const std::int64_t start = static_cast<std::int64_t>(c >> 32);
  if (length == 0) return;
  if (start + length <= ranks_) {
    out.push_back({static_cast<std::int32_t>(start), static_cast<std::int32_t>(start + length)});
  } else {
    out.push_back({0, static_cast<std::int32_t>(start + length - ranks_)});
    out.push_back({static_cast<std::int32_t>(start), ranks_});
  }
}

std::int64_t SymbolicState::size_of(Cell c) const {
  return (c & kPooled) ? pool_[c & ~kPooled].count : static_cast<std::int64_t>(c & 0xffffffffu);
}

SymbolicState::Cell SymbolicState::make(std::vector<Interval>& iv) {
  if (iv.empty()) return run(0, 0);
  if (iv.size() == 1) return run(iv[0].lo, iv[0].hi - iv[0].lo);
  if (iv.size() == 2 && iv[0].lo == 0 && iv[1].hi == ranks_) {
    return run(iv[1].lo, (ranks_ - iv[1].lo) + iv[0].hi);
  }
  std::uint32_t id;
  if (!free_.empty()) {
    id = free_.back();
    free_.pop_back();
  } else {
    SSIM_CHECK(pool_.size() < (std::size_t{1} << 32), "verifier set pool exhausted");
    id = static_cast<std::uint32_t>(pool_.size());
    pool_.emplace_back();
  }
  PoolSet& p = pool_[id];
  p.intervals.assign(iv.begin(), iv.end());
  p.count = 0;
  for (const Interval& i : iv) p.count += i.hi - i.lo;
  p.refs = 1;
  return kPooled | id;
}

void SymbolicState::retain(Cell c) {
  if (c & kPooled) ++pool_[c & ~kPooled].refs;
}

void SymbolicState::release(Cell c) {
  if (!(c & kPooled)) return;
  PoolSet& p = pool_[c & ~kPooled];
  SSIM_CHECK(p.refs > 0, "verifier set released twice");
  if (--p.refs == 0) {
    p.intervals.clear();  // keeps its capacity for the next set made in this slot
    free_.push_back(static_cast<std::uint32_t>(c & ~kPooled));
  }
}

bool SymbolicState::has(int rank, int chunk, int contributor) const {
  const Cell c = cell(rank, chunk);
  if (c & kPooled) {
    const std::vector<Interval>& iv = pool_[c & ~kPooled].intervals;
    const auto it = std::upper_bound(iv.begin(), iv.end(), contributor,
                                     [](int k, const Interval& i) { return k < i.lo; });
    return it != iv.begin() && contributor < std::prev(it)->hi;
  }
  const std::int64_t length = static_cast<std::int64_t>(c & 0xffffffffu);
  const std::int64_t start = static_cast<std::int64_t>(c >> 32);
  return ((contributor - start) % ranks_ + ranks_) % ranks_ < length;
}

int SymbolicState::count(int rank, int chunk) const { return static_cast<int>(size_of(cell(rank, chunk))); }

std::vector<int> SymbolicState::missing(int rank, int chunk) const {
  std::vector<Interval> iv;
  intervals(cell(rank, chunk), iv);
  std::vector<int> out;
  int next = 0;
  for (const Interval& i : iv) {
    for (int k = next; k < i.lo; ++k) out.push_back(k);
    next = i.hi;
  }
  for (int k = next; k < ranks_; ++k) out.push_back(k);
  return out;
}

std::optional<VerifyError> SymbolicState::apply(const Round& round, int round_index) {
  std::vector<PendingWrite>& writes = scratch_.writes;
  writes.clear();
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
      if (size_of(cell(t.src, c)) == 0) {
        return fail("rank " + std::to_string(t.src) + " sends chunk " + std::to_string(c) +
                    " but holds no data for it");
      }
      writes.push_back(PendingWrite{t.dst, c, t.src, ti, t.op});
    }
  }
  // In-network reductions: the switch's sum of chunk c is the union of the members' sets, which
  // must be disjoint (else a contribution is counted twice); every receiver's chunk c becomes
  // that sum, as a copy would. Each sum holds one reference until the round is committed.
  std::vector<Cell>& sums = scratch_.sums;
  for (Cell c : sums) release(c);
  sums.clear();
  std::vector<Interval>& acc0 = scratch_.acc;
  std::vector<Interval>& src0 = scratch_.src;
  std::vector<Interval>& merged0 = scratch_.merged;
  auto release_sums = [&] {
    for (Cell c : sums) release(c);
    sums.clear();
  };
  for (std::size_t k = 0; k < round.switch_reduces.size(); ++k) {
    const SwitchReduce& g = round.switch_reduces[k];
    const int id = -static_cast<int>(k) - 1;
    auto fail = [&](const std::string& what) {
      release_sums();
      return VerifyError{
          round_index, -1,
          "switch reduction " + std::to_string(k) + " (" + describe(g) + ") " + what};
    };
    if (g.members.empty()) return fail("has no members");
    if (g.receivers.empty()) return fail("has no receivers");
    for (const std::vector<int>* list : {&g.members, &g.receivers}) {
      for (std::size_t i = 0; i < list->size(); ++i) {
        const int r = (*list)[i];
        if (r < 0 || r >= ranks_)
          return fail("names rank " + std::to_string(r) + ", out of range [0, " +
                      std::to_string(ranks_) + ")");
        for (std::size_t j = 0; j < i; ++j) {
          if ((*list)[j] == r) return fail("lists rank " + std::to_string(r) + " twice");
        }
      }
    }
    if (g.members.size() == 1 && g.receivers.size() == 1 && g.receivers[0] == g.members[0]) {
      return fail("delivers a rank's own data back to it only");
    }
    if (g.chunk_begin >= g.chunk_end) return fail("empty chunk range");
    if (g.chunk_begin < 0 || g.chunk_end > chunks_)
      return fail("chunk range outside [0, " + std::to_string(chunks_) + ")");
    for (int c = g.chunk_begin; c < g.chunk_end; ++c) {
      acc0.clear();
      for (int m : g.members) {
        if (size_of(cell(m, c)) == 0) {
          return fail("has rank " + std::to_string(m) + " contribute chunk " + std::to_string(c) +
                      " but it holds no data for it");
        }
        intervals(cell(m, c), src0);
        merged0.clear();
        std::size_t i = 0, j = 0;
        while (i < acc0.size() || j < src0.size()) {
          const bool take_acc = j == src0.size() || (i < acc0.size() && acc0[i].lo < src0[j].lo);
          const Interval next = take_acc ? acc0[i++] : src0[j++];
          if (!merged0.empty() && next.lo < merged0.back().hi) {
            return fail("double count: the switch's sum of chunk " + std::to_string(c) +
                        " adds the contribution of rank " + std::to_string(next.lo) +
                        " twice (member rank " + std::to_string(m) + " brings it again)");
          }
          if (!merged0.empty() && next.lo == merged0.back().hi) {
            merged0.back().hi = next.hi;
          } else {
            merged0.push_back(next);
          }
        }
        acc0.swap(merged0);
      }
      const std::size_t sum = sums.size();
      sums.push_back(make(acc0));
      for (int r : g.receivers) writes.push_back(PendingWrite{r, c, -1, id, Op::copy, sum});
    }
  }
  std::stable_sort(writes.begin(), writes.end(), [](const PendingWrite& a, const PendingWrite& b) {
    return a.dst != b.dst ? a.dst < b.dst : a.chunk < b.chunk;
  });

  // New values are computed from the round-start state and committed only at the end; each new
  // value holds one reference, dropped again if the round fails.
  std::vector<std::pair<std::size_t, Cell>>& results = scratch_.results;  // (cell index, new value)
  results.clear();
  auto abandon = [&](VerifyError e) {
    for (const auto& r : results) release(r.second);
    for (Cell c : sums) release(c);
    sums.clear();
    return std::optional<VerifyError>(std::move(e));
  };
  std::vector<Interval>& acc = scratch_.acc;
  std::vector<Interval>& src = scratch_.src;
  std::vector<Interval>& merged = scratch_.merged;
  for (std::size_t g = 0; g < writes.size();) {
    std::size_t end = g;
    while (end < writes.size() && writes[end].dst == writes[g].dst && writes[end].chunk == writes[g].chunk) ++end;
    const int dst = writes[g].dst;
    const int chunk = writes[g].chunk;
    const std::size_t index = static_cast<std::size_t>(dst) * chunks_ + chunk;
    const bool any_copy = std::any_of(writes.begin() + g, writes.begin() + end,
                                      [](const PendingWrite& w) { return w.op == Op::copy; });
    if (any_copy && end - g > 1) {
      const PendingWrite& second = writes[g + 1];
      const bool second_is_transfer = second.transfer >= 0;
      return abandon(
          VerifyError{round_index, second_is_transfer ? second.transfer : -1,
                      (second_is_transfer ? std::string() : writer_name(second.transfer) + ": ") +
                          "conflicting writes: rank " + std::to_string(dst) + " receives chunk " +
                          std::to_string(chunk) +
                          " more than once in this round and one is a copy "
                          "(also written by " +
                          writer_name(writes[g].transfer) + ")"});
    }
    if (any_copy) {
      const Cell c =
          writes[g].sum != PendingWrite::kNoSum ? sums[writes[g].sum] : cell(writes[g].src, chunk);
      retain(c);
      results.emplace_back(index, c);
      g = end;
      continue;
    }
    const Cell d = cell(dst, chunk);
    if (end - g == 1 && !(d & kPooled) && !(cell(writes[g].src, chunk) & kPooled)) {
      // Fast path: two runs that touch end to start (ring, halving-doubling) make one run.
      const Cell s = cell(writes[g].src, chunk);
      const std::int64_t dl = size_of(d), sl = size_of(s);
      const std::int64_t ds = static_cast<std::int64_t>(d >> 32), ss = static_cast<std::int64_t>(s >> 32);
      if (dl + sl <= ranks_) {
        if ((ds + dl) % ranks_ == ss) {
          results.emplace_back(index, run(ds, dl + sl));
          g = end;
          continue;
        }
        if ((ss + sl) % ranks_ == ds) {
          results.emplace_back(index, run(ss, dl + sl));
          g = end;
          continue;
        }
      }
    }
    intervals(d, acc);
    for (std::size_t k = g; k < end; ++k) {
      intervals(cell(writes[k].src, chunk), src);
      merged.clear();
      std::size_t i = 0, j = 0;
      while (i < acc.size() || j < src.size()) {
        const bool take_acc = j == src.size() || (i < acc.size() && acc[i].lo < src[j].lo);
        const Interval next = take_acc ? acc[i++] : src[j++];
        if (!merged.empty() && next.lo < merged.back().hi) {
          // The two sets overlap; the smallest shared rank is where the later interval starts.
          return abandon(VerifyError{round_index, writes[k].transfer,
                                     "double count: reducing chunk " + std::to_string(chunk) + " from rank " +
                                         std::to_string(writes[k].src) + " into rank " + std::to_string(dst) +
                                         " adds the contribution of rank " + std::to_string(next.lo) + " twice"});
        }
        if (!merged.empty() && next.lo == merged.back().hi) {
          merged.back().hi = next.hi;
        } else {
          merged.push_back(next);
        }
      }
      acc.swap(merged);
    }
    results.emplace_back(index, make(acc));
    g = end;
  }
  for (const auto& [index, value] : results) {
    release(cells_[index]);
    cells_[index] = value;
  }
  for (Cell c : sums) release(c);
  sums.clear();
  return std::nullopt;
}

RoundVerifier::RoundVerifier(const Schedule& schedule) : collective_(schedule.collective) {
  ScheduleSummary& sum = result_.summary;
  sum.ranks = schedule.ranks;
  sum.chunks = schedule.chunks;
  if (schedule.ranks < 1) {
    result_.error = VerifyError{-1, -1, "ranks must be >= 1, got " + std::to_string(schedule.ranks)};
    return;
  }
  if (schedule.chunks < 1) {
    result_.error = VerifyError{-1, -1, "chunks must be >= 1, got " + std::to_string(schedule.chunks)};
    return;
  }
  if (schedule.straggler && (*schedule.straggler < 0 || *schedule.straggler >= schedule.ranks)) {
    result_.error = VerifyError{-1, -1, "straggler " + std::to_string(*schedule.straggler) +
                                            " out of range [0, " + std::to_string(schedule.ranks) + ")"};
    return;
  }
  sum.chunks_sent.assign(schedule.ranks, 0);
  sum.chunks_received.assign(schedule.ranks, 0);
  state_.emplace(schedule.collective, schedule.ranks, schedule.chunks);
  sends_.assign(schedule.ranks, 0);
  receives_.assign(schedule.ranks, 0);
}

bool RoundVerifier::add(const Round& round) {
  ScheduleSummary& sum = result_.summary;
  const int ri = sum.rounds++;
  sum.transfers += round.transfers.size();
  if (result_.error) return false;
  if (auto err = state_->apply(round, ri)) {
    result_.error = std::move(err);
    return false;
  }
  if (sum.phases.empty() || sum.phases.back().first != round.phase) sum.phases.emplace_back(round.phase, 0);
  ++sum.phases.back().second;
  for (const Transfer& t : round.transfers) {
    sum.max_sends_per_rank_round = std::max(sum.max_sends_per_rank_round, ++sends_[t.src]);
    sum.max_receives_per_rank_round = std::max(sum.max_receives_per_rank_round, ++receives_[t.dst]);
    sum.chunks_sent[t.src] += t.chunk_count();
    sum.chunks_received[t.dst] += t.chunk_count();
  }
  for (const Transfer& t : round.transfers) sends_[t.src] = receives_[t.dst] = 0;
  sum.switch_reduces += round.switch_reduces.size();
  for (const SwitchReduce& g : round.switch_reduces) {
    for (int m : g.members) sum.chunks_sent[m] += g.chunk_count();
    for (int r : g.receivers) sum.chunks_received[r] += g.chunk_count();
  }
  return true;
}

VerifyResult RoundVerifier::finish() {
  if (result_.error) return std::move(result_);
  const SymbolicState& state = *state_;
  const int ranks = state.ranks(), chunks = state.chunks();
  for (int c = 0; c < chunks; ++c) {
    for (int r = 0; r < ranks; ++r) {
      if (collective_ == Collective::reduce_scatter && chunk_owner(c, ranks, chunks) != r) continue;
      if (!state.complete(r, c)) {
        result_.error = VerifyError{-1, -1, "at the end rank " + std::to_string(r) + " holds chunk " +
                                                std::to_string(c) + " without the contributions of ranks " +
                                                list_ranks(state.missing(r, c))};
        return std::move(result_);
      }
    }
  }
  return std::move(result_);
}

VerifyResult verify(const Schedule& schedule) {
  RoundVerifier v(schedule);
  for (const Round& round : schedule.rounds) {
    if (!v.add(round)) break;
  }
  VerifyResult result = v.finish();
  // The summary counts the whole schedule, also when an error stopped the check early.
  result.summary.rounds = static_cast<int>(schedule.rounds.size());
  result.summary.transfers = schedule.transfer_count();
  return result;
}

std::string format_summary(const ScheduleSummary& s) {
  std::ostringstream os;
  os << "ranks: " << s.ranks << "\nchunks: " << s.chunks << "\nrounds: " << s.rounds
     << "\ntransfers: " << s.transfers << "\nmax sends per rank in one round: " << s.max_sends_per_rank_round
     << "\nmax receives per rank in one round: " << s.max_receives_per_rank_round;
  if (s.switch_reduces > 0) os << "\nswitch reductions: " << s.switch_reduces;
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
