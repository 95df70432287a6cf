#include "common/units.hpp"

#include <gtest/gtest.h>

#include <string>
#include <utility>
#include <vector>

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
  // Whole numbers are exact past 2^53 (a double would give 2^62 for 2^62 + 1).
  EXPECT_EQ(parse_bytes("4611686018427387905B").value, 4611686018427387905ull);
  EXPECT_EQ(parse_bytes("9007199254740993").value, 9007199254740993ull);
  EXPECT_EQ(parse_bytes("4194303TiB").value, 4194303ull << 40);
}

TEST(Units, Bandwidths) {
  EXPECT_DOUBLE_EQ(parse_bandwidth("450GiB/s").value, 450.0 * (1ull << 30));
  EXPECT_DOUBLE_EQ(parse_bandwidth("400Gbps").value, 50e9);  // 400e9 bits / 8
  EXPECT_DOUBLE_EQ(parse_bandwidth("50GB/s").value, 50e9);
  EXPECT_DOUBLE_EQ(parse_seconds_per_byte("0.1ns/B").value, 0.1e-9);
}

// Every prefix with every byte and bit spelling: SimGrid writes "GBps", NCCL and network
// vendors "Gb/s" and "Gbit/s".
TEST(Units, BandwidthSpellings) {
  const std::vector<std::pair<std::string, double>> prefixes{{"", 1.0},
                                                             {"k", 1e3},
                                                             {"K", 1e3},
                                                             {"M", 1e6},
                                                             {"G", 1e9},
                                                             {"T", 1e12},
                                                             {"Ki", 1024.0},
                                                             {"Mi", 1048576.0},
                                                             {"Gi", 1073741824.0},
                                                             {"Ti", 1099511627776.0}};
  for (const auto& [prefix, factor] : prefixes) {
    for (const std::string bytes : {"B/s", "Bps"}) {
      EXPECT_DOUBLE_EQ(parse_bandwidth("3" + prefix + bytes).value, 3 * factor) << prefix + bytes;
    }
    for (const std::string bits : {"bps", "b/s", "bit/s"}) {
      EXPECT_DOUBLE_EQ(parse_bandwidth("8 " + prefix + bits).value, factor) << prefix + bits;
    }
  }
  EXPECT_DOUBLE_EQ(parse_bandwidth("450GBps").value, 450e9);
  EXPECT_DOUBLE_EQ(parse_bandwidth("450GiBps").value, 450.0 * (1ull << 30));
  EXPECT_DOUBLE_EQ(parse_bandwidth("400Gb/s").value, 50e9);
  EXPECT_DOUBLE_EQ(parse_bandwidth("400Gbit/s").value, 50e9);
  EXPECT_DOUBLE_EQ(parse_bandwidth("100Gibit/s").value, 100.0 * (1ull << 30) / 8);
  for (const char* bad : {"1GBs", "1gB/s", "1Gib", "1GBit/s", "1mbps", "1KiBs", "1Gi", "1/s"}) {
    EXPECT_THROW(parse_bandwidth(bad), InputError) << bad;
  }
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
    const std::string what = e.what();
    for (const char* form : {"B/s", "Bps", "bps", "b/s", "bit/s", "Ki", "450GBps", "400Gbit/s"}) {
      EXPECT_NE(what.find(form), std::string::npos) << form;  // lists the accepted forms
    }
  }
}

TEST(Units, Formats) {
  EXPECT_EQ(format_bytes(Bytes{1ull << 30}), "1GiB");
  EXPECT_EQ(format_bytes(Bytes{1000}), "1000B");
  EXPECT_EQ(format_time(Seconds{3e-6}), "3.000us");
}

}  // namespace
}  // namespace ssim
