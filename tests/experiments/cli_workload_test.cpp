// `run` experiments with a `workload:` (experiments/config/experiment.hpp, Workload): every run is
// a training job whose steps are the run's iterations. A point equals `train` of the same job to
// the bit; the shipped experiment runs, resumes from its journal and merges from shards; bad
// input is one message naming the file, line and key, exit 1, nothing written.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>

#include "cli_support.hpp"
#include "common/units.hpp"
#include "experiments/config/config.hpp"
#include "experiments/config/training.hpp"
#include "experiments/runner/experiment.hpp"

namespace ssim::testing {
namespace {

namespace fs = std::filesystem;

bool contains(const std::string& s, const std::string& what) {
  return s.find(what) != std::string::npos;
}

std::string temp_dir(const std::string& name) {
  const std::string dir = "/tmp/ssim_workload_" + std::to_string(::getpid()) + "_" + name;
  fs::remove_all(dir);
  fs::create_directories(dir);
  return dir;
}

// The job both ways: `common` + train's `steps:` or run's `iterations:`.
const std::string kCommon = R"(topology: {kind: switch, ranks: 4, bandwidth: 100GB/s, latency: 3us}
algorithms: [ring, stragglar]
prediction: {policy: previous}
delays:
  base: {distribution: exponential, mean: 200us}
  persistent: [{rank: 2, delay: 2ms, persistence: 0.7}]
workload:
  samples_per_gpu: 4
  bucket_cap: 8MiB
  optimizer: 1ms
  model:
    achieved_tflops: 100
    layers:
      - {name: embed, params: 4000000, flops: 1e9}
      - {name: block, count: 4, params: 3000000, flops: 2e11}
seed: 7
)";

const std::string kShipped =
    STRAGGLESIM_SOURCE_DIR "/configs/experiments/gpt2_medium_64gpu_delay.yaml";

TEST(WorkloadRun, OnePointEqualsTrainToTheBit) {
  const sim::TrainingConfig tc = experiments::load_training_config(
      experiments::ConfigReader::from_string(kCommon + "steps: 40\n", "train.yaml"));
  const sim::TrainingResult train = sim::run_training(tc);
  const experiments::Experiment e = experiments::load_experiment(
      experiments::ConfigReader::from_string(kCommon + "iterations: 40\n", "run.yaml"));
  ASSERT_EQ(e.points.size(), 1u);
  ASSERT_TRUE(e.points[0].workload);
  EXPECT_EQ(e.points[0].config.size.value, (4'000'000ull + 4 * 3'000'000ull) * 4);
  ASSERT_EQ(train.runs.size(), 2u);
  for (std::size_t a = 0; a < 2; ++a) {
    const sim::SimulationResult r = experiments::execute_run(e, a, 1);
    const sim::TrainingRun& t = train.runs[a];
    EXPECT_EQ(r.algorithm, t.algorithm);
    ASSERT_EQ(r.iterations.size(), t.step_times.size());
    for (std::size_t s = 0; s < t.step_times.size(); ++s) {
      EXPECT_EQ(r.iterations[s].completion.value, t.step_times[s].value) << a << " step " << s;
    }
    EXPECT_EQ(r.mean_completion.value, t.mean_step.value);
    EXPECT_EQ(r.mean_after_last_arrival.value, t.mean_exposed_comm.value);
    EXPECT_EQ(r.straggler_aware, a == 1);
  }
  // Random delays: the steps differ, and StragglAR's straggler is a rank.
  const sim::SimulationResult s = experiments::execute_run(e, 1, 1);
  EXPECT_NE(s.iterations[3].completion.value, s.iterations[4].completion.value);
  EXPECT_GE(s.iterations[5].predicted_straggler, 0);
  EXPECT_EQ(experiments::execute_run(e, 0, 1).iterations[5].predicted_straggler, -1);
}

TEST(WorkloadRun, GroupedModeAndBucketSweep) {
  std::string common = kCommon;
  common.replace(common.find("ranks: 4"), 8, "ranks: 8");
  const std::string yaml = common +
                           "iterations: 10\nmode: {mode: grouped, groups: 2, every: 4}\n"
                           "sweep: {workload.bucket_cap: [8MiB, 16MiB]}\n";
  const experiments::Experiment e =
      experiments::load_experiment(experiments::ConfigReader::from_string(yaml, "grouped.yaml"));
  ASSERT_EQ(e.points.size(), 2u);
  EXPECT_EQ(e.points[1].workload->bucket_cap.value, 16ull << 20);
  EXPECT_EQ(e.points[0].workload->mode.describe(), "grouped(groups=2,every=4)");
  // The same as train with that mode.
  sim::TrainingConfig tc = experiments::load_training_config(experiments::ConfigReader::from_string(
      common + "steps: 10\nmodes: [{mode: grouped, groups: 2, every: 4}]\n", "t.yaml"));
  tc.seed = e.points[0].config.seed;
  const sim::TrainingResult t = sim::run_training(tc);
  const sim::SimulationResult r = experiments::execute_run(e, 0, 1);
  for (std::size_t s = 0; s < 10; ++s)
    EXPECT_EQ(r.iterations[s].completion.value, t.runs[0].step_times[s].value) << s;
}

// train's straggler-excluding mode in a run experiment: the same steps as train.
TEST(WorkloadRun, ExcludeLateModeEqualsTrain) {
  const std::string mode = "{mode: exclude_late, late: 1, every: 4}";
  const experiments::Experiment e =
      experiments::load_experiment(experiments::ConfigReader::from_string(
          kCommon + "iterations: 12\nmode: " + mode + "\n", "x.yaml"));
  sim::TrainingConfig tc = experiments::load_training_config(experiments::ConfigReader::from_string(
      kCommon + "steps: 12\nmodes: [" + mode + "]\n", "t.yaml"));
  tc.seed = e.points[0].config.seed;
  const sim::TrainingResult t = sim::run_training(tc);
  ASSERT_EQ(t.runs.size(), 2u);
  for (std::size_t a = 0; a < 2; ++a) {
    const sim::SimulationResult r = experiments::execute_run(e, a, 1);
    ASSERT_EQ(r.iterations.size(), 12u);
    for (std::size_t s = 0; s < 12; ++s)
      EXPECT_EQ(r.iterations[s].completion.value, t.runs[a].step_times[s].value) << a << " " << s;
  }
  // Not synchronous: someone sat out, so the steps differ from the synchronous job's.
  const experiments::Experiment sync = experiments::load_experiment(
      experiments::ConfigReader::from_string(kCommon + "iterations: 12\n", "s.yaml"));
  EXPECT_NE(experiments::execute_run(sync, 0, 1).mean_completion.value,
            experiments::execute_run(e, 0, 1).mean_completion.value);
}

TEST(WorkloadRun, ShippedExperimentDryRunRunResumeAndShards) {
  const std::string dir = temp_dir("shipped");
  CommandResult r = run_cli("run " + kShipped + " --dry-run");
  ASSERT_EQ(r.rc, 0) << r.err;
  EXPECT_TRUE(contains(r.out, "4 sweep points x 2 algorithms = 8 runs of 20 iterations")) << r.out;
  EXPECT_TRUE(contains(
      r.out,
      "training job: 1386028KiB of gradients in 25 buckets (cap 25MiB), synchronous, 20 steps"))
      << r.out;

  r = run_cli("run " + kShipped + " -o " + dir + "/full --iterations 4 -q --no-plots");
  ASSERT_EQ(r.rc, 0) << r.err;
  const std::string csv = slurp(dir + "/full/results.csv");
  EXPECT_EQ(std::count(csv.begin(), csv.end(), '\n'), 1 + 4 * 2 * 4) << csv.substr(0, 300);
  const nlohmann::json j = nlohmann::json::parse(slurp(dir + "/full/results.json"));
  const nlohmann::json& w = j["points"][0]["config"]["workload"];
  EXPECT_EQ(w["params"], 354823168);
  EXPECT_EQ(w["mode"], "synchronous");
  // Ring's step time grows with the straggler's delay; at 0 delay StragglAR cannot win much.
  double last = 0;
  for (int p = 0; p < 4; ++p) {
    const double t = j["points"][p]["summary"]["ring"]["mean_completion_s"];
    EXPECT_GT(t, last) << p;
    last = t;
  }

  // Resume: a journal that lost its last runs gives the same results.
  fs::create_directories(dir + "/resumed");
  {
    std::istringstream in(slurp(dir + "/full/journal.jsonl"));
    std::ofstream out(dir + "/resumed/journal.jsonl");
    std::string line;
    for (int i = 0; i < 1 + 5 && std::getline(in, line); ++i) out << line << "\n";
  }
  r = run_cli("run " + kShipped + " -o " + dir + "/resumed --iterations 4 --resume -q --no-plots");
  ASSERT_EQ(r.rc, 0) << r.err;
  EXPECT_FALSE(contains(r.err, "damaged")) << r.err;  // the 5 journal lines were taken
  EXPECT_EQ(slurp(dir + "/resumed/results.csv"), csv);

  // Shards merged: the same bytes.
  for (int i = 1; i <= 2; ++i) {
    r = run_cli("run " + kShipped + " -o " + dir + "/s" + std::to_string(i) +
                " --iterations 4 --shard " + std::to_string(i) + "/2 -q");
    ASSERT_EQ(r.rc, 0) << r.err;
  }
  r = run_cli("merge " + dir + "/s1 " + dir + "/s2 -o " + dir + "/m --no-plots");
  ASSERT_EQ(r.rc, 0) << r.err;
  EXPECT_EQ(slurp(dir + "/m/results.csv"), csv);
  fs::remove_all(dir);
}

// `yaml` is refused with exit 1 and `message`, nothing written.
void expect_refused(const std::string& yaml, const std::string& message) {
  const std::string dir = temp_dir("bad");
  const std::string path = dir + "/bad.yaml";
  std::ofstream(path) << yaml;
  const CommandResult r = run_cli("run " + path + " -o " + dir + "/out -q --no-plots");
  EXPECT_EQ(r.rc, 1) << r.err;
  EXPECT_TRUE(contains(r.err, path + ":" + message)) << r.err;
  EXPECT_EQ(std::count(r.err.begin(), r.err.end(), '\n'), 1) << r.err;
  EXPECT_FALSE(fs::exists(dir + "/out"));
  fs::remove_all(dir);
}

TEST(WorkloadRun, BadInputNamesFileLineAndKey) {
  const std::string job = kCommon + "iterations: 5\n";
  expect_refused(job + "size: 1GiB\n", "18:7: size: size has no meaning with a workload");
  expect_refused(job + "sweep: {size: [1MiB, 2MiB]}\n",
                 "18:15: sweep.size: size has no meaning with a workload");
  std::string typo = job;
  typo.replace(typo.find("bucket_cap"), 10, "bucket_kap");
  expect_refused(typo, "9:3: workload.bucket_kap: unknown key");
  std::string zero = job;
  zero.replace(zero.find("flops: 1e9"), 10, "flops: 0");
  expect_refused(zero, "14:47: workload.model.layers[0].flops: flops must be > 0");
  expect_refused(job + "mode: {mode: grouped, groups: 3, every: 2}\n",
                 "18:31: mode.groups: groups must divide the 4 ranks");
  {
    std::string eager = job;
    eager.replace(eager.find("{policy: previous}"), 18, "{policy: eager}");
    expect_refused(eager + "mode: {mode: exclude_late, late: 1, every: 2}\n",
                   "18:7: mode: exclude_late(late=1,every=2) predicts the ranks that sit out "
                   "before the step: use prediction policy oracle, previous or fixed (not eager)");
  }
  expect_refused(job + "mode: {mode: exclude_late, late: 3, every: 2}\n",
                 "18:34: mode.late: must be in [1, 2] (value: 3)");
  {
    // A swept workload value: the point, then the value's place in the sweep list.
    const std::string dir = temp_dir("bad_sweep");
    std::ofstream(dir + "/bad.yaml") << job + "sweep: {workload.bucket_cap: [8MiB, 1GiB]}\n";
    const CommandResult r = run_cli("run " + dir + "/bad.yaml -o " + dir + "/out -q");
    EXPECT_EQ(r.rc, 1);
    EXPECT_TRUE(
        contains(r.err, "sweep point 2 of 2 (workload.bucket_cap=1GiB): " + dir +
                            "/bad.yaml:18:37: workload.bucket_cap: bucket_cap 1GiB is larger "
                            "than the model's gradients"))
        << r.err;
    EXPECT_FALSE(fs::exists(dir + "/out"));
    fs::remove_all(dir);
  }
  std::string k2 = job;
  k2.replace(k2.find("{policy: previous}"), 18, "{policy: previous, k: 2}");
  expect_refused(k2, "3:35: prediction.k: the training model takes one late rank");
  // mode without a workload; train's keys that run spells otherwise.
  expect_refused(
      "topology: {kind: switch, ranks: 4, bandwidth: 100GB/s, latency: 3us}\n"
      "algorithms: [ring]\nsize: 1MiB\nmode: synchronous\n",
      "4:7: mode: mode (a synchronization mode) is for a training job");
  expect_refused(job + "steps: 3\n", "18:1: steps: unknown key");
  // --trace records one collective, not a step.
  const std::string dir = temp_dir("trace");
  std::ofstream(dir + "/job.yaml") << job;
  const CommandResult r = run_cli("run " + dir + "/job.yaml --trace 0 -o " + dir + "/out");
  EXPECT_EQ(r.rc, 1);
  EXPECT_TRUE(contains(r.err, "--trace: " + dir + "/job.yaml is a training job")) << r.err;
  EXPECT_FALSE(fs::exists(dir + "/out"));
  fs::remove_all(dir);
}

// The job of kCommon without delays: its step times do not depend on the seed.
std::string no_delay_job() {
  std::string job = kCommon;
  job.erase(job.find("prediction:"), job.find("workload:") - job.find("prediction:"));
  return job;
}

// `workload: {file: JOB}` takes a train job's workload; `advise --workload JOB` ranks the
// algorithms by that job's step time, the same means as `train`.
TEST(WorkloadRun, AWorkloadFileAndTheAdvisor) {
  const std::string dir = temp_dir("advise");
  const std::string job = no_delay_job();
  std::ofstream(dir + "/job.yaml") << job + "steps: 5\n";
  const sim::TrainingResult train = sim::run_training(experiments::load_training_config(
      experiments::ConfigReader::from_string(job + "steps: 5\n", "job.yaml")));
  ASSERT_EQ(train.runs.size(), 2u);
  const std::string run_yaml =
      "topology: {kind: switch, ranks: 4, bandwidth: 100GB/s, latency: 3us}\n"
      "algorithms: [ring, stragglar]\nworkload: {file: job.yaml}\niterations: 5\n";
  std::ofstream(dir + "/run.yaml") << run_yaml;
  const experiments::Experiment e =
      experiments::load_experiment(experiments::ConfigReader(dir + "/run.yaml"));
  for (std::size_t a = 0; a < 2; ++a)
    EXPECT_EQ(experiments::execute_run(e, a, 1).mean_completion.value,
              train.runs[a].mean_step.value);

  const CommandResult r = run_cli("advise --topology switch:100GB/s:3us --ranks 4 --workload " +
                                  dir + "/job.yaml --algorithms ring,stragglar -n 5 -j 1");
  ASSERT_EQ(r.rc, 0) << r.err;
  EXPECT_TRUE(contains(r.out, "training step (")) << r.out;
  EXPECT_TRUE(contains(r.out, "5 steps")) << r.out;
  for (const sim::TrainingRun& t : train.runs)
    EXPECT_TRUE(contains(r.out, format_time(t.mean_step))) << format_time(t.mean_step) << r.out;
  const std::size_t best = train.runs[0].mean_step < train.runs[1].mean_step ? 0 : 1;
  EXPECT_TRUE(contains(r.out, "use " + train.runs[best].algorithm + ": expected " +
                                  format_time(train.runs[best].mean_step) + " per training step"))
      << r.out;

  // Other keys beside file, both --size and --workload, --trace with a workload: refused.
  std::ofstream(dir + "/bad.yaml") << "topology: {kind: switch, ranks: 4, bandwidth: 100GB/s, "
                                      "latency: 3us}\nalgorithms: [ring]\n"
                                      "workload: {file: job.yaml, bucket_cap: 8MiB}\n";
  const CommandResult bad = run_cli("run " + dir + "/bad.yaml -o " + dir + "/out -q");
  EXPECT_EQ(bad.rc, 1);
  EXPECT_TRUE(contains(bad.err, dir + "/bad.yaml:3:40: workload.bucket_cap: a workload file "
                                      "takes no other keys (bucket_cap)"))
      << bad.err;
  EXPECT_FALSE(fs::exists(dir + "/out"));
  const CommandResult both = run_cli(
      "advise --topology switch:100GB/s:3us --ranks 4 --size 1MiB "
      "--workload " +
      dir + "/job.yaml");
  EXPECT_EQ(both.rc, 2);
  EXPECT_TRUE(contains(both.err, "give --size (one AllReduce) or --workload FILE")) << both.err;
  const CommandResult trace = run_cli("advise --topology switch:100GB/s:3us --ranks 4 --workload " +
                                      dir + "/job.yaml --trace " + dir + "/t.json");
  EXPECT_EQ(trace.rc, 2);
  EXPECT_FALSE(fs::exists(dir + "/t.json"));
  fs::remove_all(dir);
}

}  // namespace
}  // namespace ssim::testing
