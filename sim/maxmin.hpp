// Max-min fair bandwidth sharing: links with capacities, flows that each cross a set of links
// (with an optional per-flow rate cap), and the progressive-filling solver that gives every
// flow its max-min fair rate. Knows nothing of transfers or time.
//
//   MaxMinSolver s;
//   int a = s.add_link(10.0), b = s.add_link(4.0);
//   int f0 = s.add_flow(std::vector<int>{a, b});      // crosses both links
//   int f1 = s.add_flow(std::vector<int>{a});
//   s.solve();            // b is the bottleneck of f0: rate(f0) = 4, then rate(f1) = 10 - 4 = 6
//
// Progressive filling: all unfrozen flows grow at the same rate; when a link saturates (its
// remaining capacity shared by its unfrozen flows is the smallest) or a flow reaches its cap,
// those flows freeze at that level and their rates are taken out of every link they cross.
// The allocation of one connected component (flows linked through shared links) does not
// depend on any other component, so `solve_around` recomputes only the component(s) touching
// some links - what a flow-level network does when one flow starts or ends.
#pragma once

#include <cstdint>
#include <limits>
#include <span>
#include <vector>

namespace ssim::sim {

class MaxMinSolver {
 public:
  static constexpr double unlimited = std::numeric_limits<double>::infinity();

  // Capacity in any rate unit (the network uses bytes per second); must be > 0.
  int add_link(double capacity);
  int link_count() const { return static_cast<int>(links_.size()); }
  double capacity(int link) const { return links_[link].capacity; }

  // A flow over distinct `links` (at least one) with a rate cap > 0; its rate is 0 until a
  // solve covers it. Ids of removed flows are reused.
  int add_flow(std::span<const int> links, double cap = unlimited);
  void remove_flow(int flow);
  bool active(int flow) const;
  double rate(int flow) const { return flows_[flow].rate; }
  // Hints that `flow` (an id of a flow added) is removed or read soon: loads its state.
  void prefetch(int flow) const { __builtin_prefetch(&flows_[static_cast<std::size_t>(flow)]); }
  // Hints that `k` + 1 flows are added soon, with no removal before: loads the state of the
  // removed flow whose id the last of them reuses (ids are reused last removed, first).
  void prefetch_added(std::size_t k) const {
    if (k < free_flows_.size())
      __builtin_prefetch(
          &flows_[static_cast<std::size_t>(free_flows_[free_flows_.size() - 1 - k])]);
  }
  int active_flows() const { return active_count_; }
  // Active flows crossing `link`, in no particular (but deterministic) order (a copy: tests).
  std::vector<int> flows_on(int link) const {
    std::vector<int> out;
    for (const OnLink& e : links_[link].flows) out.push_back(e.flow);
    return out;
  }

  // Recomputes the rate of every active flow (all components in one progressive filling);
  // the second form appends the flows whose rate changed to `changed`.
  void solve();
  void solve(std::vector<int>& changed);
  // Recomputes the rates of the flows in the connected components that contain any of `seeds`
  // (link ids; repeats are fine), each component on its own, and appends those whose rate
  // changed to `changed` (components in seed order, each in breadth-first order).
  void solve_around(std::span<const int> seeds, std::vector<int>& changed);

 private:
  // An active flow on a link, and where the flow's hop over the link is in hops_ (so that
  // remove_flow fixes the slot of an entry it moves without reading that entry's flow).
  struct OnLink {
    int flow;
    std::uint32_t hop;
  };
  // Links and flows are kept small (48 and 32 bytes): the solver's cost is its cache misses.
  struct LinkState {
    double capacity = 0;
    // Scratch of the solver.
    double remaining = 0;
    std::vector<OnLink> flows;  // active flows on the link
    int unfrozen = 0;
    // The stamp (next_stamp) of the last component search or add_flow that saw the link: a
    // search marks its links, add_flow catches a link listed twice in one flow.
    std::uint32_t mark = 0;
  };
  // A flow's i-th link and the flow's index in that link's `flows`.
  struct Hop {
    int link;
    int slot;
  };
  // A flow's hops are hops_[first, first + count), in one pool for all flows (one memory access
  // for the flow's links where two vectors of its own cost two more); a reused id keeps its
  // place while its new route fits in `room`, else gets a new one at the pool's end.
  struct alignas(32) FlowState {
    std::uint32_t first = 0;
    std::uint32_t count : 30 = 0;
    std::uint32_t active : 1 = 0;
    std::uint32_t frozen : 1 = 0;
    std::uint32_t room = 0;
    std::uint32_t mark = 0;  // the stamp of the last component search that reached it
    double cap = unlimited;
    double rate = 0;
  };
  static_assert(sizeof(FlowState) == 32);

  // A stamp newer than every mark (after 2^32 - 1 of them, the marks are cleared).
  std::uint32_t next_stamp();

  void collect_component(int seed_link);
  void fill_component(std::vector<int>& changed);
  void freeze(int flow, double rate);

  std::vector<LinkState> links_;
  std::span<Hop> hops(const FlowState& f) { return {hops_.data() + f.first, f.count}; }
  std::span<const Hop> hops(const FlowState& f) const { return {hops_.data() + f.first, f.count}; }

  std::vector<FlowState> flows_;
  std::vector<Hop> hops_;
  std::vector<int> free_flows_;
  int active_count_ = 0;
  std::uint32_t stamp_ = 0;
  std::vector<int> comp_links_;  // scratch: the component being solved
  std::vector<int> comp_flows_;
  std::vector<double> old_rate_;  // rates before the solve, to report changes
  std::vector<int> saturated_;
};

}  // namespace ssim::sim
