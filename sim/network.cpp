#include "sim/network.hpp"

#include <algorithm>
#include <array>
#include <bit>
#include <string>

#include "common/error.hpp"
#include "sim/maxmin.hpp"
#include "sim/transfer_timing.hpp"

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

namespace {

// StarRoutes when every GPU has exactly one out-link and one in-link, both to the same switch.
// Then a path from src must start with src's only out-link and end with dst's only in-link;
// up[src], down[dst] is such a path, and any other one revisits the switch: no lower latency
// sum (latencies are >= 0) and more hops, so routing (least latency, then fewest hops) takes
// it, with or without ECMP.
std::optional<StarRoutes> find_star(const topo::Topology& t) {
  const int n = t.gpu_count();
  if (n < 2) return std::nullopt;
  StarRoutes s;
  s.up.resize(static_cast<std::size_t>(n));
  s.down.resize(static_cast<std::size_t>(n));
  int hub = -1;
  for (int r = 0; r < n; ++r) {
    const int v = t.vertex_of_rank(r);
    const std::vector<int> out = t.out_links(v), in = t.in_links(v);
    if (out.size() != 1 || in.size() != 1) return std::nullopt;
    const int to = t.link(out[0]).to, from = t.link(in[0]).from;
    if (to != from || (hub >= 0 && to != hub)) return std::nullopt;
    hub = to;
    s.up[static_cast<std::size_t>(r)] = out[0];
    s.down[static_cast<std::size_t>(r)] = in[0];
  }
  if (t.node(hub).kind != topo::NodeKind::switch_node) return std::nullopt;
  for (int r = 0; r < n; ++r) {
    const topo::Link& up = t.link(s.up[static_cast<std::size_t>(r)]);
    const topo::Link& down = t.link(s.down[static_cast<std::size_t>(r)]);
    s.up_latency.push_back(up.latency.value);
    s.up_bandwidth.push_back(up.bandwidth.value);
    s.down_latency.push_back(down.latency.value);
    s.down_bandwidth.push_back(down.bandwidth.value);
  }
  return s;
}

}  // namespace

RouteCache::RouteCache(const topo::Topology& topology, LinkLists lists)
    : topology_(&topology),
      lists_(lists),
      ranks_(static_cast<std::uint64_t>(topology.gpu_count())),
      last_dst_(static_cast<std::size_t>(topology.gpu_count()), -1),
      last_index_(static_cast<std::size_t>(topology.gpu_count()), 0),
      star_(find_star(topology)) {}

void RouteCache::grow() {
  const std::size_t capacity = slots_.empty() ? 64 : slots_.size() * 2;
  std::vector<Slot> slots(capacity);
  shift_ = 64 - std::countr_zero(capacity);
  for (const Slot& old : slots_) {
    if (old.key == kEmpty) continue;
    std::size_t at = slot_of(old.key);
    while (slots[at].key != kEmpty) at = (at + 1) & (capacity - 1);
    slots[at] = old;
  }
  slots_ = std::move(slots);
}

