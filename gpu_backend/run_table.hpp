// The nccl-tests-style table the measured drivers (stragglesim-gpu run, stragglesim-mpi) print,
// and the same rows as JSON (-J): one column header, one row per size, the closing lines.
// Host code only.
//
//   out << run_table_header();
//   SizeRow row{.bytes = b, .count = n, .dtype = DType::float32, .ranks = 8,
//               .mean_time_s = t, .mean_after_last_s = a, .check = true, .wrong = 0};
//   out << format_size_row(row);            // row.busbw_GBps() feeds the average
//   out << run_table_footer(busbw_sum / sizes, /*check=*/true, total_wrong);
//   write_output_json(path, header, rows);  // -J
//
// Columns, as nccl-tests' out-of-place ones plus one:
//   size (B), count (elements), type, redop, root, time (us), algbw (GB/s), busbw (GB/s),
//   #wrong, after-last (us)
// time is nccl-tests' measure, each rank's own start-to-finish time combined over ranks as -a
// says (rank_time_s; without it the first-arrival-to-last-finish time); after-last is the
// last arrival to the last finish. algbw and busbw use after-last (as the result CSV, and the
// StragglAR paper): with a straggler they measure the collective, not the delay; without one
// the times agree. The header is two lines (names, then units) as nccl-tests prints it, so
// `stragglesim calibrate` reads a saved table as an nccl-tests log.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "lowering/plan.hpp"

namespace ssim::gpu {

struct SizeRow {
  std::uint64_t bytes = 0;
  std::uint64_t count = 0;  // elements per rank
  lowering::DType dtype = lowering::DType::float32;
  int ranks = 0;
  double mean_time_s = 0;        // first arrival to last finish
  double mean_after_last_s = 0;  // last arrival to last finish
  bool check = true;
  std::uint64_t wrong = 0;
  // Each rank's own start-to-finish time, combined over ranks (-a) and averaged over the
  // iterations; the time column. Empty: the time column shows mean_time_s.
  std::optional<double> rank_time_s = std::nullopt;

  // bytes / mean after-last time (0 when that time is 0), and times the AllReduce bus factor.
  double algbw_GBps() const;
  double busbw_GBps() const;
  double time_column_s() const { return rank_time_s.value_or(mean_time_s); }
};

std::string run_table_header();
std::string format_size_row(const SizeRow& row);
std::string run_table_footer(double average_busbw_GBps, bool check, std::uint64_t total_wrong);

// What the JSON says about the run besides its rows.
struct RunJsonHeader {
  std::string program;    // "stragglesim-mpi"
  std::string algorithm;  // the schedule (or baseline) that ran
  std::vector<std::string> args;
  std::string device;
  int ranks = 0;
  int iterations = 0;
  int warmup = 0;
  int check_iterations = 0;
  std::string average;  // "mean", ...
  double delay_s = 0;
  std::optional<int> straggler;
  std::string nccl_version;  // empty when none
};

// nccl-tests' -J layout (file version 2) where it applies: {"version", "program", "algorithm",
// "args", "nccl_version", "config": {"nthreads": 1, "ngpus": 1, "devices": [one per rank],
// ...}, "results": [{"size", "count", "type", "redop", "root", "out_of_place": {"time",
// "alg_bw", "bus_bw", "nwrong"}, "after_last_arrival": us, "experiment_name": "AllReduce"}],
// "out_of_bounds", "average_bus_bandwidth"}; times in microseconds.
std::string run_json(const RunJsonHeader& header, const std::vector<SizeRow>& rows);

// InputError "unknown algorithm 'x' (valid: ring, ..., <extra>)" unless `name` is a registered
// algorithm or `extra` (the driver's own baseline, e.g. "nccl" or "mpi").
void require_known_algorithm(const std::string& name, const std::string& extra);

}  // namespace ssim::gpu
