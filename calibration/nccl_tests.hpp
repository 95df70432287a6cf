// Reading nccl-tests' own output (all_reduce_perf), so `stragglesim calibrate` fits a log a
// user already has:
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
// columns are found by name and the first time/algbw/busbw/#wrong are the out-of-place ones,
// which are used; the in-place ones are not. A row is a line whose first field is a whole
// number; other lines (comments, NCCL INFO lines, "NCCL version ..." lines) are skipped, a row
// that does not parse is an InputError naming the file, line and column. The rank count is the
// number of "#  Rank R ... on HOST device D [BUS] NAME" lines under "# Using devices"; the
// device text is rank 0's "HOST: NAME"; the NCCL version comes from "# nccl-tests version ...
// nccl-library=CODE" or an "NCCL version X.Y.Z" line.
// JSON form (nccl-tests -J, file version 2): "results" [{"size", "count", "type", "redop",
// "out_of_place": {"time", "alg_bw", "bus_bw", "nwrong"}, ...}], "nccl_version" (a code),
// "config": {"nthreads", "ngpus", "devices": [{"hostname", "device_info", ...}]}, one device
// entry per process: ranks = devices x nthreads x ngpus.
// Times are microseconds in both forms. A log of another collective (all_gather_perf,
// experiment_name other than AllReduce) is an InputError: the fits use AllReduce closed forms.
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

struct NcclTestsRow {
  int line = 0;  // in the text; the 1-based result index in JSON
  std::uint64_t bytes = 0;
  std::uint64_t count = 0;
  std::string type;   // "float", "half", ...
  std::string redop;  // "sum", ...
  double time_us = 0;
  double algbw_GBps = 0;
  double busbw_GBps = 0;
  std::optional<double> wrong;  // empty when not checked (N/A, null)
};

struct NcclTestsLog {
  bool json = false;
  std::string program;       // "all_reduce_perf" / "AllReduce" when the log says
  std::optional<int> ranks;  // when the log says
  std::string device;        // "HOST: NAME" of rank 0, when the log says
  std::string nccl_version;  // "2.27.3", when the log says
  std::vector<NcclTestsRow> rows;
};

// True for JSON with a "results" list, or text with an nccl-tests column header line.
bool looks_like_nccl_tests(std::string_view text);

// InputError naming `name`, the line and the column on malformed input, on a log without
// rows, and on a log of another collective than AllReduce.
NcclTestsLog parse_nccl_tests(std::string_view text, std::string_view name);

// "22703" -> "2.27.3" (NCCL_VERSION_CODE: major * 10000 + minor * 100 + patch since 2.9,
// major * 1000 + minor * 100 + patch before).
std::string nccl_version_from_code(long code);

// The log's rows as measured AllReduce runs of `algorithm` (a registry name whose closed
// form the fit uses) on the log's rank count, or `ranks` when the log does not say (InputError
// when neither does, or when both do and disagree). time_s = after_last_arrival_s = the
// out-of-place time, no delay. Rows with size 0 or with wrong elements are left out and
// returned in `skipped`.
std::vector<MeasuredRun> nccl_tests_runs(const NcclTestsLog& log, std::string_view name,
                                         const std::string& algorithm, std::optional<int> ranks,
                                         std::vector<SkippedRows>& skipped);

}  // namespace ssim::calib
