// Several late ranks: the k latest ranks, the relabelling that lets predicted ranks play a
// schedule's late ranks, and simulations of stragglar with stragglers=k against hand-derived
// times.
#include <gtest/gtest.h>

#include <vector>

#include "algorithms/registry.hpp"
#include "common/error.hpp"
#include "fixtures.hpp"
#include "sim/delays.hpp"
#include "sim/executor.hpp"
#include "sim/simulation.hpp"

namespace ssim::sim {
namespace {

using testing::at;
using testing::unit_switch;

TEST(LateRanks, LatestRanksInArrivalOrderWithTiesLikeLastRank) {
  EXPECT_EQ(latest_ranks(at({5, 1, 9, 3, 7}), 3), (std::vector<int>{0, 4, 2}));
  EXPECT_EQ(latest_ranks(at({5, 1, 9, 3, 7}), 1), (std::vector<int>{2}));
  // Ties: the lower rank counts as later (as IterationArrivals::last_rank).
  EXPECT_EQ(latest_ranks(at({4, 4, 4, 0}), 2), (std::vector<int>{1, 0}));
}

TEST(LateRanks, LateRankMapSendsEachScheduleLateRankToItsPrediction) {
  alg::Options o;
  o.set("stragglers", "2");
  const alg::Schedule s = alg::generate("stragglar", 6, o);  // late ranks 4 then 5
  ASSERT_EQ(s.late, (std::vector<int>{4, 5}));
  const std::vector<int> predicted = {5, 1};
  const std::vector<int> perm = late_rank_map(s, predicted);
  EXPECT_EQ(perm[4], 5);
  EXPECT_EQ(perm[5], 1);
  // A permutation; ranks in neither list stay.
  std::vector<int> seen(6, 0);
  for (int p : perm) ++seen[static_cast<std::size_t>(p)];
  EXPECT_EQ(seen, std::vector<int>(6, 1));
  EXPECT_EQ(perm[0], 0);
  EXPECT_EQ(perm[2], 2);
  EXPECT_EQ(perm[3], 3);
  EXPECT_EQ(perm[1], 4);  // rank 1 is predicted late: schedule rank 1 takes the freed rank 4
}

// tests/algorithms/stragglar_k_test.cpp derives n = 4, k = 2 by hand: with the first late rank
// on time the fold-in is hidden and 3 rounds remain after the last arrival. Unit switch, 2
// bytes: 2 chunks of 1 byte, 2 s per transfer.
SimulationConfig four_ranks_two_late(StragglerPolicy policy) {
  SimulationConfig c;
  c.topology = unit_switch(4);
  c.algorithm = "stragglar";
  c.options.set("stragglers", "2");
  c.size = Bytes{2};
  // Physical ranks 1 (at 100 s) and 0 (at 50 s) are late, 0 first.
  c.delays.stragglers.push_back({.rank = 1, .extra = Distribution::constant(Seconds{100})});
  c.delays.stragglers.push_back({.rank = 0, .extra = Distribution::constant(Seconds{50})});
  c.policy = policy;
  c.iterations = 2;
  return c;
}

TEST(LateRanks, OraclePutsThePredictedLateRanksInTheirPlaces) {
  const SimulationResult r = run_simulation(four_ranks_two_late(StragglerPolicy::oracle));
  for (const IterationSummary& it : r.iterations) {
    EXPECT_DOUBLE_EQ(it.after_last_arrival.value, 3 * 2.0);
    EXPECT_EQ(it.predicted_straggler, 1);
    EXPECT_EQ(it.last_rank, 1);
  }
  EXPECT_DOUBLE_EQ(r.prediction_accuracy, 1.0);
  // previous: iteration 0 uses the schedule's own late ranks (2, 3: wrong), then the right ones.
  const SimulationResult p = run_simulation(four_ranks_two_late(StragglerPolicy::previous));
  EXPECT_GT(p.iterations[0].after_last_arrival.value, 3 * 2.0);
  EXPECT_EQ(p.iterations[0].predicted_straggler, 3);
  EXPECT_DOUBLE_EQ(p.iterations[1].after_last_arrival.value, 3 * 2.0);
  EXPECT_EQ(p.iterations[1].predicted_straggler, 1);
}

TEST(LateRanks, ArrivalOrderMatters) {
  // The late ranks in the other order than predicted: the first one's fold-in cannot start
  // before it arrives, after the one the schedule treats as last.
  SimulationConfig c = four_ranks_two_late(StragglerPolicy::fixed);
  c.straggler = 3;
  c.options.set("late", "1,0");  // expects 1 before 0: wrong
  const SimulationResult wrong = run_simulation(c);
  c.options.set("late", "0,1");
  const SimulationResult right = run_simulation(c);
  EXPECT_DOUBLE_EQ(right.iterations[0].after_last_arrival.value, 6.0);
  EXPECT_GT(wrong.iterations[0].after_last_arrival.value, 6.0);
}

TEST(LateRanks, PredictionCountMustMatchTheSchedule) {
  SimulationConfig c = four_ranks_two_late(StragglerPolicy::oracle);
  c.late_count = 1;
  EXPECT_THROW(run_simulation(c), InputError);
  c.late_count = 2;
  EXPECT_NO_THROW(run_simulation(c));
}

}  // namespace
}  // namespace ssim::sim
