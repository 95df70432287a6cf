#include "sim/simulation.hpp"

#include <algorithm>
#include <bit>
#include <cmath>
#include <memory>
#include <sstream>

#include "algorithms/nccl_options.hpp"
#include "common/cancel.hpp"
#include "common/error.hpp"
#include "sim/adaptive.hpp"
#include "sim/nccl_tuner.hpp"
#include "sim/trace.hpp"

namespace ssim::sim {

// The network a configuration's runs take: its model, gamma and network-wide protocol.
static NetworkConfig network_config(const SimulationConfig& config) {
  NetworkConfig n{config.network, config.gamma};
  n.p2p_protocol = config.protocol;
  n.pipelined_kernels = config.pipelined_kernels;
  return n;
}

namespace {
// Arrivals are drawn in blocks: memory stays O(block * ranks) for long runs, and the
// `previous` policy draws each iteration once instead of twice.
constexpr int kArrivalBlock = 64;
}  // namespace

namespace {

// The summary of a run whose ranks started at eager_start's times, measured again from the
// real arrivals.
void measure_from(IterationResult& r, std::span<const Seconds> arrival) {
  r.arrival.assign(arrival.begin(), arrival.end());
  double first = arrival[0].value, last = arrival[0].value;
  for (const Seconds& t : arrival) {
    first = std::min(first, t.value);
    last = std::max(last, t.value);
  }
  r.first_arrival = Seconds{first};
  r.last_arrival = Seconds{last};
  r.completion = Seconds{r.last_finish.value - first};
  r.after_last_arrival = Seconds{r.last_finish.value - last};
  const double bytes = static_cast<double>(r.bytes);
  r.algbw =
      BytesPerSecond{r.after_last_arrival.value > 0 ? bytes / r.after_last_arrival.value : 0.0};
  r.busbw = BytesPerSecond{r.algbw.value * 2.0 * (r.ranks - 1) / r.ranks};
}

}  // namespace

Seconds default_detection(const topo::Topology& topology) {
  const int n = topology.gpu_count();
  if (n <= 1) return Seconds{0};
  // Routes towards rank 0 share one next-hop table.
  double alpha = 0;
  for (int r = 1; r < n; ++r) alpha = std::max(alpha, topology.route(r, 0).latency.value);
  const int rounds = std::bit_width(static_cast<unsigned>(n) - 1);
  return Seconds{rounds * alpha};
}

std::vector<Seconds> eager_start(std::span<const Seconds> arrival, std::span<const int> late,
                                 Seconds detection) {
  std::vector<bool> is_late(arrival.size(), false);
  for (const int r : late) is_late[static_cast<std::size_t>(r)] = true;
  double agreed = 0;
  for (std::size_t r = 0; r < arrival.size(); ++r) {
    if (!is_late[r]) agreed = std::max(agreed, arrival[r].value);
  }
  agreed += detection.value;
  std::vector<Seconds> start(arrival.begin(), arrival.end());
  for (Seconds& t : start) t.value = std::max(t.value, agreed);
  return start;
}

std::string SharedLink::describe() const {
  return "round " + std::to_string(round) + ": link " + link_name + " carries " +
         std::to_string(transfers) + " transfers with different senders and receivers";
}

namespace {

// find_shared_link one round at a time. Per link, the round it was last used in and its first
// transfer's ends. The transfers on a link that the ports already serialize all share the
// sender or all share the receiver (if two share the sender and a third differs from it, that
// third differs from one of the two in both ends); anything else is sharing the alpha-beta model
// ignores.
class SharedLinkFinder {
 public:
  explicit SharedLinkFinder(RouteCache& routes)
      : routes_(routes), use_(static_cast<std::size_t>(routes.topology().link_count())) {}

