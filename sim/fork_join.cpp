#include "sim/fork_join.hpp"

#include "common/error.hpp"

namespace ssim::sim {

namespace {
// Spins before sleeping: a round of the dataflow pass is a few microseconds, a futex wake-up
// costs about as much.
constexpr int kSpins = 200;

template <typename T, typename Pred>
void spin_then_wait(const std::atomic<T>& a, T seen, Pred done) {
  for (int i = 0; i < kSpins; ++i) {
    if (done()) return;
#if defined(__x86_64__) || defined(__i386__)
    __builtin_ia32_pause();
#endif
  }
  while (!done()) a.wait(seen, std::memory_order_acquire);
}
}  // namespace

ForkJoin::ForkJoin(int parts) : parts_(parts) {
  SSIM_CHECK(parts >= 1, "a fork-join team needs at least one part");
  threads_.reserve(static_cast<std::size_t>(parts - 1));
  for (int p = 1; p < parts; ++p) threads_.emplace_back([this, p] { worker(p); });
}

ForkJoin::~ForkJoin() {
  stop_.store(true, std::memory_order_release);
  generation_.fetch_add(1, std::memory_order_acq_rel);
  generation_.notify_all();
  for (std::thread& t : threads_) t.join();
}

void ForkJoin::run_part(int part) {
  try {
    (*task_)(part, parts_);
  } catch (...) {
    const std::lock_guard lock(error_mutex_);
    if (!error_) error_ = std::current_exception();
  }
}

void ForkJoin::run(const std::function<void(int, int)>& task) {
  task_ = &task;
  error_ = nullptr;
  pending_.store(parts_ - 1, std::memory_order_relaxed);
  generation_.fetch_add(1, std::memory_order_acq_rel);  // publishes task_ and pending_
  generation_.notify_all();
  run_part(0);
  for (int left = pending_.load(std::memory_order_acquire); left != 0;
       left = pending_.load(std::memory_order_acquire)) {
    spin_then_wait(pending_, left,
                   [&] { return pending_.load(std::memory_order_acquire) != left; });
  }
  task_ = nullptr;
  if (error_) std::rethrow_exception(error_);
}

void ForkJoin::worker(int part) {
  std::uint64_t seen = 0;
  for (;;) {
    spin_then_wait(generation_, seen,
                   [&] { return generation_.load(std::memory_order_acquire) != seen; });
    seen = generation_.load(std::memory_order_acquire);
    if (stop_.load(std::memory_order_acquire)) return;
    run_part(part);
    if (pending_.fetch_sub(1, std::memory_order_acq_rel) == 1) pending_.notify_one();
  }
}

}  // namespace ssim::sim
