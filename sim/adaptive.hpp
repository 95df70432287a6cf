// The adaptive straggler policy's choice, shared by run_simulation (sim/simulation.hpp) and the
// training model (sim/training.hpp), so that both choose the same way.
//
//   AdaptiveChoice choice(config.adaptive_fallbacks, "stragglar", n, {}, topology, network, size);
//   const auto predicted = AdaptiveChoice::predicted_arrivals(previous_arrivals, {late_rank}, n);
//   const int pick = choice.choose(stragglar_executor, rank_map, predicted);  // -1: stragglar
#pragma once

#include <functional>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "algorithms/schedule.hpp"
#include "common/units.hpp"
#include "sim/executor.hpp"
#include "sim/network.hpp"
#include "topologies/topology.hpp"

namespace ssim::sim {

// The adaptive policy (SimulationConfig::adaptive_fallbacks), shared by run_simulation and the
// training model (sim/training.hpp): the fallback candidates of one straggler-aware schedule,
// each with its executor, and the choice among them.
class AdaptiveChoice {
 public:
  struct Candidate {
    std::string name;        // a registry algorithm
    alg::Schedule schedule;  // as run (after `arrange`)
    std::unique_ptr<Executor> executor;
  };
  // Every fallback except `algorithm`, generated on `ranks` ranks with default options and
  // handed through `arrange` (when set; the training model puts a group's schedule side by side
  // on every rank), each with an executor on `topology` for `bytes`. Keeps references to
  // `topology`.
  AdaptiveChoice(const std::vector<std::string>& fallbacks, const std::string& algorithm, int ranks,
                 const std::function<alg::Schedule(alg::Schedule)>& arrange,
                 const topo::Topology& topology, NetworkConfig network, Bytes bytes);
  bool empty() const { return candidates_.empty(); }
  std::size_t size() const { return candidates_.size(); }
  Candidate& operator[](std::size_t i) { return candidates_[i]; }

  // The arrivals the choice is made on, for `ranks` ranks: 0 everywhere, except that the
  // predicted late ranks `late` (k of them, in increasing order of their previous arrival) are
  // late by the leads the k latest arrivals of `previous` had over the latest of the others:
  // the i-th of `late` by (k-i)-th latest - (k+1)-th latest. `previous` empty (the first
  // iteration): 0 everywhere.
  static std::vector<Seconds> predicted_arrivals(std::span<const Seconds> previous,
                                                 std::span<const int> late, int ranks);

  // Which is fastest (completion) on `predicted`: the algorithm, run by `algorithm` with
  // `rank_map` (its predicted straggler's relabelling), or a candidate, run as generated.
  // Returns -1 for the algorithm (ties keep it), else the candidate's index.
  int choose(Executor& algorithm, const std::vector<int>& rank_map,
             std::span<const Seconds> predicted);

 private:
  std::vector<Candidate> candidates_;
};

}  // namespace ssim::sim
