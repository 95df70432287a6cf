// The standard topology generators; conventions are documented in generators.hpp.
#include "topologies/generators.hpp"

#include <cmath>
#include <cstdio>
#include <utility>
#include <vector>

#include "common/error.hpp"

namespace ssim::topo {
namespace {

void check_range(const std::string& topo, const char* param, long long value, long long lo,
                 long long hi) {
  if (value < lo || value > hi) {
    throw InputError(topo + ": " + param + " must be in [" + std::to_string(lo) + ", " +
                     std::to_string(hi) + "], got " + std::to_string(value));
  }
}

void check_bandwidth(const std::string& topo, const char* param, BytesPerSecond bw) {
  if (!std::isfinite(bw.value) || bw.value <= 0) {
    throw InputError(topo + ": " + param + " must be finite and > 0, got " + format_bandwidth(bw));
  }
}

void check_latency(const std::string& topo, const char* param, Seconds t) {
  if (!std::isfinite(t.value) || t.value < 0 || t.value > 1.0) {
    throw InputError(topo + ": " + param + " must be in [0, 1s], got " + format_time(t));
  }
}

std::string number(double v) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%g", v);
  return buf;
}

std::string per_link(BytesPerSecond bw, Seconds latency) {
  return format_bandwidth(bw) + " and " + format_time(latency) + " per link";
}

// Shared by both tori: dims of size 1 add nothing, size 2 one duplex link, size >= 3 a ring.
Topology make_torus(const std::string& topo, const std::vector<int>& dims, BytesPerSecond bw,
                    Seconds latency, const std::string& link_class) {
  long long total = 1;
  static constexpr const char* kNames[] = {"x", "y", "z"};
  for (std::size_t d = 0; d < dims.size(); ++d) {
    check_range(topo, kNames[d], dims[d], 1, kMaxGeneratedRanks);
    total *= dims[d];
  }
  if (total < 2 || total > kMaxGeneratedRanks) {
    throw InputError(topo + ": the product of the sizes must be in [2, " +
                     std::to_string(kMaxGeneratedRanks) + "], got " + std::to_string(total));
  }
  check_bandwidth(topo, "bandwidth", bw);
  check_latency(topo, "latency", latency);

  Topology t;
  std::string shape;
  for (std::size_t d = 0; d < dims.size(); ++d) {
    if (d > 0) shape += 'x';
    shape += std::to_string(dims[d]);
  }
  t.name = topo + "(" + shape + ")";
  t.description = topo + ": " + shape + " GPUs with wrap-around links, " + per_link(bw, latency);
  const int n = static_cast<int>(total);
  for (int r = 0; r < n; ++r) t.add_gpu("gpu" + std::to_string(r));
  for (int r = 0; r < n; ++r) {
    int stride = 1;
    for (int size : dims) {
      const int coord = (r / stride) % size;
      if (size >= 3 || (size == 2 && coord == 0)) {
        const int next = r + ((coord + 1) % size - coord) * stride;
        t.add_duplex_link(r, next, bw, latency, link_class);
      }
      stride *= size;
    }
  }
  return t;
}

}  // namespace

Topology make_switch(const SwitchParams& p) {
  const std::string topo = "switch";
  check_range(topo, "ranks", p.ranks, 2, kMaxGeneratedRanks);
  check_bandwidth(topo, "bandwidth", p.bandwidth);
  check_latency(topo, "latency", p.latency);
  Topology t;
  t.name = "switch(" + std::to_string(p.ranks) + ")";
  const Seconds half{p.latency.value / 2};
  t.description = "switch: " + std::to_string(p.ranks) + " GPUs on one non-blocking switch, " +
                  format_bandwidth(p.bandwidth) + " per link and direction, GPU-to-GPU latency " +
                  format_time(p.latency) + " (" + format_time(half) + " per link)";
  for (int r = 0; r < p.ranks; ++r) t.add_gpu("gpu" + std::to_string(r));
  const int sw = t.add_switch("switch");
  for (int r = 0; r < p.ranks; ++r) t.add_duplex_link(r, sw, p.bandwidth, half, "nvlink");
  return t;
}

