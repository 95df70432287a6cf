// `stragglesim run [EXPERIMENT.yaml] [-o DIR] [--jobs N] [--dry-run] [--no-plots]`: the main job.
#include <sys/wait.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <iostream>

#include "common/error.hpp"
#include "experiments/cli_commands.hpp"
#include "experiments/config.hpp"
#include "experiments/experiment.hpp"
#include "experiments/resource_check.hpp"

namespace ssim::exp {
namespace {

struct RunArgs {
  std::string config;
  std::string output;
  int jobs = 0;
  bool dry_run = false;
  bool no_plots = false;
  bool quiet = false;
  int iterations = 0;   // 0: as configured
  long long seed = -1;  // -1: as configured
  std::string max_memory;
};

std::string shell_quote(const std::string& s) {
  std::string out = "'";
  for (char c : s) out += c == '\'' ? std::string("'\\''") : std::string(1, c);
  return out + "'";
}

int shell(const std::string& command) {
  const int status = std::system(command.c_str());
  return status != -1 && WIFEXITED(status) ? WEXITSTATUS(status) : -1;
}

// A file of the source tree: under the working directory when run from the repository root,
// else where the binary was built from.
std::string source_file(const std::string& relative) {
  if (std::filesystem::exists(relative)) return relative;
  const std::filesystem::path built = std::filesystem::path(STRAGGLESIM_SOURCE_ROOT) / relative;
  return std::filesystem::exists(built) ? built.string() : relative;
}

// plot.py needs matplotlib, which Debian installs for /usr/bin/python3; a python3 earlier on
// PATH (pyenv, a venv) may lack it, so each candidate is asked to import it.
std::string python_with_matplotlib() {
  std::vector<std::string> candidates;
  if (const char* env = std::getenv("STRAGGLESIM_PYTHON")) candidates.emplace_back(env);
  candidates.emplace_back("python3");
  candidates.emplace_back("/usr/bin/python3");
  for (const std::string& py : candidates) {
    if (shell(shell_quote(py) + " -c 'import matplotlib' >/dev/null 2>&1") == 0) return py;
  }
  return "";
}

void make_plots(const std::string& dir) {
  const char* env = std::getenv("STRAGGLESIM_PLOT_SCRIPT");
  const std::string script = env ? std::string(env) : source_file("experiments/plot.py");
  std::error_code ec;
  if (!std::filesystem::exists(script, ec)) {
    std::cerr << "stragglesim run: plots skipped: " << script << " not found\n";
    return;
  }
  const std::string py = python_with_matplotlib();
  if (py.empty()) {
    std::cerr << "stragglesim run: plots skipped: no python3 with matplotlib (apt-get install "
                 "python3-matplotlib, "
                 "or set STRAGGLESIM_PYTHON); the results are complete, plot later with: python3 "
              << script << " " << dir << "\n";
    return;
  }
  std::cout << std::flush;
  const int rc = shell(shell_quote(py) + " " + shell_quote(script) + " " + shell_quote(dir));
  if (rc != 0) std::cerr << "stragglesim run: plots not made: plot.py exited with " << rc << "\n";
}

void run_run(const RunArgs& a) {
  const std::string path =
      a.config.empty() ? source_file("configs/experiments/default.yaml") : a.config;
  const ConfigReader reader(path);
  Experiment e = load_experiment(reader);
  if (a.iterations > 0) set_iterations(e, a.iterations);
  if (a.seed >= 0) set_seed(e, static_cast<std::uint64_t>(a.seed));
  if (!a.output.empty()) e.output = a.output;
  if (a.dry_run) {
    std::cout << dry_run_listing(e);
    return;
  }
  check_experiment_memory(MemoryBudget::from_flag(a.max_memory), e, a.jobs);
  if (const std::string note = experiment_time_note(e, a.jobs); !note.empty()) std::cerr << "stragglesim: note: " << note << "\n";
  RunnerOptions o;
  o.jobs = a.jobs;
  o.progress = a.quiet ? Progress::none : Progress::automatic;
  std::cerr << "stragglesim run: " << e.name << " (" << path << "): " << e.run_count()
            << " runs -> " << e.output << "\n";
  const ExperimentResult r = run_experiment(e, o);
  std::cout << summary_table(e, r.points);
  if (const std::string w = shared_link_warning(e, r.points); !w.empty())
    std::cerr << "stragglesim: warning: " << w << "\n";
  char took[32];
  std::snprintf(took, sizeof took, "%.1f", r.seconds);
  std::cout << "wrote";
  for (const std::string& f : r.files) std::cout << " " << f;
  std::cout << " (" << e.run_count() << " runs in " << took << " s)\n";
  if (!a.no_plots) make_plots(r.output);
}

}  // namespace

void add_run_command(CLI::App& app) {
  auto args = std::make_shared<RunArgs>();
  CLI::App* cmd = app.add_subcommand("run",
                                     "Run an experiment (YAML): algorithms compared over a "
                                     "parameter sweep; CSV, JSON, plots, summary");
  cmd->add_option(
      "experiment", args->config,
      "Experiment YAML (default configs/experiments/default.yaml; see README, \"Experiments\")");
  cmd->add_option("-o,--output", args->output,
                  "Output folder (default: the experiment's output, results/NAME)");
  cmd->add_option("-j,--jobs", args->jobs, "Parallel runs (default: hardware concurrency)")
      ->check(CLI::Range(1, 1024));
  cmd->add_flag("--dry-run", args->dry_run,
                "List the runs and their resolved settings, run nothing");
  cmd->add_flag("--no-plots", args->no_plots, "Do not call experiments/plot.py");
  cmd->add_flag("-q,--quiet", args->quiet, "No progress on stderr");
  cmd->add_option("--iterations", args->iterations, "Override the experiment's iterations")
      ->check(CLI::Range(1, 10'000'000));
  cmd->add_option("--seed", args->seed, "Override the experiment's seed")
      ->check(non_negative_number());
  add_max_memory_option(*cmd, args->max_memory);
  cmd->callback([args] { run_run(*args); });
}

}  // namespace ssim::exp
