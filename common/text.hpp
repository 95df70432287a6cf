// Small text helpers shared by the readers of every layer.
//
//   trim("  64 MiB\t")              == "64 MiB"    // blanks: space and tab
//   trim(" 12\r\n", kWhitespace)     == "12"        // every C-locale isspace character
//
// trim returns a view into its argument, so the argument must outlive it.
#pragma once

#include <string_view>

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

}  // namespace ssim
