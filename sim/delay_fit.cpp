#include "sim/delay_fit.hpp"

#include <algorithm>
#include <cmath>
#include <numeric>
#include <sstream>

#include "common/error.hpp"

namespace ssim::sim {

namespace {

double phi(double z) { return 0.5 * std::erfc(-z / std::sqrt(2.0)); }

double mean_of(const std::vector<double>& v) {
  return std::accumulate(v.begin(), v.end(), 0.0) / static_cast<double>(v.size());
}

double stddev_of(const std::vector<double>& v, double mean) {
  if (v.size() < 2) return 0.0;
  double s = 0;
  for (double x : v) s += (x - mean) * (x - mean);
  return std::sqrt(s / static_cast<double>(v.size() - 1));
}

// sup |F_n - F| over sorted samples.
double ks_distance(const std::vector<double>& sorted, const Distribution& d) {
  const double n = static_cast<double>(sorted.size());
  double D = 0;
  for (std::size_t i = 0; i < sorted.size(); ++i) {
    const double F = distribution_cdf(d, sorted[i]);
    D = std::max({D, std::fabs((static_cast<double>(i) + 1) / n - F),
                  std::fabs(F - static_cast<double>(i) / n)});
  }
  return D;
}

double median_of(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  const std::size_t n = v.size();
  return n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}

}  // namespace

void fit_late_probability(DelayFit& fit, const std::vector<double>& gaps,
                          const std::vector<std::size_t>& slowest) {
  const std::size_t k = fit.stragglers.size();
  const auto S = static_cast<double>(fit.steps), R = static_cast<double>(fit.ranks);
  const double total = static_cast<double>(gaps.size());  // k per step
  // A gap the base delays alone reach in fewer than 1 in 10 logs of this size.
  const double threshold =
      std::max(1e-9, fit.base.chosen().quantile(1.0 - 1.0 / (10.0 * S * R)).value);
  std::vector<double> high, low;
  std::vector<char> late(slowest.size(), 0);
  for (std::size_t i = 0; i < gaps.size(); ++i) {
    if (gaps[i] > threshold) {
      high.push_back(gaps[i]);
      late[i / k] = 1;
    } else {
      low.push_back(gaps[i]);
    }
  }
  if (high.empty() || low.empty()) return;
  // Steps without a late rank have gaps of the base delays' size, mostly far below the
  // threshold (an extreme quantile of the base); a straggler delay's own lower tail reaching
  // below it puts its gaps just under it (or spread up to it). Median under a third of it:
  // base-like.
  if (!(median_of(low) < threshold / 3)) return;
  ComponentFit late_fit = fit_component(high);
  const double below = distribution_cdf(late_fit.chosen(), threshold);
  const double expected_low = total * below, low_count = static_cast<double>(low.size());
  // Steps without a late rank beyond what the delay's own lower tail explains (3 standard
  // deviations of a Poisson count): the straggler is late only in a share of the steps.
  if (!(low_count > expected_low + 3 * std::sqrt(expected_low) + 1)) return;
  fit.probability = std::min(1.0, static_cast<double>(high.size()) / total / (1.0 - below));
  fit.late_threshold = threshold;
  fit.late_steps = static_cast<std::size_t>(std::count(late.begin(), late.end(), 1));
  fit.extra = std::move(late_fit);
  // Persistence among the steps in which a straggler was late (which rank it was).
  const double late_per_straggler = static_cast<double>(high.size()) / static_cast<double>(k);
  for (StragglerFit& st : fit.stragglers) {
    std::size_t n = 0;
    for (std::size_t s = 0; s < slowest.size(); ++s)
      n += late[s] && slowest[s] == static_cast<std::size_t>(st.rank);
    st.persistence = std::min(1.0, static_cast<double>(n) / late_per_straggler);
  }
}

double distribution_cdf(const Distribution& d, double x) {
  const Distribution::Params& p = d.params();
  if (std::get_if<dist::None>(&p)) return x >= 0 ? 1.0 : 0.0;
  if (const auto* c = std::get_if<dist::Constant>(&p)) return x >= c->value.value ? 1.0 : 0.0;
  if (const auto* u = std::get_if<dist::Uniform>(&p)) {
    if (u->high.value <= u->low.value) return x >= u->low.value ? 1.0 : 0.0;
    return std::clamp((x - u->low.value) / (u->high.value - u->low.value), 0.0, 1.0);
  }
  if (const auto* nrm = std::get_if<dist::Normal>(&p)) {  // truncated to [0, inf)
    if (x < 0) return 0.0;
    const double m = nrm->mean.value, s = nrm->stddev.value;
    const double below = phi(-m / s);
    return (phi((x - m) / s) - below) / (1.0 - below);
  }
  if (const auto* ln = std::get_if<dist::Lognormal>(&p))
    return x > 0 ? phi((std::log(x) - ln->mu) / ln->sigma) : 0.0;
  if (const auto* e = std::get_if<dist::Exponential>(&p))
    return x > 0 ? 1.0 - std::exp(-x / e->mean.value) : 0.0;
  if (const auto* pa = std::get_if<dist::Pareto>(&p))
    return x >= pa->scale.value ? 1.0 - std::pow(pa->scale.value / x, pa->shape) : 0.0;
  throw InputError("no closed-form CDF for an empirical distribution");
}

ComponentFit fit_component(std::vector<double> samples) {
  SSIM_CHECK(!samples.empty(), "fit_component needs samples");
  std::sort(samples.begin(), samples.end());
  ComponentFit f;
  f.samples = samples.size();
  f.mean = mean_of(samples);
  const double sd = stddev_of(samples, f.mean);
  // Degenerate samples: no delay, or the same delay every time (its KS distance is not computed).
  if (samples.back() < 1e-9) {
    f.candidates.push_back({Distribution::none(), 0.0});
    return f;
  }
  if (sd < 1e-3 * f.mean) {
    f.candidates.push_back({Distribution::constant(Seconds{f.mean}), 0.0});
    return f;
  }
  auto add = [&](const Distribution& d) { f.candidates.push_back({d, ks_distance(samples, d)}); };
  add(Distribution::uniform(Seconds{samples.front()}, Seconds{samples.back()}));
  if (f.mean >= -10 * sd) add(Distribution::normal(Seconds{f.mean}, Seconds{sd}));
  add(Distribution::exponential(Seconds{f.mean}));
  std::vector<double> logs;
  for (double x : samples) {
    if (x > 0) logs.push_back(std::log(x));
  }
  if (logs.size() >= 2) {
    const double mu = mean_of(logs), sigma = stddev_of(logs, mu);
    if (sigma > 0) add(Distribution::lognormal(mu, sigma));
  }
  std::stable_sort(f.candidates.begin(), f.candidates.end(),
                   [](const CandidateFit& a, const CandidateFit& b) { return a.ks < b.ks; });
  return f;
}

DelayFit fit_delays(const std::vector<std::vector<double>>& times) {
  if (times.size() < 2)
    throw InputError("at least 2 steps are needed, got " + std::to_string(times.size()));
  const std::size_t R = times.front().size();
  if (R < 2) throw InputError("at least 2 ranks are needed, got " + std::to_string(R));
  for (std::size_t s = 0; s < times.size(); ++s) {
    if (times[s].size() != R)
      throw InputError("step " + std::to_string(s) + " has " + std::to_string(times[s].size()) +
                       " ranks, step 0 has " + std::to_string(R));
    for (double t : times[s]) {
      if (!std::isfinite(t) || t < 0)
        throw InputError("step " + std::to_string(s) + ": times must be finite and >= 0");
    }
  }
  const std::size_t S = times.size();
  DelayFit fit;
  fit.ranks = static_cast<int>(R);
  fit.steps = static_cast<int>(S);

  // Offsets and who was the slowest of each step (the lowest rank on ties).
  std::vector<std::vector<double>> x(S, std::vector<double>(R));
  std::vector<std::size_t> slowest_count(R, 0);
  std::vector<std::size_t> slowest(S, 0);
  for (std::size_t s = 0; s < S; ++s) {
    const double lo = *std::min_element(times[s].begin(), times[s].end());
    std::size_t last = 0;
    for (std::size_t r = 0; r < R; ++r) {
      x[s][r] = times[s][r] - lo;
      if (x[s][r] > x[s][last]) last = r;
    }
    ++slowest_count[last];
    slowest[s] = last;
  }

  // Home ranks: slowest far more often than chance.
  if (R >= 3) {
    const double p = 1.0 / static_cast<double>(R), n = static_cast<double>(S);
    const double threshold = n * p + 4 * std::sqrt(n * p * (1 - p));
    for (std::size_t r = 0; r < R; ++r) {
      if (static_cast<double>(slowest_count[r]) > threshold) {
        fit.stragglers.push_back(
            {static_cast<int>(r), static_cast<double>(slowest_count[r]) / n, slowest_count[r]});
      }
    }
  }
  const std::size_t k = fit.stragglers.size();

  std::vector<double> base, extra;
  std::vector<std::size_t> order(R);
  for (std::size_t s = 0; s < S; ++s) {
    std::iota(order.begin(), order.end(), std::size_t{0});
    std::sort(order.begin(), order.end(),
              [&](std::size_t a, std::size_t b) { return x[s][a] < x[s][b]; });
    std::vector<double> others;
    for (std::size_t i = 0; i + k < R; ++i) others.push_back(x[s][order[i]]);
    for (std::size_t i = 1; i + k < R; ++i) base.push_back(x[s][order[i]]);
    if (k > 0) {
      const double med = median_of(others);
      for (std::size_t i = R - k; i < R; ++i) extra.push_back(std::max(0.0, x[s][order[i]] - med));
    }
  }
  if (base.empty()) base.push_back(0.0);
  fit.base = fit_component(base);
  fit.model.base = fit.base.chosen();
  if (k > 0) {
    fit.extra = fit_component(extra);
    fit_late_probability(fit, extra, slowest);
    for (const StragglerFit& st : fit.stragglers)
      fit.model.stragglers.push_back({st.rank, fit.extra.chosen(), st.persistence, fit.probability});
  }
  return fit;
}

std::string DelayFit::report() const {
  std::ostringstream os;
  auto component = [&](const char* name, const ComponentFit& c) {
    os << name << ": " << c.samples << " samples, mean " << format_time(Seconds{c.mean}) << "\n";
    for (std::size_t i = 0; i < c.candidates.size(); ++i) {
      char ks[32];
      std::snprintf(ks, sizeof ks, "%.4f", c.candidates[i].ks);
      os << "  " << (i == 0 ? "chosen " : "       ") << c.candidates[i].distribution.describe()
         << (c.candidates.size() == 1 ? std::string("  (degenerate: KS not computed)")
                                      : std::string("  KS ") + ks)
         << "\n";
    }
  };
  os << ranks << " ranks, " << steps << " steps\n";
  component("base delay (every rank)", base);
  if (stragglers.empty()) {
    os << "stragglers: none (no rank is the slowest far more often than 1 in " << ranks << " steps"
       << (ranks < 3 ? "; needs at least 3 ranks to tell" : "") << ")\n";
    return os.str();
  }
  for (const StragglerFit& s : stragglers) {
    char p[32];
    std::snprintf(p, sizeof p, "%.3f", s.persistence);
    os << "straggler: rank " << s.rank << ", the slowest in " << s.slowest_steps << " of " << steps
       << " steps (persistence " << p << (probability < 1 ? " of the steps with a late rank" : "")
       << ")\n";
  }
  if (probability < 1) {
    char p[32];
    std::snprintf(p, sizeof p, "%.3f", probability);
    os << "late: in " << late_steps << " of " << steps << " steps a rank was more than "
       << format_time(Seconds{late_threshold})
       << " behind the others' median (more than the base delays reach); probability " << p
       << " per step, corrected for the delay's own lower tail\n";
  }
  component("extra delay (stragglers)", extra);
  return os.str();
}

}  // namespace ssim::sim
