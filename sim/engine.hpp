// The discrete-event engine: a time-ordered queue of events, each addressed to a handler with
// a 64-bit tag the handler interprets. It knows nothing of collectives, networks or ranks.
//
//   struct Printer : EventHandler {
//     void on_event(Engine& e, std::uint64_t tag) override { std::cout << e.now().value << " " <<
//     tag; }
//   } p;
//   Engine engine;
//   engine.schedule(Seconds{2e-6}, p, 7);
//   engine.schedule(Seconds{1e-6}, p, 8);
//   engine.run();                         // prints "1e-06 8", then "2e-06 7"
//
// Time is double seconds (the project-wide choice; integer picoseconds would round every
// transfer and break the 1e-9 agreement with the closed-form costs). Events at equal times
// run in the order they were scheduled (a sequence number breaks ties), so runs are
// deterministic. A handler cancels an event by ignoring it (e.g. a version number in the tag).
#pragma once

#include <cstdint>
#include <vector>

#include "common/units.hpp"

namespace ssim::sim {

class Engine;

class EventHandler {
 public:
  virtual void on_event(Engine& engine, std::uint64_t tag) = 0;

 protected:
  ~EventHandler() = default;
};

class Engine {
 public:
  // Queues an event; once events run, `at` must not lie before now(). Any time (even a
  // negative one) is fine before the first event runs.
  void schedule(Seconds at, EventHandler& handler, std::uint64_t tag);
  // Time of the event being (or last) processed; 0 before the first.
  Seconds now() const { return Seconds{now_}; }
  // Runs the earliest event; false when the queue is empty.
  bool step();
  // Runs events until the queue is empty.
  void run();
  std::size_t pending() const { return heap_.size(); }
  std::uint64_t processed() const { return processed_; }
  // Drops pending events and returns to time 0, keeping the queue's storage.
  void reset();

 private:
  struct Event {
    double time;
    std::uint64_t seq;
    EventHandler* handler;
    std::uint64_t tag;
  };
  // Min-heap order on (time, seq).
  static bool later(const Event& a, const Event& b) {
    return a.time != b.time ? a.time > b.time : a.seq > b.seq;
  }

  std::vector<Event> heap_;
  double now_ = 0.0;
  std::uint64_t next_seq_ = 0;
  std::uint64_t processed_ = 0;
};

}  // namespace ssim::sim
