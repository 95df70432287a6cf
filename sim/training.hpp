// The training-step model: what stragglers cost a data-parallel training job, step by step.
//
//   TrainingConfig c;
//   c.topology = ...;                                   // its GPU count is the rank count N
//   c.layers = {{"embed", 52'511'744, fwd, bwd}, ...};  // forward order
//   c.bucket_cap = Bytes{25 << 20};
//   c.algorithms = {{"ring", {}}, {"stragglar", {}}};
//   c.delays.stragglers.push_back({.rank = 5, .extra = Distribution::constant(...)});
//   c.steps = 1000;
//   TrainingResult r = run_training(c);   // per algorithm: step times, idle, lost GPU-hours
//
// One step on rank r (DDP, fully synchronous):
//   - it starts when its previous step ended (its optimizer step done), S_r; step 0 at 0;
//   - it computes from S_r + d_r, d_r its delay this step (c.delays, drawn per step as the
//     simulator draws per-iteration arrivals: a slow or late GPU): forward over the layers in
//     order, then backward over them in reverse;
//   - gradients go into buckets in reverse layer order (make_buckets: a bucket is closed once it
//     holds at least bucket_cap bytes, layers are never split, as DDP's bucket_cap_mb); a bucket
//     is full on rank r when the backward of its last layer is done there;
//   - each bucket is one AllReduce of its bytes with the algorithm. DDP issues every bucket on one
//     process group, whose communication stream runs them one after another on each rank: bucket
//     b enters the collective on rank r at max(full on r, r done with bucket b-1). That is the
//     arrival the executor gets for the bucket, so the collective waits for its latest rank and
//     overlaps the rest of backward on the ranks that are there;
//   - the optimizer step (c.optimizer) runs once backward is done and every bucket is reduced on
//     r; the step ends on r after it: E_r.
// Under the alpha-beta model running the buckets one after another with these arrivals is the
// same as running them in one simulation: its shared resources are each rank's ports, which a
// rank's stream hands from one bucket to the next in order. Under the flow model, transfers of
// two buckets in flight at the same time (ranks still in bucket b while others are in b+1) do
// not share links here: the flow model is optimistic there.
//
// Per step: step time = max_r E_r(s) - max_r E_r(s-1) (max_r E_r(-1) = 0), so the mean step
// time is the last step's end over the step count; a rank's idle time = E_r - S_r - (d_r +
// forward + backward + optimizer), the time it waited for the collective beyond its own compute.
// Straggler-aware algorithms play their straggler by the predicted rank per bucket (policy
// oracle: the rank that enters the bucket's collective last; fixed: c.straggler; previous: the
// one that entered the same bucket last in the previous step, step 0 c.straggler or N-1; eager:
// as oracle, every rank starting at eager_start(its entry, the last early entry + detection)).
// Adaptive (c.adaptive_fallbacks, policy previous) chooses per collective with the code of
// run_simulation (sim::AdaptiveChoice): the algorithm or a fallback, whichever is fastest on
// the entries predicted from the same bucket's collective in the previous step (the predicted
// rank late by its lead then over the second-to-last; step 0: nobody late).
//
// The same job without delays (every d_r = 0) is run beside it: lost fraction = 1 - T0 / T (T,
// T0 the mean step times), GPU-hours lost per day = cluster_gpus * 24 * lost fraction.
// T0 is each algorithm's own, so a slower algorithm can look better. Beside it, against one
// reference per mode (c.common_reference): lost vs reference = 1 - T_ref / T, T_ref the mean
// step of the same job in that mode without delays on `nccl` (NCCL's choice of algorithm,
// protocol and channels for each collective's size, sim/nccl_tuner.hpp). Where NCCL does not
// run it (a shared_device topology: NCCL refuses two ranks on one GPU, ncclInvalidUsage
// "Duplicate GPU detected" in NVIDIA/nccl src/init.cc; a mode whose bucket
// collectives run on groups of ranks, whose NCCL choice is not the whole machine's; a machine
// nccl refuses), T_ref is the fastest no-delay step of the job's algorithms in that mode, and
// TrainingReference says which and why.
// `nccl`, listed or the reference, gets NCCL's choice per collective size wherever the
// collective spans every rank (the buckets of synchronous and of exclude_late with late 0, the
// parameter averages), as run_simulation does; a group's collectives run nccl's default (Ring).
// Memory: O(ranks x buckets), plus 8 bytes per step with keep_step_times (the default; `train`
// turns it off). Step-time quantiles are exact up to 65,536 steps, beyond that within 5e-5
// relative in memory bounded by the spread of the step times (common/stats.hpp,
// StreamQuantiles).
#pragma once

