// The reducing switches (NVLS, SHARP) of a topology as a run's in-network reductions meet them.
// Internal to sim/: the dataflow pass and the event run both cost reductions through it.
#pragma once

#include <cstddef>
#include <unordered_map>
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
  // The ports' index of the reducing switch that joins listed_'s ranks (added when new), or -1.
  std::ptrdiff_t find_ports();

  const topo::Topology& topology_;
  int ranks_ = 0, chunks_ = 0;
  std::vector<Ports> ports_;
  std::vector<int> participants_;
  // Per reduction's ranks as listed (physical; members, then receivers): its ports' index, or
  // -1 where no reducing switch joins them. A pipelined schedule reduces the same groups round
  // after round, and finding their switch walks every participant's links in the topology.
  struct ListHash {
    std::size_t operator()(const std::vector<int>& v) const noexcept {
      std::size_t h = 1469598103934665603ull;  // FNV-1a over the ranks
      for (int r : v) h = (h ^ static_cast<std::size_t>(static_cast<unsigned>(r))) * 1099511628211ull;
      return h;
    }
  };
  std::unordered_map<std::vector<int>, std::ptrdiff_t, ListHash> index_of_;
  std::size_t memo_ints_ = 0;  // ranks held by index_of_'s keys, at most kMemoInts
  static constexpr std::size_t kMemoInts = std::size_t{1} << 20;
  std::vector<int> listed_;
};

}  // namespace ssim::sim