std::uint32_t RouteCache::find_slow(int src, int dst) {
  const int n = topology_->gpu_count();
  SSIM_CHECK(src >= 0 && src < n && dst >= 0 && dst < n && src != dst,
             "route between invalid ranks");
  const std::uint64_t k = key(src, dst);
  std::uint32_t index = find_cached(src, dst);
  if (index == missing) {
    if (2 * (routes_.size() + 1) > slots_.size()) grow();  // load factor <= 1/2
    CachedRoute c;
    c.src = src;
    c.dst = dst;
    if (lists_ == LinkLists::short_only) {
      const topo::RouteSummary r = topology_->route_summary(src, dst, k);
      SSIM_CHECK(r.hops > 0 && r.bandwidth.value > 0, "route without links");
      c.latency = r.latency.value;
      c.bandwidth = r.bandwidth.value;
      c.link_count = static_cast<std::uint32_t>(r.hops);
      c.first_link = CachedRoute::kNotStored;
    }
    if (lists_ == LinkLists::all || c.link_count <= kShortRoute) {
      const topo::Route r = topology_->route(src, dst, k);
      SSIM_CHECK(!r.links.empty() && r.bandwidth.value > 0, "route without links");
      c.latency = r.latency.value;
      c.bandwidth = r.bandwidth.value;
      c.first_link = static_cast<std::uint32_t>(links_.size());
      c.link_count = static_cast<std::uint32_t>(r.links.size());
      links_.insert(links_.end(), r.links.begin(), r.links.end());
    }
    c.inverse_bandwidth = 1.0 / c.bandwidth;
    index = static_cast<std::uint32_t>(routes_.size());
    routes_.push_back(c);
    std::size_t at = slot_of(k);
    while (slots_[at].key != kEmpty) at = (at + 1) & (slots_.size() - 1);
    slots_[at] = Slot{k, index};
  }
  last_dst_[src] = dst;
  last_index_[src] = index;
  return index;
}

std::uint32_t RouteCache::find_cached(int src, int dst) const {
  const std::size_t s = static_cast<std::size_t>(src);
  if (last_dst_[s] == dst) return last_index_[s];
  if (slots_.empty()) return missing;
  const std::uint64_t k = key(src, dst);
  for (std::size_t at = slot_of(k);; at = (at + 1) & (slots_.size() - 1)) {
    if (slots_[at].key == k) return slots_[at].value;
    if (slots_[at].key == kEmpty) return missing;
  }
}

std::span<const int> RouteCache::links(const CachedRoute& r, std::vector<int>& scratch) const {
  if (r.first_link != CachedRoute::kNotStored) return links(r);
  scratch = topology_->route(r.src, r.dst, key(r.src, r.dst)).links;
  return scratch;
}

void RouteCache::add_link_bytes(std::span<const std::uint64_t> route_bytes,
                                std::span<std::uint64_t> link_bytes) const {
  std::vector<topo::RouteLoad> far;  // routes without stored links: summed by the topology
  for (std::size_t i = 0; i < route_bytes.size() && i < routes_.size(); ++i) {
    if (route_bytes[i] == 0) continue;
    const CachedRoute& r = routes_[i];
    if (r.first_link == CachedRoute::kNotStored) {
      far.push_back(topo::RouteLoad{r.src, r.dst, key(r.src, r.dst), route_bytes[i]});
      continue;
    }
    for (const int l : links(r)) link_bytes[static_cast<std::size_t>(l)] += route_bytes[i];
  }
  if (!far.empty()) topology_->add_route_bytes(far, link_bytes);
}

void NetworkModel::start_reduction(std::uint32_t, std::span<const int>, int, double,
                                   std::uint64_t) {
  throw InputError("the " + std::string(to_string(kind())) +
                   " event model does not cost in-network reductions (the alphabeta dataflow "
                   "pass and the flow model do)");
}

namespace {

// Every transfer finishes latency + bytes / bandwidth after it starts; nothing is shared.
class AlphaBetaNetwork final : public NetworkModel, EventHandler {
 public:
  AlphaBetaNetwork(Engine& engine, TransferSink& sink, RouteCache& routes,
                   const ProtocolTiming& protocol)
      : engine_(engine), sink_(sink), routes_(routes), protocol_(protocol) {}

  NetworkKind kind() const override { return NetworkKind::alphabeta; }
  bool serializes_ports() const override { return true; }
  void start(std::uint32_t transfer, std::uint32_t route, std::uint64_t bytes) override {
    const CachedRoute& r = routes_.route(route);
    // The dataflow pass's transfer time (time_transfer), so the two agree to the last bit.
    const double t = time_transfer(engine_.now().value, r, static_cast<double>(bytes), alg::Op::copy,
                                   0.0, &protocol_, static_cast<std::size_t>(r.src),
                                   static_cast<std::size_t>(r.dst))
                         .end;
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
  const ProtocolTiming protocol_;
};

// State shared by both flow models: the flows in flight, each in a reusable slot. A flow's
// completion is scheduled with the slot's version; every rate change bumps the version, so an
// outdated completion is recognized and ignored.
class FlowTable {
 protected:
  static constexpr std::uint32_t kVersionMask = (std::uint32_t{1} << 31) - 1;

