#include "sim/adaptive.hpp"

#include <algorithm>

#include "algorithms/registry.hpp"
#include "common/error.hpp"

namespace ssim::sim {

AdaptiveChoice::AdaptiveChoice(const std::vector<std::string>& fallbacks,
                               const std::string& algorithm, int ranks,
                               const std::function<alg::Schedule(alg::Schedule)>& arrange,
                               const topo::Topology& topology, NetworkConfig network, Bytes bytes) {
  // Reserved: each executor refers to its candidate's schedule, which must not move.
  candidates_.reserve(fallbacks.size());
  for (const std::string& name : fallbacks) {
    if (name == algorithm) continue;
    alg::Schedule s = alg::generate(name, ranks, alg::Options{});
    Candidate& c = candidates_.emplace_back(
        Candidate{name, arrange ? arrange(std::move(s)) : std::move(s), nullptr});
    c.executor = std::make_unique<Executor>(c.schedule, topology, network, bytes);
  }
}

std::vector<Seconds> AdaptiveChoice::predicted_arrivals(std::span<const Seconds> previous,
                                                        std::span<const int> late, int ranks) {
  std::vector<Seconds> predicted(static_cast<std::size_t>(ranks), Seconds{0});
  if (previous.empty()) return predicted;
  // Each predicted late rank late by its lead then over the last early rank.
  std::vector<double> sorted;
  sorted.reserve(previous.size());
  for (const Seconds& t : previous) sorted.push_back(t.value);
  std::sort(sorted.begin(), sorted.end());
  const std::size_t k = late.size();
  SSIM_CHECK(k >= 1 && k < sorted.size(), "adaptive prediction needs 1..ranks-1 late ranks");
  const double early = sorted[sorted.size() - k - 1];
  for (std::size_t i = 0; i < k; ++i)
    predicted[static_cast<std::size_t>(late[i])] = Seconds{sorted[sorted.size() - k + i] - early};
  return predicted;
}

int AdaptiveChoice::choose(Executor& algorithm, const std::vector<int>& rank_map,
                           std::span<const Seconds> predicted) {
  double best = algorithm.run(predicted, RunOptions{rank_map, false, false}).completion.value;
  int pick = -1;
  for (std::size_t i = 0; i < candidates_.size(); ++i) {
    const double t = candidates_[i].executor->run(predicted, RunOptions{}).completion.value;
    if (t < best) {
      best = t;
      pick = static_cast<int>(i);
    }
  }
  return pick;
}

}  // namespace ssim::sim
