// stragglesim._core: the extension module of the Python package (docs/python.md). It calls the
// functions the CLI's subcommands call (experiments/cli, experiments/runner), with the same
// checks in the same order, so a bad input raises the message `stragglesim` prints after
// "stragglesim: error: ". The Python layer (stragglesim/__init__.py) turns keyword arguments
// into the CLI's option items, a dict config into YAML text, and the columns below into a
// pandas DataFrame when pandas is installed.
//
// Errors: ssim::InputError -> stragglesim.InputError (a ValueError), UsageError ->
// stragglesim.UsageError (ValueError), ResourceError -> stragglesim.ResourceError
// (RuntimeError), InternalError -> stragglesim.InternalError (RuntimeError), Interrupted ->
// KeyboardInterrupt. Long calls run without the GIL; a simulation checks Python's signals
// (PyErr_CheckSignals, at most every 50 ms) before each iteration and a training job before
// each step (common/cancel.hpp), `run` and `advise` install the CLI's SIGINT handler
// (common/interrupt.hpp) for their runs. `advise` and `train` take their flags as the CLI's
// argument list, parsed by the CLI's own parser (experiments/cli/advise.hpp, train.hpp).
#include <pybind11/numpy.h>
#include <pybind11/pybind11.h>
#include <pybind11/stl.h>

#include <dlfcn.h>

#include <algorithm>
#include <chrono>
#include <csignal>
#include <optional>
#include <sstream>
#include <string>
#include <vector>

#include "algorithms/registry.hpp"
#include "algorithms/verifier.hpp"
#include "common/cancel.hpp"
#include "common/error.hpp"
#include "common/interrupt.hpp"
#include "common/memory_budget.hpp"
#include "common/time_budget.hpp"
#include "common/units.hpp"
#include "experiments/cli/advise.hpp"
#include "experiments/cli/commands.hpp"
#include "experiments/cli/train.hpp"
#include "experiments/config/config.hpp"
#include "experiments/config/data_files.hpp"
#include "experiments/config/reader.hpp"
#include "experiments/config/resource_check.hpp"
#include "experiments/runner/experiment.hpp"
#include "lowering/plan.hpp"

namespace py = pybind11;

namespace {

using namespace ssim;

// Installs, for the scope of a call made on this thread, a cancellation check that takes the
// GIL at most every 50 ms and runs Python's signal handlers; a KeyboardInterrupt (or whatever
// a handler raised) travels up as py::error_already_set and is raised again in Python.
class PythonSignalCheck {
 public:
  PythonSignalCheck()
      : check_([last = std::chrono::steady_clock::time_point{}]() mutable {
          const auto now = std::chrono::steady_clock::now();
          if (now - last < std::chrono::milliseconds(50)) return;
          last = now;
          py::gil_scoped_acquire gil;
          if (PyErr_CheckSignals() != 0) throw py::error_already_set();
        }) {}

