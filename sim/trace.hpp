// Chrome trace JSON (opens in Perfetto, ui.perfetto.dev, and chrome://tracing) of one executed
// iteration, written while the run produces it:
//
//   std::ofstream f("ring.trace.json");
//   ChromeTraceWriter w(f, schedule, &topology, arrivals, {.title = "ring, 4 ranks, 1GiB"});
//   RunOptions o;  o.trace = &w;
//   IterationResult r = executor.run(arrivals, o);
//   w.finish(r);                                   // closes the JSON
//
// or, from a run recorded with RunOptions::record_timeline, chrome_trace(schedule, r, title).
// The writer holds no event after writing it: its memory is O(ranks + links + transfers in
// flight), so a 4096-rank trace costs what its file costs on disk, not in memory (but for a
// pipelined NCCL kernel's run, whose transfers Executor::run holds to the end: TimelineSink).
//
// Layout: one process per rank ("rank r", pid r + 1, sorted by rank) holding its tracks: "send"
// and "recv", plus "send 2", "recv 2", ... when a rank's transfers overlap in time (the flow
// model lets them; trace viewers need the slices of one track to nest). Track ids (tid) are
// unique in the trace and above every pid (ranks + 2 on): Perfetto puts an event without a tid
// on thread tid = pid. Slices ("ph": "X"):
//   send c3 -> 5   / recv c3 <- 4     a transfer, from its start to its last byte (for the
//                                     receiver: to the end of its reduction); args: round,
//                                     phase, op, chunks, bytes
//   arrival                           the rank's arrival delay after the first arrival
//   wait for peer 5                   the rank had reached the round, the peer had not
//   wait for port                     both were there, a port was still busy (alpha-beta FIFO)
// Instant events ("ph": "i") "arrived" mark each rank's arrival on its send track; a flow arrow
// ("ph": "s" -> "f", id = a per-trace transfer number) links every send slice to its receive.
// Counters ("ph": "C"):
//   send queue / recv queue (args "depth", in each rank's process): the transfers the rank has
//     posted at that port and whose last byte has not arrived: from the moment the rank reaches
//     their round (the FIFO entry) to their end, so waiting for the peer, waiting for the port
//     and moving all count. In the alpha-beta model this is the port's FIFO queue including the
//     transfer in service; in the flow model (no port FIFO) the rank's outstanding transfers.
//   link N: a -> b (args "utilization", process "links", pid ranks + 1; flow model only): the
//     sum of the max-min rates of the flows on link N over its bandwidth, in [0, 1], a step
//     function updated at every rate change. TraceOptions::links selects which links get one
//     (by default every link that carries traffic; links without traffic never get one). The
//     alpha-beta model has no rates (a transfer takes a route's bottleneck bandwidth whatever
//     else uses its links), so it gets no link counters.
// A counter track has at most one value per nanosecond (the last one at that time).
// Every time is rounded to an integer nanosecond since the first arrival before it is written
// (ts and dur in microseconds with three decimals), so slices of one track never overlap after
// a viewer converts them to nanoseconds. "displayTimeUnit": "ns". Events are in the order the
// run produced them, not sorted by time (viewers sort; the format does not require order).
// "otherData", written last, carries the run's summary.
#pragma once

#include <algorithm>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <ostream>
#include <span>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "algorithms/schedule.hpp"
#include "sim/executor.hpp"
#include "topologies/topology.hpp"

namespace ssim::sim {

// Which events a trace keeps (default: all). A transfer side belongs to its rank (the sender
// for "send", the receiver for "recv") and to its schedule round. A slice is kept when its rank
// and round are selected and it overlaps the window [from, to] (times since the first arrival,
// the trace's zero; bounds included); kept slices are written whole, not clipped to the window.
// A flow arrow is kept when both its slices are (both ranks selected and the transfer overlaps
// the window). Track names, arrivals and queue counters only for selected ranks; queue counters
// count the transfers of the selected rounds. Counter tracks (queues, links) follow the window:
// the value in effect at `from` is written at `from`, then every change up to `to`. Link
// counters follow the window only (TraceOptions::links selects links).
struct TraceSelection {
  std::vector<char> ranks;  // per rank, 1: kept; empty: every rank
  // Round indices kept, as [first, last] ranges sorted by first; empty: every round.
  std::vector<std::pair<long long, long long>> rounds;
  std::optional<Seconds> from, to;

