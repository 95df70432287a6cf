#include "common/error.hpp"

namespace ssim {

void check_failed(const char* file, int line, const char* expr, const std::string& what) {
  throw InternalError(std::string("internal check failed at ") + file + ":" + std::to_string(line) +
                      ": " + expr + (what.empty() ? "" : " (" + what + ")"));
}

}  // namespace ssim
