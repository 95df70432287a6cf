// The binary schedule form (schedule_bin.hpp, docs/schedule_format.md): round trips through JSON,
// its size, and a clear error naming the byte for every kind of bad input.
#include "algorithms/schedule_bin.hpp"

#include <gtest/gtest.h>

#include <memory>
#include <random>
#include <sstream>
#include <string>
#include <vector>

#include "algorithms/registry.hpp"
#include "algorithms/schedule_json.hpp"
#include "algorithms/schedule_writer.hpp"
#include "algorithms/verifier.hpp"
#include "common/error.hpp"

namespace ssim::alg {
namespace {

// "input error: ...", "invalid: ..." or "ok: <summary>" of `stragglesim verify` on these bytes.
std::string verify_outcome(const std::string& bytes) {
  try {
    std::istringstream in(bytes);
    const StreamedVerify v = verify_schedule_file(in, "plan.bin");
    return v.result.ok() ? "ok: " + format_summary(v.result.summary)
                         : "invalid: " + v.result.error->to_string();
  } catch (const InputError& e) {
    return std::string("input error: ") + e.what();
  }
}

std::string read_error(const std::string& bytes) {
  try {
    read_schedule_bin(bytes, "plan.bin");
  } catch (const InputError& e) {
    return e.what();
  }
  return "no error";
}

std::string varint(std::uint64_t v) {
  std::string out;
  while (v >= 0x80) {
    out += static_cast<char>((v & 0x7f) | 0x80);
    v >>= 7;
  }
  return out + static_cast<char>(v);
}
std::string magic() { return std::string(kScheduleBinMagic, sizeof kScheduleBinMagic); }
// A header: version 1, allreduce, then the given varints and strings.
std::string head(std::uint64_t ranks, std::uint64_t chunks) {
  return magic() + '\x01' + '\x00' + varint(ranks) + varint(chunks) + varint(0) + varint(0) +
         varint(1) + "x" + varint(0);
}
// The trailer after the rounds: end tag, counts, CRC-32 of everything before.
std::string seal(std::string body, std::uint64_t rounds, std::uint64_t transfers) {
  body += varint(0) + varint(rounds) + varint(transfers);
  const std::uint32_t crc = crc32(0, body.data(), body.size());
  for (int i = 0; i < 4; ++i) body += static_cast<char>((crc >> (8 * i)) & 0xff);
  return body;
}

TEST(ScheduleBin, JsonToBinToJsonIsIdenticalForEveryAlgorithm) {
  int cases = 0;
  for (const AlgorithmInfo& info : algorithms()) {
    for (int n : {2, 3, 7, 16, 33, 64}) {
      if (!info.supports_ranks(n)) continue;
      Options opts;
      if (info.straggler_aware) opts.set("straggler", std::to_string(n / 3));
      const Schedule generated = generate(info.name, n, opts);
      if (generated.has_switch_reduces()) continue;  // version 1 refuses them (test below)
      const std::string json = schedule_to_json(generated);
      const Schedule from_json = read_schedule_json(json, "plan.json");
      const std::string bin = schedule_to_bin(from_json);
      const Schedule back = read_schedule_bin(bin, "plan.bin");
      EXPECT_EQ(back, from_json) << info.name << " " << n;
      EXPECT_EQ(schedule_to_json(back), json) << info.name << " " << n;
      EXPECT_EQ(read_schedule_any(bin, "plan.bin"), from_json);
      EXPECT_EQ(verify_outcome(bin), verify_outcome(json)) << info.name << " " << n;
      ++cases;
    }
  }
  EXPECT_GT(cases, 60);
  // Late ranks, options and phases that JSON escapes.
  Options late;
  late.set("stragglers", "3");
  Schedule s = generate("stragglar", 9, late);
  s.options["k\"ey"] = std::string("v\0al\xff", 5);
  s.rounds.front().phase = "\n\"";
  EXPECT_EQ(read_schedule_bin(schedule_to_bin(s), "plan.bin"), s);
}

// Version 1 has no field for in-network reductions: a schedule with them is refused, never
// written without them.
// Both writers through their shared interface (schedule_writer.hpp), with rounds far larger than
// the 1 MiB blocks they write in: the blocks of a round come out whole, in order, and the binary
// CRC-32 covers all of them.
TEST(ScheduleBin, TheWritersWriteBlocksWithinARound) {
  for (const bool bin : {true, false}) {
    // Over 1 MiB a round: about 4 bytes a transfer in binary, about 50 in JSON.
    const int transfers = bin ? 300000 : 30000;
    Schedule s = Schedule::make(Collective::allreduce, "big", 3, 3);
    s.options["k"] = "v";
    for (int r = 0; r < 3; ++r) {
      Round& round = s.add_round("phase " + std::to_string(r % 2));
      for (int i = 0; i < transfers; ++i)
        round.add((i + r) % 3, (i + r + 1) % 3, i % 3, i % 3 + 1, i % 2 ? Op::copy : Op::reduce);
    }
    std::ostringstream os;
    std::unique_ptr<ScheduleWriter> w;
    if (bin) {
      w = std::make_unique<ScheduleBinWriter>(os, s);
    } else {
      w = std::make_unique<ScheduleJsonWriter>(os, s);
    }
    for (const Round& r : s.rounds) w->round(r);
    w->finish();
    const std::string bytes = os.str();
    ASSERT_GT(bytes.size(), std::size_t{3} << 20) << bin;
    EXPECT_EQ(bytes, bin ? schedule_to_bin(s) : schedule_to_json(s));
    EXPECT_EQ(read_schedule_any(bytes, bin ? "plan.bin" : "plan.json"), s) << bin;
  }
}

TEST(ScheduleBin, InNetworkReductionsAreRefused) {
  const Schedule s = generate("nvls", 4, {});
  ASSERT_TRUE(s.has_switch_reduces());
  try {
    (void)schedule_to_bin(s);
    FAIL() << "an nvls schedule was written in the binary form";
  } catch (const InputError& e) {
    EXPECT_NE(std::string(e.what()).find("--format json"), std::string::npos) << e.what();
  }
}

TEST(ScheduleBin, AnEighthOfTheJsonOrLess) {
  for (const AlgorithmInfo& info : algorithms()) {
    for (int n : {64, 256}) {
      if (!info.supports_ranks(n)) continue;
      const Schedule s = generate(info.name, n, {});
      if (s.transfer_count() < 1000 || s.has_switch_reduces()) continue;
      const double json = static_cast<double>(schedule_to_json(s).size());
      const double bin = static_cast<double>(schedule_to_bin(s).size());
      EXPECT_LE(bin * 8, json) << info.name << " " << n << ": " << bin << " vs " << json
                               << " bytes";
    }
  }
}

TEST(ScheduleBin, StreamsFromAPipeAndFromAFile) {
  const Schedule s = generate("rhd", 16, {});
  const std::string bin = schedule_to_bin(s);
  class Pipe : public std::streambuf {
   public:
    explicit Pipe(std::string t) : t_(std::move(t)) {
      setg(t_.data(), t_.data(), t_.data() + t_.size());
    }

   private:
    std::string t_;
  };
  for (const std::string& bytes : {bin, schedule_to_json(s)}) {
    Pipe buf(bytes);
    std::istream pipe(&buf);
    const StreamedVerify v = verify_schedule_file(pipe, "plan");
    ASSERT_TRUE(v.result.ok());
    EXPECT_EQ(v.result.summary.rounds, s.rounds.size());
    EXPECT_EQ(verify_outcome(bytes).rfind("ok: ", 0), 0u);
  }
}

TEST(ScheduleBin, TruncatedAtEveryByteNamesTheByte) {
  const std::string bin = schedule_to_bin(generate("ring", 5, {}));
  for (std::size_t cut = 0; cut < bin.size(); ++cut) {
    const std::string e = read_error(bin.substr(0, cut));
    EXPECT_EQ(e.rfind("plan.bin: byte ", 0), 0u) << cut << ": " << e;
    EXPECT_NE(e.find("truncated"), std::string::npos) << cut << ": " << e;
    // verify of a prefix shorter than the magic reads it as JSON: an error either way
    EXPECT_EQ(verify_outcome(bin.substr(0, cut)).rfind("input error: plan.bin: ", 0), 0u) << cut;
  }
  EXPECT_EQ(read_error(bin), "no error");
  EXPECT_EQ(read_error(bin + '\0'), "plan.bin: byte " + std::to_string(bin.size()) +
                                        ": unexpected bytes after the end of the schedule");
}

TEST(ScheduleBin, EveryCorruptedByteIsCaught) {
  // One byte changed anywhere: the layout, a range or at the latest the CRC-32 refuses it.
  const std::string bin = schedule_to_bin(generate("tree", 6, {}));
  std::mt19937 rng(5);
  for (std::size_t at = 0; at < bin.size(); ++at) {
    std::string bad = bin;
    bad[at] = static_cast<char>(bad[at] ^ (1 + rng() % 255));
    const std::string e = read_error(bad);
    EXPECT_EQ(e.rfind("plan.bin: byte ", 0), 0u) << at << ": " << e;
  }
  std::string flipped = bin;
  flipped[bin.size() - 1] ^= 0x01;  // the stored CRC itself
  EXPECT_NE(read_error(flipped).find("CRC-32 mismatch"), std::string::npos) << read_error(flipped);
}

TEST(ScheduleBin, WrongMagicAndVersion) {
  const std::string bin = schedule_to_bin(generate("ring", 3, {}));
  std::string v2 = bin;
  v2[8] = 2;
  EXPECT_EQ(
      read_error(v2),
      "plan.bin: byte 8: format version 2 is not supported (this stragglesim reads version 1)");
  EXPECT_EQ(verify_outcome(v2), "input error: " + read_error(v2));
  EXPECT_NE(read_error("{\"ranks\": 2}").find("plan.bin: byte 0: not a binary schedule"),
            std::string::npos);
  EXPECT_NE(read_error("").find("plan.bin: byte 0: truncated"), std::string::npos);
}

TEST(ScheduleBin, OversizedFieldsAreRefusedBeforeAnyAllocation) {
  const std::string m = magic() + '\x01';
  const std::vector<std::pair<std::string, std::string>> cases = {
      {m + '\x07', "byte 9: collective 7 unknown"},
      {m + '\x00' + varint(std::uint64_t{1} << 40),
       "byte 10: ranks 1099511627776 out of range [1, 16777216]"},
      {m + '\x00' + varint(0), "byte 10: ranks 0 out of range"},
      {m + '\x00' + varint(4) + varint(std::uint64_t{1} << 31),
       "byte 11: chunks 2147483648 out of range"},
      {m + '\x00' + varint(4) + varint(4) + varint(6),
       "byte 12: straggler + 1 6 out of range [0, 4]"},
      {m + '\x00' + varint(4) + varint(4) + varint(2) + varint(5),
       "byte 13: the late rank count 5 out of range"},
      {m + '\x00' + varint(4) + varint(4) + varint(2) + varint(2) + varint(1) + varint(1),
       "byte 15: late rank 1 listed twice"},
      {m + '\x00' + varint(4) + varint(4) + varint(2) + varint(1) + varint(0),
       "the last late rank must be the straggler"},
      {m + '\x00' + varint(4) + varint(4) + varint(0) + varint(0) + varint(std::uint64_t{1} << 62),
       "byte 14: the algorithm name's length 4611686018427387904 out of range [0, 4096]"},
      {m + '\x00' + varint(4) + varint(4) + varint(0) + varint(0) + varint(0) + varint(100000),
       "byte 15: the option count 100000 out of range [0, 4096]"},
      {m + '\x00' + varint(4) + varint(4) + varint(0) + varint(0) + varint(0) + varint(2) +
           varint(1) + "a" + varint(0) + varint(1) + "a" + varint(0),
       "byte 19: an option key given twice"},
      {m + '\x00' + std::string(11, '\xff'), "byte 10: ranks: a varint beyond 64 bits"},
      {head(4, 4) + varint(5), "round 0: phase 3 is not in the table (0 phases so far)"},
      {head(4, 4) + varint(1) + varint(1u << 20), "a phase's length 1048576 out of range"},
      {head(4, 4) + varint(1) + varint(0) + varint(std::uint64_t{1} << 50),
       "a round's transfer count 1125899906842624 out of range"},
      // a count far beyond the bytes present: truncated, after no more than the bytes given
      {head(4, 4) + varint(1) + varint(0) + varint(2000000000) + std::string(8, '\x00'),
       "truncated"},
      {head(4, 4) + varint(1) + varint(0) + varint(1) + varint(8) + varint(0) + varint(0) +
           varint(0),
       "round 0, transfer 0: src 4 out of range [0, 3]"},
      {head(4, 4) + varint(1) + varint(0) + varint(1) + varint(0) + varint(1) + varint(0) +
           varint(0),
       "round 0, transfer 0: dst -1 out of range [0, 3]"},
      {head(4, 4) + varint(1) + varint(0) + varint(1) + varint(0) + varint(2) + varint(6) +
           varint(2),
       "round 0, transfer 0: chunk end 5 out of range [4, 4]"},
      {head(4, 4) + varint(1) + varint(0) + varint(1) + varint(0) + varint(2) + varint(0) +
           varint(std::uint64_t{1} << 40),
       "a transfer field beyond any range"},
      {seal(head(4, 4), 1, 0), "the trailer counts 1 rounds, the file holds 0"},
      {seal(head(4, 4), 0, 3), "the trailer counts 3 transfers, the file holds 0"},
  };
  for (const auto& [bytes, expected] : cases) {
    const std::string e = read_error(bytes);
    EXPECT_NE(e.find(expected), std::string::npos) << e << "\nexpected: " << expected;
    EXPECT_EQ(e.rfind("plan.bin: byte ", 0), 0u) << e;
  }
  // A well-formed file with no rounds reads; the verifier then says what is missing.
  EXPECT_EQ(read_error(seal(head(4, 4), 0, 0)), "no error");
  EXPECT_EQ(verify_outcome(seal(head(4, 4), 0, 0)).rfind("invalid: ", 0), 0u);
}

}  // namespace
}  // namespace ssim::alg
