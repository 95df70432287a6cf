#include <gtest/gtest.h>

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "common/bits.hpp"
#include "common/text.hpp"

namespace ssim {
namespace {

// The definitions the helpers replaced, as loops: the smallest l with 2^l >= n, and the
// largest l with 2^l <= n.
int ceil_log2_by_loop(int n) {
  int l = 0;
  while ((std::int64_t{1} << l) < n) ++l;
  return l;
}
int floor_log2_by_loop(int n) {
  int l = 0;
  while ((std::int64_t{2} << l) <= n) ++l;
  return l;
}

TEST(Bits, AgreeWithTheLoops) {
  for (int n = -3; n <= 5000; ++n) {
    EXPECT_EQ(ceil_log2(n), ceil_log2_by_loop(n)) << n;
    if (n >= 1) {
      EXPECT_EQ(floor_log2(n), floor_log2_by_loop(n)) << n;
    }
    EXPECT_EQ(is_pow2(n), n >= 1 && ceil_log2_by_loop(n) == floor_log2_by_loop(n)) << n;
  }
  for (int n : {(1 << 30) - 1, 1 << 30, (1 << 30) + 1, 2147483647}) {
    EXPECT_EQ(ceil_log2(n), ceil_log2_by_loop(n)) << n;
    EXPECT_EQ(floor_log2(n), floor_log2_by_loop(n)) << n;
  }
  EXPECT_TRUE(is_pow2(1 << 30));
  EXPECT_FALSE(is_pow2(-2147483647 - 1));  // a single bit as unsigned, but not a power of two
  static_assert(ceil_log2(5) == 3 && floor_log2(5) == 2 && is_pow2(8) && !is_pow2(0));
}

TEST(Text, TrimBlanksByDefault) {
  EXPECT_EQ(trim("  64 MiB\t"), "64 MiB");
  EXPECT_EQ(trim("x"), "x");
  EXPECT_EQ(trim(""), "");
  EXPECT_EQ(trim(" \t "), "");
  EXPECT_EQ(trim("a b"), "a b");
  EXPECT_EQ(trim("\r12\n"), "\r12\n");  // line ends are not blanks
  const std::string_view text = " ab ";
  EXPECT_EQ(trim(text).data(), text.data() + 1);  // a view into the argument
}

TEST(Text, TrimWhitespace) {
  EXPECT_EQ(trim(" 12\r\n", kWhitespace), "12");
  EXPECT_EQ(trim("\v\f host \t", kWhitespace), "host");
  EXPECT_EQ(trim("\r\n", kWhitespace), "");
}

TEST(Text, AllDigits) {
  static_assert(all_digits("0042"));
  EXPECT_TRUE(all_digits("7"));
  EXPECT_TRUE(all_digits("12345678901234567890"));  // any length: the caller bounds it
  EXPECT_FALSE(all_digits(""));
  for (const char* s : {"-1", "+1", " 1", "1 ", "1.0", "1e3", "0x1", "12a", "\xd9\xa3"}) {
    EXPECT_FALSE(all_digits(s)) << s;
  }
}

TEST(Text, Joined) {
  EXPECT_EQ(joined({"ring", "rhd", "direct"}, ", "), "ring, rhd, direct");
  EXPECT_EQ(joined({"a", "", "b"}, ","), "a,,b");  // empty items keep their separators
  EXPECT_EQ(joined({"", "b"}, ","), ",b");
  EXPECT_EQ(joined({"only"}, ", "), "only");
  EXPECT_EQ(joined({}, ", "), "");
}

TEST(Text, Lowercase) {
  EXPECT_EQ(lowercase("LL128"), "ll128");
  EXPECT_EQ(lowercase("NVLS_Tree-2 x"), "nvls_tree-2 x");  // digits, '_', '-', blanks as is
  EXPECT_EQ(lowercase("r\xc3\xa9"
                      "DUCE"),
            "r\xc3\xa9"
            "duce");  // UTF-8 bytes as is
  EXPECT_EQ(lowercase(""), "");
}

}  // namespace
}  // namespace ssim
