// `simulate --trace` selectors (--trace-ranks, --trace-rounds, --trace-window), the size
// estimate and its limit (--trace-max-size): each selected trace is compared event by event with
// the full trace of the same run. `run --trace` and `advise --trace` take the same options.
#include <gtest/gtest.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <limits>
#include <map>
#include <nlohmann/json.hpp>
#include <regex>
#include <set>
#include <string>

#include "cli_support.hpp"
#include "tests/sim/trace_check.hpp"

namespace ssim::testing {
namespace {

bool contains(const std::string& s, const std::string& what) {
  return s.find(what) != std::string::npos;
}

class CliTraceSelect : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = std::filesystem::temp_directory_path() /
           ("ssim_trace_select_" + std::to_string(::getpid()) + "_" +
            ::testing::UnitTest::GetInstance()->current_test_info()->name());
    std::filesystem::remove_all(dir_);
    std::filesystem::create_directories(dir_);
  }
  void TearDown() override { std::filesystem::remove_all(dir_); }

  std::string file(const std::string& name, const std::string& text = "") const {
    const std::string path = (dir_ / name).string();
    if (!text.empty()) std::ofstream(path, std::ios::binary) << text;
    return path;
  }
  // 8 ranks in the flow model, rank 5 late by 100 us: waits, overlaps and link counters.
  std::string config(const std::string& algorithm = "ring",
                     const std::string& model = "flow") const {
    return file(algorithm + model + ".yaml",
                "topology: {kind: switch, ranks: 8, bandwidth: 450GiB/s, latency: 3us}\n"
                "network: {model: " +
                    model +
                    "}\n"
                    "collective: {algorithm: " +
                    algorithm +
                    ", size: 64MiB}\n"
                    "delays: {persistent: [{rank: 5, delay: 100us}]}\n"
                    "iterations: 1\n");
  }
  std::size_t entries() const {
    return static_cast<std::size_t>(std::distance(std::filesystem::directory_iterator(dir_),
                                                  std::filesystem::directory_iterator{}));
  }

  std::filesystem::path dir_;
};

nlohmann::json events_of(const std::string& path) {
  return nlohmann::json::parse(slurp(path)).at("traceEvents");
}

// The slices ("X") of a trace, as their JSON text (tids left out: lanes are numbered in the
// order tracks are created, which a selection changes).
std::multiset<std::string> slices(const nlohmann::json& events) {
  std::multiset<std::string> out;
  for (nlohmann::json e : events) {
    if (e.at("ph") != "X") continue;
    e.erase("tid");
    out.insert(e.dump());
  }
  return out;
}

long long ns(double micros) { return std::llround(micros * 1000.0); }

// The transfer slices of the full trace that a selection keeps: by rank (pid - 1), round and
// overlap with [from, to] in ns.
std::multiset<std::string> expected_transfers(const nlohmann::json& full,
                                              const std::set<int>& ranks,
                                              const std::set<int>& rounds, long long from,
                                              long long to) {
  std::multiset<std::string> out;
  for (nlohmann::json e : full) {
    if (e.at("ph") != "X" || e.at("cat") != "transfer") continue;
    const int rank = e.at("pid").get<int>() - 1;
    const int round = e.at("args").at("round");
    const long long a = ns(e.at("ts")), b = a + ns(e.at("dur"));
    if ((ranks.empty() || ranks.count(rank)) && (rounds.empty() || rounds.count(round)) &&
        b >= from && a <= to) {
      e.erase("tid");
      out.insert(e.dump());
    }
  }
  return out;
}

std::multiset<std::string> transfers(const nlohmann::json& events) {
  std::multiset<std::string> out;
  for (const std::string& s : slices(events)) {
    if (contains(s, "\"cat\":\"transfer\"")) out.insert(s);
  }
  return out;
}

TEST_F(CliTraceSelect, RanksAndRoundsKeepExactlyTheirEvents) {
  const std::string cfg = config();
  const std::string full = file("full.json"), sel = file("sel.json");
  ASSERT_EQ(run_cli("simulate " + cfg + " --trace " + full).rc, 0);
  const CommandResult r =
      run_cli("simulate " + cfg + " --trace " + sel + " --trace-ranks 0-1,5 --trace-rounds 2-4,9");
  ASSERT_EQ(r.rc, 0) << r.err;
  const nlohmann::json all = events_of(full), some = events_of(sel);
  const std::multiset<std::string> want =
      expected_transfers(all, {0, 1, 5}, {2, 3, 4, 9}, std::numeric_limits<long long>::min(),
                         std::numeric_limits<long long>::max());
  EXPECT_EQ(want.size(), 3u * 2 * 4) << "3 ranks, a send and a receive in each of 4 rounds";
  EXPECT_EQ(transfers(some), want);
  // Metadata, arrivals and queues only of the selected ranks (pid 9: the link counters).
  std::set<int> pids;
  std::size_t arrows = 0;
  for (const nlohmann::json& e : some) {
    pids.insert(e.at("pid").get<int>());
    arrows += e.at("ph") == "s";
  }
  EXPECT_EQ(pids, (std::set<int>{1, 2, 6, 9}));
  EXPECT_EQ(arrows, 4u) << "arrows only between selected ranks: 0 -> 1 in each selected round";
  check_trace_strict(slurp(sel));  // still a valid trace
}

