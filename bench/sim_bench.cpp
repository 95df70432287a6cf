// Simulator speed: transfers per second of the alpha-beta dataflow pass (materialized schedule
// and streamed rounds) and of the flow model on the event engine.
//
//   build-sim/bench/sim_bench --benchmark_filter='AlphabetaRing/4096'
//   bench/sim_speed.sh        # the acceptance cases with wall time and peak RSS
//
// RingRounds streams the ring AllReduce one round at a time, so N = 16384 (537 M transfers,
// 10.7 GB as a materialized schedule) runs in O(N) memory. It is a stand-in until the
// algorithm layer offers per-round generation; main() checks it against alg::generate("ring").
#include <benchmark/benchmark.h>

#include <cstdio>
#include <cstdlib>
#include <map>
#include <memory>
#include <vector>

#include "algorithms/registry.hpp"
#include "sim/executor.hpp"
#include "topologies/generators.hpp"

namespace ssim::sim {
namespace {

// The rounds of ring.cpp's schedule: in reduce-scatter step k rank i sends chunk (i-k-1) mod n
// to i+1 and the receiver reduces; in allgather step k it forwards chunk (i-k) mod n (copy).
class RingRounds final : public RoundSource {
 public:
  explicit RingRounds(int n) : n_(n) { round_.transfers.resize(static_cast<std::size_t>(n)); }
  int ranks() const override { return n_; }
  int chunks() const override { return n_; }
  const alg::Round* next() override {
    if (k_ >= 2 * (n_ - 1)) return nullptr;
    const bool scatter = k_ < n_ - 1;
    const int step = scatter ? k_ : k_ - (n_ - 1);
    round_.phase = scatter ? "reduce-scatter" : "allgather";
    for (int i = 0; i < n_; ++i) {
      const int c = ((i - step - (scatter ? 1 : 0)) % n_ + n_) % n_;
      round_.transfers[i] =
          alg::Transfer{i, (i + 1) % n_, c, c + 1, scatter ? alg::Op::reduce : alg::Op::copy};
    }
    ++k_;
    return &round_;
  }