#include <cstdint>
#include <functional>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "algorithms/registry.hpp"
#include "common/units.hpp"
#include "sim/adaptive.hpp"
#include "sim/delays.hpp"
#include "sim/network.hpp"
#include "sim/simulation.hpp"
#include "topologies/topology.hpp"

namespace ssim::sim {

// One layer of the model, in forward order: its parameters and its compute times per step.
struct TrainingLayer {
  std::string name;
  std::uint64_t params = 0;
  Seconds forward;   // > 0
  Seconds backward;  // > 0
};

// A gradient bucket: layers [first_layer, last_layer] (forward indices; filled from last_layer
// down to first_layer), its bytes, and when it is full, counted from the start of backward.
struct Bucket {
  int first_layer = 0;
  int last_layer = 0;
  Bytes bytes;
  Seconds ready;
};

// DDP's bucketing in reverse layer order: a layer's gradients join the open bucket, which is
// closed once it holds >= cap bytes; the last bucket takes what is left. Layers without
// parameters join no bucket (a bucket never ends on one). InputError when cap is 0 or larger
// than the model's gradients, or the model has no parameters.
std::vector<Bucket> make_buckets(const std::vector<TrainingLayer>& layers,
                                 std::uint64_t bytes_per_param, Bytes cap);

// How the ranks synchronize (the effect of staleness on accuracy is not modelled: only its cost
// and its amount, in steps).
//   synchronous  every bucket AllReduced over all ranks every step (DDP); staleness 0.
//   grouped      in the spirit of STAR (straggler tolerant and resilient training, 2025): the
//                ranks form `groups` contiguous groups of N / groups ranks; every bucket is
//                AllReduced within each group every step (the groups' collectives run side by
//                side in one simulation), and every `every` steps, after the optimizer step, the
//                groups average their parameters: one AllReduce of the model's gradient-sized
//                parameters over all ranks. A rank then lacks the other groups' updates of the
//                steps since the last average: staleness s mod every at step s.
//   local_sgd    no communication during a step; every `every` steps the parameters are
//                averaged over all ranks as above (local SGD / periodic model averaging). A rank
//                lacks every other rank's updates since the last average: staleness as grouped.
//   exclude_late a straggler-excluding group formed per step (STAR's other grouping): before
//                each step the `late` ranks predicted to arrive last sit out that step's bucket
//                AllReduces; the other N - late ranks run every bucket among themselves (the
//                algorithm's schedule for N - late ranks, on their GPUs of the same topology, a
//                straggler-aware one with its straggler predicted within the group as in
//                synchronous mode). A rank that sits out applies its own gradients and goes on
//                without waiting. Every `every` steps the parameters are averaged over all
//                ranks as in grouped, which brings the excluded ranks back. A rank's predicted
//                arrival is its start of the step plus its predicted compute: oracle its real
//                delay this step, previous its delay of the previous step (step 0: the given
//                rank, then N-1, N-2, ...), fixed the given rank (late 1 only); the `late`
//                latest (latest_ranks) sit out. Eager and adaptive are not supported here.
//                Times are what happens: a rank mispredicted as on time holds its group up.
//                Staleness as grouped (some rank's update is missing on every step since the
//                last average); TrainingRun::sat_out says how often each rank sat out.
//                late 0 (the library only; configurations need >= 1) excludes nobody and runs
//                no average: exactly synchronous.
enum class SyncMode : std::uint8_t { synchronous, grouped, local_sgd, exclude_late };
struct SyncSpec {
  SyncMode mode = SyncMode::synchronous;
  int groups = 1;  // grouped: >= 2, divides the rank count
  int every = 1;   // grouped, local_sgd, exclude_late: >= 1
  int late = 0;    // exclude_late: 0 <= late < ranks - 1 (at least 2 ranks reduce)
  // "synchronous", "grouped(groups=4,every=8)", "local_sgd(every=8)",
  // "exclude_late(late=1,every=8)".
  std::string describe() const;
};

struct TrainingAlgorithm {
  std::string name;  // a registry algorithm
  alg::Options options;
};

struct TrainingConfig {
  topo::Topology topology;
  NetworkKind network = NetworkKind::alphabeta;
  SecondsPerByte gamma{0.0};
  std::optional<alg::Protocol> protocol = std::nullopt;  // network: {protocol: ...} (SimulationConfig's)
  bool pipelined_kernels = true;  // network: {steps: pipelined} (SimulationConfig's)
  std::vector<TrainingLayer> layers;  // forward order, at least one
  std::uint64_t bytes_per_param = 4;  // gradient bytes per parameter (4: fp32, 2: bf16)
  Bytes bucket_cap{25ull << 20};      // DDP's default bucket_cap_mb = 25
  Seconds optimizer{0.0};             // >= 0
  int samples_per_gpu = 1;            // per step, for samples/s
  std::vector<TrainingAlgorithm> algorithms;
  std::vector<SyncSpec> modes = {SyncSpec{}};  // each mode runs with each algorithm
  DelayModel delays;
  StragglerPolicy policy = StragglerPolicy::oracle;
  std::optional<int> straggler;  // fixed's rank, previous's first guess
  // The adaptive policy (as SimulationConfig::adaptive_fallbacks, with policy previous): when
  // not empty, every collective of a straggler-aware algorithm runs whichever of it and these
  // baselines is fastest on the arrivals predicted from the same collective in the previous
  // step (sim::AdaptiveChoice).
  std::vector<std::string> adaptive_fallbacks;
  // The eager policy's detection latency (SimulationConfig::detection); unset:
  // default_detection(topology).
  std::optional<Seconds> detection;
  int steps = 1;  // >= 1
  // TrainingRun::step_times holds every step's time (what `run` experiments need); without it
  // memory does not grow with the step count.
  bool keep_step_times = true;
  std::uint64_t seed = 0;
  int cluster_gpus = 0;  // for GPU-hours lost per day; 0: the rank count
  // Measure every run against its mode's common reference too (TrainingReference; one more
  // no-delay pass per mode unless a listed nccl is the reference); `run` experiments, which do
  // not report lost time, turn it off.
  bool common_reference = true;
};

// What one collective of a step ran: the algorithm or, under the adaptive policy, the fallback
// it chose; for a straggler-aware schedule the physical rank that played its straggler in each
// group (one group unless grouped; empty when a schedule without a straggler ran). Views into
// the model, valid during the step callback.
struct BucketChoice {
  std::string_view algorithm;
  std::span<const int> stragglers;
};

// One step of one run, handed to TrainingRunCallbacks::step as it completes.
struct StepRecord {
  int step = 0;
  Seconds step_time;
  Seconds end;        // max_r E_r
  Seconds mean_idle;  // over ranks
  Seconds max_idle;
  int slowest_rank = 0;  // the rank with the largest delay this step (lowest on ties)
  Seconds exposed_comm;  // end - max_r (S_r + d_r + forward + backward) - optimizer, >= 0
  std::span<const BucketChoice> buckets;  // per bucket, in bucket order (none under local_sgd)
  const BucketChoice* average = nullptr;  // the parameter average, on the steps it ran
  std::span<const int> sat_out;           // exclude_late: the ranks that sat out, ascending
};

struct TrainingRun {
  SyncSpec mode;
  std::string algorithm;
  alg::Options options;  // as run (straggler-aware ones with their straggler)
  bool straggler_aware = false;
  int buckets = 0;
  // Adaptive policy: how many collectives (buckets and parameter averages) of the delayed run
  // chose between the algorithm and the fallbacks, and the fraction of them that ran a fallback.
  int adaptive_collectives = 0;
  double fallback_fraction = 0.0;
  std::vector<Seconds> step_times;  // per step (TrainingConfig::keep_step_times; else empty)
  bool exact_quantiles = true;      // false: p50/p90/p99 within 5e-5 relative (over 65,536 steps)
  Seconds mean_step;
  Seconds p50_step, p90_step, p99_step, max_step;
  double samples_per_second = 0.0;
  std::vector<Seconds> mean_idle;   // per rank, over steps
  std::vector<Seconds> max_idle;    // per rank
  std::vector<Seconds> mean_delay;  // per rank
  std::vector<double> sat_out;      // per rank: fraction of steps it sat out (exclude_late)
  Seconds mean_exposed_comm;
  // Alpha-beta only: the first link the bucket collectives (or the parameter average) share
  // without the model sharing it (find_shared_link): the times are optimistic there.
  std::optional<SharedLink> shared_link;
  double mean_staleness = 0.0;  // steps of other ranks' updates a rank lacks, mean over steps
  int max_staleness = 0;
  // The same job without delays.
  Seconds baseline_mean_step;
  double baseline_samples_per_second = 0.0;
  double lost_fraction = 0.0;  // 1 - baseline_mean_step / mean_step
  double lost_gpu_hours_per_day = 0.0;
  // Against the mode's common reference (TrainingConfig::common_reference; else 0): 1 -
  // reference_mean_step / mean_step (< 0: faster than the reference), and its GPU-hours.
  Seconds reference_mean_step;
  double lost_vs_reference = 0.0;
  double lost_vs_reference_gpu_hours_per_day = 0.0;
};

// The common reference of one mode: the same job in that mode without delays on NCCL's choice,
// or where NCCL does not run it the fastest of the job's algorithms without delays.
struct TrainingReference {
  SyncSpec mode;
  bool nccl = false;      // NCCL's choice; false: the fallback
  std::string algorithm;  // "nccl", or the fallback's algorithm
  alg::Options options;   // as run (nccl: before NCCL's choice is filled in per collective)
  std::string why_not_nccl;  // the fallback: why NCCL's choice is not the reference
  Seconds mean_step;
};

struct TrainingResult {
  int ranks = 0;
  int cluster_gpus = 0;
  Seconds forward, backward;  // per step, summed over layers
  std::vector<Bucket> buckets;
  std::uint64_t gradient_bytes = 0;
  std::vector<TrainingRun> runs;  // per mode, per algorithm, in config order
  std::vector<TrainingReference> references;  // per mode (common_reference; else empty)
};

// Called for every step of every delayed run (not the baseline), in step order.
using StepCallback = std::function<void(const TrainingRun& run, const StepRecord& record)>;

// InputError on a bad configuration (no layers, algorithms or modes, groups < 2 or not dividing
// the ranks, every < 1, exclude_late's late out of range or under policy eager or adaptive
// (or fixed with late > 1) or with a schedule that reduces in switches, a compute time <= 0, an
// unknown
// algorithm or one that does not support the rank count, bad options, steps < 1, a bucket cap
// larger than the gradients, an invalid delay model, a straggler-aware or unknown adaptive
// fallback or one that does not support the ranks or a group's ranks, a negative detection).
TrainingResult run_training(const TrainingConfig& config, const StepCallback& on_step = {});

}  // namespace ssim::sim
