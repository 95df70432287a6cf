// The schedule executor: runs an alg::Schedule (AllReduce of `bytes` per rank) on a topology
// under a network model, for given per-rank arrival times, and reports when every rank is done.
//
//   Executor ex(schedule, topology, NetworkConfig{NetworkKind::alphabeta, SecondsPerByte{0}},
//               Bytes{1 << 30});
//   IterationResult r = ex.run(arrivals);                 // arrivals[physical rank]
//   RunOptions o;  o.rank_map = straggler_rank_map(schedule, /*predicted=*/5);
//   IterationResult s = ex.run(arrivals, o);              // schedule's straggler played by rank 5
//
// Semantics (DESIGN.md "Ordering"; the same as tests/algorithms/round_timing.hpp): no global
// barrier. A rank starts at its arrival time and works through its own rounds in order; it
// reaches round k when all its transfers (sends, and receives including their reduction at
// gamma seconds per byte) of earlier rounds are done; a rank with nothing in a round passes
// through. A transfer of round k starts when its sender and its receiver have both reached
// round k and, in the alpha-beta model, the sender's send port and the receiver's receive port
// are free: within a round each port serves its transfers in the order they appear in the
// round. A receive port is free again when the data has arrived (the reduction runs beside it).
//
// A shared_device topology (topo::SharedDevice) is not a network: whatever the network kind,
// its runs go to the shared-device machine model (shared_device.hpp), which has its own
// per-stream semantics.
//
// Two evaluations of these semantics:
//  - alphabeta: a single pass over the rounds (the dataflow pass), O(1) per transfer. It is an
//    exact event simulation for this model, whose only shared resources are the FIFO ports:
//    every start time is the max of times already known when the pass reaches the transfer.
//    It consumes rounds one at a time, so it also runs from a RoundSource that never
//    materializes the whole schedule (run_alphabeta below).
//  - flow (and alphabeta with RunOptions::use_event_engine, used to cross-check the pass): the
//    event engine with the network model deciding when each transfer's last byte arrives. It
//    also runs from a RoundSource, keeping only the rounds that ranks are in.
//
// Time is double seconds, absolute (arrivals as given). Results per iteration:
//   completion         = last finish - first arrival
//   after_last_arrival = last finish - last arrival   (the part a straggler cannot hide)
//   algbw = bytes / after_last_arrival; busbw = algbw * 2(n-1)/n, the AllReduce bus factor of
//   nccl-tests (bytes each rank must move in any AllReduce, over the time), comparable across n.
//   link_bytes[l] = bytes carried over link l (along every transfer's route);
//   link_utilization[l] = link_bytes[l] / (bandwidth_l * completion).
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <span>
#include <vector>

#include "algorithms/round_stream.hpp"
#include "algorithms/schedule.hpp"
#include "common/units.hpp"
#include "sim/network.hpp"
#include "sim/rank_map.hpp"  // straggler_rank_map, late_rank_map for RunOptions::rank_map
#include "topologies/topology.hpp"