  // Rounds in schedule order; nothing more is looked at once a link is found. A round with the
  // same (source, destination) pairs in the same order as the last one scanned uses its links
  // the same way, so it finds nothing that one did not (a ring's every step; NCCL's channels):
  // it is skipped after comparing the pairs.
  void add(const alg::Round& r) {
    const int round = rounds_++;
    if (found_) return;
    if (same_pairs_as_last(r)) return;
    for (const alg::Transfer& t : r.transfers) {
      for (const int l : routes_.links(routes_.route(routes_.find(t.src, t.dst)), scratch_)) {
        Use& u = use_[static_cast<std::size_t>(l)];
        if (u.round != round) {
          u = Use{round, t.src, t.dst, 1, true, true};
          continue;
        }
        ++u.count;
        u.same_src = u.same_src && t.src == u.src;
        u.same_dst = u.same_dst && t.dst == u.dst;
        if (!u.same_src && !u.same_dst && !found_) {
          const topo::Link& link = routes_.topology().link(l);
          found_ = SharedLink{round, l,
                              routes_.topology().node(link.from).name + " -> " +
                                  routes_.topology().node(link.to).name,
                              0};
        }
      }
    }
    if (found_) {  // how many of the round's transfers use the link
      for (const alg::Transfer& t : r.transfers) {
        const auto links = routes_.links(routes_.route(routes_.find(t.src, t.dst)), scratch_);
        if (std::find(links.begin(), links.end(), found_->link) != links.end()) ++found_->transfers;
      }
    }
  }
  bool done() const { return found_.has_value(); }
  const std::optional<SharedLink>& found() const { return found_; }

 private:
  // Whether r's pairs equal the last scanned round's; remembers r's otherwise.
  bool same_pairs_as_last(const alg::Round& r) {
    const std::size_t n = r.transfers.size();
    bool same = n == last_pairs_.size() && n > 0;
    for (std::size_t i = 0; same && i < n; ++i)
      same = last_pairs_[i] == pair_key(r.transfers[i]);
    if (same) return true;
    last_pairs_.resize(n);
    for (std::size_t i = 0; i < n; ++i) last_pairs_[i] = pair_key(r.transfers[i]);
    return false;
  }
  static std::uint64_t pair_key(const alg::Transfer& t) {
    return (static_cast<std::uint64_t>(static_cast<std::uint32_t>(t.src)) << 32) |
           static_cast<std::uint32_t>(t.dst);
  }

  struct Use {
    int round = -1, src = 0, dst = 0, count = 0;
    bool same_src = true, same_dst = true;
  };
  RouteCache& routes_;
  std::vector<int> scratch_;  // links of a route the cache does not store
  std::vector<Use> use_;
  int rounds_ = 0;
  std::optional<SharedLink> found_;
  std::vector<std::uint64_t> last_pairs_;
};

// Passes rounds through to the simulation and shows each to a SharedLinkFinder on the way, so
// a streamed schedule is generated once for both.
class SharedLinkScan final : public RoundSource {
 public:
  SharedLinkScan(RoundSource& inner, SharedLinkFinder& finder) : inner_(inner), finder_(finder) {}
  int ranks() const override { return inner_.ranks(); }
  int chunks() const override { return inner_.chunks(); }
  const alg::Round* next() override {
    const alg::Round* r = inner_.next();
    if (r) finder_.add(*r);
    return r;
  }

