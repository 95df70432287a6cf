// The one error policy (common/error.hpp): one prefix, one exit code per class, and internal
// errors that say they are bugs and ask for a report.
#include "common/error.hpp"

#include <gtest/gtest.h>

#include <new>
#include <sstream>

namespace ssim {
namespace {

template <typename E>
std::pair<int, std::string> report(const E& error) {
  std::ostringstream err;
  try {
    throw error;
  } catch (...) {
    const int rc = report_exception("prog", err);
    return {rc, err.str()};
  }
}

TEST(ErrorPolicy, OneExitCodePerClassAndOnePrefix) {
  EXPECT_EQ(report(InputError("f.yaml:1:2: key: bad")),
            std::make_pair(1, std::string("prog: error: f.yaml:1:2: key: bad\n")));
  EXPECT_EQ(report(UsageError("unknown subcommand 'x'")).first, kExitUsage);
  EXPECT_EQ(report(ResourceError("would need 1TiB")).first, kExitResource);
  EXPECT_EQ(report(std::bad_alloc()).first, kExitResource);
  EXPECT_NE(report(std::bad_alloc()).second.find("prog: error: out of memory"), std::string::npos);
  EXPECT_EQ(kExitInput, 1);
  EXPECT_EQ(kExitUsage, 2);
  EXPECT_EQ(kExitResource, 3);
  EXPECT_EQ(kExitInternal, 4);
}

TEST(ErrorPolicy, InterruptedIsNotAnErrorAndExitsWith128PlusTheSignal) {
  EXPECT_EQ(report(Interrupted(2, "SIGINT: stopped")),
            std::make_pair(130, std::string("prog: interrupted: SIGINT: stopped\n")));
  EXPECT_EQ(report(Interrupted(15, "SIGTERM: stopped")).first, 143);
}

TEST(ErrorPolicy, InternalErrorsSayTheyAreBugsAndAskForAReport) {
  std::ostringstream err;
  int rc = 0;
  try {
    SSIM_CHECK(1 + 1 == 3, "arithmetic");
  } catch (...) {
    rc = report_exception("prog", err);
  }
  EXPECT_EQ(rc, kExitInternal);
  EXPECT_EQ(err.str().rfind("prog: error: internal check failed at ", 0), 0u) << err.str();
  EXPECT_NE(err.str().find("This is a bug in stragglesim"), std::string::npos) << err.str();
  EXPECT_NE(err.str().find("please report it"), std::string::npos) << err.str();
  const auto other = report(std::out_of_range("vector::at"));
  EXPECT_EQ(other.first, kExitInternal);
  EXPECT_NE(other.second.find("prog: error: internal error: unexpected exception: vector::at"),
            std::string::npos);
  EXPECT_NE(other.second.find("please report it"), std::string::npos);
}

}  // namespace
}  // namespace ssim
