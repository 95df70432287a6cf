// `stragglesim validate LOG --topology T` on nccl-tests logs (issue 39 item 4): the published
// tables of data/published/nccl-tests/ against the shipped h100_8xib400 topology (a regression
// guard on nccl_ring against NCCL's Ring, not a fit), the synthetic logs of tests/data/calibration/
// and the bad input the issue names, each one message, exit 1 and nothing written.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <map>
#include <sstream>

#include <nlohmann/json.hpp>

#include "cli_support.hpp"
#include "common/csv.hpp"
#include "common/stats.hpp"

namespace ssim::testing {
namespace {

namespace fs = std::filesystem;

bool contains(const std::string& s, const std::string& what) {
  return s.find(what) != std::string::npos;
}

std::string source(const std::string& relative) {
  return std::string(STRAGGLESIM_SOURCE_DIR) + "/" + relative;
}

const std::string kTable11 =
    source("data/published/nccl-tests/11-h100-2node-ib400-default-1M-8G-nccltests309-cluster2.txt");
const std::string kTable15 = source(
    "data/published/nccl-tests/"
    "15-h100-2node-ib400-ring-minctas24-qps2-1M-8G-nccltests309-cluster2.txt");
const std::string kTable01 =
    source("data/published/nccl-tests/01-h100-dgx-1node-8gpu-nvls-8B-16G-nvidia-dgxc.txt");
const std::string kIb400 = source("configs/topologies/h100_8xib400.yaml");
const std::string kDgx = source("configs/topologies/dgx_h100.yaml");

class ValidateNccl : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::temp_directory_path() /
           ("ssim_valnccl_" + std::to_string(::getpid()) + "_" +
            ::testing::UnitTest::GetInstance()->current_test_info()->name());
    fs::create_directories(dir_);
  }
  void TearDown() override { fs::remove_all(dir_); }
  std::string path(const std::string& name) const { return (dir_ / name).string(); }
  std::string write(const std::string& name, const std::string& text) const {
    std::ofstream(path(name), std::ios::binary) << text;
    return path(name);
  }
  fs::path dir_;
};

// The -o CSV as (bytes -> ratio_out_of_place, ratio_in_place).
struct Ratios {
  std::map<std::uint64_t, std::pair<double, double>> by_size;
};
Ratios read_ratios(const std::string& csv_path) {
  std::istringstream in(slurp(csv_path));
  CsvReader reader(in, csv_path);
  CsvRecord header, row;
  Ratios r;
  if (!reader.next(header)) return r;
  auto column = [&](const std::string& name) {
    const auto it = std::find(header.fields.begin(), header.fields.end(), name);
    EXPECT_NE(it, header.fields.end()) << name;
    return static_cast<std::size_t>(it - header.fields.begin());
  };
  const std::size_t bytes = column("bytes"), out = column("ratio_out_of_place"),
                    in_place = column("ratio_in_place");
  while (reader.next(row)) {
    r.by_size[std::stoull(row.fields.at(bytes))] = {std::stod(row.fields.at(out)),
                                                    std::stod(row.fields.at(in_place))};
  }
  return r;
}