namespace ssim::sim {

// One transfer of one iteration, on physical ranks (after relabelling).
struct TransferRecord {
  std::int32_t round = 0;
  std::int32_t index = 0;  // position within the round
  std::int32_t src = 0;
  std::int32_t dst = 0;
  std::int32_t chunk_begin = 0;
  std::int32_t chunk_end = 0;
  alg::Op op = alg::Op::copy;
  std::uint64_t bytes = 0;
  Seconds src_ready;  // the sender reached this round
  Seconds dst_ready;  // the receiver reached this round
  Seconds start;      // both ends there (and, in alphabeta, both ports free)
  Seconds end;        // the last byte arrived
  Seconds done;       // the receiver finished reducing it (= end for copies or gamma = 0)
};

struct IterationResult {
  int ranks = 0;
  std::uint64_t bytes = 0;
  std::vector<Seconds> arrival;  // per physical rank
  std::vector<Seconds> finish;   // per physical rank: all its transfers done (its arrival if none)
  Seconds first_arrival;
  Seconds last_arrival;
  Seconds last_finish;
  Seconds completion;
  Seconds after_last_arrival;
  BytesPerSecond algbw;  // 0 when after_last_arrival <= 0
  BytesPerSecond busbw;
  std::vector<std::uint64_t> link_bytes;  // per topology link id
  std::vector<double> link_utilization;   // per topology link id, in [0, 1]
  std::vector<TransferRecord> timeline;   // schedule order, when RunOptions::record_timeline
  std::uint64_t transfers = 0;
  std::uint64_t events = 0;  // engine events processed (0 for the dataflow pass)
};

// Streams a run's timeline instead of keeping it (RunOptions::trace): told of each side of each
// transfer once that side is complete. The send side (src_ready, dst_ready, start, end set) when
// the last byte has arrived; the receive side (also done) when the reduction has finished. For
// one rank and one side (send or receive), calls come in nondecreasing order of that side's
// ready time (the rank's rounds are sequential), which is what lets a writer place slices on
// tracks and count queues without holding the whole run. A pipelined NCCL kernel's run
// (NetworkConfig::pipelined_kernels) finishes a rank's transfers out of that order; Executor::run
// then holds its sides and hands them all on, in that order, when the run is over (memory
// O(transfers) for those runs only, about 100 bytes a side; ties in schedule order). There a
// side's ready time is at most its start: the flow model's pipelined transfer may start before
// its receiver reaches the step (the timeline keeps when it did; the sink is told the start). Rate
// changes of the flow model come through RateObserver, in time order, as the run makes them
// (before the held sides of a pipelined run).
class TimelineSink : public RateObserver {
 public:
  enum class Side : std::uint8_t { send, recv };
  virtual void transfer_side(const TransferRecord& record, Side side) = 0;
  void flow_rate(std::span<const int>, double, double, Seconds) override {}

 protected:
  ~TimelineSink() = default;
};

struct RunOptions {
  // Schedule rank r runs on physical rank rank_map[r]; empty means the identity.
  std::vector<int> rank_map;
  bool record_timeline = false;
  // alphabeta only: evaluate with the event engine instead of the dataflow pass (same result).
  bool use_event_engine = false;
  // When set, every transfer side and (flow model) rate change is reported here as the run
  // produces it; memory stays O(transfers in flight), except in a pipelined NCCL kernel's run,
  // whose sides are held to the end (TimelineSink). Works with or without record_timeline.
  TimelineSink* trace = nullptr;
  // Threads of the dataflow pass (>= 1): rounds of at least `parallel_round` transfers in
  // which no port serves two transfers are split over them; the result is the same bit for bit
  // for any count. Not used by the event engine, with record_timeline or with a trace. A
  // parallel round is two fork-join steps whose chunks the threads claim, so a thread that is
  // slow to start (a loaded machine) costs the others no waiting (docs/scale.md "Threads").
  // Tests lower it.
  int threads = 1;
  std::size_t parallel_round = 2048;
};

// Rounds one at a time, for the dataflow pass without a materialized schedule.
class RoundSource {
 public:
  virtual ~RoundSource() = default;
  virtual int ranks() const = 0;
  virtual int chunks() const = 0;
  // The next round, or nullptr after the last; valid until the next call.
  virtual const alg::Round* next() = 0;
};

// A RoundSource over a materialized schedule.
class ScheduleRounds final : public RoundSource {
 public:
  explicit ScheduleRounds(const alg::Schedule& s) : schedule_(s) {}
  int ranks() const override { return schedule_.ranks; }
  int chunks() const override { return schedule_.chunks; }
  const alg::Round* next() override {
    return next_ < schedule_.rounds.size() ? &schedule_.rounds[next_++] : nullptr;
  }

