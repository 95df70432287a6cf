// The machine reference of bench/scale.sh: a fixed amount of work of the kind the executor does
// (per-rank arrays of times read, compared, added and written in schedule order, 64-bit byte
// counters, a binary heap of timed events), so that a scale figure can be given as a ratio to
// this program's CPU time measured in the same run. It reads nothing, depends on no part of
// stragglesim and prints one checksum (so that no work is optimized away), the same on every
// machine. Built by bench/scale.sh with the compiler and flags it is given.
//
//   c++ -O2 -std=c++20 bench/scale_reference.cpp -o scale_reference && ./scale_reference
#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <functional>
#include <queue>
#include <utility>
#include <vector>

namespace {

// A dataflow pass over `rounds` rounds of n transfers each: transfer i of round k goes from
// rank i to rank (i + stride_k) mod n, the strides of a ring and of recursive doubling.
double dataflow(std::size_t n, int rounds, std::uint64_t& bytes_out) {
  std::vector<double> ready(n), send_free(n), recv_free(n), done(n), latency(n), inverse(n);
  std::vector<std::uint64_t> bytes(n, 0);
  for (std::size_t r = 0; r < n; ++r) {
    ready[r] = 1e-9 * static_cast<double>(r % 7);
    latency[r] = 1e-6 * static_cast<double>(1 + r % 3);
    inverse[r] = 1.0 / (1e9 * static_cast<double>(1 + r % 5));
  }
  for (int k = 0; k < rounds; ++k) {
    const std::size_t stride = k % 2 == 0 ? 1 : (std::size_t{1} << (k % 13)) % n + 1;
    for (std::size_t s = 0; s < n; ++s) send_free[s] = recv_free[s] = done[s] = ready[s];
    for (std::size_t s = 0; s < n; ++s) {
      const std::size_t d = (s + stride) % n;
      const std::uint64_t m = 4096 + (s ^ static_cast<std::size_t>(k)) % 61;
      bytes[s] += m;
      const double start = std::max(send_free[s], recv_free[d]);
      const double end = start + (latency[s] + static_cast<double>(m) * inverse[d]);
      send_free[s] = recv_free[d] = end;
      done[s] = std::max(done[s], end);
      done[d] = std::max(done[d], end + 1e-12 * static_cast<double>(m));
    }
    for (std::size_t r = 0; r < n; ++r) ready[r] = done[r];
  }
  std::uint64_t total = 0;
  for (std::uint64_t b : bytes) total += b;
  bytes_out += total;
  return *std::max_element(ready.begin(), ready.end());
}

// An event queue: `events` pops, each pushing a successor at a pseudo-random later time.
double events(std::size_t live, std::size_t total) {
  using Event = std::pair<double, std::uint64_t>;
  std::priority_queue<Event, std::vector<Event>, std::greater<>> queue;
  std::uint64_t x = 0x9E3779B97F4A7C15ull;
  auto next = [&x] {  // xorshift64
    x ^= x << 13;
    x ^= x >> 7;
    x ^= x << 17;
    return x;
  };
  for (std::size_t i = 0; i < live; ++i) queue.emplace(static_cast<double>(next() % 1000), i);
  double now = 0;
  for (std::size_t i = 0; i < total; ++i) {
    const auto [t, tag] = queue.top();
    queue.pop();
    now = t;
    queue.emplace(t + static_cast<double>(1 + (next() ^ tag) % 1000), tag);
  }
  return now;
}

}  // namespace

int main() {
  std::uint64_t bytes = 0;
  // 16384 ranks x 2000 rounds (32.8 M transfers) and 4 M events over 65536 live ones.
  const double t = dataflow(16384, 2000, bytes);
  const double e = events(65536, 4'000'000);
  std::printf("reference checksum %.9e %llu %.6e\n", t, static_cast<unsigned long long>(bytes), e);
  return 0;
}
