// stragglesim-mpi: the MPI executor's driver, one process per rank, in nccl-tests style: an
// AllReduce algorithm (a registry schedule, or mpi for MPI_Allreduce) over a size sweep,
// timed, checked, with an optional straggler delay; table on stdout (rank 0), CSV with -o.
//
//   mpirun -np 8 stragglesim-mpi --algo stragglar -b 1M -e 64M -f 4 --delay 5ms -o runs.csv
//   mpirun -np 4 stragglesim-mpi --algo mpi -b 64K -e 64M -f 4 -n 20 -w 5
//
// Exit: 0 when every element checked out; 1 on bad input (one message from rank 0, every rank
// exits) or a failed check; on an unexpected error a rank reports it and calls MPI_Abort, which
// ends every rank.
#include <mpi.h>

#include <CLI/CLI.hpp>
#include <exception>
#include <iostream>
#include <sstream>
#include <string>
#include <vector>

#include "common/error.hpp"
#include "gpu_backend/mpi/mpi_driver.hpp"
#include "gpu_backend/mpi/mpi_support.hpp"
#include "gpu_backend/run_options.hpp"

namespace {

struct Args {
  std::string min_bytes = "32M";
  std::string max_bytes;
  int factor = 2;
  int check = 1;
  std::vector<std::string> options;
  std::string delay = "0";
  std::string dtype = "float32";
};

ssim::gpu::MpiRunOptions to_options(const Args& a, ssim::gpu::MpiRunOptions o) {
  using namespace ssim::gpu;
  const std::uint64_t min = parse_size(a.min_bytes);
  const std::uint64_t max = a.max_bytes.empty() ? min : parse_size(a.max_bytes);
  o.sizes = size_sweep(min, max, a.factor);
  if (a.check != 0 && a.check != 1)
    throw ssim::InputError("-c must be 0 or 1, got " + std::to_string(a.check));
  o.check = a.check == 1;
  for (const std::string& kv : a.options) {
    const auto eq = kv.find('=');
    if (eq == std::string::npos || eq == 0)
      throw ssim::InputError("-O expects KEY=VALUE, got '" + kv + "'");
    o.algorithm_options[kv.substr(0, eq)] = kv.substr(eq + 1);
  }
  o.delay = ssim::parse_time(a.delay);
  o.dtype = parse_dtype(a.dtype);
  return o;
}

int run(int argc, char** argv, int rank) {
  CLI::App app{
      "stragglesim-mpi: run an AllReduce schedule with one MPI process per rank "
      "(start with mpirun -np N)"};
  Args a;
  ssim::gpu::MpiRunOptions o;
  app.add_option("-b,--minbytes", a.min_bytes,
                 "smallest size per rank: 4096, 64K, 1M, 2G (powers of 1024, as nccl-tests), "
                 "or 64KiB, 1MB, ...")
      ->capture_default_str();
  app.add_option("-e,--maxbytes", a.max_bytes, "largest size per rank (default: -b)");
  app.add_option("-f,--stepfactor", a.factor, "multiply the size by this between runs")
      ->capture_default_str();
  app.add_option("-n,--iters", o.iterations, "timed iterations per size")->capture_default_str();
  app.add_option("-w,--warmup_iters", o.warmup, "untimed, unchecked iterations per size first")
      ->capture_default_str();
  app.add_option("-c,--check", a.check, "check every element of every iteration (0 or 1)")
      ->capture_default_str();
  app.add_option("--algo", o.algorithm,
                 "algorithm: a registry name (stragglesim algorithms) or mpi (MPI_Allreduce)")
      ->capture_default_str();
  app.add_option("-O,--option", a.options, "algorithm option KEY=VALUE (repeatable)");
  app.add_option("--delay", a.delay, "straggler arrival delay: 5ms, 100us, ... (0: none)")
      ->capture_default_str();
  app.add_option("--straggler", o.straggler,
                 "the late rank, also the rank straggler-aware schedules are built for "
                 "(default n-1)");
  app.add_option("-d,--dtype", a.dtype,
                 "float32 (float), float64 (double), int32, int64, float16 (half), bfloat16 "
                 "(bf16); the reduction is a sum")
      ->capture_default_str();
  app.add_option("-o,--output", o.output, "write one CSV row per iteration here (rank 0)");

  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    // Every rank parsed the same arguments; rank 0 speaks for all of them.
    if (rank == 0) return app.exit(e);
    std::ostringstream quiet;
    return app.exit(e, quiet, quiet);
  }

  std::ostringstream rank_out;  // ranks > 0 print nothing
  ssim::gpu::MpiRunOptions options;
  std::string error;
  try {
    options = to_options(a, o);
  } catch (const ssim::InputError& e) {
    error = e.what();
  }
  ssim::gpu::agree_on_errors(MPI_COMM_WORLD, error);
  const ssim::gpu::MpiSweepOutcome r =
      ssim::gpu::run_mpi_sweep(options, MPI_COMM_WORLD, rank == 0 ? std::cout : rank_out);
  if (r.wrong > 0) {
    if (rank == 0) {
      std::cerr << "stragglesim-mpi: check FAILED: " << r.wrong << " wrong elements"
                << (r.first_failure.empty() ? std::string() : "; first: " + r.first_failure)
                << "\n";
    }
    return 1;
  }
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  if (MPI_Init(&argc, &argv) != MPI_SUCCESS) {
    std::cerr << "stragglesim-mpi: error: MPI_Init failed\n";
    return 1;
  }
  MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
  int rank = 0;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  int code = 0;
  try {
    code = run(argc, argv, rank);
  } catch (const ssim::gpu::AgreedInputError& e) {
    // Every rank has it (agree_on_errors): said once, every rank exits.
    if (rank == 0) std::cerr << "stragglesim-mpi: error: " << e.what() << "\n";
    code = 1;
  } catch (const std::exception& e) {
    // Only this rank knows: the others may be waiting on it, so end them all.
    std::cerr << "stragglesim-mpi: rank " << rank << ": error: " << e.what() << "\n";
    MPI_Abort(MPI_COMM_WORLD, 1);
  }
  MPI_Finalize();
  return code;
}
