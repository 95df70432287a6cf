#include "sim/shared_device.hpp"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <limits>
#include <queue>
#include <string>
#include <utility>
#include <vector>

#include "common/error.hpp"

namespace ssim::sim {
namespace {

// A stream's wait: satisfied when `rank` has arrived and finished its operations before
// position `position` of its own list.
struct Dep {
  int rank = 0;
  std::uint32_t position = 0;
};

struct Op {
  int rank = 0;
  double work = 0;     // memory bytes
  double latency = 0;  // seconds
  std::uint32_t dep_begin = 0, dep_end = 0;
};

struct Timed {
  double time;
  std::uint64_t seq;
  std::uint32_t op;  // an operation whose latency ends, or kArrival
  int rank;
  bool operator>(const Timed& o) const { return time != o.time ? time > o.time : seq > o.seq; }
};

struct Flow {
  double threshold;  // the shared progress at which its bytes are all moved
  std::uint64_t seq;
  std::uint32_t op;
  bool operator>(const Flow& o) const {
    return threshold != o.threshold ? threshold > o.threshold : seq > o.seq;
  }
};

constexpr std::uint32_t kArrival = ~std::uint32_t{0};

// A resource shared equally by the operations on it (processor sharing): every operation on it
// progresses at `rate` units per second, so one shared counter of progress orders their ends.
struct Fluid {
  std::priority_queue<Flow, std::vector<Flow>, std::greater<>> heap;
  double progress = 0;  // units each operation on it has received since the start
  double rate = 0;      // per operation, set after every batch of changes
  double next(double now) const {
    return heap.empty() ? std::numeric_limits<double>::infinity()
                        : now + (heap.top().threshold - progress) / rate;
  }
  void advance(double from, double to, bool reaches_top) {
    if (heap.empty()) return;
    progress += rate * (to - from);
    if (reaches_top) progress = std::max(progress, heap.top().threshold);
  }
  // Pops an operation whose units are all served (within rounding), or returns false.
  bool pop_done(std::uint32_t& op) {
    if (heap.empty()) return false;
    const double tolerance = 1e-12 * std::fabs(progress) + 1e-18;
    if (heap.top().threshold > progress + tolerance) return false;
    op = heap.top().op;
    heap.pop();
    return true;
  }
};

class DeviceRun {
 public:
  DeviceRun(const topo::SharedDevice& d, int ranks)
      : d_(d), ranks_(ranks), direct_(d.copy_factor == 0) {
    rank_ops_.resize(static_cast<std::size_t>(ranks));
    readers_.resize(static_cast<std::size_t>(ranks));
  }

