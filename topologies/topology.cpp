// Topology storage (a Boost adjacency list) and destination-based routing with cached
// next-hop tables; see topology.hpp for what routing guarantees.
#include "topologies/topology.hpp"

#include <algorithm>
#include <atomic>
#include <boost/container/small_vector.hpp>
#include <boost/graph/adjacency_list.hpp>
#include <cmath>
#include <limits>
#include <map>
#include <mutex>
#include <queue>
#include <shared_mutex>
#include <span>
#include <tuple>

#include "common/error.hpp"
#include "common/random.hpp"

namespace ssim::topo {
namespace {

// Vertices carry their Node, edges the id of their Link (an index into Impl::links).
struct EdgeData {
  int id = -1;
};
using Graph =
    boost::adjacency_list<boost::vecS, boost::vecS, boost::bidirectionalS, Node, EdgeData>;

constexpr double kMaxLinkLatency = 1.0;  // seconds
constexpr std::size_t kDefaultCacheLimit = std::size_t{1} << 30;
constexpr std::int64_t kInfPs = std::numeric_limits<std::int64_t>::max();

// Path cost compared exactly: integer picoseconds, then hops. Doubles would make "equal cost"
// depend on the order in which latencies were summed.
struct Cost {
  std::int64_t ps = kInfPs;
  std::int32_t hops = 0;
  auto operator<=>(const Cost&) const = default;
  bool finite() const { return ps != kInfPs; }
};

// Immutable flat copy of the graph's adjacency, built from the Boost graph on the first route
// after a change; Dijkstra and the walks run on these arrays.
struct RoutingIndex {
  int vertices = 0;
  std::vector<int> out_begin,
      out_ids;  // CSR: out-links of v are out_ids[out_begin[v], out_begin[v+1])
  std::vector<int> in_begin, in_ids;
  std::vector<int> link_from, link_to;
  std::vector<std::int64_t> link_ps;
  std::int64_t min_link_ps = 0;      // the least link latency (whole picoseconds)
  bool one_link_ps = true;           // every link has the same latency in picoseconds
  std::vector<double> link_latency;  // seconds
  std::vector<double> link_bandwidth;
  std::vector<char> is_switch;
  // GPU vertices whose in-links all come from switches: a route to one of them is the best
  // route to one of those switches plus the last link, so it uses the switches' tables.
  std::vector<char> composed;
  // Exact route latencies without a walk: a route whose links all have one latency a sums to
  // folds[class of a][hops] (the same left fold, 0 + a + a + ..., that a walk computes). Kept
  // when the topology has at most kMaxLatencyClasses distinct link latencies (else empty).
  std::vector<int> latency_class;          // per link, or empty
  std::vector<std::vector<double>> folds;  // per class: folds[c][k], k = 0..vertices
};

constexpr std::size_t kMaxLatencyClasses = 16;

// Next hops toward one root vertex from every vertex: the links that start an optimal path.
struct Table {
  static constexpr std::int32_t kNone = std::numeric_limits<std::int32_t>::min();
  // Next-hop code of a vertex: >= 0: the only next-hop link; kNone: the root itself or
  // unreachable; other negative values c: several next hops, listed at multi[-c - 1] as a count
  // followed by ascending link ids.
  // Switch roots also keep each vertex's cost to the root (composed routes compare them), in
  // one 16-byte record per vertex so that a hop of a route touches one cache line.
  struct Costed {
    std::int64_t ps;
    std::int32_t hops;
    std::int32_t next;
  };
  // GPU roots also keep, for the route a walk without ECMP takes (the first next hop at every
  // vertex): its hop count, its bottleneck link and whether all its links have one latency, so
  // that a route's latency and bandwidth and the bytes on every link of many routes need no
  // walk (Topology::route_summary, add_route_bytes).
  struct Plain {
    std::int32_t next;
    std::int32_t bottleneck;  // link id, -1 at the root or when unreachable
    std::uint32_t hops;       // | kUniform when every link of the route has the same latency
  };
  static constexpr std::uint32_t kUniform = std::uint32_t{1} << 31;
  std::vector<Plain> plain;    // GPU roots
  std::vector<Costed> costed;  // switch roots
  std::vector<std::int32_t> multi;

