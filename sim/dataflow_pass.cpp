// The alpha-beta dataflow pass (run_alphabeta, executor.hpp). Per round, each touched rank's
// ports start free at the time it reached the round; transfers are taken in schedule order, so
// a port's FIFO order is the schedule's. Every transfer is timed by time_transfer
// (transfer_timing.hpp), whichever loop takes it.
//
// With threads, a round in which every rank sends at most once and receives at most once (ring,
// rhd, trees, StragglAR, ...) is computed in parallel: there no port serves two transfers, so a
// transfer starts at max(ready[src], ready[dst]) whatever the others do, and a rank's new ready
// time is the max of its old one and its transfers' ends, which does not depend on the order
// the maxima are taken in. The results are those of the sequential pass, bit for bit. Rounds
// where a port serves several transfers, rounds below RunOptions::parallel_round transfers and
// rounds with in-network reductions run sequentially.
//
// A pipelined NCCL kernel (ProtocolTiming::pipelined, sim/protocol.hpp) runs pipelined (see
// "Pipelined: NCCL's steps overlap their latencies" below): no per-round ready time, its ports
// and per-chunk readiness carry over from round to round.

#include <algorithm>
#include <atomic>
#include <limits>
#include <memory>
#include <span>
#include <string>
#include <utility>
#include <vector>

#include "algorithms/chunk_sizes.hpp"
#include "common/error.hpp"
#include "sim/executor.hpp"
#include "sim/fork_join.hpp"
#include "sim/reducing_switches.hpp"
#include "sim/run_support.hpp"
#include "sim/transfer_timing.hpp"

namespace ssim::sim {

namespace {

// The pass's per-rank arrays (by physical rank) and constants, as raw pointers and values. The
// loops take it by value: a local copy stays in registers across the stores to the arrays,
// where members read through a pointer would be reloaded after every store that might alias.
struct PassView {
  std::uint32_t ranks = 0;
  const int* map = nullptr;        // schedule rank -> physical rank; nullptr: the identity
  double gamma = 0;                // seconds per byte reduced
  const ProtocolTiming* protocol = nullptr;  // the run's protocol (time_transfer)
  alg::ChunkSizes sizes;           // sizes.chunks: the schedule's chunk count
  double* ready = nullptr;         // when the rank reached its current round
  double* send_free = nullptr;     // in the round: when its send port is free
  double* recv_free = nullptr;     // in the round: when its receive port is free
  double* done = nullptr;          // in the round: when all its transfers so far are done
  std::uint32_t* stamp = nullptr;  // the round stamp (1 + round index) it last took part in
  int* touched = nullptr;          // the ranks of the current round (room for every rank)

  std::size_t physical(int rank) const { return static_cast<std::size_t>(map ? map[rank] : rank); }
  // A rank's first transfer in the round stamped `round_stamp`: its ports start free at the
  // time it reached the round. `count`: ranks touched so far in the round.
  void touch(std::size_t r, std::uint32_t round_stamp, std::size_t& count) const {
    if (stamp[r] != round_stamp) {
      stamp[r] = round_stamp;
      send_free[r] = recv_free[r] = done[r] = ready[r];
      touched[count++] = static_cast<int>(r);
    }
  }
};

// Where the sequential loop takes a transfer's route terms from, and counts its bytes.
// Single switch: per-rank arrays; bytes per rank (sent: its up link, received: its down link).
struct StarSide {
  StarTerms terms;
  std::uint64_t* sent = nullptr;
  std::uint64_t* received = nullptr;

  void prefetch(std::size_t) const {}
  AlphaBetaTerms take(std::size_t, std::size_t src, std::size_t dst, std::uint64_t bytes) const {
    sent[src] += bytes;
    received[dst] += bytes;
    return terms.at(src, dst);
  }
};
// General topology: the round's routes, looked up before the loop; bytes per route. The routes
// of the transfers kAhead later are prefetched (overlapping the cache misses of a route cache
// over millions of pairs).
struct CachedSide {
  static constexpr std::size_t kAhead = 8;
  const RouteCache* routes = nullptr;
  const std::uint32_t* route_of = nullptr;  // per transfer of the round
  std::uint64_t* route_bytes = nullptr;
  std::size_t size = 0;  // transfers in the round

  void prefetch(std::size_t j) const {
    if (j + kAhead < size) {
      routes->prefetch_route(route_of[j + kAhead]);
      __builtin_prefetch(&route_bytes[route_of[j + kAhead]]);
    }
  }
  const CachedRoute& take(std::size_t j, std::size_t, std::size_t, std::uint64_t bytes) const {
    route_bytes[route_of[j]] += bytes;
    return routes->route(route_of[j]);
  }
};

// What the sequential loop does with a timed transfer: nothing, or report it to the run's
// trace and timeline (RunOptions::trace, record_timeline).
struct NoReport {
  void operator()(const alg::Transfer&, std::uint32_t, std::size_t, std::size_t, std::size_t,
                  std::uint64_t, const TransferTimes&, const PassView&) const {}
};
struct Report {
  TimelineSink* trace = nullptr;
  std::vector<TransferRecord>* timeline = nullptr;

