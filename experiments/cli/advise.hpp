// `stragglesim advise` as data, for the CLI (advise.cpp prints it) and the Python package
// (python/core.cpp returns it as columns): the flags, parsed with the CLI's own checks, and the
// ranking of the candidates the table shows.
//
//   CLI::App app{"stragglesim"};
//   AdviseArgs a;
//   add_advise_options(app, a);             // the subcommand's flags, into `a`
//   app.parse(argv);                        // CLI11's checks (ranges, members)
//   AdviseRanking r = rank_advise_candidates(a, std::cerr);
//   for (std::size_t k : r.order) use(r.rows[k].label, r.rows[k].summary, r.wins[k]);
#pragma once

#include <ostream>
#include <string>
#include <vector>

#include "experiments/cli/commands.hpp"
#include "experiments/output/summary.hpp"
#include "experiments/runner/experiment.hpp"

namespace ssim::experiments {

struct AdviseArgs {
  std::string topology;
  int ranks = 0;  // 0: the topology's
  std::string size;
  std::string workload;  // FILE: a training job (its workload: section) instead of --size
  std::string delay_dist;
  std::string base_dist;
  std::string delays_file;  // a delays: map, as fit-delays writes it
  int straggler_rank = -1;  // -1: the last rank
  double persistence = 1.0;
  double probability = -1;  // -1: late in every iteration (no probability key)
  std::string policy = "previous";  // comma-separated: rank algorithm x policy pairs
  std::string fallback;             // adaptive's fallbacks, comma-separated
  std::string network;  // "": the topology's network_model, else alphabeta
  std::string gamma;
  // network: {protocol: ...}: NCCL's costs for every schedule. auto: simple where nccl is a
  // candidate (so every candidate is costed as NCCL would move it, as nccl is), else none.
  std::string protocol = "auto";
  std::string steps = "pipelined";  // network: {steps: ...}
  std::string algorithms;  // comma-separated; "" for every algorithm
  int iterations = 200;
  long long seed = 1;
  int jobs = 0;
  std::string max_memory;
  std::string max_time;
  std::string trace;  // FILE: the recommended algorithm's trace
  int trace_iteration = 0;
  int trace_links = -1;
  TraceFlags trace_flags;
  int threads = 1;  // used only with --jobs 1 (docs/scale.md: why one by default)
  bool quiet = false;
  double progress_after = 5;  // seconds without progress output (short runs print none)
};

// One line of advise's table: a candidate (with its policy in the label when several policies
// are ranked), its run and summary (speedup against the first experiment's baseline).
struct AdviseRow {
  std::string label;
  const sim::SimulationResult* run;  // in AdviseRanking::results
  AlgorithmSummary summary;
  std::size_t experiment, algorithm;  // where it ran
};

struct AdviseRanking {
  std::vector<std::string> policies;   // the experiments' policies, in order
  std::vector<std::string> left_out;   // candidates left out as another's schedule on one node
  std::vector<Experiment> experiments;  // one per policy (the first runs every candidate)
  std::vector<ExperimentRuns> results;
  std::vector<AdviseRow> rows;          // the first experiment's rows first
  std::vector<double> wins;             // per row: share of iterations it is the fastest
  std::vector<std::size_t> order;       // rows by mean completion, fastest first
};

// Registers the `advise` subcommand and its flags (with the CLI's checks) into `a`; returns it.
CLI::App* add_advise_options(CLI::App& app, AdviseArgs& a);

// Checks the flags, runs every candidate (progress to std::cerr unless a.quiet) and ranks them;
// notes and warnings ("stragglesim: note: ...", "stragglesim: warning: ...") go to `err`.
AdviseRanking rank_advise_candidates(const AdviseArgs& a, std::ostream& err);

}  // namespace ssim::experiments