  Cost cost(int v) const { return Cost{costed[v].ps, costed[v].hops}; }
  std::size_t bytes() const {
    return sizeof(Table) + plain.capacity() * sizeof(Plain) + costed.capacity() * sizeof(Costed) +
           multi.capacity() * sizeof(std::int32_t);
  }
  // The candidate links at v (empty when v is the root or cannot reach it).
  std::span<const std::int32_t> next_hops(int v) const {
    const std::int32_t* code = costed.empty() ? &plain[v].next : &costed[v].next;
    if (*code == kNone) return {};
    if (*code >= 0) return {code, 1};
    const std::size_t at = static_cast<std::size_t>(-(*code + 1));
    return {&multi[at + 1], static_cast<std::size_t>(multi[at])};
  }
};

// The link src -> dst (vertices) when it alone is the optimal path, else -1: the only link
// from src to dst, with a latency of at most twice the least link latency, so that every other
// path (two hops or more) costs at least as much latency and more hops. With one optimal path
// ECMP has no choice either. Saves the destination's table (a reverse Dijkstra over the whole
// graph) for neighbours: every transfer of a ring or a fully connected topology.
int direct_link(const RoutingIndex& ix, int src, int dst) {
  int found = -1;
  for (int k = ix.out_begin[src]; k < ix.out_begin[src + 1]; ++k) {
    const int l = ix.out_ids[k];
    if (ix.link_to[l] != dst) continue;
    if (found >= 0) return -1;  // parallel links: routing picks among them
    found = l;
  }
  if (found >= 0 && ix.link_ps[found] > 2 * ix.min_link_ps) return -1;
  return found;
}

// ECMP choice at vertex v among n candidates; the vertex salt decorrelates successive hops.
std::size_t ecmp_pick(std::uint64_t flow_hash, int v, std::size_t n) {
  return static_cast<std::size_t>(
      splitmix64(flow_hash ^ splitmix64(static_cast<std::uint64_t>(v))) % n);
}

std::shared_ptr<const Table> compute_table(const RoutingIndex& ix, int root) {
  const int n = ix.vertices;
  std::vector<std::int64_t> ps(n, kInfPs);
  std::vector<std::int32_t> hops(n, 0);
  using Item = std::tuple<std::int64_t, std::int32_t, int>;
  std::priority_queue<Item, std::vector<Item>, std::greater<>> heap;
  std::vector<int> order;  // vertices in the order Dijkstra settles them (root first)
  order.reserve(n);
  ps[root] = 0;
  if (ix.one_link_ps) {
    // Every link costs the same: a path's cost is (hops x that latency, hops), so a breadth-
    // first search finds the same costs (the same integers) as Dijkstra, in an order that also
    // settles every vertex after the vertices one hop closer to the root.
    order.push_back(root);
    for (std::size_t next = 0; next < order.size(); ++next) {
      const int v = order[next];
      for (int k = ix.in_begin[v]; k < ix.in_begin[v + 1]; ++k) {
        const int l = ix.in_ids[k];
        const int u = ix.link_from[l];
        if (ps[u] != kInfPs) continue;
        ps[u] = ps[v] + ix.link_ps[l];
        hops[u] = hops[v] + 1;
        order.push_back(u);
      }
    }
  } else {
    heap.emplace(0, 0, root);
  }
  // Reverse Dijkstra: relax in-links, so ps[u] is the cost from u to the root.
  while (!heap.empty()) {
    const auto [p, h, v] = heap.top();
    heap.pop();
    if (p != ps[v] || h != hops[v]) continue;
    order.push_back(v);
    for (int k = ix.in_begin[v]; k < ix.in_begin[v + 1]; ++k) {
      const int l = ix.in_ids[k];
      const int u = ix.link_from[l];
      const Cost c{p + ix.link_ps[l], h + 1};
      if (c < Cost{ps[u], hops[u]}) {
        ps[u] = c.ps;
        hops[u] = c.hops;
        heap.emplace(c.ps, c.hops, u);
      }
    }
  }

  auto t = std::make_shared<Table>();
  std::vector<std::int32_t> code(n, Table::kNone);
  std::vector<std::int32_t> first(n, -1);  // the first next hop (what next_hops(v)[0] gives)
  for (int v = 0; v < n; ++v) {
    if (ps[v] == kInfPs || v == root) continue;
    auto next = [&](int l) {
      const int x = ix.link_to[l];
      return ps[x] != kInfPs && ps[x] + ix.link_ps[l] == ps[v] && hops[x] + 1 == hops[v];
    };
    int count = 0;
    for (int k = ix.out_begin[v]; k < ix.out_begin[v + 1]; ++k) {
      if (!next(ix.out_ids[k])) continue;
      if (count++ == 0) first[v] = ix.out_ids[k];
    }
    SSIM_CHECK(count > 0, "a reachable vertex has no next hop");
    if (count == 1) {
      code[v] = first[v];
    } else {  // the candidates in out-link order
      code[v] = -static_cast<std::int32_t>(t->multi.size()) - 1;
      t->multi.push_back(count);
      for (int k = ix.out_begin[v]; k < ix.out_begin[v + 1]; ++k) {
        if (next(ix.out_ids[k])) t->multi.push_back(ix.out_ids[k]);
      }
    }
  }
  t->multi.shrink_to_fit();
  if (ix.is_switch[root]) {
    t->costed.resize(n);
    for (int v = 0; v < n; ++v) t->costed[v] = Table::Costed{ps[v], hops[v], code[v]};
  } else {
    // A vertex's first next hop leads to a vertex settled before it (cost lower, or equal with
    // one hop less), so one pass in settling order sees every successor first.
    t->plain.resize(n);
    for (int v = 0; v < n; ++v) t->plain[v] = Table::Plain{code[v], -1, 0};
    for (const int v : order) {
      if (v == root) continue;
      Table::Plain& e = t->plain[v];
      const int l = first[v];
      const int x = ix.link_to[l];
      if (x == root) {
        e.bottleneck = l;
        e.hops = 1 | Table::kUniform;
        continue;
      }
      const Table::Plain& after = t->plain[x];
      e.bottleneck =
          ix.link_bandwidth[l] < ix.link_bandwidth[after.bottleneck] ? l : after.bottleneck;
      const int after_link = first[x];
      const bool uniform =
          (after.hops & Table::kUniform) && ix.link_latency[l] == ix.link_latency[after_link];
      e.hops = ((after.hops & ~Table::kUniform) + 1) | (uniform ? Table::kUniform : 0);
    }
  }
  return t;
}

std::string vertex_text(int v) { return "vertex " + std::to_string(v); }

}  // namespace

struct Topology::Impl {
  Graph graph;
  std::vector<Link> links;
  std::vector<int> rank_vertex;
  std::map<std::string, int, std::less<>> by_name;
  bool ecmp = false;

