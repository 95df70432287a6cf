#include <filesystem>
#include <optional>
#include <set>

#include "common/error.hpp"
#include "common/suggest.hpp"
#include "experiments/config/config.hpp"
#include "experiments/config/data_files.hpp"
#include "topologies/generators.hpp"

namespace ssim::experiments {
namespace {

constexpr std::int64_t kMaxRanks = topo::kMaxGeneratedRanks;

// Generators validate combinations of parameters; their errors are reported at the node.
template <typename F>
topo::Topology generate_at(const ConfigNode& node, F make) {
  try {
    return make();
  } catch (const InputError& e) {
    node.fail(e.what());
  }
}

// `reduce: {bandwidth: ..., latency: ...}`: a switch's in-network reduction (NVLS, SHARP).
topo::SwitchReduction parse_reduce(const ConfigNode& r) {
  r.require_map();
  r.allow_only({"bandwidth", "latency"});
  return topo::SwitchReduction{r.get_bandwidth("bandwidth"), r.get_time("latency")};
}

// Marks every switch with a link of class `link_class` to a GPU as reducing (the NVSwitches of
// a hierarchical topology: "nvlink"; its leaves or rails: "nic"); errors at `at`.
void reduce_switches(topo::Topology& t, const std::string& link_class,
                     const topo::SwitchReduction& r, const ConfigNode& at) {
  int marked = 0;
  for (int v = 0; v < t.node_count(); ++v) {
    if (t.node(v).kind != topo::NodeKind::switch_node) continue;
    bool feeds_gpu = false;
    for (int l : t.out_links(v)) {
      const topo::Link& link = t.link(l);
      feeds_gpu = feeds_gpu ||
                  (link.link_class == link_class && t.node(link.to).kind == topo::NodeKind::gpu);
    }
    if (!feeds_gpu) continue;
    try {
      t.set_switch_reduction(v, r);
    } catch (const InputError& e) {
      at.fail(e.what());
    }
    ++marked;
  }
  if (marked == 0) {
    at.fail("this topology has no switch joined to GPUs by " + link_class +
            " links (one GPU per node has no NVSwitch)");
  }
}

// Each node and each link on its own (errors collected, reader.hpp): a node with an error is
// left out, and so is a link with one. A link to a node that had an error (or to any name,
// when a node's name itself could not be read) is not reported a second time as unknown.
topo::Topology load_custom(const ConfigNode& node) {
  topo::Topology t;
  std::set<std::string> failed_names;  // nodes with an error, not added to t
  bool nameless_failed = false;        // a node whose name could not be read
  const bool nodes_ok = collect([&] {
    bool all = true;
    const std::vector<ConfigNode> nodes = [&] {
      try {
        return node.child("nodes").items();
      } catch (...) {
        nameless_failed = true;
        throw;
      }
    }();
    for (const ConfigNode& n : nodes) {
      std::optional<std::string> name;
      bool gpu = true;
      std::optional<topo::SwitchReduction> red;
      bool ok = collect([&] {
        n.allow_only({"name", "type", "reduce"});
        name = n.get_string("name");
        if (t.find_vertex(*name) >= 0 || failed_names.count(*name) > 0)
          n.child("name").fail("duplicate node name '" + *name + "'");
      });
      if (!name) nameless_failed = true;
      const bool type_ok =
          collect([&] { gpu = n.get_choice("type", {"gpu", "switch"}, "gpu") == "gpu"; });
      ok = ok && type_ok;
      if (type_ok) {
        ok = collect([&] {
               if (!n.has("reduce")) return;
               const ConfigNode r = n.child("reduce");
               if (gpu) {
                 r.fail("reduce on GPU node '" + name.value_or("") +
                        "': only a switch (type: switch) can reduce");
               }
               red = parse_reduce(r);
             }) &&
             ok;
      }
      if (!ok) {
        if (name) failed_names.insert(*name);
        all = false;
        continue;
      }
      if (gpu) {
        t.add_gpu(*name);
      } else {
        const int s = t.add_switch(*name);
        if (red) {
          const ConfigNode r = n.child("reduce");
          if (!collect([&] {
                try {
                  t.set_switch_reduction(s, *red);
                } catch (const InputError& e) {
                  r.fail(e.what());
                }
              })) {
            all = false;
          }
        }
      }
    }
    if (!all) throw ErrorsRecorded{};
    if (t.gpu_count() < 2) node.child("nodes").fail("a custom topology needs at least 2 GPUs");
    if (t.gpu_count() > kMaxRanks) {
      node.child("nodes").fail("a custom topology of " + std::to_string(t.gpu_count()) +
                               " GPUs: at most " + std::to_string(kMaxRanks) +
                               ", as for every topology");
    }
  });
  collect([&] {
    for (const ConfigNode& l : node.child("links").items()) {
      collect([&] {
        l.allow_only({"from", "to", "bandwidth", "latency", "class", "duplex"});
        Values v;
        auto endpoint = [&](const char* key) {
          return v([&] {
            const ConfigNode e = l.child(key);
            const std::string name = e.as_string();
            const int vertex = t.find_vertex(name);
            if (vertex < 0) {
              // Its node's error is reported already.
              if (nameless_failed || failed_names.count(name) > 0) throw ErrorsRecorded{};
              e.fail("unknown node '" + name + "' (declare it under nodes)");
            }
            return vertex;
          });
        };
        const int from = endpoint("from");
        const int to = endpoint("to");
        const bool ends_ok = v.ok();
        v([&] {
          if (ends_ok && from == to) l.child("to").fail("a link must join two different nodes");
          return 0;
        });
        const BytesPerSecond bw = v([&] { return l.get_bandwidth("bandwidth"); });
        const Seconds lat = v([&] { return l.get_time("latency"); });
        const std::string cls = v([&] { return l.get_string("class", ""); });
        const bool duplex = v([&] { return l.get_bool("duplex", true); });
        v.done();
        if (!nodes_ok) return;  // t lacks the nodes that failed; nothing of it is used
        if (duplex) {
          t.add_duplex_link(from, to, bw, lat, cls);
        } else {
          t.add_link(from, to, bw, lat, cls);
        }
      });
    }
  });
  t.name = "custom(" + std::to_string(t.gpu_count()) + " GPUs)";
  return t;
}

topo::Topology load_inline(const ConfigNode& node) {
  const std::string kind = node.get_choice(
      "kind", {"switch", "fully_connected", "ring", "torus2d", "torus3d", "fat_tree", "hierarchical", "custom",
                 "shared_device"});
  static constexpr const char* kCommon[] = {"kind",        "ecmp",      "name",
                                            "description", "provenance", "network_model"};
  auto allow = [&](std::initializer_list<const char*> extra) {
    std::vector<std::string> keys(std::begin(kCommon), std::end(kCommon));
    keys.insert(keys.end(), extra.begin(), extra.end());
    for (const std::string& k : node.keys()) {
      if (std::find(keys.begin(), keys.end(), k) == keys.end()) {
        std::string list;
        for (const std::string& a : keys) list += (list.empty() ? "" : ", ") + a;
        const std::optional<std::string> near = closest_name(k, keys);
        // Recorded while errors are collected (reader.hpp): the other keys are still read.
        if (near) note_misspelled(node, *near);
        collect([&] {
          node.child(k).fail("unknown key '" + k + "' for a " + kind + " topology (" +
                             (near ? "did you mean '" + *near + "'? " : "") + "allowed: " + list +
                             ")");
        });
      }
    }
  };
  if (kind != "switch" && kind != "hierarchical" && kind != "custom" && node.has("reduce")) {
    node.child("reduce").fail("a " + kind +
                              " topology has no switch that could reduce (a reducing switch is "
                              "possible in kinds switch, hierarchical (nvlink, fabric) and "
                              "custom (a switch node))");
  }
  topo::Topology t;
  // The kind's own keys, then (errors collected, reader.hpp) the common ones whatever they
  // gave: a misspelled bandwidth does not hide an error in the provenance.
  const bool generated = collect([&] {
    if (kind == "switch" || kind == "fully_connected" || kind == "ring") {
      if (kind == "switch") {
        allow({"ranks", "bandwidth", "latency", "reduce"});
      } else {
        allow({"ranks", "bandwidth", "latency"});
      }
      // Each value on its own (errors collected); the generator needs them all.
      Values v;
      const int ranks =
          v([&] { return static_cast<int>(node.get_int("ranks", std::nullopt, 2, kMaxRanks)); });
      const BytesPerSecond bw = v([&] { return node.get_bandwidth("bandwidth"); });
      const Seconds lat = v([&] { return node.get_time("latency"); });
      v.done();
      t = generate_at(node, [&] {
        if (kind == "switch") return topo::make_switch({.ranks = ranks, .bandwidth = bw, .latency = lat});
        if (kind == "ring") return topo::make_ring({.ranks = ranks, .bandwidth = bw, .latency = lat});
        return topo::make_fully_connected({.ranks = ranks, .bandwidth = bw, .latency = lat});
      });
      if (node.has("reduce")) {
        const ConfigNode r = node.child("reduce");
        reduce_switches(t, "nvlink", parse_reduce(r), r);
      }
    } else if (kind == "torus2d" || kind == "torus3d") {
      const bool three = kind == "torus3d";
      if (three) {
        allow({"x", "y", "z", "bandwidth", "latency"});
      } else {
        allow({"x", "y", "bandwidth", "latency"});
      }
      Values v;
      const int x =
          v([&] { return static_cast<int>(node.get_int("x", std::nullopt, 1, kMaxRanks)); });
      const int y =
          v([&] { return static_cast<int>(node.get_int("y", std::nullopt, 1, kMaxRanks)); });
      const int z =
          three ? v([&] { return static_cast<int>(node.get_int("z", std::nullopt, 1, kMaxRanks)); })
                : 1;
      const BytesPerSecond bw = v([&] { return node.get_bandwidth("bandwidth"); });
      const Seconds lat = v([&] { return node.get_time("latency"); });
      v.done();
      t = generate_at(node, [&] {
        if (three) return topo::make_torus3d({.x = x, .y = y, .z = z, .bandwidth = bw, .latency = lat});
        return topo::make_torus2d({.x = x, .y = y, .bandwidth = bw, .latency = lat});
      });
    } else if (kind == "fat_tree") {
      allow({"k", "tiers", "bandwidth", "latency", "oversubscription", "ranks"});
      topo::FatTreeParams p;
      Values v;
      p.k = v([&] { return static_cast<int>(node.get_int("k", std::nullopt, 2, 362)); });
      p.tiers = v([&] { return static_cast<int>(node.get_int("tiers", 3, 2, 3)); });
      p.bandwidth = v([&] { return node.get_bandwidth("bandwidth"); });
      p.latency = v([&] { return node.get_time("latency"); });
      p.oversubscription = v([&] { return node.get_double("oversubscription", 1.0, 1.0, 1e6); });
      p.ranks = v([&] { return static_cast<int>(node.get_int("ranks", 0, 0, kMaxRanks)); });
      v.done();
      t = generate_at(node, [&] { return topo::make_fat_tree(p); });
    } else if (kind == "hierarchical") {
      allow({"nodes", "gpus_per_node", "nvlink", "nic", "fabric"});
      topo::HierarchicalParams p;
      // Each value on its own (errors collected); the fabric's defaults are the NIC's values.
      Values v;
      p.nodes =
          v([&] { return static_cast<int>(node.get_int("nodes", std::nullopt, 1, kMaxRanks)); });
      p.gpus_per_node =
          v([&] { return static_cast<int>(node.get_int("gpus_per_node", std::nullopt, 1, 1024)); });
      const ConfigNode nv = node.child("nvlink");
      nv.allow_only({"bandwidth", "latency", "reduce"});
      p.nvlink_bandwidth = v([&] { return nv.get_bandwidth("bandwidth"); });
      p.nvlink_latency = v([&] { return nv.get_time("latency"); });
      const ConfigNode nic = node.child("nic");
      nic.allow_only({"bandwidth", "latency", "path"});
      Values nic_values;
      p.nic_bandwidth = nic_values([&] { return nic.get_bandwidth("bandwidth"); });
      p.nic_latency = nic_values([&] { return nic.get_time("latency"); });
      // How a GPU reaches its NIC (NCCL's path names; topologies/topology.hpp nic_path).
      const std::string nic_path =
          v([&] { return nic.get_choice("path", {"pix", "pxb", "pxn", "phb", "sys"}, "pxb"); });
      const ConfigNode fab = node.child("fabric");
      fab.allow_only({"kind", "spines", "bandwidth", "latency", "nodes_per_leaf", "reduce"});
      p.fabric = v([&] {
        return fab.get_choice("kind", {"leaf_spine", "rail_optimized"}) == "leaf_spine"
                   ? topo::FabricKind::leaf_spine
                   : topo::FabricKind::rail_optimized;
      });
      p.spines = v([&] { return static_cast<int>(fab.get_int("spines", 1, 0, 4096)); });
      if (nic_values.ok()) {
        p.spine_bandwidth = v([&] { return fab.get_bandwidth("bandwidth", p.nic_bandwidth); });
        p.spine_latency = v([&] { return fab.get_time("latency", p.nic_latency); });
      }
      p.nodes_per_leaf =
          v([&] { return static_cast<int>(fab.get_int("nodes_per_leaf", 1, 1, kMaxRanks)); });
      nic_values.done();
      v.done();
      t = generate_at(node, [&] { return topo::make_hierarchical(p); });
      t.nic_path = nic_path;
      // NVLS: the NVSwitch of each node; SHARP/CollNet: the switches the NICs plug into.
      if (nv.has("reduce")) {
        const ConfigNode r = nv.child("reduce");
        reduce_switches(t, "nvlink", parse_reduce(r), r);
      }
      if (fab.has("reduce")) {
        const ConfigNode r = fab.child("reduce");
        reduce_switches(t, "nic", parse_reduce(r), r);
      }
    } else if (kind == "shared_device") {
      allow({"ranks", "memory_bandwidth", "copy_latency", "apply_latency", "launch_time",
             "copy_factor", "reduce_factor", "apply_copy_factor", "unaligned_factor",
             "operation_bandwidth"});
      topo::SharedDeviceParams p;
      Values v;
      p.ranks =
          v([&] { return static_cast<int>(node.get_int("ranks", std::nullopt, 2, kMaxRanks)); });
      p.device.memory_bandwidth = v([&] { return node.get_bandwidth("memory_bandwidth"); });
      p.device.copy_latency = v([&] { return node.get_time("copy_latency"); });
      p.device.apply_latency = v([&] { return node.get_time("apply_latency"); });
      p.device.launch_time = v([&] { return node.get_time("launch_time", Seconds{0.0}); });
      // Bytes of memory traffic per byte: 0 (no such copy) or in [kMinDeviceFactor, 1000]; a
      // tiny positive factor would make the memory link's bandwidth (memory_bandwidth /
      // copy_factor) infinite.
      auto factor = [&node](const char* key, double fallback) {
        const double v = node.get_double(key, fallback, 0.0, 1000.0);
        if (v != 0 && v < topo::kMinDeviceFactor) {
          node.child(key).fail(std::string(key) + " must be 0 (no such copy) or in [0.001, 1000]");
        }
        return v;
      };
      p.device.copy_factor = v([&] { return factor("copy_factor", 2.0); });
      p.device.reduce_factor = v([&] { return factor("reduce_factor", 3.0); });
      p.device.apply_copy_factor = v([&] { return factor("apply_copy_factor", 2.0); });
      p.device.unaligned_factor =
          v([&] { return node.get_double("unaligned_factor", 1.0, 1.0, 100.0); });
      v([&] {
        if (node.has("operation_bandwidth"))
          p.device.operation_bandwidth = node.get_bandwidth("operation_bandwidth");
        return 0;
      });
      v.done();
      t = generate_at(node, [&] { return topo::make_shared_device(p); });
    } else {
      allow({"nodes", "links"});
      t = load_custom(node);
    }
  });
  collect([&] {
    t.set_ecmp(node.get_bool("ecmp", false));
    if (kind == "shared_device" && t.ecmp()) {
      node.child("ecmp").fail(
          "a shared_device topology has no network routes to spread (its ranks share one GPU's "
          "memory): ecmp must be false or absent");
    }
    if ((kind == "switch" || kind == "fully_connected") && t.ecmp()) {
      node.child("ecmp").fail("a " + kind +
                              " topology has one shortest route between any two GPUs, none to "
                              "spread over: ecmp must be false or absent");
    }
  });
  collect([&] {
    if (node.has("name")) t.name = node.get_string("name");
  });
  collect([&] {
    if (node.has("network_model"))
      t.network_model = node.get_choice("network_model", {"alphabeta", "flow"}, "alphabeta");
  });
  std::string provenance;
  collect([&] {
    if (node.has("description")) provenance = node.get_string("description");
  });
  collect([&] {
    if (node.has("provenance")) {
      // What calibrate writes (experiments/config/calibration.cpp, the closed-form fit and the
      // fit by simulation): an unknown key is a typo or another tool's, refused like any other.
      const ConfigNode p = node.child("provenance");
      p.require_map();
      p.allow_only({"machine", "date", "source", "input", "link_class", "size_range", "min_bytes",
                    "max_bytes", "rows", "residual", "r_squared", "fit", "gamma", "gamma_source",
                    "fitted", "fixed", "holdout", "network"});
      // Each value on its own (errors collected, reader.hpp).
      bool values_ok = true;
      for (const std::string& key : p.keys())
        values_ok = collect([&] { p.child(key).as_string(); }) && values_ok;
      if (!values_ok) throw ErrorsRecorded{};
      provenance += (provenance.empty() ? "" : "; ") + p.text();
      t.calibrated = true;
    }
  });
  if (!generated) throw ErrorsRecorded{};
  if (!provenance.empty()) t.description = provenance + (t.description.empty() ? "" : " [" + t.description + "]");
  return t;
}

}  // namespace

namespace {

// Lays `value` (from the including document) over `target[key]`: maps merge key by key, any
// other value replaces. Replaced values report errors at their place in the including file.
void overlay(YAML::Node target, const std::string& key, const ConfigNode& value,
             const ConfigReader& target_reader) {
  const YAML::Node& ctarget = target;
  if (value.is_map() && ctarget[key].IsMap()) {
    YAML::Node inner = target[key];
    for (const std::string& k : value.keys()) overlay(inner, k, value.child(k), target_reader);
    return;
  }
  target[key] = value.yaml();
  target_reader.adopt(value.yaml(), value.reader(), value.path());
}

}  // namespace

TopologySource open_topology(const ConfigNode& entry, const std::string& base_dir) {
  std::optional<ConfigNode> file_node;
  if (entry.is_scalar()) {
    file_node = entry;
  } else {
    entry.require_map();
    if (entry.has("file")) file_node = entry.child("file");
  }
  if (!file_node) return TopologySource{nullptr, "", base_dir, entry};
  std::filesystem::path path;
  try {
    path = file_node->as_input_file(base_dir, "topology file");
  } catch (const InputError&) {
    // No such file: a shipped topology's name (`dgx_h100`: configs/topologies/dgx_h100.yaml).
    const std::string name = file_node->as_string();
    path = shipped_topology(name);
    if (path.empty()) {
      // Neither: the file's own error, with the shipped name it nearly is, if any.
      const std::optional<std::string> near =
          name.find_first_of("/.") == std::string::npos
              ? closest_name(name, shipped_topology_names())
              : std::nullopt;
      if (!near) throw;
      file_node->fail("no topology file '" + name + "' beside this file and no shipped topology " +
                      "of that name (configs/topologies/NAME.yaml); did you mean '" + *near + "'?");
    }
  }
  if (is_simgrid_platform_file(path.string())) {
    // An XML topology file is a SimGrid platform: loaded as `{simgrid: PATH}` (no overrides).
    if (entry.is_map()) {
      for (const std::string& key : entry.keys()) {
        if (key != "file") {
          entry.child(key).fail("a SimGrid platform file takes no overrides (" + key +
                                "): change the platform file");
        }
      }
    }
    std::string quoted;
    for (const char c : std::filesystem::absolute(path).string()) {
      if (c == '"' || c == '\\') quoted += '\\';
      quoted += c;
    }
    auto reader = std::make_unique<ConfigReader>(
        ConfigReader::from_string("simgrid: \"" + quoted + "\"\n", path.string()));
    const ConfigNode root = reader->root();
    return TopologySource{std::move(reader), path.string(), path.parent_path().string(), root};
  }
  auto reader = std::make_unique<ConfigReader>(path.string());
  const ConfigNode root = reader->root();
  root.require_map();
  if (entry.is_map()) {
    for (const std::string& key : entry.keys()) {
      if (key != "file") overlay(root.yaml(), key, entry.child(key), *reader);
    }
  }
  std::string dir = reader->directory();
  return TopologySource{std::move(reader), path.string(), std::move(dir), root};
}

namespace {

topo::Topology load_topology_parts(const ConfigNode& node, const std::string& base_dir) {
  if (node.is_map() && node.has("astra_sim")) return load_astra_sim_network(node, base_dir);
  if (node.is_map() && node.has("simgrid")) return load_simgrid_platform(node, base_dir);
  const TopologySource source = open_topology(node, base_dir);
  if (source.node.is_map() && source.node.has("simgrid"))
    return load_simgrid_platform(source.node, source.dir);
  if (is_astra_sim_network(source.node))
    return astra_sim_network(source.node, source.file, 1073741824.0);
  topo::Topology t = load_inline(source.node);
  if (!source.file.empty() && t.description.empty()) t.description = "from " + source.file;
  return t;
}

}  // namespace

topo::Topology load_topology(const ConfigNode& node, const std::string& base_dir) {
  // Errors collected (reader.hpp): an inline topology's or a topology file's all at once.
  return all_errors([&] { return load_topology_parts(node, base_dir); });
}

}  // namespace ssim::experiments
