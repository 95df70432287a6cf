#include "sim/run_support.hpp"

#include <algorithm>
#include <cmath>
#include <string>

#include "common/error.hpp"

namespace ssim::sim {

void transfer_out_of_range(const alg::Transfer& t, int ranks, int chunks) {
  check_failed(__FILE__, __LINE__, "transfer_in_range(t, ranks, chunks)",
               "schedule transfer out of range: " + std::to_string(t.src) + " -> " +
                   std::to_string(t.dst) + ", chunks [" + std::to_string(t.chunk_begin) + ", " +
                   std::to_string(t.chunk_end) + ") of " + std::to_string(chunks) + ", " +
                   std::to_string(ranks) + " ranks");
}

void untraceable_switch_reduces(std::uint32_t round_stamp) {
  throw InputError("round " + std::to_string(round_stamp - 1) +
                   " has in-network reductions, which traces and timelines do not record "
                   "(they hold point-to-point transfers)");
}

void check_inputs(int n, std::span<const Seconds> arrival, const RunOptions& options) {
  SSIM_CHECK(static_cast<int>(arrival.size()) == n, "one arrival time per rank needed");
  for (Seconds a : arrival) SSIM_CHECK(std::isfinite(a.value), "arrival times must be finite");
  if (!options.rank_map.empty()) {
    SSIM_CHECK(static_cast<int>(options.rank_map.size()) == n, "rank_map needs one entry per rank");
    std::vector<char> seen(static_cast<std::size_t>(n), 0);
    for (int p : options.rank_map) {
      SSIM_CHECK(p >= 0 && p < n && !seen[p], "rank_map must be a permutation");
      seen[p] = 1;
    }
  }
}

// link_utilization from link_bytes and completion.
void link_utilization(IterationResult& r, const topo::Topology& topology) {
  r.link_utilization.assign(r.link_bytes.size(), 0.0);
  if (r.completion.value > 0) {
    for (std::size_t l = 0; l < r.link_bytes.size(); ++l) {
      const double capacity =
          topology.link(static_cast<int>(l)).bandwidth.value * r.completion.value;
      r.link_utilization[l] = static_cast<double>(r.link_bytes[l]) / capacity;
    }
  }
}

// Fills the summary fields from per-physical-rank finish times and per-route byte counts.
void finalize(IterationResult& r, std::span<const Seconds> arrival, std::vector<double> finish,
              const std::vector<std::uint64_t>& route_bytes, const RouteCache& routes) {
  const int n = r.ranks;
  r.arrival.assign(arrival.begin(), arrival.end());
  r.finish.resize(static_cast<std::size_t>(n));
  double first = arrival[0].value, last = arrival[0].value, end = finish[0];
  for (int i = 0; i < n; ++i) {
    r.finish[i] = Seconds{finish[i]};
    first = std::min(first, arrival[i].value);
    last = std::max(last, arrival[i].value);
    end = std::max(end, finish[i]);
  }
  r.first_arrival = Seconds{first};
  r.last_arrival = Seconds{last};
  r.last_finish = Seconds{end};
  r.completion = Seconds{end - first};
  r.after_last_arrival = Seconds{end - last};
  const double bytes = static_cast<double>(r.bytes);
  r.algbw =
      BytesPerSecond{r.after_last_arrival.value > 0 ? bytes / r.after_last_arrival.value : 0.0};
  r.busbw = BytesPerSecond{r.algbw.value * 2.0 * (n - 1) / n};

  const topo::Topology& topology = routes.topology();
  r.link_bytes.assign(static_cast<std::size_t>(topology.link_count()), 0);
  routes.add_link_bytes(route_bytes, r.link_bytes);
  link_utilization(r, topology);
}

}  // namespace ssim::sim
