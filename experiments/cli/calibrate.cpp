// `stragglesim calibrate` (fit alpha, beta, gamma from measurements, write a calibrated
// topology) and `stragglesim validate` (simulate measured runs on a topology and compare).
#include <charconv>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <iostream>
#include <map>
#include <set>
#include <sstream>
#include <tuple>

#include "calibration/calibration.hpp"
#include "calibration/nccl_tests.hpp"
#include "common/csv.hpp"
#include "common/error.hpp"
#include "common/stats.hpp"
#include "experiments/cli/commands.hpp"
#include "experiments/config/config.hpp"
#include "experiments/config/data_files.hpp"
#include "schema/result_csv.hpp"
#include "sim/executor.hpp"

namespace ssim::experiments {
namespace {

// Per-row residual tables up to this many rows; quantiles beyond.
constexpr std::size_t kMaxRowsListed = 50;

std::string percent(double fraction) { return printf_text("%+.2f%%", 100 * fraction); }
std::string abs_percent(double fraction) { return printf_text("%.2f%%", 100 * fraction); }

std::string line_list(const std::vector<int>& lines) {
  std::string s;
  const std::size_t shown = std::min<std::size_t>(lines.size(), 10);
  for (std::size_t i = 0; i < shown; ++i) s += (i ? ", " : "") + std::to_string(lines[i]);
  if (lines.size() > shown) s += ", ... (" + std::to_string(lines.size() - shown) + " more)";
  return s;
}

// Rows of algorithms with options that neither record nor were stated theirs; "" when none.
std::string unrecorded_note(const std::set<std::string>& algorithms, const char* done) {
  if (algorithms.empty()) return "";
  std::string list;
  for (const std::string& a : algorithms) list += (list.empty() ? "" : ", ") + a;
  return "note: no options recorded (a file from before the options column) for the rows of " +
         list + ": " + done + " with the defaults; state what ran with -O ALG:KEY=VALUE\n";
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
  os << unrecorded_note(c.unrecorded_options, "fitted");
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
    if (f.negative_gamma) {
      os << "    note: the unconstrained fit gave gamma " << gamma_text(*f.negative_gamma)
         << " < 0; refitted alpha and beta with gamma = 0 (the bound gamma >= 0)\n";
    }
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

// The topology and reduce cost validate simulates with. calibrate -o passes the file it is
// about to write through the same function, so it never writes one that validate refuses.
struct ValidationModel {
  topo::Topology topology;
  SecondsPerByte gamma{0.0};
  std::string gamma_from;
};

// Whether provenance.gamma (if any) reads as text: when it does not, the topology's loader
// has reported it, and the reduce cost's check would only say it again.
bool gamma_text_ok(const ConfigNode& root) {
  const FirstErrorScope first;
  try {
    const std::optional<ConfigNode> p = root.maybe("provenance");
    if (p && p->is_map() && p->has("gamma")) p->child("gamma").as_string();
    return true;
  } catch (const InputError&) {
    return false;
  }
}

ValidationModel load_validation_model(const ConfigReader& reader, const std::string& gamma_flag) {
  // The topology's errors and those of its provenance.gamma at once (reader.hpp).
  return all_errors([&] {
    ValidationModel m{topo::Topology{}, SecondsPerByte{0.0}, ""};
    const bool topology_ok =
        collect([&] { m.topology = load_topology(reader.root(), reader.directory()); });
    if (!gamma_flag.empty()) {
      try {
        m.gamma = parse_seconds_per_byte(gamma_flag);
      } catch (const InputError& e) {
        throw InputError(std::string("--gamma: ") + e.what());
      }
      m.gamma_from = "--gamma";
      return m;
    }
    std::optional<SecondsPerByte> recorded;
    collect([&] {
      if (topology_ok || gamma_text_ok(reader.root()))
        recorded = load_calibrated_gamma(reader.root());
    });
    if (recorded) {
      m.gamma = *recorded;
      m.gamma_from = "the topology's provenance";
    } else {
      m.gamma_from = "default";
    }
    return m;
  });
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
  std::vector<std::string> options;  // -O ALG:KEY=VALUE
  SimCalibrateArgs sim;
  std::string topology, network, steps;  // nccl-tests logs fitted by simulation on a topology file
  CLI::Option* topology_option = nullptr;
  CLI::Option* network_option = nullptr;
  CLI::Option* steps_option = nullptr;
  // The closed-form fit's options, refused where calibration by simulation would ignore them.
  std::vector<CLI::Option*> only_closed_form;
  // What only -o uses (the written topology's GPU count and provenance).
  std::vector<CLI::Option*> only_with_output;
  CLI::Option* kind_option = nullptr;
};

// A flag that the chosen fit would ignore is refused, never taken silently.
void refuse_given(const std::vector<CLI::Option*>& options, const std::string& why) {
  for (const CLI::Option* o : options) {
    if (o->count() > 0) throw InputError(o->get_name() + ": " + why);
  }
}

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
  // What validate would load from this file: refused here, nothing written.
  const std::string yaml = calibrated_topology_yaml(t);
  try {
    (void)load_validation_model(ConfigReader::from_string(yaml, a.output), "");
  } catch (const InputError& e) {
    throw InputError("-o " + a.output + ": the calibrated topology would not load in validate (" +
                     e.what() + "); nothing written");
  }
  write_output(a.output, yaml);
  std::cout << "\nwrote " << a.output << ": " << t.kind << ", " << t.ranks << " ranks, latency "
            << format_time(t.latency) << ", bandwidth " << format_bandwidth(t.bandwidth)
            << " (fit [" << (&f - c.fits.data()) + 1 << "])\n";
}

// calibrate LOG... --topology FILE: what the shared options mean there, the others refused.
void run_calibrate_logs(const CalibrateArgs& a) {
  refuse_given(a.only_closed_form, "an option of the closed-form fit; with --topology the logs are fitted by "
                                   "simulation (--algorithm and -O choose what is simulated)");
  refuse_given({a.kind_option}, "with --topology the topology file is what -o writes, with the fitted keys");
  refuse_given({a.only_with_output.front()}, "with --topology the rank count is the topology file's");
  if (a.sim.threads != 1) throw InputError("--fit-threads: calibrate --topology simulates on one thread");
  if (!a.sim.max_time.empty()) throw InputError("--max-time: calibrate --topology has no time estimate; use --max-evaluations");
  NcclLogCalibrateArgs l;
  l.inputs.push_back(a.input);
  l.inputs.insert(l.inputs.end(), a.sim.more_inputs.begin(), a.sim.more_inputs.end());
  l.topology = a.topology;
  l.algorithm = a.algorithm;
  l.options = a.options;
  l.options.insert(l.options.end(), a.sim.algorithm_options.begin(), a.sim.algorithm_options.end());
  l.network = a.network;
  l.steps = a.steps;
  l.fix = a.sim.fix;
  l.fit = a.sim.fit;
  l.holdout = a.sim.holdout;
  l.seed = a.sim.seed;
  l.max_evaluations = a.sim.max_evaluations;
  l.rows_output = a.sim.rows_output;
  l.output = a.output;
  l.machine = a.machine;
  run_calibrate_nccl_logs(l);
}

void run_calibrate(const CalibrateArgs& a) {
  if (!a.topology.empty()) {
    run_calibrate_logs(a);
    return;
  }
  if (a.network_option->count() > 0)
    throw InputError("--network: for nccl-tests logs fitted on a topology (--topology FILE)");
  if (a.steps_option->count() > 0)
    throw InputError("--steps: for nccl-tests logs fitted on a topology (--topology FILE)");
  if (a.output.empty()) {
    refuse_given(a.only_with_output,
                 "says what -o writes (the calibrated topology), and no -o is given");
  }
  if (a.kind == "shared_device" || a.sim.by_simulation) {
    if (!a.algorithm.empty()) {
      throw InputError("--algorithm: the closed form of an nccl-tests log, or with --topology the algorithm "
                       "simulated; result CSVs name their algorithms");
    }
    if (a.input != "-" && calib::looks_like_nccl_tests(read_input(a.input))) {
      throw InputError(a.input + ": an nccl-tests log is fitted by simulation on a topology file: add "
                       "--topology FILE (e.g. --topology h100_8xib400)");
    }
    refuse_given(a.only_closed_form,
                 "an option of the closed-form fit, which calibration by simulation "
                 "(--by-simulation, --topology-kind shared_device) does not use");
    // -O ALG:KEY=VALUE and --algorithm-option ALG:KEY=VALUE say the same thing here.
    SimCalibrateArgs sim = a.sim;
    sim.stated_options = a.options;
    run_calibrate_by_simulation(a.input, a.kind, a.ranks, a.machine, a.output, sim);
    return;
  }
  if (!a.sim.more_inputs.empty()) {
    throw InputError("several measurement files: only calibration by simulation (--topology-kind "
                     "shared_device or --by-simulation) reads more than one");
  }
  refuse_given(a.sim.only_by_simulation,
               "an option of calibration by simulation (--by-simulation or --topology-kind "
               "shared_device), which the closed-form fit does not use");
  // The closed form fits the same model for every kind: the kind is what -o writes.
  if (a.output.empty() && a.kind_option != nullptr)
    refuse_given({a.kind_option},
                 "says what -o writes (the calibrated topology), and no -o is given");
  if (a.piece > 0 && a.piecewise.empty()) {
    throw InputError("--piece " + std::to_string(a.piece) +
                     ": picks one of the fits of --piecewise, which is not given");
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
    try {
      o.gamma = parse_seconds_per_byte(a.gamma);
    } catch (const InputError& e) {
      throw InputError(std::string("--gamma: ") + e.what());
    }
  }
  o.fit_gamma = a.fit_gamma;
  if (!a.algorithm.empty()) o.algorithm = a.algorithm;
  if (a.log_ranks > 0) o.ranks = a.log_ranks;
  for (const std::string& item : a.options) calib::add_stated_option(o.stated_options, item);
  const std::string text = read_input(a.input);
  std::istringstream in(text);
  const calib::Calibration c = calib::calibrate(in, a.input == "-" ? "<stdin>" : a.input, o);
  if (a.log_ranks > 0 && c.input != calib::CalibrationInput::nccl_tests) {
    throw InputError("--log-ranks " + std::to_string(a.log_ranks) + ": " + c.source + " holds " +
                     std::string(calib::to_string(c.input)) +
                     ", which name their rank counts (--log-ranks is for nccl-tests logs)");
  }
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
  std::string network;  // "": alphabeta, or kValidateNcclTestsNetwork for an nccl-tests log
  std::string steps;    // nccl-tests logs: "" (pipelined) or per_round
  std::string gamma;
  std::string output;
  std::vector<std::string> options;  // -O ALG:KEY=VALUE for rows without an options column
  std::string timeline;
  std::string algorithm = kValidateNcclTestsAlgorithm;  // nccl-tests logs only
  CLI::Option* algorithm_option = nullptr;
};

const alg::AlgorithmInfo* registry_algorithm(const std::string& name) {
  for (const alg::AlgorithmInfo& a : alg::algorithms()) {
    if (a.name == name) return &a;
  }
  return nullptr;
}

calib::StatedOptions stated_options(const std::vector<std::string>& items) {
  calib::StatedOptions stated;
  for (const std::string& item : items) calib::add_stated_option(stated, item);
  return stated;
}

void print_unused_stated(const calib::RunOptionsResolver& resolve) {
  std::cout << unrecorded_note(resolve.unrecorded(), "built");
  if (resolve.stated().empty() || resolve.stated_used()) return;
  std::cout << "note: -O not used: every row compared records its options (or none names the "
               "algorithm)\n";
}

// The generator options of a measured run as validate builds its schedule: the recorded (or
// stated) options, plus the straggler a straggler-aware schedule was built for: the options'
// own `straggler` (or late ranks), else the delayed rank, else n-1 (the generator's default).
alg::Options schedule_options(alg::Options options, const alg::AlgorithmInfo& info,
                              std::optional<int> delayed_rank) {
  // Built for several late ranks (stragglar's stragglers/late), the options name them all.
  if (info.straggler_aware && !options.has("straggler") && !options.has("late") &&
      !options.has("stragglers") && delayed_rank)
    options.set("straggler", std::to_string(*delayed_rank));
  return options;
}

std::string error_summary(const std::vector<double>& errors, const std::vector<int>& lines) {
  std::vector<double> abs_errors;
  std::size_t worst = 0;
  for (std::size_t i = 0; i < errors.size(); ++i) {
    abs_errors.push_back(std::fabs(errors[i]));
    if (abs_errors[i] > abs_errors[worst]) worst = i;
  }
  return "median |.| " + abs_percent(quantile(abs_errors, 0.5)) + ", p95 |.| " +
         abs_percent(quantile(abs_errors, 0.95)) + ", max |.| " + abs_percent(abs_errors[worst]) +
         " (line " + std::to_string(lines[worst]) + ")";
}

void validate_runs(const ValidateArgs& a, const std::string& text, const ValidationModel& model,
                   sim::NetworkKind network) {
  const topo::Topology& topology = model.topology;
  const int gpus = topology.gpu_count();
  std::istringstream in(text);
  const std::string name = a.input == "-" ? "<stdin>" : a.input;
  const std::vector<calib::MeasuredRun> runs = calib::read_measured_runs(in, name);
  calib::RunOptionsResolver resolve(stated_options(a.options), name);

  std::cout << "validate: " << name << " against " << topology.name << " (" << a.topology
            << "): " << gpus << " GPUs, " << sim::to_string(network) << " model, gamma "
            << gamma_text(model.gamma) << " (" << model.gamma_from << ")\n";
  // Measured runs repeat (algorithm, options, size, delay) over iterations; the simulation is
  // deterministic, so each distinct run is simulated once.
  using Key = std::tuple<std::string, std::string, std::uint64_t, double, int>;
  std::map<Key, sim::IterationSummary> simulated;
  std::vector<calib::SkippedRows> skipped;
  auto skip = [&](const std::string& reason, int line) {
    calib::add_skipped(skipped, reason, line);
  };
  std::vector<schema::ResultRow> out_rows;
  std::vector<double> after_errors, first_errors;
  std::vector<int> error_lines;
  std::vector<double> spread_over_delay;  // measured arrival spread beyond the injected delay
  bool single_gpu = false;
  std::set<std::string> starred;  // "algorithm: options" of the rows built with options
  std::ostringstream table;
  char buf[260];
  std::snprintf(buf, sizeof buf, "%5s  %-14s %10s %9s | %10s %10s %8s | %10s %10s %8s\n", "line",
                "algorithm", "bytes", "delay", "measured", "simulated", "rel.err", "measured",
                "simulated", "rel.err");
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
    if (r.time.value <= 0) {
      throw InputError(name + ":" + std::to_string(run.line) +
                       ": column time_s: bad value '0' (expected a time > 0 to compare with)");
    }
    const alg::Options run_options = resolve(run, *info);
    const alg::Options options = schedule_options(run_options, *info, r.straggler);
    const std::string options_text = schema::canonical_options(options.values());
    const Key key{info->name, options_text, r.bytes.value, r.delay.value, r.straggler.value_or(-1)};
    auto it = simulated.find(key);
    if (it == simulated.end()) {
      sim::SimulationConfig c;
      c.topology = topology;
      c.network = network;
      c.gamma = model.gamma;
      c.algorithm = info->name;
      c.options = options;
      c.size = r.bytes;
      // The schedule is built for the rank it was built for on the machine (the options), and
      // that rank plays its role: no relabelling, as on the GPU.
      c.policy = sim::StragglerPolicy::fixed;
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
    const double after_error =
        (s.after_last_arrival.value - r.after_last_arrival.value) / r.after_last_arrival.value;
    const double first_error = (s.completion.value - r.time.value) / r.time.value;
    after_errors.push_back(after_error);
    first_errors.push_back(first_error);
    error_lines.push_back(run.line);
    spread_over_delay.push_back(r.time.value - r.after_last_arrival.value - r.delay.value);
    single_gpu = single_gpu || r.transport == "single-gpu" ||
                 r.device.find("single-gpu") != std::string::npos;
    const std::string label = info->name + (run_options.values().empty() ? "" : "*");
    if (!run_options.values().empty())
      starred.insert(info->name + ": " + schema::canonical_options(run_options.values()));
    std::snprintf(buf, sizeof buf, "%5d  %-14s %10s %9s | %10s %10s %8s | %10s %10s %8s\n",
                  run.line, label.c_str(), format_bytes(r.bytes).c_str(),
                  format_time(r.delay).c_str(), format_time(r.after_last_arrival).c_str(),
                  format_time(s.after_last_arrival).c_str(), percent(after_error).c_str(),
                  format_time(r.time).c_str(), format_time(s.completion).c_str(),
                  percent(first_error).c_str());
    table << buf;
    schema::ResultRow sim_row = r;
    sim_row.source = schema::ResultSource::simulated;
    sim_row.time = s.completion;
    sim_row.after_last_arrival = s.after_last_arrival;
    sim_row.wrong.reset();
    sim_row.device = device;
    sim_row.timestamp = now;
    sim_row.nccl_version.clear();
    sim_row.nccl_algo.clear();
    sim_row.nccl_proto.clear();
    // The options as simulated, less the straggler the straggler column implies.
    std::map<std::string, std::string> recorded = options.values();
    if (auto st = recorded.find("straggler");
        st != recorded.end() && st->second == std::to_string(r.straggler.value_or(r.ranks - 1)))
      recorded.erase(st);
    sim_row.options = schema::canonical_options(recorded);
    sim_row.transport = "sim";
    schema::set_bandwidths(sim_row);
    out_rows.push_back(std::move(sim_row));
  }
  if (after_errors.empty()) {
    std::string why;
    for (const calib::SkippedRows& s : skipped) why += (why.empty() ? "" : "; ") + s.reason;
    throw InputError(name + ": no measured row can be compared with " + a.topology + " (" +
                     (why.empty() ? "no rows" : why) + ")");
  }
  std::snprintf(buf, sizeof buf, "%5s  %-14s %10s %9s | %-32s | %s\n", "", "", "", "",
                "after the last arrival", "from the first arrival");
  std::cout << "both sides measure the same two times: after the last arrival (last finish - "
               "last arrival) and from the first arrival (last finish - first arrival)\n"
            << buf << table.str();
  for (const std::string& s : starred) std::cout << "* " << s << "\n";
  std::cout << "compared " << after_errors.size() << " row" << (after_errors.size() == 1 ? "" : "s")
            << ", simulated " << simulated.size() << " distinct run"
            << (simulated.size() == 1 ? "" : "s") << "\n";
  print_skipped(std::cout, skipped);
  print_unused_stated(resolve);
  std::cout << "relative error (simulated - measured) / measured\n"
            << "  after the last arrival: " << error_summary(after_errors, error_lines) << "\n"
            << "  from the first arrival: " << error_summary(first_errors, error_lines) << "\n";
  // The simulation's arrivals are the injected delay only; measured arrivals spread further
  // when a rank's arrival stamp waits behind other work (single-gpu: every rank's stream
  // shares one device), which the time from the first arrival then contains.
  const double extra_spread = quantile(spread_over_delay, 0.5);
  if (single_gpu || extra_spread > 0) {
    std::cout << "measured arrivals spread " << format_time(Seconds{std::max(0.0, extra_spread)})
              << " beyond the injected delay (median over rows; simulated: 0)"
              << (single_gpu ? ": single-gpu arrival stamps queue behind the other ranks' work, "
                               "so compare the time after the last arrival"
                             : "")
              << "\n";
  }
  if (!a.output.empty()) {
    std::ostringstream csv;
    schema::ResultCsvWriter writer(csv);
    for (const schema::ResultRow& row : out_rows) writer.write(row);
    write_output(a.output, csv.str());
    std::cout << "wrote " << a.output << ": " << out_rows.size() << " simulated rows\n";
  }
}

// ---- validate --timeline: round by round --------------------------------------------------

// One (algorithm, ranks, bytes, options) run of a timeline (stragglesim-gpu run --timeline):
// per rank and round the end times over iterations, per rank the arrivals.
struct TimelineRun {
  std::string algorithm;
  int ranks = 0;
  std::uint64_t bytes = 0;
  std::optional<std::string> options;  // the options column, when the file has one
  int first_line = 0;
  std::map<std::pair<int, int>, double> arrival;                 // (iteration, rank)
  std::map<std::pair<int, int>, std::vector<double>> round_end;  // (rank, round): per iteration
  std::map<std::pair<int, int>, int> line_of;                    // (rank, round): first line
  std::map<std::tuple<int, int, int>, int> row_of;  // (iteration, rank, round or -1): its line
};

std::vector<TimelineRun> read_timeline(const std::string& text, const std::string& name) {
  std::istringstream in(text);
  CsvReader csv(in, name);
  CsvRecord head;
  if (!csv.next(head)) throw InputError(name + ": empty file (expected a timeline CSV header)");
  const std::map<std::string, std::size_t> index = csv_column_index(name, head);
  const std::vector<std::string> required = {"algorithm", "ranks",     "rank",  "iteration",
                                             "bytes",     "arrival_s", "round", "round_end_s"};
  for (const std::string& column : required) {
    if (!index.count(column)) {
      throw InputError(name + ":" + std::to_string(head.line) + ": missing column '" + column +
                       "' (a timeline as stragglesim-gpu run --timeline writes it: algorithm,"
                       "ranks,bytes,iteration,rank,arrival_s,finish_s,delay_s,round,round_end_s)");
    }
  }
  const auto options_at = index.find("options");
  std::map<std::tuple<std::string, int, std::uint64_t, std::string>, std::size_t> by_key;
  std::vector<TimelineRun> runs;
  CsvRecord rec;
  while (csv.next(rec)) {
    if (rec.fields.size() != head.fields.size()) {
      csv.fail(rec, std::to_string(rec.fields.size()) + " fields, the header has " +
                        std::to_string(head.fields.size()));
    }
    auto field = [&](const char* column) -> const std::string& {
      return rec.fields[index.at(column)];
    };
    auto bad = [&](const char* column, const std::string& expected) {
      csv.fail_at(rec, index.at(column),
                  std::string("column ") + column + ": bad value '" + field(column) +
                      "' (expected " + expected + ")");
    };
    auto integer = [&](const char* column, long long lo, long long hi) {
      long long v = 0;
      const std::string& t = field(column);
      const auto [end, ec] = std::from_chars(t.data(), t.data() + t.size(), v);
      if (t.empty() || ec != std::errc() || end != t.data() + t.size() || v < lo || v > hi)
        bad(column, "an integer in [" + std::to_string(lo) + ", " + std::to_string(hi) + "]");
      return v;
    };
    auto seconds = [&](const char* column) {
      double v = 0;
      const std::string& t = field(column);
      const auto [end, ec] = std::from_chars(t.data(), t.data() + t.size(), v);
      if (t.empty() || ec != std::errc() || end != t.data() + t.size() || !std::isfinite(v) ||
          v < 0)
        bad(column, "a time in seconds >= 0");
      return v;
    };
    const int ranks = static_cast<int>(integer("ranks", 1, 1 << 20));
    const auto bytes = static_cast<std::uint64_t>(integer("bytes", 1, 1LL << 62));
    const int iteration = static_cast<int>(integer("iteration", 0, 1 << 30));
    const int rank = static_cast<int>(integer("rank", 0, ranks - 1));
    const double arrival = seconds("arrival_s");
    std::string options_text;
    std::optional<std::string> options;
    if (options_at != index.end()) {
      try {
        options = schema::canonical_options(schema::parse_options(rec.fields[options_at->second]));
      } catch (const InputError& e) {
        bad("options", std::string("key=value;...: ") + e.what());
      }
      options_text = "=" + *options;
    }
    const auto key = std::make_tuple(field("algorithm"), ranks, bytes, options_text);
    auto [it, added] = by_key.emplace(key, runs.size());
    if (added) {
      TimelineRun r;
      r.algorithm = field("algorithm");
      r.ranks = ranks;
      r.bytes = bytes;
      r.options = options;
      r.first_line = rec.line;
      runs.push_back(std::move(r));
    }
    TimelineRun& run = runs[it->second];
    // One row per (iteration, rank, round), or one round-less row for a rank in no round; every
    // row of an (iteration, rank) repeats its arrival.
    const auto [arrived, first] = run.arrival.emplace(std::make_pair(iteration, rank), arrival);
    const int round = field("round").empty() ? -1 : static_cast<int>(integer("round", 0, 1 << 30));
    const auto [seen, once] =
        run.row_of.emplace(std::make_tuple(iteration, rank, round), rec.line);
    const std::string which = "iteration " + std::to_string(iteration) + ", rank " +
                              std::to_string(rank) +
                              (round < 0 ? ", no round" : ", round " + std::to_string(round));
    if (!once)
      csv.fail(rec, which + " is given twice (also on line " + std::to_string(seen->second) + ")");
    if (!first && arrived->second != arrival) {
      bad("arrival_s", "the arrival of iteration " + std::to_string(iteration) + ", rank " +
                           std::to_string(rank) + " given on its other rows");
    }
    if (round < 0) continue;  // a rank in no round
    run.round_end[{rank, round}].push_back(seconds("round_end_s"));
    run.line_of.emplace(std::make_pair(rank, round), rec.line);
  }
  if (runs.empty()) throw InputError(name + ": no rows (only a header)");
  // Every iteration of a run has the same rows: each rank's rounds (or its round-less row) in
  // every iteration; a missing row would make the medians compare different iterations.
  for (const TimelineRun& run : runs) {
    std::set<int> iterations;
    std::map<std::pair<int, int>, std::set<int>> in_iterations;  // (rank, round) -> iterations
    for (const auto& [key, line] : run.row_of) {
      const auto [iteration, rank, round] = key;
      iterations.insert(iteration);
      in_iterations[{rank, round}].insert(iteration);
    }
    const std::string at = name + ":" + std::to_string(run.first_line) + ": " + run.algorithm +
                           " on " + std::to_string(run.ranks) + " ranks, " +
                           format_bytes(Bytes{run.bytes}) + ": ";
    for (const auto& [rank_round, its] : in_iterations) {
      const auto [rank, round] = rank_round;
      if (round < 0) {
        const auto with_round = in_iterations.upper_bound({rank, -1});
        if (with_round != in_iterations.end() && with_round->first.first == rank) {
          throw InputError(at + "rank " + std::to_string(rank) +
                           " has rows without a round (line " +
                           std::to_string(run.row_of.at(std::make_tuple(*its.begin(), rank, -1))) +
                           ") and rows with rounds (line " +
                           std::to_string(run.line_of.at(with_round->first)) +
                           "): a rank in no round has one round-less row per iteration");
        }
      }
      if (its.size() == iterations.size()) continue;
      for (const int i : iterations) {
        if (its.count(i)) continue;
        throw InputError(at + "iteration " + std::to_string(i) + " has no row for rank " +
                         std::to_string(rank) +
                         (round < 0 ? std::string(" (without a round)")
                                    : ", round " + std::to_string(round)) +
                         ", which iteration " + std::to_string(*its.begin()) +
                         " has: every iteration has the same rows");
      }
    }
  }
  return runs;
}

double median_of(std::vector<double> v) { return quantile(v, 0.5); }

struct RoundComparison {
  const TimelineRun* run = nullptr;
  std::string options;  // as simulated (canonical)
  int rank = 0;
  int round = 0;
  std::string phase;
  double measured_end = 0, simulated_end = 0;
  double measured_duration = 0, simulated_duration = 0;
  double end_error() const { return (simulated_end - measured_end) / measured_end; }
  bool has_duration() const { return measured_duration > 0; }
  double duration_error() const {
    return (simulated_duration - measured_duration) / measured_duration;
  }
};

std::string phase_name(const std::string& phase) { return phase.empty() ? "(none)" : phase; }

// Compares one timeline run with its simulation; appends a comparison per rank and round.
void compare_run(const TimelineRun& t, const std::string& name, const ValidationModel& model,
                 sim::NetworkKind network, calib::RunOptionsResolver& resolve,
                 std::vector<RoundComparison>& out) {
  const int gpus = model.topology.gpu_count();
  const std::string at = name + ":" + std::to_string(t.first_line);
  const alg::AlgorithmInfo* info = registry_algorithm(t.algorithm);
  if (info == nullptr)
    throw InputError(at + ": column algorithm: '" + t.algorithm +
                     "' has no schedule in the registry");
  if (t.ranks != gpus) {
    throw InputError(at + ": column ranks: the timeline has " + std::to_string(t.ranks) +
                     " ranks, the topology " + std::to_string(gpus) + " GPUs");
  }
  calib::MeasuredRun as_run;
  as_run.line = t.first_line;
  as_run.row.algorithm = t.algorithm;
  as_run.row.ranks = t.ranks;
  as_run.row.options = t.options;
  const alg::Options options = resolve(as_run, *info);
  alg::Schedule schedule;
  try {
    schedule = alg::generate(info->name, t.ranks, options);
  } catch (const InputError& e) {
    throw InputError(at + ": " + e.what());
  }
  const std::string what =
      info->name + " on " + std::to_string(t.ranks) + " ranks" +
      (options.values().empty() ? std::string()
                                : " with " + schema::canonical_options(options.values())) +
      ", " + format_bytes(Bytes{t.bytes});
  const std::string hint =
      " (the timeline's rounds are not this schedule's: another algorithm version or options; "
      "files without an options column take them from -O ALG:KEY=VALUE)";
  // Which rounds each rank takes part in: exactly those the timeline must have.
  const std::size_t rounds = schedule.rounds.size();
  std::vector<std::vector<bool>> part(static_cast<std::size_t>(t.ranks),
                                      std::vector<bool>(rounds, false));
  for (std::size_t k = 0; k < rounds; ++k) {
    for (const alg::Transfer& x : schedule.rounds[k].transfers) {
      part[static_cast<std::size_t>(x.src)][k] = true;
      part[static_cast<std::size_t>(x.dst)][k] = true;
    }
  }
  for (const auto& [rank_round, line] : t.line_of) {
    const auto [rank, round] = rank_round;
    if (static_cast<std::size_t>(round) >= rounds) {
      throw InputError(name + ":" + std::to_string(line) +
                       ": column round: " + std::to_string(round) + ", but " + what + " has " +
                       std::to_string(rounds) + " rounds" + hint);
    }
    if (!part[static_cast<std::size_t>(rank)][static_cast<std::size_t>(round)]) {
      throw InputError(name + ":" + std::to_string(line) + ": rank " + std::to_string(rank) +
                       " has round " + std::to_string(round) + ", in which it takes no part in " +
                       what + hint);
    }
  }
  std::vector<std::vector<double>> arrivals(static_cast<std::size_t>(t.ranks));
  for (const auto& [it_rank, arrival] : t.arrival)
    arrivals[static_cast<std::size_t>(it_rank.second)].push_back(arrival);
  std::vector<Seconds> arrival(static_cast<std::size_t>(t.ranks));
  for (int r = 0; r < t.ranks; ++r) {
    if (arrivals[static_cast<std::size_t>(r)].empty())
      throw InputError(at + ": " + what + ": rank " + std::to_string(r) + " has no rows");
    arrival[static_cast<std::size_t>(r)] =
        Seconds{median_of(arrivals[static_cast<std::size_t>(r)])};
    for (std::size_t k = 0; k < rounds; ++k) {
      if (part[static_cast<std::size_t>(r)][k] && !t.round_end.count({r, static_cast<int>(k)})) {
        throw InputError(at + ": " + what + ": rank " + std::to_string(r) +
                         " takes part in round " + std::to_string(k) +
                         ", and the timeline has no row for it" + hint);
      }
    }
  }
  // The schedule runs as built (its straggler is the rank the options name, as on the GPU),
  // each rank starting at its median measured arrival.
  sim::Executor ex(schedule, model.topology, sim::NetworkConfig{network, model.gamma},
                   Bytes{t.bytes});
  sim::RunOptions ro;
  ro.record_timeline = true;
  const sim::IterationResult result = ex.run(arrival, ro);
  const auto simulated = sim::round_ends(result, rounds);
  const std::string options_text = schema::canonical_options(options.values());
  for (int r = 0; r < t.ranks; ++r) {
    double measured_prev = arrival[static_cast<std::size_t>(r)].value;
    double simulated_prev = measured_prev;
    for (std::size_t k = 0; k < rounds; ++k) {
      if (!part[static_cast<std::size_t>(r)][k]) continue;
      const auto& sim_end = simulated[static_cast<std::size_t>(r)][k];
      SSIM_CHECK(sim_end.has_value(), "a rank's round without a simulated end");
      RoundComparison c;
      c.run = &t;
      c.options = options_text;
      c.rank = r;
      c.round = static_cast<int>(k);
      c.phase = phase_name(schedule.rounds[k].phase);
      c.measured_end = median_of(t.round_end.at({r, static_cast<int>(k)}));
      c.simulated_end = sim_end->value;
      c.measured_duration = c.measured_end - measured_prev;
      c.simulated_duration = c.simulated_end - simulated_prev;
      measured_prev = c.measured_end;
      simulated_prev = c.simulated_end;
      if (!(c.measured_end > 0)) {
        throw InputError(name + ":" + std::to_string(t.line_of.at({r, c.round})) +
                         ": column round_end_s: rank " + std::to_string(r) + " round " +
                         std::to_string(k) +
                         " ends at 0 (expected a time after the first arrival)");
      }
      out.push_back(std::move(c));
    }
  }
}

double median_signed(std::vector<double> v) { return v.empty() ? 0.0 : quantile(v, 0.5); }
double median_abs(std::vector<double> v) {
  for (double& x : v) x = std::fabs(x);
  return v.empty() ? 0.0 : quantile(v, 0.5);
}

// Up to this many rounds are listed one by one (per round index); more: per phase only.
constexpr std::size_t kMaxRoundsListed = 64;

void validate_timeline(const ValidateArgs& a, const ValidationModel& model,
                       sim::NetworkKind network) {
  const std::string name = a.timeline == "-" ? "<stdin>" : a.timeline;
  const std::vector<TimelineRun> runs = read_timeline(read_input(a.timeline), name);
  calib::RunOptionsResolver resolve(stated_options(a.options), name);
  std::vector<RoundComparison> all;
  for (const TimelineRun& t : runs) compare_run(t, name, model, network, resolve, all);

  std::cout << "validate --timeline: " << name << " against " << model.topology.name << " ("
            << a.topology << "): " << model.topology.gpu_count() << " GPUs, "
            << sim::to_string(network) << " model, gamma " << gamma_text(model.gamma) << " ("
            << model.gamma_from << ")\n"
            << "each rank's round ends, median over iterations, from the first arrival; the "
               "simulation starts every rank at its median measured arrival\n"
            << "rel.err = (simulated - measured) / measured; duration = a round's end - the "
               "rank's previous round end (or its arrival)\n";
  print_unused_stated(resolve);
  char buf[240];
  // Per run (algorithm, ranks, options) in the file: per round index, then per size and phase.
  std::vector<std::string> run_labels;
  std::map<std::string, std::vector<const RoundComparison*>> by_label;
  for (const RoundComparison& c : all) {
    const std::string label = c.run->algorithm + " n=" + std::to_string(c.run->ranks) +
                              (c.options.empty() ? "" : " [" + c.options + "]");
    if (!by_label.count(label)) run_labels.push_back(label);
    by_label[label].push_back(&c);
  }
  for (const std::string& label : run_labels) {
    const std::vector<const RoundComparison*>& rows = by_label[label];
    std::set<std::uint64_t> sizes;
    std::map<int, std::vector<const RoundComparison*>> by_round;
    for (const RoundComparison* c : rows) {
      sizes.insert(c->run->bytes);
      by_round[c->round].push_back(c);
    }
    std::cout << "\n"
              << label << ": " << sizes.size() << " size" << (sizes.size() == 1 ? "" : "s") << ", "
              << by_round.size() << " rounds\n";
    if (by_round.size() <= kMaxRoundsListed) {
      std::cout << "  per round (median over ranks and sizes of the signed rel.err)\n";
      std::snprintf(buf, sizeof buf, "  %5s  %-22s %12s %12s\n", "round", "phase", "round end",
                    "duration");
      std::cout << buf;
      for (const auto& [round, cs] : by_round) {
        std::vector<double> ends, durations;
        for (const RoundComparison* c : cs) {
          ends.push_back(c->end_error());
          if (c->has_duration()) durations.push_back(c->duration_error());
        }
        std::snprintf(buf, sizeof buf, "  %5d  %-22s %12s %12s\n", round, cs.front()->phase.c_str(),
                      percent(median_signed(ends)).c_str(),
                      durations.empty() ? "-" : percent(median_signed(durations)).c_str());
        std::cout << buf;
      }
    } else {
      std::cout << "  (" << by_round.size() << " rounds: per phase below, every round in -o)\n";
    }
    // Per size and phase: the time each rank spends in the phase's rounds (sum of its
    // durations there), median over ranks.
    std::cout << "  per size and phase (time in the phase's rounds, median over ranks)\n";
    std::snprintf(buf, sizeof buf, "  %10s  %-22s %7s %12s %12s %9s\n", "bytes", "phase", "rounds",
                  "measured", "simulated", "rel.err");
    std::cout << buf;
    std::vector<std::string> phase_order;
    std::map<std::string, std::vector<double>> phase_errors;
    for (const std::uint64_t bytes : sizes) {
      std::vector<std::string> phases;
      std::map<std::string, std::map<int, std::pair<double, double>>> spent;  // phase, rank
      std::map<std::string, std::set<int>> phase_rounds;
      for (const RoundComparison* c : rows) {
        if (c->run->bytes != bytes) continue;
        if (!spent.count(c->phase)) phases.push_back(c->phase);
        auto& s = spent[c->phase][c->rank];
        s.first += c->measured_duration;
        s.second += c->simulated_duration;
        phase_rounds[c->phase].insert(c->round);
      }
      for (const std::string& phase : phases) {
        std::vector<double> measured, simulated;
        for (const auto& [rank, s] : spent[phase]) {
          measured.push_back(s.first);
          simulated.push_back(s.second);
        }
        const double m = median_of(measured), sm = median_of(simulated);
        std::string err = "-";
        if (m > 0) {
          err = percent((sm - m) / m);
          if (!phase_errors.count(phase)) phase_order.push_back(phase);
          phase_errors[phase].push_back((sm - m) / m);
        }
        std::snprintf(buf, sizeof buf, "  %10s  %-22s %7zu %12s %12s %9s\n",
                      format_bytes(Bytes{bytes}).c_str(), phase.c_str(), phase_rounds[phase].size(),
                      format_time(Seconds{m}).c_str(), format_time(Seconds{sm}).c_str(),
                      err.c_str());
        std::cout << buf;
      }
    }
    std::cout << "  per phase, over sizes (|rel.err|: median of the absolute values)\n";
    std::snprintf(buf, sizeof buf, "  %-22s %24s %24s %22s\n", "phase", "time in phase |rel.err|",
                  "time in phase rel.err", "round ends |rel.err|");
    std::cout << buf;
    for (const std::string& phase : phase_order) {
      std::vector<double> ends;
      for (const RoundComparison* c : rows)
        if (c->phase == phase) ends.push_back(c->end_error());
      std::snprintf(buf, sizeof buf, "  %-22s %24s %24s %22s\n", phase.c_str(),
                    abs_percent(median_abs(phase_errors[phase])).c_str(),
                    percent(median_signed(phase_errors[phase])).c_str(),
                    abs_percent(median_abs(ends)).c_str());
      std::cout << buf;
    }
  }
  if (!a.output.empty()) {
    std::ostringstream csv;
    csv << "algorithm,ranks,bytes,options,rank,round,phase,measured_end_s,simulated_end_s,"
           "end_error,measured_duration_s,simulated_duration_s,duration_error\n";
    for (const RoundComparison& c : all) {
      csv << schema::csv_field(c.run->algorithm) << "," << c.run->ranks << "," << c.run->bytes
          << "," << schema::csv_field(c.options) << "," << c.rank << "," << c.round << ","
          << schema::csv_field(c.phase) << "," << schema::csv_number(c.measured_end) << ","
          << schema::csv_number(c.simulated_end) << "," << schema::csv_number(c.end_error()) << ","
          << schema::csv_number(c.measured_duration) << ","
          << schema::csv_number(c.simulated_duration) << ","
          << (c.has_duration() ? schema::csv_number(c.duration_error()) : std::string()) << "\n";
    }
    write_output(a.output, csv.str());
    std::cout << "\nwrote " << a.output << ": " << all.size() << " rows (one per rank and round)\n";
  }
}

void run_validate(const ValidateArgs& a) {
  if (a.input.empty() == a.timeline.empty()) {
    throw InputError(
        "validate takes a result CSV of measured runs or --timeline FILE (one of the two)");
  }
  const ConfigReader reader(topology_file_argument(a.topology, "--topology"));
  const ValidationModel model = load_validation_model(reader, a.gamma);
  if (!a.timeline.empty()) {
    if (a.algorithm_option->count() > 0)
      throw InputError("--algorithm: for nccl-tests logs; a timeline names its algorithms");
    validate_timeline(a, model,
                      sim::parse_network_kind(a.network.empty() ? "alphabeta" : a.network));
    return;
  }
  const std::string text = read_input(a.input);
  const std::string name = a.input == "-" ? "<stdin>" : a.input;
  if (calib::looks_like_nccl_tests(text)) {
    NcclLogValidation v;
    v.name = name;
    v.text = text;
    v.topology_path = a.topology;
    v.algorithm = a.algorithm;
    v.algorithm_given = a.algorithm_option->count() > 0;
    v.options = a.options;
    v.network = a.network;
    v.steps = a.steps;
    v.output = a.output;
    validate_nccl_tests_log(v, model.topology, model.gamma, model.gamma_from);
    return;
  }
  if (!a.steps.empty())
    throw InputError("--steps " + a.steps + ": only for nccl-tests logs (" + name + " is not one)");
  if (a.algorithm_option->count() > 0) {
    throw InputError("--algorithm: for nccl-tests logs; the rows of " + name +
                     " name their algorithms");
  }
  validate_runs(a, text, model,
                sim::parse_network_kind(a.network.empty() ? "alphabeta" : a.network));
}
}  // namespace

std::size_t compare_timeline(const std::string& text, const std::string& name,
                             const topo::Topology& topology) {
  const std::vector<TimelineRun> runs = read_timeline(text, name);
  const ValidationModel model{topology, SecondsPerByte{0.0}, "default"};
  calib::RunOptionsResolver resolve(stated_options({}), name);
  std::vector<RoundComparison> all;
  for (const TimelineRun& t : runs)
    compare_run(t, name, model, sim::NetworkKind::alphabeta, resolve, all);
  return all.size();
}

void add_calibrate_commands(CLI::App& app) {
  auto c = std::make_shared<CalibrateArgs>();
  CLI::App* cal = app.add_subcommand(
      "calibrate",
      "Fit alpha, beta (and gamma) by least squares from a p2p sweep or measured collective runs");
  cal->add_option("measurements", c->input,
                  "CSV: bytes,seconds[,link_class][,kind] sweep, a result CSV of measured runs, "
                  "or nccl-tests' all_reduce_perf output (its text log or -J JSON) ('-': stdin)")
      ->required();
  auto& closed = c->only_closed_form;
  cal->add_option("--algorithm", c->algorithm,
                  "nccl-tests logs: the closed form to fit NCCL's AllReduce with (ring, tree, "
                  "rhd, ...; default ring); with --topology the algorithm simulated (default nccl)");
  closed.push_back(cal->add_option("--log-ranks", c->log_ranks,
                  "nccl-tests logs without '#  Rank' device lines: how many ranks ran")
      ->check(CLI::Range(2, 65536)));
  closed.push_back(cal->add_option("--link-class", c->link_class,
                  "Fit only this link class (sweeps with a link_class column)"));
  closed.push_back(cal->add_option("--piecewise", c->piecewise, "Size boundaries B1,B2,...: one fit per size range"));
  closed.push_back(cal->add_option("--piece", c->piece,
                  "With --piecewise and -o: the fit to write (1-based, as printed)")
      ->check(positive_number()));
  c->kind_option =
      cal->add_option("--topology-kind", c->kind,
                      "Topology written by -o (default switch); shared_device fits by simulation")
          ->check(CLI::IsMember({"switch", "fully_connected", "ring", "shared_device"}));
  c->only_with_output.push_back(
      cal->add_option("-r,--ranks", c->ranks,
                      "GPU count of the written topology (default: the runs' rank count)")
          ->check(CLI::Range(2, 65536)));
  cal->add_option("-o,--output", c->output, "Write the calibrated topology YAML here");
  c->only_with_output.push_back(cal->add_option(
      "--machine", c->machine,
      "Where the measurements ran, for the provenance (default: device column)"));
  closed.push_back(cal->add_option("--gamma", c->gamma,
                  "Collective runs: known reduce cost, e.g. 0.05ns/B (default 0)"));
  closed.push_back(cal->add_flag("--fit-gamma", c->fit_gamma,
                "Collective runs: fit gamma >= 0 too (needs e.g. direct or tree runs)"));
  cal->add_option("-O,--option", c->options,
                  "Result CSVs: ALG:KEY=VALUE, an option of ALG's runs for files without an "
                  "options column (repeatable), e.g. hierarchical:gpus_per_node=4");
  add_simulation_calibrate_options(*cal, c->sim);
  c->topology_option = cal->add_option(
      "--topology", c->topology,
      "nccl-tests logs: fit this topology file's bandwidth and latency keys by simulation "
      "(default: NVLink's and the NICs'; --fit/--fix others), written by -o with provenance");
  c->network_option = cal->add_option("--network", c->network,
                                      std::string("With --topology: the network model (default ") +
                                          kValidateNcclTestsNetwork + ")")
                          ->check(CLI::IsMember({"alphabeta", "flow"}));
  c->steps_option = cal->add_option("--steps", c->steps,
                                    "With --topology: how NCCL kernels take their steps' "
                                    "latencies, pipelined (default) or per_round")
                        ->check(CLI::IsMember({"per_round", "pipelined"}));
  cal->callback([c] { run_calibrate(*c); });

  auto v = std::make_shared<ValidateArgs>();
  CLI::App* val =
      app.add_subcommand("validate", "Simulate measured runs on a topology and compare the times");
  val->add_option("measured", v->input,
                  "Result CSV of measured runs, or nccl-tests' all_reduce_perf output (text log "
                  "or -J JSON) ('-': stdin)");
  v->algorithm_option = val->add_option(
      "--algorithm", v->algorithm,
      std::string("nccl-tests logs: the algorithm to simulate for every size (default ") +
          kValidateNcclTestsAlgorithm + ")");
  val->add_option("--timeline", v->timeline,
                  "Instead of a result CSV: a timeline of stragglesim-gpu run --timeline, "
                  "compared round by round");
  val->add_option("-O,--option", v->options,
                  "ALG:KEY=VALUE: an option of ALG's runs for files without an options column "
                  "(repeatable), e.g. hierarchical:gpus_per_node=4; nccl-tests logs: of "
                  "--algorithm, e.g. nccl_ring:channels=24");
  val->add_option("--topology", v->topology, "Topology YAML (e.g. written by calibrate -o)")
      ->required();
  val->add_option("--network", v->network,
                  std::string("Network model (default alphabeta; ") + kValidateNcclTestsNetwork +
                      " for nccl-tests logs)")
      ->check(CLI::IsMember({"alphabeta", "flow"}));
  val->add_option("--steps", v->steps,
                  "nccl-tests logs: how NCCL kernels take their steps' latencies, pipelined "
                  "(overlapped, the default) or per_round (network: {steps: ...})")
      ->check(CLI::IsMember({"per_round", "pipelined"}));
  val->add_option("--gamma", v->gamma,
                  "Reduce cost (default: the topology's provenance.gamma, else 0)");
  val->add_option("-o,--output", v->output,
                  "Write the simulated rows as a result CSV (source=simulated); with --timeline "
                  "the comparison per rank and round; with an nccl-tests log the comparison per "
                  "size");
  val->callback([v] { run_validate(*v); });
}

}  // namespace ssim::experiments
