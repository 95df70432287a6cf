// `stragglesim run [EXPERIMENT.yaml] [-o DIR] [--jobs N] [--dry-run] [--no-plots]
// [--plot-format png,svg,pdf] [--shard I/N] [--resume]`: the main job; `stragglesim merge
// SHARD_DIR... -o DIR`: the shards' results as one.
#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <iostream>
#include <memory>
#include <optional>
#include <vector>

#include "common/error.hpp"
#include "common/folder_lock.hpp"
#include "common/interrupt.hpp"
#include "common/text.hpp"
#include "experiments/cli/commands.hpp"
#include "experiments/config/config.hpp"
#include "experiments/config/data_files.hpp"
#include "experiments/config/resource_check.hpp"
#include "experiments/output/plots.hpp"
#include "experiments/runner/experiment.hpp"
#include "experiments/runner/journal.hpp"
#include "experiments/runner/run_group.hpp"

namespace ssim::experiments {
namespace {

struct RunArgs {
  std::string config;
  std::string output;
  int jobs = 0;
  bool dry_run = false;
  bool no_plots = false;
  std::string plot_format = "png";  // comma-separated png, svg, pdf; checked by plot_format_error
  bool quiet = false;
  int iterations = 0;   // 0: as configured
  long long seed = -1;  // -1: as configured
  std::string shard;    // "I/N"
  bool resume = false;
  bool force = false;
  std::string max_memory;
  std::string max_time;
  std::string trace;     // POINT: trace one run instead of running the experiment
  int trace_links = -1;  // -1: every link that carries traffic
  TraceFlags trace_flags;  // --trace-ranks, --trace-rounds, --trace-window, --trace-max-size
  int threads = 1;  // used only with --jobs 1 (docs/scale.md: why one by default)
};

struct MergeArgs {
  std::vector<std::string> shards;
  std::string output;
  bool no_plots = false;
  std::string plot_format = "png";
};

// "" when `text` is a comma-separated list of png, svg and pdf, else why not.
std::string plot_format_error(const std::string& text) {
  std::size_t start = 0;
  std::vector<std::string> seen;
  while (true) {
    const std::size_t comma = text.find(',', start);
    const std::string f = text.substr(start, comma == std::string::npos ? comma : comma - start);
    if (f != "png" && f != "svg" && f != "pdf") {
      return "'" + text + "': expected a comma-separated list of png, svg, pdf (e.g. png,pdf)" +
             (f.empty() ? "" : "; '" + f + "' is not one");
    }
    if (std::find(seen.begin(), seen.end(), f) != seen.end())
      return "'" + text + "': '" + f + "' is listed twice";
    seen.push_back(f);
    if (comma == std::string::npos) return "";
    start = comma + 1;
  }
}

// configs/experiments/default.yaml of the shipped data (experiments/config/data_files.hpp).
std::string default_experiment() {
  const std::string path = data_file("configs/experiments/default.yaml");
  if (path.empty())
    throw UsageError("no experiment given and the default, configs/experiments/default.yaml, is in none of " +
                     data_dirs_text() + " (set STRAGGLESIM_DATA_DIR to the folder holding configs/)");
  return path;
}

Experiment load_run_experiment(const RunArgs& a, const std::string& path) {
  const ConfigReader reader(path);
  Experiment e = load_experiment(reader);
  if (a.iterations > 0) set_iterations(e, a.iterations);
  if (a.seed >= 0) set_seed(e, static_cast<std::uint64_t>(a.seed));
  if (!a.output.empty()) e.output = a.output;
  return e;
}

// A rank other than 0 of `mpirun stragglesim run`: runs what rank 0 hands out and prints
// nothing; rank 0 reports every error, its own and this rank's, and exits non-zero.
void serve_run(RunGroup& group, const RunArgs& a, const std::string& path) {
  std::optional<Experiment> e;
  try {
    e = load_run_experiment(a, path);
  } catch (const std::exception& ex) {
    group.decline(ex.what());
    return;
  }
  if (a.dry_run) {
    group.decline("");
  } else {
    group.serve(*e, a.jobs);
  }
}

// --trace POINT: which run and iteration. POINT is a run index (results.csv's `run` column) or
// comma-separated key=value selectors over results.csv's columns: run, point, label, algorithm
// (registry name), iteration (default 0) and each sweep axis (`size=1GiB` or `sweep.size=1GiB`,
// the value as the YAML writes it). Malformed text is a usage error; a key the experiment does
// not have, a value out of range, or selectors that match no run or several are input errors.
struct TracePoint {
  std::size_t run = 0;
  int iteration = 0;
};

// A run index or iteration as given: digits only, at most 9 of them (it fits an int).
bool small_whole_number(const std::string& s) { return s.size() <= 9 && all_digits(s); }

TracePoint select_trace_point(const Experiment& e, const std::string& text) {
  const std::string flag = "--trace '" + text + "'";
  const std::string example = " (e.g. --trace 3, or --trace label=ring,iteration=2" +
                              (e.axes.empty() ? std::string() : "," + e.axes[0].key + "=" + e.axes[0].labels[0]) + ")";
  std::vector<std::pair<std::string, std::string>> selectors;
  if (small_whole_number(text)) {
    selectors.emplace_back("run", text);
  } else {
    std::size_t start = 0;
    while (start <= text.size()) {
      const std::size_t comma = std::min(text.find(',', start), text.size());
      const std::string item = text.substr(start, comma - start);
      const std::size_t eq = item.find('=');
      if (eq == std::string::npos || eq == 0 || eq + 1 == item.size()) {
        throw UsageError(flag + ": '" + item + "' is not key=value; POINT is a run index or key=value selectors" + example);
      }
      for (const auto& [k, v] : selectors) {
        if (k == item.substr(0, eq)) throw UsageError(flag + ": key '" + k + "' given twice");
      }
      selectors.emplace_back(item.substr(0, eq), item.substr(eq + 1));
      start = comma + 1;
    }
  }
  const std::size_t nalg = e.algorithms.size();
  std::vector<std::size_t> runs(e.run_count());
  for (std::size_t r = 0; r < runs.size(); ++r) runs[r] = r;
  auto keep = [&](auto&& pred) { runs.erase(std::remove_if(runs.begin(), runs.end(), [&](std::size_t r) { return !pred(r); }), runs.end()); };
  auto index = [&](const std::string& key, const std::string& value, std::size_t count) {
    if (!small_whole_number(value) || std::stoul(value) >= count) {
      throw InputError(flag + ": " + key + "=" + value + " is not one of 0.." + std::to_string(count - 1) + " (" + e.file + ")");
    }
    return static_cast<std::size_t>(std::stoul(value));
  };
  TracePoint tp;
  for (const auto& selector : selectors) {
    // Named copies, not structured bindings: lambdas below capture them (clang < 16 cannot).
    const std::string& key = selector.first;
    const std::string& value = selector.second;
    if (key == "iteration") {
      tp.iteration = static_cast<int>(index(key, value, static_cast<std::size_t>(e.iterations)));
    } else if (key == "run") {
      const std::size_t run = index(key, value, e.run_count());
      keep([&](std::size_t r) { return r == run; });
    } else if (key == "point") {
      const std::size_t point = index(key, value, e.points.size());
      keep([&](std::size_t r) { return r / nalg == point; });
    } else if (key == "label" || key == "algorithm") {
      std::vector<std::string> known;
      for (const ExperimentAlgorithm& a : e.algorithms) {
        const std::string& v = key == "label" ? a.label : a.name;
        if (std::find(known.begin(), known.end(), v) == known.end()) known.push_back(v);
      }
      if (std::find(known.begin(), known.end(), value) == known.end())
        throw InputError(flag + ": " + key + "=" + value + " is not in the experiment (" + key + "s: " + joined(known, ", ") + ")");
      keep([&](std::size_t r) { return (key == "label" ? e.algorithms[r % nalg].label : e.algorithms[r % nalg].name) == value; });
    } else {
      const std::string axis_key = key.rfind("sweep.", 0) == 0 ? key.substr(6) : key;
      const auto axis = std::find_if(e.axes.begin(), e.axes.end(), [&](const SweepAxis& x) { return x.key == axis_key; });
      if (axis == e.axes.end()) {
        std::vector<std::string> keys = {"run", "point", "label", "algorithm", "iteration"};
        for (const SweepAxis& x : e.axes) keys.push_back(x.key);
        throw InputError(flag + ": unknown key '" + key + "' (keys: " + joined(keys, ", ") + ")");
      }
      const auto label = std::find(axis->labels.begin(), axis->labels.end(), value);
      if (label == axis->labels.end())
        throw InputError(flag + ": " + axis_key + "=" + value + " is not a value of the sweep (values: " + joined(axis->labels, ", ") + ")");
      const std::size_t k = static_cast<std::size_t>(axis - e.axes.begin());
      const std::size_t v = static_cast<std::size_t>(label - axis->labels.begin());
      keep([&](std::size_t r) { return e.points[r / nalg].value[k] == v; });
    }
  }
  auto describe = [&](std::size_t r) {
    return "run " + std::to_string(r) + " (" + e.algorithms[r % nalg].label +
           (e.axes.empty() ? std::string() : " at " + e.point_label(r / nalg)) + ")";
  };
  if (runs.empty()) throw InputError(flag + " matches no run of " + e.file);
  if (runs.size() > 1) {
    std::string list;
    for (std::size_t i = 0; i < runs.size() && i < 4; ++i) list += (i ? "; " : "") + describe(runs[i]);
    if (runs.size() > 4) list += "; ...";
    throw InputError(flag + " matches " + std::to_string(runs.size()) + " runs of " + e.file + ": " + list +
                     "; add selectors or give the run index" + example);
  }
  tp.run = runs.front();
  return tp;
}

// The command that finishes an interrupted `run`: the same experiment, flags that change the
// results, folder and shard, with --resume.
std::string resume_command(const RunArgs& a, const std::string& path, const std::string& output) {
  std::string cmd = "stragglesim run " + shell_quote(path) + " -o " + shell_quote(output);
  if (a.iterations > 0) cmd += " --iterations " + std::to_string(a.iterations);
  if (a.seed >= 0) cmd += " --seed " + std::to_string(a.seed);
  if (!a.shard.empty()) cmd += " --shard " + a.shard;
  if (a.jobs > 0) cmd += " --jobs " + std::to_string(a.jobs);
  return cmd + " --resume";
}

// `run --trace POINT`: that run alone, up to the traced iteration, its trace in the output folder.
void run_trace(const RunArgs& a, const Experiment& e) {
  if (!e.points.empty() && e.points.front().workload) {
    throw InputError("--trace: " + e.file +
                     " is a training job (workload:); a step runs many collectives, which --trace "
                     "does not record (trace one collective with `stragglesim simulate`)");
  }
  const TracePoint tp = select_trace_point(e, a.trace);
  std::error_code ec;
  std::filesystem::create_directories(e.output, ec);
  if (ec) throw InputError(e.output + ": cannot create the output folder: " + ec.message());
  const std::string path = (std::filesystem::path(e.output) / ("trace-run" + std::to_string(tp.run) + "-iteration" +
                                                                std::to_string(tp.iteration) + ".json"))
                               .string();
  const std::size_t nalg = e.algorithms.size();
  const InterruptGuard guard("stragglesim run: stopping; the trace is not written");
  const sim::SimulationResult r =
      write_trace(run_config(e, tp.run), tp.iteration, a.trace_links, a.trace_flags, path,
                  a.max_memory, a.max_time, e.file);
  std::cout << "run " << tp.run << " (" << e.algorithms[tp.run % nalg].label
            << (e.axes.empty() ? std::string() : " at " + e.point_label(tp.run / nalg)) << "), iteration "
            << tp.iteration << ": completion " << format_time(r.iterations.back().completion) << "; wrote " << path
            << "\n";
}

void run_run(const RunArgs& a) {
  if (a.trace.empty() && !a.dry_run) require_threads_used(a.jobs, a.threads);
  const std::string path = a.config.empty() ? default_experiment() : a.config;
  // Under mpirun: rank 0 leads and the others serve; alone (no launcher, no MPI build): nullptr.
  std::unique_ptr<RunGroup> group = join_run_group();
  if (group && !a.trace.empty())
    throw UsageError("--trace simulates one run in one process: start it without mpirun");
  if (group && group->rank() != 0) return serve_run(*group, a, path);
  const Experiment e = load_run_experiment(a, path);
  if (!a.trace.empty()) return run_trace(a, e);
  if (a.dry_run) {
    std::cout << dry_run_listing(e);
    return;
  }
  check_experiment_memory(MemoryBudget::from_flag(a.max_memory), e, a.jobs);
  if (const std::string note = experiment_time_note(e, a.jobs); !note.empty()) std::cerr << "stragglesim: note: " << note << "\n";
  RunnerOptions o;
  o.jobs = a.jobs;
  o.threads = a.threads;
  o.progress = a.quiet ? Progress::none : Progress::automatic;
  o.resume = a.resume;
  o.force = a.force;
  if (!a.shard.empty()) o.shard = parse_shard(a.shard);
  check_experiment_time(TimeBudget::from_flag(a.max_time), e, a.jobs,
                        o.shard ? 1.0 / o.shard->count : 1.0);
  o.peers = group ? group->peers() : nullptr;
  if (!a.quiet) {
    std::cerr << "stragglesim run: " << e.name << " (" << path << "): " << e.run_count() << " runs"
              << (o.shard ? ", shard " + a.shard : std::string())
              << (o.peers ? ", " + std::to_string(group->size()) + " MPI processes" : std::string())
              << " -> " << e.output << "\n";
  }
  std::optional<ExperimentResult> done;
  {
    const InterruptGuard guard(
        "stragglesim run: stopping after the runs in flight (each goes to the journal)");
    try {
      done = run_experiment(e, o);
    } catch (const Interrupted& stop) {
      throw Interrupted(stop.signal_number(), std::string(stop.what()) + "\nfinish it with: " +
                                                  resume_command(a, path, e.output));
    }
  }
  const ExperimentResult& r = *done;
  group.reset();  // the other ranks are done: they leave MPI while rank 0 writes the summary and plots
  if (o.shard) {
    char took[32];
    std::snprintf(took, sizeof took, "%.1f", r.seconds);
    std::cout << "shard " << a.shard << " done in " << took << " s: " << r.files[0]
              << "\ncombine the shards with: stragglesim merge DIR/shard-* -o DIR\n";
    return;
  }
  std::cout << summary_table(e, r.points);
  if (const std::string w = shared_link_warning(e, r.points); !w.empty())
    std::cerr << "stragglesim: warning: " << w << "\n";
  char took[32];
  std::snprintf(took, sizeof took, "%.1f", r.seconds);
  std::cout << "wrote";
  for (const std::string& f : r.files) std::cout << " " << f;
  std::cout << " (" << e.run_count() << " runs in " << took << " s)\n";
  if (!a.no_plots) make_plots(r.output, a.plot_format);
}

// Loads every shard's journal, checks that they are the K shards of one experiment, reloads the
// experiment from the YAML they name (with their iterations and seed) and writes the results.
void run_merge(const MergeArgs& a) {
  std::vector<Journal> journals;
  std::vector<std::string> paths;
  for (const std::string& dir : a.shards) {
    paths.push_back((std::filesystem::path(dir) / "journal.jsonl").string());
    journals.push_back(read_journal(paths.back()));
  }
  const JournalHeader& first = journals[0].header;
  if (!first.shard) throw InputError(paths[0] + ": not a shard's journal (written by `run` without --shard)");
  const int count = first.shard->count;
  std::vector<int> seen(static_cast<std::size_t>(count) + 1, -1);
  for (std::size_t i = 0; i < journals.size(); ++i) {
    const JournalHeader& h = journals[i].header;
    if (!h.shard) throw InputError(paths[i] + ": not a shard's journal (written by `run` without --shard)");
    if (h.fingerprint != first.fingerprint || h.runs != first.runs || h.shard->count != count ||
        h.iterations != first.iterations || h.seed != first.seed || h.version != first.version) {
      throw InputError(paths[i] + ": shard " + std::to_string(h.shard->index) + "/" +
                       std::to_string(h.shard->count) + " of " + h.experiment + " (iterations " +
                       std::to_string(h.iterations) + ", seed " + std::to_string(h.seed) +
                       ", fingerprint " + h.fingerprint + ") is not of the same experiment as " +
                       paths[0] + " (" + first.experiment + ", shards " + std::to_string(count) +
                       ", iterations " + std::to_string(first.iterations) + ", seed " +
                       std::to_string(first.seed) + ", fingerprint " + first.fingerprint + ")");
    }
    if (seen[static_cast<std::size_t>(h.shard->index)] >= 0) {
      throw InputError(paths[i] + ": shard " + std::to_string(h.shard->index) + "/" + std::to_string(count) +
                       " is given twice (also " + paths[static_cast<std::size_t>(seen[static_cast<std::size_t>(h.shard->index)])] + ")");
    }
    seen[static_cast<std::size_t>(h.shard->index)] = static_cast<int>(i);
  }
  std::string missing;
  for (int k = 1; k <= count; ++k) {
    if (seen[static_cast<std::size_t>(k)] < 0) missing += (missing.empty() ? "" : ", ") + std::to_string(k);
  }
  if (!missing.empty()) {
    throw InputError("merge: shard" + std::string(missing.find(',') != std::string::npos ? "s " : " ") + missing +
                     " of " + std::to_string(count) + " missing: give every shard's folder");
  }
  // From its absolute form: the path as `run` was given it is relative to run's working
  // directory, not to the journal nor to merge's, where a file of that name may be another. That
  // path is used only when it names the same file here (then results.json echoes the same
  // settings as an unsharded run); otherwise results.json still echoes it as `run` was given it.
  if (!std::filesystem::path(first.file_absolute).is_absolute() ||
      !std::filesystem::is_regular_file(first.file_absolute)) {
    throw InputError(paths[0] + ": the experiment it was run from, " + first.file_absolute +
                     ", is not there (merge reloads the experiment from that file)");
  }
  std::error_code same_ec;
  const bool same = std::filesystem::equivalent(first.file, first.file_absolute, same_ec);
  const std::string yaml = same && !same_ec ? first.file : first.file_absolute;
  const ConfigReader reader(yaml);
  Experiment e = load_experiment(reader);
  e.file = first.file;
  set_iterations(e, first.iterations);
  set_seed(e, first.seed);
  e.output = a.output;
  const auto shard_resume = [&](const Shard& s, const std::string& dir) {
    return "stragglesim run " + yaml + " --iterations " + std::to_string(first.iterations) +
           " --seed " + std::to_string(first.seed) + " --shard " + std::to_string(s.index) + "/" +
           std::to_string(s.count) + " -o " + dir + " --resume";
  };
  std::vector<sim::SimulationResult> runs(e.run_count());
  std::vector<bool> have(e.run_count(), false);
  std::string damaged;
  for (std::size_t i = 0; i < journals.size(); ++i) {
    JournalRuns found = journal_runs(journals[i], e, paths[i]);
    for (auto& [run, result] : found.runs) {
      runs[run] = std::move(result);
      have[run] = true;
    }
    if (!found.damaged.empty()) {
      const Shard& s = *journals[i].header.shard;
      for (std::size_t k = 0; k < found.damaged.size() && k < 10; ++k)
        damaged += "\n  " + found.damaged[k];
      if (found.damaged.size() > 10)
        damaged += "\n  ... and " + std::to_string(found.damaged.size() - 10) + " more";
      damaged += "\n  run those again with: " + shard_resume(s, a.shards[i]);
    }
  }
  if (!damaged.empty())
    throw InputError("merge: damaged journal lines; nothing written:" + damaged);
  std::string incomplete;
  for (std::size_t i = 0; i < journals.size(); ++i) {
    const Shard& s = *journals[i].header.shard;
    std::size_t lacking = 0, owned = 0;
    for (std::size_t run = 0; run < e.run_count(); ++run) {
      if (!s.owns(run)) continue;
      ++owned;
      if (!have[run]) ++lacking;
    }
    if (lacking > 0) {
      incomplete += "\n  shard " + std::to_string(s.index) + "/" + std::to_string(s.count) + " (" +
                    a.shards[i] + "): " + std::to_string(lacking) + " of " + std::to_string(owned) +
                    " runs missing; finish it with: " + shard_resume(s, a.shards[i]);
    }
  }
  if (!incomplete.empty()) throw InputError("merge: incomplete shards:" + incomplete);
  // The output folder only now, with every shard checked: a refused merge leaves none behind.
  std::error_code ec;
  std::filesystem::create_directories(a.output, ec);
  if (ec) throw InputError("cannot create the output folder '" + a.output + "': " + ec.message());
  const FolderLock lock(a.output);
  const ExperimentResult r = write_experiment_results(e, std::move(runs), a.output, 0);
  std::cout << summary_table(e, r.points);
  std::cout << "wrote";
  for (const std::string& f : r.files) std::cout << " " << f;
  std::cout << " (" << e.run_count() << " runs from " << journals.size() << " shards)\n";
  if (!a.no_plots) make_plots(r.output, a.plot_format);
}

}  // namespace

void add_merge_command(CLI::App& app) {
  auto args = std::make_shared<MergeArgs>();
  CLI::App* cmd = app.add_subcommand(
      "merge", "Combine the folders of an experiment run as shards (run --shard I/N) into its full results");
  cmd->add_option("shards", args->shards, "The shards' output folders (each holds a journal.jsonl)")->required();
  cmd->add_option("-o,--output", args->output, "Folder for results.csv, results.json and plots")->required();
  CLI::Option* no_plots =
      cmd->add_flag("--no-plots", args->no_plots, "Do not call experiments/plot.py");
  cmd->add_option("--plot-format", args->plot_format, "Plot file formats, comma-separated: png, svg, pdf")
      ->check(CLI::Validator(plot_format_error, "png,svg,pdf", "plot format"))
      ->excludes(no_plots);
  cmd->callback([args] { run_merge(*args); });
}

void add_run_command(CLI::App& app) {
  auto args = std::make_shared<RunArgs>();
  CLI::App* cmd = app.add_subcommand("run",
                                     "Run an experiment (YAML): algorithms compared over a "
                                     "parameter sweep; CSV, JSON, plots, summary");
  cmd->add_option(
      "experiment", args->config,
      "Experiment YAML (default configs/experiments/default.yaml; see docs/user_guide.md)");
  cmd->add_option("-o,--output", args->output,
                  "Output folder (default: the experiment's output, results/NAME)");
  cmd->add_option("-j,--jobs", args->jobs, "Parallel runs (default: hardware concurrency)")
      ->check(CLI::Range(1, 1024));
  cmd->add_flag("--dry-run", args->dry_run,
                "List the runs and their resolved settings, run nothing");
  CLI::Option* no_plots =
      cmd->add_flag("--no-plots", args->no_plots, "Do not call experiments/plot.py");
  cmd->add_option("--plot-format", args->plot_format,
                  "Plot files to write, comma-separated: png (default), svg, pdf (vector, for "
                  "papers)")
      ->check(CLI::Validator(plot_format_error, "png,svg,pdf", "plot format"))
      ->excludes(no_plots);
  cmd->add_flag("-q,--quiet", args->quiet, "No progress on stderr");
  cmd->add_option("-n,--iterations", args->iterations, "Override the experiment's iterations")
      ->check(CLI::Range(1, 10'000'000));
  add_seed_option(*cmd, args->seed, "Override the experiment's seed");
  cmd->add_option("--shard", args->shard,
                  "Run only shard I of N (I/N, 1-based); its runs go to DIR/journal.jsonl, combine the "
                  "shards with `stragglesim merge`");
  CLI::Option* resume = cmd->add_flag(
      "--resume", args->resume,
      "Re-use the runs in DIR/journal.jsonl of an interrupted run of the same experiment and "
      "run only the missing ones (and those of damaged lines)");
  cmd->add_flag("--force", args->force,
                "Run into a folder that holds an earlier run's journal or results; they are "
                "replaced (results.csv "
                "and results.json only when this run succeeds)")
      ->excludes(resume);
  CLI::Option* trace = cmd->add_option(
      "--trace", args->trace,
      "Write the Chrome trace (Perfetto) of one run's iteration to DIR/trace-runR-iterationI.json "
      "instead of running the experiment. POINT: a run index (results.csv's run column) or "
      "key=value selectors: run, point, label, algorithm, iteration (default 0), sweep axes")
      ->type_name("POINT");
  add_trace_links_option(*cmd, args->trace_links);
  cmd->get_option("--trace-links")->needs(trace);
  add_trace_selection_options(*cmd, args->trace_flags, trace);
  for (const char* other : {"--dry-run", "--shard", "--resume", "--force", "--plot-format"})
    trace->excludes(cmd->get_option(other));
  add_max_memory_option(*cmd, args->max_memory);
  add_max_time_option(*cmd, args->max_time);
  add_threads_option(*cmd, args->threads, "; used only with --jobs 1, else each run gets one");
  cmd->callback([args] { run_run(*args); });
}

}  // namespace ssim::experiments
