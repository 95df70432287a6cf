// The event-engine evaluation of a schedule (Executor::run with the flow model, or alphabeta with
// RunOptions::use_event_engine), fed by a RoundSource. Internal to sim/ (executor.hpp is the API).
//
// Rounds are taken from the source only when
// a rank needs its next group of transfers and no round taken so far has one; they are kept in
// a window until all their transfers are done. A rank's next group is found through its groups'
// links (group ids are global, in the order rounds are taken), so memory is O(ranks + the
// rounds in the window): a few rounds where ranks progress together (ring, rhd, ...), at worst
// (a rank that waits many rounds for others that are late) the whole schedule. Events happen
// in the same order as with every round known from the start: taking a round schedules nothing.
#pragma once

#include <cstdint>
#include <deque>
#include <map>
#include <memory>
#include <span>
#include <unordered_map>
#include <vector>

#include "algorithms/chunk_sizes.hpp"
#include "algorithms/schedule.hpp"
#include "common/units.hpp"
#include "sim/engine.hpp"
#include "sim/executor.hpp"
#include "sim/network.hpp"
#include "sim/reducing_switches.hpp"

namespace ssim::sim {

class Executor::EventRun final : public EventHandler, public TransferSink {
 public:
  EventRun(int ranks, int chunks, RouteCache& routes, NetworkConfig network, Bytes bytes);

  IterationResult run(RoundSource& rounds, std::span<const Seconds> arrival,
                      const RunOptions& options);

  void on_event(Engine& engine, std::uint64_t tag) override;

  void transfer_done(std::uint32_t id, Seconds now) override;
  void transfer_sent(std::uint32_t id, Seconds now) override;

 private:
  static constexpr std::uint64_t kReduce = std::uint64_t{1} << 63;
  static constexpr std::uint64_t kNone = ~std::uint64_t{0};

  // An in-network reduction of a window round (alg::SwitchReduce), as the flow model runs it.
  struct Reduction {
    std::vector<int> links;  // the members' up links, then the receivers' down links
    int reducer = -1;        // the switch vertex whose reduction throughput it uses, or -1
    double latency = 0;      // largest up link latency + reduction latency + largest down one
    std::uint64_t bytes = 0;
    std::vector<int> ranks;  // members and receivers (schedule labels), each once
    std::size_t members = 0;  // ranks[0, members) are its members
    std::vector<int> receivers;  // schedule labels
    std::int32_t chunk_begin = 0, chunk_end = 0;
    std::vector<std::uint32_t> member_groups;  // pipelined: each member's group in the round
  };

  // One round in the window. Its transfers are numbered first, first+1, ... (global ids, in
  // schedule order), then its in-network reductions; its groups (a rank's transfers in the
  // round, as sender or receiver, in schedule order, then its reductions) first_group,
  // first_group+1, ...
  struct Window {
    std::uint64_t first = 0, first_group = 0;
    std::int32_t index = 0;  // the round's number
    std::vector<alg::Transfer> transfers;
    // Ends not yet in the round + port predecessors not done; pipelined: the sender not yet in
    // the round + the receiver's kernel not started + pending writes of the data it sends.
    std::vector<std::uint32_t> wait;
    std::vector<std::int32_t> send_next, recv_next;  // serial: the next transfer at the port
    std::vector<std::uint32_t> group_begin;          // CSR: group g's items, g - first_group
    std::vector<std::uint32_t> items;       // (transfer in the round << 1) | (0 send, 1 receive)
    std::vector<std::uint64_t> group_next;  // the rank's next group (global), or kNone
    std::vector<Reduction> ops;             // item (transfers.size() + i) << 1 is ops[i]
    std::vector<std::uint32_t> op_wait;     // ranks of ops[i] not yet in the round
    // Pipelined: per transfer and reduction, whether its bytes have left and the next one on its
    // connection waiting for that (global id, or kNone); per transfer, its sender's group (a
    // reduction's members' groups are its Reduction's); per group, its sends not yet left.
    std::vector<char> sent;
    std::vector<std::uint64_t> conn_next;
    std::vector<std::uint32_t> send_group;
    std::vector<std::uint32_t> group_left;
    std::size_t finished = 0;               // transfers and reductions done (all their ends)
    std::size_t total() const { return transfers.size() + ops.size(); }
  };
  int physical(int r) const { return map_ ? map_[r] : r; }

