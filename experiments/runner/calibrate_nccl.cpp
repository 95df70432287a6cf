#include "experiments/runner/calibrate_nccl.hpp"

#include <fnmatch.h>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <limits>
#include <span>
#include <tuple>

#include "calibration/minimize.hpp"
#include "common/error.hpp"
#include "common/units.hpp"
#include "schema/result_csv.hpp"

namespace ssim::experiments {
namespace {

struct Holdout {
  std::string text, column, op, value;
  double bytes = 0;
};

Holdout parse_holdout(const std::string& text) {
  for (const char* op : {"!=", "<=", ">=", "=", "<", ">"}) {
    const std::size_t at = text.find(op);
    if (at == std::string::npos || at == 0) continue;
    Holdout h{text, text.substr(0, at), op, text.substr(at + std::string(op).size()), 0};
    if (h.value.empty()) throw InputError("--holdout '" + text + "': no value after " + h.op);
    if (h.column == "file") {
      if (h.op != "=" && h.op != "!=")
        throw InputError("--holdout '" + text + "': file compares with = or != only");
      return h;
    }
    if (h.column == "bytes") {
      try {
        h.bytes = static_cast<double>(parse_bytes(h.value).value);
      } catch (const InputError& e) {
        throw InputError("--holdout '" + text + "': " + e.what());
      }
      return h;
    }
    throw InputError("--holdout '" + text + "': unknown column '" + h.column +
                     "' (nccl-tests logs: bytes or file, e.g. 'bytes<1MiB' or 'file=15-*')");
  }
  throw InputError("--holdout '" + text +
                   "': expected COLUMN OP VALUE (nccl-tests logs: bytes or file; OP: = != < <= > >=), "
                   "e.g. 'bytes<1MiB'");
}

bool matches(const Holdout& h, const std::string& file, std::uint64_t bytes) {
  if (h.column == "file") {
    const bool eq =
        fnmatch(h.value.c_str(), std::filesystem::path(file).filename().string().c_str(), 0) == 0;
    return h.op == "=" ? eq : !eq;
  }
  const double b = static_cast<double>(bytes);
  if (h.op == "=") return b == h.bytes;
  if (h.op == "!=") return b != h.bytes;
  if (h.op == "<") return b < h.bytes;
  if (h.op == "<=") return b <= h.bytes;
  if (h.op == ">") return b > h.bytes;
  return b >= h.bytes;
}

// One simulation: a log's size, with that log's options.
struct Case {
  std::size_t log = 0;
  std::uint64_t bytes = 0;
  bool fitted = false;  // some row of it is fitted
  double simulated = 0;
};

}  // namespace

NcclLogFit fit_nccl_logs(const std::vector<NcclLogInput>& logs, const NcclLogFitOptions& o) {
  if (logs.empty()) throw InputError("no nccl-tests log to fit");
  NcclLogFit fit;
  std::vector<calib::PositiveParameter> free;
  for (const NcclLogParameter& p : o.parameters) {
    fit.values[p.name] = p.value;
    if (!p.fitted) continue;
    if (!(p.value > 0) || !std::isfinite(p.value)) {
      throw InputError("parameter " + p.name + " starts at " + std::to_string(p.value) +
                       ": a fitted parameter needs a start > 0 (give one with --fix or in the file)");
    }
    free.push_back({p.name, p.value / 100, p.value * 100, p.value});
    fit.fitted.push_back(p.name);
  }
  if (free.empty()) throw InputError("no parameter to fit (every one is fixed)");
  std::vector<Holdout> holdouts;
  for (const std::string& h : o.holdout) holdouts.push_back(parse_holdout(h));

  const topo::Topology start = o.topology(fit.values);
  const int gpus = start.gpu_count();
  const alg::AlgorithmInfo& info = alg::find_algorithm(o.algorithm);

  // Per log: the options it ran under.
  std::vector<alg::Options> log_options;
  for (const NcclLogInput& in : logs) {
    const calib::NcclTestsLog& log = in.log;
    if (log.ranks && *log.ranks != gpus) {
      const std::string where = log.ranks_line > 0 ? in.name + ":" + std::to_string(log.ranks_line) : in.name;
      throw InputError(where + ": the log ran " + calib::describe_ranks(log) + ", and the topology has " +
                       std::to_string(gpus) + " GPUs");
    }
    if (!log.ranks && (gpus < log.rows_min_ranks || gpus > log.rows_max_ranks)) {
      throw InputError(in.name + ": the rows' busbw/algbw = 2(n-1)/n allow n = " +
                       std::to_string(log.rows_min_ranks) + ".." + std::to_string(log.rows_max_ranks) +
                       " ranks, and the topology has " + std::to_string(gpus) + " GPUs");
    }
    alg::Options opts = o.options;
    if (info.name == "nccl") {
      for (auto [key, value, line, mapped] :
           {std::tuple{"algo", log.nccl_algo, log.nccl_algo_line, calib::nccl_algo_option(log.nccl_algo)},
            std::tuple{"proto", log.nccl_proto, log.nccl_proto_line, calib::nccl_proto_option(log.nccl_proto)}}) {
        if (value.empty() || opts.has(key)) continue;
        const std::string setting = std::string(key == std::string("algo") ? "NCCL_ALGO=" : "NCCL_PROTO=") + value;
        if (mapped.empty()) {
          fit.notes.push_back(in.name + ":" + std::to_string(line) + ": " + setting +
                              " is not one " + (key == std::string("algo") ? "algorithm" : "protocol") +
                              ": NCCL's choice among all is simulated");
          continue;
        }
        opts.set(key, mapped);
      }
    }
    if (info.takes("gpus_per_node") && start.gpus_per_node > 0 && !opts.has("gpus_per_node"))
      opts.set("gpus_per_node", std::to_string(start.gpus_per_node));
    if (info.check_options) {
      try {
        info.check_options(gpus, opts);
      } catch (const InputError& e) {
        const int line = opts.has("algo") && log.nccl_algo_line > 0 ? log.nccl_algo_line : 0;
        throw InputError(in.name + (line > 0 ? ":" + std::to_string(line) : std::string()) + ": " +
                         info.name + " (" + schema::canonical_options(opts.values()) + "): " + e.what());
      }
    }
    fit.log_options[in.name] = schema::canonical_options(opts.values());
    log_options.push_back(std::move(opts));
  }

  // Rows and the distinct simulations.
  std::vector<Case> cases;
  std::map<std::pair<std::size_t, std::uint64_t>, std::size_t> case_of;
  std::vector<std::size_t> row_case;
  for (std::size_t li = 0; li < logs.size(); ++li) {
    for (const calib::NcclTestsRow& r : logs[li].log.rows) {
      if (r.bytes == 0) continue;
      if ((r.out_of_place.wrong && *r.out_of_place.wrong > 0) ||
          (r.in_place && r.in_place->wrong && *r.in_place->wrong > 0))
        continue;
      NcclLogRow row;
      row.file = logs[li].name;
      row.line = r.line;
      row.bytes = r.bytes;
      row.measured = r.out_of_place.time_us * 1e-6;
      for (const Holdout& h : holdouts) row.held_out = row.held_out || matches(h, row.file, row.bytes);
      auto [it, added] = case_of.emplace(std::pair{li, r.bytes}, cases.size());
      if (added) cases.push_back(Case{li, r.bytes, false, 0});
      cases[it->second].fitted = cases[it->second].fitted || !row.held_out;
      row_case.push_back(it->second);
      fit.rows.push_back(row);
    }
  }
  std::size_t fitted_rows = 0;
  for (const NcclLogRow& r : fit.rows) fitted_rows += r.held_out ? 0 : 1;
  if (fitted_rows == 0) throw InputError("no row of the logs is left to fit (see --holdout)");
  if (fitted_rows < free.size() + 1) {
    throw InputError("fewer fitted rows (" + std::to_string(fitted_rows) + ") than parameters plus one (" +
                     std::to_string(free.size()) + " fitted)");
  }
  for (const Case& c : cases) fit.simulations += c.fitted ? 1 : 0;

  const auto simulate = [&](const topo::Topology& t, bool all) {
    for (Case& c : cases) {
      if (!all && !c.fitted) continue;
      sim::SimulationConfig config;
      config.topology = t;
      config.network = o.network;
      config.pipelined_kernels = o.pipelined_steps;
      config.algorithm = info.name;
      config.options = log_options[c.log];
      config.size = Bytes{c.bytes};
      try {
        c.simulated = sim::run_simulation(config).iterations.front().completion.value;
      } catch (const InputError& e) {
        throw InputError(logs[c.log].name + ": " + info.name + " (" + fit.log_options[logs[c.log].name] +
                         ") at " + format_bytes(Bytes{c.bytes}) + ": " + e.what());
      }
    }
  };
  const auto objective = [&](bool held_out) {
    double sum = 0;
    std::size_t n = 0;
    for (std::size_t i = 0; i < fit.rows.size(); ++i) {
      if (fit.rows[i].held_out != held_out) continue;
      const double e = (cases[row_case[i]].simulated - fit.rows[i].measured) / fit.rows[i].measured;
      sum += e * e;
      ++n;
    }
    return n == 0 ? 0.0 : std::sqrt(sum / static_cast<double>(n));
  };
  // The start is simulated first, so that a setting the machine refuses is said before the fit.
  simulate(start, false);

  calib::MinimizeOptions mo;
  mo.max_evaluations = o.max_evaluations;
  mo.seed = o.seed;
  const calib::MinimizeResult r = calib::minimize_positive(
      [&](std::span<const double> x) {
        std::map<std::string, double> v = fit.values;
        for (std::size_t i = 0; i < free.size(); ++i) v[free[i].name] = x[i];
        topo::Topology t;
        try {
          t = o.topology(v);
        } catch (const InputError&) {
          return std::numeric_limits<double>::infinity();  // outside what the file's kind accepts
        }
        simulate(t, false);
        return objective(false);
      },
      free, mo);
  for (std::size_t i = 0; i < free.size(); ++i) fit.values[free[i].name] = r.x[i];
  fit.evaluations = r.evaluations;
  fit.converged = r.converged;
  simulate(o.topology(fit.values), true);
  for (std::size_t i = 0; i < fit.rows.size(); ++i) fit.rows[i].simulated = cases[row_case[i]].simulated;
  fit.objective = objective(false);
  return fit;
}

}  // namespace ssim::experiments
