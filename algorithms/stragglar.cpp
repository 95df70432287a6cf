// StragglAR (arXiv 2505.23523) on n ranks: n-1 chunks; phase 1 is a ring ReduceScatter
// among the m = n-1 non-stragglers (run while the straggler S is late); phase 2 folds S in
// and spreads the m fully reduced chunks. Invariants of phase 2, checked by the tests:
// round r <= m-1 holds the exchange S <-> r on chunk r (both reduce; chunk r is "released"),
// every other transfer copies a fully reduced chunk, a rank sends at most one chunk and
// receives at most one per round, and R >= n-2+L rounds with L = ceil(log2 n).
// Which phase 2 is used: the searched table (n = 33, template_rounds), else the doubling
// construction (doubling_rounds, with plan_ramp and ChunkMatching), else for n = 2^M + 1 the
// timeline construction (timeline_rounds), else the seeded greedy (greedy_rounds); the
// constructions check themselves as they go and give up, never emit a wrong round. How and
// why: algorithms/README.md, "StragglAR" (the constructions, the bound, the round counts).
#include "algorithms/stragglar.hpp"

#include <algorithm>
#include <array>
#include <bit>
#include <cstdint>
#include <map>
#include <mutex>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "algorithms/generators.hpp"
#include "algorithms/stragglar_matching.hpp"
#include "algorithms/stragglar_tables.hpp"
#include "algorithms/stragglar_timeline.hpp"
#include "common/bits.hpp"
#include "common/error.hpp"
#include "common/random.hpp"

namespace ssim::alg {
namespace {

// Which non-straggler holds which fully reduced chunk (a ranks x chunks bit matrix: the m
// chunk owners and, with several late ranks, the passive ones), per-chunk holder counts, and
// per-rank counts of held active chunks.
class Holdings {
 public:
  Holdings(int ranks, int chunks)
      : m_(ranks),
        words_((std::max(ranks, chunks) + 63) / 64),
        bits_(static_cast<std::size_t>(ranks) * words_, 0),
        by_chunk_(static_cast<std::size_t>(chunks) * words_, 0),
        count_(chunks, 0),
        active_(ranks, 0) {}

  bool has(int rank, int chunk) const { return (row(rank)[chunk / 64] >> (chunk % 64)) & 1u; }
  // Bit i set when `rank` holds chunk first + i (i < 64; first >= 0).
  std::uint64_t held_window(int rank, int first) const {
    const std::uint64_t* w = row(rank);
    const int word = first / 64, shift = first % 64;
    std::uint64_t bits = word < words_ ? w[word] >> shift : 0;
    if (shift != 0 && word + 1 < words_) bits |= w[word + 1] << (64 - shift);
    return bits;
  }
  int count(int chunk) const { return count_[chunk]; }
  bool complete(int chunk) const { return count_[chunk] == m_; }
  int active_held(int rank) const { return active_[rank]; }
  int completed() const { return completed_; }
  // Calls f(rank) for every rank lacking `chunk`, in rank order.
  template <typename F>
  void for_each_missing(int chunk, F&& f) const {
    const std::uint64_t* w = by_chunk_.data() + static_cast<std::size_t>(chunk) * words_;
    for (int i = 0; i < words_; ++i) {
      std::uint64_t missing = ~w[i];
      if (i == words_ - 1 && m_ % 64) missing &= (std::uint64_t{1} << (m_ % 64)) - 1;
      for (; missing; missing &= missing - 1) f(i * 64 + std::countr_zero(missing));
    }
  }

  void add(int rank, int chunk) {
    SSIM_CHECK(!has(rank, chunk), "stragglar: chunk delivered twice");
    row(rank)[chunk / 64] |= std::uint64_t{1} << (chunk % 64);
    by_chunk_[static_cast<std::size_t>(chunk) * words_ + rank / 64] |= std::uint64_t{1}
                                                                       << (rank % 64);
    ++active_[rank];
    if (++count_[chunk] == m_) {
      ++completed_;
      for (int& a : active_) --a;
    }
  }

 private:
  const std::uint64_t* row(int rank) const {
    return bits_.data() + static_cast<std::size_t>(rank) * words_;
  }
  std::uint64_t* row(int rank) { return bits_.data() + static_cast<std::size_t>(rank) * words_; }

  int m_;  // ranks
  int words_;
  std::vector<std::uint64_t> bits_;      // rank-major
  std::vector<std::uint64_t> by_chunk_;  // chunk-major copy, to list the ranks lacking a chunk
  std::vector<int> count_;
  std::vector<int> active_;
  int completed_ = 0;
};

// One phase-2 round under construction: port bookkeeping and the copies decided so far.
// Deliveries take effect at the end of the round (receivers cannot forward in the same
// round, as in the IR).
struct RoundPlan {
  explicit RoundPlan(int n) : sending(n, 0), receiving(n, 0) {}

  void reset() {
    std::fill(sending.begin(), sending.end(), 0);
    std::fill(receiving.begin(), receiving.end(), 0);
    copies.clear();
  }
  void copy(int src, int dst, int chunk) {
    SSIM_CHECK(!sending[src] && !receiving[dst], "stragglar: port used twice in a round");
    sending[src] = receiving[dst] = 1;
    copies.push_back({src, dst, chunk});
  }

