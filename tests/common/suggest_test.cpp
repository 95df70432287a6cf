// common/suggest.hpp: the edit distance and the "did you mean" rule.
#include "common/suggest.hpp"

#include <gtest/gtest.h>

namespace ssim {
namespace {

TEST(EditDistance, InsertDeleteSubstituteSwap) {
  EXPECT_EQ(edit_distance("", ""), 0u);
  EXPECT_EQ(edit_distance("abc", ""), 3u);
  EXPECT_EQ(edit_distance("dgx_h10", "dgx_h100"), 1u);    // insertion
  EXPECT_EQ(edit_distance("ringg", "ring"), 1u);          // deletion
  EXPECT_EQ(edit_distance("rhd", "rhf"), 1u);             // substitution
  EXPECT_EQ(edit_distance("stragglra", "stragglar"), 1u);  // neighbours swapped
  EXPECT_EQ(edit_distance("Ring", "ring"), 0u);           // case ignored
  EXPECT_EQ(edit_distance("kitten", "sitting"), 3u);
}

TEST(ClosestName, CloseAndUniqueOnly) {
  const std::vector<std::string> topologies = {"dgx_a100", "dgx_h100", "dgx_h200", "h100_direct"};
  EXPECT_EQ(closest_name("dgx_h10", topologies), "dgx_h100");
  EXPECT_EQ(closest_name("dgx_h2000", topologies), "dgx_h200");
  EXPECT_EQ(closest_name("dgx_x100", topologies), std::nullopt);  // a100 and h100: a tie
  EXPECT_EQ(closest_name("my_cluster", topologies), std::nullopt);
  EXPECT_EQ(closest_name("dgx_h100", topologies), std::nullopt);   // known: nothing to suggest
  EXPECT_EQ(closest_name("rng", {"ring", "rhd"}), "ring");
  EXPECT_EQ(closest_name("xyz", {"ring", "rhd"}), std::nullopt);    // 3 letters: 1 edit at most
  EXPECT_EQ(closest_name("--topolgy", {"--topology", "--trace"}), "--topology");
  EXPECT_EQ(did_you_mean("hgih", {"distribution", "low", "high"}), " (did you mean 'high'?)");
  EXPECT_EQ(did_you_mean("zzzz", {"distribution", "low", "high"}), "");
}

}  // namespace
}  // namespace ssim
