// The bounded Nelder-Mead of the fits by simulation (calibration/minimize.hpp).
#include "calibration/minimize.hpp"

#include <gtest/gtest.h>

#include <cmath>
#include <vector>

#include "common/error.hpp"

namespace ssim::calib {
namespace {

// A valley with its minimum at (3e12, 2e-6), far apart in scale, as a fit's parameters are.
double valley(std::span<const double> x) {
  const double a = std::log(x[0] / 3e12), b = std::log(x[1] / 2e-6);
  return a * a + 10 * (b - 0.5 * a) * (b - 0.5 * a);
}

TEST(Minimize, FindsTheMinimumOfPositiveParameters) {
  const std::vector<PositiveParameter> p = {{"bandwidth", 1e9, 1e15, 1e11},
                                            {"latency", 1e-9, 1e-3, 1e-5}};
  const MinimizeResult r = minimize_positive(valley, p);
  ASSERT_TRUE(r.converged);
  EXPECT_NEAR(r.x[0], 3e12, 3e12 * 1e-3);
  EXPECT_NEAR(r.x[1], 2e-6, 2e-6 * 1e-3);
  EXPECT_LT(r.value, 1e-6);
  // Deterministic: the same evaluations give the same point.
  const MinimizeResult again = minimize_positive(valley, p);
  EXPECT_EQ(again.x, r.x);
  EXPECT_EQ(again.evaluations, r.evaluations);
}

TEST(Minimize, StaysInsideTheBounds) {
  // The minimum lies below the lower bound of the first parameter: the fit ends on the bound.
  const std::vector<PositiveParameter> p = {{"bandwidth", 4e12, 1e15, 1e13},
                                            {"latency", 1e-9, 1e-3, 1e-5}};
  std::vector<double> seen_low(2, 1e300);
  const MinimizeResult r = minimize_positive(
      [&](std::span<const double> x) {
        for (std::size_t i = 0; i < 2; ++i) seen_low[i] = std::min(seen_low[i], x[i]);
        return valley(x);
      },
      p);
  EXPECT_GE(seen_low[0], 4e12);
  EXPECT_GE(seen_low[1], 1e-9);
  EXPECT_NEAR(r.x[0], 4e12, 4e12 * 1e-6);
  // A parameter with lo == hi is held there.
  const std::vector<PositiveParameter> held = {{"bandwidth", 3e12, 3e12, 3e12},
                                               {"latency", 1e-9, 1e-3, 1e-5}};
  const MinimizeResult h = minimize_positive(valley, held);
  EXPECT_EQ(h.x[0], 3e12);
  EXPECT_NEAR(h.x[1], 2e-6, 2e-6 * 1e-3);
}

TEST(Minimize, ReportsWhenTheEvaluationsRunOut) {
  const std::vector<PositiveParameter> p = {{"bandwidth", 1e9, 1e15, 1e11},
                                            {"latency", 1e-9, 1e-3, 1e-5}};
  MinimizeOptions o;
  o.max_evaluations = 10;
  const MinimizeResult r = minimize_positive(valley, p, o);
  EXPECT_FALSE(r.converged);
  EXPECT_LE(r.evaluations, 13);
  EXPECT_TRUE(std::isfinite(r.value));
}

TEST(Minimize, RefusesBadBounds) {
  auto f = [](std::span<const double>) { return 0.0; };
  EXPECT_THROW(minimize_positive(f, std::vector<PositiveParameter>{}), InputError);
  try {
    minimize_positive(f, std::vector<PositiveParameter>{{"latency", 2e-6, 1e-6, 1.5e-6}});
    FAIL();
  } catch (const InputError& e) {
    EXPECT_NE(std::string(e.what()).find("the bounds of latency exclude every value"),
              std::string::npos);
  }
  EXPECT_THROW(minimize_positive(f, std::vector<PositiveParameter>{{"x", 0, 1, 0.5}}), InputError);
  EXPECT_THROW(minimize_positive(f, std::vector<PositiveParameter>{{"x", 1, 2, 3}}), InputError);
}

}  // namespace
}  // namespace ssim::calib