// The regression guard (docs/calibration.md, "nccl-tests logs against the model"): nccl_ring
// in the flow model on the shipped 2 x 8 H100 IB400 topology, nominal figures, against NCCL's
// Ring of table 15 (NCCL_ALGO=Ring, 24 channels): from 16 MiB every ratio simulated / measured
// in [0.90, 1.10] (0.94-1.02 when written) and their median |error| <= 5%.
TEST_F(ValidateNccl, PublishedRingTableStaysInItsBand) {
  const std::string csv = path("t15.csv");
  const CommandResult r = run_cli("validate " + kTable15 + " --topology " + kIb400 + " -o " + csv);
  ASSERT_EQ(r.rc, 0) << r.err;
  EXPECT_TRUE(contains(r.out, "ranks: 16 ranks (busbw/algbw = 2(n-1)/n, fixed at line ")) << r.out;
  EXPECT_TRUE(contains(r.out, "flow model (the default for nccl-tests logs)")) << r.out;
  EXPECT_TRUE(contains(r.out, "model: nccl_ring (gpus_per_node=8) (the default --algorithm)"))
      << r.out;
  EXPECT_TRUE(contains(r.out, "compared 14 sizes")) << r.out;
  EXPECT_TRUE(contains(r.out, "sizes <  1 MiB: no rows")) << r.out;
  const Ratios ratios = read_ratios(csv);
  ASSERT_EQ(ratios.by_size.size(), 14u);
  std::vector<double> errors;
  for (const auto& [bytes, ratio] : ratios.by_size) {
    if (bytes < (16u << 20)) continue;
    EXPECT_GE(ratio.first, 0.90) << bytes;
    EXPECT_LE(ratio.first, 1.10) << bytes;
    EXPECT_GE(ratio.second, 0.90) << bytes;
    EXPECT_LE(ratio.second, 1.10) << bytes;
    errors.push_back(std::fabs(ratio.first - 1));
  }
  ASSERT_EQ(errors.size(), 10u);
  EXPECT_LE(quantile(errors, 0.5), 0.05);

  // NCCL's own choice forced to Ring, as table 15 ran (the file's NIC path rules out LL128):
  // median |error| >= 1 MiB at most 5% (3.1% when written).
  const CommandResult forced = run_cli("validate " + kTable15 + " --topology " + kIb400 +
                                       " --algorithm nccl -O nccl:algo=ring -o " + path("f.csv"));
  ASSERT_EQ(forced.rc, 0) << forced.err;
  std::vector<double> forced_errors;
  for (const auto& [bytes, ratio] : read_ratios(path("f.csv")).by_size)
    forced_errors.push_back(std::fabs(ratio.first - 1));
  ASSERT_EQ(forced_errors.size(), 14u);
  EXPECT_LE(quantile(forced_errors, 0.5), 0.05);

  // calibrate reads the same count (it used to take the 2 device lines for 2 ranks).
  const CommandResult fit = run_cli("calibrate " + kTable15);
  ASSERT_EQ(fit.rc, 0) << fit.err;
  EXPECT_TRUE(contains(fit.out, "nccl-tests: out-of-place times, 16 ranks on ")) << fit.out;

  // Table 11 (NCCL's default choice at 2 nodes) reads the same way; compared with nccl_tree.
  const CommandResult t11 = run_cli("validate " + kTable11 + " --topology " + kIb400 +
                                    " --algorithm nccl_tree -o " + path("t11.csv"));
  ASSERT_EQ(t11.rc, 0) << t11.err;
  EXPECT_TRUE(contains(t11.out, "model: nccl_tree (gpus_per_node=8)\n")) << t11.out;
  EXPECT_EQ(read_ratios(path("t11.csv")).by_size.size(), 14u);
}

