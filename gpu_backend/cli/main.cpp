// stragglesim-gpu: the GPU-side driver.
//   devices  what CUDA and NCCL see on this machine;
//   run      an nccl-tests-style sweep of one algorithm (a registry schedule or nccl) on GPUs,
//            timed, checked, with an optional straggler delay; table on stdout, CSV with
//            --csv. The nccl-tests flags are gpu_backend/nccl_tests_flags.hpp's (shared with
//            stragglesim-mpi).
//
//   stragglesim-gpu run --algo ring -b 1M -e 256M -f 4 -n 20 -w 5 --csv ring.csv
//   stragglesim-gpu run --algo stragglar --delay 5ms --straggler 7 --phase1 nccl-rs
//   stragglesim-gpu run --algo ring --ranks 8 -b 64K -e 1G   # direct transport (default)
//   stragglesim-gpu run --algo tree --transport single-gpu --ranks 8 -b 64K -e 64M
//   stragglesim-gpu run --algo ring --launch eager --timeline ring_rounds.csv --timeout 10s
//   stragglesim-gpu run --algo ring --rank R --nranks 16 --id-file /shared/id   # per process
//   mpirun -np 16 stragglesim-gpu run --algo stragglar --delay 5ms   # ranks and NCCL id via MPI
#include <CLI/CLI.hpp>
#include <iostream>
#include <memory>
#include <sstream>
#include <string>
#include <vector>

#include "common/error.hpp"
#include "common/output_file.hpp"
#include "gpu_backend/cuda/bootstrap_mpi.hpp"
#include "gpu_backend/cuda/check.hpp"
#include "gpu_backend/cuda/devices.hpp"
#include "gpu_backend/cuda/driver.hpp"
#include "gpu_backend/nccl_tests_flags.hpp"

namespace {

// The flags only this driver has; the nccl-tests ones are gpu_backend/nccl_tests_flags.hpp's.
struct RunArgs {
  std::string transport;  // empty: default_transport
  std::string phase1 = "schedule";
  std::string id_timeout = "60s";
  std::string launch = "graph";
  std::string copy = "memcpy";
  std::string timeout = "60s";
};

ssim::gpu::SweepConfig to_options(const ssim::gpu::NcclTestsFlags& flags, const RunArgs& a,
                                  ssim::gpu::SweepConfig o) {
  using namespace ssim::gpu;
  const NcclTestsSettings s = resolve_nccl_tests_flags(flags);
  o.sizes = s.sizes;
  o.iterations = s.iterations;
  o.warmup = s.warmup;
  o.check_iterations = s.check_iterations;
  o.average = s.average;
  o.json = s.json;
  o.algorithm = s.algorithm;
  o.algorithm_options = s.algorithm_options;
  o.delay = s.delay;
  o.straggler = s.straggler;
  o.dtype = s.dtype;
  o.output = s.csv;
  o.phase1 = parse_phase1(a.phase1);
  o.transport = a.transport.empty() ? Transport::direct : parse_transport(a.transport);
  o.id_timeout = ssim::parse_time(a.id_timeout);
  o.launch = parse_launch(a.launch);
  o.copy = parse_copy_mode(a.copy);
  o.timeout = ssim::parse_time(a.timeout);
  return o;
}

}  // namespace

// Without --transport: ssim::gpu::default_transport, once MPI has said whether this is one
// process per GPU.
ssim::gpu::SweepConfig with_default_transport(ssim::gpu::SweepConfig o, bool defaulted) {
  if (defaulted) o.transport = ssim::gpu::default_transport(o);
  return o;
}

// Under mpirun (built with MPI) rank, size and the node-local rank come from MPI.
ssim::gpu::SweepConfig with_mpi(ssim::gpu::SweepConfig o, const ssim::gpu::MpiSession* mpi) {
  if (!mpi) return o;
  if (o.rank || o.nranks || !o.id_file.empty()) {
    throw ssim::InputError(
        "started by mpirun: rank, rank count and NCCL id come from MPI; drop "
        "--rank/--nranks/--id-file");
  }
  if (mpi->size() < 2)
    throw ssim::InputError("mpirun -np " + std::to_string(mpi->size()) +
                           ": a run needs >= 2 ranks");
  o.mpi = true;
  o.rank = mpi->rank();
  o.nranks = mpi->size();
  o.local_rank = mpi->local_rank();
  return o;
}

