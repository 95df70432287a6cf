// `nvls` and reducing switches from the command line: listing, schedules, simulation on the
// shipped DGX H100 topology (both network models), and the refusals (no reducing switch,
// lowering).
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>

#include "cli_support.hpp"

namespace ssim::testing {
namespace {

bool contains(const std::string& s, const std::string& what) {
  return s.find(what) != std::string::npos;
}

CommandResult simulate(const std::string& yaml, const std::string& flags = "") {
  const std::string path = "/tmp/ssim_nvls_" + std::to_string(::getpid()) + ".yaml";
  std::ofstream(path) << yaml;
  CommandResult r = run_cli("simulate " + path + " " + flags);
  std::remove(path.c_str());
  return r;
}

const std::string kDgx = std::string("topology: {file: ") + STRAGGLESIM_SOURCE_DIR +
                         "/configs/topologies/dgx_h100.yaml}\n";

TEST(CliNvls, ListedScheduledAndVerified) {
  const CommandResult list = run_cli("algorithms");
  ASSERT_EQ(list.rc, 0) << list.err;
  EXPECT_TRUE(contains(list.out, "nvls  (n >= 2)")) << list.out;
  const CommandResult text = run_cli("schedule nvls -r 3");
  ASSERT_EQ(text.rc, 0) << text.err;
  EXPECT_TRUE(contains(text.out, "# {m,...}>>{r,...} cK+ : the switch sums chunk K of ranks m"))
      << text.out;
  EXPECT_TRUE(contains(
      text.out,
      "R0 switch-reduce-scatter: {0,1,2}>>{0} c0+ | {0,1,2}>>{1} c1+ | {0,1,2}>>{2} c2+\n"))
      << text.out;
  EXPECT_TRUE(
      contains(text.out, "R1 switch-allgather: {0}>>{1,2} c0= | {1}>>{0,2} c1= | {2}>>{0,1} c2=\n"))
      << text.out;
  const CommandResult json = run_cli("schedule nvls -r 5 --option pipeline=3 --format json");
  ASSERT_EQ(json.rc, 0) << json.err;
  const CommandResult ok = run_cli("verify -", json.out);
  ASSERT_EQ(ok.rc, 0) << ok.err;
  EXPECT_TRUE(contains(ok.out, "switch reductions: 30")) << ok.out;  // 4 rounds: 5, 10, 10, 5
}

TEST(CliNvls, RefusedWhereItCannotRun) {
  const CommandResult lower = run_cli("lower nvls --ranks 4 --bytes 64KiB");
  EXPECT_EQ(lower.rc, 1);
  EXPECT_TRUE(contains(lower.err, "in-network reductions (switch_reduces) cannot be lowered"))
      << lower.err;
  const CommandResult xml = run_cli("schedule nvls -r 4 --format msccl-xml");
  EXPECT_EQ(xml.rc, 1);
  EXPECT_TRUE(contains(xml.err, "msccl-xml: the schedule has in-network reductions")) << xml.err;

  const std::string plain =
      "topology: {kind: switch, ranks: 8, bandwidth: 450GiB/s, latency: 3us}\n";
  const CommandResult none = simulate(plain + "collective: {algorithm: nvls, size: 1GiB}\n");
  EXPECT_EQ(none.rc, 1);
  EXPECT_TRUE(
      contains(none.err,
               ":2:25: collective.algorithm: algorithm nvls reduces in a switch, and topology "
               "'switch(8)' has no reducing switch that joins all its ranks"))
      << none.err;
  const CommandResult bad = simulate(
      "topology: {kind: switch, ranks: 8, bandwidth: 450GiB/s, latency: 3us, reduce: {bandwidth: "
      "0GB/s, latency: "
      "1us}}\ncollective: {algorithm: nvls, size: 1GiB}\n");
  EXPECT_EQ(bad.rc, 1);
  EXPECT_TRUE(contains(bad.err, "topology.reduce.bandwidth")) << bad.err;
}

// On the shipped DGX H100 (450 GiB/s links, alpha 3 us, reduction 274 GB/s and 1 us), 1 GiB,
// pipeline 1: round 0 is bound by the switch (2^30 B / 274 GB/s = 3.9187 ms > 2^30 B / 450 GiB/s
// = 2.2222 ms), round 1 multicasts 7/8 GiB down each link (1.9444 ms):
//   T = 2 x 3 us + 1 us + 2^30 / 274e9 + 7/8 x 2^30 / (450 x 2^30) = 5.8701 ms.
TEST(CliNvls, SimulatesOnTheShippedDgxH100) {
  const CommandResult r = simulate(kDgx + "collective: {algorithm: nvls, size: 1GiB}\n", "--json");
  ASSERT_EQ(r.rc, 0) << r.err;
  const auto j = nlohmann::json::parse(r.out);
  const double want = 7e-6 + 1073741824.0 / 274e9 + 7.0 / 8 / 450;
  EXPECT_NEAR(j["iterations"][0]["after_last_arrival_s"].get<double>(), want, 1e-12);
  // The flow model: nvls's rounds are symmetric (every link and the switch evenly shared), so
  // max-min sharing ends each round when the alpha-beta batch does.
  const CommandResult flow = simulate(
      kDgx + "network: {model: flow}\ncollective: {algorithm: nvls, size: 1GiB}\n", "--json");
  ASSERT_EQ(flow.rc, 0) << flow.err;
  EXPECT_NEAR(
      nlohmann::json::parse(flow.out)["iterations"][0]["after_last_arrival_s"].get<double>(), want,
      1e-12);
  const CommandResult advise_flow = run_cli(
      "advise --topology dgx_h100 --size 1GiB --delay-dist 1ms --iterations 2 --network flow");
  ASSERT_EQ(advise_flow.rc, 0) << advise_flow.err;
  EXPECT_TRUE(contains(advise_flow.out, "nvls")) << advise_flow.out;
  const CommandResult advise =
      run_cli("advise --topology dgx_h100 --size 1GiB --delay-dist 1ms --iterations 3");
  ASSERT_EQ(advise.rc, 0) << advise.err;
  EXPECT_TRUE(contains(advise.out, "nvls")) << advise.out;
  // One node: hierarchical is ring's schedule there and nvls_tree nvls's, and CollNet (SHARP
  // across nodes) has no nodes to reduce across; each is named once, on the line that says
  // why, and gets no row.
  EXPECT_TRUE(contains(advise.out,
                       "left out on one node: collnet (needs nodes: SHARP across them), "
                       "nvls_tree (= nvls), hierarchical (= ring)\n"))
      << advise.out;
  for (const std::string name : {"hierarchical", "nvls_tree", "collnet"}) {
    std::size_t count = 0;
    for (std::size_t at = advise.out.find(name); at != std::string::npos;
         at = advise.out.find(name, at + 1))
      ++count;
    EXPECT_EQ(count, 1u) << name << "\n" << advise.out;
  }
  const CommandResult plain =
      run_cli("advise --topology switch:450GiB/s:3us --ranks 8 --size 1GiB --iterations 1");
  ASSERT_EQ(plain.rc, 0) << plain.err;
  EXPECT_FALSE(contains(plain.out, "nvls")) << plain.out;
}

// nvls_tree on 4 nodes of 8 (rail-optimized, 400 Gbps NICs with 2 us per link: 4 us between
// nodes on a rail), NVLink 450 GiB/s, 3 us, whose NVSwitches reduce at 274 GB/s, 1 us; 1 GiB:
//   2 x 3 us + 1 us + 2^30 / 274e9 + 7/8 x 2^30 / (450 x 2^30)     NVLS in every node
//   + 6 x (4 us + 2^30 / 8 / 4 / 50e9)                             ring across 4 nodes on s/8
// = 9.9213 ms. Without the reduce key: refused, naming the topology, node 0 and the key.
TEST(CliNvls, NvlsTreeOnAReducingCluster) {
  const std::string cluster =
      "topology: {kind: hierarchical, nodes: 4, gpus_per_node: 8, nvlink: {bandwidth: 450GiB/s, "
      "latency: 3us, reduce: {bandwidth: 274GB/s, latency: 1us}}, nic: {bandwidth: 400Gbps, "
      "latency: 2us}, fabric: {kind: rail_optimized, spines: 4, bandwidth: 400Gbps, latency: "
      "1us}}\n";
  const std::string collective = "collective: {algorithm: nvls_tree, size: 1GiB}\n";
  const double want =
      7e-6 + 1073741824.0 / 274e9 + 7.0 / 8 / 450 + 6 * (4e-6 + 1073741824.0 / 32 / 50e9);
  for (const char* network : {"alphabeta", "flow"}) {
    const CommandResult r =
        simulate(cluster + "network: {model: " + network + "}\n" + collective, "--json");
    ASSERT_EQ(r.rc, 0) << r.err;
    EXPECT_NEAR(nlohmann::json::parse(r.out)["iterations"][0]["after_last_arrival_s"].get<double>(),
                want, 1e-12)
        << network;
  }
  std::string plain = cluster;
  plain.replace(plain.find(", reduce: {bandwidth: 274GB/s, latency: 1us}"),
                std::string(", reduce: {bandwidth: 274GB/s, latency: 1us}").size(), "");
  const CommandResult none = simulate(plain + collective);
  EXPECT_EQ(none.rc, 1);
  EXPECT_TRUE(contains(none.err,
                       ":2:25: collective.algorithm: algorithm nvls_tree reduces in each node's "
                       "switch, and topology 'hierarchical(4x8,rail_optimized)' has no reducing "
                       "switch that joins the GPUs of node 0 (give its nvlink a reduce: "
                       "{bandwidth, latency} key"))
      << none.err;
  // The advisor takes nvls_tree (and not nvls, which needs one switch for all 32) there.
  const std::string path = "/tmp/ssim_nvls_tree_" + std::to_string(::getpid()) + ".yaml";
  std::ofstream(path) << cluster.substr(std::string("topology: ").size());
  const CommandResult advise = run_cli("advise --topology " + path + " --size 1GiB --iterations 1");
  std::remove(path.c_str());
  ASSERT_EQ(advise.rc, 0) << advise.err;
  EXPECT_TRUE(contains(advise.out, "nvls_tree")) << advise.out;
  EXPECT_FALSE(contains(advise.out, "nvls ")) << advise.out;
  const CommandResult json =
      run_cli("schedule nvls_tree -r 12 --option gpus_per_node=4 --format json");
  ASSERT_EQ(json.rc, 0) << json.err;
  const CommandResult ok = run_cli("verify -", json.out);
  ASSERT_EQ(ok.rc, 0) << ok.err;
  EXPECT_TRUE(contains(ok.out, "switch reductions: 24")) << ok.out;
}

// collnet on 4 nodes of 8 whose rail switches reduce (SHARP) at 50 GB/s, 1 us; NVLink 450 GiB/s,
// 3 us; NICs 400 Gbps, 2 us per link; 1 GiB:
//   2 x 7 x (3 us + 2^30 / 8 / (450 x 2^30))        ring reduce-scatter and all-gather in nodes
//   + 4 us + 1 us + 2^30 / 8 / 50e9                  each rail switch reduces its piece
// = 6.6202 ms in both models; without fabric.reduce: refused naming the topology, rail and key.
TEST(CliNvls, CollnetOnReducingRails) {
  const std::string cluster =
      "topology: {kind: hierarchical, nodes: 4, gpus_per_node: 8, nvlink: {bandwidth: 450GiB/s, "
      "latency: 3us}, nic: {bandwidth: 400Gbps, latency: 2us}, fabric: {kind: rail_optimized, "
      "spines: 4, bandwidth: 400Gbps, latency: 1us, reduce: {bandwidth: 50GB/s, latency: 1us}}}\n";
  const std::string collective = "collective: {algorithm: collnet, size: 1GiB}\n";
  const double want = 14 * (3e-6 + 1.0 / 8 / 450) + 5e-6 + 1073741824.0 / 8 / 50e9;
  for (const char* network : {"alphabeta", "flow"}) {
    const CommandResult r =
        simulate(cluster + "network: {model: " + network + "}\n" + collective, "--json");
    ASSERT_EQ(r.rc, 0) << r.err;
    EXPECT_NEAR(nlohmann::json::parse(r.out)["iterations"][0]["after_last_arrival_s"].get<double>(),
                want, 1e-12)
        << network;
  }
  std::string plain = cluster;
  const std::string key = ", reduce: {bandwidth: 50GB/s, latency: 1us}";
  plain.replace(plain.find(key), key.size(), "");
  const CommandResult none = simulate(plain + collective);
  EXPECT_EQ(none.rc, 1);
  EXPECT_TRUE(contains(none.err,
                       "algorithm collnet reduces in each rail's inter-node switch, and topology "
                       "'hierarchical(4x8,rail_optimized)' has no reducing switch that joins the "
                       "GPUs of rail 0 (local index 0 of every node; give its fabric a reduce: "
                       "{bandwidth, latency} key"))
      << none.err;
}

// The shipped 16-128-GPU scaling (configs/experiments/nvls_scaling_128gpu.yaml, every schedule
// costed as NCCL moves it): what the docs say of it. What NCCL runs (nccl) is the fastest at
// every point, the 20 ms straggler included; hierarchical beats nvls_tree everywhere (the in-node
// NVLS phases run unpipelined at 274 GB/s); with the last rank 20 ms late stragglar_hier beats
// hierarchical from 32 GPUs on, not at 16; the flat schedules share the fabric's leaf-to-leaf
// paths and trail by 1.5x or more.
TEST(CliNvls, ShippedScalingTo128Gpus) {
  const std::string out = "/tmp/ssim_nvls_scaling_" + std::to_string(::getpid());
  std::filesystem::remove_all(out);
  const CommandResult r =
      run_cli("run " + std::string(STRAGGLESIM_SOURCE_DIR) +
              "/configs/experiments/nvls_scaling_128gpu.yaml -o " + out + " --no-plots -q");
  ASSERT_EQ(r.rc, 0) << r.err;
  std::ifstream in(out + "/results.json");
  const nlohmann::json j = nlohmann::json::parse(in);
  ASSERT_EQ(j["points"].size(), 8u);
  int checked = 0;
  for (const nlohmann::json& p : j["points"]) {
    const int gpus = 8 * std::stoi(p["values"]["topology.nodes"].get<std::string>());
    const bool late = p["values"]["delay"].get<std::string>() == "20ms";
    const auto t = [&](const char* a) {
      return p["summary"][a]["mean_completion_s"].get<double>();
    };
    SCOPED_TRACE(std::to_string(gpus) + (late ? " GPUs, 20 ms late" : " GPUs, on time"));
    for (const char* other : {"nvls_tree", "twoshot", "hierarchical", "stragglar_hier",
                              "stragglar", "ring"})
      EXPECT_LT(t("nccl"), t(other)) << other;
    EXPECT_LT(t("hierarchical"), t("nvls_tree"));
    EXPECT_GT(t("ring"), 3 * t("nvls_tree"));
    EXPECT_GT(t("twoshot"), 1.5 * t("nvls_tree"));
    if (late) EXPECT_EQ(t("stragglar_hier") < t("hierarchical"), gpus >= 32);
    if (gpus == 64 && !late) EXPECT_NEAR(t("nvls_tree"), 10.632e-3, 1e-6);  // the 64-GPU table
    ++checked;
  }
  EXPECT_EQ(checked, 8);
  std::filesystem::remove_all(out);
}

}  // namespace
}  // namespace ssim::testing
