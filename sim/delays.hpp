// Per-rank arrival delays: when each rank reaches the collective, iteration by iteration.
//
// Defines Distribution (none, constant, uniform, truncated normal, lognormal, exponential, pareto,
// empirical), Trace (measured arrival times replayed), PersistentStraggler, DelayModel,
// StragglerPolicy and DelayGenerator, which turns a model, a rank count and a seed into
// IterationArrivals: every rank's arrival offset (>= 0), the rank that actually arrived last and
// the rank a straggler-aware schedule should be built for.
//
//   DelayModel model;
//   model.base = Distribution::lognormal_mean_p90(parse_time("9.5ms"), parse_time("18.8ms"));
//   model.stragglers.push_back({.rank = 3, .extra = Distribution::constant(parse_time("20ms")),
//                               .persistence = 0.9});
//   DelayGenerator gen(model, /*ranks=*/8, /*seed=*/42, StragglerPolicy::previous);
//   IterationArrivals a = gen.iteration(17);   // a.arrival[r], a.last_rank, a.predicted_straggler
//
// Randomness. Iteration i of a generator uses its own std::mt19937_64 streams, seeded from
// (seed, i, component) through SplitMix64: component 0 draws the base delays of ranks 0..n-1 in
// order, component 1+j draws the rank and the delay of straggler entry j, component 2^32+j
// whether entry j is late at all (only when its probability is below 1). So iteration i never
// depends on which iterations were generated before, parallel threads get identical results, and adding a
// straggler entry leaves the base delays of every iteration unchanged (paired comparisons).
// Every sample is the distribution's quantile function at one uniform u in (0, 1) built from the
// top 52 bits of one engine output; no std::*_distribution is used (their algorithms differ
// between standard libraries). The normal and lognormal quantiles are Boost.Math's, evaluated
// in double, so only libm (exp, log, pow) can differ between platforms.
//
// All times are ssim::Seconds. Constructors and factories validate and throw ssim::InputError
// naming the parameter and what is allowed. Nothing here reads a file: the config loader reads
// delay sample and trace files (experiments/config/delay_files.hpp) and passes the numbers in.
#pragma once

#include <cstdint>
#include <optional>
#include <random>
#include <span>
#include <string>
#include <string_view>
#include <variant>
#include <vector>

#include "common/units.hpp"

namespace ssim::sim {

// Parameters of each distribution kind, plain data for the config loader to fill.
namespace dist {

// Every delay is 0.
struct None {};
// Every delay is `value` (>= 0).
struct Constant {
  Seconds value;
};
// Uniform on [low, high], 0 <= low <= high.
struct Uniform {
  Seconds low;
  Seconds high;
};
// Normal(mean, stddev) truncated to [0, inf) by inverse-CDF truncation: u is mapped into the
// part of the CDF above 0, so no resampling and no mass piled up at 0. `mean` is the mean of the
// untruncated normal and may be negative down to -10 * stddev; stddev > 0. Distribution::mean()
// returns the mean of the truncated distribution.
struct Normal {
  Seconds mean;
  Seconds stddev;
};
// exp(N(mu, sigma^2)) seconds: mu is the mean of ln(delay / 1s) (the median is exp(mu) s),
// sigma > 0 is dimensionless. Distribution::lognormal_mean_p90 fills it from a mean and a p90.
struct Lognormal {
  double mu = 0.0;
  double sigma = 0.0;
};
// Exponential with the given mean (> 0).
struct Exponential {
  Seconds mean;
};
// Pareto type I: P(X > x) = (scale / x)^shape for x >= scale; scale (x_m) > 0, shape (alpha) > 0.
// The mean is infinite for shape <= 1.
struct Pareto {
  Seconds scale;
  double shape = 0.0;
};
// Resampling (bootstrap) of measured delays: each draw is one of `samples`, uniformly.
// Distribution keeps them sorted ascending so quantile() is the empirical quantile function.
struct Empirical {
  std::vector<Seconds> samples;  // >= 0, at least one
  std::string source;            // where they came from (a file name), for describe(); may be empty
};

}  // namespace dist

class Distribution {
 public:
  using Params = std::variant<dist::None, dist::Constant, dist::Uniform, dist::Normal,
                              dist::Lognormal, dist::Exponential, dist::Pareto, dist::Empirical>;

