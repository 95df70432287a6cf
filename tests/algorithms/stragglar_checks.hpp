// Shared check of the StragglAR tests: the generated schedule for n ranks passes the verifier
// with the straggler at each of the given ranks, has n-2 ring rounds + `phase2_rounds`, and
// every rank sends and receives at most one chunk per round.
#pragma once

#include <gtest/gtest.h>

#include <initializer_list>
#include <string>

#include "algorithms/registry.hpp"
#include "algorithms/verifier.hpp"

namespace ssim::alg {

inline void expect_stragglar_verified(int n, std::initializer_list<int> stragglers,
                                      std::size_t phase2_rounds) {
  for (int k : stragglers) {
    Options o;
    o.set("straggler", std::to_string(k));
    const Schedule s = generate("stragglar", n, o);
    const VerifyResult v = verify(s);
    ASSERT_TRUE(v.ok()) << "n=" << n << " straggler " << k << ": " << v.error->to_string();
    EXPECT_EQ(s.rounds.size(), static_cast<std::size_t>(n - 2) + phase2_rounds) << n;
    EXPECT_EQ(v.summary.max_sends_per_rank_round, 1) << n;
    EXPECT_EQ(v.summary.max_receives_per_rank_round, 1) << n;
  }
}

}  // namespace ssim::alg
