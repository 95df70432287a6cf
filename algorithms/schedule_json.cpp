#include "algorithms/schedule_json.hpp"

#include <algorithm>
#include <nlohmann/json.hpp>
#include <optional>
#include <set>
#include <sstream>
#include <vector>

#include "common/error.hpp"

namespace ssim::alg {
namespace {

using nlohmann::json;

json round_to_json(const Round& round) {
  json transfers = json::array();
  for (const Transfer& t : round.transfers) {
    transfers.push_back(json{{"src", t.src},
                             {"dst", t.dst},
                             {"chunks", json::array({t.chunk_begin, t.chunk_end})},
                             {"op", std::string(to_string(t.op))}});
  }
  json r = json::object();
  if (!round.phase.empty()) r["phase"] = round.phase;
  r["transfers"] = std::move(transfers);
  return r;
}

// Converts a byte offset into "line L, column C" (both 1-based).
std::string position_of(std::string_view text, std::size_t byte) {
  std::size_t line = 1, column = 1;
  for (std::size_t i = 0; i < byte && i < text.size(); ++i) {
    if (text[i] == '\n') {
      ++line;
      column = 1;
    } else {
      ++column;
    }
  }
  return "line " + std::to_string(line) + ", column " + std::to_string(column);
}

// nlohmann keeps the last of two equal keys without a word; a schedule with two "src" in one
// transfer is an error. Parser callback that records the key path of the first duplicate.
class DuplicateKeys {
 public:
  bool operator()(int /*depth*/, nlohmann::json::parse_event_t event, nlohmann::json& parsed) {
    using E = nlohmann::json::parse_event_t;
    switch (event) {
      case E::object_start:
      case E::array_start:
        count_element();
        frames_.push_back(Frame{event == E::object_start, {}, {}, -1});
        break;
      case E::object_end:
      case E::array_end:
        if (!frames_.empty()) frames_.pop_back();
        break;
      case E::key:
        if (!frames_.empty() && parsed.is_string()) {
          Frame& f = frames_.back();
          f.key = parsed.get<std::string>();
          if (!f.keys.insert(f.key).second && !first_) first_ = path();
        }
        break;
      case E::value:
        count_element();
        break;
    }
    return true;
  }
  const std::optional<std::string>& first() const { return first_; }

 private:
  struct Frame {
    bool object;
    std::set<std::string> keys;
    std::string key;
    long long index;
  };
  void count_element() {
    if (!frames_.empty() && !frames_.back().object) ++frames_.back().index;
  }
  std::string path() const {
    std::string p;
    for (const Frame& f : frames_) {
      if (f.object) {
        p += (p.empty() ? "" : ".") + f.key;
      } else {
        p += "[" + std::to_string(f.index) + "]";
      }
    }
    return p;
  }
  std::vector<Frame> frames_;
  std::optional<std::string> first_;
};

class Reader {
 public:
  explicit Reader(std::string_view source) : source_(source) {}

  [[noreturn]] void fail(const std::string& path, const std::string& what) const {
    throw InputError(std::string(source_) + ": " + path + ": " + what);
  }

  const json& member(const json& obj, const std::string& path, const char* key) const {
    auto it = obj.find(key);
    if (it == obj.end()) fail(path, std::string("missing key '") + key + "'");
    return *it;
  }

  int integer(const json& v, const std::string& path, long long lo, long long hi) const {
    if (!v.is_number_integer()) fail(path, "expected an integer, got " + std::string(v.type_name()) + " " + v.dump());
    const long long x = v.get<long long>();
    if (x < lo || x > hi) {
      fail(path, "value " + std::to_string(x) + " out of range [" + std::to_string(lo) + ", " + std::to_string(hi) + "]");
    }
    return static_cast<int>(x);
  }

  std::string string(const json& v, const std::string& path) const {
    if (!v.is_string()) fail(path, "expected a string, got " + std::string(v.type_name()) + " " + v.dump());
    return v.get<std::string>();
  }

