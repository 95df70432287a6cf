// The algorithm entry of a config (simulate's collective, each of training's algorithms): its
// name looked up in the registry and its options map read, with the same checks and messages in
// both. Defined in config_simulation.cpp, next to check_algorithm_options and
// apply_node_structure (config.hpp), which it calls.
#pragma once

#include <optional>

#include "algorithms/registry.hpp"
#include "experiments/config_reader.hpp"
#include "topologies/topology.hpp"

namespace ssim::exp {

// The registry entry named at `name` for `ranks` ranks; fails at `name` when the registry has
// none (its message) or the algorithm does not support `ranks`.
const alg::AlgorithmInfo& load_algorithm_name(const ConfigNode& name, int ranks);

// The options of `info` for `ranks` ranks from the options map `node` (absent: none given): each
// key one of the algorithm's options (fails at the key, listing them), straggler a rank; then the
// topology's node structure (apply_node_structure) and the values checked
// (check_algorithm_options; without a map, the algorithm's own check fails at `name`).
alg::Options load_algorithm_options(const alg::AlgorithmInfo& info, int ranks,
                                    const topo::Topology& topology,
                                    const std::optional<ConfigNode>& node, const ConfigNode& name);

}  // namespace ssim::exp
