#include "sim/executor.hpp"

#include <algorithm>
#include <cmath>
#include <string>

#include "common/error.hpp"

namespace ssim::sim {

namespace {

// Byte count of a chunk range without a division per transfer (same rule as alg::chunk_bytes:
// floor(total / chunks) per chunk, the last chunk absorbing the remainder).
struct ChunkSizes {
  std::uint64_t base = 0;
  std::uint64_t remainder = 0;
  std::int32_t chunks = 0;

  ChunkSizes(std::uint64_t total, int chunk_count)
      : base(total / static_cast<std::uint64_t>(chunk_count)),
        remainder(total - base * static_cast<std::uint64_t>(chunk_count)),
        chunks(chunk_count) {}
  std::uint64_t of(const alg::Transfer& t) const {
    return base * static_cast<std::uint64_t>(t.chunk_end - t.chunk_begin) +
           (t.chunk_end == chunks && t.chunk_end > t.chunk_begin ? remainder : 0);
  }
};

void check_transfer(const alg::Transfer& t, int n, int chunks) {
  SSIM_CHECK(static_cast<unsigned>(t.src) < static_cast<unsigned>(n) &&
                 static_cast<unsigned>(t.dst) < static_cast<unsigned>(n) && t.src != t.dst &&
                 0 <= t.chunk_begin && t.chunk_begin <= t.chunk_end && t.chunk_end <= chunks,
             "schedule transfer out of range");
}

void check_inputs(int n, std::span<const Seconds> arrival, const RunOptions& options) {
  SSIM_CHECK(static_cast<int>(arrival.size()) == n, "one arrival time per rank needed");
  for (Seconds a : arrival) SSIM_CHECK(std::isfinite(a.value), "arrival times must be finite");
  if (!options.rank_map.empty()) {
    SSIM_CHECK(static_cast<int>(options.rank_map.size()) == n, "rank_map needs one entry per rank");
    std::vector<char> seen(static_cast<std::size_t>(n), 0);
    for (int p : options.rank_map) {
      SSIM_CHECK(p >= 0 && p < n && !seen[p], "rank_map must be a permutation");
      seen[p] = 1;
    }
  }
}

// Fills the summary fields from per-physical-rank finish times and per-route byte counts.
void finalize(IterationResult& r, std::span<const Seconds> arrival, std::vector<double> finish,
              const std::vector<std::uint64_t>& route_bytes, const RouteCache& routes) {
  const int n = r.ranks;
  r.arrival.assign(arrival.begin(), arrival.end());
  r.finish.resize(static_cast<std::size_t>(n));
  double first = arrival[0].value, last = arrival[0].value, end = finish[0];
  for (int i = 0; i < n; ++i) {
    r.finish[i] = Seconds{finish[i]};
    first = std::min(first, arrival[i].value);
    last = std::max(last, arrival[i].value);
    end = std::max(end, finish[i]);
  }
  r.first_arrival = Seconds{first};
  r.last_arrival = Seconds{last};
  r.last_finish = Seconds{end};
  r.completion = Seconds{end - first};
  r.after_last_arrival = Seconds{end - last};
  const double bytes = static_cast<double>(r.bytes);
  r.algbw =
      BytesPerSecond{r.after_last_arrival.value > 0 ? bytes / r.after_last_arrival.value : 0.0};
  r.busbw = BytesPerSecond{r.algbw.value * 2.0 * (n - 1) / n};

  const topo::Topology& topology = routes.topology();
  r.link_bytes.assign(static_cast<std::size_t>(topology.link_count()), 0);
  for (std::size_t i = 0; i < route_bytes.size(); ++i) {
    if (route_bytes[i] == 0) continue;
    for (int l : routes.links(routes.route(static_cast<std::uint32_t>(i)))) {
      r.link_bytes[l] += route_bytes[i];
    }
  }
  r.link_utilization.assign(r.link_bytes.size(), 0.0);
  if (r.completion.value > 0) {
    for (std::size_t l = 0; l < r.link_bytes.size(); ++l) {
      const double capacity =
          topology.link(static_cast<int>(l)).bandwidth.value * r.completion.value;
      r.link_utilization[l] = static_cast<double>(r.link_bytes[l]) / capacity;
    }
  }
}

}  // namespace

std::vector<int> straggler_rank_map(const alg::Schedule& schedule, int predicted) {
  SSIM_CHECK(predicted >= 0 && predicted < schedule.ranks, "predicted straggler out of range");
  std::vector<int> perm(static_cast<std::size_t>(schedule.ranks));
  for (int r = 0; r < schedule.ranks; ++r) perm[r] = r;
  if (schedule.straggler) std::swap(perm[*schedule.straggler], perm[predicted]);
  return perm;
}

// ---------------------------------------------------------------------------------------------
// The dataflow pass. Per round, each touched rank's ports start free at the time it reached the
// round; transfers are taken in schedule order, so a port's FIFO order is the schedule's.

IterationResult run_alphabeta(RoundSource& rounds, RouteCache& routes, SecondsPerByte gamma,
                              Bytes bytes, std::span<const Seconds> arrival,
                              const RunOptions& options) {
  const int n = rounds.ranks();
  const int chunks = rounds.chunks();
  SSIM_CHECK(n == routes.topology().gpu_count(), "schedule and topology rank counts differ");
  SSIM_CHECK(chunks > 0, "schedule without chunks");
  check_inputs(n, arrival, options);
  const int* map = options.rank_map.empty() ? nullptr : options.rank_map.data();
  const ChunkSizes sizes(bytes.value, chunks);
  const double g = gamma.value;

  const std::size_t un = static_cast<std::size_t>(n);
  std::vector<double> ready(un), send_free(un), recv_free(un), done(un);
  std::vector<std::uint32_t> stamp(un, 0);
  std::vector<int> touched;
  touched.reserve(un);
  for (std::size_t r = 0; r < un; ++r) ready[r] = arrival[r].value;
  std::vector<std::uint64_t> route_bytes(routes.size(), 0);

  IterationResult result;
  result.ranks = n;
  result.bytes = bytes.value;
  std::uint64_t transfers = 0;
  std::uint32_t k = 0;
  while (const alg::Round* round = rounds.next()) {
    ++k;
    touched.clear();
    std::int32_t index = 0;
    for (const alg::Transfer& t : round->transfers) {
      check_transfer(t, n, chunks);
      const int s = map ? map[t.src] : t.src;
      const int d = map ? map[t.dst] : t.dst;
      for (int r : {s, d}) {
        if (stamp[r] != k) {
          stamp[r] = k;
          send_free[r] = recv_free[r] = done[r] = ready[r];
          touched.push_back(r);
        }
      }
      const std::uint64_t m = sizes.of(t);
      const std::uint32_t ri = routes.find(s, d);
      if (ri >= route_bytes.size()) route_bytes.resize(ri + 1, 0);
      route_bytes[ri] += m;
      const double md = static_cast<double>(m);
      const double start = std::max(send_free[s], recv_free[d]);
      const double end = start + alphabeta_time(routes.route(ri), md);
      const double reduced = t.op == alg::Op::reduce ? end + g * md : end;
      send_free[s] = end;
      recv_free[d] = end;
      done[s] = std::max(done[s], end);
      done[d] = std::max(done[d], reduced);
      if (options.record_timeline) {
        result.timeline.push_back(TransferRecord{
            static_cast<std::int32_t>(k - 1), index, s, d, t.chunk_begin, t.chunk_end, t.op, m,
            Seconds{ready[s]}, Seconds{ready[d]}, Seconds{start}, Seconds{end}, Seconds{reduced}});
      }
      ++index;
    }
    transfers += round->transfers.size();
    for (int r : touched) ready[r] = done[r];
  }
  result.transfers = transfers;
  finalize(result, arrival, std::move(ready), route_bytes, routes);
  return result;
}

// ---------------------------------------------------------------------------------------------
// The event-engine evaluation. The schedule's structure (which transfers each rank takes part
// in, round by round, and the port order within a round) is built once; each run replays it.

class Executor::EventRun final : public EventHandler, public TransferSink {
 public:
  EventRun(const alg::Schedule& s, RouteCache& routes, NetworkConfig network, Bytes bytes)
      : schedule_(s),
        routes_(routes),
        network_(network),
        sizes_(bytes.value, s.chunks),
        bytes_(bytes) {
    const int n = s.ranks;
    std::uint32_t total = 0;
    round_offset_.reserve(s.rounds.size() + 1);
    for (const alg::Round& round : s.rounds) {
      round_offset_.push_back(total);
      total += static_cast<std::uint32_t>(round.transfers.size());
    }
    round_offset_.push_back(total);
    round_of_.resize(total);
    send_next_.assign(total, -1);
    recv_next_.assign(total, -1);
    port_preds_.assign(total, 0);
    rank_begin_.assign(static_cast<std::size_t>(n) + 1, 0);

    std::vector<std::int32_t> last_send(static_cast<std::size_t>(n)),
        last_recv(static_cast<std::size_t>(n));
    std::vector<std::uint32_t> stamp(static_cast<std::size_t>(n), 0);
    std::uint32_t id = 0;
    for (std::size_t k = 0; k < s.rounds.size(); ++k) {
      for (const alg::Transfer& t : s.rounds[k].transfers) {
        check_transfer(t, n, s.chunks);
        round_of_[id] = static_cast<std::int32_t>(k);
        for (int r : {t.src, t.dst}) {
          if (stamp[r] != k + 1) {
            stamp[r] = static_cast<std::uint32_t>(k + 1);
            last_send[r] = last_recv[r] = -1;
          }
          ++rank_begin_[static_cast<std::size_t>(r) + 1];
        }
        std::int32_t& ps = last_send[t.src];
        std::int32_t& pr = last_recv[t.dst];
        if (ps >= 0) send_next_[ps] = static_cast<std::int32_t>(id), ++port_preds_[id];
        if (pr >= 0) recv_next_[pr] = static_cast<std::int32_t>(id), ++port_preds_[id];
        ps = pr = static_cast<std::int32_t>(id);
        ++id;
      }
    }
    for (int r = 0; r < n; ++r) rank_begin_[static_cast<std::size_t>(r) + 1] += rank_begin_[r];
    rank_items_.resize(rank_begin_.back());
    std::vector<std::uint32_t> fill(rank_begin_.begin(), rank_begin_.end() - 1);
    id = 0;
    for (const alg::Round& round : s.rounds) {
      for (const alg::Transfer& t : round.transfers) {
        rank_items_[fill[t.src]++] = id;
        rank_items_[fill[t.dst]++] = id;
        ++id;
      }
    }
    network_model_ = make_network(network.kind, engine_, *this, routes_);
  }

