#include "gpu_backend/mpi/mpi_options.hpp"

#include "algorithms/registry.hpp"
#include "common/error.hpp"
#include "gpu_backend/host_executor.hpp"
#include "gpu_backend/nccl_tests_flags.hpp"
#include "gpu_backend/run_table.hpp"

namespace ssim::gpu {

void validate_mpi_options(const MpiSweepConfig& o, int ranks) {
  // What does not depend on the process count first: a bad flag is said as such, not hidden
  // behind a wrong (or missing) mpirun -np.
  if (o.sizes.empty()) throw InputError("no sizes to run (-b/-e)");
  if (o.iterations < 1)
    throw InputError("-n (iterations) must be >= 1, got " + std::to_string(o.iterations));
  if (o.warmup < 0)
    throw InputError("-w (warm-up iterations) must be >= 0, got " + std::to_string(o.warmup));
  if (o.check_iterations < 0)
    throw InputError("-c (checked iterations) must be >= 0, got " +
                     std::to_string(o.check_iterations));
  if (o.algorithm_options.count("straggler"))
    throw InputError("set the straggler with --straggler, not -O straggler=...");
  require_known_algorithm(o.algorithm, std::string(kMpiAlgorithm));
  if (o.algorithm == kMpiAlgorithm && !o.algorithm_options.empty())
    throw InputError("algorithm mpi (MPI_Allreduce) takes no options");
  if (o.straggler && *o.straggler < 0)
    throw InputError("--straggler must be a rank >= 0, got " + std::to_string(*o.straggler));
  if (o.algorithm != kMpiAlgorithm && (ranks < 2 || ranks > kMaxRanks))
    check_options_for_some_rank_count(o.algorithm, o.algorithm_options, o.straggler);
  if (ranks < 2) {
    throw InputError("stragglesim-mpi runs one rank per MPI process and needs at least 2, got " +
                     std::to_string(ranks) + " (start it with mpirun -np N)");
  }
  if (ranks > kMaxRanks) {
    throw InputError("at most " + std::to_string(kMaxRanks) + " MPI processes, got " +
                     std::to_string(ranks));
  }
  if (o.straggler && *o.straggler >= ranks) {
    throw InputError("--straggler must be a rank in [0, " + std::to_string(ranks) + "), got " +
                     std::to_string(*o.straggler));
  }
  for (std::uint64_t bytes : o.sizes) prepare_mpi_collective(o, ranks, bytes);
}

int straggler_rank(const MpiSweepConfig& o, int ranks) { return o.straggler.value_or(ranks - 1); }

MpiCollective prepare_mpi_collective(const MpiSweepConfig& o, int ranks, std::uint64_t bytes) {
  value_modulus(o.dtype, ranks);  // InputError when the check's sums cannot be exact
  MpiCollective out;
  if (o.algorithm == kMpiAlgorithm) {
    if (!o.algorithm_options.empty())
      throw InputError("algorithm mpi (MPI_Allreduce) takes no options");
    out.label = std::string(kMpiAlgorithm);
    out.mpi_allreduce = true;
    const alg::Schedule none = alg::Schedule::make(alg::Collective::allreduce, out.label, ranks, 1);
    out.plan = lowering::lower(none, bytes, o.dtype);
    return out;
  }
  require_known_algorithm(o.algorithm, std::string(kMpiAlgorithm));
  alg::Options options;
  for (const auto& [key, value] : o.algorithm_options) options.set(key, value);
  if (alg::find_algorithm(o.algorithm).straggler_aware)
    options.set("straggler", std::to_string(straggler_rank(o, ranks)));
  const alg::Schedule schedule = alg::generate(o.algorithm, ranks, options);
  out.label = schedule.algorithm;
  out.plan = lowering::lower(schedule, bytes, o.dtype);
  return out;
}

}  // namespace ssim::gpu
