#include "gpu_backend/cuda/sweep_config.hpp"

#include "algorithms/registry.hpp"
#include "common/error.hpp"
#include "gpu_backend/run_table.hpp"

namespace ssim::gpu {

bool one_process_per_gpu(const SweepConfig& o) {
  return o.mpi || o.rank.has_value() || o.nranks.has_value() || !o.id_file.empty();
}

Transport default_transport(const SweepConfig& o) {
  if (o.algorithm == kNcclAlgorithm || o.phase1 == Phase1::nccl_rs || one_process_per_gpu(o))
    return Transport::nccl;
  return Transport::direct;
}

std::vector<int> direct_devices(int ranks, int device_count) {
  std::vector<int> out;
  for (int r = 0; r < ranks; ++r) out.push_back(device_count > 0 ? r % device_count : 0);
  return out;
}

namespace {

std::optional<int> known_ranks(const SweepConfig& o) {
  if (o.nranks) return o.nranks;
  return o.ranks;
}

}  // namespace

void validate_without_device(const SweepConfig& o) {
  if (o.sizes.empty()) throw InputError("no sizes to run (-b/-e)");
  if (o.iterations < 1)
    throw InputError("-n (iterations) must be >= 1, got " + std::to_string(o.iterations));
  if (o.warmup < 0)
    throw InputError("-w (warm-up iterations) must be >= 0, got " + std::to_string(o.warmup));
  if (o.check_iterations < 0) {
    throw InputError("-c (checked iterations) must be >= 0, got " +
                     std::to_string(o.check_iterations));
  }
  if (o.timeout.value <= 0) throw InputError("--timeout must be > 0");
  if (o.copy == CopyMode::kernel && o.transport != Transport::single_gpu) {
    throw InputError(
        "--copy kernel: only the single-gpu transport copies receives into scratch "
        "(transport " +
        std::string(to_string(o.transport)) + ")");
  }
  if (o.algorithm_options.count("straggler"))
    throw InputError("set the straggler with --straggler, not --option straggler=...");

  require_known_algorithm(o.algorithm, std::string(kNcclAlgorithm));
  if (o.algorithm == kNcclAlgorithm && o.phase1 == Phase1::nccl_rs) {
    throw InputError("--phase1 nccl-rs applies to schedules, not to --algo nccl");
  }
  if (o.transport != Transport::nccl) {
    if (o.algorithm == kNcclAlgorithm) {
      throw InputError("--algo nccl needs --transport nccl (NCCL's own AllReduce; --transport " +
                       std::string(to_string(o.transport)) + " runs schedules)");
    }
    if (o.phase1 == Phase1::nccl_rs) throw InputError("--phase1 nccl-rs needs --transport nccl");
    if (one_process_per_gpu(o)) throw InputError("--rank/--nranks/--id-file need --transport nccl");
  }

  if (one_process_per_gpu(o)) {
    if (o.mpi && !o.id_file.empty())
      throw InputError("under mpirun the NCCL id goes through MPI: drop --id-file");
    if (!o.rank || !o.nranks || (o.id_file.empty() && !o.mpi))
      throw InputError("one process per GPU needs all of --rank, --nranks and --id-file");
    if (*o.nranks < 2 || *o.nranks > kMaxRanks) {
      throw InputError("--nranks must be in [2, " + std::to_string(kMaxRanks) + "], got " +
                       std::to_string(*o.nranks));
    }
    if (*o.rank < 0 || *o.rank >= *o.nranks) {
      throw InputError("--rank must be in [0, " + std::to_string(*o.nranks) + "), got " +
                       std::to_string(*o.rank));
    }
    if (o.ranks && *o.ranks != *o.nranks) {
      throw InputError("--ranks (" + std::to_string(*o.ranks) + ") differs from --nranks (" +
                       std::to_string(*o.nranks) + ")");
    }
    if (o.id_timeout.value <= 0) throw InputError("--id-timeout must be > 0");
  } else if (o.device) {
    throw InputError("--device applies to one process per GPU (--rank/--nranks/--id-file)");
  }

  const std::optional<int> n = known_ranks(o);
  if (!n && o.transport == Transport::single_gpu)
    throw InputError("--transport single-gpu needs --ranks (how many ranks to put on the GPU)");
  if (!n) {
    // The rank count comes from the device count: check what does not depend on it now, so
    // that a bad flag is said as such, not hidden behind "no CUDA device".
    if (o.algorithm != kNcclAlgorithm)
      check_options_for_some_rank_count(o.algorithm, o.algorithm_options, o.straggler);
    else if (o.straggler && *o.straggler < 0)
      throw InputError("--straggler must be a rank >= 0, got " + std::to_string(*o.straggler));
    return;
  }
  if (*n < 2 || *n > kMaxRanks) {
    throw InputError("--ranks must be in [2, " + std::to_string(kMaxRanks) + "], got " +
                     std::to_string(*n));
  }
  if (o.straggler && (*o.straggler < 0 || *o.straggler >= *n)) {
    throw InputError("--straggler must be a rank in [0, " + std::to_string(*n) + "), got " +
                     std::to_string(*o.straggler));
  }
  for (std::uint64_t bytes : o.sizes) prepare_collective(collective_spec(o, *n, bytes));
}

int resolve_ranks(const SweepConfig& o, int device_count) {
  if (const std::optional<int> n = known_ranks(o)) return *n;
  if (o.transport == Transport::single_gpu)
    throw InputError("--transport single-gpu needs --ranks (how many ranks to put on the GPU)");
  return device_count;
}

int process_device(const SweepConfig& o, int device_count) {
  if (o.device) return *o.device;
  const int index = o.mpi ? o.local_rank : o.rank.value_or(0);
  return device_count > 0 ? index % device_count : 0;
}

void check_device_count(const SweepConfig& o, int ranks, int device_count) {
  if (ranks < 2) {
    throw InputError("--ranks not given: the " + std::string(to_string(o.transport)) +
                     " transport would use this machine's " + std::to_string(device_count) +
                     " GPU(s), a run needs at least 2 ranks (use --ranks N to put N ranks on "
                     "the GPUs with --transport direct or single-gpu)");
  }
  if (one_process_per_gpu(o)) {
    const int d = process_device(o, device_count);
    if (d < 0 || d >= device_count) {
      throw InputError("--device " + std::to_string(d) + " does not exist: this machine has " +
                       std::to_string(device_count) + " GPU(s)");
    }
    return;
  }
  if (o.transport == Transport::direct && device_count < 1)
    throw InputError("--transport direct needs a GPU, this machine has none");
  if (o.transport == Transport::nccl && ranks > device_count) {
    throw InputError("the nccl transport runs one rank per GPU: " + std::to_string(ranks) +
                     " ranks need " + std::to_string(ranks) + " GPUs, this machine has " +
                     std::to_string(device_count) +
                     " (use --transport single-gpu to put every rank on one GPU, or one "
                     "process per GPU with --rank/--nranks/--id-file)");
  }
}

int straggler_rank(const SweepConfig& o, int ranks) { return o.straggler.value_or(ranks - 1); }

CollectiveSpec collective_spec(const SweepConfig& o, int ranks, std::uint64_t bytes) {
  CollectiveSpec spec;
  spec.algorithm = o.algorithm;
  spec.ranks = ranks;
  spec.bytes = bytes;
  spec.dtype = o.dtype;
  spec.phase1 = o.phase1;
  for (const auto& [key, value] : o.algorithm_options) spec.options.set(key, value);
  if (o.algorithm != kNcclAlgorithm && alg::find_algorithm(o.algorithm).straggler_aware)
    spec.options.set("straggler", std::to_string(straggler_rank(o, ranks)));
  return spec;
}

}  // namespace ssim::gpu
