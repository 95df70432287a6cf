#include <algorithm>

#include "algorithms/nccl_options.hpp"
#include "algorithms/protocol.hpp"
#include "algorithms/registry.hpp"
#include "common/error.hpp"
#include "experiments/config/algorithm.hpp"
#include "experiments/config/config.hpp"
#include "sim/nccl_tuner.hpp"

namespace ssim::experiments {

const alg::AlgorithmInfo& load_algorithm_name(const ConfigNode& name, int ranks) {
  const alg::AlgorithmInfo* info = nullptr;
  try {
    info = &alg::find_algorithm(name.as_string());
  } catch (const InputError& e) {
    name.fail(e.what());
  }
  if (!info->supports_ranks(ranks)) {
    name.fail("algorithm " + info->name + " does not support the topology's " +
              std::to_string(ranks) + " ranks (supported: " + info->supported_ranks + ")");
  }
  return *info;
}

alg::Options load_algorithm_options(const alg::AlgorithmInfo& info, int ranks,
                                    const topo::Topology& topology,
                                    const std::optional<ConfigNode>& node, const ConfigNode& name) {
  alg::Options options;
  if (node) {
    node->require_map();
    for (const std::string& key : node->keys()) {
      const ConfigNode v = node->child(key);
      const bool known = info.takes(key);
      if (!known) {
        v.fail(alg::unknown_option_message(info, info.name, key));
      }
      if (key == "straggler") v.as_int(0, ranks - 1);
      options.set(key, v.as_string());
    }
  }
  check_algorithm_entry_options(info, ranks, topology, options, node, name);
  return options;
}

sim::NetworkKind default_network(const topo::Topology& topology) {
  return topology.network_model.empty() ? sim::NetworkKind::alphabeta
                                        : sim::parse_network_kind(topology.network_model);
}

void load_network(const ConfigNode& net, sim::NetworkKind& kind, SecondsPerByte& gamma,
                  std::optional<alg::Protocol>& protocol, bool& pipelined_kernels) {
  net.allow_only({"model", "gamma", "protocol", "steps"});
  // Without a model: `kind` as the caller set it (the topology's network_model, else alphabeta).
  kind = sim::parse_network_kind(
      net.get_choice("model", {"alphabeta", "flow"}, std::string(sim::to_string(kind))));
  if (net.has("gamma")) gamma = net.child("gamma").as_seconds_per_byte();
  // Schedules that name no protocol run as NCCL's send/recv with this one (none: by their
  // routes alone, the default).
  const std::string p = net.get_choice("protocol", {"none", "simple", "ll", "ll128"}, "none");
  if (p != "none") protocol = alg::parse_protocol(p);
  // How an NCCL kernel's steps take their latencies (sim/protocol.hpp): one per round
  // (per_round) or overlapped, up to NCCL's 8 steps in flight (pipelined, the default).
  pipelined_kernels =
      net.get_choice("steps", {"per_round", "pipelined"}, "pipelined") == "pipelined";
}

void check_algorithm_entry_options(const alg::AlgorithmInfo& info, int ranks,
                                   const topo::Topology& topology, alg::Options& options,
                                   const std::optional<ConfigNode>& node, const ConfigNode& at) {
  apply_node_structure(topology, info, options, node);
  if (node) {
    check_algorithm_options(info, ranks, options, *node);
  } else if (info.check_options) {
    try {
      info.check_options(ranks, options);
    } catch (const InputError& e) {
      at.fail(e.what());
    }
  }
  // What NCCL refuses on this machine (algo=nvls without a reducing switch, nvls_tree on one
  // node, ...) needs the topology: asked here, the error points at the option's line.
  if (info.name == "nccl" && ranks == topology.gpu_count()) {
    try {
      // Refusals only: the steps (the last argument) do not matter.
      (void)sim::nccl_choose(topology, Bytes{1}, alg::NcclRequest(ranks, options), true);
    } catch (const InputError& e) {
      const std::string what = e.what();
      if (node) {
        for (const std::string& key : node->keys()) {
          if (what.find("option " + key) != std::string::npos) node->child(key).fail(what);
        }
        node->fail(what);
      }
      at.fail(what);
    }
  }
}

void check_in_network(const alg::AlgorithmInfo& info, const topo::Topology& topology,
                      const ConfigNode& at) {
  if (!info.in_network) return;
  const int node = unreduced_group(info, topology);
  if (node < 0) {
    if (topology.shared_device)
      at.fail("algorithm " + info.name +
              " reduces in a switch, which the shared-device model does not cost");
    return;
  }
  using Scope = alg::AlgorithmInfo::ReduceScope;
  if (topology.gpus_per_node > 0 && topology.gpus_per_node < topology.gpu_count() &&
      info.reduce_scope == Scope::nodes) {
    at.fail("algorithm " + info.name + " reduces in each node's switch, and topology '" +
            topology.name + "' has no reducing switch that joins the GPUs of node " +
            std::to_string(node) +
            " (give its nvlink a reduce: {bandwidth, latency} key; "
            "docs/in_network_reduction.md)");
  }
  if (topology.gpus_per_node > 0 && info.reduce_scope == Scope::rails) {
    at.fail("algorithm " + info.name + " reduces in each rail's inter-node switch, and topology '" +
            topology.name + "' has no reducing switch that joins the GPUs of rail " +
            std::to_string(node) + " (local index " + std::to_string(node) +
            " of every node; give its fabric a reduce: {bandwidth, latency} key; "
            "docs/in_network_reduction.md)");
  }
  at.fail("algorithm " + info.name + " reduces in a switch, and topology '" + topology.name +
          "' has no reducing switch that joins all its ranks (give its switch a reduce: "
          "{bandwidth, latency} key; docs/in_network_reduction.md)");
}

int unreduced_group(const alg::AlgorithmInfo& info, const topo::Topology& topology) {
  if (!info.in_network) return -1;
  using Scope = alg::AlgorithmInfo::ReduceScope;
  const int n = topology.gpu_count();
  const int g = topology.gpus_per_node > 0 ? topology.gpus_per_node : n;
  std::vector<std::vector<int>> groups;
  if (info.reduce_scope == Scope::nodes && g < n) {
    for (int node = 0; node < n / g; ++node) {
      groups.emplace_back();
      for (int l = 0; l < g; ++l) groups.back().push_back(node * g + l);
    }
  } else if (info.reduce_scope == Scope::rails && topology.gpus_per_node > 0) {
    for (int l = 0; l < g; ++l) {
      groups.emplace_back();
      for (int node = 0; node < n / g; ++node) groups.back().push_back(node * g + l);
    }
  } else {
    groups.emplace_back();
    for (int r = 0; r < n; ++r) groups.back().push_back(r);
  }
  for (std::size_t i = 0; i < groups.size(); ++i)
    if (topology.reducing_switch_of(groups[i]) < 0) return static_cast<int>(i);
  return -1;
}

void apply_node_structure(const topo::Topology& topology, const alg::AlgorithmInfo& info,
                          alg::Options& options, const std::optional<ConfigNode>& options_node) {
  const bool takes = info.takes("gpus_per_node");
  if (!takes || topology.gpus_per_node <= 0) return;
  const std::string want = std::to_string(topology.gpus_per_node);
  if (options.has("gpus_per_node")) {
    const std::string given = options.get_string("gpus_per_node", "");
    if (given != want) {
      const std::string what = "algorithm " + info.name + " option gpus_per_node=" + given +
                               " does not match the topology's " + want + " GPUs per node (" +
                               topology.name + "); leave it out to take it from the topology";
      if (options_node && options_node->has("gpus_per_node"))
        options_node->child("gpus_per_node").fail(what);
      throw InputError(what);
    }
    return;
  }
  options.set("gpus_per_node", want);
}

void check_algorithm_options(const alg::AlgorithmInfo& info, int ranks, const alg::Options& options,
                             const ConfigNode& node) {
  if (options.has("stragglers")) node.child("stragglers").as_int(1, std::max(1, ranks - 2));
  if (!info.check_options) return;
  try {
    info.check_options(ranks, options);
  } catch (const InputError& e) {
    // The message names the option; point at the first option given that it names.
    const std::string what = e.what();
    for (const std::string& key : node.keys()) {
      if (what.find("option " + key) != std::string::npos) node.child(key).fail(what);
    }
    node.fail(what);
  }
}

void apply_late_count(const sim::SimulationConfig& c, const alg::AlgorithmInfo& info,
                      alg::Options& options, const ConfigNode& k_node) {
  if (!c.late_count || !info.straggler_aware) return;
  const int k = *c.late_count;
  const bool takes = info.takes("stragglers");
  if (!takes) {
    if (k > 1)
      k_node.fail(info.name + " is built for one late rank; k: " + std::to_string(k) +
                  " needs stragglar");
    return;
  }
  if (options.has("stragglers")) {
    const int own = options.get_int("stragglers", 1, 1, 1 << 30);
    if (own != k) {
      k_node.fail("k: " + std::to_string(k) + " but " + info.name + "'s option stragglers is " +
                  std::to_string(own) + " (give one of them, or the same count)");
    }
    return;
  }
  if (k > 1) options.set("stragglers", std::to_string(k));
}

sim::SimulationConfig load_simulation_config(const ConfigReader& reader) {
  const Experiment e = load_experiment(reader, ConfigCommand::simulate);
  return run_config(e, 0);
}

void load_prediction(const ConfigNode& node, int ranks, sim::SimulationConfig& c,
                     bool policy_swept) {
  node.allow_only({"policy", "rank", "fallback", "k", "detection"});
  const std::string policy =
      node.get_choice("policy", {"oracle", "fixed", "previous", "adaptive", "eager"}, "oracle");
  c.policy = sim::parse_straggler_policy(policy == "adaptive" ? "previous" : policy);
  c.detection.reset();
  if (node.has("detection")) {
    const ConfigNode d = node.child("detection");
    if (policy != "eager" && !policy_swept) d.fail("detection is for policy eager");
    const Seconds t = d.as_time();
    if (!(t.value >= 0) || t.value > 1.0) {
      d.fail("detection must be in [0, 1s] (the time the early ranks take to agree who is late)");
    }
    c.detection = t;
  }
  if (node.has("rank")) c.straggler = static_cast<int>(node.child("rank").as_int(0, ranks - 1));
  c.late_count.reset();
  if (node.has("k")) {
    const ConfigNode k = node.child("k");
    if (ranks < 3)
      k.fail("k: late ranks need at least 3 ranks, the topology has " + std::to_string(ranks));
    c.late_count = static_cast<int>(k.as_int(1, ranks - 2));
    if (*c.late_count > 1 && node.has("rank")) {
      node.child("rank").fail(
          "rank names one late rank; with k > 1 name them in the algorithm's late option");
    }
  }
  c.adaptive_fallbacks.clear();
  if (policy != "adaptive") {
    if (node.has("fallback") && !policy_swept)
      node.child("fallback").fail("fallback is for policy adaptive");
    return;
  }
  if (!node.has("fallback")) {
    c.adaptive_fallbacks = {"ring"};
    return;
  }
  for (const ConfigNode& item : node.child("fallback").unique_items(/*scalar_ok=*/true)) {
    const std::string name = item.as_string();
    const alg::AlgorithmInfo* info = nullptr;
    try {
      info = &alg::find_algorithm(name);
    } catch (const InputError& e) {
      item.fail(e.what());
    }
    if (info->straggler_aware)
      item.fail("a fallback must be a baseline, not straggler-aware like " + name);
    if (!info->supports_ranks(ranks)) {
      item.fail(name + " does not support " + std::to_string(ranks) + " ranks (" +
                info->supported_ranks + ")");
    }
    c.adaptive_fallbacks.push_back(name);
  }
}

}  // namespace ssim::experiments
