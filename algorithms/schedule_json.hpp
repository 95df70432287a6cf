// The JSON form of a schedule (DESIGN.md, stable; other tools read it):
//
//   {"collective": "allreduce", "algorithm": "ring", "ranks": 4, "chunks": 4,
//    "straggler": null, "options": {},
//    "rounds": [{"phase": "reduce-scatter",
//                "transfers": [{"src": 0, "dst": 1, "chunks": [0, 1], "op": "reduce"}]}]}
//
//   write_schedule_json(std::cout, schedule);
//   Schedule s = read_schedule_json(text, "plan.json");   // throws ssim::InputError
//
// Reading checks the form only (types, keys, ranges of the header); run verify() for the rest.
// Errors name the source, the line and column (syntax) or the key path (content).
#pragma once

#include <ostream>
#include <string>
#include <string_view>

#include "algorithms/schedule.hpp"

namespace ssim::alg {

// One round per line, so large schedules stay greppable and diffable.
void write_schedule_json(std::ostream& os, const Schedule& schedule);
// The same output written round by round (for streamed schedules): the header from a Schedule
// whose rounds are ignored, then each round, then finish().
class ScheduleJsonWriter {
 public:
  ScheduleJsonWriter(std::ostream& os, const Schedule& header);
  void round(const Round& round);
  void finish();

 private:
  std::ostream& os_;
  std::size_t rounds_ = 0;
};
std::string schedule_to_json(const Schedule& schedule);

Schedule read_schedule_json(std::string_view text, std::string_view source_name);

}  // namespace ssim::alg
