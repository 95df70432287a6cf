// The flags of the measured drivers (stragglesim-gpu run, stragglesim-mpi), defined once:
// nccl-tests' flags plus the straggler's, declared on a CLI11 app by add_nccl_tests_flags and
// checked into typed settings by resolve_nccl_tests_flags. Host code only, shared by the
// CUDA/NCCL and the MPI executors.
//
//   NcclTestsFlags flags;
//   add_nccl_tests_flags(app, flags, "mpi (MPI_Allreduce)");
//   app.parse(argc, argv);
//   const NcclTestsSettings s = resolve_nccl_tests_flags(flags);   // InputError on bad values
//   const std::vector<std::uint64_t> sizes = size_sweep(parse_size("1M"), parse_size("64M"), 4);
//   // {1 MiB, 4 MiB, 16 MiB, 64 MiB}
//
// The flags, as nccl-tests has them:
//   -b/-e        smallest / largest size per rank (-e default: -b)
//   -f / -i      multiply the size by -f (default 2), or add -i bytes (not both)
//   -n / -w      timed / warm-up iterations per size
//   -c N         check the result of N iterations per size (0: none): the first N timed ones,
//                and when N > -n, N - n more untimed ones after them
//   -o, --op     the reduction: sum (the only one; others are an error)
//   -d           element type (float32, float64, int32, int64, float16/half, bfloat16/bf16)
//   -a           the time column over ranks: 0 rank 0, 1 mean (default), 2 min, 3 max of each
//                rank's own start-to-finish time
//   --csv FILE   the result CSV (schema/result_csv.hpp), one row per timed iteration
//   -J FILE      the table as JSON (nccl-tests' -J layout: "results" with "out_of_place")
// and the drivers' own: --algo, -O/--option KEY=VALUE, --delay, --straggler.
//
// A bare K, M or G after the number means KiB, MiB or GiB (nccl-tests' powers of 1024); any
// size ssim::parse_bytes reads is accepted too ("64MiB", "1MB", "4096").
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "common/units.hpp"
#include "lowering/plan.hpp"

namespace CLI {
class App;
}

namespace ssim::gpu {

// Most ranks a run takes: the check's input values stay distinct up to 1030 ranks
// (host_executor.hpp); a round number keeps the message simple.
inline constexpr int kMaxRanks = 1024;

// "1M" = 1 MiB (nccl-tests), else parse_bytes. InputError on anything else.
std::uint64_t parse_size(std::string_view text);
// min, min*factor, ... while <= max. InputError when min is 0, min > max, or factor < 2
// while min < max.
std::vector<std::uint64_t> size_sweep(std::uint64_t min, std::uint64_t max, int factor);
// min, min+step, ... while <= max (nccl-tests -i). InputError when min is 0, min > max, or
// step is 0 while min < max.
std::vector<std::uint64_t> size_sweep_linear(std::uint64_t min, std::uint64_t max,
                                             std::uint64_t step);

// -a: how the time column combines the ranks' own times.
enum class RankAverage : std::uint8_t { rank0 = 0, mean = 1, min = 2, max = 3 };
std::string_view to_string(RankAverage average);  // "rank 0", "mean", "min", "max"
// The combined value of per-rank times (rank order).
double combine(RankAverage average, const std::vector<double>& per_rank);

// The flags as given (text where a unit or name is parsed later).
struct NcclTestsFlags {
  std::string min_bytes = "32M";
  std::string max_bytes;
  std::optional<int> factor;  // -f; empty: not given (-f 0 is an error, not the default)
  std::string step;           // -i; empty: not given
  int iterations = 20;
  int warmup = 5;
  int check = 1;
  std::string op = "sum";
  std::string dtype = "float32";
  int average = 1;
  std::string algorithm = "ring";
  std::vector<std::string> options;
  std::string delay = "0";
  std::optional<int> straggler;
  std::string csv;
  std::string json;
};

// The flags checked and typed.
struct NcclTestsSettings {
  std::vector<std::uint64_t> sizes;
  int iterations = 20;
  int warmup = 5;
  int check_iterations = 1;  // -c
  lowering::DType dtype = lowering::DType::float32;
  RankAverage average = RankAverage::mean;
  std::string algorithm = "ring";
  std::map<std::string, std::string> algorithm_options;
  Seconds delay;
  std::optional<int> straggler;
  std::string csv;
  std::string json;
};

// Declares the flags above on `app`, writing into `flags`. `baseline` completes --algo's help
// ("nccl (ncclAllReduce)", "mpi (MPI_Allreduce)").
void add_nccl_tests_flags(CLI::App& app, NcclTestsFlags& flags, std::string_view baseline);

// InputError naming the flag on: a bad size, -f with -i, -f < 2, -n < 1, -w < 0, -c < 0, an op
// other than sum, an unknown type, -a outside 0..3, -O without KEY=VALUE, -O straggler=...,
// a bad --delay.
NcclTestsSettings resolve_nccl_tests_flags(const NcclTestsFlags& flags);

// The -O options of registry algorithm `algorithm` (with `straggler` for a straggler-aware
// one), checked before the rank count is known (no --ranks, no device, a wrong mpirun -np):
// InputError when no rank count from 2 to kMaxRanks takes them, with the message for the
// largest that the algorithm supports. Values that fit some rank count pass; the run checks
// them again for its own.
void check_options_for_some_rank_count(const std::string& algorithm,
                                       const std::map<std::string, std::string>& options,
                                       std::optional<int> straggler);

// The result CSV's options column (schema/result_csv.hpp) of a run with the -O `options`, of a
// straggler-aware algorithm built for `schedule_straggler` (else -1): `straggler` is added only
// where the rows' straggler column does not imply it (a run without a delay implies n-1).
std::string result_options(const std::map<std::string, std::string>& options,
                           int schedule_straggler, int ranks, bool delayed);

// NCCL_ALGO and NCCL_PROTO as the environment sets them ("" when unset): what NCCL was asked
// to use, for the result rows of `nccl` runs.
std::string nccl_env(const char* variable);

}  // namespace ssim::gpu
