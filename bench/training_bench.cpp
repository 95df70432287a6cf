// Training-step model speed (sim/training.hpp): 1,000 steps of a 64-rank DDP job with 25
// gradient buckets per step, the job of configs/train/gpt2_medium_64gpu.yaml (GPT-2 medium's
// layers, 25 MiB buckets, one GPU 12% slow) on 8 nodes x 8 H100s, alpha-beta model. One
// iteration runs the job and its no-delay baseline: 2,000 steps, 50,000 AllReduces.
//
//   taskset -c 0 build/bench/training_bench --benchmark_filter=BM_Training/ring
#include <benchmark/benchmark.h>

#include "sim/training.hpp"
#include "topologies/generators.hpp"

namespace ssim::sim {
namespace {

TrainingConfig gpt2_medium_64(const std::string& algorithm, int steps) {
  TrainingConfig c;
  c.topology = topo::make_hierarchical({.nodes = 8,
                                        .gpus_per_node = 8,
                                        .nvlink_bandwidth = BytesPerSecond{450.0 * (1ull << 30)},
                                        .nvlink_latency = Seconds{3e-6},
                                        .nic_bandwidth = BytesPerSecond{50e9},
                                        .nic_latency = Seconds{2e-6},
                                        .fabric = topo::FabricKind::leaf_spine,
                                        .spines = 0,
                                        .spine_bandwidth = BytesPerSecond{50e9},
                                        .spine_latency = Seconds{1e-6},
                                        .nodes_per_leaf = 8});
  // Forward FLOPs per sample over 400 TFLOP/s, 8 samples per GPU; backward 2 x forward.
  const double per_flop = 8 / 400e12;
  auto add = [&](const char* name, std::uint64_t params, double flops) {
    c.layers.push_back({name, params, Seconds{flops * per_flop}, Seconds{2 * flops * per_flop}});
  };
  add("embedding", 52'511'744, 4'194'304);
  for (int i = 0; i < 24; ++i) add("block", 12'596'224, 27'917'287'424.0);
  add("ln_f", 2048, 5'242'880);
  add("lm_head", 0, 105'396'568'064.0);
  c.bytes_per_param = 4;
  c.bucket_cap = Bytes{25ull << 20};
  c.optimizer = Seconds{2e-3};
  c.samples_per_gpu = 8;
  c.algorithms = {{algorithm, {}}};
  c.delays.stragglers.push_back({.rank = 5, .extra = Distribution::constant(Seconds{5.583e-3})});
  c.policy = StragglerPolicy::previous;
  c.steps = steps;
  c.seed = 1;
  return c;
}

void BM_Training(benchmark::State& state, const std::string& algorithm) {
  const TrainingConfig c = gpt2_medium_64(algorithm, static_cast<int>(state.range(0)));
  for (auto _ : state) {
    const TrainingResult r = run_training(c);
    if (r.buckets.size() != 25) state.SkipWithError("expected 25 buckets");
    benchmark::DoNotOptimize(r.runs.front().mean_step);
  }
  state.counters["steps"] = static_cast<double>(2 * c.steps);
}
BENCHMARK_CAPTURE(BM_Training, ring, std::string("ring"))->Arg(1000)->Unit(benchmark::kSecond);
BENCHMARK_CAPTURE(BM_Training, stragglar, std::string("stragglar"))
    ->Arg(1000)
    ->Unit(benchmark::kSecond);

}  // namespace
}  // namespace ssim::sim

BENCHMARK_MAIN();
