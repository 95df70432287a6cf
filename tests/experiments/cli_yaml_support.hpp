// Helpers of the CLI tests that write a YAML config to a temporary file and run a command on it
// (cli_intermittent_test.cpp, cli_newcomer_test.cpp).
#pragma once

#include <unistd.h>

#include <cstdio>
#include <fstream>
#include <string>

#include "cli_support.hpp"

namespace ssim::testing {

inline bool contains(const std::string& s, const std::string& what) {
  return s.find(what) != std::string::npos;
}

// A path of this process under /tmp: /tmp/ssim_<tag>_<pid>_<name>.
inline std::string temp_path(const std::string& tag, const std::string& name) {
  return "/tmp/ssim_" + tag + "_" + std::to_string(::getpid()) + "_" + name;
}

// Writes `yaml` to a temporary file, runs `stragglesim COMMAND FILE FLAGS`, removes the file.
inline CommandResult run_yaml_file(const std::string& tag, const std::string& command,
                                   const std::string& yaml, const std::string& flags) {
  const std::string path = temp_path(tag, "config.yaml");
  std::ofstream(path) << yaml;
  CommandResult r = run_cli(command + " " + path + " " + flags);
  std::remove(path.c_str());
  return r;
}

}  // namespace ssim::testing
