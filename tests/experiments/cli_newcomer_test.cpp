// What a newcomer meets in the first hour (issue 43): "did you mean" for unknown names
// (topologies, algorithms, keys, values, options, subcommands), the train table lined up with
// long labels, and advise's progress on stderr for long runs.
#include <gtest/gtest.h>

#include <fstream>
#include <sstream>

#include "cli_yaml_support.hpp"

namespace ssim::testing {
namespace {

CommandResult run_yaml(const std::string& command, const std::string& yaml,
                       const std::string& flags = "") {
  return run_yaml_file("newcomer", command, yaml, flags);
}

TEST(CliDidYouMean, Topology) {
  const CommandResult r = run_cli("advise --topology dgx_h10 --size 1MiB");
  EXPECT_EQ(r.rc, 1);
  EXPECT_TRUE(contains(r.err, "--topology 'dgx_h10': no such file or shipped topology; did you "
                              "mean 'dgx_h100'?"))
      << r.err;
  // Nothing close: the list of forms, no guess.
  const CommandResult far = run_cli("advise --topology my_cluster --size 1MiB");
  EXPECT_EQ(far.rc, 1);
  EXPECT_FALSE(contains(far.err, "did you mean")) << far.err;
  EXPECT_TRUE(contains(far.err, "not a file, a shipped topology")) << far.err;
}

// A shipped topology's name works wherever a topology file does (issue 39): `topology:
// dgx_h100`, `{file: dgx_h100, ...overrides}` and `validate --topology dgx_h100` read
// configs/topologies/dgx_h100.yaml, and give what its path gives; a near miss is named.
TEST(CliShippedTopology, NameWorksWhereAFileDoes) {
  const std::string path = std::string(STRAGGLESIM_SOURCE_DIR) + "/configs/topologies/dgx_h100.yaml";
  const std::string sim = "collective: {algorithm: ring, size: 64MiB}\ntopology: ";
  const CommandResult by_path = run_yaml("simulate", sim + "{file: " + path + "}\n");
  ASSERT_EQ(by_path.rc, 0) << by_path.err;
  for (const std::string form : {"dgx_h100", "{file: dgx_h100}"}) {
    const CommandResult r = run_yaml("simulate", sim + form + "\n");
    ASSERT_EQ(r.rc, 0) << form << ": " << r.err;
    EXPECT_EQ(r.out, by_path.out) << form;
  }
  // Overrides apply to the shipped file as to any file.
  const CommandResult slow = run_yaml("simulate", sim + "{file: dgx_h100, bandwidth: 45GiB/s}\n");
  ASSERT_EQ(slow.rc, 0) << slow.err;
  EXPECT_NE(slow.out, by_path.out);
  const CommandResult typo = run_yaml("simulate", sim + "{file: dgx_h10}\n");
  EXPECT_EQ(typo.rc, 1);
  EXPECT_TRUE(contains(typo.err, ":2:18: topology.file: no topology file 'dgx_h10' beside this "
                                 "file and no shipped topology of that name"))
      << typo.err;
  EXPECT_TRUE(contains(typo.err, "did you mean 'dgx_h100'?")) << typo.err;
  const std::string log = std::string(STRAGGLESIM_SOURCE_DIR) +
                          "/data/published/nccl-tests/01-h100-dgx-1node-8gpu-nvls-8B-16G-nvidia-dgxc.txt";
  const CommandResult v_path = run_cli("validate " + log + " --topology " + path);
  const CommandResult v_name = run_cli("validate " + log + " --topology dgx_h100");
  ASSERT_EQ(v_name.rc, 0) << v_name.err;
  // The same comparison; the first line names the topology as it was given.
  const auto after_first_line = [](const std::string& s) { return s.substr(s.find('\n')); };
  EXPECT_TRUE(contains(v_name.out, "against dgx-h100 (dgx_h100)")) << v_name.out;
  EXPECT_EQ(after_first_line(v_name.out), after_first_line(v_path.out));
  const CommandResult v_typo = run_cli("validate " + log + " --topology dgx_h10");
  EXPECT_EQ(v_typo.rc, 1);
  EXPECT_TRUE(contains(v_typo.err, "--topology 'dgx_h10': no such file or shipped topology; did "
                                   "you mean 'dgx_h100'?"))
      << v_typo.err;
}

TEST(CliDidYouMean, AlgorithmKeyValueOptionSubcommand) {
  const std::string sim = R"(topology: {kind: switch, ranks: 8, bandwidth: 450GiB/s, latency: 3us}
collective: {algorithm: stragglra, size: 1MiB}
)";
  CommandResult r = run_yaml("simulate", sim);
  EXPECT_EQ(r.rc, 1);
  EXPECT_TRUE(contains(r.err, "unknown algorithm 'stragglra' (did you mean 'stragglar'? valid: "))
      << r.err;
  std::string typo = sim;
  typo.replace(typo.find("stragglra"), 9, "ring");
  typo.replace(typo.find("latency"), 7, "latnecy");
  r = run_yaml("simulate", typo);
  EXPECT_EQ(r.rc, 1);
  EXPECT_TRUE(contains(r.err, "unknown key 'latnecy' for a switch topology (did you mean "
                              "'latency'? allowed: "))
      << r.err;
  std::string top = sim;
  top.replace(top.find("stragglra"), 9, "ring");
  top += "itertions: 3\n";
  r = run_yaml("simulate", top);
  EXPECT_EQ(r.rc, 1);
  EXPECT_TRUE(contains(r.err, "unknown key 'itertions' (did you mean 'iterations'? allowed here: "))
      << r.err;
  std::string value = sim;
  value.replace(value.find("stragglra"), 9, "ring");
  value += "network: {model: flwo}\n";
  r = run_yaml("simulate", value);
  EXPECT_EQ(r.rc, 1);
  EXPECT_TRUE(contains(r.err, "unknown value 'flwo' (did you mean 'flow'? expected one of: "))
      << r.err;
  r = run_cli("advise --topolgy dgx_h100 --size 1MiB");
  EXPECT_EQ(r.rc, 2);
  EXPECT_TRUE(contains(r.err, "--topolgy: did you mean --topology?")) << r.err;
  // Flags naming algorithms, policies and algorithm options (issue 43).
  r = run_cli("advise --topology switch:450GiB/s:3us --ranks 8 --size 1MiB --algorithms ring,rign");
  EXPECT_EQ(r.rc, 1);
  EXPECT_TRUE(contains(r.err, "error: --algorithms: unknown algorithm 'rign' (did you mean "
                              "'ring'? valid: "))
      << r.err;
  r = run_cli("advise --topology switch:450GiB/s:3us --ranks 8 --size 1MiB --policy adaptiv");
  EXPECT_EQ(r.rc, 2);
  EXPECT_TRUE(contains(r.err, "--policy: unknown policy 'adaptiv' (did you mean 'adaptive'? "))
      << r.err;
  r = run_cli("schedule stragglar --ranks 8 --option stragglrs=2");
  EXPECT_EQ(r.rc, 1);
  EXPECT_TRUE(contains(r.err, "algorithm stragglar has no option 'stragglrs' (did you mean "
                              "'stragglers'? options: "))
      << r.err;
  r = run_yaml("simulate", R"(topology: {kind: switch, ranks: 8, bandwidth: 450GiB/s, latency: 3us}
collective: {algorithm: dbtree, size: 1MiB, options: {segmnts: 4}}
)");
  EXPECT_EQ(r.rc, 1);
  EXPECT_TRUE(contains(r.err, "collective.options.segmnts: algorithm dbtree has no option "
                              "'segmnts' (did you mean 'segments'? options: segments)"))
      << r.err;
  r = run_cli("simualte x.yaml");
  EXPECT_EQ(r.rc, 2);
  EXPECT_TRUE(contains(r.err, "unknown subcommand 'simualte' (did you mean 'simulate'? ")) << r.err;
}

// The train table: an algorithm label longer than the column (hierarchical with its options)
// widens it, so every row's columns start where the header's do.
TEST(CliTrainTable, LongLabelsLineUp) {
  const CommandResult r = run_yaml("train", R"(topology: {kind: switch, ranks: 4, bandwidth: 100GB/s, latency: 3us}
algorithms: [ring, {algorithm: hierarchical, options: {gpus_per_node: 2}}]
delays: {persistent: [{rank: 2, delay: 2ms}]}
workload:
  model: {params: 4000000, forward: 5ms, backward: 10ms}
  bucket_cap: 8MiB
steps: 5
)");
  ASSERT_EQ(r.rc, 0) << r.err;
  std::istringstream lines(r.out);
  std::string header;
  std::vector<std::string> rows;
  for (std::string line; std::getline(lines, line);) {
    if (line.rfind("algorithm ", 0) == 0) header = line;
    else if (!header.empty() && line.empty()) break;
    else if (!header.empty()) rows.push_back(line);
  }
  ASSERT_EQ(rows.size(), 2u) << r.out;
  EXPECT_TRUE(contains(rows[1], "hierarchical(gpus_per_node=2)")) << r.out;
  const std::size_t mode = header.find(" mode") + 1, lost = header.find("     lost") + 9;
  for (const std::string& row : rows) {
    EXPECT_EQ(row.find("synchronous"), mode) << r.out;
    EXPECT_EQ(row.size(), header.size()) << r.out;  // every column ends where its header does
    EXPECT_EQ(row[lost - 1], '%') << r.out;
  }
}

// advise prints progress on stderr once a run has taken --progress-after seconds (5 by
// default: the quick answers of the tests print none); -q never.
TEST(CliAdviseProgress, LinesAfterTheGivenTime) {
  const std::string base =
      "advise --topology switch:450GiB/s:3us --ranks 8 --size 1MiB --delay-dist 1ms -n 5 "
      "--algorithms ring,rhd,stragglar --jobs 1";
  const CommandResult r = run_cli(base + " --progress-after 0");
  ASSERT_EQ(r.rc, 0) << r.err;
  EXPECT_TRUE(contains(r.err, "[1/3] run 0 ")) << r.err;
  EXPECT_TRUE(contains(r.err, "[3/3] run 2 ")) << r.err;
  const CommandResult q = run_cli(base + " --progress-after 0 -q");
  ASSERT_EQ(q.rc, 0) << q.err;
  EXPECT_TRUE(q.err.empty()) << q.err;
  const CommandResult quick = run_cli(base);
  ASSERT_EQ(quick.rc, 0) << quick.err;
  EXPECT_EQ(quick.out, r.out);
}

}  // namespace
}  // namespace ssim::testing