  struct Copy {
    int src, dst, chunk;
  };
  std::vector<char> sending;
  std::vector<char> receiving;
  std::vector<Copy> copies;
};

// Shared round loop: the policy fills the copies of round t; this applies them, yields the
// round (exchange first), and stops when every chunk is complete. `status` becomes the round
// count, or -1 when the policy gives up (returns false; the rounds yielded so far are void).
// `policy` must outlive the stream.
// With `passive` > 0 (several late ranks): m = n-1-passive chunk owners 0..m-1, passive late
// ranks m..n-2 (they hold nothing and need every chunk) and the straggler n-1.
template <typename Policy>
RoundStream phase2_rounds(int n, int passive, Policy& policy, int& status) {
  const int m = n - 1 - passive;
  const int straggler = n - 1;
  Holdings hold(n - 1, m);
  RoundPlan plan(n);
  Round round;
  const int limit = 4 * n + 64;
  int t = 0;
  status = 0;
  for (; t < m || hold.completed() < m; ++t) {
    SSIM_CHECK(t < limit, "stragglar: phase 2 did not finish");
    plan.reset();
    if (t < m) {
      plan.sending[t] = plan.receiving[t] = 1;
      plan.sending[straggler] = plan.receiving[straggler] = 1;
    }
    if (!policy(t, hold, plan)) {
      status = -1;
      co_return;
    }
    round.phase = t < m ? "straggler-exchange" : "broadcast";
    round.transfers.clear();
    if (t < m) {
      round.add(t, straggler, t, t + 1, Op::reduce);
      round.add(straggler, t, t, t + 1, Op::reduce);
    }
    for (const RoundPlan::Copy& c : plan.copies)
      round.add(c.src, c.dst, c.chunk, c.chunk + 1, Op::copy);
    co_yield round;
    if (t < m) hold.add(t, t);
    for (const RoundPlan::Copy& c : plan.copies) {
      if (c.dst != straggler) hold.add(c.dst, c.chunk);
    }
  }
  status = t;
}

// Roles in the doubling construction (file comment). Every rank that is not busy sends
// one unfinished chunk per round, its group; a double also holds a spare.
enum class Role : std::uint8_t {
  single,        // holds one unfinished chunk (its group)
  spare_oldest,  // type A: sends its group, keeps the oldest chunk as its spare
  spare_next,    // type B: sends the oldest chunk, keeps the next-oldest one as its spare
};

// Variants of the doubling construction's ramp (file comment), tried in this order.
struct DoublingLayout {
  bool top_rank_double;  // the highest rank is a double, else the doubles follow rank L
  bool ramp_hole;        // one copy of chunk 0 fewer in round L-1 and one double fewer
};
constexpr DoublingLayout kDoublingLayouts[] = {
    {true, false}, {false, false}, {true, true}, {false, true}};

// Receivers of the ramp's copies (rounds 1..L-1): round t carries 2^(t-1-c) copies of
// each chunk c < t, every holder sending. Returns the copies as (round, chunk, receiver)
// in round and chunk order, or nothing when the layout does not fit n.
struct RampCopy {
  int round, chunk, rank;
};
std::optional<std::vector<RampCopy>> plan_ramp(int n, const DoublingLayout& layout) {
  const int m = n - 1;
  const int L = ceil_log2(n);
  const int e = (1 << L) - n;
  if (e > 0 && L < 3) return std::nullopt;
  if (layout.ramp_hole && e < L) return std::nullopt;
  const int early = std::min(e, L - 1);                     // doubles among ranks 0..L-2
  const int late = e - early - (layout.ramp_hole ? 1 : 0);  // doubles among ranks > L
  const int pool = m - L;                                   // ranks L..m-1
  const int singles = pool - late;
  if (singles < 0 || (singles == 0 && pool > 0)) return std::nullopt;
  // Singles among the ranks >= L: rank L (busy in round L, before any type-B double
  // exists) and a block of high ranks.
  std::vector<char> single(m, 0);
  for (int r = layout.top_rank_double ? m - 2 : m - 1, k = 0; k < singles - 1 && r > L; --r, ++k)
    single[r] = 1;
  if (pool > 0) single[L] = 1;
  if (std::count(single.begin(), single.end(), 1) != singles) return std::nullopt;

  std::vector<RampCopy> copies;
  for (int t = 1; t < L; ++t) {
    for (int c = 0; c < t; ++c) {
      const int k = (1 << (t - 1 - c)) - (layout.ramp_hole && t == L - 1 && c == 0 ? 1 : 0);
      copies.insert(copies.end(), k, RampCopy{t, c, -1});
    }
  }
  auto find = [&](int rank, auto fits) -> RampCopy* {
    for (RampCopy& s : copies) {
      if (s.rank < 0 && s.round != rank && fits(s)) return &s;
    }
    return nullptr;
  };
  auto take = [&](int rank, auto fits) {
    RampCopy* s = find(rank, fits);
    if (s) s->rank = rank;
    return s != nullptr;
  };
  auto last_round = [L](int c) {
    return [L, c](const RampCopy& s) { return s.round == L - 1 && s.chunk == c; };
  };
  bool ok = true;
  // Early doubles: ranks 1..min(e, L-2) get chunk 0 in round L-1, rank 0 chunk 1.
  for (int r = 1; r <= std::min(early, L - 2); ++r) ok = ok && take(r, last_round(0));
  if (early == L - 1) ok = ok && take(0, last_round(1));
  // Late doubles: chunk 0 and a chunk c <= r-L+1, so that their group can be the
  // next-oldest chunk when they meet the straggler.
  for (int r = L; r < m && ok; ++r) {
    if (single[r]) continue;
    const int limit = r - L + 1;
    auto early_young = [L, limit](const RampCopy& s) {
      return s.chunk >= 1 && s.chunk <= limit && s.round < L - 1;
    };
    if (find(r, last_round(0)) && find(r, early_young)) {
      ok = take(r, last_round(0)) && take(r, early_young);
    } else {
      ok = take(r,
                [L, limit](const RampCopy& s) {
                  return s.round == L - 1 && s.chunk >= 1 && s.chunk <= limit;
                }) &&
           take(r, [L](const RampCopy& s) { return s.chunk == 0 && s.round < L - 1; });
    }
  }
  // Singles get one chunk each; in the critical window one they may hold in their round.
  for (int r = L; r < m && ok; ++r) {
    if (single[r])
      ok = take(r, [L, r](const RampCopy& s) { return r >= 2 * L - 1 || s.chunk + L <= r; });
  }
  if (!ok ||
      std::any_of(copies.begin(), copies.end(), [](const RampCopy& s) { return s.rank < 0; })) {
    return std::nullopt;
  }
  return copies;
}

// The doubling construction (file comment) as a phase2_rounds policy; round() returns false
// when the construction gets stuck.
class DoublingPolicy {
 public:
  DoublingPolicy(int n, const DoublingLayout& layout, std::vector<RampCopy> ramp)
      : m_(n - 1),
        L_(ceil_log2(n)),
        ramp_(std::move(ramp)),
        ramp_holders_(L_),
        group_(m_, 0),
        role_(m_, Role::single),
        tokens_(layout.ramp_hole ? 1 : 0) {}