  // Routing state, derived from the above and dropped on every change.
  mutable std::shared_mutex mu;
  mutable std::shared_ptr<const RoutingIndex> index;
  struct Slot {
    std::shared_ptr<const Table> table;
    mutable std::atomic<std::uint64_t> last_use{0};
  };
  mutable std::vector<Slot> slots;  // one per vertex, allocated with the index
  mutable std::size_t cache_bytes = 0;
  mutable std::atomic<std::uint64_t> use_clock{0};
  std::size_t cache_limit = kDefaultCacheLimit;

  Impl() = default;
  Impl(const Impl& o)
      : graph(o.graph),
        links(o.links),
        rank_vertex(o.rank_vertex),
        by_name(o.by_name),
        ecmp(o.ecmp),
        cache_limit(o.cache_limit) {
    std::shared_lock lock(o.mu);
    index = o.index;
    slots = std::vector<Slot>(o.slots.size());
    for (std::size_t i = 0; i < slots.size(); ++i) slots[i].table = o.slots[i].table;
    cache_bytes = o.cache_bytes;
  }

  void invalidate() {
    std::unique_lock lock(mu);
    index.reset();
    slots.clear();
    cache_bytes = 0;
  }

  void check_vertex(int v, const char* what) const {
    if (v < 0 || v >= static_cast<int>(boost::num_vertices(graph))) {
      throw InputError(std::string(what) + ": no " + vertex_text(v) + " (the topology has " +
                       std::to_string(boost::num_vertices(graph)) + " vertices)");
    }
  }

