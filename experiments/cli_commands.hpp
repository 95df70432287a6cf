// The `stragglesim` subcommands. Each add_*_command registers a CLI11 subcommand whose
// callback does the work; errors are thrown as ssim::InputError and reported once in main().
//
//   CLI::App app{"stragglesim"};
//   ssim::exp::add_schedule_commands(app);
#pragma once

#include <CLI/CLI.hpp>
#include <string>

namespace ssim::exp {

// `schedule`, `verify`, `algorithms`.
void add_schedule_commands(CLI::App& app);

// `simulate CONFIG.yaml [--json] [--trace FILE]`.
void add_simulate_command(CLI::App& app);

// `calibrate MEASUREMENTS.csv [-o TOPOLOGY.yaml]` and `validate MEASURED.csv --topology FILE`.
void add_calibrate_commands(CLI::App& app);

// `run [EXPERIMENT.yaml] [-o DIR] [--jobs N] [--dry-run] [--no-plots]`.
void add_run_command(CLI::App& app);

// `lower ALGO --ranks N --bytes B [--dtype T] [--align A] [--format text|json]`: the p2p plan.
void add_lower_command(CLI::App& app);

// `advise --topology T --size S [--ranks N] [--delay-dist D] ...`: which algorithm to use.
void add_advise_command(CLI::App& app);

// Reads a whole file, or stdin for "-". Throws InputError naming the path when it cannot.
std::string read_input(const std::string& path);
// Writes to a file, or stdout for "" or "-".
void write_output(const std::string& path, const std::string& text);

}  // namespace ssim::exp
