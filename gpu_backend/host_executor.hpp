// The host executor: the CPU twin of the CUDA/NCCL executor. It runs a Plan (plan.hpp) with
// one std::thread per rank on real buffers, checks every element against the exact result,
// and times the run, so every schedule's numbers are checked on machines without GPUs.
//
//   HostRunOptions opts;
//   opts.start_delay = std::vector<Seconds>(8);  opts.start_delay[7] = Seconds{0.01};  // a
//   straggler const HostRunResult r = run_on_host(alg::generate("ring", 8, {}), 4096,
//   DType::float32, opts); if (!r.check.ok()) std::cerr << r.check.to_string() << "\n"; std::cout
//   << r.time.value << " s\n";
//
// Transport: an in-process point-to-point channel per (round, sender, receiver) with the
// semantics NCCL grouped send/receive gives the plan. A rank works through its steps in
// order; in each it first posts all its sends (copying its round-start data out, before it
// applies anything of that round), then takes its receives into scratch, then waits until
// each of its sends has been taken by the receiver (a transfer needs both ends to have
// reached the round), then applies. There is no global barrier: ranks progress independently.
//
// Values (shared with the CUDA and MPI executors' checks): rank r's element i starts as
//   input_value(r, i, M) = ((r + 1) * (i mod 61 + 1)) mod M + 1,      padding elements 0,
// an integer in [1, M], with the modulus M = value_modulus(dtype, n) = min(1031, L / n) for n
// ranks, where L is the largest integer up to which the type holds every integer:
//   float16 L = 2^11 = 2048 (11-bit significand)   bfloat16 L = 2^8 = 256 (8-bit significand)
//   float32 L = 2^24          int32 L = 2^31 - 1    float64 L = 2^53    int64 L = 2^63 - 1
// Every partial sum is then an integer <= n * M <= L, so it is exact in the type in any order
// (half and bfloat16 add in float and round back, which is exact for these integers) and the
// check is an exact comparison. float32, float64, int32 and int64 use M = 1031 (a prime: for up
// to 1030 ranks the ranks' values of one element are all different, so a contribution counted
// twice and another one missing cannot cancel) at every rank count the drivers allow (1024).
// float16: M = 2048 / n: 1024 at 2 ranks, 256 at 8, 2 at 1024 (every count the drivers allow).
// bfloat16: M = 256 / n: 32 at 8 ranks, 4 at 64, 2 at 128; more than 128 ranks (M < 2) is an
// InputError naming the limit. Expected results:
//   allreduce       every rank, every element: sum over ranks of input_value(r, i);
//   reduce_scatter  on the owner of each chunk (alg::chunk_owner) that sum; other ranks unchecked;
//   allgather       every rank holds the owner's input values of each chunk; before the
//                   collective only the owner of a chunk holds it, the other ranks hold 0 there.
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include "algorithms/schedule.hpp"
#include "common/units.hpp"
#include "lowering/plan.hpp"

namespace ssim::gpu {

struct HostRunOptions {
  // Per rank, how long after the common start the rank begins (mimics a straggler's late
  // arrival); empty means no delays, otherwise one entry per rank.
  std::vector<Seconds> start_delay;
  bool check = true;
  // A rank that waits this long for a peer aborts the run with an InternalError: with a
  // matched plan that only happens when something is broken, not when something is slow.
  Seconds wait_timeout{60.0};
};

// Like nccl-tests' #wrong, plus the first wrong element (ranks in order, then elements).
struct CheckReport {
  std::uint64_t checked = 0;  // elements compared
  std::uint64_t wrong = 0;
  int first_rank = -1;
  std::uint64_t first_element = 0;
  double expected = 0;
  double actual = 0;

  bool ok() const { return wrong == 0; }
  // "ok: 96 elements checked" or "2 of 96 elements wrong; first: rank 1 element 5 expected 33 got
  // 22"
  std::string to_string() const;
};

struct RankTiming {
  Seconds start;   // since the common start (includes its start delay)
  Seconds finish;  // since the common start
};

struct HostRunResult {
  std::vector<RankTiming> ranks;
  Seconds time;                    // common start to last finish
  Seconds time_from_last_arrival;  // last rank's start to last finish
  CheckReport check;               // empty (checked == 0) when options.check is false
};

HostRunResult run_on_host(const lowering::Plan& plan, const HostRunOptions& options = {});
// lower(schedule, bytes, dtype), then run.
HostRunResult run_on_host(const alg::Schedule& schedule, std::uint64_t bytes, lowering::DType dtype,
                          const HostRunOptions& options = {});

// The fill value with modulus M (above), and with M = 1031.
double input_value(int rank, std::uint64_t element, std::uint64_t modulus);
double input_value(int rank, std::uint64_t element);
// The largest integer L up to which `dtype` holds every integer (table above).
std::uint64_t exact_integer_limit(lowering::DType dtype);
// M = min(1031, L / ranks); InputError when that is below 2 (bfloat16 beyond 128 ranks).
std::uint64_t value_modulus(lowering::DType dtype, int ranks);
// Writes rank's input for plan.collective into buffer (plan.layout.padded_bytes() bytes).
void fill_input(const lowering::Plan& plan, int rank, std::span<std::byte> buffer);
// Compares rank's buffer after the collective with the expected values of plan.collective
// and adds the outcome to `report`; call it for ranks in increasing order.
void check_output(const lowering::Plan& plan, int rank, std::span<const std::byte> buffer,
                  CheckReport& report);

}  // namespace ssim::gpu