  struct alignas(64) Flow {
    std::uint32_t transfer = 0;
    std::uint32_t route = 0;
    std::uint32_t version = 0;
    int solver_id = -1;
    double remaining = 0;  // bytes still to send at time `updated`
    double rate = 0;       // bytes per second
    double updated = 0;
    double cap = MaxMinSolver::unlimited;  // the protocol's cap on a routed transfer (wire bytes/s)
    double latency = 0;  // pipelined: from the last byte sent to transfer_done
    // An in-network reduction (start_reduction): how many of its solver links (own_[slot]) are
    // topology links; 0 for a routed transfer.
    std::uint32_t own_topology = 0;
  };
  // One cache line per flow: the event loop touches thousands of flows in scattered slots.
  static_assert(sizeof(Flow) == 64);

  FlowTable(Engine& engine, TransferSink& sink, RouteCache& routes, const ProtocolTiming& protocol)
      : sink_(sink), routes_(routes), protocol_(protocol), landing_(engine, sink) {
    const topo::Topology& t = routes.topology();
    for (int l = 0; l < t.link_count(); ++l) solver_.add_link(t.link(l).bandwidth.value);
  }

  // The solver link standing for the reduction throughput of switch vertex `v` (added at its
  // first use; solver ids past the topology's links).
  int reduction_link(int v) {
    for (const auto& [vertex, link] : reducers_)
      if (vertex == v) return link;
    const topo::Topology& t = routes_.topology();
    SSIM_CHECK(v >= 0 && v < t.node_count() && t.node(v).reduce, "not a reducing switch");
    const int link =
        solver_.add_link(protocol_.reduction_bandwidth(t.node(v).reduce->bandwidth.value));
    reducers_.emplace_back(v, link);
    return link;
  }

  // A flow over explicit links (start_reduction), not yet moving.
  std::uint32_t new_reduction(std::uint32_t transfer, std::span<const int> links, int reducer,
                              double latency, std::uint64_t bytes) {
    SSIM_CHECK(!links.empty(), "a reduction crosses at least one link");
    const std::uint32_t slot = new_flow(transfer, 0, bytes);
    Flow& f = flows_[slot];
    f.latency = latency;
    if (own_.size() <= slot) own_.resize(slot + 1);
    std::vector<int>& own = own_[slot];
    own.assign(links.begin(), links.end());
    f.own_topology = static_cast<std::uint32_t>(own.size());
    if (reducer >= 0) own.push_back(reduction_link(reducer));
    return slot;
  }

  // A routed transfer (start), not yet moving: its wire bytes and cap under the run's protocol;
  // returns the slot and sets `latency` to the time its first byte takes.
  std::uint32_t new_routed(std::uint32_t transfer, std::uint32_t route, std::uint64_t bytes,
                           double& latency) {
    const std::uint32_t slot = new_flow(transfer, route, bytes);
    const CachedRoute& r = routes_.route(route);
    latency = r.latency;
    if (protocol_.active) {
      Flow& f = flows_[slot];
      latency = protocol_.latency(r.latency, static_cast<std::size_t>(r.src),
                                  static_cast<std::size_t>(r.dst));
      const auto src = static_cast<std::size_t>(r.src), dst = static_cast<std::size_t>(r.dst);
      f.remaining = static_cast<double>(bytes) * protocol_.wire(src, dst);
      if (protocol_.inverse_cap > 0) f.cap = protocol_.cap(src, dst);
      f.latency = latency;
    }
    return slot;
  }

