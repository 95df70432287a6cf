#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <iostream>
#include <nlohmann/json.hpp>
#include <optional>
#include <sstream>

#include "common/error.hpp"
#include "common/interrupt.hpp"
#include "common/memory_budget.hpp"
#include "experiments/cli/commands.hpp"
#include "experiments/config/config.hpp"
#include "experiments/output/experiment_output.hpp"
#include "experiments/runner/experiment.hpp"
#include "experiments/runner/resource_check.hpp"

namespace ssim::exp {
namespace {

struct SimulateArgs {
  std::string config;
  bool json = false;
  bool per_rank = false;
  std::string trace;
  int trace_iteration = 0;
  int trace_links = -1;                                 // -1: every link that carries traffic
  std::string trace_ranks, trace_rounds, trace_window;  // selectors ("": all)
  std::string trace_max_size = "256MiB";
  int iterations = 0;   // 0: as configured
  long long seed = -1;  // -1: as configured
  std::string max_memory;
  std::string max_time;
  int threads = 1;  // one: more cost CPU on a shared machine (docs/scale.md)
};

std::string fixed(double v, int digits) {
  char buf[64];
  std::snprintf(buf, sizeof buf, std::fabs(v) < 1e12 ? "%.*f" : "%.*e", digits,
                v);  // no 300-digit numbers
  return buf;
}

nlohmann::json resolved_config(const sim::SimulationConfig& c, const std::string& path,
                               const std::string& schedule_file) {
  nlohmann::json j = simulation_config_json(c);
  j["file"] = path;
  if (!schedule_file.empty()) j["schedule_file"] = schedule_file;
  return j;
}

std::string summary_json(const sim::SimulationConfig& c, const sim::SimulationResult& r,
                         const std::string& path, const std::string& schedule_file) {
  nlohmann::json j;
  j["version"] = STRAGGLESIM_VERSION_STRING;
  j["config"] = resolved_config(c, path, schedule_file);
  j["schedule"] = {{"algorithm", r.algorithm}, {"ranks", r.ranks},
                   {"chunks", r.chunks},       {"rounds", r.rounds},
                   {"transfers", r.transfers}, {"straggler_aware", r.straggler_aware}};
  nlohmann::json its = nlohmann::json::array();
  for (const sim::IterationSummary& it : r.iterations) {
    its.push_back({{"iteration", it.iteration},
                   {"completion_s", it.completion.value},
                   {"after_last_arrival_s", it.after_last_arrival.value},
                   {"algbw_GBps", it.algbw.value / 1e9},
                   {"busbw_GBps", it.busbw.value / 1e9},
                   {"last_rank", it.last_rank},
                   {"predicted_straggler", it.predicted_straggler},
                   {"chosen", it.chosen.empty() ? r.algorithm : it.chosen}});
    if (!it.finish.empty()) {
      nlohmann::json arrival = nlohmann::json::array(), finish = nlohmann::json::array();
      for (std::size_t k = 0; k < it.finish.size(); ++k) {
        arrival.push_back(it.arrival[k].value);
        finish.push_back(it.finish[k].value);
      }
      its.back()["arrival_s"] = std::move(arrival);
      its.back()["finish_s"] = std::move(finish);
    }
  }
  j["iterations"] = std::move(its);
  j["mean_completion_s"] = r.mean_completion.value;
  j["mean_after_last_arrival_s"] = r.mean_after_last_arrival.value;
  j["algbw_GBps"] = r.algbw.value / 1e9;
  j["busbw_GBps"] = r.busbw.value / 1e9;
  j["prediction_accuracy"] = r.prediction_accuracy;
  j["fallback_fraction"] = r.fallback_fraction;
  // alpha-beta only: true when a round's transfers share a link the model does not share.
  j["alphabeta_shared_link"] = r.shared_link.has_value();
  if (r.shared_link) {
    j["shared_link"] = {{"round", r.shared_link->round},
                        {"link", r.shared_link->link},
                        {"name", r.shared_link->link_name},
                        {"transfers", r.shared_link->transfers}};
  }
  nlohmann::json links = nlohmann::json::array();
  for (std::size_t l = 0; l < r.link_bytes.size(); ++l) {
    if (r.link_bytes[l] <= 0) continue;
    const topo::Link& link = c.topology.link(static_cast<int>(l));
    links.push_back({{"link", l},
                     {"from", c.topology.node(link.from).name},
                     {"to", c.topology.node(link.to).name},
                     {"class", link.link_class},
                     {"bytes", std::llround(r.link_bytes[l])},
                     {"utilization", r.link_utilization[l]}});
  }
  j["links"] = std::move(links);
  return j.dump(2) + "\n";
}

std::string summary_table(const sim::SimulationConfig& c, const sim::SimulationResult& r,
                          const std::string& schedule_file) {
  std::ostringstream os;
  os << r.algorithm
     << (schedule_file.empty() ? std::string() : " (schedule file " + schedule_file + ")") << " on "
     << c.topology.name << ": " << r.ranks << " ranks, " << format_bytes(c.size) << ", "
     << sim::to_string(c.network) << " model, " << r.rounds << " rounds, " << r.transfers
     << " transfers\n";
  os << "delays: " << c.delays.describe() << "; prediction "
     << (c.adaptive_fallbacks.empty() ? std::string(sim::to_string(c.policy))
                                      : std::string("adaptive"))
     << (c.policy == sim::StragglerPolicy::eager && r.straggler_aware
             ? " (detection " +
                   format_time(c.detection.value_or(sim::default_detection(c.topology))) + ")"
             : std::string())
     << "; seed " << c.seed << "\n\n";
  os << "iter   completion  after-last    algbw GB/s  busbw GB/s  last  predicted\n";
  const std::size_t shown = std::min<std::size_t>(r.iterations.size(), 20);
  auto row = [&](const std::string& label, double comp, double after, double algbw, double busbw,
                 const std::string& tail) {
    const char* format = "%-6s %11s %11s %12s %11s  %s\n";
    const std::string c = format_time(Seconds{comp}), a = format_time(Seconds{after});
    const std::string g = fixed(algbw / 1e9, 2), b = fixed(busbw / 1e9, 2);
    std::string line(
        static_cast<std::size_t>(std::snprintf(nullptr, 0, format, label.c_str(), c.c_str(),
                                               a.c_str(), g.c_str(), b.c_str(), tail.c_str())),
        '\0');
    std::snprintf(line.data(), line.size() + 1, format, label.c_str(), c.c_str(), a.c_str(),
                  g.c_str(), b.c_str(), tail.c_str());
    os << line;
  };
  for (std::size_t i = 0; i < shown; ++i) {
    const sim::IterationSummary& it = r.iterations[i];
    char tail[64];
    std::snprintf(tail, sizeof tail, "%4d  %9d", it.last_rank, it.predicted_straggler);
    row(std::to_string(it.iteration), it.completion.value, it.after_last_arrival.value,
        it.algbw.value, it.busbw.value, tail);
  }
  if (r.iterations.size() > shown)
    os << "... " << r.iterations.size() - shown << " more iterations\n";
  row("mean", r.mean_completion.value, r.mean_after_last_arrival.value, r.algbw.value,
      r.busbw.value,
      r.straggler_aware ? "prediction accuracy " + fixed(100 * r.prediction_accuracy, 1) + "%"
                        : "");
  if (r.straggler_aware && r.no_late_iterations > 0) {
    os << "no rank late in " << r.no_late_iterations << " of " << r.iterations.size()
       << " iterations (every arrival within 1 ns): the schedule ran for its default straggler, "
          "rank "
       << r.default_straggler << "\n";
  }
  if (!c.adaptive_fallbacks.empty() && r.straggler_aware) {
    os << "adaptive: " << r.algorithm << " in " << fixed(100 * (1 - r.fallback_fraction), 1)
       << "% of the iterations, a fallback in " << fixed(100 * r.fallback_fraction, 1) << "%\n";
  }
  return os.str();
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

void run_simulate(const SimulateArgs& a) {
  if (a.per_rank && !a.json)
    throw UsageError("--per-rank needs --json (the per-rank times are only in the JSON output)");
  const ConfigReader reader(a.config);
  const Experiment e = load_experiment(reader, ConfigCommand::simulate);
  sim::SimulationConfig c = run_config(e, 0);
  const std::string schedule_file = e.algorithms[0].schedule_file;  // "": a registry algorithm
  if (a.iterations > 0) c.iterations = a.iterations;
  c.per_rank_times = a.per_rank;
  if (a.seed >= 0) c.seed = static_cast<std::uint64_t>(a.seed);
  c.threads = threads_per_run(1, a.threads);
  if (!a.trace.empty()) {
    if (a.trace_iteration >= c.iterations) {
      throw InputError("--trace-iteration " + std::to_string(a.trace_iteration) +
                       " is past the last iteration (" + std::to_string(c.iterations - 1) + ")");
    }
    c.trace_iteration = a.trace_iteration;
    if (a.trace_links >= 0) c.trace_links = a.trace_links;
  } else if (a.trace_links >= 0) {
    throw UsageError("--trace-links needs --trace FILE");
  }
  // The trace is written while the traced iteration runs, to a temporary that takes its name
  // only when the run succeeded, so it costs no memory per transfer (check_simulation_memory
  // knows).
  // Selectors and the size limit: checked before anything is simulated or written; rounds
  // against the schedule once it is known (at the estimate).
  const int ranks = c.topology.gpu_count();
  std::vector<std::pair<long long, long long>> round_list;  // sorted
  std::uint64_t limit = 0;
  // Progress: a line every 10% or 5 s for traces estimated above 50 MB.
  struct Progress {
    std::uint64_t estimate = 0;
    bool shown = false;
    double next_fraction = 0.1;
    std::chrono::steady_clock::time_point last;
  };
  auto progress = std::make_shared<Progress>();
  if (!a.trace.empty()) {
    if (!a.trace_ranks.empty())
      c.trace_select.ranks =
          index_flags("--trace-ranks", a.trace_ranks,
                      parse_index_list("--trace-ranks", a.trace_ranks), ranks, "rank");
    if (!a.trace_rounds.empty()) round_list = parse_index_list("--trace-rounds", a.trace_rounds);
    if (!a.trace_window.empty()) parse_window(a.trace_window, c.trace_select);
    try {
      limit = parse_bytes(a.trace_max_size).value;
    } catch (const InputError& e) {
      throw InputError("--trace-max-size: bad token '" + a.trace_max_size + "': " + e.what());
    }
    std::sort(round_list.begin(), round_list.end());
    c.trace_select.rounds = round_list;
    c.trace_estimated = [&c, &a, limit, progress](const sim::TraceEstimate& e) {
      for (const auto& [first, last] : c.trace_select.rounds) {
        if (last >= e.rounds) {
          throw InputError("--trace-rounds: round " + std::to_string(last) + " in '" +
                           a.trace_rounds + "' is past the last round of " + e.algorithm + " (" +
                           std::to_string(e.rounds - 1) + ")");
        }
      }
      if (e.bytes > limit)
        throw InputError(refusal(e, c.trace_select, limit, a.trace_max_size, a.trace));
      if (e.bytes > 50'000'000) {
        progress->estimate = e.bytes;
        progress->shown = true;
        progress->last = std::chrono::steady_clock::now();
        std::cerr << "stragglesim: writing a trace of about "
                  << format_memory(static_cast<double>(e.bytes)) << " (" << e.events
                  << " events) to " << a.trace << "\n";
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
      std::cerr << "stragglesim: trace: " << format_memory(static_cast<double>(bytes))
                << " of about " << format_memory(static_cast<double>(progress->estimate))
                << " written (" << events << " events, "
                << static_cast<int>(std::min(100.0, 100 * fraction)) << "%)\n";
    };
  }
  std::optional<OutputFile> trace;
  std::optional<InterruptGuard> guard;
  if (!a.trace.empty()) {
    guard.emplace("stragglesim simulate: stopping; the trace is not written");
    trace.emplace(a.trace);
    c.trace_out = &trace->stream();
  }
  check_simulation_memory(MemoryBudget::from_flag(a.max_memory), c);
  check_simulation_time(TimeBudget::from_flag(a.max_time), c);
  if (const std::string note = simulation_time_note(c); !note.empty())
    std::cerr << "stragglesim: note: " << note << "\n";
  sim::SimulationResult r;
  try {
    r = sim::run_simulation(c);
  } catch (const InputError& e) {
    throw InputError(a.config + ": " + e.what());
  }
  if (trace) trace->commit();
  if (r.shared_link)
    std::cerr << "stragglesim: warning: " << shared_link_warning(*r.shared_link) << "\n";
  std::cout << (a.json ? summary_json(c, r, a.config, schedule_file)
                       : summary_table(c, r, schedule_file));
}

}  // namespace

void add_simulate_command(CLI::App& app) {
  auto args = std::make_shared<SimulateArgs>();
  CLI::App* cmd = app.add_subcommand(
      "simulate", "Simulate one AllReduce configuration (YAML) over many iterations");
  cmd->add_option("config", args->config,
                  "YAML: one point and one algorithm of an experiment, in the keys of `run` or "
                  "with collective: (docs/user_guide.md#one-config-language)")
      ->required();
  cmd->add_flag("--json", args->json, "Print the results as JSON instead of a table");
  cmd->add_flag(
      "--per-rank", args->per_rank,
      "Needs --json: every iteration's per-rank arrival and finish times (arrival_s, finish_s)");
  CLI::Option* trace = cmd->add_option("--trace", args->trace,
                                       "Write a Chrome trace (Perfetto) of one iteration to FILE");
  cmd->add_option("--trace-iteration", args->trace_iteration, "Iteration to trace (default 0)")
      ->check(non_negative_number())
      ->needs(trace);
  add_trace_links_option(*cmd, args->trace_links);
  cmd->add_option("--trace-ranks", args->trace_ranks,
                  "Trace only these ranks: indices and ranges, e.g. 0-3,7,1020-1023 (default all)")
      ->needs(trace);
  cmd->add_option("--trace-rounds", args->trace_rounds,
                  "Trace only these schedule rounds: indices and ranges, e.g. 0-9 (default all)")
      ->needs(trace);
  cmd->add_option(
         "--trace-window", args->trace_window,
         "Trace only events overlapping FROM:TO (time since the first arrival, units "
         "required, either end optional, e.g. 2ms:3.5ms); events are kept whole, not clipped")
      ->needs(trace);
  cmd->add_option(
         "--trace-max-size", args->trace_max_size,
         "Refuse a trace estimated above SIZE (default 256MiB; the message names a selector that "
         "fits)")
      ->needs(trace);
  cmd->add_option("-n,--iterations", args->iterations, "Override the configured iteration count")
      ->check(CLI::Range(1, 10'000'000));
  cmd->add_option("--seed", args->seed, "Override the configured seed")
      ->check(non_negative_number());
  add_max_memory_option(*cmd, args->max_memory);
  add_max_time_option(*cmd, args->max_time);
  add_threads_option(*cmd, args->threads);
  cmd->callback([args] { run_simulate(*args); });
}

}  // namespace ssim::exp
