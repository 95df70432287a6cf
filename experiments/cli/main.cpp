// stragglesim: the command-line entry point. Parses the subcommand, runs it, and reports every
// error once, as "stragglesim: error: ..." with the exit code of its class (common/error.hpp).
#include <CLI/CLI.hpp>
#include <algorithm>
#include <iostream>
#include <optional>
#include <string_view>

#include "common/error.hpp"
#include "common/output_file.hpp"
#include "common/suggest.hpp"
#include "experiments/cli/commands.hpp"
#include "experiments/cli/train.hpp"

namespace {

std::string subcommand_list(const CLI::App& app) {
  std::string list;
  for (const CLI::App* sub : app.get_subcommands({}))
    list += (list.empty() ? "" : ", ") + sub->get_name();
  return list;
}

// CLI11 reports both an unknown first word and an unknown top-level option as "A subcommand is
// required"; name what is wrong instead.
void check_first_argument(const CLI::App& app, int argc, char** argv) {
  if (argc < 2)
    throw ssim::UsageError("a subcommand is required (one of: " + subcommand_list(app) + ")");
  const std::string_view first = argv[1];
  if (first == "-h" || first == "--help" || first == "--help-all" || first == "--version") return;
  if (!first.empty() && first[0] == '-') {
    throw ssim::UsageError(
        "unknown option '" + std::string(first) +
        "' (before the subcommand only --help and --version are accepted; subcommands: " +
        subcommand_list(app) + ")");
  }
  for (const CLI::App* sub : app.get_subcommands({})) {
    if (sub->check_name(std::string(first))) return;
  }
  std::vector<std::string> names;
  for (const CLI::App* sub : app.get_subcommands({})) names.push_back(sub->get_name());
  const std::optional<std::string> near = ssim::closest_name(first, names);
  throw ssim::UsageError("unknown subcommand '" + std::string(first) + "' (" +
                         (near ? "did you mean '" + *near + "'? " : "") +
                         "one of: " + subcommand_list(app) + ")");
}

// "; did you mean --X?" for each argument of `argv` that looks like an option `sub` does not
// have and is close to one it has (a value after '=' is left out of the comparison).
std::string option_suggestions(const CLI::App& sub, int argc, char** argv) {
  std::vector<std::string> known;
  for (const CLI::Option* o : sub.get_options()) {
    for (const std::string& l : o->get_lnames()) known.push_back("--" + l);
  }
  std::string out;
  for (int i = 1; i < argc; ++i) {
    std::string arg = argv[i];
    if (arg.size() < 3 || arg.compare(0, 2, "--") != 0) continue;
    arg = arg.substr(0, arg.find('='));
    if (std::find(known.begin(), known.end(), arg) != known.end()) continue;
    if (const std::optional<std::string> near = ssim::closest_name(arg, known))
      out += "; " + arg + ": did you mean " + *near + "?";
  }
  return out;
}

int run(int argc, char** argv) {
  // Named here, not from argv[0]: usage lines say "stragglesim", not the path it was run by.
  CLI::App app{"stragglesim: collective communication under stragglers", "stragglesim"};
  app.require_subcommand(1);
  app.set_version_flag("--version", std::string("stragglesim ") + STRAGGLESIM_VERSION);
  ssim::experiments::add_schedule_commands(app);
  ssim::experiments::add_simulate_command(app);
  ssim::experiments::add_calibrate_commands(app);
  ssim::experiments::add_run_command(app);
  ssim::experiments::add_merge_command(app);
  ssim::experiments::add_advise_command(app);
  ssim::experiments::add_train_command(app);
  ssim::experiments::add_fit_delays_command(app);
  ssim::experiments::add_lower_command(app);
  ssim::experiments::require_finite_numbers(app);
  try {
    check_first_argument(app, argc, argv);
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    if (e.get_exit_code() == static_cast<int>(CLI::ExitCodes::Success))
      return app.exit(e);  // --help, --version
    const std::vector<CLI::App*> parsed = app.get_subcommands();
    const std::string hint = parsed.empty() ? "" : option_suggestions(*parsed.front(), argc, argv);
    std::cerr << "stragglesim: error: " << ssim::printable(e.what() + hint) << "\nRun 'stragglesim "
              << (parsed.empty() ? std::string("--help'") : parsed.front()->get_name() + " --help'")
              << " for usage.\n";
    return ssim::kExitUsage;
  } catch (...) {
    return ssim::report_exception("stragglesim", std::cerr);
  }
  return ssim::kExitOk;
}

}  // namespace

int main(int argc, char** argv) {
  ssim::guard_standard_streams();
  // What was printed must have arrived: a full or closed standard output is exit 3.
  return ssim::check_standard_output("stragglesim", std::cerr, run(argc, argv));
}
