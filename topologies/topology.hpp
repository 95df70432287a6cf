// A network topology: GPU and switch vertices joined by directed links, each with a
// bandwidth and a latency, stored in a Boost.Graph adjacency list; plus deterministic routing.
//
//   Topology t;
//   int sw = t.add_switch("nvswitch");
//   for (int g = 0; g < 8; ++g) {
//     int v = t.add_gpu("gpu" + std::to_string(g));      // GPU rank g (ranks in insertion order)
//     t.add_duplex_link(v, sw, BytesPerSecond{450e9}, Seconds{1.5e-6}, "nvlink");
//   }
//   Route r = t.route(0, 5);   // links GPU0 -> switch -> GPU5, latency sum, bottleneck bandwidth
//
// Ranks are GPUs in the order they were added. Routing is shortest path by total latency,
// ties broken by hop count and then by the lowest link ids, so it is deterministic;
// with ECMP on, `route(src, dst, flow_hash)` picks one of the equal-cost paths by hash.
//
// What routing guarantees, precisely:
// - Cost of a path = (sum of link latencies rounded to whole picoseconds, hop count), compared
//   lexicographically; latencies that differ by less than a picosecond count as equal. The
//   returned Route.latency is the exact double sum of the chosen links' latencies.
// - Without ECMP the route is the optimal path whose link ids, read from the source, are
//   lexicographically smallest: at every hop the lowest-id link that still lies on an optimal
//   path (a destination-based forwarding table, like a switch's). Bandwidth does not affect the
//   choice; Route.bandwidth is the minimum over the chosen links.
// - With ECMP, each hop picks among the optimal next hops (sorted by id) by a hash of flow_hash
//   salted with the current vertex id (as switches salt their hash to avoid polarisation).
//   Same inputs, same path; flow_hash is ignored when ECMP is off.
// - Cost: next-hop tables per destination are computed lazily (one reverse Dijkstra each) and
//   cached. A GPU whose in-links all come from switches shares its switches' tables, so a
//   switch, fat-tree or hierarchical topology needs one table per switch, not per GPU; after
//   that a route costs O(hops x in-links of the destination). A table takes about 16 bytes per
//   vertex (switch roots) or 12 (GPU roots: next hop, plus the route's hop count and bottleneck
//   link for route_summary and add_route_bytes). GPUs fed by GPUs (ring, torus, fully connected)
//   need a table per destination GPU: at 16384 GPUs that outgrows the default limit, and a
//   route whose table was evicted costs a Dijkstra again. The cache is bounded
//   (set_route_cache_limit); the least recently used table is evicted first.
// - Threads: const methods, route() included, may be called from several threads at once
//   (the cache is guarded by a shared mutex). add_*, set_ecmp and set_route_cache_limit must
//   not run concurrently with anything else on the same object. Copies share the computed
//   tables (immutable) and route identically.
#pragma once

#include <cstddef>
#include <cstdint>
#include <limits>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "common/units.hpp"

