// The text an experiment's results give: per point and algorithm, the summary over iterations
// (AlgorithmSummary, filled by experiment_output.hpp's summarize_point), the summary table, the
// dry-run listing and the columns of results.csv. Defined in experiment_output.cpp.
//
//
// Speedup. speedup = baseline time / this time for the same point and iteration, on
// completion (first arrival -> last finish): it is what a training step waits, and it credits
// a straggler-aware algorithm for the work it does before the straggler arrives.
// speedup_after_last_arrival uses the time after the last arrival (the StragglAR paper's
// "time minus delay"), which isolates the post-arrival part. Experiment::metric selects which
#pragma once

#include <cstddef>
#include <optional>
#include <string>
#include <vector>

#include "experiments/config/experiment.hpp"
#include "sim/simulation.hpp"

namespace ssim::experiments {

// Per point and algorithm, over iterations.
struct AlgorithmSummary {
  double mean_completion = 0;  // seconds
  double p90_completion = 0;
  double mean_after_last_arrival = 0;
  double p90_after_last_arrival = 0;
  // Mean baseline time / mean time, on the experiment's metric (the expected-time speedup).
  double speedup = 0;
  double mean_iteration_speedup = 0;  // mean over iterations of the per-iteration speedup
  double loss_fraction = 0;           // iterations where it is slower than the baseline
  double prediction_accuracy = 0;     // straggler-aware algorithms: predicted == actual
  double fallback_fraction = 0;       // prediction policy adaptive: iterations run by a fallback
  bool straggler_aware = false;
  std::size_t rounds = 0;
  // alpha-beta runs: the first link a round shares that the model does not (sim::SharedLink).
  std::optional<sim::SharedLink> shared_link;
};

// The runs `run` would do, one line each, with the resolved settings of each point.
std::string dry_run_listing(const Experiment& e);

// Per point: each algorithm's mean time on the metric and its speedup, the winner; loss
// fractions when delays are random; for a swept straggler delay, where the straggler-aware
// algorithms start to win (and the alpha-beta model's critical delay where it applies).
std::string summary_table(const Experiment& e,
                          const std::vector<std::vector<AlgorithmSummary>>& points);

// A line for a `ring` that runs on several nodes (empty otherwise): the textbook ring is one
// channel, one ring through all ranks crossing each node boundary on one NIC, where NCCL's Ring
// runs a channel per rail (nccl_ring; nccl is NCCL's own choice).
std::string one_channel_ring_note(const Experiment& e);

// A line naming the experiment's topologies whose figures no measurement backs (no `provenance:`
// in their file; empty when every one has it): their times are the model's on nominal figures.
std::string uncalibrated_note(const Experiment& e);

// The CSV columns of results.csv: schema/result_csv.hpp's, then the experiment's
// (run, point, label, one "sweep.<key>" column per axis, seed, last_rank, predicted_straggler,
// speedup, speedup_after_last_arrival).
std::vector<std::string> experiment_csv_columns(const Experiment& e);

}  // namespace ssim::experiments