 private:
  int n_;
  int k_ = 0;
  alg::Round round_;
};

topo::Topology nvswitch(int n) {
  return topo::make_switch(
      {.ranks = n, .bandwidth = BytesPerSecond{450e9}, .latency = Seconds{3e-6}});
}

const alg::Schedule& cached_schedule(const std::string& name, int n) {
  static std::map<std::pair<std::string, int>, std::unique_ptr<alg::Schedule>> cache;
  auto& slot = cache[{name, n}];
  if (!slot) slot = std::make_unique<alg::Schedule>(alg::generate(name, n, alg::Options{}));
  return *slot;
}

void report(benchmark::State& state, std::uint64_t transfers, double simulated) {
  state.counters["transfers"] = static_cast<double>(transfers);
  state.counters["transfers/s"] = benchmark::Counter(static_cast<double>(transfers),
                                                     benchmark::Counter::kIsIterationInvariantRate);
  state.counters["sim_us"] = simulated * 1e6;
}

void BM_GenerateRing(benchmark::State& state) {
  const int n = static_cast<int>(state.range(0));
  std::uint64_t transfers = 0;
  for (auto _ : state) {
    const alg::Schedule s = alg::generate("ring", n, alg::Options{});
    transfers = s.transfer_count();
    benchmark::DoNotOptimize(transfers);
  }
  state.counters["transfers/s"] = benchmark::Counter(static_cast<double>(transfers),
                                                     benchmark::Counter::kIsIterationInvariantRate);
}
BENCHMARK(BM_GenerateRing)->Arg(1024)->Arg(4096)->Unit(benchmark::kMillisecond);

void BM_AlphabetaRing(benchmark::State& state) {
  const int n = static_cast<int>(state.range(0));
  const alg::Schedule& s = cached_schedule("ring", n);
  const topo::Topology t = nvswitch(n);
  Executor ex(s, t, NetworkConfig{}, Bytes{std::uint64_t{1} << 30});
  const std::vector<Seconds> arrival(static_cast<std::size_t>(n), Seconds{0});
  IterationResult r;
  for (auto _ : state) r = ex.run(arrival);
  report(state, r.transfers, r.completion.value);
}
BENCHMARK(BM_AlphabetaRing)->Arg(256)->Arg(1024)->Arg(4096)->Unit(benchmark::kMillisecond);

void BM_AlphabetaRingStream(benchmark::State& state) {
  const int n = static_cast<int>(state.range(0));
  const topo::Topology t = nvswitch(n);
  RouteCache routes(t);
  const std::vector<Seconds> arrival(static_cast<std::size_t>(n), Seconds{0});
  IterationResult r;
  for (auto _ : state) {
    RingRounds rounds(n);
    r = run_alphabeta(rounds, routes, SecondsPerByte{0}, Bytes{std::uint64_t{1} << 30}, arrival);
  }
  report(state, r.transfers, r.completion.value);
}
BENCHMARK(BM_AlphabetaRingStream)->Arg(4096)->Arg(16384)->Unit(benchmark::kMillisecond);

// Event engine with the alpha-beta network: the cross-check path, for comparison.
void BM_AlphabetaRingEvents(benchmark::State& state) {
  const int n = static_cast<int>(state.range(0));
  const alg::Schedule& s = cached_schedule("ring", n);
  const topo::Topology t = nvswitch(n);
  Executor ex(s, t, NetworkConfig{}, Bytes{std::uint64_t{1} << 30});
  const std::vector<Seconds> arrival(static_cast<std::size_t>(n), Seconds{0});
  RunOptions o;
  o.use_event_engine = true;
  IterationResult r;
  for (auto _ : state) r = ex.run(arrival, o);
  report(state, r.transfers, r.completion.value);
  state.counters["events"] = static_cast<double>(r.events);
}
BENCHMARK(BM_AlphabetaRingEvents)->Arg(1024)->Unit(benchmark::kMillisecond);

void BM_Flow(benchmark::State& state, const std::string& name) {
  const int n = static_cast<int>(state.range(0));
  const alg::Schedule& s = cached_schedule(name, n);
  const topo::Topology t = nvswitch(n);
  Executor ex(s, t, NetworkConfig{NetworkKind::flow, SecondsPerByte{0}},
              Bytes{std::uint64_t{1} << 30});
  const std::vector<Seconds> arrival(static_cast<std::size_t>(n), Seconds{0});
  IterationResult r;
  for (auto _ : state) r = ex.run(arrival);
  report(state, r.transfers, r.completion.value);
  state.counters["events"] = static_cast<double>(r.events);
}
BENCHMARK_CAPTURE(BM_Flow, direct, std::string("direct"))
    ->Arg(256)
    ->Arg(1024)
    ->Unit(benchmark::kMillisecond);
BENCHMARK_CAPTURE(BM_Flow, ring, std::string("ring"))->Arg(1024)->Unit(benchmark::kMillisecond);

// Flow model with contention: a 2-tier fat tree, oversubscribed 4:1, ring over 512 hosts in
// host order (the ring's inter-leaf hops share leaf uplinks).
void BM_FlowFatTreeRing(benchmark::State& state) {
  const int n = 512;
  const alg::Schedule& s = cached_schedule("ring", n);
  const topo::Topology t = topo::make_fat_tree({.k = 32,
                                                .tiers = 2,
                                                .bandwidth = BytesPerSecond{50e9},
                                                .latency = Seconds{1e-6},
                                                .oversubscription = 4.0,
                                                .ranks = n});
  Executor ex(s, t, NetworkConfig{NetworkKind::flow, SecondsPerByte{0}},
              Bytes{std::uint64_t{1} << 28});
  const std::vector<Seconds> arrival(static_cast<std::size_t>(n), Seconds{0});
  IterationResult r;
  for (auto _ : state) r = ex.run(arrival);
  report(state, r.transfers, r.completion.value);
}
BENCHMARK(BM_FlowFatTreeRing)->Unit(benchmark::kMillisecond);

// RingRounds must produce exactly the registered ring's rounds.
bool ring_rounds_match() {
  for (int n : {2, 3, 7, 16}) {
    const alg::Schedule s = alg::generate("ring", n, alg::Options{});
    RingRounds rounds(n);
    for (const alg::Round& want : s.rounds) {
      const alg::Round* got = rounds.next();
      if (got == nullptr || !(*got == want)) return false;
    }
    if (rounds.next() != nullptr) return false;
  }
  return true;
}

}  // namespace
}  // namespace ssim::sim

int main(int argc, char** argv) {
  if (!ssim::sim::ring_rounds_match()) {
    std::fprintf(stderr, "sim_bench: RingRounds differs from alg::generate(\"ring\")\n");
    return 1;
  }
  benchmark::Initialize(&argc, argv);
  if (benchmark::ReportUnrecognizedArguments(argc, argv)) return 1;
  benchmark::RunSpecifiedBenchmarks();
  benchmark::Shutdown();
  return 0;
}
