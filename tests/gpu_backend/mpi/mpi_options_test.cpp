// The MPI executor's option checks and per-size preparation: pure host code, run in process.
#include "gpu_backend/mpi/mpi_options.hpp"

#include <gtest/gtest.h>

#include <string>
#include <utility>
#include <vector>

#include "common/error.hpp"

namespace ssim::gpu {
namespace {

MpiSweepConfig valid() {
  MpiSweepConfig o;
  o.sizes = {4096};
  return o;
}

std::string error_of(const MpiSweepConfig& o, int ranks) {
  try {
    validate_mpi_options(o, ranks);
  } catch (const InputError& e) {
    return e.what();
  }
  return "(no error)";
}

TEST(MpiOptions, ValidOptionsPass) {
  MpiSweepConfig o = valid();
  EXPECT_NO_THROW(validate_mpi_options(o, 2));
  o.algorithm = "stragglar";
  o.straggler = 0;
  o.delay = Seconds{1e-3};
  EXPECT_NO_THROW(validate_mpi_options(o, 5));
  o.algorithm = std::string(kMpiAlgorithm);
  o.straggler.reset();
  EXPECT_NO_THROW(validate_mpi_options(o, 1024));
}

// Flags that do not depend on the process count are checked first: under mpirun -np 1 (or
// without mpirun) a bad flag is named, not hidden behind "needs at least 2".
TEST(MpiOptions, FlagErrorsComeBeforeTheProcessCount) {
  MpiSweepConfig o = valid();
  o.iterations = 0;
  EXPECT_EQ(error_of(o, 1), "-n (iterations) must be >= 1, got 0");
  o = valid();
  o.algorithm = "bogus";
  EXPECT_NE(error_of(o, 1).find("unknown algorithm 'bogus'"), std::string::npos) << error_of(o, 1);
  o = valid();
  o.straggler = -1;
  EXPECT_EQ(error_of(o, 1), "--straggler must be a rank >= 0, got -1");
  o = valid();
  o.algorithm = std::string(kMpiAlgorithm);
  o.algorithm_options["segments"] = "2";
  EXPECT_EQ(error_of(o, 1), "algorithm mpi (MPI_Allreduce) takes no options");
  EXPECT_NE(error_of(valid(), 1).find("needs at least 2, got 1"), std::string::npos);
}

// One case per check: the options, the world size, and a part of the message.
TEST(MpiOptions, EachBadSettingGivesOneClearMessage) {
  struct Case {
    MpiSweepConfig o;
    int ranks;
    std::string message;
  };
  std::vector<Case> cases;
  cases.push_back({valid(), 1, "needs at least 2, got 1 (start it with mpirun -np N)"});
  cases.push_back({valid(), 1025, "at most 1024 MPI processes, got 1025"});
  MpiSweepConfig o = valid();
  o.sizes.clear();
  cases.push_back({o, 2, "no sizes to run (-b/-e)"});
  o = valid();
  o.iterations = 0;
  cases.push_back({o, 2, "-n (iterations) must be >= 1, got 0"});
  o = valid();
  o.warmup = -1;
  cases.push_back({o, 2, "-w (warm-up iterations) must be >= 0, got -1"});
  o = valid();
  o.algorithm = "stragglar";
  o.algorithm_options["straggler"] = "1";
  cases.push_back({o, 4, "set the straggler with --straggler"});
  o = valid();
  o.straggler = 4;
  cases.push_back({o, 4, "--straggler must be a rank in [0, 4), got 4"});
  o = valid();
  o.algorithm = "bogus";
  cases.push_back({o, 4, "unknown algorithm 'bogus' (valid: ring, rhd, direct, tree, dbtree"});
  cases.push_back({o, 4, ", mpi)"});
  o = valid();
  o.sizes = {4096, 8};  // 8 B = 2 float32 elements cannot fill 4 chunks
  cases.push_back({o, 4, "too small for a schedule of 4 chunks"});
  o = valid();
  o.algorithm = std::string(kMpiAlgorithm);
  o.algorithm_options["segments"] = "2";
  cases.push_back({o, 4, "algorithm mpi (MPI_Allreduce) takes no options"});
  o = valid();
  o.algorithm_options["segments"] = "2";
  cases.push_back({o, 4, "algorithm ring has no option 'segments'"});
  o = valid();
  o.algorithm = "stragglar";
  cases.push_back({o, 2, "n >= 3"});
  o = valid();
  o.dtype = lowering::DType::float64;
  o.sizes = {4100};  // not a whole number of 8-byte elements
  cases.push_back({o, 2, "size 4100 B is not a whole number of float64 elements"});
  for (const Case& c : cases) {
    const std::string e = error_of(c.o, c.ranks);
    EXPECT_NE(e.find(c.message), std::string::npos) << "expected: " << c.message << "\ngot: " << e;
  }
}

TEST(MpiOptions, StragglerDefaultsToTheLastRank) {
  MpiSweepConfig o = valid();
  EXPECT_EQ(straggler_rank(o, 8), 7);
  o.straggler = 2;
  EXPECT_EQ(straggler_rank(o, 8), 2);
}

TEST(MpiOptions, ScheduleLoweredForTheSize) {
  // Ring over 4 ranks cuts 64 B of float32 (16 elements) into 4 chunks, each rounded up to
  // 128 B (32 elements; lowering/plan.hpp), and takes 2(n-1) = 6 rounds; every rank sends in
  // each of them.
  MpiSweepConfig o = valid();
  const MpiCollective c = prepare_mpi_collective(o, 4, 64);
  EXPECT_EQ(c.label, "ring");
  EXPECT_FALSE(c.mpi_allreduce);
  EXPECT_EQ(c.plan.ranks, 4);
  EXPECT_EQ(c.plan.layout.count, 16u);
  EXPECT_EQ(c.plan.layout.chunk_count, 32u);
  EXPECT_EQ(c.plan.layout.padded_bytes(), 512u);
  ASSERT_EQ(c.plan.rank_plans.size(), 4u);
  for (const lowering::RankPlan& rp : c.plan.rank_plans) EXPECT_EQ(rp.steps.size(), 6u);
}

TEST(MpiOptions, MpiAllreduceBaselineIsOneChunkWithoutSteps) {
  // 20 B of float32 = 5 elements in one chunk: no padding.
  MpiSweepConfig o = valid();
  o.algorithm = std::string(kMpiAlgorithm);
  const MpiCollective c = prepare_mpi_collective(o, 3, 20);
  EXPECT_EQ(c.label, "mpi");
  EXPECT_TRUE(c.mpi_allreduce);
  EXPECT_EQ(c.plan.layout.chunks, 1);
  EXPECT_EQ(c.plan.layout.padded_bytes(), 20u);
  ASSERT_EQ(c.plan.rank_plans.size(), 3u);
  for (const lowering::RankPlan& rp : c.plan.rank_plans) EXPECT_TRUE(rp.steps.empty());
}

TEST(MpiOptions, StragglerAwareScheduleIsBuiltForTheDelayedRank) {
  // StragglAR over 4 ranks starts with a ring reduce-scatter among the 3 non-stragglers
  // (n-2 = 2 rounds) in which the straggler takes no part, so the straggler's first step
  // comes after round 0 and every other rank's first step is round 0.
  MpiSweepConfig o = valid();
  o.algorithm = "stragglar";
  for (int s : {0, 3}) {
    o.straggler = s;
    const MpiCollective c = prepare_mpi_collective(o, 4, 4096);
    for (int r = 0; r < 4; ++r) {
      const std::vector<lowering::Step>& steps =
          c.plan.rank_plans[static_cast<std::size_t>(r)].steps;
      ASSERT_FALSE(steps.empty());
      if (r == s) {
        EXPECT_GT(steps.front().round, 0) << "straggler " << s;
      } else {
        EXPECT_EQ(steps.front().round, 0) << "straggler " << s << " rank " << r;
      }
    }
  }
}

}  // namespace
}  // namespace ssim::gpu
