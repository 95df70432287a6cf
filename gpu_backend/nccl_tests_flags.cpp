#include "gpu_backend/nccl_tests_flags.hpp"

#include <CLI/CLI.hpp>
#include <algorithm>
#include <cctype>
#include <cstdlib>
#include <limits>
#include <numeric>
#include <string>

#include "algorithms/registry.hpp"
#include "common/error.hpp"
#include "common/units.hpp"
#include "schema/result_csv.hpp"

namespace ssim::gpu {

std::uint64_t parse_size(std::string_view text) {
  std::string t(text);
  if (!t.empty()) {
    const char last = t.back();
    const bool after_digit =
        t.size() >= 2 &&
        (std::isdigit(static_cast<unsigned char>(t[t.size() - 2])) || t[t.size() - 2] == '.');
    if (after_digit) {
      if (last == 'K' || last == 'k') t.replace(t.size() - 1, 1, "KiB");
      if (last == 'M' || last == 'm') t.replace(t.size() - 1, 1, "MiB");
      if (last == 'G' || last == 'g') t.replace(t.size() - 1, 1, "GiB");
    }
  }
  try {
    return parse_bytes(t).value;
  } catch (const InputError&) {
    throw InputError("invalid size '" + std::string(text) +
                     "' (expected bytes with an optional unit: 4096, 64K, 1M, 2G as in "
                     "nccl-tests (powers of 1024), or 64KiB, 1MB, 2GiB)");
  }
}

std::vector<std::uint64_t> size_sweep(std::uint64_t min, std::uint64_t max, int factor) {
  if (min == 0) throw InputError("-b (smallest size) must be > 0");
  if (min > max) {
    throw InputError("-b (" + std::to_string(min) + " B) is larger than -e (" +
                     std::to_string(max) + " B)");
  }
  if (min < max && factor < 2)
    throw InputError("-f (size factor) must be >= 2, got " + std::to_string(factor));
  std::vector<std::uint64_t> sizes;
  for (std::uint64_t s = min; s <= max; s *= static_cast<std::uint64_t>(factor)) {
    sizes.push_back(s);
    if (s == max || s > std::numeric_limits<std::uint64_t>::max() / static_cast<unsigned>(factor))
      break;
  }
  return sizes;
}

std::vector<std::uint64_t> size_sweep_linear(std::uint64_t min, std::uint64_t max,
                                             std::uint64_t step) {
  if (min == 0) throw InputError("-b (smallest size) must be > 0");
  if (min > max) {
    throw InputError("-b (" + std::to_string(min) + " B) is larger than -e (" +
                     std::to_string(max) + " B)");
  }
  if (min < max && step == 0) throw InputError("-i (size increment) must be > 0");
  std::vector<std::uint64_t> sizes;
  for (std::uint64_t s = min; s <= max; s += step) {
    sizes.push_back(s);
    if (s == max || step == 0 || s > std::numeric_limits<std::uint64_t>::max() - step) break;
  }
  return sizes;
}

std::string_view to_string(RankAverage average) {
  switch (average) {
    case RankAverage::rank0:
      return "rank 0";
    case RankAverage::mean:
      return "mean";
    case RankAverage::min:
      return "min";
    case RankAverage::max:
      return "max";
  }
  return "?";
}

double combine(RankAverage average, const std::vector<double>& per_rank) {
  if (per_rank.empty()) return 0.0;
  switch (average) {
    case RankAverage::rank0:
      return per_rank.front();
    case RankAverage::mean:
      return std::accumulate(per_rank.begin(), per_rank.end(), 0.0) /
             static_cast<double>(per_rank.size());
    case RankAverage::min:
      return *std::min_element(per_rank.begin(), per_rank.end());
    case RankAverage::max:
      return *std::max_element(per_rank.begin(), per_rank.end());
  }
  return 0.0;
}

void add_nccl_tests_flags(CLI::App& app, NcclTestsFlags& f, std::string_view baseline) {
  app.add_option("-b,--minbytes", f.min_bytes,
                 "smallest size per rank: 4096, 64K, 1M, 2G (powers of 1024, as nccl-tests), "
                 "or 64KiB, 1MB, ...")
      ->capture_default_str();
  app.add_option("-e,--maxbytes", f.max_bytes, "largest size per rank (default: -b)");
  app.add_option("-f,--stepfactor", f.factor,
                 "multiply the size by this between runs (default 2; not with -i)");
  app.add_option("-i,--stepbytes", f.step, "add this many bytes between runs (not with -f)");
  app.add_option("-n,--iters", f.iterations, "timed iterations per size")->capture_default_str();
  app.add_option("-w,--warmup_iters", f.warmup, "untimed, unchecked iterations per size first")
      ->capture_default_str();
  app.add_option("-c,--check", f.check,
                 "check the result of this many iterations per size (0: none)")
      ->capture_default_str();
  app.add_option("-o,--op", f.op, "reduction operation: sum (the only one schedules do)")
      ->capture_default_str();
  app.add_option("-d,--datatype,--dtype", f.dtype,
                 "float32 (float), float64 (double), int32, int64, float16 (half), bfloat16 "
                 "(bf16)")
      ->capture_default_str();
  app.add_option("-a,--average", f.average,
                 "time column over ranks: 0 rank 0, 1 mean, 2 min, 3 max of each rank's own "
                 "start-to-finish time")
      ->capture_default_str();
  app.add_option("--algo", f.algorithm,
                 "algorithm: a registry name (stragglesim algorithms) or " + std::string(baseline))
      ->capture_default_str();
  app.add_option("-O,--option", f.options, "algorithm option KEY=VALUE (repeatable)");
  app.add_option("--delay", f.delay, "straggler arrival delay: 5ms, 100us, ... (0: none)")
      ->capture_default_str();
  app.add_option("--straggler", f.straggler,
                 "the late rank, also the rank straggler-aware schedules are built for "
                 "(default n-1)");
  app.add_option("--csv", f.csv, "write one result CSV row per timed iteration here");
  app.add_option("-J,--output_file", f.json, "write the table as JSON here (nccl-tests' -J)");
}

NcclTestsSettings resolve_nccl_tests_flags(const NcclTestsFlags& f) {
  NcclTestsSettings s;
  const std::uint64_t min = parse_size(f.min_bytes);
  const std::uint64_t max = f.max_bytes.empty() ? min : parse_size(f.max_bytes);
  if (f.factor && *f.factor < 2)
    throw InputError("-f (size factor) must be >= 2, got " + std::to_string(*f.factor));
  if (!f.step.empty()) {
    if (f.factor) throw InputError("-f (size factor) and -i (size increment) exclude each other");
    s.sizes = size_sweep_linear(min, max, parse_size(f.step));
  } else {
    s.sizes = size_sweep(min, max, f.factor.value_or(2));
  }
  if (f.iterations < 1)
    throw InputError("-n (iterations) must be >= 1, got " + std::to_string(f.iterations));
  if (f.warmup < 0)
    throw InputError("-w (warm-up iterations) must be >= 0, got " + std::to_string(f.warmup));
  if (f.check < 0)
    throw InputError("-c (checked iterations) must be >= 0, got " + std::to_string(f.check));
  s.iterations = f.iterations;
  s.warmup = f.warmup;
  s.check_iterations = f.check;
  if (f.op != "sum") {
    throw InputError("-o/--op '" + f.op +
                     "': the schedules reduce by sum, the only operation supported (nccl-tests' "
                     "prod, min, max, avg are not)");
  }
  s.dtype = lowering::parse_dtype(f.dtype);
  if (f.average < 0 || f.average > 3) {
    throw InputError("-a must be 0 (rank 0), 1 (mean), 2 (min) or 3 (max), got " +
                     std::to_string(f.average));
  }
  s.average = static_cast<RankAverage>(f.average);
  s.algorithm = f.algorithm;
  for (const std::string& kv : f.options) {
    const auto eq = kv.find('=');
    if (eq == std::string::npos || eq == 0)
      throw InputError("-O/--option expects KEY=VALUE, got '" + kv + "'");
    if (!s.algorithm_options.emplace(kv.substr(0, eq), kv.substr(eq + 1)).second)
      throw InputError("-O/--option '" + kv + "': " + kv.substr(0, eq) + " is given twice");
  }
  if (s.algorithm_options.count("straggler"))
    throw InputError("set the straggler with --straggler, not -O straggler=...");
  s.delay = parse_time(f.delay);
  s.straggler = f.straggler;
  s.csv = f.csv;
  s.json = f.json;
  return s;
}

void check_options_for_some_rank_count(const std::string& algorithm,
                                       const std::map<std::string, std::string>& options,
                                       std::optional<int> straggler) {
  const alg::AlgorithmInfo& info = alg::find_algorithm(algorithm);
  if (straggler && *straggler < 0)
    throw InputError("--straggler must be a rank >= 0, got " + std::to_string(*straggler));
  // Every count up to 64, then powers of two and their halfway points (hierarchical shapes
  // want multiples of the node size): a generator is cheap to set up, not to run.
  std::vector<int> counts;
  for (int n = 2; n <= kMaxRanks; n = n < 64 ? n + 1 : (n & (n - 1)) == 0 ? n + n / 2 : (n / 3) * 4)
    counts.push_back(n);
  std::optional<std::string> error;
  bool tried = false;
  for (auto it = counts.rbegin(); it != counts.rend(); ++it) {
    const int n = *it;
    if (!info.supports_ranks(n) || (straggler && *straggler >= n)) continue;
    alg::Options o{options};
    if (info.straggler_aware) o.set("straggler", std::to_string(straggler.value_or(n - 1)));
    tried = true;
    try {
      if (info.check_options) info.check_options(n, o);
      alg::generate_rounds(info.name, n, o);
      return;
    } catch (const InputError& e) {
      if (!error)
        error = "-O/--option: " + std::string(e.what()) + " (for " + std::to_string(n) + " ranks)";
    }
  }
  if (!tried) {
    throw InputError("--straggler " + std::to_string(straggler.value_or(0)) + ": " + info.name +
                     " supports no rank count up to " + std::to_string(kMaxRanks) +
                     " with that straggler");
  }
  throw InputError(*error);
}

std::string nccl_env(const char* variable) {
  const char* v = std::getenv(variable);
  return v ? std::string(v) : std::string();
}

std::string result_options(const std::map<std::string, std::string>& options,
                           int schedule_straggler, int ranks, bool delayed) {
  std::map<std::string, std::string> recorded = options;
  if (schedule_straggler >= 0 && !delayed && schedule_straggler != ranks - 1)
    recorded["straggler"] = std::to_string(schedule_straggler);
  return schema::canonical_options(recorded);
}

}  // namespace ssim::gpu
