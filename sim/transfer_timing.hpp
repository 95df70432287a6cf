// The timing of one point-to-point transfer in the alpha-beta dataflow pass, written once for
// every loop of the pass (sequential or parallel, single-switch or general routes, recorded or
// not), as NCCL writes its ring once against its protocol primitives. Internal to sim/.
//
//   TransferTimes t = time_transfer(start, routes.route(index), bytes, Op::reduce, gamma);
//   // t.end = start + latency + bytes / bandwidth; t.reduced = t.end + gamma * bytes
//
// `start` is when the transfer may begin (both ends in the round, both ports free: the caller's
// rule); everything after that is here, including what the schedule's protocol costs (NCCL's
// Simple/LL/LL128, sim/protocol.hpp: a latency factor by the route's class, wire bytes per data
// byte, a channel's bandwidth cap), so that every loop of the pass takes it at once.
#pragma once

#include <algorithm>
#include <cstddef>

#include "algorithms/schedule.hpp"
#include "sim/network.hpp"
#include "sim/protocol.hpp"

namespace ssim::sim {

// What the alpha-beta model needs of a route (CachedRoute has the same two fields).
struct AlphaBetaTerms {
  double latency = 0;            // seconds
  double inverse_bandwidth = 0;  // seconds per byte
};
// alphabeta_time (network.hpp) for bare terms: the same formula, so that the pass and the event
// engine's alpha-beta model agree to the last bit (tests/sim/executor_test.cpp compares them).
inline double alphabeta_time(AlphaBetaTerms route, double bytes) {
  return route.latency + bytes * route.inverse_bandwidth;
}

struct TransferTimes {
  double start = 0;    // the transfer began
  double end = 0;      // its last byte arrived; its ports are free again
  double reduced = 0;  // the receiver has applied it: end, plus gamma * bytes for a reduce
};

// A transfer of `bytes` bytes on `route` (a CachedRoute or AlphaBetaTerms) that begins at
// `start`; a reduce costs the receiver `gamma` seconds per byte after the data has arrived.
// `protocol` (nullptr or inactive: none, the plain alpha-beta time bit for bit) is the run's
// protocol; `src` and `dst` are the physical ranks (whether the route crosses nodes):
//   end = start + f latency + bytes max(w / bandwidth, 1 / cap)   (sim/protocol.hpp).
template <class Route>
inline TransferTimes time_transfer(double start, const Route& route, double bytes, alg::Op op,
                                   double gamma, const ProtocolTiming* protocol = nullptr,
                                   std::size_t src = 0, std::size_t dst = 0) {
  double end = 0;
  if (protocol == nullptr || !protocol->active) [[likely]] {
    end = start + alphabeta_time(route, bytes);
  } else {
    end = start + alphabeta_time(AlphaBetaTerms{protocol->latency(route.latency, src, dst),
                                                protocol->inverse_bandwidth(route.inverse_bandwidth, src, dst)},
                                 bytes);
  }
  return {start, end, op == alg::Op::reduce ? end + gamma * bytes : end};
}

// The alpha-beta terms of a single-switch topology's routes (StarRoutes) from per-rank arrays:
// latency (0.0 + up latency) + down latency, summed in StarRoutes::route's order; inverse
// bandwidth max(1 / up, 1 / down), which equals StarRoutes::route's 1 / min(up, down) exactly
// (a correctly rounded division is monotone), so no division is left per transfer.
struct StarTerms {
  const double* up_latency = nullptr;  // per rank: 0.0 + the up link's latency
  const double* down_latency = nullptr;
  const double* up_inverse = nullptr;  // per rank: 1 / the up link's bandwidth
  const double* down_inverse = nullptr;

  AlphaBetaTerms at(std::size_t src, std::size_t dst) const {
    return {up_latency[src] + down_latency[dst], std::max(up_inverse[src], down_inverse[dst])};
  }
};

}  // namespace ssim::sim
