// What the experiment runner and `stragglesim simulate` write: result CSV rows of an experiment
// point, the JSON echo of a simulation's resolved configuration and of a whole experiment.
//
//   nlohmann::json j = simulation_config_json(config);       // topology, network, delays, seed...
//   write_point_rows(csv, experiment, point, runs);          // one row per algorithm and iteration
//   summaries[p] = summarize_point(experiment, runs);
#pragma once

#include <iosfwd>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "experiments/output/summary.hpp"
#include "sim/simulation.hpp"

namespace ssim::experiments {

// The resolved configuration of one simulation (defaults and seed included), for result files:
// every value a JSON number, bool, string or object, times in seconds (keys ending in _s), the
// 64-bit seed as a decimal string (JSON readers keep 53 bits of a number).
nlohmann::json simulation_config_json(const sim::SimulationConfig& c);
// A delay distribution: {"distribution": kind, its parameters (times in seconds: value_s, low_s,
// high_s, mean_s, stddev_s, scale_s; mu, sigma, shape; empirical: samples (count), source),
// "expected_s": its mean, null when infinite}.
nlohmann::json distribution_json(const sim::Distribution& d);
// {"base": distribution, "stragglers": [{rank, extra: distribution, persistence}],
//  "trace": null or {source, iterations, ranks}}.
nlohmann::json delay_model_json(const sim::DelayModel& m);
// A point's training workload: mode, parameters, gradient bytes, bucket cap and count,
// optimizer, samples per GPU, compute totals, and the layers ([name, params, forward_s,
// backward_s]) when there are at most 1000.
nlohmann::json workload_json(const Workload& w);

// How late the last rank arrived after every other rank: the last arrival minus the
// second-to-last (0 on a tie and with fewer than two ranks). results.csv's delay_s.
Seconds arrival_lateness(const std::vector<Seconds>& arrival);

// Per algorithm of a point (runs[a] is algorithm a's result): means, p90s, speedups on the
// experiment's metric against the baseline, loss fraction.
std::vector<AlgorithmSummary> summarize_point(const Experiment& e,
                                              const std::vector<sim::SimulationResult>& runs);

// Rows of results.csv for point `point` (experiment_csv_columns order), algorithms in order,
// iterations in order.
void write_point_rows(std::ostream& out, const Experiment& e, std::size_t point,
                      const std::vector<sim::SimulationResult>& runs);

// results.json: version, the experiment file, its resolved settings (the simulation_config_json
// parts every point shares: topology, network, size_bytes, delays, prediction; a value the
// points do not all share is null, in the innermost object that holds it), seed (a string), axes
// (labels and numeric values, which plot.py reads), every point (values, seed, resolved
// configuration and, once done, the summary per algorithm), and the status of the run.
struct RunStatus {
  std::string state;    // "complete" | "failed"
  std::string message;  // the failure, if any
  std::string started;  // UTC
  double seconds = 0;
  int jobs = 0;
};
nlohmann::json experiment_json(const Experiment& e,
                               const std::vector<std::vector<AlgorithmSummary>>& summaries,
                               const RunStatus& status);

}  // namespace ssim::experiments
