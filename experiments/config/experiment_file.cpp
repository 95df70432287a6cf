// Experiment YAML -> Experiment (config/experiment.hpp): algorithms, baseline, sweep axes and every
// sweep point resolved into a SimulationConfig.
//
// A sweep point is loaded from the experiment document itself: each swept value is put in
// place (under its key path, or the topology's rank parameter for sweep.ranks), the point is
// loaded with the same functions as a plain document, and the change is undone. Patching the
// parsed document in place, instead of copying it, keeps every node's file:line:column (a
// yaml-cpp Clone drops them), so an error in a fixed field still points at its line and an
// error in a swept value points at the value in the sweep list.
#include "experiments/config/experiment.hpp"

#include <algorithm>
#include <charconv>
#include <cmath>
#include <filesystem>
#include <map>
#include <memory>
#include <set>
#include <sstream>
#include <unordered_set>

#include "algorithms/registry.hpp"
#include "common/error.hpp"
#include "common/memory_budget.hpp"
#include "experiments/config/algorithm.hpp"
#include "experiments/config/config.hpp"
#include "experiments/config/files.hpp"
#include "experiments/config/resource_check.hpp"
#include "experiments/config/training.hpp"

namespace ssim::experiments {
namespace {

// Sets YAML values at key paths and undoes every change, newest first, when destroyed.
// Only the node at the end of a path is re-pointed (yaml-cpp's set_ref), so its parents keep
// their marks; a missing parent map is created and removed again.
class Patch {
 public:
  Patch() = default;
  Patch(const Patch&) = delete;
  Patch& operator=(const Patch&) = delete;
  ~Patch() {
    for (auto it = undo_.rbegin(); it != undo_.rend(); ++it) {
      if (it->saved) {
        it->parent[it->key] = (*it->saved)["v"];
      } else {
        it->parent.remove(it->key);
      }
    }
  }

  // `where` is the sweep entry, for the error when a parent on the path is not a map.
  void set(YAML::Node root, const std::vector<std::string>& path, const YAML::Node& value,
           const ConfigNode& where) {
    YAML::Node cur = root;
    std::string walked;
    for (std::size_t i = 0; i < path.size(); ++i) {
      const std::string& key = path[i];
      const YAML::Node& ccur = cur;
      const bool present = ccur[key].IsDefined() && !ccur[key].IsNull();
      const bool last = i + 1 == path.size();
      if (!last && present && !ccur[key].IsMap()) {
        where.fail("cannot set a parameter inside " + walked + (walked.empty() ? "" : ".") + key +
                   ", which is not a mapping (it is " + YAML::Dump(ccur[key]) + ")");
      }
      if (last || !present) {
        Undo u{cur, key, std::nullopt};
        if (ccur[key].IsDefined()) {
          u.saved = YAML::Node(YAML::NodeType::Map);
          (*u.saved)["v"] = cur[key];  // a fresh node sharing the old content
        }
        undo_.push_back(u);
        cur[key] = last ? value : YAML::Node(YAML::NodeType::Map);
      }
      if (!last) {
        YAML::Node next = cur[key];
        cur.reset(next);
      }
      walked += (walked.empty() ? "" : ".") + key;
    }
  }

