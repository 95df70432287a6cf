// A fixed team of worker threads for fork-join steps that are too short for a thread per step:
// the dataflow pass forks twice per round (tens of microseconds of work each).
//
//   ForkJoin team(2);                               // the calling thread plus 1 worker
//   team.run(chunks, [&](std::size_t c) {           // every chunk c in [0, chunks) once
//     for (std::size_t i = c * n / chunks; i < (c + 1) * n / chunks; ++i) work(i);
//   });                                             // returns when every chunk is done
//
// Chunks are claimed, not assigned: thread p first takes the chunks of its own share
// [chunks * p / P, chunks * (p + 1) / P) in order (so with every thread running, the same
// thread gets the same part of consecutive steps, and its data stay in its cache), then takes
// what is left of the others' shares. The caller works too, so a worker that is slow to wake
// (a loaded machine, where it waits for a core) only loses its chunks to the others: the step
// never waits for a thread that has not started. A thread with nothing to do spins (bounded),
// then yields the core (bounded), then sleeps on a futex (std::atomic::wait).
// An exception in a chunk is rethrown by run() (the first one; the other chunks still run).
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <exception>
#include <functional>
#include <memory>
#include <mutex>
#include <thread>
#include <vector>

namespace ssim::sim {

class ForkJoin {
 public:
  explicit ForkJoin(int parts);  // parts >= 1; parts - 1 threads are started
  ~ForkJoin();
  ForkJoin(const ForkJoin&) = delete;
  ForkJoin& operator=(const ForkJoin&) = delete;

  int parts() const { return parts_; }
  // Runs task(c) for every c in [0, chunks) (chunks < 2^32), on the team; returns when all
  // are done.
  void run(std::size_t chunks, const std::function<void(std::size_t chunk)>& task);

 private:
  // Per thread: (step << 32) | the next chunk of its share, in a cache line of its own.
  struct alignas(64) Counter {
    std::atomic<std::uint64_t> word{0};
  };

  void worker(int part);
  // Claims and runs chunks of step `step` until none is left.
  void work(std::uint32_t step, int part, std::size_t chunks,
            const std::function<void(std::size_t)>& task);
  std::size_t share_begin(std::size_t chunks, int part) const {
    return chunks * static_cast<std::size_t>(part) / static_cast<std::size_t>(parts_);
  }

  int parts_;
  std::unique_ptr<Counter[]> counters_;
  std::atomic<const std::function<void(std::size_t)>*> task_{nullptr};
  std::atomic<std::size_t> chunks_{0};
  std::atomic<std::uint32_t> step_{0};  // bumped per run(); workers wait on it
  std::atomic<std::uint32_t> done_{0};  // chunks of the current step done; the caller waits on it
  std::atomic<int> sleeping_workers_{0};
  std::atomic<bool> caller_sleeping_{false};
  std::atomic<bool> stop_{false};
  std::mutex error_mutex_;
  std::exception_ptr error_;
  std::vector<std::thread> threads_;
};

}  // namespace ssim::sim