  void operator()(const alg::Transfer& t, std::uint32_t round, std::size_t index, std::size_t src,
                  std::size_t dst, std::uint64_t bytes, const TransferTimes& times,
                  const PassView& v) const {
    const TransferRecord rec{static_cast<std::int32_t>(round),
                             static_cast<std::int32_t>(index),
                             static_cast<std::int32_t>(src),
                             static_cast<std::int32_t>(dst),
                             t.chunk_begin,
                             t.chunk_end,
                             t.op,
                             bytes,
                             Seconds{v.ready[src]},
                             Seconds{v.ready[dst]},
                             Seconds{times.start},
                             Seconds{times.end},
                             Seconds{times.reduced}};
    if (trace) {
      trace->transfer_side(rec, TimelineSink::Side::send);
      trace->transfer_side(rec, TimelineSink::Side::recv);
    }
    if (timeline) timeline->push_back(rec);
  }
};

// The point-to-point transfers of the round stamped `round_stamp`, in schedule order: each
// starts when its sender's send port and its receiver's receive port are free. Returns the
// number of ranks touched (v.touched).
// The loops here (this one, time_part, merge_part) are kept out of line with the view as a
// by-value parameter: inlined into a DataflowPass member, GCC 12 re-read the view's fields and
// spilled more, about 8% more instructions per transfer (callgrind, ring on a switch).
template <class Side, class Reporter>
[[gnu::noinline]] std::size_t time_transfers(const alg::Round& round, std::uint32_t round_stamp,
                                             const PassView v, const Side side,
                                             const Reporter& report) {
  const alg::Transfer* const transfers = round.transfers.data();
  const std::size_t size = round.transfers.size();
  std::size_t count = 0;
  for (std::size_t j = 0; j < size; ++j) {
    side.prefetch(j);
    const alg::Transfer& t = transfers[j];
    check_transfer(t, static_cast<int>(v.ranks), v.sizes.chunks);
    const std::size_t s = v.physical(t.src), d = v.physical(t.dst);
    v.touch(s, round_stamp, count);
    v.touch(d, round_stamp, count);
    const std::uint64_t bytes = v.sizes.length(t);
    const auto& route = side.take(j, s, d, bytes);  // AlphaBetaTerms or CachedRoute
    const TransferTimes times = time_transfer(std::max(v.send_free[s], v.recv_free[d]), route,
                                              static_cast<double>(bytes), t.op, v.gamma,
                                              v.protocol, s, d);
    v.send_free[s] = times.end;
    v.recv_free[d] = times.end;
    v.done[s] = std::max(v.done[s], times.end);
    v.done[d] = std::max(v.done[d], times.reduced);
    report(t, round_stamp - 1, j, s, d, bytes, times, v);
  }
  return count;
}

// Pipelined: NCCL's steps overlap their latencies (an NCCL kernel's run when
// ProtocolTiming::pipelined).
// NCCL keeps up to NCCL_STEPS = 8 steps in flight per connection, so a step's latency does not
// hold up the next step's send (NVIDIA/nccl src/device/prims_simple.h; tuning.cc charges the
// per-step hardware latency once per step of the pipeline's depth, not once per chunk looped
// through). In this mode the pass keeps no per-round ready time. A rank's send port and
// receive port serve its transfers in schedule order across rounds, and a transfer of m bytes
// on a route of latency a (the protocol's factor applied) and serialization time m w / b:
//   start = max(the sender's send port free, the receiver's receive port free - a,
//               the receiver's kernel started, the data it sends landed at the sender)
//   the sender's port is busy [start, start + m w / b]; the data arrives at the receiver in
//   [start + a, end], end = start + a + m w / b, as in time_transfer, and is applied at end
//   (reduce: end + gamma m).
// "The data it sends": the sender's chunks as the schedule's rounds define them, i.e. after
// every transfer of an earlier round into them has landed (and been reduced); writes of the
// same round are not waited for. Pending writes are kept per rank and dropped once the rank's
// send port is free later than they land (no later send of the rank can start before that), so
// memory is the writes in flight, not ranks x chunks. A schedule whose every round's sends
// forward the previous round's receives (a ring) gains nothing: each step waits for its data,
// as before; one whose ranks can run ahead (a pipelined tree's leaves, NVLS's reduce-scatter
// of the next slice, nvls_tree's stages) overlaps its steps' latencies.
struct PendingWrite {
  std::int32_t begin = 0, end = 0;  // chunks [begin, end)
  double time = 0;                  // landed (and reduced)
};
struct RankWrite {
  std::size_t rank = 0;
  PendingWrite write;
};
// A rank's pending writes, sorted by (begin, end), and the widest of them since the list was
// last empty: the writes overlapping chunks [begin, end) then all begin in
// (begin - widest, end), found by binary search. A round of NVLS on n ranks lands n multicasts
// on every rank and queries n of them per rank: scanning the whole list made that n^3 per round
// (128 ranks, 1 GiB, 20 iterations: 1.4 s of CPU, now 0.37 s; per round 0.21 s; bench/scale.sh
// nvls128_pipelined and nvls128_per_round; the shipped default experiment 19.4 -> 5.5 s).
struct PendingList {
  std::vector<PendingWrite> items;
  std::int32_t widest = 0;
};
template <typename List>  // std::vector<PendingWrite>, const or not
inline auto pending_before(List& v, std::int32_t begin) {
  return std::lower_bound(v.begin(), v.end(), begin,
                          [](const PendingWrite& w, std::int32_t b) { return w.begin < b; });
}
// The latest of `list`'s writes overlapping chunks [begin, end); -infinity when none.
inline double pending_time(const PendingList& list, std::int32_t begin, std::int32_t end) {
  double t = -std::numeric_limits<double>::infinity();
  const std::int64_t from = static_cast<std::int64_t>(begin) - list.widest + 1;
  auto it = from <= 0 ? list.items.begin()
                      : pending_before(list.items, static_cast<std::int32_t>(from));
  for (; it != list.items.end() && it->begin < end; ++it)
    if (begin < it->end) t = std::max(t, it->time);
  return t;
}
// Drops the writes that land by `time` (the rank's send port is free only then).
inline void prune_pending(PendingList& list, double time) {
  if (list.items.empty()) return;
  std::vector<PendingWrite>& v = list.items;
  v.erase(std::remove_if(v.begin(), v.end(), [time](const PendingWrite& w) { return w.time <= time; }),
          v.end());
  if (v.empty()) list.widest = 0;
}
// Records a write (after its round): merged with a write of the same chunks, dropped when the
// rank's send port is free after it lands anyway.
inline void add_pending(PendingList& list, const PendingWrite& w, double send_free) {
  if (w.time <= send_free) return;
  std::vector<PendingWrite>& v = list.items;
  auto it = pending_before(v, w.begin);
  for (; it != v.end() && it->begin == w.begin && it->end <= w.end; ++it) {
    if (it->end == w.end) {
      it->time = std::max(it->time, w.time);
      return;
    }
  }
  v.insert(it, w);  // writes mostly come in chunk order: mostly an append
  list.widest = std::max(list.widest, w.end - w.begin);
}

// The pipelined pass's per-rank state (by physical rank), shared with the switch reductions.
struct PipelineState {
  std::vector<double> send_free, recv_free;  // when the port is free (receive: arrivals end)
  std::vector<double> entry;                 // when the rank's kernel started (arrival + launch)
  std::vector<double> done;                  // its last send left, its last receive applied
  std::vector<PendingList> pending;
  std::vector<RankWrite> writes;  // the round's writes, applied after it

