// What the executor's evaluations (the dataflow pass, the event run, the facade) share: the
// checks of a run's inputs and of each transfer, and the summary of an IterationResult from
// per-rank finish times and bytes moved. Internal to sim/ (executor.hpp is the API).
#pragma once

#include <cstdint>
#include <span>
#include <vector>

#include "algorithms/schedule.hpp"
#include "common/units.hpp"
#include "sim/executor.hpp"
#include "sim/network.hpp"
#include "topologies/topology.hpp"

namespace ssim::sim {

// Whether transfer t is well formed for `ranks` ranks and `chunks` chunks (distinct ends in
// range, a chunk range inside the buffer): the inline test of the hot loops, which call
// check_transfer only when it fails.
inline bool transfer_in_range(const alg::Transfer& t, std::uint32_t ranks, std::int32_t chunks) {
  return static_cast<std::uint32_t>(t.src) < ranks && static_cast<std::uint32_t>(t.dst) < ranks &&
         t.src != t.dst && 0 <= t.chunk_begin && t.chunk_begin <= t.chunk_end &&
         t.chunk_end <= chunks;
}
// The InternalError of a transfer that is not well formed (out of line: the loops' cold path).
[[noreturn, gnu::cold]] void transfer_out_of_range(const alg::Transfer& t, int ranks, int chunks);
// Throws when transfer t is not well formed.
inline void check_transfer(const alg::Transfer& t, int ranks, int chunks) {
  if (!transfer_in_range(t, static_cast<std::uint32_t>(ranks), chunks)) [[unlikely]]
    transfer_out_of_range(t, ranks, chunks);
}
// The InputError of a round with in-network reductions in a traced or timed-line run (both
// record point-to-point transfers only); round_stamp is 1 + the round's index.
[[noreturn]] void untraceable_switch_reduces(std::uint32_t round_stamp);
// One finite arrival per rank, and a rank map (when given) that is a permutation.
void check_inputs(int ranks, std::span<const Seconds> arrival, const RunOptions& options);

// r.link_utilization from r.link_bytes and r.completion.
void link_utilization(IterationResult& r, const topo::Topology& topology);
// Fills r's summary fields (arrival, finish, completion, bandwidths, link bytes and utilization)
// from per-physical-rank finish times and per-route byte counts; r.ranks and r.bytes are set.
void finalize(IterationResult& r, std::span<const Seconds> arrival, std::vector<double> finish,
              const std::vector<std::uint64_t>& route_bytes, const RouteCache& routes);

}  // namespace ssim::sim