  IterationResult run(std::span<const Seconds> arrival, const RunOptions& options) {
    const int n = schedule_.ranks;
    const std::size_t total = round_of_.size();
    check_inputs(n, arrival, options);
    map_ = options.rank_map.empty() ? nullptr : options.rank_map.data();
    engine_.reset();
    network_model_->reset();
    const bool serial = network_model_->serializes_ports();
    wait_.resize(total);
    for (std::size_t t = 0; t < total; ++t)
      wait_[t] = static_cast<std::uint8_t>(2 + (serial ? port_preds_[t] : 0));
    cursor_.assign(rank_begin_.begin(), rank_begin_.end() - 1);
    group_end_.assign(static_cast<std::size_t>(n), 0);
    remaining_.assign(static_cast<std::size_t>(n), 0);
    finish_.assign(static_cast<std::size_t>(n), 0.0);
    route_bytes_.assign(routes_.size(), 0);
    timeline_ = nullptr;

    IterationResult result;
    result.ranks = n;
    result.bytes = bytes_.value;
    if (options.record_timeline) {
      result.timeline.resize(total);
      timeline_ = result.timeline.data();
      for (std::size_t t = 0; t < total; ++t) {
        const alg::Transfer& tr = transfer(static_cast<std::uint32_t>(t));
        TransferRecord& rec = result.timeline[t];
        rec.round = round_of_[t];
        rec.index = static_cast<std::int32_t>(t - round_offset_[rec.round]);
        rec.src = physical(tr.src);
        rec.dst = physical(tr.dst);
        rec.chunk_begin = tr.chunk_begin;
        rec.chunk_end = tr.chunk_end;
        rec.op = tr.op;
        rec.bytes = sizes_.of(tr);
      }
    }
    for (int r = 0; r < n; ++r)
      engine_.schedule(arrival[physical(r)], *this, static_cast<std::uint64_t>(r));
    engine_.run();

    std::vector<double> finish(static_cast<std::size_t>(n));
    for (int r = 0; r < n; ++r) {
      SSIM_CHECK(cursor_[r] == rank_begin_[static_cast<std::size_t>(r) + 1],
                 "rank " + std::to_string(r) + " did not finish its transfers");
      finish[physical(r)] = finish_[r];
    }
    result.transfers = total;
    result.events = engine_.processed();
    finalize(result, arrival, std::move(finish), route_bytes_, routes_);
    return result;
  }

