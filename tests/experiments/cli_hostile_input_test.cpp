// Hostile input to the readers (issue 42): out-of-range values, sizes that overflow, ambiguous
// columns, paths inside files, flags that would be ignored, a symlinked journal. Each case is
// one message naming the file, line and column (or the flag) and the allowed range, exit 1
// (input) or 3 (resource), nothing written. Every command runs under `timeout` and a memory
// limit, so that a regression (an endless loop, an unbounded allocation) fails its test instead
// of hanging the suite.
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>
#include <string>
#include <vector>

#include "cli_support.hpp"

// AddressSanitizer reserves terabytes of address space for its shadow memory, so a binary built
// with it cannot start under `ulimit -v`: there the limit is left out, and an unbounded
// allocation fails on ASan's own allocation-size check or on the timeout instead.
#if defined(__SANITIZE_ADDRESS__)
#define SSIM_HOSTILE_ASAN 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define SSIM_HOSTILE_ASAN 1
#endif
#endif
#ifdef SSIM_HOSTILE_ASAN
constexpr const char* kAddressSpaceLimit = "";
#else
constexpr const char* kAddressSpaceLimit = "ulimit -v 4194304 && ";
#endif

namespace ssim::testing {
namespace {

namespace fs = std::filesystem;

bool contains(const std::string& s, const std::string& what) {
  return s.find(what) != std::string::npos;
}

// A fresh folder per test, removed after it.
class HostileInput : public ::testing::Test {
 protected:
  void SetUp() override {
    char t[] = "/tmp/ssim_hostile_XXXXXX";
    dir_ = mkdtemp(t);
  }
  void TearDown() override { fs::remove_all(dir_); }

  std::string path(const std::string& name) const { return dir_ + "/" + name; }
  std::string write(const std::string& name, const std::string& text) const {
    fs::create_directories(fs::path(path(name)).parent_path());
    std::ofstream(path(name), std::ios::binary) << text;
    return path(name);
  }
  // `args` run from `cwd` (default: this test's folder) under `timeout 60` and a 4 GiB address
  // space (not in an ASan build, above); rc 124 is a timeout. SSIM_HOSTILE_BIN names another
  // binary to run them against (to see each test fail on a build without the fixes).
  CommandResult run(const std::string& args, const std::string& cwd = "") const {
    const std::string out = path(".out"), err = path(".err");
    const char* other = std::getenv("SSIM_HOSTILE_BIN");
    const std::string bin = other != nullptr ? other : STRAGGLESIM_BIN;
    const std::string cmd = "cd '" + (cwd.empty() ? dir_ : cwd) + "' && " + kAddressSpaceLimit +
                            "timeout 60 " + bin + " " + args + " </dev/null >'" +
                            out + "' 2>'" + err + "'";
    const int status = std::system(cmd.c_str());
    CommandResult r;
    r.rc = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
    r.out = slurp(out);
    r.err = slurp(err);
    fs::remove(out);
    fs::remove(err);
    return r;
  }

