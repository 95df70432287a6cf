// `stragglesim train CONFIG.yaml [--json] [--steps-csv FILE] [--ranks-csv FILE] [-n STEPS]
// [--seed S]`: a training job's step model (sim/training.hpp) per algorithm: step times,
// samples/s, idle time per rank, GPU-hours lost per day to stragglers.
#pragma once

#include <CLI/CLI.hpp>

namespace ssim::exp {

void add_train_command(CLI::App& app);

// `stragglesim fit-delays STEPS.csv|TRACE.json... [-o FITTED.yaml]`: the delay model
// (sim/delay_fit.hpp) of a per-rank step log or of PyTorch profiler traces, written as the
// `delays:` map the configs take, with the goodness-of-fit report as comments.
void add_fit_delays_command(CLI::App& app);

}  // namespace ssim::exp