// NCCL's own choice on one DGX H100 against NVIDIA's table 01 (docs/algorithms.md, "`nccl`
// against NCCL"; the shipped dgx_h100, nothing fitted, NCCL's steps pipelined, the default):
// median |error| for sizes >= 1 MiB at most 5% (3.9% when written; 2.6% per round), every ratio
// from 128 MiB in [0.90, 1.10] (0.94-1.01), below 1 MiB (NCCL's Ring/LL on few channels) at most
// 15% out of place (8.0%; 11.6% per round, 18.2% before each channel was capped at the graph's
// share) and every in-place ratio from 8 KiB in [0.90, 1.10] (0.95-1.09: the plateau of the
// channel cut), and NVLS (NCCL's pick at large sizes) ahead of Ring at 1 GiB, as NCCL measures
// on that node.
TEST_F(ValidateNccl, DgxH100NcclStaysInItsBand) {
  const std::string csv = path("t01.csv");
  const CommandResult r =
      run_cli("validate " + kTable01 + " --topology " + kDgx + " --algorithm nccl -o " + csv);
  ASSERT_EQ(r.rc, 0) << r.err;
  EXPECT_TRUE(contains(r.out, "compared 32 sizes")) << r.out;
  const Ratios ratios = read_ratios(csv);
  ASSERT_EQ(ratios.by_size.size(), 32u);
  std::vector<double> errors, small;
  for (const auto& [bytes, ratio] : ratios.by_size) {
    if (bytes < (1u << 20)) {
      small.push_back(std::fabs(ratio.first - 1));
      if (bytes < (8u << 10)) continue;
      EXPECT_GE(ratio.second, 0.90) << bytes;
      EXPECT_LE(ratio.second, 1.10) << bytes;
      continue;
    }
    errors.push_back(std::fabs(ratio.first - 1));
    if (bytes < (128u << 20)) continue;
    EXPECT_GE(ratio.first, 0.90) << bytes;
    EXPECT_LE(ratio.first, 1.10) << bytes;
  }
  ASSERT_EQ(errors.size(), 15u);
  EXPECT_LE(quantile(errors, 0.5), 0.05);
  ASSERT_EQ(small.size(), 17u);
  EXPECT_LE(quantile(small, 0.5), 0.15);

  // NVLS ahead of Ring at 1 GiB: simulate prints NCCL's choice and its time.
  const std::string config = write("nccl.yaml", "topology: " + kDgx +
                                                    "\nalgorithm: nccl\nsize: 1GiB\n"
                                                    "network: {model: flow}\niterations: 1\n");
  const CommandResult chosen = run_cli("simulate " + config + " --json");
  ASSERT_EQ(chosen.rc, 0) << chosen.err;
  const nlohmann::json j = nlohmann::json::parse(chosen.out);
  EXPECT_EQ(j["schedule"]["nccl"]["algo"], "nvls") << chosen.out;
  EXPECT_EQ(j["schedule"]["nccl"]["proto"], "simple") << chosen.out;
  const std::string ring_config =
      write("ring.yaml", "topology: " + kDgx +
                             "\nalgorithm: {algorithm: nccl, options: {algo: ring}}\nsize: 1GiB\n"
                             "network: {model: flow}\niterations: 1\n");
  const CommandResult ring = run_cli("simulate " + ring_config + " --json");
  ASSERT_EQ(ring.rc, 0) << ring.err;
  const nlohmann::json jr = nlohmann::json::parse(ring.out);
  EXPECT_EQ(jr["schedule"]["nccl"]["algo"], "ring") << ring.out;
  EXPECT_LT(j["iterations"][0]["completion_s"].get<double>(),
            0.95 * jr["iterations"][0]["completion_s"].get<double>());
  // The table names the choice.
  const CommandResult table = run_cli("simulate " + config);
  ASSERT_EQ(table.rc, 0) << table.err;
  EXPECT_TRUE(contains(table.out, "NCCL's choice: nvls/simple (algo=nvls pipeline=")) << table.out;
}

