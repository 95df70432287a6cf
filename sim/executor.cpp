#include "sim/executor.hpp"

#include <algorithm>
#include <atomic>
#include <charconv>
#include <cmath>
#include <deque>
#include <limits>
#include <string>
#include <unordered_map>

#include "common/error.hpp"
#include "sim/fork_join.hpp"
#include "sim/shared_device.hpp"

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

// link_utilization from link_bytes and completion.
void link_utilization(IterationResult& r, const topo::Topology& topology) {
  r.link_utilization.assign(r.link_bytes.size(), 0.0);
  if (r.completion.value > 0) {
    for (std::size_t l = 0; l < r.link_bytes.size(); ++l) {
      const double capacity =
          topology.link(static_cast<int>(l)).bandwidth.value * r.completion.value;
      r.link_utilization[l] = static_cast<double>(r.link_bytes[l]) / capacity;
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
  routes.add_link_bytes(route_bytes, r.link_bytes);
  link_utilization(r, topology);
}

}  // namespace

std::vector<int> straggler_rank_map(const alg::Schedule& schedule, int predicted) {
  SSIM_CHECK(predicted >= 0 && predicted < schedule.ranks, "predicted straggler out of range");
  std::vector<int> perm(static_cast<std::size_t>(schedule.ranks));
  for (int r = 0; r < schedule.ranks; ++r) perm[r] = r;
  if (!schedule.straggler) return perm;
  // A schedule built for a node structure (its gpus_per_node option, rank = node*G + local):
  // shift nodes and local indices alike so that nodes and rails stay whole.
  const auto g_it = schedule.options.find("gpus_per_node");
  int g = 0;
  if (g_it != schedule.options.end()) {
    const std::string& text = g_it->second;
    const auto [ptr, ec] = std::from_chars(text.data(), text.data() + text.size(), g);
    if (ec != std::errc() || ptr != text.data() + text.size()) g = 0;
  }
  if (g >= 1 && schedule.ranks % g == 0) {
    const int nodes = schedule.ranks / g, s = *schedule.straggler;
    const int dn = (predicted / g - s / g + nodes) % nodes, dl = (predicted % g - s % g + g) % g;
    for (int r = 0; r < schedule.ranks; ++r) perm[r] = (r / g + dn) % nodes * g + (r % g + dl) % g;
    return perm;
  }
  std::swap(perm[*schedule.straggler], perm[predicted]);
  return perm;
}

std::vector<int> late_rank_map(const alg::Schedule& schedule, std::span<const int> predicted) {
  const std::size_t n = static_cast<std::size_t>(schedule.ranks);
  SSIM_CHECK(predicted.size() == schedule.late.size(), "one prediction per late rank");
  std::vector<int> perm(n, -1);
  std::vector<char> used(n, 0), is_late(n, 0);
  for (std::size_t i = 0; i < predicted.size(); ++i) {
    const int p = predicted[i];
    SSIM_CHECK(p >= 0 && p < schedule.ranks && !used[static_cast<std::size_t>(p)],
               "predicted late ranks must be distinct and in range");
    perm[static_cast<std::size_t>(schedule.late[i])] = p;
    used[static_cast<std::size_t>(p)] = 1;
    is_late[static_cast<std::size_t>(schedule.late[i])] = 1;
  }
  for (std::size_t r = 0; r < n; ++r) {  // ranks of neither list stay
    if (!is_late[r] && !used[r]) {
      perm[r] = static_cast<int>(r);
      used[r] = 1;
    }
  }
  std::size_t next = 0;  // the rest take the freed ranks in order
  for (std::size_t r = 0; r < n; ++r) {
    if (perm[r] >= 0) continue;
    while (used[next]) ++next;
    perm[r] = static_cast<int>(next);
    used[next] = 1;
  }
  return perm;
}

// ---------------------------------------------------------------------------------------------
// The dataflow pass. Per round, each touched rank's ports start free at the time it reached the
// round; transfers are taken in schedule order, so a port's FIFO order is the schedule's.
//
// With threads, a round in which every rank sends at most once and receives at most once (ring,
// rhd, trees, StragglAR, ...) is computed in parallel: there no port serves two transfers, so a
// transfer starts at max(ready[src], ready[dst]) whatever the others do, and a rank's new ready
// time is the max of its old one and its transfers' ends, which does not depend on the order
// the maxima are taken in. The results are those of the sequential pass, bit for bit. Rounds
// where a port serves several transfers, rounds below RunOptions::parallel_round transfers and
// rounds with in-network reductions run sequentially.

namespace {

// The parallel path's state. A round goes in two fork-join steps:
//  1. per transfer (chunks of the round): its end and reduced times from the ranks' ready times
//     (read only in this step), written to the sender's send slot and the receiver's receive
//     slot, each tagged with (round, transfer);
//  2. per rank (chunks of [0, n)): its new ready time, the max of its old one and the times in
//     its slots tagged with this round, written to a second array (ready times are double
//     buffered), and its bytes added up.
// A port that serves two transfers shows as fewer tagged slots than transfers (a later tag
// overwrote an earlier one): the round is then undone (the bytes taken back, the second array
// dropped) and run sequentially. No atomic read-modify-write per transfer: every slot field is
// a relaxed atomic (a plain load or store), so two transfers writing one slot are no data race.
struct ParallelPass {
  struct Slot {
    std::atomic<std::uint64_t> tag{0};  // (round << 32) | transfer
    std::atomic<double> time{0};        // send: end; receive: reduced
    std::atomic<std::uint64_t> bytes{0};
    std::atomic<std::uint32_t> route{0};  // send, general path: the route
  };
  // Per chunk of step 2: tagged slots seen (merged by the caller).
  struct Count {
    std::uint64_t sends = 0, recvs = 0;
  };
  ParallelPass(int threads, std::size_t ranks)
      : team(threads), send(ranks), recv(ranks), next_ready(ranks) {}
  static std::uint64_t tag(std::uint32_t k, std::size_t j) {
    return (std::uint64_t{k} << 32) | static_cast<std::uint64_t>(j);
  }
  static bool in_round(std::uint64_t tag, std::uint32_t k) { return (tag >> 32) == k; }

  ForkJoin team;
  std::vector<Slot> send, recv;         // per physical rank
  std::vector<double> next_ready;       // step 2's output
  std::vector<std::uint32_t> route_of;  // general path, per transfer: route, or missing
  std::vector<char> missing;            // per chunk of step 1: a route was not cached
  std::vector<Count> counts;            // per chunk of step 2
};

// Chunks of a step over `items`: about kChunkItems each, at least one per thread.
constexpr std::size_t kChunkItems = 1024;
std::size_t chunk_count(std::size_t items, int threads) {
  return std::max<std::size_t>(static_cast<std::size_t>(threads), items / kChunkItems);
}

// The part of [0, size) that part `p` of `parts` takes: contiguous blocks.
std::pair<std::size_t, std::size_t> block(std::size_t size, std::size_t p, std::size_t parts) {
  return {size * p / parts, size * (p + 1) / parts};
}

// The single-switch round when nothing is recorded (no timeline, no trace): the same
// arithmetic as time_transfer on StarRoutes::route, bit for bit, in one loop over raw per-rank
// arrays with the route's terms precomputed per rank. The route's latency is
// (0.0 + up latency) + down latency, summed in that order as before; its inverse bandwidth
// 1 / min(up, down) equals max(1 / up, 1 / down) exactly, since a correctly rounded division
// is monotone, so no division is left per transfer.
struct StarPass {
  int n = 0, chunks = 0;
  const int* map = nullptr;
  double gamma = 0;
  std::uint64_t base = 0, remainder = 0;  // ChunkSizes
  double* ready = nullptr;
  double* send_free = nullptr;
  double* recv_free = nullptr;
  double* done = nullptr;
  std::uint32_t* stamp = nullptr;
  std::uint64_t* sent = nullptr;
  std::uint64_t* received = nullptr;
  int* touched = nullptr;              // room for n ranks
  const double* up_latency = nullptr;  // 0.0 + the up link's latency
  const double* down_latency = nullptr;
  const double* up_inverse = nullptr;  // 1 / bandwidth
  const double* down_inverse = nullptr;

  void run(const alg::Transfer* t, std::size_t size, std::uint32_t k) const {
    // Locals, so that the compiler keeps them in registers across the stores below.
    const int n = this->n, chunks = this->chunks;
    const int* const map = this->map;
    const double gamma = this->gamma;
    const std::uint64_t base = this->base, remainder = this->remainder;
    double* const ready = this->ready;
    double* const send_free = this->send_free;
    double* const recv_free = this->recv_free;
    double* const done = this->done;
    std::uint32_t* const stamp = this->stamp;
    std::uint64_t* const sent = this->sent;
    std::uint64_t* const received = this->received;
    int* const touched = this->touched;
    const double* const up_latency = this->up_latency;
    const double* const down_latency = this->down_latency;
    const double* const up_inverse = this->up_inverse;
    const double* const down_inverse = this->down_inverse;
    std::size_t count = 0;
    const std::uint32_t un = static_cast<std::uint32_t>(n);
    for (std::size_t j = 0; j < size; ++j) {
      const alg::Transfer& x = t[j];
      if (static_cast<std::uint32_t>(x.src) >= un || static_cast<std::uint32_t>(x.dst) >= un ||
          x.src == x.dst || x.chunk_begin < 0 || x.chunk_begin > x.chunk_end ||
          x.chunk_end > chunks) [[unlikely]]
        check_transfer(x, n, chunks);
      const std::size_t s = static_cast<std::size_t>(map ? map[x.src] : x.src);
      const std::size_t d = static_cast<std::size_t>(map ? map[x.dst] : x.dst);
      if (stamp[s] != k) {
        stamp[s] = k;
        send_free[s] = recv_free[s] = done[s] = ready[s];
        touched[count++] = static_cast<int>(s);
      }
      if (stamp[d] != k) {
        stamp[d] = k;
        send_free[d] = recv_free[d] = done[d] = ready[d];
        touched[count++] = static_cast<int>(d);
      }
      const std::uint64_t m =
          base * static_cast<std::uint64_t>(x.chunk_end - x.chunk_begin) +
          (x.chunk_end == chunks && x.chunk_end > x.chunk_begin ? remainder : 0);
      sent[s] += m;
      received[d] += m;
      const double md = static_cast<double>(m);
      const double latency = up_latency[s] + down_latency[d];
      const double inverse = std::max(up_inverse[s], down_inverse[d]);
      const double start = std::max(send_free[s], recv_free[d]);
      const double end = start + (latency + md * inverse);
      const double reduced = x.op == alg::Op::reduce ? end + gamma * md : end;
      send_free[s] = end;
      recv_free[d] = end;
      done[s] = std::max(done[s], end);
      done[d] = std::max(done[d], reduced);
    }
    for (std::size_t i = 0; i < count; ++i) {
      const std::size_t r = static_cast<std::size_t>(touched[i]);
      ready[r] = done[r];
    }
  }
};

// The reducing switches that a run's in-network reductions (alg::SwitchReduce) go through, each
// with its links to and from the ranks, found at the first reduction that needs it.
class ReducingSwitches {
 public:
  struct Ports {
    int vertex = -1;
    std::vector<int> up, down;  // per physical rank: link rank -> switch, switch -> rank (-1: none)
  };

  ReducingSwitches(const topo::Topology& topology, int ranks, int chunks)
      : topology_(topology), ranks_(ranks), chunks_(chunks) {}

  // The switch of reduction `j` of round `round` (0-based), as an index into ports();
  // InputError naming the round, the reduction and the topology when no reducing switch joins
  // its ranks. `map`: schedule rank -> physical rank (nullptr: the identity).
  std::size_t resolve(const alg::SwitchReduce& op, const int* map, std::size_t round,
                      std::size_t j) {
    participants_.clear();
    for (const std::vector<int>* list : {&op.members, &op.receivers}) {
      for (int r : *list) {
        SSIM_CHECK(r >= 0 && r < ranks_, "switch reduction rank out of range");
        participants_.push_back(map ? map[r] : r);
      }
    }
    SSIM_CHECK(!op.members.empty() && !op.receivers.empty() && 0 <= op.chunk_begin &&
                   op.chunk_begin < op.chunk_end && op.chunk_end <= chunks_,
               "switch reduction out of range");
    const int sw = topology_.reducing_switch_of(participants_);
    if (sw < 0) {
      std::sort(participants_.begin(), participants_.end());
      participants_.erase(std::unique(participants_.begin(), participants_.end()),
                          participants_.end());
      std::string list;
      for (std::size_t i = 0; i < participants_.size() && i < 8; ++i)
        list += (i ? ", " : "") + std::to_string(participants_[i]);
      if (participants_.size() > 8) list += ", ...";
      throw InputError("round " + std::to_string(round) + ", switch reduction " +
                       std::to_string(j) + ": topology '" + topology_.name +
                       "' has no reducing switch that joins ranks {" + list +
                       "} (give the switch a reduce: {bandwidth, latency} key)");
    }
    std::size_t index = 0;
    while (index < ports_.size() && ports_[index].vertex != sw) ++index;
    if (index == ports_.size()) {
      const std::size_t un = static_cast<std::size_t>(ranks_);
      Ports p;
      p.vertex = sw;
      p.up.assign(un, -1);
      p.down.assign(un, -1);
      for (int l : topology_.in_links(sw)) {
        const int r = topology_.node(topology_.link(l).from).rank;
        if (r >= 0 && p.up[static_cast<std::size_t>(r)] < 0) p.up[static_cast<std::size_t>(r)] = l;
      }
      for (int l : topology_.out_links(sw)) {
        const int r = topology_.node(topology_.link(l).to).rank;
        if (r >= 0 && p.down[static_cast<std::size_t>(r)] < 0)
          p.down[static_cast<std::size_t>(r)] = l;
      }
      ports_.push_back(std::move(p));
    }
    return index;
  }
  const Ports& ports(std::size_t index) const { return ports_[index]; }

 private:
  const topo::Topology& topology_;
  int ranks_ = 0, chunks_ = 0;
  std::vector<Ports> ports_;
  std::vector<int> participants_;
};

}  // namespace

IterationResult run_alphabeta(RoundSource& rounds, RouteCache& routes, SecondsPerByte gamma,
                              Bytes bytes, std::span<const Seconds> arrival,
                              const RunOptions& options) {
  const int n = rounds.ranks();
  const int chunks = rounds.chunks();
  SSIM_CHECK(n == routes.topology().gpu_count(), "schedule and topology rank counts differ");
  SSIM_CHECK(chunks > 0, "schedule without chunks");
  SSIM_CHECK(options.threads >= 1, "threads must be >= 1");
  check_inputs(n, arrival, options);
  const int* map = options.rank_map.empty() ? nullptr : options.rank_map.data();
  const ChunkSizes sizes(bytes.value, chunks);
  const double g = gamma.value;
  // A recorded timeline or a trace is for small traced runs: always sequential (the parallel
  // path records nothing).
  const int threads = options.record_timeline || options.trace ? 1 : options.threads;

  const std::size_t un = static_cast<std::size_t>(n);
  std::vector<double> ready(un), send_free(un), recv_free(un), done(un);
  std::vector<std::uint32_t> stamp(un, 0);
  std::vector<int> touched;
  touched.reserve(un);
  for (std::size_t r = 0; r < un; ++r) ready[r] = arrival[r].value;
  std::vector<std::uint64_t> route_bytes(routes.size(), 0);
  std::unique_ptr<ParallelPass> par;  // built at the first round large enough
  // A single-switch topology: routes come from per-rank arrays (no lookup, no cache entry per
  // pair) and bytes are counted per rank (sent: its up link, received: its down link).
  const StarRoutes* star = routes.star();
  std::vector<std::uint64_t> sent_bytes(star ? un : 0, 0), received_bytes(star ? un : 0, 0);
  // Nothing recorded: the star rounds run in StarPass (the same results, faster).
  const bool star_fast = star && !options.record_timeline && !options.trace;
  std::vector<double> star_terms(star_fast ? 4 * un : 0);
  StarPass fast;
  if (star_fast) {
    for (std::size_t r = 0; r < un; ++r) {
      star_terms[r] = 0.0 + star->up_latency[r];
      star_terms[un + r] = star->down_latency[r];
      star_terms[2 * un + r] = 1.0 / star->up_bandwidth[r];
      star_terms[3 * un + r] = 1.0 / star->down_bandwidth[r];
    }
    touched.resize(un);
    fast = StarPass{n,
                    chunks,
                    map,
                    g,
                    sizes.base,
                    sizes.remainder,
                    ready.data(),
                    send_free.data(),
                    recv_free.data(),
                    done.data(),
                    stamp.data(),
                    sent_bytes.data(),
                    received_bytes.data(),
                    touched.data(),
                    star_terms.data(),
                    star_terms.data() + un,
                    star_terms.data() + 2 * un,
                    star_terms.data() + 3 * un};
  }

  IterationResult result;
  result.ranks = n;
  result.bytes = bytes.value;

  // The timing of one transfer and its record; `route` is its route.
  auto time_transfer = [&](const alg::Transfer& t, int s, int d, std::uint64_t m,
                           const CachedRoute& route, std::uint32_t k, std::int32_t index) {
    const double md = static_cast<double>(m);
    const double start = std::max(send_free[s], recv_free[d]);
    const double end = start + alphabeta_time(route, md);
    const double reduced = t.op == alg::Op::reduce ? end + g * md : end;
    send_free[s] = end;
    recv_free[d] = end;
    done[s] = std::max(done[s], end);
    done[d] = std::max(done[d], reduced);
    if (options.record_timeline || options.trace) {
      const TransferRecord rec{static_cast<std::int32_t>(k - 1),
                               index,
                               s,
                               d,
                               t.chunk_begin,
                               t.chunk_end,
                               t.op,
                               m,
                               Seconds{ready[s]},
                               Seconds{ready[d]},
                               Seconds{start},
                               Seconds{end},
                               Seconds{reduced}};
      if (options.trace) {
        options.trace->transfer_side(rec, TimelineSink::Side::send);
        options.trace->transfer_side(rec, TimelineSink::Side::recv);
      }
      if (options.record_timeline) result.timeline.push_back(rec);
    }
  };
  // A rank's first transfer in round k: its ports start free at the time it reached the round.
  auto touch = [&](int r, std::uint32_t k) {
    if (stamp[r] != k) {
      stamp[r] = k;
      send_free[r] = recv_free[r] = done[r] = ready[r];
      touched.push_back(r);
    }
  };
  // In-network reductions (alg::SwitchReduce), after the round's transfers. The reductions of a
  // round through one switch form a batch that starts when every rank in it has reached the
  // round and is done with its transfers of the round (members: send port, receivers: receive
  // port), and ends for all at once: start + the largest up link latency + the switch's
  // reduction latency (when the batch reduces) + the largest down link latency + the longest
  // of (bytes a member sends up / its up link's bandwidth, bytes a receiver gets / its down
  // link's bandwidth, bytes reduced / the switch's reduction bandwidth). So the batch's
  // reductions share the links and the switch as they would running side by side. A reduction
  // with one member is a multicast: it uses no reduction bandwidth.
  const topo::Topology& topology = routes.topology();
  ReducingSwitches switches(topology, n, chunks);
  std::vector<std::uint64_t> switch_link_bytes;
  std::vector<std::uint64_t> up_load(un, 0), down_load(un, 0);
  std::vector<std::uint32_t> in_batch(un, 0);
  std::uint32_t batch_stamp = 0;
  std::vector<int> batch_ranks;
  std::vector<std::size_t> op_switch;
  auto switch_round = [&](const alg::Round& round, std::uint32_t k) {
    if (options.record_timeline || options.trace) {
      throw InputError("round " + std::to_string(k - 1) +
                       " has in-network reductions, which traces and timelines do not record "
                       "(they hold point-to-point transfers)");
    }
    if (switch_link_bytes.empty())
      switch_link_bytes.assign(static_cast<std::size_t>(topology.link_count()), 0);
    op_switch.clear();
    for (std::size_t j = 0; j < round.switch_reduces.size(); ++j)
      op_switch.push_back(switches.resolve(round.switch_reduces[j], map, k - 1, j));
    // One batch per switch, in the order of each switch's first reduction in the round.
    for (std::size_t first = 0; first < op_switch.size(); ++first) {
      const std::size_t sw_index = op_switch[first];
      if (std::find(op_switch.begin(), op_switch.begin() + static_cast<std::ptrdiff_t>(first),
                    sw_index) != op_switch.begin() + static_cast<std::ptrdiff_t>(first))
        continue;  // batch done already
      const ReducingSwitches::Ports& ports = switches.ports(sw_index);
      const topo::SwitchReduction& reduction = *topology.node(ports.vertex).reduce;
      ++batch_stamp;
      batch_ranks.clear();
      double start = -std::numeric_limits<double>::infinity(), up_latency = 0, down_latency = 0;
      std::uint64_t reduced = 0;
      auto join = [&](int r) {
        touch(r, k);
        if (in_batch[static_cast<std::size_t>(r)] != batch_stamp) {
          in_batch[static_cast<std::size_t>(r)] = batch_stamp;
          up_load[static_cast<std::size_t>(r)] = down_load[static_cast<std::size_t>(r)] = 0;
          batch_ranks.push_back(r);
        }
      };
      for (std::size_t j = first; j < op_switch.size(); ++j) {
        if (op_switch[j] != sw_index) continue;
        const alg::SwitchReduce& op = round.switch_reduces[j];
        const std::uint64_t m =
            alg::chunk_bytes(bytes.value, chunks, op.chunk_begin, op.chunk_end).length;
        if (op.members.size() > 1) reduced += m;
        for (int member : op.members) {
          const int r = map ? map[member] : member;
          join(r);
          up_load[static_cast<std::size_t>(r)] += m;
          start = std::max(start, send_free[r]);
          up_latency = std::max(up_latency,
                                topology.link(ports.up[static_cast<std::size_t>(r)]).latency.value);
        }
        for (int receiver : op.receivers) {
          const int r = map ? map[receiver] : receiver;
          join(r);
          down_load[static_cast<std::size_t>(r)] += m;
          start = std::max(start, recv_free[r]);
          down_latency = std::max(
              down_latency, topology.link(ports.down[static_cast<std::size_t>(r)]).latency.value);
        }
      }
      double busy = static_cast<double>(reduced) / reduction.bandwidth.value;
      for (int r : batch_ranks) {
        const std::size_t ur = static_cast<std::size_t>(r);
        if (up_load[ur] > 0) {
          const topo::Link& link = topology.link(ports.up[ur]);
          busy = std::max(busy, static_cast<double>(up_load[ur]) / link.bandwidth.value);
          switch_link_bytes[static_cast<std::size_t>(ports.up[ur])] += up_load[ur];
        }
        if (down_load[ur] > 0) {
          const topo::Link& link = topology.link(ports.down[ur]);
          busy = std::max(busy, static_cast<double>(down_load[ur]) / link.bandwidth.value);
          switch_link_bytes[static_cast<std::size_t>(ports.down[ur])] += down_load[ur];
        }
      }
      const double latency =
          up_latency + (reduced > 0 ? reduction.latency.value : 0.0) + down_latency;
      const double end = start + latency + busy;
      for (int r : batch_ranks) {
        const std::size_t ur = static_cast<std::size_t>(r);
        if (up_load[ur] > 0) send_free[ur] = end;
        if (down_load[ur] > 0) recv_free[ur] = end;
        done[ur] = std::max(done[ur], end);
      }
    }
  };
  // A round on a single-switch topology.
  auto star_round = [&](const alg::Round& round, std::uint32_t k) {
    std::int32_t index = 0;
    for (const alg::Transfer& t : round.transfers) {
      check_transfer(t, n, chunks);
      const int s = map ? map[t.src] : t.src;
      const int d = map ? map[t.dst] : t.dst;
      touch(s, k);
      touch(d, k);
      const std::uint64_t m = sizes.of(t);
      sent_bytes[static_cast<std::size_t>(s)] += m;
      received_bytes[static_cast<std::size_t>(d)] += m;
      time_transfer(t, s, d, m, star->route(s, d), k, index++);
    }
    if (!round.switch_reduces.empty()) switch_round(round, k);
    for (int r : touched) ready[r] = done[r];
  };

  // Routes of the round's transfers, looked up before the timing pass: the lookups are
  // independent, so those of the transfers kAhead later are prefetched (overlapping the cache
  // misses of a route cache over millions of pairs).
  constexpr std::size_t kAhead = 8;
  std::vector<std::uint32_t> round_routes;
  auto sequential_round = [&](const alg::Round& round, std::uint32_t k) {
    const std::size_t size = round.transfers.size();
    // StarPass times point-to-point transfers only: a round with in-network reductions takes
    // the general star round, which times them too.
    if (star_fast && round.switch_reduces.empty()) {
      fast.run(round.transfers.data(), size, k);
      return;
    }
    touched.clear();
    if (star) {
      star_round(round, k);
      return;
    }
    round_routes.resize(size);
    for (std::size_t j = 0; j < size; ++j) {
      if (j + kAhead < size) {
        const alg::Transfer& a = round.transfers[j + kAhead];
        if (a.src >= 0 && a.src < n && a.dst >= 0 && a.dst < n)
          routes.prefetch(map ? map[a.src] : a.src, map ? map[a.dst] : a.dst);
      }
      const alg::Transfer& t = round.transfers[j];
      check_transfer(t, n, chunks);
      round_routes[j] = routes.find(map ? map[t.src] : t.src, map ? map[t.dst] : t.dst);
    }
    if (route_bytes.size() < routes.size()) route_bytes.resize(routes.size(), 0);
    std::int32_t index = 0;
    for (std::size_t j = 0; j < size; ++j) {
      if (j + kAhead < size) {
        routes.prefetch_route(round_routes[j + kAhead]);
        __builtin_prefetch(&route_bytes[round_routes[j + kAhead]]);
      }
      const alg::Transfer& t = round.transfers[j];
      const int s = map ? map[t.src] : t.src;
      const int d = map ? map[t.dst] : t.dst;
      touch(s, k);
      touch(d, k);
      const std::uint64_t m = sizes.of(t);
      const std::uint32_t ri = round_routes[j];
      route_bytes[ri] += m;
      time_transfer(t, s, d, m, routes.route(ri), k, index++);
    }
    if (!round.switch_reduces.empty()) switch_round(round, k);
    for (int r : touched) ready[r] = done[r];
  };

  // True when the round ran in parallel; false when a port serves several transfers (nothing
  // was changed then, the caller runs the round sequentially). The arithmetic is that of the
  // sequential pass: with every port serving one transfer, a transfer starts at
  // max(ready[src], ready[dst]), and a rank's new ready time is the max of its old one, its
  // send's end and its receive's reduced time, whatever the order of the maxima.
  auto run_parallel = [&](const alg::Round& round, std::uint32_t k) {
    ParallelPass& p = *par;
    const std::size_t size = round.transfers.size();
    const alg::Transfer* const tr = round.transfers.data();
    ParallelPass::Slot* const send = p.send.data();
    ParallelPass::Slot* const recv = p.recv.data();
    const double* const rd = ready.data();
    // The star terms (threads > 1 means nothing is recorded, so a star has them).
    const double* const up_latency = star ? star_terms.data() : nullptr;
    const double* const down_latency = star ? star_terms.data() + un : nullptr;
    const double* const up_inverse = star ? star_terms.data() + 2 * un : nullptr;
    const double* const down_inverse = star ? star_terms.data() + 3 * un : nullptr;
    if (!star) p.route_of.resize(size);
    const std::size_t chunks1 = chunk_count(size, threads);
    p.missing.assign(chunks1, 0);
    std::uint32_t* const route_out = p.route_of.data();
    p.team.run(chunks1, [&](std::size_t c) {
      // Locals, so that the compiler keeps them in registers across the atomic stores below.
      const alg::Transfer* const t = tr;
      ParallelPass::Slot* const sends = send;
      ParallelPass::Slot* const recvs = recv;
      const double* const ready_in = rd;
      const int* const rank_map = map;
      const bool on_star = star != nullptr;
      const double* const ul = up_latency;
      const double* const dl = down_latency;
      const double* const ui = up_inverse;
      const double* const di = down_inverse;
      std::uint32_t* const route_at = route_out;
      const int ranks = n, chunk_total = chunks;
      const std::uint64_t base = sizes.base, remainder = sizes.remainder;
      const double gamma_ = g;
      const std::uint64_t round_tag = ParallelPass::tag(k, 0);
      const std::uint32_t un32 = static_cast<std::uint32_t>(ranks);
      const std::pair<std::size_t, std::size_t> range = block(size, c, chunks1);
      bool missing = false;
      for (std::size_t j = range.first; j < range.second; ++j) {
        const alg::Transfer& x = t[j];
        if (static_cast<std::uint32_t>(x.src) >= un32 ||
            static_cast<std::uint32_t>(x.dst) >= un32 || x.src == x.dst || x.chunk_begin < 0 ||
            x.chunk_begin > x.chunk_end || x.chunk_end > chunk_total) [[unlikely]]
          check_transfer(x, ranks, chunk_total);
        const std::size_t s = static_cast<std::size_t>(rank_map ? rank_map[x.src] : x.src);
        const std::size_t d = static_cast<std::size_t>(rank_map ? rank_map[x.dst] : x.dst);
        const std::uint64_t m =
            base * static_cast<std::uint64_t>(x.chunk_end - x.chunk_begin) +
            (x.chunk_end == chunk_total && x.chunk_end > x.chunk_begin ? remainder : 0);
        const double md = static_cast<double>(m);
        const double start = std::max(ready_in[s], ready_in[d]);
        double end = 0;
        if (on_star) {
          const double latency = ul[s] + dl[d];
          const double inverse = std::max(ui[s], di[d]);
          end = start + (latency + md * inverse);
        } else {
          const std::uint32_t ri = routes.find_cached(static_cast<int>(s), static_cast<int>(d));
          route_at[j] = ri;
          if (ri == RouteCache::missing) {
            missing = true;  // timed by the caller after this step
          } else {
            end = start + alphabeta_time(routes.route(ri), md);
            sends[s].route.store(ri, std::memory_order_relaxed);
          }
        }
        const double reduced = x.op == alg::Op::reduce ? end + gamma_ * md : end;
        const std::uint64_t tag = round_tag | static_cast<std::uint64_t>(j);
        sends[s].tag.store(tag, std::memory_order_relaxed);
        sends[s].time.store(end, std::memory_order_relaxed);
        sends[s].bytes.store(m, std::memory_order_relaxed);
        recvs[d].tag.store(tag, std::memory_order_relaxed);
        recvs[d].time.store(reduced, std::memory_order_relaxed);
        recvs[d].bytes.store(m, std::memory_order_relaxed);
      }
      if (missing) p.missing[c] = 1;
    });
    if (std::find(p.missing.begin(), p.missing.end(), 1) != p.missing.end()) {
      // New pairs: routed here, once each, and timed into their slots (where the slot is still
      // theirs; where it is not, a port is shared and the round goes sequentially anyway).
      for (std::size_t j = 0; j < size; ++j) {
        if (p.route_of[j] != RouteCache::missing) continue;
        const alg::Transfer& x = tr[j];
        const int s = map ? map[x.src] : x.src;
        const int d = map ? map[x.dst] : x.dst;
        const std::uint32_t ri = routes.find(s, d);
        p.route_of[j] = ri;
        const double md = static_cast<double>(sizes.of(x));
        const double end = std::max(rd[s], rd[d]) + alphabeta_time(routes.route(ri), md);
        const std::uint64_t t = ParallelPass::tag(k, j);
        if (send[s].tag.load(std::memory_order_relaxed) == t) {
          send[s].time.store(end, std::memory_order_relaxed);
          send[s].route.store(ri, std::memory_order_relaxed);
        }
        if (recv[d].tag.load(std::memory_order_relaxed) == t)
          recv[d].time.store(x.op == alg::Op::reduce ? end + g * md : end,
                             std::memory_order_relaxed);
      }
    }
    if (route_bytes.size() < routes.size()) route_bytes.resize(routes.size(), 0);
    const std::size_t chunks2 = chunk_count(un, threads);
    p.counts.assign(chunks2, ParallelPass::Count{});
    double* const next = p.next_ready.data();
    std::uint64_t* const sent = sent_bytes.data();
    std::uint64_t* const received = received_bytes.data();
    std::uint64_t* const per_route = route_bytes.data();
    p.team.run(chunks2, [&](std::size_t c) {
      const ParallelPass::Slot* const sends = send;
      const ParallelPass::Slot* const recvs = recv;
      const double* const ready_in = rd;
      double* const ready_out = next;
      const bool on_star = star != nullptr;
      std::uint64_t* const sent_by = sent;
      std::uint64_t* const received_by = received;
      std::uint64_t* const by_route = per_route;
      const std::uint32_t round = k;
      const std::pair<std::size_t, std::size_t> range = block(un, c, chunks2);
      ParallelPass::Count count;
      for (std::size_t r = range.first; r < range.second; ++r) {
        double v = ready_in[r];
        if (ParallelPass::in_round(sends[r].tag.load(std::memory_order_relaxed), round)) {
          v = std::max(v, sends[r].time.load(std::memory_order_relaxed));
          const std::uint64_t m = sends[r].bytes.load(std::memory_order_relaxed);
          if (on_star)
            sent_by[r] += m;
          else
            by_route[sends[r].route.load(std::memory_order_relaxed)] += m;
          ++count.sends;
        }
        if (ParallelPass::in_round(recvs[r].tag.load(std::memory_order_relaxed), round)) {
          v = std::max(v, recvs[r].time.load(std::memory_order_relaxed));
          if (on_star) received_by[r] += recvs[r].bytes.load(std::memory_order_relaxed);
          ++count.recvs;
        }
        ready_out[r] = v;
      }
      p.counts[c] = count;
    });
    std::uint64_t sends = 0, recvs = 0;
    for (const ParallelPass::Count& c : p.counts) {
      sends += c.sends;
      recvs += c.recvs;
    }
    if (sends == size && recvs == size) {
      ready.swap(p.next_ready);
      fast.ready = ready.data();
      return true;
    }
    // A shared port: take the bytes back (ready is untouched).
    for (std::size_t r = 0; r < un; ++r) {
      if (ParallelPass::in_round(send[r].tag.load(std::memory_order_relaxed), k)) {
        const std::uint64_t m = send[r].bytes.load(std::memory_order_relaxed);
        if (star)
          sent[r] -= m;
        else
          per_route[send[r].route.load(std::memory_order_relaxed)] -= m;
      }
      if (star && ParallelPass::in_round(recv[r].tag.load(std::memory_order_relaxed), k))
        received[r] -= recv[r].bytes.load(std::memory_order_relaxed);
    }
    return false;
  };

  std::uint64_t transfers = 0;
  std::uint32_t k = 0;
  while (const alg::Round* round = rounds.next()) {
    ++k;
    const std::size_t size = round->transfers.size();
    bool done_in_parallel = false;
    // More transfers than ranks: some rank sends twice.
    if (threads > 1 && size >= options.parallel_round && size <= un &&
        round->switch_reduces.empty()) {
      if (!par) par = std::make_unique<ParallelPass>(threads, un);
      done_in_parallel = run_parallel(*round, k);
    }
    if (!done_in_parallel) sequential_round(*round, k);
    transfers += size;
  }
  result.transfers = transfers;
  finalize(result, arrival, std::move(ready), route_bytes, routes);
  if (star) {
    for (std::size_t r = 0; r < un; ++r) {
      result.link_bytes[static_cast<std::size_t>(star->up[r])] += sent_bytes[r];
      result.link_bytes[static_cast<std::size_t>(star->down[r])] += received_bytes[r];
    }
  }
  for (std::size_t l = 0; l < switch_link_bytes.size(); ++l)
    result.link_bytes[l] += switch_link_bytes[l];
  if (star || !switch_link_bytes.empty()) link_utilization(result, routes.topology());
  return result;
}

// ---------------------------------------------------------------------------------------------
// The event-engine evaluation, fed by a RoundSource. Rounds are taken from the source only when
// a rank needs its next group of transfers and no round taken so far has one; they are kept in
// a window until all their transfers are done. A rank's next group is found through its groups'
// links (group ids are global, in the order rounds are taken), so memory is O(ranks + the
// rounds in the window): a few rounds where ranks progress together (ring, rhd, ...), at worst
// (a rank that waits many rounds for others that are late) the whole schedule. Events happen
// in the same order as with every round known from the start: taking a round schedules nothing.

class Executor::EventRun final : public EventHandler, public TransferSink {
 public:
  EventRun(int ranks, int chunks, RouteCache& routes, NetworkConfig network, Bytes bytes)
      : ranks_(ranks),
        chunks_(chunks),
        routes_(routes),
        network_(network),
        sizes_(bytes.value, chunks),
        bytes_(bytes),
        switches_(routes.topology(), ranks, chunks),
        // Port order matters only to a model that serializes ports (alphabeta); the flow model
        // shares bandwidth instead.
        serial_(network.kind == NetworkKind::alphabeta) {
    network_model_ = make_network(network.kind, engine_, *this, routes_, network.reference_flow);
    SSIM_CHECK(network_model_->serializes_ports() == serial_, "port model mismatch");
  }

  IterationResult run(RoundSource& rounds, std::span<const Seconds> arrival,
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
    const std::size_t un = static_cast<std::size_t>(n);
    cursor_.assign(un, kNone);
    last_group_.assign(un, kNone);
    remaining_.assign(un, 0);
    finish_.assign(un, 0.0);
    stamp_.assign(un, 0);
    last_send_.assign(un, -1);
    last_recv_.assign(un, -1);
    route_bytes_.assign(routes_.size(), 0);
    reduction_link_bytes_.clear();
    reductions_ = 0;
    op_mark_.assign(un, 0);
    sink_ = options.trace;
    open_.clear();
    network_model_->observe(sink_);

    IterationResult result;
    result.ranks = n;
    result.bytes = bytes_.value;
    timeline_ = options.record_timeline ? &result.timeline : nullptr;
    for (int r = 0; r < n; ++r)
      engine_.schedule(arrival[physical(r)], *this, static_cast<std::uint64_t>(r));
    engine_.run();
    network_model_->observe(nullptr);
    sink_ = nullptr;
    // Ranks that take part in nothing more finished at their arrival; rounds without transfers
    // at the end are still counted.
    while (take_round()) {
    }
    std::vector<double> finish(un);
    for (int r = 0; r < n; ++r) {
      SSIM_CHECK(cursor_[r] == kNone && remaining_[r] == 0,
                 "rank " + std::to_string(r) + " did not finish its transfers");
      finish[physical(r)] = finish_[r];
    }
    SSIM_CHECK(window_.empty(), "transfers left unfinished");
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

  void on_event(Engine& engine, std::uint64_t tag) override {
    if (tag & kReduce) {
      const std::uint64_t t = global(static_cast<std::uint32_t>(tag));
      Window& w = locate(t);
      const std::uint32_t j = static_cast<std::uint32_t>(t - w.first);
      if (TransferRecord* rec = record(t, w, j)) {
        rec->done = engine.now();
        close_recv(t, *rec);
      }
      part_done(static_cast<std::uint32_t>(w.transfers[j].dst));
      transfer_finished(w);
    } else {
      enter(static_cast<std::uint32_t>(tag));  // arrival
    }
  }

  void transfer_done(std::uint32_t id, Seconds now) override {
    const std::uint64_t t = global(id);
    Window& w = locate(t);
    const std::uint32_t j = static_cast<std::uint32_t>(t - w.first);
    if (j >= w.transfers.size()) {  // an in-network reduction: done for all its ranks at once
      const std::size_t i = j - w.transfers.size();
      for (std::size_t x = 0; x < w.ops[i].ranks.size(); ++x)
        part_done(static_cast<std::uint32_t>(w.ops[i].ranks[x]));
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
    const std::uint64_t m = sizes_.of(tr);
    const bool reduces = tr.op == alg::Op::reduce && network_.gamma.value > 0 && m > 0;
    if (TransferRecord* rec = record(t, w, j)) {
      rec->end = rec->done = now;
      if (sink_) sink_->transfer_side(*rec, TimelineSink::Side::send);
      if (!reduces) close_recv(t, *rec);
    }
    part_done(static_cast<std::uint32_t>(tr.src));
    if (reduces) {
      engine_.schedule(Seconds{now.value + network_.gamma.value * static_cast<double>(m)}, *this,
                       kReduce | id);
    } else {
      part_done(static_cast<std::uint32_t>(tr.dst));
      transfer_finished(w);
    }
  }

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
  };

  // One round in the window. Its transfers are numbered first, first+1, ... (global ids, in
  // schedule order), then its in-network reductions; its groups (a rank's transfers in the
  // round, as sender or receiver, in schedule order, then its reductions) first_group,
  // first_group+1, ...
  struct Window {
    std::uint64_t first = 0, first_group = 0;
    std::int32_t index = 0;  // the round's number
    std::vector<alg::Transfer> transfers;
    std::vector<std::uint8_t> wait;  // ends not yet in the round + port predecessors not done
    std::vector<std::int32_t> send_next, recv_next;  // serial: the next transfer at the port
    std::vector<std::uint32_t> group_begin;          // CSR: group g's items, g - first_group
    std::vector<std::uint32_t> items;       // (transfer in the round << 1) | (0 send, 1 receive)
    std::vector<std::uint64_t> group_next;  // the rank's next group (global), or kNone
    std::vector<Reduction> ops;             // item (transfers.size() + i) << 1 is ops[i]
    std::vector<std::uint32_t> op_wait;     // ranks of ops[i] not yet in the round
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
  Window& locate(std::uint64_t t, bool groups = false) {
    std::size_t lo = 0, hi = window_.size();  // the last round whose first id <= t
    while (hi - lo > 1) {
      const std::size_t mid = (lo + hi) / 2;
      ((groups ? window_[mid].first_group : window_[mid].first) <= t ? lo : hi) = mid;
    }
    return window_[lo];
  }

  // Takes the source's next round into the window; false when the source is exhausted.
  bool take_round() {
    if (exhausted_) return false;
    const alg::Round* round = source_->next();
    if (!round) {
      exhausted_ = true;
      return false;
    }
    const std::uint32_t k = ++round_count_;  // 1 + the round's number
    const std::size_t size = round->transfers.size();
    const std::size_t ops = round->switch_reduces.size();
    SSIM_CHECK(size + ops < (std::size_t{1} << 31), "round too large for the event engine");
    if (size + ops == 0) return true;  // no transfers: nothing waits for it
    SSIM_CHECK(window_.empty() ||
                   next_transfer_ - window_.front().first + size + ops < (std::uint64_t{1} << 32),
               "too many transfers in flight for the event engine (2^32)");
    if (ops > 0 && (timeline_ || sink_)) {
      throw InputError("round " + std::to_string(k - 1) +
                       " has in-network reductions, which traces and timelines do not record "
                       "(they hold point-to-point transfers)");
    }
    Window& w = window_.emplace_back(spare());
    w.first = next_transfer_;
    w.first_group = next_group_;
    w.index = static_cast<std::int32_t>(k - 1);
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
        if (stamp_[r] != k) {
          stamp_[r] = k;
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
      describe_reduction(round->switch_reduces[i], k, i, w.ops[i]);
      for (int r : w.ops[i].ranks) {
        if (stamp_[r] != k) {
          stamp_[r] = k;
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
      for (int r : w.ops[i].ranks) w.items[fill_[group_of_[r]]++] = j << 1;
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
    next_transfer_ += size + ops;
    reductions_ += ops;
    next_group_ += groups;
    return true;
  }

  // Reduction i of round k - 1 as the flow model runs it: its switch, links and latency (as the
  // alpha-beta batch takes them: the largest up link latency, the switch's reduction latency
  // when it reduces, the largest down link latency) and its ranks.
  void describe_reduction(const alg::SwitchReduce& op, std::uint32_t k, std::size_t i,
                          Reduction& out) {
    SSIM_CHECK(!serial_, "in-network reductions reached the alpha-beta event engine");
    const ReducingSwitches::Ports& ports = switches_.ports(switches_.resolve(op, map_, k - 1, i));
    const topo::Topology& topology = routes_.topology();
    out.links.clear();
    out.ranks.clear();
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
    }
    out.reducer = op.members.size() > 1 ? ports.vertex : -1;
    out.latency =
        up + (out.reducer >= 0 ? topology.node(ports.vertex).reduce->latency.value : 0.0) + down;
    out.bytes = alg::chunk_bytes(bytes_.value, chunks_, op.chunk_begin, op.chunk_end).length;
  }

  // A Window to fill: a retired one (keeping its buffers) when there is one.
  Window spare() {
    if (pool_.empty()) return Window{};
    Window w = std::move(pool_.back());
    pool_.pop_back();
    return w;
  }
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
  void describe(const Window& w, std::uint32_t j, TransferRecord& rec) const {
    const alg::Transfer& tr = w.transfers[j];
    rec.round = w.index;
    rec.index = static_cast<std::int32_t>(j);
    rec.src = physical(tr.src);
    rec.dst = physical(tr.dst);
    rec.chunk_begin = tr.chunk_begin;
    rec.chunk_end = tr.chunk_end;
    rec.op = tr.op;
    rec.bytes = sizes_.of(tr);
  }
  // Where transfer t's times go: the kept timeline, or (streaming to a sink) a record that
  // lives from the first end reaching the round until the receive side is reported.
  TransferRecord* record(std::uint64_t t, const Window& w, std::uint32_t j) {
    if (timeline_) return &(*timeline_)[t];
    if (!sink_) return nullptr;
    auto [it, inserted] = open_.try_emplace(t);
    if (inserted) describe(w, j, it->second);
    return &it->second;
  }
  void close_recv(std::uint64_t t, const TransferRecord& rec) {
    if (!sink_) return;
    sink_->transfer_side(rec, TimelineSink::Side::recv);
    if (!timeline_) open_.erase(t);
  }

  // Rank r (schedule label) has finished everything before its next group of transfers: it
  // reaches that group's round now (taking rounds from the source until one has r in it).
  void enter(std::uint32_t r) {
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

  void part_done(std::uint32_t r) {
    if (--remaining_[r] == 0) enter(r);
  }

  void launch(Window& w, std::uint32_t j) {
    const alg::Transfer& tr = w.transfers[j];
    const std::uint64_t m = sizes_.of(tr);
    const std::uint32_t ri = routes_.find(physical(tr.src), physical(tr.dst));
    if (ri >= route_bytes_.size()) route_bytes_.resize(ri + 1, 0);
    route_bytes_[ri] += m;
    const std::uint64_t t = w.first + j;
    if (TransferRecord* rec = record(t, w, j)) rec->start = engine_.now();
    network_model_->start(static_cast<std::uint32_t>(t), ri, m);
  }

  // In-network reduction i of round w: one flow over its links (NetworkModel::start_reduction).
  void launch_reduction(Window& w, std::size_t i) {
    const Reduction& op = w.ops[i];
    if (reduction_link_bytes_.empty())
      reduction_link_bytes_.assign(static_cast<std::size_t>(routes_.topology().link_count()), 0);
    for (int l : op.links) reduction_link_bytes_[static_cast<std::size_t>(l)] += op.bytes;
    network_model_->start_reduction(static_cast<std::uint32_t>(w.first + w.transfers.size() + i),
                                    op.links, op.reducer, op.latency, op.bytes);
  }

  const int ranks_, chunks_;
  RouteCache& routes_;
  NetworkConfig network_;
  ChunkSizes sizes_;
  Bytes bytes_;
  ReducingSwitches switches_;
  const bool serial_;  // the model serializes ports
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
  std::vector<std::uint32_t> stamp_;                 // take_round: 1 + the rank's last round
  std::vector<std::int32_t> last_send_, last_recv_;  // take_round: port order in the round
  std::vector<std::uint32_t> group_of_, fill_;       // take_round: the rank's group, CSR fill
  std::vector<int> order_;
  std::vector<std::uint64_t> route_bytes_;
  std::vector<std::uint64_t> reduction_link_bytes_;  // per link: in-network reductions' bytes
  std::uint64_t reductions_ = 0;                     // in-network reductions taken
  std::vector<std::uint32_t> op_mark_;               // describe_reduction: rank seen
  std::uint32_t op_stamp_ = 0;
  std::vector<TransferRecord>* timeline_ = nullptr;
  TimelineSink* sink_ = nullptr;
  std::unordered_map<std::uint64_t, TransferRecord> open_;  // streaming: transfers in flight
};

// ---------------------------------------------------------------------------------------------

Executor::Executor(const alg::Schedule& schedule, const topo::Topology& topology,
                   NetworkConfig network, Bytes bytes)
    : schedule_(schedule),
      network_(network),
      bytes_(bytes),
      routes_(topology,
              network.kind == NetworkKind::flow ? LinkLists::all : LinkLists::short_only) {
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

namespace {

// Passes rounds on and refuses one with in-network reductions (alg::SwitchReduce): the alpha-beta
// dataflow pass and the flow model cost them; the alpha-beta event engine and the shared-device
// model
// cost point-to-point transfers only.
class PointToPointRounds final : public RoundSource {
 public:
  PointToPointRounds(RoundSource& inner, std::string model)
      : inner_(inner), model_(std::move(model)) {}
  int ranks() const override { return inner_.ranks(); }
  int chunks() const override { return inner_.chunks(); }
  const alg::Round* next() override {
    const alg::Round* r = inner_.next();
    if (r && !r->switch_reduces.empty()) {
      throw InputError("round " + std::to_string(index_) +
                       " of the schedule has in-network reductions (switch_reduces), which the " +
                       model_ + " does not cost (the alphabeta and flow network models do)");
    }
    ++index_;
    return r;
  }

 private:
  RoundSource& inner_;
  std::string model_;
  std::size_t index_ = 0;
};

}  // namespace

IterationResult Executor::run(std::span<const Seconds> arrival, const RunOptions& options) {
  ScheduleRounds rounds(schedule_);
  return run(rounds, arrival, options);
}

IterationResult Executor::run(RoundSource& source, std::span<const Seconds> arrival,
                              const RunOptions& options) {
  SSIM_CHECK(source.ranks() == schedule_.ranks && source.chunks() == schedule_.chunks,
             "streamed rounds of another schedule");
  if (routes_.topology().shared_device) {
    PointToPointRounds rounds(source, "shared-device model");
    return run_shared_device(rounds, routes_.topology(), bytes_, arrival, options);
  }
  if (network_.kind == NetworkKind::alphabeta && !options.use_event_engine)
    return run_alphabeta(source, routes_, network_.gamma, bytes_, arrival, options);
  if (!events_)
    events_ =
        std::make_unique<EventRun>(schedule_.ranks, schedule_.chunks, routes_, network_, bytes_);
  // The flow model costs in-network reductions; the alpha-beta event engine (a cross-check of
  // the dataflow pass) does not.
  if (network_.kind == NetworkKind::flow) return events_->run(source, arrival, options);
  PointToPointRounds rounds(source, "event engine");
  return events_->run(rounds, arrival, options);
}

std::vector<std::vector<std::optional<Seconds>>> round_ends(const IterationResult& result,
                                                            std::size_t rounds) {
  std::vector<std::vector<std::optional<Seconds>>> ends(
      static_cast<std::size_t>(result.ranks), std::vector<std::optional<Seconds>>(rounds));
  auto note = [&](int rank, std::int32_t round, Seconds t) {
    SSIM_CHECK(
        rank >= 0 && rank < result.ranks && round >= 0 && static_cast<std::size_t>(round) < rounds,
        "timeline record outside the run's ranks or rounds");
    std::optional<Seconds>& e =
        ends[static_cast<std::size_t>(rank)][static_cast<std::size_t>(round)];
    if (!e || e->value < t.value) e = t;
  };
  for (const TransferRecord& t : result.timeline) {
    note(t.src, t.round, t.end);
    note(t.dst, t.round, t.done);
  }
  return ends;
}

}  // namespace ssim::sim
