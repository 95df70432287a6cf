// A topology file's bandwidth and latency keys as parameters of a fit (calibrate LOG...
// --topology FILE): listing them, loading the file with some of them replaced, and writing the
// file back with the fitted values (config.hpp, "Topology parameters").
#include <cstdio>
#include <filesystem>
#include <yaml-cpp/yaml.h>

#include "common/error.hpp"
#include "experiments/config/config.hpp"

namespace ssim::experiments {
namespace {

bool is_knob(const std::string& key) { return key == "bandwidth" || key == "latency"; }

// Keys whose values describe the file rather than the machine.
bool is_text_key(const std::string& key) {
  return key == "provenance" || key == "description" || key == "name" || key == "file";
}

void collect(const ConfigNode& map, const std::string& prefix, std::vector<TopologyKnob>& out) {
  for (const std::string& key : map.keys()) {
    if (is_text_key(key)) continue;
    const ConfigNode value = map.child(key);
    const std::string path = prefix.empty() ? key : prefix + "." + key;
    if (value.is_map()) {
      collect(value, path, out);
    } else if (is_knob(key) && value.is_scalar()) {
      TopologyKnob k;
      k.key = path;
      k.bandwidth = key == "bandwidth";
      k.value = k.bandwidth ? value.as_bandwidth().value : value.as_time().value;
      out.push_back(k);
    }
  }
}

std::string knob_text(const std::string& key, double value) {
  char buf[64];
  const bool bandwidth = key == "bandwidth" || key.ends_with(".bandwidth");
  std::snprintf(buf, sizeof buf, bandwidth ? "%.6gGB/s" : "%.6gus",
                bandwidth ? value / 1e9 : value * 1e6);
  return buf;
}

// Sets root[a][b]...[last] = text for key "a.b.last", creating maps on the way.
void set_path(YAML::Node root, const std::string& key, const std::string& text) {
  YAML::Node node = root;
  std::size_t begin = 0;
  for (;;) {
    const std::size_t dot = key.find('.', begin);
    const std::string part = key.substr(begin, dot == std::string::npos ? std::string::npos : dot - begin);
    if (dot == std::string::npos) {
      node[part] = text;
      return;
    }
    YAML::Node next = node[part];
    if (!next.IsMap()) next = YAML::Node(YAML::NodeType::Map);
    node[part] = next;
    node.reset(next);
    begin = dot + 1;
  }
}

void check_keys(const std::string& path, const std::map<std::string, double>& values) {
  const std::vector<TopologyKnob> knobs = topology_knobs(path);
  for (const auto& [key, value] : values) {
    bool found = false;
    for (const TopologyKnob& k : knobs) found = found || k.key == key;
    SSIM_CHECK(found, "topology parameter " + key + " is not a key of " + path);
    SSIM_CHECK(std::isfinite(value) && value >= 0, "topology parameter " + key + " out of range");
  }
}

}  // namespace

std::vector<TopologyKnob> topology_knobs(const std::string& path) {
  const ConfigReader reader(path);
  if (!reader.root().is_map()) reader.root().fail("a topology file is a map of keys");
  std::vector<TopologyKnob> out;
  collect(reader.root(), "", out);
  return out;
}

topo::Topology load_topology_with(const std::string& path,
                                  const std::map<std::string, double>& values) {
  check_keys(path, values);
  YAML::Node entry(YAML::NodeType::Map);
  entry["file"] = std::filesystem::absolute(path).string();
  for (const auto& [key, value] : values) set_path(entry, key, knob_text(key, value));
  const ConfigReader reader = ConfigReader::from_string(YAML::Dump(entry), path + " (fitted values)");
  return load_topology(reader.root(), reader.directory());
}

std::string topology_yaml_with(const std::string& path, const std::map<std::string, double>& values,
                               const std::vector<std::pair<std::string, std::string>>& provenance) {
  check_keys(path, values);
  const ConfigReader reader(path);
  YAML::Node doc = YAML::Clone(reader.root().yaml());
  for (const auto& [key, value] : values) set_path(doc, key, knob_text(key, value));
  doc.remove("provenance");
  YAML::Node p(YAML::NodeType::Map);
  for (const auto& [key, value] : provenance) p[key] = value;
  doc["provenance"] = p;
  YAML::Emitter e;
  e << doc;
  SSIM_CHECK(e.good(), "YAML emitter: " + e.GetLastError());
  return "# Written by `stragglesim calibrate` (nccl-tests logs fitted by simulation) from " + path +
         ":\n# the keys provenance.fitted names are fitted, the others are the file's.\n" +
         std::string(e.c_str()) + "\n";
}

}  // namespace ssim::experiments
