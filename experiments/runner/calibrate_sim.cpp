#include "experiments/runner/calibrate_sim.hpp"

#include <fnmatch.h>

#include <algorithm>
#include <charconv>
#include <cmath>
#include <filesystem>
#include <limits>
#include <sstream>
#include <thread>
#include <tuple>

#include "calibration/minimize.hpp"
#include "common/error.hpp"
#include "common/random.hpp"
#include "common/stats.hpp"
#include "experiments/config/files.hpp"
#include "experiments/config/resource_check.hpp"
#include "sim/executor.hpp"
#include "topologies/generators.hpp"

namespace ssim::experiments {
namespace {

struct ParamSpec {
  const char* name;
  double lo, hi, start;  // bounds and start of a fit; start is also the default value
  bool fitted_by_default;
};

const std::vector<ParamSpec>& specs(const std::string& kind) {
  constexpr double inf = std::numeric_limits<double>::infinity();
  static const std::vector<ParamSpec> device = {{"memory_bandwidth", 1e9, 1e15, 4e12, true},
                                                {"copy_latency", 1e-9, 1e-2, 3e-6, true},
                                                {"apply_latency", 1e-9, 1e-2, 3e-6, true},
                                                {"launch_time", 1e-10, 1e-3, 3e-7, true},
                                                {"operation_bandwidth", 1e9, 1e15, inf, false},
                                                {"copy_factor", 1e-3, 1e3, 2, false},
                                                {"reduce_factor", 1e-3, 1e3, 3, false},
                                                {"apply_copy_factor", 1e-3, 1e3, 2, false},
                                                {"unaligned_factor", 1, 4, 1, true}};
  static const std::vector<ParamSpec> sw = {{"bandwidth", 1e6, 1e15, 1e11, true},
                                            {"latency", 1e-9, 1e-2, 5e-6, true},
                                            {"gamma", 1e-15, 1e-6, 0, false}};
  if (kind == "shared_device") return device;
  if (kind == "switch") return sw;
  throw InputError("--topology-kind " + kind +
                   ": calibration by simulation fits shared_device or switch");
}

double value_or_default(const std::map<std::string, double>& values, const ParamSpec& s) {
  const auto it = values.find(s.name);
  return it == values.end() ? s.start : it->second;
}

std::string number(double v) {
  char buf[40];
  std::snprintf(buf, sizeof buf, "%g", v);
  return buf;
}

// ---- holdout filters ---------------------------------------------------------------------

struct Filter {
  std::string text, column, op, value;
  double number = 0;  // the value of a numeric column (ranks, bytes, delay_s, straggler)
};

// COLUMN OP VALUE, its value read and checked here (InputError naming the flag and the range).
Filter parse_filter(const std::string& text) {
  static const char* ops[] = {"!=", "<=", ">=", "=", "<", ">"};
  for (const char* op : ops) {
    const std::size_t at = text.find(op);
    if (at == std::string::npos || at == 0) continue;
    Filter f{text, text.substr(0, at), op, text.substr(at + std::string(op).size())};
    static const char* columns[] = {"algorithm", "ranks", "bytes", "delay_s",
                                    "straggler", "dtype", "file"};
    if (std::find(std::begin(columns), std::end(columns), f.column) == std::end(columns)) {
      throw InputError("--holdout '" + text + "': unknown column '" + f.column +
                       "' (allowed: algorithm, ranks, bytes, delay_s, straggler, dtype, file)");
    }
    if (f.value.empty()) throw InputError("--holdout '" + text + "': no value after " + f.op);
    const std::string fail = "--holdout '" + text + "': ";
    if (f.column == "algorithm" || f.column == "dtype" || f.column == "file") {
      if (f.op != "=" && f.op != "!=")
        throw InputError(fail + f.column + " compares with = or != only");
      return f;
    }
    try {
      if (f.column == "bytes") {
        f.number = static_cast<double>(parse_bytes(f.value).value);
      } else if (f.column == "delay_s") {
        f.number = parse_time(f.value).value;
      } else {
        // ranks, straggler: a whole number (a rank count, or a rank; -1 matches rows without a
        // straggler).
        const long long lo = f.column == "ranks" ? 1 : -1;
        long long v = 0;
        const auto [end, ec] =
            std::from_chars(f.value.data(), f.value.data() + f.value.size(), v);
        if (ec != std::errc() || end != f.value.data() + f.value.size() || v < lo ||
            v > calib::kMaxRunRanks) {
          throw InputError("'" + f.value + "' is not a whole number in [" + std::to_string(lo) +
                           ", " + std::to_string(calib::kMaxRunRanks) + "]");
        }
        f.number = static_cast<double>(v);
      }
    } catch (const InputError& e) {
      throw InputError(fail + e.what());
    }
    return f;
  }
  throw InputError("--holdout '" + text +
                   "': expected a fraction in [0, 1) or COLUMN OP VALUE (OP: = != < <= > >=), "
                   "e.g. delay_s>0");
}

template <typename T>
bool compare(const T& a, const std::string& op, const T& b) {
  if (op == "=") return a == b;
  if (op == "!=") return a != b;
  if (op == "<") return a < b;
  if (op == "<=") return a <= b;
  if (op == ">") return a > b;
  return a >= b;
}

bool matches(const Filter& f, const std::string& file, const schema::ResultRow& r) {
  if (f.column == "algorithm" || f.column == "dtype" || f.column == "file") {
    const std::string v = f.column == "algorithm" ? r.algorithm
                          : f.column == "dtype"   ? r.dtype
                                                  : std::filesystem::path(file).filename().string();
    const bool eq = f.column == "file" ? fnmatch(f.value.c_str(), v.c_str(), 0) == 0 : v == f.value;
    return f.op == "=" ? eq : !eq;
  }
  const double have = f.column == "bytes"     ? static_cast<double>(r.bytes.value)
                      : f.column == "delay_s" ? r.delay.value
                      : f.column == "ranks"   ? static_cast<double>(r.ranks)
                      : r.straggler           ? static_cast<double>(*r.straggler)
                                              : -1.0;
  return compare(have, f.op, f.number);
}

// ---- simulation --------------------------------------------------------------------------

// algorithm, ranks, bytes, delay, straggler, options (canonical text)
using SimKey = std::tuple<std::string, int, std::uint64_t, double, int, std::string>;

struct SimCase {
  SimKey key;
  alg::Schedule schedule;
  std::vector<Seconds> arrival;
  bool delayed = false;
  double result = 0;
  double seconds = 0;  // the estimated time of one simulation (resource_check.hpp's constants)
};

alg::Schedule case_schedule(const std::string& algorithm, const alg::Options& base, int ranks,
                            int straggler) {
  const alg::AlgorithmInfo& info = alg::find_algorithm(algorithm);
  alg::Options o = base;
  if (straggler >= 0 && info.straggler_aware) o.set("straggler", std::to_string(straggler));
  return alg::generate(algorithm, ranks, o);
}

std::vector<Seconds> case_arrival(int ranks, double delay, int straggler) {
  std::vector<Seconds> a(static_cast<std::size_t>(ranks), Seconds{0});
  if (delay <= 0) return a;
  // The readers check a row's straggler against its rank count (calib::read_measured_runs).
  SSIM_CHECK(straggler >= 0 && straggler < ranks, "straggler " + std::to_string(straggler) +
                                                      " outside a run of " +
                                                      std::to_string(ranks) + " ranks");
  a[static_cast<std::size_t>(straggler)] = Seconds{delay};
  return a;
}

double run_case(const topo::Topology& topology, const alg::Schedule& schedule,
                std::span<const Seconds> arrival, std::uint64_t bytes, bool delayed,
                SecondsPerByte gamma) {
  sim::Executor ex(schedule, topology, sim::NetworkConfig{sim::NetworkKind::alphabeta, gamma},
                   Bytes{bytes});
  const sim::IterationResult r = ex.run(arrival);
  return delayed ? r.after_last_arrival.value : r.completion.value;
}

SecondsPerByte gamma_of(const std::string& kind, const std::map<std::string, double>& values) {
  if (kind != "switch") return SecondsPerByte{0};
  const auto it = values.find("gamma");
  return SecondsPerByte{it == values.end() ? 0.0 : it->second};
}

}  // namespace

std::vector<MeasuredFile> read_measured_files(const std::vector<std::string>& paths) {
  std::vector<MeasuredFile> files;
  for (const std::string& p : paths) {
    std::istringstream in(read_input(p));
    const std::string name = p == "-" ? "<stdin>" : p;
    files.push_back({name, calib::read_measured_runs(in, name)});
  }
  return files;
}

topo::Topology make_fitted_topology(const std::string& kind,
                                    const std::map<std::string, double>& values, int ranks) {
  const std::vector<ParamSpec>& s = specs(kind);
  auto v = [&](const char* name) {
    for (const ParamSpec& p : s) {
      if (std::string(p.name) == name) return value_or_default(values, p);
    }
    throw InputError(std::string("no parameter ") + name + " in a " + kind + " topology");
  };
  if (kind == "switch") {
    return topo::make_switch({.ranks = ranks,
                              .bandwidth = BytesPerSecond{v("bandwidth")},
                              .latency = Seconds{v("latency")}});
  }
  topo::SharedDevice d;
  d.memory_bandwidth = BytesPerSecond{v("memory_bandwidth")};
  d.copy_latency = Seconds{v("copy_latency")};
  d.apply_latency = Seconds{v("apply_latency")};
  d.launch_time = Seconds{v("launch_time")};
  d.operation_bandwidth = BytesPerSecond{v("operation_bandwidth")};
  d.copy_factor = v("copy_factor");
  d.reduce_factor = v("reduce_factor");
  d.apply_copy_factor = v("apply_copy_factor");
  d.unaligned_factor = v("unaligned_factor");
  return topo::make_shared_device({.ranks = ranks, .device = d});
}

double simulate_point(const topo::Topology& topology, const std::string& algorithm,
                      const alg::Options& options, std::uint64_t bytes, double delay,
                      int straggler) {
  const int n = topology.gpu_count();
  const alg::Schedule s = case_schedule(algorithm, options, n, delay > 0 ? straggler : -1);
  const std::vector<Seconds> a = case_arrival(n, delay, straggler);
  return run_case(topology, s, a, bytes, delay > 0, SecondsPerByte{0});
}

std::optional<double> crossover_delay(const topo::Topology& topology, const std::string& a,
                                      const std::string& b, std::uint64_t bytes, int straggler,
                                      double lo, double hi, double tolerance) {
  const int n = topology.gpu_count();
  auto diff = [&](double d) {
    const std::vector<Seconds> arr = case_arrival(n, d, straggler);
    const alg::Schedule sa = case_schedule(a, {}, n, straggler);
    const alg::Schedule sb = case_schedule(b, {}, n, straggler);
    return run_case(topology, sa, arr, bytes, true, SecondsPerByte{0}) -
           run_case(topology, sb, arr, bytes, true, SecondsPerByte{0});
  };
  double flo = diff(lo), fhi = diff(hi);
  if ((flo > 0) == (fhi > 0)) return std::nullopt;
  while (hi - lo > tolerance) {
    const double mid = 0.5 * (lo + hi);
    const double fm = diff(mid);
    if ((fm > 0) == (flo > 0)) {
      lo = mid;
      flo = fm;
    } else {
      hi = mid;
    }
  }
  (void)fhi;
  return 0.5 * (lo + hi);
}

double abs_error_quantile(const std::vector<ComparedRow>& rows, double q,
                          std::optional<bool> held_out, const std::string& algorithm) {
  std::vector<double> e;
  for (const ComparedRow& r : rows) {
    if (held_out && r.held_out != *held_out) continue;
    if (!algorithm.empty() && r.algorithm != algorithm) continue;
    e.push_back(std::fabs(r.error()));
  }
  return e.empty() ? std::numeric_limits<double>::quiet_NaN() : quantile(e, q);
}

SimFit fit_by_simulation(const std::vector<MeasuredFile>& files, const SimFitOptions& o) {
  const std::vector<ParamSpec>& spec = specs(o.kind);
  SimFit fit;
  fit.kind = o.kind;
  for (const ParamSpec& s : spec) fit.parameters.push_back(s.name);
  auto known = [&](const std::string& name) {
    if (std::find(fit.parameters.begin(), fit.parameters.end(), name) == fit.parameters.end()) {
      std::string list;
      for (const std::string& p : fit.parameters) list += (list.empty() ? "" : ", ") + p;
      throw InputError("unknown parameter '" + name + "' of a " + o.kind + " topology (" + list +
                       ")");
    }
  };
  for (const auto& [name, value] : o.fixed) {
    known(name);
    if (!std::isfinite(value) || value < 0) {
      throw InputError("parameter " + name + " = " + number(value) + ": must be finite and >= 0");
    }
  }
  for (const std::string& name : o.fit) {
    known(name);
    if (o.fixed.count(name)) throw InputError("parameter " + name + " is both fixed and fitted");
  }
  std::vector<calib::PositiveParameter> free;
  for (const ParamSpec& s : spec) {
    const bool wanted = (s.fitted_by_default && !o.fixed.count(s.name)) ||
                        std::find(o.fit.begin(), o.fit.end(), s.name) != o.fit.end();
    if (wanted) {
      const double start = std::isfinite(s.start) && s.start > 0 ? s.start : std::sqrt(s.lo * s.hi);
      free.push_back({s.name, s.lo, s.hi, std::clamp(start, s.lo, s.hi)});
      fit.fitted.push_back(s.name);
    } else {
      fit.values[s.name] = value_or_default(o.fixed, s);
    }
  }
  {
    // The fixed values as the kind reads them (e.g. a factor outside 0 or [0.001, 1000]):
    // refused here, not scored as a parameter set the objective cannot simulate.
    std::map<std::string, double> v = fit.values;
    for (const calib::PositiveParameter& p : free) v[p.name] = p.start;
    try {
      (void)make_fitted_topology(o.kind, v, 2);
    } catch (const InputError& e) {
      throw InputError(std::string("the fixed parameters do not make a topology: ") + e.what());
    }
  }
  if (!(o.holdout_fraction >= 0 && o.holdout_fraction < 1)) {
    throw InputError("--holdout " + number(o.holdout_fraction) + ": a fraction must be in [0, 1)");
  }
  std::vector<Filter> filters;
  for (const std::string& f : o.holdout_filters) filters.push_back(parse_filter(f));

  // Points: rows grouped by file and run; each simulated case once.
  struct Point {
    std::size_t sim = 0;
    std::vector<std::size_t> rows;  // into fit.rows
    double median = 0;
    bool held_out = false;
  };
  std::vector<Point> points;
  std::map<std::tuple<std::size_t, std::string, int, std::uint64_t, double, int, std::string,
                      std::string>,
           std::size_t>
      point_of;
  std::vector<SimCase> cases;
  std::map<SimKey, std::size_t> case_of;
  const MemoryBudget budget = o.max_memory > 0
                                  ? MemoryBudget::of(o.max_memory, "the fit's memory budget")
                                  : MemoryBudget::from_flag("");
  double kept_bytes = 0;
  std::map<std::string, std::vector<std::string>> skipped;  // reason -> "file:line"
  calib::StatedOptions stated;
  for (const auto& [algorithm, options] : o.algorithm_options) stated[algorithm] = options.values();
  for (std::size_t fi = 0; fi < files.size(); ++fi) {
    const MeasuredFile& file = files[fi];
    fit.sources.push_back(file.name);
    calib::RunOptionsResolver resolve(stated, file.name);
    for (const calib::MeasuredRun& run : file.runs) {
      const schema::ResultRow& r = run.row;
      const std::string where = file.name + ":" + std::to_string(run.line);
      if (r.source != schema::ResultSource::measured) {
        skipped["simulated rows"].push_back(where);
        continue;
      }
      const alg::AlgorithmInfo* info = nullptr;
      for (const alg::AlgorithmInfo& a : alg::algorithms()) {
        if (a.name == r.algorithm) info = &a;
      }
      if (info == nullptr) {
        skipped["algorithm '" + r.algorithm + "' has no schedule in the registry"].push_back(where);
        continue;
      }
      if (info->takes("gpus_per_node") && !r.options && !o.algorithm_options.count(info->name)) {
        skipped[info->name +
                " depends on its gpus_per_node option, which these rows do not record (give "
                "it with --algorithm-option " +
                info->name + ":gpus_per_node=G)"]
            .push_back(where);
        continue;
      }
      if (!info->supports_ranks(r.ranks)) {
        skipped[info->name + " does not support " + std::to_string(r.ranks) + " ranks"].push_back(
            where);
        continue;
      }
      const bool delayed = r.delay.value > 0;
      if (delayed && !r.straggler) {
        throw InputError(where +
                         ": column straggler: empty while delay_s > 0 (expected the rank that "
                         "arrives late)");
      }
      const double measured = delayed ? r.after_last_arrival.value : r.time.value;
      if (!(measured > 0)) {
        throw InputError(where + ": column " +
                         (delayed ? std::string("after_last_arrival_s") : std::string("time_s")) +
                         ": expected a time > 0 to compare with");
      }
      const int straggler = delayed ? *r.straggler : -1;
      // The row's own options column, else the options stated for its algorithm. A delayed
      // row's straggler is its straggler column's (case_schedule sets it).
      alg::Options options = resolve(run, *info);
      if (delayed) {
        std::map<std::string, std::string> v = options.values();
        v.erase("straggler");
        options = alg::Options(std::move(v));
      }
      const std::string options_text = schema::canonical_options(options.values());
      const SimKey key{info->name, r.ranks, r.bytes.value, r.delay.value, straggler, options_text};
      auto c = case_of.find(key);
      if (c == case_of.end()) {
        // Every distinct case keeps its schedule for the whole fit: checked before it is built.
        double transfers = 0;
        try {
          transfers = static_cast<double>(schedule_size(info->name, r.ranks, options).transfers);
          kept_bytes += transfers * (kScheduleBytesPerTransfer + kExecutorBytesPerTransfer);
        } catch (const InputError& e) {
          throw InputError(where + ": " + e.what());
        }
        budget.require(kept_bytes,
                       "the schedules of the fit's " + std::to_string(cases.size() + 1) +
                           " distinct simulations (up to " + where + ": " + info->name + " on " +
                           std::to_string(r.ranks) + " ranks)",
                       "fit fewer or smaller runs (--holdout does not help: held-out runs are "
                       "simulated too)");
        SimCase sc;
        sc.key = key;
        try {
          sc.schedule = case_schedule(info->name, options, r.ranks, straggler);
        } catch (const InputError& e) {
          throw InputError(where + ": " + e.what());
        }
        sc.arrival = case_arrival(r.ranks, r.delay.value, straggler);
        sc.delayed = delayed;
        sc.seconds = transfers * seconds_per_transfer(sim::NetworkKind::alphabeta,
                                                     o.kind == "shared_device", r.ranks) +
                     kSecondsPerIteration +
                     r.ranks * kSecondsPerRankIteration;
        c = case_of.emplace(key, cases.size()).first;
        cases.push_back(std::move(sc));
      }
      const auto pkey = std::make_tuple(fi, info->name, r.ranks, r.bytes.value, r.delay.value,
                                        straggler, r.dtype, options_text);
      auto p = point_of.find(pkey);
      if (p == point_of.end()) {
        Point pt;
        pt.sim = c->second;
        p = point_of.emplace(pkey, points.size()).first;
        points.push_back(pt);
      }
      ComparedRow row;
      row.file = file.name;
      row.line = run.line;
      row.algorithm = info->name;
      row.ranks = r.ranks;
      row.bytes = r.bytes.value;
      row.delay = r.delay.value;
      row.dtype = r.dtype;
      row.measured = measured;
      for (const Filter& f : filters) row.held_out = row.held_out || matches(f, file.name, r);
      points[p->second].rows.push_back(fit.rows.size());
      fit.rows.push_back(row);
    }
  }
  for (const auto& [reason, where] : skipped) {
    fit.notes.push_back("skipped " + std::to_string(where.size()) + " row" +
                        (where.size() == 1 ? "" : "s") + ": " + reason +
                        " (first: " + where.front() + ")");
  }
  if (fit.rows.empty()) throw InputError("no measured row can be simulated (see the notes)");
  // A point is held out when any of its rows is (filters see row columns shared by the point)
  // or the seeded fraction picks it.
  for (const auto& [key, index] : point_of) {
    Point& pt = points[index];
    const ComparedRow& first = fit.rows[pt.rows.front()];
    std::ostringstream id;
    id << first.file << ';' << first.algorithm << ';' << first.ranks << ';' << first.bytes << ';'
       << first.delay << ';' << std::get<5>(key) << ';' << first.dtype;
    if (!std::get<7>(key).empty()) id << ';' << std::get<7>(key);
    std::uint64_t h = 1469598103934665603ull;
    for (char ch : id.str()) h = (h ^ static_cast<unsigned char>(ch)) * 1099511628211ull;
    const double u = static_cast<double>(splitmix64(o.seed ^ h) >> 11) * 0x1.0p-53;
    pt.held_out = u < o.holdout_fraction;
    for (std::size_t r : pt.rows) pt.held_out = pt.held_out || fit.rows[r].held_out;
    for (std::size_t r : pt.rows) fit.rows[r].held_out = pt.held_out;
    std::vector<double> m;
    for (std::size_t r : pt.rows) m.push_back(fit.rows[r].measured);
    pt.median = quantile(m, 0.5);
    (pt.held_out ? fit.held_out_points : fit.fitted_points) += 1;
  }
  fit.simulations = cases.size();
  if (fit.fitted_points < free.size() + 1) {
    throw InputError("fewer measured points to fit (" + std::to_string(fit.fitted_points) +
                     ", rows grouped by run) than parameters plus one (" +
                     std::to_string(free.size()) + " fitted: a fit needs more points)");
  }
  // Only the cases of fitted points are simulated while fitting.
  std::vector<std::size_t> fit_cases;
  {
    std::vector<bool> used(cases.size(), false);
    for (const Point& pt : points) {
      if (!pt.held_out) used[pt.sim] = true;
    }
    for (std::size_t i = 0; i < cases.size(); ++i) {
      if (used[i]) fit_cases.push_back(i);
    }
  }
  const int threads = std::max(1, o.threads);
  // The time guard, before the fit starts: every evaluation simulates the fitted points' cases
  // (shared over the threads from 8 cases on), the end every case once.
  {
    const int evaluations = free.empty() ? 1 : o.max_evaluations;
    double per_evaluation = 0, once = 0;
    for (const std::size_t i : fit_cases) per_evaluation += cases[i].seconds;
    for (const SimCase& c : cases) once += c.seconds;
    const double share = fit_cases.size() < 8 ? 1.0 : std::min<double>(threads, fit_cases.size());
    const double estimate = (evaluations * per_evaluation + once) / share;
    std::ostringstream what;
    what << "the fit by simulation (up to " << evaluations << " evaluation"
         << (evaluations == 1 ? "" : "s") << " of " << fit_cases.size() << " distinct simulation"
         << (fit_cases.size() == 1 ? "" : "s") << ", " << threads << " thread"
         << (threads == 1 ? "" : "s") << ")";
    TimeBudget::from_flag(o.max_time)
        .require(estimate, what.str(),
                 "fit fewer or smaller runs, lower --max-evaluations or raise --fit-threads");
  }
  auto simulate = [&](const std::map<std::string, double>& values,
                      const std::vector<std::size_t>& which) {
    std::map<int, topo::Topology> topologies;
    for (std::size_t i : which) {
      const int n = std::get<1>(cases[i].key);
      if (!topologies.count(n)) topologies.emplace(n, make_fitted_topology(o.kind, values, n));
    }
    const SecondsPerByte gamma = gamma_of(o.kind, values);
    auto work = [&](std::size_t t) {
      for (std::size_t k = t; k < which.size(); k += static_cast<std::size_t>(threads)) {
        SimCase& c = cases[which[k]];
        c.result = run_case(topologies.at(std::get<1>(c.key)), c.schedule, c.arrival,
                            std::get<2>(c.key), c.delayed, gamma);
      }
    };
    if (threads == 1 || which.size() < 8) {
      for (std::size_t k = 0; k < which.size(); ++k) {
        SimCase& c = cases[which[k]];
        c.result = run_case(topologies.at(std::get<1>(c.key)), c.schedule, c.arrival,
                            std::get<2>(c.key), c.delayed, gamma);
      }
      return;
    }
    std::vector<std::thread> pool;
    for (int t = 1; t < threads; ++t) pool.emplace_back(work, static_cast<std::size_t>(t));
    work(0);
    for (std::thread& th : pool) th.join();
  };
  auto values_at = [&](std::span<const double> x) {
    std::map<std::string, double> v = fit.values;
    for (std::size_t i = 0; i < free.size(); ++i) v[free[i].name] = x[i];
    return v;
  };
  auto objective = [&](std::span<const double> x) {
    std::map<std::string, double> v = values_at(x);
    try {
      simulate(v, fit_cases);
    } catch (const InputError&) {
      return std::numeric_limits<double>::infinity();  // a parameter set the kind refuses
    }
    double sum = 0;
    std::size_t count = 0;
    for (const Point& pt : points) {
      if (pt.held_out) continue;
      const double e = (cases[pt.sim].result - pt.median) / pt.median;
      sum += e * e;
      ++count;
    }
    return std::sqrt(sum / static_cast<double>(count));
  };
  calib::MinimizeOptions mo;
  mo.seed = o.seed;
  mo.max_evaluations = o.max_evaluations;
  // A fit by simulation creeps along shallow valleys: restart until a restart gains less than
  // 1e-6 (relative) or the evaluations run out.
  mo.max_restarts = 100;
  mo.tolerance = 1e-6;
  if (free.empty()) {
    // Every parameter given: a prediction, no fit (compare_by_simulation).
    fit.objective = objective({});
    fit.evaluations = 1;
    fit.converged = std::isfinite(fit.objective);
  } else {
    const calib::MinimizeResult m = calib::minimize_positive(objective, free, mo);
    fit.values = values_at(m.x);
    fit.objective = m.value;
    fit.evaluations = m.evaluations;
    fit.converged = m.converged && std::isfinite(m.value);
  }
  std::vector<std::size_t> all(cases.size());
  for (std::size_t i = 0; i < all.size(); ++i) all[i] = i;
  simulate(fit.values, all);
  for (const Point& pt : points) {
    for (std::size_t r : pt.rows) fit.rows[r].simulated = cases[pt.sim].result;
  }
  return fit;
}

SimFit compare_by_simulation(const std::vector<MeasuredFile>& files, SimFitOptions options,
                             const std::map<std::string, double>& values) {
  for (const ParamSpec& s : specs(options.kind)) {
    auto v = values.find(s.name);
    const double value = v != values.end() ? v->second : s.start;
    // An infinite value is the kind's "no cap" default (operation_bandwidth), kept by leaving
    // the parameter out of `fixed`; fit_by_simulation refuses other non-finite values.
    if (std::isinf(value) && std::isinf(s.start)) {
      options.fixed.erase(s.name);
      continue;
    }
    options.fixed[s.name] = value;
  }
  options.fit.clear();
  return fit_by_simulation(files, options);
}

std::map<std::string, double> topology_parameters(const topo::Topology& topology) {
  if (!topology.shared_device) {
    throw InputError("topology '" + topology.name +
                     "': parameters are read from shared_device topologies only");
  }
  const topo::SharedDevice& d = *topology.shared_device;
  return {{"memory_bandwidth", d.memory_bandwidth.value},
          {"copy_latency", d.copy_latency.value},
          {"apply_latency", d.apply_latency.value},
          {"launch_time", d.launch_time.value},
          {"operation_bandwidth", d.operation_bandwidth.value},
          {"copy_factor", d.copy_factor},
          {"reduce_factor", d.reduce_factor},
          {"apply_copy_factor", d.apply_copy_factor},
          {"unaligned_factor", d.unaligned_factor}};
}

}  // namespace ssim::experiments
