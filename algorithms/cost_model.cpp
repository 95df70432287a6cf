#include "algorithms/cost_model.hpp"

namespace ssim::alg {

// 2(n-1) rounds of one chunk of s/n bytes; the n-1 reduce-scatter rounds also reduce it.
double ring_cost(int n, double bytes, const CostParams& p) {
  const double chunk = bytes / n;
  return 2.0 * (n - 1) * (p.alpha + chunk * p.beta) + (n - 1) * chunk * p.gamma;
}

// m-1 rounds of one chunk of s/m bytes, each reduced at the receiver.
double ring_reduce_scatter_cost(int m, double bytes, const CostParams& p) {
  const double chunk = bytes / m;
  return (m - 1) * (p.alpha + chunk * p.beta + chunk * p.gamma);
}

}  // namespace ssim::alg
