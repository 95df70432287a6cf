// Schedule generation time of StragglAR (whole schedule: ring reduce-scatter + phase 2)
// and of phase 2 alone: powers of two and their neighbours, n = 1000 (doubling
// construction), n = 257 = 2^8+1 (its ramp variant with one copy fewer) and n = 1025
// (every doubling variant gives up: the timeline construction, stragglar_timeline.hpp).
//
//   build-bench/bench/stragglar_bench --benchmark_filter=Generate
#include <benchmark/benchmark.h>

#include "algorithms/registry.hpp"
#include "algorithms/stragglar.hpp"

namespace {

void BM_GenerateStragglar(benchmark::State& state) {
  const int n = static_cast<int>(state.range(0));
  for (auto _ : state) {
    ssim::alg::Schedule s = ssim::alg::generate("stragglar", n, ssim::alg::Options{});
    benchmark::DoNotOptimize(s.rounds.data());
  }
  state.counters["rounds_phase2"] = ssim::alg::stragglar_rounds(n);
}
BENCHMARK(BM_GenerateStragglar)
    ->Arg(255)
    ->Arg(256)
    ->Arg(257)
    ->Arg(1000)
    ->Arg(1023)
    ->Arg(1024)
    ->Arg(1025)
    ->Arg(4095)
    ->Arg(4096)
    ->Unit(benchmark::kMillisecond)
    ->MeasureProcessCPUTime()
    ->UseRealTime();

void BM_Phase2Only(benchmark::State& state) {
  const int n = static_cast<int>(state.range(0));
  for (auto _ : state) {
    ssim::alg::Schedule s = ssim::alg::stragglar_phase2(n);
    benchmark::DoNotOptimize(s.rounds.data());
  }
}
BENCHMARK(BM_Phase2Only)->Arg(192)->Arg(256)->Arg(1000)->Arg(1024)->Unit(benchmark::kMillisecond);

}  // namespace

BENCHMARK_MAIN();
