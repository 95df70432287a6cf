// The training-step model (sim/training.hpp): DDP bucketing, the step timeline against hand
// computations, stragglers' cost, idle times, determinism and bad input.
#include "sim/training.hpp"

#include <gtest/gtest.h>

#include "algorithms/registry.hpp"
#include "common/error.hpp"
#include "common/stats.hpp"
#include "sim/executor.hpp"
#include "sim/simulation.hpp"
#include "topologies/generators.hpp"
#include "tests/sim/fixtures.hpp"

namespace ssim::sim {
namespace {

using testing::at;
using testing::switch_of;

TrainingLayer layer(const char* name, std::uint64_t params, double fwd, double bwd) {
  return TrainingLayer{name, params, Seconds{fwd}, Seconds{bwd}};
}

TEST(MakeBuckets, ReverseOrderClosedAtTheCap) {
  // Forward order a(100) b(0) c(300) d(50) e(60), 1 byte per parameter, cap 100: backward
  // meets e, d (110 >= 100: closed), c (300: closed), b (no parameters), a (the rest).
  const std::vector<TrainingLayer> layers = {layer("a", 100, 1, 1), layer("b", 0, 1, 2),
                                             layer("c", 300, 1, 3), layer("d", 50, 1, 4),
                                             layer("e", 60, 1, 5)};
  const std::vector<Bucket> b = make_buckets(layers, 1, Bytes{100});
  ASSERT_EQ(b.size(), 3u);
  EXPECT_EQ(b[0].first_layer, 3);
  EXPECT_EQ(b[0].last_layer, 4);
  EXPECT_EQ(b[0].bytes.value, 110u);
  EXPECT_DOUBLE_EQ(b[0].ready.value, 9.0);  // e (5) + d (4)
  EXPECT_EQ(b[1].first_layer, 2);
  EXPECT_EQ(b[1].last_layer, 2);
  EXPECT_EQ(b[1].bytes.value, 300u);
  EXPECT_DOUBLE_EQ(b[1].ready.value, 12.0);
  EXPECT_EQ(b[2].first_layer, 0);
  EXPECT_EQ(b[2].last_layer, 0);
  EXPECT_EQ(b[2].bytes.value, 100u);
  EXPECT_DOUBLE_EQ(b[2].ready.value, 15.0);  // b's backward came before a's
  // A bucket that reaches the cap exactly is closed.
  const std::vector<Bucket> exact = make_buckets(layers, 1, Bytes{110});
  ASSERT_EQ(exact.size(), 3u);
  EXPECT_EQ(exact[0].bytes.value, 110u);
  // 4 bytes per parameter: every layer fills a bucket on its own.
  EXPECT_EQ(make_buckets(layers, 4, Bytes{100}).size(), 4u);
}

TEST(MakeBuckets, BadInput) {
  const std::vector<TrainingLayer> layers = {layer("a", 10, 1, 1)};
  EXPECT_THROW(make_buckets(layers, 4, Bytes{41}), InputError);  // larger than the gradients
  EXPECT_THROW(make_buckets(layers, 4, Bytes{0}), InputError);
  EXPECT_THROW(make_buckets({layer("a", 0, 1, 1)}, 4, Bytes{1}), InputError);
  EXPECT_THROW(make_buckets({}, 4, Bytes{1}), InputError);
  EXPECT_NO_THROW(make_buckets(layers, 4, Bytes{40}));
}

// Two ranks on a switch of 1 GB/s and 1 us: a ring AllReduce of m bytes is two transfers of
// m/2 bytes one after the other.
TrainingConfig two_ranks() {
  TrainingConfig c;
  c.topology = switch_of(2, 1e9, 1e-6);
  c.layers = {layer("a", 1'000'000, 0.010, 0.020), layer("b", 1'000'000, 0.010, 0.020)};
  c.bytes_per_param = 4;
  c.bucket_cap = Bytes{4'000'000};
  c.optimizer = Seconds{0.001};
  c.samples_per_gpu = 8;
  c.algorithms = {{"ring", {}}};
  c.steps = 5;
  c.seed = 3;
  return c;
}

double ring_time(const TrainingConfig& c, std::uint64_t bytes) {
  const alg::Schedule s = alg::generate("ring", c.topology.gpu_count(), {});
  Executor ex(s, c.topology, NetworkConfig{}, Bytes{bytes});
  return ex.run(at(std::vector<double>(static_cast<std::size_t>(c.topology.gpu_count()), 0.0)))
      .completion.value;
}

TEST(Training, StepIsComputeThenTheLastBucketsAllReduce) {
  const TrainingConfig c = two_ranks();
  const TrainingResult r = run_training(c);
  ASSERT_EQ(r.buckets.size(), 2u);
  const double t = ring_time(c, 4'000'000);
  ASSERT_LT(t, 0.020);  // the first bucket's AllReduce hides behind layer a's backward
  const double step = 0.020 + 0.040 + t + 0.001;
  ASSERT_EQ(r.runs.size(), 1u);
  const TrainingRun& run = r.runs[0];
  EXPECT_NEAR(run.mean_step.value, step, 1e-12);
  EXPECT_NEAR(run.p99_step.value, step, 1e-12);
  EXPECT_NEAR(run.baseline_mean_step.value, step, 1e-12);
  EXPECT_NEAR(run.samples_per_second, 16 / step, 1e-6);
  EXPECT_NEAR(run.mean_exposed_comm.value, t, 1e-12);
  EXPECT_NEAR(run.lost_fraction, 0.0, 1e-12);
  for (const Seconds& idle : run.mean_idle) EXPECT_NEAR(idle.value, t, 1e-12);
}

TEST(Training, OneBucketWaitsForBackward) {
  TrainingConfig c = two_ranks();
  c.bucket_cap = Bytes{8'000'000};  // one bucket, full when backward is done
  const TrainingResult r = run_training(c);
  ASSERT_EQ(r.buckets.size(), 1u);
  EXPECT_NEAR(r.runs[0].mean_step.value, 0.060 + ring_time(c, 8'000'000) + 0.001, 1e-12);
}

TEST(Training, PersistentStragglerCostsItsDelayEveryStep) {
  TrainingConfig c = two_ranks();
  const double d = 0.004;
  c.delays.stragglers.push_back({.rank = 1, .extra = Distribution::constant(Seconds{d})});
  c.cluster_gpus = 1000;
  int seen = 0;
  const TrainingResult r = run_training(c, [&](const TrainingRun&, const StepRecord& s) {
    EXPECT_EQ(s.step, seen++);
    EXPECT_EQ(s.slowest_rank, 1);
    EXPECT_NEAR(s.max_idle.value - s.mean_idle.value, d / 2, 1e-12);
  });
  EXPECT_EQ(seen, c.steps);
  const TrainingRun& run = r.runs[0];
  const double t0 = run.baseline_mean_step.value;
  EXPECT_NEAR(run.mean_step.value, t0 + d, 1e-12);
  EXPECT_NEAR(run.lost_fraction, d / (t0 + d), 1e-12);
  EXPECT_NEAR(run.lost_gpu_hours_per_day, 1000 * 24 * d / (t0 + d), 1e-9);
  // The straggler waits only for the collective; the other rank also waits for it.
  EXPECT_NEAR(run.mean_idle[0].value - run.mean_idle[1].value, d, 1e-12);
  EXPECT_NEAR(run.mean_delay[1].value, d, 1e-15);
  EXPECT_EQ(run.mean_delay[0].value, 0.0);
}

// Without the per-step times (what `train` runs): the same quantiles, to the bit while exact,
// and no step times kept; past 65,536 steps the quantiles are binned (within 5e-5).
TEST(Training, QuantilesWithoutKeepingTheStepTimes) {
  TrainingConfig c = two_ranks();
  c.topology = switch_of(8, 1e9, 1e-6);
  c.delays.base = Distribution::exponential(Seconds{0.002});
  c.algorithms = {{"ring", {}}};
  c.steps = 300;
  const TrainingResult kept = run_training(c);
  c.keep_step_times = false;
  const TrainingResult lean = run_training(c);
  ASSERT_EQ(kept.runs.size(), 1u);
  const TrainingRun &a = kept.runs[0], &b = lean.runs[0];
  EXPECT_EQ(a.step_times.size(), 300u);
  EXPECT_TRUE(b.step_times.empty());
  EXPECT_TRUE(b.exact_quantiles);
  std::vector<double> times;
  for (const Seconds& t : a.step_times) times.push_back(t.value);
  EXPECT_EQ(b.p50_step.value, quantile(times, 0.5));
  EXPECT_EQ(b.p99_step.value, quantile(times, 0.99));
  EXPECT_EQ(b.max_step.value, *std::max_element(times.begin(), times.end()));
  EXPECT_EQ(a.p90_step.value, b.p90_step.value);
  EXPECT_EQ(a.mean_step.value, b.mean_step.value);
}

TEST(Training, DeterministicForASeedAndPairedAcrossAlgorithms) {
  TrainingConfig c = two_ranks();
  c.topology = switch_of(8, 1e9, 1e-6);
  c.delays.base = Distribution::exponential(Seconds{0.002});
  c.algorithms = {{"ring", {}}, {"stragglar", {}}};
  c.steps = 20;
  const TrainingResult a = run_training(c), b = run_training(c);
  ASSERT_EQ(a.runs.size(), 2u);
  for (std::size_t k = 0; k < 2; ++k) {
    EXPECT_EQ(a.runs[k].step_times.size(), 20u);
    for (std::size_t s = 0; s < 20; ++s)
      EXPECT_EQ(a.runs[k].step_times[s].value, b.runs[k].step_times[s].value);
    EXPECT_GT(a.runs[k].lost_fraction, 0.0);
  }
  EXPECT_TRUE(a.runs[1].straggler_aware);
  // Both algorithms saw the same delays.
  EXPECT_EQ(a.runs[0].mean_delay[3].value, a.runs[1].mean_delay[3].value);
  c.seed = 4;
  EXPECT_NE(run_training(c).runs[0].mean_step.value, a.runs[0].mean_step.value);
}

TEST(Training, StragglerAwarePredictionMatters) {
  // StragglAR on 8 ranks with rank 6 always late: oracle and previous (right after step 0)
  // beat a fixed guess of the wrong rank.
  TrainingConfig c = two_ranks();
  c.topology = switch_of(8, 1e9, 1e-6);
  c.delays.stragglers.push_back({.rank = 6, .extra = Distribution::constant(Seconds{0.003})});
  c.algorithms = {{"stragglar", {}}};
  c.steps = 10;
  c.policy = StragglerPolicy::oracle;
  const double oracle = run_training(c).runs[0].mean_step.value;
  c.policy = StragglerPolicy::fixed;
  c.straggler = 2;
  const double wrong = run_training(c).runs[0].mean_step.value;
  c.straggler = 6;
  const double right = run_training(c).runs[0].mean_step.value;
  EXPECT_LT(oracle, wrong);
  EXPECT_NEAR(right, oracle, 1e-12);
}

// 8 ranks, two buckets per step, StragglAR; rank 6 late by `late` on every step (0: nobody).
TrainingConfig stragglar_job(double late) {
  TrainingConfig c = two_ranks();
  c.topology = switch_of(8, 1e9, 1e-6);
  if (late > 0)
    c.delays.stragglers.push_back({.rank = 6, .extra = Distribution::constant(Seconds{late})});
  c.algorithms = {{"stragglar", {}}};
  c.steps = 10;
  return c;
}

// Per step, what each bucket ran ("stragglar@6", "ring").
std::vector<std::vector<std::string>> bucket_runs(const TrainingConfig& c, TrainingRun* out) {
  std::vector<std::vector<std::string>> runs;
  TrainingResult r = run_training(c, [&](const TrainingRun&, const StepRecord& s) {
    std::vector<std::string>& step = runs.emplace_back();
    for (const BucketChoice& b : s.buckets) {
      std::string what(b.algorithm);
      for (const int rank : b.stragglers) what += "@" + std::to_string(rank);
      step.push_back(what);
    }
  });
  *out = r.runs.at(0);
  return runs;
}

TEST(Training, AdaptiveRunsStragglarWhenARankIsLateAndTheFallbackWhenNone) {
  // Rank 6 late by 3 ms every step: from step 1 on every bucket runs StragglAR for rank 6 (step
  // 0 has no prediction: nobody late, the fallback wins), so the step times from step 1 on are
  // those of the previous policy; ring alone is slower.
  TrainingConfig c = stragglar_job(0.003);
  c.policy = StragglerPolicy::previous;
  TrainingRun previous, adaptive, ring;
  bucket_runs(c, &previous);
  c.adaptive_fallbacks = {"ring"};
  const auto runs = bucket_runs(c, &adaptive);
  ASSERT_EQ(runs.size(), 10u);
  EXPECT_EQ(runs[0], (std::vector<std::string>{"ring", "ring"}));
  for (std::size_t s = 1; s < runs.size(); ++s)
    EXPECT_EQ(runs[s], (std::vector<std::string>{"stragglar@6", "stragglar@6"})) << s;
  EXPECT_EQ(adaptive.adaptive_collectives, 20);
  EXPECT_NEAR(adaptive.fallback_fraction, 0.1, 1e-12);
  for (std::size_t s = 2; s < 10; ++s)
    EXPECT_NEAR(adaptive.step_times[s].value, previous.step_times[s].value, 1e-12) << s;
  TrainingConfig r = c;
  r.algorithms = {{"ring", {}}};
  bucket_runs(r, &ring);
  EXPECT_LT(adaptive.mean_step.value, ring.mean_step.value);
  EXPECT_LT(previous.mean_step.value, ring.mean_step.value);

  // Nobody late: every bucket of every step runs the fallback, at ring's step time, which beats
  // StragglAR's.
  c = stragglar_job(0);
  c.policy = StragglerPolicy::previous;
  bucket_runs(c, &previous);
  c.adaptive_fallbacks = {"ring"};
  for (const auto& step : bucket_runs(c, &adaptive))
    EXPECT_EQ(step, (std::vector<std::string>{"ring", "ring"}));
  EXPECT_EQ(adaptive.fallback_fraction, 1.0);
  r = c;
  r.algorithms = {{"ring", {}}};
  r.adaptive_fallbacks.clear();
  bucket_runs(r, &ring);
  EXPECT_NEAR(adaptive.mean_step.value, ring.mean_step.value, 1e-12);
  EXPECT_LT(ring.mean_step.value, previous.mean_step.value);
  // The job without delays runs under the same policy.
  EXPECT_NEAR(adaptive.baseline_mean_step.value, ring.baseline_mean_step.value, 1e-12);
}

TEST(Training, AdaptiveChoosesOnceForAllGroups) {
  // Two groups of 4 (every 4 steps an average over all 8): rank 6 (group 1's rank 2) is late;
  // the buckets run StragglAR side by side, rank 6 the straggler of group 1 and group 0's
  // previous last (rank 0: on a tie the lowest rank counts as the last) of group 0.
  TrainingConfig c = stragglar_job(0.003);
  c.modes = {SyncSpec{SyncMode::grouped, 2, 4}};
  c.policy = StragglerPolicy::previous;
  c.adaptive_fallbacks = {"ring"};
  std::vector<std::string> averages;
  std::vector<std::string> first, last;
  const TrainingResult r = run_training(c, [&](const TrainingRun&, const StepRecord& s) {
    if (s.average) averages.emplace_back(s.average->algorithm);
    last.clear();
    for (const BucketChoice& b : s.buckets) {
      std::string what(b.algorithm);
      for (const int rank : b.stragglers) what += "@" + std::to_string(rank);
      last.push_back(what);
    }
    if (s.step == 0) first = last;
  });
  EXPECT_EQ(first, (std::vector<std::string>{"ring", "ring"}));  // no prediction yet
  EXPECT_EQ(last, (std::vector<std::string>{"stragglar@0@6", "stragglar@0@6"}));
  ASSERT_EQ(averages.size(), 2u);  // steps 3 and 7
  EXPECT_GT(r.runs.at(0).adaptive_collectives, 20);
}

TEST(Training, EagerPlaysTheLastArrivalAfterTheDetectionLatency) {
  // Rank 6 late every step: eager gives it the straggler's role from step 0 on (previous guesses
  // rank 7 at step 0; fixed at rank 2 is always wrong); its detection latency delays the early
  // ranks, which costs step time once it exceeds the straggler's lead.
  TrainingConfig c = stragglar_job(0.003);
  c.policy = StragglerPolicy::fixed;
  c.straggler = 2;
  const double wrong = run_training(c).runs[0].mean_step.value;
  c.policy = StragglerPolicy::oracle;
  const double oracle = run_training(c).runs[0].mean_step.value;
  c.policy = StragglerPolicy::eager;
  c.detection = Seconds{0};
  TrainingRun eager0, eager_slow;
  for (const auto& step : bucket_runs(c, &eager0))
    EXPECT_EQ(step, (std::vector<std::string>{"stragglar@6", "stragglar@6"}));
  EXPECT_LT(eager0.mean_step.value, wrong);
  EXPECT_NEAR(eager0.mean_step.value, oracle, 1e-4 * oracle);
  c.detection = Seconds{0.010};
  bucket_runs(c, &eager_slow);
  EXPECT_GT(eager_slow.mean_step.value, eager0.mean_step.value + 0.005);
  // Without delays it costs the detection latency where the collective is exposed.
  EXPECT_GT(eager_slow.baseline_mean_step.value, eager0.baseline_mean_step.value);
}

double ring_time_on(const topo::Topology& t, std::uint64_t bytes) {
  const alg::Schedule s = alg::generate("ring", t.gpu_count(), {});
  Executor ex(s, t, NetworkConfig{}, Bytes{bytes});
  return ex.run(at(std::vector<double>(static_cast<std::size_t>(t.gpu_count()), 0.0)))
      .completion.value;
}

TEST(Training, LocalSgdAveragesEveryKSteps) {
  TrainingConfig c = two_ranks();
  const double d = 0.004;
  c.delays.stragglers.push_back({.rank = 1, .extra = Distribution::constant(Seconds{d})});
  c.modes = {SyncSpec{SyncMode::local_sgd, 1, 4}};
  c.steps = 8;
  const TrainingRun run = run_training(c).runs.at(0);
  EXPECT_EQ(run.mode.describe(), "local_sgd(every=4)");
  // The straggler runs its steps back to back; the average (8 MB, both ranks) waits for it.
  const double own = 0.060 + 0.001, avg = ring_time(c, 8'000'000);
  EXPECT_NEAR(run.mean_step.value, own + d + avg / 4, 1e-12);
  EXPECT_NEAR(run.baseline_mean_step.value, own + avg / 4, 1e-12);
  // The fast rank waits d per step, at the average.
  EXPECT_NEAR(run.mean_idle[0].value - run.mean_idle[1].value, d, 1e-12);
  EXPECT_DOUBLE_EQ(run.mean_staleness, 1.5);  // 0, 1, 2, 3, 0, 1, 2, 3
  EXPECT_EQ(run.max_staleness, 3);
}

TEST(Training, GroupsRunSideBySideAndAverageEveryKSteps) {
  // Two groups of two on four ranks: with no average in sight a group's step is the two-rank
  // job's step, and a straggler in group 1 costs group 0 nothing.
  const TrainingConfig pair = two_ranks();
  const double pair_step = run_training(pair).runs.at(0).mean_step.value;
  TrainingConfig c = two_ranks();
  c.topology = switch_of(4, 1e9, 1e-6);
  c.modes = {SyncSpec{SyncMode::grouped, 2, 1000}};
  const double d = 0.004;
  c.delays.stragglers.push_back({.rank = 3, .extra = Distribution::constant(Seconds{d})});
  const TrainingRun grouped = run_training(c).runs.at(0);
  EXPECT_EQ(grouped.mode.describe(), "grouped(groups=2,every=1000)");
  EXPECT_NEAR(grouped.baseline_mean_step.value, pair_step, 1e-12);
  EXPECT_NEAR(grouped.mean_step.value, pair_step + d, 1e-12);
  EXPECT_NEAR(grouped.mean_idle[0].value, grouped.mean_idle[3].value, 1e-12);
  EXPECT_NEAR(grouped.mean_idle[2].value - grouped.mean_idle[3].value, d, 1e-12);
  EXPECT_DOUBLE_EQ(grouped.mean_staleness, 2.0);  // 0..4
  // Averaging after every step adds the 4-rank AllReduce of the whole model (8 MB).
  c.delays = {};
  c.modes = {SyncSpec{SyncMode::grouped, 2, 1}};
  const TrainingRun every = run_training(c).runs.at(0);
  EXPECT_NEAR(every.mean_step.value, pair_step + ring_time_on(c.topology, 8'000'000), 1e-12);
  EXPECT_EQ(every.max_staleness, 0);
}

SyncSpec exclude_late(int late, int every) {
  SyncSpec m;
  m.mode = SyncMode::exclude_late;
  m.late = late;
  m.every = every;
  return m;
}

// Four ranks on a switch, rank 3 late by `d` on every step (0: nobody), no average in sight.
TrainingConfig four_ranks(double d) {
  TrainingConfig c = two_ranks();
  c.topology = switch_of(4, 1e9, 1e-6);
  if (d > 0)
    c.delays.stragglers.push_back({.rank = 3, .extra = Distribution::constant(Seconds{d})});
  c.modes = {exclude_late(1, 1000)};
  c.steps = 12;
  return c;
}

// The step of the two_ranks job on three ranks (what the three that reduce take), rank 2 late
// by `d` on every step.
double three_rank_step(double d = 0) {
  TrainingConfig c = two_ranks();
  c.topology = switch_of(3, 1e9, 1e-6);
  c.steps = 12;  // as four_ranks
  if (d > 0)
    c.delays.stragglers.push_back({.rank = 2, .extra = Distribution::constant(Seconds{d})});
  return run_training(c).runs.at(0).mean_step.value;
}

TEST(Training, ExcludeLateZeroIsSynchronous) {
  // Nobody sits out and nothing is averaged: the same steps as synchronous, bit for bit, with
  // the straggler-aware schedule's straggler predicted the same way (previous and fixed).
  TrainingConfig c = two_ranks();
  c.topology = switch_of(8, 1e9, 1e-6);
  c.delays.base = Distribution::exponential(Seconds{0.002});
  c.delays.stragglers.push_back({.rank = 6, .extra = Distribution::constant(Seconds{0.003})});
  c.algorithms = {{"ring", {}}, {"stragglar", {}}};
  c.modes = {SyncSpec{}, exclude_late(0, 3)};
  c.steps = 20;
  for (const StragglerPolicy policy :
       {StragglerPolicy::previous, StragglerPolicy::oracle, StragglerPolicy::fixed}) {
    c.policy = policy;
    c.straggler = 2;
    const TrainingResult r = run_training(c);
    ASSERT_EQ(r.runs.size(), 4u);
    for (std::size_t a = 0; a < 2; ++a) {
      const TrainingRun &sync = r.runs[a], &none = r.runs[2 + a];
      EXPECT_EQ(none.mode.describe(), "exclude_late(late=0,every=3)");
      for (std::size_t s = 0; s < 20; ++s)
        EXPECT_EQ(none.step_times[s].value, sync.step_times[s].value) << a << " " << s;
      EXPECT_EQ(none.baseline_mean_step.value, sync.baseline_mean_step.value);
      EXPECT_EQ(none.mean_staleness, 0.0);
      for (const double f : none.sat_out) EXPECT_EQ(f, 0.0);
    }
  }
}

TEST(Training, ExcludeLateOracleHidesAPersistentStraggler) {
  // Rank 3 late by 4 ms: synchronous pays it every step; sitting it out (oracle) costs nothing
  // beyond the three others' step, which is the job's step without delays.
  const double d = 0.004, t3 = three_rank_step();
  TrainingConfig c = four_ranks(d);
  c.policy = StragglerPolicy::oracle;
  std::vector<std::vector<int>> sat;
  const TrainingRun run = run_training(c, [&](const TrainingRun&, const StepRecord& s) {
                            sat.emplace_back(s.sat_out.begin(), s.sat_out.end());
                          }).runs.at(0);
  EXPECT_NEAR(run.mean_step.value, t3, 1e-12);
  EXPECT_NEAR(run.baseline_mean_step.value, t3, 1e-12);
  EXPECT_NEAR(run.lost_fraction, 0.0, 1e-12);
  ASSERT_EQ(sat.size(), 12u);
  EXPECT_EQ(sat[0], std::vector<int>{3});
  EXPECT_GT(run.sat_out[3], 0.5);
  c.modes = {SyncSpec{}};
  const TrainingRun sync = run_training(c).runs.at(0);
  EXPECT_NEAR(sync.mean_step.value, sync.baseline_mean_step.value + d, 1e-12);
  EXPECT_GT(sync.mean_step.value, t3 + d / 2);
  // A straggler that moves every step (never on its home rank 3): oracle still hides it,
  // previous (last step's slow rank) mostly picks the wrong one.
  c.modes = {exclude_late(1, 1000)};
  c.delays.stragglers[0].persistence = 0;
  c.steps = 40;
  const double oracle = run_training(c).runs.at(0).mean_step.value;
  c.policy = StragglerPolicy::previous;
  const double previous = run_training(c).runs.at(0).mean_step.value;
  EXPECT_LT(oracle, t3 + d / 10);
  EXPECT_GT(previous, oracle + d / 4);
}

TEST(Training, ExcludeLateMispredictionCostsTheRealDelay) {
  // Policy fixed guesses rank 1, rank 3 is the late one: rank 1 sits out every step and the
  // three others run the three-rank job with its last rank late.
  const double d = 0.004;
  TrainingConfig c = four_ranks(d);
  c.policy = StragglerPolicy::fixed;
  c.straggler = 1;
  const TrainingRun run = run_training(c).runs.at(0);
  EXPECT_NEAR(run.mean_step.value, three_rank_step(d), 1e-12);
  EXPECT_GT(run.mean_step.value, three_rank_step() + d / 2);
  EXPECT_EQ(run.sat_out[1], 1.0);
  EXPECT_EQ(run.sat_out[3], 0.0);
  EXPECT_NEAR(run.mean_idle[0].value - run.mean_idle[3].value, d, 1e-9);
  // Previous: step 0 guesses rank 3 (the highest), then the delays of the step before.
  c.policy = StragglerPolicy::previous;
  c.straggler.reset();
  EXPECT_NEAR(run_training(c).runs.at(0).mean_step.value, three_rank_step(), 1e-12);
  // Previous guessing rank 0 at step 0 pays rank 3's delay once (to a nanosecond: the ring's
  // ranks finish a step within a nanosecond of each other, which moves the next step's start).
  c.straggler = 0;
  EXPECT_NEAR(run_training(c).runs.at(0).mean_step.value * c.steps,
              three_rank_step(d) + three_rank_step() * (c.steps - 1), 1e-8);
}

TEST(Training, ExcludeLateAveragesEveryKSteps) {
  TrainingConfig c = four_ranks(0.004);
  c.policy = StragglerPolicy::oracle;
  c.modes = {exclude_late(1, 4)};
  c.steps = 8;
  std::vector<int> averaged;
  const TrainingRun run = run_training(c, [&](const TrainingRun&, const StepRecord& s) {
                            if (s.average != nullptr) averaged.push_back(s.step);
                            EXPECT_EQ(s.sat_out.size(), 1u);
                          }).runs.at(0);
  EXPECT_EQ(averaged, (std::vector<int>{3, 7}));
  EXPECT_DOUBLE_EQ(run.mean_staleness, 1.5);
  EXPECT_EQ(run.max_staleness, 3);
  // The average (the whole model, 8 MB, over the four ranks) is paid every 4 steps.
  EXPECT_GT(run.mean_step.value,
            three_rank_step() + ring_time_on(c.topology, 8'000'000) / 4 - 1e-12);
}

TEST(Training, FlowModelAgreesWhereNothingIsShared) {
  // On a switch the two models agree exactly when no link is shared: each group's ring, side by
  // side with the other group's, and the straggler-delayed buckets.
  TrainingConfig c = two_ranks();
  c.topology = switch_of(4, 1e9, 1e-6);
  c.delays.stragglers.push_back({.rank = 3, .extra = Distribution::constant(Seconds{0.004})});
  c.modes = {SyncSpec{SyncMode::grouped, 2, 1000}};
  const TrainingRun ab = run_training(c).runs.at(0);
  c.network = NetworkKind::flow;
  const TrainingRun flow = run_training(c).runs.at(0);
  EXPECT_NEAR(flow.mean_step.value, ab.mean_step.value, 1e-12);
  EXPECT_NEAR(flow.baseline_mean_step.value, ab.baseline_mean_step.value, 1e-12);
}

TEST(Training, ReportsLinksTheAlphabetaModelDoesNotShare) {
  TrainingConfig c = two_ranks();
  EXPECT_FALSE(run_training(c).runs.at(0).shared_link);
  // Two nodes of four on a rail-optimized fabric with one spine: the ring's two node-crossing
  // transfers (3 -> 4, 7 -> 0) both leave rail 3 for the spine (cheaper than NVLink to GPU 0
  // and rail 0 at these latencies).
  c.topology = topo::make_hierarchical({.nodes = 2,
                                        .gpus_per_node = 4,
                                        .nvlink_bandwidth = BytesPerSecond{1e10},
                                        .nvlink_latency = Seconds{5e-6},
                                        .nic_bandwidth = BytesPerSecond{1e9},
                                        .nic_latency = Seconds{1e-6},
                                        .fabric = topo::FabricKind::rail_optimized,
                                        .spines = 1,
                                        .spine_bandwidth = BytesPerSecond{1e9},
                                        .spine_latency = Seconds{1e-6}});
  c.steps = 2;
  const TrainingRun run = run_training(c).runs.at(0);
  ASSERT_TRUE(run.shared_link);
  EXPECT_NE(run.shared_link->describe().find("spine"), std::string::npos)
      << run.shared_link->describe();
  c.network = NetworkKind::flow;
  EXPECT_FALSE(run_training(c).runs.at(0).shared_link);
}

// The common reference (TrainingReference): one no-delay step per mode that every algorithm is
// measured against, beside each algorithm's own no-delay step.
// 8 ranks on a 10 GB/s switch that reduces (NVLS at 1 TB/s, so NCCL's choice, NVLS, beats the
// point-to-point algorithms), two 8 MB buckets, rank 3 late by 0.2 ms every step.
TrainingConfig eight_ranks_late() {
  TrainingConfig c;
  c.topology = switch_of(8, 10e9, 5e-6);
  c.topology.set_switch_reduction(8, {BytesPerSecond{1e12}, Seconds{1e-6}});  // vertex 8: the switch
  c.layers = {layer("a", 2'000'000, 0.004, 0.008), layer("b", 2'000'000, 0.004, 0.008)};
  c.bucket_cap = Bytes{8'000'000};
  c.optimizer = Seconds{0.001};
  c.algorithms = {{"ring", {}}, {"stragglar", {}}};
  c.delays.stragglers.push_back(
      {.rank = 3, .extra = Distribution::constant(Seconds{0.0002}), .persistence = 1});
  c.steps = 20;
  c.seed = 5;
  c.cluster_gpus = 1000;
  return c;
}

TEST(TrainingReference, OneReferenceOrdersTheAlgorithmsAsTheirSteps) {
  const TrainingConfig c = eight_ranks_late();
  const TrainingResult r = run_training(c);
  ASSERT_EQ(r.runs.size(), 2u);
  ASSERT_EQ(r.references.size(), 1u);
  const TrainingReference& ref = r.references[0];
  EXPECT_TRUE(ref.nccl);
  EXPECT_EQ(ref.algorithm, "nccl");
  EXPECT_TRUE(ref.why_not_nccl.empty());
  // The reference is the same job without delays on nccl: what a listed nccl's own no-delay
  // step is (the reference stops once the steps repeat; within 1e-9 of every step run).
  TrainingConfig listed = c;
  listed.algorithms = {{"nccl", {}}};
  const TrainingResult n = run_training(listed);
  EXPECT_NEAR(ref.mean_step.value, n.runs[0].baseline_mean_step.value,
              1e-9 * n.runs[0].baseline_mean_step.value);
  // A listed nccl of the reference's options is the reference itself.
  listed.algorithms = {{"ring", {}}, {"stragglar", {}}, {"nccl", {}}};
  const TrainingResult with = run_training(listed);
  EXPECT_EQ(with.references[0].mean_step.value, with.runs[2].baseline_mean_step.value);
  const TrainingRun& ring = r.runs[0];
  const TrainingRun& stragglar = r.runs[1];
  for (const TrainingRun& run : r.runs) {
    EXPECT_EQ(run.reference_mean_step.value, ref.mean_step.value);
    EXPECT_DOUBLE_EQ(run.lost_vs_reference, 1 - ref.mean_step.value / run.mean_step.value);
    EXPECT_DOUBLE_EQ(run.lost_vs_reference_gpu_hours_per_day, 1000 * 24 * run.lost_vs_reference);
    // Today's figure is unchanged: against the run's own no-delay step.
    EXPECT_DOUBLE_EQ(run.lost_fraction, 1 - run.baseline_mean_step.value / run.mean_step.value);
  }
  // StragglAR is slower here with and without the straggler, and hides the 0.2 ms where Ring
  // pays it: against its own step it looks better than Ring (0% against 0.75% lost), against
  // the common reference it is worse, in the order of the step times.
  ASSERT_GT(stragglar.baseline_mean_step.value, ring.baseline_mean_step.value);
  ASSERT_GT(stragglar.mean_step.value, ring.mean_step.value);
  EXPECT_LT(stragglar.lost_fraction, ring.lost_fraction);
  EXPECT_GT(stragglar.lost_vs_reference, ring.lost_vs_reference);
}

TEST(TrainingReference, NcclGetsNcclsChoiceForEachBucketSize) {
  // One bucket, full when backward is done: the no-delay step is compute, the AllReduce of the
  // gradients as run_simulation runs nccl (NCCL's choice for the size), then the optimizer.
  TrainingConfig c = eight_ranks_late();
  c.bucket_cap = Bytes{16'000'000};
  c.algorithms = {{"nccl", {}}};
  c.steps = 3;
  const TrainingResult r = run_training(c);
  SimulationConfig one;
  one.topology = c.topology;
  one.algorithm = "nccl";
  one.size = Bytes{16'000'000};
  const SimulationResult s = run_simulation(one);
  ASSERT_FALSE(s.nccl_algo.empty());
  const double step = 0.008 + 0.016 + s.mean_completion.value + 0.001;
  EXPECT_NEAR(r.runs[0].baseline_mean_step.value, step, 1e-12);
  EXPECT_NEAR(r.references[0].mean_step.value, step, 1e-12);
  // Not nccl's schedule without a machine (Ring's defaults), which the training model ran
  // before.
  SimulationConfig plain = one;
  plain.options.set("algo", "ring");
  plain.options.set("proto", "simple");
  plain.options.set("channels", "1");
  EXPECT_NE(run_simulation(plain).mean_completion.value, s.mean_completion.value);
}

TEST(TrainingReference, TheFastestWhereNcclDoesNotRun) {
  // Ranks sharing one GPU: NCCL refuses them; the reference is the fastest no-delay step.
  TrainingConfig c = eight_ranks_late();
  topo::SharedDevice d;
  d.memory_bandwidth = BytesPerSecond{1e12};
  d.copy_latency = Seconds{2e-6};
  d.apply_latency = Seconds{2e-6};
  c.topology = topo::make_shared_device({.ranks = 8, .device = d});
  c.algorithms = {{"stragglar", {}}, {"ring", {}}};
  TrainingResult r = run_training(c);
  ASSERT_EQ(r.references.size(), 1u);
  const TrainingRun& fastest = r.runs[0].baseline_mean_step.value <=
                                       r.runs[1].baseline_mean_step.value
                                   ? r.runs[0]
                                   : r.runs[1];
  EXPECT_FALSE(r.references[0].nccl);
  EXPECT_EQ(r.references[0].algorithm, fastest.algorithm);
  EXPECT_EQ(r.references[0].mean_step.value, fastest.baseline_mean_step.value);
  EXPECT_NE(r.references[0].why_not_nccl.find("one GPU"), std::string::npos)
      << r.references[0].why_not_nccl;
  EXPECT_DOUBLE_EQ(fastest.lost_vs_reference, fastest.lost_fraction);
  // Groups of ranks: NCCL's choice is the whole machine's, so the fastest again; modes have
  // their own reference, in config order.
  c = eight_ranks_late();
  c.modes = {SyncSpec{}, SyncSpec{.mode = SyncMode::grouped, .groups = 2, .every = 4}};
  r = run_training(c);
  ASSERT_EQ(r.references.size(), 2u);
  EXPECT_TRUE(r.references[0].nccl);
  EXPECT_FALSE(r.references[1].nccl);
  EXPECT_EQ(r.references[1].mode.describe(), "grouped(groups=2,every=4)");
  EXPECT_NE(r.references[1].why_not_nccl.find("groups"), std::string::npos);
  EXPECT_EQ(r.runs[2].reference_mean_step.value, r.references[1].mean_step.value);
  // Off: no reference pass, no figure.
  c.common_reference = false;
  r = run_training(c);
  EXPECT_TRUE(r.references.empty());
  EXPECT_EQ(r.runs[0].lost_vs_reference, 0.0);
}

// Where the model runs NCCL's choice slower than what the job runs without delays (here a plain
// switch: NCCL's kernels pay its launch and 0.824 of the links, Ring its routes alone), the
// fastest listed algorithm is the reference and the reason gives NCCL's step and the ratio: no
// algorithm then loses less than nothing.
TEST(TrainingReference, NeverSlowerThanTheJobsFastest) {
  TrainingConfig c = eight_ranks_late();
  c.topology = switch_of(8, 10e9, 5e-6);
  const TrainingResult r = run_training(c);
  ASSERT_EQ(r.references.size(), 1u);
  const TrainingReference& ref = r.references[0];
  EXPECT_FALSE(ref.nccl);
  EXPECT_EQ(ref.algorithm, "ring");
  EXPECT_EQ(ref.mean_step.value, r.runs[0].baseline_mean_step.value);
  EXPECT_NE(ref.why_not_nccl.find("NCCL's choice takes "), std::string::npos) << ref.why_not_nccl;
  EXPECT_NE(ref.why_not_nccl.find("x ring's"), std::string::npos) << ref.why_not_nccl;
  for (const TrainingRun& run : r.runs) EXPECT_GE(run.lost_vs_reference, 0.0) << run.algorithm;
}

TEST(TrainingReference, PeriodicWithAveragesCountsEveryStep) {
  // local_sgd averages every 3 steps over 10 steps (not a whole number of periods): the
  // reference, stopped once a period repeats, is what a listed nccl's full no-delay pass gives.
  TrainingConfig c = eight_ranks_late();
  c.modes = {SyncSpec{.mode = SyncMode::local_sgd, .every = 3}};
  c.steps = 10;
  const TrainingResult r = run_training(c);
  c.algorithms = {{"nccl", {}}};
  c.common_reference = false;
  const TrainingResult n = run_training(c);
  ASSERT_TRUE(r.references[0].nccl);
  EXPECT_NEAR(r.references[0].mean_step.value, n.runs[0].baseline_mean_step.value,
              1e-9 * n.runs[0].baseline_mean_step.value);
}

TEST(Training, BadInput) {
  TrainingConfig c = two_ranks();
  c.layers[1].forward = Seconds{0};
  EXPECT_THROW(run_training(c), InputError);
  c = two_ranks();
  c.layers[0].backward = Seconds{-1};
  EXPECT_THROW(run_training(c), InputError);
  c = two_ranks();
  c.bucket_cap = Bytes{8'000'001};
  EXPECT_THROW(run_training(c), InputError);
  c = two_ranks();
  c.algorithms = {{"stragglar", {}}};
  c.adaptive_fallbacks = {"stragglar"};  // a fallback must be a baseline
  EXPECT_THROW(run_training(c), InputError);
  c.adaptive_fallbacks = {"no_such_algorithm"};
  EXPECT_THROW(run_training(c), InputError);
  c = two_ranks();
  c.policy = StragglerPolicy::eager;
  c.detection = Seconds{-1e-6};
  EXPECT_THROW(run_training(c), InputError);
  c = two_ranks();
  c.algorithms = {{"no_such_algorithm", {}}};
  EXPECT_THROW(run_training(c), InputError);
  c = two_ranks();
  c.steps = 0;
  EXPECT_THROW(run_training(c), InputError);
  c = two_ranks();
  c.topology = switch_of(6, 1e9, 1e-6);
  c.modes = {SyncSpec{SyncMode::grouped, 4, 2}};  // 4 does not divide 6
  EXPECT_THROW(run_training(c), InputError);
  c.modes = {SyncSpec{SyncMode::local_sgd, 1, 0}};
  EXPECT_THROW(run_training(c), InputError);
  c.modes = {};
  EXPECT_THROW(run_training(c), InputError);
  // exclude_late: at least 2 ranks reduce, every >= 1, no eager or adaptive, fixed names one
  // rank, the algorithm must run on the ranks that reduce.
  c = four_ranks(0.001);
  EXPECT_NO_THROW(run_training(c));
  for (const SyncSpec& m : {exclude_late(3, 2), exclude_late(-1, 2), exclude_late(1, 0)}) {
    c.modes = {m};
    EXPECT_THROW(run_training(c), InputError) << m.describe();
  }
  c.modes = {exclude_late(1, 2)};
  c.policy = StragglerPolicy::eager;
  EXPECT_THROW(run_training(c), InputError);
  c.policy = StragglerPolicy::previous;
  c.algorithms = {{"stragglar", {}}};
  c.adaptive_fallbacks = {"ring"};
  EXPECT_THROW(run_training(c), InputError);
  c.adaptive_fallbacks.clear();
  EXPECT_NO_THROW(run_training(c));
  c.modes = {exclude_late(2, 2)};  // StragglAR needs 3 ranks
  EXPECT_THROW(run_training(c), InputError);
  c.algorithms = {{"ring", {}}};
  c.policy = StragglerPolicy::fixed;
  c.straggler = 1;
  EXPECT_THROW(run_training(c), InputError);  // fixed with late 2
}

}  // namespace
}  // namespace ssim::sim
