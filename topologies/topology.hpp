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
// ties broken by hop count and then by the lowest vertex/link ids, so it is deterministic;
// with ECMP on, `route(src, dst, flow_hash)` picks one of the equal-cost paths by hash.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "common/units.hpp"

namespace ssim::topo {

enum class NodeKind : std::uint8_t { gpu, switch_node };

struct Node {
  NodeKind kind = NodeKind::gpu;
  std::string name;
  int rank = -1;  // GPU rank, -1 for switches
};

struct Link {
  int from = 0;  // vertex ids
  int to = 0;
  BytesPerSecond bandwidth;
  Seconds latency;
  std::string link_class;  // e.g. "nvlink", "nic", "spine": calibration fits per class
};

struct Route {
  std::vector<int> links;         // link ids from source GPU to destination GPU
  Seconds latency;                // sum of link latencies
  BytesPerSecond bandwidth;       // minimum bandwidth along the path
};

class Topology {
 public:
  Topology();
  ~Topology();
  Topology(Topology&&) noexcept;
  Topology& operator=(Topology&&) noexcept;
  Topology(const Topology&);
  Topology& operator=(const Topology&);

  int add_gpu(std::string name);
  int add_switch(std::string name);
  // Directed link; returns its id. Bandwidth must be > 0 and latency >= 0 (InputError otherwise).
  int add_link(int from, int to, BytesPerSecond bandwidth, Seconds latency, std::string link_class = "");
  // Two directed links, one each way (ids id and id+1).
  int add_duplex_link(int a, int b, BytesPerSecond bandwidth, Seconds latency, std::string link_class = "");

  int node_count() const;
  int link_count() const;
  int gpu_count() const;
  const Node& node(int vertex) const;
  const Link& link(int id) const;
  int vertex_of_rank(int rank) const;
  // Link ids leaving `vertex`, in insertion order.
  std::vector<int> out_links(int vertex) const;

  void set_ecmp(bool on);
  bool ecmp() const;
  // Throws InputError when dst is unreachable from src. src != dst.
  Route route(int src_rank, int dst_rank, std::uint64_t flow_hash = 0) const;

  std::string name;         // e.g. "switch(8)"
  std::string description;  // provenance: generator parameters or the file it came from

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace ssim::topo