  // Appends round `round`'s operations (ranks already physical through `map`).
  void add_round(const alg::Round& round, std::uint64_t total_bytes, int chunks,
                 std::span<const int> map) {
    const auto phys = [&](int r) { return map.empty() ? r : map[static_cast<std::size_t>(r)]; };
    ++stamp_;
    participants_.clear();
    auto join = [&](int r) {
      RankRound& rr = round_[static_cast<std::size_t>(r)];
      if (rr.stamp == stamp_) return;
      rr.stamp = stamp_;
      rr.recvs.clear();
      rr.sends.clear();
      participants_.push_back(r);
    };
    for (std::size_t i = 0; i < round.transfers.size(); ++i) {
      const alg::Transfer& t = round.transfers[i];
      const int s = phys(t.src), r = phys(t.dst);
      join(s);
      join(r);
      round_[static_cast<std::size_t>(r)].recvs.push_back(static_cast<std::uint32_t>(i));
      round_[static_cast<std::size_t>(s)].sends.push_back(r);
    }
    // Direct (copy_factor 0): a receive is staged into scratch only when its sender writes an
    // overlapping range in the same round (it would race with the sender's kernel).
    const auto staged = [&](const alg::Transfer& t) {
      if (!direct_) return true;
      for (const std::uint32_t j : round_[static_cast<std::size_t>(phys(t.src))].recvs) {
        const alg::Transfer& w = round.transfers[j];
        if (w.chunk_begin < t.chunk_end && t.chunk_begin < w.chunk_end) return true;
      }
      return false;
    };
    for (int p : participants_) {
      RankRound& rr = round_[static_cast<std::size_t>(p)];
      rr.first = static_cast<std::uint32_t>(rank_ops_[static_cast<std::size_t>(p)].size());
      rr.copies = 0;
      for (std::uint32_t i : rr.recvs) rr.copies += staged(round.transfers[i]) ? 1 : 0;
      rr.apply = rr.first + rr.copies;
    }
    // Odd strides. The GPU backend lays a buffer out as `chunks` chunks of one stride (the
    // chunk padded to 128 bytes, lowering/plan.hpp) and every copy covers whole chunks, so when
    // the schedule's chunk is not a multiple of 16 bytes every scratch copy of the run has an
    // odd length and offset: also one of the whole buffer (Direct's exchange and broadcast
    // copy all n-1 chunks, S + (n-1) x padding bytes long). The bytes of every operation of
    // such a run (copies and applies: the factor is fitted over both) count unaligned_factor
    // times, whatever the range's own offset and length in the IR's bytes. The direct
    // transport (no scratch copies; its kernels hardly care about the stride) keeps the
    // range's own rule.
    const bool odd_layout =
        total_bytes % (16 * static_cast<std::uint64_t>(std::max(chunks, 1))) != 0;
    for (int p : participants_) {
      const RankRound& rr = round_[static_cast<std::size_t>(p)];
      std::vector<std::uint32_t>& list = rank_ops_[static_cast<std::size_t>(p)];
      // Direct: the rank's first operation of this round waits until the kernels that read
      // from it in its previous round have run (write after read).
      std::vector<Dep>& readers = readers_[static_cast<std::size_t>(p)];
      const auto add_readers = [&] {
        deps_.insert(deps_.end(), readers.begin(), readers.end());
        readers.clear();
      };
      double apply_work = 0;
      std::vector<int> direct_senders;
      for (std::uint32_t i : rr.recvs) {
        const alg::Transfer& t = round.transfers[i];
        const alg::ByteRange range =
            alg::chunk_bytes(total_bytes, chunks, t.chunk_begin, t.chunk_end);
        const bool unaligned =
            direct_ ? range.offset % 16 != 0 || range.length % 16 != 0 : odd_layout;
        const double bytes =
            static_cast<double>(range.length) * (unaligned ? d_.unaligned_factor : 1.0);
        const int sender = phys(t.src);
        apply_work += (t.op == alg::Op::reduce ? d_.reduce_factor : d_.apply_copy_factor) * bytes;
        if (!staged(t)) {
          direct_senders.push_back(sender);
          continue;
        }
        // A copy into scratch: copy_factor per byte, or, direct, a plain copy (read + write).
        Op op{.rank = p,
              .work = (direct_ ? d_.apply_copy_factor : d_.copy_factor) * bytes,
              .latency = d_.copy_latency.value,
              .dep_begin = static_cast<std::uint32_t>(deps_.size())};
        deps_.push_back({sender, round_[static_cast<std::size_t>(sender)].first});
        if (list.size() == rr.first) add_readers();
        op.dep_end = static_cast<std::uint32_t>(deps_.size());
        list.push_back(static_cast<std::uint32_t>(ops_.size()));
        ops_.push_back(op);
      }
      Op apply{.rank = p,
               .work = apply_work,
               .latency = d_.apply_latency.value,
               .dep_begin = static_cast<std::uint32_t>(deps_.size())};
      // The sender's kernel waits for the copies out of its data: every receiver's
      // (single-gpu), or the staged ones' (direct).
      for (int q : rr.sends) {
        const RankRound& qr = round_[static_cast<std::size_t>(q)];
        if (!direct_ || qr.copies > 0) deps_.push_back({q, qr.apply});
      }
      // Direct: the kernel reads its senders' data once they have finished their earlier
      // rounds (read after write); it then counts as a reader of each.
      const auto apply_position = static_cast<std::uint32_t>(list.size());
      for (int q : direct_senders) {
        deps_.push_back({q, round_[static_cast<std::size_t>(q)].first});
        new_readers_.push_back({q, {p, apply_position + 1}});
      }
      if (list.size() == rr.first) add_readers();
      apply.dep_end = static_cast<std::uint32_t>(deps_.size());
      list.push_back(static_cast<std::uint32_t>(ops_.size()));
      ops_.push_back(apply);
    }
    for (const auto& [sender, reader] : new_readers_)
      readers_[static_cast<std::size_t>(sender)].push_back(reader);
    new_readers_.clear();
  }