  std::uint32_t new_flow(std::uint32_t transfer, std::uint32_t route, std::uint64_t bytes) {
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
    f.cap = MaxMinSolver::unlimited;
    f.latency = 0;
    f.rate = 0;
    f.solver_id = -1;
    f.own_topology = 0;
    return slot;
  }

  // The solver links the flow in `slot` crosses.
  std::span<const int> links_of(std::uint32_t slot) const {
    const Flow& f = flows_[slot];
    if (f.own_topology > 0) return own_[slot];
    return routes_.links(routes_.route(f.route));
  }
  // Its topology links (what a trace's link counters know).
  std::span<const int> topology_links_of(std::uint32_t slot) const {
    const Flow& f = flows_[slot];
    if (f.own_topology > 0) return std::span<const int>(own_[slot]).first(f.own_topology);
    return routes_.links(routes_.route(f.route));
  }

  // The flow's first byte has arrived: it joins the solver (not yet solved).
  void add_to_solver(std::uint32_t slot, double now) {
    Flow& f = flows_[slot];
    f.solver_id = solver_.add_flow(links_of(slot), f.cap);
    const std::size_t id = static_cast<std::size_t>(f.solver_id);
    if (slot_of_.size() <= id) slot_of_.resize(id + 1);
    slot_of_[id] = slot;
    f.updated = now;
  }

  void remove_from_solver(std::uint32_t slot, double now) {
    Flow& f = flows_[slot];
    if (observer_) observer_->flow_rate(topology_links_of(slot), f.rate, 0.0, Seconds{now});
    solver_.remove_flow(f.solver_id);
    f.solver_id = -1;
  }

  // Takes over the solver's new rate for each flow in changed_; `schedule(slot, time)` is
  // called with each such flow's new completion time (its version already bumped).
  template <typename Schedule>
  void apply_rates(double now, Schedule&& schedule) {
    constexpr std::size_t ahead = 8;  // the flows' slots are scattered: prefetched
    for (std::size_t k = 0; k < changed_.size(); ++k) {
      if (k + ahead < changed_.size())
        __builtin_prefetch(&flows_[slot_of_[static_cast<std::size_t>(changed_[k + ahead])]]);
      const int id = changed_[k];
      const std::uint32_t slot = slot_of_[id];
      Flow& g = flows_[slot];
      g.remaining = std::max(0.0, g.remaining - g.rate * (now - g.updated));
      g.updated = now;
      if (observer_)
        observer_->flow_rate(topology_links_of(slot), g.rate, solver_.rate(id), Seconds{now});
      g.rate = solver_.rate(id);
      bump(g);
      schedule(slot, now + g.remaining / g.rate);
    }
  }

  void finish(std::uint32_t slot, double now) {
    bump(flows_[slot]);  // no stale completion may match a reused slot
    release(slot, flows_[slot].transfer, now);
  }
  // The end of finish, for a flow already bumped whose transfer is known: its slot is free
  // and the sink is told.
  void release(std::uint32_t slot, std::uint32_t transfer, double now) {
    const double latency = pipelined() ? flows_[slot].latency : 0.0;
    free_.push_back(slot);
    if (pipelined()) {
      sink_.transfer_sent(transfer, Seconds{now});
      landing_.engine.schedule(Seconds{now + latency}, landing_, transfer);
    } else {
      sink_.transfer_done(transfer, Seconds{now});
    }
  }
  // An NCCL kernel's flows move first and land their latency later (make_network).
  bool pipelined() const { return protocol_.active && protocol_.pipelined; }
  // When a flow that starts now begins to move: pipelined at once, else after its latency.
  double activation(double now, double latency) const {
    return pipelined() ? now : now + latency;
  }

  void clear_flows() {
    for (const Flow& f : flows_) {
      if (f.solver_id >= 0) solver_.remove_flow(f.solver_id);
    }
    flows_.clear();
    free_.clear();
  }

