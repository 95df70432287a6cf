#include "gpu_backend/run_table.hpp"

#include <cstdio>

#include "algorithms/registry.hpp"
#include "common/error.hpp"
#include "schema/result_csv.hpp"

namespace ssim::gpu {
namespace {

std::string line(const char* format, auto... args) {
  char buf[256];
  std::snprintf(buf, sizeof buf, format, args...);
  return buf;
}

}  // namespace

double SizeRow::algbw_GBps() const {
  return mean_after_last_s > 0 ? static_cast<double>(bytes) / mean_after_last_s / 1e9 : 0.0;
}

double SizeRow::busbw_GBps() const { return algbw_GBps() * schema::allreduce_bus_factor(ranks); }

std::string run_table_header() {
  return line("# %12s %12s %8s %12s %15s %12s %12s %8s\n", "size", "count", "type", "time(us)",
              "after-last(us)", "algbw(GB/s)", "busbw(GB/s)", "#wrong");
}

std::string format_size_row(const SizeRow& row) {
  const std::string wrong_text = row.check ? std::to_string(row.wrong) : std::string("N/A");
  return line("  %12llu %12llu %8s %12.2f %15.2f %12.2f %12.2f %8s\n",
              static_cast<unsigned long long>(row.bytes), static_cast<unsigned long long>(row.count),
              std::string(to_string(row.dtype)).c_str(), row.mean_time_s * 1e6,
              row.mean_after_last_s * 1e6, row.algbw_GBps(), row.busbw_GBps(), wrong_text.c_str());
}

std::string run_table_footer(double average_busbw_GBps, bool check, std::uint64_t total_wrong) {
  std::string out = line("# Avg bus bandwidth    : %.3f GB/s (after the last arrival)\n", average_busbw_GBps);
  if (check) {
    out += "# Out of bounds values : " + std::to_string(total_wrong) + (total_wrong ? " FAILED" : " OK") + "\n";
  }
  return out;
}

void require_known_algorithm(const std::string& name, const std::string& extra) {
  if (name == extra) return;
  std::string names;
  for (const alg::AlgorithmInfo& a : alg::algorithms()) {
    if (a.name == name) return;
    names += a.name + ", ";
  }
  throw InputError("unknown algorithm '" + name + "' (valid: " + names + extra + ")");
}

}  // namespace ssim::gpu
