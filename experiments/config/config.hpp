// The config loader: YAML -> typed structs of the lower layers. With reader.* (this folder) the
// only code that touches yaml-cpp. Every invalid field is an InputError naming the file,
// line, column, key path and value.
//
//   ConfigReader in("configs/topologies/dgx_h100.yaml");
//   topo::Topology t = load_topology(in.root(), in.directory());
//   sim::DelayModel d = load_delay_model(node, /*ranks=*/8, dir);
//
// Topology YAML (inline, or `{file: path}` / a bare path string naming a topology file whose
// top level is such a map, `{file: path, key: value, ...}` overriding its keys; relative paths
// resolve against the including file's folder):
//   kind: switch | fully_connected | ring     ranks, bandwidth, latency
//   kind: torus2d | torus3d                   x, y[, z], bandwidth, latency
//   kind: fat_tree                            k, tiers (2|3), bandwidth, latency
//                                             [, oversubscription, ranks]
//   kind: hierarchical                        nodes, gpus_per_node, nvlink: {bandwidth, latency},
//                                             nic: {bandwidth, latency},
//                                             fabric: {kind: leaf_spine|rail_optimized, spines,
//                                                      bandwidth, latency, nodes_per_leaf}
//   kind: custom                              nodes: [{name, type: gpu|switch}],
//                                             links: [{from, to, bandwidth, latency,
//                                                      class, duplex}]
//   ecmp: true|false (any kind; default false); name, description, provenance: free text
#pragma once

#include <map>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "algorithms/protocol.hpp"
#include "experiments/config/experiment.hpp"
#include "experiments/config/reader.hpp"
#include "sim/delays.hpp"
#include "sim/simulation.hpp"
#include "topologies/topology.hpp"