  std::string dir_;
};

// A result CSV: the header and rows given as their fields from `straggler` on (the columns
// before it fixed: a delayed ring run of 8 ranks).
const char* kHeader =
    "source,algorithm,ranks,bytes,dtype,delay_s,straggler,iteration,time_s,after_last_arrival_s,"
    "algbw_GBps,busbw_GBps,wrong,device,timestamp,nccl_version,nccl_algo,nccl_proto,"
    "arrival_spread_s\n";
std::string row(const std::string& bytes, const std::string& delay, const std::string& straggler,
                const std::string& iteration = "0", const std::string& time = "0.0051",
                const std::string& algorithm = "ring") {
  return "measured," + algorithm + ",8," + bytes + ",float32," + delay + "," + straggler + "," +
         iteration + "," + time + ",8.2e-05,0.79,1.39,0,dev,2026-11-26T02:32:03Z,2.28.9,,,0\n";
}
// 1-based byte column of field `k` (0-based) in `line`.
int column_of(const std::string& line, int k) {
  int col = 1;
  for (int i = 0; i < k; ++i) col = static_cast<int>(line.find(',', col - 1)) + 2;
  return col;
}

// Item 1: a delayed row's straggler outside 0..ranks-1 (an out-of-bounds write by simulation,
// taken silently in closed form); a negative one is not rank 0.
TEST_F(HostileInput, StragglerOutsideTheRanksIsRefusedWhereItIsRead) {
  for (const std::string bad : {"8", "99", "2147483647", "-1", "2000000000"}) {
    const std::string line = row("1048576", "0.005", bad);
    const std::string csv = write("runs.csv", kHeader + row("1048576", "0.005", "7") + line);
    const std::string where =
        csv + ":3:" + std::to_string(column_of(line, 6)) + ": column straggler: " + bad +
        " is outside [0, 7]";
    for (const std::string mode : {"--topology-kind shared_device", "--by-simulation", ""}) {
      const CommandResult r = run("calibrate " + csv + " " + mode + " -o fit.yaml");
      EXPECT_EQ(r.rc, 1) << bad << " " << mode << "\n" << r.err;
      EXPECT_TRUE(contains(r.err, where)) << bad << " " << mode << "\n" << r.err;
      EXPECT_FALSE(fs::exists(path("fit.yaml")));
    }
  }
}

// Item 8: absurd rows (2^64-1 bytes, 1e300 s, iteration -5) are no measurement to fit.
TEST_F(HostileInput, AbsurdRowsAreRefusedNotFittedToConvergence) {
  struct Case {
    std::string row, expect;
  };
  const std::vector<Case> cases = {
      {row("18446744073709551615", "0", ""),
       "column bytes: 18446744073709551615 is outside [1, 1125899906842624]"},
      {row("1048576", "0", "", "0", "1e300"), "column time_s: 1e300 is outside [0, 1e6]"},
      {row("1048576", "0", "", "-5"), "column iteration: -5 is outside [0, 2147483647]"}};
  for (const Case& c : cases) {
    const std::string csv = write("runs.csv", kHeader + row("1048576", "0", "") + c.row);
    for (const std::string mode : {"--topology-kind shared_device", ""}) {
      const CommandResult r = run("calibrate " + csv + " " + mode + " -o fit.yaml");
      EXPECT_EQ(r.rc, 1) << c.row << mode << "\n" << r.out << r.err;
      EXPECT_TRUE(contains(r.err, csv + ":3:")) << r.err;
      EXPECT_TRUE(contains(r.err, c.expect)) << r.err;
      EXPECT_FALSE(contains(r.out, "converged")) << r.out;
      EXPECT_FALSE(fs::exists(path("fit.yaml")));
    }
  }
}

// Item 9: a column given twice is ambiguous, in result CSVs (both fits) and sweeps.
TEST_F(HostileInput, ColumnGivenTwiceIsRefused) {
  const std::string csv = write("runs.csv", std::string(kHeader).insert(
                                                std::string(kHeader).size() - 1, ",time_s") +
                                                "measured,ring,8,1048576,float32,0,,0,0.0051,8."
                                                "2e-05,0.79,1.39,0,dev,2026-11-26T02:32:03Z,2.28."
                                                "9,,,0,0.5\n");
  for (const std::string mode : {"--topology-kind shared_device", ""}) {
    const CommandResult r = run("calibrate " + csv + " " + mode);
    EXPECT_EQ(r.rc, 1) << mode << r.err;
    EXPECT_TRUE(contains(r.err, "column 'time_s' is given twice (columns 9 and 20)")) << r.err;
    EXPECT_TRUE(contains(r.err, csv + ":1:")) << r.err;
  }
  const std::string sweep = write("sweep.csv", "bytes,seconds,seconds\n1024,1e-5,2e-5\n");
  const CommandResult r = run("calibrate " + sweep);
  EXPECT_EQ(r.rc, 1) << r.err;
  EXPECT_TRUE(contains(r.err, sweep + ":1:15: column 'seconds' is given twice")) << r.err;
}

// Item 9: validate --timeline takes every iteration's rows once, with the same rows per
// iteration, and no round-less row beside rounds.
TEST_F(HostileInput, TimelineWithMissingDuplicatedOrRoundlessRowsIsRefused) {
  const std::string topology =
      write("switch.yaml", "kind: switch\nranks: 8\nbandwidth: 100GB/s\nlatency: 5us\n");
  std::vector<std::string> lines;
  {
    std::ifstream in(data_path("calibration/h200_tl_ring_d0.csv"));
    for (std::string l; std::getline(in, l);) lines.push_back(l);
  }
  int files = 0;
  auto with = [&](auto&& edit) {
    std::vector<std::string> v = lines;
    edit(v);
    std::string text;
    for (const std::string& l : v) text += l + "\n";
    return write("tl" + std::to_string(++files) + ".csv", text);
  };
  struct Case {
    std::string file, expect;
  };
  const std::vector<Case> cases = {
      // line 3 (iteration 0, rank 0, round 1) twice
      {with([](auto& v) { v.insert(v.begin() + 3, v[2]); }),
       "tl1.csv:4: iteration 0, rank 0, round 1 is given twice (also on line 3)"},
      // iteration 0's rank 0 round 1 dropped (the other iterations keep it)
      {with([](auto& v) { v.erase(v.begin() + 2); }),
       "iteration 0 has no row for rank 0, round 1, which iteration 1 has"},
      // a round-less row for rank 0 beside its rounds
      {with([](auto& v) {
         v.push_back("ring,8,65536,0,0,0.000000000,0.000096512,0.000001536,,");
       }),
       "rank 0 has rows without a round"}};
  for (const Case& c : cases) {
    const CommandResult r =
        run("validate --timeline " + c.file + " --topology " + topology + " -o rounds.csv");
    EXPECT_EQ(r.rc, 1) << c.expect << "\n" << r.err;
    EXPECT_TRUE(contains(r.err, c.expect)) << r.err;
    EXPECT_FALSE(fs::exists(path("rounds.csv")));
  }
}

// Item 2: the MSCCL export's size summary near the top of int64 (it doubled an element count
// past it, forever, or printed a size below the minimum).
TEST_F(HostileInput, MscclSizeSummaryNearTheTopOfInt64) {
  for (const std::string min : {"5000000TiB", "4611686018427387905B"}) {
    const CommandResult r =
        run("schedule ring -r 8 --format msccl-xml --min-bytes " + min + " -o ring.xml");
    ASSERT_EQ(r.rc, 0) << min << "\n" << r.err;
    EXPECT_TRUE(contains(r.out + r.err, "fp32: no power-of-two element count in that range"))
        << r.out << r.err;
    EXPECT_FALSE(contains(r.out + r.err, "every power-of-two element count from")) << r.err;
    EXPECT_TRUE(fs::exists(path("ring.xml")));
  }
}

// Item 3: a SimGrid cluster's radical at the top of int: hosts up to INT_MAX are read (the
// loop `n <= hi` never ended there), a range past 1024 hosts is refused, not allocated.
TEST_F(HostileInput, SimgridRadicalAtTheTopOfInt) {
  for (const std::string radical : {"2147483646-2147483647", "0-2147483647"}) {
    write("p.xml",
          "<?xml version='1.0'?>\n<platform version=\"4.1\">\n<cluster id=\"c\" prefix=\"h\" "
          "suffix=\"\" radical=\"" +
              radical + "\" speed=\"1Gf\" bw=\"10GBps\" lat=\"1us\"/>\n</platform>\n");
    write("sim.yaml",
          "topology: {simgrid: p.xml}\ncollective: {algorithm: ring, size: 1MiB}\n"
          "iterations: 1\n");
    const CommandResult r = run("simulate sim.yaml");
    if (radical == "0-2147483647") {
      EXPECT_EQ(r.rc, 1) << radical << "\n" << r.err;
      EXPECT_TRUE(contains(r.err, "at most 1024 hosts in a cluster")) << r.err;
      EXPECT_TRUE(contains(r.err, "p.xml:3")) << r.err;
    } else {
      EXPECT_EQ(r.rc, 0) << radical << "\n" << r.err;  // two hosts: h2147483646, h2147483647
    }
  }
}

// Item 4: a path inside a file is relative to that file: advise --delays' sample file is read
// beside the delays YAML, whatever the working directory holds.
TEST_F(HostileInput, AdviseDelaysSampleFileIsRelativeToTheDelaysFile) {
  write("model/delays.yaml", "base: {distribution: empirical, file: samples.csv}\n");
  write("model/samples.csv", "delay_s\n0.001\n0.002\n0.003\n");
  write("work/samples.csv", "delay_s\n50\n");  // a decoy in the working directory
  const std::string args =
      "advise --topology switch:100GB/s:3us --ranks 8 --size 1MiB --algorithms ring,rhd "
      "--iterations 4 --delays ../model/delays.yaml";
  const CommandResult r = run(args, path("work"));
  ASSERT_EQ(r.rc, 0) << r.err;
  // The decoy's 50 s delays would dominate every mean; the model's are a few ms.
  EXPECT_FALSE(contains(r.out, " s ")) << r.out;
  // From the folder above, with no samples.csv in it.
  std::string from_above = args;
  from_above.replace(from_above.find("../model"), 8, "model");
  const CommandResult elsewhere = run(from_above);
  EXPECT_EQ(elsewhere.rc, 0) << elsewhere.err;
}

// Item 5: profiler traces with steps far apart: the gap is named before anything of that
// size is allocated.
TEST_F(HostileInput, ProfilerStepsFarApartAreAGapNotAnAllocation) {
  auto trace = [&](int rank, const std::vector<long long>& steps) {
    nlohmann::json events = nlohmann::json::array();
    for (long long s : steps)
      events.push_back({{"ph", "X"}, {"name", "ProfilerStep#" + std::to_string(s)}, {"ts", 1},
                        {"dur", 1000}});
    return nlohmann::json{{"distributedInfo", {{"rank", rank}}}, {"traceEvents", events}}.dump();
  };
  for (const long long last : {2147483647LL, 1000000000LL}) {
    const std::string a = write("r0.json", trace(0, {0, last}));
    const std::string b = write("r1.json", trace(1, {0, last}));
    const CommandResult r = run("fit-delays " + a + " " + b + " -o fit.yaml");
    EXPECT_EQ(r.rc, 1) << last << "\n" << r.err;
    EXPECT_TRUE(contains(r.err, a + ": no ProfilerStep#1 (rank 0; steps run 0.." +
                                    std::to_string(last)))
        << r.err;
    EXPECT_FALSE(fs::exists(path("fit.yaml")));
  }
}

const std::string kJob = R"(topology: {kind: switch, ranks: 4, bandwidth: 100GB/s, latency: 3us}
algorithms: [ring]
workload:
  bucket_cap: 8MiB
  model:
    layers:
      - {name: block, count: 16, params: PARAMS, forward: 1ms}
steps: STEPS
)";
std::string job(const std::string& params, const std::string& steps,
                const std::string& ranks = "4") {
  std::string y = kJob;
  y.replace(y.find("PARAMS"), 6, params);
  y.replace(y.find("STEPS"), 5, steps);
  y.replace(y.find("ranks: 4"), 8, "ranks: " + ranks);
  return y;
}

// Item 6: 16 layers of 2^58 parameters are 2^66 gradient bytes: refused, not wrapped to 0.
TEST_F(HostileInput, TrainGradientBytesPast64BitsAreRefused) {
  const std::string yaml = write("job.yaml", job("288230376151711744", "10"));
  const CommandResult r = run("train " + yaml + " --steps-csv steps.csv");
  EXPECT_EQ(r.rc, 1) << r.out << r.err;
  EXPECT_TRUE(contains(r.err, yaml + ":6:5: workload.model:")) << r.err;
  EXPECT_TRUE(contains(r.err, "the model's gradients do not fit in 64 bits")) << r.err;
  EXPECT_FALSE(contains(r.out, "0.000 GB")) << r.out;
  EXPECT_FALSE(fs::exists(path("steps.csv")));
}

// Item 7: train is under the time guard of run and simulate: 10^7 steps on 64 ranks are refused
// with the estimate before anything starts; --max-time raises the limit.
TEST_F(HostileInput, TrainIsUnderTheTimeGuard) {
  const std::string yaml = write("job.yaml", job("3000000", "10000000", "64"));
  const CommandResult r = run("train " + yaml + " --steps-csv steps.csv");
  EXPECT_EQ(r.rc, 3) << r.out << r.err;
  EXPECT_TRUE(contains(r.err, "the training job: 10000000 steps")) << r.err;
  EXPECT_TRUE(contains(r.err, "--max-time")) << r.err;
  EXPECT_FALSE(fs::exists(path("steps.csv")));
  // A small job runs under the default limit, and is refused under a tiny one.
  const std::string small = write("small.yaml", job("3000000", "20"));
  EXPECT_EQ(run("train " + small).rc, 0);
  const CommandResult tight = run("train " + small + " --steps 1000000 --max-time 1s");
  EXPECT_EQ(tight.rc, 3) << tight.err;
  EXPECT_TRUE(contains(tight.err, "(--max-time 1s)")) << tight.err;
}

// Item 10: flags that were accepted and ignored or wrapped.
TEST_F(HostileInput, FlagsThatWouldBeIgnoredOrWrappedAreRefused) {
  const std::string runs = write("runs.csv", kHeader + row("1048576", "0", "") +
                                                 row("4194304", "0", "") +
                                                 row("16777216", "0", ""));
  // Shipped measurements that fit (without the fixes, each case below ran the fit and wrote
  // out.yaml).
  const std::string ring =
      std::string(STRAGGLESIM_SOURCE_DIR) + "/data/measured/h200/2026-11-26/graph-d0-ring.csv";
  struct Case {
    std::string args, expect;
  };
  const std::vector<Case> cases = {
      {"calibrate " + ring +
           " --topology-kind shared_device --algorithm-option stragglar:straggler=3",
       "--algorithm-option stragglar:straggler=3: the straggler comes from the rows' straggler "
       "column"},
      {"calibrate " + ring +
           " --topology-kind shared_device --algorithm-option hierarchical:gpus_per_node=4 "
           "--algorithm-option hierarchical:gpus_per_node=2",
       "hierarchical's gpus_per_node is given twice"},
      {"calibrate " + ring + " --topology-kind shared_device --holdout ranks=nan",
       "--holdout 'ranks=nan': 'nan' is not a whole number in [1, 65536]"},
      {"calibrate " + ring + " --topology-kind shared_device --seed -1",
       "--seed: must be a whole number from 0 to 9223372036854775807, got '-1'"},
      {"calibrate " + runs + " --fix copy_factor=2", "--fix: an option of calibration by simulation"},
      {"calibrate " + runs + " --holdout 0.5", "--holdout: an option of calibration by simulation"},
      {"calibrate " + ring + " --topology-kind shared_device --piecewise 4MiB",
       "--piecewise: an option of the closed-form fit"},
      {"calibrate " + ring + " --topology-kind shared_device --fit-gamma",
       "--fit-gamma: an option of the closed-form fit"},
      {"train " + std::string(STRAGGLESIM_SOURCE_DIR) + "/configs/train/gpt2_medium_64gpu.yaml" +
           " --seed 99999999999999999999",
       "--seed: must be a whole number from 0 to 9223372036854775807, got "
       "'99999999999999999999'"},
  };
  for (const Case& c : cases) {
    const bool train = c.args.rfind("train ", 0) == 0;
    const CommandResult r = run(c.args + (train ? " --steps 2 --steps-csv out.yaml" : " -o out.yaml"));
    EXPECT_TRUE(r.rc == 1 || r.rc == 2) << c.args << "\n" << r.err;
    EXPECT_TRUE(contains(r.err, c.expect)) << c.args << "\n" << r.err;
    EXPECT_FALSE(fs::exists(path("out.yaml"))) << c.args;
  }
}

// Item 10: ecmp on a shared_device topology, unknown provenance keys, NUL bytes and duplicate
// keys in nccl-tests logs.
TEST_F(HostileInput, TopologyAndLogContentThatWouldBeIgnoredIsRefused) {
  const std::string device =
      "kind: shared_device\nranks: 8\nmemory_bandwidth: 4TB/s\ncopy_latency: 3us\n"
      "apply_latency: 3us\n";
  write("ecmp.yaml", device + "ecmp: true\n");
  write("sim.yaml", "topology: {file: TOPO}\ncollective: {algorithm: ring, size: 1MiB}\n");
  auto simulate = [&](const std::string& topology) {
    std::string y = slurp(path("sim.yaml"));
    y.replace(y.find("TOPO"), 4, topology);
    write("run.yaml", y);
    return run("simulate run.yaml");
  };
  CommandResult r = simulate("ecmp.yaml");
  EXPECT_EQ(r.rc, 1) << r.err;
  EXPECT_TRUE(contains(r.err, "ecmp.yaml:6:7: ecmp: a shared_device topology has no network routes"))
      << r.err;
  write("prov.yaml", "kind: switch\nranks: 8\nbandwidth: 100GB/s\nlatency: 3us\n"
                     "provenance: {machine: m, gama: 1ns/B}\n");
  r = simulate("prov.yaml");
  EXPECT_EQ(r.rc, 1) << r.err;
  EXPECT_TRUE(contains(r.err, "prov.yaml:5:")) << r.err;
  EXPECT_TRUE(contains(r.err, "gama")) << r.err;
  // Item 12: a factor inside [0, 1000] whose link bandwidth would be infinite names itself.
  write("tiny.yaml", device + "copy_factor: 1e-320\n");
  r = simulate("tiny.yaml");
  EXPECT_EQ(r.rc, 1) << r.err;
  EXPECT_TRUE(contains(r.err, "tiny.yaml:6:14: copy_factor: copy_factor must be 0 (no such "
                              "copy) or in [0.001, 1000]"))
      << r.err;
  EXPECT_FALSE(contains(r.err, "infGB/s")) << r.err;

  std::string log = slurp(data_path("calibration/nccl_tests_ring8.txt"));
  ASSERT_FALSE(log.empty());
  const std::size_t second_line = log.find('\n') + 1;
  log.insert(second_line + 3, std::string(1, '\0'));
  const std::string nul = write("nul.log", log);
  r = run("calibrate " + nul + " -o out.yaml");
  EXPECT_EQ(r.rc, 1) << r.err;
  EXPECT_TRUE(contains(r.err, nul + ":2:4: a NUL byte")) << r.err;
  EXPECT_FALSE(fs::exists(path("out.yaml")));
  std::string json = slurp(data_path("calibration/nccl_tests_ring8.json"));
  ASSERT_NE(json.find("\"ngpus\":8,"), std::string::npos);
  json.replace(json.find("\"ngpus\":8,"), 10, "\"ngpus\":8,\"ngpus\":4,");
  const std::string twice = write("twice.json", json);
  r = run("calibrate " + twice + " -o out.yaml");
  EXPECT_EQ(r.rc, 1) << r.err;
  EXPECT_TRUE(contains(r.err, twice + ": duplicate key \"ngpus\"")) << r.err;
  EXPECT_FALSE(fs::exists(path("out.yaml")));
}

// Item 11: run --force does not follow a journal that is a symbolic link out of the folder.
TEST_F(HostileInput, RunForceDoesNotFollowASymlinkedJournal) {
  write("exp.yaml",
        "name: tiny\ntopology: {kind: switch, ranks: 4, bandwidth: 100GB/s, latency: 3us}\n"
        "algorithms: [ring]\nsize: 1MiB\niterations: 2\n");
  const std::string victim = write("victim.txt", "precious\n");
  fs::create_directories(path("out"));
  fs::create_symlink(victim, path("out/journal.jsonl"));
  const CommandResult r = run("run exp.yaml -o out --force --no-plots --quiet");
  EXPECT_EQ(r.rc, 1) << r.err;
  EXPECT_TRUE(contains(r.err, "journal.jsonl: is a symbolic link")) << r.err;
  EXPECT_EQ(slurp(victim), "precious\n");
  EXPECT_TRUE(fs::is_symlink(path("out/journal.jsonl")));
  EXPECT_FALSE(fs::exists(path("out/results.csv")));
}


// Profiler traces: a key given twice (nlohmann keeps the last) and a number past a double are
// bad input naming the file, not a silent choice or an internal error.
TEST_F(HostileInput, ProfilerTraceDuplicateKeyOrHugeNumberIsRefused) {
  const std::string steps =
      R"("traceEvents": [{"ph": "X", "name": "ProfilerStep#0", "ts": 1, "dur": 1000},
                         {"ph": "X", "name": "ProfilerStep#1", "ts": 2, "dur": 1200}])";
  const std::string ok = write("r1.json", R"({"distributedInfo": {"rank": 1}, )" + steps + "}");
  struct Case {
    std::string text, expect;
  };
  const std::vector<Case> cases = {
      {R"({"distributedInfo": {"rank": 0, "rank": 1}, )" + steps + "}", "duplicate key \"rank\""},
      {R"({"distributedInfo": {"rank": 0}, "traceEvents": [{"name": "ProfilerStep#0", "dur": 5,)"
       R"( "dur": 1000}, {"name": "ProfilerStep#1", "dur": 1000}]})",
       "duplicate key \"dur\""},
      {R"({"distributedInfo": {"rank": 0}, )"
       R"("traceEvents": [{"name": "ProfilerStep#0", "dur": 1e400}]})",
       "not a JSON profiler trace"},
  };
  for (const Case& c : cases) {
    const std::string bad = write("r0.json", c.text);
    const CommandResult r = run("fit-delays " + bad + " " + ok + " -o fit.yaml");
    EXPECT_EQ(r.rc, 1) << c.text << "\n" << r.err;
    EXPECT_TRUE(contains(r.err, bad + ": " + c.expect)) << r.err;
    EXPECT_FALSE(fs::exists(path("fit.yaml")));
  }
}