TEST_F(CliTraceSelect, WindowKeepsOverlappingSlicesWhole) {
  const std::string cfg = config("rhd");
  const std::string full = file("full.json"), sel = file("sel.json");
  ASSERT_EQ(run_cli("simulate " + cfg + " --trace " + full).rc, 0);
  const CommandResult r =
      run_cli("simulate " + cfg + " --trace " + sel + " --trace-window 120us:180us");
  ASSERT_EQ(r.rc, 0) << r.err;
  const long long from = 120'000, to = 180'000;
  const nlohmann::json all = events_of(full), some = events_of(sel);
  // Every slice of the full trace that overlaps the window, unclipped; nothing else.
  std::multiset<std::string> want;
  for (nlohmann::json e : all) {
    if (e.at("ph") != "X") continue;
    const long long a = ns(e.at("ts")), b = a + ns(e.at("dur"));
    if (b >= from && a <= to) {
      e.erase("tid");
      want.insert(e.dump());
    }
  }
  ASSERT_FALSE(want.empty());
  ASSERT_LT(want.size(), slices(all).size());
  EXPECT_EQ(slices(some), want);
  bool clipped_would_differ = false;
  for (const std::string& s : want) {
    const nlohmann::json e = nlohmann::json::parse(s);
    clipped_would_differ |= ns(e.at("ts")) < from || ns(e.at("ts")) + ns(e.at("dur")) > to;
  }
  EXPECT_TRUE(clipped_would_differ) << "the window cuts some slice";
  // Counters: inside the window, and each track's value at the window's start is the full
  // trace's value in effect then.
  std::map<std::string, std::map<long long, double>> full_counters, counters;
  for (const nlohmann::json& e : all) {
    if (e.at("ph") == "C")
      full_counters[std::to_string(e.at("pid").get<int>()) + e.at("name").get<std::string>()]
                   [ns(e.at("ts"))] = e.at("args").begin().value().get<double>();
  }
  for (const nlohmann::json& e : some) {
    if (e.at("ph") != "C") continue;
    const long long t = ns(e.at("ts"));
    EXPECT_TRUE(t >= from && t <= to) << e.dump();
    counters[std::to_string(e.at("pid").get<int>()) + e.at("name").get<std::string>()][t] =
        e.at("args").begin().value().get<double>();
  }
  ASSERT_FALSE(counters.empty());
  for (const auto& entry : full_counters) {
    // (not a structured binding: clang 14 does not let a lambda capture one)
    const std::string& track = entry.first;
    const auto& values = entry.second;
    // The full trace's step function at `t`.
    auto at = [&](long long t) {
      auto it = values.upper_bound(t);
      return it == values.begin() ? 0.0 : std::prev(it)->second;
    };
    const auto got = counters.find(track);
    if (got == counters.end()) {
      // No value written: the counter is 0 over the whole window.
      for (const auto& [t, v] : values) {
        if (t >= from && t <= to) EXPECT_EQ(v, at(t - 1)) << track << " changes at " << t;
      }
      EXPECT_EQ(at(from), 0.0) << track;
      continue;
    }
    for (const auto& [t, v] : got->second) EXPECT_EQ(v, at(t)) << track << " at " << t;
    if (at(from) != 0)
      EXPECT_TRUE(got->second.count(from)) << track << " has no value at the window's start";
  }
}

// The estimate from the refusal message ("about X (N events)") against the trace written.
struct Estimate {
  double events = 0;
  double bytes = 0;
};
Estimate estimate_of(const std::string& err) {
  const std::regex re("about ([0-9.e+]+)(B|KiB|MiB|GiB) \\(([0-9]+) events\\)");
  std::smatch m;
  EXPECT_TRUE(std::regex_search(err, m, re)) << err;
  if (m.empty()) return {};
  const std::map<std::string, double> unit{
      {"B", 1}, {"KiB", 1024}, {"MiB", 1 << 20}, {"GiB", 1 << 30}};
  return {std::stod(m[3]), std::stod(m[1]) * unit.at(m[2])};
}

