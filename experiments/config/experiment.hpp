// The typed experiment: a set of algorithms compared over the cartesian product of swept
// parameters, as load_experiment (config.hpp) fills it from YAML, every sweep point resolved and
// checked. What runs it is experiments/runner/experiment.hpp; what it writes, experiments/output/.
//
//   ConfigReader in("configs/experiments/paper_scaling.yaml");
//   Experiment e = load_experiment(in);
//   sim::SimulationConfig c = run_config(e, 0);          // point 0, the first algorithm
//
// Runs. A sweep point is one combination of axis values; every algorithm runs on every point.
// Run r is point r / A, algorithm r % A (A = algorithms.size()); points enumerate the
// cartesian product with the last axis varying fastest. All algorithms of a point use the same
// seed, so they see the same arrivals iteration by iteration (paired comparison), and that seed
// derives from the experiment seed and the point's axis values only (point_seed), never from
// threads or run order. Results are written in run order whatever --jobs is.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "algorithms/registry.hpp"
#include "sim/simulation.hpp"
#include "sim/training.hpp"

namespace ssim::experiments {

struct ExperimentAlgorithm {
  std::string label;     // unique within the experiment; the name unless the YAML gives one
  std::string name;      // registry name; a schedule file's: the algorithm name it records
  alg::Options options;  // a schedule file's: the generator options it records (metadata)
  // `{schedule: FILE}`: the file's schedule, read and verified once at load and run by every
  // point (sim::SimulationConfig::schedule); null for a registry algorithm.
  std::shared_ptr<const alg::Schedule> schedule;
  std::string schedule_file;    // as the YAML names it (relative to the YAML's folder)
  std::string schedule_digest;  // 16 hex digits of FNV-1a over the schedule's content
};

// One swept parameter.
struct SweepAxis {
  std::string key;                  // as written under `sweep:`, e.g. "ranks", "topology.bandwidth"
  std::vector<std::string> labels;  // its values as written (size ranges expanded)
  std::vector<std::optional<double>> numeric;  // each value in SI units when it has one
  std::string unit;                            // of `numeric`: "" (plain number), "s", "B", "B/s"
  bool straggler_delay = false;                // the stragglers' delay (crossover report)
};

// A training job (`workload:` in a run experiment, loaded by config/training.hpp's load_workload):
// every run of the point is then sim::run_training of this model with the run's algorithm per
// gradient bucket, the point's topology, network, delays, prediction, seed, and iterations as
// training steps (training_config); iteration i of the run is step i (training_run_result).
struct Workload {
  std::vector<sim::TrainingLayer> layers;  // forward order
  std::uint64_t bytes_per_param = 4;
  Bytes bucket_cap;
  Seconds optimizer;
  int samples_per_gpu = 1;
  sim::SyncSpec mode;  // the experiment's `mode:` (default synchronous)
  std::uint64_t gradient_bytes() const;
};

struct SweepPoint {
  std::vector<std::size_t> value;  // per axis, the index into its labels
  sim::SimulationConfig config;    // all but algorithm and options; seed = point_seed(...)
  // Set when the experiment has a `workload:`; config.size is then the model's gradient bytes.
  std::optional<Workload> workload;
};

enum class Metric { completion, after_last_arrival };

struct Experiment {
  std::string name;
  std::string description;
  std::string file;  // the YAML it was read from
  std::vector<ExperimentAlgorithm> algorithms;
  std::size_t baseline = 0;  // index into algorithms
  Metric metric = Metric::completion;
  std::vector<SweepAxis> axes;
  std::vector<SweepPoint> points;  // the cartesian product, last axis fastest
  int iterations = 20;
  std::uint64_t seed = 1;
  std::string output;  // folder for results.csv, results.json and plots
  // The topology file, as the YAML names it resolved against its folder; empty when inline.
  std::string topology_file;
  // No prediction given (no key, no swept policy): an algorithm whose options name a
  // straggler runs with the fixed policy at that rank, every other one with oracle.
  bool default_prediction = true;

  std::size_t run_count() const { return points.size() * algorithms.size(); }
  // "ranks=8 size=1GiB", or "-" without axes.
  std::string point_label(std::size_t point) const;
};

// The seed of a sweep point: SplitMix64 of the experiment seed mixed with the FNV-1a hash of
// "key=value;" over the axes in order. Equal axis values give equal seeds in any experiment.
// Without axes (one point), the seed itself: the same as `simulate` of that point.
std::uint64_t point_seed(std::uint64_t seed, const std::vector<SweepAxis>& axes,
                         const std::vector<std::size_t>& value);

// The baseline of an experiment that names none: what NCCL runs (`nccl` as NCCL chooses, i.e.
// without a forced `algo`, else any `nccl`) when it is among the algorithms, else the first.
std::size_t default_baseline(const std::vector<ExperimentAlgorithm>& algorithms);

// Command-line overrides: iterations (> 0) and the experiment seed (re-derives point seeds).
void set_iterations(Experiment& e, int iterations);
void set_seed(Experiment& e, std::uint64_t seed);

// The simulation of run r: point r / A's config with algorithm r % A.
sim::SimulationConfig run_config(const Experiment& e, std::size_t run);

}  // namespace ssim::experiments
