// Network models: how long moving bytes between two ranks takes on a topology.
//
//   alphabeta  A transfer of m bytes over route R costs R.latency + m / R.bandwidth (sum of link
//              latencies, bottleneck bandwidth). Links are never shared: the only contended
//              resources are the ranks' ports, and the executor serializes those (a rank's send
//              port and its receive port each serve one transfer at a time, in schedule order).
//   flow       Transfers are flows on the links of their routes. A flow first waits its route's
//              latency (the first byte's delay, counted once per transfer), then moves its bytes
//              at a rate that is the max-min fair share of every link it crosses (maxmin.hpp);
//              rates are recomputed whenever a flow starts or ends, for the flows connected to
//              it through shared links. All starts and ends at one time form one batch with
//              one re-solve. Ports do NOT serialize: a rank's concurrent transfers share its
//              NIC/link capacity through the solver instead. With no shared link the two
//              models agree exactly.
// The reduce cost gamma (seconds per byte) is not the network's: the executor adds it at the
// receiver after the data has arrived.
//
//   Engine engine;
//   RouteCache routes(topology);
//   MySink sink;                                     // a TransferSink
//   auto net = make_network(NetworkKind::flow, engine, sink, routes);
//   net->start(/*transfer=*/0, routes.find(0, 5), /*bytes=*/1 << 20);
//   engine.run();                                    // sink.transfer_done(0, t) was called
#pragma once

#include <algorithm>
#include <cstdint>
#include <memory>
#include <optional>
#include <span>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "common/error.hpp"
#include "common/units.hpp"
#include "sim/engine.hpp"
#include "sim/protocol.hpp"
#include "topologies/topology.hpp"

namespace ssim::sim {

enum class NetworkKind : std::uint8_t { alphabeta, flow };
std::string_view to_string(NetworkKind kind);
// "alphabeta" or "flow"; InputError otherwise.
NetworkKind parse_network_kind(std::string_view text);

struct NetworkConfig {
  NetworkKind kind = NetworkKind::alphabeta;
  SecondsPerByte gamma{0.0};  // reduce cost at the receiver, per byte reduced
  // flow only, for differential tests: the reference flow model, which handles every start and
  // end on its own and re-solves all flows of the network each time (same sharing, slow).
  bool reference_flow = false;
  // What NCCL's protocols cost on this machine (sim/protocol.hpp; NCCL's Hopper figures unless
  // the topology says otherwise). A schedule names its protocol (alg::schedule_protocol); the
  // Executor resolves it into `protocol`, which both models apply to every point-to-point
  // transfer (callers leave `protocol` as it is).
  ProtocolTable protocols = nccl_default_protocols();
  ProtocolTiming protocol{};
  // The protocol of schedules that name none (`network: {protocol: ...}`): they then run as
  // NCCL's send/recv moves them, paying that protocol's costs like `nccl`; empty: costed by
  // their routes alone.
  std::optional<alg::Protocol> p2p_protocol = std::nullopt;
  // NCCL kernels run pipelined (sim/protocol.hpp, "NCCL's steps overlap their latencies";
  // `network: {steps: pipelined}`): a step's latency occupies no port or link, a transfer waits
  // for its data (and, flow model, its connection's earlier sends) rather than a per-round ready
  // time, and a step costs at least NCCL's per-step hardware latency. The default since
  // 2026-11-30: it meets issue 39's figures on all three published tables, where the per-round
  // rule (false, `steps: per_round`) misses table 11 by 15.6% (docs/algorithms.md).
  bool pipelined_kernels = true;
};

// A route between two ranks as the models use it.
struct CachedRoute {
  double latency = 0;             // seconds, sum over the links
  double bandwidth = 0;           // bytes per second, the bottleneck
  double inverse_bandwidth = 0;   // seconds per byte
  std::uint32_t first_link = 0;   // into RouteCache's link store, or kNotStored
  std::uint32_t link_count = 0;   // hops, stored or not
  std::int32_t src = 0, dst = 0;  // ranks
  static constexpr std::uint32_t kNotStored = ~std::uint32_t{0};
};

// The time an alpha-beta transfer of `bytes` takes on `route`. One formula for every code path
// (dataflow pass, event engine), so they agree to the last bit.
inline double alphabeta_time(const CachedRoute& route, double bytes) {
  return route.latency + bytes * route.inverse_bandwidth;
}

// Routes of a single-switch topology: every GPU has exactly one link out and one link in, both
// to the same switch vertex (kind switch). The route src -> dst is then the only path, up[src]
// then down[dst], and the alpha-beta pass takes its latency and bandwidth from these per-rank
// arrays in O(1), without a route table or a cache entry per (src, dst) pair.
struct StarRoutes {
  std::vector<int> up, down;  // per rank: the link to the switch, the link from it
  std::vector<double> up_latency, down_latency, up_bandwidth, down_bandwidth;