  std::shared_ptr<const RoutingIndex> routing_index() const {
    {
      std::shared_lock lock(mu);
      if (index) return index;
    }
    std::unique_lock lock(mu);
    if (index) return index;
    auto ix = std::make_shared<RoutingIndex>();
    const int n = static_cast<int>(boost::num_vertices(graph));
    ix->vertices = n;
    ix->out_begin.reserve(n + 1);
    ix->in_begin.reserve(n + 1);
    ix->is_switch.resize(n);
    ix->composed.resize(n);
    for (int v = 0; v < n; ++v) {
      ix->is_switch[v] = graph[v].kind == NodeKind::switch_node;
      ix->out_begin.push_back(static_cast<int>(ix->out_ids.size()));
      for (auto [it, end] = boost::out_edges(v, graph); it != end; ++it) {
        ix->out_ids.push_back(graph[*it].id);
      }
      ix->in_begin.push_back(static_cast<int>(ix->in_ids.size()));
      for (auto [it, end] = boost::in_edges(v, graph); it != end; ++it) {
        ix->in_ids.push_back(graph[*it].id);
      }
    }
    ix->out_begin.push_back(static_cast<int>(ix->out_ids.size()));
    ix->in_begin.push_back(static_cast<int>(ix->in_ids.size()));
    ix->link_from.reserve(links.size());
    for (const Link& l : links) {
      ix->link_from.push_back(l.from);
      ix->link_to.push_back(l.to);
      ix->link_ps.push_back(std::llround(l.latency.value * 1e12));
      ix->min_link_ps = ix->link_ps.size() == 1 ? ix->link_ps.back()
                                                : std::min(ix->min_link_ps, ix->link_ps.back());
      ix->one_link_ps = ix->one_link_ps && ix->link_ps.back() == ix->link_ps.front();
      ix->link_latency.push_back(l.latency.value);
      ix->link_bandwidth.push_back(l.bandwidth.value);
    }
    std::vector<double> distinct;
    for (const double a : ix->link_latency) {
      if (std::find(distinct.begin(), distinct.end(), a) != distinct.end()) continue;
      distinct.push_back(a);
      if (distinct.size() > kMaxLatencyClasses) break;
    }
    if (distinct.size() <= kMaxLatencyClasses) {
      for (const double a : ix->link_latency) {
        ix->latency_class.push_back(
            static_cast<int>(std::find(distinct.begin(), distinct.end(), a) - distinct.begin()));
      }
      for (const double a : distinct) {
        std::vector<double>& f = ix->folds.emplace_back(static_cast<std::size_t>(n) + 1, 0.0);
        for (int k = 1; k <= n; ++k) f[k] = f[k - 1] + a;
      }
    }
    for (int v = 0; v < n; ++v) {
      if (ix->is_switch[v] || ix->in_begin[v] == ix->in_begin[v + 1]) continue;
      bool all = true;
      for (int k = ix->in_begin[v]; k < ix->in_begin[v + 1]; ++k) {
        all = all && ix->is_switch[ix->link_from[ix->in_ids[k]]];
      }
      ix->composed[v] = all;
    }
    slots = std::vector<Slot>(n);
    cache_bytes = 0;
    index = ix;
    return index;
  }

