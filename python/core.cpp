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
// (PyErr_CheckSignals, at most every 50 ms) before each iteration (common/cancel.hpp), `run`
// installs the CLI's SIGINT handler (common/interrupt.hpp) for its runs.
#include <pybind11/numpy.h>
#include <pybind11/pybind11.h>
#include <pybind11/stl.h>

#include <chrono>
#include <csignal>
#include <optional>
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
#include "experiments/cli/commands.hpp"
#include "experiments/config/config.hpp"
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
  return exp::algorithm_options(info, items, straggler);
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
    exp::check_schedule_memory(MemoryBudget::from_flag(max_memory), info.name, ranks, options,
                               /*verify=*/true);
    exp::check_schedule_time(TimeBudget::from_flag(max_time), info.name, ranks, options);
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
    exp::check_lower_resources(MemoryBudget::from_flag(max_memory),
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
exp::ConfigReader open_config(const std::string& source, bool is_text, const std::string& name) {
  return is_text ? exp::ConfigReader::from_string(source, name) : exp::ConfigReader(source);
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
                   int iterations, long long seed, bool per_rank, int threads,
                   const std::string& max_memory, const std::string& max_time) {
  const std::string where = is_text ? name : source;
  const exp::ConfigReader reader = open_config(source, is_text, name);
  const exp::Experiment e = exp::load_experiment(reader, exp::ConfigCommand::simulate);
  sim::SimulationConfig c = exp::run_config(e, 0);
  const std::string schedule_file = e.algorithms[0].schedule_file;
  if (iterations > 0) c.iterations = iterations;
  c.per_rank_times = per_rank;
  if (seed >= 0) c.seed = static_cast<std::uint64_t>(seed);
  c.threads = exp::threads_per_run(1, threads);
  exp::check_simulation_memory(MemoryBudget::from_flag(max_memory), c);
  exp::check_simulation_time(TimeBudget::from_flag(max_time), c);
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
  attrs["shared_link"] =
      r.shared_link ? py::object(py::str(exp::shared_link_warning(*r.shared_link)))
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
              const std::string& output, int iterations, long long seed, int jobs, int threads,
              bool force, const std::string& max_memory, const std::string& max_time) {
  const exp::ConfigReader reader = open_config(source, is_text, name);
  exp::Experiment e = exp::load_experiment(reader);
  if (iterations > 0) exp::set_iterations(e, iterations);
  if (seed >= 0) exp::set_seed(e, static_cast<std::uint64_t>(seed));
  exp::check_experiment_memory(MemoryBudget::from_flag(max_memory), e, jobs);
  exp::RunnerOptions o;
  o.output = output;
  o.jobs = jobs;
  o.threads = threads;
  o.progress = exp::Progress::none;
  o.force = force;
  exp::check_experiment_time(TimeBudget::from_flag(max_time), e, jobs);
  std::optional<exp::ExperimentResult> done;
  {
    py::gil_scoped_release release;
    clear_interrupt_signal();
    try {
      const InterruptGuard guard("stragglesim.run: stopping after the runs in flight");
      done = exp::run_experiment(e, o);
    } catch (...) {
      clear_interrupt_signal();
      throw;
    }
  }
  return py::make_tuple(done->output, done->files, exp::experiment_csv_columns(e));
}

}  // namespace

PYBIND11_MODULE(_core, m) {
  m.doc() =
      "stragglesim's C++ core (schedules, lowering, simulation, experiments); use the "
      "`stragglesim` package, which wraps these functions.";
  m.attr("__version__") = STRAGGLESIM_VERSION_STRING;

  static py::exception<InputError> input_error(m, "InputError", PyExc_ValueError);
  static py::exception<UsageError> usage_error(m, "UsageError", PyExc_ValueError);
  static py::exception<ResourceError> resource_error(m, "ResourceError", PyExc_RuntimeError);
  static py::exception<InternalError> internal_error(m, "InternalError", PyExc_RuntimeError);
  py::register_exception_translator([](std::exception_ptr p) {
    try {
      if (p) std::rethrow_exception(p);
    } catch (const Interrupted& e) {
      PyErr_SetString(PyExc_KeyboardInterrupt, e.what());
    } catch (const InputError& e) {
      input_error(printable(e.what()).c_str());
    } catch (const UsageError& e) {
      usage_error(printable(e.what()).c_str());
    } catch (const ResourceError& e) {
      resource_error(printable(e.what()).c_str());
    } catch (const InternalError& e) {
      internal_error(printable(e.what()).c_str());
    }
  });

  m.def("algorithms", &algorithms, "The registry's algorithms (as `stragglesim algorithms`).");
  m.def("supports_ranks", &supports_ranks, py::arg("algorithm"), py::arg("ranks"),
        "Whether the algorithm makes a schedule for this rank count.");
  m.def("schedule", &schedule, py::arg("algorithm"), py::arg("ranks"), py::arg("items"),
        py::arg("straggler"), py::arg("max_memory"), py::arg("max_time"));
  m.def("lower", &lower, py::arg("algorithm"), py::arg("ranks"), py::arg("bytes"),
        py::arg("dtype"), py::arg("align"), py::arg("items"), py::arg("straggler"),
        py::arg("max_memory"), py::arg("max_time"));
  m.def("simulate", &simulate, py::arg("source"), py::arg("is_text"), py::arg("name"),
        py::arg("iterations"), py::arg("seed"), py::arg("per_rank"), py::arg("threads"),
        py::arg("max_memory"), py::arg("max_time"));
  m.def("run", &run, py::arg("source"), py::arg("is_text"), py::arg("name"), py::arg("output"),
        py::arg("iterations"), py::arg("seed"), py::arg("jobs"), py::arg("threads"),
        py::arg("force"), py::arg("max_memory"), py::arg("max_time"));
}