  // The route src -> dst (src != dst) as RouteCache would cache it, bit for bit (latency: the
  // links' latencies summed from the source, as topo::Topology::route sums them; bandwidth: the
  // bottleneck). Its links are not stored (first_link = kNotStored).
  CachedRoute route(int src, int dst) const {
    CachedRoute c;
    c.latency = 0.0 + up_latency[static_cast<std::size_t>(src)];
    c.latency += down_latency[static_cast<std::size_t>(dst)];
    c.bandwidth = std::min(up_bandwidth[static_cast<std::size_t>(src)],
                           down_bandwidth[static_cast<std::size_t>(dst)]);
    c.inverse_bandwidth = 1.0 / c.bandwidth;
    c.first_link = CachedRoute::kNotStored;
    c.link_count = 2;
    c.src = src;
    c.dst = dst;
    return c;
  }
};

// Which routes keep their link list in a RouteCache. `all`: every route (the flow model reads
// them at every rate change). `short_only`: routes of at most kShortRoute links; a longer one
// keeps latency, bandwidth and hop count only (topo::Topology::route_summary, O(1) on rings and
// tori) and its links are recomputed when asked for, so a cache over all pairs of a ring is
// O(pairs), not O(pairs x ranks / 2). The alpha-beta model needs no link lists.
enum class LinkLists : std::uint8_t { all, short_only };

// Routes of the (src, dst) rank pairs actually used, looked up in the topology once each.
// With ECMP on, a pair's flow hash is derived from (src, dst), so a pair always takes the same
// one of its equal-cost paths and different pairs spread over them.
class RouteCache {
 public:
  static constexpr std::uint32_t kShortRoute = 8;
  // The topology is kept by reference.
  explicit RouteCache(const topo::Topology& topology, LinkLists lists = LinkLists::all);
  explicit RouteCache(topo::Topology&&, LinkLists = LinkLists::all) = delete;

  // Index of the route src -> dst (ranks, src != dst); InputError when unreachable.
  std::uint32_t find(int src, int dst) {
    const std::size_t s = static_cast<std::size_t>(src);
    if (last_dst_[s] == dst) return last_index_[s];
    return find_slow(src, dst);
  }
  // The route src -> dst if it is already cached, else `missing`. Changes nothing, so several
  // threads may call it at once (while no thread calls find).
  static constexpr std::uint32_t missing = ~std::uint32_t{0};
  std::uint32_t find_cached(int src, int dst) const;
  // Hints that find(src, dst) and route(index) come soon (loads their memory into the cache):
  // a round's lookups are independent, so the dataflow pass overlaps their cache misses.
  void prefetch(int src, int dst) const {
    if (!slots_.empty()) __builtin_prefetch(&slots_[slot_of(key(src, dst))]);
  }
  void prefetch_route(std::uint32_t index) const { __builtin_prefetch(&routes_[index]); }
  const CachedRoute& route(std::uint32_t index) const { return routes_[index]; }
  // The stored links of a route (every route with LinkLists::all).
  std::span<const int> links(const CachedRoute& r) const {
    SSIM_CHECK(r.first_link != CachedRoute::kNotStored, "route links not stored");
    return {links_.data() + r.first_link, r.link_count};
  }
  // The links of any route: the stored ones, or computed into `scratch`.
  std::span<const int> links(const CachedRoute& r, std::vector<int>& scratch) const;
  // link_bytes[l] += route_bytes[i] for every link l of route i (link_bytes: one per link).
  void add_link_bytes(std::span<const std::uint64_t> route_bytes,
                      std::span<std::uint64_t> link_bytes) const;
  std::size_t size() const { return routes_.size(); }
  const topo::Topology& topology() const { return *topology_; }
  // The topology's single-switch structure, or nullptr when it has none (found in O(links) at
  // construction). Routes found through find() are the same routes either way.
  const StarRoutes* star() const { return star_ ? &*star_ : nullptr; }