// merge reloads the experiment the journals were run from (their absolute path), not a file of
// the same relative name in merge's working directory; a missing one is named.
TEST_F(HostileInput, MergeReadsTheJournalsExperimentNotAFileOfThatNameHere) {
  const std::string yaml =
      "name: tiny\ntopology: {kind: switch, ranks: 4, bandwidth: 100GB/s, latency: 3us}\n"
      "algorithms: [ring, rhd]\nsize: 1MiB\niterations: 2\n";
  write("a/exp.yaml", yaml);
  for (const std::string shard : {"1", "2"}) {
    const CommandResult r =
        run("run exp.yaml --shard " + shard + "/2 -o s" + shard + " --no-plots --quiet", path("a"));
    ASSERT_EQ(r.rc, 0) << r.err;
  }
  // Another experiment of that name beside merge (another algorithm list).
  std::string other = yaml;
  other.replace(other.find("ring, rhd"), 9, "ring, direct");
  write("b/exp.yaml", other);
  CommandResult m = run("merge ../a/s1 ../a/s2 -o m --no-plots", path("b"));
  ASSERT_EQ(m.rc, 0) << m.err;
  EXPECT_TRUE(contains(m.out, "(2 runs from 2 shards)")) << m.out;
  EXPECT_TRUE(contains(slurp(path("b/m/results.csv")), "rhd")) << slurp(path("b/m/results.csv"));
  fs::remove(path("a/exp.yaml"));
  m = run("merge ../a/s1 ../a/s2 -o m2 --no-plots", path("b"));
  EXPECT_EQ(m.rc, 1) << m.err;
  EXPECT_TRUE(contains(m.err, "../a/s1/journal.jsonl: the experiment it was run from, " +
                                  fs::canonical(path("a")).string() + "/exp.yaml, is not there"))
      << m.err;
  EXPECT_FALSE(fs::exists(path("b/m2/results.csv")));
}

