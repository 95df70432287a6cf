// The experiment runner: CSV determinism across --jobs, the speedup columns, the StragglAR
// paper's scaling numbers from the shipped paper_scaling.yaml, the crossover report, partial
// results when a run fails.
#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <map>
#include <nlohmann/json.hpp>
#include <sstream>

#include "common/csv.hpp"
#include "common/error.hpp"
#include "experiments/config/config.hpp"
#include "experiments/config/resource_check.hpp"
#include "experiments/runner/experiment.hpp"
#include "run_support.hpp"
#include "schema/result_csv.hpp"

namespace ssim::experiments {
namespace {

std::string slurp(const std::string& path) {
  std::ifstream in(path);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

std::string temp_dir(const std::string& tag) {
  const std::string dir = "/tmp/ssim_exp_" + tag + "_" + std::to_string(::getpid());
  std::filesystem::remove_all(dir);
  return dir;
}

// results.csv as rows of named fields (no quoted commas in these tests' data).
std::vector<std::map<std::string, std::string>> read_csv(const std::string& path) {
  std::ifstream in(path);
  const std::vector<CsvRecord> records = ssim::read_csv(in, path, {});
  std::vector<std::map<std::string, std::string>> rows;
  for (std::size_t r = 1; r < records.size(); ++r) {
    std::map<std::string, std::string> row;
    for (std::size_t i = 0; i < records[r].fields.size(); ++i)
      row[records.front().fields.at(i)] = records[r].fields[i];
    rows.push_back(row);
  }
  return rows;
}

RunnerOptions quiet(const std::string& dir, int jobs) {
  RunnerOptions o;
  o.output = dir;
  o.jobs = jobs;
  o.progress = Progress::none;
  return o;
}

Experiment load(const std::string& yaml) {
  return load_experiment(ConfigReader::from_string(yaml, "exp.yaml"));
}

TEST(ExperimentRunner, SameSeedSameCsvWhateverTheJobs) {
  // Random delays that move (persistence < 1) and a `previous` policy: every source of
  // randomness and of order dependence in one experiment.
  const Experiment e = load(
      "topology: {kind: switch, ranks: 8, bandwidth: 450GiB/s, latency: 3us}\n"
      "algorithms: [stragglar, ring, dbtree]\n"
      "delays: {base: {distribution: exponential, mean: 50us}}\n"
      "stragglers: {count: 1, delay: {distribution: lognormal, mean: 9.5ms, p90: 18.8ms}, "
      "persistence: 0.8}\n"
      "prediction: {policy: previous}\n"
      "iterations: 20\nseed: 3\n"
      "sweep: {ranks: [4, 8, 12], size: [1MiB, 64MiB]}\n");
  const std::string a = temp_dir("det1"), b = temp_dir("det3");
  run_experiment(e, quiet(a, 1));
  run_experiment(e, quiet(b, 3));
  const std::string csv = slurp(a + "/results.csv");
  EXPECT_EQ(csv, slurp(b + "/results.csv"));
  EXPECT_EQ(read_csv(a + "/results.csv").size(),
            6u * 3u * 20u);  // points x algorithms x iterations
  std::filesystem::remove_all(a);
  std::filesystem::remove_all(b);
}

// Simulated rows record the options the generator got (the YAML's and the hierarchical
// topology's gpus_per_node) and transport `sim`; the straggler a schedule is relabelled for is
// not an option of the run.
TEST(ExperimentRunner, RowsRecordTheOptionsAndTheTransport) {
  const Experiment e = load(
      "topology: {kind: hierarchical, nodes: 2, gpus_per_node: 4,\n"
      "           nvlink: {bandwidth: 450GiB/s, latency: 3us}, nic: {bandwidth: 400Gbps, "
      "latency: 2us},\n"
      "           fabric: {kind: rail_optimized, spines: 2, bandwidth: 400Gbps, latency: 1us}}\n"
      "algorithms:\n"
      "  - ring\n"
      "  - {algorithm: hierarchical, label: hier_rhd, options: {inter: rhd}}\n"
      "  - {algorithm: stragglar, options: {straggler: 2}}\n"
      "size: 1MiB\nstragglers: {count: 1, delay: 1ms}\niterations: 1\n");
  const std::string dir = temp_dir("options");
  run_experiment(e, quiet(dir, 1));
  const auto rows = read_csv(dir + "/results.csv");
  ASSERT_EQ(rows.size(), 3u);
  std::map<std::string, std::string> options;
  for (const auto& row : rows) {
    EXPECT_EQ(row.at("transport"), "sim");
    options[row.at("label")] = row.at("options");
  }
  EXPECT_EQ(options.at("ring"), "");
  EXPECT_EQ(options.at("hier_rhd"), "gpus_per_node=4;inter=rhd");
  EXPECT_EQ(options.at("stragglar"), "");
  std::filesystem::remove_all(dir);
}

TEST(ExperimentRunner, SpeedupColumnsAgainstTheBaselineOfTheSameIteration) {
  // 8 ranks, alpha 3us, beta = 1/(450 GiB/s), 1 GiB, rank 7 arrives 10 ms late. Both ring and
  // rhd have the straggler in every round, so after its arrival each runs its closed form:
  //   ring: 2(n-1) alpha + 2(n-1)/n s beta = 14 * 3us + 1.75/450 s
  //   rhd:  2 log2(n) alpha + 2(n-1)/n s beta = 6 * 3us + 1.75/450 s
  // speedup (completion) = (10ms + T_ring) / (10ms + T_rhd); after the last arrival T_ring / T_rhd.
  const Experiment e = load(
      "topology: {kind: switch, ranks: 8, bandwidth: 450GiB/s, latency: 3us}\n"
      "algorithms: [rhd, ring]\nbaseline: ring\nsize: 1GiB\n"
      "stragglers: {count: 1, delay: 10ms}\niterations: 2\n");
  const std::string dir = temp_dir("speedup");
  const ExperimentResult r = run_experiment(e, quiet(dir, 2));
  const double t_ring = 14 * 3e-6 + 1.75 / 450, t_rhd = 6 * 3e-6 + 1.75 / 450;
  const auto rows = read_csv(dir + "/results.csv");
  ASSERT_EQ(rows.size(), 4u);
  for (const auto& row : rows) {
    const bool rhd = row.at("label") == "rhd";
    EXPECT_NEAR(std::stod(row.at("time_s")), 10e-3 + (rhd ? t_rhd : t_ring), 1e-12);
    EXPECT_NEAR(std::stod(row.at("speedup")), rhd ? (10e-3 + t_ring) / (10e-3 + t_rhd) : 1.0,
                1e-12);
    EXPECT_NEAR(std::stod(row.at("speedup_after_last_arrival")), rhd ? t_ring / t_rhd : 1.0, 1e-12);
    EXPECT_EQ(row.at("straggler"), "7");
    EXPECT_NEAR(std::stod(row.at("delay_s")), 10e-3, 1e-15);
    EXPECT_NEAR(std::stod(row.at("arrival_spread_s")), 10e-3, 1e-15);
  }
  EXPECT_NEAR(r.points[0][0].speedup, (10e-3 + t_ring) / (10e-3 + t_rhd), 1e-12);
  EXPECT_EQ(r.points[0][0].loss_fraction, 0.0);
  const auto j = nlohmann::json::parse(slurp(dir + "/results.json"));
  EXPECT_EQ(j["status"]["state"], "complete");
  EXPECT_EQ(j["points"][0]["seed"], std::to_string(e.points[0].config.seed));
  EXPECT_EQ(j["seed"], std::to_string(e.seed));
  std::filesystem::remove_all(dir);
}

// delay_s is how late the straggler came after every other rank (as in measured rows), the
// whole spread of arrivals is arrival_spread_s; results.json carries resolved values as JSON.
TEST(ExperimentRunner, DelayIsTheStragglersLatenessAndSettingsAreObjects) {
  // Base delays uniform in [0, 2ms] on every rank, 10 ms more on one: it is late by 10 ms plus
  // its base delay minus the largest other base delay, the spread is larger.
  const Experiment e = load(
      "topology: {kind: switch, ranks: 8, bandwidth: 450GiB/s, latency: 3us}\n"
      "algorithms: [ring, rhd]\nsize: 1MiB\n"
      "delays: {base: {distribution: uniform, low: 0ms, high: 2ms}}\n"
      "stragglers: {count: 1, delay: 10ms}\n"
      "iterations: 5\nseed: 9007199254740993\nsweep: {ranks: [8, 16]}\n");
  const std::string dir = temp_dir("lateness");
  run_experiment(e, quiet(dir, 1));
  const auto rows = read_csv(dir + "/results.csv");
  ASSERT_EQ(rows.size(), 20u);
  std::map<std::string, std::string>
      delay_of;  // "ranks/iteration" -> delay_s, same for every algorithm
  for (const auto& row : rows) {
    const double delay = std::stod(row.at("delay_s")),
                 spread = std::stod(row.at("arrival_spread_s"));
    EXPECT_GT(delay, 8e-3);
    EXPECT_LT(delay, 12e-3);
    EXPECT_LT(delay, spread);
    EXPECT_LE(spread, 12e-3);
    EXPECT_NEAR(spread, std::stod(row.at("time_s")) - std::stod(row.at("after_last_arrival_s")),
                1e-15);
    EXPECT_EQ(row.at("straggler"), row.at("last_rank"));
    EXPECT_EQ(row.at("timestamp"), "");
    EXPECT_EQ(row.at("wrong"), "");
    const std::string key = row.at("ranks") + "/" + row.at("iteration");
    if (delay_of.count(key)) {
      EXPECT_EQ(delay_of[key], row.at("delay_s"));
    }
    delay_of[key] = row.at("delay_s");
  }
  const auto j = nlohmann::json::parse(slurp(dir + "/results.json"));
  EXPECT_EQ(j["seed"], "9007199254740993");  // 2^53 + 1: not a double
  const auto& settings = j["settings"];
  ASSERT_TRUE(settings.is_object()) << settings;
  // Swept ranks: the topology's size and the straggler's rank (the last) differ by point.
  EXPECT_TRUE(settings["topology"]["ranks"].is_null()) << settings;
  EXPECT_EQ(settings["topology"]["ecmp"], false) << settings;
  EXPECT_TRUE(settings["delays"]["stragglers"].is_null()) << settings;
  EXPECT_TRUE(settings["topology_file"].is_null()) << settings;
  EXPECT_EQ(settings["size_bytes"], 1 << 20);
  EXPECT_EQ(settings["network"]["model"], "alphabeta");
  const auto& base = settings["delays"]["base"];
  EXPECT_EQ(base["distribution"], "uniform");
  EXPECT_DOUBLE_EQ(base["high_s"].get<double>(), 2e-3);
  EXPECT_DOUBLE_EQ(base["expected_s"].get<double>(), 1e-3);
  const auto& stragglers = j["points"][1]["config"]["delays"]["stragglers"];
  ASSERT_EQ(stragglers.size(), 1u);
  EXPECT_EQ(stragglers[0]["rank"], 15);
  EXPECT_EQ(stragglers[0]["extra"]["distribution"], "constant");
  EXPECT_DOUBLE_EQ(stragglers[0]["extra"]["value_s"].get<double>(), 10e-3);
  EXPECT_TRUE(j["points"][1]["config"]["delays"].is_object());
  EXPECT_TRUE(j["points"][1]["seed"].is_string());
  std::filesystem::remove_all(dir);

  // Two equal stragglers and nothing else: a tie, so no straggler and no delay, but a spread.
  const Experiment tie = load(
      "topology: {kind: switch, ranks: 8, bandwidth: 450GiB/s, latency: 3us}\n"
      "algorithms: [ring]\nsize: 1MiB\nstragglers: {count: 2, delay: 10ms}\niterations: 1\n");
  run_experiment(tie, quiet(dir, 1));
  const auto tied = read_csv(dir + "/results.csv");
  ASSERT_EQ(tied.size(), 1u);
  EXPECT_EQ(tied[0].at("delay_s"), "0");
  EXPECT_EQ(tied[0].at("straggler"), "");
  EXPECT_NEAR(std::stod(tied[0].at("arrival_spread_s")), 10e-3, 1e-15);
  std::filesystem::remove_all(dir);
}

TEST(ExperimentRunner, ShippedPaperScalingReproducesTheStragglarTable) {
  // The paper's reference simulator (arXiv 2505.23523, simulation.py): Ring/StragglAR after the
  // straggler arrives = 1.363 at n = 8 and 1.941 at n = 256. The shipped experiment, reduced to
  // those two rank counts and the two algorithms.
  Experiment e = load_experiment(ConfigReader(std::string(STRAGGLESIM_SOURCE_DIR) +
                                              "/configs/experiments/paper_scaling.yaml"));
  std::erase_if(e.points, [&](const SweepPoint& p) {
    const std::string& n = e.axes[0].labels[p.value[0]];
    return n != "8" && n != "256";
  });
  ASSERT_EQ(e.points.size(), 2u);
  std::erase_if(e.algorithms, [](const ExperimentAlgorithm& a) {
    return a.label != "stragglar" && a.label != "ring";
  });
  ASSERT_EQ(e.algorithms.size(), 2u);
  e.baseline = e.algorithms[0].label == "ring" ? 0 : 1;
  const std::string dir = temp_dir("paper");
  run_experiment(e, quiet(dir, 2));
  std::map<std::string, double> after;  // "label/ranks" -> after_last_arrival_s
  std::map<std::string, double> speedup_column;
  for (const auto& row : read_csv(dir + "/results.csv")) {
    after[row.at("label") + "/" + row.at("ranks")] = std::stod(row.at("after_last_arrival_s"));
    speedup_column[row.at("label") + "/" + row.at("ranks")] =
        std::stod(row.at("speedup_after_last_arrival"));
  }
  const double r8 = after.at("ring/8") / after.at("stragglar/8");
  const double r256 = after.at("ring/256") / after.at("stragglar/256");
  EXPECT_NEAR(r8, 1.363, 5e-4) << r8;
  EXPECT_NEAR(r256, 1.941, 5e-4) << r256;
  EXPECT_NEAR(speedup_column.at("stragglar/8"), r8, 1e-12);
  // Paper table, ms: StragglAR 2.884 and 3.069, Ring 3.931 and 5.957.
  EXPECT_NEAR(after.at("stragglar/8"), 2.884e-3, 5e-7);
  EXPECT_NEAR(after.at("ring/256"), 5.957e-3, 5e-7);
  std::filesystem::remove_all(dir);
}

// The shipped direct_load_scaling at 8 and 128 ranks. Time after the 25 ms straggler arrives,
// alpha 3 us, beta = 1 / 450 GiB/s: in the alphabeta model twoshot is Ring's time and oneshot
// (n-1)(alpha + s beta) (a rank's loads one at a time); in the flow model the loads of a round
// run at once, so twoshot takes 2 alpha + 2 (n-1)/n s beta and oneshot alpha + (n-1) s beta,
// all of it after the straggler arrives (its link carries it). StragglAR still wins at 1 GiB
// and loses to twoshot at 64 MiB on 128 ranks (its n-2+log2 n rounds of alpha); oneshot is the
// fastest at 64 KiB on 8 ranks.
TEST(ExperimentRunner, ShippedDirectLoadScalingShowsWhereStragglarWins) {
  Experiment e = load_experiment(ConfigReader(std::string(STRAGGLESIM_SOURCE_DIR) +
                                              "/configs/experiments/direct_load_scaling.yaml"));
  ASSERT_EQ(e.axes.size(), 3u);
  ASSERT_EQ(e.axes[1].key, "ranks");
  std::erase_if(e.points, [&](const SweepPoint& p) {
    const std::string& n = e.axes[1].labels[p.value[1]];
    return n != "8" && n != "128";
  });
  ASSERT_EQ(e.points.size(), 16u);
  const std::string dir = temp_dir("direct_load");
  run_experiment(e, quiet(dir, 2));
  std::map<std::string, double> after;  // "model/label/ranks/bytes" -> after_last_arrival_s
  for (const auto& row : read_csv(dir + "/results.csv")) {
    after[row.at("sweep.network.model") + "/" + row.at("label") + "/" + row.at("ranks") + "/" +
          row.at("bytes")] = std::stod(row.at("after_last_arrival_s"));
  }
  const double alpha = 3e-6, beta = 1.0 / (450.0 * 1024 * 1024 * 1024);
  for (const int n : {8, 128}) {
    for (const double s : {65536.0, 1048576.0, 67108864.0, 1073741824.0}) {
      const std::string tail =
          "/" + std::to_string(n) + "/" + std::to_string(static_cast<long long>(s));
      const double ab_one = (n - 1) * (alpha + s * beta);
      const double flow_one = alpha + (n - 1) * s * beta;
      const double flow_two = 2 * alpha + 2.0 * (n - 1) / n * s * beta;
      EXPECT_NEAR(after.at("alphabeta/oneshot" + tail), ab_one, 1e-9 * ab_one) << tail;
      EXPECT_NEAR(after.at("alphabeta/twoshot" + tail), after.at("alphabeta/ring" + tail), 1e-15)
          << tail;
      EXPECT_NEAR(after.at("flow/oneshot" + tail), flow_one, 1e-9 * flow_one) << tail;
      EXPECT_NEAR(after.at("flow/twoshot" + tail), flow_two, 1e-9 * flow_two) << tail;
    }
  }
  EXPECT_LT(after.at("flow/stragglar/128/1073741824"), after.at("flow/twoshot/128/1073741824"));
  EXPECT_LT(after.at("flow/twoshot/128/67108864"), after.at("flow/stragglar/128/67108864"));
  for (const char* other : {"stragglar", "ring", "rhd", "twoshot"}) {
    EXPECT_LT(after.at("flow/oneshot/8/65536"), after.at(std::string("flow/") + other + "/8/65536"))
        << other;
  }
  std::filesystem::remove_all(dir);
}

TEST(ExperimentRunner, SummaryShowsWinnerLossesAndCriticalDelay) {
  // 8 ranks, 4 GiB: StragglAR ties Ring at the model's critical delay, 3.495 ms
  // (T_RS + T_2 - T_ring with 6 and 9 rounds of alpha + s/7 beta, 14 of alpha + s/8 beta).
  const Experiment e = load(
      "topology: {kind: switch, ranks: 8, bandwidth: 450GiB/s, latency: 3us}\n"
      "algorithms: [stragglar, ring]\nbaseline: ring\nsize: 4GiB\n"
      "stragglers: {count: 1, delay: 1ms}\niterations: 1\n"
      "sweep: {delay: [3ms, 3.5ms, 4ms]}\n");
  const ExperimentRuns runs = run_experiment_in_memory(e, 2);
  const std::string table = summary_table(e, runs.summaries);
  // At 3 ms: StragglAR max(3ms, T_RS) + T_2 = 19.093 ms; Ring 3 ms + T_ring = 18.598 ms.
  EXPECT_NE(table.find("19.093ms (0.974x)  18.598ms  ring"), std::string::npos) << table;
  EXPECT_NE(table.find("from 3.5ms on; alpha-beta model critical delay 3.495ms"), std::string::npos)
      << table;
  EXPECT_NE(table.find("wins: stragglar 2/3 ring 1/3"), std::string::npos) << table;
  EXPECT_EQ(table.find("loses"), std::string::npos) << "constant delays: no loss column\n" << table;

  const Experiment random = load(
      "topology: {kind: switch, ranks: 8, bandwidth: 450GiB/s, latency: 3us}\n"
      "algorithms: [stragglar, ring]\nbaseline: ring\nsize: 1GiB\n"
      "stragglers: {count: 1, delay: {distribution: uniform, low: 0ms, high: 2ms}}\niterations: "
      "50\n");
  const ExperimentRuns rr = run_experiment_in_memory(random, 1);
  // Below ~0.88 ms (the 1 GiB critical delay) StragglAR loses: about 44% of U(0, 2ms).
  EXPECT_GT(rr.summaries[0][0].loss_fraction, 0.2);
  EXPECT_LT(rr.summaries[0][0].loss_fraction, 0.7);
  EXPECT_NE(summary_table(random, rr.summaries).find("loses"), std::string::npos);
}

TEST(ExperimentRunner, AFailingRunKeepsThePointsBeforeIt) {
  const Experiment e = load(ssim::testing::kFailingPointExperiment);
  for (int jobs : {1, 2}) {
    const std::string dir = temp_dir("fail" + std::to_string(jobs));
    std::string message;
    try {
      run_experiment(e, quiet(dir, jobs));
    } catch (const InputError& err) {
      message = err.what();
    }
    EXPECT_NE(message.find("run 2 ("), std::string::npos) << message;
    EXPECT_NE(message.find("ring) failed: no route"), std::string::npos) << message;
    EXPECT_NE(message.find("the 2 runs of the 1 sweep point before it are in " + dir +
                           "/results.csv (partial)"),
              std::string::npos)
        << message;
    // Point 0: 2 algorithms x 2 iterations. The swept link lists hold commas: a real CSV reader.
    std::ifstream csv(dir + "/results.csv");
    EXPECT_EQ(schema::read_result_csv(csv, "results.csv").size(), 4u);
    const auto j = nlohmann::json::parse(slurp(dir + "/results.json"));
    EXPECT_EQ(j["status"]["state"], "failed");
    EXPECT_TRUE(j["points"][0].contains("summary"));
    EXPECT_FALSE(j["points"][1].contains("summary"));
    std::filesystem::remove_all(dir);
  }
}

// The ETA weighs runs by their estimated simulation time (experiments/config/resource_check.hpp),
// so a sweep whose large or flow-model points come last is not promised the pace of its small ones.
TEST(ExperimentProgress, EtaWeighsRunsByCost) {
  const Experiment e = load(
      "topology: {kind: switch, ranks: 256, bandwidth: 450GiB/s, latency: 3us}\n"
      "algorithms: [ring]\nsize: 1MiB\niterations: 3\n"
      "sweep: {ranks: [64, 256], network.model: [alphabeta, flow]}\n");
  ASSERT_EQ(e.run_count(), 4u);
  std::map<std::pair<int, bool>, double> cost;  // (ranks, flow) -> cost
  for (std::size_t r = 0; r < e.run_count(); ++r) {
    const sim::SimulationConfig c = run_config(e, r);
    EXPECT_DOUBLE_EQ(estimated_run_cost(e, r), simulation_seconds(c));
    cost[{c.topology.gpu_count(), c.network == sim::NetworkKind::flow}] = estimated_run_cost(e, r);
  }
  ASSERT_EQ(cost.size(), 4u);
  const double small = cost[{64, false}], large = cost[{256, false}], flow = cost[{64, true}];
  EXPECT_GT(large, 10 * small);  // ring: 2 n (n - 1) transfers per iteration
  EXPECT_GT(flow, 10 * small);   // the flow model costs 20x more per transfer
  // 1 of 2 runs done in 10 s, the done one a fifth of the cost: a run count would say 10 s left,
  // the cost says 40 s.
  const std::string line = progress_line(1, 2, 1.0, 5.0, 10.0, 80);
  EXPECT_NE(line.find("1/2 runs 10s  ETA 40s"), std::string::npos) << line;
  EXPECT_NE(line.find("[######------------------------] "), std::string::npos) << line;
  EXPECT_EQ(progress_line(2, 2, 5.0, 5.0, 50.0, 80).find("ETA"), std::string::npos);
}

// A redraw never reaches the terminal's last column, so it never wraps: the bar shrinks, then
// goes, then the text is cut.
TEST(ExperimentProgress, BarFitsTheTerminal) {
  for (const int columns : {200, 80, 60, 40, 30, 20, 10}) {
    const std::string line = progress_line(1234, 40960, 1, 3e6, 4000.0, columns);
    EXPECT_LE(static_cast<int>(line.size()), columns - 1) << columns << ": " << line;
    EXPECT_NE(line.find(columns >= 40 ? "1234/40960 runs 1h06m  ETA" : "1234/"), std::string::npos)
        << columns << ": " << line;
  }
  EXPECT_EQ(progress_line(1, 2, 1, 2, 1.0, 60).substr(0, 1), "[");  // 60 columns: with a bar
}

}  // namespace
}  // namespace ssim::experiments
