// `stragglesim-gpu run`: validates the options, sets up the device group, runs every size
// (warm-up, then timed and checked iterations), prints an nccl-tests-like table and writes
// the result CSV (result_csv.hpp). In one-process-per-GPU runs only rank 0 prints and writes.
//
//   SweepConfig o;  o.algorithm = "ring";  o.ranks = 2;  o.sizes = {1 << 20};
//   const SweepOutcome r = run_sweep(o, std::cout);   // InputError / DeviceError on failure
//   return r.wrong == 0 ? 0 : 1;
//
// Errors before any GPU work, in this order: every option check that needs no device
// (sweep_config.hpp), then "no CUDA device: <reason>" (DeviceError) when CUDA sees none, then
// the checks that need the GPU count (fewer GPUs than ranks, ...), then every size prepared.
#pragma once

#include <cstdint>
#include <iosfwd>
#include <string>

#include "gpu_backend/cuda/sweep_config.hpp"

namespace ssim::gpu {

struct SweepOutcome {
  std::uint64_t wrong = 0;    // over every iteration, size and rank
  std::string first_failure;  // this process's first wrong element, with size and iteration
};

SweepOutcome run_sweep(const SweepConfig& options, std::ostream& out);

}  // namespace ssim::gpu