  void apply_writes() {
    for (const RankWrite& w : writes) add_pending(pending[w.rank], w.write, send_free[w.rank]);
    writes.clear();
  }
};

// In-network reductions (alg::SwitchReduce), after the round's transfers. The reductions of a
// round through one switch form a batch that starts when every rank in it has reached the round
// and is done with its transfers of the round (members: send port, receivers: receive port),
// and ends for all at once: start + the largest up link latency + the switch's reduction
// latency (when the batch reduces) + the largest down link latency + the longest of (bytes a
// member sends up / its up link's bandwidth, bytes a receiver gets / its down link's bandwidth,
// bytes reduced / the switch's reduction bandwidth). So the batch's reductions share the links
// and the switch as they would running side by side. A reduction with one member is a
// multicast: it uses no reduction bandwidth.
class SwitchBatches {
 public:
  // `protocol`: the run's (its reduction_bandwidth caps a switch's reduction throughput).
  SwitchBatches(const topo::Topology& topology, int ranks, int chunks,
                const ProtocolTiming& protocol)
      : topology_(topology),
        protocol_(protocol),
        switches_(topology, ranks, chunks),
        up_load_(static_cast<std::size_t>(ranks), 0),
        down_load_(static_cast<std::size_t>(ranks), 0),
        in_batch_(static_cast<std::size_t>(ranks), 0) {}

  // The reductions of the round stamped `round_stamp`; `count` ranks are touched so far (more
  // may be). Returns the new count.
  std::size_t run(const alg::Round& round, std::uint32_t round_stamp, const PassView& v,
                  std::size_t count) {
    for_each_batch(round, round_stamp, v.map,
                   [&](std::size_t first) { batch(round, first, round_stamp, v, count); });
    return count;
  }
  // Per link: the bytes the reductions carried (empty when the run had none).
  const std::vector<std::uint64_t>& link_bytes() const { return link_bytes_; }

  // The round's reductions, pipelined (an NCCL kernel's run, PipelineState above): the same
  // batches, sharing the links and the switch as run()'s, but the latency occupies no port and
  // a batch waits for the data it reduces or multicasts instead of a per-round ready time:
  //   start = max(its members' send ports free, the chunks each member sends landed at it,
  //               its receivers' receive ports free - the batch's latency, their kernels started)
  //   the members' send ports are busy [start, start + busy]; the results land at the
  //   receivers at start + latency + busy (run()'s latency, at least the kernel's switch step,
  //   and busy).
  // A batch waits for the data of every reduction in it, so a round that reduces slice k and
  // multicasts slice k - 1 (nvls) still waits for slice k - 1's reduction to land: the flow
  // model, which runs each reduction as its own flow, overlaps those (docs/algorithms.md).
  void run_pipelined(const alg::Round& round, std::uint32_t round_stamp, const int* map,
                     const alg::ChunkSizes& sizes, const ProtocolTiming& protocol,
                     PipelineState& p) {
    for_each_batch(round, round_stamp, map, [&](std::size_t first) {
      batch_pipelined(round, first, map, sizes, protocol, p);
    });
  }

 private:
  // Resolves the round's reductions to their switches and calls f(first) once per switch, with
  // the index of its first reduction in the round, in that order.
  template <typename F>
  void for_each_batch(const alg::Round& round, std::uint32_t round_stamp, const int* map, F f) {
    if (link_bytes_.empty())
      link_bytes_.assign(static_cast<std::size_t>(topology_.link_count()), 0);
    op_switch_.clear();
    for (std::size_t j = 0; j < round.switch_reduces.size(); ++j)
      op_switch_.push_back(switches_.resolve(round.switch_reduces[j], map, round_stamp - 1, j));
    for (std::size_t first = 0; first < op_switch_.size(); ++first) {
      const auto before = op_switch_.begin() + static_cast<std::ptrdiff_t>(first);
      if (std::find(op_switch_.begin(), before, op_switch_[first]) == before) f(first);
    }
  }

  // The batch of the round's reductions through the switch of reduction `first`: its ranks
  // (batch_ranks_, with their up_load_ and down_load_) and what it takes: `busy`, the longest
  // of its links' loads and the switch's reduction (counted on the links), and `latency`, the
  // largest up link latency + the switch's reduction latency (when the batch reduces) + the
  // largest down link latency. touch(r) is called for every rank of every reduction,
  // member(r, op) for each member and receiver(r) for each receiver (physical ranks).
  struct BatchCost {
    double busy = 0, latency = 0;
  };
  template <typename Touch, typename Member, typename Receiver>
  BatchCost gather(const alg::Round& round, std::size_t first, const int* map,
                   const alg::ChunkSizes& sizes, Touch touch, Member member, Receiver receiver) {
    const std::size_t sw_index = op_switch_[first];
    const ReducingSwitches::Ports& ports = switches_.ports(sw_index);
    auto physical = [map](int r) { return static_cast<std::size_t>(map ? map[r] : r); };
    ++batch_stamp_;
    batch_ranks_.clear();
    double up_latency = 0, down_latency = 0;
    std::uint64_t reduced = 0;
    auto join = [&](std::size_t r) {
      touch(r);
      if (in_batch_[r] != batch_stamp_) {
        in_batch_[r] = batch_stamp_;
        up_load_[r] = down_load_[r] = 0;
        batch_ranks_.push_back(static_cast<int>(r));
      }
    };
    for (std::size_t j = first; j < op_switch_.size(); ++j) {
      if (op_switch_[j] != sw_index) continue;
      const alg::SwitchReduce& op = round.switch_reduces[j];
      const std::uint64_t bytes = sizes.length(op);
      if (op.members.size() > 1) reduced += bytes;
      for (int m : op.members) {
        const std::size_t r = physical(m);
        join(r);
        up_load_[r] += bytes;
        member(r, op);
        up_latency = std::max(up_latency, topology_.link(ports.up[r]).latency.value);
      }
      for (int x : op.receivers) {
        const std::size_t r = physical(x);
        join(r);
        down_load_[r] += bytes;
        receiver(r);
        down_latency = std::max(down_latency, topology_.link(ports.down[r]).latency.value);
      }
    }
    const topo::SwitchReduction& reduction = *topology_.node(ports.vertex).reduce;
    double busy =
        static_cast<double>(reduced) / protocol_.reduction_bandwidth(reduction.bandwidth.value);
    for (int rank : batch_ranks_) {
      const std::size_t r = static_cast<std::size_t>(rank);
      busy = std::max(busy, load(ports.up[r], up_load_[r]));
      busy = std::max(busy, load(ports.down[r], down_load_[r]));
    }
    return {busy, up_latency + (reduced > 0 ? reduction.latency.value : 0.0) + down_latency};
  }

