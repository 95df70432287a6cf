// Predicting another GPU (issue 22, "scaling honesty"): the shared-device model calibrated on the
// H200 (configs/topologies/h200_*.yaml) with only memory_bandwidth changed to the H100's measured
// copy bandwidth (configs/topologies/h100_*.yaml) against the runs of the same campaign on an
// NVIDIA H100 80GB HBM3 (data/measured/h100/2026-11-26). Nothing is fitted to the H100 data.
// The bounds are the figures docs/calibration.md "Predicting another GPU" reports (python3
// scripts/h100_prediction.py), rounded up by about half a point.
#include <gtest/gtest.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <map>
#include <regex>
#include <string>
#include <vector>

#include "experiments/calibrate_sim.hpp"
#include "experiments/config.hpp"

namespace ssim::exp {
namespace {

const std::string kRoot = STRAGGLESIM_SOURCE_DIR;
const std::string kData = kRoot + "/data/measured/h100/2026-11-26";

std::vector<std::string> files(const std::string& transport, const std::vector<std::string>& kinds) {
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

TEST(H100Prediction, TheShippedFilesAreTheH200FitWithTheH100CopyBandwidth) {
  for (const char* t : {"single_gpu", "direct"}) {
    const auto h200 = parameters(std::string("h200_") + t + ".yaml");
    const auto h100 = parameters(std::string("h100_") + t + ".yaml");
    ASSERT_EQ(h200.size(), h100.size());
    for (const auto& [name, value] : h200) {
      if (name == "memory_bandwidth") {
        EXPECT_NEAR(h100.at(name), measured_copy_bandwidth(), 1e-6 * value) << t;
      } else {
        EXPECT_EQ(h100.at(name), value) << t << " " << name;
      }
    }
  }
}

struct Bounds {
  double median_8_ranks, p95_8_ranks, median_delayed, median_rank_counts;
};

void check(const std::string& transport, const std::string& topology_file, const Bounds& b,
           const std::map<std::string, double>& per_algorithm) {
  const auto values = parameters(topology_file);
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

TEST(H100Prediction, TheSingleGpuTransport) {
  // Reached: median 5.9%, p95 27.5%, delayed rows 6.2%, rank counts 9.2%.
  check("single-gpu", "h100_single_gpu.yaml", {0.064, 0.28, 0.067, 0.096},
        {{"ring", 0.031},
         {"rhd", 0.035},
         {"tree", 0.036},
         {"dbtree", 0.031},
         {"stragglar_hier", 0.045},
         {"stragglar", 0.183},       // the model's worst: docs/calibration.md
         {"direct_rs_ag", 0.181}});  // likewise
}

TEST(H100Prediction, TheDirectTransport) {
  // Reached: median 6.6%, p95 31.8%, delayed rows 5.4%, rank counts 12.6%.
  check("direct", "h100_direct.yaml", {0.071, 0.323, 0.059, 0.131},
        {{"ring", 0.049}, {"rhd", 0.042}, {"stragglar", 0.066}, {"direct_rs_ag", 0.262}});
}

// What the one changed number is worth: the H200's own bandwidth predicts the H100 far worse, so
// the figures above come from the copy bandwidth and not from slack in the bounds.
TEST(H100Prediction, TheH200BandwidthPredictsTheH100Worse) {
  const auto h200 = parameters("h200_single_gpu.yaml");
  const auto h100 = parameters("h100_single_gpu.yaml");
  const auto measured =
      read_measured_files(files("single-gpu", {"graph-d0-", "graph-d5ms-", "sweep-"}));
  const SimFit with_h200 = compare_by_simulation(measured, options(), h200);
  const SimFit with_h100 = compare_by_simulation(measured, options(), h100);
  EXPECT_GT(abs_error_quantile(with_h200.rows, 0.5), 2 * abs_error_quantile(with_h100.rows, 0.5));
}

}  // namespace
}  // namespace ssim::exp
