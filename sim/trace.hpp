// Chrome trace JSON (opens in Perfetto, ui.perfetto.dev, and chrome://tracing) of one executed
// iteration, from an IterationResult recorded with RunOptions::record_timeline.
//
//   RunOptions o;  o.record_timeline = true;
//   IterationResult r = executor.run(arrivals, o);
//   std::ofstream f("ring.trace.json");
//   write_chrome_trace(f, schedule, r, "ring, 4 ranks, 1GiB");
//
// Layout: one process per rank ("rank r", pid r + 1, sorted by rank) holding its tracks: "send"
// and "recv", plus "send 2", "recv 2", ... when a rank's transfers overlap in time (the flow
// model lets them; trace viewers need the slices of one track to nest). Slices ("ph": "X"):
//   send c3 -> 5   / recv c3 <- 4     a transfer, from its start to its last byte (for the
//                                     receiver: to the end of its reduction); args: round,
//                                     phase, op, chunks, bytes
//   arrival                           the rank's arrival delay after the first arrival
//   wait for peer 5                   the rank had reached the round, the peer had not
//   wait for port                     both were there, a port was still busy (alpha-beta FIFO)
// Instant events ("ph": "i") "arrived" mark each rank's arrival on its send track; a flow arrow
// ("ph": "s" -> "f", id = transfer index + 1) links every send slice to its receive slice.
// Every time is rounded to an integer nanosecond since the first arrival before it is written
// (ts and dur in microseconds with three decimals), so slices of one track never overlap after
// a viewer converts them to nanoseconds. "displayTimeUnit": "ns". "otherData" carries the run's
// summary.
#pragma once

#include <ostream>
#include <string>
#include <string_view>

#include "algorithms/schedule.hpp"
#include "sim/executor.hpp"

namespace ssim::sim {

// `result` must hold the timeline of a run of `schedule` (record_timeline).
void write_chrome_trace(std::ostream& out, const alg::Schedule& schedule,
                        const IterationResult& result, std::string_view title = "");
std::string chrome_trace(const alg::Schedule& schedule, const IterationResult& result,
                         std::string_view title = "");

}  // namespace ssim::sim
