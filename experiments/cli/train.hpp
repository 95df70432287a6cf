// `stragglesim train CONFIG.yaml [--json] [--steps-csv FILE] [--ranks-csv FILE] [-n STEPS]
// [--seed S]`: a training job's step model (sim/training.hpp) per algorithm: step times,
// samples/s, idle time per rank, GPU-hours lost per day to stragglers.
#pragma once

#include <CLI/CLI.hpp>
#include <nlohmann/json.hpp>
#include <ostream>
#include <string>
#include <vector>

#include "experiments/config/reader.hpp"
#include "sim/training.hpp"

namespace ssim::experiments {

void add_train_command(CLI::App& app);

// The pieces of `train` the Python package (python/core.cpp) shares with the CLI:
//
//   TrainArgs a;  add_train_options(app, a);  app.parse(argv);   // the flags, CLI11's checks
//   sim::TrainingConfig c = train_config(ConfigReader(a.config), a, std::cerr);
//   sim::TrainingResult r = run_train_job(c, a.config, on_step);
//   train_summary_json(a.config, c, r);   // what --json prints
struct TrainArgs {
  std::string config;
  bool json = false;
  std::string steps_csv;
  std::string ranks_csv;
  int steps = 0;            // 0: as configured
  long long seed = -1;      // -1: as configured
  double persistence = -1;  // -1: as configured
  std::string max_memory, max_time;
  double probability = -1;  // -1: as configured
};

// Registers the `train` subcommand and its flags (with the CLI's checks) into `a`; returns it.
CLI::App* add_train_options(CLI::App& app, TrainArgs& a);

// The job of `reader` with a's overrides (steps, seed, persistence, probability; messages name
// a.config), refused for time or memory (ResourceError) before anything runs; the time note,
// if any, goes to `err`. Step times are not kept (the steps CSV streams them).
sim::TrainingConfig train_config(const ConfigReader& reader, const TrainArgs& a,
                                 std::ostream& err);

// sim::run_training, its InputError prefixed with `where` (the config's name).
sim::TrainingResult run_train_job(const sim::TrainingConfig& c, const std::string& where,
                                  const sim::StepCallback& on_step);

// The warnings `train` prints (alpha-beta runs sharing a link), without "stragglesim: warning: ".
std::vector<std::string> train_warnings(const sim::TrainingResult& r);

// What `train --json` prints; `path` is the config's name.
nlohmann::json train_summary_json(const std::string& path, const sim::TrainingConfig& c,
                                  const sim::TrainingResult& r);

// A run's options as the CSV's options column ("key=value;...").
std::string options_text(const alg::Options& o);

// What a collective ran, for the steps CSV: the algorithm, with "@R" for the rank that played
// a straggler-aware schedule's straggler ("@R+R'..." one per group).
void write_choice(std::ostream& out, const sim::BucketChoice& b);

// `stragglesim fit-delays STEPS.csv|TRACE.json... [-o FITTED.yaml]`: the delay model
// (sim/delay_fit.hpp) of a per-rank step log or of PyTorch profiler traces, written as the
// `delays:` map the configs take, with the goodness-of-fit report as comments.
void add_fit_delays_command(CLI::App& app);

}  // namespace ssim::experiments
