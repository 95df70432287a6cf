#include "sim/maxmin.hpp"

#include <algorithm>

#include "common/error.hpp"

namespace ssim::sim {

namespace {
// Links whose fair share lies within this relative distance of the bottleneck level saturate
// together; without it an ulp of rounding would split one level into two.
constexpr double kLevelTolerance = 1e-12;
}  // namespace

int MaxMinSolver::add_link(double capacity) {
  SSIM_CHECK(capacity > 0, "link capacity must be positive");
  LinkState l;
  l.capacity = capacity;
  links_.push_back(std::move(l));
  return static_cast<int>(links_.size()) - 1;
}

int MaxMinSolver::add_flow(std::span<const int> links, double cap) {
  SSIM_CHECK(!links.empty(), "a flow needs at least one link");
  SSIM_CHECK(cap > 0, "flow rate cap must be positive");
  SSIM_CHECK(links.size() < (std::size_t{1} << 30), "flow crosses too many links");
  const std::uint32_t stamp = next_stamp();  // a link's mark equals it once seen in `links`
  for (const int l : links) {
    SSIM_CHECK(l >= 0 && l < link_count(), "flow crosses an unknown link");
    SSIM_CHECK(links_[l].mark != stamp, "flow crosses a link twice");
    links_[l].mark = stamp;
  }
  int id;
  if (!free_flows_.empty()) {
    id = free_flows_.back();
    free_flows_.pop_back();
  } else {
    id = static_cast<int>(flows_.size());
    flows_.emplace_back();
  }
  FlowState& f = flows_[id];
  if (links.size() > f.room) {
    f.first = static_cast<std::uint32_t>(hops_.size());
    f.room = static_cast<std::uint32_t>(links.size());
    hops_.resize(hops_.size() + links.size());
  }
  f.count = static_cast<std::uint32_t>(links.size());
  f.cap = cap;
  f.rate = 0;
  f.active = 1;
  const std::span<Hop> h = hops(f);
  for (std::size_t i = 0; i < links.size(); ++i) {
    LinkState& l = links_[links[i]];
    h[i] = Hop{links[i], static_cast<int>(l.flows.size())};
    l.flows.push_back(OnLink{id, f.first + static_cast<std::uint32_t>(i)});
  }
  ++active_count_;
  return id;
}

void MaxMinSolver::remove_flow(int flow) {
  SSIM_CHECK(active(flow), "removing an inactive flow");
  FlowState& f = flows_[flow];
  // Swap-remove from each link's list; the entry moved into the hole knows where its flow's
  // hop is, so its slot is fixed in O(1).
  for (const Hop& hop : hops(f)) {
    LinkState& l = links_[hop.link];
    const std::size_t pos = static_cast<std::size_t>(hop.slot);
    const OnLink moved = l.flows.back();
    l.flows[pos] = moved;
    l.flows.pop_back();
    if (moved.flow != flow) hops_[moved.hop].slot = static_cast<int>(pos);
  }
  f.active = 0;
  f.rate = 0;
  free_flows_.push_back(flow);
  --active_count_;
}

std::uint32_t MaxMinSolver::next_stamp() {
  if (++stamp_ == 0) {
    for (LinkState& l : links_) l.mark = 0;
    for (FlowState& f : flows_) f.mark = 0;
    stamp_ = 1;
  }
  return stamp_;
}

bool MaxMinSolver::active(int flow) const {
  return flow >= 0 && flow < static_cast<int>(flows_.size()) && flows_[flow].active;
}

void MaxMinSolver::solve() {
  std::vector<int> ignored;
  solve(ignored);
}

void MaxMinSolver::solve(std::vector<int>& changed) {
  comp_links_.clear();
  comp_flows_.clear();
  for (int l = 0; l < link_count(); ++l) comp_links_.push_back(l);
  for (int f = 0; f < static_cast<int>(flows_.size()); ++f) {
    if (flows_[f].active) comp_flows_.push_back(f);
  }
  fill_component(changed);
}

void MaxMinSolver::solve_around(std::span<const int> seeds, std::vector<int>& changed) {
  // One component at a time: a fill costs (levels x size) of what it covers, so filling the
  // union of many small components at once would cost (their levels x the union's size).
  next_stamp();
  for (int l : seeds) {
    if (links_[l].mark == stamp_) continue;
    comp_links_.clear();
    comp_flows_.clear();
    collect_component(l);
    if (!comp_flows_.empty()) fill_component(changed);
  }
}

// Breadth-first over the bipartite link-flow graph, appending to comp_links_/comp_flows_.
void MaxMinSolver::collect_component(int seed_link) {
  LinkState& seed = links_[seed_link];
  if (seed.mark == stamp_) return;
  seed.mark = stamp_;
  std::size_t next = comp_links_.size();
  comp_links_.push_back(seed_link);
  while (next < comp_links_.size()) {
    const LinkState& l = links_[comp_links_[next++]];
    for (const OnLink& e : l.flows) {
      const int fid = e.flow;
      FlowState& f = flows_[fid];
      if (f.mark == stamp_) continue;
      f.mark = stamp_;
      comp_flows_.push_back(fid);
      for (const Hop& hop : hops(f)) {
        const int other = hop.link;
        LinkState& o = links_[other];
        if (o.mark == stamp_) continue;
        o.mark = stamp_;
        comp_links_.push_back(other);
      }
    }
  }
}

void MaxMinSolver::freeze(int flow, double rate) {
  FlowState& f = flows_[flow];
  f.frozen = 1;
  f.rate = rate;
  for (const Hop& hop : hops(f)) {
    LinkState& link = links_[hop.link];
    link.remaining = std::max(0.0, link.remaining - rate);
    --link.unfrozen;
  }
}

void MaxMinSolver::fill_component(std::vector<int>& changed) {
  if (comp_flows_.size() == 1) {
    // A flow alone on its links (most flows of a ring or any schedule without sharing): the
    // filling below would reach min(cap, smallest capacity) in one step, in the same
    // arithmetic; the scratch state it would leave is reset before its next use.
    FlowState& f = flows_[comp_flows_[0]];
    double level = unlimited;
    for (const Hop& hop : hops(f)) level = std::min(level, links_[hop.link].capacity);
    const double rate = f.cap <= level ? f.cap : level;
    if (rate != f.rate) changed.push_back(comp_flows_[0]);
    f.rate = rate;
    return;
  }
  for (int l : comp_links_) {
    LinkState& link = links_[l];
    link.remaining = link.capacity;
    link.unfrozen = static_cast<int>(link.flows.size());
  }
  old_rate_.resize(comp_flows_.size());
  for (std::size_t i = 0; i < comp_flows_.size(); ++i) {
    FlowState& f = flows_[comp_flows_[i]];
    old_rate_[i] = f.rate;
    f.frozen = 0;
  }
  std::size_t left = comp_flows_.size();
  std::vector<int>& saturated = saturated_;
  while (left > 0) {
    double level = unlimited;
    for (int l : comp_links_) {
      const LinkState& link = links_[l];
      if (link.unfrozen > 0) level = std::min(level, link.remaining / link.unfrozen);
    }
    double cap_level = unlimited;
    for (int fid : comp_flows_) {
      const FlowState& f = flows_[fid];
      if (!f.frozen) cap_level = std::min(cap_level, f.cap);
    }
    if (cap_level <= level) {
      // Capped flows stop growing before any link saturates.
      for (int fid : comp_flows_) {
        const FlowState& f = flows_[fid];
        if (!f.frozen && f.cap <= cap_level) {
          freeze(fid, f.cap);
          --left;
        }
      }
      continue;
    }
    saturated.clear();
    const double threshold = level * (1 + kLevelTolerance);
    for (int l : comp_links_) {
      const LinkState& link = links_[l];
      if (link.unfrozen > 0 && link.remaining / link.unfrozen <= threshold) saturated.push_back(l);
    }
    for (int l : saturated) {
      for (const OnLink& e : links_[l].flows) {
        const int fid = e.flow;
        if (!flows_[fid].frozen) {
          freeze(fid, level);
          --left;
        }
      }
    }
  }
  for (std::size_t i = 0; i < comp_flows_.size(); ++i) {
    if (flows_[comp_flows_[i]].rate != old_rate_[i]) changed.push_back(comp_flows_[i]);
  }
}

}  // namespace ssim::sim