  // The global id of a transfer in the window from the 32 bits the network model carries.
  std::uint64_t global(std::uint32_t id) const {
    const std::uint64_t base = window_.front().first;
    return base + static_cast<std::uint32_t>(id - static_cast<std::uint32_t>(base));
  }
  // The window round holding transfer t (or, with groups = true, group t).
  Window& locate(std::uint64_t t, bool groups = false);

  // Takes the source's next round into the window; false when the source is exhausted.
  bool take_round();

  // Reduction i of round `round` as the flow model runs it: its switch, links and latency (as the
  // alpha-beta batch takes them: the largest up link latency, the switch's reduction latency
  // when it reduces, the largest down link latency) and its ranks.
  void describe_reduction(const alg::SwitchReduce& op, std::size_t round, std::size_t i,
                          Reduction& out);

  // A Window to fill: a retired one (keeping its buffers) when there is one.
  Window spare();
  void retire_front() {
    pool_.push_back(std::move(window_.front()));
    window_.pop_front();
  }
  // Transfer of round w done at both ends: retires the rounds at the front that are done.
  void transfer_finished(Window& w) {
    ++w.finished;
    while (!window_.empty() && window_.front().finished == window_.front().total()) retire_front();
  }

  // The static fields of transfer j's record.
  void describe(const Window& w, std::uint32_t j, TransferRecord& rec) const;
  // Where transfer t's times go: the kept timeline, or (streaming to a sink) a record that
  // lives from the first end reaching the round until the receive side is reported.
  TransferRecord* record(std::uint64_t t, const Window& w, std::uint32_t j);
  void close_recv(std::uint64_t t, const TransferRecord& rec);

  // Rank r (schedule label) has finished everything before its next group of transfers: it
  // reaches that group's round now (taking rounds from the source until one has r in it).
  void enter(std::uint32_t r);

  void part_done(std::uint32_t r) {
    if (--remaining_[r] == 0) enter(r);
  }

  // Pipelined (an NCCL kernel's run on the flow model, pipelined_): a transfer starts when the
  // send before it on its connection has left (NetworkModel's transfer_sent), every write of an
  // earlier round into the chunks it sends has landed at the sender (per-chunk readiness, the
  // dataflow pass's rule), its receiver's kernel has started and its sender has taken its round.
  // A connection is a channel's link from one rank to another, as NCCL's channels each have
  // their own: the k-th transfer from src to dst in a round follows the k-th one of src's
  // latest earlier round with one (a round's transfers run at once, so several between two
  // ranks are on separate channels); an in-network reduction follows the one with the same
  // members and receivers alike (NVLS's reduce and multicast of each rank's chunk are its own
  // warps, streaming their chunks in order). So a channel waits for its own data only, not for
  // the rank's other channels. A rank takes its rounds ahead of its sends, up to
  // kStepsInFlight of them with sends not yet left (NCCL_STEPS: NCCL keeps up to 8 steps in
  // flight per connection); its receives do not hold it. Consecutive steps overlap their
  // latencies as NCCL's do.
  static constexpr std::uint32_t kStepsInFlight = 8;
  struct PendingWrite {
    std::int32_t begin = 0, end = 0;  // chunks at the rank
    std::uint64_t writer = 0;         // the transfer or reduction (global id)
    std::vector<std::uint64_t> waiters;  // transfers and reductions waiting for it to land
  };
  // Registers `waiter` (global id) on the rank's pending writes overlapping [begin, end);
  // returns how many.
  std::uint32_t depend(int rank, std::int32_t begin, std::int32_t end, std::uint64_t waiter);
  // The pipelined waits of round w's transfers and reductions, then its writes as pending.
  void pipeline_round(Window& w);
  // The write of `writer` has landed at `rank` (applied): its waiters are released.
  void land(std::uint64_t writer, int rank);
  // One of the waits of transfer or reduction `id` (global) is over.
  void release(std::uint64_t id);
  // Whether transfer or reduction `id` (global, of a round taken) has left its sender.
  bool has_left(std::uint64_t id);
  // Item j of round w (a transfer, or a reduction past the transfers) waits for the previous
  // one on `connection` (pipeline_round); returns 1 if it must wait, 0 if not.
  template <typename Map, typename Key>
  std::uint32_t follow(Map& last, const Key& connection, Window& w, std::uint32_t j);
  // Item j of round w has left its sender(s): the next on its connection and the rank's
  // group are told.
  void left(Window& w, std::uint32_t j);
  // Pipelined enter: rank r takes its next groups while fewer than kStepsInFlight are open.
  void enter_pipelined(std::uint32_t r);

