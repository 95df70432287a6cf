// `stragglesim-gpu` as a user runs it, linked against the CPU stand-in (emulator.hpp) instead
// of CUDA and NCCL: 8 emulated GPUs (SSIM_EMU_DEVICES), so the whole driver runs in CI: the
// table, the result CSV, --timeline, both launch modes and the direct, single-GPU and NCCL
// transports.
#include <gtest/gtest.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <fstream>
#include <map>
#include <sstream>
#include <string>
#include <utility>
#include <vector>

#include "schema/result_csv.hpp"
#include "tests/experiments/cli_support.hpp"  // run_cli: STRAGGLESIM_BIN is stragglesim-gpu-emulated

namespace ssim::gpu {
namespace {

using ssim::testing::run_cli;

bool contains(const std::string& text, const std::string& part) {
  return text.find(part) != std::string::npos;
}

std::string temp_path() {
  char path[] = "/tmp/ssim_gpu_emu_XXXXXX";
  const int fd = mkstemp(path);
  close(fd);
  return path;
}

std::vector<std::vector<std::string>> read_csv_cells(const std::string& path) {
  std::ifstream in(path);
  std::vector<std::vector<std::string>> rows;
  std::string line;
  while (std::getline(in, line)) {
    std::vector<std::string> cells;
    std::stringstream ss(line);
    std::string cell;
    while (std::getline(ss, cell, ',')) cells.push_back(cell);
    if (!line.empty() && line.back() == ',') cells.push_back("");
    rows.push_back(cells);
  }
  return rows;
}

// Usage names the program, not the path it was started by (issue 13).
TEST(EmulatedCli, UsageShowsTheProgramName) {
  const auto r = run_cli("--help");
  EXPECT_EQ(r.rc, 0) << r.err;
  EXPECT_TRUE(contains(r.out, "Usage: stragglesim-gpu [OPTIONS]")) << r.out;
  EXPECT_FALSE(contains(r.out, STRAGGLESIM_BIN)) << r.out;
}

// --version answers without a subcommand (issue 43: it was "A subcommand is required").
TEST(EmulatedCli, Version) {
  const auto r = run_cli("--version");
  EXPECT_EQ(r.rc, 0) << r.err;
  EXPECT_EQ(r.out, "stragglesim-gpu " STRAGGLESIM_VERSION "\n");
}

// A near miss of an algorithm's name is named; nccl (the registry's and the driver's) is listed
// once.
TEST(EmulatedCli, UnknownAlgorithmSuggests) {
  const auto r = run_cli("run --algo rign");
  EXPECT_NE(r.rc, 0);
  EXPECT_TRUE(contains(r.err, "unknown algorithm 'rign' (did you mean 'ring'? valid: ring, ")) << r.err;
  EXPECT_TRUE(contains(r.err, ", nccl_tree, nccl)")) << r.err;
  EXPECT_FALSE(contains(r.err, "nccl, nccl")) << r.err;
}

TEST(EmulatedCli, DevicesListsTheEmulatedGpus) {
  const auto r = run_cli("devices");
  EXPECT_EQ(r.rc, 0) << r.err;
  EXPECT_TRUE(contains(r.out, "GPU 7: Emulated GPU")) << r.out;
}

// StragglAR at 8 ranks, 2 sizes x 3 iterations, rank 7 2 ms late.
TEST(EmulatedCli, RunWritesTheTableTheCsvAndTheTimeline) {
  for (const char* launch : {"graph", "eager"}) {
    const std::string csv = temp_path(), timeline = temp_path();
    const auto r = run_cli(std::string("run --algo stragglar --ranks 8 -b 64K -e 256K -f 4 -n 3 "
                                       "-c 3 -w 1 --delay 2ms --launch ") +
                           launch + " --csv " + csv + " --timeline " + timeline);
    ASSERT_EQ(r.rc, 0) << r.err;
    EXPECT_TRUE(contains(r.out, std::string("launch ") + launch)) << r.out;
    EXPECT_TRUE(contains(r.out, "# Out of bounds values : 0 OK")) << r.out;
    std::ifstream in(csv);
    const std::vector<schema::ResultRow> rows = schema::read_result_csv(in, csv);
    ASSERT_EQ(rows.size(), 6u);
    for (const schema::ResultRow& row : rows) {
      EXPECT_EQ(row.wrong, std::optional<std::uint64_t>(0));
      EXPECT_EQ(row.straggler, std::optional<int>(7));
      EXPECT_NEAR(row.delay.value, 0.002, 1e-6);  // measured
      EXPECT_GT(row.time.value, row.delay.value);
      EXPECT_LT(row.after_last_arrival.value, 0.001);
      EXPECT_EQ(row.device, "Emulated GPU x8, direct");  // the default transport
      EXPECT_EQ(row.transport, "direct");
      // Built for rank 7, which the straggler column names: no options to record.
      EXPECT_EQ(row.options, std::optional<std::string>(""));
    }
    const auto cells = read_csv_cells(timeline);
    ASSERT_FALSE(cells.empty());
    EXPECT_EQ(cells[0], (std::vector<std::string>{"algorithm", "ranks", "bytes", "iteration",
                                                  "rank", "arrival_s", "finish_s", "delay_s",
                                                  "round", "round_end_s", "options"}));
    // Every rank of every iteration of both sizes appears; the straggler arrives 2 ms late.
    std::map<std::string, int> seen;
    for (std::size_t i = 1; i < cells.size(); ++i) {
      ASSERT_EQ(cells[i].size(), 11u) << i;
      EXPECT_EQ(cells[i][10], "") << i;  // stragglar built for n-1: the defaults
      seen[cells[i][2] + "/" + cells[i][3] + "/" + cells[i][4]]++;
      if (cells[i][4] == "7") {
        EXPECT_NEAR(std::stod(cells[i][5]), 0.002, 1e-5);
        EXPECT_NEAR(std::stod(cells[i][7]), 0.002, 1e-5);
      } else {
        EXPECT_LT(std::stod(cells[i][7]), 1e-5);  // the start stamp's own time, no delay
      }
      EXPECT_GE(std::stod(cells[i][6]), std::stod(cells[i][9])) << "finish after each round";
    }
    EXPECT_EQ(seen.size(), 2u * 3u * 8u);
    std::remove(csv.c_str());
    std::remove(timeline.c_str());
  }
}

// The options column holds what the generator got: the -O options, and the straggler where
// the straggler column does not say it (no delay, --straggler other than n-1).
TEST(EmulatedCli, RowsAndTimelinesRecordTheOptionsAndTheTransport) {
  struct Case {
    std::string args, options, transport;
  };
  for (const Case& c : std::vector<Case>{
           {"--algo hierarchical -O gpus_per_node=4 -O inter=rhd --transport single-gpu",
            "gpus_per_node=4;inter=rhd", "single-gpu"},
           {"--algo stragglar_hier -O gpus_per_node=4 --straggler 2", "gpus_per_node=4;straggler=2",
            "direct"},
           {"--algo stragglar --straggler 3 --delay 1ms --transport nccl", "", "nccl"},
           {"--algo nccl", "", "nccl"}}) {
    const std::string csv = temp_path(), timeline = temp_path();
    const auto r = run_cli("run " + c.args + " --ranks 8 -b 4K -n 2 -c 1 --csv " + csv +
                           " --timeline " + timeline);
    ASSERT_EQ(r.rc, 0) << c.args << ": " << r.err;
    std::ifstream in(csv);
    const std::vector<schema::ResultRow> rows = schema::read_result_csv(in, csv);
    ASSERT_EQ(rows.size(), 2u) << c.args;
    for (const schema::ResultRow& row : rows) {
      EXPECT_EQ(row.options, std::optional<std::string>(c.options)) << c.args;
      EXPECT_EQ(row.transport, c.transport) << c.args;
    }
    const auto cells = read_csv_cells(timeline);
    ASSERT_GT(cells.size(), 1u);
    // The timeline has no straggler column: a straggler other than n-1 is an option there.
    const std::string timeline_options =
        c.args.find("--straggler 3") != std::string::npos ? "straggler=3" : c.options;
    for (std::size_t i = 1; i < cells.size(); ++i)
      EXPECT_EQ(cells[i].back(), timeline_options) << c.args << " line " << i;
    std::remove(csv.c_str());
    std::remove(timeline.c_str());
  }
}

TEST(EmulatedCli, SingleGpuTransportAndNcclAllReduce) {
  const auto a = run_cli("run --algo dbtree --transport single-gpu --ranks 6 -b 4K -e 16K -n 2");
  EXPECT_EQ(a.rc, 0) << a.err;
  EXPECT_TRUE(contains(a.out, "# Out of bounds values : 0 OK")) << a.out;
  const auto b = run_cli("run --algo nccl --ranks 4 -b 1M -n 2 --delay 1ms -d float64");
  EXPECT_EQ(b.rc, 0) << b.err;
  EXPECT_TRUE(contains(b.out, "# Out of bounds values : 0 OK")) << b.out;
  const auto c = run_cli("run --algo stragglar --ranks 7 --straggler 0 --phase1 nccl-rs -b 64K");
  EXPECT_EQ(c.rc, 0) << c.err;
}

// --copy kernel: the single-GPU transport copies receives into scratch with launch_copy
// instead of cudaMemcpyAsync (no slowdown at odd chunk strides on a real GPU,
// data/measured/h200/2026-11-26-copy): every checked element still exact, odd sizes too, the
// header and the rows say so; other transports and unknown modes are refused, nothing written.
TEST(EmulatedCli, SingleGpuKernelCopies) {
  const std::string csv = temp_path();
  std::remove(csv.c_str());
  for (const char* algo : {"ring", "rhd", "stragglar", "direct_rs_ag", "dbtree"}) {
    const auto r = run_cli(std::string("run --algo ") + algo +
                           " --transport single-gpu --copy kernel --ranks 8 -b 65540 -e 1M -f 4 "
                           "-n 2 -c 2 --csv " +
                           csv);
    ASSERT_EQ(r.rc, 0) << algo << r.err;
    EXPECT_TRUE(contains(r.out, "# Out of bounds values : 0 OK")) << algo << r.out;
    EXPECT_TRUE(contains(r.out, ", copy kernel,")) << r.out;
    const auto rows = read_csv_cells(csv);
    ASSERT_GE(rows.size(), 2u);
    EXPECT_EQ(rows[1].back(), "single-gpu+kernel-copy") << algo;
    std::remove(csv.c_str());
  }
  const auto memcpy = run_cli("run --algo ring --transport single-gpu --ranks 4 -b 64K -n 1");
  EXPECT_TRUE(contains(memcpy.out, ", copy memcpy,")) << memcpy.out;
  const auto direct = run_cli(
      "run --algo ring --transport direct --copy kernel --ranks 4 -b 64K "
      "-n 1 --csv " +
      csv);
  EXPECT_EQ(direct.rc, 1);
  EXPECT_TRUE(contains(direct.err, "--copy kernel: only the single-gpu transport")) << direct.err;
  const auto bogus = run_cli(
      "run --algo ring --transport single-gpu --copy dma --ranks 4 -b 64K "
      "-n 1 --csv " +
      csv);
  EXPECT_EQ(bogus.rc, 1);
  EXPECT_TRUE(contains(bogus.err, "unknown copy mode 'dma' (expected memcpy or kernel)"))
      << bogus.err;
  EXPECT_FALSE(std::ifstream(csv).good());
}

// Without --transport a schedule runs on the direct transport (rank r on emulated GPU r mod 8,
// peer access): the header and the CSV's device column say so; --algo nccl still gets NCCL.
TEST(EmulatedCli, DirectIsTheDefaultTransportForSchedules) {
  const std::string csv = temp_path();
  const auto a = run_cli("run --algo rhd --ranks 8 -b 4K -e 16K -n 2 --csv " + csv);
  EXPECT_EQ(a.rc, 0) << a.err;
  EXPECT_TRUE(contains(a.out, "# Out of bounds values : 0 OK")) << a.out;
  EXPECT_TRUE(contains(a.out, "direct")) << a.out;
  std::ifstream in(csv);
  const std::vector<schema::ResultRow> rows = schema::read_result_csv(in, csv);
  ASSERT_EQ(rows.size(), 6u);  // 4K, 8K, 16K: 2 iterations each
  for (const schema::ResultRow& row : rows) {
    EXPECT_EQ(row.device, "Emulated GPU x8, direct");
    EXPECT_NE(row.wrong, std::optional<std::uint64_t>(1));
  }
  std::remove(csv.c_str());
  const auto b = run_cli("run --algo ring --transport direct --ranks 12 -b 4K -n 2 -d bf16");
  EXPECT_EQ(b.rc, 0) << b.err;
  EXPECT_TRUE(contains(b.out, "# Out of bounds values : 0 OK")) << b.out;
  const auto c = run_cli("run --algo nccl --ranks 4 -b 4K -n 2");
  EXPECT_EQ(c.rc, 0) << c.err;
  EXPECT_TRUE(contains(c.out, "nccl")) << c.out;
  const auto d = run_cli("run --algo nccl --transport direct --ranks 4 -b 4K");
  EXPECT_EQ(d.rc, 1);
  EXPECT_TRUE(contains(d.err, "--algo nccl needs --transport nccl")) << d.err;
}

// The 16-bit types end to end: schedules and ncclAllReduce reduce in half / bfloat16, the
// device check is exact (#wrong 0) and the rows name the type.
TEST(EmulatedCli, HalfAndBfloat16RunEndToEnd) {
  for (const auto& [flag, type] : {std::pair<std::string, std::string>{"half", "float16"},
                                   std::pair<std::string, std::string>{"bf16", "bfloat16"}}) {
    for (const char* algo : {"stragglar", "rhd", "nccl"}) {
      const std::string csv = temp_path();
      const auto r =
          run_cli(std::string("run --algo ") + algo + " --ranks 8 -b 4K -e 64K -f 4 -n 2 -c 2 " +
                  "--delay 1ms -d " + flag + " --csv " + csv);
      ASSERT_EQ(r.rc, 0) << algo << " " << flag << ": " << r.err;
      EXPECT_TRUE(contains(r.out, "# Out of bounds values : 0 OK")) << r.out;
      EXPECT_TRUE(contains(r.out, " " + type + " ")) << r.out;
      std::ifstream in(csv);
      const std::vector<schema::ResultRow> rows = schema::read_result_csv(in, csv);
      ASSERT_EQ(rows.size(), 6u) << algo << " " << flag;
      for (const schema::ResultRow& row : rows) {
        EXPECT_EQ(row.dtype, type);
        EXPECT_EQ(row.wrong, std::optional<std::uint64_t>(0)) << algo << " " << flag;
      }
      std::remove(csv.c_str());
    }
  }
}

// The table's time column (us) of each size row: the lines not starting with '#'.
std::vector<double> time_column(const std::string& out) {
  std::vector<double> times;
  std::istringstream lines(out);
  std::string line;
  while (std::getline(lines, line)) {
    if (line.empty() || line[0] == '#') continue;
    std::istringstream cells(line);
    std::vector<std::string> c;
    std::string cell;
    while (cells >> cell) c.push_back(cell);
    if (c.size() >= 6) times.push_back(std::stod(c[5]));
  }
  return times;
}

// -a: each rank's own start-to-finish time (finish stamp - start stamp, before its delay)
// combined over ranks. The stand-in's clock is virtual, so each run's stamps are the same and
// the table's time column is checked against the own times from the --timeline file
// (own = finish_s - arrival_s + delay_s). rhd at 5 ranks: the ranks finish at different times.
TEST(EmulatedCli, RankAverageCombinesEachRanksOwnTime) {
  const char* names[] = {"rank 0", "mean", "min", "max"};
  for (int a = 0; a <= 3; ++a) {
    const std::string timeline = temp_path();
    const auto r =
        run_cli("run --algo rhd --ranks 5 -b 64K -n 1 -w 0 --delay 1ms --straggler 4 --timeline " +
                timeline + " -a " + std::to_string(a));
    ASSERT_EQ(r.rc, 0) << r.err;
    EXPECT_TRUE(contains(r.out, std::string(names[a]) + " over ranks (-a)")) << r.out;
    const std::vector<double> times = time_column(r.out);
    ASSERT_EQ(times.size(), 1u) << r.out;
    std::map<int, double> own_us;  // rank -> finish - start
    const auto cells = read_csv_cells(timeline);
    for (std::size_t i = 1; i < cells.size(); ++i) {
      own_us[std::stoi(cells[i][4])] =
          (std::stod(cells[i][6]) - std::stod(cells[i][5]) + std::stod(cells[i][7])) * 1e6;
    }
    ASSERT_EQ(own_us.size(), 5u);
    double sum = 0, min = own_us[0], max = own_us[0];
    for (const auto& [rank, t] : own_us) {
      sum += t;
      min = std::min(min, t);
      max = std::max(max, t);
    }
    EXPECT_GT(max - min, 1.0);  // the modes differ in this run
    const double expected[] = {own_us[0], sum / 5, min, max};
    EXPECT_NEAR(times[0], expected[a], 0.011) << names[a] << "\n" << r.out;
    std::remove(timeline.c_str());
  }
}

// -c N: the first N timed iterations are checked (the CSV's wrong column is empty on the
// others), N beyond -n adds untimed checked iterations; -J writes nccl-tests' JSON; rows
// carry the NCCL version and, for nccl, NCCL_ALGO / NCCL_PROTO from the environment.
TEST(EmulatedCli, CheckCountJsonAndNcclColumns) {
  const std::string csv = temp_path(), json = temp_path();
  setenv("NCCL_ALGO", "Ring", 1);
  setenv("NCCL_PROTO", "Simple", 1);
  const auto r =
      run_cli("run --algo nccl --ranks 4 -b 4K -e 16K -f 4 -n 3 -c 2 --csv " + csv + " -J " + json);
  ASSERT_EQ(r.rc, 0) << r.err;
  EXPECT_TRUE(contains(r.out, "check 2 per size (device)")) << r.out;
  EXPECT_TRUE(contains(r.out, "# JSON: " + json)) << r.out;
  {
    std::ifstream in(csv);
    const std::vector<schema::ResultRow> rows = schema::read_result_csv(in, csv);
    ASSERT_EQ(rows.size(), 6u);
    for (const schema::ResultRow& row : rows) {
      EXPECT_EQ(row.wrong.has_value(), row.iteration < 2) << row.iteration;
      EXPECT_FALSE(row.nccl_version.empty());
      EXPECT_EQ(row.nccl_algo, "Ring");
      EXPECT_EQ(row.nccl_proto, "Simple");
    }
  }
  std::ifstream in(json);
  std::stringstream text;
  text << in.rdbuf();
  EXPECT_TRUE(contains(text.str(), "\"stragglesim-gpu\"")) << text.str();
  EXPECT_TRUE(contains(text.str(), "\"out_of_place\"")) << text.str();
  EXPECT_TRUE(contains(text.str(), "\"nwrong\"")) << text.str();
  // Schedules record the NCCL version but no NCCL_ALGO / NCCL_PROTO (NCCL only moves bytes).
  const auto s = run_cli("run --algo ring --ranks 4 -b 4K -n 2 -c 5 --csv " + csv);
  unsetenv("NCCL_ALGO");
  unsetenv("NCCL_PROTO");
  ASSERT_EQ(s.rc, 0) << s.err;
  EXPECT_TRUE(contains(s.out, "# Out of bounds values : 0 OK")) << s.out;
  std::ifstream in2(csv);
  for (const schema::ResultRow& row : schema::read_result_csv(in2, csv)) {
    EXPECT_EQ(row.wrong, std::optional<std::uint64_t>(0));
    EXPECT_FALSE(row.nccl_version.empty());
    EXPECT_EQ(row.nccl_algo, "");
  }
  std::remove(csv.c_str());
  std::remove(json.c_str());
}

TEST(EmulatedCli, MoreRanksThanEmulatedGpus) {
  const auto r = run_cli("run --algo ring --transport nccl --ranks 9");
  EXPECT_EQ(r.rc, 1);
  EXPECT_TRUE(contains(r.err, "9 ranks need 9 GPUs, this machine has 8")) << r.err;
}

}  // namespace
}  // namespace ssim::gpu
