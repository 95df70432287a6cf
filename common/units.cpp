#include "common/units.hpp"

#include <algorithm>
#include <array>
#include <charconv>
#include <cmath>
#include <cstdio>
#include <optional>
#include <utility>

#include "common/checked.hpp"
#include "common/error.hpp"
#include "common/text.hpp"

namespace ssim {
namespace {

// Splits "12.5 MiB" into 12.5 and "MiB". Throws when no number leads the text.
std::pair<double, std::string_view> split_number(std::string_view text, const char* what,
                                                 const char* accepted) {
  std::string_view s = trim(text);
  double value = 0.0;
  auto [ptr, ec] = std::from_chars(s.data(), s.data() + s.size(), value);
  if (ec != std::errc() || s.empty()) {
    throw InputError("invalid " + std::string(what) + " '" + std::string(text) +
                     "': expected a number followed by a unit (" + accepted + ")");
  }
  if (!std::isfinite(value)) {
    throw InputError("invalid " + std::string(what) + " '" + std::string(text) + "': not finite");
  }
  std::string_view unit = trim(s.substr(static_cast<std::size_t>(ptr - s.data())));
  return {value, unit};
}

struct Unit {
  std::string_view name;
  double factor;
};

template <std::size_t N>
double lookup(std::string_view unit, const std::array<Unit, N>& table, std::string_view text,
              const char* what, const char* accepted) {
  for (const Unit& u : table) {
    if (u.name == unit) return u.factor;
  }
  throw InputError("invalid " + std::string(what) + " '" + std::string(text) + "': unknown unit '" +
                   std::string(unit) + "' (accepted: " + accepted + ")");
}

constexpr const char* kTimeUnits = "s, ms, us, ns, ps";
constexpr std::array<Unit, 5> kTime{
    {{"s", 1.0}, {"ms", 1e-3}, {"us", 1e-6}, {"ns", 1e-9}, {"ps", 1e-12}}};

constexpr const char* kByteUnits = "B, KB, MB, GB, TB, KiB, MiB, GiB, TiB";
constexpr std::array<Unit, 9> kBytes{{{"B", 1.0},
                                      {"KB", 1e3},
                                      {"MB", 1e6},
                                      {"GB", 1e9},
                                      {"TB", 1e12},
                                      {"KiB", 1024.0},
                                      {"MiB", 1024.0 * 1024},
                                      {"GiB", 1024.0 * 1024 * 1024},
                                      {"TiB", 1024.0 * 1024 * 1024 * 1024}}};

// Bandwidth units: a prefix, then bytes ("B/s", "Bps") or bits ("bps", "b/s", "bit/s").
// Prefixes: none, k/K M G T (powers of 10, as NCCL, SimGrid and network vendors use them) and
// Ki Mi Gi Ti (powers of 2). "B" is a byte and "b" a bit: 400Gbps = 50GB/s.
constexpr const char* kBandwidthUnits =
    "bytes per second as B/s or Bps, bits per second as bps, b/s or bit/s, each with an "
    "optional prefix K (or k), M, G, T (x1000) or Ki, Mi, Gi, Ti (x1024); e.g. 450GB/s, "
    "450GBps, 450GiB/s, 400Gbps, 400Gb/s, 400Gbit/s, 100Mibit/s";

std::optional<double> bandwidth_factor(std::string_view unit) {
  struct Prefix {
    std::string_view name;
    double factor;
  };
  static constexpr std::array<Prefix, 10> kPrefixes{{{"Ki", 1024.0},
                                                     {"Mi", 1024.0 * 1024},
                                                     {"Gi", 1024.0 * 1024 * 1024},
                                                     {"Ti", 1024.0 * 1024 * 1024 * 1024},
                                                     {"k", 1e3},
                                                     {"K", 1e3},
                                                     {"M", 1e6},
                                                     {"G", 1e9},
                                                     {"T", 1e12},
                                                     {"", 1.0}}};
  static constexpr std::array<Unit, 5> kBases{
      {{"B/s", 1.0}, {"Bps", 1.0}, {"bps", 1.0 / 8}, {"b/s", 1.0 / 8}, {"bit/s", 1.0 / 8}}};
  for (const Prefix& p : kPrefixes) {  // binary prefixes first: "Gi" before "G"
    if (!unit.starts_with(p.name)) continue;
    const std::string_view rest = unit.substr(p.name.size());
    for (const Unit& b : kBases) {
      if (rest == b.name) return p.factor * b.factor;
    }
  }
  return std::nullopt;
}

constexpr const char* kPerByteUnits = "s/B, ms/B, us/B, ns/B, ps/B";
constexpr std::array<Unit, 5> kPerByte{
    {{"s/B", 1.0}, {"ms/B", 1e-3}, {"us/B", 1e-6}, {"ns/B", 1e-9}, {"ps/B", 1e-12}}};

}  // namespace

Seconds parse_time(std::string_view text) {
  auto [value, unit] = split_number(text, "time", kTimeUnits);
  if (unit.empty() && value != 0.0) {
    throw InputError("invalid time '" + std::string(text) + "': a unit is required (" + kTimeUnits +
                     ")");
  }
  double factor = unit.empty() ? 1.0 : lookup(unit, kTime, text, "time", kTimeUnits);
  if (value < 0) throw InputError("invalid time '" + std::string(text) + "': must not be negative");
  return Seconds{value * factor};
}

Bytes parse_bytes(std::string_view text) {
  auto [value, unit] = split_number(text, "size", kByteUnits);
  double factor = unit.empty() ? 1.0 : lookup(unit, kBytes, text, "size", kByteUnits);
  if (value < 0) throw InputError("invalid size '" + std::string(text) + "': must not be negative");
  double bytes = value * factor;
  if (bytes > 9.0e18) throw InputError("invalid size '" + std::string(text) + "': too large");
  // A whole number of digits is read exactly (a double holds integers exactly up to 2^53 only:
  // 4611686018427387905B would be 2^62), its unit's factor being a whole number too.
  const std::string_view s = trim(text);
  const std::size_t n = std::min(s.find_first_not_of("0123456789"), s.size());
  const char next = n < s.size() ? s[n] : '\0';
  if (n > 0 && next != '.' && next != 'e' && next != 'E') {
    std::uint64_t count = 0;
    if (std::from_chars(s.data(), s.data() + n, count).ec == std::errc()) {
      return Bytes{checked_mul(count, static_cast<std::uint64_t>(factor),
                               "invalid size '" + std::string(text) + "'")};
    }
  }
  double whole = std::round(bytes);
  if (std::fabs(bytes - whole) > 1e-6 * std::max(1.0, bytes)) {
    throw InputError("invalid size '" + std::string(text) + "': not a whole number of bytes");
  }
  return Bytes{static_cast<std::uint64_t>(whole)};
}

Bytes parse_bytes_with_unit(std::string_view text) {
  const Bytes b = parse_bytes(text);
  if (b.value != 0 && split_number(text, "size", kByteUnits).second.empty()) {
    throw InputError("invalid size '" + std::string(text) + "': a unit is required (" + kByteUnits +
                     ")");
  }
  return b;
}

BytesPerSecond parse_bandwidth(std::string_view text) {
  auto [value, unit] = split_number(text, "bandwidth", kBandwidthUnits);
  if (unit.empty()) {
    throw InputError("invalid bandwidth '" + std::string(text) + "': a unit is required (" +
                     kBandwidthUnits + ")");
  }
  const std::optional<double> factor = bandwidth_factor(unit);
  if (!factor) {
    throw InputError("invalid bandwidth '" + std::string(text) + "': unknown unit '" +
                     std::string(unit) + "' (accepted: " + kBandwidthUnits + ")");
  }
  if (value <= 0) throw InputError("invalid bandwidth '" + std::string(text) + "': must be > 0");
  return BytesPerSecond{value * *factor};
}

SecondsPerByte parse_seconds_per_byte(std::string_view text) {
  auto [value, unit] = split_number(text, "per-byte cost", kPerByteUnits);
  if (unit.empty() && value != 0.0) {
    throw InputError("invalid per-byte cost '" + std::string(text) + "': a unit is required (" +
                     kPerByteUnits + ")");
  }
  double factor = unit.empty() ? 1.0 : lookup(unit, kPerByte, text, "per-byte cost", kPerByteUnits);
  if (value < 0)
    throw InputError("invalid per-byte cost '" + std::string(text) + "': must not be negative");
  // A second per byte is far beyond any machine; larger values only overflow the times.
  if (value * factor > 1.0)
    throw InputError("invalid per-byte cost '" + std::string(text) + "': must be at most 1s/B");
  return SecondsPerByte{value * factor};
}

std::string format_time(Seconds t) {
  char buf[64];
  double v = t.value;
  if (v == 0) return "0s";
  if (!std::isfinite(v)) return v != v ? "nan" : (v > 0 ? "inf" : "-inf");
  // From 1e6 s on, exponent form: a fixed-point 1e299 would be 300 digits.
  if (std::fabs(v) >= 1e6)
    std::snprintf(buf, sizeof buf, "%.3es", v);
  else if (std::fabs(v) >= 1)
    std::snprintf(buf, sizeof buf, "%.3fs", v);
  else if (std::fabs(v) >= 1e-3)
    std::snprintf(buf, sizeof buf, "%.3fms", v * 1e3);
  else if (std::fabs(v) >= 1e-6)
    std::snprintf(buf, sizeof buf, "%.3fus", v * 1e6);
  else
    std::snprintf(buf, sizeof buf, "%.3fns", v * 1e9);
  return buf;
}

std::string format_bytes(Bytes b) {
  static constexpr std::array<const char*, 5> names{"B", "KiB", "MiB", "GiB", "TiB"};
  std::uint64_t v = b.value;
  std::size_t i = 0;
  while (i + 1 < names.size() && v >= 1024 && v % 1024 == 0) {
    v /= 1024;
    ++i;
  }
  if (i == 0 && b.value >= 1024) {
    char buf[64];
    double d = static_cast<double>(b.value);
    while (i + 1 < names.size() && d >= 1024) {
      d /= 1024;
      ++i;
    }
    std::snprintf(buf, sizeof buf, "%.2f%s", d, names[i]);
    return buf;
  }
  return std::to_string(v) + names[i];
}

std::string format_bandwidth(BytesPerSecond bw) {
  char buf[64];
  std::snprintf(buf, sizeof buf, "%.2fGB/s", bw.value / 1e9);
  return buf;
}

}  // namespace ssim
