// The simulator's top-level API: one typed configuration in, per-iteration and summary results
// out. The CLI and the experiment runner fill SimulationConfig (from YAML or flags) and call
// run_simulation; nothing here parses text.
//
//   SimulationConfig c;
//   c.topology = topo::make_switch({.ranks = 8, .bandwidth = parse_bandwidth("450GB/s"),
//                                   .latency = parse_time("3us")});
//   c.algorithm = "stragglar";
//   c.size = parse_bytes("1GiB");
//   c.delays.stragglers.push_back({.rank = 7, .extra = Distribution::constant(parse_time("5ms"))});
//   c.policy = StragglerPolicy::previous;
//   c.iterations = 100;
//   c.seed = 42;
//   SimulationResult r = run_simulation(c);   // r.mean_after_last_arrival, r.busbw, ...
//
// The schedule is generated once (alg::generate with c.options) and reused by every iteration,
// or, for large schedules under the alpha-beta model, streamed (RoundFeed below).
// Iteration i draws its arrivals from DelayGenerator(c.delays, ranks, c.seed, c.policy)
// (sim/delays.hpp). For a straggler-aware schedule (schedule.straggler set) the rank predicted
// by the policy plays the schedule's straggler (straggler_rank_map): when the prediction is
// wrong, the real straggler sits somewhere else in the schedule and the run costs what it costs.
// Means are over iterations; algbw = size / mean after_last_arrival and busbw = algbw * 2(n-1)/n
// (see executor.hpp for the definitions).
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <ostream>
#include <span>
#include <string>
#include <vector>

#include "algorithms/registry.hpp"
#include "common/units.hpp"
#include "sim/delays.hpp"
#include "sim/executor.hpp"
#include "sim/network.hpp"
#include "sim/trace.hpp"
#include "topologies/topology.hpp"

