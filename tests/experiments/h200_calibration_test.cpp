// The shared-device model calibrated on the committed H200 measurements of the single-gpu
// transport (data/measured/h200/2026-11-26-direct/single-gpu-*.csv, binary 9b92b19): one
// parameter set fitted on the no-delay graph-launch runs with launch_time fixed at the launch
// probe's measurement (data/measured/h200/2026-11-29-probes/launch.txt), checked on every run
// and on the held-out ones (5 ms delay, delay sweep), and the shipped
// configs/topologies/h200_single_gpu.yaml is that fit. The bounds are the figures
// docs/calibration.md "Measured on an H200" reports, rounded up a little.
#include <gtest/gtest.h>

#include <algorithm>
#include <array>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <map>
#include <sstream>
#include <string>
#include <vector>

#include "common/stats.hpp"
#include "experiments/config/config.hpp"
#include "experiments/runner/calibrate_sim.hpp"
#include "tests/experiments/cli_support.hpp"

namespace ssim::experiments {
namespace {

// The figures reached (docs/calibration.md "Measured on an H200"), rounded up by about half a
// point. Issue 22 asks for a median <= 5% over all rows and per algorithm, p95 <= 15%, held-out
// median <= 8% and the crossover within 0.3 ms; the p95 (18.1%) and one algorithm's median
// (stragglar_hier, 7.4%) are missed (docs/calibration.md). With launch_time fitted too (0.081
// us) the same runs reach 3.6%, p95 15.3%, fitted 4.0%, held out 3.4%, and the rank counts the
// fit never saw 9.3% / 9.9% (RankCountsTheFitNeverSaw); the same free fit on the morning
// binary's runs (data/measured/h200/2026-11-26/graph-*.csv, the file shipped until 2026-11-30)
// reached 3.1%, p95 18.5%, held out 2.5%, and misses the later binaries' runs by 7-11%.
constexpr double kMedianAll = 0.041;      // reached 3.6%
constexpr double kP95All = 0.186;         // reached 18.1%
constexpr double kMedianHeldOut = 0.04;   // reached 3.5%
constexpr double kMedianFitted = 0.044;   // reached 3.9%
const std::map<std::string, double> kMedianPerAlgorithm = {
    {"ring", 0.023},          {"rhd", 0.026},
    {"direct", 0.026},        {"tree", 0.048},
    {"dbtree", 0.051},        {"straggler_tree", 0.055},
    {"stragglar", 0.036},     {"halving_doubling", 0.042},
    {"direct_rs_ag", 0.054},  {"hierarchical", 0.044},
    {"stragglar_hier", 0.079}};
// Measured 1.31 ms; the model says 1.38 ms simulated at the sweep's median delays with the
// straggler on rank 7, as here (scripts/h200_figures.py, which takes the median of each row
// simulated at its own delay, says 1.32 ms; with launch_time fitted both said 1.32 ms).
constexpr double kExpectedMeasuredCrossover = 1.3139e-3;
constexpr double kCrossoverTolerance = 0.09e-3;       // reached 0.06 ms (1.38 ms, interpolated)
constexpr double kExactCrossoverTolerance = 0.15e-3;  // reached 0.12 ms (1.43 ms, bisection)

// The runs of the single-gpu transport: PREFIX + graph-d0-ALGO.csv, graph-d5ms-, sweep-dDELAY-.
const std::string kData =
    std::string(STRAGGLESIM_SOURCE_DIR) + "/data/measured/h200/2026-11-26-direct";
const std::string kPrefix = "single-gpu-";

std::vector<std::string> files(const std::vector<std::string>& prefixes) {
  std::vector<std::string> out;
  for (const auto& e : std::filesystem::directory_iterator(kData)) {
    const std::string name = e.path().filename().string();
    if (e.path().extension() != ".csv") continue;
    for (const std::string& p : prefixes) {
      if (name.rfind(kPrefix + p, 0) == 0) out.push_back(e.path().string());
    }
  }
  std::sort(out.begin(), out.end());
  return out;
}

SimFitOptions h200_options() {
  SimFitOptions o;
  o.kind = "shared_device";
  o.holdout_filters = {"file!=" + kPrefix + "graph-d0-*"};
  o.algorithm_options["hierarchical"].set("gpus_per_node", "4");
  o.algorithm_options["stragglar_hier"].set("gpus_per_node", "4");
  return o;
}

// launch_time as scripts/h200_figures.py fixes it: the launch probe's median seconds per
// operation over its rows with 8 to 64 streams, ring and free (launch.txt: pattern streams
// round_us op_us; below 8 streams an operation's own latency shows, not the shared launch cost).
double probe_launch_time() {
  const std::string path =
      std::string(STRAGGLESIM_SOURCE_DIR) + "/data/measured/h200/2026-11-29-probes/launch.txt";
  std::ifstream in(path);
  EXPECT_TRUE(in.good()) << path;
  std::vector<double> ops;
  std::string line;
  while (std::getline(in, line)) {
    if (line.empty() || line[0] == '#') continue;
    std::istringstream cells(line);
    std::string pattern;
    int streams = 0;
    double round_us = 0, op_us = 0;
    if (!(cells >> pattern >> streams >> round_us >> op_us)) continue;  // the header
    if ((pattern == "ring" || pattern == "free") && streams >= 8) ops.push_back(op_us * 1e-6);
  }
  EXPECT_EQ(ops.size(), 8u) << path;
  return ops.empty() ? 0 : quantile(ops, 0.5);
}

const SimFit& h200_fit() {
  static const SimFit fit = [] {
    SimFitOptions o = h200_options();
    o.fixed["launch_time"] = probe_launch_time();
    return fit_by_simulation(read_measured_files(files({"graph-d0-", "graph-d5ms-", "sweep-"})),
                             o);
  }();
  return fit;
}

TEST(H200Calibration, OneParameterSetPredictsEveryRun) {
  const SimFit& f = h200_fit();
  ASSERT_TRUE(f.converged);
  EXPECT_TRUE(f.notes.empty()) << f.notes.front();
  EXPECT_EQ(f.fitted_points, 88u);  // 11 algorithms x 8 sizes
  // Over all rows (fitted and held out), and per algorithm.
  EXPECT_LE(abs_error_quantile(f.rows, 0.5), kMedianAll);
  EXPECT_LE(abs_error_quantile(f.rows, 0.95), kP95All);
  for (const auto& [a, bound] : kMedianPerAlgorithm) {
    EXPECT_LE(abs_error_quantile(f.rows, 0.5, std::nullopt, a), bound) << a;
  }
  // Rows not used in the fit: the 5 ms runs and the delay sweep.
  EXPECT_LE(abs_error_quantile(f.rows, 0.5, true), kMedianHeldOut);
  EXPECT_LE(abs_error_quantile(f.rows, 0.5, false), kMedianFitted);
}

TEST(H200Calibration, TheShippedTopologyIsThisFit) {
  const SimFit& f = h200_fit();
  const ConfigReader reader(std::string(STRAGGLESIM_SOURCE_DIR) +
                            "/configs/topologies/h200_single_gpu.yaml");
  const topo::Topology t = load_topology(reader.root(), reader.directory());
  ASSERT_TRUE(t.shared_device.has_value());
  EXPECT_EQ(t.gpu_count(), 8);
  const topo::SharedDevice& d = *t.shared_device;
  // The file keeps 6 significant digits.
  EXPECT_NEAR(d.memory_bandwidth.value, f.values.at("memory_bandwidth"),
              1e-5 * f.values.at("memory_bandwidth"));
  EXPECT_NEAR(d.copy_latency.value, f.values.at("copy_latency"),
              1e-5 * f.values.at("copy_latency"));
  EXPECT_NEAR(d.apply_latency.value, f.values.at("apply_latency"),
              1e-5 * f.values.at("apply_latency"));
  EXPECT_EQ(d.copy_factor, 2);
  EXPECT_EQ(d.reduce_factor, 3);
  EXPECT_EQ(d.apply_copy_factor, 2);
  EXPECT_NEAR(d.unaligned_factor, f.values.at("unaligned_factor"), 1e-5);
  EXPECT_NEAR(d.launch_time.value, f.values.at("launch_time"), 1e-5 * f.values.at("launch_time"));
  // Not fitted: the probe's figure, which the file's provenance cites (0.188 us).
  EXPECT_EQ(f.values.at("launch_time"), probe_launch_time());
  EXPECT_TRUE(std::find(f.fitted.begin(), f.fitted.end(), "launch_time") == f.fitted.end());
  EXPECT_NEAR(d.launch_time.value, 0.188e-6, 1e-12);
}

// The crossover by linear interpolation of Ring / StragglAR between the sweep's delays:
// `points` is (delay, ring time, stragglar time), sorted by delay.
double interpolated_crossover(const std::vector<std::array<double, 3>>& points) {
  for (std::size_t i = 0; i + 1 < points.size(); ++i) {
    const double d0 = points[i][0], r0 = points[i][1] / points[i][2];
    const double d1 = points[i + 1][0], r1 = points[i + 1][1] / points[i + 1][2];
    if (r0 < 1 && r1 >= 1) return d0 + (1 - r0) * (d1 - d0) / (r1 - r0);
  }
  return -1;
}

// Per sweep file (one nominal delay): the median delay_s and the median time after the last
// arrival (time_s without delay) of Ring and of StragglAR.
std::vector<std::array<double, 3>> measured_sweep() {
  std::map<std::string, std::vector<double>> delay, ring, stragglar;
  for (const MeasuredFile& f : read_measured_files(files({"sweep-"}))) {
    const std::string name = std::filesystem::path(f.name).filename().string();
    // PREFIX sweep-dDELAY-ALGO.csv -> sweep-dDELAY
    const std::size_t at = kPrefix.size() + 6;
    const std::string nominal = name.substr(kPrefix.size(), name.find('-', at) - kPrefix.size());
    for (const calib::MeasuredRun& r : f.runs) {
      const bool delayed = r.row.delay.value > 0;
      const double t = delayed ? r.row.after_last_arrival.value : r.row.time.value;
      if (r.row.algorithm == "ring") ring[nominal].push_back(t);
      if (r.row.algorithm == "stragglar") stragglar[nominal].push_back(t);
      delay[nominal].push_back(r.row.delay.value);
    }
  }
  std::vector<std::array<double, 3>> points;
  for (const auto& [nominal, d] : delay) {
    points.push_back(
        {quantile(d, 0.5), quantile(ring.at(nominal), 0.5), quantile(stragglar.at(nominal), 0.5)});
  }
  std::sort(points.begin(), points.end());
  return points;
}

TEST(H200Calibration, StragglarCrossesRingWhereTheSweepDoes) {
  // Measured (single-gpu-sweep-*.csv, 256 MiB): Ring / StragglAR 0.92x at 1.08 ms, 1.24x at 2 ms.
  const std::vector<std::array<double, 3>> measured = measured_sweep();
  const double crossover = interpolated_crossover(measured);
  EXPECT_NEAR(crossover, kExpectedMeasuredCrossover, 1e-6);
  const SimFit& f = h200_fit();
  const topo::Topology t = make_fitted_topology("shared_device", f.values, 8);
  // The same interpolation over the model's times at the same delays (straggler: rank 7).
  std::vector<std::array<double, 3>> simulated;
  for (const auto& p : measured) {
    simulated.push_back({p[0], simulate_point(t, "ring", {}, 256ull << 20, p[0], 7),
                         simulate_point(t, "stragglar", {}, 256ull << 20, p[0], 7)});
  }
  EXPECT_NEAR(interpolated_crossover(simulated), crossover, kCrossoverTolerance);
  // The model's own crossover (bisection) lies a little later than its interpolation.
  const std::optional<double> d =
      crossover_delay(t, "ring", "stragglar", 256ull << 20, 7, 0.0, 8e-3, 1e-6);
  ASSERT_TRUE(d.has_value());
  EXPECT_NEAR(*d, crossover, kExactCrossoverTolerance);
}

// The direct transport (data/measured/h200/2026-11-26-direct, `--transport direct`): the same
// model with copy_factor 0 (fused kernels read the senders' data; sim/shared_device.hpp),
// fitted on its no-delay graph-launch runs; configs/topologies/h200_direct.yaml is that fit.
// Reached (docs/calibration.md "Measured on an H200", direct transport), bounds rounded up by 0.5
// to 1 point: median 6.3% over all rows, p95 25.1%, held-out median 6.9%.
constexpr double kDirectMedianAll = 0.07;
constexpr double kDirectP95All = 0.26;
constexpr double kDirectMedianHeldOut = 0.075;
const std::map<std::string, double> kDirectMedianPerAlgorithm = {
    {"ring", 0.05},          {"rhd", 0.065},
    {"direct", 0.09},        {"tree", 0.065},
    {"dbtree", 0.05},        {"straggler_tree", 0.12},
    {"stragglar", 0.07},     {"halving_doubling", 0.085},
    {"direct_rs_ag", 0.10},  {"hierarchical", 0.075},
    {"stragglar_hier", 0.04}};

const std::string kDirectData =
    std::string(STRAGGLESIM_SOURCE_DIR) + "/data/measured/h200/2026-11-26-direct";

const SimFit& direct_fit() {
  static const SimFit fit = [] {
    std::vector<std::string> paths;
    for (const auto& e : std::filesystem::directory_iterator(kDirectData)) {
      const std::string name = e.path().filename().string();
      for (const char* p : {"direct-graph-d0-", "direct-graph-d5ms-", "direct-sweep-"}) {
        if (name.rfind(p, 0) == 0 && e.path().extension() == ".csv")
          paths.push_back(e.path().string());
      }
    }
    std::sort(paths.begin(), paths.end());
    SimFitOptions o = h200_options();
    o.holdout_filters = {"file!=direct-graph-d0-*"};
    o.fixed["copy_factor"] = 0;
    return fit_by_simulation(read_measured_files(paths), o);
  }();
  return fit;
}

TEST(H200Calibration, TheDirectTransportWithCopyFactorZero) {
  const SimFit& f = direct_fit();
  ASSERT_TRUE(f.converged);
  EXPECT_TRUE(f.notes.empty()) << f.notes.front();
  EXPECT_EQ(f.fitted_points, 88u);
  EXPECT_LE(abs_error_quantile(f.rows, 0.5), kDirectMedianAll);
  EXPECT_LE(abs_error_quantile(f.rows, 0.95), kDirectP95All);
  EXPECT_LE(abs_error_quantile(f.rows, 0.5, true), kDirectMedianHeldOut);
  for (const auto& [a, bound] : kDirectMedianPerAlgorithm) {
    EXPECT_LE(abs_error_quantile(f.rows, 0.5, std::nullopt, a), bound) << a;
  }
  // The shipped file is this fit (6 significant digits).
  const ConfigReader reader(std::string(STRAGGLESIM_SOURCE_DIR) +
                            "/configs/topologies/h200_direct.yaml");
  const topo::Topology t = load_topology(reader.root(), reader.directory());
  ASSERT_TRUE(t.shared_device.has_value());
  const topo::SharedDevice& d = *t.shared_device;
  EXPECT_EQ(d.copy_factor, 0);
  EXPECT_EQ(d.reduce_factor, 3);
  EXPECT_EQ(d.apply_copy_factor, 2);
  for (const auto& [name, value] :
       std::map<std::string, double>{{"memory_bandwidth", d.memory_bandwidth.value},
                                     {"copy_latency", d.copy_latency.value},
                                     {"apply_latency", d.apply_latency.value},
                                     {"launch_time", d.launch_time.value},
                                     {"unaligned_factor", d.unaligned_factor}}) {
    EXPECT_NEAR(value, f.values.at(name), 1e-5 * f.values.at(name)) << name;
  }
}

// Scaling honesty on the H200 itself: the shipped 8-rank fits, nothing refitted, against the
// runs at 4, 16, 32 and 64 ranks on the same device (data/measured/h200/2026-11-26-direct,
// TRANSPORT-ranksN-d{0,2ms}-*.csv: ring, rhd, stragglar, direct, 1 MiB to 256 MiB). The bounds
// are what docs/calibration.md "Rank counts the fit never saw" reports, rounded up half a point;
// the measured per-round cost grows faster with the rank count than the model's shared launch
// time makes it (1 MiB at 64 ranks: -20%), which is where the model parts from the machine.
std::map<std::string, double> shipped(const std::string& file) {
  const ConfigReader reader(std::string(STRAGGLESIM_SOURCE_DIR) + "/configs/topologies/" + file);
  return topology_parameters(load_topology(reader.root(), reader.directory()));
}

SimFit rank_counts(const std::string& transport, const std::string& topology) {
  const std::string dir =
      std::string(STRAGGLESIM_SOURCE_DIR) + "/data/measured/h200/2026-11-26-direct";
  std::vector<std::string> paths;
  for (const auto& e : std::filesystem::directory_iterator(dir)) {
    const std::string name = e.path().filename().string();
    if (name.rfind(transport + "-ranks", 0) == 0 && e.path().extension() == ".csv")
      paths.push_back(e.path().string());
  }
  std::sort(paths.begin(), paths.end());
  EXPECT_EQ(paths.size(), 32u) << transport;
  SimFitOptions o;
  o.kind = "shared_device";
  o.holdout_filters = {"delay_s>0"};  // reported apart: nothing is fitted
  return compare_by_simulation(read_measured_files(paths), o, shipped(topology));
}

TEST(H200Calibration, RankCountsTheFitNeverSaw) {
  // single-gpu reached: no delay median 6.8%, 2 ms 7.2%, p95 18.4% (launch_time fixed at the
  // launch probe's 0.188 us). With launch_time fitted (0.081 us, under half what the probe
  // measures) the same runs were 9.3%, 9.9%, p95 46.2%, worst at 32-64 ranks where a round is
  // mostly launches; the file fitted on the morning binary's runs 6.9%, 7.1%, 20.5%.
  const SimFit s = rank_counts("single-gpu", "h200_single_gpu.yaml");
  ASSERT_TRUE(s.converged);
  EXPECT_TRUE(s.fitted.empty());
  EXPECT_EQ(s.rows.size(), 1600u);
  EXPECT_LE(abs_error_quantile(s.rows, 0.5, false), 0.073);
  EXPECT_LE(abs_error_quantile(s.rows, 0.5, true), 0.077);
  EXPECT_LE(abs_error_quantile(s.rows, 0.95), 0.19);
  // direct reached: no delay 8.5% (28.0%), 2 ms 11.8% (43.5%).
  const SimFit d = rank_counts("direct", "h200_direct.yaml");
  ASSERT_TRUE(d.converged);
  EXPECT_LE(abs_error_quantile(d.rows, 0.5, false), 0.09);
  EXPECT_LE(abs_error_quantile(d.rows, 0.5, true), 0.123);
}

}  // namespace
}  // namespace ssim::experiments
