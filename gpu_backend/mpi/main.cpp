// stragglesim-mpi: the MPI executor's driver, one process per rank, in nccl-tests style: an
// AllReduce algorithm (a registry schedule, or mpi for MPI_Allreduce) over a size sweep,
// timed, checked, with an optional straggler delay; table on stdout (rank 0), CSV with --csv,
// JSON with -J. The flags are nccl-tests' (gpu_backend/nccl_tests_flags.hpp, shared with
// stragglesim-gpu run).
//
//   mpirun -np 8 stragglesim-mpi --algo stragglar -b 1M -e 64M -f 4 --delay 5ms --csv runs.csv
//   mpirun -np 4 stragglesim-mpi --algo mpi -b 64K -e 64M -f 4 -n 20 -w 5 -a 3 -J runs.json
//
// Exit codes follow the one error policy (common/error.hpp, docs/cli.md "Errors, exit codes and
// resource limits"): 0 when every element checked out; 1 on bad input (one message from rank 0,
// every rank exits); 2 on a bad command line; 3 when MPI fails; 4 when the check finds wrong
// elements or on an unexpected error. An error only one rank knows is reported by that rank,
// which calls MPI_Abort to end every rank.
#include <mpi.h>

#include <CLI/CLI.hpp>
#include <exception>
#include <iostream>
#include <sstream>
#include <string>
#include <vector>

#include "common/error.hpp"
#include "common/output_file.hpp"
#include "gpu_backend/mpi/mpi_driver.hpp"
#include "gpu_backend/mpi/mpi_support.hpp"
#include "gpu_backend/nccl_tests_flags.hpp"

namespace {

int run(int argc, char** argv, int rank) {
  CLI::App app{
      "stragglesim-mpi: run an AllReduce schedule with one MPI process per rank "
      "(start with mpirun -np N)",
      "stragglesim-mpi"};  // not argv[0]: usage lines name the program, not its path
  // As stragglesim and stragglesim-gpu (issue 43): the version, no run.
  app.set_version_flag("--version", std::string("stragglesim-mpi ") + STRAGGLESIM_VERSION);
  ssim::gpu::NcclTestsFlags flags;
  ssim::gpu::add_nccl_tests_flags(app, flags, "mpi (MPI_Allreduce)");

  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    // Every rank parsed the same arguments; rank 0 speaks for all of them.
    if (e.get_exit_code() == static_cast<int>(CLI::ExitCodes::Success)) {  // --help
      if (rank == 0) return app.exit(e);
      std::ostringstream quiet;
      return app.exit(e, quiet, quiet);
    }
    if (rank == 0) {
      std::cerr << "stragglesim-mpi: error: " << e.what()
                << "\nRun 'stragglesim-mpi --help' for usage.\n";
    }
    return ssim::kExitUsage;
  }

  std::ostringstream rank_out;  // ranks > 0 print nothing
  ssim::gpu::MpiSweepConfig options;
  std::string error;
  try {
    static_cast<ssim::gpu::NcclTestsSettings&>(options) =
        ssim::gpu::resolve_nccl_tests_flags(flags);
    options.args.assign(argv, argv + argc);
  } catch (const ssim::InputError& e) {
    error = e.what();
  }
  ssim::gpu::agree_on_errors(MPI_COMM_WORLD, error);
  const ssim::gpu::MpiSweepOutcome r =
      ssim::gpu::run_mpi_sweep(options, MPI_COMM_WORLD, rank == 0 ? std::cout : rank_out);
  if (r.wrong > 0) {
    if (rank == 0) {
      std::cerr << "stragglesim-mpi: error: check FAILED: " << r.wrong << " wrong elements"
                << (r.first_failure.empty() ? std::string() : "; first: " + r.first_failure)
                << "\n";
    }
    return ssim::kExitInternal;  // wrong sums: a bug (or broken hardware), not input
  }
  return ssim::kExitOk;
}

}  // namespace

int main(int argc, char** argv) {
  ssim::guard_standard_streams();
  if (MPI_Init(&argc, &argv) != MPI_SUCCESS) {
    std::cerr << "stragglesim-mpi: error: MPI_Init failed\n";
    return ssim::kExitResource;
  }
  MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
  int rank = 0;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  int code = 0;
  try {
    code = run(argc, argv, rank);
  } catch (const ssim::gpu::AgreedInputError&) {
    // Every rank has it (agree_on_errors): said once, every rank exits.
    std::ostringstream quiet;
    code = ssim::report_exception("stragglesim-mpi", rank == 0 ? std::cerr : quiet);
  } catch (const ssim::gpu::AgreedOutputError&) {
    // Rank 0's failed write, agreed on the same way (exit 3).
    std::ostringstream quiet;
    code = ssim::report_exception("stragglesim-mpi", rank == 0 ? std::cerr : quiet);
  } catch (...) {
    // Only this rank knows: the others may be waiting on it, so end them all. One write, so
    // the lines of several ranks do not interleave.
    std::ostringstream message;
    code = ssim::report_exception("stragglesim-mpi", message, "rank " + std::to_string(rank));
    std::cerr << message.str() << std::flush;
    MPI_Abort(MPI_COMM_WORLD, code);
  }
  MPI_Finalize();
  // What rank 0 printed must have arrived: a full or closed standard output is exit 3.
  return ssim::check_standard_output("stragglesim-mpi", std::cerr, code);
}