namespace ssim::experiments {

topo::Topology load_topology(const ConfigNode& node, const std::string& base_dir);
// `{astra_sim: FILE[, gigabyte: 2^30|1e9]}`: ASTRA-sim's analytical network YAML as a
// multi-dimensional topology (experiments/config/peer_topology.cpp); load_topology calls it.
topo::Topology load_astra_sim_network(const ConfigNode& entry, const std::string& base_dir);
// Whether a topology document is an ASTRA-sim network file (npus_count and no kind), and the
// topology it describes (`gigabyte`: bytes per GB of its bandwidths; `path` for messages).
bool is_astra_sim_network(const ConfigNode& root);
topo::Topology astra_sim_network(const ConfigNode& root, const std::string& path, double gigabyte);
// `{simgrid: FILE}`: a SimGrid platform file (XML 4.1, one Full zone of hosts, links and routes)
// as a topology (experiments/config/simgrid_platform.cpp); load_topology calls it. Hosts are
// ranks in document order; the conversions are listed in docs/user_guide.md.
topo::Topology load_simgrid_platform(const ConfigNode& entry, const std::string& base_dir);
// The platform in `text` (`name` for messages: "name:line: <element>: what"), or in a file.
topo::Topology simgrid_platform(std::string_view text, const std::string& name);
topo::Topology simgrid_platform_file(const std::string& path);
// Whether a topology file is XML (its first non-blank character is '<'): read as a SimGrid
// platform, not as YAML.
bool is_simgrid_platform_file(const std::string& path);

// A topology entry opened for loading: the inline map, or the root of the topology file it
// names with the entry's other keys laid over it (`{file: dgx_h100.yaml, ecmp: true}`; a map
// value merges key by key, e.g. `nic: {bandwidth: 200Gbps}`). An error in an overriding value
// names the including file, line and key.
struct TopologySource {
  std::unique_ptr<ConfigReader> file_reader;  // the topology file, when the entry names one
  std::string file;                           // its path, resolved; empty when inline
  std::string dir;                            // relative paths inside the topology resolve here
  ConfigNode node;                            // the topology's map
};
TopologySource open_topology(const ConfigNode& entry, const std::string& base_dir);

// A distribution: a bare time ("5ms" = constant) or a map
//   {distribution: none|constant|uniform|normal|lognormal|exponential|pareto|empirical, ...}
// with value | low, high | mean, stddev | mu, sigma or mean, p90 | mean | scale, shape |
// samples: [..] or file: path.
sim::Distribution load_distribution(const ConfigNode& node, const std::string& base_dir);

// delays:
//   base: <distribution>                      every rank, every iteration (default none)
//   trace: path.csv                           replaces base (see sim/delays.hpp for the forms)
//   persistent: [{rank, delay: <distribution>, persistence: 0..1, probability: 0..1}]
//                                             probability: the share of steps in which the
//                                             straggler is late at all (default 1: every step);
//                                             given on some entries only: an error (below)
sim::DelayModel load_delay_model(const ConfigNode& node, const std::string& base_dir);

// A straggler's `probability` node: a number in [0, 1] (not NaN), else an error at the node.
double load_late_probability(const ConfigNode& node);
// Straggler entries (maps: delays.persistent items, the stragglers section): an error at the
// first `probability` when another entry has none, a straggler late in every step, which
// would make a rank late in every step whatever the probability says.
void check_late_probabilities(const std::vector<ConfigNode>& entries);

// A simulation (`stragglesim simulate`): one point of an experiment, read by load_experiment
// (ConfigCommand::simulate: the same keys, see below) and resolved by run_config for its one
// algorithm. Several points or algorithms: an error at `sweep` or `algorithms` that names
// `stragglesim run`. simulate's own form `collective: {algorithm: NAME, size: 1GiB, options:
// {...}}` stands for `algorithm:` and `size:`; with it, iterations default to 1 (else 20).
// The seed of a file without a sweep is its `seed` (point_seed).
sim::SimulationConfig load_simulation_config(const ConfigReader& reader);

// The `prediction` map of simulate and experiment configs, for `ranks` ranks:
//   {policy: oracle | fixed | previous | adaptive | eager, rank: R, fallback: ALGO or [ALGO, ...],
//    detection: TIME}
// eager (eager conditional execution) predicts like oracle and sets c.detection from
// `detection` (0..1s; absent: sim::default_detection); `detection` without eager is an error
// unless the policy is swept.
// adaptive predicts like previous and sets c.adaptive_fallbacks (default [ring]): registry
// algorithms that are not straggler-aware and support `ranks`. `fallback` without adaptive is
// an error, unless the experiment sweeps the policy (then it serves the adaptive points).
void load_prediction(const ConfigNode& node, int ranks, sim::SimulationConfig& c,
                     bool policy_swept);
// The `network:` map of a simulate config, an experiment or a training job: model (alphabeta,
// flow), gamma, protocol (none, simple, ll, ll128: NCCL's costs for every schedule that names
// none) and steps (per_round, pipelined: NetworkConfig::pipelined_kernels), each failing at its
// key. Without `model`, `kind` stays as given (the caller sets default_network first).
void load_network(const ConfigNode& net, sim::NetworkKind& kind, SecondsPerByte& gamma,
                  std::optional<alg::Protocol>& protocol, bool& pipelined_kernels);
// The network model of a config that names none: the topology's network_model (the model its
// figures hold in, a topology file's key), else the alpha-beta model.
sim::NetworkKind default_network(const topo::Topology& topology);
// Checks an algorithm's option values for `ranks` (e.g. stragglar's stragglers and late) at
// their YAML keys under `node` (the options map).
void check_algorithm_options(const alg::AlgorithmInfo& info, int ranks, const alg::Options& options,
                             const ConfigNode& node);
// The topology's node structure for algorithms that take `gpus_per_node` (hierarchical,
// stragglar_hier): sets it from topology.gpus_per_node (hierarchical topologies) when the
// options do not say; fails at `options_node`'s key when they say otherwise. No-op for
// algorithms without the option or topologies without node structure (then the option's
// own default applies). `options_node` may be absent (no options map given).
void apply_node_structure(const topo::Topology& topology, const alg::AlgorithmInfo& info,
                          alg::Options& options, const std::optional<ConfigNode>& options_node);
// An algorithm that reduces in a switch (AlgorithmInfo::in_network) needs a topology with a
// reducing switch (either network model costs it); fails at `at` otherwise. No-op for others.
void check_in_network(const alg::AlgorithmInfo& info, const topo::Topology& topology,
                      const ConfigNode& at);
// For an in-network algorithm: the first group of ranks that no reducing switch joins (a node
// or a rail by its index, per AlgorithmInfo::reduce_scope and the topology's gpus_per_node;
// else all ranks, group 0), or -1 when every group has one (and for other algorithms).
int unreduced_group(const alg::AlgorithmInfo& info, const topo::Topology& topology);
// prediction.k (c.late_count) applied to a straggler-aware algorithm's options: sets
// stragglers=k when they do not say, fails at `k_node` when they say otherwise or the
// algorithm takes one late rank only.
void apply_late_count(const sim::SimulationConfig& c, const alg::AlgorithmInfo& info,
                      alg::Options& options, const ConfigNode& k_node);

}  // namespace ssim::experiments

