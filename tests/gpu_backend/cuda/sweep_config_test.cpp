#include "gpu_backend/cuda/sweep_config.hpp"

#include <gtest/gtest.h>

#include <string>

#include "common/error.hpp"

namespace ssim::gpu {
namespace {

TEST(SweepConfig, SizesAcceptNcclTestsSuffixesAndUnits) {
  EXPECT_EQ(parse_size("4096"), 4096u);
  EXPECT_EQ(parse_size("64K"), 64u * 1024);
  EXPECT_EQ(parse_size("1M"), 1u << 20);
  EXPECT_EQ(parse_size("1m"), 1u << 20);
  EXPECT_EQ(parse_size("2G"), 2ull << 30);
  EXPECT_EQ(parse_size("1.5K"), 1536u);
  EXPECT_EQ(parse_size("64MiB"), 64u << 20);
  EXPECT_EQ(parse_size("1MB"), 1000000u);
  for (const char* bad : {"", "M", "1X", "-1M", "1.3"}) {
    try {
      parse_size(bad);
      ADD_FAILURE() << "accepted '" << bad << "'";
    } catch (const InputError& e) {
      EXPECT_NE(std::string(e.what()).find("invalid size '" + std::string(bad) + "'"),
                std::string::npos)
          << e.what();
    }
  }
}

TEST(SweepConfig, SizeSweepIsNcclTestsStyle) {
  // 1K, 4K, 16K, 64K: 256K would pass -e 100K.
  EXPECT_EQ(size_sweep(1024, 100 * 1024, 4),
            (std::vector<std::uint64_t>{1024, 4096, 16384, 65536}));
  EXPECT_EQ(size_sweep(8, 8, 1), (std::vector<std::uint64_t>{8}));
  EXPECT_EQ(size_sweep(1, 4, 2), (std::vector<std::uint64_t>{1, 2, 4}));
  EXPECT_THROW(size_sweep(0, 8, 2), InputError);
  EXPECT_THROW(size_sweep(16, 8, 2), InputError);
  EXPECT_THROW(size_sweep(8, 16, 1), InputError);
  // Stops instead of overflowing.
  EXPECT_EQ(size_sweep(1ull << 62, ~0ull, 4).size(), 1u);
}

SweepConfig base() {
  SweepConfig o;
  o.sizes = {1 << 20};
  o.ranks = 4;
  return o;
}

void expect_invalid(const SweepConfig& o, const std::string& what) {
  try {
    validate_without_device(o);
    ADD_FAILURE() << "accepted; expected: " << what;
  } catch (const InputError& e) {
    EXPECT_NE(std::string(e.what()).find(what), std::string::npos) << e.what();
  }
}

TEST(SweepConfig, ValidOptionsPass) {
  SweepConfig o = base();
  EXPECT_NO_THROW(validate_without_device(o));
  o.algorithm = "direct";
  o.phase1 = Phase1::nccl_rs;
  o.straggler = 0;
  EXPECT_NO_THROW(validate_without_device(o));
  o = base();
  o.algorithm = "nccl";
  o.ranks.reset();  // nccl transport: the GPU count decides later
  EXPECT_NO_THROW(validate_without_device(o));
}

TEST(SweepConfig, OneErrorPerBadSetting) {
  SweepConfig o = base();
  o.algorithm = "bogus";
  expect_invalid(o, "unknown algorithm 'bogus' (valid: ring, ");
  o.ranks.reset();  // known even without a rank count
  expect_invalid(o, ", nccl)");

  o = base();
  o.sizes = {8};  // ring over 4 ranks: 4 chunks, 2 float32 elements
  expect_invalid(o, "too small for a schedule of 4 chunks");
  o = base();
  o.iterations = 0;
  expect_invalid(o, "-n (iterations) must be >= 1");
  o = base();
  o.warmup = -1;
  expect_invalid(o, "-w (warm-up iterations) must be >= 0");
  o = base();
  o.ranks = 1;
  expect_invalid(o, "--ranks must be in [2, 1024], got 1");
  o = base();
  o.straggler = 4;
  expect_invalid(o, "--straggler must be a rank in [0, 4), got 4");
  o = base();
  o.algorithm_options["straggler"] = "1";
  expect_invalid(o, "set the straggler with --straggler");
  o = base();
  o.algorithm_options["segments"] = "4";
  expect_invalid(o, "algorithm ring has no option 'segments'");
  o = base();
  o.phase1 = Phase1::nccl_rs;
  expect_invalid(o, "it names no straggler");
  o = base();
  o.algorithm = "nccl";
  o.phase1 = Phase1::nccl_rs;
  expect_invalid(o, "not to --algo nccl");
  o = base();
  o.algorithm = "nccl";
  o.transport = Transport::single_gpu;
  expect_invalid(o, "--algo nccl needs --transport nccl");
  o = base();
  o.algorithm = "direct";
  o.transport = Transport::single_gpu;
  o.phase1 = Phase1::nccl_rs;
  expect_invalid(o, "--phase1 nccl-rs needs --transport nccl");
  o = base();
  o.device = 1;
  expect_invalid(o, "--device applies to one process per GPU");
}

TEST(SweepConfig, OneProcessPerGpuNeedsAllThreeSettings) {
  SweepConfig o = base();
  o.rank = 0;
  expect_invalid(o, "needs all of --rank, --nranks and --id-file");
  o.nranks = 4;
  o.id_file = "/tmp/id";
  EXPECT_NO_THROW(validate_without_device(o));
  o.rank = 4;
  expect_invalid(o, "--rank must be in [0, 4), got 4");
  o.rank = 1;
  o.ranks = 8;
  expect_invalid(o, "--ranks (8) differs from --nranks (4)");
  o.ranks.reset();
  o.transport = Transport::single_gpu;
  expect_invalid(o, "--rank/--nranks/--id-file need --transport nccl");
}

// Under mpirun rank and size come from MPI; the GPU is the node-local rank modulo the GPUs.
TEST(SweepConfig, MpiBootstrapNeedsNoIdFile) {
  SweepConfig o = base();
  o.mpi = true;
  o.rank = 5;
  o.nranks = 4;
  o.ranks.reset();
  expect_invalid(o, "--rank must be in [0, 4), got 5");
  o.rank = 3;
  o.local_rank = 1;
  EXPECT_NO_THROW(validate_without_device(o));
  EXPECT_TRUE(one_process_per_gpu(o));
  EXPECT_EQ(process_device(o, 2), 1);
  o.id_file = "/tmp/id";
  expect_invalid(o, "drop --id-file");
}

TEST(SweepConfig, WatchdogTimeoutMustBePositive) {
  SweepConfig o = base();
  o.timeout = Seconds{0};
  expect_invalid(o, "--timeout must be > 0");
}

void expect_device_error(const SweepConfig& o, int ranks, int gpus, const std::string& what) {
  try {
    check_device_count(o, ranks, gpus);
    ADD_FAILURE() << "accepted; expected: " << what;
  } catch (const InputError& e) {
    EXPECT_NE(std::string(e.what()).find(what), std::string::npos) << e.what();
  }
}

TEST(SweepConfig, DeviceCountChecks) {
  SweepConfig o = base();
  expect_device_error(o, 8, 2,
                      "the nccl transport runs one rank per GPU: 8 ranks need 8 GPUs, this "
                      "machine has 2");
  EXPECT_NO_THROW(check_device_count(o, 2, 2));
  EXPECT_NO_THROW(check_device_count(o, 2, 8));
  // No --ranks on a one-GPU machine with the nccl transport.
  SweepConfig none;
  none.sizes = {1024};
  EXPECT_EQ(resolve_ranks(none, 1), 1);
  expect_device_error(none, 1, 1, "a run needs at least 2 ranks");

  o.transport = Transport::single_gpu;
  EXPECT_NO_THROW(check_device_count(o, 8, 1));
  none.transport = Transport::single_gpu;
  EXPECT_THROW(resolve_ranks(none, 1), InputError);

  SweepConfig p = base();
  p.rank = 5;
  p.nranks = 8;
  p.id_file = "/tmp/id";
  EXPECT_EQ(process_device(p, 4), 1);  // 5 % 4
  EXPECT_NO_THROW(check_device_count(p, 8, 4));
  p.device = 4;
  expect_device_error(p, 8, 4, "--device 4 does not exist: this machine has 4 GPU(s)");
}

TEST(SweepConfig, StragglerAwareSchedulesAreBuiltForTheDelayedRank) {
  SweepConfig o = base();
  o.algorithm = "direct";
  EXPECT_EQ(straggler_rank(o, 4), 3);
  EXPECT_EQ(collective_spec(o, 4, 1024).options.get_string("straggler", ""), "3");
  o.straggler = 1;
  EXPECT_EQ(collective_spec(o, 4, 1024).options.get_string("straggler", ""), "1");
  o.algorithm = "ring";  // not straggler-aware: no option
  EXPECT_FALSE(collective_spec(o, 4, 1024).options.has("straggler"));
}

}  // namespace
}  // namespace ssim::gpu
