// Test support: runs the built `stragglesim` binary through the shell and captures its exit
// code, stdout and stderr separately.
#pragma once

#include <fcntl.h>
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <chrono>
#include <csignal>
#include <cstdio>
#include <fstream>
#include <optional>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

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
  const std::string cmd = std::string(STRAGGLESIM_BIN) + " " + args + " <" + in_path + " >" +
                          out_path + " 2>" + err_path;
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

// A character device node with the given numbers at `path`, the tests' own stand-in for
// /dev/null (1, 3) or /dev/full (1, 7) (the real ones are never touched); false when this
// process may not make one (not root) or may not write to it (a nodev mount).
inline bool make_char_device(const std::string& path, unsigned major_number,
                             unsigned minor_number) {
  if (geteuid() != 0) return false;
  if (mknod(path.c_str(), S_IFCHR | 0666, makedev(major_number, minor_number)) != 0) return false;
  const int fd = open(path.c_str(), O_WRONLY);
  if (fd < 0) return false;
  close(fd);
  return true;
}

// That `path` is still the character device (major_number, minor_number) after `after` ran.
inline void expect_char_device(const std::string& path, unsigned major_number,
                               unsigned minor_number, const std::string& after) {
  struct stat st {};
  ASSERT_EQ(lstat(path.c_str(), &st), 0) << path << " is gone after " << after;
  EXPECT_TRUE(S_ISCHR(st.st_mode)) << path << " is no longer a device after " << after;
  EXPECT_EQ(major(st.st_rdev), major_number) << after;
  EXPECT_EQ(minor(st.st_rdev), minor_number) << after;
}

// Starts `stragglesim args...` in the background (no shell); its stderr goes to `err`, its
// stdout to `err`.out. For tests that signal or kill the running process.
inline pid_t start_cli(const std::vector<std::string>& args, const std::string& err) {
  const pid_t child = fork();
  if (child == 0) {
    const int fd = open(err.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
    const int out = open((err + ".out").c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
    dup2(fd, 2);
    dup2(out, 1);
    std::vector<char*> argv{const_cast<char*>(STRAGGLESIM_BIN)};
    for (const std::string& a : args) argv.push_back(const_cast<char*>(a.c_str()));
    argv.push_back(nullptr);
    execv(STRAGGLESIM_BIN, argv.data());
    _exit(127);
  }
  return child;
}

inline std::size_t line_count(const std::string& path) {
  const std::string text = slurp(path);
  return static_cast<std::size_t>(std::count(text.begin(), text.end(), '\n'));
}

// Waits (up to 120 s) until `path` has `lines` lines (nullopt) or `child` has ended (its wait
// status). After 120 s without either the test fails and the child is killed.
inline std::optional<int> wait_for_lines(const std::string& path, std::size_t lines, pid_t child) {
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(120);
  while (std::chrono::steady_clock::now() < deadline) {
    if (line_count(path) >= lines) return std::nullopt;
    int status = 0;
    if (waitpid(child, &status, WNOHANG) == child) return status;
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
  ADD_FAILURE() << "no progress in 120 s";
  kill(child, SIGKILL);
  int status = 0;
  waitpid(child, &status, 0);
  return status;
}

}  // namespace ssim::testing