  void on_event(Engine& engine, std::uint64_t tag) override {
    if (tag & kReduce) {
      const std::uint32_t t = static_cast<std::uint32_t>(tag & ~kReduce);
      if (timeline_) timeline_[t].done = engine.now();
      part_done(static_cast<std::uint32_t>(transfer(t).dst));
    } else {
      enter(static_cast<std::uint32_t>(tag));  // arrival
    }
  }

  void transfer_done(std::uint32_t t, Seconds now) override {
    if (network_model_->serializes_ports()) {
      for (std::int32_t next : {send_next_[t], recv_next_[t]}) {
        if (next >= 0 && --wait_[next] == 0) launch(static_cast<std::uint32_t>(next));
      }
    }
    const alg::Transfer& tr = transfer(t);
    const std::uint64_t m = sizes_.of(tr);
    if (timeline_) timeline_[t].end = timeline_[t].done = now;
    part_done(static_cast<std::uint32_t>(tr.src));
    if (tr.op == alg::Op::reduce && network_.gamma.value > 0 && m > 0) {
      engine_.schedule(Seconds{now.value + network_.gamma.value * static_cast<double>(m)}, *this,
                       kReduce | t);
    } else {
      part_done(static_cast<std::uint32_t>(tr.dst));
    }
  }

 private:
  static constexpr std::uint64_t kReduce = std::uint64_t{1} << 63;

