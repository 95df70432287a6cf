#include "experiments/output/plots.hpp"

#include <sys/wait.h>

#include <cstdlib>
#include <filesystem>
#include <iostream>
#include <vector>

#include "experiments/config/data_files.hpp"

namespace ssim::experiments {

std::string shell_quote(const std::string& s) {
  std::string out = "'";
  for (char c : s) out += c == '\'' ? std::string("'\\''") : std::string(1, c);
  return out + "'";
}

namespace {

int shell(const std::string& command) {
  const int status = std::system(command.c_str());
  return status != -1 && WIFEXITED(status) ? WEXITSTATUS(status) : -1;
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

}  // namespace

void make_plots(const std::string& dir, const std::string& formats) {
  const char* env = std::getenv("STRAGGLESIM_PLOT_SCRIPT");
  const std::string script = env ? std::string(env) : data_file("plot.py");
  std::error_code ec;
  if (script.empty() || !std::filesystem::exists(script, ec)) {
    std::cerr << "stragglesim run: plots skipped: "
              << (script.empty() ? "plot.py not found in " + data_dirs_text() : script + " not found")
              << "\n";
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
  std::cout << "drawing plots into " << dir << " (" << formats << ", one plot.py process)...\n"
            << std::flush;
  const int rc = shell(shell_quote(py) + " " + shell_quote(script) + " --format " +
                       shell_quote(formats) + " " + shell_quote(dir));
  if (rc != 0) std::cerr << "stragglesim run: plots not made: plot.py exited with " << rc << "\n";
}

}  // namespace ssim::experiments
