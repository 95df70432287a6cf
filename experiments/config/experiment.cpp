// The typed experiment's own functions (experiment.hpp): point labels and seeds, the
// command-line overrides, the simulation of a run.
#include "experiments/config/experiment.hpp"

#include <algorithm>
#include <optional>

#include "common/error.hpp"
#include "common/random.hpp"

namespace ssim::experiments {

std::string Experiment::point_label(std::size_t point) const {
  if (axes.empty()) return "-";
  std::string out;
  for (std::size_t k = 0; k < axes.size(); ++k) {
    out += (k ? " " : "") + axes[k].key + "=" + axes[k].labels[points[point].value[k]];
  }
  return out;
}

std::uint64_t point_seed(std::uint64_t seed, const std::vector<SweepAxis>& axes,
                         const std::vector<std::size_t>& value) {
  if (axes.empty()) return seed;            // one point: the seed as given (as `simulate` uses it)
  std::uint64_t h = 0xcbf29ce484222325ULL;  // FNV-1a 64
  auto feed = [&](const std::string& s) {
    for (unsigned char ch : s) {
      h ^= ch;
      h *= 0x100000001b3ULL;
    }
  };
  for (std::size_t k = 0; k < axes.size(); ++k)
    feed(axes[k].key + "=" + axes[k].labels[value[k]] + ";");
  return splitmix64(seed ^ h);
}

std::size_t default_baseline(const std::vector<ExperimentAlgorithm>& algorithms) {
  std::optional<std::size_t> forced;
  for (std::size_t a = 0; a < algorithms.size(); ++a) {
    if (algorithms[a].name != "nccl" || algorithms[a].schedule) continue;
    if (!algorithms[a].options.has("algo")) return a;
    if (!forced) forced = a;
  }
  return forced.value_or(0);
}

void set_iterations(Experiment& e, int iterations) {
  if (iterations < 1)
    throw InputError("iterations must be >= 1, got " + std::to_string(iterations));
  e.iterations = iterations;
  for (SweepPoint& p : e.points) p.config.iterations = iterations;
}

void set_seed(Experiment& e, std::uint64_t seed) {
  e.seed = seed;
  for (SweepPoint& p : e.points) p.config.seed = point_seed(seed, e.axes, p.value);
}

sim::SimulationConfig run_config(const Experiment& e, std::size_t run) {
  const std::size_t nalg = e.algorithms.size();
  sim::SimulationConfig c = e.points[run / nalg].config;
  c.algorithm = e.algorithms[run % nalg].name;
  c.options = e.algorithms[run % nalg].options;
  c.schedule = e.algorithms[run % nalg].schedule;
  if (c.schedule) {
    // A schedule file runs as generated; built for a chosen straggler (its recorded options say
    // so, as `schedule --straggler R` writes them), it is predicted as the registry entry with
    // that option would be: that rank, fixed unless the YAML gives a prediction.
    if (c.options.has("straggler") && c.schedule->straggler) {
      if (e.default_prediction) c.policy = sim::StragglerPolicy::fixed;
      if (!c.straggler) c.straggler = *c.schedule->straggler;
    }
    return c;
  }
  const alg::AlgorithmInfo& info = alg::find_algorithm(c.algorithm);
  // A hierarchical topology's GPUs per node for the algorithms that take it (checked at load).
  const bool takes_nodes = info.takes("gpus_per_node");
  if (takes_nodes && c.topology.gpus_per_node > 0 && !c.options.has("gpus_per_node"))
    c.options.set("gpus_per_node", std::to_string(c.topology.gpus_per_node));
  // prediction.k builds a straggler-aware algorithm for k late ranks (checked at load).
  const bool takes_k = info.takes("stragglers");
  if (c.late_count && *c.late_count > 1 && takes_k && !c.options.has("stragglers"))
    c.options.set("stragglers", std::to_string(*c.late_count));
  // A schedule built for a given straggler: without a prediction, that rank is predicted
  // (fixed); with one, it is the rank of `fixed` and of `previous`'s first iteration.
  if (c.options.has("straggler")) {
    if (e.default_prediction) c.policy = sim::StragglerPolicy::fixed;
    if (!c.straggler) {
      c.straggler = static_cast<int>(
          c.options.get_int("straggler", 0, 0, std::max(0, c.topology.gpu_count() - 1)));
    }
  }
  return c;
}

std::uint64_t Workload::gradient_bytes() const {
  std::uint64_t params = 0;
  for (const sim::TrainingLayer& l : layers) params += l.params;
  return params * bytes_per_param;
}

}  // namespace ssim::experiments
