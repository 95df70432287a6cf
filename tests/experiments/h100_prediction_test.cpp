// Predicting another GPU (issue 22, "scaling honesty"): the shared-device model calibrated on the
// H200 (configs/topologies/h200_*.yaml), carried to the H100 by two measured numbers
// (configs/topologies/h100_*.yaml, written by scripts/port_topology.py: the copy bandwidth of
// data/measured/h100/2026-11-26/ceilings.txt and the misalignment probe of
// data/measured/unaligned/2026-11-26), and with memory_bandwidth alone changed, against the runs
// of the same campaign on an NVIDIA H100 80GB HBM3 (data/measured/h100/2026-11-26). Nothing is
// fitted to the H100 campaign. The bounds are the figures docs/calibration.md "Predicting another
// GPU" reports (python3 scripts/h100_prediction.py), rounded up by about half a point.
#include <gtest/gtest.h>

#include <algorithm>
#include <array>
#include <filesystem>
#include <fstream>
#include <map>
#include <regex>
#include <string>
#include <vector>

#include "common/stats.hpp"
#include "experiments/config/config.hpp"
#include "experiments/runner/calibrate_sim.hpp"

namespace ssim::experiments {
namespace {

const std::string kRoot = STRAGGLESIM_SOURCE_DIR;
const std::string kData = kRoot + "/data/measured/h100/2026-11-26";

std::vector<std::string> files(const std::string& transport,
                               const std::vector<std::string>& kinds) {
  std::vector<std::string> out;
  for (const auto& e : std::filesystem::directory_iterator(kData)) {
    const std::string name = e.path().filename().string();
    if (e.path().extension() != ".csv") continue;
    for (const std::string& k : kinds) {
      if (name.rfind(transport + "-" + k, 0) == 0) out.push_back(e.path().string());
    }
  }
  std::sort(out.begin(), out.end());
  return out;
}

std::map<std::string, double> parameters(const std::string& topology_file) {
  const ConfigReader reader(kRoot + "/configs/topologies/" + topology_file);
  return topology_parameters(load_topology(reader.root(), reader.directory()));
}

SimFitOptions options() {
  SimFitOptions o;
  o.kind = "shared_device";
  // Held out (here: reported apart) are the delayed runs; the comparison fits nothing.
  o.holdout_filters = {"delay_s>0"};
  return o;
}

// The 1 GiB copy of ceilings.txt in bytes/s, read + written.
double measured_copy_bandwidth() {
  std::ifstream in(kData + "/ceilings.txt");
  const std::regex line(R"(bytes=1073741824 .*copy_GBps_rw=([0-9.]+))");
  std::string s;
  std::smatch m;
  while (std::getline(in, s)) {
    if (std::regex_search(s, m, line)) return std::stod(m[1]) * 1e9;
  }
  ADD_FAILURE() << "no 1 GiB copy in " << kData << "/ceilings.txt";
  return 0;
}

// The misalignment probe: StragglAR's time per byte at 256 MiB (chunks of S/7, unaligned) over
// 224 MiB (chunks of 32 MiB), the median of the timed iterations.
double probe_slowdown(const std::string& gpu, const std::string& transport) {
  const std::string dir = kRoot + "/data/measured/unaligned/2026-11-26/" + gpu + "/";
  auto median = [&](const std::string& bytes) {
    const auto files = read_measured_files({dir + transport + "-stragglar-" + bytes + ".csv"});
    std::vector<double> t;
    for (const auto& r : files.at(0).runs) t.push_back(r.row.time.value);
    return quantile(t, 0.5);
  };
  return (median("268435456") / 256) / (median("234881024") / 224);
}

TEST(H100Prediction, TheShippedFilesAreTheH200FitCarriedByTwoMeasuredNumbers) {
  for (const auto& [t, transport] :
       std::map<std::string, std::string>{{"single_gpu", "single-gpu"}, {"direct", "direct"}}) {
    const auto h200 = parameters("h200_" + t + ".yaml");
    const auto h100 = parameters("h100_" + t + ".yaml");
    ASSERT_EQ(h200.size(), h100.size());
    const double r200 = probe_slowdown("h200", transport), r100 = probe_slowdown("h100", transport);
    // The probe sees the misaligned chunks cost about twice as much on the H200.
    EXPECT_GT(r200 - 1, 1.8 * (r100 - 1)) << transport;
    const double u = 1 + (h200.at("unaligned_factor") - 1) * (r100 - 1) / (r200 - 1);
    for (const auto& [name, value] : h200) {
      if (name == "memory_bandwidth") {
        EXPECT_NEAR(h100.at(name), measured_copy_bandwidth(), 1e-6 * value) << t;
      } else if (name == "unaligned_factor") {
        EXPECT_NEAR(h100.at(name), u, 1e-5 * u) << t;
      } else {
        EXPECT_EQ(h100.at(name), value) << t << " " << name;
      }
    }
  }
}

struct Bounds {
  double median_8_ranks, p95_8_ranks, median_delayed, median_rank_counts;
};

void check(const std::string& transport, const std::map<std::string, double>& values,
           const Bounds& b, const std::map<std::string, double>& per_algorithm) {
  const SimFit eight = compare_by_simulation(
      read_measured_files(files(transport, {"graph-d0-", "graph-d5ms-", "sweep-"})), options(),
      values);
  ASSERT_TRUE(eight.converged);
  EXPECT_TRUE(eight.fitted.empty());
  EXPECT_TRUE(eight.notes.empty()) << eight.notes.front();
  EXPECT_EQ(eight.values.at("memory_bandwidth"), values.at("memory_bandwidth"));
  EXPECT_LE(abs_error_quantile(eight.rows, 0.5), b.median_8_ranks);
  EXPECT_LE(abs_error_quantile(eight.rows, 0.95), b.p95_8_ranks);
  EXPECT_LE(abs_error_quantile(eight.rows, 0.5, true), b.median_delayed);
  for (const auto& [a, bound] : per_algorithm) {
    EXPECT_LE(abs_error_quantile(eight.rows, 0.5, std::nullopt, a), bound) << a;
  }
  // 4, 16, 32 and 64 ranks on the one device (1 MiB to 256 MiB, no delay and 2 ms).
  const SimFit ranks =
      compare_by_simulation(read_measured_files(files(transport, {"ranks"})), options(), values);
  EXPECT_LE(abs_error_quantile(ranks.rows, 0.5), b.median_rank_counts);
}

// The H200 fit with memory_bandwidth alone changed (the issue's recipe).
std::map<std::string, double> bandwidth_only(const std::string& t) {
  auto v = parameters("h200_" + t + ".yaml");
  v["memory_bandwidth"] = measured_copy_bandwidth();
  return v;
}

TEST(H100Prediction, TheSingleGpuTransport) {
  // Reached: median 5.0%, p95 26.0%, delayed rows 3.5%, rank counts 4.5% (no delay alone: 7.3%).
  // Carried from the H200 refit with launch_time fitted too (0.081 us) it was 4.1%, 24.0%, 3.2%,
  // 5.4% (no delay 5.3%), and from the fit on the morning binary's runs (the file shipped until
  // 2026-11-30) 3.5%, 28.1%, 3.2%, 4.4% (no delay 4.3%), with the trees far better (tree 3.4%,
  // dbtree 2.8%, straggler_tree 4.6%) and direct_rs_ag worse (21.3%).
  check("single-gpu", parameters("h100_single_gpu.yaml"), {0.055, 0.265, 0.04, 0.05},
        {{"ring", 0.03},
         {"rhd", 0.033},
         {"stragglar", 0.037},
         {"direct_rs_ag", 0.049},
         {"stragglar_hier", 0.087},
         {"dbtree", 0.128},
         {"straggler_tree", 0.149},
         {"tree", 0.168}});  // the worst: docs/calibration.md
}

TEST(H100Prediction, TheSingleGpuTransportWithTheBandwidthAlone) {
  // Reached: median 11.2%, p95 28.1%, delayed rows 11.7%, rank counts 10.8%; StragglAR 15.2%.
  check("single-gpu", bandwidth_only("single_gpu"), {0.117, 0.286, 0.122, 0.113},
        {{"stragglar", 0.157}});
}

TEST(H100Prediction, TheDirectTransport) {
  // Reached: median 6.3%, p95 31.8%, delayed rows 4.3%, rank counts 12.0%.
  check("direct", parameters("h100_direct.yaml"), {0.068, 0.323, 0.048, 0.125},
        {{"ring", 0.049}, {"rhd", 0.042}, {"stragglar", 0.048}, {"direct_rs_ag", 0.262}});
}

TEST(H100Prediction, TheDirectTransportWithTheBandwidthAlone) {
  // Reached: median 6.6%, p95 31.8%, delayed rows 5.4%, rank counts 12.6%.
  check("direct", bandwidth_only("direct"), {0.071, 0.323, 0.059, 0.131}, {{"stragglar", 0.066}});
}

// StragglAR's crossover delay over Ring at 256 MiB (the delay sweep), measured and simulated,
// each by linear interpolation of Ring / StragglAR (time after the last arrival) between the
// swept delays, as scripts/h100_prediction.py and scripts/h200_figures.py compute it.
std::pair<double, double> crossovers(const std::string& transport,
                                     const std::map<std::string, double>& values) {
  const SimFit f =
      compare_by_simulation(read_measured_files(files(transport, {"sweep-"})), options(), values);
  // file's nominal delay -> delays, and per algorithm measured and simulated times
  std::map<std::string, std::vector<double>> delay;
  std::map<std::pair<std::string, std::string>, std::vector<double>> measured, simulated;
  for (const ComparedRow& r : f.rows) {
    const std::string name = std::filesystem::path(r.file).filename().string();
    const std::string nominal = name.substr(0, name.rfind('-'));
    delay[nominal].push_back(r.delay);
    measured[{nominal, r.algorithm}].push_back(r.measured);
    simulated[{nominal, r.algorithm}].push_back(r.simulated);
  }
  std::vector<std::array<double, 3>> p;  // delay, ring / stragglar measured, simulated
  for (const auto& entry : delay) {
    // (not a structured binding: lambdas may not capture those before C++20's relaxation in
    // clang 16)
    const std::string& nominal = entry.first;
    const std::vector<double>& d = entry.second;
    auto ratio = [&](auto& m) {
      return quantile(m.at({nominal, "ring"}), 0.5) / quantile(m.at({nominal, "stragglar"}), 0.5);
    };
    p.push_back({quantile(d, 0.5), ratio(measured), ratio(simulated)});
  }
  std::sort(p.begin(), p.end());
  auto cross = [&](int k) {
    for (std::size_t i = 0; i + 1 < p.size(); ++i) {
      const double r0 = p[i][k], r1 = p[i + 1][k];
      if (r0 < 1 && r1 >= 1) return p[i][0] + (1 - r0) * (p[i + 1][0] - p[i][0]) / (r1 - r0);
    }
    return -1.0;
  };
  return {cross(1), cross(2)};
}

TEST(H100Prediction, StragglarCrossesRingWhereTheSweepDoes) {
  // single-gpu: measured 1.23 ms, simulated 1.27 ms (the issue asks for 0.3 ms; with the
  // bandwidth alone 1.97 ms); direct: measured 0.880 ms, simulated 0.889 ms.
  const auto [m1, s1] = crossovers("single-gpu", parameters("h100_single_gpu.yaml"));
  EXPECT_NEAR(m1, 1.2284e-3, 0.01e-3);
  EXPECT_NEAR(s1, m1, 0.1e-3);
  EXPECT_GT(crossovers("single-gpu", bandwidth_only("single_gpu")).second - m1, 0.6e-3);
  const auto [m2, s2] = crossovers("direct", parameters("h100_direct.yaml"));
  EXPECT_NEAR(m2, 0.8798e-3, 0.01e-3);
  EXPECT_NEAR(s2, m2, 0.03e-3);
}

// What the one changed number is worth: the H200's own bandwidth predicts the H100 far worse, so
// the figures above come from the copy bandwidth and not from slack in the bounds.
TEST(H100Prediction, TheH200BandwidthPredictsTheH100Worse) {
  const auto h200 = parameters("h200_single_gpu.yaml");
  const auto h100 = bandwidth_only("single_gpu");
  const auto measured =
      read_measured_files(files("single-gpu", {"graph-d0-", "graph-d5ms-", "sweep-"}));
  const SimFit with_h200 = compare_by_simulation(measured, options(), h200);
  const SimFit with_h100 = compare_by_simulation(measured, options(), h100);
  EXPECT_GT(abs_error_quantile(with_h200.rows, 0.5), 2 * abs_error_quantile(with_h100.rows, 0.5));
}

}  // namespace
}  // namespace ssim::experiments