  bool round(int t, const Holdings& hold, RoundPlan& plan) {
    if (t < L_) return ramp_round(t, plan);
    const int busy = t < m_ ? t : -1;
    dropped_.assign(m_, 0);
    if (!pass_token(t, busy)) return false;
    for (int b = static_cast<int>(std::count(role_.begin(), role_.end(), Role::spare_next));
         b < tokens_; ++b) {
      if (!promote(t, busy, -1)) return false;
    }
    match_younger(t, busy, hold);
    if (!send_oldest(t, busy, hold, plan)) return false;
    update_roles(t, busy);
    return true;
  }

 private:
  bool ramp_round(int t, RoundPlan& plan) {
    for (int c = 0; c < t; ++c) {
      std::size_t k = 0;
      for (const RampCopy& s : ramp_) {
        if (s.round != t || s.chunk != c) continue;
        if (k == ramp_holders_[c].size()) return false;
        plan.copy(ramp_holders_[c][k++], s.rank, c);
      }
    }
    for (const RoundPlan::Copy& c : plan.copies) ramp_holders_[c.chunk].push_back(c.dst);
    if (t < m_) ramp_holders_[t].push_back(t);
    if (t < L_ - 1) return true;
    // Groups at the start of round L: a rank's only chunk; a double's other chunk besides
    // chunk 0, the oldest then.
    std::vector<std::vector<int>> held(m_);
    for (int c = 0; c < std::min(L_, m_); ++c) {
      for (int r : ramp_holders_[c]) held[r].push_back(c);
    }
    for (int r = 0; r < m_; ++r) {
      if (held[r].size() == 1) {
        group_[r] = held[r][0];
      } else if (held[r].size() == 2 && held[r][0] == 0) {
        group_[r] = held[r][1];
        role_[r] = Role::spare_oldest;
      } else {
        return false;
      }
    }
    return true;
  }

  // A busy double sends nothing, so it must be type B in its round (its spare p is unsent
  // anyway, o is what every busy rank leaves unsent); the type-B count stays at tokens_.
  bool pass_token(int t, int busy) {
    if (busy < 0 || role_[busy] == Role::single) return true;
    const int p = t - L_ + 1;
    if (group_[busy] != p) return false;
    if (role_[busy] == Role::spare_oldest) {
      auto b = std::find(role_.begin(), role_.end(), Role::spare_next);
      if (b != role_.end()) {
        *b = Role::spare_oldest;  // it holds {o, p}: sends p from now on
      } else {
        int drop = -1;
        for (int r = 0; r < m_ && drop < 0; ++r) {
          if (r != busy && r < t && role_[r] == Role::spare_oldest) drop = r;
        }
        for (int r = 0; r < m_ && drop < 0; ++r) {
          if (r != busy && role_[r] == Role::spare_oldest) drop = r;
        }
        if (drop < 0) return false;
        dropped_[drop] = 1;
        ++tokens_;
      }
      role_[busy] = Role::spare_next;
    }
    return true;
  }

  // A type-A double holding {o, p} turns type B: p gets one copy less, o one sender more.
  bool promote(int t, int busy, int except) {
    const int p = t - L_ + 1;
    for (int r = 0; r < m_; ++r) {
      if (r != except && r != busy && !dropped_[r] && role_[r] == Role::spare_oldest &&
          group_[r] == p) {
        role_[r] = Role::spare_next;
        return true;
      }
    }
    return false;
  }

