#include "sim/event_run.hpp"

#include <algorithm>
#include <cmath>
#include <limits>
#include <string>
#include <utility>

#include "common/error.hpp"
#include "sim/run_support.hpp"

namespace ssim::sim {

// The private helpers below are `inline` (only this file calls them), as they were when defined
// in the class body, so that the compiler weighs inlining them into the handlers the same way.

namespace {

// Tells `sink` of a side. A pipelined kernel's transfer can start before its receiver reaches
// the step (only the sender holds it back; the data lands in the receiver's buffer), even land
// before: a trace draws a side from its ready time and its transfer from the start, so a ready
// time after the start, or not yet known (NaN: describe), is the start (the receive posted when
// its data began to come). The timeline keeps the times as they are.
void tell(TimelineSink& sink, const TransferRecord& rec, TimelineSink::Side side, bool pipelined) {
  if (!pipelined) {
    sink.transfer_side(rec, side);
    return;
  }
  TransferRecord told = rec;
  for (Seconds* ready : {&told.src_ready, &told.dst_ready}) {
    if (!(ready->value <= told.start.value)) *ready = told.start;
  }
  sink.transfer_side(told, side);
}

}  // namespace

Executor::EventRun::EventRun(int ranks, int chunks, RouteCache& routes, NetworkConfig network,
                             Bytes bytes)
    : ranks_(ranks),
      chunks_(chunks),
      routes_(routes),
      network_(network),
      sizes_(bytes.value, chunks),
      bytes_(bytes),
      switches_(routes.topology(), ranks, chunks),
      // Port order matters only to a model that serializes ports (alphabeta); the flow model
      // shares bandwidth instead.
      serial_(network.kind == NetworkKind::alphabeta),
      pipelined_(network.protocol.active && network.protocol.pipelined && !serial_) {
  network_model_ = make_network(network.kind, engine_, *this, routes_, network.reference_flow,
                                network.protocol);
  SSIM_CHECK(network_model_->serializes_ports() == serial_, "port model mismatch");
}

IterationResult Executor::EventRun::run(RoundSource& rounds, std::span<const Seconds> arrival,
                                        const RunOptions& options) {
  const int n = ranks_;
  SSIM_CHECK(rounds.ranks() == n && rounds.chunks() == chunks_, "rounds of another schedule");
  check_inputs(n, arrival, options);
  map_ = options.rank_map.empty() ? nullptr : options.rank_map.data();
  source_ = &rounds;
  exhausted_ = false;
  engine_.reset();
  network_model_->reset();
  while (!window_.empty()) retire_front();
  next_transfer_ = next_group_ = 0;
  round_count_ = 0;
  const std::size_t rank_count = static_cast<std::size_t>(n);
  cursor_.assign(rank_count, kNone);
  last_group_.assign(rank_count, kNone);
  remaining_.assign(rank_count, 0);
  finish_.assign(rank_count, pipelined_ ? -std::numeric_limits<double>::infinity() : 0.0);
  if (pipelined_) {
    launched_.assign(rank_count, 0);
    launch_waiters_.resize(rank_count);
    pending_.resize(rank_count);
    for (std::size_t r = 0; r < rank_count; ++r) {
      launch_waiters_[r].clear();
      pending_[r].clear();
    }
    open_groups_.assign(rank_count, 0);
    conn_last_.clear();
    op_conn_last_.clear();
  }
  stamp_.assign(rank_count, 0);
  last_send_.assign(rank_count, -1);
  last_recv_.assign(rank_count, -1);
  route_bytes_.assign(routes_.size(), 0);
  route_memo_.clear();
  reduction_link_bytes_.clear();
  reductions_ = 0;
  op_mark_.assign(rank_count, 0);
  sink_ = options.trace;
  open_.clear();
  network_model_->observe(sink_);

  IterationResult result;
  result.ranks = n;
  result.bytes = bytes_.value;
  timeline_ = options.record_timeline ? &result.timeline : nullptr;
  // An NCCL kernel starts its first transfer a launch after the rank arrives (sim/protocol.hpp).
  const double launch = network_.protocol.launch;
  for (int r = 0; r < n; ++r)
    engine_.schedule(Seconds{arrival[physical(r)].value + launch}, *this,
                     static_cast<std::uint64_t>(r));
  engine_.run();
  network_model_->observe(nullptr);
  sink_ = nullptr;
  // Ranks that take part in nothing more finished at their arrival; rounds without transfers
  // at the end are still counted.
  while (take_round()) {
  }
  std::vector<double> finish(rank_count);
  for (int r = 0; r < n; ++r) {
    SSIM_CHECK(cursor_[r] == kNone && remaining_[r] == 0,
               "rank " + std::to_string(r) + " did not finish its transfers");
    finish[physical(r)] = finish_[r];
  }
  SSIM_CHECK(window_.empty(), "transfers left unfinished");
  for (RouteMemo& memo : route_memo_) flush(memo);
  result.transfers = next_transfer_ - reductions_;
  result.events = engine_.processed();
  source_ = nullptr;
  timeline_ = nullptr;
  finalize(result, arrival, std::move(finish), route_bytes_, routes_);
  if (!reduction_link_bytes_.empty()) {
    for (std::size_t l = 0; l < reduction_link_bytes_.size(); ++l)
      result.link_bytes[l] += reduction_link_bytes_[l];
    link_utilization(result, routes_.topology());
  }
  return result;
}

void Executor::EventRun::on_event(Engine& engine, std::uint64_t tag) {
  if (tag & kReduce) {
    const std::uint64_t t = global(static_cast<std::uint32_t>(tag));
    Window& w = locate(t);
    const std::uint32_t j = static_cast<std::uint32_t>(t - w.first);
    if (TransferRecord* rec = record(t, w, j)) {
      rec->done = engine.now();
      close_recv(t, *rec);
    }
    if (pipelined_)
      land(t, w.transfers[j].dst);
    else
      part_done(static_cast<std::uint32_t>(w.transfers[j].dst));
    transfer_finished(w);
  } else {
    enter(static_cast<std::uint32_t>(tag));  // arrival
  }
}

void Executor::EventRun::transfer_done(std::uint32_t id, Seconds now) {
  const std::uint64_t t = global(id);
  Window& w = locate(t);
  const std::uint32_t j = static_cast<std::uint32_t>(t - w.first);
  if (j >= w.transfers.size()) {  // an in-network reduction: done for all its ranks at once
    const std::size_t i = j - w.transfers.size();
    if (pipelined_) {  // its members were done when it was sent; it lands at its receivers
      for (std::size_t x = 0; x < w.ops[i].receivers.size(); ++x) land(t, w.ops[i].receivers[x]);
    } else {
      for (std::size_t x = 0; x < w.ops[i].ranks.size(); ++x)
        part_done(static_cast<std::uint32_t>(w.ops[i].ranks[x]));
    }
    transfer_finished(w);
    return;
  }
  if (serial_) {
    for (std::int32_t next : {w.send_next[j], w.recv_next[j]}) {
      if (next >= 0 && --w.wait[static_cast<std::size_t>(next)] == 0)
        launch(w, static_cast<std::uint32_t>(next));
    }
  }
  const alg::Transfer tr = w.transfers[j];
  const std::uint64_t m = sizes_.length(tr);
  const bool reduces = tr.op == alg::Op::reduce && network_.gamma.value > 0 && m > 0;
  if (TransferRecord* rec = record(t, w, j)) {
    rec->end = rec->done = now;
    if (sink_) tell(*sink_, *rec, TimelineSink::Side::send, pipelined_);
    if (!reduces) close_recv(t, *rec);
  }
  if (!pipelined_) part_done(static_cast<std::uint32_t>(tr.src));  // pipelined: when sent
  if (reduces) {
    engine_.schedule(Seconds{now.value + network_.gamma.value * static_cast<double>(m)}, *this,
                     kReduce | id);
  } else {
    if (pipelined_)
      land(t, tr.dst);
    else
      part_done(static_cast<std::uint32_t>(tr.dst));
    transfer_finished(w);
  }
}

void Executor::EventRun::transfer_sent(std::uint32_t id, Seconds now) {
  const std::uint64_t t = global(id);
  Window& w = locate(t);
  left(w, static_cast<std::uint32_t>(t - w.first));
  (void)now;
}

void Executor::EventRun::left(Window& w, std::uint32_t j) {
  const double now = engine_.now().value;
  w.sent[j] = 1;
  const std::uint64_t next = w.conn_next[j];
  // A rank whose open groups drop below the limit takes its next ones.
  auto group_done = [&](int rank, std::uint32_t group) {
    finish_[rank] = std::max(finish_[rank], now);
    if (--w.group_left[group] == 0 && open_groups_[rank]-- == kStepsInFlight)
      enter_pipelined(static_cast<std::uint32_t>(rank));
  };
  if (j >= w.transfers.size()) {
    const Reduction& op = w.ops[j - w.transfers.size()];
    for (std::size_t x = 0; x < op.members; ++x) group_done(op.ranks[x], op.member_groups[x]);
  } else {
    group_done(w.transfers[j].src, w.send_group[j]);
  }
  if (next != kNone) release(next);
}

bool Executor::EventRun::has_left(std::uint64_t id) {
  if (window_.empty() || id < window_.front().first) return true;  // retired: landed
  Window& w = locate(id);
  return w.sent[id - w.first] != 0;
}

template <typename Map, typename Key>
std::uint32_t Executor::EventRun::follow(Map& last, const Key& connection, Window& w,
                                         std::uint32_t j) {
  const std::uint64_t id = w.first + j;
  auto [it, fresh] = last.try_emplace(connection, id);
  if (fresh) return 0;
  const std::uint64_t before = it->second;
  it->second = id;
  if (has_left(before)) return 0;
  Window& p = locate(before);
  p.conn_next[before - p.first] = id;
  return 1;
}

std::uint32_t Executor::EventRun::depend(int rank, std::int32_t begin, std::int32_t end,
                                         std::uint64_t waiter) {
  std::uint32_t count = 0;
  for (PendingWrite& p : pending_[static_cast<std::size_t>(rank)]) {
    if (p.begin < end && begin < p.end) {
      p.waiters.push_back(waiter);
      ++count;
    }
  }
  return count;
}

void Executor::EventRun::pipeline_round(Window& w) {
  const std::size_t size = w.transfers.size();
  w.sent.assign(w.total(), 0);
  w.conn_next.assign(w.total(), kNone);
  w.send_group.resize(size);
  w.group_left.assign(order_.size(), 0);
  pair_seen_.clear();
  op_seen_.clear();
  const std::uint64_t n = static_cast<std::uint64_t>(ranks_);
  SSIM_CHECK(n <= (std::uint64_t{1} << 21), "too many ranks for the pipelined event engine");
  for (std::uint32_t j = 0; j < size; ++j) {
    const alg::Transfer& t = w.transfers[j];
    const std::uint64_t id = w.first + j;
    w.send_group[j] = group_of_[static_cast<std::size_t>(t.src)];
    std::uint32_t wait = 1;  // its sender enters the round
    if (!launched_[static_cast<std::size_t>(t.dst)]) {
      ++wait;
      launch_waiters_[static_cast<std::size_t>(t.dst)].push_back(id);
    }
    const std::uint64_t pair =
        static_cast<std::uint64_t>(t.src) * n + static_cast<std::uint64_t>(t.dst);
    const std::uint32_t k = pair_seen_[pair]++;
    SSIM_CHECK(k < (1u << 20), "too many transfers between two ranks in one round");
    wait += follow(conn_last_, (pair << 20) | k, w, j);
    w.wait[j] = wait + depend(t.src, t.chunk_begin, t.chunk_end, id);
  }
  std::vector<int> key;
  for (std::size_t i = 0; i < w.ops.size(); ++i) {
    Reduction& op = w.ops[i];
    const std::uint64_t id = w.first + size + i;
    op.member_groups.resize(op.members);
    for (std::size_t x = 0; x < op.members; ++x)
      op.member_groups[x] = group_of_[static_cast<std::size_t>(op.ranks[x])];
    key.assign(op.ranks.begin(), op.ranks.begin() + static_cast<std::ptrdiff_t>(op.members));
    key.push_back(-1);
    key.insert(key.end(), op.receivers.begin(), op.receivers.end());
    key.push_back(-1);
    key.push_back(static_cast<int>(op_seen_[key]++));
    std::uint32_t wait = static_cast<std::uint32_t>(op.members);  // its members enter
    wait += follow(op_conn_last_, key, w, static_cast<std::uint32_t>(size + i));
    for (std::size_t x = op.members; x < op.ranks.size(); ++x) {
      if (!launched_[static_cast<std::size_t>(op.ranks[x])]) {
        ++wait;
        launch_waiters_[static_cast<std::size_t>(op.ranks[x])].push_back(id);
      }
    }
    for (std::size_t x = 0; x < op.members; ++x)
      wait += depend(op.ranks[x], op.chunk_begin, op.chunk_end, id);
    w.op_wait[i] = wait;
  }
  // The round's writes, pending until they land (after its reads: a send of the round reads
  // the chunks as they were before it).
  for (std::uint32_t j = 0; j < size; ++j) {
    const alg::Transfer& t = w.transfers[j];
    pending_[static_cast<std::size_t>(t.dst)].push_back(
        PendingWrite{t.chunk_begin, t.chunk_end, w.first + j, {}});
  }
  for (std::size_t i = 0; i < w.ops.size(); ++i) {
    for (int r : w.ops[i].receivers) {
      pending_[static_cast<std::size_t>(r)].push_back(
          PendingWrite{w.ops[i].chunk_begin, w.ops[i].chunk_end, w.first + size + i, {}});
    }
  }
}

void Executor::EventRun::land(std::uint64_t writer, int rank) {
  finish_[rank] = std::max(finish_[rank], engine_.now().value);
  std::vector<PendingWrite>& list = pending_[static_cast<std::size_t>(rank)];
  for (std::size_t k = 0; k < list.size(); ++k) {
    if (list[k].writer != writer) continue;
    std::vector<std::uint64_t> waiters = std::move(list[k].waiters);
    list[k] = std::move(list.back());
    list.pop_back();
    for (std::uint64_t id : waiters) release(id);
    return;
  }
}

void Executor::EventRun::release(std::uint64_t id) {
  Window& w = locate(id);
  const std::uint32_t j = static_cast<std::uint32_t>(id - w.first);
  if (j < w.transfers.size()) {
    if (--w.wait[j] == 0) launch(w, j);
  } else {
    const std::size_t i = j - w.transfers.size();
    if (--w.op_wait[i] == 0) launch_reduction(w, i);
  }
}

inline Executor::EventRun::Window& Executor::EventRun::locate(std::uint64_t t, bool groups) {
  std::size_t lo = 0, hi = window_.size();  // the last round whose first id <= t
  while (hi - lo > 1) {
    const std::size_t mid = (lo + hi) / 2;
    ((groups ? window_[mid].first_group : window_[mid].first) <= t ? lo : hi) = mid;
  }
  return window_[lo];
}

inline bool Executor::EventRun::take_round() {
  if (exhausted_) return false;
  const alg::Round* round = source_->next();
  if (!round) {
    exhausted_ = true;
    return false;
  }
  const std::uint32_t round_stamp = ++round_count_;  // 1 + the round's index
  const std::size_t size = round->transfers.size();
  const std::size_t ops = round->switch_reduces.size();
  SSIM_CHECK(size + ops < (std::size_t{1} << 31), "round too large for the event engine");
  if (size + ops == 0) return true;  // no transfers: nothing waits for it
  SSIM_CHECK(window_.empty() ||
                 next_transfer_ - window_.front().first + size + ops < (std::uint64_t{1} << 32),
             "too many transfers in flight for the event engine (2^32)");
  if (ops > 0 && (timeline_ || sink_)) untraceable_switch_reduces(round_stamp);
  Window& w = window_.emplace_back(spare());
  w.first = next_transfer_;
  w.first_group = next_group_;
  w.index = static_cast<std::int32_t>(round_stamp - 1);
  w.transfers.assign(round->transfers.begin(), round->transfers.end());
  w.wait.assign(size, 2);
  w.finished = 0;
  w.ops.resize(ops);
  w.op_wait.assign(ops, 0);
  if (serial_) {
    w.send_next.assign(size, -1);
    w.recv_next.assign(size, -1);
  }
  // Groups in order of their rank's first item in the round.
  w.group_begin.clear();
  w.items.resize(2 * size);
  group_of_.resize(static_cast<std::size_t>(ranks_));
  order_.clear();
  for (std::uint32_t j = 0; j < size; ++j) {
    const alg::Transfer& t = w.transfers[j];
    check_transfer(t, ranks_, chunks_);
    for (int r : {t.src, t.dst}) {
      if (stamp_[r] != round_stamp) {
        stamp_[r] = round_stamp;
        last_send_[r] = last_recv_[r] = -1;
        group_of_[r] = static_cast<std::uint32_t>(order_.size());
        order_.push_back(r);
      }
    }
    if (serial_) {
      std::int32_t& ps = last_send_[t.src];
      std::int32_t& pr = last_recv_[t.dst];
      if (ps >= 0) w.send_next[ps] = static_cast<std::int32_t>(j), ++w.wait[j];
      if (pr >= 0) w.recv_next[pr] = static_cast<std::int32_t>(j), ++w.wait[j];
      ps = pr = static_cast<std::int32_t>(j);
    }
  }
  std::size_t op_items = 0;
  for (std::size_t i = 0; i < ops; ++i) {
    describe_reduction(round->switch_reduces[i], round_stamp - 1, i, w.ops[i]);
    for (int r : w.ops[i].ranks) {
      if (stamp_[r] != round_stamp) {
        stamp_[r] = round_stamp;
        group_of_[r] = static_cast<std::uint32_t>(order_.size());
        order_.push_back(r);
      }
    }
    w.op_wait[i] = static_cast<std::uint32_t>(w.ops[i].ranks.size());
    op_items += w.ops[i].ranks.size();
  }
  w.items.resize(2 * size + op_items);
  // CSR of the items by group.
  const std::size_t groups = order_.size();
  w.group_begin.assign(groups + 1, 0);
  for (const alg::Transfer& t : w.transfers) {
    ++w.group_begin[group_of_[t.src] + 1];
    ++w.group_begin[group_of_[t.dst] + 1];
  }
  for (const Reduction& op : w.ops)
    for (int r : op.ranks) ++w.group_begin[group_of_[r] + 1];
  for (std::size_t g = 0; g < groups; ++g) w.group_begin[g + 1] += w.group_begin[g];
  fill_.assign(w.group_begin.begin(), w.group_begin.end() - 1);
  for (std::uint32_t j = 0; j < size; ++j) {
    const alg::Transfer& t = w.transfers[j];
    w.items[fill_[group_of_[t.src]]++] = j << 1;
    w.items[fill_[group_of_[t.dst]]++] = (j << 1) | 1;
  }
  for (std::size_t i = 0; i < ops; ++i) {
    const std::uint32_t j = static_cast<std::uint32_t>(size + i);
    // Low bit: a receiver only (read by the pipelined run alone).
    for (std::size_t x = 0; x < w.ops[i].ranks.size(); ++x)
      w.items[fill_[group_of_[w.ops[i].ranks[x]]]++] =
          (j << 1) | (x < w.ops[i].members ? 0u : 1u);
  }
  // Link each rank's previous group here, or make this its next group.
  w.group_next.assign(groups, kNone);
  for (std::size_t g = 0; g < groups; ++g) {
    const int r = order_[g];
    const std::uint64_t id = next_group_ + g;
    if (cursor_[r] == kNone) {
      cursor_[r] = id;
    } else {
      Window& prev = locate(last_group_[r], true);
      prev.group_next[last_group_[r] - prev.first_group] = id;
    }
    last_group_[r] = id;
  }
  if (timeline_) {
    for (std::uint32_t j = 0; j < size; ++j) describe(w, j, timeline_->emplace_back());
  }
  if (pipelined_) pipeline_round(w);
  next_transfer_ += size + ops;
  reductions_ += ops;
  next_group_ += groups;
  return true;
}

inline void Executor::EventRun::describe_reduction(const alg::SwitchReduce& op, std::size_t round,
                                                   std::size_t i, Reduction& out) {
  SSIM_CHECK(!serial_, "in-network reductions reached the alpha-beta event engine");
  const ReducingSwitches::Ports& ports = switches_.ports(switches_.resolve(op, map_, round, i));
  const topo::Topology& topology = routes_.topology();
  out.links.clear();
  out.ranks.clear();
  out.receivers.assign(op.receivers.begin(), op.receivers.end());
  out.chunk_begin = op.chunk_begin;
  out.chunk_end = op.chunk_end;
  ++op_stamp_;
  double up = 0, down = 0;
  for (const std::vector<int>* list : {&op.members, &op.receivers}) {
    const bool members = list == &op.members;
    for (int r : *list) {
      const std::size_t p = static_cast<std::size_t>(physical(r));
      const int link = members ? ports.up[p] : ports.down[p];
      out.links.push_back(link);
      double& latency = members ? up : down;
      latency = std::max(latency, topology.link(link).latency.value);
      if (op_mark_[static_cast<std::size_t>(r)] != op_stamp_) {
        op_mark_[static_cast<std::size_t>(r)] = op_stamp_;
        out.ranks.push_back(r);
      }
    }
    if (members) out.members = out.ranks.size();
  }
  out.reducer = op.members.size() > 1 ? ports.vertex : -1;
  out.latency =
      up + (out.reducer >= 0 ? topology.node(ports.vertex).reduce->latency.value : 0.0) + down;
  if (pipelined_) out.latency = network_.protocol.switch_latency(out.latency);
  out.bytes = sizes_.length(op);
}

inline Executor::EventRun::Window Executor::EventRun::spare() {
  if (pool_.empty()) return Window{};
  Window w = std::move(pool_.back());
  pool_.pop_back();
  return w;
}

inline void Executor::EventRun::describe(const Window& w, std::uint32_t j,
                                         TransferRecord& rec) const {
  const alg::Transfer& tr = w.transfers[j];
  rec.round = w.index;
  rec.index = static_cast<std::int32_t>(j);
  rec.src = physical(tr.src);
  rec.dst = physical(tr.dst);
  rec.chunk_begin = tr.chunk_begin;
  rec.chunk_end = tr.chunk_end;
  rec.op = tr.op;
  rec.bytes = sizes_.length(tr);
  // Pipelined: a side not yet reached (enter_pipelined) when the sink is told of it (tell).
  if (pipelined_) rec.src_ready = rec.dst_ready = Seconds{std::numeric_limits<double>::quiet_NaN()};
}

inline TransferRecord* Executor::EventRun::record(std::uint64_t t, const Window& w,
                                                  std::uint32_t j) {
  if (timeline_) return &(*timeline_)[t];
  if (!sink_) return nullptr;
  auto [it, inserted] = open_.try_emplace(t);
  if (inserted) describe(w, j, it->second);
  return &it->second;
}

inline void Executor::EventRun::close_recv(std::uint64_t t, const TransferRecord& rec) {
  if (!sink_) return;
  tell(*sink_, rec, TimelineSink::Side::recv, pipelined_);
  if (!timeline_) open_.erase(t);
}

inline void Executor::EventRun::enter(std::uint32_t r) {
  if (pipelined_) {
    enter_pipelined(r);
    return;
  }
  while (cursor_[r] == kNone && take_round()) {
  }
  const std::uint64_t g = cursor_[r];
  if (g == kNone) {
    finish_[r] = engine_.now().value;
    return;
  }
  Window& w = locate(g, true);
  const std::size_t at = static_cast<std::size_t>(g - w.first_group);
  cursor_[r] = w.group_next[at];  // kNone until a later round with r is taken
  const std::uint32_t begin = w.group_begin[at], end = w.group_begin[at + 1];
  remaining_[r] = end - begin;
  for (std::uint32_t i = begin; i < end; ++i) {
    const std::uint32_t item = w.items[i];
    const std::uint32_t j = item >> 1;
    if (j >= w.transfers.size()) {
      const std::size_t op = j - w.transfers.size();
      if (--w.op_wait[op] == 0) launch_reduction(w, op);
      continue;
    }
    if (TransferRecord* rec = record(w.first + j, w, j))
      ((item & 1) == 0 ? rec->src_ready : rec->dst_ready) = engine_.now();
    if (--w.wait[j] == 0) launch(w, j);
  }
}

void Executor::EventRun::enter_pipelined(std::uint32_t r) {
  if (!launched_[r]) {  // its kernel starts: transfers into it may go
    launched_[r] = 1;
    std::vector<std::uint64_t> waiters = std::move(launch_waiters_[r]);
    launch_waiters_[r].clear();
    for (std::uint64_t id : waiters) release(id);
  }
  while (open_groups_[r] < kStepsInFlight) {
    while (cursor_[r] == kNone && take_round()) {
    }
    const std::uint64_t g = cursor_[r];
    if (g == kNone) {
      finish_[r] = std::max(finish_[r], engine_.now().value);
      return;
    }
    Window& w = locate(g, true);
    const std::size_t at = static_cast<std::size_t>(g - w.first_group);
    cursor_[r] = w.group_next[at];  // kNone until a later round with r is taken
    std::uint32_t sends = 0;
    for (std::uint32_t i = w.group_begin[at]; i < w.group_begin[at + 1]; ++i) {
      const std::uint32_t item = w.items[i];
      const std::uint32_t j = item >> 1;
      // Without a timeline, a transfer that has left and has no open record was done before
      // this receiver reached its step (the sink has been told of it): no record again.
      if (j < w.transfers.size() &&
          (timeline_ || (sink_ && (!w.sent[j] || open_.find(w.first + j) != open_.end())))) {
        if (TransferRecord* rec = record(w.first + j, w, j))
          ((item & 1) == 0 ? rec->src_ready : rec->dst_ready) = engine_.now();
      }
      if ((item & 1) != 0) continue;  // a receive, or a reduction's receiver: does not hold it
      ++sends;
      if (j >= w.transfers.size()) {
        const std::size_t op = j - w.transfers.size();
        if (--w.op_wait[op] == 0) launch_reduction(w, op);
      } else if (--w.wait[j] == 0) {
        launch(w, j);
      }
    }
    // Before any of them can have left (they leave in later events).
    w.group_left[at] = sends;
    if (sends > 0) ++open_groups_[r];
  }
}

inline void Executor::EventRun::launch(Window& w, std::uint32_t j) {
  const alg::Transfer& tr = w.transfers[j];
  const std::uint64_t m = sizes_.length(tr);
  const int src = physical(tr.src), dst = physical(tr.dst);
  if (j >= route_memo_.size()) route_memo_.resize(w.transfers.size());
  RouteMemo& memo = route_memo_[j];
  if (memo.src != src || memo.dst != dst) {
    flush(memo);
    memo = RouteMemo{src, dst, routes_.find(src, dst), 0};
  }
  const std::uint32_t ri = memo.route;
  memo.bytes += m;
  const std::uint64_t t = w.first + j;
  if (TransferRecord* rec = record(t, w, j)) rec->start = engine_.now();
  network_model_->start(static_cast<std::uint32_t>(t), ri, m);
}

void Executor::EventRun::flush(RouteMemo& memo) {
  if (memo.bytes == 0) return;
  if (memo.route >= route_bytes_.size()) route_bytes_.resize(memo.route + 1, 0);
  route_bytes_[memo.route] += memo.bytes;
  memo.bytes = 0;
}

inline void Executor::EventRun::launch_reduction(Window& w, std::size_t i) {
  const Reduction& op = w.ops[i];
  if (reduction_link_bytes_.empty())
    reduction_link_bytes_.assign(static_cast<std::size_t>(routes_.topology().link_count()), 0);
  for (int l : op.links) reduction_link_bytes_[static_cast<std::size_t>(l)] += op.bytes;
  network_model_->start_reduction(static_cast<std::uint32_t>(w.first + w.transfers.size() + i),
                                  op.links, op.reducer, op.latency, op.bytes);
}

}  // namespace ssim::sim
