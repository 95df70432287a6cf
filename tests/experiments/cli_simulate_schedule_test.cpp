// `simulate` and `run` with a schedule file as an algorithm entry ({schedule: FILE}): the files
// are written by `schedule` (JSON and binary) into a folder each test makes, and simulated beside
// the registry algorithm they were generated from.
#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <map>
#include <nlohmann/json.hpp>
#include <tuple>

#include "cli_support.hpp"

namespace ssim::testing {
namespace {

bool contains(const std::string& s, const std::string& what) {
  return s.find(what) != std::string::npos;
}

// A fresh folder for one test, removed when it ends.
struct Folder {
  std::string path;
  explicit Folder(const std::string& name)
      : path(::testing::TempDir() + "ssim_sched_" + name + "_" + std::to_string(::getpid())) {
    std::filesystem::remove_all(path);
    std::filesystem::create_directories(path);
  }
  ~Folder() { std::filesystem::remove_all(path); }
  std::string operator/(const std::string& file) const { return path + "/" + file; }
};

void write_schedule(const std::string& args, const std::string& path) {
  const CommandResult r = run_cli("schedule " + args + " -o " + path);
  ASSERT_EQ(r.rc, 0) << args << ": " << r.err;
}

// A simulate config on 8 ranks with random arrivals (rank 3 late in most iterations), so the
// prediction and the relabelling of a straggler-aware schedule matter.
std::string config(const std::string& algorithm_entry, const std::string& network) {
  return "topology: {kind: switch, ranks: 8, bandwidth: 450GiB/s, latency: 3us}\n"
         "network: {model: " +
         network + "}\nalgorithm: " + algorithm_entry +
         "\nsize: 64MiB\n"
         "delays:\n"
         "  base: {distribution: exponential, mean: 20us}\n"
         "  persistent: [{rank: 3, delay: {distribution: uniform, low: 50us, high: 2ms}, "
         "persistence: 0.7}]\n"
         "iterations: 40\nseed: 7\n";
}

nlohmann::json simulate_json(const Folder& dir, const std::string& yaml) {
  std::ofstream(dir / "sim.yaml") << yaml;
  const CommandResult r = run_cli("simulate " + (dir / "sim.yaml") + " --json --per-rank");
  EXPECT_EQ(r.rc, 0) << yaml << r.err;
  return r.rc == 0 ? nlohmann::json::parse(r.out) : nlohmann::json();
}

// What must agree to the bit between the registry algorithm and its schedule file: every
// iteration (completion, after-last-arrival, bandwidths, last and predicted rank, per-rank
// arrival and finish times), the means and the schedule's shape.
void expect_same_results(const nlohmann::json& registry, const nlohmann::json& file,
                         const std::string& what) {
  ASSERT_FALSE(registry.is_null());
  ASSERT_FALSE(file.is_null());
  EXPECT_EQ(registry.at("schedule"), file.at("schedule")) << what;
  EXPECT_EQ(registry.at("iterations"), file.at("iterations")) << what;
  EXPECT_EQ(registry.at("mean_completion_s").get<double>(),
            file.at("mean_completion_s").get<double>())
      << what;
  EXPECT_EQ(registry.at("mean_after_last_arrival_s").get<double>(),
            file.at("mean_after_last_arrival_s").get<double>())
      << what;
  EXPECT_EQ(registry.at("links"), file.at("links")) << what;
  EXPECT_EQ(registry.at("config").at("prediction"), file.at("config").at("prediction")) << what;
  EXPECT_EQ(registry.at("config").at("collective"), file.at("config").at("collective")) << what;
}

// ring and stragglar (for a chosen straggler, and for the default one, relabelled to the
// predicted rank every iteration), written as JSON and as binary, simulate exactly as the
// registry algorithm with the same options, under both network models.
TEST(CliSimulateSchedule, SameTimesAsTheRegistryAlgorithm) {
  const Folder dir("same");
  struct Case {
    std::string registry;  // the algorithm entry
    std::string generate;  // `schedule` arguments
    std::string file;      // stem
  };
  const std::vector<Case> cases = {
      {"ring", "ring --ranks 8", "ring8"},
      {"{algorithm: stragglar, options: {straggler: 3}}", "stragglar --ranks 8 --straggler 3",
       "stragglar8_s3"},
      {"stragglar", "stragglar --ranks 8", "stragglar8"},
  };
  for (const Case& c : cases) {
    for (const char* format : {"json", "bin"}) {
      const std::string file = c.file + "." + format;
      write_schedule(c.generate + " --format " + format, dir / file);
      for (const char* network : {"alphabeta", "flow"}) {
        const std::string what = c.registry + " vs " + file + " (" + network + ")";
        const nlohmann::json registry = simulate_json(dir, config(c.registry, network));
        const nlohmann::json from_file =
            simulate_json(dir, config("{schedule: " + file + "}", network));
        expect_same_results(registry, from_file, what);
        if (from_file.is_null()) continue;
        EXPECT_EQ(from_file.at("config").at("schedule_file"), file) << what;
        EXPECT_FALSE(registry.at("config").contains("schedule_file")) << what;
      }
    }
  }
  // The straggler the file was built for is the one predicted (fixed), as for the registry
  // entry with that option; the default stragglar follows the oracle.
  const nlohmann::json fixed =
      simulate_json(dir, config("{schedule: stragglar8_s3.bin}", "alphabeta"));
  ASSERT_FALSE(fixed.is_null());
  EXPECT_EQ(fixed.at("config").at("prediction").at("policy"), "fixed");
  for (const auto& it : fixed.at("iterations")) EXPECT_EQ(it.at("predicted_straggler"), 3);
  const nlohmann::json oracle =
      simulate_json(dir, config("{schedule: stragglar8.bin}", "alphabeta"));
  ASSERT_FALSE(oracle.is_null());
  EXPECT_EQ(oracle.at("config").at("prediction").at("policy"), "oracle");
}

// An in-network schedule (JSON: the binary form has no switch reductions) on a topology whose
// switch reduces: the same times as the registry's nvls, under both models.
TEST(CliSimulateSchedule, InNetworkScheduleOnAReducingSwitch) {
  const Folder dir("nvls");
  write_schedule("nvls --ranks 8 --format json", dir / "nvls8.json");
  for (const char* network : {"alphabeta", "flow"}) {
    std::string registry = config("nvls", network),
                file = config("{schedule: nvls8.json}", network);
    for (std::string* yaml : {&registry, &file}) {
      const std::string plain = "latency: 3us}";
      yaml->replace(yaml->find(plain), plain.size(),
                    "latency: 3us, reduce: {bandwidth: 274GB/s, latency: 1us}}");
    }
    expect_same_results(simulate_json(dir, registry), simulate_json(dir, file), network);
  }
}

// The table names the file beside the algorithm it records.
TEST(CliSimulateSchedule, TableNamesTheFile) {
  const Folder dir("table");
  write_schedule("ring --ranks 8 --format bin", dir / "ring8.bin");
  std::ofstream(dir / "sim.yaml") << config("{schedule: ring8.bin}", "alphabeta");
  const CommandResult r = run_cli("simulate " + (dir / "sim.yaml"));
  ASSERT_EQ(r.rc, 0) << r.err;
  EXPECT_TRUE(contains(r.out, "ring (schedule file ring8.bin) on ")) << r.out;
}

// `run`: registry algorithms and schedule files side by side over a sweep of sizes (a schedule
// cuts the buffer into its chunks whatever the size): the file's rows have the registry rows'
// times, labelled by the file name (or the label given).
TEST(CliSimulateSchedule, RunSideBySideOverSizes) {
  const Folder dir("run");
  write_schedule("ring --ranks 8 --format bin", dir / "ring8.bin");
  write_schedule("stragglar --ranks 8 --straggler 3 --format json", dir / "s3.json");
  std::ofstream(dir / "exp.yaml")
      << "topology: {kind: switch, ranks: 8, bandwidth: 450GiB/s, latency: 3us}\n"
         "algorithms: [ring, {schedule: ring8.bin}, {algorithm: stragglar, options: {straggler: "
         "3}}, {schedule: s3.json, label: s3file}]\n"
         "stragglers: {ranks: [3], delay: {distribution: uniform, low: 0, high: 1ms}}\n"
         "sweep: {size: [1MiB, 256MiB]}\n"
         "iterations: 6\n"
         "output: out\n";
  const CommandResult r =
      run_cli("run " + (dir / "exp.yaml") + " -o " + (dir / "out") + " --jobs 2 --no-plots -q");
  ASSERT_EQ(r.rc, 0) << r.err;
  // time_s per (label, size, iteration).
  std::map<std::tuple<std::string, std::string, std::string>, std::string> times;
  std::ifstream csv(dir / "out/results.csv");
  std::string line;
  std::getline(csv, line);
  std::vector<std::string> header;
  {
    std::stringstream ss(line);
    for (std::string f; std::getline(ss, f, ',');) header.push_back(f);
  }
  const auto column = [&](const std::string& name) {
    return static_cast<std::size_t>(std::find(header.begin(), header.end(), name) - header.begin());
  };
  const std::size_t label = column("label"), size = column("sweep.size"),
                    iteration = column("iteration"), time = column("time_s"),
                    algorithm = column("algorithm");
  ASSERT_LT(time, header.size());
  std::map<std::string, std::string> algorithm_of;
  while (std::getline(csv, line)) {
    std::vector<std::string> f;
    std::stringstream ss(line);
    for (std::string v; std::getline(ss, v, ',');) f.push_back(v);
    ASSERT_GT(f.size(), time);
    times[{f[label], f[size], f[iteration]}] = f[time];
    algorithm_of[f[label]] = f[algorithm];
  }
  EXPECT_EQ(times.size(), 4u * 2 * 6);
  EXPECT_EQ(algorithm_of["ring8.bin"], "ring");
  EXPECT_EQ(algorithm_of["s3file"], "stragglar");
  const auto at = [&](const std::string& l, const std::string& s, int i) {
    return times[std::make_tuple(l, s, std::to_string(i))];
  };
  for (const char* s : {"1MiB", "256MiB"}) {
    for (int i = 0; i < 6; ++i) {
      EXPECT_FALSE(at("ring", s, i).empty());
      EXPECT_EQ(at("ring8.bin", s, i), at("ring", s, i)) << s << " " << i;
      EXPECT_EQ(at("s3file", s, i), at("stragglar", s, i)) << s << " " << i;
    }
  }
  EXPECT_NE(at("ring", "1MiB", 0), at("ring", "256MiB", 0));
  // results.json records the file and its content's digest.
  std::ifstream json_in(dir / "out/results.json");
  const nlohmann::json j = nlohmann::json::parse(json_in);
  const nlohmann::json& entry = j.at("algorithms").at(1);
  EXPECT_EQ(entry.at("label"), "ring8.bin");
  EXPECT_EQ(entry.at("schedule").at("file"), "ring8.bin");
  EXPECT_EQ(entry.at("schedule").at("ranks"), 8);
  EXPECT_EQ(entry.at("schedule").at("digest").get<std::string>().size(), 16u);
}

// A file changed after an interrupted run is a different experiment: --resume refuses it.
TEST(CliSimulateSchedule, ResumeNoticesAChangedFile) {
  const Folder dir("resume");
  write_schedule("ring --ranks 8 --format json", dir / "plan.json");
  std::ofstream(dir / "exp.yaml")
      << "topology: {kind: switch, ranks: 8, bandwidth: 450GiB/s, latency: 3us}\n"
         "algorithms: [rhd, {schedule: plan.json}]\nsize: 1MiB\niterations: 2\n";
  const std::string run = "run " + (dir / "exp.yaml") + " -o " + (dir / "out") + " --no-plots -q";
  ASSERT_EQ(run_cli(run).rc, 0);
  ASSERT_EQ(run_cli(run + " --resume").rc, 0);  // unchanged: nothing left to run
  // The same algorithm, options, ranks, rounds and transfers; one round's phase renamed.
  std::ifstream in(dir / "plan.json");
  std::string json((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  const std::size_t at = json.find("\"reduce-scatter\"");
  ASSERT_NE(at, std::string::npos);
  json.replace(at, 16, "\"edited\"");
  std::ofstream(dir / "plan.json") << json;
  const CommandResult changed = run_cli(run + " --resume");
  EXPECT_EQ(changed.rc, 1) << changed.err;
  EXPECT_TRUE(contains(changed.err, "fingerprint")) << changed.err;
}

// Bad input: one message naming the YAML's file, line and key and the schedule file (with the
// reader's byte offset for a damaged one); exit 1; nothing written.
TEST(CliSimulateSchedule, BadFilesAreOneMessage) {
  const Folder dir("bad");
  write_schedule("ring --ranks 8 --format bin", dir / "ring8.bin");
  write_schedule("ring --ranks 4 --format bin", dir / "ring4.bin");
  write_schedule("ring --ranks 8 --format json", dir / "ring8.json");
  write_schedule("nvls --ranks 8 --format json", dir / "nvls8.json");
  {
    std::ifstream in(dir / "ring8.bin", std::ios::binary);
    std::string bytes((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
    std::ofstream(dir / "truncated.bin", std::ios::binary) << bytes.substr(0, bytes.size() / 2);
    bytes[bytes.size() / 2] ^= 0x01;  // a transfer's field: the CRC no longer matches
    std::ofstream(dir / "flipped.bin", std::ios::binary) << bytes;
    std::ifstream json_in(dir / "ring8.json");
    std::string json((std::istreambuf_iterator<char>(json_in)), std::istreambuf_iterator<char>());
    // A transfer to a rank past the last: the verifier's message.
    const std::size_t at = json.find("\"dst\":1,");
    ASSERT_NE(at, std::string::npos) << json.substr(0, 400);
    json.replace(at, 7, "\"dst\":9");
    std::ofstream(dir / "wrong.json") << json;
  }
  struct Case {
    std::string entry;
    std::vector<std::string> says;
  };
  const std::vector<Case> cases = {
      {"{schedule: missing.bin}", {"missing.bin"}},
      {"{schedule: truncated.bin}", {"truncated.bin: byte ", "truncated"}},
      {"{schedule: flipped.bin}", {"flipped.bin: byte ", "CRC-32"}},
      {"{schedule: wrong.json}", {"wrong.json"}},
      {"{schedule: ring4.bin}", {"ring4.bin", "4 ranks", "8"}},
      {"{schedule: nvls8.json}", {"nvls8.json", "no reducing switch"}},
      {"{schedule: ring8.bin, options: {segments: 2}}", {"options"}},
      {"{schedule: ring8.bin, algorithm: ring}", {"schedule: FILE or algorithm: NAME"}},
  };
  for (const Case& c : cases) {
    std::ofstream(dir / "sim.yaml") << config(c.entry, "alphabeta");
    const CommandResult r = run_cli("simulate " + (dir / "sim.yaml"));
    EXPECT_EQ(r.rc, 1) << c.entry << ": " << r.err;
    EXPECT_TRUE(r.out.empty()) << c.entry << ": " << r.out;
    EXPECT_TRUE(contains(r.err, "sim.yaml:3:")) << c.entry << ": " << r.err;
    EXPECT_TRUE(contains(r.err, "algorithm.")) << c.entry << ": " << r.err;
    for (const std::string& s : c.says) EXPECT_TRUE(contains(r.err, s)) << c.entry << ": " << r.err;
    EXPECT_EQ(std::count(r.err.begin(), r.err.end(), '\n'), 1) << r.err;
  }
  // `run`: the same messages, and no output folder.
  std::ofstream(dir / "exp.yaml")
      << "topology: {kind: switch, ranks: 8, bandwidth: 450GiB/s, latency: 3us}\n"
         "algorithms: [ring, {schedule: flipped.bin}]\nsize: 1MiB\n";
  const CommandResult r = run_cli("run " + (dir / "exp.yaml") + " -o " + (dir / "out") + " -q");
  EXPECT_EQ(r.rc, 1);
  EXPECT_TRUE(contains(r.err, "exp.yaml:2:")) << r.err;
  EXPECT_TRUE(contains(r.err, "algorithms[1].schedule")) << r.err;
  EXPECT_TRUE(contains(r.err, "CRC-32")) << r.err;
  EXPECT_FALSE(std::filesystem::exists(dir / "out"));
  // A sweep over ranks: refused with the reason, before any run.
  std::ofstream(dir / "sweep.yaml")
      << "topology: {kind: switch, ranks: 8, bandwidth: 450GiB/s, latency: 3us}\n"
         "algorithms: [ring, {schedule: ring8.bin}]\nsize: 1MiB\nsweep: {ranks: [4, 8]}\n";
  const CommandResult sweep =
      run_cli("run " + (dir / "sweep.yaml") + " -o " + (dir / "out") + " -q");
  EXPECT_EQ(sweep.rc, 1);
  EXPECT_TRUE(contains(sweep.err, "sweep.yaml:4:")) << sweep.err;
  EXPECT_TRUE(contains(sweep.err, "serves one rank count")) << sweep.err;
  EXPECT_FALSE(std::filesystem::exists(dir / "out"));
}

}  // namespace
}  // namespace ssim::testing