Topology make_shared_device(const SharedDeviceParams& p) {
  const std::string topo = "shared_device";
  const SharedDevice& d = p.device;
  check_range(topo, "ranks", p.ranks, 2, kMaxGeneratedRanks);
  check_bandwidth(topo, "memory_bandwidth", d.memory_bandwidth);
  if (!(d.operation_bandwidth.value > 0)) {
    throw InputError(topo + ": operation_bandwidth must be > 0, got " +
                     format_bandwidth(d.operation_bandwidth));
  }
  check_latency(topo, "copy_latency", d.copy_latency);
  check_latency(topo, "apply_latency", d.apply_latency);
  check_latency(topo, "launch_time", d.launch_time);
  const std::pair<const char*, double> factors[] = {{"copy_factor", d.copy_factor},
                                                    {"reduce_factor", d.reduce_factor},
                                                    {"apply_copy_factor", d.apply_copy_factor}};
  if (!std::isfinite(d.unaligned_factor) || d.unaligned_factor < 1 || d.unaligned_factor > 100) {
    throw InputError(topo + ": unaligned_factor must be in [1, 100], got " +
                     number(d.unaligned_factor));
  }
  for (const auto& [param, v] : factors) {
    if (!std::isfinite(v) || v < 0 || v > 1e3 || (v > 0 && v < kMinDeviceFactor)) {
      throw InputError(topo + ": " + param + " must be 0 or in [0.001, 1000], got " + number(v));
    }
  }
  Topology t;
  t.name = "shared_device(" + std::to_string(p.ranks) + ")";
  t.description = "shared_device: " + std::to_string(p.ranks) + " ranks on one device, memory " +
                  format_bandwidth(d.memory_bandwidth) + " (read + write), copy latency " +
                  format_time(d.copy_latency) + ", apply latency " + format_time(d.apply_latency) +
                  ", shared launch time " + format_time(d.launch_time) + ", bytes per byte: copy " +
                  number(d.copy_factor) + ", reduce " + number(d.reduce_factor) + ", apply copy " +
                  number(d.apply_copy_factor) + " (x" + number(d.unaligned_factor) + " unaligned)" +
                  (std::isfinite(d.operation_bandwidth.value)
                       ? ", per operation at most " + format_bandwidth(d.operation_bandwidth)
                       : std::string());
  for (int r = 0; r < p.ranks; ++r) t.add_gpu("rank" + std::to_string(r));
  const int mem = t.add_switch("memory");
  const BytesPerSecond link{d.memory_bandwidth.value / (d.copy_factor > 0 ? d.copy_factor : 1)};
  const Seconds half{d.copy_latency.value / 2};
  for (int r = 0; r < p.ranks; ++r) t.add_duplex_link(r, mem, link, half, "memory");
  t.shared_device = d;
  return t;
}

Topology make_fully_connected(const FullyConnectedParams& p) {
  const std::string topo = "fully_connected";
  check_range(topo, "ranks", p.ranks, 2, 1024);
  check_bandwidth(topo, "bandwidth", p.bandwidth);
  check_latency(topo, "latency", p.latency);
  Topology t;
  t.name = "fully_connected(" + std::to_string(p.ranks) + ")";
  t.description = "fully_connected: " + std::to_string(p.ranks) +
                  " GPUs, a direct link each way between every pair, " +
                  per_link(p.bandwidth, p.latency);
  for (int r = 0; r < p.ranks; ++r) t.add_gpu("gpu" + std::to_string(r));
  for (int a = 0; a < p.ranks; ++a) {
    for (int b = a + 1; b < p.ranks; ++b) t.add_duplex_link(a, b, p.bandwidth, p.latency, "direct");
  }
  return t;
}

Topology make_ring(const RingParams& p) {
  const std::string topo = "ring";
  check_range(topo, "ranks", p.ranks, 2, kMaxGeneratedRanks);
  check_bandwidth(topo, "bandwidth", p.bandwidth);
  check_latency(topo, "latency", p.latency);
  Topology t = make_torus(topo, {p.ranks}, p.bandwidth, p.latency, "ring");
  t.name = "ring(" + std::to_string(p.ranks) + ")";
  t.description = "ring: " + std::to_string(p.ranks) + " GPUs in a bidirectional ring, " +
                  per_link(p.bandwidth, p.latency);
  return t;
}

