// The algorithm registry: name -> generator(ranks, options) -> rounds on demand, or a Schedule.
//
//   Options opts;  opts.set("straggler", "3");
//   Schedule s = generate("stragglar", 8, opts);     // throws ssim::InputError on bad input
//   GeneratedRounds g = generate_rounds("ring", 65536, Options{});   // one round at a time
//   while (const Round* r = g.stream.next()) ...
//   for (const AlgorithmInfo& a : algorithms()) std::cout << a.name << "\n";
//
// Every algorithm is written once for every rank count, in its own file, and declares the
// rank counts and options it supports here. Unknown names, unsupported rank counts and bad
// options are InputErrors that say what is supported.
#pragma once

#include <functional>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "algorithms/cost_model.hpp"
#include "algorithms/round_stream.hpp"
#include "algorithms/schedule.hpp"

namespace ssim::alg {

// Raw key=value options as the user gave them; typed access with validation.
class Options {
 public:
  Options() = default;
  explicit Options(std::map<std::string, std::string> values) : values_(std::move(values)) {}

  void set(std::string key, std::string value) { values_[std::move(key)] = std::move(value); }
  bool has(std::string_view key) const { return values_.find(std::string(key)) != values_.end(); }
  // Integer option; `fallback` when absent; InputError when not an integer or outside [lo, hi].
  int get_int(std::string_view key, int fallback, int lo, int hi) const;
  std::string get_string(std::string_view key, std::string fallback) const;
  const std::map<std::string, std::string>& values() const { return values_; }

 private:
  std::map<std::string, std::string> values_;
};

struct OptionSpec {
  std::string name;
  std::string description;
  std::string default_value;  // as text, e.g. "n-1" or "4"
};

// Upper bounds on the size of a schedule, known before generating it, so that a caller can
// refuse one that would not fit in memory (doubles: nothing overflows).
struct ScheduleSize {
  double chunks = 0;
  double rounds = 0;
  double transfers = 0;
  double largest_round = 0;  // transfers in one round (what a streamed schedule holds)
  double pairs = 0;          // distinct (src, dst) pairs (the routes a simulation caches)
};

// A schedule produced on demand: `header` is the Schedule without its rounds (collective,
// algorithm, ranks, chunks, straggler, options); `stream` yields the rounds (round_stream.hpp).
// `round_count`: how many rounds the stream will yield, when the generator knows it without
// generating them (StragglAR, whose construction is chosen by a trial run); else empty.
struct GeneratedRounds {
  Schedule header;
  RoundStream stream;
  std::optional<std::size_t> round_count;
};

struct AlgorithmInfo {
  std::string name;
  std::string description;
  std::string supported_ranks;              // human-readable, e.g. "n >= 2"
  std::function<bool(int)> supports_ranks;  // the exact rule
  std::vector<OptionSpec> options;
  // rounds(ranks, options): validates the options (InputError) and returns the header and the
  // round generator. The only definition of the algorithm: generate() drains it.
  std::function<GeneratedRounds(int, const Options&)> rounds;
  // Closed form of the generated schedule's time when every rank arrives at t = 0 and
  // nothing is shared (cost_model.hpp): cost(ranks, bytes, params, options) in seconds.
  std::function<double(int, double, const CostParams&, const Options&)> cost;
  // size(ranks, options): upper bounds of the schedule generate() would return (within a small
  // factor; registry_test checks both directions).
  std::function<ScheduleSize(int, const Options&)> size;
  bool straggler_aware = false;  // takes the `straggler` option
  // Optional: validates option values for `ranks` without generating (InputError naming the
  // option), so that configs can report them at their keys; generate() checks them too.
  std::function<void(int, const Options&)> check_options = nullptr;
  // Its schedules reduce in a switch (Round::switch_reduces): only a topology with a reducing
  // switch runs them (either network model); lowering, the GPU executors, the MSCCL export and
  // the closed-form calibration do not.
  bool in_network = false;
  // Which ranks one of its reductions joins, for the checks of experiments and advise: all
  // ranks (nvls), each node's GPUs (nvls_tree: the NVSwitch), or each rail, the GPUs with one
  // local index across the nodes (collnet: the rail's switch). Nodes and rails come from the
  // topology's gpus_per_node; without one, all ranks.
  enum class ReduceScope : std::uint8_t { all, nodes, rails };
  ReduceScope reduce_scope = ReduceScope::all;
  // On one node (gpus_per_node unknown or >= n) its schedule is this algorithm's, with default
  // options, transfer for transfer (registry_test proves it): advise leaves it out there.
  std::string one_node_equals{};
  // Its kernel reduces through NVLS multicast (NCCL's NVLS and NVLS-Tree): a pipelined one pays
  // NVLS's per-step latencies (sim/protocol.hpp), whichever protocol it names.
  bool nvls_kernel = false;
  // The option that names the algorithm whose kernel its schedules run (nccl's `algo`); empty
  // when they run its own.
  std::string kernel_option{};

  // Whether it takes the option `name` (one of `options`).
  bool takes(std::string_view name) const;
};

const std::vector<AlgorithmInfo>& algorithms();
// Throws InputError listing the valid names.
const AlgorithmInfo& find_algorithm(std::string_view name);
// The entry named `name`, or nullptr (a schedule file may name an algorithm the registry lacks).
const AlgorithmInfo* lookup_algorithm(std::string_view name);
// Whether the schedule runs an NVLS kernel: its algorithm's nvls_kernel, or, for one whose
// kernel_option is among the schedule's options, that of the algorithm the option names.
bool runs_nvls_kernel(const Schedule& schedule);
// Whether the schedule runs NCCL's NVLS_TREE kernel: nvls_tree, or `nccl` whose kernel_option
// names nvls_tree.
bool runs_nvls_tree_kernel(const Schedule& schedule);
// Whether the schedule runs NCCL's Ring kernel: nccl_ring, or `nccl` whose kernel_option names
// ring (the textbook `ring` is that kernel's one-channel schedule).
bool runs_ring_kernel(const Schedule& schedule);
// "algorithm NAME has no option 'KEY' (did you mean 'K'? options: ...)", the suggestion when one
// of the algorithm's options is close (common/suggest.hpp); `shown` is the name as written.
std::string unknown_option_message(const AlgorithmInfo& info, const std::string& shown,
                                   const std::string& key);
// Validates ranks and option names and records the options in the header's metadata; the
// rounds come on demand from the returned stream.
GeneratedRounds generate_rounds(std::string_view name, int ranks, const Options& options);
// The same, materialized: every round of generate_rounds' stream.
Schedule generate(std::string_view name, int ranks, const Options& options);
// ceil(log2 n) as a double, for the size bounds.
double size_log2(int n);

}  // namespace ssim::alg
