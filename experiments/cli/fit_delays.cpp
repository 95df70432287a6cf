// `stragglesim fit-delays STEPS.csv [-o FITTED.yaml]`: a delay model fitted to per-rank step
// times (sim/delay_fit.hpp), written as the `delays:` map of the configs.
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <iostream>
#include <sstream>

#include "common/error.hpp"
#include "common/output_file.hpp"
#include "experiments/cli/train.hpp"
#include "experiments/config/config.hpp"
#include "experiments/config/delay_files.hpp"
#include "sim/delay_fit.hpp"

namespace ssim::experiments {
namespace {

struct FitArgs {
  std::vector<std::string> inputs;  // one step log, or one profiler trace (.json) per rank
  std::string output = "-";
};

std::string seconds(double v) {
  char buf[64];
  std::snprintf(buf, sizeof buf, "%.9gs", v);
  return buf;
}

std::string number(double v) {
  char buf[64];
  std::snprintf(buf, sizeof buf, "%.9g", v);
  return buf;
}

// The config form of a fitted distribution (every kind fit_component chooses).
std::string distribution_yaml(const sim::Distribution& d) {
  const sim::Distribution::Params& p = d.params();
  if (std::get_if<sim::dist::None>(&p)) return "{distribution: none}";
  if (const auto* c = std::get_if<sim::dist::Constant>(&p))
    return "{distribution: constant, value: " + seconds(c->value.value) + "}";
  if (const auto* u = std::get_if<sim::dist::Uniform>(&p))
    return "{distribution: uniform, low: " + seconds(u->low.value) +
           ", high: " + seconds(u->high.value) + "}";
  if (const auto* n = std::get_if<sim::dist::Normal>(&p))
    return "{distribution: normal, mean: " + seconds(n->mean.value) +
           ", stddev: " + seconds(n->stddev.value) + "}";
  if (const auto* l = std::get_if<sim::dist::Lognormal>(&p))
    return "{distribution: lognormal, mu: " + number(l->mu) + ", sigma: " + number(l->sigma) + "}";
  if (const auto* e = std::get_if<sim::dist::Exponential>(&p))
    return "{distribution: exponential, mean: " + seconds(e->mean.value) + "}";
  SSIM_CHECK(false, "fit-delays: a fitted distribution without a config form");
  return "";
}

bool is_json(const std::string& path) { return std::filesystem::path(path).extension() == ".json"; }

void run_fit_delays(const FitArgs& a) {
  const std::size_t traces =
      static_cast<std::size_t>(std::count_if(a.inputs.begin(), a.inputs.end(), is_json));
  if (traces != 0 && traces != a.inputs.size())
    throw UsageError("give one step log (CSV) or profiler traces (.json, one per rank), not both");
  if (traces == 0 && a.inputs.size() != 1) throw UsageError("give one step log (CSV)");
  const std::string source =
      traces ? a.inputs.front() + (a.inputs.size() > 1 ? " ..." : "") : a.inputs.front();
  std::vector<std::filesystem::path> paths(a.inputs.begin(), a.inputs.end());
  const std::vector<std::vector<double>> times =
      traces ? load_profiler_traces(paths) : load_step_log(paths.front());
  sim::DelayFit fit;
  try {
    fit = sim::fit_delays(times);
  } catch (const InputError& e) {
    throw InputError(source + ": " + e.what());
  }
  std::ostringstream os;
  os << "# Delay model fitted by stragglesim fit-delays from " << source << "\n"
     << "# (the `delays:` map of simulate, run and train configs). Goodness of fit:\n";
  std::istringstream report(fit.report());
  for (std::string line; std::getline(report, line);) os << "#   " << line << "\n";
  os << "base: " << distribution_yaml(fit.model.base) << "\n";
  if (!fit.model.stragglers.empty()) {
    os << "persistent:\n";
    for (const sim::PersistentStraggler& s : fit.model.stragglers) {
      os << "  - {rank: " << s.rank << ", delay: " << distribution_yaml(s.extra)
         << ", persistence: " << number(s.persistence);
      if (s.probability < 1) os << ", probability: " << number(s.probability);
      os << "}\n";
    }
  }
  const std::string text = os.str();
  // What is written must load back as a delay model for the log's ranks.
  const ConfigReader back = ConfigReader::from_string(text, "fitted delay model");
  const sim::DelayModel model = load_delay_model(back.root(), "");
  sim::DelayGenerator(model, fit.ranks, 1);
  write_output_file(a.output, text);
}

}  // namespace

void add_fit_delays_command(CLI::App& app) {
  auto args = std::make_shared<FitArgs>();
  CLI::App* cmd = app.add_subcommand(
      "fit-delays", "Fit a straggler delay model to per-rank step times (CSV: rank,step,seconds)");
  cmd->add_option("steps", args->inputs,
                  "A step log CSV (rank,step,seconds; rank,step,<name>_<unit>; "
                  "rank,step,timestamp[_<unit>]), "
                  "or PyTorch profiler traces (.json, one per rank)")
      ->required();
  cmd->add_option("-o,--output", args->output,
                  "Write the fitted delay model (YAML) to FILE (default: standard output)");
  cmd->callback([args] { run_fit_delays(*args); });
}

}  // namespace ssim::experiments