Topology make_torus2d(const Torus2dParams& p) {
  return make_torus("torus2d", {p.x, p.y}, p.bandwidth, p.latency, "torus");
}

Topology make_torus3d(const Torus3dParams& p) {
  return make_torus("torus3d", {p.x, p.y, p.z}, p.bandwidth, p.latency, "torus");
}

Topology make_multi_dim(const MultiDimParams& p) {
  const std::string topo = "multi_dim";
  check_range(topo, "dimensions", static_cast<long long>(p.dims.size()), 1, 8);
  long long total = 1;
  static constexpr const char* kBlock[] = {"ring", "fully_connected", "switch"};
  std::string shape;
  for (std::size_t d = 0; d < p.dims.size(); ++d) {
    const Dimension& dim = p.dims[d];
    const std::string what = "dimension " + std::to_string(d);
    check_range(topo, (what + " size").c_str(), dim.size, 1, kMaxGeneratedRanks);
    if (dim.block == BuildingBlock::fully_connected)
      check_range(topo, (what + " size (fully_connected)").c_str(), dim.size, 1, 1024);
    check_bandwidth(topo, (what + " bandwidth").c_str(), dim.bandwidth);
    check_latency(topo, (what + " latency").c_str(), dim.latency);
    total *= dim.size;
    if (total > kMaxGeneratedRanks) break;
    shape += (d > 0 ? " x " : "") + std::string(kBlock[static_cast<int>(dim.block)]) + "(" +
             std::to_string(dim.size) + ")";
  }
  if (total < 2 || total > kMaxGeneratedRanks) {
    throw InputError(topo + ": the product of the sizes must be in [2, " +
                     std::to_string(kMaxGeneratedRanks) + "], got " + std::to_string(total));
  }
  Topology t;
  t.name = "multi_dim(" + shape + ")";
  t.description = "multi_dim: " + shape + "; per dimension, per link:";
  const int n = static_cast<int>(total);
  for (int r = 0; r < n; ++r) t.add_gpu("gpu" + std::to_string(r));
  int stride = 1;
  for (std::size_t d = 0; d < p.dims.size(); ++d) {
    const Dimension& dim = p.dims[d];
    const std::string cls = "dim" + std::to_string(d);
    t.description += " " + cls + " " + per_link(dim.bandwidth, dim.latency) + ";";
    const int size = dim.size;
    // Each group: a rank whose coordinate d is 0 (its first member) plus c * stride.
    for (int first = 0; first < n && size > 1; ++first) {
      if ((first / stride) % size != 0) continue;
      if (dim.block == BuildingBlock::ring) {
        for (int c = 0; c < size; ++c) {
          if (size == 2 && c == 1) break;  // two GPUs: one link each way
          t.add_duplex_link(first + c * stride, first + ((c + 1) % size) * stride, dim.bandwidth,
                            dim.latency, cls);
        }
      } else if (dim.block == BuildingBlock::fully_connected) {
        for (int a = 0; a < size; ++a) {
          for (int b = a + 1; b < size; ++b) {
            t.add_duplex_link(first + a * stride, first + b * stride, dim.bandwidth, dim.latency,
                              cls);
          }
        }
      } else {
        const int sw = t.add_switch(cls + "-switch" + std::to_string(first));
        for (int c = 0; c < size; ++c)
          t.add_duplex_link(first + c * stride, sw, dim.bandwidth, dim.latency, cls);
      }
    }
    stride *= size;
  }
  t.description.pop_back();
  return t;
}

int fat_tree_hosts(int k, int tiers) { return tiers == 2 ? k * k / 2 : k * k * k / 4; }

