// stragglesim-gpu: the GPU-side driver.
//   devices  what CUDA and NCCL see on this machine;
//   run      an nccl-tests-style sweep of one algorithm (a registry schedule or nccl) on GPUs,
//            timed, checked, with an optional straggler delay; table on stdout, CSV with
//            --csv. The nccl-tests flags are gpu_backend/run_options.hpp's (shared with
//            stragglesim-mpi).
//
//   stragglesim-gpu run --algo ring -b 1M -e 256M -f 4 -n 20 -w 5 --csv ring.csv
//   stragglesim-gpu run --algo stragglar --delay 5ms --straggler 7 --phase1 nccl-rs
//   stragglesim-gpu run --algo tree --transport single-gpu --ranks 8 -b 64K -e 64M
//   stragglesim-gpu run --algo ring --rank R --nranks 16 --id-file /shared/id   # per process
#include <CLI/CLI.hpp>
#include <iostream>
#include <string>
#include <vector>

#include "common/error.hpp"
#include "gpu_backend/cuda/check.hpp"
#include "gpu_backend/cuda/devices.hpp"
#include "gpu_backend/cuda/driver.hpp"
#include "gpu_backend/run_options.hpp"

namespace {

// The flags only this driver has; the nccl-tests ones are gpu_backend/run_options.hpp's.
struct RunArgs {
  std::string transport = "nccl";
  std::string phase1 = "schedule";
  std::string id_timeout = "60s";
};

ssim::gpu::RunOptions to_options(const ssim::gpu::NcclTestsFlags& flags, const RunArgs& a,
                                 ssim::gpu::RunOptions o) {
  using namespace ssim::gpu;
  const NcclTestsSettings s = resolve_nccl_tests_flags(flags);
  // Not wired into the CUDA driver (gpu_backend/cuda/driver.cpp) yet: refused, not ignored.
  if (!s.json.empty()) throw ssim::InputError("-J: stragglesim-gpu does not write JSON yet");
  if (s.average != RankAverage::mean)
    throw ssim::InputError("-a: stragglesim-gpu reports the first-arrival-to-last-finish time");
  if (s.check_iterations > 1) {
    throw ssim::InputError("-c must be 0 or 1, got " + std::to_string(s.check_iterations) +
                           " (stragglesim-gpu checks every iteration or none)");
  }
  o.sizes = s.sizes;
  o.iterations = s.iterations;
  o.warmup = s.warmup;
  o.check = s.check_iterations > 0;
  o.algorithm = s.algorithm;
  o.algorithm_options = s.algorithm_options;
  o.delay = s.delay;
  o.straggler = s.straggler;
  o.dtype = s.dtype;
  o.output = s.csv;
  o.transport = parse_transport(a.transport);
  o.phase1 = parse_phase1(a.phase1);
  o.id_timeout = ssim::parse_time(a.id_timeout);
  return o;
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"stragglesim-gpu: run schedules on GPUs with NCCL"};
  app.require_subcommand(1);
  CLI::App* devices =
      app.add_subcommand("devices", "List the CUDA devices and the CUDA/NCCL versions");
  devices->callback([] {
    const ssim::gpu::DeviceReport r = ssim::gpu::query_devices();
    std::cout << ssim::gpu::format_device_report(r);
  });

  CLI::App* run = app.add_subcommand(
      "run", "Time and check one AllReduce algorithm over a size sweep (nccl-tests style)");
  RunArgs a;
  ssim::gpu::RunOptions o;
  ssim::gpu::NcclTestsFlags flags;
  ssim::gpu::add_nccl_tests_flags(*run, flags, "nccl (ncclAllReduce)");
  run->add_option("--ranks", o.ranks,
                  "ranks (default: every GPU for --transport nccl; required for single-gpu)");
  run->add_option("--transport", a.transport,
                  "nccl (one rank per GPU) or single-gpu (every rank on GPU 0, copies)")
      ->capture_default_str();
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
  int exit_code = 0;
  run->callback([&] {
    const ssim::gpu::SweepOutcome r = ssim::gpu::run_sweep(to_options(flags, a, o), std::cout);
    if (r.wrong > 0) {
      std::cerr << "stragglesim-gpu: check FAILED: " << r.wrong << " wrong elements"
                << (r.first_failure.empty() ? std::string() : "; first: " + r.first_failure)
                << "\n";
      exit_code = 1;
    }
  });

  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    return app.exit(e);
  } catch (const std::exception& e) {
    std::cerr << "stragglesim-gpu: error: " << e.what() << "\n";
    return 1;
  }
  return exit_code;
}