namespace ssim::topo {

enum class NodeKind : std::uint8_t { gpu, switch_node };

// In-network reduction of a switch (NVSwitch NVLS, InfiniBand SHARP): the switch sums the
// contributions its members send up and sends the sum down (multicast). `bandwidth` is the
// switch's reduction throughput in reduced (output) bytes per second, shared by the reductions in
// flight at once; `latency` is added once per reduction, between the last byte up and the result.
struct SwitchReduction {
  BytesPerSecond bandwidth;
  Seconds latency;
};

struct Node {
  NodeKind kind = NodeKind::gpu;
  std::string name;
  int rank = -1;  // GPU rank, -1 for switches
  std::optional<SwitchReduction> reduce;  // switches only: set when the switch reduces
};

struct Link {
  int from = 0;  // vertex ids
  int to = 0;
  BytesPerSecond bandwidth;
  Seconds latency;
  std::string link_class;  // e.g. "nvlink", "nic", "spine": calibration fits per class
};

struct Route {
  std::vector<int> links;    // link ids from source GPU to destination GPU
  Seconds latency;           // sum of link latencies
  BytesPerSecond bandwidth;  // minimum bandwidth along the path
};

// A route without its link list (Topology::route_summary).
struct RouteSummary {
  Seconds latency;           // bit for bit Route.latency
  BytesPerSecond bandwidth;  // Route.bandwidth
  int hops = 0;              // Route.links.size()
};

// Bytes sent from one rank to another (Topology::add_route_bytes).
struct RouteLoad {
  int src_rank = 0;
  int dst_rank = 0;
  std::uint64_t flow_hash = 0;  // as for route()
  std::uint64_t bytes = 0;
};

// The machine model of ranks that share one device (topology kind shared_device; the simulator
// runs it in sim/shared_device.hpp): every operation a rank's stream issues (a copy into the
// receiver's scratch, an apply kernel per round) moves its bytes through the one device memory,
// counted as bytes read plus written, shared max-min fairly by the operations running at once,
// and each stream runs its operations one after another, each paying a launch latency.
struct SharedDevice {
  BytesPerSecond memory_bandwidth;  // bytes read + written per second, all operations together
  Seconds copy_latency;             // per copy operation, before its bytes move
  Seconds apply_latency;            // per rank and round it takes part in (apply kernel, stamp)
  // Per operation, after its latency: time of the device's launch capacity (the front end that
  // schedules kernels and copies onto the SMs), shared by the operations launching at once, so
  // k launches at once take k x launch_time each. 0: launches never contend.
  Seconds launch_time{0.0};
  double copy_factor = 2;           // memory bytes per byte copied into scratch (read + write)
  double reduce_factor = 3;         // per byte the apply reduces (2 reads + 1 write)
  double apply_copy_factor = 2;     // per byte the apply copies into place (read + write)
  // Multiplies the memory bytes of every operation of a run whose chunk is not a multiple of 16
  // bytes (with copy_factor 0: of a range whose offset or length is not; the IR's byte rule);
  // measured, not derived: on a GPU those are copies of an odd stride, which ran slower on the
  // single-GPU transport (docs/calibration.md, sim/shared_device.hpp); 1: no penalty.
  double unaligned_factor = 1;
  // The most memory bytes per second one operation can move alone (infinity: no cap).
  BytesPerSecond operation_bandwidth{std::numeric_limits<double>::infinity()};
};

// A moved-from Topology may only be destroyed or assigned to.
class Topology {
 public:
  Topology();
  ~Topology();
  Topology(Topology&&) noexcept;
  Topology& operator=(Topology&&) noexcept;
  Topology(const Topology&);
  Topology& operator=(const Topology&);

  // Vertex ids are 0, 1, 2, ... in insertion order, GPUs and switches alike.
  int add_gpu(std::string name);
  int add_switch(std::string name);
  // Directed link; returns its id. Bandwidth must be > 0 and latency >= 0 (InputError otherwise).
  // Also InputError: unknown vertex, from == to, latency above 1 s (surely a unit mistake; it
  // also keeps picosecond path sums far from overflow), non-finite values.
  int add_link(int from, int to, BytesPerSecond bandwidth, Seconds latency,
               std::string link_class = "");
  // Two directed links, one each way (ids id and id+1).
  int add_duplex_link(int a, int b, BytesPerSecond bandwidth, Seconds latency,
                      std::string link_class = "");

  int node_count() const;
  int link_count() const;
  int gpu_count() const;
  const Node& node(int vertex) const;
  const Link& link(int id) const;
  int vertex_of_rank(int rank) const;
  // Marks a switch as reducing (Node::reduce). InputError: not a switch, bandwidth not finite and
  // > 0, latency not in [0, 1 s].
  void set_switch_reduction(int vertex, SwitchReduction reduction);
  // Whether any switch reduces.
  bool has_reducing_switch() const;
  // The reducing switch that every rank of `ranks` (at least one) is linked to directly, both
  // ways (an up link rank -> switch and a down link switch -> rank): the lowest such vertex id,
  // or -1 when there is none. Ranks out of range: InputError.
  int reducing_switch_of(std::span<const int> ranks) const;
  // Link ids leaving `vertex`, in insertion order.
  std::vector<int> out_links(int vertex) const;
  // Link ids entering `vertex`, in insertion order.
  std::vector<int> in_links(int vertex) const;
  // The first vertex added with this name, or -1 (for loaders that name link endpoints).
  int find_vertex(std::string_view name) const;

