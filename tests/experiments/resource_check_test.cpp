// experiments/resource_check: memory refusals and time notes, from the inputs alone.
#include "experiments/config/resource_check.hpp"

#include <gtest/gtest.h>

#include "common/error.hpp"
#include "sim/executor.hpp"
#include "topologies/generators.hpp"

namespace ssim::experiments {
namespace {

sim::SimulationConfig ring_on_switch(int n, sim::NetworkKind network, int iterations) {
  sim::SimulationConfig c;
  c.topology = topo::make_switch({.ranks = n, .bandwidth = BytesPerSecond{1e11}, .latency = Seconds{1e-6}});
  c.network = network;
  c.algorithm = "ring";
  c.size = Bytes{1 << 20};
  c.iterations = iterations;
  return c;
}

TEST(ResourceCheck, TimeNoteOnlyForLongSimulations) {
  // ring at 2048 ranks: 2 * 2048 * 2047 = 8.4e6 transfers; 200 flow iterations at 0.8 us each
  // = 1341 s, about 22 minutes (measured: 12 s for 2 iterations).
  const std::string note = simulation_time_note(ring_on_switch(2048, sim::NetworkKind::flow, 200));
  EXPECT_NE(note.find("this simulation may take about 22 minutes"), std::string::npos) << note;
  EXPECT_EQ(simulation_time_note(ring_on_switch(2048, sim::NetworkKind::alphabeta, 2)), "");
  EXPECT_EQ(simulation_time_note(ring_on_switch(8, sim::NetworkKind::flow, 1000)), "");
}

TEST(ResourceCheck, SharedDeviceSimulationsAreTimedAsTheDevice) {
  // ring at 512 ranks on one shared device: 2 * 512 * 511 = 523,264 transfers, measured 1.7 s
  // for one iteration (release build); the alpha-beta constant would say 0.02 s.
  sim::SimulationConfig c = ring_on_switch(512, sim::NetworkKind::alphabeta, 1);
  topo::SharedDevice d;
  d.memory_bandwidth = BytesPerSecond{4e12};
  d.copy_latency = Seconds{3e-6};
  d.apply_latency = Seconds{0.6e-6};
  c.topology = topo::make_shared_device({.ranks = 512, .device = d});
  const double transfers = 2.0 * 512 * 511;
  EXPECT_GE(simulation_seconds(c), 0.5 * 1.7);
  EXPECT_LE(simulation_seconds(c), 4 * 1.7);
  EXPECT_GT(simulation_seconds(c), 10 * transfers * kAlphabetaSecondsPerTransfer);
  c.iterations = 100;  // about 3 minutes: announced
  const std::string note = simulation_time_note(c);
  EXPECT_NE(note.find("this simulation may take about"), std::string::npos) << note;
}

TEST(ResourceCheck, SimulationMemoryGrowsWithTransfersAndIsChecked) {
  // The flow model streams but is counted as materialized (its window of rounds, at worst the
  // whole schedule).
  const sim::SimulationConfig c = ring_on_switch(1024, sim::NetworkKind::flow, 10);
  ASSERT_TRUE(sim::streams_rounds(c));
  const double transfers = 2.0 * 1024 * 1023;
  EXPECT_GE(simulation_bytes(c), transfers * (kScheduleBytesPerTransfer + kExecutorBytesPerTransfer));
  EXPECT_THROW(check_simulation_memory(MemoryBudget::of(1 << 20, "test"), c), ResourceError);
  EXPECT_NO_THROW(check_simulation_memory(MemoryBudget::of(std::uint64_t{1} << 30, "test"), c));
}

TEST(ResourceCheck, StreamedSimulationsNeedMemoryForRanksNotTransfers) {
  // ring at 65536 ranks: 8.6e9 transfers, which materialized would need ~600 GiB; streamed, the
  // per-rank state, one round and 65536 routes.
  const sim::SimulationConfig c = ring_on_switch(65536, sim::NetworkKind::alphabeta, 1);
  ASSERT_TRUE(sim::streams_rounds(c));
  EXPECT_GE(simulation_bytes(c), 65536.0 * kStreamBytesPerRank);
  EXPECT_LE(simulation_bytes(c), 256.0 * (1 << 20));
  EXPECT_NO_THROW(check_simulation_memory(MemoryBudget::of(std::uint64_t{1} << 30, "test"), c));
  EXPECT_THROW(check_simulation_memory(MemoryBudget::of(std::uint64_t{1} << 24, "test"), c),
               ResourceError);
  // The same run traced materializes every transfer (the textbook ring is no NCCL kernel: its
  // steps are not pipelined, so nothing more is held, whatever the setting).
  sim::SimulationConfig traced = c;
  traced.trace_iteration = 0;
  EXPECT_GE(simulation_bytes(traced), 8.6e9 * kScheduleBytesPerTransfer);
  sim::SimulationConfig per_round = traced;
  per_round.pipelined_kernels = false;
  EXPECT_EQ(simulation_bytes(traced), simulation_bytes(per_round));
  // As NCCL's Ring kernel (a protocol named) with pipelined steps, the default, it also holds both
  // sides of every transfer to the end; per round it does not.
  sim::SimulationConfig held = traced;
  held.algorithm = "nccl_ring";
  held.options.set("proto", "simple");
  per_round = held;
  per_round.pipelined_kernels = false;
  EXPECT_GE(simulation_bytes(held) - simulation_bytes(per_round),
            8.6e9 * 2 * static_cast<double>(sizeof(sim::TransferRecord)));
}

}  // namespace
}  // namespace ssim::experiments
