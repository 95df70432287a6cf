#include "experiments/config/resource_check.hpp"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <thread>

#include "algorithms/protocol.hpp"
#include "algorithms/registry.hpp"
#include "algorithms/verifier.hpp"
#include "common/error.hpp"
#include "experiments/config/experiment.hpp"
#include "sim/executor.hpp"
#include "sim/network.hpp"

namespace ssim::experiments {
namespace {

std::string count_text(double v) {
  char buf[32];
  std::snprintf(buf, sizeof buf, v < 1e6 ? "%.0f" : "%.2g", v);
  return buf;
}

// What a finished iteration keeps (IterationSummary), and its per-rank times when asked for.
double results_bytes(const sim::SimulationConfig& c) {
  const double per_iteration =
      sizeof(sim::IterationSummary) +
      (c.per_rank_times ? 2.0 * sizeof(Seconds) * c.topology.gpu_count() : 0.0);
  return per_iteration * c.iterations;
}

// The chrome trace of one iteration kept in memory (SimulationConfig::trace_out unset): a
// timeline record and about 200 characters of JSON per transfer. Streamed to a file, a trace
// holds only what is in flight (but for a pipelined run's, below).
constexpr double kTraceBytesPerTransfer = 256;
// A traced run of NCCL kernels with pipelined steps holds both sides of every transfer until the
// run ends (sim::TimelineSink): two records, and as much again while the held list grows.
constexpr double kHeldTraceBytesPerTransfer =
    2 * 2 * static_cast<double>(sizeof(sim::TransferRecord) + alignof(sim::TransferRecord));
// Whether a traced run holds its sides (above): pipelined steps (the default) and an NCCL
// collective kernel, a schedule that names its protocol (`nccl` always, another with `proto`).
bool holds_trace(const sim::SimulationConfig& c) {
  if (!c.pipelined_kernels) return false;
  if (c.schedule) return alg::named_protocol(*c.schedule).has_value();
  return c.algorithm == "nccl" || c.options.has("proto");
}

}  // namespace

namespace {

// "use fewer ranks", "... or segments" for the algorithms that take them.
std::string fewer(const std::string& algorithm) {
  return alg::find_algorithm(algorithm).takes("segments") ? "use fewer ranks or segments"
                                                          : "use fewer ranks";
}

}  // namespace

namespace {

// The size of the schedule a simulation runs: counted in a schedule given as data (a schedule
// file), else the registry's bound.
alg::ScheduleSize run_schedule_size(const sim::SimulationConfig& c) {
  if (!c.schedule) return schedule_size(c.algorithm, c.topology.gpu_count(), c.options);
  alg::ScheduleSize size;
  size.chunks = c.schedule->chunks;
  size.rounds = static_cast<double>(c.schedule->rounds.size());
  for (const alg::Round& r : c.schedule->rounds) {
    size.transfers += static_cast<double>(r.transfers.size());
    size.largest_round = std::max(size.largest_round, static_cast<double>(r.transfers.size()));
  }
  size.pairs = size.transfers;  // at most
  return size;
}

// What to change when a simulation does not fit.
std::string fewer(const sim::SimulationConfig& c) {
  return c.schedule ? std::string("give a smaller schedule file") : fewer(c.algorithm);
}

}  // namespace

alg::ScheduleSize schedule_size(const std::string& algorithm, int ranks,
                                const alg::Options& options) {
  const alg::AlgorithmInfo& info = alg::find_algorithm(algorithm);
  if (!info.size)
    throw InternalError("algorithm " + info.name + " has no size bound in the registry");
  return info.size(ranks, options);
}

void check_schedule_memory(const MemoryBudget& budget, const std::string& algorithm, int ranks,
                           const alg::Options& options, bool verify) {
  const alg::ScheduleSize size = schedule_size(algorithm, ranks, options);
  // Streamed round by round: the round in flight (the generator's and a relabelled copy), its
  // JSON form (a DOM of up to ~200 bytes per transfer) and the verifier's symbolic state.
  const double round = std::min(size.largest_round, size.transfers);
  const double generate = round * 2 * sizeof(alg::Transfer);
  const double output = round * 200 + (1 << 20);
  const double state =
      verify ? alg::symbolic_state_bytes(ranks, static_cast<int>(std::min(size.chunks, 2e9))) : 0.0;
  budget.require(
      generate + output + state,
      "the " + algorithm + " schedule for " + std::to_string(ranks) + " ranks (" +
          count_text(size.transfers) + " transfers" +
          (verify ? ", verified on " + count_text(size.chunks) + " chunks" : std::string()) + ")",
      fewer(algorithm));
}

void check_verify_memory(const MemoryBudget& budget, int ranks, int chunks) {
  budget.require(alg::symbolic_state_bytes(ranks, chunks),
                 "verifying a schedule of " + std::to_string(ranks) + " ranks x " +
                     std::to_string(chunks) + " chunks (a bit per rank, chunk and contributor)",
                 "verify a schedule with fewer ranks or chunks");
}

namespace {

// The most links of a few sampled routes (0 -> n/2, n/4 -> 3n/4, ...): what a cached route
// holds besides its fixed part.
double sampled_route_links(const topo::Topology& t) {
  const int n = t.gpu_count();
  sim::RouteCache routes(t);
  std::size_t most = 1;
  const int pairs[][2] = {{0, n / 2}, {n / 4, 3 * n / 4}, {0, n / 4}, {0, n - 1}, {0, 1}};
  for (const auto& p : pairs) {
    if (p[0] == p[1] || p[1] >= n) continue;
    try {
      most = std::max<std::size_t>(most, routes.route(routes.find(p[0], p[1])).link_count);
    } catch (const InputError&) {
      // unreachable pair: the simulation reports it
    }
  }
  return static_cast<double>(most);
}

}  // namespace

double simulation_bytes(const sim::SimulationConfig& c) {
  const alg::ScheduleSize size = run_schedule_size(c);
  // The topology's next-hop tables (one per destination on a ring or torus), at most all.
  const double tables = static_cast<double>(c.topology.route_tables_bytes_bound());
  // The flow model's event engine streams too but keeps the rounds ranks are in: as many as
  // the whole schedule at worst, so it is counted as materialized.
  if (sim::streams_rounds(c) && c.network == sim::NetworkKind::alphabeta) {
    // Streamed (sim::RoundFeed): per-rank state, the round in flight (the generator's, a
    // relabelled copy), and one cached route per distinct (src, dst) pair.
    const double n = c.topology.gpu_count();
    const double round = 2 * sizeof(alg::Transfer) * std::min(size.largest_round, size.transfers);
    // Routes longer than RouteCache::kShortRoute keep no link list (sim::LinkLists::short_only).
    const double routes =
        std::min(size.pairs, size.transfers) *
        (kRouteBytes + sizeof(int) * std::min<double>(sampled_route_links(c.topology),
                                                      sim::RouteCache::kShortRoute));
    return n * kStreamBytesPerRank + round + routes + tables + results_bytes(c);
  }
  return size.transfers *
             (kScheduleBytesPerTransfer + kExecutorBytesPerTransfer +
              (c.trace_iteration && !c.trace_out ? kTraceBytesPerTransfer : 0.0) +
              (c.trace_iteration && holds_trace(c) ? kHeldTraceBytesPerTransfer : 0.0)) +
         tables + results_bytes(c);
}

void check_simulation_memory(const MemoryBudget& budget, const sim::SimulationConfig& c) {
  const alg::ScheduleSize size = run_schedule_size(c);
  budget.require(simulation_bytes(c),
                 "simulating " + c.algorithm + " on " + std::to_string(c.topology.gpu_count()) +
                     " ranks (" + count_text(size.transfers) + " transfers, " +
                     std::to_string(c.iterations) +
                     (c.iterations == 1 ? " iteration" : " iterations") +
                     (c.trace_iteration ? ", traced" : "") + ")",
                 fewer(c) + (c.per_rank_times ? ", fewer iterations or no --per-rank" : ""));
}

double seconds_per_transfer(sim::NetworkKind network, bool shared_device, int ranks) {
  if (shared_device)
    return kSharedDeviceSecondsPerTransfer + ranks * kSharedDeviceSecondsPerTransferRank;
  return network == sim::NetworkKind::flow ? kFlowSecondsPerTransfer
                                           : kAlphabetaSecondsPerTransfer;
}

double simulation_seconds(const sim::SimulationConfig& c) {
  const double per_transfer = seconds_per_transfer(
      c.network, c.topology.shared_device.has_value(), c.topology.gpu_count());
  const double n = c.topology.gpu_count();
  return c.iterations * (run_schedule_size(c).transfers * per_transfer + kSecondsPerIteration +
                         n * kSecondsPerRankIteration);
}

double schedule_seconds(const std::string& algorithm, int ranks, const alg::Options& options,
                        bool verify) {
  const alg::ScheduleSize size = schedule_size(algorithm, ranks, options);
  // Chunks moved: a bandwidth-optimal allreduce moves each chunk about twice per rank; a
  // transfer moves at least one.
  const double moved = std::max(size.transfers, 2.0 * ranks * size.chunks);
  return size.transfers * kGenerateSecondsPerTransfer +
         (verify ? moved * ranks * kVerifySecondsPerChunkRank : 0.0);
}

void check_schedule_time(const TimeBudget& limit, const std::string& algorithm, int ranks,
                         const alg::Options& options) {
  limit.require(schedule_seconds(algorithm, ranks, options, /*verify=*/true),
                "generating and verifying the " + algorithm + " schedule for " +
                    std::to_string(ranks) + " ranks",
                fewer(algorithm));
}

void check_lower_resources(const MemoryBudget& budget, const TimeBudget& limit,
                           const std::string& algorithm, int ranks, const alg::Options& options) {
  const alg::ScheduleSize size = schedule_size(algorithm, ranks, options);
  const std::string what = "lowering the " + algorithm + " schedule for " + std::to_string(ranks) +
                           " ranks (" + count_text(size.transfers) + " transfers)";
  budget.require(size.transfers * (kScheduleBytesPerTransfer + kLowerBytesPerTransfer), what,
                 fewer(algorithm));
  limit.require(schedule_seconds(algorithm, ranks, options, /*verify=*/false) +
                    size.transfers * kLowerSecondsPerTransfer,
                what, fewer(algorithm));
}

namespace {

std::string simulation_what(const sim::SimulationConfig& c) {
  const alg::ScheduleSize size = run_schedule_size(c);
  return "simulating " + c.algorithm + " on " + std::to_string(c.topology.gpu_count()) +
         " ranks (" + count_text(size.transfers) + " transfers, " + std::to_string(c.iterations) +
         (c.iterations == 1 ? " iteration" : " iterations") + ", " +
         std::string(sim::to_string(c.network)) + std::string(" model)");
}

std::string time_note(double seconds, const std::string& what) {
  if (seconds < 60) return "";
  return what + " may take about " + format_duration(seconds) +
         " (an estimate from the transfers and iterations; Ctrl-C stops it)";
}

struct ExperimentTime {
  double seconds = 0;  // wall time with `jobs` runs at once
  std::string longest;
};

// The run of algorithm `a` at point `p` as far as the estimates need it: with the node size it
// takes from a hierarchical topology (run_config), which the size bounds depend on.
sim::SimulationConfig estimated_run(const SweepPoint& p, const ExperimentAlgorithm& a) {
  sim::SimulationConfig c = p.config;
  c.algorithm = a.name;
  c.options = a.options;
  c.schedule = a.schedule;
  if (!c.schedule && c.topology.gpus_per_node > 0 && !c.options.has("gpus_per_node")) {
    const alg::AlgorithmInfo& info = alg::find_algorithm(c.algorithm);
    if (info.takes("gpus_per_node"))
      c.options.set("gpus_per_node", std::to_string(c.topology.gpus_per_node));
  }
  return c;
}

ExperimentTime experiment_seconds(const Experiment& e, int jobs) {
  if (jobs <= 0) jobs = static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
  double total = 0, longest = 0;
  std::string longest_run;
  for (const SweepPoint& p : e.points) {
    for (const ExperimentAlgorithm& a : e.algorithms) {
      const sim::SimulationConfig c = estimated_run(p, a);
      const double s = simulation_seconds(c);
      total += s;
      if (s > longest) {
        longest = s;
        longest_run = simulation_what(c);
      }
    }
  }
  return {std::max(longest, total / jobs), longest_run};
}

}  // namespace

void check_simulation_time(const TimeBudget& limit, const sim::SimulationConfig& c) {
  limit.require(simulation_seconds(c), simulation_what(c),
                fewer(c) + ", fewer iterations or the alphabeta model");
}

void check_experiment_time(const TimeBudget& limit, const Experiment& e, int jobs, double share) {
  const ExperimentTime t = experiment_seconds(e, jobs);
  limit.require(t.seconds * share,
                "the " + std::to_string(e.run_count()) + " runs (the longest: " + t.longest + ")",
                "use fewer ranks, sweep points, algorithms or iterations, or more --jobs");
}

std::string simulation_time_note(const sim::SimulationConfig& c) {
  return time_note(simulation_seconds(c), "this simulation");
}

std::string experiment_time_note(const Experiment& e, int jobs) {
  return time_note(experiment_seconds(e, jobs).seconds,
                   "the " + std::to_string(e.run_count()) + " runs");
}

void check_experiment_memory(const MemoryBudget& budget, const Experiment& e, int jobs) {
  // `jobs` simulations run at once; the largest bounds each. Every run's results are kept.
  double largest = 0, results = 0;
  std::string largest_run;
  for (std::size_t p = 0; p < e.points.size(); ++p) {
    for (const ExperimentAlgorithm& a : e.algorithms) {
      const sim::SimulationConfig c = estimated_run(e.points[p], a);
      const double bytes = simulation_bytes(c) - results_bytes(c);
      results += results_bytes(c);
      if (bytes > largest) {
        largest = bytes;
        largest_run = a.label + " on " + std::to_string(c.topology.gpu_count()) + " ranks, " +
                      count_text(run_schedule_size(c).transfers) + " transfers" +
                      (e.axes.empty() ? std::string() : ", sweep point " + e.point_label(p));
      }
    }
  }
  if (jobs <= 0) jobs = static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
  const int parallel = std::max(
      1, static_cast<int>(std::min<std::size_t>(static_cast<std::size_t>(jobs), e.run_count())));
  budget.require(
      parallel * largest + results,
      "simulating " + std::to_string(e.run_count()) + " run" + (e.run_count() == 1 ? "" : "s") +
          " of " + std::to_string(e.iterations) +
          (e.iterations == 1 ? " iteration on " : " iterations on ") + std::to_string(parallel) +
          " thread" + (parallel == 1 ? "" : "s") + " (the largest: " + largest_run + ")",
      "use fewer ranks, algorithms with fewer transfers, fewer --jobs or fewer iterations");
}

namespace {

// Per (mode, algorithm) of a training job: the collectives one step runs and the transfers and
// ranks of the largest.
struct TrainingWork {
  double seconds = 0;      // the whole job
  double bytes = 0;        // the largest run's schedules
  double collectives = 0;  // simulated collectives, every run and pass
  std::string largest;     // the run of the most transfers, for messages
};

TrainingWork training_work(const sim::TrainingConfig& c) {
  const int n = c.topology.gpu_count();
  const double buckets =
      static_cast<double>(sim::make_buckets(c.layers, c.bytes_per_param, c.bucket_cap).size());
  const double per_transfer =
      seconds_per_transfer(c.network, c.topology.shared_device.has_value(), n);
  TrainingWork w;
  double most = -1;
  for (const sim::SyncSpec& mode : c.modes) {
    const int m = mode.mode == sim::SyncMode::grouped        ? n / mode.groups
                  : mode.mode == sim::SyncMode::exclude_late ? n - mode.late
                                                             : n;
    for (const sim::TrainingAlgorithm& a : c.algorithms) {
      const alg::AlgorithmInfo& info = alg::find_algorithm(a.name);
      const double whole = schedule_size(a.name, n, a.options).transfers;
      alg::Options group_options;
      for (const auto& [key, value] : a.options.values()) {
        if (key != "straggler") group_options.set(key, value);
      }
      const double group = m == n ? whole : schedule_size(a.name, m, group_options).transfers;
      // A grouped step runs every group's collective (n / m of them) side by side.
      const double transfers = mode.mode == sim::SyncMode::grouped ? group * (n / m) : group;
      const double runs =
          1.0 + (info.straggler_aware ? static_cast<double>(c.adaptive_fallbacks.size()) : 0.0);
      const double collectives = 2.0 * c.steps * buckets * runs;  // with and without delays
      w.collectives += collectives;
      w.seconds += collectives * (transfers * per_transfer + kSecondsPerIteration +
                                  n * kSecondsPerRankIteration);
      const double bytes = (whole + (m == n ? 0.0 : group)) *
                           (kScheduleBytesPerTransfer + kExecutorBytesPerTransfer);
      if (bytes > w.bytes) w.bytes = bytes;
      if (whole > most) {
        most = whole;
        w.largest = a.name + " on " + std::to_string(n) + " ranks (" + count_text(whole) +
                    " transfers)";
      }
    }
  }
  // Per rank and bucket: entries, ends and choices of the step in flight.
  w.bytes += static_cast<double>(n) * buckets * 64;
  return w;
}

std::string training_what(const sim::TrainingConfig& c, const TrainingWork& w) {
  return "the training job: " + std::to_string(c.steps) + " steps of " +
         count_text(w.collectives / (2.0 * std::max(1, c.steps))) +
         " collectives each, with and without delays (the largest: " + w.largest + ")";
}

}  // namespace

double training_seconds(const sim::TrainingConfig& c) { return training_work(c).seconds; }

void check_training_resources(const MemoryBudget& budget, const TimeBudget& limit,
                              const sim::TrainingConfig& c) {
  const TrainingWork w = training_work(c);
  budget.require(w.bytes, training_what(c, w),
                 "use fewer ranks, algorithms with fewer transfers or a larger bucket_cap");
  limit.require(w.seconds, training_what(c, w),
                "use fewer steps (--steps), ranks, algorithms or modes, or a larger bucket_cap");
}

std::string training_time_note(const sim::TrainingConfig& c) {
  return time_note(training_work(c).seconds, "the training job");
}

}  // namespace ssim::experiments
