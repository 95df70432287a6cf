// Test support: the time a schedule takes under the executor's alpha-beta semantics on a
// non-blocking network (every transfer costs alpha + bytes * beta, plus gamma * bytes at a
// reducing receiver), evaluated directly from the rounds. Used to check the closed forms
// of cost_model against the schedules actually generated; the simulator is checked
// against the same closed forms.
//
// Semantics (DESIGN.md): a rank starts at its arrival time; it reaches round k when all
// its transfers of earlier rounds are done (a receive is done after its reduction); a
// transfer starts when both ends have reached its round and the sender's send port and
// the receiver's receive port are free; within a round each port serves its transfers
// in the order they appear in the round.
#pragma once

#include <algorithm>
#include <vector>

#include "algorithms/cost_model.hpp"
#include "algorithms/schedule.hpp"

namespace ssim::alg::testing {

struct Timing {
  std::vector<double> finish;  // per rank
  double makespan = 0;         // last finish
};

inline Timing evaluate_rounds(const Schedule& s, double bytes, const CostParams& p,
                              std::vector<double> arrival = {}) {
  const int n = s.ranks;
  if (arrival.empty()) arrival.assign(n, 0.0);
  std::vector<double> ready = arrival, send_free(n), recv_free(n), done(n);
  for (const Round& round : s.rounds) {
    send_free = ready;
    recv_free = ready;
    done = ready;
    for (const Transfer& t : round.transfers) {
      const ByteRange br = chunk_bytes(static_cast<std::uint64_t>(bytes), s.chunks, t.chunk_begin, t.chunk_end);
      const double m = static_cast<double>(br.length);
      const double start = std::max(send_free[t.src], recv_free[t.dst]);
      const double end = start + p.alpha + m * p.beta;
      send_free[t.src] = end;
      recv_free[t.dst] = end;
      done[t.src] = std::max(done[t.src], end);
      done[t.dst] = std::max(done[t.dst], end + (t.op == Op::reduce ? p.gamma * m : 0.0));
    }
    ready = done;
  }
  Timing out;
  out.finish = ready;
  out.makespan = *std::max_element(ready.begin(), ready.end());
  return out;
}

}  // namespace ssim::alg::testing
