#include "sim/network.hpp"

#include <algorithm>
#include <string>

#include "common/error.hpp"
#include "sim/maxmin.hpp"

namespace ssim::sim {

std::string_view to_string(NetworkKind kind) {
  return kind == NetworkKind::alphabeta ? "alphabeta" : "flow";
}

NetworkKind parse_network_kind(std::string_view text) {
  if (text == "alphabeta") return NetworkKind::alphabeta;
  if (text == "flow") return NetworkKind::flow;
  throw InputError("unknown network model '" + std::string(text) +
                   "' (expected alphabeta or flow)");
}

RouteCache::RouteCache(const topo::Topology& topology)
    : topology_(&topology),
      last_dst_(static_cast<std::size_t>(topology.gpu_count()), -1),
      last_index_(static_cast<std::size_t>(topology.gpu_count()), 0) {}

std::uint32_t RouteCache::find_slow(int src, int dst) {
  const int n = topology_->gpu_count();
  SSIM_CHECK(src >= 0 && src < n && dst >= 0 && dst < n && src != dst,
             "route between invalid ranks");
  const std::uint64_t key = static_cast<std::uint64_t>(src) * static_cast<std::uint64_t>(n) +
                            static_cast<std::uint64_t>(dst);
  auto [it, inserted] = index_.try_emplace(key, static_cast<std::uint32_t>(routes_.size()));
  if (inserted) {
    const topo::Route r = topology_->route(src, dst, key);
    SSIM_CHECK(!r.links.empty() && r.bandwidth.value > 0, "route without links");
    CachedRoute c;
    c.latency = r.latency.value;
    c.bandwidth = r.bandwidth.value;
    c.inverse_bandwidth = 1.0 / r.bandwidth.value;
    c.first_link = static_cast<std::uint32_t>(links_.size());
    c.link_count = static_cast<std::uint32_t>(r.links.size());
    links_.insert(links_.end(), r.links.begin(), r.links.end());
    routes_.push_back(c);
  }
  last_dst_[src] = dst;
  last_index_[src] = it->second;
  return it->second;
}

namespace {

// Every transfer finishes latency + bytes / bandwidth after it starts; nothing is shared.
class AlphaBetaNetwork final : public NetworkModel, EventHandler {
 public:
  AlphaBetaNetwork(Engine& engine, TransferSink& sink, RouteCache& routes)
      : engine_(engine), sink_(sink), routes_(routes) {}

  NetworkKind kind() const override { return NetworkKind::alphabeta; }
  bool serializes_ports() const override { return true; }
  void start(std::uint32_t transfer, std::uint32_t route, std::uint64_t bytes) override {
    const double t =
        engine_.now().value + alphabeta_time(routes_.route(route), static_cast<double>(bytes));
    engine_.schedule(Seconds{t}, *this, transfer);
  }
  void reset() override {}
  void on_event(Engine& engine, std::uint64_t tag) override {
    sink_.transfer_done(static_cast<std::uint32_t>(tag), engine.now());
  }

 private:
  Engine& engine_;
  TransferSink& sink_;
  RouteCache& routes_;
};

// Flows sharing links max-min fairly. A flow lives in a slot; its completion event carries the
// slot's version, and every rate change bumps the version, so outdated completions are ignored.
class FlowNetwork final : public NetworkModel, EventHandler {
 public:
  FlowNetwork(Engine& engine, TransferSink& sink, RouteCache& routes)
      : engine_(engine), sink_(sink), routes_(routes) {
    const topo::Topology& t = routes.topology();
    for (int l = 0; l < t.link_count(); ++l) solver_.add_link(t.link(l).bandwidth.value);
  }

  NetworkKind kind() const override { return NetworkKind::flow; }
  bool serializes_ports() const override { return false; }

  void start(std::uint32_t transfer, std::uint32_t route, std::uint64_t bytes) override {
    std::uint32_t slot;
    if (!free_.empty()) {
      slot = free_.back();
      free_.pop_back();
    } else {
      slot = static_cast<std::uint32_t>(flows_.size());
      flows_.emplace_back();
    }
    Flow& f = flows_[slot];
    f.transfer = transfer;
    f.route = route;
    f.remaining = static_cast<double>(bytes);
    f.rate = 0;
    f.solver_id = -1;
    const double t = engine_.now().value + routes_.route(route).latency;
    engine_.schedule(Seconds{t}, *this, slot);  // activation: the first byte arrives
  }

