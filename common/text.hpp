// Small text helpers shared by the readers of every layer.
//
//   trim("  64 MiB\t")              == "64 MiB"    // blanks: space and tab
//   trim(" 12\r\n", kWhitespace)     == "12"        // every C-locale isspace character
//
//   all_digits("0042")              == true        // no sign, no blank, not empty
//   joined({"ring", "rhd"}, ", ")    == "ring, rhd"
//   lowercase("LL128")              == "ll128"
//
// trim returns a view into its argument, so the argument must outlive it.
#pragma once

#include <cctype>
#include <cstddef>
#include <string>
#include <string_view>
#include <vector>

namespace ssim {

// The characters trim removes by default: what separates fields within a line.
inline constexpr std::string_view kBlanks = " \t";
// std::isspace's set in the C locale, line ends included.
inline constexpr std::string_view kWhitespace = " \t\n\v\f\r";

// `s` without the leading and trailing characters that are in `chars`.
constexpr std::string_view trim(std::string_view s, std::string_view chars = kBlanks) {
  const auto first = s.find_first_not_of(chars);
  if (first == std::string_view::npos) return {};
  return s.substr(first, s.find_last_not_of(chars) - first + 1);
}

// Whether `s` is one or more of the digits 0-9 and nothing else.
constexpr bool all_digits(std::string_view s) {
  if (s.empty()) return false;
  for (const char c : s) {
    if (c < '0' || c > '9') return false;
  }
  return true;
}

// `s` with each character through std::tolower (the C locale's: A-Z to a-z, other bytes as is).
inline std::string lowercase(std::string_view s) {
  std::string out(s);
  for (char& c : out) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return out;
}

// `items` in order with `separator` between each two ("" for none).
inline std::string joined(const std::vector<std::string>& items, std::string_view separator) {
  std::string out;
  for (std::size_t k = 0; k < items.size(); ++k) {
    if (k > 0) out += separator;
    out += items[k];
  }
  return out;
}

}  // namespace ssim