  static void bump(Flow& f) { f.version = (f.version + 1) & kVersionMask; }

  TransferSink& sink_;
  RouteCache& routes_;
  MaxMinSolver solver_;
  std::vector<Flow> flows_;
  std::vector<std::vector<int>> own_;  // per slot: an in-network reduction's solver links
  std::vector<std::uint32_t> free_;
  std::vector<std::uint32_t> slot_of_;  // solver flow id -> slot
  std::vector<int> changed_;
  std::vector<std::pair<int, int>> reducers_;  // (switch vertex, its solver link)
  RateObserver* observer_ = nullptr;           // told of every rate change (trace link counters)
  const ProtocolTiming protocol_;              // what a routed transfer costs beyond its route
  // Pipelined: a transfer's landing, its latency after its last byte left (tag: the transfer).
  struct Landing final : EventHandler {
    Landing(Engine& e, TransferSink& s) : engine(e), sink(s) {}
    void on_event(Engine& e, std::uint64_t tag) override {
      sink.transfer_done(static_cast<std::uint32_t>(tag), e.now());
    }
    Engine& engine;
    TransferSink& sink;
  } landing_;
};

// The flow model. Every start (first byte arrived) and end at one time is one batch: the
// batch's flows join or leave the solver, then the components they touch are re-solved once
// (MaxMinSolver::solve_around), and only flows whose rate changed get a new completion time.
// Completions and activations sit in per-time batches, one engine event per distinct time, so
// the thousands of flows of a symmetric round that start and end together cost one event each
// way instead of one event (and one heap operation) per flow.
class FlowNetwork final : public NetworkModel, EventHandler, FlowTable {
 public:
  FlowNetwork(Engine& engine, TransferSink& sink, RouteCache& routes,
              const ProtocolTiming& protocol)
      : FlowTable(engine, sink, routes, protocol), engine_(engine) {}

  NetworkKind kind() const override { return NetworkKind::flow; }
  bool serializes_ports() const override { return false; }
  void observe(RateObserver* observer) override { observer_ = observer; }

  void start(std::uint32_t transfer, std::uint32_t route, std::uint64_t bytes) override {
    double latency = 0;
    const std::uint32_t slot = new_routed(transfer, route, bytes, latency);
    at(activation(engine_.now().value, latency), Entry{slot, kActivation});
  }
  void start_reduction(std::uint32_t transfer, std::span<const int> links, int reducer,
                       double latency, std::uint64_t bytes) override {
    const std::uint32_t slot = new_reduction(transfer, links, reducer, latency, bytes);
    at(activation(engine_.now().value, latency), Entry{slot, kActivation});
  }

  void reset() override {
    clear_flows();
    for (Batch& b : batches_) b.entries.clear();
    free_batches_.clear();
    for (std::uint32_t b = 0; b < batches_.size(); ++b) free_batches_.push_back(b);
    batch_at_.clear();
    recent_.fill(kNoBatch);
  }

  void on_event(Engine& engine, std::uint64_t tag) override {
    const double now = engine.now().value;
    const std::uint32_t b = static_cast<std::uint32_t>(tag);
    std::size_t i = 0;
    for (;;) {
      // Entries may be appended while we go (a zero-latency start, a completion that rounds to
      // now), so index rather than iterate. The entries so far join or leave the solver, in
      // order, before the sink is told of those that end: the sink starts new flows (entries at
      // the end) and never touches the solver, so each sees what it did before, and the solver's
      // tight loop overlaps the cache misses of many flows. With an observer, whose calls must
      // keep their order among the sink's, one entry at a time.
      while (i < batches_[b].entries.size()) {
        const std::size_t end = observer_ ? i + 1 : batches_[b].entries.size();
        join_and_leave(batches_[b].entries, i, end, now);
        for (const Ending& e : ending_) release(e.slot, e.transfer, now);
        i = end;
      }
      if (seeds_.empty()) break;
      changed_.clear();
      solver_.solve_around(seeds_, changed_);
      seeds_.clear();
      apply_rates(now, [&](std::uint32_t slot, double t) {
        at(t, Entry{slot, flows_[slot].version});
      });
    }
    batch_at_.erase(key(batches_[b].time));
    batches_[b].entries.clear();
    free_batches_.push_back(b);
    for (std::uint32_t& r : recent_)
      if (r == b) r = kNoBatch;
  }

