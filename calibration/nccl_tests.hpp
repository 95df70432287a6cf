// Reading nccl-tests' own output (all_reduce_perf), so `stragglesim calibrate` fits a log a
// user already has and `stragglesim validate` compares one with the model:
//
//   const std::string text = read_file("all_reduce_8gpu.log");       // or the -J JSON file
//   if (looks_like_nccl_tests(text)) {
//     const NcclTestsLog log = parse_nccl_tests(text, "all_reduce_8gpu.log");
//     const std::vector<MeasuredRun> runs = nccl_tests_runs(log, "ring", std::nullopt);
//   }
//
// Text form: the table all_reduce_perf prints. The column header line
//   "#  size  count  type  redop  root  time  algbw  busbw  #wrong  time  algbw  busbw  #wrong"
// names the columns (older versions lack root, or say error for #wrong; -C says cputime):
// columns are found by name; the first time/algbw/busbw/#wrong are the out-of-place ones, the
// second the in-place ones. A row is a line whose first field is a whole number; other lines
// (comments, NCCL INFO lines, "NCCL version ..." lines) are skipped, a row that does not parse
// is an InputError naming the file, line and column. The device text is rank 0's "HOST: NAME"
// of the "#  Rank R ... on HOST device D [BUS] NAME" lines under "# Using devices"; the NCCL
// version comes from "# nccl-tests version ... nccl-library=CODE" or an "NCCL version X.Y.Z"
// line.
// JSON form (nccl-tests -J, file version 2): "results" [{"size", "count", "type", "redop",
// "root", "out_of_place": {"time", "alg_bw", "bus_bw", "nwrong"}, "in_place": {...}}],
// "nccl_version" (a code), "config": {"nthreads", "ngpus", "devices": [{"hostname",
// "device_info", ...}]}, one device entry per process: ranks = devices x nthreads x ngpus.
// Times are microseconds in both forms.
//
// The rank count n: the device lines when they list ranks 0..n-1 each once (one line per rank,
// whatever the processes, threads and GPUs per process: -g G runs and several processes per
// node read the same), the JSON config, else the rows: nccl-tests prints busbw = algbw x
// 2(n-1)/n for AllReduce, and the two printed bandwidths of a row, within their print rounding,
// allow a range of n (one n when algbw is large enough). A listing with gaps (a shortened one,
// "ranks 1-14 omitted") or cut with "..." gives no count. Every row must allow the count,
// whichever way it was found: a row that does not is an InputError naming the file, line and
// values (a log of another collective, or a listing that is not the run's).
// A log of another collective (all_gather_perf, experiment_name other than AllReduce, a command
// line naming another *_perf, redop none, a root other than -1) is an InputError: the
// fits and the comparison model AllReduce.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "calibration/calibration.hpp"

namespace ssim::calib {

// The most ranks a log may say it ran (as calibrate's --log-ranks).
inline constexpr int kMaxLogRanks = 65536;

// One side (out-of-place or in-place) of a row.
struct NcclTestsTimes {
  double time_us = 0;
  double algbw_GBps = 0;
  double busbw_GBps = 0;
  // Half the last printed digit of algbw and busbw ("0.01" -> 0.005): the print rounding.
  double algbw_rounding = 0;
  double busbw_rounding = 0;
  std::optional<double> wrong;  // empty when not checked (N/A, null)
};

struct NcclTestsRow {
  int line = 0;  // in the text; the 1-based result index in JSON
  std::uint64_t bytes = 0;
  std::uint64_t count = 0;
  std::string type;   // "float", "half", ...
  std::string redop;  // "sum", ...
  NcclTestsTimes out_of_place;  // the fits use it
  std::optional<NcclTestsTimes> in_place;  // when the log has those columns
};

// Where a log's rank count came from.
enum class NcclTestsRanksFrom { none, device_lines, json_config, bandwidths };

struct NcclTestsLog {
  bool json = false;
  std::string program;       // "all_reduce_perf" / "AllReduce" when the log says
  std::optional<int> ranks;  // when the log says (device lines, JSON config or the rows)
  NcclTestsRanksFrom ranks_from = NcclTestsRanksFrom::none;
  // The first device line (device_lines), the row that fixed the count (bandwidths), else 0.
  int ranks_line = 0;
  int device_lines = 0;            // "#  Rank" lines in a text log
  bool listing_shortened = false;  // device lines with gaps or repeats, or cut with "..."
  // The rank counts every row's busbw/algbw allows ([1, kMaxLogRanks] when none tells).
  int rows_min_ranks = 1;
  int rows_max_ranks = kMaxLogRanks;
  std::string device;        // "HOST: NAME" of rank 0, when the log says
  std::string nccl_version;  // "2.27.3", when the log says
  // NCCL_ALGO=... and NCCL_PROTO=... as a line of the log sets them (a command line that
  // exports them, `mpirun -x NCCL_ALGO=Ring ...`), verbatim, with that line; empty / 0 when
  // the log does not say. The first setting counts.
  std::string nccl_algo, nccl_proto;
  int nccl_algo_line = 0, nccl_proto_line = 0;
  std::vector<NcclTestsRow> rows;
};

// True for JSON with a "results" list, or text with an nccl-tests column header line.
bool looks_like_nccl_tests(std::string_view text);

// InputError naming `name`, the line and the column on malformed input, on a log without
// rows, and on a log of another collective than AllReduce.
NcclTestsLog parse_nccl_tests(std::string_view text, std::string_view name);

// NCCL_ALGO / NCCL_PROTO values as stragglesim's `nccl` options name them: "Ring" -> "ring",
// "Tree" -> "tree", "NVLS" -> "nvls", "NVLSTree" -> "nvls_tree", "CollnetDirect" ->
// "collnet_direct", "CollnetChain" -> "collnet_chain"; "LL" -> "ll", "LL128" -> "ll128",
// "Simple" -> "simple" (case-insensitive). Empty for anything else: a list ("Ring,Tree"), an
// exclusion ("^NVLS") or a name NCCL has for other collectives (PAT): NCCL still chooses.
std::string nccl_algo_option(std::string_view value);
std::string nccl_proto_option(std::string_view value);

// "22703" -> "2.27.3" (NCCL_VERSION_CODE: major * 10000 + minor * 100 + patch since 2.9,
// major * 1000 + minor * 100 + patch before).
std::string nccl_version_from_code(long code);

// How the rank count was found, for messages: "16 ranks (from busbw/algbw = 2(n-1)/n, line
// 21; the device listing is shortened)", "8 ranks (8 device lines, line 5)".
std::string describe_ranks(const NcclTestsLog& log);

// The log's rows as measured AllReduce runs of `algorithm` (a registry name whose closed
// form the fit uses) on the log's rank count, or `ranks` when the log does not say (InputError
// when neither does, when both do and disagree, or when `ranks` is not a count the rows'
// busbw/algbw allow). time_s = after_last_arrival_s = the
// out-of-place time, no delay. Rows with size 0 or with wrong elements are left out and
// returned in `skipped`.
std::vector<MeasuredRun> nccl_tests_runs(const NcclTestsLog& log, std::string_view name,
                                         const std::string& algorithm, std::optional<int> ranks,
                                         std::vector<SkippedRows>& skipped);

}  // namespace ssim::calib
