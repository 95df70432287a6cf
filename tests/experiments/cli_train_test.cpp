// `stragglesim train`: the shipped training configs run, the outputs are complete CSV/JSON, and
// bad input is one message naming the file, line and key, exit 1, nothing written.
#include <gtest/gtest.h>

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>

#include "cli_support.hpp"

namespace ssim::testing {
namespace {

bool contains(const std::string& s, const std::string& what) {
  return s.find(what) != std::string::npos;
}

std::string temp(const std::string& name) {
  return "/tmp/ssim_train_" + std::to_string(::getpid()) + "_" + name;
}

const std::string kJob = R"(topology: {kind: switch, ranks: 4, bandwidth: 100GB/s, latency: 3us}
algorithms: [ring, {algorithm: stragglar}]
delays: {persistent: [{rank: 2, delay: 2ms}]}
workload:
  samples_per_gpu: 4
  bucket_cap: 8MiB
  optimizer: 1ms
  model:
    achieved_tflops: 100
    layers:
      - {name: embed, params: 4000000, flops: 1e9}
      - {name: block, count: 4, params: 3000000, flops: 2e11}
steps: 50
seed: 7
cluster_gpus: 1000
)";

CommandResult train(const std::string& yaml, const std::string& flags = "") {
  const std::string path = temp("job.yaml");
  std::ofstream(path) << yaml;
  CommandResult r = run_cli("train " + path + " " + flags);
  std::remove(path.c_str());
  return r;
}

// Replaces the first `from` in `yaml`.
std::string with_in(std::string yaml, const std::string& from, const std::string& to) {
  const std::size_t at = yaml.find(from);
  EXPECT_NE(at, std::string::npos) << from;
  return yaml.replace(at, from.size(), to);
}

TEST(CliTrain, JsonAndCsvOutputs) {
  const std::string steps = temp("steps.csv"), ranks = temp("ranks.csv");
  const CommandResult r = train(kJob, "--json --steps-csv " + steps + " --ranks-csv " + ranks);
  ASSERT_EQ(r.rc, 0) << r.err;
  const nlohmann::json j = nlohmann::json::parse(r.out);
  ASSERT_EQ(j["runs"].size(), 2u);
  EXPECT_EQ(j["buckets"].size(), 5u);  // every layer (12 or 16 MB) fills a bucket of 8 MiB
  for (const auto& run : j["runs"]) {
    // A 2 ms persistent straggler: every step costs it, nothing more (ring) or less.
    const double t = run["mean_step_s"], t0 = run["baseline_mean_step_s"];
    EXPECT_GT(t, t0);
    EXPECT_LE(t, t0 + 0.002 + 1e-9);
    EXPECT_NEAR(double(run["lost_gpu_hours_per_day"]), 1000 * 24 * (1 - t0 / t), 1e-6);
    EXPECT_EQ(run["mean_idle_s"].size(), 4u);
    EXPECT_NEAR(double(run["mean_delay_s"][2]), 0.002, 1e-12);
  }
  EXPECT_NEAR(double(j["runs"][0]["mean_step_s"]) - double(j["runs"][0]["baseline_mean_step_s"]),
              0.002, 1e-9);
  const std::string s = slurp(steps);
  EXPECT_EQ(std::count(s.begin(), s.end(), '\n'), 1 + 2 * 50);
  EXPECT_TRUE(contains(s, "algorithm,options,mode,step,step_time_s,"));
  EXPECT_TRUE(contains(s, "\nstragglar,,synchronous,49,"));
  const std::string k = slurp(ranks);
  EXPECT_EQ(std::count(k.begin(), k.end(), '\n'), 1 + 2 * 4);
  EXPECT_TRUE(contains(k, "\nring,,synchronous,2,"));
  std::remove(steps.c_str());
  std::remove(ranks.c_str());
}

TEST(CliTrain, TableAndSameSeedSameResults) {
  const CommandResult a = train(kJob), b = train(kJob);
  ASSERT_EQ(a.rc, 0) << a.err;
  EXPECT_EQ(a.out, b.out);
  EXPECT_TRUE(contains(a.out, "4 ranks"));
  EXPECT_TRUE(contains(a.out, "GPU-h/day"));
  EXPECT_TRUE(contains(a.out, "\nstragglar "));
  const CommandResult c = train(kJob, "--seed 8 --steps 10");
  ASSERT_EQ(c.rc, 0) << c.err;
  EXPECT_TRUE(contains(c.out, "10 steps, seed 8"));
  // --persistence overrides every persistent straggler's (experiments/train_plot.py sweeps it).
  const CommandResult p = train(kJob, "--persistence 0.5 --json");
  ASSERT_EQ(p.rc, 0) << p.err;
  EXPECT_TRUE(contains(nlohmann::json::parse(p.out)["config"]["delays"], "persistence 0.5"));
  for (const char* bad : {"--persistence 1.5", "--persistence -0.1", "--persistence nan"}) {
    const CommandResult r = train(kJob, bad);
    EXPECT_EQ(r.rc, 2) << bad << ": " << r.err;  // a usage error, as every bad flag
    EXPECT_TRUE(contains(r.err, "--persistence")) << r.err;
    EXPECT_TRUE(r.out.empty()) << bad;
  }
  const CommandResult none = train(
      with_in(kJob, "delays: {persistent: [{rank: 2, delay: 2ms}]}\n", ""), "--persistence 1");
  EXPECT_EQ(none.rc, 1);
  EXPECT_TRUE(contains(none.err, "--persistence needs a persistent straggler")) << none.err;
}

// GPU-hours lost against the mode's common reference (the job without delays on NCCL's choice)
// beside today's figure against each algorithm's own no-delay step.
TEST(CliTrain, LostAgainstTheCommonReference) {
  // A switch that reduces: NCCL's choice (NVLS) beats the point-to-point algorithms, so it is
  // the reference (on the plain switch it is slower, and Ring is, below). The flow model: in the
  // alpha-beta model NVLS's pipelined slices pay NVLS's 25 us step each (its batches do not
  // overlap there), which leaves NCCL's choice 0.07% behind Ring here.
  const std::string job =
      with_in(kJob, "latency: 3us}",
              "latency: 3us, reduce: {bandwidth: 10TB/s, latency: 1us}}\nnetwork: {model: flow}");
  const CommandResult table = train(job);
  ASSERT_EQ(table.rc, 0) << table.err;
  EXPECT_TRUE(contains(table.out, "  stale  ref lost  ref GPU-h/day\n")) << table.out;
  EXPECT_TRUE(contains(table.out, "\nreference: synchronous: nccl (NCCL's choice per collective "
                                  "size) without delays, "))
      << table.out;
  const CommandResult r = train(job, "--json");
  ASSERT_EQ(r.rc, 0) << r.err;
  const nlohmann::json j = nlohmann::json::parse(r.out);
  ASSERT_TRUE(j.contains("references")) << r.out;
  ASSERT_EQ(j["references"].size(), 1u);
  const nlohmann::json& ref = j["references"][0];
  EXPECT_EQ(ref["mode"], "synchronous");
  EXPECT_EQ(ref["nccl"], true);
  EXPECT_EQ(ref["algorithm"], "nccl");
  const double t_ref = ref["mean_step_s"];
  // The table's line gives the reference's step as the JSON does.
  char step[64];
  std::snprintf(step, sizeof step, "without delays, %.3fms per step\n", t_ref * 1e3);
  EXPECT_TRUE(contains(table.out, step)) << step << "\n" << table.out;
  for (const auto& run : j["runs"]) {
    const double t = run["mean_step_s"];
    EXPECT_EQ(double(run["reference_mean_step_s"]), t_ref);
    EXPECT_NEAR(double(run["lost_vs_reference"]), 1 - t_ref / t, 1e-15);
    EXPECT_NEAR(double(run["lost_vs_reference_gpu_hours_per_day"]), 1000 * 24 * (1 - t_ref / t),
                1e-9);
  }
  // StragglAR is the slower: it looks better against its own no-delay step and is worse
  // against the common one.
  const nlohmann::json& ring = j["runs"][0];
  const nlohmann::json& stragglar = j["runs"][1];
  ASSERT_GT(double(stragglar["mean_step_s"]), double(ring["mean_step_s"]));
  EXPECT_LT(double(stragglar["lost_gpu_hours_per_day"]), double(ring["lost_gpu_hours_per_day"]));
  EXPECT_GT(double(stragglar["lost_vs_reference_gpu_hours_per_day"]),
            double(ring["lost_vs_reference_gpu_hours_per_day"]));
  // The plain switch: NCCL's kernels pay their launch and 0.824 of the links, Ring its routes
  // alone, so Ring's no-delay step is the reference and the line says by how much.
  const CommandResult plain = train(kJob);
  ASSERT_EQ(plain.rc, 0) << plain.err;
  EXPECT_TRUE(contains(plain.out, "reference: synchronous: ring, the fastest of the job's "
                                  "algorithms without delays, "))
      << plain.out;
  EXPECT_TRUE(contains(plain.out, "(not nccl: NCCL's choice takes ")) << plain.out;
  // Ranks sharing one GPU (NCCL refuses them): the fastest of the job's algorithms, and why.
  const CommandResult shared =
      train(with_in(kJob, "{kind: switch, ranks: 4, bandwidth: 100GB/s, latency: 3us}",
                    "{file: h100_single_gpu}"));
  ASSERT_EQ(shared.rc, 0) << shared.err;
  EXPECT_TRUE(contains(shared.out, ", the fastest of the job's algorithms without delays, "))
      << shared.out;
  EXPECT_TRUE(contains(shared.out, "(not nccl: topology h100_single_gpu puts several ranks on "
                                   "one GPU, which NCCL refuses)\n"))
      << shared.out;
}

TEST(CliTrain, ShippedConfigsRun) {
  const std::filesystem::path dir = std::filesystem::path(STRAGGLESIM_SOURCE_DIR) / "configs/train";
  int configs = 0;
  for (const auto& entry : std::filesystem::directory_iterator(dir)) {
    if (entry.path().extension() != ".yaml") continue;
    const CommandResult r = run_cli("train " + entry.path().string() + " --steps 3 --json");
    ASSERT_EQ(r.rc, 0) << entry.path() << ": " << r.err;
    EXPECT_FALSE(nlohmann::json::parse(r.out)["runs"].empty());
    ++configs;
  }
  EXPECT_GT(configs, 0);
}

TEST(CliTrain, AdaptiveAndEagerPolicies) {
  // StragglAR alone, rank 2 late by 2 ms on every step.
  const std::string job = with_in(kJob, "[ring, {algorithm: stragglar}]", "[stragglar]");
  const std::string steps = temp("adaptive_steps.csv");
  const CommandResult a = train(job + "prediction: {policy: adaptive, fallback: [ring]}\n",
                                "--json --steps-csv " + steps);
  ASSERT_EQ(a.rc, 0) << a.err;
  const nlohmann::json j = nlohmann::json::parse(a.out);
  EXPECT_EQ(j["config"]["policy"], "adaptive");
  EXPECT_EQ(j["config"]["fallbacks"], nlohmann::json::array({"ring"}));
  // Step 0 has no prediction (nobody late: ring wins); from step 1 on StragglAR for rank 2 in
  // the first four buckets. The last one (the embedding's, full right after the fourth) is
  // entered by every rank when the fourth is reduced, which waited for rank 2: nobody is late
  // there, and ring runs it. Fallbacks: 5 + 49 of 250 collectives.
  EXPECT_EQ(j["runs"][0]["adaptive_collectives"], 5 * 50);
  EXPECT_NEAR(double(j["runs"][0]["fallback_fraction"]), 54.0 / 250, 1e-12);
  const std::string s = slurp(steps);
  EXPECT_TRUE(contains(s, "exposed_comm_s,bucket_runs,average_run,sat_out\n")) << s.substr(0, 200);
  EXPECT_TRUE(contains(s, ",ring ring ring ring ring,,\n")) << s.substr(0, 400);
  EXPECT_TRUE(contains(s, ",stragglar@2 stragglar@2 stragglar@2 stragglar@2 ring,,\n"));
  std::remove(steps.c_str());
  const CommandResult table = train(job + "prediction: {policy: adaptive}\n");
  ASSERT_EQ(table.rc, 0) << table.err;
  EXPECT_TRUE(contains(table.out,
                       "adaptive: stragglar synchronous ran a fallback (ring) in 21.6% of 250 "
                       "collectives\n"))
      << table.out;

  // Eager: StragglAR for rank 2 from step 0 on; a detection latency costs step time.
  const CommandResult e0 =
      train(job + "prediction: {policy: eager, detection: 0us}\n", "--json --steps-csv " + steps);
  ASSERT_EQ(e0.rc, 0) << e0.err;
  const std::string es = slurp(steps);
  EXPECT_FALSE(contains(es, "ring")) << es.substr(0, 400);
  EXPECT_TRUE(contains(es, "\nstragglar,,synchronous,0,"));
  std::remove(steps.c_str());
  const CommandResult e1 = train(job + "prediction: {policy: eager, detection: 5ms}\n", "--json");
  ASSERT_EQ(e1.rc, 0) << e1.err;
  const nlohmann::json j0 = nlohmann::json::parse(e0.out), j1 = nlohmann::json::parse(e1.out);
  EXPECT_EQ(j0["config"]["policy"], "eager");
  EXPECT_EQ(double(j1["config"]["detection_s"]), 0.005);
  EXPECT_GT(double(j1["runs"][0]["mean_step_s"]), double(j0["runs"][0]["mean_step_s"]) + 0.001);
}

TEST(CliTrain, ExcludeLateSitsTheStragglerOut) {
  // Rank 2 late by 2 ms on every step; oracle: it is the last every step and sits out, the
  // others run their AllReduce on 3 ranks. Its own step (compute, 2 ms, optimizer) is longer
  // than theirs (compute, a short exposed AllReduce, optimizer) on this fast switch, so it falls
  // behind, and every 10 steps the average waits for it: the job runs at its pace, a little
  // faster than synchronous, which adds the exposed AllReduce to it every step.
  const std::string job = with_in(kJob, "steps: 50",
                                  "modes: [synchronous, {mode: exclude_late, late: 1, every: 10}]\n"
                                  "prediction: {policy: oracle}\nsteps: 50");
  const std::string steps = temp("exclude_steps.csv"), ranks = temp("exclude_ranks.csv");
  const CommandResult r = train(job, "--json --steps-csv " + steps + " --ranks-csv " + ranks);
  ASSERT_EQ(r.rc, 0) << r.err;
  const nlohmann::json j = nlohmann::json::parse(r.out);
  ASSERT_EQ(j["runs"].size(), 4u);
  const nlohmann::json& ex = j["runs"][2];
  EXPECT_EQ(ex["mode"], "exclude_late(late=1,every=10)");
  const double own = double(j["forward_s"]) + double(j["backward_s"]) + 0.001 + 0.002;
  EXPECT_GT(double(ex["mean_step_s"]), own);
  EXPECT_LT(double(ex["mean_step_s"]), double(j["runs"][0]["mean_step_s"]));
  EXPECT_EQ(double(ex["sat_out_fraction"][2]), 1.0);
  EXPECT_DOUBLE_EQ(double(ex["mean_staleness_steps"]), 4.5);
  EXPECT_EQ(ex["max_staleness_steps"], 9);
  EXPECT_EQ(j["runs"][0]["sat_out_fraction"][2], 0.0);
  const std::string s = slurp(steps);
  EXPECT_TRUE(contains(s, "\nring,,\"exclude_late(late=1,every=10)\",0,")) << s.substr(0, 400);
  EXPECT_TRUE(contains(s, ",ring ring ring ring ring,,2\n")) << s.substr(0, 400);
  EXPECT_TRUE(contains(s, ",ring ring ring ring ring,ring,")) << s.substr(0, 400);  // the average
  const std::string k = slurp(ranks);
  EXPECT_TRUE(contains(k, ",mean_delay_s,sat_out_fraction\n")) << k;
  std::remove(steps.c_str());
  std::remove(ranks.c_str());
  const CommandResult table = train(job);
  ASSERT_EQ(table.rc, 0) << table.err;
  EXPECT_TRUE(contains(table.out, "sat out: ring exclude_late(late=1,every=10): ")) << table.out;
  EXPECT_TRUE(contains(table.out, "most often rank 2 100.0%")) << table.out;
}

// Replaces the first `from` in kJob.
std::string with(const std::string& from, const std::string& to) {
  std::string s = kJob;
  const std::size_t at = s.find(from);
  EXPECT_NE(at, std::string::npos) << from;
  return s.replace(at, from.size(), to);
}

TEST(CliTrain, BadInputNamesFileLineAndKeyAndWritesNothing) {
  struct Case {
    std::string yaml, line, key;
  };
  const std::vector<Case> cases = {
      {with("bucket_cap: 8MiB", "bucket_cap: 1GiB"), ":6:", "workload.bucket_cap"},
      {with("flops: 2e11", "flops: 0"), ":12:", "workload.model.layers[1].flops"},
      {with("flops: 2e11", "flops: -3"), ":12:", "workload.model.layers[1].flops"},
      {with("flops: 2e11", "flops: .nan"), ":12:", "workload.model.layers[1].flops"},
      {with("flops: 1e9", "forward: 0ms"), ":11:", "workload.model.layers[0].forward"},
      {with("optimizer: 1ms", "optimizer: -1ms"), ":7:", "workload.optimizer"},
      {with("steps: 50", "modes: [{mode: grouped, groups: 3, every: 2}]\nsteps: 50"),
       ":13:", "modes[0].groups"},
      {with("steps: 50", "modes: [synchronous, {mode: local_sgd, every: 0}]\nsteps: 50"),
       ":13:", "modes[1].every"},
      {with("count: 4", "count: 0"), ":12:", "workload.model.layers[1].count"},
      {with("steps: 50", "steps: 0"), ":13:", "steps"},
      {with("[ring, ", "[ring, nope, "), ":2:", "algorithms[1]"},
      {with("{algorithm: stragglar}", "{algorithm: stragglar, options: {bogus: 1}}"), ":2:",
       "algorithms[1].options.bogus: algorithm stragglar has no option 'bogus' (options: "
       "straggler, phase1, stragglers, late)"},
      {with("[ring, ", "[{algorithm: ring, options: {segments: 2}}, "), ":2:",
       "algorithms[0].options.segments: algorithm ring has no option 'segments' (it takes no "
       "options)"},
      {with("steps: 50", "prediction: {policy: previous, fallback: ring}\nsteps: 50"),
       ":13:", "prediction.fallback"},
      {with("steps: 50", "prediction: {policy: adaptive, fallback: [stragglar]}\nsteps: 50"),
       ":13:", "prediction.fallback[0]"},
      {with("steps: 50", "prediction: {policy: adaptive, fallback: [nope]}\nsteps: 50"),
       ":13:", "prediction.fallback[0]"},
      {with("steps: 50", "prediction: {policy: adaptive, detection: 1us}\nsteps: 50"),
       ":13:", "prediction.detection"},
      {with("steps: 50", "prediction: {policy: eager, detection: -1us}\nsteps: 50"),
       ":13:", "prediction.detection"},
      {with("steps: 50", "prediction:\n  policy: eager\n  k: 2\nsteps: 50"),
       ":15:", "prediction.k"},
      {with("steps: 50", "modes: [{mode: exclude_late, late: 0, every: 2}]\nsteps: 50"),
       ":13:", "modes[0].late"},
      {with("steps: 50", "modes: [{mode: exclude_late, late: 3, every: 2}]\nsteps: 50"),
       ":13:", "modes[0].late"},
      {with("steps: 50", "modes: [{mode: exclude_late, late: 1, every: 0}]\nsteps: 50"),
       ":13:", "modes[0].every"},
      {with("steps: 50", "modes: [{mode: exclude_late, every: 2}]\nsteps: 50"),
       ":13:", "modes[0]: missing required key 'late'"},
      {with("steps: 50", "modes: [{mode: exclude_late, late: 2, every: 2}]\nsteps: 50"),
       ":2:", "algorithms[1]: algorithm stragglar does not support groups of 2 ranks"},
      {with("steps: 50",
            "modes: [{mode: exclude_late, late: 1, every: 2}]\nprediction: {policy: eager}\n"
            "steps: 50"),
       ":13:", "modes[0]"},
      {with("steps: 50",
            "modes: [{mode: exclude_late, late: 1, every: 2}]\nprediction: {policy: adaptive}\n"
            "steps: 50"),
       ":13:", "modes[0]"},
      {with_in(with("steps: 50",
                    "modes: [{mode: exclude_late, late: 2, every: 2}]\n"
                    "prediction: {policy: fixed, rank: 1}\nsteps: 50"),
               "[ring, {algorithm: stragglar}]", "[ring]"),
       ":13:", "modes[0].late"},
  };
  const std::string steps = temp("bad_steps.csv");
  for (const Case& c : cases) {
    SCOPED_TRACE(c.key);
    const CommandResult r = train(c.yaml, "--steps-csv " + steps);
    EXPECT_EQ(r.rc, 1) << r.err;
    EXPECT_TRUE(contains(r.err, c.line)) << r.err;
    EXPECT_TRUE(contains(r.err, c.key)) << r.err;
    EXPECT_EQ(std::count(r.err.begin(), r.err.end(), '\n'), 1) << r.err;
    EXPECT_TRUE(r.out.empty());
    EXPECT_FALSE(std::filesystem::exists(steps));
  }
}

// fit-delays on the shipped synthetic log recovers its parameters (rank 5, persistence 0.9,
// lognormal extra delay of mean 9.5 ms; exponential base of mean 200 us), and what it writes is a
// `delays:` map that train takes.
TEST(CliFitDelays, RecoversTheSyntheticLogAndFeedsTrain) {
  const std::string out = temp("fitted.yaml");
  const CommandResult r =
      run_cli("fit-delays " + data_path("step_logs/synthetic_8x300.csv") + " -o " + out);
  ASSERT_EQ(r.rc, 0) << r.err;
  const std::string y = slurp(out);
  EXPECT_TRUE(contains(y, "persistent:\n  - {rank: 5, delay: {distribution: lognormal, mu: ")) << y;
  const std::size_t at = y.find("persistence: ");
  ASSERT_NE(at, std::string::npos) << y;
  EXPECT_NEAR(std::stod(y.substr(at + 13)), 0.9, 0.05) << y;
  EXPECT_TRUE(contains(y, "base: {distribution: exponential, mean: ")) << y;
  const std::size_t b = y.find("base: {distribution: exponential, mean: ");
  EXPECT_NEAR(std::stod(y.substr(b + 40)), 200e-6, 40e-6) << y;
  const std::size_t m = y.find("extra delay (stragglers): ");
  ASSERT_NE(m, std::string::npos) << y;
  EXPECT_TRUE(contains(y.substr(m), "mean 9.")) << y;  // 9.x ms
  // Indented under `delays:`, it drives a training job.
  std::string job = kJob;
  const std::size_t d = job.find("delays: {persistent: [{rank: 2, delay: 2ms}]}\n");
  ASSERT_NE(d, std::string::npos);
  std::string block = "delays:\n";
  std::istringstream lines(y);
  for (std::string line; std::getline(lines, line);) block += "  " + line + "\n";
  job.replace(d, std::string("delays: {persistent: [{rank: 2, delay: 2ms}]}\n").size(), block);
  job.replace(job.find("ranks: 4,"), 9, "ranks: 8,");
  const CommandResult t = train(job, "--json --steps 20");
  ASSERT_EQ(t.rc, 0) << t.err << job;
  EXPECT_GT(double(nlohmann::json::parse(t.out)["runs"][0]["lost_fraction"]), 0.0);
  // advise answers for that cluster.
  const CommandResult a =
      run_cli("advise --topology switch:450GiB/s:3us --ranks 8 --size 256MiB --delays " + out +
              " -n 50 --algorithms ring,stragglar --jobs 1");
  ASSERT_EQ(a.rc, 0) << a.err;
  EXPECT_TRUE(contains(a.out, "stragglers=[rank 5 +lognormal(mu=-4.942")) << a.out;
  EXPECT_TRUE(contains(a.out, "\nuse ")) << a.out;
  const CommandResult both =
      run_cli("advise --topology switch:450GiB/s:3us --ranks 8 --size 256MiB --delays " + out +
              " --delay-dist 5ms");
  EXPECT_NE(both.rc, 0);
  EXPECT_TRUE(contains(both.err, "--delays FILE replaces --delay-dist")) << both.err;
  std::ofstream(out) << "base: {distribution: exponential, mean: -1ms}\n";
  const CommandResult bad =
      run_cli("advise --topology switch:450GiB/s:3us --ranks 8 --size 256MiB --delays " + out);
  EXPECT_EQ(bad.rc, 1);
  EXPECT_TRUE(contains(bad.err, out + ":1:")) << bad.err;
  EXPECT_TRUE(contains(bad.err, "base")) << bad.err;
  std::remove(out.c_str());
}

// A plain log of per-rank timestamps: the step times are the differences (rank 1 is 10 ms slower
// per step than rank 0, so its offset is 10 ms every step).
TEST(CliFitDelays, TimestampLog) {
  const std::string log = temp("timestamps.csv");
  std::ofstream(log)
      << "rank,step,timestamp_ms\n0,0,0\n1,0,0\n0,1,100\n1,1,110\n0,2,200\n1,2,220\n";
  const CommandResult r = run_cli("fit-delays " + log);
  ASSERT_EQ(r.rc, 0) << r.err;
  EXPECT_TRUE(contains(r.out, "#   2 ranks, 2 steps\n")) << r.out;
  EXPECT_TRUE(contains(r.out, "base: {distribution: constant, value: 0.01")) << r.out;
  std::remove(log.c_str());
}

// PyTorch profiler traces, one per rank: the ProfilerStep#N spans' durations.
std::string profiler_trace(int rank, const std::vector<double>& durations_us, int first_step = 3) {
  nlohmann::json events = nlohmann::json::array();
  events.push_back({{"ph", "X"}, {"name", "aten::mm"}, {"ts", 1}, {"dur", 5}});
  double ts = 100;
  for (std::size_t i = 0; i < durations_us.size(); ++i) {
    events.push_back({{"ph", "X"},
                      {"cat", "user_annotation"},
                      {"name", "ProfilerStep#" + std::to_string(first_step + static_cast<int>(i))},
                      {"ts", ts},
                      {"dur", durations_us[i]}});
    ts += durations_us[i];
  }
  return nlohmann::json{
      {"distributedInfo", {{"backend", "nccl"}, {"rank", rank}, {"world_size", 2}}},
      {"traceEvents", events}}
      .dump();
}

TEST(CliFitDelays, ProfilerTraces) {
  const std::string a = temp("rank0.json"), b = temp("rank1.json");
  std::ofstream(a) << profiler_trace(0, {100000, 100000, 100000});
  std::ofstream(b) << profiler_trace(1, {104000, 104000, 104000});
  const CommandResult r =
      run_cli("fit-delays " + b + " " + a);  // any order: the rank is in the file
  ASSERT_EQ(r.rc, 0) << r.err;
  EXPECT_TRUE(contains(r.out, "#   2 ranks, 3 steps\n")) << r.out;
  EXPECT_TRUE(contains(r.out, "base: {distribution: constant, value: 0.004")) << r.out;
  // A missing step, a missing rank, a trace without its rank: one message naming the file.
  std::ofstream(b) << profiler_trace(1, {104000, 104000});
  CommandResult bad = run_cli("fit-delays " + a + " " + b);
  EXPECT_EQ(bad.rc, 1);
  EXPECT_TRUE(contains(bad.err, b + ": no ProfilerStep#5 (rank 1")) << bad.err;
  std::ofstream(b) << profiler_trace(2, {104000, 104000, 104000});
  bad = run_cli("fit-delays " + a + " " + b);
  EXPECT_EQ(bad.rc, 1);
  EXPECT_TRUE(contains(bad.err, "no profiler trace for rank 1")) << bad.err;
  std::ofstream(b) << R"({"traceEvents": []})";
  bad = run_cli("fit-delays " + a + " " + b);
  EXPECT_EQ(bad.rc, 1);
  EXPECT_TRUE(contains(bad.err, b + ": distributedInfo.rank: missing")) << bad.err;
  std::ofstream(b) << profiler_trace(1, {104000, -1, 104000});
  bad = run_cli("fit-delays " + a + " " + b);
  EXPECT_EQ(bad.rc, 1);
  EXPECT_TRUE(contains(bad.err, b + ": traceEvents[2].dur")) << bad.err;
  bad = run_cli("fit-delays " + a + " " + data_path("step_logs/synthetic_8x300.csv"));
  EXPECT_NE(bad.rc, 0);
  EXPECT_TRUE(contains(bad.err, "not both")) << bad.err;
  std::remove(a.c_str());
  std::remove(b.c_str());
}

TEST(CliFitDelays, BadLogsNameFileAndLineAndWriteNothing) {
  struct Case {
    std::string text, where;
  };
  const std::vector<Case> cases = {
      {"rank,step,seconds\n0,0,1\n1,0,1\n0,1,1\n", "step 1 has no time for rank 1"},
      {"rank,step,seconds\n0,0,1\n1,0,1\n0,2,1\n1,2,1\n", "step 1 is missing"},
      {"rank,step,seconds\n0,0,1\n1,0,nan\n", ":3:5: 'nan' is not a number"},
      {"rank,step,seconds\n0,0,1\n1,0,-1\n", ":3:5: time -1 must be >= 0"},
      {"rank,step,seconds\n0,0,1\n0,0,2\n", ":3: rank 0 step 0 already given on line 2"},
      {"rank,time\n0,1\n", ":1: expected a header 'rank,step,seconds'"},
      {"rank,step,seconds\n0,0,1\n1,0,1\n", "at least 2 steps"},
      {"rank,step,timestamp_ms\n0,0,0\n1,0,0\n0,1,100\n1,1,110\n0,2,90\n1,2,230\n",
       ":6: rank 0 timestamp of step 2 is not after its step 1 (line 4): timestamps must increase"},
  };
  const std::string log = temp("steps.csv"), out = temp("bad_fitted.yaml");
  for (const Case& c : cases) {
    SCOPED_TRACE(c.where);
    std::ofstream(log) << c.text;
    const CommandResult r = run_cli("fit-delays " + log + " -o " + out);
    EXPECT_EQ(r.rc, 1) << r.err;
    EXPECT_TRUE(contains(r.err, log)) << r.err;
    EXPECT_TRUE(contains(r.err, c.where)) << r.err;
    EXPECT_EQ(std::count(r.err.begin(), r.err.end(), '\n'), 1) << r.err;
    EXPECT_FALSE(std::filesystem::exists(out));
  }
  std::remove(log.c_str());
}

}  // namespace
}  // namespace ssim::testing