 private:
  CancellationCheck check_;
};

std::string op_name(alg::Op op) { return std::string(alg::to_string(op)); }

// The CLI's option items ("key=value") and straggler (-1: none), as `schedule` and `lower`
// check them.
alg::Options checked_options(const alg::AlgorithmInfo& info,
                             const std::vector<std::string>& items, int straggler) {
  return experiments::algorithm_options(info, items, straggler);
}

py::dict schedule_dict(const alg::Schedule& s, const alg::VerifyResult& v) {
  py::dict d;
  d["algorithm"] = s.algorithm;
  d["collective"] = std::string(alg::to_string(s.collective));
  d["ranks"] = s.ranks;
  d["chunks"] = s.chunks;
  d["straggler"] = s.straggler ? py::object(py::int_(*s.straggler)) : py::object(py::none());
  d["late"] = s.late;
  d["options"] = s.options;
  py::list rounds;
  for (const alg::Round& r : s.rounds) {
    py::dict round;
    round["phase"] = r.phase;
    py::list transfers;
    for (const alg::Transfer& t : r.transfers)
      transfers.append(py::make_tuple(t.src, t.dst, t.chunk_begin, t.chunk_end, op_name(t.op)));
    round["transfers"] = transfers;
    if (!r.switch_reduces.empty()) {
      py::list reduces;
      for (const alg::SwitchReduce& g : r.switch_reduces)
        reduces.append(py::make_tuple(g.members, g.receivers, g.chunk_begin, g.chunk_end));
      round["switch_reduces"] = reduces;
    }
    rounds.append(round);
  }
  d["rounds"] = rounds;
  d["transfers"] = s.transfer_count();
  d["verified"] = v.ok();
  d["summary"] = alg::format_summary(v.summary);
  return d;
}

// `stragglesim schedule ALGO --ranks N [--option k=v ...] [--straggler R]`, as data.
py::dict schedule(const std::string& algorithm, int ranks, const std::vector<std::string>& items,
                  int straggler, const std::string& max_memory, const std::string& max_time) {
  const alg::AlgorithmInfo& info = alg::find_algorithm(algorithm);
  const alg::Options options = checked_options(info, items, straggler);
  if (info.supports_ranks(ranks)) {
    experiments::check_schedule_memory(MemoryBudget::from_flag(max_memory), info.name, ranks,
                                       options, /*verify=*/true);
    experiments::check_schedule_time(TimeBudget::from_flag(max_time), info.name, ranks, options);
  }
  alg::Schedule s;
  alg::VerifyResult v;
  {
    py::gil_scoped_release release;
    s = alg::generate(algorithm, ranks, options);
    v = alg::verify(s);
  }
  if (!v.ok()) {
    throw InternalError("generated " + info.name + " schedule for " + std::to_string(ranks) +
                        " ranks fails verification: " + v.error->to_string());
  }
  return schedule_dict(s, v);
}

py::list p2p_list(const std::vector<lowering::P2P>& v) {
  py::list l;
  for (const lowering::P2P& p : v) l.append(py::make_tuple(p.peer, p.offset, p.count));
  return l;
}

// `stragglesim lower ALGO --ranks N --bytes B [--dtype T] [--align A] ...`, as data.
py::dict lower(const std::string& algorithm, int ranks, const std::string& bytes_text,
               const std::string& dtype_name, std::uint64_t align,
               const std::vector<std::string>& items, int straggler,
               const std::string& max_memory, const std::string& max_time) {
  Bytes bytes;
  try {
    bytes = parse_bytes(bytes_text);
  } catch (const InputError& e) {
    throw InputError(std::string("--bytes: ") + e.what());
  }
  const lowering::DType dtype = lowering::parse_dtype(dtype_name);
  try {
    lowering::check_align(align, dtype);
  } catch (const InputError& e) {
    throw InputError(std::string("--align: ") + e.what());
  }
  const alg::AlgorithmInfo& info = alg::find_algorithm(algorithm);
  const alg::Options options = checked_options(info, items, straggler);
  if (info.supports_ranks(ranks)) {
    experiments::check_lower_resources(MemoryBudget::from_flag(max_memory),
                                       TimeBudget::from_flag(max_time), info.name, ranks, options);
  }
  lowering::Plan plan;
  std::optional<int> schedule_straggler;
  {
    py::gil_scoped_release release;
    const alg::Schedule s = alg::generate(algorithm, ranks, options);
    schedule_straggler = s.straggler;
    plan = lowering::lower(s, bytes.value, dtype, align);
  }
  py::dict d;
  d["algorithm"] = plan.algorithm;
  d["collective"] = std::string(alg::to_string(plan.collective));
  d["ranks"] = plan.ranks;
  d["rounds"] = plan.rounds;
  d["straggler"] = schedule_straggler ? py::object(py::int_(*schedule_straggler))
                                      : py::object(py::none());
  const lowering::BufferLayout& l = plan.layout;
  py::dict layout;
  layout["dtype"] = std::string(lowering::to_string(l.dtype));
  layout["dtype_size"] = lowering::dtype_size(l.dtype);
  layout["chunks"] = l.chunks;
  layout["align"] = l.align;
  layout["bytes"] = l.bytes;
  layout["count"] = l.count;
  layout["chunk_count"] = l.chunk_count;
  layout["padded_count"] = l.padded_count();
  layout["padded_bytes"] = l.padded_bytes();
  d["layout"] = layout;
  py::list ranks_list;
  for (const lowering::RankPlan& rp : plan.rank_plans) {
    py::list steps;
    for (const lowering::Step& st : rp.steps) {
      py::dict step;
      step["round"] = st.round;
      step["sends"] = p2p_list(st.sends);
      step["recvs"] = p2p_list(st.recvs);
      py::list applies;
      for (const lowering::Apply& a : st.applies)
        applies.append(py::make_tuple(op_name(a.op), a.offset, a.scratch_offset, a.count));
      step["applies"] = applies;
      step["scratch_bytes"] = st.scratch_bytes;
      steps.append(step);
    }
    py::dict rank;
    rank["steps"] = steps;
    rank["scratch_bytes"] = rp.scratch_bytes;
    ranks_list.append(rank);
  }
  d["rank_plans"] = ranks_list;
  return d;
}

py::list algorithms() {
  py::list out;
  for (const alg::AlgorithmInfo& a : alg::algorithms()) {
    py::dict d;
    d["name"] = a.name;
    d["description"] = a.description;
    d["supported_ranks"] = a.supported_ranks;
    d["straggler_aware"] = a.straggler_aware;
    d["in_network"] = a.in_network;
    py::list options;
    for (const alg::OptionSpec& o : a.options)
      options.append(py::make_tuple(o.name, o.description, o.default_value));
    d["options"] = options;
    out.append(d);
  }
  return out;
}

bool supports_ranks(const std::string& algorithm, int ranks) {
  return alg::find_algorithm(algorithm).supports_ranks(ranks);
}

// A YAML file (`source` is its path) or YAML text (`name` names it in messages; relative paths
// in it are relative to the current folder).
experiments::ConfigReader open_config(const std::string& source, bool is_text,
                                      const std::string& name) {
  return is_text ? experiments::ConfigReader::from_string(source, name)
                 : experiments::ConfigReader(source);
}

void parse_flags(CLI::App& app, const std::vector<std::string>& flags);

// The flags `simulate` and `run` share with the CLI (-n, --seed, --threads; -j for `run`),
// registered with the CLI's ranges and messages and parsed by CLI11 as the CLI parses them,
// so a value out of range raises the CLI's UsageError instead of falling back to a default.
struct RunFlags {
  int iterations = 0;   // 0: as configured
  long long seed = -1;  // -1: as configured
  int jobs = 0;         // 0: every core
  int threads = 1;
};

RunFlags parse_run_flags(const std::string& subcommand, const std::vector<std::string>& flags) {
  CLI::App app{"stragglesim", "stragglesim"};
  RunFlags f;
  CLI::App* cmd = app.add_subcommand(subcommand);
  cmd->add_option("-n,--iterations", f.iterations)->check(CLI::Range(1, 10'000'000));
  experiments::add_seed_option(*cmd, f.seed, "");
  if (subcommand == "run") cmd->add_option("-j,--jobs", f.jobs)->check(CLI::Range(1, 1024));
  experiments::add_threads_option(*cmd, f.threads);
  std::vector<std::string> args{subcommand};
  args.insert(args.end(), flags.begin(), flags.end());
  parse_flags(app, args);
  return f;
}

template <class T, class F>
py::array_t<T> column(const std::vector<sim::IterationSummary>& its, F get) {
  py::array_t<T> a(static_cast<py::ssize_t>(its.size()));
  auto w = a.template mutable_unchecked<1>();
  for (std::size_t i = 0; i < its.size(); ++i) w(static_cast<py::ssize_t>(i)) = get(its[i]);
  return a;
}

// `stragglesim simulate CONFIG [--json] [--per-rank] [-n N] [--seed S]`: the columns of the JSON
// output's iterations (same names) and its summary fields.
py::tuple simulate(const std::string& source, bool is_text, const std::string& name,
                   const std::vector<std::string>& flags, bool per_rank,
                   const std::string& max_memory, const std::string& max_time) {
  const RunFlags f = parse_run_flags("simulate", flags);
  const int iterations = f.iterations;
  const long long seed = f.seed;
  const std::string where = is_text ? name : source;
  const experiments::ConfigReader reader = open_config(source, is_text, name);
  const experiments::Experiment e =
      experiments::load_experiment(reader, experiments::ConfigCommand::simulate);
  sim::SimulationConfig c = experiments::run_config(e, 0);
  const std::string schedule_file = e.algorithms[0].schedule_file;
  if (iterations > 0) c.iterations = iterations;
  c.per_rank_times = per_rank;
  if (seed >= 0) c.seed = static_cast<std::uint64_t>(seed);
  c.threads = experiments::threads_per_run(1, f.threads);
  experiments::check_simulation_memory(MemoryBudget::from_flag(max_memory), c);
  experiments::check_simulation_time(TimeBudget::from_flag(max_time), c);
  sim::SimulationResult r;
  {
    PythonSignalCheck check;
    py::gil_scoped_release release;
    try {
      r = sim::run_simulation(c);
    } catch (const InputError& ex) {
      throw InputError(where + ": " + ex.what());
    }
  }
  using It = sim::IterationSummary;
  const std::vector<It>& its = r.iterations;
  py::dict cols;
  cols["iteration"] = column<std::int64_t>(its, [](const It& i) { return i.iteration; });
  cols["completion_s"] = column<double>(its, [](const It& i) { return i.completion.value; });
  cols["after_last_arrival_s"] =
      column<double>(its, [](const It& i) { return i.after_last_arrival.value; });
  cols["algbw_GBps"] = column<double>(its, [](const It& i) { return i.algbw.value / 1e9; });
  cols["busbw_GBps"] = column<double>(its, [](const It& i) { return i.busbw.value / 1e9; });
  cols["last_rank"] = column<std::int64_t>(its, [](const It& i) { return i.last_rank; });
  cols["predicted_straggler"] =
      column<std::int64_t>(its, [](const It& i) { return i.predicted_straggler; });
  std::vector<std::string> chosen;
  chosen.reserve(its.size());
  for (const It& i : its) chosen.push_back(i.chosen.empty() ? r.algorithm : i.chosen);
  cols["chosen"] = chosen;
  py::dict attrs;
  attrs["config"] = where;
  if (!schedule_file.empty()) attrs["schedule_file"] = schedule_file;
  attrs["algorithm"] = r.algorithm;
  attrs["ranks"] = r.ranks;
  attrs["chunks"] = r.chunks;
  attrs["rounds"] = r.rounds;
  attrs["transfers"] = r.transfers;
  attrs["straggler_aware"] = r.straggler_aware;
  attrs["mean_completion_s"] = r.mean_completion.value;
  attrs["mean_after_last_arrival_s"] = r.mean_after_last_arrival.value;
  attrs["algbw_GBps"] = r.algbw.value / 1e9;
  attrs["busbw_GBps"] = r.busbw.value / 1e9;
  attrs["prediction_accuracy"] = r.prediction_accuracy;
  attrs["fallback_fraction"] = r.fallback_fraction;
  attrs["seed"] = c.seed;
  attrs["iterations"] = c.iterations;
  attrs["shared_link"] = r.shared_link
                             ? py::object(py::str(experiments::shared_link_warning(*r.shared_link)))
                             : py::object(py::none());
  if (per_rank) {
    const py::ssize_t n = static_cast<py::ssize_t>(its.size()), k = r.ranks;
    py::array_t<double> arrival({n, k}), finish({n, k});
    auto a = arrival.mutable_unchecked<2>();
    auto f = finish.mutable_unchecked<2>();
    for (py::ssize_t i = 0; i < n; ++i) {
      const It& it = its[static_cast<std::size_t>(i)];
      for (py::ssize_t j = 0; j < k && j < static_cast<py::ssize_t>(it.finish.size()); ++j) {
        a(i, j) = it.arrival[static_cast<std::size_t>(j)].value;
        f(i, j) = it.finish[static_cast<std::size_t>(j)].value;
      }
    }
    attrs["arrival_s"] = arrival;
    attrs["finish_s"] = finish;
  }
  return py::make_tuple(cols, attrs);
}

// `stragglesim run EXPERIMENT -o OUTPUT [-j JOBS] [-n N] [--seed S] [--force] --no-plots -q`:
// the runs, results.csv and results.json written into `output` (the Python layer reads the CSV
// back). Returns the folder written and the files, in order.
py::tuple run(const std::string& source, bool is_text, const std::string& name,
              const std::string& output, const std::vector<std::string>& flags, bool force,
              const std::string& max_memory, const std::string& max_time) {
  const RunFlags f = parse_run_flags("run", flags);
  const int iterations = f.iterations, jobs = f.jobs, threads = f.threads;
  const long long seed = f.seed;
  experiments::require_threads_used(jobs, threads);
  const experiments::ConfigReader reader = open_config(source, is_text, name);
  experiments::Experiment e = experiments::load_experiment(reader);
  if (iterations > 0) experiments::set_iterations(e, iterations);
  if (seed >= 0) experiments::set_seed(e, static_cast<std::uint64_t>(seed));
  experiments::check_experiment_memory(MemoryBudget::from_flag(max_memory), e, jobs);
  experiments::RunnerOptions o;
  o.output = output;
  o.jobs = jobs;
  o.threads = threads;
  o.progress = experiments::Progress::none;
  o.force = force;
  experiments::check_experiment_time(TimeBudget::from_flag(max_time), e, jobs);
  std::optional<experiments::ExperimentResult> done;
  {
    py::gil_scoped_release release;
    clear_interrupt_signal();
    try {
      const InterruptGuard guard("stragglesim.run: stopping after the runs in flight");
      done = experiments::run_experiment(e, o);
    } catch (...) {
      clear_interrupt_signal();
      throw;
    }
  }
  return py::make_tuple(done->output, done->files, experiments::experiment_csv_columns(e));
}

using experiments::add_advise_options;
using experiments::add_train_options;
using experiments::AdviseArgs;
using experiments::AdviseRanking;
using experiments::AdviseRow;
using experiments::AlgorithmSummary;
using experiments::Experiment;
using experiments::TrainArgs;

// `flags` (the subcommand's name, then its flags as the CLI takes them) parsed by the CLI's
// own parser into what `app`'s subcommand registered: CLI11's checks (ranges, choices) and
// messages; a parse error is a UsageError with the message the CLI prints.
void parse_flags(CLI::App& app, const std::vector<std::string>& flags) {
  experiments::require_finite_numbers(app);
  std::vector<std::string> args(flags.rbegin(), flags.rend());  // CLI11 takes them reversed
  try {
    app.parse(args);
  } catch (const CLI::ParseError& e) {
    throw UsageError(e.what());
  }
}

// The lines written to `err` ("stragglesim: note: ...", "stragglesim: warning: ..."), without
// the prefix, by kind.
void split_messages(const std::string& text, py::list& notes, py::list& warnings) {
  std::istringstream in(text);
  std::string line;
  const std::string note = "stragglesim: note: ", warning = "stragglesim: warning: ";
  while (std::getline(in, line)) {
    if (line.rfind(note, 0) == 0) {
      notes.append(line.substr(note.size()));
    } else if (line.rfind(warning, 0) == 0) {
      warnings.append(line.substr(warning.size()));
    } else if (!line.empty()) {
      notes.append(line);
    }
  }
}

// `stragglesim advise FLAGS...`: the table's rows, fastest first, as columns, and what the
// table's header and the recommendation say.
py::tuple advise(const std::vector<std::string>& flags) {
  CLI::App app{"stragglesim", "stragglesim"};
  AdviseArgs a;
  add_advise_options(app, a);
  parse_flags(app, flags);
  std::ostringstream err;
  std::optional<AdviseRanking> ranking;
  std::optional<sim::SimulationResult> traced;
  {
    // As `run`: the CLI's SIGINT handler for the runs (common/interrupt.hpp); a signal stops
    // them after the runs in flight (Interrupted -> KeyboardInterrupt).
    py::gil_scoped_release release;
    clear_interrupt_signal();
    try {
      const InterruptGuard guard("stragglesim.advise: stopping after the runs in flight");
      ranking = experiments::rank_advise_candidates(a, err);
      if (!a.trace.empty()) {
        const AdviseRow& best = ranking->rows[ranking->order.front()];
        traced = experiments::write_trace(
            experiments::run_config(ranking->experiments[best.experiment], best.algorithm),
            a.trace_iteration, a.trace_links, a.trace_flags, a.trace, a.max_memory, a.max_time,
            "stragglesim advise");
      }
    } catch (...) {
      clear_interrupt_signal();
      throw;
    }
  }
  const AdviseRanking& r = *ranking;
  const std::size_t n = r.rows.size();
  py::array_t<std::int64_t> rank(static_cast<py::ssize_t>(n));
  py::array_t<double> mean(static_cast<py::ssize_t>(n)), p90(static_cast<py::ssize_t>(n)),
      after(static_cast<py::ssize_t>(n)), speedup(static_cast<py::ssize_t>(n)),
      fastest(static_cast<py::ssize_t>(n)), accuracy(static_cast<py::ssize_t>(n)),
      fallback(static_cast<py::ssize_t>(n));
  py::array_t<bool> aware(static_cast<py::ssize_t>(n));
  std::vector<std::string> label, policy;
  for (std::size_t i = 0; i < n; ++i) {
    const AdviseRow& row = r.rows[r.order[i]];
    const AlgorithmSummary& s = row.summary;
    const auto j = static_cast<py::ssize_t>(i);
    rank.mutable_at(j) = static_cast<std::int64_t>(i + 1);
    label.push_back(row.label);
    policy.push_back(s.straggler_aware ? r.policies[row.experiment] : std::string());
    mean.mutable_at(j) = s.mean_completion;
    p90.mutable_at(j) = s.p90_completion;
    after.mutable_at(j) = s.mean_after_last_arrival;
    speedup.mutable_at(j) = s.speedup;
    fastest.mutable_at(j) = r.wins[r.order[i]];
    aware.mutable_at(j) = s.straggler_aware;
    accuracy.mutable_at(j) = s.prediction_accuracy;
    fallback.mutable_at(j) = s.fallback_fraction;
  }
  py::dict cols;
  cols["rank"] = rank;
  cols["algorithm"] = label;
  cols["policy"] = policy;
  cols["mean_s"] = mean;
  cols["p90_s"] = p90;
  cols["after_last_arrival_s"] = after;
  cols["speedup"] = speedup;
  cols["fastest"] = fastest;
  cols["straggler_aware"] = aware;
  cols["prediction_accuracy"] = accuracy;
  cols["fallback_fraction"] = fallback;
  const Experiment& e = r.experiments.front();
  const sim::SimulationConfig& c = e.points.front().config;
  py::dict attrs;
  attrs["topology"] = c.topology.name;
  attrs["ranks"] = c.topology.gpu_count();
  attrs["size_bytes"] = c.size.value;
  attrs["workload"] = e.points.front().workload.has_value();
  attrs["network"] = std::string(sim::to_string(c.network));
  attrs["protocol"] = c.protocol ? py::object(py::str(std::string(alg::to_string(*c.protocol))))
                                 : py::object(py::none());
  attrs["delays"] = c.delays.describe();
  attrs["policies"] = r.policies;
  attrs["iterations"] = e.iterations;
  attrs["seed"] = e.seed;
  attrs["baseline"] = e.algorithms[e.baseline].label;
  attrs["recommended"] = r.rows[r.order.front()].label;
  attrs["left_out"] = r.left_out;
  if (traced) {
    attrs["trace"] = a.trace;
    attrs["trace_completion_s"] = traced->iterations.back().completion.value;
  }
  py::list notes, warnings;
  split_messages(err.str(), notes, warnings);
  attrs["notes"] = notes;
  attrs["warnings"] = warnings;
  return py::make_tuple(cols, attrs);
}

// `stragglesim train CONFIG --json FLAGS...`: the JSON the CLI prints (as text, parsed by the
// Python layer) and, with `per_step`, the steps CSV's columns.
py::tuple train(const std::string& source, bool is_text, const std::string& name,
                const std::vector<std::string>& flags, bool per_step) {
  CLI::App app{"stragglesim", "stragglesim"};
  TrainArgs a;
  add_train_options(app, a);
  std::vector<std::string> args{"train", is_text ? name : source};
  args.insert(args.end(), flags.begin(), flags.end());
  parse_flags(app, args);
  const experiments::ConfigReader reader = open_config(source, is_text, name);
  std::ostringstream err;
  const sim::TrainingConfig c = experiments::train_config(reader, a, err);
  // The steps CSV's columns (train.cpp's --steps-csv), filled without the GIL.
  std::vector<std::string> algorithm, options, mode, buckets, average, sat_out;
  std::vector<std::int64_t> step, slowest;
  std::vector<double> step_time, end, mean_idle, max_idle, exposed;
  sim::StepCallback on_step;
  if (per_step) {
    on_step = [&](const sim::TrainingRun& run, const sim::StepRecord& s) {
      algorithm.push_back(run.algorithm);
      options.push_back(experiments::options_text(run.options));
      mode.push_back(run.mode.describe());
      step.push_back(s.step);
      step_time.push_back(s.step_time.value);
      end.push_back(s.end.value);
      mean_idle.push_back(s.mean_idle.value);
      max_idle.push_back(s.max_idle.value);
      slowest.push_back(s.slowest_rank);
      exposed.push_back(s.exposed_comm.value);
      std::ostringstream b, v, o;
      for (std::size_t k = 0; k < s.buckets.size(); ++k) {
        if (k > 0) b << ' ';
        experiments::write_choice(b, s.buckets[k]);
      }
      if (s.average) experiments::write_choice(v, *s.average);
      for (std::size_t k = 0; k < s.sat_out.size(); ++k) o << (k > 0 ? " " : "") << s.sat_out[k];
      buckets.push_back(b.str());
      average.push_back(v.str());
      sat_out.push_back(o.str());
    };
  }
  sim::TrainingResult r;
  {
    PythonSignalCheck check;  // run_training checks it before each step
    py::gil_scoped_release release;
    r = experiments::run_train_job(c, a.config, on_step);
  }
  py::list notes, warnings;
  split_messages(err.str(), notes, warnings);
  for (const std::string& w : experiments::train_warnings(r)) warnings.append(w);
  py::object steps = py::none();
  if (per_step) {
    py::dict d;
    d["algorithm"] = algorithm;
    d["options"] = options;
    d["mode"] = mode;
    d["step"] = py::array_t<std::int64_t>(static_cast<py::ssize_t>(step.size()), step.data());
    d["step_time_s"] =
        py::array_t<double>(static_cast<py::ssize_t>(step_time.size()), step_time.data());
    d["end_s"] = py::array_t<double>(static_cast<py::ssize_t>(end.size()), end.data());
    d["mean_idle_s"] =
        py::array_t<double>(static_cast<py::ssize_t>(mean_idle.size()), mean_idle.data());
    d["max_idle_s"] =
        py::array_t<double>(static_cast<py::ssize_t>(max_idle.size()), max_idle.data());
    d["slowest_rank"] =
        py::array_t<std::int64_t>(static_cast<py::ssize_t>(slowest.size()), slowest.data());
    d["exposed_comm_s"] =
        py::array_t<double>(static_cast<py::ssize_t>(exposed.size()), exposed.data());
    d["bucket_runs"] = buckets;
    d["average_run"] = average;
    d["sat_out"] = sat_out;
    steps = d;
  }
  return py::make_tuple(experiments::train_summary_json(a.config, c, r).dump(), steps, notes,
                        warnings);
}

// Sets the Python error `exc` with the message. pybind11 2.12 deprecated calling the exception
// object (pybind/pybind11 PR 4772: py::set_error); Debian's 2.10 has only the call.
template <class E>
void raise_as(py::exception<E>& exc, const char* what) {
#if PYBIND11_VERSION_MAJOR > 2 || (PYBIND11_VERSION_MAJOR == 2 && PYBIND11_VERSION_MINOR >= 12)
  py::set_error(exc, printable(what).c_str());
#else
  exc(printable(what).c_str());
#endif
}

}  // namespace

