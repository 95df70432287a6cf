#include "experiments/config/training.hpp"

#include <algorithm>
#include <cmath>
#include <optional>

#include "algorithms/registry.hpp"
#include "common/checked.hpp"
#include "common/error.hpp"
#include "experiments/config/algorithm.hpp"
#include "experiments/config/config.hpp"

namespace ssim::experiments {
namespace {

// More layers than this (a model given by times, cut into bucket-sized pieces) is a bucket cap
// far too small for the model.
constexpr std::uint64_t kMaxLayers = 1'000'000;

// A positive, finite compute time at `key`.
Seconds positive_time(const ConfigNode& node, const std::string& key) {
  const ConfigNode v = node.child(key);
  const Seconds t = v.as_time();
  if (!(t.value > 0) || !std::isfinite(t.value)) v.fail(key + " must be > 0");
  return t;
}

// An algorithm entry: a registry name, or {algorithm: NAME, options: {key: value}}.
sim::TrainingAlgorithm load_algorithm(const ConfigNode& item, const topo::Topology& topology) {
  const int ranks = topology.gpu_count();
  const ConfigNode name = item.is_map() ? item.child("algorithm") : item;
  if (item.is_map()) item.allow_only({"algorithm", "options"});
  const alg::AlgorithmInfo& info = load_algorithm_name(name, ranks);
  const std::optional<ConfigNode> opts = item.is_map() ? item.maybe("options") : std::nullopt;
  sim::TrainingAlgorithm a{info.name, load_algorithm_options(info, ranks, topology, opts, name)};
  if (a.options.has("stragglers") && a.options.get_int("stragglers", 1, 1, 1 << 30) > 1)
    opts->child("stragglers").fail("the training model runs schedules built for one late rank");
  return a;
}

// workload.model: a layer list, or parameters with forward and backward times. Each key and
// each layer on its own (errors collected, reader.hpp); `sizes_ok`: the workload's
// gradient_bytes_per_param and bucket_cap loaded (params are cut into buckets of that size).
void load_model(const ConfigNode& model, int samples, bool sizes_ok, sim::TrainingConfig& c) {
  model.allow_only({"name", "source", "layers", "achieved_tflops", "backward_factor", "params",
                    "forward", "backward"});
  for (const char* key : {"name", "source"}) {
    collect([&] {
      if (model.has(key)) model.child(key).as_string();
    });
  }
  if (model.has("layers") == model.has("params")) {
    // A misspelled layers or params is reported as such (allow_only), not a second time here.
    stop_if_misspelled(model, "layers");
    stop_if_misspelled(model, "params");
    model.fail("give either layers (a list) or params with forward and backward times");
  }
  if (model.has("params")) {
    Values v;
    for (const char* key : {"achieved_tflops", "backward_factor"}) {
      v([&] {
        if (model.has(key)) model.child(key).fail(std::string(key) + " is for a layer list");
        return 0;
      });
    }
    const ConfigNode pn = model.child("params");
    const std::uint64_t params =
        v([&] { return static_cast<std::uint64_t>(pn.as_int(1, INT64_MAX / 16)); });
    const Seconds forward = v([&] { return positive_time(model, "forward"); });
    const Seconds backward = v([&] { return positive_time(model, "backward"); });
    v.done();
    if (!sizes_ok) throw ErrorsRecorded{};  // the bucket size is not known
    // Gradients come out at an even rate during backward: pieces of one bucket each.
    const std::uint64_t piece = (c.bucket_cap.value + c.bytes_per_param - 1) / c.bytes_per_param;
    const std::uint64_t pieces = (params + piece - 1) / piece;
    if (pieces > kMaxLayers) {
      pn.fail("with bucket_cap " + format_bytes(c.bucket_cap) + " this is " +
              std::to_string(pieces) + " buckets (at most " + std::to_string(kMaxLayers) + ")");
    }
    for (std::uint64_t i = 0; i < pieces; ++i) {
      const std::uint64_t p = std::min(piece, params - i * piece);
      const double share = static_cast<double>(p) / static_cast<double>(params);
      c.layers.push_back({"part" + std::to_string(i), p, Seconds{forward.value * share},
                          Seconds{backward.value * share}});
    }
    return;
  }
  std::optional<double> tflops;
  const bool tflops_ok = collect([&] {
    if (model.has("achieved_tflops")) {
      const ConfigNode t = model.child("achieved_tflops");
      tflops = t.as_double(0, 1e9);
      if (!(*tflops > 0)) t.fail("achieved_tflops must be > 0");
    }
  });
  double factor = 2.0;  // stays the default when backward_factor has an error
  collect([&] {
    const double f = model.get_double("backward_factor", 2.0, 0, 1e6);
    if (!(f > 0)) model.child("backward_factor").fail("backward_factor must be > 0");
    factor = f;
  });
  const auto items = model.child("layers").items();
  if (items.empty()) model.child("layers").fail("the model has no layers");
  bool layers_ok = true;
  for (const ConfigNode& l : items) {
    layers_ok = collect([&] {
      l.allow_only({"name", "params", "flops", "forward", "backward", "count"});
      Values v;
      const std::string name =
          v([&] { return l.get_string("name", "layer" + std::to_string(c.layers.size())); });
      const std::uint64_t params =
          v([&] { return static_cast<std::uint64_t>(l.get_int("params", 0, 0, INT64_MAX / 16)); });
      const int count = v([&] { return static_cast<int>(l.get_int("count", 1, 1, 100'000)); });
      Seconds forward, backward;
      const bool forward_ok = collect([&] {
        if (l.has("flops")) {
          if (l.has("forward")) l.child("forward").fail("give flops or forward, not both");
          const ConfigNode f = l.child("flops");
          const double flops = f.as_double(0, 1e30);
          if (!(flops > 0)) f.fail("flops must be > 0");
          if (!tflops_ok) throw ErrorsRecorded{};  // achieved_tflops's error is reported
          if (!tflops) f.fail("flops need model.achieved_tflops");
          forward = Seconds{flops * samples / (*tflops * 1e12)};
        } else if (l.has("forward")) {
          forward = positive_time(l, "forward");
        } else {
          l.fail("a layer needs flops (forward FLOPs per sample) or a forward time");
        }
      });
      const bool backward_ok = collect([&] {
        if (l.has("backward")) backward = positive_time(l, "backward");
      });
      v.done();
      if (!forward_ok || !backward_ok) throw ErrorsRecorded{};
      if (!l.has("backward")) backward = Seconds{forward.value * factor};
      if (!(forward.value > 0) || !(backward.value > 0)) l.fail("compute times must be > 0");
      if (c.layers.size() + static_cast<std::size_t>(count) > kMaxLayers)
        l.fail("more than " + std::to_string(kMaxLayers) + " layers");
      for (int i = 0; i < count; ++i)
        c.layers.push_back({count > 1 ? name + std::to_string(i) : name, params, forward, backward});
    }) && layers_ok;
  }
  if (!layers_ok) throw ErrorsRecorded{};
}

}  // namespace

// A modes entry: synchronous, {mode: grouped, groups: G, every: K}, {mode: local_sgd,
// every: K} or {mode: exclude_late, late: L, every: K}.
sim::SyncSpec load_sync_mode(const ConfigNode& item, int ranks) {
  sim::SyncSpec m;
  const ConfigNode kind = item.is_map() ? item.child("mode") : item;
  const std::string name = kind.as_choice({"synchronous", "grouped", "local_sgd", "exclude_late"});
  if (name == "synchronous") {
    if (item.is_map()) item.allow_only({"mode"});
    return m;
  }
  if (!item.is_map())
    item.fail(name + " needs every (grouped also groups, exclude_late also late): {mode: " + name +
              ", ...}");
  if (name == "grouped") {
    item.allow_only({"mode", "groups", "every"});
    m.mode = sim::SyncMode::grouped;
    const ConfigNode g = item.child("groups");
    m.groups = static_cast<int>(g.as_int(2, ranks));
    if (ranks % m.groups != 0) g.fail("groups must divide the " + std::to_string(ranks) + " ranks");
  } else if (name == "exclude_late") {
    item.allow_only({"mode", "late", "every"});
    m.mode = sim::SyncMode::exclude_late;
    // At least 2 ranks reduce.
    m.late = static_cast<int>(item.child("late").as_int(1, ranks - 2));
  } else {
    item.allow_only({"mode", "every"});
    m.mode = sim::SyncMode::local_sgd;
  }
  m.every = static_cast<int>(item.child("every").as_int(1, 1'000'000));
  return m;
}

void check_mode_algorithm(const sim::SyncSpec& m, int ranks, const std::string& algorithm,
                          const alg::Options& options, const ConfigNode& where) {
  if (m.mode != sim::SyncMode::grouped && m.mode != sim::SyncMode::exclude_late) return;
  const int size = m.mode == sim::SyncMode::grouped ? ranks / m.groups : ranks - m.late;
  const alg::AlgorithmInfo& info = alg::find_algorithm(algorithm);
  if (!info.supports_ranks(size)) {
    where.fail("algorithm " + info.name + " does not support groups of " + std::to_string(size) +
               " ranks (" + m.describe() + "; supported: " + info.supported_ranks + ")");
  }
  if (m.mode != sim::SyncMode::exclude_late) return;
  alg::Options group_options;
  for (const auto& kv : options.values()) {
    if (kv.first != "straggler") group_options.set(kv.first, kv.second);
  }
  bool switches = false;
  try {
    switches = alg::generate(info.name, size, group_options).has_switch_reduces();
  } catch (const InputError& e) {
    where.fail("algorithm " + info.name + " on the " + std::to_string(size) +
               " ranks that reduce under " + m.describe() + ": " + e.what());
  }
  if (switches) {
    where.fail("algorithm " + info.name + " reduces in switches, which " + m.describe() +
               " does not model for a group of " + std::to_string(size) + " ranks");
  }
}

void check_mode_policy(const sim::SyncSpec& m, sim::StragglerPolicy policy, bool adaptive,
                       const ConfigNode& where) {
  if (m.mode != sim::SyncMode::exclude_late) return;
  if (policy == sim::StragglerPolicy::eager || adaptive) {
    where.fail(m.describe() +
               " predicts the ranks that sit out before the step: use prediction policy oracle, "
               "previous or fixed (not " +
               (policy == sim::StragglerPolicy::eager ? "eager" : "adaptive") + ")");
  }
  if (policy == sim::StragglerPolicy::fixed && m.late > 1)
    where.child("late").fail("policy fixed names one rank: late must be 1");
}

void load_workload(const ConfigNode& w, sim::TrainingConfig& c) {
  // Each key on its own (errors collected, reader.hpp); the checks across them when they all
  // loaded. Nested in a loader's all_errors(), it stops its caller's part when it recorded any.
  all_errors([&] {
    w.allow_only(
        {"model", "samples_per_gpu", "gradient_bytes_per_param", "bucket_cap", "optimizer"});
    collect([&] { c.samples_per_gpu = static_cast<int>(w.get_int("samples_per_gpu", 1, 1, 1 << 30)); });
    bool sizes_ok = collect([&] {
      c.bytes_per_param = static_cast<std::uint64_t>(w.get_int("gradient_bytes_per_param", 4, 1, 16));
    });
    sizes_ok = collect([&] {
      c.bucket_cap = w.get_bytes("bucket_cap", Bytes{25ull << 20});
      if (c.bucket_cap.value == 0) w.child("bucket_cap").fail("bucket_cap must be > 0");
    }) && sizes_ok;
    collect([&] {
      if (w.has("optimizer")) {
        const ConfigNode o = w.child("optimizer");
        c.optimizer = o.as_time();
        if (!(c.optimizer.value >= 0) || !std::isfinite(c.optimizer.value))
          o.fail("optimizer must be >= 0");
      }
    });
    const bool model_ok =
        collect([&] { load_model(w.child("model"), c.samples_per_gpu, sizes_ok, c); });
    if (!model_ok || !sizes_ok) return;
    // The model's parameters and gradient bytes, checked (common/checked.hpp): 16 layers of 2^58
    // parameters are 2^62, in bytes past 64 bits.
    const ConfigNode model = w.child("model");
    auto too_large = [&model](const std::string& what) {
      model.fail("the model's gradients do not fit in 64 bits: " + what +
                 " (parameters x gradient_bytes_per_param must be at most 2^64 - 1 bytes)");
    };
    std::uint64_t params = 0;
    for (const sim::TrainingLayer& l : c.layers) params = checked_add(params, l.params, too_large);
    const std::uint64_t gradients = checked_mul(params, c.bytes_per_param, too_large);
    if (params == 0) model.fail("the model has no parameters");
    if (c.bucket_cap.value > gradients) {
      const ConfigNode cap = w.has("bucket_cap") ? w.child("bucket_cap") : w;
      cap.fail("bucket_cap " + format_bytes(c.bucket_cap) +
               " is larger than the model's gradients (" + format_bytes(Bytes{gradients}) + ")");
    }
  });
}

namespace {

// load_training_config's body: each key on its own (errors collected, reader.hpp); what needs
// the rank count waits for the topology, the checks across algorithms, modes and prediction
// for all three.
sim::TrainingConfig load_training_parts(const ConfigReader& reader) {
  list_file_first(reader.file());
  const ConfigNode root = reader.root();
  root.allow_only({"name", "description", "topology", "network", "algorithms", "modes",
                   "prediction", "delays", "workload", "steps", "seed", "cluster_gpus"});
  for (const char* key : {"name", "description"}) {
    collect([&] {
      if (root.has(key)) root.child(key).as_string();
    });
  }
  const std::string dir = reader.directory();
  sim::TrainingConfig c;
  const bool topology_ok = collect([&] {
    c.topology = load_topology(root.child("topology"), dir);
    if (c.topology.gpu_count() < 2) root.child("topology").fail("training needs at least 2 ranks");
  });
  const int ranks = topology_ok ? c.topology.gpu_count() : 0;
  if (topology_ok) c.network = default_network(c.topology);
  collect([&] {
    if (auto net = root.maybe("network")) {
      load_network(*net, c.network, c.gamma, c.protocol, c.pipelined_kernels);
    }
  });
  bool algorithms_ok = false;
  bool modes_ok = false;
  std::vector<ConfigNode> mode_items;
  if (topology_ok) {
    algorithms_ok = collect([&] {
      bool all = true;
      for (const ConfigNode& item : root.child("algorithms").items(/*scalar_ok=*/true))
        all &= collect([&] { c.algorithms.push_back(load_algorithm(item, c.topology)); });
      if (!all) throw ErrorsRecorded{};
      if (c.algorithms.empty()) root.child("algorithms").fail("no algorithm given");
    });
    modes_ok = collect([&] {
      if (auto modes = root.maybe("modes")) {
        c.modes.clear();
        bool all = true;
        for (const ConfigNode& item : modes->items(/*scalar_ok=*/true)) {
          all &= collect([&] {
            c.modes.push_back(load_sync_mode(item, ranks));
            mode_items.push_back(item);
          });
        }
        if (!all) throw ErrorsRecorded{};
        if (c.modes.empty()) modes->fail("no mode given");
      }
    });
  }
  // Every algorithm must support the groups' rank count too.
  if (algorithms_ok && modes_ok) {
    collect([&] {
      for (std::size_t k = 0; k < c.modes.size(); ++k) {
        const auto items = root.child("algorithms").items(/*scalar_ok=*/true);
        for (std::size_t i = 0; i < c.algorithms.size(); ++i)
          check_mode_algorithm(c.modes[k], ranks, c.algorithms[i].name, c.algorithms[i].options,
                               items[i]);
      }
    });
  }

  collect([&] { load_workload(root.child("workload"), c); });

  if (topology_ok) {
    collect([&] {
      if (auto delays = root.maybe("delays")) {
        c.delays = load_delay_model(*delays, dir);
        if (auto list = delays->maybe("persistent")) {
          for (const ConfigNode& item : list->items()) item.child("rank").as_int(0, ranks - 1);
        }
        if (c.delays.trace && c.delays.trace->ranks() != ranks) {
          delays->child("trace").fail("the trace has " + std::to_string(c.delays.trace->ranks()) +
                                      " ranks but the topology has " + std::to_string(ranks));
        }
      }
    });
    collect([&] {
      if (auto pred = root.maybe("prediction")) {
        sim::SimulationConfig s;
        load_prediction(*pred, ranks, s, /*policy_swept=*/false);
        if (s.late_count && *s.late_count > 1)
          pred->child("k").fail("the training model takes one late rank");
        c.policy = s.policy;
        c.straggler = s.straggler;
        c.adaptive_fallbacks = s.adaptive_fallbacks;
        c.detection = s.detection;
        if (c.policy == sim::StragglerPolicy::fixed && !c.straggler)
          pred->fail("policy fixed needs a rank");
        if (!algorithms_ok || !modes_ok) return;  // the checks against them below
        // mode_items: the modes as written (none without `modes:`, where the default
        // synchronous mode needs no check).
        for (std::size_t i = 0; i < mode_items.size(); ++i)
          check_mode_policy(c.modes[i], c.policy, !c.adaptive_fallbacks.empty(), mode_items[i]);
        // load_prediction checked the fallbacks against the rank count; grouped modes run them
        // on each group's ranks too (when an algorithm is straggler-aware, so that they can
        // run).
        const bool aware = std::any_of(c.algorithms.begin(), c.algorithms.end(), [](const auto& a) {
          return alg::find_algorithm(a.name).straggler_aware;
        });
        if (aware && pred->has("fallback")) {
          const auto items = pred->child("fallback").items(/*scalar_ok=*/true);
          for (std::size_t i = 0; i < c.adaptive_fallbacks.size(); ++i) {
            const alg::AlgorithmInfo& info = alg::find_algorithm(c.adaptive_fallbacks[i]);
            for (const sim::SyncSpec& m : c.modes) {
              if (m.mode != sim::SyncMode::grouped || info.supports_ranks(ranks / m.groups))
                continue;
              items[i].fail(info.name + " does not support groups of " +
                            std::to_string(ranks / m.groups) + " ranks (" + m.describe() +
                            "; supported: " + info.supported_ranks + ")");
            }
          }
        }
      }
    });
  }
  collect([&] { c.steps = static_cast<int>(root.get_int("steps", 100, 1, 10'000'000)); });
  collect([&] { c.seed = static_cast<std::uint64_t>(root.get_int("seed", 1, 0, INT64_MAX)); });
  if (topology_ok) {
    collect([&] {
      c.cluster_gpus = static_cast<int>(root.get_int("cluster_gpus", ranks, 1, 100'000'000));
    });
  }
  return c;
}

}  // namespace

sim::TrainingConfig load_training_config(const ConfigReader& reader) {
  return all_errors([&] { return load_training_parts(reader); });
}

}  // namespace ssim::experiments
