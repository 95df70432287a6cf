// The shared-device machine model: ranks that share one device, as the GPU backend's
// single-GPU (or, with copy_factor 0, direct) transport runs them.
//
//   IterationResult r = run_shared_device(rounds, device, Bytes{1 << 28}, arrival);
//
// The topology kind shared_device (topo::SharedDevice) selects it: the executor
// (executor.hpp) hands such a topology's runs here, whatever the network kind.
//
// Semantics. A stream per rank runs its operations strictly one after another, starting at
// the rank's arrival. Per round k it takes part in (sends or receives):
//  - one copy per receive, in the round's order: it waits until the sender has reached round
//    k (finished all its operations of earlier rounds), then pays copy_latency, then moves
//    copy_factor x its bytes through the device memory;
//  - one apply: it waits until the rank's copies of round k are done and, for every rank this
//    rank sends to in round k, until that receiver's copies of round k are done (the sender
//    changes its data only once it has been copied); then pays apply_latency and moves
//    reduce_factor x the bytes it reduces plus apply_copy_factor x the bytes it copies. A rank
//    that only sends still has this step (its latency: the round's kernel launch and stamp).
// Direct transport (copy_factor 0, `--transport direct`: one fused kernel per rank and round
// reads the senders' data where it lies): no copies into scratch, except a receive whose
// sender writes an overlapping range in the same round, which is staged (a copy of
// apply_copy_factor x its bytes, paying copy_latency; the sender's apply waits for it). The
// apply waits until each sender it reads directly has finished its earlier rounds, and a rank's
// first operation of its next round waits until every apply that read its data directly in its
// previous round is done (the sender may not overwrite what is still being read).
//
// Costs. Each operation, once it may start, pays its latency (copy_latency or apply_latency,
// not shared), then launch_time of the device's launch capacity, which the operations
// launching at the same time share equally (k at once: k x launch_time each), then moves its
// bytes. The device memory is one resource of memory_bandwidth bytes per second: the
// operations moving bytes at a time share it max-min fairly, each capped at
// operation_bandwidth. All operations have the same cap, so the fair share is min(cap,
// memory_bandwidth / active). (How many operations launch or move bytes at once grows with the
// rank count: that is how the model follows more ranks on one device with the same
// parameters.) When the schedule's chunk is not a multiple of 16 bytes, the bytes of every
// operation of the run count unaligned_factor times, a whole-buffer range included (the GPU
// copies whole chunks of one odd stride); copy_factor 0 (direct) counts only a range whose own
// offset or length is not a multiple of 16 bytes (an empirical factor: docs/calibration.md,
// "Why the odd-stride factor").
//
// Exactness and size. Every operation's bytes move as a fluid, so a run is an exact event
// simulation of this model: O(log ops) per operation, memory O(operations of the materialized
// schedule).
//
// Results as the executor's (executor.hpp): finish[r] is the end of rank r's last operation
// (its arrival if it has none); link_bytes[l] counts, on rank r's link to the memory vertex
// (make_shared_device's star), the memory bytes of rank r's operations, and link_utilization
// divides by that link's bandwidth x completion. `transfers` counts the schedule's transfers,
// `events` the operations run.
//
// Limits: what the GPU does that this model does not (apply waves, start stamps, the L2
// cache) is in docs/calibration.md, "The shared-device model: measured, tried, not kept".
#pragma once

#include <span>

#include "common/units.hpp"
#include "sim/executor.hpp"
#include "topologies/topology.hpp"

namespace ssim::sim {

// `topology` must be a shared_device topology (topology.shared_device set) with as many GPUs
// as the rounds' ranks. RunOptions: rank_map is honoured; record_timeline and trace are not
// supported (InputError); threads and use_event_engine change nothing.
IterationResult run_shared_device(RoundSource& rounds, const topo::Topology& topology, Bytes bytes,
                                  std::span<const Seconds> arrival, const RunOptions& options = {});

}  // namespace ssim::sim
