// The topology-aware schedules (hierarchical, stragglar_hier) through the built binary: listed,
// generated and verified, gpus_per_node taken from a hierarchical topology in simulate and run
// configs, and bad gpus_per_node values as clear errors (at their file:line and key in YAML).
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

std::string write_temp(const std::string& name, const std::string& text) {
  const std::string path = "/tmp/ssim_hier_" + std::to_string(::getpid()) + "_" + name;
  std::ofstream(path) << text;
  return path;
}

const std::string kTopology3x4 =
    "topology: {kind: hierarchical, nodes: 3, gpus_per_node: 4,\n"
    "           nvlink: {bandwidth: 450GiB/s, latency: 3us}, nic: {bandwidth: 400Gbps, latency: "
    "2us},\n"
    "           fabric: {kind: rail_optimized, spines: 2, bandwidth: 400Gbps, latency: 1us}}\n";

TEST(CliHierarchical, ListedGeneratedAndVerified) {
  const CommandResult list = run_cli("algorithms");
  ASSERT_EQ(list.rc, 0) << list.err;
  EXPECT_TRUE(contains(list.out, "hierarchical")) << list.out;
  EXPECT_TRUE(contains(list.out, "stragglar_hier")) << list.out;
  EXPECT_TRUE(contains(list.out, "gpus_per_node")) << list.out;
  for (const std::string args :
       {"hierarchical --ranks 32 --option gpus_per_node=8",
        "hierarchical --ranks 24 --option gpus_per_node=4 --option inter=rhd",
        "stragglar_hier --ranks 32 --option gpus_per_node=8 --option straggler=13"}) {
    const CommandResult j = run_cli("schedule " + args + " --format json");
    ASSERT_EQ(j.rc, 0) << args << j.err;
    const std::string path = write_temp("s.json", j.out);
    const CommandResult v = run_cli("verify " + path);
    EXPECT_EQ(v.rc, 0) << args << v.err << v.out;
  }
}

TEST(CliHierarchical, BadGpusPerNodeIsAClearError) {
  struct Case {
    std::string args, what;
  };
  const std::vector<Case> cases = {
      {"hierarchical --ranks 32 --option gpus_per_node=3", "must divide the rank count 32"},
      {"hierarchical --ranks 32 --option gpus_per_node=0", "gpus_per_node=0: must be in [1, 32]"},
      {"hierarchical --ranks 32 --option gpus_per_node=-2", "gpus_per_node=-2"},
      {"hierarchical --ranks 32 --option inter=tree", "unknown inter-node algorithm"},
      {"stragglar_hier --ranks 32 --option gpus_per_node=1", "must be 2..32"},
      {"stragglar_hier --ranks 30 --option gpus_per_node=8", "must divide the rank count 30"},
  };
  for (const Case& c : cases) {
    const CommandResult r = run_cli("schedule " + c.args);
    EXPECT_EQ(r.rc, 1) << c.args;
    EXPECT_TRUE(contains(r.err, c.what)) << c.args << ": " << r.err;
  }
  // In a config: the option at its key, or the mismatch with the topology.
  const std::string sim =
      kTopology3x4 +
      "collective: {algorithm: hierarchical, size: 64MiB, options: {gpus_per_node: 2}}\n";
  const std::string path = write_temp("bad.yaml", sim);
  const CommandResult r = run_cli("simulate " + path);
  EXPECT_EQ(r.rc, 1);
  EXPECT_TRUE(contains(r.err, path + ":4:")) << r.err;
  EXPECT_TRUE(contains(r.err, "does not match the topology's 4 GPUs per node")) << r.err;
  const std::string flat =
      "topology: {kind: switch, ranks: 12, bandwidth: 450GiB/s, latency: 3us}\n"
      "collective: {algorithm: stragglar_hier, size: 64MiB, options: {gpus_per_node: 5}}\n";
  const std::string flat_path = write_temp("flat.yaml", flat);
  const CommandResult f = run_cli("simulate " + flat_path);
  EXPECT_EQ(f.rc, 1);
  EXPECT_TRUE(contains(f.err, flat_path + ":2:")) << f.err;
  EXPECT_TRUE(contains(f.err, "must divide the rank count 12")) << f.err;
}

TEST(CliHierarchical, SimulateTakesGpusPerNodeFromTheTopology) {
  // rhd across 3 nodes works on 2 chunks per piece: 4 x 2 chunks (one node would be 12).
  const std::string path =
      write_temp("sim.yaml",
                 kTopology3x4 +
                     "network: {model: flow}\n"
                     "collective: {algorithm: hierarchical, size: 64MiB, options: {inter: rhd}}\n");
  const CommandResult r = run_cli("simulate " + path + " --json");
  ASSERT_EQ(r.rc, 0) << r.err;
  const nlohmann::json j = nlohmann::json::parse(r.out);
  EXPECT_EQ(j["schedule"]["chunks"], 8) << r.out;
}

// A small run: with rank 11 late by 20 ms, stragglar_hier finishes before hierarchical, which
// waits for it; without a delay it is slower (its phase 1 and 2 in sequence). The shipped
// experiment multi_node_hierarchical loads (dry run).
TEST(CliHierarchical, RunOnAHierarchicalTopology) {
  const std::string dir = "/tmp/ssim_hier_out_" + std::to_string(::getpid());
  std::filesystem::remove_all(dir);
  const std::string exp =
      write_temp("exp.yaml", kTopology3x4 +
                                 "network: {model: flow}\n"
                                 "algorithms: [hierarchical, stragglar_hier, ring]\n"
                                 "size: 256MiB\n"
                                 "stragglers: {count: 1}\n"
                                 "sweep: {delay: [0, 20ms]}\n");
  const CommandResult e = run_cli("run " + exp + " -o " + dir + " -q --no-plots");
  ASSERT_EQ(e.rc, 0) << e.err;
  const nlohmann::json res = nlohmann::json::parse(slurp(dir + "/results.json"));
  const nlohmann::json& none = res["points"][0]["summary"];
  const nlohmann::json& late = res["points"][1]["summary"];
  auto t = [](const nlohmann::json& s, const char* a) {
    return s[a]["mean_completion_s"].get<double>();
  };
  EXPECT_LT(t(late, "stragglar_hier"), t(late, "hierarchical"));
  EXPECT_GT(t(none, "stragglar_hier"), t(none, "hierarchical"));
  std::filesystem::remove_all(dir);
  const CommandResult dry =
      run_cli("run " + std::string(STRAGGLESIM_SOURCE_DIR) +
              "/configs/experiments/multi_node_hierarchical.yaml --dry-run -o " + dir);
  EXPECT_EQ(dry.rc, 0) << dry.err;
  std::filesystem::remove_all(dir);
}

}  // namespace
}  // namespace ssim::testing