  void run(std::span<const Seconds> arrival, IterationResult& out) {
    const auto n = static_cast<std::size_t>(ranks_);
    next_.assign(n, 0);
    arrived_.assign(n, false);
    busy_.assign(n, false);
    waiters_.assign(n, {});
    finish_.assign(n, 0.0);
    work_.assign(n, 0.0);
    for (std::size_t r = 0; r < n; ++r) {
      finish_[r] = arrival[r].value;
      timed_.push({arrival[r].value, seq_++, kArrival, static_cast<int>(r)});
    }
    const double cap = d_.operation_bandwidth.value;
    const double bandwidth = d_.memory_bandwidth.value;
    while (!timed_.empty() || !memory_.heap.empty() || !launch_.heap.empty()) {
      const double t_timed =
          timed_.empty() ? std::numeric_limits<double>::infinity() : timed_.top().time;
      const double t_memory = memory_.next(now_);
      const double t_launch = launch_.next(now_);
      const double t = std::min({t_timed, t_memory, t_launch});
      memory_.advance(now_, t, t_memory == t);
      launch_.advance(now_, t, t_launch == t);
      now_ = t;
      std::uint32_t op = 0;
      while (memory_.pop_done(op)) complete(op);
      while (launch_.pop_done(op)) begin_flow(op);
      while (!timed_.empty() && timed_.top().time <= now_) {
        const Timed e = timed_.top();
        timed_.pop();
        if (e.op == kArrival) {
          arrived_[static_cast<std::size_t>(e.rank)] = true;
          try_start(e.rank);
          wake(e.rank);
        } else {
          begin_launch(e.op);
        }
      }
      drain();
      const auto flows = static_cast<double>(memory_.heap.size());
      memory_.rate = memory_.heap.empty() ? 0 : std::min(cap, bandwidth / flows);
      launch_.rate = launch_.heap.empty() ? 0 : 1.0 / static_cast<double>(launch_.heap.size());
    }
    for (std::size_t r = 0; r < n; ++r) {
      SSIM_CHECK(next_[r] == rank_ops_[r].size(), "shared_device: a stream did not finish");
    }
    out.finish.resize(n);
    for (std::size_t r = 0; r < n; ++r) out.finish[r] = Seconds{finish_[r]};
    out.events = completed_;
  }

  double work_of(int rank) const { return work_[static_cast<std::size_t>(rank)]; }

 private:
  struct RankRound {
    std::uint64_t stamp = 0;
    std::vector<std::uint32_t> recvs;  // transfer indices
    std::vector<int> sends;            // receivers (physical)
    std::uint32_t first = 0;           // position of the rank's first operation of the round
    std::uint32_t apply = 0;           // position of its apply
    std::uint32_t copies = 0;          // its copies into scratch (all receives but direct ones)
  };

  bool satisfied(const Dep& d) const {
    const auto r = static_cast<std::size_t>(d.rank);
    return arrived_[r] && next_[r] >= d.position;
  }

  void try_start(int rank) {
    const auto r = static_cast<std::size_t>(rank);
    if (!arrived_[r] || busy_[r] || next_[r] == rank_ops_[r].size()) return;
    const std::uint32_t id = rank_ops_[r][next_[r]];
    const Op& op = ops_[id];
    for (std::uint32_t i = op.dep_begin; i < op.dep_end; ++i) {
      if (!satisfied(deps_[i])) {
        waiters_[static_cast<std::size_t>(deps_[i].rank)].push_back(rank);
        return;
      }
    }
    busy_[r] = true;
    if (op.latency > 0) {
      timed_.push({now_ + op.latency, seq_++, id, rank});
    } else {
      begin_launch(id);
    }
  }

  // After its own latency, an operation takes launch_time of the device's launch capacity,
  // which the operations launching at once share.
  void begin_launch(std::uint32_t id) {
    if (d_.launch_time.value > 0) {
      launch_.heap.push({launch_.progress + d_.launch_time.value, seq_++, id});
    } else {
      begin_flow(id);
    }
  }

  void begin_flow(std::uint32_t id) {
    const Op& op = ops_[id];
    work_[static_cast<std::size_t>(op.rank)] += op.work;
    if (op.work > 0) {
      memory_.heap.push({memory_.progress + op.work, seq_++, id});
    } else {
      instant_.push_back(id);
    }
  }

  void complete(std::uint32_t id) {
    const int rank = ops_[id].rank;
    const auto r = static_cast<std::size_t>(rank);
    ++next_[r];
    busy_[r] = false;
    finish_[r] = now_;
    ++completed_;
    try_start(rank);
    wake(rank);
  }

  void wake(int rank) {
    std::vector<int> w;
    w.swap(waiters_[static_cast<std::size_t>(rank)]);
    for (int x : w) try_start(x);
  }

