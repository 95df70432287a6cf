// The timeline construction of stragglar_timeline.hpp. Notation: m = 2^M chunk owners,
// A = M+2 ages, D = M-2, K = m/4. Chunk c is released in round c (exchange with the
// straggler) and gets prof[k] copies at age k (round c+k), k = 1..A:
//   1, 2, 4, ..., 2^(D-1), then 1, K-1, K, K        (sum m-1: every owner gets it once).
// Holders double through age D (every holder sends), so at ages <= D each holder must send.
//
// Shifting by the round makes every rank's life the same, seen from its exchange time 0: a
// timeline of times 0..m-1 (cyclic). At each time 1..m-1 the rank sends one chunk and
// receives one. Every rank holds exactly two unfinished chunks at every time, so a timeline
// is two tracks: a track holds a chunk from the time after it receives it (at age j) until
// its last age A, a segment of A-j times; when a segment ends the track receives its next
// chunk in that same time (its countdown d = the segment's times left, 0 at the end). A
// time where no track ends receives a chunk at age A (not kept). So:
//   segments: own chunk A long (received in the exchange at time 0, track 0), and per age
//   j = 1..A-1 prof[j] segments of A-j times: "long" ones (A-j >= 4) and 1 of 3, K-1 of 2,
//   K of 1 times;
//   a track at countdown d holds its chunk at age A-d; d >= 4 means an age <= D: forced to
//   send (F). Never both tracks F, never both ending at one time, track 1 not ending and not
//   F at time 0 (the exchange). Sends at d = 3, 2, 1, 0: exactly 1, K-1, K, K.
// Construction: the K long segments form a chain, each starting (the time after its
// receive) at the time the previous one ends, on the other track (overlap 1). The lengths
// leave one time over, and K even needs an even number of track switches: so one junction
// overlaps 2 (switch), two have overlap 0 (same track, one of them the own chunk's start);
// the gaps of each track take the short segments (random composition), then a flow assigns
// the sends at the non-forced times. Seeded tries until the checks pass (about one in five
// at M = 10, 11). Then the endgame as in the header.
#include "algorithms/stragglar_timeline.hpp"

#include <algorithm>
#include <bit>
#include <cstdint>
#include <limits>
#include <map>
#include <utility>

#include "common/random.hpp"

namespace ssim::alg {
namespace {

// Min-cost max-flow by successive shortest paths (Bellman-Ford with a queue): small graphs.
class MinCostFlow {
 public:
  explicit MinCostFlow(int nodes) : adj_(static_cast<std::size_t>(nodes)) {}
  // Returns the edge's id (its flow: flow(id)).
  int add(int from, int to, std::int64_t cap, std::int64_t cost) {
    const int id = static_cast<int>(edges_.size());
    edges_.push_back({to, cap, cost});
    adj_[static_cast<std::size_t>(from)].push_back(id);
    edges_.push_back({from, 0, -cost});
    adj_[static_cast<std::size_t>(to)].push_back(id + 1);
    return id;
  }
  std::int64_t flow(int id) const { return edges_[static_cast<std::size_t>(id) + 1].cap; }

  std::int64_t run(int s, int t) {
    const std::size_t nodes = adj_.size();
    constexpr std::int64_t kInf = std::numeric_limits<std::int64_t>::max() / 4;
    std::int64_t total = 0;
    std::vector<std::int64_t> dist(nodes);
    std::vector<int> via(nodes);
    std::vector<char> queued(nodes);
    std::vector<int> queue;
    for (;;) {
      std::fill(dist.begin(), dist.end(), kInf);
      std::fill(via.begin(), via.end(), -1);
      dist[static_cast<std::size_t>(s)] = 0;
      queue.assign(1, s);
      std::fill(queued.begin(), queued.end(), 0);
      queued[static_cast<std::size_t>(s)] = 1;
      for (std::size_t head = 0; head < queue.size(); ++head) {
        const int u = queue[head];
        queued[static_cast<std::size_t>(u)] = 0;
        for (const int id : adj_[static_cast<std::size_t>(u)]) {
          const Edge& e = edges_[static_cast<std::size_t>(id)];
          const std::size_t v = static_cast<std::size_t>(e.to);
          if (e.cap > 0 && dist[static_cast<std::size_t>(u)] + e.cost < dist[v]) {
            dist[v] = dist[static_cast<std::size_t>(u)] + e.cost;
            via[v] = id;
            if (!queued[v]) {
              queued[v] = 1;
              queue.push_back(e.to);
            }
          }
        }
      }
      if (dist[static_cast<std::size_t>(t)] == kInf) return total;
      std::int64_t push = kInf;
      for (int v = t; v != s;) {
        const int id = via[static_cast<std::size_t>(v)];
        push = std::min(push, edges_[static_cast<std::size_t>(id)].cap);
        v = edges_[static_cast<std::size_t>(id ^ 1)].to;
      }
      for (int v = t; v != s;) {
        const int id = via[static_cast<std::size_t>(v)];
        edges_[static_cast<std::size_t>(id)].cap -= push;
        edges_[static_cast<std::size_t>(id ^ 1)].cap += push;
        v = edges_[static_cast<std::size_t>(id ^ 1)].to;
      }
      total += push;
    }
  }

