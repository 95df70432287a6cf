// StragglAR phase 2 for n = 2^M + 1 ranks in the lower bound n-2+ceil(log2 n) = m+M rounds
// (m = n-1 = 2^M chunk owners), where the doubling construction of stragglar.cpp gives up
// (n = 1025, 2049, ...). A cyclic "timeline" construction (algorithms/README.md, "The bound
// at n = 2^M + 1"):
//
//   std::optional<Phase2Timeline> p = stragglar_timeline(1025);   // nullopt: not found
//   // round t < m: for every age k with c = t-k >= 0, copies (c + send[k][i]) mod m ->
//   //   (c + recv[k][i]) mod m of chunk c; round m + j: p->endgame[j] as listed.
//
// Rounds 0..m-1 repeat one pattern shifted by the round: chunk c, released in round c, gets
// its copies in rounds c+1..c+A (A = M+2 ages) from and to the same rank offsets relative to
// c for every c. Such a pattern is one rank's timeline (what it sends and receives at each
// time relative to its exchange round), built by a seeded randomized search over a reduced
// model (two "tracks" of held chunks) with an exact send assignment by flow. The last M
// rounds (no more exchanges; the straggler helps) are planned one round at a time by a
// min-cost max-flow: as many copies as ports allow, preferring the chunks with the fewest
// holders, ranks alike spread over different chunks. Deterministic; pure data (no timing),
// like every generator. The caller checks the rounds as it applies them.
#pragma once

#include <array>
#include <optional>
#include <vector>

namespace ssim::alg {

struct Phase2Timeline {
  int n = 0;     // ranks: 2^M chunk owners and the straggler n-1
  int ages = 0;  // A = M+2: chunk c gets its cyclic copies in rounds c+1..c+A
  // Index k = 1..ages (0 unused): rank offsets (mod n-1) relative to the chunk that send /
  // receive it at age k (round c+k); send[k][i] sends to recv[k][i].
  std::vector<std::vector<int>> send, recv;
  // Rounds n-1 .. n-2+M: copies (src, dst, chunk); src may be the straggler n-1.
  std::vector<std::vector<std::array<int, 3>>> endgame;
};

// The construction for n = 2^M + 1 with M >= 4, or nullopt (other n, or no timeline found
// within its fixed number of seeded tries).
std::optional<Phase2Timeline> stragglar_timeline(int n);

}  // namespace ssim::alg