  Distribution() = default;  // none
  // Validates; InputError naming the kind, the parameter and the allowed range.
  explicit Distribution(Params params);

  static Distribution none() { return Distribution(); }
  static Distribution constant(Seconds value);
  static Distribution uniform(Seconds low, Seconds high);
  static Distribution normal(Seconds mean, Seconds stddev);
  static Distribution lognormal(double mu, double sigma);
  // Solves mean = exp(mu + sigma^2/2) and p90 = exp(mu + z sigma), z = 1.2815515655446004, for
  // the root with 0 < sigma <= z:
  //   sigma = z - sqrt(z^2 - 2 ln(p90/mean)),  mu = ln(mean) - sigma^2/2.
  // Requires mean < p90 <= exp(z^2/2) mean (about 2.2735 mean); outside that range no lognormal
  // with sigma <= z exists (p90 <= mean needs sigma > 2z, almost surely a unit mistake: give
  // mu and sigma directly for such tails).
  static Distribution lognormal_mean_p90(Seconds mean, Seconds p90);
  static Distribution exponential(Seconds mean);
  static Distribution pareto(Seconds scale, double shape);
  static Distribution empirical(std::vector<Seconds> samples, std::string source = {});

  const Params& params() const { return params_; }
  // "none", "constant", "uniform", "normal", "lognormal", "exponential", "pareto", "empirical".
  std::string_view kind_name() const;

  // The quantile function at p in (0, 1): the draw that u = p produces.
  Seconds quantile(double p) const;
  Seconds sample(std::mt19937_64& rng) const;
  // Analytic mean; the sample mean for empirical; nullopt where it is infinite
  // (pareto with shape <= 1).
  std::optional<Seconds> mean() const;
  // One line for result files, e.g.
  //   "lognormal(mu=-4.941, sigma=0.755; mean=9.500ms, p90=18.800ms)".
  std::string describe() const;

 private:
  Params params_;
};

// Arrival offsets replayed from a measurement: arrivals[iteration][rank], each >= 0, used as
// offsets as they are (no per-iteration shift); `source` names where they came from (a file,
// read by experiments/config/delay_files.hpp) for describe() and errors. Iterations past the end
// cycle: iteration i replays row i mod iterations(), so a short trace can drive a long run.
class Trace {
 public:
  // Validates: at least one iteration, every row the same (>= 1) number of ranks, values finite
  // and >= 0.
  Trace(std::vector<std::vector<Seconds>> arrivals, std::string source);

  int ranks() const { return static_cast<int>(arrivals_.front().size()); }
  int iterations() const { return static_cast<int>(arrivals_.size()); }
  const std::vector<Seconds>& at(int iteration) const;  // cycles
  const std::string& source() const { return source_; }
  std::string describe() const;

 private:
  std::vector<std::vector<Seconds>> arrivals_;
  std::string source_;
};

// A straggler on top of the base delays. Each iteration, independently of the others, with
// probability `persistence` it sits on its home `rank`; otherwise it sits on a rank drawn
// uniformly from the ranks that are neither the home rank of any entry nor already taken this
// iteration by an earlier entry. Its rank then gets `extra` (drawn each iteration) added. So the
// home rank is the straggler in a `persistence` fraction of iterations, which is how persistence
// is measured (77-95% in the StragglAR paper: the same rank is last in that fraction).
//
// Intermittent stragglers: with `probability` < 1 the straggler is late only in that fraction of
// iterations (independently per iteration): in the others no rank gets its `extra`. Whether it
// is late is drawn from a stream of its own (seeded from (seed, i, kLateStream + j)), so the rank
// it sits on and the size of its delay are the same draws as with probability 1, and a model
// whose probabilities are all 1 draws exactly what it drew before probabilities existed. A rank
// an entry sits on while not late is still taken for that iteration (later entries move around
// it as always).
struct PersistentStraggler {
  int rank = 0;              // home rank, in [0, ranks); distinct between entries
  Distribution extra;        // added delay
  double persistence = 1.0;  // in [0, 1]: which rank is late (its home rank with this probability)
  double probability = 1.0;  // in [0, 1]: whether it is late at all, per iteration
};

// What a run draws its arrivals from. With a trace, the trace replaces the base distribution
// (base must then be none); stragglers add on top of either.
struct DelayModel {
  Distribution base;
  std::vector<PersistentStraggler> stragglers;
  std::optional<Trace> trace;

