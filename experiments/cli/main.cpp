// stragglesim: the command-line entry point. Parses the subcommand, runs it, and turns
// every InputError into one message on stderr and a non-zero exit.
#include <CLI/CLI.hpp>
#include <iostream>

#include "common/error.hpp"
#include "experiments/cli_commands.hpp"

int main(int argc, char** argv) {
  CLI::App app{"stragglesim: collective communication under stragglers"};
  app.require_subcommand(1);
  app.set_version_flag("--version", std::string("stragglesim ") + STRAGGLESIM_VERSION);
  ssim::exp::add_schedule_commands(app);
  ssim::exp::add_simulate_command(app);
  ssim::exp::add_calibrate_commands(app);
  ssim::exp::add_run_command(app);
  ssim::exp::add_advise_command(app);
  ssim::exp::add_lower_command(app);
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    return app.exit(e);
  } catch (const ssim::InputError& e) {
    std::cerr << "stragglesim: error: " << e.what() << "\n";
    return 1;
  } catch (const ssim::InternalError& e) {
    std::cerr << "stragglesim: " << e.what() << "\n";
    return 3;
  } catch (const std::exception& e) {
    std::cerr << "stragglesim: unexpected error: " << e.what() << "\n";
    return 3;
  }
  return 0;
}
