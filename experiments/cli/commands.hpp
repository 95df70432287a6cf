// The `stragglesim` subcommands. Each add_*_command registers a CLI11 subcommand whose
// callback does the work; errors are thrown as ssim::InputError and reported once in main().
//
//   CLI::App app{"stragglesim"};
//   ssim::experiments::add_schedule_commands(app);
#pragma once

#include <CLI/CLI.hpp>
#include <functional>
#include <ostream>
#include <string>
#include <vector>

#include "algorithms/registry.hpp"
#include "algorithms/schedule_json.hpp"
#include "common/memory_budget.hpp"
#include "common/output_file.hpp"
#include "experiments/config/files.hpp"
#include "sim/simulation.hpp"

namespace ssim::experiments {

// `schedule`, `verify`, `algorithms`.
void add_schedule_commands(CLI::App& app);

// `simulate CONFIG.yaml [--json] [--trace FILE]`.
void add_simulate_command(CLI::App& app);

// `calibrate MEASUREMENTS.csv [-o TOPOLOGY.yaml]` and `validate MEASURED.csv --topology FILE`.
void add_calibrate_commands(CLI::App& app);

// `validate LOG --topology T` on an nccl-tests log (validate_nccl_tests.cpp): each size's
// measured out-of-place and in-place times against `algorithm` simulated on the topology.
// The algorithm and the network model it is compared in when the command line names neither:
// NCCL's Ring with its channels (a rank's channels share its links only in the flow model; the
// alpha-beta model serializes them on one port, docs/algorithms.md "What NCCL runs").
inline constexpr const char* kValidateNcclTestsAlgorithm = "nccl_ring";
inline constexpr const char* kValidateNcclTestsNetwork = "flow";
struct NcclLogValidation {
  std::string name;           // the log as messages name it ("<stdin>" for "-")
  std::string text;           // its content
  std::string topology_path;  // as given to --topology
  std::string algorithm = kValidateNcclTestsAlgorithm;
  bool algorithm_given = false;
  std::vector<std::string> options;  // -O ALG:KEY=VALUE, ALG = algorithm
  std::string network;               // "": kValidateNcclTestsNetwork
  std::string steps;                 // "": pipelined; per_round (NetworkConfig::pipelined_kernels)
  std::string output;                // -o: the comparison as CSV ("": none)
};
void validate_nccl_tests_log(const NcclLogValidation& a, const topo::Topology& topology,
                             SecondsPerByte gamma, const std::string& gamma_from);

// validate --timeline without its report (fuzz/timeline_fuzz.cpp): reads `text`, a timeline as
// stragglesim-gpu run --timeline writes it (named `name` in errors), and compares each of its
// runs with its simulation on `topology` (alpha-beta, gamma 0, the options of the file's column).
// Returns the number of (rank, round) comparisons.
std::size_t compare_timeline(const std::string& text, const std::string& name,
                             const topo::Topology& topology);

// calibrate by simulation (calibrate_sim.cpp, experiments/runner/calibrate_sim.hpp): the options
// beyond calibrate's own, registered on the calibrate subcommand; used with --topology-kind
// shared_device or --by-simulation.
struct SimCalibrateArgs {
  std::vector<std::string> more_inputs;  // result CSVs after the first
  bool by_simulation = false;
  std::vector<std::string> fix, fit, holdout, algorithm_options;
  std::vector<std::string> stated_options;  // calibrate's -O items (the same as algorithm_options)
  // The options above, to refuse them where the closed-form fit would ignore them.
  std::vector<CLI::Option*> only_by_simulation;
  std::uint64_t seed = 0;
  int threads = 1;
  int max_evaluations = 4000;
  std::string max_time;     // --max-time ("": the default)
  std::string rows_output;  // every compared row with its simulated time, as CSV
};
void add_simulation_calibrate_options(CLI::App& calibrate, SimCalibrateArgs& args);
// `calibrate LOG... --topology FILE` (calibrate_nccl_logs.cpp): nccl-tests logs fitted by
// simulation on a topology file's bandwidth and latency keys.
struct NcclLogCalibrateArgs {
  std::vector<std::string> inputs;  // nccl-tests logs
  std::string topology;             // the file (or shipped name) whose keys are fitted
  std::string algorithm;            // "": nccl
  std::vector<std::string> options;  // -O ALGO:KEY=VALUE
  std::string network;               // "": kValidateNcclTestsNetwork
  std::string steps;                 // "": pipelined; per_round (NetworkConfig::pipelined_kernels)
  std::vector<std::string> fix, fit, holdout;
  std::uint64_t seed = 0;
  int max_evaluations = 4000;
  std::string rows_output, output, machine;
};
void run_calibrate_nccl_logs(const NcclLogCalibrateArgs& args);
// `kind`, `ranks` (0: the rows'), `machine` ("": the rows' device), `output` ("": no file) as
// calibrate takes them.
void run_calibrate_by_simulation(const std::string& input, const std::string& kind, int ranks,
                                 const std::string& machine, const std::string& output,
                                 const SimCalibrateArgs& args);

// `run [EXPERIMENT.yaml] [-o DIR] [--jobs N] [--dry-run] [--no-plots] [--shard I/N] [--resume]`.
void add_run_command(CLI::App& app);

// `merge SHARD_DIR... -o DIR`: the full results of an experiment run as shards.
void add_merge_command(CLI::App& app);

// `lower ALGO --ranks N --bytes B [--dtype T] [--align A] [--format text|json]`: the p2p plan.
void add_lower_command(CLI::App& app);

// `advise --topology T --size S [--ranks N] [--delay-dist D] ...`: which algorithm to use.
void add_advise_command(CLI::App& app);

// Sign checks for int flags, with short messages ("--straggler: must be >= 0, got -5"; CLI11's
// NonNegativeNumber prints DBL_MAX in all its 309 digits); a value past an int or with a fraction
// is "must be a whole number from 0 to 2147483647, got '...'" (CLI11: "Could not convert").
// --threads N (1..1024): threads of the alpha-beta dataflow pass inside one simulation.
// `threads` keeps its default (1 in every command) when the flag is absent.
void add_threads_option(CLI::App& cmd, int& threads, const std::string& extra = "");
// `run` and `advise`: --threads above 1 would do nothing with more than one job (each run then
// gets one thread): UsageError saying so. `jobs` as --jobs (0: the hardware threads).
void require_threads_used(int jobs, int threads);
CLI::Validator non_negative_number();
CLI::Validator positive_number();

// --seed N on a subcommand: a whole number in [0, 2^63 - 1], as a YAML `seed:` (a value past
// the range, a sign or a fraction is refused, never clamped or wrapped).
CLI::Option* add_seed_option(CLI::App& cmd, long long& seed, const std::string& help);
CLI::Option* add_seed_option(CLI::App& cmd, std::uint64_t& seed, const std::string& help);

// --max-memory SIZE on a subcommand (common/memory_budget.hpp; "" when not given: the default).
void add_max_memory_option(CLI::App& cmd, std::string& text);

// A comma-separated flag value ("ring,rhd") as its items; InputError naming `flag` for an empty
// item ("ring,,rhd", a trailing comma) or an item given twice.
std::vector<std::string> split_list(const std::string& flag, const std::string& text);

// Every numeric (FLOAT) option of `app` and its subcommands refuses nan and inf before CLI11
// converts it (a range check passes NaN, since every comparison with it is false).
void require_finite_numbers(CLI::App& app);

// --max-time DURATION on a subcommand (common/time_budget.hpp; "" when not given: the default,
// one hour of estimated work).
void add_max_time_option(CLI::App& cmd, std::string& text);

// The one warning when the alpha-beta model ignores link sharing (sim::find_shared_link).
std::string shared_link_warning(const sim::SharedLink& s);

struct Experiment;
struct AlgorithmSummary;
// For `run` and `advise`: one warning naming the first (point, algorithm) whose alpha-beta run
// shares a link, and how many do; "" when none does.
std::string shared_link_warning(const Experiment& e,
                                const std::vector<std::vector<AlgorithmSummary>>& points);

// The generator options of `schedule` and `lower`: `--option key=value` items plus `--straggler R`
// (-1: not given), checked against `info` (InputError for a malformed item, a straggler for an
// algorithm that is not straggler-aware, or the straggler given twice).
alg::Options algorithm_options(const alg::AlgorithmInfo& info,
                               const std::vector<std::string>& items, int straggler);

// Writes to a file, or stdout for "" or "-" (ssim::write_output_file: complete or absent,
// devices and pipes written in place; OutputError, exit 3, when a write fails).
void write_output(const std::string& path, const std::string& text);
// One number through a printf format ("%.2f%%", 100 * x): the reports' tables.
std::string printf_text(const char* format, double value);

// `-n` on a command without iterations (schedule, lower), where it used to mean the rank
// count: a usage error that names -r/--ranks. Across stragglesim -n is the iteration count.
void add_retired_rank_flag(CLI::App& cmd);

// --trace-links K (simulate, run, advise): link counters for the K busiest links; -1 when not
// given (every link that carries traffic).
void add_trace_links_option(CLI::App& cmd, int& k);

// What of a trace to write (simulate, run, advise): ranks, rounds, a time window (each "": all)
// and the size above which it is refused, as given on the command line.
struct TraceFlags {
  std::string ranks, rounds, window;
  std::string max_size = "256MiB";
};

// --trace-ranks, --trace-rounds, --trace-window, --trace-max-size, each needing `trace`.
void add_trace_selection_options(CLI::App& cmd, TraceFlags& t, CLI::Option* trace);

// Sets `c`'s trace selection from `t` (ranks checked against the topology now: InputError
// naming the option and token) and its estimate hook: rounds past the schedule's last and a
// trace estimated above t.max_size are refused (naming `path`, the estimate and a rank range
// that fits) before anything is written; traces above 50 MB print a line and progress lines.
void apply_trace_flags(sim::SimulationConfig& c, const TraceFlags& t, const std::string& path);

// Runs `config` again up to iteration `iteration` (results are causal: iteration i depends on
// iterations <= i only) and streams that iteration's Chrome trace to `path`, selected and
// limited by `options` (apply_trace_flags); returns the result of that shortened run.
// `trace_links` as add_trace_links_option. InputError from the simulation is prefixed with
// `where`.
sim::SimulationResult write_trace(sim::SimulationConfig config, int iteration, int trace_links,
                                  const TraceFlags& options, const std::string& path,
                                  const std::string& max_memory, const std::string& max_time,
                                  const std::string& where);

}  // namespace ssim::experiments
