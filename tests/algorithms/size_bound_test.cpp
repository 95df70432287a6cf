// AlgorithmInfo::size: the bounds the CLI uses to refuse a schedule that would not fit in
// memory must hold for what generate() returns, and be tight enough to not refuse what fits.
#include <gtest/gtest.h>

#include <algorithm>
#include <set>
#include <utility>

#include "algorithms/registry.hpp"

namespace ssim::alg {
namespace {

void check(const AlgorithmInfo& info, int n, const Options& o) {
  const Schedule s = generate(info.name, n, o);
  const ScheduleSize b = info.size(n, o);
  const std::string where = info.name + " n=" + std::to_string(n);
  EXPECT_LE(s.chunks, b.chunks) << where;
  EXPECT_LE(static_cast<double>(s.rounds.size()), b.rounds) << where;
  const double transfers = static_cast<double>(s.transfer_count());
  EXPECT_LE(transfers, b.transfers) << where;
  std::size_t largest = 0;
  std::set<std::pair<int, int>> pairs;
  for (const Round& r : s.rounds) {
    largest = std::max(largest, r.transfers.size());
    for (const Transfer& t : r.transfers) pairs.insert({t.src, t.dst});
  }
  EXPECT_LE(static_cast<double>(largest), b.largest_round) << where;
  EXPECT_LE(static_cast<double>(pairs.size()), b.pairs) << where;
  // Not wildly pessimistic: the refusal message quotes this figure.
  EXPECT_LE(b.transfers, 8 * transfers + 64) << where;
}

TEST(SizeBound, HoldsForEveryAlgorithmAndRankCount) {
  for (const AlgorithmInfo& info : algorithms()) {
    ASSERT_TRUE(info.size) << info.name << " has no size bound";
    for (int n : {2,  3,  4,  5,  6,  7,   8,   9,   12,  15,  16,  17, 31,
                  32, 33, 63, 64, 65, 100, 127, 128, 129, 255, 256, 257}) {
      if (!info.supports_ranks(n)) continue;
      if (info.name == "tree" || info.name == "dbtree" || info.name == "straggler_tree") {
        for (int seg : {2, 4, 16, 64}) check(info, n, Options({{"segments", std::to_string(seg)}}));
      } else if (info.name == "nccl") {
        // Without algo the bound covers the channels NCCL's choice may add (up to 16), which
        // generate() without a machine does not: check what it generates once chosen.
        for (const char* algo : {"ring", "tree"}) {
          check(info, n, Options({{"algo", std::string(algo)}}));
          check(info, n, Options({{"algo", std::string(algo)}, {"channels", "16"}}));
        }
        for (const char* algo : {"collnet_direct", "collnet_chain"}) {  // one GPU per node
          check(info, n, Options({{"algo", std::string(algo)}, {"gpus_per_node", "1"}}));
          if (n % 2 == 0 && n >= 4)
            check(info, n, Options({{"algo", std::string(algo)}, {"gpus_per_node", "2"}}));
        }
      } else if (info.name == "rhd") {
        for (const char* mode : {"fold", "rabenseifner"}) check(info, n, Options({{"nonpow2", std::string(mode)}}));
      } else {
        check(info, n, Options());
      }
    }
  }
}

}  // namespace
}  // namespace ssim::alg
