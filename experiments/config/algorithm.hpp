// The algorithm entries of configs (simulate's collective, each of training's and of an
// experiment's algorithms): the name looked up in the registry and the options map read and
// checked, with the same messages in each. Defined in simulation.cpp, next to
// check_algorithm_options and apply_node_structure (config.hpp), which they call.
#pragma once

#include <optional>

#include "algorithms/registry.hpp"
#include "experiments/config/reader.hpp"
#include "topologies/topology.hpp"

namespace ssim::experiments {

// The registry entry named at `name` for `ranks` ranks; fails at `name` when the registry has
// none (its message) or the algorithm does not support `ranks`.
const alg::AlgorithmInfo& load_algorithm_name(const ConfigNode& name, int ranks);

// The options of `info` for `ranks` ranks from the options map `node` (absent: none given): each
// key one of the algorithm's options (fails at the key, listing them), straggler a rank; then
// check_algorithm_entry_options with `name` as `at`.
alg::Options load_algorithm_options(const alg::AlgorithmInfo& info, int ranks,
                                    const topo::Topology& topology,
                                    const std::optional<ConfigNode>& node, const ConfigNode& name);

// The topology's node structure applied to `options` (apply_node_structure), then their values
// checked for `ranks`: at their keys under the options map `node` (check_algorithm_options), or,
// with no map, by the algorithm's own check, failing at `at`. Also for each point of an
// experiment's sweep.
void check_algorithm_entry_options(const alg::AlgorithmInfo& info, int ranks,
                                   const topo::Topology& topology, alg::Options& options,
                                   const std::optional<ConfigNode>& node, const ConfigNode& at);

}  // namespace ssim::experiments
