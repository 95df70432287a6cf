#include <yaml-cpp/yaml.h>

#include <cmath>
#include <cstdio>

#include "common/error.hpp"
#include "experiments/config/config.hpp"

namespace ssim::experiments {
namespace {

// 6 significant digits: calibrated numbers are good to a fraction of a percent at best, and
// the units keep the file readable. from_chars reads the %g forms back, exponents included.
std::string with_unit(double value, double unit, const char* name) {
  char buf[64];
  std::snprintf(buf, sizeof buf, "%.6g%s", value / unit, name);
  return buf;
}

std::string number(double value) {
  char buf[64];
  std::snprintf(buf, sizeof buf, "%.6g", value);
  return buf;
}

}  // namespace

std::string calibrated_topology_yaml(const CalibratedTopology& t) {
  if (t.kind != "switch" && t.kind != "fully_connected" && t.kind != "ring") {
    throw InputError("calibrated topology kind '" + t.kind +
                     "': allowed are switch, fully_connected, ring");
  }
  if (t.ranks < 2)
    throw InputError("a calibrated topology needs ranks >= 2, got " + std::to_string(t.ranks));
  if (!(t.bandwidth.value > 0) || !std::isfinite(t.bandwidth.value)) {
    throw InputError("calibrated bandwidth must be > 0 (the fitted beta is not positive)");
  }
  if (!(t.latency.value >= 0) || !std::isfinite(t.latency.value)) {
    throw InputError("calibrated latency must be >= 0 (the fitted alpha is negative)");
  }
  const CalibrationProvenance& p = t.provenance;
  YAML::Emitter e;
  e << YAML::BeginMap;
  e << YAML::Key << "kind" << YAML::Value << t.kind;
  e << YAML::Key << "ranks" << YAML::Value << t.ranks;
  e << YAML::Key << "bandwidth" << YAML::Value << with_unit(t.bandwidth.value, 1e9, "GB/s");
  e << YAML::Key << "latency" << YAML::Value << with_unit(t.latency.value, 1e-6, "us");
  if (!t.name.empty()) e << YAML::Key << "name" << YAML::Value << t.name;
  if (!t.description.empty())
    e << YAML::Key << "description" << YAML::Value << YAML::DoubleQuoted << t.description;
  e << YAML::Key << "provenance" << YAML::Value << YAML::BeginMap;
  e << YAML::Key << "machine" << YAML::Value << YAML::DoubleQuoted << p.machine;
  e << YAML::Key << "date" << YAML::Value << YAML::DoubleQuoted << p.date;
  e << YAML::Key << "source" << YAML::Value << YAML::DoubleQuoted << p.source;
  e << YAML::Key << "input" << YAML::Value << p.input;
  if (!p.link_class.empty())
    e << YAML::Key << "link_class" << YAML::Value << YAML::DoubleQuoted << p.link_class;
  e << YAML::Key << "size_range" << YAML::Value << YAML::DoubleQuoted << p.size_range;
  e << YAML::Key << "min_bytes" << YAML::Value << p.min_bytes.value;
  e << YAML::Key << "max_bytes" << YAML::Value << p.max_bytes.value;
  e << YAML::Key << "rows" << YAML::Value << p.rows;
  e << YAML::Key << "residual" << YAML::Value << number(p.residual);
  e << YAML::Key << "r_squared" << YAML::Value << number(p.r_squared);
  e << YAML::Key << "fit" << YAML::Value << YAML::DoubleQuoted << p.fit;
  if (p.gamma) {
    e << YAML::Key << "gamma" << YAML::Value << with_unit(p.gamma->value, 1e-9, "ns/B");
    e << YAML::Key << "gamma_source" << YAML::Value << YAML::DoubleQuoted << p.gamma_source;
  }
  e << YAML::EndMap;
  e << YAML::EndMap;
  SSIM_CHECK(e.good(), "YAML emitter: " + e.GetLastError());
  return "# Written by `stragglesim calibrate`: bandwidth and latency are fitted, see provenance.\n"
         "# residual is the fit's median |relative error|; gamma (reduce cost) is read by "
         "`validate`.\n" +
         std::string(e.c_str()) + "\n";
}

std::string fitted_topology_yaml(const FittedTopologyFile& f) {
  YAML::Emitter e;
  e << YAML::BeginMap;
  e << YAML::Key << "kind" << YAML::Value << f.kind;
  e << YAML::Key << "ranks" << YAML::Value << f.ranks;
  for (const auto& [key, value] : f.keys) e << YAML::Key << key << YAML::Value << value;
  if (!f.name.empty()) e << YAML::Key << "name" << YAML::Value << f.name;
  if (!f.description.empty())
    e << YAML::Key << "description" << YAML::Value << YAML::DoubleQuoted << f.description;
  e << YAML::Key << "provenance" << YAML::Value << YAML::BeginMap;
  for (const auto& [key, value] : f.provenance)
    e << YAML::Key << key << YAML::Value << YAML::DoubleQuoted << value;
  e << YAML::EndMap;
  e << YAML::EndMap;
  SSIM_CHECK(e.good(), "YAML emitter: " + e.GetLastError());
  return "# Written by `stragglesim calibrate` (fit by simulation): the parameters are fitted or\n"
         "# fixed as provenance says.\n" +
         std::string(e.c_str()) + "\n";
}

std::optional<SecondsPerByte> load_calibrated_gamma(const ConfigNode& topology) {
  const std::optional<ConfigNode> provenance = topology.maybe("provenance");
  if (!provenance || !provenance->is_map() || !provenance->has("gamma")) return std::nullopt;
  return provenance->child("gamma").as_seconds_per_byte();
}

}  // namespace ssim::experiments