  // The batch of the round's reductions through the switch of reduction `first` (its first).
  void batch(const alg::Round& round, std::size_t first, std::uint32_t round_stamp,
             const PassView& v, std::size_t& count) {
    double start = -std::numeric_limits<double>::infinity();
    const BatchCost cost = gather(
        round, first, v.map, v.sizes, [&](std::size_t r) { v.touch(r, round_stamp, count); },
        [&](std::size_t r, const alg::SwitchReduce&) { start = std::max(start, v.send_free[r]); },
        [&](std::size_t r) { start = std::max(start, v.recv_free[r]); });
    const double end = start + cost.latency + cost.busy;
    for (int rank : batch_ranks_) {
      const std::size_t r = static_cast<std::size_t>(rank);
      if (up_load_[r] > 0) v.send_free[r] = end;
      if (down_load_[r] > 0) v.recv_free[r] = end;
      v.done[r] = std::max(v.done[r], end);
    }
  }
  // The pipelined batch of the round's reductions through the switch of reduction `first`.
  void batch_pipelined(const alg::Round& round, std::size_t first, const int* map,
                       const alg::ChunkSizes& sizes, const ProtocolTiming& protocol,
                       PipelineState& p) {
    double start = -std::numeric_limits<double>::infinity();
    const BatchCost cost = gather(
        round, first, map, sizes, [](std::size_t) {},
        [&](std::size_t r, const alg::SwitchReduce& op) {
          start = std::max(
              {start, p.send_free[r], pending_time(p.pending[r], op.chunk_begin, op.chunk_end)});
        },
        [](std::size_t) {});
    const double latency = protocol.switch_latency(cost.latency);
    for (int rank : batch_ranks_) {
      const std::size_t r = static_cast<std::size_t>(rank);
      if (down_load_[r] > 0) start = std::max({start, p.recv_free[r] - latency, p.entry[r]});
    }
    const double sent = start + cost.busy, end = start + latency + cost.busy;
    for (int rank : batch_ranks_) {
      const std::size_t r = static_cast<std::size_t>(rank);
      if (up_load_[r] > 0) {
        p.send_free[r] = sent;
        p.done[r] = std::max(p.done[r], sent);
        prune_pending(p.pending[r], sent);
      }
      if (down_load_[r] > 0) {
        p.recv_free[r] = end;
        p.done[r] = std::max(p.done[r], end);
      }
    }
    auto physical = [map](int r) { return static_cast<std::size_t>(map ? map[r] : r); };
    for (std::size_t j = first; j < op_switch_.size(); ++j) {
      if (op_switch_[j] != op_switch_[first]) continue;
      const alg::SwitchReduce& op = round.switch_reduces[j];
      for (int receiver : op.receivers)
        p.writes.push_back({physical(receiver), {op.chunk_begin, op.chunk_end, end}});
    }
  }
  // The time `bytes` take on link `link` (0 for none), counted on the link.
  double load(int link, std::uint64_t bytes) {
    if (bytes == 0) return 0.0;
    link_bytes_[static_cast<std::size_t>(link)] += bytes;
    return static_cast<double>(bytes) / topology_.link(link).bandwidth.value;
  }

  const topo::Topology& topology_;
  const ProtocolTiming protocol_;  // the run's (a copy: a few numbers)
  ReducingSwitches switches_;
  std::vector<std::uint64_t> link_bytes_;
  std::vector<std::uint64_t> up_load_, down_load_;  // per rank, in the batch
  std::vector<std::uint32_t> in_batch_;             // per rank: the batch stamp it is in
  std::uint32_t batch_stamp_ = 0;
  std::vector<int> batch_ranks_;
  std::vector<std::size_t> op_switch_;  // per reduction of the round: its switch
};

// The parallel path's state. A round goes in two fork-join steps:
//  1. per transfer (parts of the round): its end and reduced times from the ranks' ready times
//     (read only in this step), written to the sender's send slot and the receiver's receive
//     slot, each tagged with (round, transfer);
//  2. per rank (parts of [0, n)): its new ready time, the max of its old one and the times in
//     its slots tagged with this round, written to a second array (ready times are double
//     buffered), and its bytes added up.
// A port that serves two transfers shows as fewer tagged slots than transfers (a later tag
// overwrote an earlier one): the round is then undone (the bytes taken back, the second array
// dropped) and run sequentially. No atomic read-modify-write per transfer: every slot field is
// a relaxed atomic (a plain load or store), so two transfers writing one slot are no data race.
struct ParallelPass {
  struct Slot {
    std::atomic<std::uint64_t> tag{0};  // (round stamp << 32) | transfer
    std::atomic<double> time{0};        // send: end; receive: reduced
    std::atomic<std::uint64_t> bytes{0};
    std::atomic<std::uint32_t> route{0};  // send, general path: the route
  };
  // Per part of step 2: tagged slots seen (merged by the caller).
  struct Count {
    std::uint64_t sends = 0, recvs = 0;
  };
  ParallelPass(int threads, std::size_t ranks)
      : team(threads), send(ranks), recv(ranks), next_ready(ranks) {}
  static std::uint64_t tag(std::uint32_t round_stamp, std::size_t j) {
    return (std::uint64_t{round_stamp} << 32) | static_cast<std::uint64_t>(j);
  }
  static bool in_round(std::uint64_t tag, std::uint32_t round_stamp) {
    return (tag >> 32) == round_stamp;
  }