// network: {protocol: simple} (advise --protocol simple): every schedule that names no protocol
// pays NCCL's Simple costs as nccl does (ring on the DGX H100 file: 3.931 ms -> 4.770 ms at 1 GiB,
// the launch and 0.824 of the links), nccl is unchanged; a value outside none/simple/ll/ll128 is
// refused naming the file, line and key.
TEST_F(ValidateNccl, NetworkProtocolCostsEverySchedule) {
  auto mean = [&](const std::string& protocol, const std::string& algorithm) {
    const std::string config =
        write(algorithm + protocol + ".yaml",
              "topology: " + kDgx + "\nalgorithm: " + algorithm +
                  "\nsize: 1GiB\nnetwork: {model: flow" +
                  (protocol.empty() ? "" : ", protocol: " + protocol) + "}\niterations: 1\n");
    const CommandResult r = run_cli("simulate " + config + " --json");
    EXPECT_EQ(r.rc, 0) << r.err;
    return nlohmann::json::parse(r.out)["iterations"][0]["completion_s"].get<double>();
  };
  EXPECT_NEAR(mean("", "ring"), 3.931e-3, 1e-6);
  EXPECT_NEAR(mean("simple", "ring"), 4.770e-3, 1e-6);
  EXPECT_DOUBLE_EQ(mean("none", "ring"), mean("", "ring"));
  EXPECT_DOUBLE_EQ(mean("simple", "nccl"), mean("", "nccl"));
  const std::string bad = write("bad.yaml", "topology: " + kDgx +
                                                "\nalgorithm: ring\nsize: 1GiB\n"
                                                "network: {model: flow, protocol: ll64}\n");
  const CommandResult r = run_cli("simulate " + bad);
  EXPECT_EQ(r.rc, 1);
  EXPECT_TRUE(contains(r.err, "bad.yaml:4:34: network.protocol: unknown value 'll64' (expected one "
                              "of: none, simple, ll, ll128)"))
      << r.err;
  // advise says it in its header, and ranks the candidates with the costs.
  const CommandResult a = run_cli("advise --topology " + kDgx +
                                  " --size 1GiB --algorithms ring,nccl --protocol simple "
                                  "--iterations 2");
  ASSERT_EQ(a.rc, 0) << a.err;
  EXPECT_TRUE(contains(a.out, "alphabeta model, NCCL's simple costs for every schedule; delays"))
      << a.out;
  EXPECT_EQ(run_cli("advise --topology " + kDgx + " --size 1GiB --protocol ll64").rc, 2);
}