int run_program(int argc, char** argv) {
  std::unique_ptr<ssim::gpu::MpiSession> mpi;
  try {
    if (ssim::gpu::launched_by_mpirun() && ssim::gpu::built_with_mpi())
      mpi = ssim::gpu::MpiSession::start(&argc, &argv);
  } catch (...) {
    return ssim::report_exception("stragglesim-gpu", std::cerr);
  }
  // Named here, not from argv[0]: usage lines say "stragglesim-gpu", not the path it ran by.
  CLI::App app{"stragglesim-gpu: run schedules on GPUs with NCCL", "stragglesim-gpu"};
  app.require_subcommand(1);
  app.set_version_flag("--version", std::string("stragglesim-gpu ") + STRAGGLESIM_VERSION);
  CLI::App* devices =
      app.add_subcommand("devices", "List the CUDA devices and the CUDA/NCCL versions");
  devices->callback([] {
    const ssim::gpu::DeviceReport r = ssim::gpu::query_devices();
    std::cout << ssim::gpu::format_device_report(r);
  });

  CLI::App* run = app.add_subcommand(
      "run", "Time and check one AllReduce algorithm over a size sweep (nccl-tests style)");
  RunArgs a;
  ssim::gpu::SweepConfig o;
  ssim::gpu::NcclTestsFlags flags;
  ssim::gpu::add_nccl_tests_flags(*run, flags, "nccl (ncclAllReduce)");
  run->add_option("--ranks", o.ranks,
                  "ranks (default: every GPU for --transport nccl; required for single-gpu)");
  run->add_option("--transport", a.transport,
                  "direct (rank r on GPU r mod GPUs, fused kernels reading the sender's buffer; "
                  "default), single-gpu (every rank on GPU 0, copies into scratch + apply) or "
                  "nccl (one rank per GPU; default for --algo nccl, --phase1 nccl-rs and one "
                  "process per GPU)");
  run->add_option("--phase1", a.phase1,
                  "schedule, or nccl-rs: run a straggler-aware schedule's ring reduce-scatter "
                  "phase as ncclReduceScatter on the non-stragglers")
      ->capture_default_str();
  run->add_option("--rank", o.rank, "one process per GPU: this process's rank");
  run->add_option("--nranks", o.nranks, "one process per GPU: number of processes");
  run->add_option("--id-file", o.id_file,
                  "one process per GPU: file through which rank 0 hands out the NCCL id (must "
                  "not exist when rank 0 starts; on a shared file system across nodes)");
  run->add_option("--id-timeout", a.id_timeout, "how long ranks > 0 wait for the id file")
      ->capture_default_str();
  run->add_option("--device", o.device, "one process per GPU: GPU index (default rank % GPUs)");
  run->add_option("--launch", a.launch,
                  "graph: capture each size's iteration once into CUDA graphs and launch them "
                  "(host issue cost outside the timing); eager: issue every call each iteration")
      ->capture_default_str();
  run->add_option("--copy", a.copy,
                  "single-gpu transport: copy receives into scratch with memcpy "
                  "(cudaMemcpyAsync) or kernel (16-byte vectors; no slowdown at odd chunk "
                  "strides)")
      ->capture_default_str();
  run->add_option("--timeout", a.timeout,
                  "watchdog per size: abort the communicators and fail, naming the rank and "
                  "round that did not finish")
      ->capture_default_str();
  run->add_option("--timeline", o.timeline,
                  "write every rank's arrival, per-round end and finish (%globaltimer) as CSV");
  int exit_code = 0;
  run->callback([&] {
    o.args.assign(argv, argv + argc);
    const ssim::gpu::SweepOutcome r = ssim::gpu::run_sweep(
        with_default_transport(with_mpi(to_options(flags, a, o), mpi.get()), a.transport.empty()),
        std::cout);
    if (r.wrong > 0) {
      std::cerr << "stragglesim-gpu: error: check FAILED: " << r.wrong << " wrong elements"
                << (r.first_failure.empty() ? std::string() : "; first: " + r.first_failure)
                << "\n";
      exit_code = ssim::kExitInternal;  // wrong sums: a bug (or broken hardware), not input
    }
  });

  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    if (e.get_exit_code() == static_cast<int>(CLI::ExitCodes::Success))
      return app.exit(e);  // --help, --version
    const std::vector<CLI::App*> parsed = app.get_subcommands();
    std::cerr << "stragglesim-gpu: error: " << ssim::printable(e.what())
              << "\nRun 'stragglesim-gpu "
              << (parsed.empty() ? std::string("--help'") : parsed.front()->get_name() + " --help'")
              << " for usage.\n";
    return ssim::kExitUsage;
  } catch (...) {
    // One write, so the lines of several ranks do not interleave.
    std::ostringstream message;
    const int code = ssim::report_exception(
        "stragglesim-gpu", message,
        mpi ? "rank " + std::to_string(mpi->rank()) + " of " + std::to_string(mpi->size())
            : std::string());
    std::cerr << message.str() << std::flush;
    // The other ranks may be waiting in MPI or NCCL for this one: end the whole job.
    if (mpi && mpi->size() > 1) mpi->abort(code);
    return code;
  }
  return exit_code;
}

int main(int argc, char** argv) {
  ssim::guard_standard_streams();
  // What was printed must have arrived: a full or closed standard output is exit 3.
  return ssim::check_standard_output("stragglesim-gpu", std::cerr, run_program(argc, argv));
}
