// The writer of the schedule JSON form (schedule_json.hpp); the reader is schedule_json.cpp.
#include <charconv>
#include <cstdint>
#include <nlohmann/json.hpp>
#include <ostream>
#include <sstream>
#include <string>

#include "algorithms/schedule_json.hpp"

namespace ssim::alg {

using nlohmann::json;

ScheduleJsonWriter::ScheduleJsonWriter(std::ostream& os, const Schedule& s) : ScheduleWriter(os) {
  json header = json::object();
  header["collective"] = std::string(to_string(s.collective));
  header["algorithm"] = s.algorithm;
  header["straggler"] = s.straggler ? json(*s.straggler) : json(nullptr);
  header["options"] = s.options;
  buffer_ = "{\"collective\": " + header["collective"].dump() +
            ", \"algorithm\": " + header["algorithm"].dump() +
            ", \"ranks\": " + std::to_string(s.ranks) +
            ", \"chunks\": " + std::to_string(s.chunks) +
            ", \"straggler\": " + header["straggler"].dump() +
            ", \"options\": " + header["options"].dump();
  if (!s.late.empty()) buffer_ += ", \"late\": " + json(s.late).dump();
  buffer_ += ",\n \"rounds\": [";
}

namespace {

void append_int(std::string& out, std::int32_t v) {
  char digits[16];
  const char* end = std::to_chars(digits, digits + sizeof digits, v).ptr;
  out.append(digits, static_cast<std::size_t>(end - digits));
}

// The phase as nlohmann's dump() writes a string: printable ASCII other than '"' and '\\' as is,
// anything else (escapes, UTF-8, which dump() checks) through dump() itself.
void append_phase(std::string& out, const std::string& phase) {
  for (const char c : phase) {
    const auto u = static_cast<unsigned char>(c);
    if (u < 0x20 || u >= 0x7f || c == '"' || c == '\\') {
      out += json(phase).dump();
      return;
    }
  }
  out += '"';
  out += phase;
  out += '"';
}

}  // namespace

// Byte for byte what nlohmann's dump() of the round as a json object gives (keys sorted, no
// spaces), without building the json value: one round is all this writes at a time.
void ScheduleJsonWriter::round(const Round& round) {
  std::string& out = buffer_;
  out.append(rounds_++ ? ",\n  " : "\n  ");
  out += '{';
  if (!round.phase.empty()) {
    out.append("\"phase\":");
    append_phase(out, round.phase);
    out += ',';
  }
  if (!round.switch_reduces.empty()) {  // absent otherwise: files without it read as before
    out.append("\"switch_reduces\":[");
    bool first_op = true;
    for (const SwitchReduce& g : round.switch_reduces) {
      out.append(first_op ? "{\"chunks\":[" : ",{\"chunks\":[");
      first_op = false;
      append_int(out, g.chunk_begin);
      out += ',';
      append_int(out, g.chunk_end);
      out.append("],\"members\":[");
      for (std::size_t i = 0; i < g.members.size(); ++i) {
        if (i) out += ',';
        append_int(out, g.members[i]);
      }
      out.append("],\"receivers\":[");
      for (std::size_t i = 0; i < g.receivers.size(); ++i) {
        if (i) out += ',';
        append_int(out, g.receivers[i]);
      }
      out.append("]}");
    }
    out.append("],");
  }
  out.append("\"transfers\":[");
  bool first = true;
  for (const Transfer& t : round.transfers) {
    out.append(first ? "{\"chunks\":[" : ",{\"chunks\":[");
    first = false;
    append_int(out, t.chunk_begin);
    out += ',';
    append_int(out, t.chunk_end);
    out.append("],\"dst\":");
    append_int(out, t.dst);
    out.append(t.op == Op::reduce ? ",\"op\":\"reduce\",\"src\":" : ",\"op\":\"copy\",\"src\":");
    append_int(out, t.src);
    out += '}';
    if (out.size() >= kFlushBytes) write_buffer();
  }
  out.append("]}");
  if (out.size() >= kFlushBytes) write_buffer();
}

void ScheduleJsonWriter::finish() {
  buffer_.append(rounds_ == 0 ? "]}\n" : "\n ]}\n");
  write_buffer();
}

void write_schedule_json(std::ostream& os, const Schedule& s) {
  ScheduleJsonWriter writer(os, s);
  for (const Round& r : s.rounds) writer.round(r);
  writer.finish();
}

std::string schedule_to_json(const Schedule& schedule) {
  std::ostringstream os;
  write_schedule_json(os, schedule);
  return os.str();
}

}  // namespace ssim::alg
