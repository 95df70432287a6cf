// The `nccl` algorithm's options as NCCL's tuner (sim/nccl_tuner.hpp) takes and gives them:
// typed, so that the simulator never reads an option by its name. This header owns the names
// (algo, proto, channels, pipeline, segments, gpus_per_node); the tuner owns the machine.
//
//   const NcclRequest request(8, options);   // throws InputError as nccl's check_options does
//   request.algo()                           // "nvls" when forced with algo=nvls, else empty
//   NcclChoice c = sim::nccl_choose(topology, Bytes{1 << 20}, request, pipelined);  // an NcclPick
//   Options o = request.schedule_options(c);   // what generate("nccl", 8, o) runs
#pragma once

#include <optional>
#include <string>

#include "algorithms/protocol.hpp"
#include "algorithms/registry.hpp"

namespace ssim::alg {

// NCCL's upper bound on channels (MAXCHANNELS, src/include/device.h: 32 up to 2.17, 64 since).
inline constexpr int kNcclMaxChannels = 64;

// What NCCL's tuner picked for one size on one machine, and what the schedule needs from the
// machine where the options do not say it.
struct NcclPick {
  std::string algo;  // NCCL_ALGO's name, lower case: ring, tree, nvls, nvls_tree, collnet_direct,
                     // collnet_chain
  Protocol proto = Protocol::simple;
  int channels = 0;       // the forced count, else NCCL's tuning for the size
  int gpus_per_node = 0;  // the machine's G: the schedule's node size where none is given
  int pipeline = 0;       // nvls, nvls_tree, collnet_direct without a given pipeline: the depth
                          // of least estimated time; 0 otherwise
};

// The channel count of an NCCL kernel's schedule: its `channels` option (nccl_ring, nccl_tree,
// collnet_chain and `nccl` with those record it), 1 without one. InputError when the option is
// not an integer in 1..64.
int schedule_channels(const Schedule& schedule);

// nccl's defaults on a machine of `gpus_per_node` GPUs per node (none when 0): the options a
// configuration loader gives it on such a topology, as every algorithm that takes gpus_per_node.
Options nccl_default_options(int gpus_per_node);

// The options given to `nccl` (key=value text, as from a config or -O), checked and read.
class NcclRequest {
 public:
  // Runs the `nccl` registry entry's check_options for `ranks` first (the same checks and
  // messages as generate("nccl", ranks, options)): an unknown algo or proto, a protocol the
  // algorithm does not run, bad channels, loops, segments, pipeline or gpus_per_node.
  NcclRequest(int ranks, Options options);

  // The forced algorithm (algo=, lower case); empty: NCCL's choice.
  const std::string& algo() const { return algo_; }
  // The forced protocol (proto=); nullopt: NCCL's choice.
  std::optional<Protocol> proto() const { return proto_; }
  // The forced channel count (channels=), else `tuned`. InputError when it is not an integer
  // in 1..64 (NCCL's MAXCHANNELS); the registry checks it already except with algo=nvls,
  // nvls_tree and collnet_direct, which do not use it, so it is read here, after the machine's
  // refusals of those algorithms.
  int channels_or(int tuned) const;
  // Whether a pipeline depth is given (pipeline=); without one NCCL's choice picks it.
  bool has_pipeline() const;

  // The options to generate `nccl`'s schedule with for `pick`: algo, proto and the options of
  // the schedule it names. ring and tree: every option given, with the picked channels;
  // collnet_direct and collnet_chain: the node size (the machine's when none is given) and
  // pipeline (direct) or segments and the picked channels (chain); nvls and nvls_tree: the
  // pipeline depth and (nvls_tree) the node size. A given pipeline or node size keeps its text.
  Options schedule_options(const NcclPick& pick) const;

 private:
  Options given_;
  std::string algo_;
  std::optional<Protocol> proto_;
};

}  // namespace ssim::alg
