#include "sim/engine.hpp"

#include <algorithm>

#include "common/error.hpp"

namespace ssim::sim {

void Engine::schedule(Seconds at, EventHandler& handler, std::uint64_t tag) {
  SSIM_CHECK(processed_ == 0 || at.value >= now_, "event scheduled in the past");
  heap_.push_back(Event{at.value, next_seq_++, &handler, tag});
  std::push_heap(heap_.begin(), heap_.end(), later);
}

bool Engine::step() {
  if (heap_.empty()) return false;
  std::pop_heap(heap_.begin(), heap_.end(), later);
  const Event e = heap_.back();
  heap_.pop_back();
  now_ = e.time;
  ++processed_;
  e.handler->on_event(*this, e.tag);
  return true;
}

void Engine::run() {
  while (step()) {
  }
}

void Engine::reset() {
  heap_.clear();
  now_ = 0.0;
  next_seq_ = 0;
  processed_ = 0;
}

}  // namespace ssim::sim