  // Operations with neither latency nor bytes end when they start.
  void drain() {
    while (!instant_.empty()) {
      const std::uint32_t id = instant_.back();
      instant_.pop_back();
      complete(id);
    }
  }

  topo::SharedDevice d_;
  int ranks_;
  bool direct_;  // copy_factor 0: receivers read the sender's data in their kernel
  // Direct, per rank: the kernels that read its data in its last round (position + 1 each).
  std::vector<std::vector<Dep>> readers_;
  std::vector<std::pair<int, Dep>> new_readers_;  // the round's: (sender, reader)
  std::vector<Op> ops_;
  std::vector<Dep> deps_;
  std::vector<std::vector<std::uint32_t>> rank_ops_;
  // Building: per rank, its part in the round being added.
  std::vector<RankRound> round_ = std::vector<RankRound>(static_cast<std::size_t>(ranks_));
  std::vector<int> participants_;
  std::uint64_t stamp_ = 0;
  // Running.
  std::vector<std::uint32_t> next_;
  std::vector<bool> arrived_, busy_;
  std::vector<std::vector<int>> waiters_;
  std::vector<double> finish_, work_;
  std::vector<std::uint32_t> instant_;
  std::priority_queue<Timed, std::vector<Timed>, std::greater<>> timed_;
  Fluid memory_;  // bytes
  Fluid launch_;  // seconds of launch work
  double now_ = 0;
  std::uint64_t seq_ = 0;
  std::uint64_t completed_ = 0;
};

}  // namespace

IterationResult run_shared_device(RoundSource& rounds, const topo::Topology& topology, Bytes bytes,
                                  std::span<const Seconds> arrival, const RunOptions& options) {
  SSIM_CHECK(topology.shared_device.has_value(), "run_shared_device on a topology without device");
  const int n = rounds.ranks();
  if (topology.gpu_count() != n) {
    throw InputError("the schedule has " + std::to_string(n) +
                     " ranks but the shared_device "
                     "topology " +
                     std::to_string(topology.gpu_count()));
  }
  SSIM_CHECK(arrival.size() == static_cast<std::size_t>(n), "one arrival per rank");
  if (options.record_timeline || options.trace != nullptr) {
    throw InputError(
        "per-transfer timelines and traces are not available on a shared_device topology (its "
        "model runs operations on streams, not transfers on links)");
  }
  if (!options.rank_map.empty())
    SSIM_CHECK(options.rank_map.size() == static_cast<std::size_t>(n), "rank map size");
  DeviceRun run(*topology.shared_device, n);
  IterationResult out;
  out.ranks = n;
  out.bytes = bytes.value;
  while (const alg::Round* round = rounds.next()) {
    run.add_round(*round, bytes.value, rounds.chunks(), options.rank_map);
    out.transfers += round->transfers.size();
  }
  run.run(arrival, out);
  out.arrival.assign(arrival.begin(), arrival.end());
  double first = std::numeric_limits<double>::infinity(), last = -first, end = -first;
  for (int r = 0; r < n; ++r) {
    first = std::min(first, arrival[static_cast<std::size_t>(r)].value);
    last = std::max(last, arrival[static_cast<std::size_t>(r)].value);
    end = std::max(end, out.finish[static_cast<std::size_t>(r)].value);
  }
  out.first_arrival = Seconds{first};
  out.last_arrival = Seconds{last};
  out.last_finish = Seconds{end};
  out.completion = Seconds{end - first};
  out.after_last_arrival = Seconds{end - last};
  out.algbw = BytesPerSecond{out.after_last_arrival.value > 0
                                 ? static_cast<double>(bytes.value) / out.after_last_arrival.value
                                 : 0.0};
  out.busbw = BytesPerSecond{out.algbw.value * 2.0 * (n - 1) / n};
  const int links = topology.link_count();
  out.link_bytes.assign(static_cast<std::size_t>(links), 0);
  out.link_utilization.assign(static_cast<std::size_t>(links), 0.0);
  for (int r = 0; r < n; ++r) {
    const std::vector<int> up = topology.out_links(topology.vertex_of_rank(r));
    if (up.empty()) continue;
    const auto l = static_cast<std::size_t>(up.front());
    out.link_bytes[l] = static_cast<std::uint64_t>(std::llround(run.work_of(r)));
    const double capacity = topology.link(up.front()).bandwidth.value * out.completion.value;
    out.link_utilization[l] = capacity > 0 ? std::min(1.0, run.work_of(r) / capacity) : 0.0;
  }
  return out;
}

}  // namespace ssim::sim