 private:
  // A pending activation (version kActivation, never a flow version) or completion.
  static constexpr std::uint32_t kActivation = ~std::uint32_t{0};
  static constexpr std::uint32_t kNoBatch = ~std::uint32_t{0};
  struct Entry {
    std::uint32_t slot;
    std::uint32_t version;
  };
  struct Batch {
    double time = 0;
    std::vector<Entry> entries;  // in the order they were scheduled
  };

  static std::uint64_t key(double time) { return std::bit_cast<std::uint64_t>(time + 0.0); }

  // Entries [begin, end): activations join the solver, current completions leave it (stale ones,
  // superseded by a rate change, are skipped), the links of both become seeds of the next
  // re-solve; ending_ gets, in order, the flows to finish (completions, and activations with
  // nothing to move), their versions bumped (finish's first half).
  void join_and_leave(const std::vector<Entry>& entries, std::size_t begin, std::size_t end,
                      double now) {
    ending_.clear();
    for (std::size_t i = begin; i < end; ++i) {
      prefetch(entries, i, end);
      const Entry e = entries[i];
      Flow& f = flows_[e.slot];
      if (e.version == kActivation) {
        if (f.remaining <= 0) {
          bump(f);
          ending_.push_back(Ending{e.slot, f.transfer});
          continue;
        }
        solver_.prefetch_added(kAhead);  // a batch's activations mostly come in a run
        add_to_solver(e.slot, now);
      } else {
        if (e.version != f.version) continue;
        remove_from_solver(e.slot, now);
        bump(f);  // finish's, while the flow is in the cache (no entry of this batch has its
                  // next version)
        ending_.push_back(Ending{e.slot, f.transfer});
      }
      const std::span<const int> links = links_of(e.slot);
      seeds_.insert(seeds_.end(), links.begin(), links.end());
    }
  }

  // A batch's entries are independent and their flows lie in scattered slots: entry i + 2k's
  // flow is loaded, and for entry i + k (its flow loaded by then) what it reads next, so that
  // their cache misses overlap the work on entry i. (Inlined: GCC takes a call of it for a pure
  // function's and drops it, prefetches and all.)
  static constexpr std::size_t kAhead = 4;
  [[gnu::always_inline]] void prefetch(const std::vector<Entry>& entries, std::size_t i,
                                       std::size_t end) const {
    if (i + 2 * kAhead < end) __builtin_prefetch(&flows_[entries[i + 2 * kAhead].slot]);
    if (i + kAhead < end) {
      const Flow& f = flows_[entries[i + kAhead].slot];
      if (f.solver_id >= 0) solver_.prefetch(f.solver_id);
      if (f.own_topology == 0) routes_.prefetch_route(f.route);
    }
  }

  void at(double time, Entry e) {
    for (const std::uint32_t r : recent_) {
      if (r != kNoBatch && batches_[r].time == time) {
        batches_[r].entries.push_back(e);
        return;
      }
    }
    auto [it, inserted] = batch_at_.try_emplace(key(time), 0);
    if (inserted) {
      if (free_batches_.empty()) {
        free_batches_.push_back(static_cast<std::uint32_t>(batches_.size()));
        batches_.emplace_back();
      }
      it->second = free_batches_.back();
      free_batches_.pop_back();
      batches_[it->second].time = time;
      engine_.schedule(Seconds{time}, *this, it->second);
    }
    recent_[next_recent_] = it->second;
    next_recent_ = (next_recent_ + 1) % recent_.size();
    batches_[it->second].entries.push_back(e);
  }