PYBIND11_MODULE(_core, m) {
  m.doc() =
      "stragglesim's C++ core (schedules, lowering, simulation, experiments); use the "
      "`stragglesim` package, which wraps these functions.";
  m.attr("__version__") = STRAGGLESIM_VERSION_STRING;
  // Shipped data (configs/topologies/NAME.yaml) is found from this module's file, not from
  // the interpreter's (experiments/config/data_files.hpp).
  Dl_info info;
  if (dladdr(reinterpret_cast<void*>(&supports_ranks), &info) != 0 && info.dli_fname != nullptr)
    experiments::set_library_path(info.dli_fname);

  static py::exception<InputError> input_error(m, "InputError", PyExc_ValueError);
  static py::exception<UsageError> usage_error(m, "UsageError", PyExc_ValueError);
  static py::exception<ResourceError> resource_error(m, "ResourceError", PyExc_RuntimeError);
  static py::exception<InternalError> internal_error(m, "InternalError", PyExc_RuntimeError);
  input_error.attr("__doc__") =
      "Bad input: the message `stragglesim` prints after 'stragglesim: error: ' (exit 1).";
  usage_error.attr("__doc__") = "A misused option or a value out of its range (the CLI's exit 2).";
  resource_error.attr("__doc__") =
      "Refused for memory or time (max_memory, max_time), or a failed write (exit 3).";
  internal_error.attr("__doc__") = "A broken invariant of stragglesim (a bug; exit 4).";
  py::register_exception_translator([](std::exception_ptr p) {
    try {
      if (p) std::rethrow_exception(p);
    } catch (const Interrupted& e) {
      PyErr_SetString(PyExc_KeyboardInterrupt, e.what());
    } catch (const InputError& e) {
      raise_as(input_error, e.what());
    } catch (const UsageError& e) {
      raise_as(usage_error, e.what());
    } catch (const ResourceError& e) {
      raise_as(resource_error, e.what());
    } catch (const InternalError& e) {
      raise_as(internal_error, e.what());
    }
  });

  m.def("algorithms", &algorithms, "The registry's algorithms (as `stragglesim algorithms`).");
  m.def("supports_ranks", &supports_ranks, py::arg("algorithm"), py::arg("ranks"),
        "Whether the algorithm makes a schedule for this rank count.");
  m.def("schedule", &schedule, py::arg("algorithm"), py::arg("ranks"), py::arg("items"),
        py::arg("straggler"), py::arg("max_memory"), py::arg("max_time"),
        "`stragglesim schedule` (option items key=value, straggler -1: none): the verified "
        "schedule as a dict.");
  m.def("lower", &lower, py::arg("algorithm"), py::arg("ranks"), py::arg("bytes"),
        py::arg("dtype"), py::arg("align"), py::arg("items"), py::arg("straggler"),
        py::arg("max_memory"), py::arg("max_time"),
        "`stragglesim lower` (bytes as text, option items, straggler -1: none): the per-rank "
        "plan as a dict.");
  m.def("simulate", &simulate, py::arg("source"), py::arg("is_text"), py::arg("name"),
        py::arg("flags"), py::arg("per_rank"), py::arg("max_memory"), py::arg("max_time"),
        "`stragglesim simulate CONFIG --json` with `flags` (-n, --seed, --threads, checked by "
        "the CLI's rules): the iterations' columns and the summary.");
  m.def("run", &run, py::arg("source"), py::arg("is_text"), py::arg("name"), py::arg("output"),
        py::arg("flags"), py::arg("force"), py::arg("max_memory"), py::arg("max_time"),
        "`stragglesim run EXPERIMENT -o OUTPUT --no-plots -q` with `flags` (-n, --seed, -j, "
        "--threads, checked by the CLI's rules): the folder written, its files, the CSV's "
        "columns.");
  m.def("advise", &advise, py::arg("flags"),
        "`stragglesim advise` with `flags` (the CLI's argument list, parsed by its parser): "
        "the table's columns, fastest first, and the header's fields.");
  m.def("train", &train, py::arg("source"), py::arg("is_text"), py::arg("name"),
        py::arg("flags"), py::arg("per_step"),
        "`stragglesim train CONFIG --json` with `flags`: the JSON text, the steps CSV's "
        "columns (per_step) or None, the notes and the warnings.");
}
