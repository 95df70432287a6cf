// The plots of an experiment's results: experiments/plot.py (the shipped copy, or
// STRAGGLESIM_PLOT_SCRIPT) run on the results folder by the first python3 that has matplotlib
// (STRAGGLESIM_PYTHON, python3, /usr/bin/python3). Without either, a note on stderr says so and
// how to draw them later; the results are complete without the plots.
//
//   make_plots("results/paper_scaling", "png,pdf");
#pragma once

#include <string>

namespace ssim::experiments {

// `s` as one word of a POSIX shell command line (in single quotes).
std::string shell_quote(const std::string& s);

// Runs plot.py on `dir` in `formats` (comma-separated png, svg, pdf), saying so on stdout; a
// missing script or python, or plot.py failing, is a note on stderr, never an error.
void make_plots(const std::string& dir, const std::string& formats);

}  // namespace ssim::experiments
