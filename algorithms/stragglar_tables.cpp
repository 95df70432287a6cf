#include "algorithms/stragglar_tables.hpp"

namespace ssim::alg {
namespace {

// algorithms/README.md ("The bound is attainable at n = 33") says how this was found.
constexpr std::int16_t kN33[] = {
#include "algorithms/stragglar_n33.inc"
};

constexpr Phase2Template kTemplates[] = {{33, 37, 7, kN33}};

}  // namespace

const Phase2Template* stragglar_phase2_template(int n) {
  for (const Phase2Template& t : kTemplates) {
    if (t.n == n) return &t;
  }
  return nullptr;
}

}  // namespace ssim::alg
