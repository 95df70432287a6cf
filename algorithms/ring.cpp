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
void append_ring_reduce_scatter(Schedule& s, std::span<const int> members, int first_chunk,
                                std::string_view phase) {
  const int m = static_cast<int>(members.size());
  for (int k = 0; k + 1 < m; ++k) {
    Round& round = s.add_round(std::string(phase));
    round.transfers.reserve(static_cast<std::size_t>(m));
    for (int i = 0; i < m; ++i) {
      const int c = first_chunk + ((i - k - 1) % m + m) % m;
      round.add(members[i], members[(i + 1) % m], c, c + 1, Op::reduce);
    }
  }
}

// In step k member i forwards chunk (i - k) mod m, which it completed (k = 0) or received.
void append_ring_allgather(Schedule& s, std::span<const int> members, int first_chunk,
                           std::string_view phase) {
  const int m = static_cast<int>(members.size());
  for (int k = 0; k + 1 < m; ++k) {
    Round& round = s.add_round(std::string(phase));
    round.transfers.reserve(static_cast<std::size_t>(m));
    for (int i = 0; i < m; ++i) {
      const int c = first_chunk + ((i - k) % m + m) % m;
      round.add(members[i], members[(i + 1) % m], c, c + 1, Op::copy);
    }
  }
}

namespace {

Schedule make_ring(int n, const Options&) {
  Schedule s = Schedule::make(Collective::allreduce, "ring", n, n);
  s.rounds.reserve(static_cast<std::size_t>(2 * (n - 1)));
  const std::vector<int> all = iota_ranks(n);
  append_ring_reduce_scatter(s, all, 0, "reduce-scatter");
  append_ring_allgather(s, all, 0, "allgather");
  return s;
}

}  // namespace

AlgorithmInfo ring_info() {
  return AlgorithmInfo{
      .name = "ring",
      .description = "ring reduce-scatter then allgather: n chunks, 2(n-1) rounds",
      .supported_ranks = "n >= 2",
      .supports_ranks = [](int n) { return n >= 2; },
      .options = {},
      .generate = make_ring,
      .cost = [](int n, double bytes, const CostParams& p,
                 const Options&) { return ring_cost(n, bytes, p); },
      .size =
          [](int n, const Options&) {
            const double r = n;
            return ScheduleSize{r, 2 * (r - 1), 2 * r * (r - 1)};
          },
  };
}

}  // namespace ssim::alg
