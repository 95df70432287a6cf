// Experiments: a set of algorithms compared over the cartesian product of swept parameters.
// Defines the typed experiment (Experiment, filled from YAML by load_experiment in
// config/config.hpp), the parallel runner, and what it writes: results.csv, results.json and the
// summary table.
//
//   ConfigReader in("configs/experiments/paper_scaling.yaml");
//   Experiment e = load_experiment(in);                  // every sweep point resolved and checked
//   std::cout << dry_run_listing(e);                     // the runs, without running them
//   RunnerOptions o;  o.jobs = 4;
//   ExperimentResult r = run_experiment(e, o);           // writes <output>/results.{csv,json}
//   std::cout << summary_table(e, r.points);
//
// Runs. A sweep point is one combination of axis values; every algorithm runs on every point.
// Run r is point r / A, algorithm r % A (A = algorithms.size()); points enumerate the
// cartesian product with the last axis varying fastest. All algorithms of a point use the same
// seed, so they see the same arrivals iteration by iteration (paired comparison), and that seed
// derives from the experiment seed and the point's axis values only (point_seed), never from
// threads or run order. Results are written in run order whatever --jobs is.
//
// Speedup. speedup = baseline time / this time for the same point and iteration, on
// completion (first arrival -> last finish): it is what a training step waits, and it credits
// a straggler-aware algorithm for the work it does before the straggler arrives.
// speedup_after_last_arrival uses the time after the last arrival (the StragglAR paper's
// "time minus delay"), which isolates the post-arrival part. Experiment::metric selects which
// of the two the summary table and the plots use.
#pragma once

#include <cstdint>
#include <functional>
#include <iosfwd>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "algorithms/registry.hpp"
#include "sim/simulation.hpp"
#include "sim/training.hpp"

