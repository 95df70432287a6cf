#include "gpu_backend/run_options.hpp"

#include <cctype>
#include <limits>
#include <string>

#include "common/error.hpp"
#include "common/units.hpp"

namespace ssim::gpu {

std::uint64_t parse_size(std::string_view text) {
  std::string t(text);
  if (!t.empty()) {
    const char last = t.back();
    const bool after_digit =
        t.size() >= 2 &&
        (std::isdigit(static_cast<unsigned char>(t[t.size() - 2])) || t[t.size() - 2] == '.');
    if (after_digit) {
      if (last == 'K' || last == 'k') t.replace(t.size() - 1, 1, "KiB");
      if (last == 'M' || last == 'm') t.replace(t.size() - 1, 1, "MiB");
      if (last == 'G' || last == 'g') t.replace(t.size() - 1, 1, "GiB");
    }
  }
  try {
    return parse_bytes(t).value;
  } catch (const InputError&) {
    throw InputError("invalid size '" + std::string(text) +
                     "' (expected bytes with an optional unit: 4096, 64K, 1M, 2G as in "
                     "nccl-tests (powers of 1024), or 64KiB, 1MB, 2GiB)");
  }
}

std::vector<std::uint64_t> size_sweep(std::uint64_t min, std::uint64_t max, int factor) {
  if (min == 0) throw InputError("-b (smallest size) must be > 0");
  if (min > max) {
    throw InputError("-b (" + std::to_string(min) + " B) is larger than -e (" +
                     std::to_string(max) + " B)");
  }
  if (min < max && factor < 2)
    throw InputError("-f (size factor) must be >= 2, got " + std::to_string(factor));
  std::vector<std::uint64_t> sizes;
  for (std::uint64_t s = min; s <= max; s *= static_cast<std::uint64_t>(factor)) {
    sizes.push_back(s);
    if (s == max || s > std::numeric_limits<std::uint64_t>::max() / static_cast<unsigned>(factor))
      break;
  }
  return sizes;
}

}  // namespace ssim::gpu