  // Who receives which younger chunk; the senders of chunk c are its group (members_[c-first],
  // first_ = first: the window's chunks only, so the lists keep their memory across rounds).
  void match_younger(int t, int busy, const Holdings& hold) {
    const int o = t - L_, p = o + 1, q = o + 2;
    const int first = std::max(p, 0), end = std::min(t, m_);
    // Chunks first .. end-1 as bits 0 .. end-first-1 (ChunkMatching's window): a chunk r may
    // receive is in the window, not complete and not held by r.
    SSIM_CHECK(end - first <= 63, "stragglar: too many unfinished chunks");
    auto bit = [&](int c) {
      return c >= first && c < end ? std::uint64_t{1} << (c - first) : std::uint64_t{0};
    };
    auto upto = [&](int c) {  // the window's chunks <= c
      if (c < first) return std::uint64_t{0};
      return c - first >= 63 ? ~std::uint64_t{0} : (std::uint64_t{2} << (c - first)) - 1;
    };
    std::uint64_t incomplete = 0;
    for (int c = first; c < end; ++c) {
      if (!hold.complete(c)) incomplete |= bit(c);
    }
    first_ = first;
    for (;;) {
      for (auto& v : members_) v.clear();
      for (int r = 0; r < m_; ++r) {
        if (r != busy && role_[r] != Role::spare_next && group_[r] >= first && group_[r] < end) {
          members_[static_cast<std::size_t>(group_[r] - first)].push_back(r);
        }
      }
      if (t >= m_ && end == m_)
        members_[static_cast<std::size_t>(m_ - 1 - first)].insert(
            members_[static_cast<std::size_t>(m_ - 1 - first)].begin(), m_);  // the straggler
      matching_.reset(m_, first);
      for (int c = first; c < end; ++c)
        matching_.set_capacity(
            c, static_cast<int>(members_[static_cast<std::size_t>(c - first)].size()));
      order_.clear();
      for (int r = 0; r < m_; ++r) {
        if (r == busy || dropped_[r]) continue;
        const std::uint64_t open = incomplete & ~hold.held_window(r, first);
        std::uint64_t allowed = 0;
        if (role_[r] == Role::spare_oldest && group_[r] != p) {
          allowed = open & bit(p);
        } else if (role_[r] == Role::spare_oldest) {
          // A later double must be back in the next-oldest group by its own round.
          const int limit = busy >= 0 && r > t ? r - L_ + 1 : m_;
          allowed = open & upto(limit) & ~bit(p);
        } else if (role_[r] == Role::spare_next) {
          allowed = open & bit(q);
        } else if (group_[r] == o) {
          const bool window = busy >= 0 && r > t && r < t + L_;
          allowed = window ? open & upto(r - L_) : open;
        } else {
          continue;  // a single of a younger group receives o
        }
        matching_.allow(r, allowed);
        order_.push_back(r);
      }
      // Fewest allowed chunks first, in rank order within a count (a counting sort: the
      // order a stable sort by the count gives, without its buffer).
      std::array<int, 66> from{};
      for (int r : order_) ++from[static_cast<std::size_t>(matching_.allowed_count(r)) + 1];
      for (std::size_t k = 1; k < from.size(); ++k) from[k] += from[k - 1];
      sorted_.resize(order_.size());
      for (int r : order_)
        sorted_[static_cast<std::size_t>(
            from[static_cast<std::size_t>(matching_.allowed_count(r))]++)] = r;
      int stuck = -1;
      for (int r : sorted_) {
        if (!matching_.add(r) && stuck < 0 && busy >= 0 && role_[r] == Role::spare_oldest)
          stuck = r;
      }
      matching_.finish();
      // A type-A double left without a chunk is dropped (it keeps only its group; one of
      // the e wasted receive slots) and another type-A double turns type B, so the spare
      // weight stays e.
      if (stuck < 0 || !promote(t, busy, stuck)) return;
      dropped_[stuck] = 1;
      ++tokens_;
    }
  }

  // Records the younger copies, then sends o to every rank lacking it from the singles of
  // its group, the type-B doubles and in the tail the straggler.
  bool send_oldest(int t, int busy, const Holdings& hold, RoundPlan& plan) {
    next_sender_.fill(0);
    for (int r = 0; r < m_; ++r) {
      const int c = matching_.assigned(r);
      if (c < 0) continue;
      const std::size_t i = static_cast<std::size_t>(c - first_);
      plan.copy(members_[i][next_sender_[i]++], r, c);
    }
    const int o = t - L_;
    if (o < 0 || o >= m_ || hold.complete(o)) return true;
    senders_.clear();
    for (int r = 0; r < m_; ++r) {
      if (r == busy || plan.sending[r]) continue;
      if ((role_[r] == Role::single && group_[r] == o) || role_[r] == Role::spare_next)
        senders_.push_back(r);
    }
    if (t >= m_ && !plan.sending[m_]) senders_.push_back(m_);
    std::size_t k = 0;
    bool short_of_senders = false;
    hold.for_each_missing(o, [&](int r) {
      if (r == busy || plan.receiving[r]) return;
      if (k == senders_.size()) {
        short_of_senders = true;
      } else {
        plan.copy(senders_[k++], r, o);
      }
    });
    return !short_of_senders;
  }

  void update_roles(int t, int busy) {
    const int p = t - L_ + 1;
    for (int r = 0; r < m_; ++r) {
      if (r == busy) continue;
      const int got = dropped_[r] ? -1 : matching_.assigned(r);
      if (role_[r] == Role::spare_oldest) {
        if (got < 0) {
          role_[r] = Role::single;  // keeps its group; o is complete after this round
        } else if (group_[r] == p) {
          group_[r] = got;  // p becomes its spare
        }
      } else if (role_[r] == Role::spare_next) {
        if (got < 0) role_[r] = Role::single;
        group_[r] = got < 0 ? p : got;  // got (the new next-oldest) becomes its spare
      } else if (got >= 0) {
        group_[r] = got;
      }
    }
    if (busy >= 0) {
      // A busy type-B double keeps p, the oldest chunk from now on, as its spare.
      role_[busy] = role_[busy] == Role::spare_next ? Role::spare_oldest : Role::single;
      group_[busy] = busy;
    }
  }

  int m_, L_;
  std::vector<RampCopy> ramp_;
  std::vector<std::vector<int>> ramp_holders_;
  std::vector<int> group_;
  std::vector<Role> role_;
  int tokens_;  // type-B doubles required: e minus the number of doubles
  std::vector<char> dropped_;
  detail::ChunkMatching matching_;
  std::array<std::vector<int>, 64> members_;
  int first_ = 0;
  std::vector<int> order_, sorted_, senders_;
  std::array<std::size_t, 64> next_sender_{};
};

// The doubling construction for n with layout kDoublingLayouts[layout]; `status` as in
// phase2_rounds (-1 also when the layout does not fit n).
RoundStream doubling_rounds(int n, int layout, int& status) {
  std::optional<std::vector<RampCopy>> ramp = plan_ramp(n, kDoublingLayouts[layout]);
  if (!ramp) {
    status = -1;
    co_return;
  }
  DoublingPolicy policy(n, kDoublingLayouts[layout], std::move(*ramp));
  auto round = [&](int t, const Holdings& hold, RoundPlan& plan) {
    return policy.round(t, hold, plan);
  };
  RoundStream inner = phase2_rounds(n, 0, round, status);
  while (const Round* r = inner.next()) co_yield *r;
}

// Deterministic generator for tie-breaks (SplitMix64), independent of the standard library.
class Mixer {
 public:
  explicit Mixer(std::uint64_t seed) : gen_(seed) {}
  std::uint64_t next() { return gen_.next(); }
  void shuffle(std::vector<int>& v) {
    for (std::size_t i = v.size(); i > 1; --i) std::swap(v[i - 1], v[next() % i]);
  }

