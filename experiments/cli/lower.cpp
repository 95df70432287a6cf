// `stragglesim lower`: the per-rank point-to-point plan the executors run for one schedule (an
// algorithm of the registry, or a schedule file, JSON or binary), size and element type
// (lowering/plan.hpp), as text or JSON.
#include <charconv>
#include <cstdint>
#include <cstdio>
#include <fstream>
#include <iostream>
#include <nlohmann/json.hpp>
#include <sstream>

#include "algorithms/registry.hpp"
#include "algorithms/schedule_bin.hpp"
#include "common/error.hpp"
#include "common/input_file.hpp"
#include "common/units.hpp"
#include "experiments/cli/commands.hpp"
#include "experiments/config/resource_check.hpp"
#include "lowering/plan.hpp"

namespace ssim::experiments {
namespace {

struct LowerArgs {
  std::string algorithm;
  std::string schedule_file;
  int ranks = 0;
  std::string bytes;
  std::string dtype = "float32";
  std::vector<std::string> options;
  int straggler = -1;
  std::uint64_t align = lowering::kDefaultAlign;
  std::string format = "text";
  std::string output;
  std::string max_memory;
  std::string max_time;
};

std::string share(std::uint64_t part, std::uint64_t whole) {
  char buf[64];
  std::snprintf(buf, sizeof buf, "%llu/%llu (%.1f%%)", static_cast<unsigned long long>(part),
                static_cast<unsigned long long>(whole),
                whole ? 100.0 * static_cast<double>(part) / static_cast<double>(whole) : 100.0);
  return buf;
}

const char* op_name(alg::Op op) { return op == alg::Op::reduce ? "reduce" : "copy"; }

nlohmann::json plan_json(const lowering::Plan& plan) {
  const lowering::BufferLayout& l = plan.layout;
  const std::uint64_t elem = lowering::dtype_size(l.dtype);
  nlohmann::json j;
  j["algorithm"] = plan.algorithm;
  j["ranks"] = plan.ranks;
  j["bytes"] = l.bytes;
  j["dtype"] = std::string(lowering::to_string(l.dtype));
  j["padded_bytes"] = l.padded_bytes();
  j["align"] = l.align;
  j["chunks"] = l.chunks;
  j["chunk_bytes"] = l.chunk_count * elem;
  j["rounds"] = plan.rounds;
  nlohmann::json plans = nlohmann::json::array();
  for (int r = 0; r < plan.ranks; ++r) {
    nlohmann::json rounds = nlohmann::json::array();
    for (const lowering::Step& step : plan.rank_plans[static_cast<std::size_t>(r)].steps) {
      nlohmann::json sends = nlohmann::json::array();
      for (const lowering::P2P& s : step.sends) {
        sends.push_back({{"peer", s.peer}, {"offset", s.offset}, {"bytes", s.count * elem}});
      }
      // A receive carries the data its apply writes: offset is that place in the data buffer;
      // scratch_offset is where the receive lands first.
      nlohmann::json recvs = nlohmann::json::array();
      nlohmann::json apply = nlohmann::json::array();
      for (std::size_t k = 0; k < step.recvs.size(); ++k) {
        const lowering::P2P& v = step.recvs[k];
        const lowering::Apply& a = step.applies[k];
        recvs.push_back({{"peer", v.peer},
                         {"offset", a.offset},
                         {"bytes", v.count * elem},
                         {"scratch_offset", v.offset}});
      }
      for (const lowering::Apply& a : step.applies) {
        apply.push_back({{"op", op_name(a.op)},
                         {"offset", a.offset},
                         {"scratch_offset", a.scratch_offset},
                         {"bytes", a.count * elem}});
      }
      rounds.push_back(
          {{"round", step.round}, {"sends", sends}, {"recvs", recvs}, {"apply", apply}});
    }
    plans.push_back({{"rank", r}, {"rounds", rounds}});
  }
  j["plans"] = plans;
  return j;
}

// "rank 0" then per round one line per send and per receive:
//   round 3  send -> 1   offset     262144  bytes 131072
//            recv <- 7   offset     917504  bytes 131072  reduce  (scratch 0)
std::string plan_text(const lowering::Plan& plan) {
  const lowering::BufferLayout& l = plan.layout;
  const std::uint64_t elem = lowering::dtype_size(l.dtype);
  std::ostringstream os;
  os << "# " << plan.algorithm << ": " << plan.ranks << " ranks, " << plan.rounds << " rounds, "
     << l.chunks << " chunks of " << l.chunk_count * elem << " B (" << l.chunk_count << " "
     << lowering::to_string(l.dtype) << "); " << l.bytes << " B per rank padded to "
     << l.padded_bytes() << " B; chunk boundaries on multiples of " << l.align << " B\n";
  // Against 128 B (what NCCL's protocols care about) and against the plan's own alignment.
  std::vector<std::uint64_t> boundaries{lowering::kDefaultAlign};
  if (l.align != lowering::kDefaultAlign) boundaries.push_back(l.align);
  for (std::uint64_t b : boundaries) {
    const lowering::AlignmentCount c = lowering::count_aligned(plan, b);
    os << "# starting on a multiple of " << b << " B: sends " << share(c.sends_aligned, c.sends)
       << ", receives " << share(c.recvs_aligned, c.recvs) << ", applies "
       << share(c.applies_aligned, c.applies) << "\n";
  }
  os << "# offsets are bytes into the rank's padded buffer; a receive lands in scratch, then is "
        "applied (reduce: +=, copy: =) at its offset after the round's group\n";
  char buf[200];
  for (int r = 0; r < plan.ranks; ++r) {
    os << "rank " << r << "\n";
    for (const lowering::Step& step : plan.rank_plans[static_cast<std::size_t>(r)].steps) {
      bool first = true;
      auto lead = [&] {
        std::string s = first ? "  round " + std::to_string(step.round) : std::string();
        first = false;
        s.resize(12, ' ');
        return s;
      };
      for (const lowering::P2P& s : step.sends) {
        std::snprintf(buf, sizeof buf, "%ssend -> %-4d offset %12llu  bytes %12llu\n",
                      lead().c_str(), s.peer, static_cast<unsigned long long>(s.offset),
                      static_cast<unsigned long long>(s.count * elem));
        os << buf;
      }
      for (std::size_t k = 0; k < step.recvs.size(); ++k) {
        const lowering::P2P& v = step.recvs[k];
        const lowering::Apply& a = step.applies[k];
        std::snprintf(buf, sizeof buf,
                      "%srecv <- %-4d offset %12llu  bytes %12llu  %-6s (scratch %llu)\n",
                      lead().c_str(), v.peer, static_cast<unsigned long long>(a.offset),
                      static_cast<unsigned long long>(v.count * elem), op_name(a.op),
                      static_cast<unsigned long long>(v.offset));
        os << buf;
      }
    }
  }
  return os.str();
}

void run_lower(const LowerArgs& a) {
  if (!a.schedule_file.empty() &&
      (!a.algorithm.empty() || a.ranks != 0 || !a.options.empty() || a.straggler >= 0)) {
    throw InputError(
        "--schedule FILE takes the place of the algorithm, --ranks, --option and --straggler: "
        "give one or the other");
  }
  if (a.schedule_file.empty() && a.algorithm.empty())
    throw UsageError("give an algorithm, or --schedule FILE");
  if (a.schedule_file.empty() && a.ranks == 0) throw UsageError("--ranks is required");
  Bytes bytes;
  try {
    bytes = parse_bytes(a.bytes);
  } catch (const InputError& e) {
    throw InputError(std::string("--bytes: ") + e.what());
  }
  const lowering::DType dtype = lowering::parse_dtype(a.dtype);
  try {
    lowering::check_align(a.align, dtype);
  } catch (const InputError& e) {
    throw InputError(std::string("--align: ") + e.what());
  }
  alg::Schedule s;
  if (!a.schedule_file.empty()) {
    s = load_schedule_file(a.schedule_file, MemoryBudget::from_flag(a.max_memory),
                           kScheduleBytesPerTransfer + kLowerBytesPerTransfer, "lowering");
  } else {
    const alg::AlgorithmInfo& info = alg::find_algorithm(a.algorithm);
    const alg::Options options = algorithm_options(info, a.options, a.straggler);
    if (info.supports_ranks(a.ranks)) {
      check_lower_resources(MemoryBudget::from_flag(a.max_memory),
                            TimeBudget::from_flag(a.max_time), info.name, a.ranks, options);
    }
    s = alg::generate(a.algorithm, a.ranks, options);
  }
  const lowering::Plan plan = lowering::lower(s, bytes.value, dtype, a.align);
  write_output(a.output, a.format == "json" ? plan_json(plan).dump(2) + "\n" : plan_text(plan));
}

}  // namespace

void add_lower_command(CLI::App& app) {
  auto args = std::make_shared<LowerArgs>();
  CLI::App* cmd = app.add_subcommand(
      "lower", "Print the per-rank point-to-point plan the executors run for a schedule");
  cmd->add_option("algorithm", args->algorithm,
                  "Algorithm name (see `stragglesim algorithms`), or none with --schedule");
  cmd->add_option(
      "--schedule", args->schedule_file,
      "Lower this schedule file (JSON or binary, verified first; - for stdin) instead of "
      "an algorithm");
  add_retired_rank_flag(*cmd);
  cmd->add_option("-r,--ranks", args->ranks, "Number of ranks (with an algorithm)")
      ->check(CLI::Range(1, 1 << 20));
  cmd->add_option("--bytes,-b", args->bytes, "Buffer size per rank: 4096, 64KiB, 1MiB, ...")
      ->required();
  cmd->add_option("--dtype,-d", args->dtype,
                  "Element type: float32 (float), float64 (double), int32 (int), int64, float16 "
                  "(half, fp16), bfloat16 (bf16)")
      ->capture_default_str();
  cmd->add_option("--option", args->options, "Algorithm option key=value (repeatable)");
  cmd->add_option("--straggler", args->straggler, "Straggler rank for straggler-aware algorithms")
      ->check(non_negative_number());
  cmd->add_option("--align", args->align,
                  "Chunk boundaries on multiples of this many bytes (a power of two >= the "
                  "element size; the element size gives the unaligned tight layout)")
      ->capture_default_str()
      // CLI11 reads "-1" into the unsigned as 2^64 - 1 and saturates a value past it: both are
      // refused as given.
      ->check(CLI::Validator(
          [](std::string& text) -> std::string {
            std::uint64_t v = 0;
            const auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), v);
            if (!text.empty() && ec == std::errc() && end == text.data() + text.size()) return "";
            return "must be a whole number of bytes (a power of two), got '" + text + "'";
          },
          "BYTES"));
  cmd->add_option("--format", args->format, "Output format")
      ->check(CLI::IsMember({"text", "json"}))
      ->capture_default_str();
  cmd->add_option("-o,--output", args->output, "Write to FILE instead of stdout");
  add_max_memory_option(*cmd, args->max_memory);
  add_max_time_option(*cmd, args->max_time);
  cmd->callback([args] { run_lower(*args); });
}

}  // namespace ssim::experiments
