#include "algorithms/registry.hpp"

#include <algorithm>
#include <charconv>
#include <cmath>

#include "algorithms/generators.hpp"
#include "common/error.hpp"
#include "common/suggest.hpp"

namespace ssim::alg {

int Options::get_int(std::string_view key, int fallback, int lo, int hi) const {
  auto it = values_.find(std::string(key));
  if (it == values_.end()) return fallback;
  const std::string& text = it->second;
  long long v = 0;
  auto [ptr, ec] = std::from_chars(text.data(), text.data() + text.size(), v);
  if (ec != std::errc() || ptr != text.data() + text.size()) {
    throw InputError("option " + std::string(key) + "=" + text + ": expected an integer");
  }
  if (v < lo || v > hi) {
    throw InputError("option " + std::string(key) + "=" + text + ": must be in [" + std::to_string(lo) + ", " +
                     std::to_string(hi) + "]");
  }
  return static_cast<int>(v);
}

std::string Options::get_string(std::string_view key, std::string fallback) const {
  auto it = values_.find(std::string(key));
  return it == values_.end() ? fallback : it->second;
}

double size_log2(int n) { return n <= 1 ? 0.0 : std::ceil(std::log2(static_cast<double>(n))); }

const std::vector<AlgorithmInfo>& algorithms() {
  static const std::vector<AlgorithmInfo> registry = {
      ring_info(),         rhd_info(),
      direct_info(),       tree_info(),
      dbtree_info(),       straggler_tree_info(),
      stragglar_info(),    halving_doubling_info(),
      direct_rs_ag_info(), oneshot_info(),
      twoshot_info(),      nvls_info(),
      nvls_tree_info(),    collnet_info(),
      collnet_direct_info(), collnet_chain_info(),
      hierarchical_info(), stragglar_hier_info(),
      nccl_ring_info(),    nccl_tree_info(),
      nccl_info(),
  };
  return registry;
}

bool AlgorithmInfo::takes(std::string_view option) const {
  return std::any_of(options.begin(), options.end(),
                     [option](const OptionSpec& s) { return s.name == option; });
}

const AlgorithmInfo* lookup_algorithm(std::string_view name) {
  for (const AlgorithmInfo& a : algorithms()) {
    if (a.name == name) return &a;
  }
  return nullptr;
}

namespace {
// The entry whose kernel the schedule runs: the one its kernel_option names, else its own.
const AlgorithmInfo* kernel_of(const Schedule& schedule) {
  const AlgorithmInfo* info = lookup_algorithm(schedule.algorithm);
  if (info && !info->kernel_option.empty()) {
    const auto named = schedule.options.find(info->kernel_option);
    if (named != schedule.options.end()) info = lookup_algorithm(named->second);
  }
  return info;
}
}  // namespace

bool runs_ring_kernel(const Schedule& schedule) {
  const AlgorithmInfo* info = kernel_of(schedule);
  return info && (info->name == "nccl_ring" || info->name == "ring");
}

bool runs_nvls_tree_kernel(const Schedule& schedule) {
  const AlgorithmInfo* info = kernel_of(schedule);
  return info && info->name == "nvls_tree";
}

bool runs_nvls_kernel(const Schedule& schedule) {
  const AlgorithmInfo* info = kernel_of(schedule);
  return info && info->nvls_kernel;
}

const AlgorithmInfo& find_algorithm(std::string_view name) {
  std::string names;
  for (const AlgorithmInfo& a : algorithms()) {
    if (a.name == name) return a;
    names += (names.empty() ? "" : ", ") + a.name;
  }
  std::vector<std::string> known;
  for (const AlgorithmInfo& a : algorithms()) known.push_back(a.name);
  const std::optional<std::string> near = closest_name(name, known);
  throw InputError("unknown algorithm '" + std::string(name) + "' (" +
                   (near ? "did you mean '" + *near + "'? " : "") + "valid: " + names + ")");
}

std::string unknown_option_message(const AlgorithmInfo& info, const std::string& shown,
                                   const std::string& key) {
  std::vector<std::string> names;
  std::string list;
  for (const OptionSpec& spec : info.options) {
    names.push_back(spec.name);
    list += (list.empty() ? "" : ", ") + spec.name;
  }
  if (list.empty()) return "algorithm " + shown + " has no option '" + key + "' (it takes no options)";
  const std::optional<std::string> near = closest_name(key, names);
  return "algorithm " + shown + " has no option '" + key + "' (" +
         (near ? "did you mean '" + *near + "'? " : "") + "options: " + list + ")";
}

GeneratedRounds generate_rounds(std::string_view name, int ranks, const Options& options) {
  const AlgorithmInfo& info = find_algorithm(name);
  if (!info.supports_ranks(ranks)) {
    throw InputError("algorithm " + info.name + " does not support " + std::to_string(ranks) +
                     " ranks (supported: " + info.supported_ranks + ")");
  }
  for (const auto& [key, value] : options.values()) {
    if (!info.takes(key)) throw InputError(unknown_option_message(info, info.name, key));
  }
  GeneratedRounds g = info.rounds(ranks, options);
  g.header.algorithm = info.name;
  for (const auto& [key, value] : options.values()) g.header.options[key] = value;
  return g;
}

Schedule generate(std::string_view name, int ranks, const Options& options) {
  GeneratedRounds g = generate_rounds(name, ranks, options);
  Schedule s = std::move(g.header);
  append_rounds(s, std::move(g.stream));
  return s;
}

}  // namespace ssim::alg
