// StragglAR phase-2 schedules found by search where stragglar.cpp's constructions miss the
// lower bound n-2+ceil(log2 n): today n = 33 (37 rounds; the doubling construction gives up
// there and the greedy needs 38). Each is data with its provenance: the file that holds it
// names the stragglar_sat command (algorithms/tools) that wrote it, and the generator's output
// goes through the verifier in the tests like every other n.
//
//   if (const Phase2Template* t = stragglar_phase2_template(33)) ...  // t->rounds == 37
//
// Compact form: rounds 0..base and n-1..rounds-1 are listed, each as its copy count followed
// by (src, dst, chunk) per copy; round t in base+1..n-2 is round `base` with every rank v
// (never the straggler there) renamed (v + t-base) mod (n-1) and chunk c renamed c + t-base.
// The straggler exchanges (round r <= n-2: rank r <-> straggler n-1 on chunk r) are implied.
#pragma once

#include <cstdint>
#include <span>

namespace ssim::alg {

struct Phase2Template {
  int n = 0;
  int rounds = 0;
  int base = 0;
  std::span<const std::int16_t> data;
};

// The template for n ranks, or nullptr when there is none.
const Phase2Template* stragglar_phase2_template(int n);

}  // namespace ssim::alg
