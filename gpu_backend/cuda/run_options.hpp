// The settings of `stragglesim-gpu run` as typed values, and every check on them that needs
// no GPU, so bad input fails the same way (and is tested) on machines without one.
//
//   RunOptions o;
//   o.algorithm = "stragglar";  o.ranks = 8;  o.delay = parse_time("5ms");
//   o.sizes = size_sweep(parse_size("1M"), parse_size("64MiB"), 2);
//   validate_without_device(o);                  // InputError on the first problem
//   const int n = resolve_ranks(o, device_count);
//   check_device_count(o, n, device_count);
//   const PreparedCollective c = prepare_collective(collective_spec(o, n, o.sizes[0]));
//
// Sizes follow nccl-tests: -b/-e/-f give b, b*f, b*f^2, ... up to e; a bare K, M or G after
// the number means KiB, MiB or GiB (nccl-tests' powers of 1024); any size ssim::parse_bytes
// reads is accepted too ("64MiB", "1MB", "4096").
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "common/units.hpp"
#include "gpu_backend/cuda/device_plan.hpp"
#include "gpu_backend/plan.hpp"

namespace ssim::gpu {

// Most ranks a run takes: the check's input values stay distinct up to 1030 ranks
// (host_executor.hpp); a round number keeps the message simple.
inline constexpr int kMaxRanks = 1024;

struct RunOptions {
  std::vector<std::uint64_t> sizes;  // bytes per rank, in run order
  int iterations = 20;
  int warmup = 5;
  bool check = true;
  std::string algorithm = "ring";
  std::map<std::string, std::string> algorithm_options;  // --option key=value
  std::optional<int> ranks;                              // default: all GPUs (nccl transport)
  Seconds delay;                                         // the straggler's arrival delay
  std::optional<int> straggler;                          // default n-1
  DType dtype = DType::float32;
  Transport transport = Transport::nccl;
  Phase1 phase1 = Phase1::schedule;
  // One process per GPU: all three set, or none.
  std::optional<int> rank;
  std::optional<int> nranks;
  std::string id_file;
  Seconds id_timeout{60.0};
  std::optional<int> device;  // this process's GPU; default rank % (GPUs on the machine)
  std::string output;         // result CSV path; empty: none
};

bool one_process_per_gpu(const RunOptions& o);

// "1M" = 1 MiB (nccl-tests), else parse_bytes. InputError on anything else.
std::uint64_t parse_size(std::string_view text);
// min, min*factor, ... while <= max. InputError when min is 0, min > max, or factor < 2
// while min < max.
std::vector<std::uint64_t> size_sweep(std::uint64_t min, std::uint64_t max, int factor);

// Everything that can be checked before a device is touched. When the rank count is known
// (--ranks or --nranks) this includes preparing every size (prepare_collective), so a size
// too small for the algorithm's chunks fails here.
void validate_without_device(const RunOptions& o);

// The run's rank count: --nranks, --ranks, or for the nccl transport the GPU count.
int resolve_ranks(const RunOptions& o, int device_count);
// The GPU this process uses for one-process-per-GPU runs.
int process_device(const RunOptions& o, int device_count);
// InputError when the machine cannot host the run: fewer GPUs than ranks for the nccl
// transport in one process, or a --device outside the machine's GPUs.
void check_device_count(const RunOptions& o, int ranks, int device_count);

// The rank that gets the delay: --straggler, default n-1.
int straggler_rank(const RunOptions& o, int ranks);
// The generator's options: --option values plus, for straggler-aware algorithms, the
// straggler rank, so the schedule is built for the rank that is delayed.
CollectiveSpec collective_spec(const RunOptions& o, int ranks, std::uint64_t bytes);

}  // namespace ssim::gpu