 private:
  RoundSource& inner_;
  SharedLinkFinder& finder_;
};

}  // namespace

namespace {

// True when every link joins a GPU to its only neighbour vertex (a switch, or a star of
// point-to-point links): a route then never passes through a GPU (it would enter and leave by
// the same neighbour), so a link out of GPU g carries only g's sends and a link into g only its
// receives, and no link can be shared the way find_shared_link looks for. Saves the scan.
bool links_are_ports(const topo::Topology& t) {
  std::vector<int> neighbour(static_cast<std::size_t>(t.node_count()), -1);
  for (int l = 0; l < t.link_count(); ++l) {
    const topo::Link& link = t.link(l);
    const bool from_gpu = t.node(link.from).kind == topo::NodeKind::gpu;
    const bool to_gpu = t.node(link.to).kind == topo::NodeKind::gpu;
    if (from_gpu == to_gpu) return false;
    const int gpu = from_gpu ? link.from : link.to;
    const int other = from_gpu ? link.to : link.from;
    int& n = neighbour[static_cast<std::size_t>(gpu)];
    if (n >= 0 && n != other) return false;
    n = other;
  }
  return true;
}

}  // namespace

std::optional<SharedLink> find_shared_link(const alg::Schedule& schedule, RouteCache& routes) {
  SharedLinkFinder finder(routes);
  for (std::size_t r = 0; r < schedule.rounds.size() && !finder.done(); ++r)
    finder.add(schedule.rounds[r]);
  return finder.found();
}

bool streams_rounds(const SimulationConfig& c) {
  if (c.schedule || c.trace_iteration || c.rounds == RoundFeed::materialized) return false;
  if (!c.adaptive_fallbacks.empty() && alg::find_algorithm(c.algorithm).straggler_aware)
    return false;
  if (c.rounds == RoundFeed::streamed) return true;
  const alg::AlgorithmInfo& info = alg::find_algorithm(c.algorithm);
  return info.size && info.size(c.topology.gpu_count(), c.options).transfers > kStreamMinTransfers;
}

namespace {

// The ids of the k links that carry the most bytes (ties: lower id first), among those that
// carry any.
std::vector<int> busiest_links(const std::vector<std::uint64_t>& bytes, int k) {
  std::vector<int> ids;
  for (std::size_t l = 0; l < bytes.size(); ++l) {
    if (bytes[l] > 0) ids.push_back(static_cast<int>(l));
  }
  std::stable_sort(ids.begin(), ids.end(), [&](int a, int b) { return bytes[a] > bytes[b]; });
  if (ids.size() > static_cast<std::size_t>(k)) ids.resize(static_cast<std::size_t>(k));
  return ids;
}

}  // namespace

namespace {

// The checks of a configuration that need no schedule (InputError naming the key).
void check_config(const SimulationConfig& config) {
  if (config.iterations < 1) {
    throw InputError("iterations must be >= 1, got " + std::to_string(config.iterations));
  }
  if (config.size.value == 0) throw InputError("size must be > 0 bytes");
  if (config.trace_iteration &&
      (*config.trace_iteration < 0 || *config.trace_iteration >= config.iterations)) {
    throw InputError("trace iteration " + std::to_string(*config.trace_iteration) +
                     " is outside 0.." + std::to_string(config.iterations - 1));
  }
  if (config.trace_links && config.network != NetworkKind::flow) {
    throw InputError(
        "trace links: link utilization counters need the flow model (network: "
        "{model: flow}); the alphabeta model has no link rates");
  }
  if (config.trace_links && *config.trace_links < 0) {
    throw InputError("trace links must be >= 0, got " + std::to_string(*config.trace_links));
  }
  const int n = config.topology.gpu_count();
  if (config.schedule) {
    if (config.schedule->ranks != n) {
      throw InputError("the schedule " + config.algorithm + " has " +
                       std::to_string(config.schedule->ranks) + " ranks, the topology " +
                       std::to_string(n));
    }
    if (config.schedule->collective != alg::Collective::allreduce) {
      throw InputError("the schedule " + config.algorithm + " is a " +
                       std::string(alg::to_string(config.schedule->collective)) +
                       ", not an allreduce");
    }
  }
}

// The policy's prediction for one iteration: the rank(s) it takes to be late, and the rank map
// that lets them play the late roles the schedule was built for.
struct Prediction {
  int straggler = 0;
  std::vector<int> late;  // a schedule built for k >= 2 late ranks: the k predicted, in order
  std::vector<int> rank_map;