 private:
  SplitMix64 gen_;
};

struct GreedyVariant {
  std::uint64_t seed = 0;
  bool past_before_future = false;  // receivers past their exchange before the far future ones
};

// The greedy of the file comment. Per round the ranks are ordered once by the number of
// active chunks they hold (random order within a count); each chunk then takes its senders
// from the front of that order and its receivers from the ranks lacking it, shuffled
// within their preference class.
RoundStream greedy_rounds(int n, int passive, GreedyVariant variant, int& status) {
  const int h = n - 1;            // ranks that can hold chunks: owners and passive late ranks
  const int m = n - 1 - passive;  // chunks (= owners)
  const int straggler = n - 1;
  const int L = ceil_log2(n);
  Mixer mix(variant.seed + 0x5eed);
  std::vector<int> shuffled = iota_ranks(h), by_load(h), skip(h + 1);
  std::vector<std::vector<int>> load_bucket;
  std::array<std::vector<int>, 4> receiver_bucket;
  std::vector<int> senders, receivers;
  // First position >= i in by_load whose rank is not sending yet (path-compressed).
  auto next_free = [&](int i) {
    int root = i;
    while (skip[root] != root) root = skip[root];
    while (skip[i] != root) i = std::exchange(skip[i], root);
    return root;
  };
  auto policy = [&](int t, const Holdings& hold, RoundPlan& plan) {
    mix.shuffle(shuffled);
    for (auto& b : load_bucket) b.clear();
    for (int r : shuffled) {
      const std::size_t key = static_cast<std::size_t>(hold.active_held(r));
      if (load_bucket.size() <= key) load_bucket.resize(key + 1);
      load_bucket[key].push_back(r);
    }
    by_load.clear();
    for (const auto& b : load_bucket) by_load.insert(by_load.end(), b.begin(), b.end());
    for (int i = 0; i <= h; ++i) skip[i] = i < h && plan.sending[by_load[i]] ? i + 1 : i;
    for (int c = std::min(t, m) - 1; c >= 0; --c) {
      if (hold.complete(c)) continue;
      for (auto& b : receiver_bucket) b.clear();
      hold.for_each_missing(c, [&](int r) {
        if (plan.receiving[r]) return;
        const bool window = t < m && r < m && r > t && r < t + L;
        if (window && c + L > r) return;
        int key = 2;
        if (window) {
          key = r - L == c ? 0 : 1;
        } else if (r < t || r >= m) {  // past its exchange, or passive (never meets S)
          key = variant.past_before_future ? 2 : 3;
        } else {
          key = variant.past_before_future ? 3 : 2;
        }
        receiver_bucket[static_cast<std::size_t>(key)].push_back(r);
      });
      receivers.clear();
      for (auto& b : receiver_bucket) {
        mix.shuffle(b);
        receivers.insert(receivers.end(), b.begin(), b.end());
      }
      if (receivers.empty()) continue;
      senders.clear();
      for (int i = next_free(0); i < h && senders.size() < receivers.size(); i = next_free(i + 1)) {
        const int r = by_load[i];
        if (!hold.has(r, c)) continue;
        senders.push_back(r);
        skip[i] = i + 1;
      }
      if (t >= m && !plan.sending[straggler] && senders.size() < receivers.size())
        senders.push_back(straggler);
      for (std::size_t i = 0; i < senders.size(); ++i) plan.copy(senders[i], receivers[i], c);
    }
    return true;
  };
  RoundStream inner = phase2_rounds(n, passive, policy, status);
  while (const Round* r = inner.next()) co_yield *r;
}

// A phase 2 found by search (stragglar_tables.hpp), expanded round by round; gives up (the
// caller falls back) if a listed copy's sender lacks its chunk or the rounds run out.
class TemplatePolicy {
 public:
  explicit TemplatePolicy(const Phase2Template& t) : t_(t), m_(t.n - 1) {
    for (std::size_t pos = 0; pos < t.data.size();
         pos += 1 + 3 * static_cast<std::size_t>(t.data[pos]))
      start_.push_back(pos);
  }

  bool operator()(int t, const Holdings& hold, RoundPlan& plan) {
    if (t >= t_.rounds) return false;
    const bool shifted = t > t_.base && t < m_;
    const int listed = shifted ? t_.base : t < m_ ? t : t_.base + 1 + (t - m_);
    if (listed >= static_cast<int>(start_.size())) return false;
    const std::size_t pos = start_[static_cast<std::size_t>(listed)];
    const int s = shifted ? t - t_.base : 0;
    for (int i = 0; i < t_.data[pos]; ++i) {
      const std::int16_t* copy = &t_.data[pos + 1 + 3 * static_cast<std::size_t>(i)];
      const int src = shifted ? (copy[0] + s) % m_ : copy[0];
      const int dst = shifted ? (copy[1] + s) % m_ : copy[1];
      const int chunk = copy[2] + s;
      const bool held = src == m_ ? t >= m_ : src < m_ && hold.has(src, chunk);
      if (!held || dst >= m_ || chunk >= m_ || plan.sending[src] || plan.receiving[dst] ||
          hold.has(dst, chunk))
        return false;
      plan.copy(src, dst, chunk);
    }
    return true;
  }