namespace ssim::exp {

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

// Command-line overrides: iterations (> 0) and the experiment seed (re-derives point seeds).
void set_iterations(Experiment& e, int iterations);
void set_seed(Experiment& e, std::uint64_t seed);

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

struct ExperimentResult {
  std::string output;                                 // the folder written
  std::vector<std::vector<AlgorithmSummary>> points;  // [point][algorithm]
  std::vector<std::string> files;                     // written, in order
  double seconds = 0;                                 // wall time of the runs
};

enum class Progress { automatic, bar, lines, none };

// The progress ETA's estimate of a run's cost: the --max-time guard's estimate of its
// simulation (resource_check.hpp: the schedule's transfers x iterations x the network model's
// cost per transfer, plus the per-iteration work), so that flow-model runs, large schedules
// and many iterations weigh what they cost.
double estimated_run_cost(const Experiment& e, std::size_t run);

// The progress bar for a terminal `columns` wide, without the carriage return: "[###---]
// 12/90 runs 3s  ETA 7s", ETA = elapsed x remaining cost / finished cost. At most columns - 1
// characters: the bar shrinks, then goes, so a redraw never wraps.
std::string progress_line(std::size_t done, std::size_t total, double done_cost, double total_cost,
                          double elapsed, int columns);
// "12s", "3m05s", "2h10m".
std::string duration_text(double seconds);

// A shard of an experiment's runs: the I-th (1-based) of K. Run r belongs to shard (r mod K) + 1,
// so every shard gets a similar mix of points and algorithms.
struct Shard {
  int index = 1;
  int count = 1;
  bool owns(std::size_t run) const { return static_cast<int>(run % static_cast<std::size_t>(count)) == index - 1; }
};

// Other processes that do some of the runs (an MPI run group, experiments/runner/run_group.hpp).
// run_experiment drives them from its calling thread, beside its own threads: start, then every
// few milliseconds poll, which hands a run to each free slot of a peer and passes back what the
// peers finished. The results are the same bytes whichever process ran a run.
class RunPeers {
 public:
  virtual ~RunPeers() = default;
  struct Hooks {
    // The next run to hand out; nullopt: none (all handed out, or stopping after a failure).
    std::function<std::optional<std::size_t>()> take;
    // `peer`: the peer's name in progress lines ("rank 2").
    std::function<void(std::size_t run, sim::SimulationResult result, double seconds, const std::string& peer)> done;
    std::function<void(std::size_t run, const std::string& what)> failed;
  };
  // Waits until every peer is ready, before any run starts. InputError when a peer cannot take
  // part (it loaded another experiment, or could not load the YAML).
  virtual void start(const Experiment& e) = 0;
  // Never blocks. Returns false once every peer has been told to stop and has nothing in flight.
  virtual bool poll(const Hooks& hooks) = 0;
};

// The simulation of run r: point r / A's config with algorithm r % A.
sim::SimulationConfig run_config(const Experiment& e, std::size_t run);

// Run r of an experiment whose points have a workload: the training job of run_config(e, r)
// (topology, network, gamma, delays, prediction, seed; steps = iterations) with the point's
// workload and the run's algorithm as its only algorithm and mode as its only mode.
sim::TrainingConfig training_config(const Experiment& e, std::size_t run);
// One training run as a run's result, step s as iteration s: completion = the step time,
// after_last_arrival = the step's exposed communication (StepRecord::exposed_comm), last_rank =
// the rank with the largest delay that step, predicted_straggler = the rank that played the
// straggler in the step's last bucket (-1 when no straggler-aware schedule ran), chosen = the
// algorithms the buckets ran under the adaptive policy (joined by '+', in bucket order; empty
// otherwise). rounds and transfers are 0 (a step runs many collectives). `steps` are the
// StepRecords of the run, as run_training handed them out.
sim::SimulationResult training_run_result(const sim::TrainingResult& result,
                                          const std::vector<sim::IterationSummary>& steps);
// Runs run r: run_simulation(run_config(e, r)) with `threads` threads, or for a point with a
// workload run_training(training_config(e, r)) as training_run_result.
sim::SimulationResult execute_run(const Experiment& e, std::size_t run, int threads);

struct RunnerOptions {
  std::string output;  // overrides Experiment::output when not empty
  int jobs = 0;        // threads; 0: std::thread::hardware_concurrency()
  // Threads inside each run (the alpha-beta dataflow pass, sim::RunOptions::threads), used only
  // when the runs go one at a time (jobs resolves to 1): otherwise the runs already occupy the
  // cores. 0: std::thread::hardware_concurrency().
  int threads = 0;
  // Re-use the runs recorded in <output>/journal.jsonl (written by an interrupted run of the same
  // experiment) and run only the missing ones.
  bool resume = false;
  // Without resume: write over a folder that holds an earlier run's journal or results (else
  // InputError). The earlier results.csv and results.json are replaced only when this run ends.
  bool force = false;
  // Run only this shard's runs; they go to <output>/journal.jsonl only (no results.csv/json):
  // `stragglesim merge` combines the shards' folders into the full results.
  std::optional<Shard> shard;
  // automatic: a bar with ETA when stderr is a terminal (as wide as COLUMNS or the terminal),
  // else one line per finished run, each flushed.
  Progress progress = Progress::automatic;
  std::ostream* log = nullptr;  // progress and notes; nullptr: std::cerr
  // Processes that share the runs (rank 0 of `mpirun -np K stragglesim run`); nullptr: this
  // process alone. With peers the runs are handed out largest estimated cost first (the
  // output stays in run order).
  RunPeers* peers = nullptr;
};

// Runs every (point, algorithm) on `jobs` threads and writes <output>/results.csv (rows of a
// point as soon as it and every point before it are done, flushed) and results.json. Every
// finished run is also appended to <output>/journal.jsonl (journal.hpp) as it completes. On the
// first failing run the remaining runs are cancelled, the finished points before it are
// written, and an InputError names the run, the point and the partial CSV. The folder is locked
// for the call (common/folder_lock.hpp: InputError naming the holder when another process has
// it); without resume or force, one that holds an earlier run's files is refused. After SIGINT
// or SIGTERM (common/interrupt.hpp) the runs in flight finish into the journal and Interrupted
// is thrown; results.csv and results.json are not written.
ExperimentResult run_experiment(const Experiment& e, const RunnerOptions& options);

// Writes results.csv and results.json into `output` from the results of every run (run index
// -> result, all present), as run_experiment would have: the same bytes in results.csv, the
// same results.json apart from its wall-clock status fields.
ExperimentResult write_experiment_results(const Experiment& e, std::vector<sim::SimulationResult> runs,
                                          const std::string& output, int jobs);

// The same runs without writing files: summaries and the raw results of every run
// ([point][algorithm]); for the advisor and tests.
struct ExperimentRuns {
  std::vector<std::vector<sim::SimulationResult>> runs;
  std::vector<std::vector<AlgorithmSummary>> summaries;
};
// Progress (as `run` reports it) goes to `log` when it is given, from `quiet_for` seconds after
// the start (a run that ends sooner prints nothing).
ExperimentRuns run_experiment_in_memory(const Experiment& e, int jobs, int threads = 1,
                                        std::ostream* log = nullptr,
                                        Progress progress = Progress::none,
                                        double quiet_for = 0);

// The threads each run gets (RunnerOptions::threads): `threads` (0: every core) when `jobs`
// (0: every core) resolves to 1 run at a time, else 1.
int threads_per_run(int jobs, int threads);

// The runs `run` would do, one line each, with the resolved settings of each point.
std::string dry_run_listing(const Experiment& e);

// Per point: each algorithm's mean time on the metric and its speedup, the winner; loss
// fractions when delays are random; for a swept straggler delay, where the straggler-aware
// algorithms start to win (and the alpha-beta model's critical delay where it applies).
std::string summary_table(const Experiment& e,
                          const std::vector<std::vector<AlgorithmSummary>>& points);

// The CSV columns of results.csv: schema/result_csv.hpp's, then the experiment's
// (run, point, label, one "sweep.<key>" column per axis, seed, last_rank, predicted_straggler,
// speedup, speedup_after_last_arrival).
std::vector<std::string> experiment_csv_columns(const Experiment& e);

}  // namespace ssim::exp