// ecmp: true where every pair of GPUs has one route (switch, fully_connected) would do nothing.
TEST_F(HostileInput, EcmpWhereThereIsOneRoutePerPairIsRefused) {
  for (const std::string kind : {"switch", "fully_connected"}) {
    write("sim.yaml", "collective: {algorithm: ring, size: 1MiB}\ntopology:\n  kind: " + kind +
                          "\n  ranks: 8\n  bandwidth: 100GB/s\n  latency: 3us\n  ecmp: true\n");
    const CommandResult r = run("simulate sim.yaml");
    EXPECT_EQ(r.rc, 1) << kind << "\n" << r.err;
    EXPECT_TRUE(contains(r.err, "sim.yaml:7:9: topology.ecmp: a " + kind +
                                    " topology has one shortest route between any two GPUs"))
        << r.err;
  }
  // Where routes can tie (a ring of 8: two ways to the rank opposite) it is taken.
  write("ring.yaml", "collective: {algorithm: ring, size: 1MiB}\ntopology: {kind: ring, ranks: 8, "
                     "bandwidth: 100GB/s, latency: 3us, ecmp: true}\nnetwork: {model: flow}\n");
  EXPECT_EQ(run("simulate ring.yaml").rc, 0);
}

// Calibration by simulation is under the time guard: its estimate (evaluations x simulations)
// is checked against --max-time before the fit starts.
TEST_F(HostileInput, CalibrationBySimulationIsUnderTheTimeGuard) {
  const std::string ring =
      std::string(STRAGGLESIM_SOURCE_DIR) + "/data/measured/h200/2026-11-26/graph-d0-ring.csv";
  // 8 distinct simulations of a ring on 8 ranks on the shared device, about 0.44 ms an
  // evaluation: 10^7 evaluations are estimated at 73 minutes, 10^5 at 44 s.
  CommandResult r = run("calibrate " + ring +
                        " --topology-kind shared_device --max-evaluations 10000000 --max-time "
                        "10min -o fit.yaml");
  EXPECT_EQ(r.rc, 3) << r.out << r.err;
  EXPECT_TRUE(contains(r.err, "the fit by simulation (up to 10000000 evaluations of 8 distinct "
                              "simulations, 1 thread) would take about"))
      << r.err;
  EXPECT_TRUE(contains(r.err, "(--max-time 10min)")) << r.err;
  EXPECT_EQ(r.out, "");
  EXPECT_FALSE(fs::exists(path("fit.yaml")));
  r = run("calibrate " + ring +
          " --topology-kind shared_device --max-evaluations 100000 --max-time 1s -o fit.yaml");
  EXPECT_EQ(r.rc, 3) << r.out << r.err;
  EXPECT_TRUE(contains(r.err, "(--max-time 1s)")) << r.err;
  // A closed-form fit has nothing to guard: the flag would be ignored there.
  r = run("calibrate " + ring + " --max-time 2h -o fit.yaml");
  EXPECT_EQ(r.rc, 1) << r.err;
  EXPECT_TRUE(contains(r.err, "--max-time: an option of calibration by simulation")) << r.err;
  EXPECT_FALSE(fs::exists(path("fit.yaml")));
}

