#include "gpu_backend/cuda/apply_item.hpp"

#include <gtest/gtest.h>

#include <vector>

namespace ssim::gpu {
namespace {

TEST(VectorSplit, HandDerivedCases) {
  // Both aligned, 10 float32: no head, 4 per vector, two vectors = elements [0, 8), tail 8..9.
  VectorSplit s = split_for_vectors(0, 0, 10, 4);
  EXPECT_EQ(s.head, 0u);
  EXPECT_EQ(s.tail, 8u);
  // Both 4 B past a 16-byte boundary: head = (16 - 4) / 4 = 3 elements, then (10 - 3) / 4 = 1
  // vector = [3, 7).
  s = split_for_vectors(1028, 36, 10, 4);
  EXPECT_EQ(s.head, 3u);
  EXPECT_EQ(s.tail, 7u);
  // float64 8 B past a boundary: head 1, (9 - 1) / 2 = 4 vectors = [1, 9).
  s = split_for_vectors(8, 24, 9, 8);
  EXPECT_EQ(s.head, 1u);
  EXPECT_EQ(s.tail, 9u);
  // Different misalignment (4 vs 8): all scalar.
  s = split_for_vectors(4, 8, 100, 4);
  EXPECT_EQ(s.head, 100u);
  EXPECT_EQ(s.tail, 100u);
  // Head longer than the item: all scalar.
  s = split_for_vectors(4, 4, 2, 4);
  EXPECT_EQ(s.head, 2u);
  EXPECT_EQ(s.tail, 2u);
  // A misalignment that is not a whole element cannot be vectorized.
  s = split_for_vectors(2, 2, 100, 4);
  EXPECT_EQ(s.head, 100u);
}

TEST(VectorSplit, VectorsAndScalarsCoverEveryElementOnce) {
  for (std::uint64_t elem : {4u, 8u}) {
    for (std::uint64_t dst_mis = 0; dst_mis < 16; dst_mis += elem) {
      for (std::uint64_t src_mis = 0; src_mis < 16; src_mis += elem) {
        for (std::uint64_t count = 0; count < 40; ++count) {
          const VectorSplit s = split_for_vectors(4096 + dst_mis, 8192 + src_mis, count, elem);
          ASSERT_LE(s.head, s.tail);
          ASSERT_LE(s.tail, count);
          ASSERT_EQ((s.tail - s.head) % (kVectorBytes / elem), 0u);
          if (s.tail > s.head) {
            // Vector part starts 16-byte aligned on both sides.
            EXPECT_EQ((4096 + dst_mis + s.head * elem) % kVectorBytes, 0u);
            EXPECT_EQ((8192 + src_mis + s.head * elem) % kVectorBytes, 0u);
          }
          std::vector<int> hits(count, 0);
          for (std::uint64_t e = s.head; e < s.tail; ++e) ++hits[e];
          for (std::uint64_t j = 0; j < scalar_count(s, count); ++j) ++hits[scalar_element(s, j)];
          for (std::uint64_t e = 0; e < count; ++e)
            ASSERT_EQ(hits[e], 1) << "elem " << elem << " misalign " << dst_mis << "/" << src_mis
                                  << " count " << count << " element " << e;
        }
      }
    }
  }
}

}  // namespace
}  // namespace ssim::gpu