 private:
  const Phase2Template& t_;
  int m_;
  std::vector<std::size_t> start_;  // of each listed round in t_.data
};

// Phase 2 by a policy built from data (`Policy(*data)`); status -1 when there is no data.
template <typename Policy, typename Data>
RoundStream data_policy_rounds(int n, const Data* data, int& status) {
  if (!data) {
    status = -1;
    co_return;
  }
  Policy policy(*data);
  RoundStream inner = phase2_rounds(n, 0, policy, status);
  while (const Round* r = inner.next()) co_yield *r;
}

RoundStream template_rounds(int n, int& status) {
  return data_policy_rounds<TemplatePolicy>(n, stragglar_phase2_template(n), status);
}

// The timeline construction (stragglar_timeline.hpp) for n = 2^M + 1, built once per n and
// kept (the trial and the stream both use it).
const Phase2Timeline* cached_timeline(int n) {
  static std::mutex mutex;
  static std::map<int, std::optional<Phase2Timeline>> cache;
  std::lock_guard<std::mutex> lock(mutex);
  auto it = cache.find(n);
  if (it == cache.end()) it = cache.emplace(n, stragglar_timeline(n)).first;
  return it->second ? &*it->second : nullptr;
}

// Applies a Phase2Timeline round by round; gives up (the caller falls back) if a copy's
// sender lacks its chunk, its receiver has it, a port is used twice or the rounds run out.
class TimelinePolicy {
 public:
  explicit TimelinePolicy(const Phase2Timeline& p) : p_(p), m_(p.n - 1) {}

  bool operator()(int t, const Holdings& hold, RoundPlan& plan) {
    if (t < m_) {
      for (int k = 1; k <= p_.ages && k <= t; ++k) {
        const int c = t - k;
        const auto& snd = p_.send[static_cast<std::size_t>(k)];
        const auto& rcv = p_.recv[static_cast<std::size_t>(k)];
        for (std::size_t i = 0; i < snd.size(); ++i) {
          if (!copy((c + snd[i]) % m_, (c + rcv[i]) % m_, c, t, hold, plan)) return false;
        }
      }
      return true;
    }
    const std::size_t j = static_cast<std::size_t>(t - m_);
    if (j >= p_.endgame.size()) return false;
    for (const auto& [src, dst, chunk] : p_.endgame[j]) {
      if (!copy(src, dst, chunk, t, hold, plan)) return false;
    }
    return true;
  }

 private:
  bool copy(int src, int dst, int chunk, int t, const Holdings& hold, RoundPlan& plan) const {
    const bool held = src == m_ ? t >= m_ : src >= 0 && src < m_ && hold.has(src, chunk);
    if (!held || dst < 0 || dst >= m_ || chunk < 0 || chunk >= m_ || plan.sending[src] ||
        plan.receiving[dst] || hold.has(dst, chunk))
      return false;
    plan.copy(src, dst, chunk);
    return true;
  }

