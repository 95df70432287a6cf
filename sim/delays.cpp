#include "sim/delays.hpp"

#include <algorithm>
#include <array>
#include <boost/math/distributions/lognormal.hpp>
#include <boost/math/distributions/normal.hpp>
#include <cmath>
#include <cstdio>
#include <utility>

#include "common/error.hpp"
#include "common/random.hpp"

namespace ssim::sim {
namespace {

// Phi^{-1}(9/10), correctly rounded. Not quantile(normal, 0.9): the double nearest 0.9 is
// 0.9 + 2.2e-17, whose quantile is about half an ulp higher.
constexpr double kZ90 = 1.2815515655446004;
// The largest u that unit_open() returns: (2^52 - 1 + 0.5) / 2^52.
constexpr double kMaxU = 1.0 - 0x1p-53;

template <class... Ts>
struct Overloaded : Ts... {
  using Ts::operator()...;
};
template <class... Ts>
Overloaded(Ts...) -> Overloaded<Ts...>;  // clang < 17 does not deduce aggregates

// Stream components: 0 the base delays, 1 + j straggler entry j's rank and delay, kLateStream + j
// whether entry j is late (drawn only for a probability < 1, so older models draw as before).
constexpr std::uint64_t kLateStream = std::uint64_t{1} << 32;

std::uint64_t stream_seed(std::uint64_t seed, int iteration, std::uint64_t component) {
  return splitmix64(splitmix64(splitmix64(seed) + static_cast<std::uint64_t>(iteration)) +
                    component);
}

// Uniform on the grid (k + 1/2) / 2^52, k < 2^52: strictly inside (0, 1), so every quantile
// function below stays finite. 52 bits, not 53, so that k + 1/2 is exact in a double.
double unit_open(std::mt19937_64& rng) {
  return (static_cast<double>(rng() >> 12) + 0.5) * 0x1p-52;
}

// Boost.Math's distributions in plain double arithmetic: the default policy would promote to
// long double, whose format differs between platforms (80-bit x87, 128-bit, or double), and
// so would the draws. In double, Boost's normal quantile is within a few ulps.
using MathPolicy = boost::math::policies::policy<boost::math::policies::promote_double<false>>;
using NormalDist = boost::math::normal_distribution<double, MathPolicy>;
using LognormalDist = boost::math::lognormal_distribution<double, MathPolicy>;

std::string fmt(double v) {
  char buf[64];
  std::snprintf(buf, sizeof buf, "%.4g", v);
  return buf;
}

std::string time_str(Seconds t) { return format_time(t); }

void require_finite(double v, std::string_view what) {
  if (!std::isfinite(v)) throw InputError(std::string(what) + " must be finite");
}

void validate(const dist::None&) {}

void validate(const dist::Constant& d) {
  require_finite(d.value.value, "constant delay: value");
  if (d.value.value < 0) {
    throw InputError("constant delay: value must be >= 0, got " + time_str(d.value));
  }
}

void validate(const dist::Uniform& d) {
  require_finite(d.low.value, "uniform delay: low");
  require_finite(d.high.value, "uniform delay: high");
  if (d.low.value < 0 || d.high.value < d.low.value) {
    throw InputError("uniform delay: need 0 <= low <= high, got low=" + time_str(d.low) +
                     ", high=" + time_str(d.high));
  }
}

void validate(const dist::Normal& d) {
  require_finite(d.mean.value, "normal delay: mean");
  require_finite(d.stddev.value, "normal delay: stddev");
  if (d.stddev.value <= 0) {
    throw InputError("normal delay: stddev must be > 0, got " + time_str(d.stddev) +
                     " (use a constant delay for zero spread)");
  }
  if (d.mean.value < -10 * d.stddev.value) {
    throw InputError(
        "normal delay: mean must be >= -10 * stddev (almost no mass lies above 0 "
        "otherwise), got mean=" +
        time_str(d.mean) + ", stddev=" + time_str(d.stddev));
  }
}

void validate(const dist::Lognormal& d) {
  require_finite(d.mu, "lognormal delay: mu");
  require_finite(d.sigma, "lognormal delay: sigma");
  if (d.sigma <= 0) throw InputError("lognormal delay: sigma must be > 0, got " + fmt(d.sigma));
}

void validate(const dist::Exponential& d) {
  require_finite(d.mean.value, "exponential delay: mean");
  if (d.mean.value <= 0) {
    throw InputError("exponential delay: mean must be > 0, got " + fmt(d.mean.value) + "s");
  }
}

void validate(const dist::Pareto& d) {
  require_finite(d.scale.value, "pareto delay: scale");
  require_finite(d.shape, "pareto delay: shape");
  if (d.scale.value <= 0) {
    throw InputError("pareto delay: scale (x_m) must be > 0, got " + fmt(d.scale.value) + "s");
  }
  if (d.shape <= 0) {
    throw InputError("pareto delay: shape (alpha) must be > 0, got " + fmt(d.shape));
  }
}

void validate(const dist::Empirical& d) {
  if (d.samples.empty()) throw InputError("empirical delay: no samples");
  for (std::size_t i = 0; i < d.samples.size(); ++i) {
    const double v = d.samples[i].value;
    if (!std::isfinite(v) || v < 0) {
      throw InputError("empirical delay: sample " + std::to_string(i) +
                       " must be finite and >= 0, got " + fmt(v) + "s");
    }
  }
}

}  // namespace

// ---------------------------------------------------------------------------------------------
// Distribution

Distribution::Distribution(Params params) : params_(std::move(params)) {
  std::visit([](const auto& d) { validate(d); }, params_);
  if (auto* e = std::get_if<dist::Empirical>(&params_)) {
    std::sort(e->samples.begin(), e->samples.end());
  }
  // Catches parameters whose largest possible draw overflows (huge sigma, tiny pareto shape).
  const Seconds largest = quantile(kMaxU);
  if (!std::isfinite(largest.value)) {
    throw InputError(describe() + ": parameters give infinite delays; reduce the spread");
  }
}

Distribution Distribution::constant(Seconds value) { return Distribution(dist::Constant{value}); }
Distribution Distribution::uniform(Seconds low, Seconds high) {
  return Distribution(dist::Uniform{low, high});
}
Distribution Distribution::normal(Seconds mean, Seconds stddev) {
  return Distribution(dist::Normal{mean, stddev});
}
Distribution Distribution::lognormal(double mu, double sigma) {
  return Distribution(dist::Lognormal{mu, sigma});
}
Distribution Distribution::exponential(Seconds mean) {
  return Distribution(dist::Exponential{mean});
}
Distribution Distribution::pareto(Seconds scale, double shape) {
  return Distribution(dist::Pareto{scale, shape});
}
Distribution Distribution::empirical(std::vector<Seconds> samples, std::string source) {
  return Distribution(dist::Empirical{std::move(samples), std::move(source)});
}

Distribution Distribution::lognormal_mean_p90(Seconds mean, Seconds p90) {
  require_finite(mean.value, "lognormal delay: mean");
  require_finite(p90.value, "lognormal delay: p90");
  const std::string given = " (mean=" + time_str(mean) + ", p90=" + time_str(p90) + ")";
  if (mean.value <= 0) throw InputError("lognormal delay: mean must be > 0" + given);
  // ln(p90/mean) = z sigma - sigma^2/2 rises from 0 to its maximum z^2/2 as sigma goes 0 -> z.
  const double r = std::log(p90.value / mean.value);
  if (!(r > 0)) {
    throw InputError("lognormal delay: p90 must be greater than the mean" + given +
                     "; for such heavy tails give mu and sigma instead");
  }
  const double disc = kZ90 * kZ90 - 2 * r;
  if (disc < 0) {
    throw InputError("lognormal delay: p90 may be at most " + fmt(std::exp(kZ90 * kZ90 / 2)) +
                     " x the mean with sigma <= 1.2816" + given + "; give mu and sigma instead");
  }
  const double sigma = kZ90 - std::sqrt(disc);
  return lognormal(std::log(mean.value) - sigma * sigma / 2, sigma);
}

std::string_view Distribution::kind_name() const {
  static constexpr std::array<std::string_view, std::variant_size_v<Params>> kNames{
      "none", "constant", "uniform", "normal", "lognormal", "exponential", "pareto", "empirical"};
  return kNames[params_.index()];
}

Seconds Distribution::quantile(double p) const {
  SSIM_CHECK(p > 0 && p < 1, "quantile level must lie in (0, 1)");
  const double q = 1.0 - p;  // upper-tail probability
  return std::visit(
      Overloaded{
          [](const dist::None&) { return Seconds{0.0}; },
          [](const dist::Constant& d) { return d.value; },
          [p](const dist::Uniform& d) {
            return Seconds{d.low.value + (d.high.value - d.low.value) * p};
          },
          [q](const dist::Normal& d) {
            // Inverse-CDF truncation to [0, inf): the draw X has upper tail
            // P(X > x) = q P(Y > 0) for the untruncated Y ~ N(mean, stddev), taken from the
            // complements so that no 1 - p rounds away the tail.
            const NormalDist y(d.mean.value, d.stddev.value);
            const double tail = q * boost::math::cdf(boost::math::complement(y, 0.0));
            return Seconds{std::max(0.0, boost::math::quantile(boost::math::complement(y, tail)))};
          },
          [p](const dist::Lognormal& d) {
            return Seconds{boost::math::quantile(LognormalDist(d.mu, d.sigma), p)};
          },
          [q](const dist::Exponential& d) { return Seconds{-d.mean.value * std::log(q)}; },
          [q](const dist::Pareto& d) {
            return Seconds{d.scale.value * std::pow(q, -1.0 / d.shape)};
          },
          [p](const dist::Empirical& d) {
            const std::size_t n = d.samples.size();
            const auto i = static_cast<std::size_t>(p * static_cast<double>(n));
            return d.samples[std::min(i, n - 1)];
          },
      },
      params_);
}

Seconds Distribution::sample(std::mt19937_64& rng) const { return quantile(unit_open(rng)); }

std::optional<Seconds> Distribution::mean() const {
  return std::visit(
      Overloaded{
          [](const dist::None&) -> std::optional<Seconds> { return Seconds{0.0}; },
          [](const dist::Constant& d) -> std::optional<Seconds> { return d.value; },
          [](const dist::Uniform& d) -> std::optional<Seconds> {
            return Seconds{(d.low.value + d.high.value) / 2};
          },
          [](const dist::Normal& d) -> std::optional<Seconds> {
            // E[X | X > 0] = mean + stddev * phi(a) / Q(a), a = -mean/stddev, Q = 1 - Phi.
            const NormalDist z;
            const double a = -d.mean.value / d.stddev.value;
            return Seconds{d.mean.value + d.stddev.value * boost::math::pdf(z, a) /
                                              boost::math::cdf(boost::math::complement(z, a))};
          },
          [](const dist::Lognormal& d) -> std::optional<Seconds> {
            return Seconds{boost::math::mean(LognormalDist(d.mu, d.sigma))};
          },
          [](const dist::Exponential& d) -> std::optional<Seconds> { return d.mean; },
          [](const dist::Pareto& d) -> std::optional<Seconds> {
            if (d.shape <= 1) return std::nullopt;
            return Seconds{d.shape * d.scale.value / (d.shape - 1)};
          },
          [](const dist::Empirical& d) -> std::optional<Seconds> {
            double sum = 0;
            for (Seconds s : d.samples) sum += s.value;
            return Seconds{sum / static_cast<double>(d.samples.size())};
          },
      },
      params_);
}

std::string Distribution::describe() const {
  const std::optional<Seconds> m = mean();
  const std::string mean_text = "mean=" + (m ? time_str(*m) : std::string("inf"));
  const std::string p90_text = "p90=" + time_str(quantile(0.9));
  return std::visit(
      Overloaded{
          [](const dist::None&) { return std::string("none"); },
          [](const dist::Constant& d) { return "constant(" + time_str(d.value) + ")"; },
          [](const dist::Uniform& d) {
            return "uniform(" + time_str(d.low) + ", " + time_str(d.high) + ")";
          },
          [&](const dist::Normal& d) {
            return "normal(mean=" + time_str(d.mean) + ", stddev=" + time_str(d.stddev) +
                   ", truncated at 0; " + mean_text + ")";
          },
          [&](const dist::Lognormal& d) {
            return "lognormal(mu=" + fmt(d.mu) + ", sigma=" + fmt(d.sigma) + "; " + mean_text +
                   ", " + p90_text + ")";
          },
          [](const dist::Exponential& d) { return "exponential(mean=" + time_str(d.mean) + ")"; },
          [&](const dist::Pareto& d) {
            return "pareto(scale=" + time_str(d.scale) + ", shape=" + fmt(d.shape) + "; " +
                   mean_text + ")";
          },
          [&](const dist::Empirical& d) {
            return "empirical(" + std::to_string(d.samples.size()) + " samples" +
                   (d.source.empty() ? std::string() : " from " + d.source) + "; " + mean_text +
                   ", min=" + time_str(d.samples.front()) + ", max=" + time_str(d.samples.back()) +
                   ")";
          },
      },
      params_);
}

// ---------------------------------------------------------------------------------------------
// Trace

Trace::Trace(std::vector<std::vector<Seconds>> arrivals, std::string source)
    : arrivals_(std::move(arrivals)), source_(std::move(source)) {
  const std::string where = source_.empty() ? std::string("delay trace") : source_;
  if (arrivals_.empty()) throw InputError(where + ": a trace needs at least one iteration");
  const std::size_t ranks = arrivals_.front().size();
  if (ranks == 0) throw InputError(where + ": a trace needs at least one rank");
  for (std::size_t i = 0; i < arrivals_.size(); ++i) {
    if (arrivals_[i].size() != ranks) {
      throw InputError(where + ": iteration " + std::to_string(i) + " has " +
                       std::to_string(arrivals_[i].size()) + " ranks, iteration 0 has " +
                       std::to_string(ranks));
    }
    for (std::size_t r = 0; r < ranks; ++r) {
      const double v = arrivals_[i][r].value;
      if (!std::isfinite(v) || v < 0) {
        throw InputError(where + ": iteration " + std::to_string(i) + " rank " + std::to_string(r) +
                         ": arrival must be finite and >= 0, got " + fmt(v));
      }
    }
  }
}

const std::vector<Seconds>& Trace::at(int iteration) const {
  SSIM_CHECK(iteration >= 0, "trace iteration must be >= 0");
  return arrivals_[static_cast<std::size_t>(iteration) % arrivals_.size()];
}

std::string Trace::describe() const {
  return "trace(" + (source_.empty() ? std::string("inline") : source_) + ", " +
         std::to_string(iterations()) + " iterations x " + std::to_string(ranks()) +
         " ranks, cycled)";
}

// ---------------------------------------------------------------------------------------------
// Model, policy, generator

std::string DelayModel::describe() const {
  std::string s = trace ? trace->describe() : "base=" + base.describe();
  s += ", stragglers=[";
  for (std::size_t j = 0; j < stragglers.size(); ++j) {
    const PersistentStraggler& st = stragglers[j];
    if (j > 0) s += "; ";
    s += "rank " + std::to_string(st.rank) + " +" + st.extra.describe() + " persistence " +
         fmt(st.persistence);
    if (st.probability != 1) s += " probability " + fmt(st.probability);
  }
  return s + "]";
}

std::string_view to_string(StragglerPolicy policy) {
  switch (policy) {
    case StragglerPolicy::oracle:
      return "oracle";
    case StragglerPolicy::fixed:
      return "fixed";
    case StragglerPolicy::previous:
      return "previous";
    case StragglerPolicy::eager:
      return "eager";
  }
  SSIM_CHECK(false, "unknown straggler policy");
}

StragglerPolicy parse_straggler_policy(std::string_view text) {
  for (StragglerPolicy p : {StragglerPolicy::oracle, StragglerPolicy::fixed,
                            StragglerPolicy::previous, StragglerPolicy::eager}) {
    if (text == to_string(p)) return p;
  }
  throw InputError("unknown straggler policy '" + std::string(text) +
                   "' (allowed: oracle, fixed, previous, eager)");
}

DelayGenerator::DelayGenerator(DelayModel model, int ranks, std::uint64_t seed,
                               StragglerPolicy policy, std::optional<int> fixed_rank)
    : model_(std::move(model)),
      ranks_(ranks),
      seed_(seed),
      policy_(policy),
      fixed_rank_(fixed_rank) {
  if (ranks_ < 1) throw InputError("delays: ranks must be >= 1, got " + std::to_string(ranks_));
  const std::string range = " (allowed 0.." + std::to_string(ranks_ - 1) + ")";
  if (model_.trace) {
    if (!std::holds_alternative<dist::None>(model_.base.params())) {
      throw InputError(
          "delays: a trace replaces the base distribution; set the base to none, "
          "got " +
          model_.base.describe());
    }
    if (model_.trace->ranks() != ranks_) {
      throw InputError("delays: trace " + model_.trace->source() + " has " +
                       std::to_string(model_.trace->ranks()) + " ranks, the run has " +
                       std::to_string(ranks_));
    }
  }
  std::vector<char> home(static_cast<std::size_t>(ranks_), 0);
  int movers = 0;
  for (std::size_t j = 0; j < model_.stragglers.size(); ++j) {
    const PersistentStraggler& st = model_.stragglers[j];
    const std::string who = "delays: straggler " + std::to_string(j) + ": ";
    if (st.rank < 0 || st.rank >= ranks_) {
      throw InputError(who + "rank " + std::to_string(st.rank) + " out of range" + range);
    }
    if (home[static_cast<std::size_t>(st.rank)]) {
      throw InputError(who + "rank " + std::to_string(st.rank) +
                       " is already the home rank of another straggler");
    }
    home[static_cast<std::size_t>(st.rank)] = 1;
    if (!(st.persistence >= 0 && st.persistence <= 1)) {
      throw InputError(who + "persistence must lie in [0, 1], got " + fmt(st.persistence));
    }
    if (!(st.probability >= 0 && st.probability <= 1)) {
      throw InputError(who + "probability must lie in [0, 1], got " + fmt(st.probability));
    }
    if (st.persistence < 1) ++movers;
  }
  const int k = static_cast<int>(model_.stragglers.size());
  if (ranks_ < k + movers) {
    throw InputError("delays: " + std::to_string(k) + " stragglers, " + std::to_string(movers) +
                     " of which may move off their home rank, need at least " +
                     std::to_string(k + movers) + " ranks, got " + std::to_string(ranks_));
  }
  if (policy_ == StragglerPolicy::fixed && !fixed_rank_) {
    throw InputError("delays: straggler policy 'fixed' needs a straggler rank");
  }
  if (fixed_rank_ && (*fixed_rank_ < 0 || *fixed_rank_ >= ranks_)) {
    throw InputError("delays: straggler rank " + std::to_string(*fixed_rank_) + " out of range" +
                     range);
  }
}

IterationArrivals DelayGenerator::draw(int i) const {
  SSIM_CHECK(i >= 0, "iterations are numbered from 0");
  const auto n = static_cast<std::size_t>(ranks_);
  IterationArrivals out;
  out.iteration = i;
  if (model_.trace) {
    out.arrival = model_.trace->at(i);
  } else {
    out.arrival.resize(n);
    std::mt19937_64 rng(stream_seed(seed_, i, 0));
    for (Seconds& a : out.arrival) a = model_.base.sample(rng);
  }

  std::vector<char> blocked(n, 0);
  for (const PersistentStraggler& st : model_.stragglers)
    blocked[static_cast<std::size_t>(st.rank)] = 1;
  std::vector<int> candidates;
  for (std::size_t j = 0; j < model_.stragglers.size(); ++j) {
    const PersistentStraggler& st = model_.stragglers[j];
    std::mt19937_64 rng(stream_seed(seed_, i, 1 + j));
    int rank = st.rank;
    // u < 1 always and u > 0 always, so persistence 1 never moves and 0 always moves.
    if (!(unit_open(rng) < st.persistence)) {
      candidates.clear();
      for (std::size_t r = 0; r < n; ++r) {
        if (!blocked[r]) candidates.push_back(static_cast<int>(r));
      }
      SSIM_CHECK(!candidates.empty(), "constructor guarantees a free rank for every mover");
      const auto pick =
          static_cast<std::size_t>(unit_open(rng) * static_cast<double>(candidates.size()));
      rank = candidates[std::min(pick, candidates.size() - 1)];
      blocked[static_cast<std::size_t>(rank)] = 1;
    }
    const Seconds extra = st.extra.sample(rng);
    // u < 1 always, so probability 1 is late every iteration and draws nothing more.
    bool late = true;
    if (st.probability < 1) {
      std::mt19937_64 late_rng(stream_seed(seed_, i, kLateStream + j));
      late = unit_open(late_rng) < st.probability;
    }
    if (late) out.arrival[static_cast<std::size_t>(rank)].value += extra.value;
    out.straggler_ranks.push_back(rank);
    out.straggler_late.push_back(late ? 1 : 0);
  }

  int first_rank = 0;
  for (int r = 1; r < ranks_; ++r) {
    if (out.arrival[static_cast<std::size_t>(r)] >
        out.arrival[static_cast<std::size_t>(out.last_rank)]) {
      out.last_rank = r;
    }
    if (out.arrival[static_cast<std::size_t>(r)] <
        out.arrival[static_cast<std::size_t>(first_rank)]) {
      first_rank = r;
    }
  }
  // Nobody late: naming the lowest rank of a tie would renumber the schedule for a straggler
  // that does not exist; the schedule runs for its default straggler instead.
  if (out.arrival[static_cast<std::size_t>(out.last_rank)].value -
          out.arrival[static_cast<std::size_t>(first_rank)].value <=
      kNoLateRank.value) {
    out.late = false;
    out.last_rank = first_prediction();
  }
  return out;
}

std::vector<int> latest_ranks(std::span<const Seconds> arrival, int k) {
  SSIM_CHECK(k >= 1 && static_cast<std::size_t>(k) <= arrival.size(),
             "latest_ranks: k out of range");
  std::vector<int> order(arrival.size());
  for (std::size_t r = 0; r < order.size(); ++r) order[r] = static_cast<int>(r);
  // Ascending arrival; among equal arrivals the higher rank first, so the lowest is later.
  std::stable_sort(order.begin(), order.end(), [&](int a, int b) {
    const double ta = arrival[static_cast<std::size_t>(a)].value,
                 tb = arrival[static_cast<std::size_t>(b)].value;
    return ta < tb || (ta == tb && a > b);
  });
  return std::vector<int>(order.end() - k, order.end());
}

int DelayGenerator::first_prediction() const { return fixed_rank_ ? *fixed_rank_ : ranks_ - 1; }

IterationArrivals DelayGenerator::iteration(int i) const {
  IterationArrivals out = draw(i);
  switch (policy_) {
    case StragglerPolicy::oracle:
    case StragglerPolicy::eager:
      out.predicted_straggler = out.last_rank;
      break;
    case StragglerPolicy::fixed:
      out.predicted_straggler = *fixed_rank_;
      break;
    case StragglerPolicy::previous:
      out.predicted_straggler = i == 0 ? first_prediction() : draw(i - 1).last_rank;
      break;
  }
  return out;
}

std::vector<IterationArrivals> DelayGenerator::iterations(int first, int count) const {
  SSIM_CHECK(first >= 0 && count >= 0, "iteration range must be non-negative");
  std::vector<IterationArrivals> out;
  out.reserve(static_cast<std::size_t>(count));
  for (int i = first; i < first + count; ++i) {
    if (policy_ != StragglerPolicy::previous || i == first) {
      out.push_back(iteration(i));
    } else {
      IterationArrivals a = draw(i);
      a.predicted_straggler = out.back().last_rank;
      out.push_back(std::move(a));
    }
  }
  return out;
}

std::string DelayGenerator::describe() const {
  std::string policy(to_string(policy_));
  if (policy_ == StragglerPolicy::fixed) policy += " rank " + std::to_string(*fixed_rank_);
  if (policy_ == StragglerPolicy::previous) {
    policy += " (iteration 0: rank " + std::to_string(first_prediction()) + ")";
  }
  return "delays: ranks=" + std::to_string(ranks_) + ", seed=" + std::to_string(seed_) +
         ", policy=" + policy + ", " + model_.describe();
}

}  // namespace ssim::sim
