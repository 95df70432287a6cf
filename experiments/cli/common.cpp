// Helpers shared by the subcommands: flag checks, the --max-memory option and the warning
// when the alpha-beta model ignores shared links.
#include <cstdio>
#include <algorithm>
#include <cerrno>
#include <charconv>
#include <chrono>
#include <cmath>
#include <cstdlib>
#include <iostream>
#include <limits>
#include <memory>
#include <optional>
#include <string>

#include "common/error.hpp"
#include "common/memory_budget.hpp"
#include "common/time_budget.hpp"
#include "common/units.hpp"
#include "experiments/cli/commands.hpp"
#include "experiments/config/resource_check.hpp"
#include "experiments/runner/experiment.hpp"

namespace ssim::experiments {
namespace {

CLI::Validator sign_check(bool zero_ok) {
  return CLI::Validator(
      [zero_ok](std::string& text) -> std::string {
        char* end = nullptr;
        const double v = std::strtod(text.c_str(), &end);
        if (end == text.c_str() || *end != '\0') return "";  // not a number: the conversion says so
        if (v < 0 || (!zero_ok && v == 0))
          return std::string("must be ") + (zero_ok ? ">= 0" : "> 0") + ", got " + text;
        // An int flag: past its range CLI11 would say only "Could not convert".
        long long whole = 0;
        const auto [at, ec] = std::from_chars(text.data(), text.data() + text.size(), whole);
        if (ec != std::errc() || at != text.data() + text.size() ||
            whole > std::numeric_limits<int>::max()) {
          return std::string("must be a whole number from ") + (zero_ok ? "0" : "1") + " to " +
                 std::to_string(std::numeric_limits<int>::max()) + ", got '" + text + "'";
        }
        return "";
      },
      zero_ok ? "NUMBER>=0" : "NUMBER>0");
}

// A list of indices and ranges ("0-3,7,1020-1023") as [first, last] pairs; InputError naming
// `option` and the bad token.
std::vector<std::pair<long long, long long>> parse_index_list(const std::string& option,
                                                              const std::string& text) {
  const std::string hint = " (a comma-separated list of indices and ranges, e.g. 0-3,7,1020-1023)";
  std::vector<std::pair<long long, long long>> out;
  std::size_t begin = 0;
  while (true) {
    const std::size_t comma = text.find(',', begin);
    const std::string token =
        text.substr(begin, comma == std::string::npos ? std::string::npos : comma - begin);
    auto number = [&](const std::string& part) {
      if (part.empty() || part.size() > 12 ||
          part.find_first_not_of("0123456789") != std::string::npos)
        throw InputError(option + ": bad token '" + token + "' in '" + text + "'" + hint);
      return std::stoll(part);
    };
    const std::size_t dash = token.find('-');
    const long long first = number(token.substr(0, dash));
    const long long last = dash == std::string::npos ? first : number(token.substr(dash + 1));
    if (last < first)
      throw InputError(option + ": bad token '" + token + "' in '" + text +
                       "': the range ends before it starts");
    out.emplace_back(first, last);
    if (comma == std::string::npos) break;
    begin = comma + 1;
  }
  return out;
}

// Flags per index in [0, count); InputError naming `option` and the token past the end.
std::vector<char> index_flags(const std::string& option, const std::string& text,
                              const std::vector<std::pair<long long, long long>>& list,
                              long long count, const char* what) {
  std::vector<char> flags(static_cast<std::size_t>(count), 0);
  for (const auto& [first, last] : list) {
    if (last >= count) {
      throw InputError(option + ": " + what + " " + std::to_string(last) + " in '" + text +
                       "' is past the last " + what + " (" + std::to_string(count - 1) + ")");
    }
    for (long long i = first; i <= last; ++i) flags[static_cast<std::size_t>(i)] = 1;
  }
  return flags;
}

// "T0:T1" with units, either end optional.
void parse_window(const std::string& text, sim::TraceSelection& select) {
  const std::size_t colon = text.find(':');
  if (colon == std::string::npos || text.find(':', colon + 1) != std::string::npos ||
      text.size() == 1) {
    throw InputError("--trace-window: bad token '" + text +
                     "' (FROM:TO with units, either end optional, e.g. 2ms:3.5ms, 2ms: or :500us)");
  }
  auto end = [&](const std::string& part) -> std::optional<Seconds> {
    if (part.empty()) return std::nullopt;
    try {
      return parse_time(part);
    } catch (const InputError& e) {
      throw InputError("--trace-window: bad token '" + part + "' in '" + text + "': " + e.what());
    }
  };
  select.from = end(text.substr(0, colon));
  select.to = end(text.substr(colon + 1));
  if (select.from && select.to && *select.to < *select.from)
    throw InputError("--trace-window: '" + text + "' ends before it starts");
}

// "ranks 0-31" for a sorted range.
std::string range_text(int first, int last) {
  return first == last ? std::to_string(first) : std::to_string(first) + "-" + std::to_string(last);
}

// The refusal of a trace above --trace-max-size: its estimate, and a rank range (from the
// first selected rank) that fits.
std::string refusal(const sim::TraceEstimate& e, const sim::TraceSelection& select,
                    std::uint64_t limit, const std::string& limit_text, const std::string& path) {
  std::string msg = path + ": the trace would hold about " +
                    format_memory(static_cast<double>(e.bytes)) + " (" + std::to_string(e.events) +
                    " events), above --trace-max-size " + limit_text + "; ";
  const int n = static_cast<int>(e.rank_bytes.size());
  std::uint64_t selected = 0;
  int first = -1;
  for (int r = 0; r < n; ++r) {
    if (!select.rank(r)) continue;
    selected += e.rank_bytes[static_cast<std::size_t>(r)];
    if (first < 0) first = r;
  }
  // Header and link counters do not depend on the ranks.
  const std::uint64_t fixed = e.bytes > selected ? e.bytes - selected : 0;
  std::uint64_t sum = fixed;
  int last = -1;
  for (int r = std::max(first, 0);
       r < n && sum + e.rank_bytes[static_cast<std::size_t>(r)] <= limit; ++r) {
    sum += e.rank_bytes[static_cast<std::size_t>(r)];
    last = r;
  }
  if (first >= 0 && last >= first) {
    msg += "--trace-ranks " + range_text(first, last) + " would keep about " +
           format_memory(static_cast<double>(sum)) + "; ";
  }
  if (e.link_bytes > limit / 2) {
    msg += "link counters alone take about " + format_memory(static_cast<double>(e.link_bytes)) +
           " (--trace-links K keeps the K busiest links, 0 none); ";
  }
  return msg + "--trace-rounds and --trace-window select rounds and a time span; nothing written";
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
      ->check(non_negative_number());
}

void add_trace_selection_options(CLI::App& cmd, TraceFlags& t, CLI::Option* trace) {
  cmd.add_option("--trace-ranks", t.ranks,
                 "Trace only these ranks: indices and ranges, e.g. 0-3,7,1020-1023 (default all)")
      ->needs(trace);
  cmd.add_option("--trace-rounds", t.rounds,
                 "Trace only these schedule rounds: indices and ranges, e.g. 0-9 (default all)")
      ->needs(trace);
  cmd.add_option("--trace-window", t.window,
                 "Trace only events overlapping FROM:TO (time since the first arrival, units "
                 "required, either end optional, e.g. 2ms:3.5ms); events are kept whole, not "
                 "clipped")
      ->needs(trace);
  cmd.add_option("--trace-max-size", t.max_size,
                 "Refuse a trace estimated above SIZE (default 256MiB; the message names a "
                 "selector that fits)")
      ->needs(trace);
}

void apply_trace_flags(sim::SimulationConfig& c, const TraceFlags& t, const std::string& path) {
  if (!t.ranks.empty())
    c.trace_select.ranks =
        index_flags("--trace-ranks", t.ranks, parse_index_list("--trace-ranks", t.ranks),
                    c.topology.gpu_count(), "rank");
  if (!t.rounds.empty()) {
    c.trace_select.rounds = parse_index_list("--trace-rounds", t.rounds);
    std::sort(c.trace_select.rounds.begin(), c.trace_select.rounds.end());
  }
  if (!t.window.empty()) parse_window(t.window, c.trace_select);
  std::uint64_t limit = 0;
  try {
    limit = parse_bytes(t.max_size).value;
  } catch (const InputError& e) {
    throw InputError("--trace-max-size: bad token '" + t.max_size + "': " + e.what());
  }
  // Progress: a line every 10% or 5 s for traces estimated above 50 MB.
  struct Progress {
    std::uint64_t estimate = 0;
    bool shown = false;
    double next_fraction = 0.1;
    std::chrono::steady_clock::time_point last;
  };
  auto progress = std::make_shared<Progress>();
  c.trace_estimated = [select = c.trace_select, t, path, limit,
                       progress](const sim::TraceEstimate& e) {
    for (const auto& range : select.rounds) {
      if (range.second >= e.rounds) {
        throw InputError("--trace-rounds: round " + std::to_string(range.second) + " in '" +
                         t.rounds + "' is past the last round of " + e.algorithm + " (" +
                         std::to_string(e.rounds - 1) + ")");
      }
    }
    if (e.bytes > limit) throw InputError(refusal(e, select, limit, t.max_size, path));
    if (e.bytes > 50'000'000) {
      progress->estimate = e.bytes;
      progress->shown = true;
      progress->last = std::chrono::steady_clock::now();
      std::cerr << "stragglesim: writing a trace of about "
                << format_memory(static_cast<double>(e.bytes)) << " (" << e.events << " events) to "
                << path << "\n";
    }
  };
  c.trace_progress = [progress](std::uint64_t events, std::uint64_t bytes) {
    if (!progress->shown) return;
    const auto now = std::chrono::steady_clock::now();
    const double fraction = static_cast<double>(bytes) / static_cast<double>(progress->estimate);
    if (fraction < progress->next_fraction && now - progress->last < std::chrono::seconds(5))
      return;
    while (progress->next_fraction <= fraction) progress->next_fraction += 0.1;
    progress->last = now;
    std::cerr << "stragglesim: trace: " << format_memory(static_cast<double>(bytes)) << " of about "
              << format_memory(static_cast<double>(progress->estimate)) << " written (" << events
              << " events, " << static_cast<int>(std::min(100.0, 100 * fraction)) << "%)\n";
  };
}

sim::SimulationResult write_trace(sim::SimulationConfig config, int iteration, int trace_links,
                                  const TraceFlags& options, const std::string& path,
                                  const std::string& max_memory, const std::string& max_time,
                                  const std::string& where) {
  config.iterations = iteration + 1;
  config.trace_iteration = iteration;
  if (trace_links >= 0) config.trace_links = trace_links;
  apply_trace_flags(config, options, path);
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

void require_threads_used(int jobs, int threads) {
  if (threads > 1 && threads_per_run(jobs, threads) == 1) {
    throw UsageError("--threads " + std::to_string(threads) +
                     ": the threads of one run, used only with --jobs 1 (with " +
                     (jobs > 0 ? std::to_string(jobs) + " jobs"
                               : std::string("--jobs left at the hardware threads")) +
                     " each run gets one); give --jobs 1 or leave --threads out");
  }
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

namespace {

CLI::Validator seed_check() {
  return CLI::Validator(
      [](std::string& text) -> std::string {
        long long v = 0;
        const auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), v);
        if (text.empty() || ec != std::errc() || end != text.data() + text.size() || v < 0)
          return "must be a whole number from 0 to 9223372036854775807, got '" + text + "'";
        return "";
      },
      "INT in [0, 2^63-1]");
}

}  // namespace

CLI::Option* add_seed_option(CLI::App& cmd, long long& seed, const std::string& help) {
  return cmd.add_option("--seed", seed, help)->check(seed_check());
}

CLI::Option* add_seed_option(CLI::App& cmd, std::uint64_t& seed, const std::string& help) {
  return cmd.add_option("--seed", seed, help)->check(seed_check());
}

CLI::Validator non_negative_number() { return sign_check(true); }
CLI::Validator positive_number() { return sign_check(false); }

std::string printf_text(const char* format, double value) {
  char buf[64];
  std::snprintf(buf, sizeof buf, format, value);
  return buf;
}

}  // namespace ssim::experiments
