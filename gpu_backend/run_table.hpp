// The nccl-tests-style table the measured drivers (stragglesim-gpu run, stragglesim-mpi) print:
// one column header, one row per size, and the closing lines. Host code only.
//
//   out << run_table_header();
//   SizeRow row{.bytes = b, .count = n, .dtype = DType::float32, .ranks = 8,
//               .mean_time_s = t, .mean_after_last_s = a, .check = true, .wrong = 0};
//   out << format_size_row(row);            // row.busbw_GBps() feeds the average
//   out << run_table_footer(busbw_sum / sizes, /*check=*/true, total_wrong);
#pragma once

#include <cstdint>
#include <string>

#include "gpu_backend/plan.hpp"

namespace ssim::gpu {

struct SizeRow {
  std::uint64_t bytes = 0;
  std::uint64_t count = 0;  // elements per rank
  DType dtype = DType::float32;
  int ranks = 0;
  double mean_time_s = 0;        // first arrival to last finish
  double mean_after_last_s = 0;  // last arrival to last finish
  bool check = true;
  std::uint64_t wrong = 0;

  // bytes / mean after-last time (0 when that time is 0), and times the AllReduce bus factor.
  double algbw_GBps() const;
  double busbw_GBps() const;
};

std::string run_table_header();
std::string format_size_row(const SizeRow& row);
std::string run_table_footer(double average_busbw_GBps, bool check, std::uint64_t total_wrong);

// InputError "unknown algorithm 'x' (valid: ring, ..., <extra>)" unless `name` is a registered
// algorithm or `extra` (the driver's own baseline, e.g. "nccl" or "mpi").
void require_known_algorithm(const std::string& name, const std::string& extra);

}  // namespace ssim::gpu
