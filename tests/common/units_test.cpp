#include "common/units.hpp"

#include <gtest/gtest.h>

#include "common/error.hpp"

namespace ssim {
namespace {

TEST(Units, Times) {
  EXPECT_DOUBLE_EQ(parse_time("3us").value, 3e-6);
  EXPECT_DOUBLE_EQ(parse_time("1.5 ms").value, 1.5e-3);
  EXPECT_DOUBLE_EQ(parse_time("2s").value, 2.0);
  EXPECT_DOUBLE_EQ(parse_time("250ps").value, 250e-12);
  EXPECT_DOUBLE_EQ(parse_time("0").value, 0.0);
}

TEST(Units, Sizes) {
  EXPECT_EQ(parse_bytes("64MiB").value, 64ull << 20);
  EXPECT_EQ(parse_bytes("1GiB").value, 1ull << 30);
  EXPECT_EQ(parse_bytes("4096").value, 4096u);
  EXPECT_EQ(parse_bytes("1.5KB").value, 1500u);
  EXPECT_EQ(parse_bytes("256 KiB").value, 256u * 1024);
}

TEST(Units, Bandwidths) {
  EXPECT_DOUBLE_EQ(parse_bandwidth("450GiB/s").value, 450.0 * (1ull << 30));
  EXPECT_DOUBLE_EQ(parse_bandwidth("400Gbps").value, 50e9);  // 400e9 bits / 8
  EXPECT_DOUBLE_EQ(parse_bandwidth("50GB/s").value, 50e9);
  EXPECT_DOUBLE_EQ(parse_seconds_per_byte("0.1ns/B").value, 0.1e-9);
}

TEST(Units, RejectsBadText) {
  EXPECT_THROW(parse_time("3"), InputError);        // a unit is required
  EXPECT_THROW(parse_time("3 fortnights"), InputError);
  EXPECT_THROW(parse_time("-1us"), InputError);
  EXPECT_THROW(parse_bytes("1.5B"), InputError);    // not whole
  EXPECT_THROW(parse_bytes("MiB"), InputError);
  EXPECT_THROW(parse_bandwidth("0GB/s"), InputError);
  EXPECT_THROW(parse_bandwidth("450"), InputError);
  EXPECT_THROW(parse_bandwidth("450GiB"), InputError);
  try {
    parse_bandwidth("10 furlongs/s");
    FAIL();
  } catch (const InputError& e) {
    EXPECT_NE(std::string(e.what()).find("furlongs/s"), std::string::npos);
    EXPECT_NE(std::string(e.what()).find("Gbps"), std::string::npos);  // lists accepted units
  }
}

TEST(Units, Formats) {
  EXPECT_EQ(format_bytes(Bytes{1ull << 30}), "1GiB");
  EXPECT_EQ(format_bytes(Bytes{1000}), "1000B");
  EXPECT_EQ(format_time(Seconds{3e-6}), "3.000us");
}

}  // namespace
}  // namespace ssim