namespace ssim::experiments {

// A calibrated topology file, as `stragglesim calibrate -o` writes it: a topology of `kind`
// (switch | fully_connected | ring) whose bandwidth and latency are fitted numbers, with their
// provenance. It loads with load_topology (provenance is free text to the loader; calibrate
// writes it as a map):
//   kind: switch
//   ranks: 8
//   bandwidth: 449.87GB/s
//   latency: 3.0124us
//   name: h100_nvlink
//   description: "..."
//   provenance: {machine, date, source, input, link_class, size_range, min_bytes, max_bytes,
//                rows, residual (median |relative error|), r_squared, fit, gamma, gamma_source}
struct CalibrationProvenance {
  std::string machine;
  std::string date;    // ISO 8601 UTC
  std::string source;  // the measurement file
  std::string input;   // "point-to-point sweep" | "collective runs"
  std::string link_class;
  std::string size_range;  // the fitted piece, e.g. "[0, 64KiB)"
  Bytes min_bytes;
  Bytes max_bytes;
  std::size_t rows = 0;
  double residual = 0.0;  // median |relative error| of the fit
  double r_squared = 0.0;
  std::string fit;  // method, e.g. "least squares on relative residuals ..."
  std::optional<SecondsPerByte> gamma;
  std::string gamma_source;  // where gamma came from
};

struct CalibratedTopology {
  std::string kind = "switch";
  int ranks = 0;
  BytesPerSecond bandwidth;
  Seconds latency;
  std::string name;
  std::string description;
  CalibrationProvenance provenance;
};

// The YAML text of a calibrated topology file (numbers with 6 significant digits and a unit).
// InputError for an unknown kind, ranks < 2, a bandwidth <= 0 or a negative latency.
std::string calibrated_topology_yaml(const CalibratedTopology& topology);

// A topology fitted by simulation (calibrate --topology-kind shared_device or --by-simulation):
// its keys in order with their values as text (units included), then description and
// provenance entries (text; written double-quoted).
struct FittedTopologyFile {
  std::string kind;
  int ranks = 0;
  std::vector<std::pair<std::string, std::string>> keys;
  std::string name;
  std::string description;
  std::vector<std::pair<std::string, std::string>> provenance;
};
std::string fitted_topology_yaml(const FittedTopologyFile& file);

// Topology parameters (experiments/config/topology_knobs.cpp): a topology file's `bandwidth` and
// `latency` keys at any depth of its maps (`nic.bandwidth`, `nvlink.reduce.latency`, `latency`),
// in document order, with their values in SI units (bytes/s, seconds); provenance, name and
// description are not parameters. calibrate fits them by simulation.
struct TopologyKnob {
  std::string key;  // dotted path, e.g. "nic.bandwidth"
  double value = 0;
  bool bandwidth = false;  // else a latency
};
std::vector<TopologyKnob> topology_knobs(const std::string& path);
// The topology of `path` with these keys replaced (as `{file: path, nic: {bandwidth: ...}}`
// would load it; values in SI units, written with 6 significant digits).
topo::Topology load_topology_with(const std::string& path, const std::map<std::string, double>& values);
// The file's YAML with these keys replaced and its provenance map replaced by `provenance`
// (comments are not kept).
std::string topology_yaml_with(const std::string& path, const std::map<std::string, double>& values,
                               const std::vector<std::pair<std::string, std::string>>& provenance);

// The reduce cost a calibrated topology file records under provenance.gamma, if any.
std::optional<SecondsPerByte> load_calibrated_gamma(const ConfigNode& topology);

}  // namespace ssim::experiments

