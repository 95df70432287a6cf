// Topologies written for peer simulators, read as stragglesim topologies (docs/user_guide.md,
// "Topologies from other simulators"):
//   topology: {astra_sim: network.yml}                       # GB/s read as 2^30 B/s
//   topology: {astra_sim: network.yml, gigabyte: 1e9}        # forks that count GB/s as 1e9 B/s
//   topology: network.yml  (or {file: network.yml}, --topology network.yml: recognised by its
//                           npus_count key and no kind; GB/s read as 2^30 B/s)
// ASTRA-sim's analytical network YAML lists, per dimension, `topology` (Ring, FullyConnected or
// Switch), `npus_count`, `bandwidth` (GB/s per link) and `latency` (ns per hop); it becomes
// topo::make_multi_dim, whose latencies are per link as ASTRA-sim's are.
#include <filesystem>
#include <string>
#include <vector>

#include "experiments/config/config.hpp"
#include "experiments/config/reader.hpp"
#include "topologies/generators.hpp"

namespace ssim::experiments {

topo::Topology load_astra_sim_network(const ConfigNode& entry, const std::string& base_dir) {
  entry.allow_only({"astra_sim", "gigabyte"});
  double gigabyte = 1073741824.0;
  if (const auto g = entry.maybe("gigabyte")) {
    const std::string v = g->text();
    if (v == "1e9" || v == "1000000000") {
      gigabyte = 1e9;
    } else if (v != "2^30" && v != "1073741824") {
      g->fail("gigabyte is 2^30 (ASTRA-sim's own conversion, the default) or 1e9");
    }
  }
  const std::filesystem::path path =
      entry.child("astra_sim").as_input_file(base_dir, "ASTRA-sim network file");
  const ConfigReader reader(path.string());
  return astra_sim_network(reader.root(), path.string(), gigabyte);
}

bool is_astra_sim_network(const ConfigNode& root) {
  return root.is_map() && !root.has("kind") && root.has("npus_count");
}

topo::Topology astra_sim_network(const ConfigNode& root, const std::string& path, double gigabyte) {
  root.require_map();
  root.allow_only({"topology", "npus_count", "bandwidth", "latency"});
  const std::vector<ConfigNode> kinds = root.child("topology").items();
  const std::vector<ConfigNode> npus = root.child("npus_count").items();
  const std::vector<ConfigNode> bandwidth = root.child("bandwidth").items();
  const std::vector<ConfigNode> latency = root.child("latency").items();
  for (const auto* list : {&npus, &bandwidth, &latency}) {
    if (list->size() != kinds.size()) {
      list->front().fail("every list needs one entry per dimension: `topology` has " +
                         std::to_string(kinds.size()) + ", this one " +
                         std::to_string(list->size()));
    }
  }
  if (kinds.size() > 8) kinds[8].fail("at most 8 dimensions");
  topo::MultiDimParams p;
  long long total = 1;
  for (std::size_t d = 0; d < kinds.size(); ++d) {
    topo::Dimension dim;
    const std::string k = kinds[d].as_choice({"Ring", "FullyConnected", "Switch"});
    dim.block = k == "Ring"             ? topo::BuildingBlock::ring
                : k == "FullyConnected" ? topo::BuildingBlock::fully_connected
                                        : topo::BuildingBlock::switch_node;
    dim.size = static_cast<int>(
        npus[d].as_int(1, dim.block == topo::BuildingBlock::fully_connected ? 1024 : 65536));
    total *= dim.size;
    if (total > 65536) npus[d].fail("more than 65536 NPUs in all");
    // GB/s per link and direction; ns per hop.
    dim.bandwidth = BytesPerSecond{bandwidth[d].as_double(1e-9, 1e9) * gigabyte};
    dim.latency = Seconds{latency[d].as_double(0, 1e9) * 1e-9};
    p.dims.push_back(dim);
  }
  if (total < 2)
    root.child("npus_count")
        .fail("the NPU counts multiply to " + std::to_string(total) + ": at least 2 are needed");
  topo::Topology t = topo::make_multi_dim(p);
  t.description = "from ASTRA-sim network " + (path.empty() ? std::string("file") : path) + " [" +
                  t.description + "]";
  return t;
}

}  // namespace ssim::experiments