  Engine& engine_;
  std::vector<Batch> batches_;
  std::vector<std::uint32_t> free_batches_;
  std::unordered_map<std::uint64_t, std::uint32_t> batch_at_;  // time -> its pending batch
  // The batches `at` used last, checked before batch_at_ (a round's starts alternate between a
  // few latencies, its ends between a few completion times).
  std::array<std::uint32_t, 4> recent_{kNoBatch, kNoBatch, kNoBatch, kNoBatch};
  std::size_t next_recent_ = 0;
  std::vector<int> seeds_;
  // join_and_leave: the flows to finish, in order, with their transfers (read while the flow
  // is in the cache)
  struct Ending {
    std::uint32_t slot, transfer;
  };
  std::vector<Ending> ending_;
};

// The reference flow model (NetworkConfig::reference_flow): the same sharing in its plainest
// form, each start and each end its own engine event followed by a re-solve of every flow in
// the network. Slow; the differential tests check FlowNetwork against it.
class ReferenceFlowNetwork final : public NetworkModel, EventHandler, FlowTable {
 public:
  ReferenceFlowNetwork(Engine& engine, TransferSink& sink, RouteCache& routes,
                       const ProtocolTiming& protocol)
      : FlowTable(engine, sink, routes, protocol), engine_(engine) {}

  NetworkKind kind() const override { return NetworkKind::flow; }
  bool serializes_ports() const override { return false; }
  void observe(RateObserver* observer) override { observer_ = observer; }

  void start(std::uint32_t transfer, std::uint32_t route, std::uint64_t bytes) override {
    double latency = 0;
    const std::uint32_t slot = new_routed(transfer, route, bytes, latency);
    engine_.schedule(Seconds{activation(engine_.now().value, latency)}, *this, slot);
  }
  void start_reduction(std::uint32_t transfer, std::span<const int> links, int reducer,
                       double latency, std::uint64_t bytes) override {
    const std::uint32_t slot = new_reduction(transfer, links, reducer, latency, bytes);
    engine_.schedule(Seconds{activation(engine_.now().value, latency)}, *this, slot);
  }

  void reset() override { clear_flows(); }

  void on_event(Engine& engine, std::uint64_t tag) override {
    const double now = engine.now().value;
    const std::uint32_t slot = static_cast<std::uint32_t>(tag & 0xffffffffu);
    Flow& f = flows_[slot];
    if ((tag & kCompletion) == 0) {
      if (f.remaining <= 0) {
        finish(slot, now);
        return;
      }
      add_to_solver(slot, now);
      resolve(now);
      return;
    }
    if (((tag >> 32) & kVersionMask) != f.version) return;
    remove_from_solver(slot, now);
    resolve(now);
    finish(slot, now);
  }

 private:
  static constexpr std::uint64_t kCompletion = std::uint64_t{1} << 63;

  void resolve(double now) {
    changed_.clear();
    solver_.solve(changed_);
    apply_rates(now, [&](std::uint32_t slot, double t) {
      const std::uint64_t tag = kCompletion | (std::uint64_t{flows_[slot].version} << 32) | slot;
      engine_.schedule(Seconds{t}, *this, tag);
    });
  }

  Engine& engine_;
};

}  // namespace

std::unique_ptr<NetworkModel> make_network(NetworkKind kind, Engine& engine, TransferSink& sink,
                                           RouteCache& routes, bool reference_flow,
                                           const ProtocolTiming& protocol) {
  if (kind == NetworkKind::alphabeta)
    return std::make_unique<AlphaBetaNetwork>(engine, sink, routes, protocol);
  if (reference_flow)
    return std::make_unique<ReferenceFlowNetwork>(engine, sink, routes, protocol);
  return std::make_unique<FlowNetwork>(engine, sink, routes, protocol);
}

}  // namespace ssim::sim
