// The training job loader (`stragglesim train`, sim/training.hpp): YAML -> sim::TrainingConfig,
// every invalid field an InputError naming the file, line, column and key path.
#pragma once

#include "experiments/config/reader.hpp"
#include "sim/training.hpp"

namespace ssim::experiments {

// A training job (`stragglesim train`, sim/training.hpp):
//   topology, network, delays, seed     as in a simulation
//   algorithms: [ring, {algorithm: stragglar, options: {...}}]     required, at least one
//   modes: [synchronous, {mode: grouped, groups: G, every: K}, {mode: local_sgd, every: K},
//           {mode: exclude_late, late: L, every: K}]
//                                         default [synchronous]; G >= 2 divides the ranks, K >= 1,
//                                         1 <= L <= ranks - 2 (policy oracle, previous, fixed)
//   prediction: {policy: oracle | fixed | previous | adaptive | eager, rank: R,
//                fallback: ALGO or [ALGO, ...], detection: TIME}  default oracle; as in
//                                         simulations (load_prediction); k > 1 is refused
//   workload:
//     samples_per_gpu: 8                  per step (default 1)
//     gradient_bytes_per_param: 4         default 4 (fp32 gradients)
//     bucket_cap: 25MiB                   default 25MiB; not larger than the gradients
//     optimizer: 1ms                      default 0
//     model:                              either a layer list in forward order
//       {achieved_tflops: 400, backward_factor: 2,
//        layers: [{name, params, flops (forward FLOPs per sample) | forward: TIME, backward: TIME,
//                  count: 24}]}
//                                         or {params: 354823168, forward: 15ms, backward: 30ms}
//                                         (gradients come out evenly during backward)
//   steps: 100, cluster_gpus: N (default the topology's GPUs)
// Compute times must be > 0; errors name the file, line and key.
sim::TrainingConfig load_training_config(const ConfigReader& reader);

// The `workload:` map above into c's samples_per_gpu, bytes_per_param, bucket_cap, optimizer
// and layers (train's loader and `run` experiments with a workload share it).
void load_workload(const ConfigNode& workload, sim::TrainingConfig& c);
// One `modes` entry above, for `ranks` ranks (groups >= 2 dividing them, every >= 1).
sim::SyncSpec load_sync_mode(const ConfigNode& item, int ranks);
// What a mode asks of an algorithm (`where`: its entry), for `ranks` ranks: grouped, that it
// runs groups of ranks/groups; exclude_late, that it runs (with `options`, its straggler left
// to the group) on the ranks - late that reduce, without switch reductions.
void check_mode_algorithm(const sim::SyncSpec& mode, int ranks, const std::string& algorithm,
                          const alg::Options& options, const ConfigNode& where);
// What exclude_late asks of the prediction (`where`: the mode's entry): a policy that predicts
// before the step (not eager, not adaptive), and one rank under fixed.
void check_mode_policy(const sim::SyncSpec& mode, sim::StragglerPolicy policy, bool adaptive,
                       const ConfigNode& where);

}  // namespace ssim::experiments