  std::string describe() const;
};

// Which rank a straggler-aware schedule is built for, per iteration:
//   oracle    the rank that actually arrives last (ties: the lowest rank). When no rank is late
//             (every arrival within kNoLateRank of the first) the schedule runs for its default
//             straggler: the given rank, else rank n-1 (the schedule's own numbering)
//   fixed     the given rank, every iteration
//   previous  the rank that arrived last in the previous iteration; in iteration 0 the given
//             rank if any, else rank n-1
//   eager     eager conditional execution (StragglAR v2): the rank that arrives last, as oracle,
//             but found at run time: the early ranks start only once all of them have arrived
//             and agreed who is missing (run_simulation adds the detection latency,
//             SimulationConfig::detection)
enum class StragglerPolicy { oracle, fixed, previous, eager };
std::string_view to_string(StragglerPolicy policy);
// "oracle", "fixed", "previous", "eager"; InputError listing them otherwise.
StragglerPolicy parse_straggler_policy(std::string_view text);

// Arrivals all within this of the first one: no rank is late (a tie, or no delays at all), so no
// straggler-aware policy names one; last_rank is then the default straggler (see oracle above).
inline constexpr Seconds kNoLateRank{1e-9};

struct IterationArrivals {
  int iteration = 0;
  std::vector<Seconds> arrival;      // per rank, >= 0
  int last_rank = 0;                 // argmax of arrival, lowest rank on ties; the default
                                     // straggler when no rank is late
  bool late = true;                  // false: every arrival within kNoLateRank of the first
  int predicted_straggler = 0;       // under the generator's policy
  std::vector<int> straggler_ranks;  // where each PersistentStraggler entry sat, in model order
  std::vector<char> straggler_late;  // per entry: 1 when it was late (its extra added), else 0
};

// The k ranks that arrive last, in arrival order: the last element is the rank that arrives
// last (IterationArrivals::last_rank; on ties the lower rank counts as later). 1 <= k <= ranks.
std::vector<int> latest_ranks(std::span<const Seconds> arrival, int k);

// Deterministic, stateless after construction: iteration() is const and thread-safe.
class DelayGenerator {
 public:
  // Validates the model against `ranks` (>= 1): straggler ranks in range and distinct, persistence
  // and probability in [0, 1], enough ranks for the stragglers that may move (ranks >= entries + entries with
  // persistence < 1), trace rank count == ranks, base none with a trace, fixed_rank in range and
  // required by `fixed` (ignored by `oracle`).
  DelayGenerator(DelayModel model, int ranks, std::uint64_t seed,
                 StragglerPolicy policy = StragglerPolicy::oracle,
                 std::optional<int> fixed_rank = std::nullopt);

  // Iteration i >= 0. Under `previous` this also draws iteration i-1.
  IterationArrivals iteration(int i) const;
  // Iterations first .. first+count-1, drawing each one once.
  std::vector<IterationArrivals> iterations(int first, int count) const;

  int ranks() const { return ranks_; }
  std::uint64_t seed() const { return seed_; }
  StragglerPolicy policy() const { return policy_; }
  const DelayModel& model() const { return model_; }
  // Model, ranks, seed and policy in one line, for result files.
  std::string describe() const;

 private:
  IterationArrivals draw(int i) const;  // everything but predicted_straggler
  int first_prediction() const;

  DelayModel model_;
  int ranks_;
  std::uint64_t seed_;
  StragglerPolicy policy_;
  std::optional<int> fixed_rank_;
};

}  // namespace ssim::sim
