#include <algorithm>
#include <charconv>
#include <cstdio>
#include <iomanip>
#include <iostream>
#include <iterator>
#include <limits>
#include <memory>
#include <optional>
#include <sstream>

#include "algorithms/msccl_xml.hpp"
#include "algorithms/registry.hpp"
#include "algorithms/schedule_bin.hpp"
#include "algorithms/schedule_json.hpp"
#include "algorithms/stragglar.hpp"
#include "algorithms/verifier.hpp"
#include "common/checked.hpp"
#include "common/error.hpp"
#include "common/input_file.hpp"
#include "common/units.hpp"
#include "experiments/cli/commands.hpp"
#include "experiments/config/resource_check.hpp"

namespace ssim::experiments {
namespace {

using alg::Op;
using alg::Schedule;

// One line per round: "R3 reduce-scatter: 0>1 c2+ | 1>2 c3=" ('+' reduce, '=' copy), after a
// header that needs the round count.
std::string text_header(const Schedule& s, std::size_t rounds) {
  std::ostringstream os;
  os << "# " << s.algorithm << " " << alg::to_string(s.collective) << ", " << s.ranks << " ranks, "
     << s.chunks << " chunks, " << rounds << " rounds";
  if (s.straggler) os << ", straggler " << *s.straggler;
  if (!s.late.empty()) {
    os << ", late ranks";
    for (int r : s.late) os << " " << r;
    os << " (arrival order)";
  }
  os << "\n# a>b cK+ : a sends chunk K to b, b reduces; '=' : b copies; cK..M : chunks K to M\n";
  if (alg::find_algorithm(s.algorithm).in_network) {
    os << "# {m,...}>>{r,...} cK+ : the switch sums chunk K of ranks m and delivers it to ranks r; "
          "'=' : one rank's chunk multicast\n";
  }
  return os.str();
}

void append_number(std::string& out, long long v) {
  char buf[24];
  const auto end = std::to_chars(buf, buf + sizeof buf, v).ptr;
  out.append(buf, end);
}

void append_text_round(std::string& out, const alg::Round& r, std::size_t index) {
  out += 'R';
  append_number(out, static_cast<long long>(index));
  if (!r.phase.empty()) {
    out += ' ';
    out += r.phase;
  }
  out += ':';
  for (std::size_t k = 0; k < r.transfers.size(); ++k) {
    const alg::Transfer& t = r.transfers[k];
    out.append(k ? " | " : " ");
    append_number(out, t.src);
    out += '>';
    append_number(out, t.dst);
    out.append(" c");
    append_number(out, t.chunk_begin);
    if (t.chunk_count() > 1) {
      out.append("..");
      append_number(out, t.chunk_end - 1);
    }
    out += t.op == Op::reduce ? '+' : '=';
  }
  // In-network reductions: {members}>>{receivers} cB..E, '+' when the switch sums several
  // members, '=' for a multicast of one.
  for (std::size_t k = 0; k < r.switch_reduces.size(); ++k) {
    const alg::SwitchReduce& g = r.switch_reduces[k];
    out.append(k || !r.transfers.empty() ? " | {" : " {");
    for (std::size_t i = 0; i < g.members.size(); ++i) {
      if (i) out += ',';
      append_number(out, g.members[i]);
    }
    out.append("}>>{");
    for (std::size_t i = 0; i < g.receivers.size(); ++i) {
      if (i) out += ',';
      append_number(out, g.receivers[i]);
    }
    out.append("} c");
    append_number(out, g.chunk_begin);
    if (g.chunk_count() > 1) {
      out.append("..");
      append_number(out, g.chunk_end - 1);
    }
    out += g.members.size() > 1 ? '+' : '=';
  }
  out += '\n';
}

std::int64_t bytes_flag(const std::string& flag, const std::string& text) {
  Bytes b;
  try {
    b = parse_bytes(text);
  } catch (const InputError& e) {
    throw InputError(flag + " " + text + ": " + e.what());
  }
  if (b.value > static_cast<std::uint64_t>(std::numeric_limits<std::int64_t>::max()))
    throw InputError(flag + " " + text + ": too large");
  return static_cast<std::int64_t>(b.value);
}

// Which calls the runtime will run the exported file for (msccl_lifecycle.cc,
// mscclInternalSchedulerSelectAlgo: same rank count, AllReduce, in place, an element count that
// is a multiple of nchunksperloop, a size in [minBytes, maxBytes], not ncclAvg).
std::string msccl_summary(const Schedule& s, int per_loop, std::int64_t min_bytes,
                          std::int64_t max_bytes) {
  std::ostringstream os;
  const std::vector<int> shares = alg::msccl_chunk_shares(s.chunks, per_loop);
  const auto [lo, hi] = std::minmax_element(shares.begin(), shares.end());
  os << "msccl-xml: nchunksperloop " << per_loop << " (" << s.chunks << " schedule chunks of ";
  if (*lo == *hi) {
    os << *lo << " MSCCL chunk" << (*lo == 1 ? "" : "s") << " each)\n";
  } else {
    const double mean = static_cast<double>(per_loop) / s.chunks;
    os << *lo << " or " << *hi << " MSCCL chunks; the largest " << std::fixed
       << std::setprecision(0) << 100.0 * (*hi / mean - 1.0) << "% above the mean)\n";
  }
  os << "msccl-xml: used for in-place AllReduce (sum, max, min, prod; not avg) on " << s.ranks
     << " ranks whose element count is a multiple of " << per_loop << ", size ";
  if (max_bytes == 0 && min_bytes == 0)
    os << "any";
  else if (max_bytes == 0)
    os << "at least " << format_bytes(Bytes{static_cast<std::uint64_t>(min_bytes)});
  else
    os << "in [" << format_bytes(Bytes{static_cast<std::uint64_t>(min_bytes)}) << ", "
       << format_bytes(Bytes{static_cast<std::uint64_t>(max_bytes)}) << "]";
  os << "; other calls fall back to NCCL\n";
  // Examples: the power-of-two element counts it serves, for 4- and 2-byte types.
  if ((per_loop & (per_loop - 1)) != 0) {
    os << "msccl-xml: nchunksperloop is not a power of two: no power-of-two element count is "
          "served\n";
  } else {
    for (const std::int64_t width : {4, 2}) {
      // The smallest power-of-two multiple of per_loop elements at or above min_bytes; none
      // where it would not fit in 64 bits (checked: common/checked.hpp).
      std::int64_t elems = per_loop;
      std::optional<std::int64_t> bytes = try_mul(elems, width);
      while (bytes && *bytes < min_bytes) {
        const std::optional<std::int64_t> doubled = try_mul(elems, std::int64_t{2});
        bytes = doubled ? try_mul(*doubled, width) : std::nullopt;
        if (doubled) elems = *doubled;
      }
      os << "msccl-xml: " << (width == 4 ? "fp32" : "fp16/bf16") << ": ";
      if (!bytes || (max_bytes != 0 && *bytes > max_bytes)) {
        os << "no power-of-two element count in that range\n";
        continue;
      }
      os << "every power-of-two element count from " << elems << " ("
         << format_bytes(Bytes{static_cast<std::uint64_t>(*bytes)}) << ")";
      if (max_bytes != 0)
        os << " to " << format_bytes(Bytes{static_cast<std::uint64_t>(max_bytes)});
      os << "\n";
    }
  }
  return os.str();
}

struct ScheduleArgs {
  std::string algorithm;
  std::string from;
  int ranks = 0;
  int straggler = -1;
  std::vector<std::string> options;
  std::string format = "text";
  std::string output;
  std::string max_memory;
  std::string max_time;
  int nchunksperloop = 0;
  std::string min_bytes, max_bytes;
};

// `schedule --format msccl-xml`: the verified schedule `s` exported to the output, and what the
// runtime will run it for to stdout next to a file, else to stderr. `what` names the schedule in
// the memory check, `smaller` says how to pass it.
void write_msccl(const Schedule& s, const ScheduleArgs& a, const MemoryBudget& budget,
                 const std::string& what, const std::string& smaller) {
  alg::MscclExport ex;
  ex.nchunksperloop = a.nchunksperloop;
  ex.min_bytes = a.min_bytes.empty() ? 0 : bytes_flag("--min-bytes", a.min_bytes);
  ex.max_bytes = a.max_bytes.empty() ? 0 : bytes_flag("--max-bytes", a.max_bytes);
  if (ex.max_bytes != 0 && ex.min_bytes > ex.max_bytes) {
    throw InputError("--min-bytes " + a.min_bytes + " is above --max-bytes " + a.max_bytes +
                     ": the runtime would never use the file");
  }
  // Per transmission: ~150 B of XML and ~150 B of step state while it is built (measured:
  // rhd, 2048 ranks, 45 MB of XML for 0.3 M transmissions), the schedule kept alongside.
  const int per_loop = a.nchunksperloop > 0
                           ? a.nchunksperloop
                           : alg::msccl_nchunksperloop_candidates(s.chunks).front();
  const double steps = alg::msccl_transmission_count(s, std::max(per_loop, s.chunks));
  budget.require(
      steps * 300,
      "the MSCCL XML of " + what + " (" + std::to_string(static_cast<long long>(steps)) + " steps)",
      smaller);
  const alg::MscclExported file = alg::schedule_to_msccl_xml(s, ex);
  write_output_file(a.output, file.xml);
  (a.output.empty() || a.output == "-" ? std::cerr : std::cout)
      << msccl_summary(s, file.nchunksperloop, ex.min_bytes, ex.max_bytes);
}

// `schedule --from FILE`: a schedule file (JSON or binary), verified, written in another form.
void run_schedule_from(const ScheduleArgs& a) {
  if (!a.algorithm.empty() || a.ranks != 0 || !a.options.empty() || a.straggler >= 0) {
    throw InputError(
        "--from FILE takes the place of the algorithm, --ranks, --option and --straggler: give "
        "one or the other");
  }
  const bool msccl = a.format == "msccl-xml" || a.format == "msccl";
  if (!msccl && (a.nchunksperloop != 0 || !a.min_bytes.empty() || !a.max_bytes.empty()))
    throw InputError(
        "--nchunksperloop, --min-bytes and --max-bytes apply to --format msccl-xml only");
  const MemoryBudget budget = MemoryBudget::from_flag(a.max_memory);
  const Schedule s = load_schedule_file(a.from, budget, kScheduleBytesPerTransfer, "converting");
  const std::string name = a.from == "-" ? "<stdin>" : a.from;
  if (msccl) return write_msccl(s, a, budget, name, "export a smaller schedule");
  OutputFile out(a.output);
  std::ostream& os = out.stream();
  if (a.format == "text") {
    std::string buffer = text_header(s, s.rounds.size());
    for (std::size_t i = 0; i < s.rounds.size(); ++i) append_text_round(buffer, s.rounds[i], i);
    os.write(buffer.data(), static_cast<std::streamsize>(buffer.size()));
  } else if (a.format == "bin") {
    alg::write_schedule_bin(os, s);
  } else {
    alg::write_schedule_json(os, s);
  }
  out.commit();
}

void run_schedule(const ScheduleArgs& a) {
  if (!a.from.empty()) return run_schedule_from(a);
  if (a.algorithm.empty()) throw UsageError("give an algorithm, or --from FILE");
  if (a.ranks == 0) throw UsageError("--ranks is required");
  const alg::AlgorithmInfo& info = alg::find_algorithm(a.algorithm);
  const alg::Options options = algorithm_options(info, a.options, a.straggler);
  const MemoryBudget budget = MemoryBudget::from_flag(a.max_memory);
  if (info.supports_ranks(a.ranks)) {
    check_schedule_memory(budget, info.name, a.ranks, options, /*verify=*/true);
    check_schedule_time(TimeBudget::from_flag(a.max_time), info.name, a.ranks, options);
  }
  const bool msccl = a.format == "msccl-xml" || a.format == "msccl";
  if (!msccl && (a.nchunksperloop != 0 || !a.min_bytes.empty() || !a.max_bytes.empty()))
    throw InputError(
        "--nchunksperloop, --min-bytes and --max-bytes apply to --format msccl-xml only");
  if (msccl) {
    // The XML export needs the whole schedule (per peer pair thread blocks, step dependencies).
    const Schedule s = alg::generate(a.algorithm, a.ranks, options);
    const alg::VerifyResult v = alg::verify(s);
    if (!v.ok()) {
      throw InternalError("generated " + info.name + " schedule for " + std::to_string(a.ranks) +
                          " ranks fails verification: " + v.error->to_string());
    }
    return write_msccl(s, a, budget, info.name + " for " + std::to_string(a.ranks) + " ranks",
                       "export fewer ranks");
  }
  // Streamed: each round is generated, verified and written, then dropped.
  alg::GeneratedRounds g = alg::generate_rounds(a.algorithm, a.ranks, options);
  const bool text = a.format == "text";
  std::size_t rounds = 0;
  if (text) {  // the header states the round count: from the generator, else a counting pass
    if (g.round_count) {
      rounds = *g.round_count;
    } else {
      alg::GeneratedRounds count = alg::generate_rounds(a.algorithm, a.ranks, options);
      while (count.stream.next()) ++rounds;
    }
  }
  OutputFile out(a.output);
  std::ostream& os = out.stream();
  alg::RoundVerifier verifier(g.header);
  std::unique_ptr<alg::ScheduleWriter> writer;
  std::string buffer;
  if (text) {
    buffer = text_header(g.header, rounds);
  } else if (a.format == "bin") {
    writer = std::make_unique<alg::ScheduleBinWriter>(os, g.header);
  } else {
    writer = std::make_unique<alg::ScheduleJsonWriter>(os, g.header);
  }
  std::size_t index = 0;
  while (const alg::Round* r = g.stream.next()) {
    verifier.add(*r);
    if (writer) {
      writer->round(*r);
      if (!os) out.flush();  // throws OutputError naming the file: stop generating
    } else {
      append_text_round(buffer, *r, index);
      if (buffer.size() > (1u << 20)) {
        os.write(buffer.data(), static_cast<std::streamsize>(buffer.size()));
        buffer.clear();
        if (!os) out.flush();  // throws OutputError naming the file: stop generating
      }
    }
    ++index;
  }
  if (writer) writer->finish();
  os.write(buffer.data(), static_cast<std::streamsize>(buffer.size()));
  const alg::VerifyResult v = verifier.finish();
  if (!v.ok() || (text && index != rounds)) {
    throw InternalError("generated " + info.name + " schedule for " + std::to_string(a.ranks) +
                        " ranks fails verification: " +
                        (v.ok() ? "the round count changed between passes" : v.error->to_string()));
  }
  out.commit();
}

// Streamed: each round is verified as soon as it is read (verify_schedule_input: JSON or the
// binary form), so a file of any size is read in memory for the verifier's state and one round.
void run_verify(const std::string& path, const std::string& max_memory) {
  const alg::StreamedVerify v = verify_schedule_input(path, MemoryBudget::from_flag(max_memory));
  std::cout << "ok: " << (v.header.algorithm.empty() ? "schedule" : v.header.algorithm)
            << " is a correct " << alg::to_string(v.header.collective) << "\n"
            << alg::format_summary(v.result.summary);
}

void run_list() {
  for (const alg::AlgorithmInfo& a : alg::algorithms()) {
    std::cout << a.name << "  (" << a.supported_ranks << ")\n    " << a.description << "\n";
    for (const alg::OptionSpec& o : a.options) {
      std::cout << "    option " << o.name << " (default " << o.default_value
                << "): " << o.description << "\n";
    }
  }
}

// "A" or "A..B" with lo <= A <= B <= hi; InputError naming the flag otherwise.
std::pair<int, int> parse_span(const std::string& flag, const std::string& text, int lo, int hi) {
  const auto dots = text.find("..");
  auto number = [&](const std::string& part) {
    alg::Options o;
    o.set(flag, part);
    try {
      return o.get_int(flag, 0, lo, hi);
    } catch (const InputError&) {
      throw InputError(flag + " '" + text + "': expected N or N..M with " + std::to_string(lo) +
                       " <= N <= M <= " + std::to_string(hi));
    }
  };
  const int a = number(text.substr(0, dots));
  const int b = dots == std::string::npos ? a : number(text.substr(dots + 2));
  if (b < a)
    throw InputError(flag + " '" + text + "': the range is empty (" + std::to_string(b) + " < " +
                     std::to_string(a) + ")");
  return {a, b};
}

struct RoundsArgs {
  std::string ranks = "3..130";
  std::string stragglers = "1";
  std::string format = "text";
  std::string max_memory;
  std::string max_time;
};

// StragglAR's rounds after the last late rank arrives vs the lower bound n-k-1+ceil(log2 n),
// every schedule generated and verified first.
void run_rounds(const RoundsArgs& a) {
  const auto [n_lo, n_hi] = parse_span("--ranks", a.ranks, 3, 4096);
  const auto [k_lo, k_hi] = parse_span("--stragglers", a.stragglers, 1, 4094);
  // Every schedule of the table is generated and verified: refuse a table beyond the limits
  // before the first one (the time summed, the memory of the largest).
  const MemoryBudget budget = MemoryBudget::from_flag(a.max_memory);
  const TimeBudget limit = TimeBudget::from_flag(a.max_time);
  // Summed over a grid of at most 256 x 256 (k, n) points, each standing for its cell.
  const int k_step = std::max(1, (k_hi - k_lo + 1) / 256),
            n_step = std::max(1, (n_hi - n_lo + 1) / 256);
  double seconds = 0;
  for (int k = k_lo; k <= k_hi; k += k_step) {
    for (int n = std::max(n_lo, k + 2); n <= n_hi; n += n_step) {
      alg::Options o;
      o.set("stragglers", std::to_string(k));
      seconds += schedule_seconds("stragglar", n, o, /*verify=*/true) * k_step * n_step;
    }
  }
  if (k_lo + 2 <= n_hi) {
    alg::Options o;
    o.set("stragglers", std::to_string(k_lo));
    check_schedule_memory(budget, "stragglar", n_hi, o, /*verify=*/true);
  }
  limit.require(seconds,
                "generating and verifying the StragglAR schedules for --ranks " + a.ranks +
                    " --stragglers " + a.stragglers,
                "give smaller ranges");
  std::ostringstream os;
  if (a.format == "csv") os << "ranks,stragglers,rounds,bound,gap\n";
  if (a.format == "markdown") os << "| n | k | rounds | bound | gap |\n|---|---|---|---|---|\n";
  if (a.format == "text")
    os << "# stragglar: rounds after the last late rank arrives vs n-k-1+ceil(log2 n)\n";
  int rows = 0, met = 0, worst = 0;
  for (int k = k_lo; k <= k_hi; ++k) {
    for (int n = std::max(n_lo, k + 2); n <= n_hi; ++n) {
      alg::Options o;
      o.set("stragglers", std::to_string(k));
      const Schedule s = alg::generate("stragglar", n, o);
      const alg::VerifyResult v = alg::verify(s);
      if (!v.ok()) {
        throw InternalError("stragglar with " + std::to_string(n) + " ranks and stragglers=" +
                            std::to_string(k) + " fails verification: " + v.error->to_string());
      }
      const int rounds = alg::stragglar_rounds(n, k),
                bound = alg::stragglar_round_lower_bound(n, k);
      ++rows;
      met += rounds == bound ? 1 : 0;
      worst = std::max(worst, rounds - bound);
      if (a.format == "csv") {
        os << n << "," << k << "," << rounds << "," << bound << "," << rounds - bound << "\n";
      } else if (a.format == "markdown") {
        os << "| " << n << " | " << k << " | "
           << (rounds == bound ? "**" + std::to_string(rounds) + "**" : std::to_string(rounds))
           << " | " << bound << " | " << rounds - bound << " |\n";
      } else {
        os << "n=" << n << " k=" << k << "  rounds " << rounds << "  bound " << bound << "  gap "
           << rounds - bound << "\n";
      }
    }
  }
  if (rows == 0)
    throw InputError("--ranks " + a.ranks + " --stragglers " + a.stragglers +
                     ": no n >= k+2 in range");
  if (a.format == "text") {
    os << "# " << rows << " schedules verified; the bound met by " << met << ", largest gap "
       << worst << "\n";
  }
  std::cout << os.str();
}

}  // namespace

void write_output(const std::string& path, const std::string& text) {
  write_output_file(path, text);
}

void add_schedule_commands(CLI::App& app) {
  auto args = std::make_shared<ScheduleArgs>();
  CLI::App* sched =
      app.add_subcommand("schedule", "Generate, verify and print an AllReduce schedule");
  sched->add_option("algorithm", args->algorithm,
                    "Algorithm name (see `stragglesim algorithms`), or none with --from");
  sched->add_option("--from", args->from,
                    "Read this schedule file (JSON or binary; - for stdin), verify it and write it "
                    "in --format instead of generating one");
  add_retired_rank_flag(*sched);
  sched->add_option("-r,--ranks", args->ranks, "Number of ranks (with an algorithm)")
      ->check(CLI::Range(1, 1 << 20));
  sched->add_option("--straggler", args->straggler, "Straggler rank for straggler-aware algorithms")
      ->check(non_negative_number());
  sched->add_option("--option", args->options, "Algorithm option key=value (repeatable)");
  sched
      ->add_option("--format", args->format,
                   "Output format: text, json, bin (the compact binary form, "
                   "docs/schedule_format.md), msccl-xml (alias msccl)")
      ->check(CLI::IsMember({"text", "json", "bin", "msccl-xml", "msccl"}));
  sched->add_option("-o,--output", args->output, "Write to FILE instead of stdout");
  sched
      ->add_option("--nchunksperloop", args->nchunksperloop,
                   "msccl-xml: MSCCL chunks per loop (>= the schedule's chunks; default: chosen "
                   "so that power-of-two element counts are served)")
      ->check(CLI::Range(1, 1 << 30));
  sched->add_option("--min-bytes", args->min_bytes,
                    "msccl-xml: smallest tensor (bytes, e.g. 1MiB) the runtime uses the file for");
  sched->add_option("--max-bytes", args->max_bytes,
                    "msccl-xml: largest tensor the runtime uses the file for (default: no limit)");
  add_max_memory_option(*sched, args->max_memory);
  add_max_time_option(*sched, args->max_time);
  sched->callback([args] { run_schedule(*args); });

  auto path = std::make_shared<std::string>();
  auto verify_memory = std::make_shared<std::string>();
  CLI::App* ver = app.add_subcommand(
      "verify", "Verify a schedule file (JSON or binary); print its summary or first error");
  ver->add_option("file", *path,
                  "Schedule file (JSON or binary, told apart by the first bytes), or - for stdin")
      ->required();
  add_max_memory_option(*ver, *verify_memory);
  ver->callback([path, verify_memory] { run_verify(*path, *verify_memory); });

  CLI::App* list = app.add_subcommand(
      "algorithms", "List the algorithms, the rank counts and options they support");
  list->callback(run_list);

  auto rargs = std::make_shared<RoundsArgs>();
  CLI::App* rounds = app.add_subcommand("rounds",
                                        "StragglAR with k late ranks: rounds after the last one "
                                        "arrives vs the lower bound (verified)");
  rounds->add_option("--ranks,-n", rargs->ranks, "Rank counts N or N..M (default 3..130)");
  rounds->add_option("--stragglers,-k", rargs->stragglers,
                     "Late-rank counts K or K..L (default 1)");
  rounds->add_option("--format", rargs->format, "Output format")
      ->check(CLI::IsMember({"text", "csv", "markdown"}));
  add_max_memory_option(*rounds, rargs->max_memory);
  add_max_time_option(*rounds, rargs->max_time);
  rounds->callback([rargs] { run_rounds(*rargs); });
}

alg::Options algorithm_options(const alg::AlgorithmInfo& info,
                               const std::vector<std::string>& items, int straggler) {
  alg::Options options;
  for (const std::string& kv : items) {
    const auto eq = kv.find('=');
    if (eq == std::string::npos || eq == 0) {
      throw InputError("--option '" + kv + "': expected key=value");
    }
    if (options.has(kv.substr(0, eq)))
      throw InputError("--option '" + kv + "': " + kv.substr(0, eq) + " is given twice");
    options.set(kv.substr(0, eq), kv.substr(eq + 1));
  }
  if (straggler >= 0) {
    if (!info.straggler_aware) {
      throw InputError("--straggler: algorithm " + info.name +
                       " is not straggler-aware (it has no straggler option)");
    }
    if (options.has("straggler"))
      throw InputError("give the straggler either with --straggler or --option, not both");
    options.set("straggler", std::to_string(straggler));
  }
  return options;
}

}  // namespace ssim::experiments