  std::shared_ptr<const Table> table(const std::shared_ptr<const RoutingIndex>& ix,
                                     int root) const {
    const std::size_t r = root;
    {
      std::shared_lock lock(mu);
      SSIM_CHECK(index == ix, "topology changed while routing");
      if (slots[r].table) {
        slots[r].last_use.store(++use_clock, std::memory_order_relaxed);
        return slots[r].table;
      }
    }
    // Computed without the lock, so other threads keep routing; if two threads race on the
    // same root the first insert wins and both get identical tables anyway.
    std::shared_ptr<const Table> t = compute_table(*ix, root);
    std::unique_lock lock(mu);
    SSIM_CHECK(index == ix, "topology changed while routing");
    if (slots[r].table) return slots[r].table;
    slots[r].table = t;
    slots[r].last_use.store(++use_clock, std::memory_order_relaxed);
    cache_bytes += t->bytes();
    while (cache_bytes > cache_limit) {
      std::size_t victim = slots.size();
      std::uint64_t oldest = std::numeric_limits<std::uint64_t>::max();
      for (std::size_t i = 0; i < slots.size(); ++i) {
        if (i == r || !slots[i].table) continue;
        const std::uint64_t u = slots[i].last_use.load(std::memory_order_relaxed);
        if (u < oldest) {
          oldest = u;
          victim = i;
        }
      }
      if (victim == slots.size()) break;
      cache_bytes -= slots[victim].table->bytes();
      slots[victim].table.reset();  // routes in progress keep their own reference
    }
    return t;
  }
};

Topology::Topology() : impl_(std::make_shared<Impl>()) {}
Topology::~Topology() = default;
Topology::Topology(Topology&&) noexcept = default;
Topology& Topology::operator=(Topology&&) noexcept = default;
Topology::Topology(const Topology& o)
    : name(o.name),
      description(o.description),
      calibrated(o.calibrated),
      network_model(o.network_model),
      gpus_per_node(o.gpus_per_node),
      nic_path(o.nic_path),
      shared_device(o.shared_device),
      impl_(o.impl_) {}
Topology& Topology::operator=(const Topology& o) {
  if (this != &o) {
    Topology copy(o);
    *this = std::move(copy);
  }
  return *this;
}

// A shared Impl (a copy's) is cloned before it changes; the clone's cached tables are dropped by
// the change's invalidate() as the original's would be. A copy taken while another thread
// changes the same Topology object is a data race, as for any object.
Topology::Impl& Topology::own() {
  if (impl_.use_count() > 1) impl_ = std::make_shared<Impl>(*impl_);
  return *impl_;
}

int Topology::add_gpu(std::string vertex_name) {
  own();
  impl_->invalidate();
  const int v = static_cast<int>(boost::num_vertices(impl_->graph));
  impl_->by_name.emplace(vertex_name, v);
  boost::add_vertex(
      Node{NodeKind::gpu, std::move(vertex_name), static_cast<int>(impl_->rank_vertex.size()),
           std::nullopt},
      impl_->graph);
  impl_->rank_vertex.push_back(v);
  return v;
}

int Topology::add_switch(std::string vertex_name) {
  own();
  impl_->invalidate();
  const int v = static_cast<int>(boost::num_vertices(impl_->graph));
  impl_->by_name.emplace(vertex_name, v);
  boost::add_vertex(Node{NodeKind::switch_node, std::move(vertex_name), -1, std::nullopt},
                    impl_->graph);
  return v;
}

void Topology::set_switch_reduction(int vertex, SwitchReduction reduction) {
  own();
  impl_->check_vertex(vertex, "set_switch_reduction");
  Node& n = impl_->graph[vertex];
  if (n.kind != NodeKind::switch_node) {
    throw InputError("vertex " + n.name + " is a GPU, not a switch; only a switch can reduce");
  }
  if (!std::isfinite(reduction.bandwidth.value) || reduction.bandwidth.value <= 0) {
    throw InputError("the reduction bandwidth of switch " + n.name +
                     " must be finite and > 0, got " + format_bandwidth(reduction.bandwidth));
  }
  if (!std::isfinite(reduction.latency.value) || reduction.latency.value < 0 ||
      reduction.latency.value > kMaxLinkLatency) {
    throw InputError("the reduction latency of switch " + n.name + " must be in [0, 1s], got " +
                     format_time(reduction.latency));
  }
  n.reduce = reduction;
}

bool Topology::has_reducing_switch() const {
  for (int v = 0; v < node_count(); ++v) {
    if (impl_->graph[v].reduce) return true;
  }
  return false;
}

int Topology::reducing_switch_of(std::span<const int> ranks) const {
  SSIM_CHECK(!ranks.empty(), "reducing_switch_of: no ranks");
  auto linked = [&](int rank, int sw) {
    const int v = vertex_of_rank(rank);
    bool up = false, down = false;
    for (int l : out_links(v)) up = up || link(l).to == sw;
    for (int l : in_links(v)) down = down || link(l).from == sw;
    return up && down;
  };
  const int first = vertex_of_rank(ranks[0]);
  std::vector<int> candidates;
  for (int l : out_links(first)) {
    const int sw = link(l).to;
    if (impl_->graph[sw].reduce) candidates.push_back(sw);
  }
  std::sort(candidates.begin(), candidates.end());
  for (int sw : candidates) {
    bool all = true;
    for (int r : ranks) {
      if (!linked(r, sw)) {
        all = false;
        break;
      }
    }
    if (all) return sw;
  }
  return -1;
}

int Topology::add_link(int from, int to, BytesPerSecond bandwidth, Seconds latency,
                       std::string link_class) {
  own();
  impl_->check_vertex(from, "add_link");
  impl_->check_vertex(to, "add_link");
  const std::string where = "link " + vertex_text(from) + " -> " + vertex_text(to);
  if (from == to) throw InputError(where + ": a link must join two different vertices");
  if (!std::isfinite(bandwidth.value) || bandwidth.value <= 0) {
    throw InputError(where + ": bandwidth must be finite and > 0, got " +
                     format_bandwidth(bandwidth));
  }
  if (!std::isfinite(latency.value) || latency.value < 0 || latency.value > kMaxLinkLatency) {
    throw InputError(where + ": latency must be in [0, 1s], got " + format_time(latency));
  }
  impl_->invalidate();
  const int id = static_cast<int>(impl_->links.size());
  impl_->links.push_back(Link{from, to, bandwidth, latency, std::move(link_class)});
  boost::add_edge(from, to, EdgeData{id}, impl_->graph);
  return id;
}

int Topology::add_duplex_link(int a, int b, BytesPerSecond bandwidth, Seconds latency,
                              std::string link_class) {
  // If the first direction is valid the reverse is too, so a bad call adds nothing.
  const int id = add_link(a, b, bandwidth, latency, link_class);
  add_link(b, a, bandwidth, latency, std::move(link_class));
  return id;
}

int Topology::node_count() const { return static_cast<int>(boost::num_vertices(impl_->graph)); }
int Topology::link_count() const { return static_cast<int>(impl_->links.size()); }
int Topology::gpu_count() const { return static_cast<int>(impl_->rank_vertex.size()); }

const Node& Topology::node(int vertex) const {
  impl_->check_vertex(vertex, "node");
  return impl_->graph[vertex];
}

const Link& Topology::link(int id) const {
  if (id < 0 || id >= link_count()) {
    throw InputError("no link " + std::to_string(id) + " (the topology has " +
                     std::to_string(link_count()) + " links)");
  }
  return impl_->links[id];
}

int Topology::vertex_of_rank(int rank) const {
  if (rank < 0 || rank >= gpu_count()) {
    throw InputError("no rank " + std::to_string(rank) + " (the topology has " +
                     std::to_string(gpu_count()) + " GPUs)");
  }
  return impl_->rank_vertex[rank];
}

std::vector<int> Topology::out_links(int vertex) const {
  impl_->check_vertex(vertex, "out_links");
  std::vector<int> ids;
  for (auto [it, end] = boost::out_edges(vertex, impl_->graph); it != end; ++it) {
    ids.push_back(impl_->graph[*it].id);
  }
  return ids;
}

std::vector<int> Topology::in_links(int vertex) const {
  impl_->check_vertex(vertex, "in_links");
  std::vector<int> ids;
  for (auto [it, end] = boost::in_edges(vertex, impl_->graph); it != end; ++it) {
    ids.push_back(impl_->graph[*it].id);
  }
  return ids;
}

int Topology::find_vertex(std::string_view vertex_name) const {
  const auto it = impl_->by_name.find(vertex_name);
  return it == impl_->by_name.end() ? -1 : it->second;
}

void Topology::set_ecmp(bool on) { own().ecmp = on; }
bool Topology::ecmp() const { return impl_->ecmp; }

void Topology::set_route_cache_limit(std::size_t bytes) {
  own();
  std::unique_lock lock(impl_->mu);
  impl_->cache_limit = bytes;
}

std::size_t Topology::route_cache_bytes() const {
  std::shared_lock lock(impl_->mu);
  return impl_->cache_bytes;
}

Route Topology::route(int src_rank, int dst_rank, std::uint64_t flow_hash) const {
  const int n = gpu_count();
  for (int r : {src_rank, dst_rank}) {
    if (r < 0 || r >= n) {
      throw InputError("route from rank " + std::to_string(src_rank) + " to rank " +
                       std::to_string(dst_rank) + ": ranks must be in [0, " + std::to_string(n) +
                       ")");
    }
  }
  if (src_rank == dst_rank) {
    throw InputError("route from rank " + std::to_string(src_rank) +
                     " to itself: source and destination must differ");
  }
  const std::shared_ptr<const RoutingIndex> ix = impl_->routing_index();
  const int src = impl_->rank_vertex[src_rank];
  const int dst = impl_->rank_vertex[dst_rank];
  const bool use_ecmp = impl_->ecmp;

  Route route;
  route.links.reserve(8);
  route.bandwidth = BytesPerSecond{std::numeric_limits<double>::infinity()};
  auto take = [&](int l) {
    route.links.push_back(l);
    route.latency.value += ix->link_latency[l];
    route.bandwidth.value = std::min(route.bandwidth.value, ix->link_bandwidth[l]);
    SSIM_CHECK(route.links.size() <= static_cast<std::size_t>(ix->vertices), "routing loop");
    return ix->link_to[l];
  };
  auto unreachable = [&] {
    return InputError("no route from rank " + std::to_string(src_rank) + " to rank " +
                      std::to_string(dst_rank) + " (" + node(src).name + " -> " + node(dst).name +
                      ")");
  };
  if (const int l = direct_link(*ix, src, dst); l >= 0) {
    take(l);
    return route;
  }

  if (!ix->composed[dst]) {
    const std::shared_ptr<const Table> t = impl_->table(ix, dst);
    if (!t->plain.empty()) {  // the hop count is known (every optimal path has as many)
      route.links.reserve(t->plain[src].hops & ~Table::kUniform);
    }
    for (int v = src; v != dst;) {
      const std::span<const std::int32_t> hops = t->next_hops(v);
      if (hops.empty()) throw unreachable();
      v = take(hops[use_ecmp ? ecmp_pick(flow_hash, v, hops.size()) : 0]);
    }
    return route;
  }

  // Composed destination: its in-links all come from switches u, each with a cached table.
  // From v the best cost is min over in-links (u -> dst) of cost(v, u) + that link, and the
  // next hops are those of every u that attains it (or the in-link itself when v == u). This is
  // exact: an optimal path to u that crossed dst would have reached dst earlier and cheaper.
  struct Term {
    int link;
    int from;
    std::int64_t ps;
    std::shared_ptr<const Table> table;
  };
  boost::container::small_vector<Term, 4> terms;
  for (int k = ix->in_begin[dst]; k < ix->in_begin[dst + 1]; ++k) {
    const int l = ix->in_ids[k];
    const int u = ix->link_from[l];
    std::shared_ptr<const Table> t;
    for (const Term& other : terms) {
      if (other.from == u) t = other.table;
    }
    if (!t) t = impl_->table(ix, u);
    terms.push_back(Term{l, u, ix->link_ps[l], std::move(t)});
  }
  auto term_cost = [](const Term& term, int v) {
    if (v == term.from) return Cost{term.ps, 1};
    const Cost c = term.table->cost(v);
    return c.finite() ? Cost{c.ps + term.ps, c.hops + 1} : c;
  };
  boost::container::small_vector<std::int32_t, 16> cand;
  for (int v = src; v != dst;) {
    Cost best;
    for (const Term& term : terms) best = std::min(best, term_cost(term, v));
    if (!best.finite()) throw unreachable();
    cand.clear();
    for (const Term& term : terms) {
      if (terms.size() > 1 && term_cost(term, v) != best) continue;
      if (v == term.from) {
        cand.push_back(term.link);
      } else {
        const std::span<const std::int32_t> hops = term.table->next_hops(v);
        cand.insert(cand.end(), hops.begin(), hops.end());
      }
    }
    if (use_ecmp) {
      if (terms.size() > 1) {  // merge the lists of several switches
        std::sort(cand.begin(), cand.end());
        cand.erase(std::unique(cand.begin(), cand.end()), cand.end());
      }
      v = take(cand[ecmp_pick(flow_hash, v, cand.size())]);
    } else {
      v = take(*std::min_element(cand.begin(), cand.end()));
    }
  }
  return route;
}

}  // namespace ssim::topo

