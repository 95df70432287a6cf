// Speed of the flow model under heavy sharing and of the threaded alpha-beta dataflow pass.
//
//   build-bench/bench/flow_bench --benchmark_filter='FlowRingTopology'
//   bench/sim_speed.sh        # the acceptance cases with wall time and peak RSS
//
// BM_FlowRingTopology: a ring topology (one link each way between neighbours, 50 GB/s, 1 us),
// flow model, everyone at 0: rhd on 1024 ranks puts up to 512 flows on a link (issue 11's
// 3.65 s case), ring on 4096 ranks is 33.5 M transfers with no sharing (14.7 s before batching).
// BM_AlphabetaThreads: the dataflow pass on a switch with RunOptions::threads = 1, 2, 4.
#include <benchmark/benchmark.h>

#include <map>
#include <memory>
#include <string>
#include <vector>

#include "algorithms/registry.hpp"
#include "sim/executor.hpp"
#include "topologies/generators.hpp"

namespace ssim::sim {
namespace {

const alg::Schedule& cached_schedule(const std::string& name, int n) {
  static std::map<std::pair<std::string, int>, std::unique_ptr<alg::Schedule>> cache;
  auto& slot = cache[{name, n}];
  if (!slot) slot = std::make_unique<alg::Schedule>(alg::generate(name, n, alg::Options{}));
  return *slot;
}

void report(benchmark::State& state, const IterationResult& r) {
  state.counters["transfers"] = static_cast<double>(r.transfers);
  state.counters["transfers/s"] = benchmark::Counter(static_cast<double>(r.transfers),
                                                     benchmark::Counter::kIsIterationInvariantRate);
  state.counters["events"] = static_cast<double>(r.events);
  state.counters["sim_us"] = r.completion.value * 1e6;
}

void BM_FlowRingTopology(benchmark::State& state, const std::string& name) {
  const int n = static_cast<int>(state.range(0));
  const alg::Schedule& s = cached_schedule(name, n);
  const topo::Topology t =
      topo::make_ring({.ranks = n, .bandwidth = BytesPerSecond{50e9}, .latency = Seconds{1e-6}});
  Executor ex(s, t, NetworkConfig{NetworkKind::flow, SecondsPerByte{0}}, Bytes{64 << 20});
  const std::vector<Seconds> arrival(static_cast<std::size_t>(n), Seconds{0});
  IterationResult r;
  for (auto _ : state) r = ex.run(arrival);
  report(state, r);
}
BENCHMARK_CAPTURE(BM_FlowRingTopology, rhd, std::string("rhd"))
    ->Arg(256)
    ->Arg(1024)
    ->Unit(benchmark::kMillisecond);
BENCHMARK_CAPTURE(BM_FlowRingTopology, ring, std::string("ring"))
    ->Arg(1024)
    ->Arg(4096)
    ->Unit(benchmark::kMillisecond);

// Arguments: ranks, threads.
void BM_AlphabetaThreads(benchmark::State& state, const std::string& name) {
  const int n = static_cast<int>(state.range(0));
  const alg::Schedule& s = cached_schedule(name, n);
  const topo::Topology t =
      topo::make_switch({.ranks = n, .bandwidth = BytesPerSecond{450e9}, .latency = Seconds{3e-6}});
  Executor ex(s, t, NetworkConfig{}, Bytes{std::uint64_t{1} << 30});
  const std::vector<Seconds> arrival(static_cast<std::size_t>(n), Seconds{0});
  RunOptions o;
  o.threads = static_cast<int>(state.range(1));
  IterationResult r;
  for (auto _ : state) r = ex.run(arrival, o);
  report(state, r);
}
BENCHMARK_CAPTURE(BM_AlphabetaThreads, ring, std::string("ring"))
    ->ArgsProduct({{1024, 4096}, {1, 2, 4}})
    ->UseRealTime()
    ->Unit(benchmark::kMillisecond);
BENCHMARK_CAPTURE(BM_AlphabetaThreads, rhd, std::string("rhd"))
    ->ArgsProduct({{16384, 65536}, {1, 2, 4}})
    ->UseRealTime()
    ->Unit(benchmark::kMillisecond);

}  // namespace
}  // namespace ssim::sim

BENCHMARK_MAIN();