  const alg::Transfer& transfer(std::uint32_t t) const {
    const std::size_t k = static_cast<std::size_t>(round_of_[t]);
    return schedule_.rounds[k].transfers[t - round_offset_[k]];
  }
  int physical(int r) const { return map_ ? map_[r] : r; }

  // Rank r (schedule label) has finished everything before its next group of transfers: it
  // reaches that group's round now.
  void enter(std::uint32_t r) {
    const std::uint32_t p = cursor_[r], end = rank_begin_[r + 1];
    if (p == end) {
      finish_[r] = engine_.now().value;
      return;
    }
    const std::int32_t k = round_of_[rank_items_[p]];
    std::uint32_t q = p + 1;
    while (q < end && round_of_[rank_items_[q]] == k) ++q;
    group_end_[r] = q;
    remaining_[r] = q - p;
    for (std::uint32_t i = p; i < q; ++i) {
      const std::uint32_t t = rank_items_[i];
      if (timeline_) {
        (static_cast<std::uint32_t>(transfer(t).src) == r ? timeline_[t].src_ready
                                                          : timeline_[t].dst_ready) = engine_.now();
      }
      if (--wait_[t] == 0) launch(t);
    }
  }

  void part_done(std::uint32_t r) {
    if (--remaining_[r] == 0) {
      cursor_[r] = group_end_[r];
      enter(r);
    }
  }

  void launch(std::uint32_t t) {
    const alg::Transfer& tr = transfer(t);
    const std::uint64_t m = sizes_.of(tr);
    const std::uint32_t ri = routes_.find(physical(tr.src), physical(tr.dst));
    if (ri >= route_bytes_.size()) route_bytes_.resize(ri + 1, 0);
    route_bytes_[ri] += m;
    if (timeline_) timeline_[t].start = engine_.now();
    network_model_->start(t, ri, m);
  }

  const alg::Schedule& schedule_;
  RouteCache& routes_;
  NetworkConfig network_;
  ChunkSizes sizes_;
  Bytes bytes_;
  Engine engine_;
  std::unique_ptr<NetworkModel> network_model_;

  // Structure of the schedule; transfers are numbered in schedule order.
  std::vector<std::uint32_t> round_offset_;  // first transfer id of each round, then the total
  std::vector<std::int32_t> round_of_;
  std::vector<std::int32_t> send_next_;    // the next transfer at the same send port this round
  std::vector<std::int32_t> recv_next_;    // ... at the same receive port
  std::vector<std::uint8_t> port_preds_;   // how many of those point here (0..2)
  std::vector<std::uint32_t> rank_begin_;  // CSR: rank r's transfers (as sender or receiver)
  std::vector<std::uint32_t> rank_items_;

  // Per run.
  const int* map_ = nullptr;
  std::vector<std::uint8_t> wait_;  // ends not yet in the round + port predecessors not done
  std::vector<std::uint32_t> cursor_, group_end_, remaining_;
  std::vector<double> finish_;
  std::vector<std::uint64_t> route_bytes_;
  TransferRecord* timeline_ = nullptr;
};

// ---------------------------------------------------------------------------------------------

Executor::Executor(const alg::Schedule& schedule, const topo::Topology& topology,
                   NetworkConfig network, Bytes bytes)
    : schedule_(schedule),
      network_(network),
      bytes_(bytes),
      routes_(topology) {
  if (schedule.ranks != topology.gpu_count()) {
    throw InputError("schedule has " + std::to_string(schedule.ranks) + " ranks but topology " +
                     topology.name + " has " + std::to_string(topology.gpu_count()) +
                     " GPUs (they must be equal)");
  }
  if (network.gamma.value < 0 || !std::isfinite(network.gamma.value)) {
    throw InputError("gamma must be a finite number of seconds per byte >= 0");
  }
  SSIM_CHECK(schedule.chunks > 0, "schedule without chunks");
}

Executor::~Executor() = default;

IterationResult Executor::run(std::span<const Seconds> arrival, const RunOptions& options) {
  if (network_.kind == NetworkKind::alphabeta && !options.use_event_engine) {
    ScheduleRounds rounds(schedule_);
    return run_alphabeta(rounds, routes_, network_.gamma, bytes_, arrival, options);
  }
  if (!events_) events_ = std::make_unique<EventRun>(schedule_, routes_, network_, bytes_);
  return events_->run(arrival, options);
}

}  // namespace ssim::sim
