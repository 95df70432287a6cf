// `stragglesim calibrate LOG... --topology FILE`: a machine's bandwidth and latency keys fitted
// by simulation so that `nccl` (or --algorithm) takes the nccl-tests logs' measured times
// (experiments/runner/calibrate_nccl.hpp); the report, --rows-output and -o.
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <iostream>
#include <sstream>

#include "common/error.hpp"
#include "common/stats.hpp"
#include "experiments/cli/commands.hpp"
#include "experiments/config/config.hpp"
#include "experiments/config/data_files.hpp"
#include "experiments/config/files.hpp"
#include "experiments/runner/calibrate_nccl.hpp"
#include "schema/result_csv.hpp"

namespace ssim::experiments {
namespace {

std::string shown(const TopologyKnob& k, double v) {
  return k.bandwidth ? printf_text("%.4g GB/s", v / 1e9) : printf_text("%.4g us", v * 1e6);
}

// The default fitted set: NVLink's and the NICs' bandwidth and latency (or a one-level file's
// own), not the fabric's or a switch's reduction.
bool fitted_by_default(const std::string& key) {
  if (key.find(".reduce.") != std::string::npos) return false;
  return key == "bandwidth" || key == "latency" || key.starts_with("nvlink.") || key.starts_with("nic.");
}

// median and max |error| of the rows `pick` selects, or "-".
std::string errors(const std::vector<NcclLogRow>& rows, const std::function<bool(const NcclLogRow&)>& pick) {
  std::vector<double> e;
  for (const NcclLogRow& r : rows)
    if (pick(r)) e.push_back(std::fabs(r.error()));
  if (e.empty()) return "-";
  return std::to_string(e.size()) + " rows, median " + printf_text("%.1f%%", 100 * quantile(e, 0.5)) + ", max " +
         printf_text("%.1f%%", 100 * *std::max_element(e.begin(), e.end()));
}

}  // namespace

void run_calibrate_nccl_logs(const NcclLogCalibrateArgs& a) {
  const std::string topology_path = topology_file_argument(a.topology, "--topology");
  std::vector<NcclLogInput> logs;
  for (const std::string& path : a.inputs) {
    const std::string text = read_input(path);
    const std::string name = path == "-" ? "<stdin>" : path;
    if (!calib::looks_like_nccl_tests(text)) {
      throw InputError(name + ": not an nccl-tests log (no all_reduce_perf column header or -J JSON): "
                              "calibrate --topology fits nccl-tests logs");
    }
    logs.push_back({name, calib::parse_nccl_tests(text, name)});
  }

  const std::vector<TopologyKnob> knobs = topology_knobs(topology_path);
  if (knobs.empty()) {
    throw InputError("--topology " + topology_path +
                     ": no bandwidth or latency key to fit (a custom topology's links are a list)");
  }
  const auto knob = [&](const std::string& key, const std::string& flag) -> const TopologyKnob& {
    for (const TopologyKnob& k : knobs)
      if (k.key == key) return k;
    std::string list;
    for (const TopologyKnob& k : knobs) list += (list.empty() ? "" : ", ") + k.key;
    throw InputError(flag + " " + key + ": not a key of " + topology_path + " (its parameters: " + list + ")");
  };
  NcclLogFitOptions o;
  std::map<std::string, double> fixed;
  for (const std::string& item : a.fix) {
    const std::size_t eq = item.find('=');
    if (eq == std::string::npos || eq == 0 || eq + 1 == item.size())
      throw InputError("--fix '" + item + "': expected KEY=VALUE, e.g. nic.bandwidth=50GB/s");
    const std::string key = item.substr(0, eq), text = item.substr(eq + 1);
    const TopologyKnob& k = knob(key, "--fix");
    if (fixed.count(key)) throw InputError("--fix " + key + " given twice");
    try {
      fixed[key] = k.bandwidth ? parse_bandwidth(text).value : parse_time(text).value;
    } catch (const InputError& e) {
      throw InputError("--fix " + item + ": " + e.what());
    }
  }
  for (const std::string& key : a.fit) {
    (void)knob(key, "--fit");
    if (fixed.count(key)) throw InputError("parameter " + key + " is both fixed (--fix) and fitted (--fit)");
  }
  for (const TopologyKnob& k : knobs) {
    const bool fitted = !fixed.count(k.key) &&
                        (fitted_by_default(k.key) || std::find(a.fit.begin(), a.fit.end(), k.key) != a.fit.end());
    o.parameters.push_back({k.key, fixed.count(k.key) ? fixed[k.key] : k.value, fitted});
  }
  o.topology = [&](const std::map<std::string, double>& v) { return load_topology_with(topology_path, v); };
  o.algorithm = a.algorithm.empty() ? "nccl" : a.algorithm;
  const alg::AlgorithmInfo& info = [&]() -> const alg::AlgorithmInfo& {
    try {
      return alg::find_algorithm(o.algorithm);
    } catch (const InputError& e) {
      throw InputError(std::string("--algorithm: ") + e.what());
    }
  }();
  for (const std::string& item : a.options) {
    const std::size_t colon = item.find(':'), eq = item.find('=');
    if (colon == std::string::npos || eq == std::string::npos || eq < colon || colon == 0)
      throw InputError("-O '" + item + "': expected ALGO:KEY=VALUE, e.g. nccl:algo=ring");
    if (item.substr(0, colon) != info.name) {
      throw InputError("-O " + item + ": the logs are fitted with " + info.name + " (--algorithm), not " +
                       item.substr(0, colon));
    }
    o.options.set(item.substr(colon + 1, eq - colon - 1), item.substr(eq + 1));
  }
  o.network = sim::parse_network_kind(a.network.empty() ? kValidateNcclTestsNetwork : a.network);
  o.pipelined_steps = a.steps != "per_round";
  o.holdout = a.holdout;
  o.max_evaluations = a.max_evaluations;
  o.seed = a.seed;

  std::cout << "calibrate: " << logs.size() << " nccl-tests log" << (logs.size() == 1 ? "" : "s") << " against "
            << topology_path << ", " << sim::to_string(o.network) << " model"
            << (o.pipelined_steps ? "" : ", per-round steps") << ", " << info.name << "\n";
  const NcclLogFit fit = fit_nccl_logs(logs, o);
  for (const NcclLogInput& in : logs) {
    const std::string& opts = fit.log_options.at(in.name);
    std::cout << "  " << in.name << ": " << calib::describe_ranks(in.log) << "; simulated with "
              << (opts.empty() ? std::string("no options") : opts)
              << (in.log.nccl_algo.empty() ? "" : " (NCCL_ALGO=" + in.log.nccl_algo + ", line " +
                                                     std::to_string(in.log.nccl_algo_line) + ")")
              << "\n";
  }
  for (const std::string& n : fit.notes) std::cout << "  note: " << n << "\n";
  std::cout << "parameters (the file's value -> the fit's):\n";
  char buf[200];
  for (const TopologyKnob& k : knobs) {
    const double v = fit.values.at(k.key);
    const bool fitted = std::find(fit.fitted.begin(), fit.fitted.end(), k.key) != fit.fitted.end();
    std::snprintf(buf, sizeof buf, "  %-24s %12s -> %-12s %s\n", k.key.c_str(), shown(k, k.value).c_str(),
                  shown(k, v).c_str(),
                  fitted ? "fitted" : fixed.count(k.key) ? "fixed (--fix)" : "the file's");
    std::cout << buf;
  }
  std::cout << "fit: RMS relative error " << printf_text("%.2f%%", 100 * fit.objective) << " over the fitted rows, "
            << fit.simulations << " simulations per evaluation, " << fit.evaluations << " evaluations"
            << (fit.converged ? "" : " (NOT converged)") << "\n";
  const auto large = [](const NcclLogRow& r) { return r.bytes >= (std::uint64_t{1} << 20); };
  for (const auto& [label, held_value] : {std::pair{"fitted  ", false}, std::pair{"held out", true}}) {
    const bool held = held_value;  // a copy: lambdas cannot capture a structured binding in C++20
    std::cout << "  " << label << "  >= 1 MiB: "
              << errors(fit.rows, [&](const NcclLogRow& r) { return r.held_out == held && large(r); })
              << "; < 1 MiB: "
              << errors(fit.rows, [&](const NcclLogRow& r) { return r.held_out == held && !large(r); })
              << "\n";
  }
  if (!fit.converged) {
    throw InputError("the fit did not converge within --max-evaluations " + std::to_string(a.max_evaluations) +
                        " (best RMS error " + printf_text("%.2f%%", 100 * fit.objective) + "); nothing written");
  }

  if (!a.rows_output.empty()) {
    std::ostringstream csv;
    csv << "file,line,bytes,measured_s,simulated_s,error,held_out\n";
    for (const NcclLogRow& r : fit.rows) {
      csv << schema::csv_field(r.file) << "," << r.line << "," << r.bytes << "," << schema::csv_number(r.measured)
          << "," << schema::csv_number(r.simulated) << "," << schema::csv_number(r.error()) << ","
          << (r.held_out ? "true" : "false") << "\n";
    }
    write_output(a.rows_output, csv.str());
    std::cout << "wrote " << a.rows_output << ": " << fit.rows.size() << " rows\n";
  }
  if (a.output.empty()) return;
  std::map<std::string, double> written;
  for (const NcclLogParameter& p : o.parameters)
    if (p.fitted || fixed.count(p.name)) written[p.name] = fit.values.at(p.name);
  std::string sources, fitted_keys, fixed_keys, options;
  for (const NcclLogInput& in : logs) {
    sources += (sources.empty() ? "" : ", ") + in.name;
    options += (options.empty() ? "" : "; ") + std::filesystem::path(in.name).filename().string() + ": " +
               fit.log_options.at(in.name);
  }
  std::string holdout;
  for (const std::string& h : a.holdout) holdout += (holdout.empty() ? "" : ", ") + h;
  for (const std::string& k : fit.fitted) fitted_keys += (fitted_keys.empty() ? "" : ", ") + k;
  for (const auto& [k, v] : fixed) fixed_keys += (fixed_keys.empty() ? "" : ", ") + k;
  std::string machine = a.machine;
  if (machine.empty() && !logs.front().log.device.empty()) machine = logs.front().log.device;
  if (machine.empty()) throw InputError("-o needs --machine TEXT: the logs do not say where they ran");
  std::vector<double> fitted_errors, held_errors;
  for (const NcclLogRow& r : fit.rows) (r.held_out ? held_errors : fitted_errors).push_back(std::fabs(r.error()));
  const std::vector<std::pair<std::string, std::string>> provenance = {
      {"machine", machine},
      {"date", schema::utc_timestamp_now()},
      {"source", sources},
      {"input", "nccl-tests all_reduce_perf logs (out-of-place times), simulated as " + info.name + " (" +
                    options + ")"},
      {"network", std::string(sim::to_string(o.network)) +
                      (o.pipelined_steps ? "" : ", steps: per_round")},
      {"fitted", fitted_keys},
      {"fixed", fixed_keys.empty() ? std::string("none") : fixed_keys},
      {"holdout", holdout.empty() ? std::string("none") : holdout},
      {"fit", "Nelder-Mead on log-parameters (within the file's value / 100 .. x 100), RMS relative error "
              "of the simulated out-of-place times: " + printf_text("%.4g", fit.objective)},
      {"residual", "median |relative error| " + printf_text("%.2f%%", 100 * quantile(fitted_errors, 0.5)) +
                       " on the fitted rows" +
                       (held_errors.empty() ? std::string()
                                            : ", " + printf_text("%.2f%%", 100 * quantile(held_errors, 0.5)) +
                                                  " held out")}};
  const std::string yaml = topology_yaml_with(topology_path, written, provenance);
  try {
    const ConfigReader back = ConfigReader::from_string(yaml, a.output);
    (void)load_topology(back.root(), std::filesystem::path(topology_path).parent_path().string());
  } catch (const InputError& e) {
    throw InputError("-o " + a.output + ": the fitted topology would not load (" + e.what() + "); nothing written");
  }
  write_output(a.output, yaml);
  std::cout << "wrote " << a.output << ": " << topology_path << " with " << written.size()
            << " keys replaced and its provenance\n";
}

}  // namespace ssim::experiments
