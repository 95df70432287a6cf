// The closed forms of cost_model against (a) the generated schedules, timed round by round
// by round_timing.hpp, and (b) the StragglAR paper's section 3.3 table.
#include "algorithms/cost_model.hpp"

#include <gtest/gtest.h>

#include <map>
#include <string>
#include <vector>

#include "algorithms/registry.hpp"
#include "round_timing.hpp"

namespace ssim::alg {
namespace {

constexpr double kGiB = 1024.0 * 1024.0 * 1024.0;
// The paper's constants: alpha 3 us, 450 GiB/s per direction, no reduction cost.
const CostParams kPaper{3e-6, 1.0 / (450.0 * kGiB), 0.0};

struct Variant {
  std::string algorithm;
  Options options;
  std::string label;
};

Options segments(const char* count) {
  Options o;
  o.set("segments", count);
  return o;
}

std::vector<Variant> variants() {
  std::vector<Variant> v = {{"ring", {}, "ring"},
                            {"rhd", {}, "rhd"},
                            {"rhd", Options(std::map<std::string, std::string>{{"nonpow2", "rabenseifner"}}), "rhd/rabenseifner"},
                            {"direct", {}, "direct"},
                            {"tree", {}, "tree"},
                            {"dbtree", {}, "dbtree"},
                            {"halving_doubling", {}, "halving_doubling"},
                            {"direct_rs_ag", {}, "direct_rs_ag"},
                            {"oneshot", {}, "oneshot"},
                            {"twoshot", {}, "twoshot"},
                            {"straggler_tree", {}, "straggler_tree"}};
  for (const char* s : {"1", "2", "3", "5"})
    v.push_back({"tree", segments(s), std::string("tree/") + s});
  for (const char* s : {"1", "2", "5"})
    v.push_back({"straggler_tree", segments(s), std::string("straggler_tree/") + s});
  for (const char* s : {"2", "3", "5"})
    v.push_back({"dbtree", segments(s), std::string("dbtree/") + s});
  return v;
}

std::vector<int> rank_counts() {
  std::vector<int> ns;
  for (int n = 2; n <= 33; ++n) ns.push_back(n);
  for (int n : {64, 100, 128}) ns.push_back(n);
  return ns;
}

// Parameter sets: the paper's; one where reduction costs as much as sending; one where
// alpha dominates a chunk's transfer, so that a closed form that got a round or a gamma
// wrong on the critical path shows.
std::vector<CostParams> parameter_sets() {
  return {kPaper, {3e-6, 1.0 / (450.0 * kGiB), 1.0 / (450.0 * kGiB)}, {1e-6, 1e-12, 3e-13}};
}

TEST(CostModel, ClosedFormsMatchTheGeneratedSchedules) {
  for (const Variant& v : variants()) {
    const AlgorithmInfo& info = find_algorithm(v.algorithm);
    for (int n : rank_counts()) {
      const Schedule s = generate(v.algorithm, n, v.options);
      for (double per_chunk : {1024.0, 3.0 * 1024 * 1024}) {
        const double bytes = per_chunk * s.chunks;
        for (const CostParams& p : parameter_sets()) {
          const double expect = info.cost(n, bytes, p, v.options);
          const double got = testing::evaluate_rounds(s, bytes, p).makespan;
          EXPECT_NEAR(got, expect, 1e-9 * expect)
              << v.label << " n=" << n << " bytes=" << bytes << " gamma=" << p.gamma;
        }
      }
    }
  }
}

// direct_ideal_cost is the time after the straggler arrives when the ring among the others
// is already done: let the straggler arrive long after the others finish.
TEST(CostModel, DirectIdealIsTheTimeAfterTheStragglerArrives) {
  for (int n : {2, 3, 6, 8, 13, 64}) {
    for (int straggler : {n - 1, 0, n / 2}) {
      Options o;
      o.set("straggler", std::to_string(straggler));
      const Schedule s = generate("direct", n, o);
      const double bytes = 1024.0 * (n - 1);
      for (const CostParams& p : parameter_sets()) {
        const double delay = 2.0 * ring_cost(n, bytes, p) + 1e-3;
        std::vector<double> arrival(static_cast<std::size_t>(n), 0.0);
        arrival[static_cast<std::size_t>(straggler)] = delay;
        const double after = testing::evaluate_rounds(s, bytes, p, arrival).makespan - delay;
        const double expect = direct_ideal_cost(n, bytes, p);
        EXPECT_NEAR(after, expect, 1e-9 * expect) << "n=" << n << " straggler=" << straggler;
      }
    }
  }
}

// oneshot and twoshot hide nothing of a late rank: every rank's loads of a round are served in
// order, so the first load from the straggler holds up the rest, and the straggler still has
// (n-1) pieces to serve and (n-1) to load per round after it arrives. Their time after it
// arrives is their whole closed form, whichever rank is late.
TEST(CostModel, DirectLoadsHideNothingOfALateRank) {
  for (const char* name : {"oneshot", "twoshot"}) {
    const AlgorithmInfo& info = find_algorithm(name);
    for (int n : {2, 3, 6, 8, 13, 64}) {
      const Schedule s = generate(name, n, Options{});
      const double bytes = 1024.0 * n;
      for (int straggler : {n - 1, 0, n / 2}) {
        for (const CostParams& p : parameter_sets()) {
          const double delay = 2.0 * info.cost(n, bytes, p, Options{}) + 1e-3;
          std::vector<double> arrival(static_cast<std::size_t>(n), 0.0);
          arrival[static_cast<std::size_t>(straggler)] = delay;
          const double after = testing::evaluate_rounds(s, bytes, p, arrival).makespan - delay;
          const double expect = info.cost(n, bytes, p, Options{});
          EXPECT_NEAR(after, expect, 1e-9 * expect)
              << name << " n=" << n << " straggler=" << straggler;
        }
      }
    }
  }
}

double ms(double seconds) { return seconds * 1e3; }

// Section 3.3 of the reference digest, 1 GiB, printed to 3 decimals. Worked example n = 8:
// Ring 14 alpha + 1.75 s beta = 0.042 + 3.8889 = 3.931 ms; RHD 6 alpha + 1.75 s beta =
// 3.907 ms; Direct 3 alpha + 3 s beta = 0.009 + 6.6667 = 6.676 ms; RHD n = 6: 6 alpha +
// 2.5 s beta = 0.018 + 5.5556 = 5.574 ms.
TEST(CostModel, PaperTable) {
  struct Row {
    int n;
    double ring, rhd, direct;  // ms; direct < 0: not a power of two (see below)
  };
  const Row rows[] = {
      {4, 3.351, 3.345, 4.450},    {6, 3.734, 5.574, -1},       {8, 3.931, 3.907, 6.676},
      {12, 4.140, 6.135, -1},      {16, 4.257, 4.191, 8.901},   {24, 4.397, 6.419, -1},
      {32, 4.492, 4.336, 11.126},  {48, 4.634, 6.564, -1},      {64, 4.753, 4.411, 13.351},
      {96, 4.968, 6.639, -1},      {128, 5.172, 4.452, 15.577}, {192, 5.567, 6.680, -1},
      {256, 5.957, 4.475, 17.802},
  };
  for (const Row& r : rows) {
    EXPECT_NEAR(ms(ring_cost(r.n, kGiB, kPaper)), r.ring, 5e-4) << r.n;
    EXPECT_NEAR(ms(rhd_paper_cost(r.n, kGiB, kPaper)), r.rhd, 5e-4) << r.n;
    if (r.direct > 0) {
      EXPECT_NEAR(ms(direct_ideal_cost(r.n, kGiB, kPaper)), r.direct, 5e-4) << r.n;
    }
  }
  // The table's Direct column uses the fractional log2 n for non-powers of two (n = 6:
  // 5.752 ms); our schedule needs ceil(log2 6) = 3 rounds, the n = 8 value.
  EXPECT_NEAR(ms(direct_ideal_cost(6, kGiB, kPaper)), 6.676, 5e-4);
}

// For powers of two our rhd schedule is the paper's; otherwise the fold costs exactly
// s beta more than 3-2 elimination (same 2 ceil(log2 n) alphas).
TEST(CostModel, RhdScheduleAgainstPaper) {
  for (int n : {2, 4, 8, 64, 256}) {
    EXPECT_NEAR(rhd_cost(n, kGiB, kPaper), rhd_paper_cost(n, kGiB, kPaper), 1e-15) << n;
  }
  for (int n : {3, 6, 12, 100, 255}) {
    EXPECT_NEAR(rhd_cost(n, kGiB, kPaper) - rhd_paper_cost(n, kGiB, kPaper), kGiB * kPaper.beta,
                1e-15)
        << n;
  }
}

// Hand-derived: tree, n = 7 (full tree, D = 2), S = 2, alpha = 1, no bytes: 2(S + D - 1) = 6
// rounds per phase, 12 alpha. dbtree, n = 2, S = 3: three exchanges each way per phase: 6.
TEST(CostModel, SmallTreesByHand) {
  const CostParams unit{1.0, 0.0, 0.0};
  EXPECT_DOUBLE_EQ(tree_cost(7, 0.0, 2, unit), 12.0);
  EXPECT_DOUBLE_EQ(dbtree_cost(2, 0.0, 3, unit), 6.0);
}

}  // namespace
}  // namespace ssim::alg