// NCCL's steps overlapped (network: {steps: pipelined}, validate --steps pipelined; the default
// since 2026-11-30, sim/protocol.hpp): per_round changes nccl's time, pipelined is the default
// exactly; a bad value is refused at its file, line and key. Measured pipelined, with each channel
// waiting for its own data only and moving at most the graph's per-channel bandwidth
// (docs/algorithms.md): table 15 forced to Ring median |error| >= 1 MiB at most 5%, issue 39's
// target (3.6% when written; 7.8% without the channel cap, 10.4% with a rank's sends in round
// order across its channels), table 11 (NCCL's choice, NVLS_TREE) at most 5% too (3.05%: NCCL's
// chunking and perChMaxNVLSTreeBw; 10.4% before them, 15.6% per round).
TEST_F(ValidateNccl, PipelinedStepsAreAKeyAndAFlag) {
  auto time = [&](const std::string& steps) {
    const std::string config =
        write("s" + steps + ".yaml", "topology: " + kIb400 +
                                         "\nalgorithm: nccl\nsize: 16MiB\nnetwork: {model: flow" +
                                         (steps.empty() ? "" : ", steps: " + steps) +
                                         "}\niterations: 1\n");
    const CommandResult r = run_cli("simulate " + config + " --json");
    EXPECT_EQ(r.rc, 0) << r.err;
    const nlohmann::json j = nlohmann::json::parse(r.out);
    // The results say so when it is off (and nothing new when on, the default).
    EXPECT_EQ(j["config"]["network"].contains("steps"), steps == "per_round") << r.out;
    return j["iterations"][0]["completion_s"].get<double>();
  };
  EXPECT_DOUBLE_EQ(time("pipelined"), time(""));
  // NVLS_TREE at 16 MiB: NCCL's step latencies as floors, overlapped, and NCCL's chunks (0.93 of
  // table 11; 0.64 per round).
  EXPECT_GT(time("pipelined"), 1.1 * time("per_round"));
  const std::string bad = write("bad.yaml", "topology: " + kDgx +
                                                "\nalgorithm: ring\nsize: 1GiB\n"
                                                "network: {model: flow, steps: overlapped}\n");
  const CommandResult r = run_cli("simulate " + bad);
  EXPECT_EQ(r.rc, 1);
  EXPECT_TRUE(contains(r.err, "bad.yaml:4:31: network.steps: unknown value 'overlapped' (expected "
                              "one of: per_round, pipelined)"))
      << r.err;

  auto median = [&](const std::string& log, const std::string& extra) {
    const CommandResult v = run_cli("validate " + log + " --topology " + kIb400 +
                                    " --algorithm nccl --steps pipelined " + extra + " -o " +
                                    path("p.csv"));
    EXPECT_EQ(v.rc, 0) << v.err;
    EXPECT_TRUE(contains(v.out, "flow model (the default for nccl-tests logs), gamma")) << v.out;
    std::vector<double> errors;
    for (const auto& [bytes, ratio] : read_ratios(path("p.csv")).by_size)
      errors.push_back(std::fabs(ratio.first - 1));
    EXPECT_EQ(errors.size(), 14u);
    return quantile(errors, 0.5);
  };
  EXPECT_LE(median(kTable15, "-O nccl:algo=ring"), 0.05);
  EXPECT_LE(median(kTable11, ""), 0.05);
  EXPECT_EQ(run_cli("validate " + kTable15 + " --topology " + kIb400 + " --steps sometimes").rc, 2);
  const CommandResult per_round = run_cli("validate " + kTable15 + " --topology " + kIb400 +
                                          " --algorithm nccl --steps per_round");
  EXPECT_EQ(per_round.rc, 0) << per_round.err;
  EXPECT_TRUE(contains(per_round.out, "flow model (the default for nccl-tests logs), per-round "
                                      "steps, gamma"))
      << per_round.out;
  // A trace of pipelined steps (their transfers finish out of round order; it was refused, and
  // before that an internal check failure) is written in both models, and the traced run times
  // the same as the untraced one. NCCL's tree: 16 MiB on two nodes would be NVLS's, which a
  // trace does not record.
  for (const std::string model : {"flow", "alphabeta"}) {
    const std::string traced =
        write(model + "t.yaml", "topology: " + kIb400 +
                                    "\ncollective: {algorithm: nccl, size: 16MiB, options: "
                                    "{algo: tree}}\nnetwork: {model: " +
                                    model + ", steps: pipelined}\niterations: 1\n");
    const CommandResult t = run_cli("simulate " + traced + " --trace " + path(model + ".json"));
    EXPECT_EQ(t.rc, 0) << model << t.err;
    std::ifstream in(path(model + ".json"));
    std::stringstream trace;
    trace << in.rdbuf();
    EXPECT_TRUE(contains(trace.str(), "\"otherData\":{\"title\":\"nccl, 16 ranks")) << model;
    EXPECT_TRUE(contains(trace.str(), "\"name\":\"recv ")) << model;
    const CommandResult plain = run_cli("simulate " + traced);
    ASSERT_EQ(plain.rc, 0) << plain.err;
    const std::string mean = plain.out.substr(plain.out.find("\nmean"));
    EXPECT_TRUE(contains(t.out, mean.substr(0, mean.find('\n', 1)))) << t.out << plain.out;
  }
  const CommandResult a =
      run_cli("advise --topology " + kIb400 +
              " --size 16MiB --algorithms nccl --network flow --steps per_round --iterations 1 -q");
  ASSERT_EQ(a.rc, 0) << a.err;
  EXPECT_TRUE(contains(a.out, "flow model, NCCL's simple costs for every schedule, NCCL's steps "
                              "per round; delays"))
      << a.out;
}