TEST_F(CliTraceSelect, EstimateIsWithinAQuarterOfTheTrace) {
  struct Case {
    std::string algorithm, model, select;
  };
  for (const Case& c :
       {Case{"ring", "flow", ""}, Case{"rhd", "alphabeta", ""}, Case{"stragglar", "flow", ""},
        Case{"ring", "flow", "--trace-ranks 2-6 --trace-window 50us:"},
        Case{"rhd", "flow", "--trace-rounds 1-3 --trace-links 2"},
        Case{"stragglar", "alphabeta", "--trace-window :150us --trace-ranks 0,7"}}) {
    SCOPED_TRACE(c.algorithm + " " + c.model + " " + c.select);
    const std::string cfg = config(c.algorithm, c.model), trace = file("t.json");
    const CommandResult refused =
        run_cli("simulate " + cfg + " --trace " + trace + " " + c.select + " --trace-max-size 1B");
    ASSERT_EQ(refused.rc, 1) << refused.err;
    const Estimate e = estimate_of(refused.err);
    ASSERT_EQ(run_cli("simulate " + cfg + " --trace " + trace + " " + c.select).rc, 0);
    const std::string text = slurp(trace);
    const double events = static_cast<double>(events_of(trace).size());
    EXPECT_GT(e.events, events / 1.25);
    EXPECT_LT(e.events, events * 1.25);
    EXPECT_GT(e.bytes, static_cast<double>(text.size()) / 1.25);
    EXPECT_LT(e.bytes, static_cast<double>(text.size()) * 1.25);
  }
}

TEST_F(CliTraceSelect, RefusalAboveTheLimitWritesNothing) {
  const std::string cfg = config();
  const std::string trace = file("t.json", "old content\n");
  const std::size_t before = entries();
  const CommandResult r =
      run_cli("simulate " + cfg + " --trace " + trace + " --trace-max-size 80KiB");
  EXPECT_EQ(r.rc, 1);
  EXPECT_TRUE(contains(r.err, "above --trace-max-size 80KiB")) << r.err;
  EXPECT_TRUE(contains(r.err, "--trace-ranks 0-")) << "a rank range that fits: " << r.err;
  EXPECT_TRUE(contains(r.err, "nothing written")) << r.err;
  EXPECT_EQ(slurp(trace), "old content\n");
  EXPECT_EQ(entries(), before) << "no temporary left behind";
  EXPECT_TRUE(r.out.empty()) << r.out;
  // The range it names fits.
  const std::smatch m = [&] {
    std::smatch s;
    std::regex_search(r.err, s, std::regex("--trace-ranks ([0-9-]+) would keep"));
    return s;
  }();
  ASSERT_FALSE(m.empty()) << r.err;
  const CommandResult fits = run_cli("simulate " + cfg + " --trace " + trace +
                                     " --trace-max-size 80KiB --trace-ranks " + m[1].str());
  EXPECT_EQ(fits.rc, 0) << fits.err;
  EXPECT_LE(slurp(trace).size(), 80u * 1024 * 5 / 4);
  // Small traces: no progress lines.
  EXPECT_TRUE(fits.err.empty()) << fits.err;
}

TEST_F(CliTraceSelect, BadSelectorsNameTheOptionAndToken) {
  const std::string cfg = config();
  const std::string trace = file("t.json");
  struct Case {
    std::string args, message;
  };
  for (const Case& c :
       {Case{"--trace-ranks 0-x", "--trace-ranks: bad token '0-x' in '0-x'"},
        Case{"--trace-ranks 1,,2", "--trace-ranks: bad token '' in '1,,2'"},
        Case{"--trace-ranks 5-2",
             "--trace-ranks: bad token '5-2' in '5-2': the range ends before it starts"},
        Case{"--trace-ranks 0-8", "--trace-ranks: rank 8 in '0-8' is past the last rank (7)"},
        Case{"--trace-ranks -1", "--trace-ranks: bad token '-1'"},
        Case{"--trace-rounds 3,99",
             "--trace-rounds: round 99 in '3,99' is past the last round of ring (13)"},
        Case{"--trace-rounds a", "--trace-rounds: bad token 'a' in 'a'"},
        Case{"--trace-window 3ms", "--trace-window: bad token '3ms'"},
        Case{"--trace-window 2:3ms", "--trace-window: bad token '2' in '2:3ms'"},
        Case{"--trace-window 3ms:1ms", "--trace-window: '3ms:1ms' ends before it starts"},
        Case{"--trace-max-size 10X", "--trace-max-size: bad token '10X'"}}) {
    SCOPED_TRACE(c.args);
    const CommandResult r = run_cli("simulate " + cfg + " --trace " + trace + " " + c.args);
    EXPECT_EQ(r.rc, 1) << r.err;
    EXPECT_TRUE(contains(r.err, c.message)) << r.err;
    EXPECT_EQ(std::count(r.err.begin(), r.err.end(), '\n'), 1) << "one message: " << r.err;
    EXPECT_FALSE(std::filesystem::exists(trace));
  }
  const CommandResult alone = run_cli("simulate " + cfg + " --trace-ranks 0");
  EXPECT_EQ(alone.rc, 2) << "a selector needs --trace";
  EXPECT_TRUE(contains(alone.err, "--trace-ranks requires --trace")) << alone.err;
}

