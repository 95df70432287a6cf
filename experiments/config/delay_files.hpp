// Delay sample and trace files: the text forms of sim::Distribution::empirical and sim::Trace.
// Read here, at the edge, so the simulator receives numbers and never reads a file. Both are
// CSV, read with common/csv.hpp: blank lines and lines starting with '#' are skipped, spaces
// around fields are ignored, errors name the file, line and (for a bad cell) column.
//
//   sim::Distribution d = load_delay_samples("measured/delays_ms.txt");
//   sim::DelayModel m;  m.trace = load_delay_trace("measured/arrivals.csv");
//
// Samples, one per line, either
//   - a one-column header whose name ends in the unit, then bare numbers:
//         delay_ms            (suffixes _s, _ms, _us, _ns, _ps)
//         3.2
//   - or values that carry their unit, "3.2ms", "3.2 ms" or "3.2,ms", with an optional header
//     "<name>,unit".
//   A file without samples is an error.
// Traces, in one of two forms (the unit is in the header):
//   long:  iteration,rank,arrival_ms        one row per (iteration, rank), any order
//   wide:  iteration,rank0_ms,rank1_us,...  one row per iteration, columns rank0, rank1, ...
//   Iterations must be 0..T-1 without gaps, each with every rank 0..R-1 exactly once.
//
// Step logs (`stragglesim fit-delays`): per-rank, per-step times, header 'rank,step,seconds' or
// 'rank,step,<name>_<unit>', one row per (rank, step) in any order; steps must run from the
// smallest to the largest without gaps, each with every rank 0..R-1 exactly once. Returned as
// times[step - first][rank] in seconds. A plain log of per-rank timestamps, header
// 'rank,step,timestamp' (seconds) or 'rank,step,timestamp_<unit>', gives when each rank finished
// each step: the times are the differences of consecutive steps (one step fewer), and a
// timestamp that does not increase is an error naming its line.
//
// PyTorch profiler traces (the Chrome trace JSON its profiler writes, one file per rank): the
// rank from distributedInfo.rank, the step times from the spans named ProfilerStep#<step>
// (their dur, microseconds). Every rank 0..R-1 once, every trace with rank 0's steps, which run
// without gaps. Returned as times[step - first][rank] in seconds.
#pragma once

#include <filesystem>
#include <iosfwd>
#include <string>
#include <utility>
#include <vector>

#include "sim/delays.hpp"

namespace ssim::experiments {

sim::Distribution load_delay_samples(const std::filesystem::path& file);
// The same from a stream; `source` names it in errors ("source:line: ...").
sim::Distribution read_delay_samples(std::istream& in, const std::string& source);

sim::Trace load_delay_trace(const std::filesystem::path& file);
sim::Trace read_delay_trace(std::istream& in, const std::string& source);

std::vector<std::vector<double>> load_step_log(const std::filesystem::path& file);
std::vector<std::vector<double>> read_step_log(std::istream& in, const std::string& source);
std::vector<std::vector<double>> load_profiler_traces(const std::vector<std::filesystem::path>& files);
// The same from texts: (source, the trace's JSON) per rank; `source` names it in errors.
std::vector<std::vector<double>> read_profiler_traces(
    const std::vector<std::pair<std::string, std::string>>& traces);

}  // namespace ssim::experiments
