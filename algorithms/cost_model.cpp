#include "algorithms/cost_model.hpp"

#include <algorithm>
#include <bit>
#include <cmath>
#include <cstdint>
#include <vector>

#include "algorithms/schedule.hpp"
#include "common/bits.hpp"
#include "common/error.hpp"

namespace ssim::alg {

// 2(n-1) rounds of one chunk of s/n bytes; the n-1 reduce-scatter rounds also reduce it.
double ring_cost(int n, double bytes, const CostParams& p) {
  const double chunk = bytes / n;
  return 2.0 * (n - 1) * (p.alpha + chunk * p.beta) + (n - 1) * chunk * p.gamma;
}

// C channels of L loops: every round a rank sends C chunks of s/(C L n) one after another on its
// port, the C rings in step (channel-major order), then reduces the last one received.
double nccl_ring_cost(int n, double bytes, int channels, int loops, const CostParams& p) {
  const double c = channels, l = loops;
  const double chunk = bytes / (c * l * n);
  return 2.0 * (n - 1) * l * c * p.alpha + 2.0 * (n - 1) / n * bytes * p.beta +
         (n - 1) * l * chunk * p.gamma;
}

// m-1 rounds of one chunk of s/m bytes, each reduced at the receiver.
double ring_reduce_scatter_cost(int m, double bytes, const CostParams& p) {
  const double chunk = bytes / m;
  return (m - 1) * (p.alpha + chunk * p.beta + chunk * p.gamma);
}

namespace {

// max over 1 <= m <= n of bit_width(m) + popcount(m). Within n's bit width w the best m is
// n itself or n with one set bit k < w-1 cleared and every bit below it set; below that
// width, 2^(w-1) - 1 gives 2(w-1).
int most_width_plus_ones(int n) {
  const auto u = static_cast<unsigned>(n);
  const int w = std::bit_width(u);
  int best = std::max(2 * (w - 1), w + std::popcount(u));
  for (int k = 0; k + 1 < w; ++k) {
    if ((u >> k) & 1u) best = std::max(best, w + std::popcount(u >> (k + 1)) + k);
  }
  return best;
}

}  // namespace

// Fold (rank p+k's whole buffer into rank k, reduced) and unfold (the result back) when
// n is not a power of two p; in between log2 p halving steps moving s/2, s/4, ..., s/p
// bytes, each reduced, and log2 p doubling steps moving the same amounts back. Every rank
// exchanges with one partner per step, and after log2 p butterfly steps every rank has
// waited for every other, so the fold delays all ranks equally.
double rhd_cost(int n, double bytes, const CostParams& p) {
  const int pow2 = 1 << floor_log2(n);
  const double moved = bytes * (pow2 - 1) / pow2;  // s/2 + s/4 + ... + s/p
  double t = 2.0 * floor_log2(n) * p.alpha + 2.0 * moved * p.beta + moved * p.gamma;
  if (n != pow2) t += 2.0 * (p.alpha + bytes * p.beta) + bytes * p.gamma;
  return t;
}

// The fold round swaps halves inside the pairs (s/2 each way, reduced); every first-step
// transfer that touches a pair starts after it, and after log2 p butterfly steps every rank
// has waited for a pair, so the fold delays all ranks equally; the unfold swaps halves back.
double rhd_rabenseifner_cost(int n, double bytes, const CostParams& p) {
  const int pow2 = 1 << floor_log2(n);
  if (n == pow2) return rhd_cost(n, bytes, p);
  const double moved = bytes * (pow2 - 1) / pow2;
  return 2.0 * (floor_log2(n) + 1) * p.alpha + (bytes + 2.0 * moved) * p.beta +
         (bytes / 2 + moved) * p.gamma;
}

double rhd_paper_cost(int n, double bytes, const CostParams& p) {
  if (is_pow2(n)) return 2.0 * floor_log2(n) * p.alpha + 2.0 * (n - 1) / n * bytes * p.beta;
  return 2.0 * ceil_log2(n) * p.alpha + 2.0 * bytes * p.beta * (1.5 - 1.0 / (1 << floor_log2(n)));
}

// One full-buffer exchange (both sides reduce), then ceil(log2 n) - 1 rounds in which the
// 2, 4, 8, ... holders each copy the full buffer to one more rank.
double direct_ideal_cost(int n, double bytes, const CostParams& p) {
  return ceil_log2(n) * (p.alpha + bytes * p.beta) + bytes * p.gamma;
}

// All ranks arrive together: the straggler is idle during the ring among the others, and
// the exchange starts when rank 0 (with every other rank) finishes the ring.
double direct_cost(int n, double bytes, const CostParams& p) {
  return ring_cost(n - 1, bytes, p) + direct_ideal_cost(n, bytes, p);
}

// Pipelined tree, S segments, one round costing c = alpha + (s/S) beta (+ g = gamma s/S
// for a reducing receiver), D = floor(log2 n) the depth of the deepest rank.
//
// Each rank sends at most one and receives at most one transfer per round, so round k of
// a phase (counting non-empty rounds) ends by k (c + g) in the reduce and by k c in the
// broadcast, measured from the phase's start: these bounds are exact when a chain of
// transfers keeps some rank busy in every round. There are 2(S + D - 1) rounds per phase
// (S + D - 1 steps of two), less the empty ones.
//  - Reduce, n >= 3: the leftmost rank of depth D-1 receives in both rounds of step 0 when
//    depth D holds two ranks, its ancestors up the leftmost path have two children each,
//    and the root receives in both rounds of steps D-1 .. S+D-2: a busy chain through all
//    2(S+D-1) rounds. For n = 2^D depth D holds one rank (a first-round child): round 1 is
//    empty and the chain resumes from round 2, so 2(S+D-1) - 1.
//  - Broadcast, S >= 2: the mirror image; the root sends in rounds 0 .. 2S-1 and the last
//    segment walks down a path of ranks that are busy sending the previous segment. For
//    n = 2^D the last step's second round is empty and the lone depth-D rank's parent idles
//    in the round before, so 2(S+D-1) - 2.
//  - Broadcast, S = 1: nothing overlaps; a first child has the data one c after its parent,
//    a second child two c after. Rank m-1 (heap label m, path = binary digits of m after the
//    leading 1, 0 = first child) is reached after (bit_width(m) - 1) + (popcount(m) - 1)
//    c, maximised over m <= n.
//  - n = 2: the root has a single child, one non-empty round per step: S + S rounds.
namespace {

// The two phases of tree_cost, each measured from its start.
double tree_reduce_time(int n, double bytes, int segments, const CostParams& p) {
  if (n < 2) return 0.0;
  const double seg = bytes / segments;
  const double c = p.alpha + seg * p.beta;
  const double g = seg * p.gamma;
  if (n == 2) return segments * (c + g);
  const int steps = segments + floor_log2(n) - 1;
  return (2 * steps - (is_pow2(n) ? 1 : 0)) * (c + g);
}

double tree_broadcast_time(int n, double bytes, int segments, const CostParams& p) {
  if (n < 2) return 0.0;
  const double c = p.alpha + bytes / segments * p.beta;
  if (n == 2) return segments * c;
  const int steps = segments + floor_log2(n) - 1;
  const int pow2 = is_pow2(n) ? 1 : 0;
  return (segments == 1 ? most_width_plus_ones(n) - 2 : 2 * steps - 2 * pow2) * c;
}

}  // namespace

double tree_cost(int n, double bytes, int segments, const CostParams& p) {
  return tree_reduce_time(n, bytes, segments, p) + tree_broadcast_time(n, bytes, segments, p);
}

// The reduce among the n-1 others ends at their root, which is then the only rank the
// exchange waits for (the straggler, arriving with everyone, is idle until then); the
// broadcast among the n-1 starts from the root alone, as in tree_cost.
double straggler_tree_cost(int n, double bytes, int segments, const CostParams& p) {
  return tree_reduce_time(n - 1, bytes, segments, p) +
         straggler_tree_ideal_cost(n, bytes, segments, p);
}

double straggler_tree_ideal_cost(int n, double bytes, int segments, const CostParams& p) {
  return p.alpha + bytes * p.beta + bytes * p.gamma +
         tree_broadcast_time(n - 1, bytes, segments, p);
}

// Double tree, S segments per tree of s / (2S) bytes. Both trees move one segment per step,
// every rank sends and receives at most once per round, and for n >= 3 every one of the
// 2(S + D - 1) rounds of each phase is non-empty (the two trees' depth-D ranks use opposite
// rounds), so the lock-step bound of tree_cost applies: 2(S+D-1) (c + g) + 2(S+D-1) c.
// For n = 2^D the lone depth-D ranks of A and B are each other's parents (n-1 and n/2-1):
// n/2-1 receives from n-1 in round 0 and sends to it in round 1, a link of the busy chain
// on which the sender does not reduce, so the reduce has one g less.
// n = 2: the trees are 1 -> 0 and 0 -> 1 in the same round: S + S rounds.
double dbtree_cost(int n, double bytes, int segments, const CostParams& p) {
  const double seg = bytes / (2.0 * segments);
  const double c = p.alpha + seg * p.beta;
  const double g = seg * p.gamma;
  if (n == 2) return segments * (c + g) + segments * c;
  const int rounds = 2 * (segments + floor_log2(n) - 1);
  return rounds * (c + g) - (is_pow2(n) ? g : 0.0) + rounds * c;
}

// Per round, each rank's ports start free when it reached the round; transfers in order.
double schedule_cost(const Schedule& s, double bytes, const CostParams& p,
                     std::span<const double> arrival) {
  if (s.has_switch_reduces()) {  // InputError: in-network reductions are not point-to-point
    throw InputError("schedule_cost: " + s.algorithm +
                     " reduces in a switch, which this point-to-point evaluation does not cost "
                     "(its closed form and the simulator's alpha-beta model do)");
  }
  const std::size_t n = static_cast<std::size_t>(s.ranks);
  std::vector<double> ready(n, 0.0), send_free(n), recv_free(n), done(n);
  if (!arrival.empty()) ready.assign(arrival.begin(), arrival.end());
  const double first = ready.empty() ? 0.0 : *std::min_element(ready.begin(), ready.end());
  for (const Round& round : s.rounds) {
    send_free = ready;
    recv_free = ready;
    done = ready;
    for (const Transfer& t : round.transfers) {
      const ByteRange br =
          chunk_bytes(static_cast<std::uint64_t>(bytes), s.chunks, t.chunk_begin, t.chunk_end);
      const double m = static_cast<double>(br.length);
      const std::size_t src = static_cast<std::size_t>(t.src),
                        dst = static_cast<std::size_t>(t.dst);
      const double start = std::max(send_free[src], recv_free[dst]);
      const double end = start + p.alpha + m * p.beta;
      send_free[src] = recv_free[dst] = end;
      done[src] = std::max(done[src], end);
      done[dst] = std::max(done[dst], end + (t.op == Op::reduce ? p.gamma * m : 0.0));
    }
    ready = done;
  }
  return ready.empty() ? 0.0 : *std::max_element(ready.begin(), ready.end()) - first;
}

}  // namespace ssim::alg