// Found by fuzz_training_config (fuzz/corpus/training_config/finding_yaml_*): yaml-cpp 0.7's
// LoadAll answers a ',' at the top level with a null document and never moves past it, so every
// YAML reader (simulate, run, train, topologies) collected null documents until memory ran out.
TEST_F(HostileInput, YamlTokenThatStartsNoValueIsRefusedNotLoopedOn) {
  write("comma.yaml", ",\n");
  CommandResult r = run("train comma.yaml");
  EXPECT_EQ(r.rc, 1) << r.err;
  EXPECT_TRUE(contains(r.err, "comma.yaml:1:1: malformed YAML: ',' cannot start a value here"))
      << r.err;
  write("second.yaml", "iterations: 10\n---\n,\n");
  r = run("simulate second.yaml");
  EXPECT_EQ(r.rc, 1) << r.err;
  EXPECT_TRUE(contains(r.err, "second.yaml:3:1: malformed YAML: ',' cannot start a value here"))
      << r.err;
}

// Found by fuzz_calibration_sim (fuzz/corpus/calibration_sim/finding_shared_device_time_estimate.csv):
// a shared_device simulation costs the device's operations per transfer, growing with the ranks
// (resource_check.hpp), not the alpha-beta pass's 40 ns. Timed as alpha-beta, a ring on 628
// ranks was estimated at 0.1 s and ran for 10 s past --max-time 1s.
TEST_F(HostileInput, SharedDeviceFitIsTimedAsTheDevice) {
  std::string csv =
      "source,algorithm,ranks,bytes,dtype,delay_s,straggler,iteration,time_s,"
      "after_last_arrival_s,algbw_GBps,busbw_GBps,wrong,device,timestamp\n";
  for (const char* rb : {"4,1048576", "4,16777216", "4,268435456", "2,16777216", "3,16777216",
                         "628,4435456"}) {
    csv += std::string("measured,ring,") + rb +
           ",float32,0,,0,4.1e-03,4.1e-03,22,34,0,box,2025-06-01T12:00:00Z\n";
  }
  write("runs.csv", csv);
  const CommandResult r = run(
      "calibrate runs.csv --topology-kind shared_device --max-evaluations 3 --max-time 1s "
      "-o fit.yaml");
  EXPECT_EQ(r.rc, 3) << r.out << r.err;
  EXPECT_TRUE(contains(r.err, "the fit by simulation (up to 3 evaluations of 6 distinct "
                              "simulations, 1 thread) would take about"))
      << r.err;
  EXPECT_TRUE(contains(r.err, "(--max-time 1s)")) << r.err;
  EXPECT_EQ(r.out, "");
  EXPECT_FALSE(fs::exists(path("fit.yaml")));
}