Topology make_fat_tree(const FatTreeParams& p) {
  const std::string topo = "fat_tree";
  check_range(topo, "tiers", p.tiers, 2, 3);
  const int max_k = p.tiers == 2 ? 362 : 64;
  if (p.k < 2 || p.k > max_k || p.k % 2 != 0) {
    throw InputError(topo + ": k must be an even number in [2, " + std::to_string(max_k) +
                     "] for " + std::to_string(p.tiers) + " tiers, got " + std::to_string(p.k));
  }
  check_bandwidth(topo, "bandwidth", p.bandwidth);
  check_latency(topo, "latency", p.latency);
  if (!std::isfinite(p.oversubscription) || p.oversubscription < 1) {
    throw InputError(topo + ": oversubscription must be a finite factor >= 1, got " +
                     number(p.oversubscription));
  }
  const int hosts = fat_tree_hosts(p.k, p.tiers);
  if (p.ranks != 0) check_range(topo, "ranks (0 = every host)", p.ranks, 2, hosts);
  const int ranks = p.ranks == 0 ? hosts : p.ranks;
  const int half = p.k / 2;
  const BytesPerSecond up{p.bandwidth.value / p.oversubscription};

  Topology t;
  t.name = "fat_tree(k=" + std::to_string(p.k) + ",tiers=" + std::to_string(p.tiers) +
           (p.ranks != 0 ? ",ranks=" + std::to_string(ranks) : "") + ")";
  t.description = "fat_tree: k=" + std::to_string(p.k) + ", " + std::to_string(p.tiers) +
                  " tiers, " + std::to_string(ranks) + " of " + std::to_string(hosts) + " hosts, " +
                  per_link(p.bandwidth, p.latency) + ", oversubscription " +
                  number(p.oversubscription);
  for (int r = 0; r < ranks; ++r) t.add_gpu("gpu" + std::to_string(r));

  if (p.tiers == 2) {
    std::vector<int> leaf, spine;
    for (int l = 0; l < p.k; ++l) leaf.push_back(t.add_switch("leaf" + std::to_string(l)));
    for (int s = 0; s < half; ++s) spine.push_back(t.add_switch("spine" + std::to_string(s)));
    for (int r = 0; r < ranks; ++r)
      t.add_duplex_link(r, leaf[r / half], p.bandwidth, p.latency, "host");
    for (int l : leaf) {
      for (int s : spine) t.add_duplex_link(l, s, up, p.latency, "leaf-spine");
    }
    return t;
  }

  // 3 tiers: index pods p, edge/agg switches e/a within a pod, cores j*half + i.
  std::vector<int> edge, agg, core;
  for (int pod = 0; pod < p.k; ++pod) {
    for (int e = 0; e < half; ++e)
      edge.push_back(t.add_switch("edge" + std::to_string(pod) + "." + std::to_string(e)));
  }
  for (int pod = 0; pod < p.k; ++pod) {
    for (int a = 0; a < half; ++a)
      agg.push_back(t.add_switch("agg" + std::to_string(pod) + "." + std::to_string(a)));
  }
  for (int c = 0; c < half * half; ++c) core.push_back(t.add_switch("core" + std::to_string(c)));
  for (int r = 0; r < ranks; ++r)
    t.add_duplex_link(r, edge[r / half], p.bandwidth, p.latency, "host");
  for (int pod = 0; pod < p.k; ++pod) {
    for (int e = 0; e < half; ++e) {
      for (int a = 0; a < half; ++a) {
        t.add_duplex_link(edge[pod * half + e], agg[pod * half + a], up, p.latency, "edge-agg");
      }
    }
  }
  for (int pod = 0; pod < p.k; ++pod) {
    for (int a = 0; a < half; ++a) {
      for (int i = 0; i < half; ++i) {
        t.add_duplex_link(agg[pod * half + a], core[a * half + i], p.bandwidth, p.latency,
                          "agg-core");
      }
    }
  }
  return t;
}

std::string to_string(FabricKind kind) {
  return kind == FabricKind::leaf_spine ? "leaf_spine" : "rail_optimized";
}

FabricKind parse_fabric_kind(const std::string& text) {
  if (text == "leaf_spine") return FabricKind::leaf_spine;
  if (text == "rail_optimized") return FabricKind::rail_optimized;
  throw InputError("unknown fabric '" + text + "': expected leaf_spine or rail_optimized");
}

