// `stragglesim calibrate` (fit alpha, beta, gamma from measurements, write a calibrated
// topology) and `stragglesim validate` (simulate measured runs on a topology and compare).
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <iostream>
#include <map>
#include <set>
#include <sstream>
#include <tuple>

#include "calibration/calibration.hpp"
#include "common/error.hpp"
#include "common/stats.hpp"
#include "experiments/cli_commands.hpp"
#include "experiments/config.hpp"
#include "schema/result_csv.hpp"

namespace ssim::exp {
namespace {

// Per-row residual tables up to this many rows; quantiles beyond.
constexpr std::size_t kMaxRowsListed = 50;

std::string printf_text(const char* format, double v) {
  char buf[64];
  std::snprintf(buf, sizeof buf, format, v);
  return buf;
}

std::string percent(double fraction) { return printf_text("%+.2f%%", 100 * fraction); }
std::string abs_percent(double fraction) { return printf_text("%.2f%%", 100 * fraction); }

std::string line_list(const std::vector<int>& lines) {
  std::string s;
  const std::size_t shown = std::min<std::size_t>(lines.size(), 10);
  for (std::size_t i = 0; i < shown; ++i) s += (i ? ", " : "") + std::to_string(lines[i]);
  if (lines.size() > shown) s += ", ... (" + std::to_string(lines.size() - shown) + " more)";
  return s;
}

void print_skipped(std::ostream& os, const std::vector<calib::SkippedRows>& skipped) {
  for (const calib::SkippedRows& s : skipped) {
    os << "skipped " << s.lines.size() << " row" << (s.lines.size() == 1 ? "" : "s") << ": "
       << s.reason << " (line" << (s.lines.size() == 1 ? " " : "s ") << line_list(s.lines) << ")\n";
  }
}

void print_residuals(std::ostream& os, const calib::FitQuality& q) {
  os << "    R^2        " << printf_text("%.6f", q.r_squared) << "\n";
  os << "    |relative error|: median " << abs_percent(q.median_abs_relative_error) << ", max "
     << abs_percent(q.max_abs_relative_error) << "\n";
  if (q.rows.size() <= kMaxRowsListed) {
    // Collective runs name the run (algorithm and ranks); a sweep's rows are just sizes.
    const bool labels = !q.rows.front().label.empty();
    char buf[200];
    std::snprintf(buf, sizeof buf, "    %5s  %-*s%12s %12s %12s %9s\n", "line", labels ? 19 : 0,
                  labels ? "run" : "", "bytes", "measured", "fitted", "rel.err");
    os << buf;
    for (const calib::FitRow& r : q.rows) {
      std::snprintf(buf, sizeof buf, "    %5d  %-*s%12llu %12s %12s %9s\n", r.line, labels ? 19 : 0,
                    r.label.c_str(), static_cast<unsigned long long>(r.bytes.value),
                    format_time(r.measured).c_str(), format_time(r.fitted).c_str(),
                    percent(r.relative_error()).c_str());
      os << buf;
    }
    return;
  }
  std::vector<double> errors;
  for (const calib::FitRow& r : q.rows) errors.push_back(r.relative_error());
  os << "    relative error quantiles:";
  for (const auto& [label, p] : std::vector<std::pair<const char*, double>>{{"min", 0.0},
                                                                            {"p10", 0.1},
                                                                            {"p25", 0.25},
                                                                            {"p50", 0.5},
                                                                            {"p75", 0.75},
                                                                            {"p90", 0.9},
                                                                            {"max", 1.0}}) {
    os << " " << label << " " << percent(quantile(errors, p));
  }
  os << "\n";
}

std::string gamma_text(SecondsPerByte g) { return printf_text("%.6g ns/B", g.value * 1e9); }

// Share of the fitted time at the largest size that the bytes (beta) term explains. A flat
// sweep fits beta ~ 0, i.e. a bandwidth of 1e17 GB/s that no measurement supports.
double bytes_share(const calib::AlphaBetaFit& f) {
  const double bytes_term = f.beta.value * static_cast<double>(f.max_bytes.value);
  const double total = f.alpha.value + bytes_term;
  return total > 0 ? bytes_term / total : 0.0;
}
bool bandwidth_undetermined(const calib::AlphaBetaFit& f) { return bytes_share(f) < 1e-3; }

std::string fit_title(const calib::AlphaBetaFit& f, bool piecewise) {
  std::string s;
  if (!f.link_class.empty()) s += "link class " + f.link_class + ", ";
  if (piecewise) s += "sizes " + calib::describe(f.piece) + ", ";
  return s + std::to_string(f.quality.rows.size()) + " rows, " + format_bytes(f.min_bytes) +
         " .. " + format_bytes(f.max_bytes);
}

void print_calibration(std::ostream& os, const calib::Calibration& c, bool piecewise,
                       bool gamma_given) {
  os << "calibrate: " << c.source << " (" << calib::to_string(c.input) << "), " << c.rows_used
     << " rows used\n";
  if (c.input == calib::CalibrationInput::nccl_tests && !c.devices.empty()) {
    os << "nccl-tests: out-of-place times, " << c.ranks.front() << " ranks on " << c.devices.front()
       << "\n";
  }
  print_skipped(os, c.skipped);
  if (c.input == calib::CalibrationInput::sweep) {
    os << "fit: least squares on relative residuals (rows weighted by 1/measured), seconds = alpha "
          "+ beta * bytes\n";
  } else {
    os << "fit: least squares on relative residuals (rows weighted by 1/measured),\n"
          "     T = a(n) alpha + b(n, s) beta + c(n, s) gamma from each algorithm's closed form\n";
    if (c.assumed_gamma) {
      os << "     gamma assumed " << gamma_text(*c.assumed_gamma)
         << (gamma_given ? " (--gamma)" : " (default; --gamma or --fit-gamma to change)") << "\n";
    }
  }
  for (std::size_t i = 0; i < c.fits.size(); ++i) {
    const calib::AlphaBetaFit& f = c.fits[i];
    os << "\n[" << i + 1 << "] " << fit_title(f, piecewise) << "\n";
    os << "    alpha      " << printf_text("%.4f us", f.alpha.value * 1e6) << "\n";
    os << "    bandwidth  " << printf_text("%.4f GB/s", f.bandwidth().value / 1e9) << " = "
       << printf_text("%.4f GiB/s", f.bandwidth().value / (1024.0 * 1024 * 1024)) << "  (beta "
       << printf_text("%.6g s/B", f.beta.value) << ")\n";
    if (f.gamma) os << "    gamma      " << gamma_text(*f.gamma) << "\n";
    if (f.alpha.value < 0 || f.beta.value <= 0) {
      os << "    warning: not physical (alpha < 0 or beta <= 0): the rows do not follow one "
            "alpha-beta line here; "
         << (piecewise ? "move the --piecewise boundaries" : "try --piecewise") << "\n";
    } else if (bandwidth_undetermined(f)) {
      os << "    warning: the bandwidth is not determined: the times barely grow with the size "
            "(the "
            "bytes term is "
         << printf_text("%.2g%%", 100 * bytes_share(f)) << " of the time at "
         << format_bytes(f.max_bytes) << "); measure larger sizes\n";
    }
    print_residuals(os, f.quality);
  }
  if (c.reduce) {
    const calib::ReduceFit& g = *c.reduce;
    os << "\nreduce (kind=reduce): " << g.quality.rows.size() << " rows, "
       << format_bytes(g.min_bytes) << " .. " << format_bytes(g.max_bytes)
       << ", seconds = intercept + gamma * bytes\n";
    os << "    gamma      " << gamma_text(g.gamma) << "  ("
       << printf_text("%.4f GB/s", g.gamma.value > 0 ? 1e-9 / g.gamma.value : 0.0) << " reduced)\n";
    os << "    intercept  " << printf_text("%.4f us", g.intercept.value * 1e6) << "\n";
    // calibrate refuses gamma <= 0; a positive gamma from a narrow span is still mostly noise.
    if (g.max_bytes.value < 2 * g.min_bytes.value) {
      os << "    warning: gamma is poorly determined: the reduce rows span only "
         << format_bytes(g.min_bytes) << " .. " << format_bytes(g.max_bytes)
         << " (less than a factor of 2); measure sizes that differ by 2x or more\n";
    }
    print_residuals(os, g.quality);
  }
}

struct CalibrateArgs {
  std::string input;
  std::string link_class;
  std::string piecewise;
  int piece = 0;  // 1-based; 0: not given
  std::string kind = "switch";
  int ranks = 0;
  std::string output;
  std::string machine;
  std::string gamma;
  bool fit_gamma = false;
  std::string algorithm;
  int log_ranks = 0;
  SimCalibrateArgs sim;
};

// The fit that -o writes: the only one, or the one --link-class / --piece pick.
const calib::AlphaBetaFit& chosen_fit(const calib::Calibration& c, const CalibrateArgs& a) {
  if (c.fits.empty())
    throw InputError("-o needs an alpha-beta fit; " + c.source + " has only kind=reduce rows");
  std::set<std::string> classes;
  for (const calib::AlphaBetaFit& f : c.fits) classes.insert(f.link_class);
  if (classes.size() > 1) {
    std::string list;
    for (const std::string& cls : classes) list += (list.empty() ? "" : ", ") + cls;
    throw InputError("-o writes one fit, and " + c.source + " has link classes " + list +
                     ": choose one with --link-class");
  }
  if (a.piece > 0) {
    if (a.piece > static_cast<int>(c.fits.size())) {
      throw InputError("--piece " + std::to_string(a.piece) + ": there " +
                       (c.fits.size() == 1 ? "is" : "are") + " only " +
                       std::to_string(c.fits.size()) + " fit" + (c.fits.size() == 1 ? "" : "s"));
    }
    return c.fits[static_cast<std::size_t>(a.piece - 1)];
  }
  if (c.fits.size() > 1) {
    throw InputError("-o writes one fit, and --piecewise gave " + std::to_string(c.fits.size()) +
                     ": choose the one to write with --piece 1.." + std::to_string(c.fits.size()));
  }
  return c.fits.front();
}

void write_topology(const calib::Calibration& c, const CalibrateArgs& a) {
  const calib::AlphaBetaFit& f = chosen_fit(c, a);
  if (f.alpha.value >= 0 && f.beta.value > 0 && bandwidth_undetermined(f)) {
    throw InputError("the fit written by -o does not determine a bandwidth (" +
                     printf_text("%.3g GB/s", f.bandwidth().value / 1e9) + ", R^2 " +
                     printf_text("%.2f", f.quality.r_squared) + "): the bytes term is " +
                     printf_text("%.2g%%", 100 * bytes_share(f)) +
                     " of the time at the largest size, " + format_bytes(f.max_bytes) +
                     "; measure sizes where the transfer time grows");
  }
  CalibratedTopology t;
  t.kind = a.kind;
  t.ranks = a.ranks;
  if (t.ranks == 0) {
    if (c.ranks.size() != 1) {
      throw InputError(
          "-o needs --ranks N (the calibrated topology's GPU count)" +
          std::string(c.ranks.size() > 1 ? ": the runs have several rank counts" : ""));
    }
    t.ranks = c.ranks.front();
  }
  CalibrationProvenance& p = t.provenance;
  p.machine = a.machine;
  if (p.machine.empty()) {
    if (c.devices.size() != 1 || c.devices.front().empty()) {
      throw InputError(
          "-o needs --machine TEXT: the calibrated file records where the measurements ran");
    }
    p.machine = c.devices.front();
  }
  if (f.alpha.value < 0 || f.beta.value <= 0) {
    throw InputError(
        "the fit written by -o is not physical (alpha " +
        format_time(Seconds{std::fabs(f.alpha.value)}) + (f.alpha.value < 0 ? " negative" : "") +
        ", beta " + printf_text("%.6g s/B", f.beta.value) +
        (a.piecewise.empty()
             ? std::string("): use --piecewise to fit each regime on its own")
             : std::string("): move the --piecewise boundaries or choose another --piece")));
  }
  t.bandwidth = f.bandwidth();
  t.latency = f.alpha;
  t.name = std::filesystem::path(a.output).stem().string();
  t.description = "alpha-beta model calibrated from " + c.source + " (" +
                  std::string(calib::to_string(c.input)) + ")";
  p.date = schema::utc_timestamp_now();
  p.source = c.source;
  p.input = std::string(calib::to_string(c.input));
  p.link_class = f.link_class;
  p.size_range = calib::describe(f.piece);
  p.min_bytes = f.min_bytes;
  p.max_bytes = f.max_bytes;
  p.rows = f.quality.rows.size();
  p.residual = f.quality.median_abs_relative_error;
  p.r_squared = f.quality.r_squared;
  if (c.input == calib::CalibrationInput::sweep) {
    p.fit =
        "least squares on relative residuals (Eigen column-pivoting QR), seconds = alpha + beta * "
        "bytes";
    if (c.reduce) {
      p.gamma = c.reduce->gamma;
      p.gamma_source = "kind=reduce rows (" + std::to_string(c.reduce->quality.rows.size()) +
                       ", intercept " + format_time(c.reduce->intercept) +
                       ", median |relative error| " +
                       abs_percent(c.reduce->quality.median_abs_relative_error) + ")";
    } else if (!a.gamma.empty()) {
      p.gamma = parse_seconds_per_byte(a.gamma);
      p.gamma_source = "--gamma";
    }
  } else {
    p.fit =
        "least squares on relative residuals (Eigen column-pivoting QR) over collective runs, "
        "T = a(n) alpha + b(n, s) beta + c(n, s) gamma from the registry's closed forms";
    if (f.gamma) {
      p.gamma = f.gamma;
      p.gamma_source = "fitted with alpha and beta";
    } else {
      p.gamma = c.assumed_gamma;
      p.gamma_source =
          a.gamma.empty() ? "assumed 0 in the fit (no --gamma)" : "assumed in the fit (--gamma)";
    }
  }
  write_output(a.output, calibrated_topology_yaml(t));
  std::cout << "\nwrote " << a.output << ": " << t.kind << ", " << t.ranks << " ranks, latency "
            << format_time(t.latency) << ", bandwidth " << format_bandwidth(t.bandwidth)
            << " (fit [" << (&f - c.fits.data()) + 1 << "])\n";
}

void run_calibrate(const CalibrateArgs& a) {
  if (a.kind == "shared_device" || a.sim.by_simulation) {
    run_calibrate_by_simulation(a.input, a.kind, a.ranks, a.machine, a.output, a.sim);
    return;
  }
  if (!a.sim.more_inputs.empty()) {
    throw InputError("several measurement files: only calibration by simulation (--topology-kind "
                     "shared_device or --by-simulation) reads more than one");
  }
  calib::CalibrationOptions o;
  if (!a.piecewise.empty()) {
    try {
      o.piecewise = calib::parse_size_list(a.piecewise);
    } catch (const InputError& e) {
      throw InputError(std::string("--piecewise: ") + e.what());
    }
  }
  if (!a.link_class.empty()) o.link_class = a.link_class;
  if (!a.gamma.empty()) {
    if (a.fit_gamma) throw InputError("--gamma and --fit-gamma exclude each other");
    o.gamma = parse_seconds_per_byte(a.gamma);
  }
  o.fit_gamma = a.fit_gamma;
  if (!a.algorithm.empty()) o.algorithm = a.algorithm;
  if (a.log_ranks > 0) o.ranks = a.log_ranks;
  const std::string text = read_input(a.input);
  std::istringstream in(text);
  const calib::Calibration c = calib::calibrate(in, a.input == "-" ? "<stdin>" : a.input, o);
  if (o.link_class && c.input != calib::CalibrationInput::sweep) {
    throw InputError(
        "--link-class " + *o.link_class + ": " + c.source +
        " holds collective runs, which have no link classes (--link-class selects rows of a "
        "point-to-point sweep)");
  }
  print_calibration(std::cout, c, !o.piecewise.empty(), !a.gamma.empty());
  if (!a.output.empty()) write_topology(c, a);
}

// ---- validate ------------------------------------------------------------------------------

struct ValidateArgs {
  std::string input;
  std::string topology;
  std::string network = "alphabeta";
  std::string gamma;
  std::string output;
};

const alg::AlgorithmInfo* registry_algorithm(const std::string& name) {
  for (const alg::AlgorithmInfo& a : alg::algorithms()) {
    if (a.name == name) return &a;
  }
  return nullptr;
}

void run_validate(const ValidateArgs& a) {
  const ConfigReader reader(a.topology);
  const topo::Topology topology = load_topology(reader.root(), reader.directory());
  std::string gamma_from = "--gamma";
  SecondsPerByte gamma{0.0};
  if (!a.gamma.empty()) {
    gamma = parse_seconds_per_byte(a.gamma);
  } else if (const auto recorded = load_calibrated_gamma(reader.root())) {
    gamma = *recorded;
    gamma_from = "the topology's provenance";
  } else {
    gamma_from = "default";
  }
  const sim::NetworkKind network = sim::parse_network_kind(a.network);
  const int gpus = topology.gpu_count();

  const std::string text = read_input(a.input);
  std::istringstream in(text);
  const std::string name = a.input == "-" ? "<stdin>" : a.input;
  const std::vector<calib::MeasuredRun> runs = calib::read_measured_runs(in, name);

  std::cout << "validate: " << name << " against " << topology.name << " (" << a.topology
            << "): " << gpus << " GPUs, " << sim::to_string(network) << " model, gamma "
            << gamma_text(gamma) << " (" << gamma_from << ")\n";
  // Measured runs repeat (algorithm, size, delay) over iterations; the simulation is
  // deterministic, so each distinct run is simulated once.
  using Key = std::tuple<std::string, std::uint64_t, double, int>;
  std::map<Key, sim::IterationSummary> simulated;
  std::vector<calib::SkippedRows> skipped;
  auto skip = [&](const std::string& reason, int line) {
    for (calib::SkippedRows& s : skipped) {
      if (s.reason == reason) {
        s.lines.push_back(line);
        return;
      }
    }
    skipped.push_back({reason, {line}});
  };
  std::vector<schema::ResultRow> out_rows;
  std::vector<double> errors;
  std::vector<int> error_lines;
  std::ostringstream table;
  char buf[220];
  std::snprintf(buf, sizeof buf, "%5s  %-10s %5s %10s %10s %12s %12s %9s\n", "line", "algorithm",
                "ranks", "bytes", "delay", "measured", "simulated", "rel.err");
  table << buf;
  const std::string device =
      "stragglesim " + std::string(sim::to_string(network)) + " on " + topology.name;
  const std::string now = schema::utc_timestamp_now();
  for (const calib::MeasuredRun& run : runs) {
    const schema::ResultRow& r = run.row;
    if (r.source != schema::ResultSource::measured) {
      skip("simulated rows", run.line);
      continue;
    }
    const alg::AlgorithmInfo* info = registry_algorithm(r.algorithm);
    if (info == nullptr) {
      skip("algorithm '" + r.algorithm + "' has no schedule in the registry", run.line);
      continue;
    }
    if (r.ranks != gpus) {
      skip(std::to_string(r.ranks) + " ranks (the topology has " + std::to_string(gpus) + " GPUs)",
           run.line);
      continue;
    }
    if (!info->supports_ranks(r.ranks)) {
      skip(info->name + " does not support " + std::to_string(r.ranks) + " ranks", run.line);
      continue;
    }
    if (r.delay.value > 0 && !r.straggler) {
      throw InputError(
          name + ":" + std::to_string(run.line) +
          ": column straggler: empty while delay_s > 0 (expected the rank that arrives late)");
    }
    if (r.after_last_arrival.value <= 0) {
      throw InputError(
          name + ":" + std::to_string(run.line) +
          ": column after_last_arrival_s: bad value '0' (expected a time > 0 to compare with)");
    }
    const Key key{info->name, r.bytes.value, r.delay.value, r.straggler.value_or(-1)};
    auto it = simulated.find(key);
    if (it == simulated.end()) {
      sim::SimulationConfig c;
      c.topology = topology;
      c.network = network;
      c.gamma = gamma;
      c.algorithm = info->name;
      c.size = r.bytes;
      // The straggler-aware schedule is built for the measured straggler, as the GPU run was.
      c.policy = sim::StragglerPolicy::fixed;
      if (r.straggler && info->straggler_aware) {
        c.options.set("straggler", std::to_string(*r.straggler));
        c.straggler = *r.straggler;
      }
      if (r.delay.value > 0) {
        c.delays.stragglers.push_back({.rank = *r.straggler,
                                       .extra = sim::Distribution::constant(r.delay),
                                       .persistence = 1.0});
      }
      try {
        it = simulated.emplace(key, sim::run_simulation(c).iterations.front()).first;
      } catch (const InputError& e) {
        throw InputError(name + ":" + std::to_string(run.line) + ": " + e.what());
      }
    }
    const sim::IterationSummary& s = it->second;
    const double error =
        (s.after_last_arrival.value - r.after_last_arrival.value) / r.after_last_arrival.value;
    errors.push_back(error);
    error_lines.push_back(run.line);
    std::snprintf(buf, sizeof buf, "%5d  %-10s %5d %10s %10s %12s %12s %9s\n", run.line,
                  r.algorithm.c_str(), r.ranks, format_bytes(r.bytes).c_str(),
                  format_time(r.delay).c_str(), format_time(r.after_last_arrival).c_str(),
                  format_time(s.after_last_arrival).c_str(), percent(error).c_str());
    table << buf;
    schema::ResultRow sim_row = r;
    sim_row.source = schema::ResultSource::simulated;
    sim_row.time = s.completion;
    sim_row.after_last_arrival = s.after_last_arrival;
    sim_row.wrong.reset();
    sim_row.device = device;
    sim_row.timestamp = now;
    schema::set_bandwidths(sim_row);
    out_rows.push_back(std::move(sim_row));
  }
  if (errors.empty()) {
    std::string why;
    for (const calib::SkippedRows& s : skipped) why += (why.empty() ? "" : "; ") + s.reason;
    throw InputError(name + ": no measured row can be compared with " + a.topology + " (" +
                     (why.empty() ? "no rows" : why) + ")");
  }
  std::cout << "times after the last arrival (time_s when nobody is delayed)\n" << table.str();
  std::cout << "compared " << errors.size() << " row" << (errors.size() == 1 ? "" : "s")
            << ", simulated " << simulated.size() << " distinct run"
            << (simulated.size() == 1 ? "" : "s") << "\n";
  print_skipped(std::cout, skipped);
  std::vector<double> abs_errors;
  std::size_t worst = 0;
  for (std::size_t i = 0; i < errors.size(); ++i) {
    abs_errors.push_back(std::fabs(errors[i]));
    if (abs_errors[i] > abs_errors[worst]) worst = i;
  }
  std::cout << "relative error (simulated - measured) / measured: median |.| "
            << abs_percent(quantile(abs_errors, 0.5)) << ", max |.| "
            << abs_percent(abs_errors[worst]) << " (line " << error_lines[worst] << ")\n";
  if (!a.output.empty()) {
    std::ostringstream csv;
    schema::ResultCsvWriter writer(csv);
    for (const schema::ResultRow& row : out_rows) writer.write(row);
    write_output(a.output, csv.str());
    std::cout << "wrote " << a.output << ": " << out_rows.size() << " simulated rows\n";
  }
}

}  // namespace

void add_calibrate_commands(CLI::App& app) {
  auto c = std::make_shared<CalibrateArgs>();
  CLI::App* cal = app.add_subcommand(
      "calibrate",
      "Fit alpha, beta (and gamma) by least squares from a p2p sweep or measured collective runs");
  cal->add_option("measurements", c->input,
                  "CSV: bytes,seconds[,link_class][,kind] sweep, a result CSV of measured runs, "
                  "or nccl-tests' all_reduce_perf output (its text log or -J JSON) ('-': stdin)")
      ->required();
  cal->add_option("--algorithm", c->algorithm,
                  "nccl-tests logs: the closed form to fit NCCL's AllReduce with (ring, tree, "
                  "rhd, ...; default ring)");
  cal->add_option("--log-ranks", c->log_ranks,
                  "nccl-tests logs without '#  Rank' device lines: how many ranks ran")
      ->check(CLI::Range(2, 65536));
  cal->add_option("--link-class", c->link_class,
                  "Fit only this link class (sweeps with a link_class column)");
  cal->add_option("--piecewise", c->piecewise, "Size boundaries B1,B2,...: one fit per size range");
  cal->add_option("--piece", c->piece,
                  "With --piecewise and -o: the fit to write (1-based, as printed)")
      ->check(positive_number());
  cal->add_option("--topology-kind", c->kind,
                  "Topology written by -o (default switch); shared_device fits by simulation")
      ->check(CLI::IsMember({"switch", "fully_connected", "ring", "shared_device"}));
  cal->add_option("-r,--ranks", c->ranks,
                  "GPU count of the written topology (default: the runs' rank count)")
      ->check(CLI::Range(2, 65536));
  cal->add_option("-o,--output", c->output, "Write the calibrated topology YAML here");
  cal->add_option("--machine", c->machine,
                  "Where the measurements ran, for the provenance (default: device column)");
  cal->add_option("--gamma", c->gamma,
                  "Collective runs: known reduce cost, e.g. 0.05ns/B (default 0)");
  cal->add_flag("--fit-gamma", c->fit_gamma,
                "Collective runs: fit gamma too (needs e.g. direct or tree runs)");
  add_simulation_calibrate_options(*cal, c->sim);
  cal->callback([c] { run_calibrate(*c); });

  auto v = std::make_shared<ValidateArgs>();
  CLI::App* val =
      app.add_subcommand("validate", "Simulate measured runs on a topology and compare the times");
  val->add_option("measured", v->input, "Result CSV of measured runs ('-': stdin)")->required();
  val->add_option("--topology", v->topology, "Topology YAML (e.g. written by calibrate -o)")
      ->required();
  val->add_option("--network", v->network, "Network model (default alphabeta)")
      ->check(CLI::IsMember({"alphabeta", "flow"}));
  val->add_option("--gamma", v->gamma,
                  "Reduce cost (default: the topology's provenance.gamma, else 0)");
  val->add_option("-o,--output", v->output,
                  "Write the simulated rows as a result CSV (source=simulated)");
  val->callback([v] { run_validate(*v); });
}

}  // namespace ssim::exp