  void reset() override {
    for (std::uint32_t s = 0; s < flows_.size(); ++s) {
      if (flows_[s].solver_id >= 0) solver_.remove_flow(flows_[s].solver_id);
    }
    flows_.clear();
    free_.clear();
  }
  void observe(RateObserver* observer) override { observer_ = observer; }

  void on_event(Engine& engine, std::uint64_t tag) override {
    const double now = engine.now().value;
    const std::uint32_t slot = static_cast<std::uint32_t>(tag & 0xffffffffu);
    Flow& f = flows_[slot];
    if ((tag & kCompletion) == 0) {
      activate(slot, now);
      return;
    }
    if (((tag >> 32) & kVersionMask) != f.version) return;  // superseded by a rate change
    const std::span<const int> links = routes_.links(routes_.route(f.route));
    if (observer_) observer_->flow_rate(links, f.rate, 0.0, engine.now());
    solver_.remove_flow(f.solver_id);
    f.solver_id = -1;
    resolve(links, now);
    finish(slot, now);
  }

 private:
  static constexpr std::uint64_t kCompletion = std::uint64_t{1} << 63;
  static constexpr std::uint64_t kVersionMask = (std::uint64_t{1} << 31) - 1;

  struct Flow {
    std::uint32_t transfer = 0;
    std::uint32_t route = 0;
    std::uint32_t version = 0;
    int solver_id = -1;
    double remaining = 0;  // bytes still to send at time `updated`
    double rate = 0;       // bytes per second
    double updated = 0;
  };

  static void bump(Flow& f) {
    f.version = (f.version + 1) & static_cast<std::uint32_t>(kVersionMask);
  }

  void activate(std::uint32_t slot, double now) {
    Flow& f = flows_[slot];
    if (f.remaining <= 0) {
      finish(slot, now);
      return;
    }
    const std::span<const int> links = routes_.links(routes_.route(f.route));
    f.solver_id = solver_.add_flow(links);
    const std::size_t id = static_cast<std::size_t>(f.solver_id);
    if (slot_of_.size() <= id) slot_of_.resize(id + 1);
    slot_of_[id] = slot;
    f.updated = now;
    resolve(links, now);
  }

  // New max-min rates for the flows connected to `links`; reschedules those whose rate changed.
  void resolve(std::span<const int> links, double now) {
    changed_.clear();
    solver_.solve_around(links, changed_);
    for (int id : changed_) {
      Flow& g = flows_[slot_of_[id]];
      g.remaining = std::max(0.0, g.remaining - g.rate * (now - g.updated));
      g.updated = now;
      if (observer_) {
        observer_->flow_rate(routes_.links(routes_.route(g.route)), g.rate, solver_.rate(id),
                             Seconds{now});
      }
      g.rate = solver_.rate(id);
      bump(g);
      const std::uint64_t tag = kCompletion | (std::uint64_t{g.version} << 32) | slot_of_[id];
      engine_.schedule(Seconds{now + g.remaining / g.rate}, *this, tag);
    }
  }

  void finish(std::uint32_t slot, double now) {
    const std::uint32_t transfer = flows_[slot].transfer;
    bump(flows_[slot]);  // no stale completion may match a reused slot
    free_.push_back(slot);
    sink_.transfer_done(transfer, Seconds{now});
  }

  Engine& engine_;
  TransferSink& sink_;
  RouteCache& routes_;
  MaxMinSolver solver_;
  std::vector<Flow> flows_;
  std::vector<std::uint32_t> free_;
  std::vector<std::uint32_t> slot_of_;  // solver flow id -> slot
  std::vector<int> changed_;
  RateObserver* observer_ = nullptr;
};

}  // namespace

std::unique_ptr<NetworkModel> make_network(NetworkKind kind, Engine& engine, TransferSink& sink,
                                           RouteCache& routes) {
  if (kind == NetworkKind::alphabeta)
    return std::make_unique<AlphaBetaNetwork>(engine, sink, routes);
  return std::make_unique<FlowNetwork>(engine, sink, routes);
}

}  // namespace ssim::sim
