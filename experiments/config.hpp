// The config loader: YAML -> typed structs of the lower layers. With config_reader.* the
// only code that touches yaml-cpp. Every invalid field is an InputError naming the file,
// line, column, key path and value.
//
//   ConfigReader in("configs/topologies/dgx_h100.yaml");
//   topo::Topology t = load_topology(in.root(), in.directory());
//   sim::DelayModel d = load_delay_model(node, /*ranks=*/8, dir);
//
// Topology YAML (inline, or `{file: path}` / a bare path string naming a topology file whose
// top level is such a map; relative paths resolve against the including file's folder):
//   kind: switch | fully_connected | ring     ranks, bandwidth, latency
//   kind: torus2d | torus3d                   x, y[, z], bandwidth, latency
//   kind: fat_tree                            k, tiers (2|3), bandwidth, latency[, oversubscription, ranks]
//   kind: hierarchical                        nodes, gpus_per_node, nvlink: {bandwidth, latency},
//                                             nic: {bandwidth, latency},
//                                             fabric: {kind: leaf_spine|rail_optimized, spines,
//                                                      bandwidth, latency, nodes_per_leaf}
//   kind: custom                              nodes: [{name, type: gpu|switch}],
//                                             links: [{from, to, bandwidth, latency, class, duplex}]
//   ecmp: true|false (any kind; default false); name, description, provenance: free text
#pragma once

#include <string>

#include "experiments/config_reader.hpp"
#include "sim/delays.hpp"
#include "topologies/topology.hpp"

namespace ssim::exp {

topo::Topology load_topology(const ConfigNode& node, const std::string& base_dir);

// A distribution: a bare time ("5ms" = constant) or a map
//   {distribution: none|constant|uniform|normal|lognormal|exponential|pareto|empirical, ...}
// with value | low, high | mean, stddev | mu, sigma or mean, p90 | mean | scale, shape |
// samples: [..] or file: path.
sim::Distribution load_distribution(const ConfigNode& node, const std::string& base_dir);

// delays:
//   base: <distribution>                      every rank, every iteration (default none)
//   trace: path.csv                           replaces base (see sim/delays.hpp for the forms)
//   persistent: [{rank, delay: <distribution>, persistence: 0..1}]
sim::DelayModel load_delay_model(const ConfigNode& node, const std::string& base_dir);

}  // namespace ssim::exp