// A topology file's network_model is the model of a config, advise or train job on it that
// names none: the shipped h100_8xib400 says flow, where NCCL's default is within 3.1% of table 11
// (alpha-beta 0.90-1.76 of it), so a plain simulate of nccl at 1 GiB gives the flow model's
// 4.51 ms (table 11: 4.497 ms); an explicit model still wins.
TEST_F(ValidateNccl, ATopologysNetworkModelIsTheDefault) {
  auto simulate = [&](const std::string& network) {
    const std::string config = write(network.empty() ? "plain.yaml" : "model.yaml",
                                     "topology: h100_8xib400\nalgorithm: nccl\nsize: 1GiB\n" +
                                         network + "iterations: 1\n");
    const CommandResult r = run_cli("simulate " + config + " --json");
    EXPECT_EQ(r.rc, 0) << r.err;
    return nlohmann::json::parse(r.out);
  };
  const nlohmann::json plain = simulate("");
  EXPECT_EQ(plain["config"]["network"]["model"], "flow");
  EXPECT_NEAR(plain["iterations"][0]["completion_s"].get<double>() / 4.497e-3, 1.0, 0.05);
  const nlohmann::json ab = simulate("network: {model: alphabeta}\n");
  EXPECT_EQ(ab["config"]["network"]["model"], "alphabeta");
  const CommandResult a = run_cli("advise --topology h100_8xib400 --size 64MiB --algorithms nccl "
                                  "--iterations 1 -q");
  ASSERT_EQ(a.rc, 0) << a.err;
  EXPECT_TRUE(contains(a.out, "h100-8xib400, 16 ranks, 64MiB, flow model")) << a.out;
  const CommandResult b = run_cli("advise --topology h100_8xib400 --size 64MiB --algorithms nccl "
                                  "--iterations 1 -q --network alphabeta");
  ASSERT_EQ(b.rc, 0) << b.err;
  EXPECT_TRUE(contains(b.out, "h100-8xib400, 16 ranks, 64MiB, alphabeta model")) << b.out;
  // One node's file says nothing: the alpha-beta model, as before.
  const CommandResult d = run_cli("advise --topology dgx_h100 --size 64MiB --algorithms nccl "
                                  "--iterations 1 -q");
  ASSERT_EQ(d.rc, 0) << d.err;
  EXPECT_TRUE(contains(d.out, "dgx-h100, 8 ranks, 64MiB, alphabeta model")) << d.out;
}

// advise's "vs" column is what NCCL runs wherever nccl is a candidate (else Ring, the paper's
// baseline), and a ring that spans nodes says it is the one-channel textbook ring.
TEST_F(ValidateNccl, AdviseComparesWithWhatNcclRuns) {
  const std::string two_nodes = "--topology h100_8xib400 --size 64MiB --iterations 2 -q";
  const CommandResult both = run_cli("advise " + two_nodes + " --algorithms ring,nccl,rhd");
  ASSERT_EQ(both.rc, 0) << both.err;
  EXPECT_TRUE(contains(both.out, "  vs nccl  fastest")) << both.out;
  EXPECT_TRUE(contains(both.out, "note: ring is the textbook ring (the StragglAR paper's "
                                 "baseline): one channel"))
      << both.out;
  const CommandResult no_nccl = run_cli("advise " + two_nodes + " --algorithms rhd,ring");
  ASSERT_EQ(no_nccl.rc, 0) << no_nccl.err;
  EXPECT_TRUE(contains(no_nccl.out, "  vs ring  fastest")) << no_nccl.out;
  // One node: the textbook ring crosses no NIC, nothing to say.
  const CommandResult one_node = run_cli("advise --topology " + kDgx +
                                         " --size 64MiB --iterations 2 -q --algorithms ring,nccl");
  ASSERT_EQ(one_node.rc, 0) << one_node.err;
  EXPECT_TRUE(contains(one_node.out, "  vs nccl  fastest")) << one_node.out;
  EXPECT_FALSE(contains(one_node.out, "note: ring")) << one_node.out;
  // Files whose figures a measurement checks carry provenance:; outputs on any other topology
  // say they are uncalibrated.
  for (const CommandResult* r : {&both, &one_node}) EXPECT_FALSE(contains(r->out, "uncalibrated"));
  const CommandResult nominal = run_cli("advise --topology dgx_a100 --size 64MiB --iterations 2 "
                                        "-q --algorithms ring,nccl");
  ASSERT_EQ(nominal.rc, 0) << nominal.err;
  EXPECT_TRUE(contains(nominal.out, "note: uncalibrated: dgx-a100 (nominal or published figures "
                                    "that no measurement checks"))
      << nominal.out;
  const std::string config = write("a100.yaml", "topology: {file: " +
                                                    source("configs/topologies/dgx_a100.yaml") +
                                                    "}\nalgorithm: ring\nsize: 1MiB\n");
  const CommandResult sim = run_cli("simulate " + config);
  ASSERT_EQ(sim.rc, 0) << sim.err;
  EXPECT_TRUE(contains(sim.out, "\nuncalibrated: dgx-a100 (")) << sim.out;
  const std::string dgx = write("h100.yaml", "topology: {file: " + kDgx +
                                                 "}\nalgorithm: ring\nsize: 1MiB\n");
  EXPECT_FALSE(contains(run_cli("simulate " + dgx).out, "uncalibrated"));
}

