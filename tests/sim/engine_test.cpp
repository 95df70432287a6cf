#include "sim/engine.hpp"

#include <gtest/gtest.h>

#include <utility>
#include <vector>

#include "common/error.hpp"

namespace ssim::sim {
namespace {

// Records (time, tag) of every event; tag 100 + k schedules tag k at now + 1.
struct Recorder : EventHandler {
  std::vector<std::pair<double, std::uint64_t>> seen;
  void on_event(Engine& engine, std::uint64_t tag) override {
    seen.emplace_back(engine.now().value, tag);
    if (tag >= 100) engine.schedule(Seconds{engine.now().value + 1}, *this, tag - 100);
  }
};

TEST(Engine, RunsEventsInTimeOrder) {
  Engine engine;
  Recorder r;
  engine.schedule(Seconds{3}, r, 3);
  engine.schedule(Seconds{1}, r, 1);
  engine.schedule(Seconds{2}, r, 2);
  EXPECT_EQ(engine.pending(), 3u);
  engine.run();
  const std::vector<std::pair<double, std::uint64_t>> want = {{1, 1}, {2, 2}, {3, 3}};
  EXPECT_EQ(r.seen, want);
  EXPECT_EQ(engine.processed(), 3u);
  EXPECT_EQ(engine.now().value, 3);
}

TEST(Engine, EqualTimesRunInSchedulingOrder) {
  Engine engine;
  Recorder r;
  for (std::uint64_t tag : {5, 2, 9, 1, 7}) engine.schedule(Seconds{1e-6}, r, tag);
  engine.schedule(Seconds{0.5e-6}, r, 0);
  engine.run();
  const std::vector<std::pair<double, std::uint64_t>> want = {{0.5e-6, 0}, {1e-6, 5}, {1e-6, 2},
                                                              {1e-6, 9},   {1e-6, 1}, {1e-6, 7}};
  EXPECT_EQ(r.seen, want);
}

TEST(Engine, HandlersScheduleFollowUps) {
  Engine engine;
  Recorder r;
  engine.schedule(Seconds{0}, r, 101);  // schedules tag 1 at t = 1
  engine.schedule(Seconds{1}, r, 2);    // queued before tag 1, so it runs first at t = 1
  engine.run();
  const std::vector<std::pair<double, std::uint64_t>> want = {{0, 101}, {1, 2}, {1, 1}};
  EXPECT_EQ(r.seen, want);
}

TEST(Engine, StepRunsOneEventAndRejectsThePast) {
  Engine engine;
  Recorder r;
  engine.schedule(Seconds{-2}, r, 1);  // negative times are fine before the run starts
  engine.schedule(Seconds{4}, r, 2);
  EXPECT_TRUE(engine.step());
  EXPECT_EQ(engine.now().value, -2);
  EXPECT_THROW(engine.schedule(Seconds{-3}, r, 3), InternalError);
  EXPECT_TRUE(engine.step());
  EXPECT_FALSE(engine.step());
  engine.reset();
  EXPECT_EQ(engine.now().value, 0);
  EXPECT_EQ(engine.pending(), 0u);
  engine.schedule(Seconds{-1}, r, 4);
  EXPECT_EQ(engine.pending(), 1u);
}

}  // namespace
}  // namespace ssim::sim
