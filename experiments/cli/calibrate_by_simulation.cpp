// `stragglesim calibrate RUNS.csv... --topology-kind shared_device` (or --by-simulation): the
// fit by simulation of experiments/runner/calibrate_sim.hpp, its report, and the topology file.
#include "experiments/runner/calibrate_sim.hpp"

#include <cmath>
#include <cstdio>
#include <filesystem>
#include <iostream>
#include <set>
#include <sstream>

#include "common/error.hpp"
#include "experiments/cli/commands.hpp"
#include "experiments/config/config.hpp"
#include "schema/result_csv.hpp"

namespace ssim::experiments {
namespace {

std::string pct(double v) { return std::isnan(v) ? std::string("-") : printf_text("%.1f%%", 100 * v); }

bool is_bandwidth(const std::string& p) { return p.find("bandwidth") != std::string::npos; }
bool is_time(const std::string& p) {
  return p.find("latency") != std::string::npos || p == "launch_time";
}

// A parameter value as the topology file writes it (6 significant digits and a unit).
std::string file_value(const std::string& p, double v) {
  if (is_bandwidth(p)) return printf_text("%.6g", v / 1e9) + "GB/s";
  if (is_time(p)) return printf_text("%.6g", v * 1e6) + "us";
  if (p == "gamma") return printf_text("%.6g", v * 1e9) + "ns/B";
  return printf_text("%.6g", v);
}

std::string shown_value(const std::string& p, double v) {
  if (is_bandwidth(p)) {
    return std::isfinite(v) ? printf_text("%.4g GB/s", v / 1e9) : std::string("no cap");
  }
  if (is_time(p)) return printf_text("%.4g us", v * 1e6);
  if (p == "gamma") return printf_text("%.4g ns/B", v * 1e9);
  return printf_text("%.4g", v);
}

double parse_parameter(const std::string& item, const std::string& key, const std::string& text) {
  try {
    if (is_bandwidth(key)) return parse_bandwidth(text).value;
    if (is_time(key)) return parse_time(text).value;
    if (key == "gamma") return parse_seconds_per_byte(text).value;
    std::size_t used = 0;
    const double v = std::stod(text, &used);
    if (used != text.size()) throw std::invalid_argument(text);
    return v;
  } catch (const InputError& e) {
    throw InputError("--fix " + item + ": " + e.what());
  } catch (const std::exception&) {
    throw InputError("--fix " + item + ": '" + text + "' is not a number");
  }
}

std::pair<std::string, std::string> split_at(const std::string& item, char sep,
                                             const std::string& flag, const std::string& form) {
  const std::size_t at = item.find(sep);
  if (at == std::string::npos || at == 0 || at + 1 == item.size()) {
    throw InputError(flag + " '" + item + "': expected " + form);
  }
  return {item.substr(0, at), item.substr(at + 1)};
}

void print_table(const SimFit& f) {
  std::set<std::string> algorithms;
  for (const ComparedRow& r : f.rows) algorithms.insert(r.algorithm);
  char buf[200];
  std::snprintf(buf, sizeof buf, "  %-17s %6s %8s %8s %8s | %6s %8s %8s %8s\n", "", "fitted",
                "median", "p95", "max", "held", "median", "p95", "max");
  std::cout << buf;
  auto line = [&](const std::string& label, const std::string& alg) {
    std::size_t nf = 0, nh = 0;
    for (const ComparedRow& r : f.rows) {
      if (!alg.empty() && r.algorithm != alg) continue;
      (r.held_out ? nh : nf) += 1;
    }
    std::snprintf(buf, sizeof buf, "  %-17s %6zu %8s %8s %8s | %6zu %8s %8s %8s\n", label.c_str(),
                  nf, pct(abs_error_quantile(f.rows, 0.5, false, alg)).c_str(),
                  pct(abs_error_quantile(f.rows, 0.95, false, alg)).c_str(),
                  pct(abs_error_quantile(f.rows, 1.0, false, alg)).c_str(), nh,
                  pct(abs_error_quantile(f.rows, 0.5, true, alg)).c_str(),
                  pct(abs_error_quantile(f.rows, 0.95, true, alg)).c_str(),
                  pct(abs_error_quantile(f.rows, 1.0, true, alg)).c_str());
    std::cout << buf;
  };
  line("all rows", "");
  for (const std::string& a : algorithms) line(a, a);
}

}  // namespace

void add_simulation_calibrate_options(CLI::App& cal, SimCalibrateArgs& a) {
  cal.add_option("more", a.more_inputs,
                 "Calibration by simulation: further result CSVs, fitted together with the first");
  cal.add_flag("--by-simulation", a.by_simulation,
               "Fit the topology kind by simulating the measured runs (implied by "
               "--topology-kind shared_device)");
  auto& only = a.only_by_simulation;
  only.push_back(cal.add_option("--fix", a.fix,
                                "By simulation: hold a parameter at a value, e.g. copy_factor=0 "
                                "or memory_bandwidth=4.13TB/s (repeatable)"));
  only.push_back(cal.add_option("--fit", a.fit,
                                "By simulation: fit a parameter beyond the kind's default set, "
                                "e.g. operation_bandwidth (repeatable)"));
  only.push_back(cal.add_option(
      "--holdout", a.holdout,
      "By simulation: rows left out of the fit and reported apart: a fraction of the runs "
      "(seeded), or COLUMN OP VALUE such as delay_s>0 or 'file=sweep-*' (repeatable; a row "
      "matching any is held out)"));
  only.push_back(
      add_seed_option(cal, a.seed, "By simulation: seed of the holdout fraction and the restarts"));
  only.push_back(cal.add_option(
      "--algorithm-option", a.algorithm_options,
      "By simulation: ALGO:KEY=VALUE, an option the measured runs of ALGO ran with, for files "
      "without an options column (e.g. hierarchical:gpus_per_node=4; repeatable)"));
  only.push_back(
      cal.add_option("--fit-threads", a.threads, "By simulation: threads simulating the runs")
          ->check(CLI::Range(1, 256)));
  only.push_back(
      cal.add_option("--max-evaluations", a.max_evaluations,
                     "By simulation: evaluations of the fit before it counts as not converged")
          ->check(CLI::Range(1, 10000000)));
  add_max_time_option(cal, a.max_time);
  only.push_back(cal.get_option("--max-time"));
  only.push_back(cal.add_option(
      "--rows-output", a.rows_output,
      "By simulation: write every compared row (measured, simulated, error, held out) as CSV"));
}

void run_calibrate_by_simulation(const std::string& input, const std::string& kind_arg,
                                 int ranks_arg, const std::string& machine_arg,
                                 const std::string& output, const SimCalibrateArgs& a) {
  SimFitOptions o;
  o.kind = kind_arg;
  o.seed = a.seed;
  o.threads = a.threads;
  o.max_evaluations = a.max_evaluations;
  o.max_time = a.max_time;
  o.fit = a.fit;
  for (const std::string& item : a.fix) {
    const auto [key, text] = split_at(item, '=', "--fix", "PARAMETER=VALUE");
    if (o.fixed.count(key)) throw InputError("--fix " + key + " given twice");
    o.fixed[key] = parse_parameter(item, key, text);
  }
  for (const std::string& h : a.holdout) {
    char* end = nullptr;
    const double v = std::strtod(h.c_str(), &end);
    if (!h.empty() && end == h.c_str() + h.size()) {
      if (o.holdout_fraction > 0) throw InputError("--holdout: a fraction given twice");
      if (!(v > 0 && v < 1)) throw InputError("--holdout " + h + ": a fraction must be in (0, 1)");
      o.holdout_fraction = v;
    } else {
      o.holdout_filters.push_back(h);
    }
  }
  // Read as calibrate's -O reads them (calib::add_stated_option): an unknown algorithm or
  // option, `straggler` (the rows' straggler column gives it) or a key given twice is refused.
  calib::StatedOptions stated;
  for (const std::string& item : a.algorithm_options)
    calib::add_stated_option(stated, item, "--algorithm-option");
  for (const std::string& item : a.stated_options) calib::add_stated_option(stated, item, "-O");
  for (const auto& [algorithm, values] : stated) o.algorithm_options[algorithm] = alg::Options(values);
  std::vector<std::string> paths{input};
  paths.insert(paths.end(), a.more_inputs.begin(), a.more_inputs.end());
  const SimFit f = fit_by_simulation(read_measured_files(paths), o);

  std::set<int> ranks;
  std::set<std::string> devices;
  for (const ComparedRow& r : f.rows) ranks.insert(r.ranks);
  std::cout << "calibrate: by simulation, topology kind " << f.kind << ", " << paths.size()
            << " file" << (paths.size() == 1 ? "" : "s") << ", " << f.rows.size()
            << " rows: " << f.fitted_points << " runs fitted, " << f.held_out_points
            << " held out, " << f.simulations << " distinct simulations\n";
  for (const std::string& n : f.notes) std::cout << n << "\n";
  std::cout << "compared: time_s when delay_s = 0, after_last_arrival_s when delay_s > 0; fit: "
               "bounded Nelder-Mead on log-parameters (seed "
            << o.seed << "), RMS of (simulated - median measured) / median measured per run\n";
  if (f.fitted.empty()) {
    // Every parameter fixed: a prediction of these rows from given values, nothing fitted
    // ("fitted rows" below are the rows not held out).
    std::cout << "fit: none (every parameter fixed: a prediction), RMS relative error "
              << pct(f.objective) << " over the rows not held out\n";
  } else {
    std::cout << "fit: " << (f.converged ? "converged" : "DID NOT CONVERGE") << " after "
              << f.evaluations << " evaluations, RMS relative error " << pct(f.objective) << "\n";
  }
  for (const std::string& p : f.parameters) {
    const bool fitted = std::find(f.fitted.begin(), f.fitted.end(), p) != f.fitted.end();
    std::cout << "  " << p << std::string(p.size() < 20 ? 20 - p.size() : 1, ' ')
              << shown_value(p, f.values.at(p)) << (fitted ? "  (fitted)" : "  (fixed)") << "\n";
  }
  std::cout << "|relative error| per row, fitted rows and held-out rows:\n";
  print_table(f);
  if (!f.converged) {
    throw InputError("the fit did not converge within " + std::to_string(a.max_evaluations) +
                     " evaluations (best RMS relative error " + pct(f.objective) +
                     "); nothing written");
  }
  auto write_rows = [&] {
    if (a.rows_output.empty()) return;
    std::ostringstream csv;
    csv << "file,line,algorithm,ranks,bytes,dtype,delay_s,measured_s,simulated_s,error,held_out\n";
    for (const ComparedRow& r : f.rows) {
      csv << std::filesystem::path(r.file).filename().string() << ',' << r.line << ','
          << r.algorithm << ',' << r.ranks << ',' << r.bytes << ',' << r.dtype << ','
          << printf_text("%.9g", r.delay) << ',' << printf_text("%.9g", r.measured) << ','
          << printf_text("%.9g", r.simulated) << ',' << printf_text("%.6g", r.error()) << ','
          << (r.held_out ? 1 : 0) << '\n';
    }
    write_output(a.rows_output, csv.str());
    std::cout << "wrote " << a.rows_output << ": " << f.rows.size() << " compared rows\n";
  };
  if (output.empty()) {
    write_rows();
    return;
  }
  if (ranks_arg == 0 && ranks.size() != 1) {
    throw InputError(
        "-o needs --ranks N (the calibrated topology's rank count): the runs have "
        "several rank counts");
  }
  const int n = ranks_arg > 0 ? ranks_arg : *ranks.begin();
  std::string machine = machine_arg;
  if (machine.empty()) {
    for (const MeasuredFile& file : read_measured_files(paths)) {
      for (const calib::MeasuredRun& r : file.runs) devices.insert(r.row.device);
    }
    if (devices.size() != 1 || devices.begin()->empty()) {
      throw InputError(
          "-o needs --machine TEXT: the calibrated file records where the measurements ran");
    }
    machine = *devices.begin();
  }
  FittedTopologyFile t;
  t.kind = f.kind;
  t.ranks = n;
  for (const std::string& p : f.parameters) {
    const double v = f.values.at(p);
    if (!std::isfinite(v)) continue;                   // no cap
    if (f.kind == "switch" && p == "gamma") continue;  // provenance.gamma, read by validate
    t.keys.emplace_back(p, file_value(p, v));
  }
  t.name = std::filesystem::path(output).stem().string();
  t.description = f.kind + " model calibrated by simulation of measured runs";
  std::string fitted, fixed, sources;
  for (const std::string& p : f.parameters) {
    const bool is_fitted = std::find(f.fitted.begin(), f.fitted.end(), p) != f.fitted.end();
    if (f.kind == "switch" && p == "gamma") continue;
    (is_fitted ? fitted : fixed) +=
        std::string((is_fitted ? fitted : fixed).empty() ? "" : ", ") + p;
  }
  for (const std::string& s : f.sources) sources += (sources.empty() ? "" : ", ") + s;
  std::string holdout;
  for (const std::string& h : a.holdout) holdout += (holdout.empty() ? "" : "; ") + h;
  t.provenance = {
      {"machine", machine},
      {"date", schema::utc_timestamp_now()},
      {"source", sources},
      {"input", "collective runs"},
      {"fit", "bounded Nelder-Mead on log-parameters (seed " + std::to_string(o.seed) +
                  "), RMS of (simulated - median measured) / median measured per run; compared "
                  "time_s when delay_s = 0, after_last_arrival_s when delay_s > 0"},
      {"fitted", fitted},
      {"fixed", fixed.empty() ? std::string("none") : fixed},
      {"holdout", holdout.empty() ? std::string("none") : holdout},
      {"rows", std::to_string(f.rows.size())},
      {"residual",
       "fitted rows: median |relative error| " + pct(abs_error_quantile(f.rows, 0.5, false)) +
           ", p95 " + pct(abs_error_quantile(f.rows, 0.95, false)) +
           (f.held_out_points > 0
                ? "; held-out rows: median " + pct(abs_error_quantile(f.rows, 0.5, true)) +
                      ", p95 " + pct(abs_error_quantile(f.rows, 0.95, true))
                : std::string())}};
  if (f.kind == "switch") {
    t.provenance.emplace_back("gamma", file_value("gamma", f.values.at("gamma")));
  }
  const std::string text = fitted_topology_yaml(t);
  // Never write what validate would refuse: the text must load as a topology.
  try {
    const ConfigReader back = ConfigReader::from_string(text, output);
    (void)load_topology(back.root(), "");
  } catch (const InputError& e) {
    throw InputError(std::string("the fitted topology does not load, nothing written: ") +
                     e.what());
  }
  write_rows();
  write_output(output, text);
  std::cout << "wrote " << output << ": " << f.kind << ", " << n << " ranks\n";
}

}  // namespace ssim::experiments
