#include "common/interrupt.hpp"

#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <csignal>
#include <cstring>

#include "common/error.hpp"

namespace ssim {
namespace {

std::atomic<int> received{0};
static_assert(std::atomic<int>::is_always_lock_free,
              "the handler may only touch lock-free atomics");
char note_text[512];
std::size_t note_size = 0;
struct sigaction previous_int {};
struct sigaction previous_term {};

extern "C" void on_signal(int signal_number) {
  received.store(signal_number);
  // write(2) is async-signal-safe; its result is of no use here.
  if (note_size > 0) {
    const ssize_t n = ::write(STDERR_FILENO, note_text, note_size);
    (void)n;
  }
}

}  // namespace

InterruptGuard::InterruptGuard(const std::string& note) {
  const std::string text = "\n" + note + " (press Ctrl-C again to stop at once)\n";
  note_size = std::min(text.size(), sizeof note_text);
  std::memcpy(note_text, text.data(), note_size);
  struct sigaction sa {};
  sa.sa_handler = on_signal;
  sigemptyset(&sa.sa_mask);
  sa.sa_flags = SA_RESETHAND | SA_RESTART;
  sigaction(SIGINT, &sa, &previous_int);
  sigaction(SIGTERM, &sa, &previous_term);
}

InterruptGuard::~InterruptGuard() {
  sigaction(SIGINT, &previous_int, nullptr);
  sigaction(SIGTERM, &previous_term, nullptr);
}

int interrupt_signal() { return received.load(std::memory_order_relaxed); }

std::string signal_name(int signal_number) {
  if (signal_number == SIGINT) return "SIGINT";
  if (signal_number == SIGTERM) return "SIGTERM";
  return "signal " + std::to_string(signal_number);
}

void throw_if_interrupted(const std::string& what) {
  if (const int s = interrupt_signal(); s != 0) throw Interrupted(s, signal_name(s) + ": " + what);
}

void clear_interrupt_signal() { received.store(0); }

}  // namespace ssim
