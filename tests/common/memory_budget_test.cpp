#include "common/memory_budget.hpp"

#include <gtest/gtest.h>

#include "common/error.hpp"
#include "common/units.hpp"

namespace ssim {
namespace {

TEST(MemoryBudget, FlagAndDefault) {
  const MemoryBudget b = MemoryBudget::from_flag("2GiB");
  EXPECT_EQ(b.bytes(), std::uint64_t{2} << 30);
  EXPECT_EQ(b.source(), "--max-memory 2GiB");
  EXPECT_THROW(MemoryBudget::from_flag("2"), InputError);  // a unit is required
  EXPECT_THROW(MemoryBudget::from_flag("0B"), InputError);
  const MemoryBudget d = MemoryBudget::from_flag("");
  if (physical_memory_bytes() > 0) {
    EXPECT_EQ(d.bytes(), static_cast<std::uint64_t>(static_cast<double>(physical_memory_bytes()) *
                                                    kDefaultMemoryFraction));
  }
}

TEST(MemoryBudget, RefusalNamesTheNeedTheBudgetAndTheChange) {
  const MemoryBudget b = MemoryBudget::of(std::uint64_t{1} << 30, "--max-memory 1GiB");
  EXPECT_NO_THROW(b.require(1024.0 * 1024 * 1024, "x", "y"));
  try {
    b.require(3.0 * (std::uint64_t{1} << 40), "the ring schedule", "use fewer ranks");
    FAIL();
  } catch (const ResourceError& e) {
    EXPECT_EQ(std::string(e.what()),
              "the ring schedule would need about 3TiB of memory, more than the budget of 1GiB "
              "(--max-memory 1GiB); "
              "use fewer ranks, or raise the budget with --max-memory SIZE if the machine has the "
              "memory");
  }
  EXPECT_EQ(format_memory(1e40), "9.09e+27TiB");  // no overflow, no 30-digit number
}

TEST(Units, ConfigSizesNeedAUnit) {
  EXPECT_EQ(parse_bytes_with_unit("1GiB").value, std::uint64_t{1} << 30);
  EXPECT_EQ(parse_bytes_with_unit("0").value, 0u);
  EXPECT_THROW(parse_bytes_with_unit("1073741824"), InputError);
  EXPECT_EQ(parse_bytes("1073741824").value,
            std::uint64_t{1} << 30);  // nccl-tests style flags keep bare numbers
}

TEST(Units, HugeAndInfiniteTimesFormatShort) {
  EXPECT_EQ(format_time(Seconds{1.611e299}), "1.611e+299s");
  EXPECT_EQ(format_time(Seconds{1.0 / 0.0}), "inf");
  EXPECT_EQ(format_time(Seconds{2.5}), "2.500s");
}

}  // namespace
}  // namespace ssim