  void set_ecmp(bool on);
  bool ecmp() const;
  // InputError when dst is unreachable from src (naming both ranks), a rank is out of range,
  // or src == dst. node(), link() and vertex_of_rank() also throw InputError for a bad id.
  Route route(int src_rank, int dst_rank, std::uint64_t flow_hash = 0) const;

  // route() without the link list: the same latency (bit for bit), bandwidth and hop count.
  // Without ECMP, to a destination whose table is its own (GPUs fed by GPUs: ring, torus, ...)
  // this costs O(1) once the table is cached when every link of the route has one latency and
  // the topology has at most 16 distinct link latencies; otherwise it walks the route.
  RouteSummary route_summary(int src_rank, int dst_rank, std::uint64_t flow_hash = 0) const;
  // link_bytes[l] += the bytes of every load whose route (as route() takes it) crosses link l.
  // Without ECMP the routes to one destination form a tree, and many of them are summed over
  // the tree in O(vertices) instead of O(total hops). link_bytes has link_count() entries.
  void add_route_bytes(std::span<const RouteLoad> loads, std::span<std::uint64_t> link_bytes) const;
  // About the most bytes the cached next-hop tables can take when every destination's table is
  // in use (the limit of set_route_cache_limit caps it): for memory estimates.
  std::size_t route_tables_bytes_bound() const;

  // Upper bound on the memory of cached next-hop tables (default 1 GiB). Tables that a route in
  // progress uses live until it returns, so a tiny limit is slow but still correct.
  void set_route_cache_limit(std::size_t bytes);
  // Bytes held by cached tables now (tests and diagnostics).
  std::size_t route_cache_bytes() const;

  std::string name;         // e.g. "switch(8)"
  std::string description;  // provenance: generator parameters or the file it came from
  // Whether the figures were fitted to (or checked against) measurements: a topology file's
  // `provenance:` map, as `calibrate` writes it. Outputs call the others uncalibrated.
  bool calibrated = false;
  // The network model its figures hold in (a topology file's `network_model` key: "alphabeta"
  // or "flow"; empty: not said), which an experiment, advise or train on it runs when it names
  // none (experiments/config). h100_8xib400.yaml says flow: NCCL's default there is within 3.1%
  // of the published table in the flow model and 36% in the alpha-beta one.
  std::string network_model;
  // Node structure, when the topology has one (the hierarchical generator): GPUs per node,
  // rank = node * gpus_per_node + local index. 0: none known. Experiments pass it to the
  // topology-aware algorithms as their gpus_per_node option.
  int gpus_per_node = 0;
  // How a GPU reaches its NIC, in NCCL's path names (src/graph/topo.h): "pix" or "pxb" (through
  // PCIe switches only: the HGX/DGX layout), "pxn" (through another GPU's NVLink), "phb" (through
  // the host bridge), "sys" (across CPU sockets). NCCL enables LL128 across nodes only up to pxn
  // on Hopper (src/graph/tuning.cc). Empty: not said (a hierarchical topology's default is pxb).
  std::string nic_path;
  // Set for a shared_device topology (topologies/generators.hpp make_shared_device): the
  // simulator then runs the ranks on this machine model instead of routing over the links.
  std::optional<SharedDevice> shared_device;

 private:
  struct Impl;
  // Copies share the graph and its route cache (copy on write): a run's copy of a 16384-rank
  // topology costs nothing until it is changed. The mutators call own() first.
  Impl& own();
  std::shared_ptr<Impl> impl_;
};

}  // namespace ssim::topo