// The numeric-flag sweep (issue 42, "every numeric flag"): values past an int, negatives into
// unsigned, and flags that would be accepted and ignored, each refused naming the flag.
TEST_F(HostileInput, NumericFlagSweepRefusals) {
  const std::string runs = data_path("calibration/ring4_measured.csv");
  write("s.yaml", "topology: {kind: switch, ranks: 4, bandwidth: 100GB/s, latency: 3us}\n"
                  "collective: {algorithm: ring, size: 1MiB}\niterations: 3\n");
  write("t4.yaml", "kind: switch\nranks: 4\nbandwidth: 100GB/s\nlatency: 3us\n");
  write("exp.yaml", "name: tiny\ntopology: {kind: switch, ranks: 4, bandwidth: 100GB/s, "
                    "latency: 3us}\nalgorithms: [ring, rhd]\nsize: 1MiB\niterations: 2\n");
  const std::string advise =
      "advise --topology switch:100GB/s:3us -r 8 --size 1MiB -n 4 --algorithms ring,rhd ";
  struct Case {
    std::string args;
    int rc;
    std::string expect;
  };
  const std::vector<Case> cases = {
      {"lower ring -r 4 -b 1MiB --align -1", 2,
       "--align: must be a whole number of bytes (a power of two), got '-1'"},
      {"lower ring -r 4 -b 1MiB --align 99999999999999999999", 2,
       "--align: must be a whole number of bytes (a power of two), got '99999999999999999999'"},
      {"simulate s.yaml --trace out.json --trace-iteration 99999999999", 2,
       "--trace-iteration: must be a whole number from 0 to 2147483647, got '99999999999'"},
      {"simulate s.yaml --trace out.json --trace-links -1", 2,
       "--trace-links: must be >= 0, got -1"},
      {"schedule stragglar -r 4 --straggler 2147483648 -o out.json", 2,
       "--straggler: must be a whole number from 0 to 2147483647, got '2147483648'"},
      {"lower stragglar -r 4 -b 1MiB --straggler 1.5 -o out.json", 2,
       "--straggler: must be a whole number from 0 to 2147483647, got '1.5'"},
      {"calibrate " + runs + " --piece 3", 1,
       "--piece 3: picks one of the fits of --piecewise, which is not given"},
      {"calibrate " + runs + " --log-ranks 8", 1,
       "--log-ranks 8: " + runs + " holds collective runs"},
      {"calibrate " + runs + " --machine lab", 1, "--machine: says what -o writes"},
      {"calibrate " + runs + " -r 8", 1, "--ranks: says what -o writes"},
      {"calibrate " + runs + " --topology-kind ring", 1, "--topology-kind: says what -o writes"},
      {"calibrate " + runs + " --gamma -1ns/B -o out.json", 1, "--gamma: invalid per-byte cost"},
      {"validate " + runs + " --topology t4.yaml --gamma -1ns/B -o out.json", 1,
       "--gamma: invalid per-byte cost"},
      {advise + "--straggler-rank 3", 2,
       "--straggler-rank, --persistence and --probability describe the straggler of --delay-dist"},
      {advise + "--persistence 0.5", 2, "describe the straggler of --delay-dist"},
      {advise + "--gamma -1ns/B", 1, "stragglesim: error: --gamma: invalid per-byte cost"},
      {advise + "--trace out.json --trace-iteration 9", 1,
       "--trace-iteration 9 is past the last iteration (3)"},
      {advise + "--trace out.json --trace-links 3", 1,
       "--trace-links 3: link utilization counters need the flow model"},
      {advise + "--threads 2 --jobs 2", 2,
       "--threads 2: the threads of one run, used only with --jobs 1"},
      {"run exp.yaml -o out.json --threads 4 --jobs 2 --no-plots", 2,
       "--threads 4: the threads of one run, used only with --jobs 1"},
      {"run exp.yaml -o out.json --plot-format svg,svg", 2, "'svg' is listed twice"},
  };
  for (const Case& c : cases) {
    const CommandResult r = run(c.args);
    EXPECT_EQ(r.rc, c.rc) << c.args << "\n" << r.err;
    EXPECT_TRUE(contains(r.err, c.expect)) << c.args << "\n" << r.err;
    EXPECT_FALSE(contains(r.err, "Could not convert")) << c.args << "\n" << r.err;
    EXPECT_FALSE(contains(r.err, "179769313")) << c.args << "\n" << r.err;  // DBL_MAX's digits
    // Refused before any work: nothing printed, nothing written.
    EXPECT_EQ(r.out, "") << c.args;
    EXPECT_FALSE(fs::exists(path("out.json"))) << c.args;
  }
}

