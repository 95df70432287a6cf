#include "gpu_backend/run_table.hpp"

#include <algorithm>
#include <cstdio>
#include <optional>
#include <vector>
#include <nlohmann/json.hpp>

#include "algorithms/registry.hpp"
#include "common/error.hpp"
#include "common/suggest.hpp"
#include "schema/result_csv.hpp"

namespace ssim::gpu {
namespace {

std::string line(const char* format, auto... args) {
  char buf[256];
  std::snprintf(buf, sizeof buf, format, args...);
  return buf;
}

// `v` in at most `width` characters where it can be: two decimals while they fit, then one,
// then none, then an exponent (nccl-tests' table keeps its columns this way).
std::string fit(double v, int width) {
  int digits = 0;
  for (double p = 1; v >= p && digits < 40; p *= 10) ++digits;
  if (digits < width - 2) return line("%*.2f", width, v);
  if (digits < width - 1) return line("%*.1f", width, v);
  if (digits < width + 1) return line("%*.0f", width, v);
  return line("%*.1e", width, v);
}

}  // namespace

double SizeRow::algbw_GBps() const {
  return mean_after_last_s > 0 ? static_cast<double>(bytes) / mean_after_last_s / 1e9 : 0.0;
}

double SizeRow::busbw_GBps() const { return algbw_GBps() * schema::allreduce_bus_factor(ranks); }

std::string run_table_header() {
  return line("# %10s  %12s  %8s  %6s  %6s  %7s  %6s  %6s  %6s  %10s\n", "size", "count", "type",
              "redop", "root", "time", "algbw", "busbw", "#wrong", "after-last") +
         line("# %10s  %12s  %8s  %6s  %6s  %7s  %6s  %6s  %6s  %10s\n", "(B)", "(elements)", "",
              "", "", "(us)", "(GB/s)", "(GB/s)", "", "(us)");
}

std::string format_size_row(const SizeRow& row) {
  const std::string wrong_text = row.check ? std::to_string(row.wrong) : std::string("N/A");
  return line("%12llu  %12llu  %8s  %6s  %6d  %s  %s  %s  %6s  %s\n",
              static_cast<unsigned long long>(row.bytes),
              static_cast<unsigned long long>(row.count), std::string(to_string(row.dtype)).c_str(),
              "sum", -1, fit(row.time_column_s() * 1e6, 7).c_str(),
              fit(row.algbw_GBps(), 6).c_str(), fit(row.busbw_GBps(), 6).c_str(),
              wrong_text.c_str(), fit(row.mean_after_last_s * 1e6, 10).c_str());
}

std::string run_table_footer(double average_busbw_GBps, bool check, std::uint64_t total_wrong) {
  std::string out =
      line("# Avg bus bandwidth    : %.3f GB/s (after the last arrival)\n", average_busbw_GBps);
  if (check) {
    out += "# Out of bounds values : " + std::to_string(total_wrong) +
           (total_wrong ? " FAILED" : " OK") + "\n";
  }
  return out;
}

std::string run_json(const RunJsonHeader& h, const std::vector<SizeRow>& rows) {
  using nlohmann::json;
  json devices = json::array();
  for (int r = 0; r < h.ranks; ++r) {
    devices.push_back({{"rank", r}, {"group", 0}, {"device_info", h.device}});
  }
  json config = {{"nthreads", 1},
                 {"ngpus", 1},
                 {"ranks", h.ranks},
                 {"iterations", h.iterations},
                 {"warmup_iters", h.warmup},
                 {"validation", h.check_iterations},
                 {"average", h.average},
                 {"delay_s", h.delay_s},
                 {"devices", devices}};
  config["straggler"] = h.straggler ? json(*h.straggler) : json(nullptr);
  json results = json::array();
  double busbw_sum = 0;
  std::uint64_t wrong = 0;
  for (const SizeRow& r : rows) {
    json out_of_place = {
        {"time", r.time_column_s() * 1e6}, {"alg_bw", r.algbw_GBps()}, {"bus_bw", r.busbw_GBps()}};
    out_of_place["nwrong"] = r.check ? json(static_cast<double>(r.wrong)) : json(nullptr);
    results.push_back({{"size", r.bytes},
                       {"count", r.count},
                       {"type", std::string(to_string(r.dtype))},
                       {"redop", "sum"},
                       {"root", "-1"},
                       {"out_of_place", out_of_place},
                       {"after_last_arrival", r.mean_after_last_s * 1e6},
                       {"experiment_name", "AllReduce"}});
    busbw_sum += r.busbw_GBps();
    wrong += r.wrong;
  }
  json doc = {{"version", 2},
              {"program", h.program},
              {"algorithm", h.algorithm},
              {"args", h.args},
              {"config", config},
              {"results", results},
              {"out_of_bounds", {{"count", wrong}, {"okay", wrong == 0 ? "true" : "false"}}},
              {"average_bus_bandwidth",
               {{"bandwidth", rows.empty() ? 0.0 : busbw_sum / static_cast<double>(rows.size())},
                {"okay", "unchecked"}}}};
  if (!h.nccl_version.empty()) doc["nccl_version_text"] = h.nccl_version;
  return doc.dump(2) + "\n";
}

void require_known_algorithm(const std::string& name, const std::string& extra) {
  if (name == extra) return;
  std::string names;
  std::vector<std::string> known{extra};
  for (const alg::AlgorithmInfo& a : alg::algorithms()) {
    if (a.name == name) return;
    names += a.name + ", ";
    known.push_back(a.name);
  }
  // `extra` once: the registry has an nccl of its own beside stragglesim-gpu's.
  if (std::find(known.begin() + 1, known.end(), extra) == known.end()) {
    names += extra;
  } else {
    names.resize(names.size() - 2);  // the last ", "
  }
  const std::optional<std::string> near = closest_name(name, known);
  throw InputError("unknown algorithm '" + name + "' (" +
                   (near ? "did you mean '" + *near + "'? " : "") + "valid: " + names + ")");
}

}  // namespace ssim::gpu