 private:
  struct Undo {
    YAML::Node parent;
    std::string key;
    std::optional<YAML::Node> saved;  // {"v": old content}; none: the key was absent
  };
  std::vector<Undo> undo_;
};

std::vector<std::string> split(const std::string& key) {
  std::vector<std::string> out;
  std::size_t start = 0;
  while (true) {
    const std::size_t dot = key.find('.', start);
    out.push_back(key.substr(start, dot - start));
    if (dot == std::string::npos) return out;
    start = dot + 1;
  }
}

enum class Target { document, topology, ranks };

struct Axis {
  SweepAxis out;
  Target target = Target::document;
  std::vector<std::string> path;  // below the document root, or below the topology's root
  std::vector<YAML::Node> values;
  std::vector<ConfigNode> value_nodes;  // for errors; the sweep entry itself for range values
};

// The key of a sweep entry -> where its values go. Shorthands: ranks (the topology's rank
// count), delay (stragglers.delay), stragglers (stragglers.count), persistence, policy, gamma.
void resolve_target(const ConfigNode& entry, const std::string& key, Axis& a) {
  static const std::map<std::string, std::string> kShorthands = {
      {"delay", "stragglers.delay"},
      {"stragglers", "stragglers.count"},
      {"persistence", "stragglers.persistence"},
      {"probability", "stragglers.probability"},
      {"policy", "prediction.policy"},
      {"gamma", "network.gamma"}};
  if (key == "ranks" || key == "topology.ranks") {
    a.target = Target::ranks;
    return;
  }
  const auto s = kShorthands.find(key);
  const std::vector<std::string> path = split(s == kShorthands.end() ? key : s->second);
  static const std::set<std::string> kRoots = {"topology",   "network",    "size",    "delays",
                                               "stragglers", "prediction", "workload"};
  if (!kRoots.count(path[0]) ||
      std::any_of(path.begin(), path.end(), [](const std::string& p) { return p.empty(); })) {
    entry.fail(
        "cannot sweep '" + key +
        "' (sweep ranks, size, delay, stragglers, persistence, probability, policy, gamma, or a "
        "key path under "
        "topology, network, delays, stragglers, prediction or workload, e.g. topology.bandwidth, "
        "stragglers.delay.mean, workload.bucket_cap)");
  }
  if (path[0] == "size" && path.size() > 1) entry.fail("size has no parameters: sweep size itself");
  if (path[0] == "topology") {
    if (path.size() == 1) entry.fail("sweep a topology parameter, e.g. topology.bandwidth");
    a.target = Target::topology;
    a.path.assign(path.begin() + 1, path.end());
    return;
  }
  a.target = Target::document;
  a.path = path;
}

// A number in SI units with its unit, when the scalar has one.
std::optional<std::pair<double, std::string>> numeric_value(const std::string& text) {
  double v = 0;
  auto [ptr, ec] = std::from_chars(text.data(), text.data() + text.size(), v);
  if (ec == std::errc() && ptr == text.data() + text.size() && std::isfinite(v))
    return std::pair{v, std::string()};
  try {
    return std::pair{parse_time(text).value, std::string("s")};
  } catch (const InputError&) {
  }
  try {
    return std::pair{static_cast<double>(parse_bytes(text).value), std::string("B")};
  } catch (const InputError&) {
  }
  try {
    return std::pair{parse_bandwidth(text).value, std::string("B/s")};
  } catch (const InputError&) {
  }
  return std::nullopt;
}

// {min, max, factor} (nccl-tests -b/-e/-f) or {min, max, step} (-i): sizes for `size`,
// integers otherwise.
void expand_range(const ConfigNode& range, bool sizes, Axis& a) {
  range.allow_only({"min", "max", "factor", "step"});
  if (range.has("factor") == range.has("step"))
    range.fail("give a range either a factor or a step");
  auto read = [&](const char* key) -> std::uint64_t {
    if (sizes) return range.child(key).as_bytes().value;
    return static_cast<std::uint64_t>(range.child(key).as_int(0, 1 << 30));
  };
  const std::uint64_t lo = read("min"), hi = read("max");
  if (sizes && lo == 0) range.child("min").fail("size must be > 0");
  if (hi < lo) range.child("max").fail("max must be >= min");
  const std::uint64_t factor = range.has("factor") ? range.child("factor").as_int(2, 1 << 20) : 1;
  const std::uint64_t step =
      range.has("step")
          ? (sizes ? range.child("step").as_bytes().value
                   : static_cast<std::uint64_t>(range.child("step").as_int(1, 1 << 30)))
          : 0;
  if (range.has("step") && step == 0) range.child("step").fail("step must be > 0");
  for (std::uint64_t v = lo; v <= hi;) {
    const std::string label = sizes ? format_bytes(Bytes{v}) : std::to_string(v);
    a.out.labels.push_back(label);
    a.values.emplace_back(label);
    a.value_nodes.push_back(range);
    if (a.out.labels.size() > 100000) range.fail("the range has more than 100000 values");
    if (factor > 1 ? v > hi / factor : v > hi - step) break;
    v = factor > 1 ? v * factor : v + step;
  }
}

Axis load_axis(const ConfigNode& sweep, const std::string& key) {
  const ConfigNode entry = sweep.child(key);
  Axis a;
  a.out.key = key;
  resolve_target(entry, key, a);
  if (entry.is_map()) {
    if (key != "size" && a.target != Target::ranks && key != "stragglers" &&
        key != "stragglers.count") {
      entry.fail(
          "a {min, max, factor|step} range is only for size, ranks and stragglers; list the "
          "values");
    }
    expand_range(entry, key == "size", a);
  } else {
    if (entry.is_sequence() && entry.yaml().size() == 0) {
      entry.fail("empty sweep: give at least one value");
    }
    for (const ConfigNode& v : entry.items(/*scalar_ok=*/true)) {
      a.out.labels.push_back(v.text());
      a.values.push_back(v.yaml());
      a.value_nodes.push_back(v);
    }
  }
  std::unordered_set<std::string> labels;
  for (std::size_t i = 0; i < a.out.labels.size(); ++i) {
    if (!labels.insert(a.out.labels[i]).second)
      a.value_nodes[i].fail("the value is listed twice in sweep." + key);
  }
  // Numeric values for plots; one unit per axis (a bare 0 fits any), else the axis is categorical.
  std::string unit;
  bool numeric = true;
  for (const std::string& label : a.out.labels) {
    const auto v = numeric_value(label);
    if (!v) {
      numeric = false;
      break;
    }
    if (!v->second.empty()) {
      if (!unit.empty() && unit != v->second) numeric = false;
      unit = v->second;
    }
  }
  for (const std::string& label : a.out.labels) {
    const auto v = numeric ? numeric_value(label) : std::nullopt;
    a.out.numeric.push_back(v ? std::optional<double>(v->first) : std::nullopt);
  }
  a.out.unit = numeric ? unit : "";
  // A constant delay, or a distribution's mean, swept in seconds: the x axis of "where does the
  // straggler-aware algorithm start to win".
  const bool delay_path =
      a.target == Target::document && a.path.size() >= 2 && a.path[0] == "stragglers" &&
      a.path[1] == "delay" &&
      (a.path.size() == 2 || (a.path.size() == 3 && (a.path[2] == "value" || a.path[2] == "mean")));
  a.out.straggler_delay = delay_path && numeric && unit == "s";
  return a;
}

// FNV-1a over a schedule's content (header, options and every transfer and in-network
// reduction), as 16 hex digits: the experiment's fingerprint changes with the file's schedule.
std::string schedule_digest(const alg::Schedule& s) {
  std::uint64_t h = 14695981039346656037ull;
  const auto mix = [&h](std::int64_t v) {
    for (int b = 0; b < 8; ++b) {
      h ^= static_cast<std::uint64_t>(v >> (8 * b)) & 0xffu;
      h *= 1099511628211ull;
    }
  };
  const auto text = [&](const std::string& t) {
    mix(static_cast<std::int64_t>(t.size()));
    for (const char ch : t) mix(static_cast<unsigned char>(ch));
  };
  mix(static_cast<int>(s.collective));
  text(s.algorithm);
  mix(s.ranks);
  mix(s.chunks);
  mix(s.straggler.value_or(-1));
  for (const int r : s.late) mix(r);
  for (const auto& [k, v] : s.options) {
    text(k);
    text(v);
  }
  for (const alg::Round& r : s.rounds) {
    text(r.phase);
    mix(static_cast<std::int64_t>(r.transfers.size()));
    for (const alg::Transfer& t : r.transfers) {
      mix(t.src);
      mix(t.dst);
      mix(t.chunk_begin);
      mix(t.chunk_end);
      mix(static_cast<int>(t.op));
    }
    mix(static_cast<std::int64_t>(r.switch_reduces.size()));
    for (const alg::SwitchReduce& x : r.switch_reduces) {
      for (const int m : x.members) mix(m);
      mix(-1);
      for (const int m : x.receivers) mix(m);
      mix(x.chunk_begin);
      mix(x.chunk_end);
    }
  }
  char buf[17];
  std::snprintf(buf, sizeof buf, "%016llx", static_cast<unsigned long long>(h));
  return buf;
}

// `{schedule: FILE, label: L}` (`collective:`: {schedule, size}): the file (JSON or binary,
// relative to the YAML's folder) read and verified by the reader of `verify` (load_schedule_file),
// named by the algorithm it records, labelled by the file's name.
ExperimentAlgorithm load_schedule_entry(const ConfigNode& item, bool collective,
                                        const std::string& dir) {
  const ConfigNode file = item.child("schedule");
  for (const char* key : {"algorithm", "options"}) {
    if (item.has(key)) {
      item.child(key).fail(
          std::string("give either schedule: FILE or algorithm: NAME") +
          (std::string(key) == "options"
               ? " (a schedule file records its options; options: is for registry algorithms)"
               : ""));
    }
  }
  const std::string written = file.as_string();
  if (written.empty() || written == "-") file.fail("schedule must name a file");
  std::filesystem::path path = written;
  if (path.is_relative()) path = std::filesystem::path(dir) / path;
  ExperimentAlgorithm a;
  std::shared_ptr<alg::Schedule> s;
  try {
    s = std::make_shared<alg::Schedule>(
        load_schedule_file(path.string(), MemoryBudget::from_flag(""),
                           kScheduleBytesPerTransfer + kExecutorBytesPerTransfer, "simulating"));
  } catch (const InputError& e) {
    file.fail(std::string("schedule file: ") + e.what());
  }
  if (s->collective != alg::Collective::allreduce) {
    file.fail(path.string() + " is a " + std::string(alg::to_string(s->collective)) +
              " schedule; the simulator runs allreduce schedules");
  }
  a.name = s->algorithm.empty() ? path.filename().string() : s->algorithm;
  a.label = item.is_map() && !collective ? item.get_string("label", path.filename().string())
                                         : path.filename().string();
  for (const auto& [k, v] : s->options) a.options.set(k, v);
  a.schedule_file = written;
  a.schedule_digest = schedule_digest(*s);
  a.schedule = std::move(s);
  return a;
}

// One algorithm entry: a name, or {algorithm, label, options}, or {schedule, label}
// (`collective:`: {algorithm, options} or {schedule}, its size read by the caller).
ExperimentAlgorithm load_algorithm_entry(const ConfigNode& item, bool collective,
                                         const std::string& dir) {
  ExperimentAlgorithm a;
  if (item.is_map()) {
    if (collective) {
      item.allow_only({"algorithm", "schedule", "size", "options"});
    } else {
      item.allow_only({"algorithm", "schedule", "label", "options"});
    }
    if (item.has("schedule")) return load_schedule_entry(item, collective, dir);
  }
  // Initialized, never assigned: assigning a ConfigNode assigns its YAML::Node, which
  // rewrites the node it refers to in the document.
  const ConfigNode name_node = item.is_map() ? item.child("algorithm") : item;
  const alg::AlgorithmInfo* info = nullptr;
  try {
    info = &alg::find_algorithm(name_node.as_string());
  } catch (const InputError& e) {
    name_node.fail(e.what());
  }
  a.name = info->name;
  a.label = item.is_map() && !collective ? item.get_string("label", a.name) : a.name;
  if (auto opts = item.is_map() ? item.maybe("options") : std::nullopt) {
    opts->require_map();
    for (const std::string& key : opts->keys()) {
      const bool known = info->takes(key);
      if (!known) {
        // Recorded while errors are collected; the entry's other options are still read.
        collect([&] { opts->child(key).fail(alg::unknown_option_message(*info, info->name, key)); });
        continue;
      }
      a.options.set(key, opts->child(key).as_string());
    }
  }
  return a;
}

// The document's algorithms: `algorithms: [...]`, `algorithm: ENTRY` (one) or, for simulate,
// `collective: {algorithm, size, options}`; `entries` gets each entry's node.
std::vector<ExperimentAlgorithm> load_algorithms(const ConfigNode& root, ConfigCommand command,
                                                 const std::string& dir,
                                                 std::vector<ConfigNode>& entries) {
  const int given = root.has("algorithms") + root.has("algorithm") + root.has("collective");
  if (given == 0) {
    for (const char* key : {"algorithms", "algorithm", "collective"}) stop_if_misspelled(root, key);
    root.fail(command == ConfigCommand::simulate
                  ? "missing required key 'algorithm' (a name; or algorithms: with one entry, or "
                    "collective: {algorithm, size})"
                  : "missing required key 'algorithms' (a list; or algorithm: NAME for one)");
  }
  if (given > 1) {
    for (const char* key : {"algorithm", "collective"}) {
      if (root.has(key)) {
        root.child(key).fail(
            "give the algorithms once: one of algorithms: [...], algorithm: NAME and "
            "collective: {algorithm, size}");
      }
    }
  }
  std::vector<ExperimentAlgorithm> out;
  if (root.has("collective")) {
    const ConfigNode c = root.child("collective");
    c.require_map();
    entries.push_back(c);
    out.push_back(load_algorithm_entry(c, /*collective=*/true, dir));
    return out;
  }
  const std::vector<ConfigNode> items = root.has("algorithm")
                                            ? std::vector<ConfigNode>{root.child("algorithm")}
                                            : root.child("algorithms").items();
  // Each entry on its own (errors collected); the list is kept only when every entry loaded,
  // so that `out` and `entries` stay parallel.
  bool all_loaded = true;
  for (const ConfigNode& item : items) {
    all_loaded &= collect([&] {
      ExperimentAlgorithm a = load_algorithm_entry(item, /*collective=*/false, dir);
      for (const ExperimentAlgorithm& other : out) {
        if (other.label == a.label) {
          item.fail("algorithm label '" + a.label +
                    "' is used twice (give each entry its own label:)");
        }
      }
      out.push_back(std::move(a));
      entries.push_back(item);
    });
  }
  if (!all_loaded) throw ErrorsRecorded{};
  return out;
}

// A schedule file's entry at one point: its ranks must be the topology's, and prediction.k
// (if given) the late ranks it was built for.
void check_schedule_entry(const ExperimentAlgorithm& a, const ConfigNode& where,
                          const sim::SimulationConfig& c, const ConfigNode& root, bool simulate) {
  const alg::Schedule& s = *a.schedule;
  const ConfigNode file = where.child("schedule");
  const int n = c.topology.gpu_count();
  if (s.ranks != n) {
    file.fail("schedule file " + file.as_string() + " (" + a.name + ") has " +
              std::to_string(s.ranks) + " ranks and topology '" + c.topology.name + "' " +
              std::to_string(n) + "; a schedule file runs on a topology of its rank count");
  }
  // In-network reductions: a reducing switch must join each one's ranks (as the executor
  // resolves them), checked here so that the message names the YAML's line.
  std::vector<int> joined;
  for (std::size_t r = 0; r < s.rounds.size(); ++r) {
    for (std::size_t j = 0; j < s.rounds[r].switch_reduces.size(); ++j) {
      const alg::SwitchReduce& x = s.rounds[r].switch_reduces[j];
      joined.assign(x.members.begin(), x.members.end());
      joined.insert(joined.end(), x.receivers.begin(), x.receivers.end());
      if (c.topology.reducing_switch_of(joined) >= 0) continue;
      file.fail("schedule file " + file.as_string() + " (" + a.name +
                ") reduces in a switch (round " + std::to_string(r) + ", switch reduction " +
                std::to_string(j) + ") and topology '" + c.topology.name +
                "' has no reducing switch that joins its ranks (give the switch a reduce: "
                "{bandwidth, latency} key; docs/in_network_reduction.md)");
    }
  }
  if (c.late_count) {
    const ConfigNode k = root.child("prediction").child("k");
    if (!s.straggler) {
      if (simulate) k.fail("k is for straggler-aware schedules, not " + a.name);
      return;
    }
    const int built = std::max<int>(1, static_cast<int>(s.late.size()));
    if (*c.late_count != built) {
      k.fail("k: " + std::to_string(*c.late_count) + " but schedule file " + file.as_string() +
             " was built for " + std::to_string(built) + " late rank(s)");
    }
  }
}

// Everything of a point but the topology, which the caller has loaded.
// Each section is read on its own (errors collected, experiment_file.cpp's load_experiment);
// the delay model's check below needs them all.
sim::SimulationConfig load_point(const ConfigNode& root, topo::Topology topology,
                                 const std::string& dir) {
  return all_errors([&] {
    sim::SimulationConfig c;
    c.topology = std::move(topology);
    const int n = c.topology.gpu_count();
    c.network = default_network(c.topology);
    bool ok = collect([&] {
      if (auto net = root.maybe("network")) {
        load_network(*net, c.network, c.gamma, c.protocol, c.pipelined_kernels);
      }
    });
    // simulate's `collective:` carries the size; a top-level (or swept) size besides it is one
    // too many.
    ok &= collect([&] {
      if (root.has("collective")) {
        if (root.has("size")) root.child("size").fail("collective: gives the size already");
        const ConfigNode coll = root.child("collective");
        c.size = coll.get_bytes("size");
        if (c.size.value == 0) coll.child("size").fail("size must be > 0");
      } else if (!root.has("workload")) {  // a workload's size is its gradients (the caller's)
        c.size = root.get_bytes("size");
        if (c.size.value == 0) root.child("size").fail("size must be > 0");
      }
    });
    // The stragglers below are checked against the delays' ones: without those, not at all.
    const bool delays_ok = collect([&] {
      if (auto d = root.maybe("delays")) {
        c.delays = load_delay_model(*d, dir);
        if (auto list = d->maybe("persistent")) {
          for (const ConfigNode& item : list->items()) item.child("rank").as_int(0, n - 1);
        }
        if (c.delays.trace && c.delays.trace->ranks() != n) {
          d->child("trace").fail("the trace has " + std::to_string(c.delays.trace->ranks()) +
                                 " ranks but the topology has " + std::to_string(n));
        }
      }
    });
    ok = delays_ok && ok;
    if (delays_ok) {
      ok &= collect([&] {
        if (auto s = root.maybe("stragglers")) {
          s->allow_only({"count", "ranks", "delay", "persistence", "probability"});
          if (const auto d = root.maybe("delays")) {
            if (const auto list = d->maybe("persistent")) {
              std::vector<ConfigNode> entries = list->items();
              entries.insert(entries.begin(), *s);
              check_late_probabilities(entries);
            }
          }
          if (s->has("count") && s->has("ranks"))
            s->fail("give stragglers either a count or ranks");
          std::vector<int> ranks;
          if (s->has("ranks")) {
            for (const ConfigNode& r : s->child("ranks").items(true)) {
              const int v = static_cast<int>(r.as_int(0, n - 1));
              if (std::find(ranks.begin(), ranks.end(), v) != ranks.end())
                r.fail("rank listed twice");
              ranks.push_back(v);
            }
          } else {
            const int count = static_cast<int>(s->get_int("count", 1, 0, n - 1));
            for (int i = 0; i < count; ++i) ranks.push_back(n - 1 - i);
          }
          for (const sim::PersistentStraggler& p : c.delays.stragglers) {
            if (std::find(ranks.begin(), ranks.end(), p.rank) != ranks.end()) {
              s->fail("rank " + std::to_string(p.rank) +
                      " is a straggler here and in delays.persistent: give it once");
            }
          }
          if (!ranks.empty()) {
            const sim::Distribution delay = load_distribution(s->child("delay"), dir);
            const double persistence = s->get_double("persistence", 1.0, 0.0, 1.0);
            const double probability =
                s->has("probability") ? load_late_probability(s->child("probability")) : 1.0;
            for (int r : ranks)
              c.delays.stragglers.push_back({.rank = r,
                                             .extra = delay,
                                             .persistence = persistence,
                                             .probability = probability});
          }
        }
      });
    }
    ok &= collect([&] {
      if (auto p = root.maybe("prediction")) {
        // With the policy swept, a fallback serves the sweep's adaptive points.
        const std::optional<ConfigNode> sweep = root.maybe("sweep");
        const bool policy_swept =
            sweep && sweep->is_map() && (sweep->has("policy") || sweep->has("prediction.policy"));
        load_prediction(*p, n, c, policy_swept);
      }
    });
    if (!ok) return c;  // all_errors reports what was recorded
    try {
      const sim::DelayGenerator check(c.delays, n, 0, c.policy, c.straggler.value_or(n - 1));
    } catch (const InputError& e) {
      (root.has("stragglers") ? root.child("stragglers") : root).fail(e.what());
    }
    return c;
  });
}

// The point's `workload:` (training.hpp's loader, as `stragglesim train` reads it) and
// `mode:` (default synchronous) for n ranks. `workload: {file: JOB.yaml}` takes the workload of
// another file: a `train` job's `workload:` section, or a file that is that section.
Workload load_point_workload(const ConfigNode& root, int n, const std::string& dir) {
  sim::TrainingConfig t;
  const ConfigNode node = root.child("workload");
  if (node.is_map() && node.has("file")) {
    // Each other key recorded (errors collected, reader.hpp); the file's errors follow this
    // file's, all of them (load_workload).
    bool keys_ok = true;
    for (const std::string& key : node.keys()) {
      if (key != "file") {
        keys_ok = collect([&] {
          node.child(key).fail("a workload file takes no other keys (" + key +
                               "): change the file, or give the workload inline");
        }) && keys_ok;
      }
    }
    const ConfigReader job(node.child("file").as_input_file(dir, "workload file"));
    const ConfigNode top = job.root();
    top.require_map();
    load_workload(top.has("workload") ? top.child("workload") : top, t);
    if (!keys_ok) throw ErrorsRecorded{};
  } else {
    load_workload(node, t);
  }
  Workload w;
  w.layers = std::move(t.layers);
  w.bytes_per_param = t.bytes_per_param;
  w.bucket_cap = t.bucket_cap;
  w.optimizer = t.optimizer;
  w.samples_per_gpu = t.samples_per_gpu;
  if (root.has("mode")) w.mode = load_sync_mode(root.child("mode"), n);
  return w;
}

// What the training model refuses of a point (sim::run_training), at the key that says it:
// schedules built for more than one late rank, algorithms that cannot run a group's ranks.
void check_workload_point(const ConfigNode& root, const Workload& w, const sim::SimulationConfig& c,
                          const std::vector<ExperimentAlgorithm>& algorithms,
                          const std::vector<ConfigNode>& algorithm_nodes) {
  if (c.late_count && *c.late_count > 1)
    root.child("prediction").child("k").fail("the training model takes one late rank");
  const int n = c.topology.gpu_count();
  for (std::size_t i = 0; i < algorithms.size(); ++i) {
    const alg::AlgorithmInfo& info = alg::find_algorithm(algorithms[i].name);
    const ConfigNode& where = algorithm_nodes[i];
    if (algorithms[i].options.has("stragglers") &&
        algorithms[i].options.get_int("stragglers", 1, 1, 1 << 30) > 1) {
      where.child("options")
          .child("stragglers")
          .fail("the training model runs schedules built for one late rank");
    }
    check_mode_algorithm(w.mode, n, info.name, algorithms[i].options,
                         where.is_map() ? where.child("algorithm") : where);
  }
  if (root.has("mode"))
    check_mode_policy(w.mode, c.policy, !c.adaptive_fallbacks.empty(), root.child("mode"));
}

// load_experiment's body: every top-level key on its own (errors collected), then the points,
// when what they depend on (the topology, the sweep, ranks) loaded.
Experiment load_experiment_parts(const ConfigReader& reader, ConfigCommand command) {
  list_file_first(reader.file());
  const ConfigNode root = reader.root();
  root.require_map();
  const bool simulate = command == ConfigCommand::simulate;
  if (!simulate && root.has("collective")) {
    root.child("collective")
        .fail(
            "this is a `simulate` configuration (collective: one algorithm at one size): use "
            "`stragglesim simulate " +
            reader.file() +
            "`; to compare algorithms with `run`, list them under algorithms: and give size: "
            "at the top level");
  }
  if (simulate && root.has("workload")) {
    root.child("workload")
        .fail("this is a `run` experiment (a training job: workload:): use `stragglesim run " +
              reader.file() +
              "`, or `stragglesim train` with steps: for one job's idle times and lost GPU-hours");
  }
  if (simulate) {
    root.allow_only({"name", "description", "topology", "network", "algorithms", "algorithm",
                     "collective", "baseline", "metric", "size", "delays", "stragglers",
                     "prediction", "iterations", "seed", "output", "sweep", "ranks"});
  } else {
    root.allow_only({"name", "description", "topology", "network", "algorithms", "algorithm",
                     "baseline", "metric", "size", "delays", "stragglers", "prediction",
                     "iterations", "seed", "output", "sweep", "ranks", "workload", "mode"});
  }
  // A training job: the model sets the bytes of every collective.
  const bool workload = root.has("workload");
  collect([&] {
    if (workload && root.has("size")) {
      root.child("size").fail(
          "size has no meaning with a workload: the model's gradients set the bytes (leave size "
          "out; sweep workload.bucket_cap or the model instead)");
    }
  });
  collect([&] {
    if (!workload && root.has("mode")) {
      root.child("mode").fail(
          "mode (a synchronization mode) is for a training job: give workload:");
    }
  });
  const std::string dir = reader.directory();
  Experiment e;
  e.file = reader.file();
  e.name = std::filesystem::path(reader.file()).stem().string();
  collect([&] {
    e.name = root.get_string("name", e.name);
    if (e.name.empty() || e.name.find_first_of("/\\") != std::string::npos) {
      root.child("name").fail(
          "name must be non-empty without slashes (it names the output folder)");
    }
  });
  collect([&] { e.description = root.get_string("description", ""); });
  // The topology: inline in this document, or the root of a topology file (with this
  // document's overrides laid over it).
  std::optional<TopologySource> topo_source;
  collect([&] { topo_source.emplace(open_topology(root.child("topology"), dir)); });

  std::vector<ConfigNode> algorithm_nodes;
  const bool algorithms_ok =
      collect([&] { e.algorithms = load_algorithms(root, command, dir, algorithm_nodes); });
  if (!algorithms_ok) {
    e.algorithms.clear();
    algorithm_nodes.clear();
  }
  if (algorithms_ok) {
    collect([&] {
      if (auto b = root.maybe("baseline")) {
        const std::string label = b->as_string();
        const auto it =
            std::find_if(e.algorithms.begin(), e.algorithms.end(),
                         [&](const ExperimentAlgorithm& a) { return a.label == label; });
        if (it == e.algorithms.end()) b->fail("the baseline must be one of the algorithms' labels");
        e.baseline = static_cast<std::size_t>(it - e.algorithms.begin());
      } else {
        e.baseline = default_baseline(e.algorithms);
      }
    });
  }
  collect([&] {
    e.metric = root.get_choice("metric", {"completion", "after_last_arrival"}, "completion") ==
                       "completion"
                   ? Metric::completion
                   : Metric::after_last_arrival;
  });
  // simulate's `collective:` form keeps its own default of one iteration.
  collect([&] {
    e.iterations = static_cast<int>(
        root.get_int("iterations", root.has("collective") ? 1 : 20, 1, 10'000'000));
  });
  collect([&] { e.seed = static_cast<std::uint64_t>(root.get_int("seed", 1, 0, INT64_MAX)); });
  collect([&] {
    e.output = root.get_string("output", "results/" + e.name);
    if (e.output.empty()) root.child("output").fail("output must name a folder");
  });

  std::vector<Axis> axes;
  // The points need every axis: with one of them wrong, no point is loaded.
  const bool sweep_ok = collect([&] {
    if (auto sweep = root.maybe("sweep")) {
      sweep->require_map();
      if (sweep->keys().empty())
        sweep->fail("empty sweep: give at least one axis, or leave sweep out");
      bool axes_ok = true;
      for (const std::string& key : sweep->keys()) {
        axes_ok &= collect([&] {
          axes.push_back(load_axis(*sweep, key));
          if (workload && axes.back().target == Target::document && axes.back().path[0] == "size") {
            sweep->child(key).fail(
                "size has no meaning with a workload: the model's gradients set the bytes (sweep "
                "workload.bucket_cap or the model instead)");
          }
          for (std::size_t j = 0; j + 1 < axes.size(); ++j) {
            // One path a prefix of the other: the later one would overwrite the earlier.
            const std::vector<std::string>& p = axes[j].path;
            const std::vector<std::string>& q = axes.back().path;
            const std::size_t common = std::min(p.size(), q.size());
            const bool overlap = axes[j].target == axes.back().target &&
                                 (axes[j].target == Target::ranks ||
                                  std::equal(p.begin(), p.begin() + common, q.begin()));
            if (overlap)
              sweep->child(key).fail("overlaps sweep." + axes[j].out.key +
                                     " (both set the same parameter)");
          }
        });
      }
      if (!axes_ok) throw ErrorsRecorded{};
    } else if (!root.has("size") && !root.has("collective") && !workload) {
      stop_if_misspelled(root, "size");
      root.fail("missing required key 'size' (or sweep it)");
    }
  });
  if (!sweep_ok || !topo_source) return e;  // load_experiment reports what was recorded
  const ConfigReader& topo_reader = topo_source->node.reader();
  const std::string& topo_dir = topo_source->dir;
  e.topology_file = topo_source->file;
  YAML::Node doc = root.yaml();
  YAML::Node topo_doc = topo_source->node.yaml();
  const std::string topo_path = topo_source->node.path();
  for (const Axis& a : axes) e.axes.push_back(a.out);
  e.default_prediction =
      !root.has("prediction") && std::none_of(axes.begin(), axes.end(), [](const Axis& a) {
        return a.target == Target::document && a.path[0] == "prediction";
      });

  std::size_t total = 1;
  for (const Axis& a : axes) {
    total *= a.values.size();
    if (total > 1'000'000) root.child("sweep").fail("the sweep has more than 1000000 points");
  }
  if (simulate && (total > 1 || e.algorithms.size() > 1)) {
    const std::string what =
        "this is a `run` experiment (" + std::to_string(total) +
        (total == 1 ? " point" : " points") +
        (e.algorithms.size() > 1 ? ", " + std::to_string(e.algorithms.size()) + " algorithms"
                                 : std::string()) +
        "): use `stragglesim run " + reader.file() + "`";
    if (total > 1) {
      root.child("sweep").fail(what +
                               " (simulate runs one point: give every sweep axis one value)");
    }
    root.child("algorithms")
        .fail(what + " (simulate runs one algorithm: list one, or give algorithm: NAME)");
  }
  // A schedule file has one rank count: a sweep over ranks would fail at every other point.
  for (const ExperimentAlgorithm& a : e.algorithms) {
    if (!a.schedule) continue;
    for (const Axis& axis : axes) {
      if (axis.target == Target::ranks && axis.values.size() > 1) {
        root.child("sweep")
            .child(axis.out.key)
            .fail("a schedule file (" + a.schedule_file + ", " + std::to_string(a.schedule->ranks) +
                  " ranks) serves one rank count: sweep the ranks with registry algorithms, or "
                  "write a "
                  "schedule file per rank count and one experiment each");
      }
    }
  }
  // Swept values put into a topology file's document report errors at their place in this one.
  if (&topo_reader != &reader) {
    for (const Axis& a : axes) {
      if (a.target != Target::topology) continue;
      for (const ConfigNode& v : a.value_nodes) topo_reader.adopt(v.yaml(), reader, v.path());
    }
  }
  // `ranks: N`: the topology's rank count, as one value of sweep.ranks would set it.
  std::optional<ConfigNode> ranks_node;
  const bool ranks_ok = collect([&] {
    ranks_node = root.maybe("ranks");
    if (ranks_node) {
      ranks_node->as_int(2, 65536);
      if (std::any_of(axes.begin(), axes.end(),
                      [](const Axis& a) { return a.target == Target::ranks; }))
        ranks_node->fail("ranks is swept (sweep.ranks): leave it out here");
    }
  });
  if (!ranks_ok) return e;  // load_experiment reports what was recorded
  // A sweep point's first error is reported with the point (below), as the only error of the
  // points: the same mistake would be repeated at every point.
  const bool swept = !axes.empty();
  std::map<std::vector<std::size_t>, topo::Topology> topologies;  // by the topology axes' values
  std::vector<std::size_t> idx(axes.size(), 0);
  for (std::size_t p = 0; p < total; ++p) {
    std::size_t rest = p;
    for (std::size_t k = axes.size(); k-- > 0;) {
      idx[k] = rest % axes[k].values.size();
      rest /= axes[k].values.size();
    }
    SweepPoint point;
    point.value = idx;
    const FirstErrorScope first_only(swept);
    try {
      Patch patch;
      std::vector<std::size_t> topo_key;
      for (std::size_t k = 0; k < axes.size(); ++k) {
        const Axis& a = axes[k];
        if (a.target == Target::document)
          patch.set(doc, a.path, a.values[idx[k]], a.value_nodes[idx[k]]);
        if (a.target == Target::topology) {
          patch.set(topo_doc, a.path, a.values[idx[k]], a.value_nodes[idx[k]]);
          topo_key.push_back(idx[k]);
        }
      }
      // The topology's rank count from sweep.ranks or the top-level `ranks:`.
      const auto set_ranks = [&](const YAML::Node& yaml, const ConfigNode& value,
                                 const std::string& label) {
        const ConfigNode tnode(&topo_reader, topo_doc, topo_path);
        // A {min, max, factor} range's values are its labels; a value in a list is checked here
        // (a map in the list, `ranks: [{}]`, is an error at that value).
        std::int64_t ranks = 0;
        const auto [end, ec] = std::from_chars(label.data(), label.data() + label.size(), ranks);
        if (!value.is_map() || ec != std::errc() || end != label.data() + label.size())
          ranks = value.as_int(2, 65536);
        if (tnode.has("simgrid")) {
          value.fail(
              "sweep.ranks cannot set the host count of a SimGrid platform file; write "
              "one file per size and sweep topology instead");
        }
        if (tnode.has("astra_sim") || is_astra_sim_network(tnode)) {
          value.fail(
              "sweep.ranks cannot set the NPU counts of an ASTRA-sim network file; write "
              "one file per size and sweep topology instead");
        }
        const std::string kind = tnode.get_string("kind");
        if (kind == "switch" || kind == "fully_connected" || kind == "ring" || kind == "fat_tree" ||
            kind == "shared_device") {
          patch.set(topo_doc, {"ranks"}, yaml, value);
        } else if (kind == "hierarchical") {
          const std::int64_t gpn = tnode.get_int("gpus_per_node", std::nullopt, 1, 1024);
          if (ranks % gpn != 0) {
            value.fail("a hierarchical topology has nodes x " + std::to_string(gpn) +
                       " GPUs: the rank count must be a multiple of " + std::to_string(gpn));
          }
          patch.set(topo_doc, {"nodes"}, YAML::Node(std::to_string(ranks / gpn)), value);
        } else {
          value.fail("ranks cannot set the rank count of a " + kind +
                     " topology; give its own parameters instead (e.g. topology.x)");
        }
      };
      for (std::size_t k = 0; k < axes.size(); ++k) {
        const Axis& a = axes[k];
        if (a.target != Target::ranks) continue;
        topo_key.push_back(idx[k]);
        set_ranks(a.values[idx[k]], a.value_nodes[idx[k]], a.out.labels[idx[k]]);
      }
      if (ranks_node) set_ranks(ranks_node->yaml(), *ranks_node, ranks_node->text());
      auto cached = topologies.find(topo_key);
      if (cached == topologies.end()) {
        cached = topologies
                     .emplace(topo_key, load_topology(ConfigNode(&topo_reader, topo_doc, topo_path),
                                                      topo_dir))
                     .first;
      }
      point.config = load_point(ConfigNode(&reader, doc, ""), cached->second, dir);
      const int n = point.config.topology.gpu_count();
      if (workload) {
        const ConfigNode here(&reader, doc, "");
        point.workload = load_point_workload(here, n, dir);
        point.config.size = Bytes{point.workload->gradient_bytes()};
        check_workload_point(here, *point.workload, point.config, e.algorithms, algorithm_nodes);
      }
      for (std::size_t i = 0; i < e.algorithms.size(); ++i) {
        if (e.algorithms[i].schedule) {
          check_schedule_entry(e.algorithms[i], algorithm_nodes[i], point.config,
                               ConfigNode(&reader, doc, ""), simulate);
          continue;
        }
        const alg::AlgorithmInfo& info = alg::find_algorithm(e.algorithms[i].name);
        const ConfigNode& where = algorithm_nodes[i];
        const ConfigNode name = where.is_map() ? where.child("algorithm") : where;
        if (!info.supports_ranks(n)) {
          name.fail("algorithm " + info.name + " does not support " + std::to_string(n) +
                    " ranks (supported: " + info.supported_ranks + ")");
        }
        if (e.algorithms[i].options.has("straggler")) {
          const ConfigNode s = where.child("options").child("straggler");
          s.as_int(0, n - 1);
        }
        check_in_network(info, point.config.topology, name);
        // gpus_per_node from a hierarchical topology (run_config sets it per run).
        alg::Options node_options = e.algorithms[i].options;
        const std::optional<ConfigNode> options_node =
            where.is_map() && where.has("options")
                ? std::optional<ConfigNode>(where.child("options"))
                : std::nullopt;
        check_algorithm_entry_options(info, n, point.config.topology, node_options, options_node,
                                      name);
        if (point.config.late_count) {
          const ConfigNode k = ConfigNode(&reader, doc, "").child("prediction").child("k");
          // One algorithm (simulate): k must concern it.
          if (simulate && !info.straggler_aware)
            k.fail("k is for straggler-aware algorithms, not " + info.name);
          alg::Options options = e.algorithms[i].options;
          apply_late_count(point.config, info, options, k);
          if (info.check_options && info.straggler_aware) {
            try {
              info.check_options(n, options);
            } catch (const InputError& err) {
              k.fail(err.what());
            }
          }
        }
      }
    } catch (const InputError& err) {
      if (axes.empty()) throw;
      std::string label;
      for (std::size_t k = 0; k < axes.size(); ++k) {
        label += (k ? " " : "") + axes[k].out.key + "=" + axes[k].out.labels[idx[k]];
      }
      // The point's errors (a nested loader's, one per line) each name the point.
      const std::string where =
          "sweep point " + std::to_string(p + 1) + " of " + std::to_string(total) + " (" + label +
          "): ";
      std::string message;
      std::istringstream lines(err.what());
      for (std::string line; std::getline(lines, line);) {
        message += (message.empty() ? "" : "\n") +
                   (line.rfind("... and ", 0) == 0 ? line : where + line);
      }
      throw InputError(message);
    }
    point.config.iterations = e.iterations;
    point.config.seed = point_seed(e.seed, e.axes, point.value);
    e.points.push_back(std::move(point));
  }
  return e;
}

}  // namespace

Experiment load_experiment(const ConfigReader& reader, ConfigCommand command) {
  return all_errors([&] { return load_experiment_parts(reader, command); });
}

}  // namespace ssim::experiments