// `run --trace POINT` and `advise --trace FILE` take the same selectors and the same limit.
TEST_F(CliTraceSelect, RunAndAdviseSelectAndRefuseAsSimulateDoes) {
  const std::string out = (dir_ / "out").string();
  const std::string experiment =
      file("exp.yaml",
           "topology: {kind: switch, ranks: 8, bandwidth: 450GiB/s, latency: 3us}\n"
           "network: {model: flow}\n"
           "algorithms: [ring]\n"
           "size: 64MiB\n"
           "stragglers: {ranks: [5], delay: 100us}\n"
           "iterations: 1\n"
           "output: " +
               out + "\n");
  // The same point through `simulate`: the reference selection.
  const std::string ref = file("ref.json");
  ASSERT_EQ(run_cli("simulate " + experiment + " --trace " + ref + " --trace-ranks 0-1,5 " +
                    "--trace-rounds 2-4,9")
                .rc,
            0);
  const CommandResult r =
      run_cli("run " + experiment + " --trace 0 --trace-ranks 0-1,5 --trace-rounds 2-4,9");
  ASSERT_EQ(r.rc, 0) << r.err;
  const std::string traced = out + "/trace-run0-iteration0.json";
  const nlohmann::json some = events_of(traced);
  EXPECT_EQ(transfers(some), transfers(events_of(ref)));
  EXPECT_EQ(transfers(some).size(), 3u * 2 * 4) << "3 ranks, a send and a receive in 4 rounds";
  check_trace_strict(slurp(traced));

  // Above the limit: refused with a rank range that fits, nothing written.
  std::filesystem::remove(traced);
  const CommandResult big = run_cli("run " + experiment + " --trace 0 --trace-max-size 80KiB");
  EXPECT_EQ(big.rc, 1);
  EXPECT_TRUE(contains(big.err, "above --trace-max-size 80KiB")) << big.err;
  EXPECT_TRUE(contains(big.err, "--trace-ranks 0-")) << big.err;
  EXPECT_FALSE(std::filesystem::exists(traced));
  const CommandResult bad = run_cli("run " + experiment + " --trace 0 --trace-ranks 0-8");
  EXPECT_EQ(bad.rc, 1);
  EXPECT_TRUE(contains(bad.err, "--trace-ranks: rank 8 in '0-8' is past the last rank (7)"))
      << bad.err;

  // advise: the recommendation's trace, selected; and refused above the limit.
  const std::string advised = file("advise.json");
  const std::string advise =
      "advise --topology switch:450GiB/s:3us --ranks 8 --size 64MiB --iterations 1 "
      "--algorithms ring --trace " +
      advised;
  const CommandResult a = run_cli(advise + " --trace-ranks 3 --trace-window 0:50us");
  ASSERT_EQ(a.rc, 0) << a.err;
  std::set<int> pids;
  for (const nlohmann::json& e : events_of(advised)) {
    if (e.at("ph") == "X" && e.at("cat") == "transfer") pids.insert(e.at("pid").get<int>());
  }
  EXPECT_EQ(pids, (std::set<int>{4})) << "only rank 3's transfers";
  std::filesystem::remove(advised);
  const CommandResult refused = run_cli(advise + " --trace-max-size 1KiB");
  EXPECT_EQ(refused.rc, 1);
  EXPECT_TRUE(contains(refused.err, "above --trace-max-size 1KiB")) << refused.err;
  EXPECT_FALSE(std::filesystem::exists(advised));
  const CommandResult alone = run_cli("run " + experiment + " --trace-ranks 0");
  EXPECT_EQ(alone.rc, 2) << "a selector needs --trace";
  EXPECT_TRUE(contains(alone.err, "--trace-ranks requires --trace")) << alone.err;
}

}  // namespace
}  // namespace ssim::testing