 private:
  const alg::Schedule& schedule_;
  std::size_t next_ = 0;
};

// A RoundSource over a round generator (alg::generate_rounds): the schedule is never
// materialized. Counts the rounds and transfers that went through.
class StreamRounds final : public RoundSource {
 public:
  StreamRounds(const alg::Schedule& header, alg::RoundStream stream)
      : ranks_(header.ranks), chunks_(header.chunks), stream_(std::move(stream)) {}
  int ranks() const override { return ranks_; }
  int chunks() const override { return chunks_; }
  const alg::Round* next() override {
    const alg::Round* r = stream_.next();
    if (r) {
      ++rounds_;
      transfers_ += r->transfers.size();
    }
    return r;
  }
  std::size_t rounds_seen() const { return rounds_; }
  std::size_t transfers_seen() const { return transfers_; }

 private:
  int ranks_ = 0;
  int chunks_ = 0;
  alg::RoundStream stream_;
  std::size_t rounds_ = 0;
  std::size_t transfers_ = 0;
};

// The alpha-beta dataflow pass over `rounds`; routes come from (and are added to) `routes`.
IterationResult run_alphabeta(RoundSource& rounds, RouteCache& routes, SecondsPerByte gamma,
                              Bytes bytes, std::span<const Seconds> arrival,
                              const RunOptions& options = {},
                              const ProtocolTiming& protocol = {});

// When each rank was done with its part of each round, from a run recorded with
// RunOptions::record_timeline: per physical rank, per schedule round (`rounds` of them), the
// latest of its sends' `end` and its receives' `done` in that round (what a GPU's per-round
// stamp after the round's apply measures); empty where the rank takes no part in the round.
std::vector<std::vector<std::optional<Seconds>>> round_ends(const IterationResult& result,
                                                            std::size_t rounds);

class Executor {
 public:
  // Keeps references to `schedule` and `topology`: both must outlive the executor. The
  // schedule's rank count must equal the topology's GPU count (InputError otherwise).
  // Not thread-safe (it caches routes and per-run state): one executor per thread.
  Executor(const alg::Schedule& schedule, const topo::Topology& topology, NetworkConfig network,
           Bytes bytes);
  // Temporaries would dangle.
  Executor(alg::Schedule&&, const topo::Topology&, NetworkConfig, Bytes) = delete;
  Executor(const alg::Schedule&, topo::Topology&&, NetworkConfig, Bytes) = delete;
  Executor(alg::Schedule&&, topo::Topology&&, NetworkConfig, Bytes) = delete;
  ~Executor();
  Executor(const Executor&) = delete;
  Executor& operator=(const Executor&) = delete;

  // One iteration; arrival[r] is when physical rank r reaches the collective.
  IterationResult run(std::span<const Seconds> arrival, const RunOptions& options = {});
  // The same with the rounds fed one at a time: `rounds` yields this executor's schedule,
  // which may then be a header without rounds (ranks, chunks, straggler). The dataflow pass
  // holds O(ranks + one round + routes); the event engine (flow model, use_event_engine) takes a
  // round when a rank needs its next group of transfers and drops it when all its transfers are
  // done: a few rounds where ranks progress together, the whole schedule at worst (a rank that
  // has nothing left makes it read ahead to the end).
  IterationResult run(RoundSource& rounds, std::span<const Seconds> arrival,
                      const RunOptions& options = {});

  const alg::Schedule& schedule() const { return schedule_; }
  const NetworkConfig& network() const { return network_; }
  // The routes cached so far (shared by every iteration; a scan of the schedule can reuse them).
  RouteCache& routes() { return routes_; }
  Bytes bytes() const { return bytes_; }

 private:
  class EventRun;

  // run() after the trace, if any, is set up: the evaluation that costs the run.
  IterationResult dispatch(RoundSource& rounds, std::span<const Seconds> arrival,
                           const RunOptions& options);

  const alg::Schedule& schedule_;
  NetworkConfig network_;
  Bytes bytes_;
  RouteCache routes_;                 // shared by every iteration
  std::unique_ptr<EventRun> events_;  // built on the first event-engine run
};

}  // namespace ssim::sim