 private:
  std::uint32_t find_slow(int src, int dst);
  std::uint64_t key(int src, int dst) const {
    return static_cast<std::uint64_t>(src) * ranks_ + static_cast<std::uint64_t>(dst);
  }
  std::size_t slot_of(std::uint64_t k) const {  // first probe (Fibonacci hashing)
    return static_cast<std::size_t>((k * 0x9E3779B97F4A7C15ull) >> shift_);
  }
  void grow();

  const topo::Topology* topology_;
  LinkLists lists_;
  std::uint64_t ranks_;
  // Open addressing, linear probing: key (kEmpty when free) and route index side by side.
  static constexpr std::uint64_t kEmpty = ~std::uint64_t{0};
  struct Slot {
    std::uint64_t key = kEmpty;
    std::uint32_t value = 0;
  };
  std::vector<Slot> slots_;
  int shift_ = 64;
  std::vector<int> last_dst_;  // per source rank: the last destination looked up (memo)
  std::vector<std::uint32_t> last_index_;
  std::vector<CachedRoute> routes_;
  std::vector<int> links_;
  std::optional<StarRoutes> star_;
};

// Told when a transfer's last byte has arrived.
class TransferSink {
 public:
  virtual void transfer_done(std::uint32_t transfer, Seconds now) = 0;
  // Pipelined (the flow models under a pipelined protocol, see make_network): told when a
  // transfer's last byte has left its sender, its latency before transfer_done.
  virtual void transfer_sent(std::uint32_t transfer, Seconds now) {
    (void)transfer;
    (void)now;
  }

 protected:
  ~TransferSink() = default;
};

// Told of every change of a flow's rate (flow model only), for link counters in traces: the
// flow on `links` moved from `old_rate` to `new_rate` bytes per second at `now` (0 when it
// starts moving or ends).
class RateObserver {
 public:
  virtual void flow_rate(std::span<const int> links, double old_rate, double new_rate,
                         Seconds now) = 0;

 protected:
  ~RateObserver() = default;
};

class NetworkModel {
 public:
  virtual ~NetworkModel() = default;
  virtual NetworkKind kind() const = 0;
  // Whether the executor must serialize each rank's send port and receive port.
  virtual bool serializes_ports() const = 0;
  // Starts moving `bytes` along route `route` (a RouteCache index) at the engine's now();
  // calls sink.transfer_done(transfer, t) at the time t its last byte has arrived. `transfer`
  // is the caller's id, opaque here.
  virtual void start(std::uint32_t transfer, std::uint32_t route, std::uint64_t bytes) = 0;
  // Starts an in-network reduction or multicast (alg::SwitchReduce) as one flow of `bytes` over
  // `links` (distinct topology link ids: each member's link up to the switch and each receiver's
  // link down from it, once each: a multicast crosses a receiver's link once, not once per
  // member) and, when `reducer` >= 0, over the reduction throughput of switch vertex `reducer`
  // (its reduce.bandwidth, a capacity shared by every reduction through that switch, like a
  // link). The flow moves after `latency` seconds and calls sink.transfer_done(transfer, t) when
  // its last byte is down. All its links carry the same rate: the switch streams, so what goes
  // up, through the reduction and down moves together. Flow models only.
  virtual void start_reduction(std::uint32_t transfer, std::span<const int> links, int reducer,
                               double latency, std::uint64_t bytes);
  // Forgets everything in flight (call after the engine was reset).
  virtual void reset() = 0;
  // Reports rate changes to `observer` from now on (nullptr: none). Models without rates (alpha-
  // beta) report nothing.
  virtual void observe(RateObserver* observer) { (void)observer; }
};

// `reference_flow`: see NetworkConfig::reference_flow.
// `protocol`: what every start() costs beyond the route (sim/protocol.hpp; default: nothing).
// With an active, pipelined protocol (ProtocolTiming::pipelined) the flow models are pipelined:
// a flow moves its bytes at once, the sink is told transfer_sent when they have left (the
// sender is free) and transfer_done the flow's latency later (the data has landed), so the
// latency occupies no link; without one a flow waits its latency first, then moves, as before,
// bit for bit.
std::unique_ptr<NetworkModel> make_network(NetworkKind kind, Engine& engine, TransferSink& sink,
                                           RouteCache& routes, bool reference_flow = false,
                                           const ProtocolTiming& protocol = {});

}  // namespace ssim::sim
