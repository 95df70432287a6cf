// The settings of `stragglesim-gpu run` as typed values, and every check on them that needs
// no GPU, so bad input fails the same way (and is tested) on machines without one.
//
//   SweepConfig o;
//   o.algorithm = "stragglar";  o.ranks = 8;  o.delay = parse_time("5ms");
//   o.sizes = size_sweep(parse_size("1M"), parse_size("64MiB"), 2);
//   validate_without_device(o);                  // InputError on the first problem
//   const int n = resolve_ranks(o, device_count);
//   check_device_count(o, n, device_count);
//   const PreparedCollective c = prepare_collective(collective_spec(o, n, o.sizes[0]));
//
// Sizes follow nccl-tests (-b/-e/-f); parse_size, size_sweep and kMaxRanks are shared with the
// MPI executor in gpu_backend/nccl_tests_flags.hpp.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "common/units.hpp"
#include "gpu_backend/cuda/device_plan.hpp"
#include "gpu_backend/nccl_tests_flags.hpp"
#include "lowering/plan.hpp"

namespace ssim::gpu {

struct SweepConfig {
  std::vector<std::uint64_t> sizes;  // bytes per rank, in run order
  int iterations = 20;
  int warmup = 5;
  // -c: check the first N timed iterations of each size, and N - iterations more untimed
  // ones after them when N > iterations (nccl-tests); 0: none.
  int check_iterations = 1;
  RankAverage average = RankAverage::mean;  // -a: the time column over ranks
  std::string algorithm = "ring";
  std::map<std::string, std::string> algorithm_options;  // --option key=value
  std::optional<int> ranks;                              // default: all GPUs (nccl transport)
  Seconds delay;                                         // the straggler's arrival delay
  std::optional<int> straggler;                          // default n-1
  lowering::DType dtype = lowering::DType::float32;
  Transport transport = Transport::nccl;
  Phase1 phase1 = Phase1::schedule;
  // One process per GPU: all three set, or none; or `mpi` (started by mpirun: rank and nranks
  // from MPI, the NCCL id by MPI_Bcast, no id file).
  bool mpi = false;
  int local_rank = 0;  // mpi: the rank among this node's processes (picks the GPU)
  std::optional<int> rank;
  std::optional<int> nranks;
  std::string id_file;
  Seconds id_timeout{60.0};
  std::optional<int> device;      // this process's GPU; default rank (mpi: local rank) % GPUs
  std::string output;             // result CSV path; empty: none
  std::string json;               // -J: the table as nccl-tests JSON; empty: none
  std::vector<std::string> args;  // the command line, for the JSON
  Launch launch = Launch::graph;
  CopyMode copy = CopyMode::memcpy;  // --copy: the single-GPU transport's copies into scratch
  Seconds timeout{60.0};             // the watchdog's budget per size
  std::string timeline;              // per-rank, per-round stamps CSV path; empty: none
};

bool one_process_per_gpu(const SweepConfig& o);
// The transport when --transport is not given: nccl for --algo nccl, --phase1 nccl-rs and one
// process per GPU (what only NCCL runs), else direct.
Transport default_transport(const SweepConfig& o);
// The direct transport's placement: rank r on GPU r mod device_count (every rank on GPU 0 of
// a one-GPU machine; one rank per GPU when there are as many GPUs as ranks).
std::vector<int> direct_devices(int ranks, int device_count);

// Everything that can be checked before a device is touched. When the rank count is known
// (--ranks or --nranks) this includes preparing every size (prepare_collective), so a size
// too small for the algorithm's chunks fails here.
void validate_without_device(const SweepConfig& o);

// The run's rank count: --nranks, --ranks, or for the nccl and direct transports the GPU count.
int resolve_ranks(const SweepConfig& o, int device_count);
// The GPU this process uses for one-process-per-GPU runs.
int process_device(const SweepConfig& o, int device_count);
// InputError when the machine cannot host the run: fewer GPUs than ranks for the nccl
// transport in one process, or a --device outside the machine's GPUs.
void check_device_count(const SweepConfig& o, int ranks, int device_count);

// The rank that gets the delay: --straggler, default n-1.
int straggler_rank(const SweepConfig& o, int ranks);
// The generator's options: --option values plus, for straggler-aware algorithms, the
// straggler rank, so the schedule is built for the rank that is delayed.
CollectiveSpec collective_spec(const SweepConfig& o, int ranks, std::uint64_t bytes);

}  // namespace ssim::gpu
