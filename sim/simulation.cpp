#include "sim/simulation.hpp"

#include <algorithm>
#include <cmath>
#include <memory>

#include "common/error.hpp"
#include "sim/trace.hpp"

namespace ssim::sim {

namespace {
// Arrivals are drawn in blocks: memory stays O(block * ranks) for long runs, and the
// `previous` policy draws each iteration once instead of twice.
constexpr int kArrivalBlock = 64;
}  // namespace

std::string SharedLink::describe() const {
  return "round " + std::to_string(round) + ": link " + link_name + " carries " +
         std::to_string(transfers) + " transfers with different senders and receivers";
}

std::optional<SharedLink> find_shared_link(const alg::Schedule& schedule, RouteCache& routes) {
  // Per link, the round it was last used in and its first transfer's ends. The transfers on a
  // link that the ports already serialize all share the sender or all share the receiver (if
  // two share the sender and a third differs from it, that third differs from one of the two in
  // both ends); anything else is sharing the alpha-beta model ignores.
  struct Use {
    int round = -1, src = 0, dst = 0, count = 0;
    bool same_src = true, same_dst = true;
  };
  std::vector<Use> use(static_cast<std::size_t>(routes.topology().link_count()));
  std::optional<SharedLink> found;
  for (std::size_t r = 0; r < schedule.rounds.size() && !found; ++r) {
    const int round = static_cast<int>(r);
    for (const alg::Transfer& t : schedule.rounds[r].transfers) {
      for (const int l : routes.links(routes.route(routes.find(t.src, t.dst)))) {
        Use& u = use[static_cast<std::size_t>(l)];
        if (u.round != round) {
          u = Use{round, t.src, t.dst, 1, true, true};
          continue;
        }
        ++u.count;
        u.same_src = u.same_src && t.src == u.src;
        u.same_dst = u.same_dst && t.dst == u.dst;
        if (!u.same_src && !u.same_dst && !found) {
          const topo::Link& link = routes.topology().link(l);
          found = SharedLink{round, l,
                             routes.topology().node(link.from).name + " -> " +
                                 routes.topology().node(link.to).name,
                             0};
        }
      }
    }
  }
  if (found) {  // how many of the round's transfers use the link
    for (const alg::Transfer& t :
         schedule.rounds[static_cast<std::size_t>(found->round)].transfers) {
      const auto links = routes.links(routes.route(routes.find(t.src, t.dst)));
      if (std::find(links.begin(), links.end(), found->link) != links.end()) ++found->transfers;
    }
  }
  return found;
}

SimulationResult run_simulation(const SimulationConfig& config) {
  if (config.iterations < 1) {
    throw InputError("iterations must be >= 1, got " + std::to_string(config.iterations));
  }
  if (config.size.value == 0) throw InputError("size must be > 0 bytes");
  if (config.trace_iteration &&
      (*config.trace_iteration < 0 || *config.trace_iteration >= config.iterations)) {
    throw InputError("trace iteration " + std::to_string(*config.trace_iteration) +
                     " is outside 0.." + std::to_string(config.iterations - 1));
  }
  const int n = config.topology.gpu_count();
  const alg::AlgorithmInfo& info = alg::find_algorithm(config.algorithm);
  const alg::Schedule schedule = alg::generate(config.algorithm, n, config.options);
  Executor executor(schedule, config.topology, NetworkConfig{config.network, config.gamma},
                    config.size);
  const DelayGenerator delays(config.delays, n, config.seed, config.policy,
                              config.straggler.value_or(schedule.straggler.value_or(n - 1)));

  // Adaptive: the candidates besides the configured algorithm, each with its executor.
  struct Candidate {
    std::string name;
    alg::Schedule schedule;
    std::unique_ptr<Executor> executor;
  };
  std::vector<Candidate> fallbacks;
  if (schedule.straggler && !config.adaptive_fallbacks.empty()) {
    // Reserved: each executor refers to its candidate's schedule, which must not move.
    fallbacks.reserve(config.adaptive_fallbacks.size());
    for (const std::string& name : config.adaptive_fallbacks) {
      if (name == info.name) continue;
      Candidate& c = fallbacks.emplace_back(Candidate{name, alg::generate(name, n, alg::Options{}), nullptr});
      c.executor = std::make_unique<Executor>(c.schedule, config.topology,
                                              NetworkConfig{config.network, config.gamma}, config.size);
    }
  }
  std::vector<Seconds> previous_arrival;  // adaptive: the last iteration's arrivals
  int fallback_runs = 0;

  SimulationResult out;
  out.algorithm = info.name;
  out.ranks = n;
  out.chunks = schedule.chunks;
  out.rounds = schedule.rounds.size();
  out.transfers = schedule.transfer_count();
  out.straggler_aware = schedule.straggler.has_value();
  if (config.network == NetworkKind::alphabeta) {
    RouteCache routes(config.topology);
    out.shared_link = find_shared_link(schedule, routes);
  }
  out.link_bytes.assign(static_cast<std::size_t>(config.topology.link_count()), 0.0);
  out.link_utilization.assign(out.link_bytes.size(), 0.0);
  double sum_completion = 0, sum_after = 0;
  int correct = 0;
  for (int first = 0; first < config.iterations; first += kArrivalBlock) {
    const int count = std::min(kArrivalBlock, config.iterations - first);
    for (const IterationArrivals& a : delays.iterations(first, count)) {
      RunOptions options;
      options.threads = config.threads;
      if (schedule.straggler)
        options.rank_map = straggler_rank_map(schedule, a.predicted_straggler);
      const bool traced = config.trace_iteration == a.iteration;
      options.record_timeline = traced;
      // Adaptive: which candidate is fastest on the predicted arrivals (ties keep the algorithm).
      Executor* run_on = &executor;
      const alg::Schedule* ran = &schedule;
      std::string chosen;  // adaptive only: what ran
      if (!fallbacks.empty()) {
        chosen = info.name;
        std::vector<Seconds> predicted(static_cast<std::size_t>(n), Seconds{0});
        if (!previous_arrival.empty()) {
          std::vector<double> sorted;
          for (const Seconds& t : previous_arrival) sorted.push_back(t.value);
          std::sort(sorted.begin(), sorted.end());
          predicted[static_cast<std::size_t>(a.predicted_straggler)] =
              Seconds{sorted[sorted.size() - 1] - sorted[sorted.size() - 2]};
        }
        double best = executor.run(predicted, RunOptions{options.rank_map, false, false}).completion.value;
        for (Candidate& c : fallbacks) {
          const double t = c.executor->run(predicted, RunOptions{}).completion.value;
          if (t < best) {
            best = t;
            run_on = c.executor.get();
            ran = &c.schedule;
            chosen = c.name;
          }
        }
        if (run_on != &executor) {
          options.rank_map.clear();
          ++fallback_runs;
        }
        previous_arrival = a.arrival;
      }
      IterationResult r = run_on->run(a.arrival, options);
      if (!std::isfinite(r.completion.value) ||
          !std::isfinite(sum_completion + r.completion.value)) {
        throw InputError(
            "iteration " + std::to_string(a.iteration) +
            ": the simulated time overflows (infinite): a bandwidth, latency, delay or size is "
            "outside any physical range (e.g. a bandwidth of 1e-300B/s)");
      }
      out.iterations.push_back(IterationSummary{a.iteration, r.completion, r.after_last_arrival,
                                                r.algbw, r.busbw, a.last_rank,
                                                a.predicted_straggler, std::move(chosen), {}, {}});
      if (config.per_rank_times) {
        out.iterations.back().arrival = r.arrival;
        out.iterations.back().finish = r.finish;
      }
      sum_completion += r.completion.value;
      sum_after += r.after_last_arrival.value;
      correct += a.predicted_straggler == a.last_rank ? 1 : 0;
      for (std::size_t l = 0; l < out.link_bytes.size(); ++l) {
        out.link_bytes[l] += static_cast<double>(r.link_bytes[l]);
        out.link_utilization[l] += r.link_utilization[l];
      }
      if (traced) {
        out.trace_json = chrome_trace(*ran, r,
                                      info.name + ", " + std::to_string(n) + " ranks, " +
                                          format_bytes(config.size) + ", iteration " +
                                          std::to_string(a.iteration));
        out.traced = std::move(r);
      }
    }
  }
  const double iters = config.iterations;
  out.mean_completion = Seconds{sum_completion / iters};
  out.mean_after_last_arrival = Seconds{sum_after / iters};
  const double bytes = static_cast<double>(config.size.value);
  out.algbw = BytesPerSecond{
      out.mean_after_last_arrival.value > 0 ? bytes / out.mean_after_last_arrival.value : 0.0};
  out.busbw = BytesPerSecond{out.algbw.value * 2.0 * (n - 1) / n};
  out.prediction_accuracy = correct / iters;
  out.fallback_fraction = fallback_runs / iters;
  for (std::size_t l = 0; l < out.link_bytes.size(); ++l) {
    out.link_bytes[l] /= iters;
    out.link_utilization[l] /= iters;
  }
  return out;
}

}  // namespace ssim::sim
