// The JSON form of a schedule (DESIGN.md, stable; other tools read it):
//
//   {"collective": "allreduce", "algorithm": "ring", "ranks": 4, "chunks": 4,
//    "straggler": null, "options": {},
//    "rounds": [{"phase": "reduce-scatter",
//                "transfers": [{"src": 0, "dst": 1, "chunks": [0, 1], "op": "reduce"}]}]}
//
//   write_schedule_json(std::cout, schedule);
//   Schedule s = read_schedule_json(text, "plan.json");   // throws ssim::InputError
//   StreamedVerify v = verify_schedule_json(file, "plan.json");  // streamed, round by round
//
// Reading checks the form only (types, keys, ranges of the header); run verify() for the rest.
// Errors name the source, the line and column (syntax) or the key path (content).
#pragma once

#include <functional>
#include <istream>
#include <ostream>
#include <string>
#include <string_view>

#include "algorithms/schedule.hpp"
#include "algorithms/schedule_writer.hpp"
#include "algorithms/verifier.hpp"

namespace ssim::alg {

// One round per line, so large schedules stay greppable and diffable.
void write_schedule_json(std::ostream& os, const Schedule& schedule);
// The same output written round by round (for streamed schedules; ScheduleWriter says how). Text
// is formatted into the buffer with std::to_chars.
class ScheduleJsonWriter final : public ScheduleWriter {
 public:
  ScheduleJsonWriter(std::ostream& os, const Schedule& header);
  void round(const Round& round) override;
  void finish() override;

 private:
  std::size_t rounds_ = 0;
};
std::string schedule_to_json(const Schedule& schedule);

// The whole document at once: the streamed reader below with a sink that keeps every round
// (the same checks and messages; the header the reader returns, with the rounds).
Schedule read_schedule_json(std::string_view text, std::string_view source_name);

// The reader (nlohmann's SAX parser): the rounds go to a sink one at a time as soon as each is
// complete, so memory holds the header, one round and the key path, whatever the
// number of rounds (no size limit needed). The "rounds" array streams when "collective", "ranks"
// and "chunks" (and "straggler", if "late" is given) come before it, as `schedule` writes them;
// otherwise its rounds are held until the header is complete, then passed on (a whole
// document's memory). Values nested deeper than 512 levels are refused (a schedule has 6).
class ScheduleJsonSink {
 public:
  virtual ~ScheduleJsonSink() = default;
  // Once, before the first round: collective, ranks and chunks are final; keys that come after
  // "rounds" in the file are not in it (the complete header is what the reader returns).
  virtual void header(const Schedule& header) = 0;
  virtual void round(const Round& round) = 0;
};
// Reads all of `in`; throws InputError for the first problem (errors rank: syntax, the first
// duplicate key, the top level, the header, the first bad round), which wins over anything the
// sink threw: a sink's exception is kept and rethrown at the end, and no round reaches the sink
// after a problem was found.
Schedule read_schedule_json(std::istream& in, std::string_view source_name, ScheduleJsonSink& sink);

// `stragglesim verify`: reads `in` streamed and verifies each round as it arrives (RoundVerifier).
// `before` sees the header before the verifier is built (the CLI's memory check); `each` sees every
// round after the verifier (a caller that keeps them); what they throw is rethrown, unless the
// input has a form error. When the fast path gives up and the input is read again, `before` is
// called again and `each` starts again from the first round.
struct StreamedVerify {
  Schedule header;  // no rounds
  VerifyResult result;
};
StreamedVerify verify_schedule_json(std::istream& in, std::string_view source_name,
                                    const std::function<void(const Schedule& header)>& before = {},
                                    const std::function<void(const Round& round)>& each = {});

}  // namespace ssim::alg