  void launch(Window& w, std::uint32_t j);

  // In-network reduction i of round w: one flow over its links (NetworkModel::start_reduction).
  void launch_reduction(Window& w, std::size_t i);

  const int ranks_, chunks_;
  RouteCache& routes_;
  NetworkConfig network_;
  alg::ChunkSizes sizes_;
  Bytes bytes_;
  ReducingSwitches switches_;
  const bool serial_;  // the model serializes ports
  const bool pipelined_;  // an NCCL kernel on the flow model (part_done's comment)
  Engine engine_;
  std::unique_ptr<NetworkModel> network_model_;

  // Per run.
  RoundSource* source_ = nullptr;
  bool exhausted_ = false;
  const int* map_ = nullptr;
  std::deque<Window> window_;  // rounds taken and not done; references stay valid as it grows
  std::vector<Window> pool_;   // retired rounds, their buffers kept for reuse
  std::uint64_t next_transfer_ = 0, next_group_ = 0;
  std::uint32_t round_count_ = 0;
  std::vector<std::uint64_t> cursor_;      // per rank: its next group, or kNone
  std::vector<std::uint64_t> last_group_;  // per rank: its last group taken, or kNone
  std::vector<std::uint32_t> remaining_;
  std::vector<double> finish_;
  std::vector<std::uint32_t> stamp_;                 // take_round: 1 + the rank's last round index
  std::vector<std::int32_t> last_send_, last_recv_;  // take_round: port order in the round
  std::vector<std::uint32_t> group_of_, fill_;       // take_round: the rank's group, CSR fill
  std::vector<int> order_;
  std::vector<std::uint64_t> route_bytes_;
  // launch: per position in a round, the last route launched there and the bytes launched on it
  // since, not yet in route_bytes_ (consecutive rounds of a ring, of each of its channels, have
  // the same pairs at the same positions; a rank's several destinations defeat RouteCache's
  // last-destination memo, and route_bytes_ is read at random).
  struct RouteMemo {
    int src = -1, dst = -1;
    std::uint32_t route = 0;
    std::uint64_t bytes = 0;
  };
  std::vector<RouteMemo> route_memo_;
  // Adds a memo's bytes to route_bytes_.
  void flush(RouteMemo& memo);
  std::vector<std::uint64_t> reduction_link_bytes_;  // per link: in-network reductions' bytes
  std::uint64_t reductions_ = 0;                     // in-network reductions taken
  std::vector<std::uint32_t> op_mark_;               // describe_reduction: rank seen
  std::uint32_t op_stamp_ = 0;
  std::vector<TransferRecord>* timeline_ = nullptr;
  TimelineSink* sink_ = nullptr;
  std::unordered_map<std::uint64_t, TransferRecord> open_;  // streaming: transfers in flight
  // Pipelined, per rank (schedule label): its kernel started; transfers and reductions waiting
  // for it; the writes into it not landed yet.
  std::vector<char> launched_;
  std::vector<std::vector<std::uint64_t>> launch_waiters_;
  std::vector<std::vector<PendingWrite>> pending_;
  // Pipelined, per rank: its groups taken whose sends have not all left.
  std::vector<std::uint32_t> open_groups_;
  // Pipelined: the last transfer (global id) on each connection, keyed (src * ranks + dst) *
  // 2^20 + its index among the round's transfers from src to dst; the last reduction on each,
  // keyed by its members, -1, its receivers, -1, its index among the round's reductions with
  // the same members and receivers. Per round: how many of each seen so far.
  std::unordered_map<std::uint64_t, std::uint64_t> conn_last_;
  std::unordered_map<std::uint64_t, std::uint32_t> pair_seen_;
  std::map<std::vector<int>, std::uint64_t> op_conn_last_;
  std::map<std::vector<int>, std::uint32_t> op_seen_;
};

}  // namespace ssim::sim
