// `stragglesim train CONFIG.yaml`: what stragglers cost a data-parallel training job
// (sim/training.hpp), per algorithm: step times, samples/s, idle time per rank, GPU-hours lost.
#include "experiments/cli/train.hpp"

#include <algorithm>
#include <cstdio>
#include <iostream>
#include <nlohmann/json.hpp>
#include <optional>
#include <sstream>

#include "common/error.hpp"
#include "experiments/cli/commands.hpp"
#include "experiments/config/config.hpp"
#include "experiments/config/resource_check.hpp"
#include "experiments/config/training.hpp"
#include "schema/result_csv.hpp"

namespace ssim::experiments {
namespace {

using schema::canonical_options;
using schema::csv_field;
using schema::csv_number;

}  // namespace

std::string options_text(const alg::Options& o) { return canonical_options(o.values()); }

namespace {

// The policy as configured: adaptive is previous with fallbacks.
std::string policy_name(const sim::TrainingConfig& c) {
  return c.adaptive_fallbacks.empty() ? std::string(sim::to_string(c.policy)) : "adaptive";
}

}  // namespace

void write_choice(std::ostream& out, const sim::BucketChoice& b) {
  out << b.algorithm;
  for (std::size_t g = 0; g < b.stragglers.size(); ++g)
    out << (g == 0 ? '@' : '+') << b.stragglers[g];
}

namespace {

std::string fixed(double v, int digits) {
  char buf[64];
  std::snprintf(buf, sizeof buf, "%.*f", digits, v);
  return buf;
}

// The table's algorithm label: the name, with its options in parentheses.
std::string run_label(const sim::TrainingRun& run) {
  const std::string opts = options_text(run.options);
  return run.algorithm + (opts.empty() ? "" : "(" + opts + ")");
}

std::string summary_table(const std::string& path, const sim::TrainingConfig& c,
                          const sim::TrainingResult& r) {
  std::ostringstream os;
  os << path << ": " << r.ranks << " ranks on " << c.topology.name << ", "
     << sim::to_string(c.network) << " model; " << c.layers.size() << " layers, "
     << fixed(static_cast<double>(r.gradient_bytes) / 1e9, 3) << " GB of gradients in "
     << r.buckets.size() << " buckets (cap " << format_bytes(c.bucket_cap) << "); forward "
     << format_time(r.forward) << ", backward " << format_time(r.backward) << ", optimizer "
     << format_time(c.optimizer) << " per step\n";
  os << "delays: " << c.delays.describe() << "; " << c.steps << " steps, seed " << c.seed
     << "; lost GPU-hours per day at " << r.cluster_gpus << " GPUs\n\n";
  // The algorithm column is 22 wide and the mode column 26, or as wide as their longest entry
  // (`hierarchical(gpus_per_node=8)`), so that every row lines up.
  int label_width = 22, mode_width = 26;
  for (const sim::TrainingRun& run : r.runs) {
    label_width = std::max(label_width, static_cast<int>(run_label(run).size()));
    mode_width = std::max(mode_width, static_cast<int>(run.mode.describe().size()));
  }
  // The last two columns (against the mode's common reference) only with references.
  const bool ref = !r.references.empty();
  const char* format = ref ? "%-*s %-*s %10s %10s %10s %10s %11s %10s %8s %11s %6s %9s %14s\n"
                           : "%-*s %-*s %10s %10s %10s %10s %11s %10s %8s %11s %6s\n";
  auto line = [&](const std::vector<std::string>& f) {
    const auto print = [&](char* buf, std::size_t size) {
      return std::snprintf(buf, size, format, label_width, f[0].c_str(), mode_width, f[1].c_str(),
                           f[2].c_str(), f[3].c_str(), f[4].c_str(), f[5].c_str(), f[6].c_str(),
                           f[7].c_str(), f[8].c_str(), f[9].c_str(), f[10].c_str(),
                           f.size() > 11 ? f[11].c_str() : "", f.size() > 12 ? f[12].c_str() : "");
    };
    std::string buf(static_cast<std::size_t>(print(nullptr, 0)) + 1, '\0');
    print(buf.data(), buf.size());
    buf.pop_back();
    os << buf;
  };
  line({"algorithm", "mode", "mean step", "p50", "p99", "no-delay", "samples/s", "max idle", "lost",
        "GPU-h/day", "stale", "ref lost", "ref GPU-h/day"});
  for (const sim::TrainingRun& run : r.runs) {
    double idle = 0;
    for (const Seconds& s : run.mean_idle) idle = std::max(idle, s.value);
    line({run_label(run), run.mode.describe(),
          format_time(run.mean_step), format_time(run.p50_step), format_time(run.p99_step),
          format_time(run.baseline_mean_step), fixed(run.samples_per_second, 1),
          format_time(Seconds{idle}), fixed(100 * run.lost_fraction, 2) + "%",
          fixed(run.lost_gpu_hours_per_day, 1), fixed(run.mean_staleness, 1),
          fixed(100 * run.lost_vs_reference, 2) + "%",
          fixed(run.lost_vs_reference_gpu_hours_per_day, 1)});
  }
  os << "\nmax idle: the largest per-rank mean idle time per step (waiting for the collective "
        "beyond "
        "its own compute);\nlost: 1 - no-delay step / step; GPU-h/day: cluster GPUs x 24 h x "
        "lost;\n"
        "stale: mean steps of other ranks' updates a rank lacks (its effect on accuracy is not "
        "modelled).\n";
  if (ref) {
    os << "ref lost, ref GPU-h/day: the same against the mode's common reference, 1 - reference "
          "step / step (comparable across algorithms; < 0: faster than the reference):\n";
  }
  for (const sim::TrainingReference& x : r.references) {
    os << "reference: " << x.mode.describe() << ": ";
    if (x.nccl) {
      os << "nccl (NCCL's choice per collective size) without delays, "
         << format_time(x.mean_step) << " per step\n";
    } else {
      const std::string opts = options_text(x.options);
      os << x.algorithm << (opts.empty() ? "" : "(" + opts + ")")
         << ", the fastest of the job's algorithms without delays, " << format_time(x.mean_step)
         << " per step (not nccl: " << x.why_not_nccl << ")\n";
    }
  }
  for (const sim::TrainingRun& run : r.runs) {
    if (run.mode.mode != sim::SyncMode::exclude_late) continue;
    // The ranks that sat out most often (at most 4), most often first.
    std::vector<int> order;
    for (std::size_t k = 0; k < run.sat_out.size(); ++k) {
      if (run.sat_out[k] > 0) order.push_back(static_cast<int>(k));
    }
    std::stable_sort(order.begin(), order.end(), [&run](int a, int b) {
      return run.sat_out[static_cast<std::size_t>(a)] > run.sat_out[static_cast<std::size_t>(b)];
    });
    os << "sat out: " << run.algorithm << " " << run.mode.describe() << ": " << order.size()
       << " ranks sat out";
    for (std::size_t k = 0; k < order.size() && k < 4; ++k) {
      os << (k == 0 ? "; most often " : ", ") << "rank " << order[k] << " "
         << fixed(100 * run.sat_out[static_cast<std::size_t>(order[k])], 1) << "%";
    }
    os << " of steps\n";
  }
  for (const sim::TrainingRun& run : r.runs) {
    if (run.adaptive_collectives == 0) continue;
    std::string fallbacks;
    for (const std::string& f : c.adaptive_fallbacks)
      fallbacks += (fallbacks.empty() ? "" : ", ") + f;
    os << "adaptive: " << run.algorithm << " " << run.mode.describe() << " ran a fallback ("
       << fallbacks << ") in " << fixed(100 * run.fallback_fraction, 1) << "% of "
       << run.adaptive_collectives << " collectives\n";
  }
  return os.str();
}

}  // namespace

nlohmann::json train_summary_json(const std::string& path, const sim::TrainingConfig& c,
                                  const sim::TrainingResult& r) {
  nlohmann::json j;
  j["version"] = STRAGGLESIM_VERSION_STRING;
  j["config"] = {{"file", path},
                 {"topology", c.topology.name},
                 {"ranks", r.ranks},
                 {"network", std::string(sim::to_string(c.network))},
                 {"delays", c.delays.describe()},
                 {"policy", policy_name(c)},
                 {"fallbacks", c.adaptive_fallbacks},
                 {"steps", c.steps},
                 {"seed", c.seed},
                 {"cluster_gpus", r.cluster_gpus},
                 {"samples_per_gpu", c.samples_per_gpu},
                 {"layers", c.layers.size()},
                 {"bucket_cap_bytes", c.bucket_cap.value},
                 {"optimizer_s", c.optimizer.value}};
  if (c.policy == sim::StragglerPolicy::eager) {
    j["config"]["detection_s"] = c.detection.value_or(sim::default_detection(c.topology)).value;
  }
  j["forward_s"] = r.forward.value;
  j["backward_s"] = r.backward.value;
  j["gradient_bytes"] = r.gradient_bytes;
  nlohmann::json buckets = nlohmann::json::array();
  for (const sim::Bucket& b : r.buckets) {
    buckets.push_back({{"first_layer", c.layers[static_cast<std::size_t>(b.first_layer)].name},
                       {"last_layer", c.layers[static_cast<std::size_t>(b.last_layer)].name},
                       {"bytes", b.bytes.value},
                       {"ready_s", b.ready.value}});
  }
  j["buckets"] = std::move(buckets);
  nlohmann::json runs = nlohmann::json::array();
  for (const sim::TrainingRun& run : r.runs) {
    nlohmann::json idle = nlohmann::json::array(), idle_max = nlohmann::json::array(),
                   delay = nlohmann::json::array();
    for (std::size_t k = 0; k < run.mean_idle.size(); ++k) {
      idle.push_back(run.mean_idle[k].value);
      idle_max.push_back(run.max_idle[k].value);
      delay.push_back(run.mean_delay[k].value);
    }
    runs.push_back({{"algorithm", run.algorithm},
                    {"options", options_text(run.options)},
                    {"mode", run.mode.describe()},
                    {"mean_staleness_steps", run.mean_staleness},
                    {"max_staleness_steps", run.max_staleness},
                    {"straggler_aware", run.straggler_aware},
                    {"adaptive_collectives", run.adaptive_collectives},
                    {"fallback_fraction", run.fallback_fraction},
                    {"mean_step_s", run.mean_step.value},
                    {"p50_step_s", run.p50_step.value},
                    {"p90_step_s", run.p90_step.value},
                    {"p99_step_s", run.p99_step.value},
                    {"quantiles_exact", run.exact_quantiles},
                    {"max_step_s", run.max_step.value},
                    {"samples_per_s", run.samples_per_second},
                    {"mean_exposed_comm_s", run.mean_exposed_comm.value},
                    {"alphabeta_shared_link", run.shared_link.has_value()},
                    {"baseline_mean_step_s", run.baseline_mean_step.value},
                    {"baseline_samples_per_s", run.baseline_samples_per_second},
                    {"lost_fraction", run.lost_fraction},
                    {"lost_gpu_hours_per_day", run.lost_gpu_hours_per_day},
                    {"reference_mean_step_s", run.reference_mean_step.value},
                    {"lost_vs_reference", run.lost_vs_reference},
                    {"lost_vs_reference_gpu_hours_per_day",
                     run.lost_vs_reference_gpu_hours_per_day},
                    {"mean_idle_s", std::move(idle)},
                    {"max_idle_s", std::move(idle_max)},
                    {"mean_delay_s", std::move(delay)},
                    {"sat_out_fraction", run.sat_out}});
  }
  j["runs"] = std::move(runs);
  nlohmann::json references = nlohmann::json::array();
  for (const sim::TrainingReference& x : r.references) {
    references.push_back({{"mode", x.mode.describe()},
                          {"nccl", x.nccl},
                          {"algorithm", x.algorithm},
                          {"options", options_text(x.options)},
                          {"why_not_nccl", x.why_not_nccl},
                          {"mean_step_s", x.mean_step.value}});
  }
  j["references"] = std::move(references);
  return j;
}

sim::TrainingConfig train_config(const ConfigReader& reader, const TrainArgs& a,
                                 std::ostream& err) {
  sim::TrainingConfig c = load_training_config(reader);
  c.keep_step_times = false;  // the steps CSV streams them: memory independent of the step count
  if (a.steps > 0) c.steps = a.steps;
  if (a.seed >= 0) c.seed = static_cast<std::uint64_t>(a.seed);
  if (a.persistence != -1) {  // set (NaN included)
    if (!(a.persistence >= 0 && a.persistence <= 1))
      throw InputError("--persistence must be in [0, 1]");
    if (c.delays.stragglers.empty()) {
      throw InputError(a.config +
                       ": --persistence needs a persistent straggler (delays.persistent), the "
                       "job has none");
    }
    for (sim::PersistentStraggler& s : c.delays.stragglers) s.persistence = a.persistence;
  }
  if (a.probability != -1) {  // set (NaN included)
    if (!(a.probability >= 0 && a.probability <= 1))
      throw InputError("--probability must be in [0, 1]");
    if (c.delays.stragglers.empty()) {
      throw InputError(a.config +
                       ": --probability needs a persistent straggler (delays.persistent), the "
                       "job has none");
    }
    for (sim::PersistentStraggler& s : c.delays.stragglers) s.probability = a.probability;
  }
  // The same guards as run and simulate: the job's estimated time and memory, before anything
  // is opened or simulated (ResourceError, exit 3, with the estimate and what to change).
  check_training_resources(MemoryBudget::from_flag(a.max_memory), TimeBudget::from_flag(a.max_time),
                           c);
  if (const std::string note = training_time_note(c); !note.empty())
    err << "stragglesim: note: " << note << "\n";
  return c;
}

sim::TrainingResult run_train_job(const sim::TrainingConfig& c, const std::string& where,
                                  const sim::StepCallback& on_step) {
  try {
    return sim::run_training(c, on_step);
  } catch (const InputError& e) {
    throw InputError(where + ": " + e.what());
  }
}

std::vector<std::string> train_warnings(const sim::TrainingResult& r) {
  std::vector<std::string> out;
  std::size_t shared = 0;
  for (const sim::TrainingRun& run : r.runs) {
    if (run.shared_link && shared++ == 0) {
      out.push_back(run.algorithm + " " + run.mode.describe() + ": " +
                    shared_link_warning(*run.shared_link));
    }
  }
  if (shared > 1) {
    out.push_back(std::to_string(shared) + " of " + std::to_string(r.runs.size()) +
                  " runs share links the alphabeta model does not share");
  }
  return out;
}

namespace {

void run_train(const TrainArgs& a) {
  const ConfigReader reader(a.config);
  const sim::TrainingConfig c = train_config(reader, a, std::cerr);
  // Every output is opened before the run (a path that cannot be created fails first) and takes
  // its name only when the whole run succeeded.
  std::optional<OutputFile> steps, ranks;
  if (!a.steps_csv.empty()) {
    steps.emplace(a.steps_csv);
    steps->stream() << "algorithm,options,mode,step,step_time_s,end_s,mean_idle_s,max_idle_s,"
                       "slowest_rank,exposed_comm_s,bucket_runs,average_run,sat_out\n";
  }
  if (!a.ranks_csv.empty()) ranks.emplace(a.ranks_csv);
  sim::StepCallback on_step;
  if (steps) {
    std::ostream& out = steps->stream();
    on_step = [&out](const sim::TrainingRun& run, const sim::StepRecord& s) {
      out << run.algorithm << ',' << csv_field(options_text(run.options)) << ','
          << csv_field(run.mode.describe()) << ',' << s.step << ',' << csv_number(s.step_time.value)
          << ',' << csv_number(s.end.value) << ',' << csv_number(s.mean_idle.value) << ','
          << csv_number(s.max_idle.value) << ',' << s.slowest_rank << ','
          << csv_number(s.exposed_comm.value) << ',';
      for (std::size_t b = 0; b < s.buckets.size(); ++b) {
        if (b > 0) out << ' ';
        write_choice(out, s.buckets[b]);
      }
      out << ',';
      if (s.average) write_choice(out, *s.average);
      out << ',';
      for (std::size_t k = 0; k < s.sat_out.size(); ++k) out << (k > 0 ? " " : "") << s.sat_out[k];
      out << '\n';
    };
  }
  const sim::TrainingResult r = run_train_job(c, a.config, on_step);
  if (ranks) {
    std::ostream& out = ranks->stream();
    out << "algorithm,options,mode,rank,mean_idle_s,max_idle_s,mean_delay_s,sat_out_fraction\n";
    for (const sim::TrainingRun& run : r.runs) {
      for (std::size_t k = 0; k < run.mean_idle.size(); ++k) {
        out << run.algorithm << ',' << csv_field(options_text(run.options)) << ','
            << csv_field(run.mode.describe()) << ',' << k << ','
            << csv_number(run.mean_idle[k].value) << ',' << csv_number(run.max_idle[k].value) << ','
            << csv_number(run.mean_delay[k].value) << ',' << csv_number(run.sat_out[k]) << '\n';
      }
    }
  }
  if (steps) steps->commit();
  if (ranks) ranks->commit();
  for (const std::string& w : train_warnings(r)) std::cerr << "stragglesim: warning: " << w << "\n";
  std::cout << (a.json ? train_summary_json(a.config, c, r).dump(2) + "\n"
                       : summary_table(a.config, c, r));
}

}  // namespace

CLI::App* add_train_options(CLI::App& app, TrainArgs& a) {
  TrainArgs* args = &a;
  CLI::App* cmd = app.add_subcommand(
      "train",
      "What stragglers cost a data-parallel training job (YAML): step time, idle time, GPU-hours");
  cmd->add_option("config", args->config,
                  "Training YAML (see docs/user_guide.md, \"Training jobs\")")
      ->required();
  cmd->add_flag("--json", args->json, "Print the results as JSON instead of a table");
  cmd->add_option("--steps-csv", args->steps_csv,
                  "Write every step of every algorithm as CSV to FILE");
  cmd->add_option("--ranks-csv", args->ranks_csv,
                  "Write each rank's idle and delay per step as CSV to FILE");
  cmd->add_option("-n,--steps", args->steps, "Override the configured step count")
      ->check(CLI::Range(1, 10'000'000));
  add_seed_option(*cmd, args->seed, "Override the configured seed");
  cmd->add_option("--persistence", args->persistence,
                  "Override every persistent straggler's persistence (0..1; "
                  "experiments/train_plot.py sweeps it)")
      ->check(CLI::Range(0.0, 1.0));
  add_max_memory_option(*cmd, args->max_memory);
  add_max_time_option(*cmd, args->max_time);
  cmd->add_option("--probability", args->probability,
                  "Override every persistent straggler's probability of being late in a step "
                  "(0..1)")
      ->check(CLI::Range(0.0, 1.0));
  return cmd;
}

void add_train_command(CLI::App& app) {
  auto args = std::make_shared<TrainArgs>();
  add_train_options(app, *args)->callback([args] { run_train(*args); });
}

}  // namespace ssim::experiments
