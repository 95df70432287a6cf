#include <algorithm>
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
#include "experiments/config/resource_check.hpp"
#include "experiments/output/experiment_output.hpp"
#include "experiments/runner/experiment.hpp"

namespace ssim::experiments {
namespace {

struct SimulateArgs {
  std::string config;
  bool json = false;
  bool per_rank = false;
  std::string trace;
  int trace_iteration = 0;
  int trace_links = -1;        // -1: every link that carries traffic
  TraceFlags trace_flags;      // --trace-ranks, --trace-rounds, --trace-window, --trace-max-size
  int iterations = 0;          // 0: as configured
  long long seed = -1;         // -1: as configured
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
  if (!r.nccl_algo.empty()) {
    j["schedule"]["nccl"] = {{"algo", r.nccl_algo},
                             {"proto", r.nccl_proto},
                             {"options", r.nccl_options},
                             {"estimate_s", r.nccl_estimate_us * 1e-6}};
  }
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
     << sim::to_string(c.network) << " model"
     << (c.pipelined_kernels ? "" : " (NCCL's steps per round)") << ", " << r.rounds
     << " rounds, " << r.transfers << " transfers\n";
  if (!r.nccl_algo.empty()) {
    // What NCCL's own estimate picked (sim/nccl_tuner.hpp), which the run above is.
    std::string options;
    for (const auto& [k, v] : r.nccl_options) options += (options.empty() ? "" : " ") + k + "=" + v;
    os << "NCCL's choice: " << r.nccl_algo << "/" << r.nccl_proto << " (" << options
       << "; NCCL's estimate " << format_time(Seconds{r.nccl_estimate_us * 1e-6}) << ")\n";
  }
  if (!c.topology.calibrated) {
    os << "uncalibrated: " << c.topology.name
       << " (nominal or published figures that no measurement checks: no provenance: in the "
          "topology; docs/calibration.md)\n";
  }
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
  // Selectors, the size limit and progress lines (apply_trace_flags): ranks checked now,
  // rounds and the size at the estimate, before anything is simulated or written.
  if (!a.trace.empty()) apply_trace_flags(c, a.trace_flags, a.trace);
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
  add_trace_selection_options(*cmd, args->trace_flags, trace);
  cmd->add_option("-n,--iterations", args->iterations, "Override the configured iteration count")
      ->check(CLI::Range(1, 10'000'000));
  add_seed_option(*cmd, args->seed, "Override the configured seed");
  add_max_memory_option(*cmd, args->max_memory);
  add_max_time_option(*cmd, args->max_time);
  add_threads_option(*cmd, args->threads);
  cmd->callback([args] { run_simulate(*args); });
}

}  // namespace ssim::experiments