 private:
  struct Edge {
    int to;
    std::int64_t cap, cost;
  };
  std::vector<Edge> edges_;
  std::vector<std::vector<int>> adj_;
};

class Rng {
 public:
  explicit Rng(std::uint64_t seed) : gen_(seed) {}
  int below(int n) { return static_cast<int>(gen_.next() % static_cast<std::uint64_t>(n)); }
  template <typename T>
  void shuffle(std::vector<T>& v) {
    for (std::size_t i = v.size(); i > 1; --i)
      std::swap(v[i - 1], v[static_cast<std::size_t>(below(static_cast<int>(i)))]);
  }

 private:
  SplitMix64 gen_;
};

constexpr int kNone = -1;

// One try of the file comment's construction: the two tracks' countdowns per time, or empty.
std::vector<std::vector<int>> build_tracks(int M, Rng& rng) {
  const int m = 1 << M, A = M + 2, D = M - 2, K = m / 4;
  std::vector<int> lengths;  // long segments but the own chunk, in chain order
  for (int k = 1; k <= D; ++k) lengths.insert(lengths.end(), std::size_t{1} << (k - 1), A - k);
  rng.shuffle(lengths);
  lengths.insert(lengths.begin(), A);
  std::vector<int> overlap(static_cast<std::size_t>(K), 1);
  overlap[static_cast<std::size_t>(K - 1)] = 0;  // last long segment -> own chunk, track 0
  const int zero = rng.below(K - 1);
  int two = rng.below(K - 2);
  if (two >= zero) ++two;
  overlap[static_cast<std::size_t>(zero)] = 0;
  overlap[static_cast<std::size_t>(two)] = 2;

  std::vector<std::vector<int>> tr(2, std::vector<int>(static_cast<std::size_t>(m), kNone));
  int start = 1, track = 0;
  for (int i = 0; i < K; ++i) {
    const int len = lengths[static_cast<std::size_t>(i)];
    for (int x = 0; x < len; ++x) {
      int& cell = tr[static_cast<std::size_t>(track)][static_cast<std::size_t>((start + x) % m)];
      if (cell != kNone) return {};
      cell = len - 1 - x;
    }
    start += len - overlap[static_cast<std::size_t>(i)];
    if (overlap[static_cast<std::size_t>(i)] >= 1) track ^= 1;
  }
  if (start != 1 + m || track != 0) return {};

  // Gaps: maximal runs of free times per track, scanned from a long segment's end.
  std::vector<std::pair<int, std::vector<int>>> gaps;
  for (int i = 0; i < 2; ++i) {
    const std::vector<int>& row = tr[static_cast<std::size_t>(i)];
    const auto end = std::find(row.begin(), row.end(), 0);
    if (end == row.end()) return {};
    const int base = static_cast<int>(end - row.begin());
    std::vector<int> gap;
    for (int x = 1; x <= m; ++x) {
      const int t = (base + x) % m;
      if (row[static_cast<std::size_t>(t)] == kNone) {
        gap.push_back(t);
      } else if (!gap.empty()) {
        gaps.emplace_back(i, std::move(gap));
        gap.clear();
      }
    }
  }
  // Short segments: 1 of 3 times, K-1 of 2, the rest (K) of 1.
  std::vector<int> long_enough;
  std::size_t total = 0;
  for (std::size_t j = 0; j < gaps.size(); ++j) {
    total += gaps[j].second.size();
    if (gaps[j].second.size() >= 3) long_enough.push_back(static_cast<int>(j));
  }
  if (total != static_cast<std::size_t>(3 * K + 1) || long_enough.empty()) return {};
  const int three =
      long_enough[static_cast<std::size_t>(rng.below(static_cast<int>(long_enough.size())))];
  std::vector<int> slots;  // one entry per possible 2-segment of a gap
  for (std::size_t j = 0; j < gaps.size(); ++j) {
    const std::size_t rest = gaps[j].second.size() - (static_cast<int>(j) == three ? 3 : 0);
    slots.insert(slots.end(), rest / 2, static_cast<int>(j));
  }
  if (slots.size() < static_cast<std::size_t>(K - 1)) return {};
  rng.shuffle(slots);
  std::vector<int> twos(gaps.size(), 0);
  for (int s = 0; s < K - 1; ++s)
    ++twos[static_cast<std::size_t>(slots[static_cast<std::size_t>(s)])];
  for (std::size_t j = 0; j < gaps.size(); ++j) {
    const std::vector<int>& gap = gaps[j].second;
    const int three_here = static_cast<int>(j) == three ? 1 : 0;
    std::vector<int> parts(static_cast<std::size_t>(twos[j]), 2);
    parts.insert(parts.end(), gap.size() - 2 * static_cast<std::size_t>(twos[j]) - 3 * three_here,
                 1);
    if (three_here) parts.push_back(3);
    rng.shuffle(parts);
    std::size_t x = 0;
    for (const int p : parts) {
      for (int y = 0; y < p; ++y)
        tr[static_cast<std::size_t>(gaps[j].first)][static_cast<std::size_t>(gap[x++])] = p - 1 - y;
    }
  }
  for (int t = 0; t < m; ++t) {
    const int a = tr[0][static_cast<std::size_t>(t)], b = tr[1][static_cast<std::size_t>(t)];
    if ((a == 0 && b == 0) || (a >= 4 && b >= 4)) return {};
  }
  const int at0 = tr[1][0];
  if (at0 < 1 || at0 > 3) return {};
  return tr;
}

// Send ages per time 1..m-1 for the tracks (forced at F, a flow elsewhere), or empty.
std::vector<int> assign_sends(int M, const std::vector<std::vector<int>>& tr) {
  const int m = 1 << M, A = M + 2, K = m / 4;
  std::vector<int> send(static_cast<std::size_t>(m), 0);
  // Free times grouped by their pair of countdowns (a <= b, both <= 3).
  std::map<std::pair<int, int>, std::vector<int>> groups;
  for (int t = 1; t < m; ++t) {
    const int a = tr[0][static_cast<std::size_t>(t)], b = tr[1][static_cast<std::size_t>(t)];
    if (a >= 4 || b >= 4) {
      send[static_cast<std::size_t>(t)] = A - std::max(a, b);
    } else {
      groups[{std::min(a, b), std::max(a, b)}].push_back(t);
    }
  }
  const int s = 0, sink = 1, klass = 2;  // class node klass + d for d = 0..3
  MinCostFlow f(6 + static_cast<int>(groups.size()));
  const std::int64_t cap[4] = {K, K, K - 1, 1};
  for (int d = 0; d < 4; ++d) f.add(klass + d, sink, cap[d], 0);
  std::vector<std::array<int, 2>> ids;
  std::int64_t need = 0;
  int node = 6;
  for (const auto& [pair, times] : groups) {
    const auto size = static_cast<std::int64_t>(times.size());
    need += size;
    f.add(s, node, size, 0);
    ids.push_back({f.add(node, klass + pair.first, size, 0),
                   pair.second != pair.first ? f.add(node, klass + pair.second, size, 0) : -1});
    ++node;
  }
  if (f.run(s, sink) != need) return {};
  std::size_t g = 0;
  for (const auto& [pair, times] : groups) {
    std::int64_t first = f.flow(ids[g][0]);
    for (const int t : times)
      send[static_cast<std::size_t>(t)] = A - (first-- > 0 ? pair.first : pair.second);
    ++g;
  }
  return send;
}

// The cyclic part's offsets per age from the tracks and sends; false when a check fails.
bool offsets(int M, const std::vector<std::vector<int>>& tr, const std::vector<int>& send,
             Phase2Timeline& out) {
  const int m = 1 << M, A = M + 2, D = M - 2, K = m / 4;
  out.send.assign(static_cast<std::size_t>(A + 1), {});
  out.recv.assign(static_cast<std::size_t>(A + 1), {});
  for (int t = 1; t < m; ++t) {
    int r = A;
    for (int i = 0; i < 2; ++i) {
      if (tr[static_cast<std::size_t>(i)][static_cast<std::size_t>(t)] == 0)
        r = A - 1 - tr[static_cast<std::size_t>(i)][static_cast<std::size_t>((t + 1) % m)];
    }
    const int k = send[static_cast<std::size_t>(t)];
    out.send[static_cast<std::size_t>(k)].push_back(((k - t) % m + m) % m);
    out.recv[static_cast<std::size_t>(r)].push_back(((r - t) % m + m) % m);
  }
  std::vector<char> held(static_cast<std::size_t>(m), 0);
  held[0] = 1;
  for (int k = 1; k <= A; ++k) {
    const std::int64_t want = k <= D       ? std::int64_t{1} << (k - 1)
                              : k == D + 1 ? 1
                              : k == D + 2 ? K - 1
                                           : K;
    const auto& snd = out.send[static_cast<std::size_t>(k)];
    const auto& rcv = out.recv[static_cast<std::size_t>(k)];
    if (static_cast<std::int64_t>(snd.size()) != want || rcv.size() != snd.size()) return false;
    for (const int q : snd) {
      if (!held[static_cast<std::size_t>(q)]) return false;
    }
    for (const int q : rcv) {
      if (held[static_cast<std::size_t>(q)]) return false;
      held[static_cast<std::size_t>(q)] = 1;
    }
  }
  return std::all_of(held.begin(), held.end(), [](char h) { return h != 0; });
}

// The last M rounds: each a min-cost max-flow, receivers (grouped by the chunks they lack)
// -> chunk -> senders (grouped by the chunks they hold; the straggler holds all), a copy
// costing its chunk's holder count, so that spare senders go to the chunks furthest from
// done. False when a chunk is still missing somewhere after round M. (Forcing each chunk's
// minimum copies to still finish in time, as lower bounds, did worse: the greedy by holder
// count with the spreading tie-break completed every timeline tried for M = 5..11.)
bool plan_endgame(int M, Phase2Timeline& out) {
  const int m = 1 << M, n = m + 1, A = M + 2;
  const int first = m - A;  // in-flight chunks first .. m-1, bit c - first
  const std::uint32_t all = (std::uint32_t{1} << A) - 1;
  std::vector<std::uint32_t> hold(static_cast<std::size_t>(n), 0);
  hold[static_cast<std::size_t>(m)] = all;  // the straggler
  for (int c = first; c < m; ++c) {
    // Holders at the start of round m: the owner and the receivers of ages 1 .. m-1-c.
    const std::uint32_t bit = std::uint32_t{1} << (c - first);
    hold[static_cast<std::size_t>(c)] |= bit;
    for (int k = 1; k <= m - 1 - c; ++k) {
      for (const int q : out.recv[static_cast<std::size_t>(k)])
        hold[static_cast<std::size_t>((c + q) % m)] |= bit;
    }
  }
  out.endgame.clear();
  for (int step = 0; step < M; ++step) {
    std::map<std::uint32_t, std::vector<int>> lacking, holding;
    std::vector<int> holders(static_cast<std::size_t>(A), 0);
    for (int r = 0; r < n; ++r) {
      const std::uint32_t h = hold[static_cast<std::size_t>(r)];
      if (r < m && (h & all) != all) lacking[~h & all].push_back(r);
      if (h) holding[h].push_back(r);
      for (int j = 0; j < A; ++j) holders[static_cast<std::size_t>(j)] += (h >> j) & 1;
    }
    // The tie-break below costs less than n*A in all, one holder more costs kScale.
    const std::int64_t kScale = static_cast<std::int64_t>(n + 1) * A + 1;
    const int s = 0, t = 1, chunk_in = 2, chunk_out = 2 + A;
    const int base = 2 + 2 * A;
    MinCostFlow f(base + static_cast<int>(lacking.size() + holding.size()));
    // Cost per copy: the chunk's holders (scaled to dominate the tie-break below).
    for (int j = 0; j < A; ++j)
      f.add(chunk_in + j, chunk_out + j, n, kScale * holders[static_cast<std::size_t>(j)]);
    std::vector<std::vector<std::pair<int, int>>> in_ids, out_ids;  // (chunk bit, edge id)
    int node = base;
    for (const auto& [mask, ranks] : lacking) {
      const auto size = static_cast<std::int64_t>(ranks.size());
      f.add(s, node, size, 0);
      auto& ids = in_ids.emplace_back();
      // Tie-break: a group's ranks spread over the chunks they lack (pieces of its size,
      // each dearer by one), so that ranks alike now hold different chunks next round.
      const std::int64_t piece = (size + std::popcount(mask) - 1) / std::popcount(mask);
      for (int j = 0; j < A; ++j) {
        if (((mask >> j) & 1) == 0) continue;
        for (std::int64_t lo = 0, p = 0; lo < size; lo += piece, ++p)
          ids.emplace_back(j, f.add(node, chunk_in + j, std::min(piece, size - lo), p));
      }
      ++node;
    }
    for (const auto& [mask, ranks] : holding) {
      const auto size = static_cast<std::int64_t>(ranks.size());
      f.add(node, t, size, 0);
      auto& ids = out_ids.emplace_back();
      for (int j = 0; j < A; ++j) {
        if ((mask >> j) & 1) ids.emplace_back(j, f.add(chunk_out + j, node, size, 0));
      }
      ++node;
    }
    f.run(s, t);
    // Each group's ranks, in rank order, take the chunks its edges carry flow for.
    auto ranks_per_chunk = [&](const std::map<std::uint32_t, std::vector<int>>& groups,
                               const std::vector<std::vector<std::pair<int, int>>>& ids) {
      std::vector<std::vector<int>> per(static_cast<std::size_t>(A));
      std::size_t g = 0;
      for (const auto& [mask, ranks] : groups) {
        std::size_t r = 0;
        for (const auto& [j, id] : ids[g]) {
          for (std::int64_t x = f.flow(id); x > 0; --x)
            per[static_cast<std::size_t>(j)].push_back(ranks[r++]);
        }
        ++g;
      }
      return per;
    };
    const std::vector<std::vector<int>> receivers = ranks_per_chunk(lacking, in_ids),
                                        senders = ranks_per_chunk(holding, out_ids);
    auto& round = out.endgame.emplace_back();
    for (int j = 0; j < A; ++j) {
      const auto& rcv = receivers[static_cast<std::size_t>(j)];
      const auto& snd = senders[static_cast<std::size_t>(j)];
      if (rcv.size() != snd.size()) return false;
      for (std::size_t i = 0; i < rcv.size(); ++i) round.push_back({snd[i], rcv[i], first + j});
    }
    for (const auto& copy : round)
      hold[static_cast<std::size_t>(copy[1])] |= std::uint32_t{1} << (copy[2] - first);
  }
  return std::all_of(hold.begin(), hold.end(), [all](std::uint32_t h) { return h == all; });
}

}  // namespace

std::optional<Phase2Timeline> stragglar_timeline(int n) {
  const int m = n - 1;
  if (m < 16 || (m & (m - 1)) != 0 || m > (1 << 20)) return std::nullopt;
  const int M = std::countr_zero(static_cast<unsigned>(m));
  constexpr int kTries = 400;
  for (int attempt = 0; attempt < kTries; ++attempt) {
    Rng rng(splitmix64(static_cast<std::uint64_t>(n) * 1000 + static_cast<std::uint64_t>(attempt)));
    const std::vector<std::vector<int>> tr = build_tracks(M, rng);
    if (tr.empty()) continue;
    const std::vector<int> send = assign_sends(M, tr);
    if (send.empty()) continue;
    Phase2Timeline out;
    out.n = n;
    out.ages = M + 2;
    if (!offsets(M, tr, send, out)) continue;
    if (plan_endgame(M, out)) return out;
  }
  return std::nullopt;
}

}  // namespace ssim::alg
