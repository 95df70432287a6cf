// Resource honesty: how much memory a command may use, and the one way to refuse work that
// would need more. Estimates are computed from the inputs before anything large is built.
//
//   const MemoryBudget budget = MemoryBudget::from_flag(flag_text);   // "" = the default
//   budget.require(estimate_bytes, "the ring schedule for 65536 ranks (8.6e9 transfers)",
//                  "use fewer ranks");                                 // throws ResourceError
#pragma once

#include <cstdint>
#include <string>

namespace ssim {

// The default budget is this fraction of the machine's physical memory.
inline constexpr double kDefaultMemoryFraction = 0.5;

// Physical memory of this machine in bytes (0 when unknown).
std::uint64_t physical_memory_bytes();

class MemoryBudget {
 public:
  // From a --max-memory value ("8GiB"; "" for the default: kDefaultMemoryFraction of the
  // physical memory, or 8 GiB when that is unknown). InputError on a bad size.
  static MemoryBudget from_flag(const std::string& text);
  static MemoryBudget of(std::uint64_t bytes, std::string source) {
    return MemoryBudget(bytes, std::move(source));
  }

  std::uint64_t bytes() const { return bytes_; }
  // How the budget was set, for messages: "--max-memory 8GiB", "half of the 16GiB of memory".
  const std::string& source() const { return source_; }

  // Throws ResourceError naming `what`, the estimate, the budget and `change` (what to change
  // to fit) when `estimate` (bytes, may be huge) is above the budget.
  void require(double estimate, const std::string& what, const std::string& change) const;

 private:
  MemoryBudget(std::uint64_t bytes, std::string source)
      : bytes_(bytes), source_(std::move(source)) {}
  std::uint64_t bytes_;
  std::string source_;
};

// "1.5GiB", "96TiB", "3.2e+09TiB": a byte count too large for Bytes stays readable.
std::string format_memory(double bytes);

}  // namespace ssim
