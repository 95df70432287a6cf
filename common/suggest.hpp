// "Did you mean ...?" for a name that is not one of the known ones: the closest known name by
// edit distance (optimal string alignment: insertions, deletions, substitutions and swaps of
// two neighbours each cost 1; letters compared without case).
//
//   did_you_mean("dgx_h10", {"dgx_a100", "dgx_h100", "dgx_h200"})   // " (did you mean 'dgx_h100'?)"
//
// A suggestion is made only when it is close: at most 1 edit for names of up to 4 characters,
// 2 up to 8, 3 beyond, and closer than every other known name (a tie suggests nothing).
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace ssim {

// The edit distance above between a and b.
std::size_t edit_distance(std::string_view a, std::string_view b);

// The known name closest to `given`, when it is close and unique (see above); never `given`
// itself.
std::optional<std::string> closest_name(std::string_view given,
                                        const std::vector<std::string>& known);

// " (did you mean 'NAME'?)" for closest_name, or "" when there is none.
std::string did_you_mean(std::string_view given, const std::vector<std::string>& known);

}  // namespace ssim
