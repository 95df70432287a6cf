// Strong types for the physical quantities of the project and the one parser for unit strings.
//
//   Seconds t = parse_time("3us");            // 3e-6 s
//   Bytes b = parse_bytes("64MiB");           // 67108864
//   BytesPerSecond bw = parse_bandwidth("450GiB/s");   // or "400Gbps", "50GB/s"
//   SecondsPerByte g = parse_seconds_per_byte("0.1ns/B");
//
// Time is double seconds throughout the project (see docs/cli.md, "Time and units"). Sizes are
// integers. Every parser throws ssim::InputError naming the offending text and the accepted units;
// callers that know a file, line and key add them.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

namespace ssim {

struct Seconds {
  double value = 0.0;
  constexpr auto operator<=>(const Seconds&) const = default;
};

struct Bytes {
  std::uint64_t value = 0;
  constexpr auto operator<=>(const Bytes&) const = default;
};

struct BytesPerSecond {
  double value = 0.0;
  constexpr auto operator<=>(const BytesPerSecond&) const = default;
};

struct SecondsPerByte {
  double value = 0.0;
  constexpr auto operator<=>(const SecondsPerByte&) const = default;
};

// "3us", "1.5 ms", "2s", "10ns", "250ps", "0". Accepts s, ms, us, ns, ps. Negative values rejected.
Seconds parse_time(std::string_view text);
// "64MiB", "1GiB", "4096", "1.5KB", "256 KiB". B, KB/MB/GB/TB (powers of 10), KiB/MiB/GiB/TiB.
// Must be a whole number of bytes.
Bytes parse_bytes(std::string_view text);
// As parse_bytes, but a unit is required except for 0, as for every value in a config file.
Bytes parse_bytes_with_unit(std::string_view text);
// "450GiB/s", "50GB/s", "450GBps", "400Gbps", "400Gb/s", "400Gbit/s", "1e9B/s": bytes (B/s, Bps)
// or bits (bps, b/s, bit/s) per second, prefixes k/K M G T (x1000) or Ki Mi Gi Ti (x1024).
// Must be > 0.
BytesPerSecond parse_bandwidth(std::string_view text);
// "0.1ns/B", "1e-12s/B", "0". Non-negative, at most 1 s/B.
SecondsPerByte parse_seconds_per_byte(std::string_view text);

// Human-readable forms used in tables: "3.000us", "1GiB", "450GiB/s".
std::string format_time(Seconds t);
std::string format_bytes(Bytes b);
std::string format_bandwidth(BytesPerSecond bw);

}  // namespace ssim
