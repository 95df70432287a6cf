#include <charconv>
#include <filesystem>

#include "common/error.hpp"
#include "experiments/config/config.hpp"
#include "experiments/config/delay_files.hpp"

namespace ssim::experiments {
namespace {

std::filesystem::path resolve(const ConfigNode& n, const std::string& base_dir) {
  return n.as_input_file(base_dir, "file");
}

// Library validation errors (e.g. sigma <= 0) are reported at the distribution's node.
template <typename F>
auto at_node(const ConfigNode& n, F f) {
  try {
    return f();
  } catch (const InputError& e) {
    n.fail(e.what());
  }
}

}  // namespace

double load_late_probability(const ConfigNode& node) {
  const std::string& text = node.is_scalar() ? node.yaml().Scalar() : std::string();
  double v = 0;
  const auto [ptr, ec] = std::from_chars(text.data(), text.data() + text.size(), v);
  if (!node.is_scalar() || ec != std::errc() || ptr != text.data() + text.size() ||
      !(v >= 0 && v <= 1)) {
    node.fail("must be a number in [0, 1]: the share of steps in which the straggler is late "
              "(1: every step)");
  }
  return v;
}

void check_late_probabilities(const std::vector<ConfigNode>& entries) {
  const ConfigNode* with = nullptr;
  const ConfigNode* without = nullptr;
  for (const ConfigNode& e : entries) {
    (e.has("probability") ? with : without) = &e;
    if (with && without) break;
  }
  if (!with || !without) return;
  const ConfigNode where = with->child("probability");
  const YAML::Mark m = without->yaml().Mark();
  where.fail("a straggler late in a share of the steps cannot be given together with one late "
             "in every step (" + without->path() + (m.line >= 0 ? ", line " + std::to_string(m.line + 1) : "") +
             ", has no probability): any rank would then be late in every step; give every "
             "straggler a probability (1: every step), or none");
}

sim::Distribution load_distribution(const ConfigNode& node, const std::string& base_dir) {
  if (node.is_scalar()) return at_node(node, [&] { return sim::Distribution::constant(node.as_time()); });
  node.require_map();
  const std::string kind = node.get_choice(
      "distribution", {"none", "constant", "uniform", "normal", "lognormal", "exponential", "pareto", "empirical"});
  using sim::Distribution;
  if (kind == "none") {
    node.allow_only({"distribution"});
    return Distribution::none();
  }
  if (kind == "constant") {
    node.allow_only({"distribution", "value"});
    const Seconds value = node.get_time("value");
    return at_node(node, [&] { return Distribution::constant(value); });
  }
  if (kind == "uniform") {
    node.allow_only({"distribution", "low", "high"});
    const Seconds low = node.get_time("low"), high = node.get_time("high");
    return at_node(node, [&] { return Distribution::uniform(low, high); });
  }
  if (kind == "normal") {
    node.allow_only({"distribution", "mean", "stddev"});
    // A negative untruncated mean is allowed by the model; YAML times are non-negative, so
    // "mean" here is >= 0.
    const Seconds mean = node.get_time("mean"), stddev = node.get_time("stddev");
    return at_node(node, [&] { return Distribution::normal(mean, stddev); });
  }
  if (kind == "lognormal") {
    node.allow_only({"distribution", "mu", "sigma", "mean", "p90"});
    const bool by_mu = node.has("mu") || node.has("sigma");
    const bool by_mean = node.has("mean") || node.has("p90");
    if (by_mu == by_mean) node.fail("give a lognormal either by mu and sigma or by mean and p90");
    if (by_mu) {
      const double mu = node.get_double("mu", std::nullopt, -1e3, 1e3);
      const double sigma = node.get_double("sigma", std::nullopt, 0.0, 1e3);
      return at_node(node, [&] { return Distribution::lognormal(mu, sigma); });
    }
    const Seconds mean = node.get_time("mean"), p90 = node.get_time("p90");
    return at_node(node, [&] { return Distribution::lognormal_mean_p90(mean, p90); });
  }
  if (kind == "exponential") {
    node.allow_only({"distribution", "mean"});
    const Seconds mean = node.get_time("mean");
    return at_node(node, [&] { return Distribution::exponential(mean); });
  }
  if (kind == "pareto") {
    node.allow_only({"distribution", "scale", "shape"});
    const double shape = node.get_double("shape", std::nullopt, 0.0, 1e6);
    const Seconds scale = node.get_time("scale");
    return at_node(node, [&] { return Distribution::pareto(scale, shape); });
  }
  node.allow_only({"distribution", "samples", "file"});
  if (node.has("samples") == node.has("file")) node.fail("give an empirical distribution either samples or file");
  if (node.has("file")) {
    const ConfigNode f = node.child("file");
    const auto path = resolve(f, base_dir);
    return load_delay_samples(path);  // its errors already name the file, line and column
  }
  std::vector<Seconds> samples;
  for (const ConfigNode& s : node.child("samples").items()) samples.push_back(s.as_time());
  return at_node(node.child("samples"), [&] { return Distribution::empirical(std::move(samples), "inline"); });
}

// base, trace and each straggler are read on their own (errors collected, reader.hpp); a
// straggler's keys too, except that a rank that failed is not compared with the others.
sim::DelayModel load_delay_model(const ConfigNode& node, const std::string& base_dir) {
  return all_errors([&] {
    node.allow_only({"base", "trace", "persistent"});
    sim::DelayModel model;
    collect([&] {
      if (auto base = node.maybe("base")) model.base = load_distribution(*base, base_dir);
    });
    collect([&] {
      if (auto trace = node.maybe("trace")) {
        if (node.has("base"))
          trace->fail("a trace replaces the base distribution: give one of base and trace");
        model.trace = load_delay_trace(resolve(*trace, base_dir));
      }
    });
    collect([&] {
      if (auto list = node.maybe("persistent")) {
        const std::vector<ConfigNode> items = list->items();
        collect([&] { check_late_probabilities(items); });
        for (const ConfigNode& s : items) {
          collect([&] {
            s.allow_only({"rank", "delay", "persistence", "probability"});
            sim::PersistentStraggler p;
            Values v;
            p.rank =
                v([&] { return static_cast<int>(s.get_int("rank", std::nullopt, 0, 1 << 24)); });
            const bool rank_ok = v.ok();
            collect([&] { p.extra = load_distribution(s.child("delay"), base_dir); });
            p.persistence = v([&] { return s.get_double("persistence", 1.0, 0.0, 1.0); });
            p.probability = v([&] {
              return s.has("probability") ? load_late_probability(s.child("probability")) : 1.0;
            });
            if (rank_ok) {
              for (const sim::PersistentStraggler& other : model.stragglers) {
                if (other.rank == p.rank)
                  s.child("rank").fail("rank " + std::to_string(p.rank) + " is listed twice");
              }
            }
            v.done();
            model.stragglers.push_back(std::move(p));
          });
        }
      }
    });
    return model;
  });
}

}  // namespace ssim::experiments
