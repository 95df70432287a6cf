// `stragglesim lower` end to end: the JSON plan of every algorithm is 128-byte aligned and
// consistent (every send has its receive), the text form, --align, and bad input.
#include <gtest/gtest.h>

#include <map>
#include <nlohmann/json.hpp>
#include <tuple>

#include "tests/experiments/cli_support.hpp"

namespace ssim::testing {
namespace {

TEST(CliLower, JsonPlanOfEveryAlgorithmIsAlignedAndMatched) {
  for (const char* algo : {"ring", "rhd", "direct", "tree", "dbtree", "stragglar"}) {
    const CommandResult r =
        run_cli(std::string("lower ") + algo + " --ranks 8 --bytes 1000004 --format json");
    ASSERT_EQ(r.rc, 0) << algo << ": " << r.err;
    const nlohmann::json j = nlohmann::json::parse(r.out);
    EXPECT_EQ(j["algorithm"], algo);
    EXPECT_EQ(j["ranks"], 8);
    EXPECT_EQ(j["bytes"], 1000004);
    EXPECT_EQ(j["dtype"], "float32");
    EXPECT_GE(j["padded_bytes"].get<std::uint64_t>(), 1000004u);
    ASSERT_EQ(j["plans"].size(), 8u);
    // (round, src, dst) -> bytes of the sends, and of the receives.
    std::map<std::tuple<int, int, int>, std::uint64_t> sent, received;
    for (const auto& p : j["plans"]) {
      const int rank = p["rank"];
      for (const auto& round : p["rounds"]) {
        const int k = round["round"];
        for (const auto& s : round["sends"]) {
          EXPECT_EQ(s["offset"].get<std::uint64_t>() % 128, 0u) << algo;
          EXPECT_LE(s["offset"].get<std::uint64_t>() + s["bytes"].get<std::uint64_t>(),
                    j["padded_bytes"].get<std::uint64_t>());
          sent[{k, rank, s["peer"].get<int>()}] += s["bytes"].get<std::uint64_t>();
        }
        ASSERT_EQ(round["recvs"].size(), round["apply"].size());
        for (const auto& v : round["recvs"]) {
          EXPECT_EQ(v["offset"].get<std::uint64_t>() % 128, 0u) << algo;
          EXPECT_EQ(v["scratch_offset"].get<std::uint64_t>() % 128, 0u) << algo;
          received[{k, v["peer"].get<int>(), rank}] += v["bytes"].get<std::uint64_t>();
        }
        for (const auto& a : round["apply"]) {
          EXPECT_TRUE(a["op"] == "reduce" || a["op"] == "copy");
          EXPECT_EQ(a["offset"].get<std::uint64_t>() % 128, 0u) << algo;
        }
      }
    }
    EXPECT_FALSE(sent.empty());
    EXPECT_EQ(sent, received) << algo;
  }
}

TEST(CliLower, ScheduleFilesLowerLikeTheAlgorithm) {
  const std::string bin = "/tmp/ssim_cli_lower_rhd8.bin", json = "/tmp/ssim_cli_lower_rhd8.json";
  ASSERT_EQ(run_cli("schedule rhd --ranks 8 --format bin -o " + bin).rc, 0);
  ASSERT_EQ(run_cli("schedule rhd --ranks 8 --format json -o " + json).rc, 0);
  const CommandResult direct = run_cli("lower rhd --ranks 8 --bytes 1MiB --format json");
  ASSERT_EQ(direct.rc, 0) << direct.err;
  for (const std::string& file : {bin, json}) {
    const CommandResult r = run_cli("lower --schedule " + file + " --bytes 1MiB --format json");
    EXPECT_EQ(r.rc, 0) << r.err;
    EXPECT_EQ(r.out, direct.out) << file;
  }
  CommandResult r = run_cli("lower rhd --schedule " + bin + " --bytes 1MiB");
  EXPECT_EQ(r.rc, 1);
  EXPECT_NE(r.err.find("--schedule FILE takes the place of the algorithm"), std::string::npos)
      << r.err;
  r = run_cli("lower --bytes 1MiB");
  EXPECT_EQ(r.rc, 2);
  EXPECT_NE(r.err.find("give an algorithm, or --schedule FILE"), std::string::npos) << r.err;
  r = run_cli("lower ring --bytes 1MiB");
  EXPECT_EQ(r.rc, 2);
  EXPECT_NE(r.err.find("--ranks is required"), std::string::npos) << r.err;
  // A schedule that is not correct is not lowered: the verifier's message, exit 1.
  r = run_cli("lower --schedule " + data_path("schedules/double_count.json") + " --bytes 1MiB");
  EXPECT_EQ(r.rc, 1);
  EXPECT_NE(r.err.find("double_count.json: round 1, transfer 0"), std::string::npos) << r.err;
  // A truncated file: the byte named.
  const CommandResult ring = run_cli("schedule ring --ranks 4 --format bin");
  ASSERT_EQ(ring.rc, 0);
  std::string cut = ring.out;
  r = run_cli("lower --schedule - --bytes 1MiB", cut.substr(0, cut.size() - 1));
  EXPECT_EQ(r.rc, 1);
  EXPECT_NE(r.err.find("<stdin>: byte "), std::string::npos) << r.err;
  r = run_cli("lower --schedule " + bin + " --bytes 1MiB --max-memory 1KiB");
  EXPECT_EQ(r.rc, 3);
  EXPECT_NE(r.err.find("lowering the schedule of " + bin), std::string::npos) << r.err;
  std::remove(bin.c_str());
  std::remove(json.c_str());
}

TEST(CliLower, TextFormCountsAlignedTransfers) {
  const CommandResult r = run_cli("lower ring --ranks 4 --bytes 64KiB");
  ASSERT_EQ(r.rc, 0) << r.err;
  EXPECT_NE(r.out.find("# ring: 4 ranks, 6 rounds, 4 chunks of 16384 B (4096 float32); 65536 B "
                       "per rank padded to 65536 B; chunk boundaries on multiples of 128 B"),
            std::string::npos)
      << r.out;
  EXPECT_NE(r.out.find("sends 24/24 (100.0%)"), std::string::npos) << r.out;
  EXPECT_NE(
      r.out.find("rank 3\n  round 0   send -> 0    offset        32768  bytes        16384\n"),
      std::string::npos)
      << r.out;
  EXPECT_NE(r.out.find("recv <- 2    offset        16384  bytes        16384  reduce (scratch 0)"),
            std::string::npos)
      << r.out;
}

// --align 4 (the element size) is the tight layout: StragglAR at 1 MiB + 4 B then sends from
// offsets that are not multiples of 128 B, and the header says how many.
TEST(CliLower, TightAlignmentShowsMisalignedSends) {
  const CommandResult tight = run_cli("lower stragglar --ranks 8 --bytes 1048580 --align 4");
  ASSERT_EQ(tight.rc, 0) << tight.err;
  EXPECT_NE(tight.out.find("chunk boundaries on multiples of 4 B"), std::string::npos);
  // StragglAR at n=8 has 98 sends; with 4-byte chunks boundaries some are off 128 B.
  EXPECT_NE(tight.out.find("# starting on a multiple of 128 B: sends "), std::string::npos);
  EXPECT_EQ(tight.out.find("# starting on a multiple of 128 B: sends 98/98"), std::string::npos)
      << tight.out;
  EXPECT_NE(tight.out.find("# starting on a multiple of 4 B: sends 98/98 (100.0%)"),
            std::string::npos)
      << tight.out;
  const CommandResult aligned =
      run_cli("lower stragglar --ranks 8 --bytes 1048584 --straggler 3 --dtype double");
  ASSERT_EQ(aligned.rc, 0) << aligned.err;
  EXPECT_NE(aligned.out.find("(100.0%), receives"), std::string::npos) << aligned.out;
}

TEST(CliLower, BadInputIsOneClearError) {
  struct Case {
    const char* args;
    const char* message;
  };
  for (const Case& c : {
           Case{"lower ring --ranks 4 --bytes 64KiB --align 96", "--align: alignment 96 B"},
           Case{"lower ring --ranks 4 --bytes 64KiB --align 4 --dtype double",
                "at least the float64 element size (8 B)"},
           Case{"lower ring --ranks 4 --bytes 10", "not a whole number of float32"},
           Case{"lower ring --ranks 4 --bytes 8", "too small for a schedule of 4 chunks"},
           Case{"lower ring --ranks 4 --bytes lots", "--bytes: "},
           Case{"lower ring --ranks 4 --bytes 64KiB --dtype quad", "unknown data type 'quad'"},
           Case{"lower ring --ranks 4 --bytes 64KiB --straggler 1", "not straggler-aware"},
           Case{"lower nope --ranks 4 --bytes 64KiB", "nope"},
       }) {
    const CommandResult r = run_cli(c.args);
    EXPECT_EQ(r.rc, 1) << c.args;
    EXPECT_NE(r.err.find(c.message), std::string::npos) << c.args << ": " << r.err;
  }
}

}  // namespace
}  // namespace ssim::testing
