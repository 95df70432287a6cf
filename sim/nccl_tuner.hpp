// NCCL's choice of algorithm, protocol and channel count for an AllReduce of a size on a machine,
// made the way NCCL makes it: its own cost estimate (NVIDIA/nccl src/graph/tuning.cc,
// ncclTopoTuneModel and ncclTopoGetAlgoTime; src/enqueue.cc, topoGetAlgoInfo) over the candidate
// algorithm x protocol pairs, the cheapest wins, then its channel count is cut for small sizes.
// This is NCCL's estimate, not the simulator's time: the simulator then runs what was chosen.
//
//   const alg::NcclRequest request(topology.gpu_count(), options);   // algo=, proto=, ...
//   NcclChoice c = nccl_choose(topology, Bytes{1 << 20}, request, config.pipelined_kernels);
//   alg::Options o = request.schedule_options(c);   // algo, proto and channels filled in
//
// It lives in sim/ because it needs the machine (the topology's bandwidths, nodes and whether a
// switch reduces); the algorithm layer carries the names and reads the options
// (algorithms/nccl.cpp, `nccl`; algorithms/nccl_options.hpp), so the tuner takes and returns
// typed values.
// run_simulation calls it for the `nccl` algorithm before it generates the schedule, so
// simulate, run, advise and train all get NCCL's choice.
//
// The machine as NCCL's model sees it (docs/algorithms.md "NCCL's choice"): Hopper GPUs on
// NVLink, an Intel host (network overhead 1 us), InfiniBand (no extra inter-node latency), the
// graph's bandwidth per GPU the NVLink route's on one node and the smaller of the NVLink and the
// NIC route's across nodes (one NIC per GPU), NCCL's channel count 16 on one node and
// 2 x min(G, 8) across nodes (one ring per rail, duplicated), NVLS with 16 channels; CollNet
// (Direct and Chain, Simple only) where several nodes of at most 8 GPUs have every rail's
// fabric switch reducing (SHARP), its graphs' bandwidth min(NVLink, 2 x the node's NICs,
// min(G, 8) x min(48 GB/s, 2 x a NIC)) (docs/algorithms.md "CollNet").
#pragma once

#include <string>
#include <vector>

#include "algorithms/nccl_options.hpp"
#include "algorithms/protocol.hpp"
#include "common/units.hpp"
#include "topologies/topology.hpp"

namespace ssim::sim {

// One candidate's estimate (tuning.cc: latency in us, bandwidth in GB/s as NCCL keeps them).
struct NcclEstimate {
  std::string algo;  // ring, tree, nvls, nvls_tree, collnet_direct, collnet_chain
  alg::Protocol proto = alg::Protocol::simple;
  double latency_us = 0;
  double bandwidth_gbs = 0;  // algorithm bandwidth after NCCL's refinements; 0: not available
  double time_us = -1;       // NCCL's estimate; < 0: not available
};

// The pick (algo, proto, channels, the machine's node size and a pipeline depth: what
// NcclRequest::schedule_options needs) and NCCL's estimates.
struct NcclChoice : alg::NcclPick {
  double estimate_us = 0;
  std::vector<NcclEstimate> table;  // every candidate considered
};

// Throws InputError (naming the option and what is allowed on this machine) for algo=nvls
// where no switch reduces or across nodes, algo=collnet_direct|collnet_chain on one node, where
// a rail's fabric switch does not reduce or with more than 8 GPUs per node (Direct: also with
// one), and for a forced pair NCCL would not run; then for a forced channel count outside 1..64
// (NcclRequest::channels_or). `request` is for topology.gpu_count() ranks. The pipeline depth of
// nvls_tree (unless the request gives one): NCCL's own chunking where the run's steps are
// pipelined (`pipelined_steps`: a slice is one step of every channel, NCCL_STEPS of them in
// flight), else the depth of least estimated time (the per-round rule pays every slice's
// latency); nvls and collnet_direct take the depth of least estimated time either way.
NcclChoice nccl_choose(const topo::Topology& topology, Bytes size, const alg::NcclRequest& request,
                       bool pipelined_steps);

// One of NCCL's channels' bandwidth on this machine, in bytes per second on the wire: the graph's
// per-channel `bw` of tuning.cc, whose bus bandwidth is nChannels x bw (the machine above:
// the graph's bandwidth over NCCL's channel count). A channel is one CUDA block moving its
// share; NCCL's model never lets it go faster, whatever the links allow. Infinity for one rank.
double nccl_channel_bandwidth(const topo::Topology& topology);
// LL's bus bandwidth at most, in bytes per second (tuning.cc's llMaxBws, Hopper: 141 GB/s on
// one node; 39 GB/s on 2 nodes and 20.4 GB/s on more, Intel hosts), which NCCL's model gives
// Ring and Tree LL whatever their channels: C channels share it.
double nccl_ll_max_bandwidth(const topo::Topology& topology);
// NCCL_ALGO=NVLSTree's algorithm bandwidth at most, in bytes per second: tuning.cc caps its bus
// bandwidth at the NVLS graph's channels (its heads, one per GPU of a node, at most 32) x
// perChMaxNVLSTreeBw (Hopper: 57.7 GB/s on 2 nodes, 45.5 on more), and a ring-like AllReduce's
// algorithm bandwidth is its bus bandwidth x n / (2(n-1)). On 2 nodes of 8 H100: 8 x 57.7 = 461.6
// GB/s of bus bandwidth, 246 GB/s of algorithm bandwidth for 16 ranks (NCCL measured 467 and 249
// at 8 GiB, table 11). Infinity on one node or with one GPU per node.
double nccl_nvls_tree_bandwidth(const topo::Topology& topology);

}  // namespace ssim::sim
