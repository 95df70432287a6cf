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
// Values (shared with the CUDA executor's check): rank r's element i starts as
//   input_value(r, i) = ((r + 1) * (i mod 61 + 1)) mod 1031 + 1,      padding elements 0.
// Values lie in [1, 1031]. 1031 is prime, so for up to 1030 ranks the ranks' values of one
// element are all different (a contribution counted twice and another one missing cannot
// cancel); every partial sum over up to 1024 ranks is an integer below 2^24, so float32 sums
// are exact in any order and the check is an exact comparison. Expected results:
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
#include "gpu_backend/plan.hpp"

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

HostRunResult run_on_host(const Plan& plan, const HostRunOptions& options = {});
// lower(schedule, bytes, dtype), then run.
HostRunResult run_on_host(const alg::Schedule& schedule, std::uint64_t bytes, DType dtype,
                          const HostRunOptions& options = {});

double input_value(int rank, std::uint64_t element);
// Writes rank's input for plan.collective into buffer (plan.layout.padded_bytes() bytes).
void fill_input(const Plan& plan, int rank, std::span<std::byte> buffer);
// Compares rank's buffer after the collective with the expected values of plan.collective
// and adds the outcome to `report`; call it for ranks in increasing order.
void check_output(const Plan& plan, int rank, std::span<const std::byte> buffer,
                  CheckReport& report);

}  // namespace ssim::gpu
