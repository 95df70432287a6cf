// The result CSV shared by measured (stragglesim-gpu run) and simulated runs: one row per
// collective run, the same columns on both sides so that a plot or a calibration fit can put
// them side by side. Host code only (no CUDA), so the simulator side can write it too.
//
//   std::ofstream out("runs.csv");
//   ResultCsvWriter csv(out);                       // writes the header
//   ResultRow row;
//   row.source = ResultSource::measured;  row.algorithm = "ring";  row.ranks = 8;
//   row.bytes = Bytes{1 << 20};  row.time = row.after_last_arrival = Seconds{1e-4};
//   set_bandwidths(row);                            // algbw and busbw from bytes and time
//   csv.write(row);
//   std::vector<ResultRow> rows = read_result_csv(in, "runs.csv");
//
// Columns, in this order (result_csv_columns()), each with one type; a cell is empty only
// where said here (readers: straggler and wrong are nullable integers, e.g. pandas "Int64"):
//   source                string: measured | simulated
//   algorithm             string: registry name, "nccl" (ncclAllReduce), or "NAME+nccl-rs"
//                         (phase 1 run as ncclReduceScatter)
//   ranks                 integer
//   bytes                 integer: collective size, the per-rank buffer in bytes
//   dtype                 string: float32 | float64 | int32 | int64 | float16 | bfloat16
//   delay_s               number, seconds: how late the straggler arrived after every other
//                         rank (0: no straggler). Measured rows: the delay injected on the
//                         straggler (stragglesim-gpu: its spin, timed on the device; MPI: the one
//                         asked for); simulated rows: last arrival - second-to-last arrival.
//   straggler             integer: the rank delayed by delay_s (simulated: the rank that
//                         arrived last); empty exactly when delay_s is 0
//   iteration             integer: 0-based index of the run within its (algorithm, size) series
//   time_s                number: first arrival to last finish, seconds
//   after_last_arrival_s  number: last arrival to last finish (the StragglAR paper's "time
//                         minus delay")
//   algbw_GBps            number: bytes / after_last_arrival_s, in 1e9 B/s
//   busbw_GBps            number: algbw * 2(n-1)/n: nccl-tests' AllReduce bus factor. A ring
//                         AllReduce moves 2(n-1)/n * bytes through every rank's link, so busbw
//                         compares to the link bandwidth independently of n.
//   wrong                 integer: elements that failed the check (nccl-tests' #wrong); empty
//                         when not checked: always in simulated rows, and in measured rows of
//                         iterations run without a check
//   device                string: what ran it: GPU name and transport, or the simulator's model
//   timestamp             string: UTC, ISO 8601 ("2025-06-01T12:34:56Z"), when a measured row
//                         was written; empty in simulated rows and in rows converted from
//                         nccl-tests output (which has no time of day)
//   nccl_version          string: the NCCL library the run used ("2.27.3"); empty when none
//                         (MPI, simulated rows)
//   nccl_algo, nccl_proto string: NCCL_ALGO / NCCL_PROTO in effect for `nccl` rows (what the
//                         environment asked for; empty: NCCL's own choice)
//   arrival_spread_s      number: last arrival - first arrival, seconds (= time_s -
//                         after_last_arrival_s; delay_s or more). Written from the rows' times;
//                         the reader does not read it back.
//   options               string: the algorithm's generator options as run, canonical
//                         (canonical_options): "key=value;key=value", keys sorted, empty when
//                         the run used the defaults. `straggler` is left out when the schedule
//                         was built for the rank the straggler column names (or n-1 when that
//                         is empty), which is every run but one given --straggler without a
//                         delay. Rows of `nccl` and other non-registry algorithms: empty.
//   transport             string: how the ranks exchanged data: single-gpu (every rank on one
//                         GPU), nccl (NCCL across GPUs), mpi (stragglesim-mpi), sim (simulated
//                         rows); empty in files written before the column
// nccl_version, nccl_algo and nccl_proto were added later, arrival_spread_s after them, options
// and transport last: the reader takes them when present and leaves them empty in files written
// before them (options: not recorded, ResultRow::options is nullopt); every other column is
// required.
// Bandwidths use after_last_arrival_s because with a straggler time_s mostly measures the
// delay; without one the two times are equal and this is nccl-tests' definition.
// Numbers are written as the shortest text that reads back to the same double.
// Fields holding a comma, a quote or a line break are quoted (RFC 4180).
#pragma once

#include <cstdint>
#include <iosfwd>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "common/units.hpp"

namespace ssim::schema {

enum class ResultSource : std::uint8_t { measured, simulated };

std::string_view to_string(ResultSource source);

struct ResultRow {
  ResultSource source = ResultSource::measured;
  std::string algorithm;
  int ranks = 0;
  Bytes bytes;
  std::string dtype = "float32";
  Seconds delay;
  std::optional<int> straggler;
  int iteration = 0;
  Seconds time;
  Seconds after_last_arrival;
  BytesPerSecond algbw;
  BytesPerSecond busbw;
  std::optional<std::uint64_t> wrong;
  std::string device;
  std::string timestamp;
  std::string nccl_version;
  std::string nccl_algo;
  std::string nccl_proto;
  // Canonical options text; nullopt: the file has no options column (written before it), so
  // what ran is not recorded. Written as empty then.
  std::optional<std::string> options;
  std::string transport;

  bool operator==(const ResultRow&) const = default;
};

// 2(n-1)/n; InputError for n < 1.
double allreduce_bus_factor(int ranks);
// algbw = bytes / after_last_arrival (0 when that time is 0), busbw = algbw * bus factor.
void set_bandwidths(ResultRow& row);
// The options column's text: "key=value;..." in key order (a std::map is sorted). InputError
// when a key is empty or holds '=' or ';', or a value holds ';'.
std::string canonical_options(const std::map<std::string, std::string>& options);
// Reads that text back (any key order; empty text: no options). InputError (without a
// position; callers add it) on an item without '=', an empty key, or a key given twice.
std::map<std::string, std::string> parse_options(std::string_view text);

// Now, as the timestamp column writes it.
std::string utc_timestamp_now();

const std::vector<std::string>& result_csv_columns();

// CSV cell helpers shared by every writer of this schema (and its extensions): the shortest
// text that reads back to the same double, and RFC 4180 quoting when a field needs it.
std::string csv_number(double v);
std::string csv_field(const std::string& field);

class ResultCsvWriter {
 public:
  // Writes the header line.
  explicit ResultCsvWriter(std::ostream& out);
  void write(const ResultRow& row);

 private:
  std::ostream& out_;
};

// One data line (no newline), as the writer writes it.
std::string format_result_row(const ResultRow& row);

// Reads a file written by ResultCsvWriter. Columns are found by name (extra columns are
// ignored, so the schema can grow); a missing column, a field count that differs from the
// header, or a bad value is an InputError naming `name`, the line and the column.
std::vector<ResultRow> read_result_csv(std::istream& in, std::string_view name);

}  // namespace ssim::schema
