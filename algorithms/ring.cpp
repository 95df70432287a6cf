// Ring AllReduce: n chunks, a ReduceScatter of n-1 rounds followed by an AllGather of n-1
// rounds; in every round each rank sends one chunk to its right neighbour.
#include <numeric>

#include "algorithms/generators.hpp"

namespace ssim::alg {

std::vector<int> iota_ranks(int n) {
  std::vector<int> v(static_cast<std::size_t>(n));
  std::iota(v.begin(), v.end(), 0);
  return v;
}

// In step k member i sends the chunk it will own k+1 steps "later" around the ring:
// chunk (i - k - 1) mod m. Chunk c starts at member c+1 and reaches member c after m-1 steps.
RoundStream ring_reduce_scatter_rounds(std::vector<int> members, int first_chunk,
                                       std::string phase) {
  const int m = static_cast<int>(members.size());
  Round round{std::move(phase), {}, {}};
  round.transfers.resize(static_cast<std::size_t>(m));
  // Senders, receivers and the op are the same in every step: only the chunks are rewritten.
  for (int i = 0; i < m; ++i)
    round.transfers[i] = Transfer{members[i], members[i + 1 == m ? 0 : i + 1], 0, 0, Op::reduce};
  for (int k = 0; k + 1 < m; ++k) {
    int c = ((-k - 1) % m + m) % m;  // member 0's chunk, minus first_chunk
    for (Transfer& t : round.transfers) {
      t.chunk_begin = first_chunk + c;
      t.chunk_end = first_chunk + c + 1;
      c = c + 1 == m ? 0 : c + 1;
    }
    co_yield round;
  }
}

// In step k member i forwards chunk (i - k) mod m, which it completed (k = 0) or received.
RoundStream ring_allgather_rounds(std::vector<int> members, int first_chunk, std::string phase) {
  const int m = static_cast<int>(members.size());
  Round round{std::move(phase), {}, {}};
  round.transfers.resize(static_cast<std::size_t>(m));
  for (int i = 0; i < m; ++i)
    round.transfers[i] = Transfer{members[i], members[i + 1 == m ? 0 : i + 1], 0, 0, Op::copy};
  for (int k = 0; k + 1 < m; ++k) {
    int c = ((-k) % m + m) % m;  // member 0's chunk, minus first_chunk
    for (Transfer& t : round.transfers) {
      t.chunk_begin = first_chunk + c;
      t.chunk_end = first_chunk + c + 1;
      c = c + 1 == m ? 0 : c + 1;
    }
    co_yield round;
  }
}

void append_ring_reduce_scatter(Schedule& s, std::span<const int> members, int first_chunk,
                                std::string_view phase) {
  append_rounds(s, ring_reduce_scatter_rounds(std::vector<int>(members.begin(), members.end()),
                                              first_chunk, std::string(phase)));
}

void append_ring_allgather(Schedule& s, std::span<const int> members, int first_chunk,
                           std::string_view phase) {
  append_rounds(s, ring_allgather_rounds(std::vector<int>(members.begin(), members.end()),
                                         first_chunk, std::string(phase)));
}

namespace {

RoundStream ring_rounds(int n) {
  RoundStream rs = ring_reduce_scatter_rounds(iota_ranks(n), 0, "reduce-scatter");
  while (const Round* r = rs.next()) co_yield *r;
  RoundStream ag = ring_allgather_rounds(iota_ranks(n), 0, "allgather");
  while (const Round* r = ag.next()) co_yield *r;
}

GeneratedRounds make_ring(int n, const Options&) {
  return {Schedule::make(Collective::allreduce, "ring", n, n), ring_rounds(n), std::nullopt};
}

}  // namespace

AlgorithmInfo ring_info() {
  return AlgorithmInfo{
      .name = "ring",
      .description = "ring reduce-scatter then allgather: n chunks, 2(n-1) rounds",
      .supported_ranks = "n >= 2",
      .supports_ranks = [](int n) { return n >= 2; },
      .options = {},
      .rounds = make_ring,
      .cost = [](int n, double bytes, const CostParams& p,
                 const Options&) { return ring_cost(n, bytes, p); },
      .size =
          [](int n, const Options&) {
            const double r = n;
            return ScheduleSize{r, 2 * (r - 1), 2 * r * (r - 1), r, r};
          },
  };
}

}  // namespace ssim::alg
