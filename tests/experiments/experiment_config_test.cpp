// load_experiment: sweep expansion, shorthands, seeds, and one test per kind of invalid field
// (each error names the file, line and column, the key path and the value).
#include <gtest/gtest.h>

#include "common/error.hpp"
#include "experiments/config/config.hpp"
#include "experiments/runner/experiment.hpp"

namespace ssim::experiments {
namespace {

Experiment load(const std::string& yaml) {
  return load_experiment(ConfigReader::from_string(yaml, "exp.yaml"));
}

std::string error_of(const std::string& yaml) {
  try {
    load(yaml);
  } catch (const InputError& e) {
    return e.what();
  }
  return "no error";
}

bool contains(const std::string& s, const std::string& what) {
  return s.find(what) != std::string::npos;
}

#define EXPECT_HAS(text, what) \
  EXPECT_TRUE(contains(text, what)) << "expected \"" << (what) << "\" in: " << (text)

const std::string kHead =
    "topology: {kind: switch, ranks: 8, bandwidth: 450GiB/s, latency: 3us}\n"  // line 1
    "algorithms: [stragglar, ring]\n";                                         // line 2

// Without a baseline: key the baseline is what NCCL runs where `nccl` is listed (the one NCCL
// chooses for, before a forced algo), else the first algorithm.
TEST(ExperimentConfig, DefaultBaselineIsNcclWhereListed) {
  const std::string topo = "topology: {kind: switch, ranks: 8, bandwidth: 450GiB/s, latency: 3us}\n";
  EXPECT_EQ(load(kHead + "size: 1MiB\n").baseline, 0u);
  EXPECT_EQ(load(topo + "algorithms: [stragglar, ring, nccl]\nsize: 1MiB\n").baseline, 2u);
  EXPECT_EQ(load(topo +
                 "algorithms: [ring, {algorithm: nccl, label: forced, options: {algo: ring}}, "
                 "nccl]\nsize: 1MiB\n")
                .baseline,
            2u);
  EXPECT_EQ(load(topo +
                 "algorithms: [ring, {algorithm: nccl, label: forced, options: {algo: ring}}]\n"
                 "size: 1MiB\n")
                .baseline,
            1u);
  // A baseline: key still decides.
  EXPECT_EQ(load(topo + "algorithms: [stragglar, ring, nccl]\nbaseline: ring\nsize: 1MiB\n")
                .baseline,
            1u);
}

TEST(ExperimentConfig, CartesianProductLastAxisFastest) {
  const Experiment e = load(kHead +
                            "baseline: ring\n"
                            "stragglers: {count: 1, delay: 5ms}\n"
                            "iterations: 3\n"
                            "sweep:\n"
                            "  ranks: [4, 8]\n"
                            "  size: {min: 1MiB, max: 4MiB, factor: 2}\n");
  ASSERT_EQ(e.axes.size(), 2u);
  EXPECT_EQ(e.axes[1].labels, (std::vector<std::string>{"1MiB", "2MiB", "4MiB"}));
  ASSERT_EQ(e.points.size(), 6u);
  EXPECT_EQ(e.run_count(), 12u);
  EXPECT_EQ(e.baseline, 1u);
  const int ranks[] = {4, 4, 4, 8, 8, 8};
  const std::uint64_t sizes[] = {1u << 20, 2u << 20, 4u << 20, 1u << 20, 2u << 20, 4u << 20};
  for (std::size_t p = 0; p < 6; ++p) {
    const sim::SimulationConfig& c = e.points[p].config;
    EXPECT_EQ(c.topology.gpu_count(), ranks[p]) << p;
    EXPECT_EQ(c.size.value, sizes[p]) << p;
    EXPECT_EQ(c.iterations, 3);
    // The straggler follows the rank count: rank n-1.
    ASSERT_EQ(c.delays.stragglers.size(), 1u);
    EXPECT_EQ(c.delays.stragglers[0].rank, ranks[p] - 1);
  }
  EXPECT_EQ(e.point_label(4), "ranks=8 size=2MiB");
  EXPECT_EQ(e.output, "results/exp");  // the file's stem
}

TEST(ExperimentConfig, SeedsDependOnSeedAndValuesOnly) {
  const std::string body = kHead + "size: 1MiB\nseed: 7\nsweep: {ranks: [4, 8]}\n";
  const Experiment a = load(body);
  const Experiment b = load(kHead + "size: 1MiB\nseed: 7\nsweep: {ranks: [16, 8, 32]}\n");
  const Experiment c = load(kHead + "size: 1MiB\nseed: 8\nsweep: {ranks: [4, 8]}\n");
  EXPECT_NE(a.points[0].config.seed, a.points[1].config.seed);
  EXPECT_EQ(a.points[1].config.seed, b.points[1].config.seed);  // both ranks=8, seed 7
  EXPECT_NE(a.points[1].config.seed, c.points[1].config.seed);
  EXPECT_EQ(a.points[0].config.seed, point_seed(7, a.axes, {0}));
  Experiment d = load(body);
  set_seed(d, 8);
  EXPECT_EQ(d.points[1].config.seed, c.points[1].config.seed);
}

TEST(ExperimentConfig, ShorthandsAndParameterPaths) {
  const Experiment e =
      load(kHead +
           "size: 1MiB\n"
           "stragglers: {count: 1, delay: {distribution: lognormal, mean: 9.5ms, p90: 18.8ms}}\n"
           "sweep:\n"
           "  stragglers.delay.mean: [9.5ms, 12ms]\n"
           "  stragglers: [1, 2]\n"
           "  persistence: [0.8]\n"
           "  policy: [previous]\n"
           "  topology.bandwidth: [100GB/s]\n");
  ASSERT_EQ(e.points.size(), 4u);
  const sim::SimulationConfig& last = e.points[3].config;  // mean 12ms, 2 stragglers
  ASSERT_EQ(last.delays.stragglers.size(), 2u);
  EXPECT_EQ(last.delays.stragglers[0].rank, 7);
  EXPECT_EQ(last.delays.stragglers[1].rank, 6);
  EXPECT_DOUBLE_EQ(last.delays.stragglers[1].persistence, 0.8);
  EXPECT_NEAR(last.delays.stragglers[0].extra.mean()->value, 12e-3, 1e-12);
  EXPECT_NEAR(e.points[0].config.delays.stragglers[0].extra.mean()->value, 9.5e-3, 1e-12);
  EXPECT_EQ(last.policy, sim::StragglerPolicy::previous);
  EXPECT_DOUBLE_EQ(last.topology.link(0).bandwidth.value, 100e9);
  // Numeric axis values in SI units, for plots.
  EXPECT_EQ(e.axes[0].unit, "s");
  EXPECT_TRUE(e.axes[0].straggler_delay);
  EXPECT_DOUBLE_EQ(*e.axes[0].numeric[1], 12e-3);
  EXPECT_EQ(e.axes[4].unit, "B/s");
  EXPECT_FALSE(e.axes[3].numeric[0].has_value());  // "previous"
}

TEST(ExperimentConfig, RanksOfAHierarchicalTopologyAreNodesTimesGpus) {
  const Experiment e = load(
      "topology: {kind: hierarchical, nodes: 1, gpus_per_node: 8, nvlink: {bandwidth: 450GiB/s, "
      "latency: 3us},\n"
      "           nic: {bandwidth: 400Gbps, latency: 2us}, fabric: {kind: rail_optimized, spines: "
      "2}}\n"
      "algorithms: [ring]\nsize: 1MiB\nsweep: {ranks: [16, 32]}\n");
  EXPECT_EQ(e.points[0].config.topology.gpu_count(), 16);
  EXPECT_EQ(e.points[1].config.topology.gpu_count(), 32);
}

TEST(ExperimentConfig, LoadingTwiceGivesTheSameExperiment) {
  // Points are loaded by patching the document in place; every patch must be undone.
  const ConfigReader r = ConfigReader::from_string(
      kHead + "size: 1MiB\nstragglers: {delay: 1ms}\nsweep: {delay: [2ms, 3ms], ranks: [4, 16]}\n",
      "exp.yaml");
  const Experiment a = load_experiment(r);
  const Experiment b = load_experiment(r);
  ASSERT_EQ(a.points.size(), b.points.size());
  for (std::size_t p = 0; p < a.points.size(); ++p) {
    EXPECT_EQ(a.points[p].config.delays.describe(), b.points[p].config.delays.describe());
    EXPECT_EQ(a.points[p].config.topology.gpu_count(), b.points[p].config.topology.gpu_count());
  }
  EXPECT_EQ(r.root().child("stragglers").child("delay").as_string(), "1ms");
  EXPECT_EQ(r.root().child("topology").get_int("ranks", std::nullopt, 0, 100), 8);
}

TEST(ExperimentConfig, ShippedExperimentWithATopologyFile) {
  const Experiment e = load_experiment(
      ConfigReader(std::string(STRAGGLESIM_SOURCE_DIR) + "/configs/experiments/multi_node.yaml"));
  EXPECT_EQ(e.points.front().config.topology.gpu_count(), 32);
  EXPECT_EQ(e.points.front().config.network, sim::NetworkKind::flow);
}

// Invalid fields. Line numbers count from 1 in the YAML text of each test.

TEST(ExperimentConfigErrors, UnknownTopLevelKey) {
  const std::string err = error_of(kHead + "size: 1MiB\nsweeep: {ranks: [4]}\n");
  EXPECT_HAS(err, "exp.yaml:4:1: sweeep: unknown key 'sweeep'");
}

TEST(ExperimentConfigErrors, UnknownAlgorithm) {
  const std::string err = error_of(
      "topology: {kind: switch, ranks: 8, bandwidth: 450GiB/s, latency: 3us}\n"
      "algorithms: [ring, strgglar]\nsize: 1MiB\n");
  EXPECT_HAS(err, "exp.yaml:2:20: algorithms[1]:");
  EXPECT_HAS(err, "strgglar");
  EXPECT_HAS(err, "stragglar");  // the list of valid names
}

TEST(ExperimentConfigErrors, AlgorithmThatDoesNotSupportASweptRankCount) {
  const std::string err = error_of(
      "topology: {kind: switch, ranks: 8, bandwidth: 450GiB/s, latency: 3us}\n"
      "algorithms: [ring, stragglar]\nsize: 1MiB\nsweep: {ranks: [8, 2]}\n");
  EXPECT_HAS(err, "sweep point 2 of 2 (ranks=2)");
  EXPECT_HAS(err,
             "exp.yaml:2:20: algorithms[1]: algorithm stragglar does not support 2 ranks "
             "(supported: n >= 3)");
}

TEST(ExperimentConfigErrors, UnknownOptionAndDuplicateLabel) {
  EXPECT_HAS(error_of(kHead.substr(0, kHead.find('\n') + 1) +
                      "algorithms: [{algorithm: dbtree, options: {segmnts: 4}}]\nsize: 1MiB\n"),
             "algorithms[0].options.segmnts: algorithm dbtree has no option 'segmnts' (did you "
             "mean 'segments'? options: segments)");
  EXPECT_HAS(
      error_of(kHead.substr(0, kHead.find('\n') + 1) + "algorithms: [ring, ring]\nsize: 1MiB\n"),
      "exp.yaml:2:20: algorithms[1]: algorithm label 'ring' is used twice");
}

TEST(ExperimentConfigErrors, BaselineNotAnAlgorithm) {
  EXPECT_HAS(
      error_of(kHead + "baseline: rhd\nsize: 1MiB\n"),
      "exp.yaml:3:11: baseline: the baseline must be one of the algorithms' labels (value: rhd)");
}

TEST(ExperimentConfigErrors, BadMetricSizeIterations) {
  EXPECT_HAS(error_of(kHead + "metric: fastest\nsize: 1MiB\n"),
             "exp.yaml:3:9: metric: unknown value 'fastest' (expected one of: completion, "
             "after_last_arrival)");
  EXPECT_HAS(error_of(kHead + "size: 1 MiBs\n"), "exp.yaml:3:7: size:");
  EXPECT_HAS(error_of(kHead + "size: 1MiB\niterations: 0\n"),
             "exp.yaml:4:13: iterations: must be in [1, 10000000]");
  EXPECT_HAS(error_of(kHead), "missing required key 'size' (or sweep it)");
}

TEST(ExperimentConfigErrors, EmptySweeps) {
  EXPECT_HAS(error_of(kHead + "size: 1MiB\nsweep: {ranks: []}\n"),
             "exp.yaml:4:16: sweep.ranks: empty sweep: give at least one value");
  EXPECT_HAS(error_of(kHead + "size: 1MiB\nsweep: {}\n"),
             "sweep: empty sweep: give at least one axis");
}

TEST(ExperimentConfigErrors, UnknownSweepKey) {
  EXPECT_HAS(error_of(kHead + "size: 1MiB\nsweep:\n  rank: [4]\n"),
             "exp.yaml:5:9: sweep.rank: cannot sweep 'rank'");
}

TEST(ExperimentConfigErrors, BadSweptValuePointsAtTheValue) {
  const std::string err = error_of(kHead + "size: 1MiB\nsweep:\n  ranks: [4, eight]\n");
  EXPECT_HAS(err, "sweep point 2 of 2 (ranks=eight)");
  EXPECT_HAS(err, "exp.yaml:5:14: sweep.ranks[1]: expected an integer (value: eight)");
  const std::string p =
      error_of(kHead + "size: 1MiB\nstragglers: {delay: 1ms}\nsweep:\n  persistence: [0.5, 1.5]\n");
  EXPECT_HAS(p, "sweep point 2 of 2 (persistence=1.5)");
  EXPECT_HAS(p, "exp.yaml:6:22: stragglers.persistence: must be in [0, 1] (value: 1.5)");
}

TEST(ExperimentConfigErrors, DuplicateAndOverlappingSweeps) {
  EXPECT_HAS(error_of(kHead + "size: 1MiB\nsweep:\n  ranks: [4, 4]\n"),
             "exp.yaml:5:14: sweep.ranks[1]: the value is listed twice in sweep.ranks");
  EXPECT_HAS(error_of(kHead + "size: 1MiB\nstragglers: {delay: 1ms}\nsweep:\n  delay: [1ms]\n  "
                              "stragglers.delay: [2ms]\n"),
             "sweep.stragglers.delay: overlaps sweep.delay");
}

TEST(ExperimentConfigErrors, BadRange) {
  EXPECT_HAS(error_of(kHead + "sweep:\n  size: {min: 1MiB, max: 4MiB}\n"),
             "exp.yaml:4:9: sweep.size: give a range either a factor or a step");
  EXPECT_HAS(error_of(kHead + "sweep:\n  size: {min: 4MiB, max: 1MiB, factor: 2}\n"),
             "exp.yaml:4:26: sweep.size.max: max must be >= min (value: 1MiB)");
  EXPECT_HAS(error_of(kHead + "size: 1MiB\nsweep:\n  delay: {min: 1, max: 4, step: 1}\n"),
             "a {min, max, factor|step} range is only for size, ranks and stragglers");
}

TEST(ExperimentConfigErrors, MissingTopologyFile) {
  EXPECT_HAS(error_of("topology: {file: nowhere.yaml}\nalgorithms: [ring]\nsize: 1MiB\n"),
             "exp.yaml:1:18: topology.file: topology file './nowhere.yaml' does not exist");
}

TEST(ExperimentConfigErrors, RanksOfATorusCannotBeSwept) {
  EXPECT_HAS(error_of("topology: {kind: torus2d, x: 2, y: 2, bandwidth: 1GB/s, latency: 1us}\n"
                      "algorithms: [ring]\nsize: 1MiB\nsweep: {ranks: [4]}\n"),
             "sweep.ranks[0]: ranks cannot set the rank count of a torus2d topology");
  EXPECT_HAS(
      error_of("topology: {kind: hierarchical, nodes: 1, gpus_per_node: 8, nvlink: {bandwidth: "
               "1GB/s, latency: "
               "1us}, nic: {bandwidth: 1GB/s, latency: 1us}, fabric: {kind: rail_optimized}}\n"
               "algorithms: [ring]\nsize: 1MiB\nsweep: {ranks: [12]}\n"),
      "the rank count must be a multiple of 8");
}

TEST(ExperimentConfigErrors, Stragglers) {
  EXPECT_HAS(error_of(kHead + "size: 1MiB\nstragglers: {count: 1, ranks: [3], delay: 1ms}\n"),
             "exp.yaml:4:13: stragglers: give stragglers either a count or ranks");
  // p90 above exp(z^2/2) mean = 2.27 x 5ms: no lognormal has that tail.
  EXPECT_HAS(error_of(kHead + "size: 1MiB\nstragglers: {count: 1, delay: {distribution: lognormal, "
                              "mean: 5ms, p90: 20ms}}\n"),
             "exp.yaml:4:31: stragglers.delay: lognormal");
  EXPECT_HAS(error_of(kHead + "size: 1MiB\nstragglers: {count: 1}\n"),
             "stragglers: missing required key 'delay'");
  EXPECT_HAS(error_of(kHead + "size: 1MiB\nstragglers: {ranks: [8], delay: 1ms}\n"),
             "exp.yaml:4:22: stragglers.ranks[0]: must be in [0, 7] (value: 8)");
}

TEST(ExperimentConfigErrors, PredictionAndNetwork) {
  EXPECT_HAS(error_of(kHead + "size: 1MiB\nprediction: {policy: psychic}\n"),
             "exp.yaml:4:22: prediction.policy: unknown value 'psychic' (expected one of: oracle, "
             "fixed, previous, adaptive, eager)");
  EXPECT_HAS(error_of(kHead + "size: 1MiB\nnetwork: {model: packet}\n"),
             "exp.yaml:4:18: network.model: unknown value 'packet'");
}

}  // namespace
}  // namespace ssim::experiments