namespace ssim::sim {

// How run_simulation feeds the schedule to the executor: materialized once and reused by every
// iteration, or streamed (alg::generate_rounds: generated again per iteration, one round at a
// time, so memory is O(ranks + one round + routes) whatever the transfer count with the
// alpha-beta dataflow pass; the flow model's event engine keeps the rounds that ranks are in,
// see Executor::run). Results are identical; streaming needs no trace and no adaptive choice.
enum class RoundFeed : std::uint8_t {
  automatic,     // streamed when allowed and the schedule has more than kStreamMinTransfers
  materialized,  // always materialized
  streamed,      // streamed whenever allowed
};
// Below this many transfers (by the registry's size bound) a materialized schedule (at most
// ~40 MiB) is cheaper than generating the rounds again every iteration.
inline constexpr double kStreamMinTransfers = 1 << 20;

struct SimulationConfig {
  topo::Topology topology;  // its GPU count is the rank count
  NetworkKind network = NetworkKind::alphabeta;
  SecondsPerByte gamma{0.0};       // reduce cost at the receiver
  // network: {protocol: ...}: schedules that name no protocol run as NCCL's send/recv with this
  // one (NetworkConfig::p2p_protocol); empty: by their routes alone.
  std::optional<alg::Protocol> protocol = std::nullopt;
  // network: {steps: pipelined} (the default): NCCL kernels' steps overlap their latencies
  // (NetworkConfig::pipelined_kernels); per_round (false): the per-round rule.
  bool pipelined_kernels = true;
  std::string algorithm = "ring";  // a registry name (alg::algorithms())
  alg::Options options;            // generator options, e.g. segments, straggler
  // A schedule given as data (a schedule file, read and verified by the caller), run instead of
  // generating `algorithm`, which then only names it in the results; `options` are its recorded
  // generator options (metadata). Its ranks must be the topology's GPU count and its collective
  // allreduce (InputError). Materialized: never streamed, and shared by every run that uses it.
  std::shared_ptr<const alg::Schedule> schedule;
  Bytes size{0};      // AllReduce buffer per rank, > 0
  DelayModel delays;  // arrival offsets (none: all arrive at 0)
  StragglerPolicy policy = StragglerPolicy::oracle;
  // Rank for the `fixed` policy and for the first iteration of `previous`; by default the rank
  // the schedule was built for (else n-1).
  std::optional<int> straggler;
  // Adaptive choice (the `adaptive` prediction policy): when not empty and the algorithm is
  // straggler-aware, every iteration runs whichever of the algorithm and these registry
  // algorithms is fastest on the predicted arrivals: the rank that arrived last in the previous
  // iteration, late by the lead it had then over the second-to-last (iteration 0: no delay).
  // The prediction of the rank follows `policy` (previous, for adaptive). Each candidate is
  // simulated once per iteration on the predicted arrivals, so this costs one extra run per
  // candidate and iteration; the choice is exact in the configured network model.
  std::vector<std::string> adaptive_fallbacks;
  // The `eager` policy's detection latency: how long the early ranks take to agree who is late
  // once all of them have arrived. A straggler-aware schedule then starts on every rank at
  // max(its arrival, the last early rank's arrival + detection), the rank(s) arriving last
  // playing the late role (the k latest with k late ranks); the times are still measured from
  // the real arrivals. Unset: default_detection(topology). Other policies ignore it.
  std::optional<Seconds> detection;
  // prediction.k: how many late ranks the policy predicts (the k latest). Set, a straggler-
  // aware algorithm without its own `stragglers` option is built for k late ranks (the config
  // layer does that) and one built for another count is an InputError; unset, each schedule's
  // own count (1 unless `stragglers` says otherwise).
  std::optional<int> late_count;
  int iterations = 1;  // >= 1
  std::uint64_t seed = 0;
  // Record this iteration's per-transfer timeline and render it as a Chrome trace.
  std::optional<int> trace_iteration;
  // With trace_iteration: stream the trace here while the iteration runs (the timeline is not
  // kept; `traced` and `trace_json` stay empty). nullptr: keep both in the result.
  std::ostream* trace_out = nullptr;
  // Link utilization counters in the trace (flow model only; InputError with alphabeta):
  // nullopt: every link that carries traffic; K: the K links that carry the most bytes in the
  // traced iteration (found by running it once more before it is traced), 0: none.
  std::optional<int> trace_links;
  // Which events the trace keeps (sim/trace.hpp; default all).
  TraceSelection trace_select;
  // When set: called at the traced iteration before anything of the trace is written, with
  // what the trace will hold, counted by a run of that iteration that writes nothing
  // (TraceCounter); it may throw to refuse the trace.
  std::function<void(const TraceEstimate&)> trace_estimated;
  // Told every 65536 trace events written: events and bytes so far.
  std::function<void(std::uint64_t, std::uint64_t)> trace_progress;
  // Keep every iteration's per-rank arrival and finish times in the summaries (memory grows
  // with iterations x ranks, so off by default).
  bool per_rank_times = false;
  RoundFeed rounds = RoundFeed::automatic;
  // Threads of the alpha-beta dataflow pass (RunOptions::threads; >= 1). An execution setting:
  // the results are the same for any value.
  int threads = 1;
};

// The default detection latency of the eager policy: a small-message exchange of ceil(log2 n)
// rounds (recursive doubling among the arrived ranks), each costing the largest route latency
// from rank 0 to another rank: ceil(log2 n) * alpha. 0 for one rank.
Seconds default_detection(const topo::Topology& topology);

// Eager conditional execution: the start time of each rank when the ranks in `late` arrive
// last and the others agree on that `detection` after the last of them arrived:
// max(arrival[r], max over early ranks e of arrival[e] + detection).
std::vector<Seconds> eager_start(std::span<const Seconds> arrival, std::span<const int> late,
                                 Seconds detection);

// Whether run_simulation streams the rounds for `config` (see RoundFeed).
bool streams_rounds(const SimulationConfig& config);

struct IterationSummary {
  int iteration = 0;
  Seconds completion;          // first arrival -> last finish
  Seconds after_last_arrival;  // last arrival -> last finish
  BytesPerSecond algbw;
  BytesPerSecond busbw;
  int last_rank = 0;            // the rank that arrived last
  int predicted_straggler = 0;  // the policy's guess (used only by straggler-aware schedules)
  // Adaptive runs: the registry algorithm that ran this iteration (the configured one or a
  // fallback); empty otherwise (the configured algorithm ran).
  std::string chosen;
  // Per physical rank, when SimulationConfig::per_rank_times is set (else empty).
  std::vector<Seconds> arrival;
  std::vector<Seconds> finish;
};

// A link that two transfers of one round share although they have different senders and
// different receivers. The alpha-beta model serializes transfers only at the send and receive
// ports, so it gives each of them the link's full bandwidth: its times are optimistic there;
// the flow model shares the link max-min fairly.
struct SharedLink {
  int round = 0;
  int link = 0;                  // topology link id
  std::string link_name;         // "from -> to" by vertex names
  int transfers = 0;             // transfers of that round on the link
  std::string describe() const;  // "round 3: link gpu0 -> sw0 carries 2 transfers ..."
};

// The first such link in schedule order, with the schedule's own rank labels (a straggler-
// aware schedule relabels ranks per iteration; the sharing is checked as generated).
std::optional<SharedLink> find_shared_link(const alg::Schedule& schedule, RouteCache& routes);

struct SimulationResult {
  std::string algorithm;
  // The `nccl` algorithm: what NCCL's choice ran (sim/nccl_tuner.hpp): NCCL_ALGO's and
  // NCCL_PROTO's names (ring, ll128) and the channel count; empty and 0 for other algorithms.
  std::string nccl_algo;
  std::string nccl_proto;
  int nccl_channels = 0;
  std::map<std::string, std::string> nccl_options;  // the options the chosen schedule ran with
  double nccl_estimate_us = 0;  // NCCL's own estimate of the chosen pair (tuning.cc), us
  int ranks = 0;
  int chunks = 0;
  std::size_t rounds = 0;
  std::size_t transfers = 0;  // per iteration
  bool straggler_aware = false;
  std::vector<IterationSummary> iterations;
  Seconds mean_completion;
  Seconds mean_after_last_arrival;
  BytesPerSecond algbw;
  BytesPerSecond busbw;
  // Fraction of iterations whose predicted straggler was the rank that arrived last.
  double prediction_accuracy = 0.0;
  // Adaptive runs: the fraction of iterations that ran a fallback instead of the algorithm.
  double fallback_fraction = 0.0;
  // Iterations in which no rank was late (IterationArrivals::late false): a straggler-aware
  // schedule ran for its default straggler, not for the lowest rank of a tie.
  int no_late_iterations = 0;
  int default_straggler = 0;  // the rank it then ran for
  // Per topology link id, averaged over iterations.
  std::vector<double> link_bytes;
  std::vector<double> link_utilization;
  // When trace_iteration is set: that iteration's full result (timeline included) and its
  // Chrome trace JSON (sim/trace.hpp).
  std::optional<IterationResult> traced;
  std::string trace_json;
  // With the alpha-beta model: the first link it does not share (find_shared_link), if any.
  std::optional<SharedLink> shared_link;
};

// Throws InputError on bad configuration (unknown algorithm, unsupported rank count, bad
// options, size 0, iterations < 1, trace_iteration out of range, invalid delay model, ...).
SimulationResult run_simulation(const SimulationConfig& config);

}  // namespace ssim::sim
