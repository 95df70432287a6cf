// Test support: runs the built `stragglesim` binary through the shell and captures its exit
// code, stdout and stderr separately.
#pragma once

#include <fcntl.h>
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <sys/wait.h>
#include <unistd.h>

#include <array>
#include <cstdio>
#include <fstream>
#include <sstream>
#include <string>

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

}  // namespace ssim::testing
