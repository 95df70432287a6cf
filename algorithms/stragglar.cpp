// StragglAR (arXiv 2505.23523): n-1 chunks; phase 1 is a ring ReduceScatter among the n-1
// non-stragglers (run while the straggler is late), phase 2 folds the straggler in and
// spreads the n-1 fully reduced chunks.
//
// Phase 2, with S = n-1 the straggler and m = n-1 the number of non-stragglers/chunks:
// round r <= m-1 contains the exchange S <-> r on chunk r (both reduce), which "releases"
// chunk r: it is fully reduced on r and S. Everything else copies fully reduced chunks.
// S is busy until round m-1, then holds everything and sends one chunk per round.
// Lower bound: chunk m-1 is released in round m-1 with two holders and holders at most
// double per round, so R >= m-1 + ceil(log2 n) = n-2+L with L = ceil(log2 n).
//
// Powers of two: a group construction that meets the bound (make_groups below).
//   Every non-straggler belongs to exactly one group: the holders of one active chunk
//   (released, not yet everywhere). At the start of round t the group of chunk t-k has
//   2^(k-1) members for k = 1..L; the oldest group O (chunk o = t-L, n/2 members) contains
//   the busy rank t. Round t pairs O \ {t} one-to-one with the n/2-1 members of the younger
//   groups: each pair swaps (O member gives o, the other gives its chunk). Then o is on all
//   n-1 non-stragglers (complete), every younger group doubled, and rank t starts the group
//   of chunk t. These are the doubling deadlines of the paper (I4, I5).
//   Critical window (I6): rank r must be in the group of chunk r-L when it meets S in round
//   r, because it cannot send then and only the oldest group has a spare member. So an O
//   member r with t < r < t+L may only join a chunk c <= r-L; it takes the newest such c.
//   A member of the younger groups never changes group before its chunk becomes oldest,
//   so the rule keeps every rank r inside a group c <= r-L until round r. It can always be
//   met: window rank t+i needs one of the i oldest younger chunks, which have
//   2^(L-2) + ... + 2^(L-1-i) >= i members to pair with (Hall's condition).
//   Ramp-up: rounds 0..L-1 run the same rule from a virtual start in which the ranks sit in
//   groups of the nonexistent chunks -L..-1 (rank r < L in group r-L, so it holds nothing
//   when it meets S); a virtual chunk moves no data, so the first rounds are a pure doubling
//   of chunks 0, 1, ... towards the ranks that will need them.
//   Tail (rounds >= m): no chunk is released, S is free. The pairing continues for the old
//   chunks; the O member that would have been busy and the partners of the groups of the
//   nonexistent chunks m, m+1, ... are idle: they receive chunk m-1 from S and from the
//   ranks that got it the same way earlier (1, 2, 4, ... of them), so chunk m-1 goes
//   1, 3, 7, ..., n-1 and ends with chunk m-2 in round m-3+L = R-1.
//
// Other n: the group sizes above do not fit (n-1 is not 2^L - 1), and keeping a perfect
// pipeline needs ranks that hold two active chunks, which this file does not construct.
// A randomised greedy takes over (make_greedy): per round, chunks from the newest to the
// oldest, each sent by its idle holders with the fewest active chunks to the idle ranks that
// lack it, ranks in the critical window only getting chunks they may hold when meeting S
// (c + L <= r) and preferring c = r-L; in the tail S helps. A few seeded tie-breaks are tried
// and the schedule with the fewest rounds kept (README.md has the table against the bound).
#include "algorithms/stragglar.hpp"

#include <algorithm>
#include <array>
#include <bit>
#include <cstdint>
#include <map>
#include <mutex>
#include <string>
#include <utility>
#include <vector>

#include "algorithms/generators.hpp"
#include "common/error.hpp"

namespace ssim::alg {
namespace {

int ceil_log2(int x) {
  int l = 0;
  while ((std::int64_t{1} << l) < x) ++l;
  return l;
}

bool is_pow2(int x) { return x > 0 && (x & (x - 1)) == 0; }

// Which non-straggler holds which fully reduced chunk (an m x m bit matrix), per-chunk
// holder counts, and per-rank counts of held active chunks.
class Holdings {
 public:
  explicit Holdings(int m)
      : m_(m),
        words_((m + 63) / 64),
        bits_(static_cast<std::size_t>(m) * words_, 0),
        by_chunk_(static_cast<std::size_t>(m) * words_, 0),
        count_(m, 0),
        active_(m, 0) {}