  bool rank(int r) const {
    return ranks.empty() || (r >= 0 && static_cast<std::size_t>(r) < ranks.size() &&
                             ranks[static_cast<std::size_t>(r)]);
  }
  bool round(int k) const {
    if (rounds.empty()) return true;
    // The last range starting at or before k.
    auto it = std::upper_bound(rounds.begin(), rounds.end(), static_cast<long long>(k),
                               [](long long v, const auto& range) { return v < range.first; });
    return it != rounds.begin() && k <= std::prev(it)->second;
  }
  bool windowed() const { return from.has_value() || to.has_value(); }
};

// What a trace with a selection will hold, counted by TraceCounter before it is written.
// Bytes are estimated from the average size of each kind of event (numbers vary in length).
struct TraceEstimate {
  std::uint64_t events = 0;
  std::uint64_t bytes = 0;
  std::uint64_t link_events = 0;  // link utilization counters (flow model) among `events`
  std::uint64_t link_bytes = 0;
  // Per rank: the bytes its events take when the rank is selected (with the selection's rounds
  // and window; arrows counted as if the peer were selected too), to suggest a rank range.
  std::vector<std::uint64_t> rank_bytes;
  int rounds = 0;         // the traced schedule's round count
  std::string algorithm;  // the traced schedule's
};

struct TraceOptions {
  std::string title;
  // Link utilization counters (flow model): nullopt = every link that carries traffic; else
  // exactly the listed topology link ids (empty: none).
  std::optional<std::vector<int>> links;
  TraceSelection select;
  // Told every 65536 events written: the events and bytes written so far.
  std::function<void(std::uint64_t events, std::uint64_t bytes)> progress;
};

// A sink that writes nothing and counts what ChromeTraceWriter would write for the same run
// with the same options (a run of the iteration before the one that writes the trace).
class TraceCounter final : public TimelineSink {
 public:
  TraceCounter(const alg::Schedule& schedule, const topo::Topology* topology,
               std::span<const Seconds> arrival, const TraceOptions& options);
  ~TraceCounter();
  TraceCounter(const TraceCounter&) = delete;
  TraceCounter& operator=(const TraceCounter&) = delete;
  void transfer_side(const TransferRecord& record, Side side) override;
  void flow_rate(std::span<const int> links, double old_rate, double new_rate,
                 Seconds now) override;
  TraceEstimate estimate() const;

 private:
  struct State;
  std::unique_ptr<State> state_;
};

class ChromeTraceWriter final : public TimelineSink {
 public:
  // Writes the header, the track names and the arrivals. `schedule` (for phase labels) and
  // `topology` (link names and bandwidths; nullptr: no link counters) must outlive the writer.
  ChromeTraceWriter(std::ostream& out, const alg::Schedule& schedule,
                    const topo::Topology* topology, std::span<const Seconds> arrival,
                    TraceOptions options = {});
  ~ChromeTraceWriter();
  ChromeTraceWriter(const ChromeTraceWriter&) = delete;
  ChromeTraceWriter& operator=(const ChromeTraceWriter&) = delete;

  void transfer_side(const TransferRecord& record, Side side) override;
  void flow_rate(std::span<const int> links, double old_rate, double new_rate,
                 Seconds now) override;
  // Writes the counters still pending and the run's summary, and closes the JSON. Call once,
  // with the result of the run that fed this writer.
  void finish(const IterationResult& result);

 private:
  struct State;
  std::unique_ptr<State> state_;
};

// `result` must hold the timeline of a run of `schedule` (record_timeline); no link counters
// (the timeline has no rates).
void write_chrome_trace(std::ostream& out, const alg::Schedule& schedule,
                        const IterationResult& result, std::string_view title = "");
std::string chrome_trace(const alg::Schedule& schedule, const IterationResult& result,
                         std::string_view title = "");

}  // namespace ssim::sim