// What NCCL refuses on the machine is refused when the experiment is read, naming the option's
// line (it used to fail the first run, with a partial results folder).
TEST_F(ValidateNccl, NcclRefusalsNameTheLine) {
  const std::string config = write(
      "nv.yaml",
      "topology: {kind: switch, ranks: 8, bandwidth: 450GiB/s, latency: 3us}\nalgorithms:\n"
      "  - ring\n  - {algorithm: nccl, options: {algo: nvls}}\nsize: 1GiB\niterations: 1\n");
  const CommandResult r = run_cli("run " + config + " -o " + path("out") + " --no-plots");
  EXPECT_EQ(r.rc, 1);
  EXPECT_TRUE(contains(r.err, "nv.yaml:4:39: algorithms[1].options.algo: nccl option algo=nvls: "
                              "topology switch(8) has no switch that reduces; allowed here: ring, "
                              "tree"))
      << r.err;
  EXPECT_FALSE(fs::exists(path("out")));
  // The NIC's path is one of NCCL's names; with phb, LL128 forced is refused at its line.
  const std::string topology = write(
      "t.yaml", "kind: hierarchical\nnodes: 2\ngpus_per_node: 8\nnvlink: {bandwidth: 450GiB/s, "
                "latency: 3us}\nnic: {bandwidth: 400Gbps, latency: 2us, path: pcie}\n"
                "fabric: {kind: rail_optimized, spines: 0}\n");
  const std::string bad = write("b.yaml", "topology: {file: t.yaml}\nalgorithm: ring\nsize: 1MiB\n");
  const CommandResult b = run_cli("simulate " + bad);
  EXPECT_EQ(b.rc, 1);
  EXPECT_TRUE(contains(b.err, "t.yaml:5:47: nic.path: unknown value 'pcie' (expected one of: pix, "
                              "pxb, pxn, phb, sys)"))
      << b.err;
  write("t.yaml", slurp(topology).replace(slurp(topology).find("pcie"), 4, "phb"));
  const std::string forced = write(
      "f.yaml", "topology: {file: t.yaml}\nalgorithm: {algorithm: nccl, options: {proto: ll128}}\n"
                "size: 1MiB\n");
  const CommandResult f = run_cli("simulate " + forced);
  EXPECT_EQ(f.rc, 1);
  EXPECT_TRUE(contains(f.err, "f.yaml:2:47: algorithm.options.proto: nccl option proto=ll128: NCCL "
                              "does not enable LL128 across nodes"))
      << f.err;
}

// The text log and its -J JSON give the same comparison; stdin reads as a file; the small sizes
// have their own summary line.
TEST_F(ValidateNccl, TextJsonAndStdinCompareTheSame) {
  const std::string text = data_path("calibration/nccl_tests_ring8.txt");
  const CommandResult t =
      run_cli("validate " + text + " --topology " + kDgx + " -o " + path("t.csv"));
  ASSERT_EQ(t.rc, 0) << t.err;
  EXPECT_TRUE(contains(t.out, "ranks: 8 ranks (8 device lines from line 6)")) << t.out;
  EXPECT_TRUE(contains(t.out, "sizes <  1 MiB: out-of-place median |error| ")) << t.out;
  EXPECT_TRUE(contains(t.out, "sizes >= 1 MiB: out-of-place median |error| ")) << t.out;
  const CommandResult j = run_cli("validate " + data_path("calibration/nccl_tests_ring8.json") +
                                  " --topology " + kDgx + " -o " + path("j.csv"));
  ASSERT_EQ(j.rc, 0) << j.err;
  EXPECT_TRUE(contains(j.out, "ranks: 8 ranks (config: devices x nthreads x ngpus)")) << j.out;
  const Ratios tr = read_ratios(path("t.csv")), jr = read_ratios(path("j.csv"));
  ASSERT_EQ(tr.by_size.size(), 10u);
  ASSERT_EQ(jr.by_size.size(), 10u);
  for (const auto& [bytes, ratio] : tr.by_size) {
    // The text rounds the times to 0.01 us.
    EXPECT_NEAR(ratio.first, jr.by_size.at(bytes).first, 1e-3 * ratio.first) << bytes;
  }
  const CommandResult s = run_cli("validate - --topology " + kDgx, slurp(text));
  ASSERT_EQ(s.rc, 0) << s.err;
  EXPECT_TRUE(contains(s.out, "validate: <stdin> (nccl-tests log")) << s.out;
}