  void only_keys(const json& obj, const std::string& path, std::initializer_list<const char*> keys) const {
    for (auto it = obj.begin(); it != obj.end(); ++it) {
      bool known = false;
      for (const char* k : keys) known = known || it.key() == k;
      if (!known) {
        std::string list;
        for (const char* k : keys) list += (list.empty() ? "" : ", ") + std::string(k);
        fail(path, "unknown key '" + it.key() + "' (expected: " + list + ")");
      }
    }
  }

 private:
  std::string_view source_;
};

constexpr long long kMaxRanks = 1 << 24;
constexpr long long kMaxChunks = 1 << 30;

}  // namespace

ScheduleJsonWriter::ScheduleJsonWriter(std::ostream& os, const Schedule& s) : os_(os) {
  json header = json::object();
  header["collective"] = std::string(to_string(s.collective));
  header["algorithm"] = s.algorithm;
  header["ranks"] = s.ranks;
  header["chunks"] = s.chunks;
  header["straggler"] = s.straggler ? json(*s.straggler) : json(nullptr);
  header["options"] = s.options;
  os << "{\"collective\": " << header["collective"].dump() << ", \"algorithm\": " << header["algorithm"].dump()
     << ", \"ranks\": " << s.ranks << ", \"chunks\": " << s.chunks << ", \"straggler\": " << header["straggler"].dump()
     << ", \"options\": " << header["options"].dump();
  if (!s.late.empty()) os << ", \"late\": " << json(s.late).dump();
  os << ",\n \"rounds\": [";
}

void ScheduleJsonWriter::round(const Round& round) {
  os_ << (rounds_++ ? ",\n  " : "\n  ") << round_to_json(round).dump();
}

void ScheduleJsonWriter::finish() { os_ << (rounds_ == 0 ? "]}\n" : "\n ]}\n"); }

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

Schedule read_schedule_json(std::string_view text, std::string_view source_name) {
  json doc;
  DuplicateKeys duplicates;
  try {
    doc = json::parse(text.begin(), text.end(),
                      [&duplicates](int depth, json::parse_event_t event, json& parsed) {
                        return duplicates(depth, event, parsed);
                      });
  } catch (const json::parse_error& e) {
    std::string what = e.what();
    // nlohmann's message starts with "[json.exception.parse_error.101] parse error at line L, column C: ..."
    const auto colon = what.find(": ");
    throw InputError(std::string(source_name) + ": " + position_of(text, e.byte > 0 ? e.byte - 1 : 0) +
                     ": malformed JSON: " + (colon == std::string::npos ? what : what.substr(colon + 2)));
  } catch (const json::exception& e) {  // e.g. out_of_range 406: a number beyond double, 1e400
    const std::string what = e.what();
    const auto bracket = what.find("] ");
    throw InputError(std::string(source_name) + ": malformed JSON: " +
                     (bracket == std::string::npos ? what : what.substr(bracket + 2)));
  }
  Reader in(source_name);
  if (duplicates.first())
    in.fail(*duplicates.first(), "duplicate key (a key may appear once per object)");
  if (!doc.is_object()) in.fail("(top level)", "expected an object, got " + std::string(doc.type_name()));
  in.only_keys(
      doc, "(top level)",
      {"collective", "algorithm", "ranks", "chunks", "straggler", "late", "options", "rounds"});

  Schedule s;
  if (auto it = doc.find("collective"); it != doc.end()) {
    try {
      s.collective = parse_collective(in.string(*it, "collective"));
    } catch (const InputError& e) {
      in.fail("collective", e.what());
    }
  }
  if (auto it = doc.find("algorithm"); it != doc.end() && !it->is_null()) s.algorithm = in.string(*it, "algorithm");
  s.ranks = in.integer(in.member(doc, "(top level)", "ranks"), "ranks", 1, kMaxRanks);
  s.chunks = in.integer(in.member(doc, "(top level)", "chunks"), "chunks", 1, kMaxChunks);
  if (auto it = doc.find("straggler"); it != doc.end() && !it->is_null()) {
    s.straggler = in.integer(*it, "straggler", 0, s.ranks - 1);
  }
  if (auto it = doc.find("late"); it != doc.end() && !it->is_null()) {
    if (!it->is_array())
      in.fail("late", "expected an array of ranks, got " + std::string(it->type_name()));
    for (std::size_t i = 0; i < it->size(); ++i) {
      const std::string path = "late[" + std::to_string(i) + "]";
      const int r = in.integer((*it)[i], path, 0, s.ranks - 1);
      if (std::find(s.late.begin(), s.late.end(), r) != s.late.end())
        in.fail(path, "rank listed twice");
      s.late.push_back(r);
    }
    if (!s.late.empty() && s.straggler != s.late.back())
      in.fail("late", "the last late rank must be the straggler");
  }
  if (auto it = doc.find("options"); it != doc.end() && !it->is_null()) {
    if (!it->is_object()) in.fail("options", "expected an object of strings");
    for (auto o = it->begin(); o != it->end(); ++o) {
      s.options[o.key()] = o->is_string() ? o->get<std::string>() : o->dump();
    }
  }
  const json& rounds = in.member(doc, "(top level)", "rounds");
  if (!rounds.is_array()) in.fail("rounds", "expected an array, got " + std::string(rounds.type_name()));
  s.rounds.reserve(rounds.size());
  for (std::size_t ri = 0; ri < rounds.size(); ++ri) {
    const std::string rpath = "rounds[" + std::to_string(ri) + "]";
    const json& r = rounds[ri];
    if (!r.is_object()) in.fail(rpath, "expected an object, got " + std::string(r.type_name()));
    in.only_keys(r, rpath, {"phase", "transfers"});
    Round& round = s.add_round();
    if (auto it = r.find("phase"); it != r.end() && !it->is_null()) round.phase = in.string(*it, rpath + ".phase");
    const json& ts = in.member(r, rpath, "transfers");
    if (!ts.is_array()) in.fail(rpath + ".transfers", "expected an array, got " + std::string(ts.type_name()));
    round.transfers.reserve(ts.size());
    for (std::size_t ti = 0; ti < ts.size(); ++ti) {
      const std::string tpath = rpath + ".transfers[" + std::to_string(ti) + "]";
      const json& t = ts[ti];
      if (!t.is_object()) in.fail(tpath, "expected an object, got " + std::string(t.type_name()));
      in.only_keys(t, tpath, {"src", "dst", "chunks", "op"});
      Transfer tr;
      tr.src = in.integer(in.member(t, tpath, "src"), tpath + ".src", 0, s.ranks - 1);
      tr.dst = in.integer(in.member(t, tpath, "dst"), tpath + ".dst", 0, s.ranks - 1);
      const json& ch = in.member(t, tpath, "chunks");
      if (!ch.is_array() || ch.size() != 2) in.fail(tpath + ".chunks", "expected [begin, end], got " + ch.dump());
      tr.chunk_begin = in.integer(ch[0], tpath + ".chunks[0]", 0, s.chunks - 1);
      tr.chunk_end = in.integer(ch[1], tpath + ".chunks[1]", 1, s.chunks);
      if (tr.chunk_end <= tr.chunk_begin) in.fail(tpath + ".chunks", "empty range " + ch.dump());
      try {
        tr.op = parse_op(in.string(in.member(t, tpath, "op"), tpath + ".op"));
      } catch (const InputError& e) {
        if (std::string(e.what()).rfind(std::string(source_name), 0) == 0) throw;
        in.fail(tpath + ".op", e.what());
      }
      round.transfers.push_back(tr);
    }
  }
  return s;
}

}  // namespace ssim::alg
