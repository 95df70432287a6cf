#include "experiments/output/experiment_output.hpp"

#include <algorithm>
#include <charconv>
#include <cmath>
#include <cstdio>
#include <map>
#include <ostream>
#include <sstream>
#include <variant>

#include "algorithms/stragglar.hpp"
#include "common/error.hpp"
#include "common/stats.hpp"
#include "schema/result_csv.hpp"

namespace ssim::experiments {
namespace {

using schema::csv_field;
using schema::csv_number;

std::string fixed(double v, int digits) {
  char buf[64];
  std::snprintf(buf, sizeof buf, "%.*f", digits, v);
  return buf;
}

double metric_time(const Experiment& e, const sim::IterationSummary& it) {
  return e.metric == Metric::completion ? it.completion.value : it.after_last_arrival.value;
}

const char* metric_name(Metric m) {
  return m == Metric::completion ? "completion" : "after_last_arrival";
}

// Whether every pair of ranks talks over the same latency and bandwidth, so the closed-form
// alpha-beta costs apply; then alpha and beta of that route.
std::optional<alg::CostParams> uniform_params(const sim::SimulationConfig& c) {
  if (c.network != sim::NetworkKind::alphabeta) return std::nullopt;
  const int n = c.topology.gpu_count();
  const topo::Route r = c.topology.route(0, 1);
  auto same = [&](const topo::Route& o) {
    return std::fabs(o.latency.value - r.latency.value) <= 1e-12 * r.latency.value &&
           std::fabs(o.bandwidth.value - r.bandwidth.value) <= 1e-9 * r.bandwidth.value;
  };
  for (int j = 1; j < n; ++j) {
    if (!same(c.topology.route(0, j)) || !same(c.topology.route(j, 0)) ||
        !same(c.topology.route(j, (j + 1) % n)))
      return std::nullopt;
  }
  return alg::CostParams{
      .alpha = r.latency.value, .beta = 1.0 / r.bandwidth.value, .gamma = c.gamma.value};
}

nlohmann::json seconds_or_null(std::optional<Seconds> t) {
  return t ? nlohmann::json(t->value) : nlohmann::json(nullptr);
}

struct DistributionJson {
  nlohmann::json& j;
  void operator()(const sim::dist::None&) const {}
  void operator()(const sim::dist::Constant& d) const { j["value_s"] = d.value.value; }
  void operator()(const sim::dist::Uniform& d) const {
    j["low_s"] = d.low.value;
    j["high_s"] = d.high.value;
  }
  void operator()(const sim::dist::Normal& d) const {
    j["mean_s"] = d.mean.value;
    j["stddev_s"] = d.stddev.value;
  }
  void operator()(const sim::dist::Lognormal& d) const {
    j["mu"] = d.mu;
    j["sigma"] = d.sigma;
  }
  void operator()(const sim::dist::Exponential& d) const { j["mean_s"] = d.mean.value; }
  void operator()(const sim::dist::Pareto& d) const {
    j["scale_s"] = d.scale.value;
    j["shape"] = d.shape;
  }
  void operator()(const sim::dist::Empirical& d) const {
    j["samples"] = d.samples.size();
    j["source"] = d.source;
  }
};

// Sets every value of `mine` that `other` does not share to null, recursing into objects
// (an array or a number either matches as a whole or becomes null).
void keep_common(nlohmann::json& mine, const nlohmann::json& other) {
  if (mine.is_object() && other.is_object()) {
    for (auto it = mine.begin(); it != mine.end(); ++it) {
      if (other.contains(it.key())) {
        keep_common(*it, other.at(it.key()));
      } else {
        *it = nullptr;
      }
    }
  } else if (mine != other) {
    mine = nullptr;
  }
}

}  // namespace

Seconds arrival_lateness(const std::vector<Seconds>& arrival) {
  if (arrival.size() < 2) return Seconds{0};
  double last = std::max(arrival[0].value, arrival[1].value);
  double second = std::min(arrival[0].value, arrival[1].value);
  for (std::size_t k = 2; k < arrival.size(); ++k) {
    const double t = arrival[k].value;
    if (t > last) {
      second = last;
      last = t;
    } else if (t > second) {
      second = t;
    }
  }
  return Seconds{last - second};
}

nlohmann::json distribution_json(const sim::Distribution& d) {
  nlohmann::json j = {{"distribution", std::string(d.kind_name())}};
  std::visit(DistributionJson{j}, d.params());
  j["expected_s"] = seconds_or_null(d.mean());
  return j;
}

nlohmann::json delay_model_json(const sim::DelayModel& m) {
  nlohmann::json j;
  j["base"] = distribution_json(m.base);
  nlohmann::json stragglers = nlohmann::json::array();
  for (const sim::PersistentStraggler& s : m.stragglers) {
    nlohmann::json one = {
        {"rank", s.rank}, {"extra", distribution_json(s.extra)}, {"persistence", s.persistence}};
    if (s.probability != 1) one["probability"] = s.probability;  // older files stay as they were
    stragglers.push_back(std::move(one));
  }
  j["stragglers"] = std::move(stragglers);
  j["trace"] = m.trace ? nlohmann::json{{"source", m.trace->source()},
                                        {"iterations", m.trace->iterations()},
                                        {"ranks", m.trace->ranks()}}
                       : nlohmann::json(nullptr);
  return j;
}

nlohmann::json simulation_config_json(const sim::SimulationConfig& c) {
  nlohmann::json j;
  j["topology"] = {{"name", c.topology.name},
                   {"description", c.topology.description},
                   {"ranks", c.topology.gpu_count()},
                   {"ecmp", c.topology.ecmp()}};
  j["network"] = {{"model", std::string(sim::to_string(c.network))},
                  {"gamma_s_per_byte", c.gamma.value}};
  // Only when off (the default is pipelined): a per-round run says so.
  if (!c.pipelined_kernels) j["network"]["steps"] = "per_round";
  j["collective"] = {
      {"algorithm", c.algorithm}, {"size_bytes", c.size.value}, {"options", c.options.values()}};
  j["delays"] = delay_model_json(c.delays);
  j["prediction"] = {
      {"policy", c.adaptive_fallbacks.empty() ? std::string(sim::to_string(c.policy))
                                              : std::string("adaptive")},
      {"rank", c.straggler ? nlohmann::json(*c.straggler) : nlohmann::json(nullptr)}};
  if (!c.adaptive_fallbacks.empty()) j["prediction"]["fallback"] = c.adaptive_fallbacks;
  if (c.policy == sim::StragglerPolicy::eager) {
    j["prediction"]["detection_s"] =
        c.detection ? c.detection->value : sim::default_detection(c.topology).value;
  }
  j["iterations"] = c.iterations;
  j["seed"] = std::to_string(c.seed);  // a string: JSON readers keep 53 bits of a number
  return j;
}

std::vector<AlgorithmSummary> summarize_point(const Experiment& e,
                                              const std::vector<sim::SimulationResult>& runs) {
  SSIM_CHECK(runs.size() == e.algorithms.size(), "one result per algorithm");
  const sim::SimulationResult& base = runs[e.baseline];
  std::vector<AlgorithmSummary> out;
  for (const sim::SimulationResult& r : runs) {
    SSIM_CHECK(r.iterations.size() == base.iterations.size(),
               "same iterations for every algorithm");
    AlgorithmSummary s;
    std::vector<double> completion, after;
    double sum_metric = 0, sum_base = 0, sum_speedup = 0;
    std::size_t losses = 0;
    for (std::size_t i = 0; i < r.iterations.size(); ++i) {
      completion.push_back(r.iterations[i].completion.value);
      after.push_back(r.iterations[i].after_last_arrival.value);
      const double t = metric_time(e, r.iterations[i]);
      const double b = metric_time(e, base.iterations[i]);
      sum_metric += t;
      sum_base += b;
      sum_speedup += t > 0 ? b / t : 1.0;
      // Equal times within rounding are a tie, not a loss.
      if (t > b * (1 + 1e-9)) ++losses;
    }
    const double iters = static_cast<double>(r.iterations.size());
    s.mean_completion = r.mean_completion.value;
    s.p90_completion = quantile(completion, 0.9);
    s.mean_after_last_arrival = r.mean_after_last_arrival.value;
    s.p90_after_last_arrival = quantile(after, 0.9);
    s.speedup = sum_metric > 0 ? sum_base / sum_metric : 1.0;
    s.mean_iteration_speedup = sum_speedup / iters;
    s.loss_fraction = static_cast<double>(losses) / iters;
    s.prediction_accuracy = r.prediction_accuracy;
    s.fallback_fraction = r.fallback_fraction;
    s.straggler_aware = r.straggler_aware;
    s.rounds = r.rounds;
    s.shared_link = r.shared_link;
    out.push_back(s);
  }
  return out;
}

std::vector<std::string> experiment_csv_columns(const Experiment& e) {
  std::vector<std::string> c = schema::result_csv_columns();
  for (const char* extra : {"run", "point", "label"}) c.emplace_back(extra);
  for (const SweepAxis& a : e.axes) c.push_back("sweep." + a.key);
  for (const char* extra : {"seed", "last_rank", "predicted_straggler", "speedup",
                            "speedup_after_last_arrival", "alphabeta_shared_link", "chosen"})
    c.emplace_back(extra);
  return c;
}

void write_point_rows(std::ostream& out, const Experiment& e, std::size_t point,
                      const std::vector<sim::SimulationResult>& runs) {
  const SweepPoint& p = e.points[point];
  const sim::SimulationResult& base = runs[e.baseline];
  const std::string device = "simulated " + std::string(sim::to_string(p.config.network)) + " on " +
                             p.config.topology.name;
  // How late the last rank came after every other rank, per iteration: the arrivals are a
  // function of the point's delay model and seed (the same for every algorithm), so they are
  // drawn again here rather than carried through the journal.
  const int ranks = p.config.topology.gpu_count();
  const sim::DelayGenerator arrivals(p.config.delays, ranks, p.config.seed);
  std::vector<Seconds> lateness;
  for (const sim::IterationSummary& it : base.iterations)
    lateness.push_back(arrival_lateness(arrivals.iteration(it.iteration).arrival));
  std::string axis_fields;
  for (std::size_t k = 0; k < e.axes.size(); ++k)
    axis_fields.append(",").append(schema::csv_field(e.axes[k].labels[p.value[k]]));
  for (std::size_t a = 0; a < runs.size(); ++a) {
    const std::size_t run = point * e.algorithms.size() + a;
    // The options the generator got (run_config adds the topology's gpus_per_node and the
    // prediction's k); straggler-aware schedules are relabelled so that the predicted rank plays
    // the straggler, so `straggler` says nothing about the run and is left out.
    std::map<std::string, std::string> options = run_config(e, run).options.values();
    options.erase("straggler");
    const std::string options_text = schema::canonical_options(options);
    for (std::size_t i = 0; i < runs[a].iterations.size(); ++i) {
      const sim::IterationSummary& it = runs[a].iterations[i];
      const sim::IterationSummary& b = base.iterations[i];
      schema::ResultRow row;
      row.source = schema::ResultSource::simulated;
      row.algorithm = e.algorithms[a].name;
      row.ranks = runs[a].ranks;
      row.bytes = p.config.size;
      // How late the last rank arrived after all the others (the measured rows' injected
      // delay); the whole spread, last - first arrival, is the arrival_spread_s column.
      row.delay = lateness[i];
      if (row.delay.value > 0) row.straggler = it.last_rank;
      row.iteration = it.iteration;
      row.time = it.completion;
      row.after_last_arrival = it.after_last_arrival;
      schema::set_bandwidths(row);
      row.device = device;
      row.options = options_text;
      row.nccl_algo = runs[a].nccl_algo;  // the `nccl` algorithm: what NCCL's choice ran
      row.nccl_proto = runs[a].nccl_proto;
      row.transport = "sim";
      const double speedup =
          it.completion.value > 0 ? b.completion.value / it.completion.value : 1.0;
      const double speedup_after = it.after_last_arrival.value > 0
                                       ? b.after_last_arrival.value / it.after_last_arrival.value
                                       : 1.0;
      out << schema::format_result_row(row) << "," << run << "," << point << ","
          << schema::csv_field(e.algorithms[a].label) << axis_fields << "," << p.config.seed << ","
          << it.last_rank << "," << it.predicted_straggler << "," << schema::csv_number(speedup)
          << "," << schema::csv_number(speedup_after) << "," << (runs[a].shared_link ? 1 : 0) << ","
          << schema::csv_field(it.chosen.empty() ? runs[a].algorithm : it.chosen) << "\n";
    }
  }
}

nlohmann::json experiment_json(const Experiment& e,
                               const std::vector<std::vector<AlgorithmSummary>>& summaries,
                               const RunStatus& status) {
  nlohmann::json j;
  j["version"] = STRAGGLESIM_VERSION_STRING;
  j["experiment"] = {{"name", e.name}, {"description", e.description}, {"file", e.file}};
  j["status"] = {{"state", status.state},
                 {"message", status.message},
                 {"started_utc", status.started},
                 {"seconds", status.seconds},
                 {"jobs", status.jobs}};
  // The resolved settings every point shares; null where the points differ (swept), at the
  // deepest object level where they do.
  nlohmann::json settings = nlohmann::json::object();
  for (std::size_t p = 0; p < e.points.size(); ++p) {
    nlohmann::json c = simulation_config_json(e.points[p].config);
    nlohmann::json shared = {{"topology", c["topology"]},
                             {"network", c["network"]},
                             {"size_bytes", c["collective"]["size_bytes"]},
                             {"delays", c["delays"]},
                             {"prediction", c["prediction"]}};
    if (p == 0) {
      settings = std::move(shared);
      continue;
    }
    keep_common(settings, shared);
  }
  settings["topology_file"] =
      e.topology_file.empty() ? nlohmann::json(nullptr) : nlohmann::json(e.topology_file);
  j["settings"] = settings;
  nlohmann::json algs = nlohmann::json::array();
  for (const ExperimentAlgorithm& a : e.algorithms) {
    algs.push_back({{"label", a.label}, {"algorithm", a.name}, {"options", a.options.values()}});
    if (a.schedule) {
      algs.back()["schedule"] = {{"file", a.schedule_file},
                                 {"digest", a.schedule_digest},
                                 {"ranks", a.schedule->ranks},
                                 {"chunks", a.schedule->chunks},
                                 {"rounds", a.schedule->rounds.size()},
                                 {"transfers", a.schedule->transfer_count()}};
    }
  }
  j["algorithms"] = algs;
  j["baseline"] = e.algorithms[e.baseline].label;
  j["metric"] = metric_name(e.metric);
  j["speedup"] =
      "baseline time / time, same point and iteration; column speedup on completion_s (time_s), "
      "speedup_after_last_arrival on after_last_arrival_s";
  j["iterations"] = e.iterations;
  j["seed"] = std::to_string(e.seed);
  j["output"] = e.output;
  nlohmann::json axes = nlohmann::json::array();
  for (const SweepAxis& a : e.axes) {
    nlohmann::json numeric = nlohmann::json::array();
    for (const auto& v : a.numeric)
      numeric.push_back(v ? nlohmann::json(*v) : nlohmann::json(nullptr));
    axes.push_back({{"key", a.key},
                    {"column", "sweep." + a.key},
                    {"values", a.labels},
                    {"numeric", numeric},
                    {"unit", a.unit},
                    {"straggler_delay", a.straggler_delay}});
  }
  j["axes"] = axes;
  nlohmann::json points = nlohmann::json::array();
  for (std::size_t p = 0; p < e.points.size(); ++p) {
    nlohmann::json values = nlohmann::json::object();
    for (std::size_t k = 0; k < e.axes.size(); ++k)
      values[e.axes[k].key] = e.axes[k].labels[e.points[p].value[k]];
    nlohmann::json pj = {{"point", p},
                         {"values", values},
                         {"seed", std::to_string(e.points[p].config.seed)},
                         {"config", simulation_config_json(e.points[p].config)}};
    pj["config"].erase("collective");
    pj["config"]["size_bytes"] = e.points[p].config.size.value;
    if (e.points[p].workload) pj["config"]["workload"] = workload_json(*e.points[p].workload);
    if (p < summaries.size() && !summaries[p].empty()) {
      nlohmann::json sj = nlohmann::json::object();
      for (std::size_t a = 0; a < e.algorithms.size(); ++a) {
        const AlgorithmSummary& s = summaries[p][a];
        sj[e.algorithms[a].label] = {{"mean_completion_s", s.mean_completion},
                                     {"p90_completion_s", s.p90_completion},
                                     {"mean_after_last_arrival_s", s.mean_after_last_arrival},
                                     {"p90_after_last_arrival_s", s.p90_after_last_arrival},
                                     {"speedup", s.speedup},
                                     {"mean_iteration_speedup", s.mean_iteration_speedup},
                                     {"loss_fraction", s.loss_fraction},
                                     {"prediction_accuracy", s.prediction_accuracy},
                                     {"fallback_fraction", s.fallback_fraction},
                                     {"rounds", s.rounds},
                                     {"alphabeta_shared_link", s.shared_link.has_value()}};
        if (s.shared_link) sj[e.algorithms[a].label]["shared_link"] = s.shared_link->describe();
      }
      pj["summary"] = sj;
    }
    points.push_back(pj);
  }
  j["points"] = points;
  return j;
}

nlohmann::json workload_json(const Workload& w) {
  std::uint64_t params = 0;
  double forward = 0, backward = 0;
  for (const sim::TrainingLayer& l : w.layers) {
    params += l.params;
    forward += l.forward.value;
    backward += l.backward.value;
  }
  nlohmann::json j = {
      {"mode", w.mode.describe()},
      {"params", params},
      {"gradient_bytes_per_param", w.bytes_per_param},
      {"gradient_bytes", w.gradient_bytes()},
      {"bucket_cap_bytes", w.bucket_cap.value},
      {"buckets", sim::make_buckets(w.layers, w.bytes_per_param, w.bucket_cap).size()},
      {"optimizer_s", w.optimizer.value},
      {"samples_per_gpu", w.samples_per_gpu},
      {"forward_s", forward},
      {"backward_s", backward},
      {"layer_count", w.layers.size()}};
  // Every layer while the list is short (a model given by parameters and times is cut into
  // bucket-sized pieces, which the totals above determine).
  if (w.layers.size() <= 1000) {
    nlohmann::json layers = nlohmann::json::array();
    for (const sim::TrainingLayer& l : w.layers)
      layers.push_back({l.name, l.params, l.forward.value, l.backward.value});
    j["layers"] = layers;
  }
  return j;
}

std::string dry_run_listing(const Experiment& e) {
  std::ostringstream os;
  os << e.name << ": " << e.points.size() << " sweep point" << (e.points.size() == 1 ? "" : "s")
     << " x " << e.algorithms.size() << " algorithm" << (e.algorithms.size() == 1 ? "" : "s")
     << " = " << e.run_count() << " runs of " << e.iterations << " iteration"
     << (e.iterations == 1 ? "" : "s") << "; seed " << e.seed << "; output " << e.output << "\n";
  for (const SweepAxis& a : e.axes) {
    os << "  sweep." << a.key << ": ";
    for (std::size_t i = 0; i < a.labels.size(); ++i) os << (i ? ", " : "") << a.labels[i];
    os << "\n";
  }
  os << "  baseline " << e.algorithms[e.baseline].label << "; metric " << metric_name(e.metric)
     << "\n";
  for (std::size_t p = 0; p < e.points.size(); ++p) {
    const sim::SimulationConfig& c = e.points[p].config;
    os << "point " << p << " [" << e.point_label(p) << "]: " << c.topology.name << " ("
       << c.topology.gpu_count() << " ranks), ";
    if (const auto& w = e.points[p].workload) {
      os << "training job: " << format_bytes(c.size) << " of gradients in "
         << sim::make_buckets(w->layers, w->bytes_per_param, w->bucket_cap).size()
         << " buckets (cap " << format_bytes(w->bucket_cap) << "), " << w->mode.describe() << ", "
         << e.iterations << " steps, ";
    } else {
      os << format_bytes(c.size) << ", ";
    }
    os << "" << sim::to_string(c.network) << ", delays " << c.delays.describe() << ", prediction "
       << sim::to_string(c.policy) << ", seed " << c.seed << "\n";
    for (std::size_t a = 0; a < e.algorithms.size(); ++a) {
      os << "  run " << p * e.algorithms.size() + a << ": " << e.algorithms[a].label;
      if (e.algorithms[a].label != e.algorithms[a].name) os << " (" << e.algorithms[a].name << ")";
      for (const auto& [k, v] : e.algorithms[a].options.values()) os << " " << k << "=" << v;
      os << "\n";
    }
  }
  return os.str();
}

std::string one_channel_ring_note(const Experiment& e) {
  const auto ring = std::find_if(e.algorithms.begin(), e.algorithms.end(),
                                 [](const ExperimentAlgorithm& a) {
                                   return a.name == "ring" && !a.schedule;
                                 });
  if (ring == e.algorithms.end()) return "";
  int nodes = 1;
  for (const SweepPoint& p : e.points) {
    const topo::Topology& t = p.config.topology;
    if (t.gpus_per_node > 0) nodes = std::max(nodes, t.gpu_count() / t.gpus_per_node);
  }
  if (nodes < 2) return "";
  return "note: " + ring->label +
         " is the textbook ring (the StragglAR paper's baseline): one channel, one ring through "
         "all ranks that crosses each node boundary on one NIC; NCCL's Ring runs a channel per "
         "rail (nccl_ring), and nccl is what NCCL runs\n";
}

std::string uncalibrated_note(const Experiment& e) {
  std::vector<std::string> names;
  for (const SweepPoint& p : e.points) {
    const topo::Topology& t = p.config.topology;
    if (!t.calibrated && std::find(names.begin(), names.end(), t.name) == names.end())
      names.push_back(t.name);
  }
  if (names.empty()) return "";
  std::string list;
  for (std::size_t i = 0; i < names.size() && i < 4; ++i) list += (i ? ", " : "") + names[i];
  if (names.size() > 4) list += ", ...";
  return "note: uncalibrated: " + list +
         " (nominal or published figures that no measurement checks: no provenance: in the "
         "topology; docs/calibration.md)\n";
}

std::string summary_table(const Experiment& e,
                          const std::vector<std::vector<AlgorithmSummary>>& points) {
  const std::size_t nalg = e.algorithms.size();
  const std::string& base_label = e.algorithms[e.baseline].label;
  // Loss fractions only say something when iterations differ (random delays or stragglers
  // that move); with constant delays a loss is all or nothing and the speedup says it.
  bool random = false;
  for (const SweepPoint& p : e.points) {
    const sim::DelayModel& d = p.config.delays;
    random = random || (e.iterations > 1 &&
                        (d.base.kind_name() != "none" && d.base.kind_name() != "constant"));
    for (const sim::PersistentStraggler& s : d.stragglers) {
      random = random ||
               (e.iterations > 1 &&
                (s.persistence < 1 || s.probability < 1 ||
                 (s.extra.kind_name() != "none" && s.extra.kind_name() != "constant")));
    }
  }
  std::vector<std::string> header;
  for (const SweepAxis& a : e.axes) header.push_back(a.key);
  if (e.axes.empty()) header.push_back("point");
  for (const ExperimentAlgorithm& a : e.algorithms) header.push_back(a.label);
  header.push_back("winner");
  std::vector<std::vector<std::string>> rows;
  std::map<std::string, int> wins;
  for (std::size_t p = 0; p < points.size() && p < e.points.size(); ++p) {
    if (points[p].empty()) continue;
    std::vector<std::string> row;
    for (std::size_t k = 0; k < e.axes.size(); ++k)
      row.push_back(e.axes[k].labels[e.points[p].value[k]]);
    if (e.axes.empty()) row.push_back("-");
    std::size_t best = 0;
    auto mean_of = [&](std::size_t a) {
      return e.metric == Metric::completion ? points[p][a].mean_completion
                                            : points[p][a].mean_after_last_arrival;
    };
    for (std::size_t a = 0; a < nalg; ++a) {
      const AlgorithmSummary& s = points[p][a];
      std::string cell = format_time(Seconds{mean_of(a)});
      if (a != e.baseline) {
        cell += " (" + fixed(s.speedup, 3) + "x";
        if (random) cell += ", loses " + fixed(100 * s.loss_fraction, 1) + "%";
        cell += ")";
      }
      row.push_back(cell);
      if (mean_of(a) < mean_of(best)) best = a;
    }
    row.push_back(e.algorithms[best].label);
    ++wins[e.algorithms[best].label];
    rows.push_back(row);
  }
  std::vector<std::size_t> width(header.size(), 0);
  for (std::size_t c = 0; c < header.size(); ++c) {
    width[c] = header[c].size();
    for (const auto& r : rows) width[c] = std::max(width[c], r[c].size());
  }
  std::ostringstream os;
  const bool training = !e.points.empty() && e.points.front().workload.has_value();
  if (training) {
    os << e.name << ": mean "
       << (e.metric == Metric::completion ? "training step time"
                                          : "exposed communication per training step")
       << " per algorithm over " << e.iterations << " step" << (e.iterations == 1 ? "" : "s");
  } else {
    os << e.name << ": mean "
       << (e.metric == Metric::completion ? "completion time (first arrival to end)"
                                          : "time after the last arrival")
       << " per algorithm over " << e.iterations << " iteration" << (e.iterations == 1 ? "" : "s");
  }
  os << "; (Nx) = speedup vs " << base_label << " = " << base_label << " time / time";
  if (random) os << "; loses = share of iterations slower than " << base_label;
  os << "\n";
  auto line = [&](const std::vector<std::string>& r) {
    std::string s;
    for (std::size_t c = 0; c < r.size(); ++c) {
      s += r[c];
      if (c + 1 < r.size()) s += std::string(width[c] - r[c].size() + 2, ' ');
    }
    os << s << "\n";
  };
  line(header);
  for (const auto& r : rows) line(r);
  os << "wins:";
  for (const ExperimentAlgorithm& a : e.algorithms) {
    if (wins.count(a.label)) os << " " << a.label << " " << wins[a.label] << "/" << rows.size();
  }
  os << "\n" << one_channel_ring_note(e) << uncalibrated_note(e);

  // Where the straggler-aware algorithms start to win along a swept straggler delay.
  std::size_t delay_axis = e.axes.size();
  for (std::size_t k = 0; k < e.axes.size(); ++k) {
    if (e.axes[k].straggler_delay) delay_axis = k;
  }
  if (delay_axis == e.axes.size()) return os.str();
  std::map<std::vector<std::size_t>, std::vector<std::size_t>>
      groups;  // other axes' values -> points
  for (std::size_t p = 0; p < e.points.size() && p < points.size(); ++p) {
    if (points[p].empty()) continue;
    std::vector<std::size_t> key = e.points[p].value;
    key.erase(key.begin() + static_cast<std::ptrdiff_t>(delay_axis));
    groups[key].push_back(p);
  }
  const SweepAxis& da = e.axes[delay_axis];
  for (std::size_t a = 0; a < nalg; ++a) {
    if (a == e.baseline || points.empty() || points.front().empty() ||
        !points.front()[a].straggler_aware)
      continue;
    os << "where " << e.algorithms[a].label << " beats " << base_label << " along sweep." << da.key
       << ":\n";
    for (auto& [key, members] : groups) {
      std::sort(members.begin(), members.end(), [&](std::size_t x, std::size_t y) {
        return *da.numeric[e.points[x].value[delay_axis]] <
               *da.numeric[e.points[y].value[delay_axis]];
      });
      // The smallest delay from which it wins at every larger swept delay.
      std::optional<std::size_t> from;
      for (std::size_t i = members.size(); i-- > 0;) {
        if (points[members[i]][a].speedup < 1.0) break;
        from = members[i];
      }
      std::string where;
      const std::size_t first = members.front();
      for (std::size_t k = 0; k < e.axes.size(); ++k) {
        if (k != delay_axis)
          where += (where.empty() ? "" : " ") + e.axes[k].key + "=" +
                   e.axes[k].labels[e.points[first].value[k]];
      }
      os << "  " << (where.empty() ? std::string("all points") : where) << ": ";
      if (!from) {
        os << "never (up to " << da.labels[e.points[members.back()].value[delay_axis]] << ")";
      } else if (*from == members.front()) {
        os << "at every swept delay (from " << da.labels[e.points[*from].value[delay_axis]] << ")";
      } else {
        os << "from " << da.labels[e.points[*from].value[delay_axis]] << " on";
      }
      const sim::SimulationConfig& c = e.points[first].config;
      // One AllReduce's critical delay; a training step runs many (a workload) and has none.
      if (e.algorithms[a].name == "stragglar" && e.algorithms[e.baseline].name == "ring" &&
          e.algorithms[a].options.values().empty() && !e.points[first].workload) {
        if (const auto params = uniform_params(c)) {
          const int n = c.topology.gpu_count();
          const double d =
              alg::stragglar_critical_delay(n, static_cast<double>(c.size.value), *params);
          os << "; alpha-beta model critical delay "
             << (std::isfinite(d) ? format_time(Seconds{d}) : std::string("infinite (never wins)"));
        }
      }
      os << "\n";
    }
  }
  return os.str();
}

}  // namespace ssim::experiments