Topology make_hierarchical(const HierarchicalParams& p) {
  const std::string topo = "hierarchical";
  check_range(topo, "nodes", p.nodes, 1, kMaxGeneratedRanks);
  check_range(topo, "gpus_per_node", p.gpus_per_node, 1, 1024);
  check_range(topo, "nodes * gpus_per_node", static_cast<long long>(p.nodes) * p.gpus_per_node, 2,
              kMaxGeneratedRanks);
  const int g = p.gpus_per_node;
  if (g > 1) {
    check_bandwidth(topo, "nvlink_bandwidth", p.nvlink_bandwidth);
    check_latency(topo, "nvlink_latency", p.nvlink_latency);
  }
  check_bandwidth(topo, "nic_bandwidth", p.nic_bandwidth);
  check_latency(topo, "nic_latency", p.nic_latency);
  check_range(topo, "spines", p.spines, 0, 4096);
  if (p.spines > 0) {
    check_bandwidth(topo, "spine_bandwidth", p.spine_bandwidth);
    check_latency(topo, "spine_latency", p.spine_latency);
  }
  int leaves = g;  // rails
  if (p.fabric == FabricKind::leaf_spine) {
    check_range(topo, "nodes_per_leaf", p.nodes_per_leaf, 1, p.nodes);
    leaves = (p.nodes + p.nodes_per_leaf - 1) / p.nodes_per_leaf;
    if (leaves > 1 && p.spines == 0) {
      throw InputError(topo + ": spines must be >= 1 when leaf_spine has " +
                       std::to_string(leaves) + " leaves");
    }
  }

  Topology t;
  t.gpus_per_node = g;
  t.name = "hierarchical(" + std::to_string(p.nodes) + "x" + std::to_string(g) + "," +
           to_string(p.fabric) + ")";
  t.description =
      "hierarchical: " + std::to_string(p.nodes) + " nodes x " + std::to_string(g) + " GPUs; ";
  if (g > 1) {
    t.description += "NVSwitch " + format_bandwidth(p.nvlink_bandwidth) +
                     " per link, GPU-to-GPU latency " + format_time(p.nvlink_latency) + "; ";
  }
  t.description += "NIC " + per_link(p.nic_bandwidth, p.nic_latency) + "; " + to_string(p.fabric) +
                   " fabric, " + std::to_string(leaves) +
                   (p.fabric == FabricKind::leaf_spine ? " leaves" : " rails") + ", " +
                   std::to_string(p.spines) + " spines";
  if (p.spines > 0)
    t.description += ", spine links " + per_link(p.spine_bandwidth, p.spine_latency);

  for (int n = 0; n < p.nodes; ++n) {
    for (int i = 0; i < g; ++i) t.add_gpu("node" + std::to_string(n) + ".gpu" + std::to_string(i));
  }
  std::vector<int> nvswitch, leaf, spine;
  if (g > 1) {
    for (int n = 0; n < p.nodes; ++n)
      nvswitch.push_back(t.add_switch("node" + std::to_string(n) + ".nvswitch"));
  }
  const char* leaf_name = p.fabric == FabricKind::leaf_spine ? "leaf" : "rail";
  for (int l = 0; l < leaves; ++l) leaf.push_back(t.add_switch(leaf_name + std::to_string(l)));
  for (int s = 0; s < p.spines; ++s) spine.push_back(t.add_switch("spine" + std::to_string(s)));

  const Seconds nvlink_half{p.nvlink_latency.value / 2};
  for (int n = 0; n < p.nodes; ++n) {
    for (int i = 0; i < g && !nvswitch.empty(); ++i) {
      t.add_duplex_link(n * g + i, nvswitch[n], p.nvlink_bandwidth, nvlink_half, "nvlink");
    }
    for (int i = 0; i < g; ++i) {
      const int l = p.fabric == FabricKind::leaf_spine ? n / p.nodes_per_leaf : i;
      t.add_duplex_link(n * g + i, leaf[l], p.nic_bandwidth, p.nic_latency, "nic");
    }
  }
  for (int l : leaf) {
    for (int s : spine) t.add_duplex_link(l, s, p.spine_bandwidth, p.spine_latency, "fabric");
  }
  return t;
}

}  // namespace ssim::topo
