// Runs of an experiment with a `workload:` (config/experiment.hpp: Workload): each run is a training
// job (sim/training.hpp), its steps the run's iterations.
#include <algorithm>

#include "common/error.hpp"
#include "experiments/runner/experiment.hpp"

namespace ssim::experiments {

sim::TrainingConfig training_config(const Experiment& e, std::size_t run) {
  const SweepPoint& p = e.points[run / e.algorithms.size()];
  SSIM_CHECK(p.workload.has_value(), "training_config of a point without a workload");
  sim::SimulationConfig s = run_config(e, run);
  sim::TrainingConfig c;
  c.topology = std::move(s.topology);
  c.network = s.network;
  c.gamma = s.gamma;
  c.layers = p.workload->layers;
  c.bytes_per_param = p.workload->bytes_per_param;
  c.bucket_cap = p.workload->bucket_cap;
  c.optimizer = p.workload->optimizer;
  c.samples_per_gpu = p.workload->samples_per_gpu;
  c.algorithms = {{s.algorithm, s.options}};
  c.modes = {p.workload->mode};
  c.delays = std::move(s.delays);
  c.policy = s.policy;
  c.straggler = s.straggler;
  c.adaptive_fallbacks = s.adaptive_fallbacks;
  c.detection = s.detection;
  c.steps = s.iterations;
  c.seed = s.seed;
  c.cluster_gpus = 0;
  c.common_reference = false;  // a run reports no lost time: no reference pass
  return c;
}

sim::SimulationResult training_run_result(const sim::TrainingResult& result,
                                          const std::vector<sim::IterationSummary>& steps) {
  SSIM_CHECK(result.runs.size() == 1, "one training run per experiment run");
  const sim::TrainingRun& run = result.runs.front();
  SSIM_CHECK(steps.size() == run.step_times.size(), "a step record per step");
  sim::SimulationResult r;
  r.algorithm = run.algorithm;
  r.ranks = result.ranks;
  r.chunks = static_cast<int>(std::max<std::size_t>(result.buckets.size(), 1));  // the buckets
  r.straggler_aware = run.straggler_aware;
  r.iterations = steps;
  r.mean_completion = run.mean_step;
  r.mean_after_last_arrival = run.mean_exposed_comm;
  if (run.mean_step.value > 0) {
    r.algbw = BytesPerSecond{static_cast<double>(result.gradient_bytes) / run.mean_step.value};
    r.busbw = BytesPerSecond{r.algbw.value * 2.0 * (r.ranks - 1) / r.ranks};
  }
  if (run.straggler_aware && !steps.empty()) {
    const auto correct = std::count_if(steps.begin(), steps.end(), [](const auto& s) {
      return s.predicted_straggler == s.last_rank;
    });
    r.prediction_accuracy = static_cast<double>(correct) / static_cast<double>(steps.size());
  }
  r.fallback_fraction = run.fallback_fraction;
  r.shared_link = run.shared_link;
  return r;
}

sim::SimulationResult execute_run(const Experiment& e, std::size_t run, int threads) {
  if (!e.points[run / e.algorithms.size()].workload) {
    sim::SimulationConfig c = run_config(e, run);
    c.threads = threads;
    return sim::run_simulation(c);
  }
  const sim::TrainingConfig c = training_config(e, run);
  const bool adaptive = !c.adaptive_fallbacks.empty();
  std::vector<sim::IterationSummary> steps;
  steps.reserve(static_cast<std::size_t>(c.steps));
  const auto on_step = [&](const sim::TrainingRun&, const sim::StepRecord& s) {
    sim::IterationSummary it;
    it.iteration = s.step;
    it.completion = s.step_time;
    it.after_last_arrival = s.exposed_comm;
    it.last_rank = s.slowest_rank;
    it.predicted_straggler = -1;
    if (!s.buckets.empty() && !s.buckets.back().stragglers.empty())
      it.predicted_straggler = s.buckets.back().stragglers.front();
    if (adaptive) {
      std::vector<std::string_view> seen;
      for (const sim::BucketChoice& b : s.buckets) {
        if (std::find(seen.begin(), seen.end(), b.algorithm) != seen.end()) continue;
        seen.push_back(b.algorithm);
        if (!it.chosen.empty()) it.chosen.push_back('+');
        it.chosen.append(b.algorithm);
      }
    }
    steps.push_back(std::move(it));
  };
  return training_run_result(sim::run_training(c, on_step), steps);
}

}  // namespace ssim::experiments
