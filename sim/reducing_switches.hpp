// The reducing switches (NVLS, SHARP) of a topology as a run's in-network reductions meet them.
// Internal to sim/: the dataflow pass and the event run both cost reductions through it.
#pragma once

#include <cstddef>
#include <vector>

#include "algorithms/schedule.hpp"
#include "topologies/topology.hpp"

namespace ssim::sim {

// The reducing switches that a run's in-network reductions (alg::SwitchReduce) go through, each
// with its links to and from the ranks, found at the first reduction that needs it.
class ReducingSwitches {
 public:
  struct Ports {
    int vertex = -1;
    std::vector<int> up, down;  // per physical rank: link rank -> switch, switch -> rank (-1: none)
  };

  ReducingSwitches(const topo::Topology& topology, int ranks, int chunks)
      : topology_(topology), ranks_(ranks), chunks_(chunks) {}

  // The switch of reduction `j` of round `round` (0-based), as an index into ports();
  // InputError naming the round, the reduction and the topology when no reducing switch joins
  // its ranks. `map`: schedule rank -> physical rank (nullptr: the identity).
  std::size_t resolve(const alg::SwitchReduce& op, const int* map, std::size_t round,
                      std::size_t j);
  const Ports& ports(std::size_t index) const { return ports_[index]; }

 private:
  const topo::Topology& topology_;
  int ranks_ = 0, chunks_ = 0;
  std::vector<Ports> ports_;
  std::vector<int> participants_;
};

}  // namespace ssim::sim
