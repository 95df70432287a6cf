// A fixed team of worker threads for fork-join steps that are too short for a thread per step:
// the dataflow pass forks once or twice per round (microseconds of work each).
//
//   ForkJoin team(4);                        // the calling thread plus 3 workers
//   team.run([&](int part, int parts) {      // part in [0, parts); the caller runs part 0
//     for (std::size_t i = part; i < n; i += parts) work(i);
//   });                                      // returns when every part is done
//
// Workers spin briefly for the next step and then sleep (std::atomic::wait). An exception in
// a part is rethrown by run() (the first one; the others' parts still finish).
#pragma once

#include <atomic>
#include <exception>
#include <functional>
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
  void run(const std::function<void(int part, int parts)>& task);

 private:
  void worker(int part);
  void run_part(int part);

  int parts_;
  const std::function<void(int, int)>* task_ = nullptr;
  std::atomic<std::uint64_t> generation_{0};  // bumped per step; odd/even does not matter
  std::atomic<int> pending_{0};               // parts of the current step not yet done
  std::atomic<bool> stop_{false};
  std::mutex error_mutex_;
  std::exception_ptr error_;
  std::vector<std::thread> threads_;
};

}  // namespace ssim::sim
