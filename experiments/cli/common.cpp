// Helpers shared by the subcommands: flag checks, the --max-memory option and the warning
// when the alpha-beta model ignores shared links.
#include <cerrno>
#include <cmath>
#include <cstdlib>
#include <iostream>
#include <string>

#include "common/error.hpp"
#include "common/memory_budget.hpp"
#include "common/time_budget.hpp"
#include "experiments/cli/commands.hpp"
#include "experiments/runner/experiment.hpp"
#include "experiments/runner/resource_check.hpp"

namespace ssim::exp {
namespace {

CLI::Validator sign_check(bool zero_ok) {
  return CLI::Validator(
      [zero_ok](std::string& text) -> std::string {
        char* end = nullptr;
        const double v = std::strtod(text.c_str(), &end);
        if (end == text.c_str() || *end != '\0') return "";  // not a number: the conversion says so
        if (v < 0 || (!zero_ok && v == 0))
          return std::string("must be ") + (zero_ok ? ">= 0" : "> 0") + ", got " + text;
        return "";
      },
      zero_ok ? "NUMBER>=0" : "NUMBER>0");
}

}  // namespace

void add_max_memory_option(CLI::App& cmd, std::string& text) {
  cmd.add_option(
         "--max-memory", text,
         "Refuse work estimated to need more memory than SIZE, e.g. 64GiB (default: half of the "
         "physical memory)")
      ->check(CLI::Validator(
          [](std::string& value) -> std::string {
            try {
              MemoryBudget::from_flag(value);
            } catch (const InputError& e) {
              const std::string what = e.what();
              return what.substr(what.find(": ") + 2);  // CLI11 adds the option's name
            }
            return "";
          },
          "SIZE"));
}

std::vector<std::string> split_list(const std::string& flag, const std::string& text) {
  std::vector<std::string> items;
  std::size_t begin = 0;
  while (true) {
    const std::size_t comma = std::min(text.find(',', begin), text.size());
    const std::string item = text.substr(begin, comma - begin);
    if (item.empty())
      throw InputError(flag + " '" + text + "': an empty item (two commas, or a comma at an end)");
    for (const std::string& seen : items) {
      if (seen == item) throw InputError(flag + " '" + text + "': '" + item + "' is listed twice");
    }
    items.push_back(item);
    if (comma == text.size()) break;
    begin = comma + 1;
  }
  return items;
}

void require_finite_numbers(CLI::App& app) {
  for (CLI::Option* o : app.get_options()) {
    if (o->get_type_name().find("FLOAT") == std::string::npos) continue;
    o->check(CLI::Validator(
        [](std::string& text) -> std::string {
          char* end = nullptr;
          const double v = std::strtod(text.c_str(), &end);
          if (end != text.c_str() && *end == '\0' && !std::isfinite(v))
            return "must be a finite number, got '" + text + "'";
          return "";
        },
        ""));
  }
  for (CLI::App* sub : app.get_subcommands({})) require_finite_numbers(*sub);
}

void add_max_time_option(CLI::App& cmd, std::string& text) {
  cmd.add_option("--max-time", text,
                 "Refuse work estimated to take longer than DURATION, e.g. 30min, 2h, 1d (default: "
                 "1h)")
      ->check(CLI::Validator(
          [](std::string& value) -> std::string {
            try {
              TimeBudget::from_flag(value);
            } catch (const InputError& e) {
              const std::string what = e.what();
              return what.substr(what.find(": ") + 2);  // CLI11 adds the option's name
            }
            return "";
          },
          "DURATION"));
}

std::string shared_link_warning(const sim::SharedLink& s) {
  return "the alphabeta model gives every transfer a link's full bandwidth, but in " +
         s.describe() +
         ": the times are optimistic where links are shared; network: {model: flow} shares them";
}

std::string shared_link_warning(const Experiment& e,
                                const std::vector<std::vector<AlgorithmSummary>>& points) {
  std::size_t count = 0;
  std::string first;
  for (std::size_t p = 0; p < points.size(); ++p) {
    for (std::size_t a = 0; a < points[p].size() && a < e.algorithms.size(); ++a) {
      const auto& shared = points[p][a].shared_link;
      if (!shared) continue;
      if (count++ == 0) {
        first = e.algorithms[a].label +
                (e.axes.empty() ? std::string() : " at " + e.point_label(p)) + ": " +
                shared_link_warning(*shared);
      }
    }
  }
  if (count == 0) return "";
  return std::to_string(count) + " of " + std::to_string(e.run_count()) +
         " runs share links (alphabeta_shared_link in results); the first, " + first;
}

void add_retired_rank_flag(CLI::App& cmd) {
  cmd.add_option("-n")
      ->group("")  // hidden from --help
      ->each([](const std::string&) {
        throw UsageError(
            "-n is the iteration count in stragglesim (simulate, run, advise; as in nccl-tests); "
            "give the rank count with -r or --ranks");
      });
}

void add_trace_links_option(CLI::App& cmd, int& k) {
  cmd.add_option("--trace-links", k,
                 "Flow model: utilization counters in the trace for the K links that carry the "
                 "most bytes (default: every link that carries traffic; 0: none)")
      ->check(CLI::NonNegativeNumber);
}

sim::SimulationResult write_trace(sim::SimulationConfig config, int iteration, int trace_links,
                                  const std::string& path, const std::string& max_memory,
                                  const std::string& max_time, const std::string& where) {
  config.iterations = iteration + 1;
  config.trace_iteration = iteration;
  if (trace_links >= 0) config.trace_links = trace_links;
  // Written as the traced iteration runs, to a temporary that takes the name only when the run
  // succeeded (common/output_file.hpp).
  OutputFile out(path);
  config.trace_out = &out.stream();
  check_simulation_memory(MemoryBudget::from_flag(max_memory), config);
  check_simulation_time(TimeBudget::from_flag(max_time), config);
  sim::SimulationResult r;
  try {
    r = sim::run_simulation(config);
  } catch (const InputError& e) {
    throw InputError(where + ": " + e.what());
  }
  out.commit();
  return r;
}

void add_threads_option(CLI::App& cmd, int& threads, const std::string& extra) {
  cmd.add_option("--threads", threads,
                 "Threads of the alpha-beta dataflow pass within a simulation (default 1: more "
                 "cost CPU and gain little on a shared machine, docs/scale.md; results are "
                 "identical for any count)" +
                     extra)
      ->check(CLI::Validator(
          [](std::string& text) -> std::string {
            char* end = nullptr;
            errno = 0;
            const long v = std::strtol(text.c_str(), &end, 10);
            if (end == text.c_str() || *end != '\0' || errno != 0 || v < 1 || v > 1024)
              return "must be a whole number from 1 to 1024, got '" + text + "'";
            return "";
          },
          "INT in [1, 1024]"));
}

CLI::Validator non_negative_number() { return sign_check(true); }
CLI::Validator positive_number() { return sign_check(false); }

}  // namespace ssim::exp