  ForkJoin team;
  std::vector<Slot> send, recv;         // per physical rank
  std::vector<double> next_ready;       // step 2's output
  std::vector<std::uint32_t> route_of;  // general path, per transfer: route, or missing
  std::vector<char> missing;            // per part of step 1: a route was not cached
  std::vector<Count> counts;            // per part of step 2
};

// Parts of a step over `items`: about kPartItems each, at least one per thread.
constexpr std::size_t kPartItems = 1024;
std::size_t part_count(std::size_t items, int threads) {
  return std::max<std::size_t>(static_cast<std::size_t>(threads), items / kPartItems);
}
// The items of [0, size) that part `p` of `parts` takes: contiguous blocks.
std::pair<std::size_t, std::size_t> block(std::size_t size, std::size_t p, std::size_t parts) {
  return {size * p / parts, size * (p + 1) / parts};
}

// Where step 1 takes a transfer's route terms from. Single switch: per-rank arrays.
struct StarLookup {
  static constexpr bool kRoutes = false;  // no route to note in the send slot
  StarTerms terms;
  bool find(std::size_t, std::size_t src, std::size_t dst, AlphaBetaTerms& route,
            std::uint32_t&) const {
    route = terms.at(src, dst);
    return true;
  }
};
// General topology: the route cache, read only (a pair not cached yet is noted as missing in
// route_of and timed by the caller after the step).
struct CacheLookup {
  static constexpr bool kRoutes = true;
  const RouteCache* routes = nullptr;
  std::uint32_t* route_of = nullptr;
  bool find(std::size_t j, std::size_t src, std::size_t dst, AlphaBetaTerms& route,
            std::uint32_t& index) const {
    index = routes->find_cached(static_cast<int>(src), static_cast<int>(dst));
    route_of[j] = index;
    if (index == RouteCache::missing) return false;
    const CachedRoute& cached = routes->route(index);
    route = {cached.latency, cached.inverse_bandwidth};
    return true;
  }
};

// Step 1 over transfers [begin, end) of the round stamped `round_stamp`: times each one from
// the ranks' ready times into its slots. Returns whether a route was missing.
template <class Lookup>
[[gnu::noinline]] bool time_part(const alg::Transfer* const transfers, std::size_t begin,
                                 std::size_t end, std::uint32_t round_stamp, const PassView v,
                                 const Lookup lookup, ParallelPass::Slot* const send,
                                 ParallelPass::Slot* const recv) {
  bool missing = false;
  const std::uint64_t round_tag = ParallelPass::tag(round_stamp, 0);
  for (std::size_t j = begin; j < end; ++j) {
    const alg::Transfer& t = transfers[j];
    check_transfer(t, static_cast<int>(v.ranks), v.sizes.chunks);
    const std::size_t s = v.physical(t.src), d = v.physical(t.dst);
    const std::uint64_t bytes = v.sizes.length(t);
    AlphaBetaTerms route;
    std::uint32_t index = 0;
    TransferTimes times;  // zeros for a missing route: the caller times it
    if (lookup.find(j, s, d, route, index)) [[likely]] {
      times = time_transfer(std::max(v.ready[s], v.ready[d]), route, static_cast<double>(bytes),
                            t.op, v.gamma, v.protocol, s, d);
      if constexpr (Lookup::kRoutes) send[s].route.store(index, std::memory_order_relaxed);
    } else {
      missing = true;
    }
    const std::uint64_t tag = round_tag | static_cast<std::uint64_t>(j);
    send[s].tag.store(tag, std::memory_order_relaxed);
    send[s].time.store(times.end, std::memory_order_relaxed);
    send[s].bytes.store(bytes, std::memory_order_relaxed);
    recv[d].tag.store(tag, std::memory_order_relaxed);
    recv[d].time.store(times.reduced, std::memory_order_relaxed);
    recv[d].bytes.store(bytes, std::memory_order_relaxed);
  }
  return missing;
}

// Where step 2 adds a rank's bytes: per rank (single switch) or per route.
struct ByteCounts {
  std::uint64_t* sent = nullptr;         // star: per rank
  std::uint64_t* received = nullptr;     // star: per rank
  std::uint64_t* route_bytes = nullptr;  // general: per route
  bool star = false;
};

// Step 2 over ranks [begin, end): each one's new ready time into next_ready, its bytes counted.
[[gnu::noinline]] ParallelPass::Count merge_part(
    std::size_t begin, std::size_t end, std::uint32_t round_stamp,
    const ParallelPass::Slot* const send, const ParallelPass::Slot* const recv,
    const double* const ready, double* const next_ready, const ByteCounts counts) {
  ParallelPass::Count count;
  for (std::size_t r = begin; r < end; ++r) {
    double latest = ready[r];
    if (ParallelPass::in_round(send[r].tag.load(std::memory_order_relaxed), round_stamp)) {
      latest = std::max(latest, send[r].time.load(std::memory_order_relaxed));
      const std::uint64_t bytes = send[r].bytes.load(std::memory_order_relaxed);
      if (counts.star)
        counts.sent[r] += bytes;
      else
        counts.route_bytes[send[r].route.load(std::memory_order_relaxed)] += bytes;
      ++count.sends;
    }
    if (ParallelPass::in_round(recv[r].tag.load(std::memory_order_relaxed), round_stamp)) {
      latest = std::max(latest, recv[r].time.load(std::memory_order_relaxed));
      if (counts.star) counts.received[r] += recv[r].bytes.load(std::memory_order_relaxed);
      ++count.recvs;
    }
    next_ready[r] = latest;
  }
  return count;
}

// One run of the dataflow pass.
class DataflowPass {
 public:
  DataflowPass(RoundSource& rounds, RouteCache& routes, SecondsPerByte gamma, Bytes bytes,
               std::span<const Seconds> arrival, const RunOptions& options,
               const ProtocolTiming& protocol);
  IterationResult run();

