// Test support: runs the built `stragglesim` binary through the shell and captures its exit
// code, stdout and stderr separately.
#pragma once

#include <array>
#include <cstdio>
#include <fstream>
#include <sstream>
#include <string>
#include <sys/wait.h>
#include <unistd.h>

namespace ssim::testing {

struct CommandResult {
  int rc = -1;
  std::string out;
  std::string err;
};

inline std::string slurp(const std::string& path) {
  std::ifstream in(path);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

// `args` is appended to the binary path as shell text; `stdin_text` (if any) is piped in.
inline CommandResult run_cli(const std::string& args, const std::string& stdin_text = "") {
  char dir_template[] = "/tmp/ssim_cli_XXXXXX";
  const std::string dir = mkdtemp(dir_template);
  const std::string in_path = dir + "/in", out_path = dir + "/out", err_path = dir + "/err";
  std::ofstream(in_path) << stdin_text;
  const std::string cmd = std::string(STRAGGLESIM_BIN) + " " + args + " <" + in_path + " >" + out_path + " 2>" +
                          err_path;
  const int status = std::system(cmd.c_str());
  CommandResult r;
  r.rc = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  r.out = slurp(out_path);
  r.err = slurp(err_path);
  std::remove(in_path.c_str());
  std::remove(out_path.c_str());
  std::remove(err_path.c_str());
  rmdir(dir.c_str());
  return r;
}

inline std::string data_path(const std::string& relative) {
  return std::string(STRAGGLESIM_SOURCE_DIR) + "/tests/data/" + relative;
}

}  // namespace ssim::testing
