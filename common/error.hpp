// Error types shared by every layer.
//
//   InputError  - the user gave us something wrong (CLI flag, YAML field, schedule file, unit).
//                 Thrown anywhere, caught once in main(): one clear message, non-zero exit.
//   SSIM_CHECK  - an internal invariant; always on (not assert), reports file:line.
//
//   if (ranks < 2) throw ssim::InputError("--ranks must be >= 2, got " + std::to_string(ranks));
//   SSIM_CHECK(queue.empty(), "events left after the run");
#pragma once

#include <stdexcept>
#include <string>

namespace ssim {

class InputError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

class InternalError : public std::logic_error {
 public:
  using std::logic_error::logic_error;
};

[[noreturn]] void check_failed(const char* file, int line, const char* expr, const std::string& what);

}  // namespace ssim

#define SSIM_CHECK(cond, what)                                  \
  do {                                                          \
    if (!(cond)) ::ssim::check_failed(__FILE__, __LINE__, #cond, (what)); \
  } while (0)