// merge: --plot-format with --no-plots is refused; a refused merge leaves no output folder.
TEST_F(HostileInput, MergeRefusesIgnoredFlagsAndLeavesNoFolderWhenRefused) {
  write("exp.yaml", "name: tiny\ntopology: {kind: switch, ranks: 4, bandwidth: 100GB/s, "
                    "latency: 3us}\nalgorithms: [ring, rhd]\nsize: 1MiB\niterations: 2\n");
  for (const std::string shard : {"1", "2"})
    ASSERT_EQ(run("run exp.yaml --shard " + shard + "/2 -o s" + shard + " --no-plots -q").rc, 0);
  CommandResult r = run("merge s1 s2 -o m --no-plots --plot-format svg");
  EXPECT_EQ(r.rc, 2) << r.err;
  EXPECT_TRUE(contains(r.err, "--no-plots excludes --plot-format")) << r.err;
  EXPECT_FALSE(fs::exists(path("m")));
  r = run("merge s1 s1 -o m --no-plots");
  EXPECT_EQ(r.rc, 1) << r.err;
  EXPECT_TRUE(contains(r.err, "shard 1/2 is given twice")) << r.err;
  EXPECT_FALSE(fs::exists(path("m")));
  EXPECT_EQ(run("merge s1 s2 -o m --no-plots").rc, 0);
  EXPECT_TRUE(fs::exists(path("m/results.csv")));
}

}  // namespace
}  // namespace ssim::testing