 private:
  PassView view() {
    return PassView{static_cast<std::uint32_t>(ranks_),
                    map_,
                    gamma_,
                    &protocol_,
                    sizes_,
                    ready_.data(),
                    send_free_.data(),
                    recv_free_.data(),
                    done_.data(),
                    stamp_.data(),
                    touched_.data()};
  }
  StarTerms star_terms() const {  // empty without a star
    if (star_terms_.empty()) return {};
    const std::size_t n = static_cast<std::size_t>(ranks_);
    const double* const terms = star_terms_.data();
    return StarTerms{terms, terms + n, terms + 2 * n, terms + 3 * n};
  }
  void sequential_round(const alg::Round& round, std::uint32_t round_stamp);
  void pipelined_round(const alg::Round& round, std::uint32_t round_stamp);
  template <class Side>
  void pipelined_transfers(const alg::Round& round, std::uint32_t round_stamp, const Side& side);
  template <class Side>
  std::size_t run_transfers(const alg::Round& round, std::uint32_t round_stamp, const PassView& v,
                            const Side& side);
  void look_up_routes(const alg::Round& round);
  bool parallel_round(const alg::Round& round, std::uint32_t round_stamp);
  void time_missing_routes(const alg::Round& round, std::uint32_t round_stamp);
  bool merge_ready(std::size_t transfers, std::uint32_t round_stamp);

  RoundSource& rounds_;
  RouteCache& routes_;
  const std::span<const Seconds> arrival_;
  const RunOptions& options_;
  const int ranks_, chunks_;
  const int* const map_;
  const double gamma_;
  const ProtocolTiming protocol_;
  const alg::ChunkSizes sizes_;
  // An NCCL kernel: pipelined (PipelineState), always sequential.
  const bool pipelined_;
  // A recorded timeline or a trace is for small traced runs: always sequential (the parallel
  // path records nothing).
  const bool reporting_;
  const int threads_;
  // A single-switch topology: routes come from per-rank arrays (no lookup, no cache entry per
  // pair) and bytes are counted per rank (sent: its up link, received: its down link).
  const StarRoutes* const star_;