  bool has(int rank, int chunk) const { return (row(rank)[chunk / 64] >> (chunk % 64)) & 1u; }
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
    by_chunk_[static_cast<std::size_t>(chunk) * words_ + rank / 64] |= std::uint64_t{1} << (rank % 64);
    ++active_[rank];
    if (++count_[chunk] == m_) {
      ++completed_;
      for (int& a : active_) --a;
    }
  }

 private:
  const std::uint64_t* row(int rank) const { return bits_.data() + static_cast<std::size_t>(rank) * words_; }
  std::uint64_t* row(int rank) { return bits_.data() + static_cast<std::size_t>(rank) * words_; }

  int m_;
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

// Shared round loop: the policy fills the copies of round t; this applies them, records
// the round (exchange first) when `out` is given, and stops when every chunk is complete.
template <typename Policy>
int run_phase2(int n, Policy&& policy, std::vector<Round>* out) {
  const int m = n - 1;
  const int straggler = m;
  Holdings hold(m);
  RoundPlan plan(n);
  const int limit = 4 * n + 64;
  int t = 0;
  for (; t < m || hold.completed() < m; ++t) {
    SSIM_CHECK(t < limit, "stragglar: phase 2 did not finish");
    plan.reset();
    if (t < m) {
      plan.sending[t] = plan.receiving[t] = 1;
      plan.sending[straggler] = plan.receiving[straggler] = 1;
    }
    policy(t, hold, plan);
    if (out) {
      Round& round = out->emplace_back();
      round.phase = t < m ? "straggler-exchange" : "broadcast";
      round.transfers.reserve(plan.copies.size() + 2);
      if (t < m) {
        round.add(t, straggler, t, t + 1, Op::reduce);
        round.add(straggler, t, t, t + 1, Op::reduce);
      }
      for (const RoundPlan::Copy& c : plan.copies) round.add(c.src, c.dst, c.chunk, c.chunk + 1, Op::copy);
    }
    if (t < m) hold.add(t, t);
    for (const RoundPlan::Copy& c : plan.copies) {
      if (c.dst != straggler) hold.add(c.dst, c.chunk);
    }
  }
  return t;
}

// Gives idle ranks chunks they lack from idle holders, newest chunk first; in the tail the
// straggler (which holds everything) is the first holder asked.
void fill_idle(int t, int n, const Holdings& hold, RoundPlan& plan) {
  const int m = n - 1;
  const int straggler = m;
  std::vector<int> senders, receivers;
  for (int c = std::min(t, m) - 1; c >= 0; --c) {
    if (hold.complete(c)) continue;
    senders.clear();
    receivers.clear();
    if (t >= m && !plan.sending[straggler]) senders.push_back(straggler);
    for (int r = 0; r < m; ++r) {
      if (!plan.sending[r] && hold.has(r, c)) senders.push_back(r);
      if (!plan.receiving[r] && !hold.has(r, c)) receivers.push_back(r);
    }
    const std::size_t k = std::min(senders.size(), receivers.size());
    for (std::size_t i = 0; i < k; ++i) plan.copy(senders[i], receivers[i], c);
  }
}

// The group construction (file comment); exact for powers of two.
int make_groups(int n, std::vector<Round>* out) {
  const int m = n - 1;
  const int L = ceil_log2(n);
  // Virtual start: group of chunk -k has 2^(k-1) members for k < L, the oldest (-L) the
  // rest; rank r < L sits in group r-L, the others fill the younger groups first.
  std::vector<int> group(m);
  std::map<int, int> room;
  int assigned = 0;
  for (int k = 1; k < L; ++k) assigned += (room[-k] = 1 << (k - 1));
  room[-L] = m - assigned;
  for (int r = 0; r < std::min(L, m); ++r) {
    group[r] = r - L;
    --room[r - L];
  }
  int next = std::min(L, m);
  for (int k = 1; k <= L; ++k) {
    for (; room[-k] > 0 && next < m; --room[-k]) group[next++] = -k;
  }
  SSIM_CHECK(next == m, "stragglar: virtual start does not place every rank");

  std::vector<int> old_members, young, new_group;
  std::vector<char> taken;
  auto policy = [&](int t, const Holdings& hold, RoundPlan& plan) {
    const int busy = t < m ? t : -1;
    const int o = t - L;
    old_members.clear();
    young.clear();
    for (int r = 0; r < m; ++r) {
      if (r == busy) continue;
      (group[r] == o ? old_members : young).push_back(r);
    }
    std::stable_sort(young.begin(), young.end(), [&](int a, int b) { return group[a] < group[b]; });
    taken.assign(young.size(), 0);
    new_group = group;
    auto pair = [&](int a, std::size_t yi) {
      const int b = young[yi];
      taken[yi] = 1;
      if (o >= 0 && o < m && !hold.has(b, o)) plan.copy(a, b, o);
      const int g = group[b];
      if (g >= 0 && g < m && !hold.has(a, g)) plan.copy(b, a, g);
      new_group[a] = g;
    };
    // Critical window first: rank a (t < a < t+L) joins the newest group c <= a-L.
    std::vector<char> placed(old_members.size(), 0);
    for (std::size_t i = 0; i < old_members.size(); ++i) {
      const int a = old_members[i];
      if (busy < 0 || a <= t || a >= t + L) continue;
      std::size_t best = young.size();
      for (std::size_t yi = 0; yi < young.size(); ++yi) {
        if (taken[yi] || group[young[yi]] > a - L) continue;
        if (best == young.size() || group[young[yi]] > group[young[best]]) best = yi;
      }
      if (best < young.size()) {
        pair(a, best);
        placed[i] = 1;
      }
    }
    std::size_t yi = 0;
    for (std::size_t i = 0; i < old_members.size(); ++i) {
      if (placed[i]) continue;
      while (yi < young.size() && taken[yi]) ++yi;
      if (yi == young.size()) break;
      pair(old_members[i], yi);
    }
    if (busy >= 0) new_group[busy] = busy;
    group.swap(new_group);
    fill_idle(t, n, hold, plan);
  };
  return run_phase2(n, policy, out);
}

// Deterministic generator for tie-breaks (splitmix64), independent of the standard library.
class Mixer {
 public:
  explicit Mixer(std::uint64_t seed) : state_(seed) {}
  std::uint64_t next() {
    std::uint64_t z = (state_ += 0x9e3779b97f4a7c15ULL);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
    return z ^ (z >> 31);
  }
  void shuffle(std::vector<int>& v) {
    for (std::size_t i = v.size(); i > 1; --i) std::swap(v[i - 1], v[next() % i]);
  }