// Issue 39's bad input, and the flags that do not fit: one message naming the file, line and
// value, exit 1, -o not written.
TEST_F(ValidateNccl, BadInputNamesFileLineAndValueAndWritesNothing) {
  std::string four;  // the 8-rank log with a listing of 4 ranks
  std::istringstream in(slurp(data_path("calibration/nccl_tests_ring8.txt")));
  for (std::string line; std::getline(in, line);) {
    if (line.rfind("#  Rank  4", 0) == 0 || line.rfind("#  Rank  5", 0) == 0 ||
        line.rfind("#  Rank  6", 0) == 0 || line.rfind("#  Rank  7", 0) == 0)
      continue;
    four += line + "\n";
  }
  const std::string disagree = write("four.txt", four);
  std::string nul_text = slurp(data_path("calibration/nccl_tests_ring8.txt"));
  nul_text.insert(nul_text.find('\n') + 4, std::string(1, '\0'));
  const std::string nul = write("nul.txt", nul_text);
  const std::string all_gather = data_path("calibration/nccl_tests_all_gather.txt");
  const std::string ring4 = data_path("calibration/ring4_measured.csv");
  struct Case {
    std::string args, message;
  };
  for (const Case& c : {
           Case{"validate " + disagree + " --topology " + kDgx,
                disagree +
                    ":15: in-place busbw 0.09 / algbw 0.05 = 1.8, 2(n-1)/n for n >= 5; "
                    "the log's device lines (line 6) list 4 ranks: the rows disagree with the "
                    "log's rank count"},
           Case{"validate " + all_gather + " --topology " + kDgx,
                all_gather + ":2: this is a log of all_gather_perf, not of all_reduce_perf"},
           Case{"validate " + nul + " --topology " + kDgx, nul + ":2:4: a NUL byte"},
           Case{"validate " + kTable15 + " --topology " + kDgx,
                kTable15 +
                    ":32: the log ran 16 ranks (busbw/algbw = 2(n-1)/n, fixed at line 32; "
                    "the device listing is shortened), and the topology " +
                    kDgx + " has 8 GPUs: give a topology of 16 GPUs"},
           Case{"validate " + kTable15 + " --topology " + kIb400 + " --algorithm nope",
                "--algorithm: unknown algorithm 'nope' (valid: "},
           Case{"validate " + kTable15 + " --topology " + kIb400 + " -O nccl_tree:segments=4",
                "-O nccl_tree:segments=4: the log is compared with nccl_ring (--algorithm), not "
                "nccl_tree"},
           Case{
               "validate " + ring4 + " --topology " + kDgx + " --algorithm ring",
               "--algorithm: for nccl-tests logs; the rows of " + ring4 + " name their algorithms"},
       }) {
    const std::string out = path("out.csv");
    const CommandResult r = run_cli(c.args + " -o " + out);
    EXPECT_EQ(r.rc, 1) << c.args << "\n" << r.out;
    EXPECT_TRUE(contains(r.err, c.message)) << c.args << "\n" << r.err;
    EXPECT_FALSE(fs::exists(out)) << c.args;
  }
}

}  // namespace
}  // namespace ssim::testing
