#include "sim/fork_join.hpp"

#include <sched.h>

#include <chrono>

#include "common/error.hpp"

namespace ssim::sim {

namespace {

// Waiting for `ready()`: spin for kSpin (a step of the dataflow pass is tens of microseconds,
// a futex wake-up costs about as much on an idle machine), then yield the core until kYield (a
// loaded machine runs others meanwhile), then report false (the caller sleeps on a futex).
constexpr auto kSpin = std::chrono::microseconds(20);
constexpr auto kYield = std::chrono::microseconds(200);

void cpu_relax() {
#if defined(__x86_64__) || defined(__i386__)
  __builtin_ia32_pause();
#endif
}

template <typename Ready>
bool spin_then_yield(Ready ready) {
  if (ready()) return true;
  using Clock = std::chrono::steady_clock;
  const Clock::time_point start = Clock::now();
  for (;;) {
    for (int i = 0; i < 64; ++i) {
      if (ready()) return true;
      cpu_relax();
    }
    if (Clock::now() - start > kSpin) break;
  }
  for (;;) {
    if (ready()) return true;
    if (Clock::now() - start > kYield) return false;
    sched_yield();
  }
}

}  // namespace

ForkJoin::ForkJoin(int parts) : parts_(parts) {
  SSIM_CHECK(parts >= 1, "a fork-join team needs at least one part");
  counters_ = std::make_unique<Counter[]>(static_cast<std::size_t>(parts));
  threads_.reserve(static_cast<std::size_t>(parts - 1));
  for (int p = 1; p < parts; ++p) threads_.emplace_back([this, p] { worker(p); });
}

ForkJoin::~ForkJoin() {
  stop_.store(true, std::memory_order_seq_cst);
  step_.fetch_add(2, std::memory_order_seq_cst);
  step_.notify_all();
  for (std::thread& t : threads_) t.join();
}

void ForkJoin::work(std::uint32_t step, int part, std::size_t chunks,
                    const std::function<void(std::size_t)>& task) {
  for (int i = 0; i < parts_; ++i) {  // own share first, then the others'
    const int q = (part + i) % parts_;
    const std::uint64_t end = share_begin(chunks, q + 1);
    std::atomic<std::uint64_t>& word = counters_[static_cast<std::size_t>(q)].word;
    std::uint64_t w = word.load(std::memory_order_acquire);
    for (;;) {
      // Another step's counter: this step is over (its chunks are all done).
      if (static_cast<std::uint32_t>(w >> 32) != step) return;
      const std::uint64_t chunk = w & 0xffffffffu;
      if (chunk >= end) break;
      if (!word.compare_exchange_weak(w, w + 1, std::memory_order_acq_rel,
                                      std::memory_order_acquire))
        continue;
      try {
        task(static_cast<std::size_t>(chunk));
      } catch (...) {
        const std::lock_guard lock(error_mutex_);
        if (!error_) error_ = std::current_exception();
      }
      const std::uint32_t finished = done_.fetch_add(1, std::memory_order_acq_rel) + 1;
      if (finished == chunks && caller_sleeping_.load(std::memory_order_seq_cst))
        done_.notify_one();
      w = word.load(std::memory_order_acquire);
    }
  }
}

void ForkJoin::run(std::size_t chunks, const std::function<void(std::size_t)>& task) {
  SSIM_CHECK(chunks < (std::size_t{1} << 32), "too many chunks for one fork-join step");
  if (chunks == 0) return;
  error_ = nullptr;
  // step_ is a sequence lock over the step's description: odd while it is written, the step's
  // (even) number once it is complete. No chunk of the previous step is running here.
  const std::uint32_t step = step_.load(std::memory_order_relaxed) + 2;
  step_.store(step - 1, std::memory_order_relaxed);
  std::atomic_thread_fence(std::memory_order_release);
  task_.store(&task, std::memory_order_relaxed);
  chunks_.store(chunks, std::memory_order_relaxed);
  done_.store(0, std::memory_order_relaxed);
  for (int q = 0; q < parts_; ++q) {
    counters_[static_cast<std::size_t>(q)].word.store(
        (std::uint64_t{step} << 32) | share_begin(chunks, q), std::memory_order_relaxed);
  }
  step_.store(step, std::memory_order_seq_cst);  // publishes the above
  if (sleeping_workers_.load(std::memory_order_seq_cst) > 0) step_.notify_all();
  work(step, 0, chunks, task);
  const auto all_done = [&] { return done_.load(std::memory_order_acquire) == chunks; };
  if (!spin_then_yield(all_done)) {
    caller_sleeping_.store(true, std::memory_order_seq_cst);
    for (std::uint32_t d = done_.load(std::memory_order_seq_cst); d != chunks;
         d = done_.load(std::memory_order_seq_cst))
      done_.wait(d, std::memory_order_seq_cst);
    caller_sleeping_.store(false, std::memory_order_relaxed);
  }
  if (error_) std::rethrow_exception(error_);
}

void ForkJoin::worker(int part) {
  std::uint32_t seen = 0;
  for (;;) {
    const auto moved = [&] {
      const std::uint32_t now = step_.load(std::memory_order_acquire);
      return now != seen && now % 2 == 0;
    };
    if (!spin_then_yield(moved)) {
      sleeping_workers_.fetch_add(1, std::memory_order_seq_cst);
      while (!moved()) step_.wait(seen, std::memory_order_seq_cst);
      sleeping_workers_.fetch_sub(1, std::memory_order_relaxed);
    }
    // Read the step's description and check that it was not rewritten meanwhile (a worker
    // late enough to see a later step than the one it woke for just takes that one).
    const std::uint32_t step = step_.load(std::memory_order_acquire);
    if (step % 2 != 0) continue;
    const std::function<void(std::size_t)>* task = task_.load(std::memory_order_relaxed);
    const std::size_t chunks = chunks_.load(std::memory_order_relaxed);
    std::atomic_thread_fence(std::memory_order_acquire);
    if (step_.load(std::memory_order_relaxed) != step) continue;
    seen = step;
    if (stop_.load(std::memory_order_acquire)) return;
    // The claims check the step in the counters: a step that is over has nothing to claim.
    work(step, part, chunks, *task);
  }
}

}  // namespace ssim::sim
