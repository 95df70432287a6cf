// Rounds on demand: every algorithm of the registry is written once, as a C++20 coroutine that
// yields its rounds one at a time. The materialized Schedule (registry.hpp's generate) is built
// by draining the same coroutine, so a streamed schedule and a materialized one cannot differ.
//
//   RoundStream ring_rounds(int n) {       // a generator: co_yield each finished round
//     Round round;
//     for (...) { round.transfers.clear(); ...; co_yield round; }
//   }
//   GeneratedRounds g = generate_rounds("ring", 65536, Options{});
//   while (const Round* r = g.stream.next()) use(*r);     // memory: one round + the generator
//
// A yielded round lives in the generator's frame and stays valid until the next call to next().
// Exceptions thrown inside a generator (InputError on bad options, ...) propagate out of next().
// Generators keep O(ranks) state (StragglAR phase 2: O(ranks^2) bits, see stragglar.cpp).
#pragma once

#include <coroutine>
#include <exception>
#include <utility>
#include <vector>

#include "algorithms/schedule.hpp"

namespace ssim::alg {

class RoundStream {
 public:
  struct promise_type {
    const Round* current = nullptr;
    std::exception_ptr error;

    RoundStream get_return_object() {
      return RoundStream(std::coroutine_handle<promise_type>::from_promise(*this));
    }
    std::suspend_always initial_suspend() noexcept { return {}; }
    std::suspend_always final_suspend() noexcept { return {}; }
    std::suspend_always yield_value(const Round& round) noexcept {
      current = &round;
      return {};
    }
    void return_void() noexcept {}
    void unhandled_exception() noexcept { error = std::current_exception(); }
  };

  RoundStream() = default;
  RoundStream(RoundStream&& other) noexcept : handle_(std::exchange(other.handle_, {})) {}
  RoundStream& operator=(RoundStream&& other) noexcept {
    if (this != &other) {
      if (handle_) handle_.destroy();
      handle_ = std::exchange(other.handle_, {});
    }
    return *this;
  }
  RoundStream(const RoundStream&) = delete;
  RoundStream& operator=(const RoundStream&) = delete;
  ~RoundStream() {
    if (handle_) handle_.destroy();
  }

  // The next round, or nullptr after the last (and on every later call).
  const Round* next() {
    if (!handle_ || handle_.done()) return nullptr;
    handle_.promise().current = nullptr;
    handle_.resume();
    if (handle_.promise().error) std::rethrow_exception(std::exchange(handle_.promise().error, {}));
    return handle_.done() ? nullptr : handle_.promise().current;
  }

 private:
  explicit RoundStream(std::coroutine_handle<promise_type> h) : handle_(h) {}
  std::coroutine_handle<promise_type> handle_;
};

// `inner`'s rounds with rank r renamed perm[r] (as Schedule::relabel); perm is checked first.
RoundStream relabeled(RoundStream inner, std::vector<int> perm);

// `inner` (built with its straggler at rank n-1) with ranks `straggler` and n-1 swapped; `inner`
// itself when they are the same rank.
RoundStream with_straggler_at(RoundStream inner, int n, int straggler);

// Drains `stream` into `s.rounds` (after the rounds already there).
void append_rounds(Schedule& s, RoundStream stream);

}  // namespace ssim::alg