namespace ssim::topo {

RouteSummary Topology::route_summary(int src_rank, int dst_rank, std::uint64_t flow_hash) const {
  const int n = gpu_count();
  if (!impl_->ecmp && src_rank >= 0 && src_rank < n && dst_rank >= 0 && dst_rank < n &&
      src_rank != dst_rank) {
    const std::shared_ptr<const RoutingIndex> ix = impl_->routing_index();
    const int dst = impl_->rank_vertex[dst_rank];
    if (const int l = direct_link(*ix, impl_->rank_vertex[src_rank], dst); l >= 0) {
      return RouteSummary{Seconds{0.0 + ix->link_latency[l]}, BytesPerSecond{ix->link_bandwidth[l]},
                          1};
    }
    if (!ix->composed[dst] && !ix->folds.empty()) {
      const std::shared_ptr<const Table> t = impl_->table(ix, dst);
      const Table::Plain& e = t->plain[impl_->rank_vertex[src_rank]];
      if (e.bottleneck >= 0 && (e.hops & Table::kUniform)) {
        const std::uint32_t hops = e.hops & ~Table::kUniform;
        const int cls = ix->latency_class[t->next_hops(impl_->rank_vertex[src_rank])[0]];
        return RouteSummary{Seconds{ix->folds[cls][hops]},
                            BytesPerSecond{ix->link_bandwidth[e.bottleneck]},
                            static_cast<int>(hops)};
      }
    }
  }
  const Route r = route(src_rank, dst_rank, flow_hash);  // also reports every error
  return RouteSummary{r.latency, r.bandwidth, static_cast<int>(r.links.size())};
}

void Topology::add_route_bytes(std::span<const RouteLoad> loads,
                               std::span<std::uint64_t> link_bytes) const {
  SSIM_CHECK(link_bytes.size() == static_cast<std::size_t>(link_count()),
             "one byte count per link needed");
  auto walk = [&](const RouteLoad& load) {
    for (const int l : route(load.src_rank, load.dst_rank, load.flow_hash).links)
      link_bytes[static_cast<std::size_t>(l)] += load.bytes;
  };
  if (impl_->ecmp) {
    for (const RouteLoad& load : loads) walk(load);
    return;
  }
  std::vector<std::uint32_t> by_dst(loads.size());
  for (std::size_t i = 0; i < by_dst.size(); ++i) by_dst[i] = static_cast<std::uint32_t>(i);
  std::stable_sort(by_dst.begin(), by_dst.end(), [&](std::uint32_t a, std::uint32_t b) {
    return loads[a].dst_rank < loads[b].dst_rank;
  });
  std::shared_ptr<const RoutingIndex> ix;
  std::vector<std::uint64_t> acc;
  std::vector<std::uint32_t> count, order;
  for (std::size_t b = 0; b < by_dst.size();) {
    std::size_t e = b;
    const int dst_rank = loads[by_dst[b]].dst_rank;
    while (e < by_dst.size() && loads[by_dst[e]].dst_rank == dst_rank) ++e;
    const bool valid = dst_rank >= 0 && dst_rank < gpu_count();
    if (valid && !ix) ix = impl_->routing_index();
    // Over the tree when the routes' hops outnumber the vertices, else one walk each.
    std::shared_ptr<const Table> t;
    std::uint64_t total_hops = 0;
    if (valid && !ix->composed[impl_->rank_vertex[dst_rank]]) {
      t = impl_->table(ix, impl_->rank_vertex[dst_rank]);
      for (std::size_t i = b; i < e; ++i) {
        const RouteLoad& load = loads[by_dst[i]];
        if (load.src_rank < 0 || load.src_rank >= gpu_count() || load.src_rank == dst_rank ||
            t->plain[impl_->rank_vertex[load.src_rank]].bottleneck < 0) {
          t.reset();  // let the walk report it
          break;
        }
        total_hops += t->plain[impl_->rank_vertex[load.src_rank]].hops & ~Table::kUniform;
      }
    }
    const int n = valid ? ix->vertices : 0;
    if (!t || total_hops <= static_cast<std::uint64_t>(n)) {
      for (std::size_t i = b; i < e; ++i) walk(loads[by_dst[i]]);
      b = e;
      continue;
    }
    // Push each vertex's bytes to its next hop, farthest vertices (most hops) first.
    acc.assign(static_cast<std::size_t>(n), 0);
    std::uint32_t most = 0;
    for (std::size_t i = b; i < e; ++i) {
      const int v = impl_->rank_vertex[loads[by_dst[i]].src_rank];
      acc[v] += loads[by_dst[i]].bytes;
      most = std::max(most, t->plain[v].hops & ~Table::kUniform);
    }
    count.assign(most + 1, 0);
    for (int v = 0; v < n; ++v) {
      const Table::Plain& p = t->plain[v];
      if (p.bottleneck >= 0 && (p.hops & ~Table::kUniform) <= most)
        ++count[p.hops & ~Table::kUniform];
    }
    std::uint32_t at = 0;  // count[h] becomes the first slot of hop count h, most hops first
    for (std::uint32_t h = most + 1; h-- > 0;) {
      const std::uint32_t c = count[h];
      count[h] = at;
      at += c;
    }
    order.assign(at, 0);
    for (int v = 0; v < n; ++v) {
      const Table::Plain& p = t->plain[v];
      const std::uint32_t h = p.hops & ~Table::kUniform;
      if (p.bottleneck >= 0 && h <= most) order[count[h]++] = static_cast<std::uint32_t>(v);
    }
    for (const std::uint32_t v : order) {
      const std::uint64_t bytes = acc[v];
      if (bytes == 0) continue;
      const int l = t->next_hops(static_cast<int>(v))[0];
      link_bytes[static_cast<std::size_t>(l)] += bytes;
      acc[static_cast<std::size_t>(ix->link_to[l])] += bytes;
    }
    b = e;
  }
}

std::size_t Topology::route_tables_bytes_bound() const {
  const std::shared_ptr<const RoutingIndex> ix = impl_->routing_index();
  std::size_t roots = 0, per_root = 0;
  for (int v = 0; v < ix->vertices; ++v) {
    if (ix->is_switch[v]) {
      ++roots;
      per_root = std::max(per_root, sizeof(Table::Costed));
    } else if (!ix->composed[v]) {
      ++roots;
      per_root = std::max(per_root, sizeof(Table::Plain));
    }
  }
  const std::size_t all =
      roots * (sizeof(Table) + per_root * static_cast<std::size_t>(ix->vertices));
  return std::min(all, impl_->cache_limit);
}

}  // namespace ssim::topo