  std::vector<double> ready_, send_free_, recv_free_, done_;
  std::vector<std::uint32_t> stamp_;
  std::vector<int> touched_;
  std::vector<double> star_terms_;  // StarTerms' four arrays, one after the other
  std::vector<std::uint64_t> sent_bytes_, received_bytes_;  // star: per rank
  std::vector<std::uint64_t> route_bytes_;                  // general: per route
  std::vector<std::uint32_t> round_routes_;                 // general: the round's routes
  std::vector<std::uint64_t> routed_pairs_;                 // and its (src, dst) pairs
  SwitchBatches switch_batches_;
  PipelineState pipe_;                      // pipelined_ only
  std::unique_ptr<ParallelPass> parallel_;  // built at the first round large enough
  IterationResult result_;
};

DataflowPass::DataflowPass(RoundSource& rounds, RouteCache& routes, SecondsPerByte gamma,
                           Bytes bytes, std::span<const Seconds> arrival, const RunOptions& options,
                           const ProtocolTiming& protocol)
    : rounds_(rounds),
      routes_(routes),
      arrival_(arrival),
      options_(options),
      ranks_(rounds.ranks()),
      chunks_(rounds.chunks()),
      map_(options.rank_map.empty() ? nullptr : options.rank_map.data()),
      gamma_(gamma.value),
      protocol_(protocol),
      sizes_(bytes.value, chunks_ > 0 ? chunks_ : 1),
      pipelined_(protocol.active && protocol.pipelined),
      reporting_(options.record_timeline || options.trace),
      threads_(reporting_ || pipelined_ ? 1 : options.threads),
      star_(routes.star()),
      switch_batches_(routes.topology(), ranks_, chunks_, protocol) {
  SSIM_CHECK(ranks_ == routes.topology().gpu_count(), "schedule and topology rank counts differ");
  SSIM_CHECK(chunks_ > 0, "schedule without chunks");
  SSIM_CHECK(options.threads >= 1, "threads must be >= 1");
  check_inputs(ranks_, arrival, options);
  const std::size_t n = static_cast<std::size_t>(ranks_);
  ready_.resize(n);
  send_free_.resize(n);
  recv_free_.resize(n);
  done_.resize(n);
  stamp_.assign(n, 0);
  touched_.resize(n);
  // An NCCL kernel starts its first transfer a launch after the rank arrives (sim/protocol.hpp).
  for (std::size_t r = 0; r < n; ++r) ready_[r] = arrival[r].value + protocol_.launch;
  if (pipelined_) {
    pipe_.entry = ready_;
    pipe_.send_free = ready_;
    pipe_.recv_free = ready_;
    pipe_.done = ready_;
    pipe_.pending.resize(n);
  }
  route_bytes_.assign(routes.size(), 0);
  if (star_) {
    sent_bytes_.assign(n, 0);
    received_bytes_.assign(n, 0);
    star_terms_.resize(4 * n);
    for (std::size_t r = 0; r < n; ++r) {
      star_terms_[r] = 0.0 + star_->up_latency[r];
      star_terms_[n + r] = star_->down_latency[r];
      star_terms_[2 * n + r] = 1.0 / star_->up_bandwidth[r];
      star_terms_[3 * n + r] = 1.0 / star_->down_bandwidth[r];
    }
  }
  result_.ranks = ranks_;
  result_.bytes = bytes.value;
}

IterationResult DataflowPass::run() {
  const std::size_t n = static_cast<std::size_t>(ranks_);
  std::uint64_t transfers = 0;
  std::uint32_t round_stamp = 0;  // 1 + the round's index (a stamp of 0 is no round)
  while (const alg::Round* round = rounds_.next()) {
    ++round_stamp;
    const std::size_t size = round->transfers.size();
    // More transfers than ranks: some rank sends twice.
    const bool may_run_parallel = threads_ > 1 && size >= options_.parallel_round && size <= n &&
                                  round->switch_reduces.empty();
    if (may_run_parallel && !parallel_) parallel_ = std::make_unique<ParallelPass>(threads_, n);
    if (pipelined_)
      pipelined_round(*round, round_stamp);
    else if (!may_run_parallel || !parallel_round(*round, round_stamp))
      sequential_round(*round, round_stamp);
    transfers += size;
  }
  IterationResult& result = result_;
  result.transfers = transfers;
  finalize(result, arrival_, pipelined_ ? std::move(pipe_.done) : std::move(ready_), route_bytes_,
           routes_);
  if (star_) {
    for (std::size_t r = 0; r < n; ++r) {
      result.link_bytes[static_cast<std::size_t>(star_->up[r])] += sent_bytes_[r];
      result.link_bytes[static_cast<std::size_t>(star_->down[r])] += received_bytes_[r];
    }
  }
  const std::vector<std::uint64_t>& switch_link_bytes = switch_batches_.link_bytes();
  for (std::size_t l = 0; l < switch_link_bytes.size(); ++l)
    result.link_bytes[l] += switch_link_bytes[l];
  if (star_ || !switch_link_bytes.empty()) link_utilization(result, routes_.topology());
  return std::move(result);
}

// time_transfers with the run's reporting.
template <class Side>
std::size_t DataflowPass::run_transfers(const alg::Round& round, std::uint32_t round_stamp,
                                        const PassView& v, const Side& side) {
  if (!reporting_) return time_transfers(round, round_stamp, v, side, NoReport{});
  const Report report{options_.trace, options_.record_timeline ? &result_.timeline : nullptr};
  return time_transfers(round, round_stamp, v, side, report);
}

void DataflowPass::sequential_round(const alg::Round& round, std::uint32_t round_stamp) {
  const PassView v = view();
  std::size_t touched = 0;
  if (star_) {
    touched = run_transfers(round, round_stamp, v,
                            StarSide{star_terms(), sent_bytes_.data(), received_bytes_.data()});
  } else {
    look_up_routes(round);
    touched = run_transfers(
        round, round_stamp, v,
        CachedSide{&routes_, round_routes_.data(), route_bytes_.data(), round.transfers.size()});
  }
  if (!round.switch_reduces.empty()) {
    if (reporting_) untraceable_switch_reduces(round_stamp);
    touched = switch_batches_.run(round, round_stamp, v, touched);
  }
  for (std::size_t i = 0; i < touched; ++i) {
    const std::size_t r = static_cast<std::size_t>(v.touched[i]);
    v.ready[r] = v.done[r];
  }
}

// A round of an NCCL kernel's run (PipelineState): its transfers in schedule order, then its
// reductions, then its writes recorded (a send of the round reads the chunks as they were
// before it).
void DataflowPass::pipelined_round(const alg::Round& round, std::uint32_t round_stamp) {
  if (star_) {
    pipelined_transfers(round, round_stamp,
                        StarSide{star_terms(), sent_bytes_.data(), received_bytes_.data()});
  } else {
    look_up_routes(round);
    pipelined_transfers(
        round, round_stamp,
        CachedSide{&routes_, round_routes_.data(), route_bytes_.data(), round.transfers.size()});
  }
  if (!round.switch_reduces.empty()) {
    if (reporting_) untraceable_switch_reduces(round_stamp);
    switch_batches_.run_pipelined(round, round_stamp, map_, sizes_, protocol_, pipe_);
  }
  pipe_.apply_writes();
}

template <class Side>
void DataflowPass::pipelined_transfers(const alg::Round& round, std::uint32_t round_stamp,
                                       const Side& side) {
  PipelineState& p = pipe_;
  const std::size_t size = round.transfers.size();
  for (std::size_t j = 0; j < size; ++j) {
    side.prefetch(j);
    const alg::Transfer& t = round.transfers[j];
    check_transfer(t, ranks_, chunks_);
    const std::size_t s = static_cast<std::size_t>(map_ ? map_[t.src] : t.src);
    const std::size_t d = static_cast<std::size_t>(map_ ? map_[t.dst] : t.dst);
    const std::uint64_t bytes = sizes_.length(t);
    const auto& route = side.take(j, s, d, bytes);  // AlphaBetaTerms or CachedRoute
    const double m = static_cast<double>(bytes);
    const double latency = protocol_.latency(route.latency, s, d);
    const double data = pending_time(p.pending[s], t.chunk_begin, t.chunk_end);
    const double src_ready = std::max(p.send_free[s], data);
    const double dst_ready = std::max(p.recv_free[d] - latency, p.entry[d]);
    const TransferTimes times = time_transfer(std::max(src_ready, dst_ready), route, m, t.op,
                                              gamma_, &protocol_, s, d);
    const double sent =
        times.start + m * protocol_.inverse_bandwidth(route.inverse_bandwidth, s, d);
    p.send_free[s] = sent;
    p.recv_free[d] = times.end;
    p.done[s] = std::max(p.done[s], sent);
    p.done[d] = std::max(p.done[d], times.reduced);
    prune_pending(p.pending[s], sent);
    p.writes.push_back({d, {t.chunk_begin, t.chunk_end, times.reduced}});
    if (reporting_) {
      const TransferRecord rec{static_cast<std::int32_t>(round_stamp - 1),
                               static_cast<std::int32_t>(j),
                               static_cast<std::int32_t>(s),
                               static_cast<std::int32_t>(d),
                               t.chunk_begin,
                               t.chunk_end,
                               t.op,
                               bytes,
                               Seconds{src_ready},
                               Seconds{dst_ready},
                               Seconds{times.start},
                               Seconds{times.end},
                               Seconds{times.reduced}};
      if (options_.trace) {
        options_.trace->transfer_side(rec, TimelineSink::Side::send);
        options_.trace->transfer_side(rec, TimelineSink::Side::recv);
      }
      if (options_.record_timeline) result_.timeline.push_back(rec);
    }
  }
}

// The routes of the round's transfers into round_routes_, before the timing loop: the lookups
// are independent, so those of the transfers kAhead later are prefetched. A round with the same
// (source, destination) pairs in the same order as the last one looked up (a ring's every step,
// each of NCCL's channels) keeps that one's routes: comparing the pairs costs less than finding
// them again (a rank's several destinations defeat the cache's last-destination shortcut).
void DataflowPass::look_up_routes(const alg::Round& round) {
  constexpr std::size_t kAhead = CachedSide::kAhead;
  const std::size_t size = round.transfers.size();
  const int n = ranks_;
  const auto pair_key = [](const alg::Transfer& t) {
    return (static_cast<std::uint64_t>(static_cast<std::uint32_t>(t.src)) << 32) |
           static_cast<std::uint32_t>(t.dst);
  };
  bool same = size > 0 && size == routed_pairs_.size();
  for (std::size_t j = 0; same && j < size; ++j) same = routed_pairs_[j] == pair_key(round.transfers[j]);
  if (same) {
    for (const alg::Transfer& t : round.transfers) check_transfer(t, n, chunks_);
    return;
  }
  round_routes_.resize(size);
  routed_pairs_.clear();
  for (std::size_t j = 0; j < size; ++j) {
    if (j + kAhead < size) {
      const alg::Transfer& a = round.transfers[j + kAhead];
      if (a.src >= 0 && a.src < n && a.dst >= 0 && a.dst < n)
        routes_.prefetch(map_ ? map_[a.src] : a.src, map_ ? map_[a.dst] : a.dst);
    }
    const alg::Transfer& t = round.transfers[j];
    check_transfer(t, n, chunks_);
    round_routes_[j] = routes_.find(map_ ? map_[t.src] : t.src, map_ ? map_[t.dst] : t.dst);
  }
  routed_pairs_.resize(size);
  for (std::size_t j = 0; j < size; ++j) routed_pairs_[j] = pair_key(round.transfers[j]);
  if (route_bytes_.size() < routes_.size()) route_bytes_.resize(routes_.size(), 0);
}

// True when the round ran in parallel; false when a port serves several transfers (nothing was
// changed then, the caller runs the round sequentially). The arithmetic is that of the
// sequential pass: with every port serving one transfer, a transfer starts at
// max(ready[src], ready[dst]), and a rank's new ready time is the max of its old one, its
// send's end and its receive's reduced time, whatever the order of the maxima.
bool DataflowPass::parallel_round(const alg::Round& round, std::uint32_t round_stamp) {
  ParallelPass& p = *parallel_;
  const std::size_t size = round.transfers.size();
  const std::size_t parts = part_count(size, threads_);
  p.missing.assign(parts, 0);
  if (!star_) p.route_of.resize(size);
  const PassView v = view();
  const alg::Transfer* const transfers = round.transfers.data();
  ParallelPass::Slot* const send = p.send.data();
  ParallelPass::Slot* const recv = p.recv.data();
  // threads > 1 means nothing is reported, so a star has its terms.
  const StarLookup star{star_terms()};
  const CacheLookup cache{&routes_, p.route_of.data()};
  p.team.run(parts, [&](std::size_t part) {
    const auto [begin, end] = block(size, part, parts);
    const bool missing = star_
                             ? time_part(transfers, begin, end, round_stamp, v, star, send, recv)
                             : time_part(transfers, begin, end, round_stamp, v, cache, send, recv);
    if (missing) p.missing[part] = 1;
  });
  if (std::find(p.missing.begin(), p.missing.end(), 1) != p.missing.end())
    time_missing_routes(round, round_stamp);
  if (route_bytes_.size() < routes_.size()) route_bytes_.resize(routes_.size(), 0);
  return merge_ready(size, round_stamp);
}

// New pairs of a parallel round: routed here, once each, and timed into their slots (where the
// slot is still theirs; where it is not, a port is shared and the round goes sequentially).
void DataflowPass::time_missing_routes(const alg::Round& round, std::uint32_t round_stamp) {
  ParallelPass& p = *parallel_;
  for (std::size_t j = 0; j < round.transfers.size(); ++j) {
    if (p.route_of[j] != RouteCache::missing) continue;
    const alg::Transfer& t = round.transfers[j];
    const int s = map_ ? map_[t.src] : t.src;
    const int d = map_ ? map_[t.dst] : t.dst;
    const std::uint32_t route = routes_.find(s, d);
    p.route_of[j] = route;
    const TransferTimes times =
        time_transfer(std::max(ready_[s], ready_[d]), routes_.route(route),
                      static_cast<double>(sizes_.length(t)), t.op, gamma_, &protocol_,
                      static_cast<std::size_t>(s), static_cast<std::size_t>(d));
    const std::uint64_t tag = ParallelPass::tag(round_stamp, j);
    if (p.send[s].tag.load(std::memory_order_relaxed) == tag) {
      p.send[s].time.store(times.end, std::memory_order_relaxed);
      p.send[s].route.store(route, std::memory_order_relaxed);
    }
    if (p.recv[d].tag.load(std::memory_order_relaxed) == tag)
      p.recv[d].time.store(times.reduced, std::memory_order_relaxed);
  }
}

// Step 2 of a parallel round of `transfers` transfers; false (and the bytes taken back, ready
// times untouched) when a port served several transfers.
bool DataflowPass::merge_ready(std::size_t transfers, std::uint32_t round_stamp) {
  ParallelPass& p = *parallel_;
  const std::size_t n = static_cast<std::size_t>(ranks_);
  const std::size_t parts = part_count(n, threads_);
  p.counts.assign(parts, ParallelPass::Count{});
  const ParallelPass::Slot* const send = p.send.data();
  const ParallelPass::Slot* const recv = p.recv.data();
  const double* const ready = ready_.data();
  double* const next_ready = p.next_ready.data();
  const ByteCounts counts{sent_bytes_.data(), received_bytes_.data(), route_bytes_.data(),
                          star_ != nullptr};
  p.team.run(parts, [&](std::size_t part) {
    const auto [begin, end] = block(n, part, parts);
    p.counts[part] = merge_part(begin, end, round_stamp, send, recv, ready, next_ready, counts);
  });
  std::uint64_t sends = 0, recvs = 0;
  for (const ParallelPass::Count& c : p.counts) {
    sends += c.sends;
    recvs += c.recvs;
  }
  if (sends == transfers && recvs == transfers) {
    ready_.swap(p.next_ready);
    return true;
  }
  // A shared port: take the bytes back (ready is untouched).
  for (std::size_t r = 0; r < n; ++r) {
    if (ParallelPass::in_round(send[r].tag.load(std::memory_order_relaxed), round_stamp)) {
      const std::uint64_t bytes = send[r].bytes.load(std::memory_order_relaxed);
      if (counts.star)
        counts.sent[r] -= bytes;
      else
        counts.route_bytes[send[r].route.load(std::memory_order_relaxed)] -= bytes;
    }
    if (counts.star &&
        ParallelPass::in_round(recv[r].tag.load(std::memory_order_relaxed), round_stamp))
      counts.received[r] -= recv[r].bytes.load(std::memory_order_relaxed);
  }
  return false;
}

}  // namespace

IterationResult run_alphabeta(RoundSource& rounds, RouteCache& routes, SecondsPerByte gamma,
                              Bytes bytes, std::span<const Seconds> arrival,
                              const RunOptions& options, const ProtocolTiming& protocol) {
  return DataflowPass(rounds, routes, gamma, bytes, arrival, options, protocol).run();
}

}  // namespace ssim::sim
