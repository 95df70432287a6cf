// Resource honesty for the commands: memory estimates from the inputs, checked against the
// budget (--max-memory, common/memory_budget.hpp) before anything large is built. A command
// beyond the budget is refused with what it would need and what to change, instead of running
// for minutes and dying of std::bad_alloc.
//
//   const MemoryBudget budget = MemoryBudget::from_flag(args.max_memory);
//   check_schedule_memory(budget, "ring", 65536, options, /*verify=*/true);   // ResourceError
#pragma once

#include <string>

#include "algorithms/registry.hpp"
#include "common/memory_budget.hpp"
#include "common/time_budget.hpp"
#include "sim/simulation.hpp"
#include "sim/training.hpp"

namespace ssim::experiments {

struct Experiment;

// Bytes per transfer: the schedule (alg::Transfer, 20 B, twice for vector growth), and what a
// simulation keeps per transfer on top (routes, port queues, event state: measured 22 B with the
// flow model at n = 2048; rounded up).
inline constexpr double kScheduleBytesPerTransfer = 40;
inline constexpr double kExecutorBytesPerTransfer = 32;
// A streamed simulation (sim::streams_rounds) keeps per rank its dataflow state, a block of 64
// iterations' arrivals and the result's times (~1.2 KB), and per cached route its index entry,
// bounds and byte count (~96 B) plus its links when it has at most RouteCache::kShortRoute;
// and the topology's next-hop tables (topo::Topology::route_tables_bytes_bound).
inline constexpr double kStreamBytesPerRank = 1280;
inline constexpr double kRouteBytes = 96;

// The algorithm's size bounds for `ranks` (InputError for an unknown name or bad option).
alg::ScheduleSize schedule_size(const std::string& algorithm, int ranks,
                                const alg::Options& options);

// `schedule`: generating (and verifying) the schedule, and its text or JSON output.
void check_schedule_memory(const MemoryBudget& budget, const std::string& algorithm, int ranks,
                           const alg::Options& options, bool verify);
// `verify`: the symbolic state of a schedule read from a file.
void check_verify_memory(const MemoryBudget& budget, int ranks, int chunks);
// One simulation (`simulate`): the schedule, the executor and the per-iteration results; for a
// streamed schedule the per-rank state, one round and the routes instead of every transfer.
double simulation_bytes(const sim::SimulationConfig& config);
void check_simulation_memory(const MemoryBudget& budget, const sim::SimulationConfig& config);
// `run` and `advise`: `jobs` simulations at a time (0: one per hardware thread), plus every
// run's results.
void check_experiment_memory(const MemoryBudget& budget, const Experiment& e, int jobs);

// Time (common/time_budget.hpp, --max-time): estimates from the problem size, measured on one
// core of the development machine and meant to hold within a factor of a few, checked before
// the work starts; beyond the limit the work is refused with the estimate. Below it, from a
// minute on, a note for stderr says how long to expect.
// A simulation: about kAlphabetaSecondsPerTransfer (kFlowSecondsPerTransfer) per transfer and
// iteration (ring, 2048 ranks, 2 iterations: 0.6 s and 12 s), plus kSecondsPerIteration and
// kSecondsPerRankIteration for each iteration's arrivals and results (ring, 8 ranks, 1e6
// iterations: 22 s).
inline constexpr double kAlphabetaSecondsPerTransfer = 40e-9;
inline constexpr double kFlowSecondsPerTransfer = 800e-9;
inline constexpr double kSecondsPerIteration = 15e-6;
inline constexpr double kSecondsPerRankIteration = 100e-9;
// A shared_device topology (sim/shared_device.hpp) runs every transfer as device operations whose
// cost grows with the ranks sharing the device: kSharedDeviceSecondsPerTransfer plus
// kSharedDeviceSecondsPerTransferRank per rank (ring, 4 MiB, release build: 8 ranks 20000
// iterations 1.1 s, 32 ranks 20000 iterations 23 s, 512 ranks 1 iteration 1.7 s; the alpha-beta
// constant above underestimated 512 ranks 80-fold).
inline constexpr double kSharedDeviceSecondsPerTransfer = 0.3e-6;
inline constexpr double kSharedDeviceSecondsPerTransferRank = 6e-9;
// The time of one transfer in one iteration: of the network model, or of the shared device.
double seconds_per_transfer(sim::NetworkKind network, bool shared_device, int ranks);
// Generating a schedule, per transfer; verifying it, per chunk moved and rank (the verifier's
// bit sets); writing its text or JSON form, per transfer (`schedule ring --ranks 2048`: 3 s;
// `rhd`: 17 s); lowering it and writing the per-rank plan, per transfer (`lower ring --ranks
// 1024`: 39 s and 1.4 GB for 2.1e6 transfers).
inline constexpr double kGenerateSecondsPerTransfer = 300e-9;
inline constexpr double kVerifySecondsPerChunkRank = 0.25e-9;
inline constexpr double kLowerSecondsPerTransfer = 20e-6;
inline constexpr double kLowerBytesPerTransfer = 700;

double simulation_seconds(const sim::SimulationConfig& config);
// Generating (and verifying) the schedule of `algorithm` for `ranks`.
double schedule_seconds(const std::string& algorithm, int ranks, const alg::Options& options,
                        bool verify);
// `schedule`: the time to generate, verify and write it.
void check_schedule_time(const TimeBudget& limit, const std::string& algorithm, int ranks,
                         const alg::Options& options);
// `lower`: the schedule, its per-rank plan and the plan's text or JSON (memory and time).
void check_lower_resources(const MemoryBudget& budget, const TimeBudget& limit,
                           const std::string& algorithm, int ranks, const alg::Options& options);
// One simulation (`simulate`) and an experiment's runs (`run`, `advise`: `jobs` at a time).
void check_simulation_time(const TimeBudget& limit, const sim::SimulationConfig& config);
// `share`: the fraction of the runs this process does (a shard's).
void check_experiment_time(const TimeBudget& limit, const Experiment& e, int jobs,
                           double share = 1.0);
std::string simulation_time_note(const sim::SimulationConfig& config);

// `train` (sim/training.hpp): per mode and algorithm, every step runs each gradient bucket's
// collective (and, for straggler-aware algorithms with adaptive fallbacks, each fallback's),
// once with the delays and once without: steps x buckets x runs simulations of one iteration,
// each timed as simulation_seconds times it. Memory: each run's schedules (the whole job's and
// a group's) as a simulation keeps them, and per rank and bucket its state.
double training_seconds(const sim::TrainingConfig& config);
void check_training_resources(const MemoryBudget& budget, const TimeBudget& limit,
                              const sim::TrainingConfig& config);
std::string training_time_note(const sim::TrainingConfig& config);
std::string experiment_time_note(const Experiment& e, int jobs);

}  // namespace ssim::experiments
