// Error types shared by every layer, and the one error policy of the command-line programs.
//
//   InputError    - the user gave us something wrong (YAML field, schedule file, unit, file).
//   UsageError    - the command line itself is wrong (unknown subcommand, conflicting flags).
//   ResourceError - the input is valid but would need more memory (or time) than allowed.
//   SSIM_CHECK    - an internal invariant; always on (not assert), reports file:line;
//                   throws InternalError (a bug in stragglesim, never the user's fault).
//
// Every error is thrown where it is found and caught once in main(), which calls
// report_exception(): one message "PROGRAM: error: ..." on stderr and the exit code of its class.
//
//   if (ranks < 2) throw ssim::InputError("--ranks must be >= 2, got " + std::to_string(ranks));
//   SSIM_CHECK(queue.empty(), "events left after the run");
//   try { ... } catch (...) { return ssim::report_exception("stragglesim", std::cerr); }
#pragma once

#include <ostream>
#include <stdexcept>
#include <string>
#include <string_view>

namespace ssim {

class InputError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

class UsageError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

class ResourceError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

class InternalError : public std::logic_error {
 public:
  using std::logic_error::logic_error;
};

// The user stopped the program (SIGINT, SIGTERM; common/interrupt.hpp): not an error. Reported
// as "PROGRAM: interrupted: ..." with exit 128 + the signal's number (130, 143).
class Interrupted : public std::runtime_error {
 public:
  Interrupted(int signal_number, const std::string& what)
      : std::runtime_error(what), signal_(signal_number) {}
  int signal_number() const { return signal_; }

 private:
  int signal_;
};

// One exit code per class of error (docs/cli.md, "Errors, exit codes and resource limits").
enum ExitCode : int {
  kExitOk = 0,
  kExitInput = 1,     // bad input: a file, a config value, a unit
  kExitUsage = 2,     // bad command line
  kExitResource = 3,  // over the memory budget, or out of memory
  kExitInternal = 4,  // a bug: a broken invariant or an exception nobody expected
};

// Call inside a catch block (or with std::current_exception() set): writes one message
// "PROGRAM: error: ..." to `err` and returns the exit code of the exception's class
// (Interrupted: "PROGRAM: interrupted: ...", 128 + the signal).
// Anything that is not one of the classes above is reported as an internal error that asks
// for a bug report. A non-empty `context` (e.g. "rank 1 of 4" in a multi-process driver) goes
// after the prefix: "PROGRAM: error: CONTEXT: ...".
int report_exception(std::string_view program, std::ostream& err, std::string_view context = {});

// `text` with its control characters other than line breaks and tabs shown as \xNN: what every
// error message goes through before it is printed, since messages quote what the user gave.
std::string printable(std::string_view text);

[[noreturn]] void check_failed(const char* file, int line, const char* expr,
                               const std::string& what);

}  // namespace ssim

#define SSIM_CHECK(cond, what)                                            \
  do {                                                                    \
    if (!(cond)) ::ssim::check_failed(__FILE__, __LINE__, #cond, (what)); \
  } while (0)