namespace ssim::experiments {

// An experiment (`stragglesim run`, docs/user_guide.md):
//   name: paper_scaling                       default: the file's stem
//   description: free text
//   topology: <topology>                      required (inline or a file, as above)
//   network: {model: alphabeta | flow, gamma: 0.1ns/B}
//   algorithms: [ring, {algorithm: dbtree, label: dbtree8, options: {segments: 8}}, ...]
//                                             or algorithm: ENTRY for one
//   baseline: ring                            a label; default the first algorithm
//   metric: completion | after_last_arrival   summary and plots (default completion)
//   size: 1GiB                                required unless swept
//   delays: <delay model>                     base (every rank, every iteration), trace,
//                                             persistent (as above)
//   stragglers: {count: 1 | ranks: [..], delay: <distribution>, persistence: 1.0, probability: P}
//                                             count k: persistent stragglers on ranks n-1 .. n-k
//   prediction: {policy: oracle | fixed | previous, rank: R}
//                                             fixed: default the schedule's straggler; absent:
//                                             oracle, or fixed for an algorithm whose options
//                                             name a straggler (run_config)
//   ranks: 16                                 the topology's rank count, as sweep.ranks sets it
//   iterations: 20   seed: 1   output: results/<name>
//   workload: {...}                           a training job (training.hpp's workload:,
//                                             load_workload): every run is sim::run_training of
//                                             it, iterations are steps; size is then refused
//   mode: synchronous | {mode: grouped, groups: G, every: K} | {mode: local_sgd, every: K}
//                                             with a workload only (default synchronous)
//   sweep:                                    the cartesian product of the axes, in this order
//     ranks: [4, 8, 16]                       the topology's rank count (hierarchical: nodes x
//                                             gpus_per_node)
//     size: [1MiB, 1GiB] | {min: 256KiB, max: 4GiB, factor: 4}
//     delay: [0, 1ms, 5ms]                    stragglers.delay; any distribution parameter by
//                                             path,
//                                             e.g. stragglers.delay.mean, delays.base.p90
//     stragglers: [1, 2]   persistence: [0.8, 0.9]   probability: [0.1, 0.3]
//     policy: [oracle, previous]   gamma: [...]
//     topology.bandwidth: [...]               any topology parameter by its key path
//     workload.bucket_cap: [...]              any workload parameter by its key path
// Each point is loaded and checked (topology, delays, algorithms' rank support) before any run;
// an error in a swept value names the sweep point and points at the value in the sweep list.
// Points are loaded by patching the reader's document in place and restoring it: do not use
// the same reader from another thread while this runs.
// `simulate` reads the same document for `stragglesim simulate` (load_simulation_config): it
// also takes `collective:`, and refuses more than one point or algorithm before loading any
// point; `run` refuses `collective:` with a message that names `simulate`.
enum class ConfigCommand { run, simulate };
Experiment load_experiment(const ConfigReader& reader, ConfigCommand command = ConfigCommand::run);

}  // namespace ssim::experiments
