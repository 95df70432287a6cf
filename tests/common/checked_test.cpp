#include "common/checked.hpp"

#include <gtest/gtest.h>

#include <cstdint>
#include <limits>
#include <string>

namespace ssim {
namespace {

TEST(Checked, InRangeResultsAreExact) {
  EXPECT_EQ(checked_mul<std::uint64_t>(1ull << 31, 1ull << 32, "x"), 1ull << 63);
  EXPECT_EQ(checked_add<std::int64_t>(-5, 3, "x"), -2);
  EXPECT_EQ(try_mul<long long>(3, -4), -12);
  EXPECT_EQ(try_add<int>(std::numeric_limits<int>::max() - 1, 1), std::numeric_limits<int>::max());
}

TEST(Checked, OverflowIsAnInputErrorNamingTheContextAndTheRange) {
  try {
    (void)checked_mul<std::uint64_t>(16, 1ull << 62, "model.layers: gradient bytes");
    FAIL() << "no error";
  } catch (const InputError& e) {
    EXPECT_EQ(std::string(e.what()),
              "model.layers: gradient bytes: 16 * 4611686018427387904 is outside [0, "
              "18446744073709551615]");
  }
  EXPECT_THROW((void)checked_add<int>(std::numeric_limits<int>::max(), 1, std::string("n")),
               InputError);
  EXPECT_THROW((void)checked_add<std::int64_t>(std::numeric_limits<std::int64_t>::min(), -1, "n"),
               InputError);
  EXPECT_FALSE(try_mul<long long>(1LL << 62, 2).has_value());
  EXPECT_FALSE(try_add<std::uint32_t>(1u << 31, 1u << 31).has_value());
}

TEST(Checked, ACallableReportsTheError) {
  std::string seen;
  try {
    (void)checked_add<std::uint64_t>(~0ull, 2, [&](const std::string& m) {
      seen = m;
      throw InputError("file.yaml:3:7: " + m);
    });
    FAIL() << "no error";
  } catch (const InputError& e) {
    EXPECT_EQ(std::string(e.what()).rfind("file.yaml:3:7: 18446744073709551615 + 2", 0), 0u)
        << e.what();
  }
  EXPECT_NE(seen.find("is outside [0, 18446744073709551615]"), std::string::npos);
}

}  // namespace
}  // namespace ssim