 private:
  std::uint64_t state_;
};

struct GreedyVariant {
  std::uint64_t seed = 0;
  bool past_before_future = false;  // receivers past their exchange before the far future ones
};

// The greedy of the file comment. Per round the ranks are ordered once by the number of
// active chunks they hold (random order within a count); each chunk then takes its senders
// from the front of that order and its receivers from the ranks lacking it, shuffled
// within their preference class.
int make_greedy(int n, const GreedyVariant& variant, std::vector<Round>* out) {
  const int m = n - 1;
  const int straggler = m;
  const int L = ceil_log2(n);
  Mixer mix(variant.seed + 0x5eed);
  std::vector<int> shuffled = iota_ranks(m), by_load(m), skip(m + 1);
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
    for (int i = 0; i <= m; ++i) skip[i] = i < m && plan.sending[by_load[i]] ? i + 1 : i;
    for (int c = std::min(t, m) - 1; c >= 0; --c) {
      if (hold.complete(c)) continue;
      for (auto& b : receiver_bucket) b.clear();
      hold.for_each_missing(c, [&](int r) {
        if (plan.receiving[r]) return;
        const bool window = t < m && r > t && r < t + L;
        if (window && c + L > r) return;
        int key = 2;
        if (window) {
          key = r - L == c ? 0 : 1;
        } else if (r < t) {
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
      for (int i = next_free(0); i < m && senders.size() < receivers.size(); i = next_free(i + 1)) {
        const int r = by_load[i];
        if (!hold.has(r, c)) continue;
        senders.push_back(r);
        skip[i] = i + 1;
      }
      if (t >= m && !plan.sending[straggler] && senders.size() < receivers.size()) senders.push_back(straggler);
      for (std::size_t i = 0; i < senders.size(); ++i) plan.copy(senders[i], receivers[i], c);
    }
  };
  return run_phase2(n, policy, out);
}

// The greedy variants tried for a non-power-of-two n: several for small n, where they are
// cheap and a round matters more; one beyond 200 ranks to keep generation fast.
std::vector<GreedyVariant> greedy_variants(int n) {
  const int seeds = n <= 64 ? 16 : n <= 200 ? 4 : 1;
  std::vector<GreedyVariant> v;
  for (int s = 0; s < seeds; ++s) {
    v.push_back({static_cast<std::uint64_t>(s), false});
    if (n <= 200) v.push_back({static_cast<std::uint64_t>(s), true});
  }
  return v;
}

// Runs the construction for n (records the rounds into `out` when given) and returns the
// phase-2 round count.
int build_phase2(int n, std::vector<Round>* out) {
  if (is_pow2(n)) return make_groups(n, out);
  const std::vector<GreedyVariant> variants = greedy_variants(n);
  if (variants.size() == 1) return make_greedy(n, variants.front(), out);
  std::size_t best = 0;
  int best_rounds = 0;
  for (std::size_t i = 0; i < variants.size(); ++i) {
    const int r = make_greedy(n, variants[i], nullptr);
    if (i == 0 || r < best_rounds) {
      best = i;
      best_rounds = r;
    }
  }
  if (out) make_greedy(n, variants[best], out);
  return best_rounds;
}

void check_ranks(int n) {
  if (n < 3) throw InputError("stragglar needs n >= 3 ranks, got " + std::to_string(n));
}

Schedule make_stragglar(int n, const Options& options) {
  check_ranks(n);
  const int straggler = options.get_int("straggler", n - 1, 0, n - 1);
  const std::string phase1 = options.get_string("phase1", "ring");
  if (phase1 != "ring") {
    throw InputError("stragglar option phase1=" + phase1 +
                     ": unknown phase-1 variant (valid: ring; phase 2 alone is stragglar_phase2())");
  }
  const int m = n - 1;
  Schedule s = Schedule::make(Collective::allreduce, "stragglar", n, m);
  std::vector<Round> phase2;
  phase2.reserve(static_cast<std::size_t>(m + ceil_log2(n)));
  build_phase2(n, &phase2);
  s.rounds.reserve(static_cast<std::size_t>(m - 1) + phase2.size());
  const std::vector<int> members = iota_ranks(m);
  append_ring_reduce_scatter(s, members, 0, "reduce-scatter");
  for (Round& r : phase2) s.rounds.push_back(std::move(r));
  s.straggler = m;
  if (straggler != m) {
    // Logical non-straggler i becomes the i-th rank other than the straggler.
    std::vector<int> perm(static_cast<std::size_t>(n));
    for (int i = 0; i < m; ++i) perm[i] = i < straggler ? i : i + 1;
    perm[m] = straggler;
    s.relabel(perm);
  }
  return s;
}

}  // namespace

Schedule stragglar_phase2(int n) {
  check_ranks(n);
  Schedule s = Schedule::make(Collective::allreduce, "stragglar", n, n - 1);
  s.straggler = n - 1;
  build_phase2(n, &s.rounds);
  return s;
}

int stragglar_round_lower_bound(int n) { return n - 2 + ceil_log2(n); }

int stragglar_rounds(int n) {
  check_ranks(n);
  if (is_pow2(n)) return stragglar_round_lower_bound(n);
  static std::mutex mutex;
  static std::map<int, int> cache;
  {
    std::lock_guard<std::mutex> lock(mutex);
    if (auto it = cache.find(n); it != cache.end()) return it->second;
  }
  const int rounds = build_phase2(n, nullptr);
  std::lock_guard<std::mutex> lock(mutex);
  cache[n] = rounds;
  return rounds;
}

AlgorithmInfo stragglar_info() {
  return AlgorithmInfo{
      .name = "stragglar",
      .description = "StragglAR: ring reduce-scatter among the n-1 non-stragglers while the straggler is late, "
                     "then straggler exchanges and broadcast; n-1 chunks",
      .supported_ranks = "n >= 3",
      .supports_ranks = [](int n) { return n >= 3; },
      .options = {{"straggler", "rank that arrives last", "n-1"},
                  {"phase1", "phase-1 variant (ring)", "ring"}},
      .generate = make_stragglar,
      .cost = [](int n, double bytes, const CostParams& p, const Options&) { return stragglar_worst_cost(n, bytes, p); },
      .straggler_aware = true,
  };
}

}  // namespace ssim::alg
