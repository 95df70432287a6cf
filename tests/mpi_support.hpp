// Test support for tests that start programs under mpirun (tests/gpu_backend/mpi,
// tests/experiments/mpi): whether an mpirun was found at configure time, and one bounded run.
// Open MPI settings go through the environment (implementations that do not know them ignore
// them): run as root, more processes than cores, shared memory and self transports only, and no
// grace period before mpirun kills the (already exiting) ranks of a failed job. A hang fails the
// test as exit status 124 instead of blocking ctest.
#pragma once

#include <gtest/gtest.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <sstream>
#include <string>

namespace ssim::testing {

struct MpiRunResult {
  int rc = -1;
  std::string out;
  std::string err;
};

inline constexpr int kMpiRunTimeoutSeconds = 60;

inline bool have_mpirun(const std::string& mpiexec) { return !mpiexec.empty() && access(mpiexec.c_str(), X_OK) == 0; }

// `mpiexec -np ranks program args`, stdin from /dev/null, stdout and stderr captured apart.
inline MpiRunResult run_under_mpirun(const std::string& mpiexec, int ranks, const std::string& program,
                                     const std::string& args) {
  char dir_template[] = "/tmp/ssim_mpirun_XXXXXX";
  const std::string dir = mkdtemp(dir_template);
  const std::string out_path = dir + "/out", err_path = dir + "/err";
  const std::string cmd =
      "env OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 "
      "OMPI_MCA_rmaps_base_oversubscribe=1 OMPI_MCA_btl=self,vader "
      "OMPI_MCA_odls_base_sigkill_timeout=0 timeout -k 5 " +
      std::to_string(kMpiRunTimeoutSeconds) + " " + mpiexec + " -np " + std::to_string(ranks) + " " + program + " " +
      args + " </dev/null >" + out_path + " 2>" + err_path;
  const int status = std::system(cmd.c_str());
  MpiRunResult r;
  r.rc = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  auto read = [](const std::string& path) {
    std::ifstream in(path);
    std::stringstream ss;
    ss << in.rdbuf();
    return ss.str();
  };
  r.out = read(out_path);
  r.err = read(err_path);
  std::remove(out_path.c_str());
  std::remove(err_path.c_str());
  rmdir(dir.c_str());
  return r;
}

}  // namespace ssim::testing

#define SSIM_REQUIRE_MPIRUN()                                                                      \
  do {                                                                                             \
    if (!::ssim::testing::have_mpirun(STRAGGLESIM_MPIEXEC))                                        \
      GTEST_SKIP() << "no mpirun found at configure time (Debian: openmpi-bin); MPI runs skipped"; \
  } while (0)