  // The ranks predicted late: `late`, or the straggler alone.
  std::vector<int> late_ranks() const { return late.empty() ? std::vector<int>{straggler} : late; }
};

// A schedule built for k >= 2 late ranks: the policy predicts the k latest ranks (oracle and
// eager: this iteration's, previous: the previous iteration's; fixed, and previous with nobody
// late before: the ranks the schedule was built for, so a tie renumbers nothing).
Prediction predict(const SimulationConfig& config, const alg::Schedule& schedule,
                   const IterationArrivals& a, const std::vector<Seconds>& previous_arrival,
                   bool previous_late) {
  Prediction p;
  p.straggler = a.predicted_straggler;
  const int late_k = static_cast<int>(schedule.late.size());
  if (late_k > 1) {
    if ((config.policy == StragglerPolicy::oracle || config.policy == StragglerPolicy::eager) &&
        a.late) {
      p.late = latest_ranks(a.arrival, late_k);
    } else if (config.policy == StragglerPolicy::previous && !previous_arrival.empty() &&
               previous_late) {
      p.late = latest_ranks(previous_arrival, late_k);
    } else {
      p.late = schedule.late;
    }
    p.straggler = p.late.back();
    p.rank_map = late_rank_map(schedule, p.late);
  } else if (schedule.straggler) {
    p.rank_map = straggler_rank_map(schedule, a.predicted_straggler);
  }
  return p;
}

// The writer of the traced iteration (to config.trace_out, or into `text`). Runs the iteration
// first when the configuration asks for its busiest links or for an estimate of the trace.
std::unique_ptr<ChromeTraceWriter> start_trace(const SimulationConfig& config,
                                               const std::string& name, int iteration,
                                               Executor& run_on, const alg::Schedule& ran,
                                               std::span<const Seconds> start,
                                               const std::vector<int>& rank_map,
                                               std::ostringstream& text) {
  TraceOptions to;
  to.title = name + ", " + std::to_string(config.topology.gpu_count()) + " ranks, " +
             format_bytes(config.size) + ", iteration " + std::to_string(iteration);
  if (config.trace_links) {
    const IterationResult probe = run_on.run(start, RunOptions{rank_map, false, false});
    to.links = busiest_links(probe.link_bytes, *config.trace_links);
  }
  to.select = config.trace_select;
  if (config.trace_estimated) {
    TraceCounter counter(ran, &config.topology, start, to);
    RunOptions count{rank_map, false, false};
    count.trace = &counter;
    (void)run_on.run(start, count);
    config.trace_estimated(counter.estimate());
  }
  to.progress = config.trace_progress;
  return std::make_unique<ChromeTraceWriter>(config.trace_out ? *config.trace_out : text, ran,
                                             &config.topology, start, std::move(to));
}

// Sums over the iterations, for the result's means.
struct Totals {
  double completion = 0, after_last_arrival = 0;
  int correct = 0;  // iterations whose predicted straggler was the last rank
  int fallback_runs = 0;
};

// Adds iteration `a`'s run `r` to `out` and `totals`; InputError when its time overflowed.
void add_iteration(SimulationResult& out, Totals& totals, const SimulationConfig& config,
                   const IterationArrivals& a, const IterationResult& r, int predicted_straggler,
                   std::string chosen) {
  if (!std::isfinite(r.completion.value) ||
      !std::isfinite(totals.completion + r.completion.value)) {
    throw InputError(
        "iteration " + std::to_string(a.iteration) +
        ": the simulated time overflows (infinite): a bandwidth, latency, delay or size is "
        "outside any physical range (e.g. a bandwidth of 1e-300B/s)");
  }
  out.iterations.push_back(IterationSummary{a.iteration,
                                            r.completion,
                                            r.after_last_arrival,
                                            r.algbw,
                                            r.busbw,
                                            a.last_rank,
                                            predicted_straggler,
                                            std::move(chosen),
                                            {},
                                            {}});
  if (config.per_rank_times) {
    out.iterations.back().arrival = r.arrival;
    out.iterations.back().finish = r.finish;
  }
  totals.completion += r.completion.value;
  totals.after_last_arrival += r.after_last_arrival.value;
  totals.correct += predicted_straggler == a.last_rank ? 1 : 0;
  out.no_late_iterations += a.late ? 0 : 1;
  for (std::size_t l = 0; l < out.link_bytes.size(); ++l) {
    out.link_bytes[l] += static_cast<double>(r.link_bytes[l]);
    out.link_utilization[l] += r.link_utilization[l];
  }
}

// The means over config.iterations iterations.
void finish_means(SimulationResult& out, const SimulationConfig& config, const Totals& totals) {
  const int n = out.ranks;
  const double iters = config.iterations;
  out.mean_completion = Seconds{totals.completion / iters};
  out.mean_after_last_arrival = Seconds{totals.after_last_arrival / iters};
  const double bytes = static_cast<double>(config.size.value);
  out.algbw = BytesPerSecond{
      out.mean_after_last_arrival.value > 0 ? bytes / out.mean_after_last_arrival.value : 0.0};
  out.busbw = BytesPerSecond{out.algbw.value * 2.0 * (n - 1) / n};
  out.prediction_accuracy = totals.correct / iters;
  out.fallback_fraction = totals.fallback_runs / iters;
  for (std::size_t l = 0; l < out.link_bytes.size(); ++l) {
    out.link_bytes[l] /= iters;
    out.link_utilization[l] /= iters;
  }
}

}  // namespace

// run_simulation without NCCL's choice: the algorithm and options as they are.
static SimulationResult run_simulation_as_given(const SimulationConfig& config);

SimulationResult run_simulation(const SimulationConfig& config) {
  // `nccl` runs what NCCL would pick for this size on this machine (sim/nccl_tuner.hpp): its
  // algorithm, protocol and channels are filled in before the schedule is generated.
  if (!config.schedule && config.algorithm == "nccl") {
    const alg::NcclRequest request(config.topology.gpu_count(), config.options);
    const NcclChoice choice =
        nccl_choose(config.topology, config.size, request, config.pipelined_kernels);
    const alg::Options options = request.schedule_options(choice);
    SimulationResult out;
    if (options.values() != config.options.values()) {
      SimulationConfig resolved = config;
      resolved.options = options;
      out = run_simulation_as_given(resolved);
    } else {
      out = run_simulation_as_given(config);
    }
    out.nccl_algo = choice.algo;
    out.nccl_proto = std::string(alg::to_string(choice.proto));
    out.nccl_channels =
        choice.algo == "ring" || choice.algo == "tree" || choice.algo == "collnet_chain"
            ? choice.channels
            : 0;
    out.nccl_options = options.values();
    out.nccl_estimate_us = choice.estimate_us;
    return out;
  }
  return run_simulation_as_given(config);
}

static SimulationResult run_simulation_as_given(const SimulationConfig& config) {
  check_config(config);
  const int n = config.topology.gpu_count();
  // A schedule given as data runs under its own name; a registry algorithm under its entry's.
  const std::string name =
      config.schedule ? config.algorithm : alg::find_algorithm(config.algorithm).name;
  // Streamed: `schedule` is the header only and each iteration generates the rounds again as
  // the dataflow pass consumes them; otherwise they are materialized once.
  const bool stream = streams_rounds(config);
  alg::GeneratedRounds generated;
  alg::Schedule own;
  if (!config.schedule) {
    generated = alg::generate_rounds(config.algorithm, n, config.options);
    own = std::move(generated.header);
    if (!stream) alg::append_rounds(own, std::move(generated.stream));
  }
  const alg::Schedule& schedule = config.schedule ? *config.schedule : own;
  if (config.late_count && schedule.straggler &&
      *config.late_count != std::max<int>(1, static_cast<int>(schedule.late.size()))) {
    throw InputError("prediction k=" + std::to_string(*config.late_count) + " but " + name +
                     " was built for " +
                     std::to_string(std::max<std::size_t>(1, schedule.late.size())) +
                     " late rank(s) (its option stragglers)");
  }
  Executor executor(schedule, config.topology, network_config(config),
                    config.size);
  const int default_straggler = config.straggler.value_or(schedule.straggler.value_or(n - 1));
  const DelayGenerator delays(config.delays, n, config.seed, config.policy, default_straggler);

  // Adaptive: the candidates besides the configured algorithm, each with its executor.
  AdaptiveChoice fallbacks(
      schedule.straggler ? config.adaptive_fallbacks : std::vector<std::string>{}, name, n, {},
      config.topology, network_config(config), config.size);
  // Adaptive, or several late ranks: the last iteration's arrivals, and whether a rank was late.
  std::vector<Seconds> previous_arrival;
  bool previous_late = false;
  const bool several_late = schedule.late.size() > 1;
  // Eager conditional execution: the late role goes to the rank(s) arriving last, found after
  // the early ranks have arrived and agreed (detection latency).
  const bool eager = config.policy == StragglerPolicy::eager && schedule.straggler.has_value();
  const Seconds detection =
      eager ? config.detection.value_or(default_detection(config.topology)) : Seconds{0};

  SimulationResult out;
  out.algorithm = name;
  out.ranks = n;
  out.chunks = schedule.chunks;
  out.rounds = schedule.rounds.size();
  out.transfers = schedule.transfer_count();
  out.straggler_aware = schedule.straggler.has_value();
  out.default_straggler = default_straggler;
  RouteCache scan_routes(config.topology);
  SharedLinkFinder shared(stream ? executor.routes() : scan_routes);
  const bool scan = config.network == NetworkKind::alphabeta && !links_are_ports(config.topology);
  if (scan && !stream) out.shared_link = find_shared_link(schedule, scan_routes);
  bool first_run = true;
  out.link_bytes.assign(static_cast<std::size_t>(config.topology.link_count()), 0.0);
  out.link_utilization.assign(out.link_bytes.size(), 0.0);
  Totals totals;
  for (int first = 0; first < config.iterations; first += kArrivalBlock) {
    const int count = std::min(kArrivalBlock, config.iterations - first);
    for (const IterationArrivals& a : delays.iterations(first, count)) {
      cancellation_point();  // the Python binding's KeyboardInterrupt (common/cancel.hpp)
      Prediction prediction = predict(config, schedule, a, previous_arrival, previous_late);
      RunOptions options;
      options.threads = config.threads;
      options.rank_map = std::move(prediction.rank_map);
      std::vector<Seconds> eager_starts;
      if (eager) eager_starts = eager_start(a.arrival, prediction.late_ranks(), detection);
      const std::vector<Seconds>& start = eager ? eager_starts : a.arrival;
      const bool traced = config.trace_iteration == a.iteration;
      options.record_timeline = traced;
      // Adaptive: which candidate is fastest on the predicted arrivals (ties keep the algorithm).
      Executor* run_on = &executor;
      const alg::Schedule* ran = &schedule;
      std::string chosen;  // adaptive only: what ran
      if (!fallbacks.empty()) {
        chosen = name;
        const std::vector<Seconds> predicted =
            AdaptiveChoice::predicted_arrivals(previous_arrival, prediction.late_ranks(), n);
        const int pick = fallbacks.choose(executor, options.rank_map, predicted);
        if (pick >= 0) {
          AdaptiveChoice::Candidate& c = fallbacks[static_cast<std::size_t>(pick)];
          run_on = c.executor.get();
          ran = &c.schedule;
          chosen = c.name;
          options.rank_map.clear();
          ++totals.fallback_runs;
        }
      }
      if (!fallbacks.empty() || several_late) {
        previous_arrival = a.arrival;
        previous_late = a.late;
      }
      // The traced iteration streams into a writer (to config.trace_out, or kept as text).
      std::ostringstream trace_text;
      std::unique_ptr<ChromeTraceWriter> writer;
      if (traced) {
        writer = start_trace(config, name, a.iteration, *run_on, *ran, start, options.rank_map,
                             trace_text);
        options.trace = writer.get();
        options.record_timeline = config.trace_out == nullptr;
      }
      IterationResult r;
      if (stream) {
        // The first iteration takes the stream generated above (and finds the shared link on
        // the way); later ones generate the rounds again.
        StreamRounds rounds(
            schedule, first_run ? std::move(generated.stream)
                                : alg::generate_rounds(config.algorithm, n, config.options).stream);
        if (first_run && scan) {
          SharedLinkScan scanned(rounds, shared);
          r = executor.run(scanned, start, options);
          out.shared_link = shared.found();
        } else {
          r = executor.run(rounds, start, options);
        }
        if (first_run) {
          out.rounds = rounds.rounds_seen();
          out.transfers = rounds.transfers_seen();
        }
      } else {
        r = run_on->run(start, options);
      }
      if (eager) measure_from(r, a.arrival);
      first_run = false;
      if (writer) writer->finish(r);
      add_iteration(out, totals, config, a, r, prediction.straggler, std::move(chosen));
      if (traced && !config.trace_out) {
        out.trace_json = trace_text.str();
        out.traced = std::move(r);
      }
    }
  }
  finish_means(out, config, totals);
  return out;
}

}  // namespace ssim::sim
