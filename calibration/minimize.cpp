#include "calibration/minimize.hpp"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <limits>
#include <numeric>

#include "common/error.hpp"
#include "common/random.hpp"

namespace ssim::calib {
namespace {

std::string number(double v) {
  char buf[40];
  std::snprintf(buf, sizeof buf, "%g", v);
  return buf;
}

class Search {
 public:
  Search(const std::function<double(std::span<const double>)>& f,
         std::span<const PositiveParameter> p, const MinimizeOptions& o)
      : f_(f), o_(o) {
    for (std::size_t i = 0; i < p.size(); ++i) {
      lo_x_.push_back(p[i].lo);
      hi_x_.push_back(p[i].hi);
      lo_.push_back(std::log(p[i].lo));
      hi_.push_back(std::log(p[i].hi));
      start_.push_back(std::log(p[i].start));
      if (p[i].lo < p[i].hi) free_.push_back(i);
    }
  }

  MinimizeResult run() {
    MinimizeResult r;
    best_y_ = start_;
    best_ = evaluate(best_y_);
    if (free_.empty()) {
      r.converged = true;
    } else {
      std::uint64_t state = o_.seed;
      double step = o_.initial_step;
      for (int restart = 0; restart <= o_.max_restarts; ++restart) {
        const double before = best_;
        const bool collapsed =
            simplex(step, restart == 0 ? 0 : splitmix64(state += kSplitMix64Increment));
        if (!collapsed) break;  // out of evaluations
        if (restart > 0 && !(before - best_ > o_.tolerance * std::fabs(before))) {
          r.converged = true;
          break;
        }
        step = std::max(o_.initial_step / 4, step / 2);
      }
    }
    r.value = best_;
    r.evaluations = evaluations_;
    r.x = to_x(best_y_);
    return r;
  }

 private:
  // exp(log(lo)) may round below lo: the values are clamped to the bounds as given.
  std::vector<double> to_x(const std::vector<double>& y) const {
    std::vector<double> x(y.size());
    for (std::size_t i = 0; i < y.size(); ++i)
      x[i] = std::clamp(std::exp(y[i]), lo_x_[i], hi_x_[i]);
    return x;
  }

  double evaluate(std::vector<double>& y) {
    for (std::size_t i = 0; i < y.size(); ++i) y[i] = std::clamp(y[i], lo_[i], hi_[i]);
    const std::vector<double> x = to_x(y);
    ++evaluations_;
    double v = f_(x);
    if (std::isnan(v)) v = std::numeric_limits<double>::infinity();
    if (v < best_) {
      best_ = v;
      best_y_ = y;
    }
    return v;
  }

  // One Nelder-Mead descent from a simplex around the best point; true when it collapsed,
  // false when the evaluations ran out.
  bool simplex(double step, std::uint64_t signs) {
    const std::size_t d = free_.size();
    std::vector<std::vector<double>> v(d + 1, best_y_);
    std::vector<double> fv(d + 1);
    fv[0] = best_;
    for (std::size_t k = 0; k < d; ++k) {
      const std::size_t i = free_[k];
      double s = ((signs >> k) & 1) ? -step : step;
      // Step into the box: away from a bound the point sits on.
      if (v[k + 1][i] + s > hi_[i]) s = -std::fabs(s);
      if (v[k + 1][i] + s < lo_[i]) s = std::fabs(s);
      v[k + 1][i] += s;
      fv[k + 1] = evaluate(v[k + 1]);
    }
    std::vector<std::size_t> order(d + 1);
    while (true) {
      std::iota(order.begin(), order.end(), 0);
      std::stable_sort(order.begin(), order.end(),
                       [&](std::size_t a, std::size_t b) { return fv[a] < fv[b]; });
      const std::size_t b = order.front(), w = order.back(), sw = order[d - 1];
      double spread = 0;
      for (std::size_t k = 0; k <= d; ++k) {
        for (std::size_t i : free_) spread = std::max(spread, std::fabs(v[k][i] - v[b][i]));
      }
      const double fspread = fv[w] - fv[b];
      if (std::isfinite(fspread) && fspread <= o_.tolerance * std::fabs(fv[b]) &&
          spread <= std::max(o_.step_tolerance, 1e-12)) {
        return true;
      }
      if (spread <= 1e-12) return true;
      if (evaluations_ >= o_.max_evaluations) return false;
      std::vector<double> c(v[b].size(), 0.0);
      for (std::size_t k = 0; k <= d; ++k) {
        if (k == w) continue;
        for (std::size_t i = 0; i < c.size(); ++i) c[i] += v[k][i] / static_cast<double>(d);
      }
      auto along = [&](double t) {
        std::vector<double> p(c.size());
        for (std::size_t i = 0; i < c.size(); ++i) p[i] = c[i] + t * (v[w][i] - c[i]);
        return p;
      };
      std::vector<double> r = along(-1.0);
      const double fr = evaluate(r);
      if (fr < fv[b]) {
        std::vector<double> e = along(-2.0);
        const double fe = evaluate(e);
        if (fe < fr) {
          v[w] = e;
          fv[w] = fe;
        } else {
          v[w] = r;
          fv[w] = fr;
        }
        continue;
      }
      if (fr < fv[sw]) {
        v[w] = r;
        fv[w] = fr;
        continue;
      }
      std::vector<double> k = fr < fv[w] ? along(-0.5) : along(0.5);
      const double fk = evaluate(k);
      if (fk < std::min(fr, fv[w])) {
        v[w] = k;
        fv[w] = fk;
        continue;
      }
      for (std::size_t j = 0; j <= d; ++j) {
        if (j == b) continue;
        for (std::size_t i = 0; i < c.size(); ++i) v[j][i] = v[b][i] + 0.5 * (v[j][i] - v[b][i]);
        fv[j] = evaluate(v[j]);
      }
    }
  }

  const std::function<double(std::span<const double>)>& f_;
  const MinimizeOptions& o_;
  std::vector<double> lo_, hi_, start_;  // log space
  std::vector<double> lo_x_, hi_x_;
  std::vector<std::size_t> free_;
  std::vector<double> best_y_;
  double best_ = std::numeric_limits<double>::infinity();
  int evaluations_ = 0;
};

}  // namespace

MinimizeResult minimize_positive(const std::function<double(std::span<const double>)>& f,
                                 std::span<const PositiveParameter> parameters,
                                 const MinimizeOptions& options) {
  if (parameters.empty()) throw InputError("nothing to fit: no free parameter");
  for (const PositiveParameter& p : parameters) {
    if (!(p.lo > 0) || !std::isfinite(p.lo) || !std::isfinite(p.hi)) {
      throw InputError("the bounds of " + p.name + " must be finite and > 0, got [" + number(p.lo) +
                       ", " + number(p.hi) + "]");
    }
    if (p.lo > p.hi) {
      throw InputError("the bounds of " + p.name + " exclude every value: [" + number(p.lo) + ", " +
                       number(p.hi) + "]");
    }
    if (!(p.start >= p.lo && p.start <= p.hi)) {
      throw InputError("the start of " + p.name + " (" + number(p.start) +
                       ") lies outside its bounds [" + number(p.lo) + ", " + number(p.hi) + "]");
    }
  }
  Search s(f, parameters, options);
  return s.run();
}

}  // namespace ssim::calib
