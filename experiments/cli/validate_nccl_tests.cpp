// `stragglesim validate LOG --topology T` where LOG is nccl-tests' all_reduce_perf output (its
// text log or -J JSON): every size's measured out-of-place and in-place times against the
// simulated time of one algorithm on the topology (calibrate.cpp hands the log over here).
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <functional>
#include <iostream>
#include <map>
#include <sstream>

#include "calibration/calibration.hpp"
#include "calibration/nccl_tests.hpp"
#include "common/error.hpp"
#include "common/stats.hpp"
#include "common/units.hpp"
#include "experiments/cli/commands.hpp"
#include "schema/result_csv.hpp"

namespace ssim::experiments {
namespace {

// Sizes from here on are "large" in the summary (the split: >= 1 MiB and below).
constexpr std::uint64_t kLargeBytes = 1ull << 20;

const alg::AlgorithmInfo& log_algorithm(const std::string& name) {
  try {
    return alg::find_algorithm(name);  // "did you mean" for a near miss
  } catch (const InputError& e) {
    throw InputError(std::string("--algorithm: ") + e.what());
  }
}

// One compared size.
struct Compared {
  const calib::NcclTestsRow* row = nullptr;
  double simulated_s = 0;
  double ratio_out = 0;            // simulated / measured out-of-place
  std::optional<double> ratio_in;  // simulated / measured in-place
};

// "median |error| 2.10% (12 rows), ratio 0.94 .. 1.02" over the rows `pick` selects; "" when
// none does.
std::string summary(const std::vector<Compared>& rows, bool in_place,
                    const std::function<bool(const Compared&)>& pick) {
  std::vector<double> errors, ratios;
  for (const Compared& c : rows) {
    if (!pick(c)) continue;
    if (in_place && !c.ratio_in) continue;
    const double r = in_place ? *c.ratio_in : c.ratio_out;
    ratios.push_back(r);
    errors.push_back(std::fabs(r - 1));
  }
  if (errors.empty()) return "";
  const auto [lo, hi] = std::minmax_element(ratios.begin(), ratios.end());
  return "median |error| " + printf_text("%.2f%%", 100 * quantile(errors, 0.5)) + " (" +
         std::to_string(errors.size()) + " size" + (errors.size() == 1 ? "" : "s") + "), ratio " +
         printf_text("%.3f", *lo) + " .. " + printf_text("%.3f", *hi);
}

}  // namespace

void validate_nccl_tests_log(const NcclLogValidation& a, const topo::Topology& topology,
                             SecondsPerByte gamma, const std::string& gamma_from) {
  const calib::NcclTestsLog log = calib::parse_nccl_tests(a.text, a.name);
  const int gpus = topology.gpu_count();

  // The rank count: the log's, or, where its rows allow a range, the topology's if it is in it.
  int ranks = 0;
  std::string ranks_text;
  if (log.ranks) {
    ranks = *log.ranks;
    ranks_text = calib::describe_ranks(log);
    if (ranks != gpus) {
      const std::string where =
          log.ranks_line > 0 ? a.name + ":" + std::to_string(log.ranks_line) : a.name;
      throw InputError(where + ": the log ran " + ranks_text + ", and the topology " +
                       a.topology_path + " has " + std::to_string(gpus) +
                       " GPUs: give a topology of " + std::to_string(ranks) +
                       " GPUs (nodes x gpus_per_node)");
    }
  } else {
    if (gpus < log.rows_min_ranks || gpus > log.rows_max_ranks) {
      throw InputError(a.name + ": the rows' busbw/algbw = 2(n-1)/n allow n = " +
                       std::to_string(log.rows_min_ranks) + ".." +
                       std::to_string(log.rows_max_ranks) + " ranks, and the topology " +
                       a.topology_path + " has " + std::to_string(gpus) + " GPUs");
    }
    ranks = gpus;
    ranks_text = std::to_string(gpus) + " ranks (the topology's; the log's rows allow " +
                 std::to_string(log.rows_min_ranks) + ".." + std::to_string(log.rows_max_ranks) +
                 " and it has no complete device listing)";
  }

  const alg::AlgorithmInfo& info = log_algorithm(a.algorithm);
  if (!info.supports_ranks(ranks)) {
    throw InputError("--algorithm " + info.name + ": does not run on " + std::to_string(ranks) +
                     " ranks (" + info.supported_ranks + ")");
  }
  // -O items: only for the compared algorithm (an item for another would be ignored).
  calib::StatedOptions stated;
  for (const std::string& item : a.options) calib::add_stated_option(stated, item);
  for (const auto& [algorithm, values] : stated) {
    if (algorithm != info.name) {
      throw InputError("-O " + algorithm + ":" + values.begin()->first + "=" +
                       values.begin()->second + ": the log is compared with " + info.name +
                       " (--algorithm), not " + algorithm);
    }
  }
  alg::Options options;
  if (auto it = stated.find(info.name); it != stated.end()) {
    for (const auto& [key, value] : it->second) options.set(key, value);
  }
  // A node structure the topology has, for the algorithms that take one (as `run` does).
  const bool takes_nodes = info.takes("gpus_per_node");
  if (takes_nodes && topology.gpus_per_node > 0 && !options.has("gpus_per_node"))
    options.set("gpus_per_node", std::to_string(topology.gpus_per_node));
  if (info.check_options) {
    try {
      info.check_options(ranks, options);
    } catch (const InputError& e) {
      throw InputError("-O " + info.name + ": " + e.what());
    }
  }
  const sim::NetworkKind network =
      sim::parse_network_kind(a.network.empty() ? kValidateNcclTestsNetwork : a.network);

  std::cout << "validate: " << a.name << " (nccl-tests " << (log.json ? "JSON" : "log")
            << (log.program.empty() ? "" : ", " + log.program)
            << (log.nccl_version.empty() ? ", NCCL version not printed"
                                         : ", NCCL " + log.nccl_version)
            << ") against " << topology.name << " (" << a.topology_path << "): " << gpus
            << " GPUs, " << sim::to_string(network) << " model"
            << (a.network.empty() ? " (the default for nccl-tests logs)" : "")
            << (a.steps == "per_round" ? ", per-round steps" : "") << ", gamma "
            << printf_text("%.6g ns/B", gamma.value * 1e9) << " (" << gamma_from << ")\n";
  if (!log.device.empty()) std::cout << "measured on: " << log.device << "\n";
  std::cout << "ranks: " << ranks_text << "\n";
  const std::string options_text = schema::canonical_options(options.values());
  std::cout << "model: " << info.name << (options_text.empty() ? "" : " (" + options_text + ")")
            << (a.algorithm_given ? "" : " (the default --algorithm)") << "\n";

  std::vector<calib::SkippedRows> skipped;
  auto skip = [&](const std::string& reason, int line) {
    calib::add_skipped(skipped, reason, line);
  };
  std::map<std::uint64_t, double> simulated;  // per size: the simulation is deterministic
  std::vector<Compared> compared;
  for (const calib::NcclTestsRow& row : log.rows) {
    if (row.bytes == 0) {
      skip("size 0 rows", row.line);
      continue;
    }
    if ((row.out_of_place.wrong && *row.out_of_place.wrong > 0) ||
        (row.in_place && row.in_place->wrong && *row.in_place->wrong > 0)) {
      skip("rows with wrong elements (#wrong > 0)", row.line);
      continue;
    }
    auto it = simulated.find(row.bytes);
    if (it == simulated.end()) {
      sim::SimulationConfig c;
      c.topology = topology;
      c.network = network;
      c.pipelined_kernels = a.steps != "per_round";
      c.gamma = gamma;
      c.algorithm = info.name;
      c.options = options;
      c.size = Bytes{row.bytes};
      try {
        it =
            simulated.emplace(row.bytes, sim::run_simulation(c).iterations.front().completion.value)
                .first;
      } catch (const InputError& e) {
        throw InputError(a.name + ":" + std::to_string(row.line) + ": " + e.what());
      }
    }
    Compared c;
    c.row = &row;
    c.simulated_s = it->second;
    c.ratio_out = c.simulated_s / (row.out_of_place.time_us * 1e-6);
    if (row.in_place) c.ratio_in = c.simulated_s / (row.in_place->time_us * 1e-6);
    compared.push_back(c);
  }
  if (compared.empty()) {
    std::string why;
    for (const calib::SkippedRows& s : skipped) why += (why.empty() ? "" : "; ") + s.reason;
    throw InputError(a.name + ": no row to compare (" + why + ")");
  }

  char buf[200];
  std::snprintf(buf, sizeof buf, "%5s  %10s | %12s %12s %7s | %12s %7s\n", "line", "size",
                "out-of-place", "simulated", "ratio", "in-place", "ratio");
  std::cout << buf;
  for (const Compared& c : compared) {
    const calib::NcclTestsRow& r = *c.row;
    std::snprintf(buf, sizeof buf, "%5d  %10s | %12s %12s %7s | %12s %7s\n", r.line,
                  format_bytes(Bytes{r.bytes}).c_str(),
                  format_time(Seconds{r.out_of_place.time_us * 1e-6}).c_str(),
                  format_time(Seconds{c.simulated_s}).c_str(), printf_text("%.3f", c.ratio_out).c_str(),
                  r.in_place ? format_time(Seconds{r.in_place->time_us * 1e-6}).c_str() : "-",
                  c.ratio_in ? printf_text("%.3f", *c.ratio_in).c_str() : "-");
    std::cout << buf;
  }
  std::cout << "compared " << compared.size() << " size" << (compared.size() == 1 ? "" : "s")
            << ", simulated " << simulated.size() << " run" << (simulated.size() == 1 ? "" : "s")
            << "; ratio = simulated / measured, |error| = |ratio - 1|\n";
  for (const calib::SkippedRows& s : skipped) {
    std::cout << "skipped " << s.lines.size() << " row" << (s.lines.size() == 1 ? "" : "s") << ": "
              << s.reason << "\n";
  }
  const auto large = [](const Compared& c) { return c.row->bytes >= kLargeBytes; };
  const auto small = [](const Compared& c) { return c.row->bytes < kLargeBytes; };
  for (const auto& [label, pick] :
       std::vector<std::pair<const char*, std::function<bool(const Compared&)>>>{
           {"sizes >= 1 MiB", large}, {"sizes <  1 MiB", small}}) {
    const std::string out = summary(compared, false, pick);
    const std::string in = summary(compared, true, pick);
    std::cout << "  " << label << ": ";
    if (out.empty()) {
      std::cout << "no rows\n";
      continue;
    }
    std::cout << "out-of-place " << out << "\n";
    if (!in.empty())
      std::cout << "  " << std::string(std::string(label).size(), ' ') << "  in-place     " << in
                << "\n";
  }

  if (!a.output.empty()) {
    std::ostringstream csv;
    csv << "line,bytes,count,type,ranks,algorithm,options,network,measured_out_of_place_s,"
           "measured_in_place_s,simulated_s,ratio_out_of_place,ratio_in_place\n";
    for (const Compared& c : compared) {
      const calib::NcclTestsRow& r = *c.row;
      csv << r.line << "," << r.bytes << "," << r.count << "," << schema::csv_field(r.type) << ","
          << ranks << "," << info.name << "," << schema::csv_field(options_text) << ","
          << sim::to_string(network) << ","
          << schema::csv_number(r.out_of_place.time_us * 1e-6) << ","
          << (r.in_place ? schema::csv_number(r.in_place->time_us * 1e-6) : std::string()) << ","
          << schema::csv_number(c.simulated_s) << "," << schema::csv_number(c.ratio_out) << ","
          << (c.ratio_in ? schema::csv_number(*c.ratio_in) : std::string()) << "\n";
    }
    write_output(a.output, csv.str());
    std::cout << "wrote " << a.output << ": " << compared.size() << " rows\n";
  }
}

}  // namespace ssim::experiments
