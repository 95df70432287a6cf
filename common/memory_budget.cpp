#include "common/memory_budget.hpp"

#include <unistd.h>

#include <array>
#include <cstdio>

#include "common/error.hpp"
#include "common/units.hpp"

namespace ssim {

std::uint64_t physical_memory_bytes() {
  const long pages = sysconf(_SC_PHYS_PAGES);
  const long page = sysconf(_SC_PAGESIZE);
  if (pages <= 0 || page <= 0) return 0;
  return static_cast<std::uint64_t>(pages) * static_cast<std::uint64_t>(page);
}

std::string format_memory(double bytes) {
  static constexpr std::array<const char*, 5> names{"B", "KiB", "MiB", "GiB", "TiB"};
  std::size_t i = 0;
  while (i + 1 < names.size() && bytes >= 1024) {
    bytes /= 1024;
    ++i;
  }
  char buf[64];
  // 1000 to 1023 of a unit: whole ("1010MiB"), not "1.01e+03MiB".
  std::snprintf(buf, sizeof buf,
                bytes < 1000  ? "%.3g%s"
                : bytes < 1e6 ? "%.0f%s"
                              : "%.2e%s",
                bytes, names[i]);
  return buf;
}

MemoryBudget MemoryBudget::from_flag(const std::string& text) {
  if (!text.empty()) {
    Bytes b{};
    try {
      b = parse_bytes_with_unit(text);
    } catch (const InputError& e) {
      throw InputError(std::string("--max-memory: ") + e.what());
    }
    if (b.value == 0) throw InputError("--max-memory: must be > 0");
    return MemoryBudget(b.value, "--max-memory " + text);
  }
  const std::uint64_t physical = physical_memory_bytes();
  if (physical == 0)
    return MemoryBudget(std::uint64_t{8} << 30, "the default of 8GiB (physical memory unknown)");
  return MemoryBudget(
      static_cast<std::uint64_t>(static_cast<double>(physical) * kDefaultMemoryFraction),
      "the default, half of this machine's " + format_memory(static_cast<double>(physical)));
}

void MemoryBudget::require(double estimate, const std::string& what,
                           const std::string& change) const {
  if (estimate <= static_cast<double>(bytes_)) return;
  throw ResourceError(what + " would need about " + format_memory(estimate) +
                      " of memory, more than the budget of " +
                      format_memory(static_cast<double>(bytes_)) + " (" + source_ + "); " + change +
                      ", or raise the budget with --max-memory SIZE if the machine has the memory");
}

}  // namespace ssim
