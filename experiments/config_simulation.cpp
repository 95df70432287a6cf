#include <algorithm>

#include "algorithms/registry.hpp"
#include "common/error.hpp"
#include "experiments/config.hpp"

namespace ssim::exp {
namespace {

// Checks the algorithm, the rank count and the option names at their YAML nodes; option values
// are checked by the generator when the simulation starts.
void load_collective(const ConfigNode& node, int ranks, sim::SimulationConfig& c) {
  node.allow_only({"algorithm", "size", "options"});
  const ConfigNode name = node.child("algorithm");
  const alg::AlgorithmInfo* info = nullptr;
  try {
    info = &alg::find_algorithm(name.as_string());
  } catch (const InputError& e) {
    name.fail(e.what());
  }
  if (!info->supports_ranks(ranks)) {
    name.fail("algorithm " + info->name + " does not support the topology's " + std::to_string(ranks) +
              " ranks (supported: " + info->supported_ranks + ")");
  }
  c.algorithm = info->name;
  c.size = node.get_bytes("size");
  if (c.size.value == 0) node.child("size").fail("size must be > 0");
  if (auto opts = node.maybe("options")) {
    opts->require_map();
    for (const std::string& key : opts->keys()) {
      const ConfigNode v = opts->child(key);
      const bool known = std::any_of(info->options.begin(), info->options.end(),
                                     [&](const alg::OptionSpec& s) { return s.name == key; });
      if (!known) {
        std::string list;
        for (const alg::OptionSpec& s : info->options) list += (list.empty() ? "" : ", ") + s.name;
        v.fail("algorithm " + info->name + " has no option '" + key + "' (" +
               (list.empty() ? std::string("it takes no options") : "options: " + list) + ")");
      }
      if (key == "straggler") v.as_int(0, ranks - 1);
      c.options.set(key, v.as_string());
    }
  }
}

}  // namespace

sim::SimulationConfig load_simulation_config(const ConfigReader& reader) {
  const ConfigNode root = reader.root();
  root.allow_only({"topology", "network", "collective", "delays", "prediction", "iterations", "seed", "name"});
  if (root.has("name"))
    root.child("name").as_string();  // a label for the reader: a string, not a list
  const std::string dir = reader.directory();
  sim::SimulationConfig c;
  c.topology = load_topology(root.child("topology"), dir);
  const int ranks = c.topology.gpu_count();

  if (auto net = root.maybe("network")) {
    net->allow_only({"model", "gamma"});
    c.network = sim::parse_network_kind(net->get_choice("model", {"alphabeta", "flow"}, "alphabeta"));
    if (net->has("gamma")) c.gamma = net->child("gamma").as_seconds_per_byte();
  }
  load_collective(root.child("collective"), ranks, c);

  if (auto delays = root.maybe("delays")) {
    c.delays = load_delay_model(*delays, dir);
    if (auto list = delays->maybe("persistent")) {
      const auto items = list->items();
      for (std::size_t i = 0; i < items.size(); ++i) items[i].child("rank").as_int(0, ranks - 1);
    }
    if (c.delays.trace && c.delays.trace->ranks() != ranks) {
      delays->child("trace").fail("the trace has " + std::to_string(c.delays.trace->ranks()) +
                                  " ranks but the topology has " + std::to_string(ranks));
    }
  }

  if (auto pred = root.maybe("prediction")) {
    load_prediction(*pred, ranks, c, /*policy_swept=*/false);
    if (c.policy == sim::StragglerPolicy::fixed && !c.straggler && !c.options.has("straggler")) {
      pred->fail("policy fixed needs a rank (prediction.rank or collective.options.straggler)");
    }
  } else if (c.options.has("straggler")) {
    c.policy = sim::StragglerPolicy::fixed;
  }
  if (!c.straggler && c.options.has("straggler")) c.straggler = c.options.get_int("straggler", 0, 0, ranks - 1);

  c.iterations = static_cast<int>(root.get_int("iterations", 1, 1, 10'000'000));
  c.seed = static_cast<std::uint64_t>(root.get_int("seed", 1, 0, INT64_MAX));
  return c;
}

void load_prediction(const ConfigNode& node, int ranks, sim::SimulationConfig& c, bool policy_swept) {
  node.allow_only({"policy", "rank", "fallback"});
  const std::string policy = node.get_choice("policy", {"oracle", "fixed", "previous", "adaptive"}, "oracle");
  c.policy = sim::parse_straggler_policy(policy == "adaptive" ? "previous" : policy);
  if (node.has("rank")) c.straggler = static_cast<int>(node.child("rank").as_int(0, ranks - 1));
  c.adaptive_fallbacks.clear();
  if (policy != "adaptive") {
    if (node.has("fallback") && !policy_swept) node.child("fallback").fail("fallback is for policy adaptive");
    return;
  }
  if (!node.has("fallback")) {
    c.adaptive_fallbacks = {"ring"};
    return;
  }
  for (const ConfigNode& item : node.child("fallback").items(/*scalar_ok=*/true)) {
    const std::string name = item.as_string();
    const alg::AlgorithmInfo* info = nullptr;
    try {
      info = &alg::find_algorithm(name);
    } catch (const InputError& e) {
      item.fail(e.what());
    }
    if (info->straggler_aware) item.fail("a fallback must be a baseline, not straggler-aware like " + name);
    if (!info->supports_ranks(ranks)) {
      item.fail(name + " does not support " + std::to_string(ranks) + " ranks (" + info->supported_ranks + ")");
    }
    c.adaptive_fallbacks.push_back(name);
  }
}

}  // namespace ssim::exp