  const Phase2Timeline& p_;
  int m_;
};

RoundStream timeline_rounds(int n, int& status) {
  return data_policy_rounds<TimelinePolicy>(n, cached_timeline(n), status);
}

// The greedy variants tried where the doubling construction gives up: several for small
// n, where they are cheap and a round matters more; one beyond 200 ranks to keep
// generation fast.
std::vector<GreedyVariant> greedy_variants(int n) {
  const int seeds = n <= 64 ? 16 : n <= 200 ? 4 : 1;
  std::vector<GreedyVariant> v;
  for (int s = 0; s < seeds; ++s) {
    v.push_back({static_cast<std::uint64_t>(s), false});
    if (n <= 200) v.push_back({static_cast<std::uint64_t>(s), true});
  }
  return v;
}

// Which construction phase 2 uses for n ranks of which `passive` are late ranks folded in
// before (0: plain StragglAR): the first doubling layout that works (passive = 0 only), else
// the greedy variant with the fewest rounds (the first of those); and its round count.
struct Phase2Choice {
  bool doubling = true;
  int index = 0;  // into kDoublingLayouts or greedy_variants(n)
  int rounds = 0;
  bool from_template = false;  // stragglar_phase2_template(n) (then doubling and index unused)
  bool from_timeline = false;  // stragglar_timeline(n) (likewise)
};

RoundStream chosen_rounds(int n, int passive, const Phase2Choice& c, int& status) {
  if (c.from_template) return template_rounds(n, status);
  if (c.from_timeline) return timeline_rounds(n, status);
  return c.doubling ? doubling_rounds(n, c.index, status)
                    : greedy_rounds(n, passive,
                                    greedy_variants(n)[static_cast<std::size_t>(c.index)], status);
}

// Drains a stream, returning its status (the round count or -1).
int trial(int n, int passive, const Phase2Choice& c) {
  int status = 0;
  RoundStream rounds = chosen_rounds(n, passive, c, status);
  while (rounds.next()) {
    if (status < 0) break;
  }
  return status;
}

// Found by trial runs (phase 2 is generated once more when streamed) and cached per (n, passive).
// Except for a power of two up to 4096 with no late rank folded in: there e = 0 and the trial
// always picks doubling layout 1 ({false, false}: layout 0 makes rank m-1 a double where no
// rank may be one) with the bound n-2+L, so it is taken without a trial. Checked against the
// trial's schedules: the fingerprints of tests/algorithms/round_stream_test.cpp (n = 4..64, 128,
// 256) and the text output of `schedule stragglar` at n = 512, 1024, 2048 and 4096. Larger n
// run the trial (phase2_stream checks the round count either way).
Phase2Choice choose_phase2(int n, int passive) {
  if (passive == 0 && n >= 4 && n <= 4096 && std::has_single_bit(static_cast<unsigned>(n)))
    return Phase2Choice{true, 1, n - 2 + ceil_log2(n)};
  static std::mutex mutex;
  static std::map<std::pair<int, int>, Phase2Choice> cache;
  {
    std::lock_guard<std::mutex> lock(mutex);
    if (auto it = cache.find({n, passive}); it != cache.end()) return it->second;
  }
  Phase2Choice best;
  bool found = false;
  if (passive == 0 && stragglar_phase2_template(n)) {
    Phase2Choice c{false, 0, 0, true};
    if (const int rounds = trial(n, 0, c); rounds > 0) {
      c.rounds = rounds;
      best = c;
      found = true;
    }
  }
  for (int i = 0; passive == 0 && i < static_cast<int>(std::size(kDoublingLayouts)) && !found;
       ++i) {
    const Phase2Choice c{true, i, 0};
    if (const int rounds = trial(n, 0, c); rounds > 0) {
      best = Phase2Choice{true, i, rounds};
      found = true;
    }
  }
  // n = 2^M + 1, where the doubling construction can finish above the bound: the timeline.
  if (passive == 0 && (!found || best.rounds > n - 2 + ceil_log2(n)) &&
      std::has_single_bit(static_cast<unsigned>(n - 1))) {
    const Phase2Choice c{false, 0, 0, false, true};
    if (const int rounds = trial(n, 0, c); rounds > 0 && (!found || rounds < best.rounds)) {
      best = Phase2Choice{false, 0, rounds, false, true};
      found = true;
    }
  }
  const std::size_t variants = greedy_variants(n).size();
  for (std::size_t i = 0; i < variants && !found; ++i) {
    const int rounds = trial(n, passive, Phase2Choice{false, static_cast<int>(i), 0});
    if (i == 0 || rounds < best.rounds) best = Phase2Choice{false, static_cast<int>(i), rounds};
  }
  SSIM_CHECK(best.rounds > 0, "stragglar: no phase-2 construction finished");
  std::lock_guard<std::mutex> lock(mutex);
  cache[{n, passive}] = best;
  return best;
}

// Phase 2 for straggler n-1 (the chosen construction), round by round.
RoundStream phase2_stream(int n, int passive) {
  const Phase2Choice choice = choose_phase2(n, passive);
  int status = 0;
  RoundStream inner = chosen_rounds(n, passive, choice, status);
  while (const Round* r = inner.next()) co_yield *r;
  SSIM_CHECK(status == choice.rounds, "stragglar: phase 2 differs from its trial run");
}

// Rounds "fold-in" of the k-straggler schedule (logical ranks: early 0..m-1, late m..n-1 in
// arrival order): late rank m+j-1 (j = 1..k-1) reduces its chunk g into rank g in fold round
// g+j-1, so a late rank's pass runs as soon as it arrives and every early rank receives from
// one late rank per round, in arrival order.
RoundStream fold_in_rounds(int m, int k) {
  Round r;
  for (int round = 0; round < m + k - 2; ++round) {
    r.phase = "fold-in";
    r.transfers.clear();
    for (int j = 1; j <= k - 1; ++j) {
      const int g = round - (j - 1);
      if (g >= 0 && g < m) r.add(m + j - 1, g, g, g + 1, Op::reduce);
    }
    co_yield r;
  }
}

// Logical ranks: early 0..m-1 (m = n-k), late m..n-1 in arrival order.
RoundStream stragglar_stream(int n, int k) {
  const int m = n - k;
  RoundStream rs = ring_reduce_scatter_rounds(iota_ranks(m), 0, "reduce-scatter");
  while (const Round* r = rs.next()) co_yield *r;
  if (k > 1) {
    RoundStream fold = fold_in_rounds(m, k);
    while (const Round* r = fold.next()) co_yield *r;
  }
  RoundStream p2 = phase2_stream(n, k - 1);
  while (const Round* r = p2.next()) co_yield *r;
}

void check_ranks(int n) {
  if (n < 3) throw InputError("stragglar needs n >= 3 ranks, got " + std::to_string(n));
}

// The late-rank count of option `stragglers` (1 .. n-2: phase 1 needs two early ranks).
int late_count(int n, const Options& options) {
  if (!options.has("stragglers")) return 1;
  const int k = options.get_int("stragglers", 1, 1, 1 << 30);
  if (k > n - 2) {
    throw InputError("stragglar option stragglers=" + std::to_string(k) +
                     ": at most n-2 = " + std::to_string(n - 2) + " late ranks with " +
                     std::to_string(n) + " ranks (phase 1 needs two early ranks)");
  }
  return k;
}

// Option `late`: k distinct ranks "a,b,c" in expected arrival order (default n-k..n-1).
std::vector<int> late_ranks(int n, int k, const Options& options) {
  std::vector<int> late;
  if (!options.has("late")) {
    for (int i = n - k; i < n; ++i) late.push_back(i);
    return late;
  }
  const std::string text = options.get_string("late", "");
  std::size_t pos = 0;
  while (pos <= text.size()) {
    const std::size_t comma = std::min(text.find(',', pos), text.size());
    Options one;
    one.set("late", text.substr(pos, comma - pos));
    const int r = one.get_int("late", 0, 0, n - 1);
    if (std::find(late.begin(), late.end(), r) != late.end())
      throw InputError("stragglar option late=" + text + ": rank " + std::to_string(r) +
                       " listed twice");
    late.push_back(r);
    pos = comma + 1;
  }
  if (static_cast<int>(late.size()) != k) {
    throw InputError("stragglar option late=" + text + ": lists " + std::to_string(late.size()) +
                     " ranks but stragglers=" + std::to_string(k));
  }
  return late;
}

// The options' late ranks in arrival order (one for k = 1), after checking every option.
std::vector<int> checked_late(int n, const Options& options) {
  check_ranks(n);
  const int k = late_count(n, options);
  if (k > 1 && options.has("straggler")) {
    throw InputError("stragglar option straggler is for one late rank; with stragglers=" +
                     std::to_string(k) + " name the late ranks with late=a,b,... (arrival order)");
  }
  const int straggler = options.get_int("straggler", n - 1, 0, n - 1);
  std::vector<int> late = late_ranks(n, k, options);
  if (k == 1 && !options.has("late")) late = {straggler};
  if (k == 1 && options.has("late") && options.has("straggler") && straggler != late.front())
    throw InputError("stragglar options straggler and late name different ranks");
  const std::string phase1 = options.get_string("phase1", "ring");
  if (phase1 != "ring") {
    throw InputError(
        "stragglar option phase1=" + phase1 +
        ": unknown phase-1 variant (valid: ring; phase 2 alone is stragglar_phase2())");
  }
  return late;
}

GeneratedRounds make_stragglar(int n, const Options& options) {
  const std::vector<int> late = checked_late(n, options);
  const int k = static_cast<int>(late.size());
  const int m = n - k;
  GeneratedRounds g{
      Schedule::make(Collective::allreduce, "stragglar", n, m), stragglar_stream(n, k),
      static_cast<std::size_t>(m - 1 + (k > 1 ? m + k - 2 : 0) + choose_phase2(n, k - 1).rounds)};
  // The header carries the final labels; the stream is relabeled below.
  g.header.straggler = late.back();
  if (k > 1) g.header.late = late;
  // Logical late rank m+i becomes late[i]; the early ranks take the others in order.
  std::vector<int> perm(static_cast<std::size_t>(n));
  std::vector<char> taken(static_cast<std::size_t>(n), 0);
  bool identity = true;
  for (int i = 0; i < k; ++i) {
    perm[static_cast<std::size_t>(m + i)] = late[static_cast<std::size_t>(i)];
    taken[static_cast<std::size_t>(late[static_cast<std::size_t>(i)])] = 1;
  }
  for (int i = 0, next = 0; i < m; ++i, ++next) {
    while (taken[static_cast<std::size_t>(next)]) ++next;
    perm[static_cast<std::size_t>(i)] = next;
  }
  for (int i = 0; i < n; ++i) identity = identity && perm[static_cast<std::size_t>(i)] == i;
  if (!identity) g.stream = relabeled(std::move(g.stream), std::move(perm));
  return g;
}

}  // namespace

Schedule stragglar_phase2(int n, int late) {
  check_ranks(n);
  if (late < 1 || late > n - 2) {
    throw InputError("stragglar: " + std::to_string(late) + " late ranks with " +
                     std::to_string(n) + " ranks (valid: 1.." + std::to_string(n - 2) + ")");
  }
  Schedule s = Schedule::make(Collective::allreduce, "stragglar", n, n - late);
  s.straggler = n - 1;
  append_rounds(s, phase2_stream(n, late - 1));
  return s;
}

int stragglar_round_lower_bound(int n) { return stragglar_round_lower_bound(n, 1); }

int stragglar_rounds(int n) { return stragglar_rounds(n, 1); }

int stragglar_rounds(int n, int late) {
  check_ranks(n);
  if (late < 1 || late > n - 2) {
    throw InputError("stragglar: " + std::to_string(late) + " late ranks with " +
                     std::to_string(n) + " ranks (valid: 1.." + std::to_string(n - 2) + ")");
  }
  if (late == 1 && is_pow2(n)) return stragglar_round_lower_bound(n);
  return choose_phase2(n, late - 1).rounds;
}

int stragglar_round_lower_bound(int n, int late) { return n - late - 1 + ceil_log2(n); }

AlgorithmInfo stragglar_info() {
  return AlgorithmInfo{
      .name = "stragglar",
      .description =
          "StragglAR: ring reduce-scatter among the n-k early ranks while the k late ones are "
          "late, the first k-1 late ranks folded in as they arrive, then exchanges with the "
          "last and broadcast; n-k chunks (default k = 1)",
      .supported_ranks = "n >= 3",
      .supports_ranks = [](int n) { return n >= 3; },
      .options = {{"straggler", "rank that arrives last (one late rank)", "n-1"},
                  {"phase1", "phase-1 variant (ring)", "ring"},
                  {"stragglers", "number k of late ranks, 1..n-2", "1"},
                  {"late",
                   "the k late ranks in expected arrival order, e.g. 5,7 (the last arrives last)",
                   "n-k..n-1"}},
      .rounds = make_stragglar,
      // One late rank: the closed form. Several: no closed form; the generated schedule's
      // exact cost under the same semantics (schedule_cost).
      .cost =
          [](int n, double bytes, const CostParams& p, const Options& o) {
            if (late_count(n, o) == 1) return stragglar_worst_cost(n, bytes, p);
            return schedule_cost(generate("stragglar", n, o), bytes, p);
          },
      // Phase 1: at most n-2 ring rounds among the early ranks; the fold-in at most n-2 more
      // rounds with fewer than n transfers each; then at most n-2+ceil(log2 n)+1 rounds in
      // which every rank sends at most once.
      .size =
          [](int n, const Options& o) {
            const double r = n, lg = size_log2(n);
            if (late_count(n, o) == 1)
              return ScheduleSize{r, 2 * r + lg, (r - 1) * (r - 2) + r * (r + lg), r, r * r};
            return ScheduleSize{r, 3 * r + lg, (r - 1) * (r - 2) + r * r + r * (r + lg), r, r * r};
          },
      .straggler_aware = true,
      .check_options = [](int n, const Options& o) { checked_late(n, o); },
  };
}

}  // namespace ssim::alg
