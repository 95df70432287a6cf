#include "common/suggest.hpp"

#include <algorithm>
#include <cctype>

namespace ssim {

std::size_t edit_distance(std::string_view a, std::string_view b) {
  const auto lower = [](char c) {
    return static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  };
  const std::size_t n = a.size(), m = b.size();
  // Three rows of the dynamic programme: i-2, i-1, i.
  std::vector<std::size_t> before(m + 1), prev(m + 1), cur(m + 1);
  for (std::size_t j = 0; j <= m; ++j) prev[j] = j;
  for (std::size_t i = 1; i <= n; ++i) {
    cur[0] = i;
    for (std::size_t j = 1; j <= m; ++j) {
      const std::size_t cost = lower(a[i - 1]) == lower(b[j - 1]) ? 0 : 1;
      cur[j] = std::min({prev[j] + 1, cur[j - 1] + 1, prev[j - 1] + cost});
      if (i > 1 && j > 1 && lower(a[i - 1]) == lower(b[j - 2]) &&
          lower(a[i - 2]) == lower(b[j - 1]))
        cur[j] = std::min(cur[j], before[j - 2] + 1);
    }
    std::swap(before, prev);
    std::swap(prev, cur);
  }
  return prev[m];
}

std::optional<std::string> closest_name(std::string_view given,
                                        const std::vector<std::string>& known) {
  const std::size_t limit = given.size() <= 4 ? 1 : given.size() <= 8 ? 2 : 3;
  std::optional<std::string> best;
  std::size_t best_distance = limit + 1;
  bool tie = false;
  for (const std::string& name : known) {
    if (name == given) return std::nullopt;  // not unknown after all
    const std::size_t d = edit_distance(given, name);
    if (d < best_distance) {
      best = name;
      best_distance = d;
      tie = false;
    } else if (d == best_distance && best && *best != name) {
      tie = true;
    }
  }
  if (tie) return std::nullopt;
  return best;
}

std::string did_you_mean(std::string_view given, const std::vector<std::string>& known) {
  const std::optional<std::string> name = closest_name(given, known);
  return name ? " (did you mean '" + *name + "'?)" : std::string();
}

}  // namespace ssim
