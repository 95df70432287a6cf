// `stragglesim verify` (verify_schedule_json: the fast path first, the nlohmann-based reader when
// it gives up, each round verified as it arrives) against the whole document read by the
// nlohmann-based reader alone (read_schedule_json(text)) + verify(): the same verdict and the same
// message on every schedule the generators write and on corrupted, reordered and mutated files.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>
#include <random>
#include <sstream>
#include <string>
#include <vector>

#include "algorithms/registry.hpp"
#include "algorithms/schedule_json.hpp"
#include "algorithms/verifier.hpp"
#include "common/error.hpp"

namespace ssim::alg {
namespace {

// "input error: ...", "resource error: ...", "invalid: <VerifyError>" or "ok: <summary>".
std::string outcome(const std::function<VerifyResult()>& check) {
  try {
    const VerifyResult v = check();
    return v.ok() ? "ok: " + format_summary(v.summary) : "invalid: " + v.error->to_string();
  } catch (const InputError& e) {
    return std::string("input error: ") + e.what();
  } catch (const ResourceError& e) {
    return std::string("resource error: ") + e.what();
  }
}

std::string whole_outcome(const std::string& text) {
  return outcome([&] { return verify(read_schedule_json(text, "plan.json")); });
}

std::string stream_outcome(const std::string& text) {
  return outcome([&] {
    std::istringstream in(text);
    return verify_schedule_json(in, "plan.json").result;
  });
}

// The streamed outcome, checked equal to the whole document's.
std::string same_outcome(const std::string& text) {
  const std::string whole = whole_outcome(text), streamed = stream_outcome(text);
  EXPECT_EQ(streamed, whole) << "input:\n" << text.substr(0, 2000);
  return streamed;
}

std::vector<std::string> generated_schedules() {
  std::vector<std::string> out;
  for (const AlgorithmInfo& info : algorithms()) {
    for (int n : {2, 3, 4, 5, 8, 13, 16}) {
      if (!info.supports_ranks(n)) continue;
      Options opts;
      if (info.straggler_aware) opts.set("straggler", std::to_string(n / 2));
      out.push_back(schedule_to_json(generate(info.name, n, opts)));
    }
  }
  Options late;
  late.set("stragglers", "3");
  out.push_back(schedule_to_json(generate("stragglar", 9, late)));
  return out;
}

std::string replace_once(std::string text, const std::string& from, const std::string& to) {
  const auto at = text.find(from);
  EXPECT_NE(at, std::string::npos) << from;
  if (at != std::string::npos) text.replace(at, from.size(), to);
  return text;
}

// An input stream that cannot seek (a pipe): verify_schedule_json reads it with the nlohmann reader
// only, so comparing it with a string stream (the fast path first) compares the two paths.
class PipeBuf : public std::streambuf {
 public:
  explicit PipeBuf(std::string text) : text_(std::move(text)) {
    setg(text_.data(), text_.data(), text_.data() + text_.size());
  }

 private:
  std::string text_;
};

std::string pipe_outcome(const std::string& text) {
  return outcome([&] {
    PipeBuf buf(text);
    std::istream in(&buf);
    return verify_schedule_json(in, "plan.json").result;
  });
}

// The writer against nlohmann's dump() of the same document (what it wrote before it formatted
// numbers itself), with phases and options that need escapes.
std::string reference_json(const Schedule& s) {
  using nlohmann::json;
  std::string out =
      "{\"collective\": " + json(std::string(to_string(s.collective))).dump() +
      ", \"algorithm\": " + json(s.algorithm).dump() + ", \"ranks\": " + std::to_string(s.ranks) +
      ", \"chunks\": " + std::to_string(s.chunks) +
      ", \"straggler\": " + (s.straggler ? json(*s.straggler) : json(nullptr)).dump() +
      ", \"options\": " + json(s.options).dump();
  if (!s.late.empty()) out += ", \"late\": " + json(s.late).dump();
  out += ",\n \"rounds\": [";
  for (std::size_t i = 0; i < s.rounds.size(); ++i) {
    json transfers = json::array();
    for (const Transfer& t : s.rounds[i].transfers)
      transfers.push_back({{"src", t.src},
                           {"dst", t.dst},
                           {"chunks", {t.chunk_begin, t.chunk_end}},
                           {"op", std::string(to_string(t.op))}});
    json r = json::object();
    if (!s.rounds[i].phase.empty()) r["phase"] = s.rounds[i].phase;
    r["transfers"] = transfers;
    if (!s.rounds[i].switch_reduces.empty()) {
      json ops = json::array();
      for (const SwitchReduce& g : s.rounds[i].switch_reduces)
        ops.push_back({{"members", g.members},
                       {"receivers", g.receivers},
                       {"chunks", {g.chunk_begin, g.chunk_end}}});
      r["switch_reduces"] = ops;
    }
    out += (i ? ",\n  " : "\n  ") + r.dump();
  }
  return out + (s.rounds.empty() ? "]}\n" : "\n ]}\n");
}

TEST(ScheduleJsonStream, TheWriterWritesWhatNlohmannWrote) {
  for (const AlgorithmInfo& info : algorithms()) {
    for (int n : {2, 5, 16}) {
      if (!info.supports_ranks(n)) continue;
      const Schedule s = generate(info.name, n, {});
      EXPECT_EQ(schedule_to_json(s), reference_json(s)) << info.name << " " << n;
    }
  }
  Schedule s = Schedule::make(Collective::reduce_scatter, "q\"uote", 3, 3);
  s.options["k\\ey"] = "tab\there";
  s.straggler = 2;
  s.late = {0, 2};
  s.add_round("a \"quoted\" \\ phase\n").add(0, 1, 0, 1, Op::reduce);
  s.add_round(
       "gr\xc3\xbc\xc3\x9f"
       "e")
      .add(2, 1, 1, 3, Op::copy);
  s.add_round();
  s.add_round("\x01").add(1, 0, 2, 3, Op::copy);
  EXPECT_EQ(schedule_to_json(s), reference_json(s));
  EXPECT_EQ(schedule_to_json(Schedule::make(Collective::allgather, "", 1, 1)),
            reference_json(Schedule::make(Collective::allgather, "", 1, 1)));
  EXPECT_EQ(read_schedule_json(schedule_to_json(s), "plan.json"), s);
}

TEST(ScheduleJsonStream, TheFastPathAndTheNlohmannReaderAgree) {
  // Valid files in other shapes than `schedule` writes: spaces, keys in other orders, phases
  // with escapes and UTF-8, null phases. The seekable stream takes the fast path, the pipe not.
  const Schedule ring = generate("ring", 6, {});
  const std::string pretty = nlohmann::json::parse(schedule_to_json(ring)).dump(2);
  std::string crlf;
  for (char c : schedule_to_json(ring))
    crlf += c == '\n' ? std::string("\r\n\t") : std::string(1, c);
  const std::string small =
      R"({"collective": "allreduce", "ranks": 2, "chunks": 2, "options": {"x": "1"},
    "rounds": [ {"transfers": [{"op": "reduce", "src": 0, "dst": 1, "chunks": [0, 1]},
                               { "dst" : 0 , "src" : 1 , "chunks" : [ 1 , 2 ] , "op" : "reduce" }],
                 "phase": "r\u00e9duce \"1\""},
                {"phase": null, "transfers": [{"src": 1, "dst": 0, "chunks": [0, 1], "op": "copy"},
                                              {"src": 0, "dst": 1, "chunks": [1, 2], "op": "copy"}]},
                {"phase": "gr\u00fc\u00dfe", "transfers": []}]} )";
  for (const std::string& text : {schedule_to_json(ring), pretty, crlf, small}) {
    const std::string fast = same_outcome(text);
    EXPECT_EQ(fast.rfind("ok: ", 0), 0u) << fast;
    EXPECT_EQ(pipe_outcome(text), fast);
  }
  EXPECT_NE(stream_outcome(small).find("r\xc3\xa9"
                                       "duce \"1\" x1"),
            std::string::npos)
      << stream_outcome(small);
  // A long valid file read through several of the fast path's 1 MiB blocks.
  const std::string big = schedule_to_json(generate("direct", 180, {}));
  ASSERT_GT(big.size(), std::size_t{3} << 20) << big.size();
  EXPECT_EQ(stream_outcome(big), pipe_outcome(big));
  // Errors far into a long file: the fast path gives up and the nlohmann reader names them.
  for (std::size_t at : {(std::size_t{1} << 20) - 1, std::size_t{1} << 20,
                         (std::size_t{1} << 20) + 1, (std::size_t{3} << 20) - 17}) {
    const std::string bad = big.substr(0, at) + "x" + big.substr(at);
    const std::string r = stream_outcome(bad);
    EXPECT_EQ(r, pipe_outcome(bad));
    EXPECT_EQ(r.rfind("input error: plan.json: ", 0), 0u) << r;
  }
}

TEST(ScheduleJsonStream, EveryGeneratedScheduleVerifiesTheSameWay) {
  const std::vector<std::string> all = generated_schedules();
  ASSERT_GT(all.size(), 40u);
  for (const std::string& text : all) EXPECT_EQ(same_outcome(text).rfind("ok: ", 0), 0u);
}

TEST(ScheduleJsonStream, TruncatedFilesFailTheSameWay) {
  const std::string text = schedule_to_json(generate("ring", 4, {}));
  for (std::size_t cut = 0; cut + 1 < text.size(); ++cut) {  // the last byte is a newline
    const std::string r = same_outcome(text.substr(0, cut));
    EXPECT_EQ(r.rfind("input error: plan.json: line ", 0), 0u) << r;
  }
}

// "line L, column C" of the byte before the one nlohmann's whole-document parse of `text` stops
// at, counted here (the reference for the reader's positions); "" when it parses.
std::string reference_position(const std::string& text) {
  try {
    [[maybe_unused]] const nlohmann::json doc = nlohmann::json::parse(text);
  } catch (const nlohmann::json::parse_error& e) {
    const std::size_t byte = e.byte > 0 ? e.byte - 1 : 0;
    std::size_t line = 1, column = 1;
    for (std::size_t i = 0; i < byte && i < text.size(); ++i) {
      column = text[i] == '\n' ? 1 : column + 1;
      line += text[i] == '\n';
    }
    return "line " + std::to_string(line) + ", column " + std::to_string(column);
  }
  return "";
}

TEST(ScheduleJsonStream, PositionsPastTheReadBuffer) {
  // The streamed reader reads 64 KiB at a time: errors at and around its block boundaries, and
  // far in, name the line and column nlohmann's whole-document parse stops at.
  const std::string text = schedule_to_json(generate("ring", 48, {}));
  ASSERT_GT(text.size(), 150010u);
  int syntax_errors = 0;
  for (std::size_t at :
       {std::size_t{65534}, std::size_t{65535}, std::size_t{65536}, std::size_t{65537},
        std::size_t{131071}, std::size_t{131072}, std::size_t{150001}, text.size() - 7}) {
    // A syntax error, or inside a string a bad value: the same either way.
    for (const std::string& bad :
         {text.substr(0, at) + "#" + text.substr(at), text.substr(0, at)}) {
      const std::string r = same_outcome(bad), where = reference_position(bad);
      if (where.empty()) continue;
      ++syntax_errors;
      EXPECT_NE(r.find("plan.json: " + where + ": malformed JSON"), std::string::npos)
          << where << "\n"
          << r;
    }
  }
  EXPECT_GE(syntax_errors, 8);  // every truncation at least
}

TEST(ScheduleJsonStream, CorruptedRoundsFailTheSameWay) {
  const Schedule s = generate("ring", 4, {});
  const std::string text = schedule_to_json(s);
  const std::string t0 = R"({"chunks":[3,4],"dst":1,"op":"reduce","src":0})";
  ASSERT_NE(text.find(t0), std::string::npos) << text;
  // Semantic errors (the verifier's) and form errors (the reader's), each in a late round too.
  const std::vector<std::pair<std::string, std::string>> cases = {
      {replace_once(text, t0, t0 + "," + t0), "invalid: round 0, transfer 1"},  // a duplicate
      {replace_once(text, t0 + ",", ""), "invalid: "},                          // one dropped
      {replace_once(text, t0, R"({"chunks":[3,9],"dst":1,"op":"reduce","src":0})"),
       "plan.json: rounds[0].transfers[0].chunks[1]: value 9 out of range [1, 4]"},
      {replace_once(text, t0, R"({"chunks":[3,4],"dst":1,"op":"reduce","src":"0"})"),
       "rounds[0].transfers[0].src: expected an integer, got string \"0\""},
      {replace_once(text, t0, R"({"chunks":{"a":1},"dst":1,"op":"reduce","src":0})"),
       "rounds[0].transfers[0].chunks: expected [begin, end], got {\"a\":1}"},
      {replace_once(text, t0, R"({"chunks":[3,4],"dst":1,"op":3,"src":0})"),
       "op: expected a string"},
      {replace_once(text, t0, R"({"chunks":[3,4],"dst":1,"op":"sum","src":0})"),
       "unknown op 'sum'"},
      {replace_once(text, t0, "[1]"), "rounds[0].transfers[0]: expected an object, got array"},
      {replace_once(text, t0, R"({"chunks":[3,4],"dst":1,"op":"reduce","src":0,"zz":[1],"aa":2})"),
       "rounds[0].transfers[0]: unknown key 'aa'"},
      {replace_once(text, R"("transfers":[)", R"("zz":1,"transfers":[)"),
       "rounds[0]: unknown key 'zz'"},
      {replace_once(text, R"("transfers":[)" + t0, R"("transfers":{"a":[)" + t0 + "]}, \"x\": [0"),
       "rounds[0]: unknown key 'x'"},
      {replace_once(text, R"({"phase":"reduce-scatter","transfers":[)" + t0 + ",",
                    R"({"phase":5,"transfers":["x",)"),
       "rounds[0].phase: expected a string, got number 5"},
      {replace_once(text, "\"rounds\": [", "\"rounds\": [7, "),
       "rounds[0]: expected an object, got number"},
      {replace_once(text, "\"ranks\": 4", "\"ranks\": 4, \"ranks\": 5"), "ranks: duplicate key"},
      {replace_once(text, "\"ranks\": 4", "\"ranks\": 3"), "value 3 out of range [0, 2]"},
      {replace_once(text, "\"ranks\": 4", "\"ranks\": 99999999999"),
       "ranks: value 99999999999 out of range"},
      {replace_once(text, "\"options\": {}", "\"options\": {}, \"zeta\": 1, \"beta\": [2]"),
       "(top level): unknown key 'beta'"},
      {"[1e400]", "malformed JSON: number overflow parsing '1e400'"},
      {"", "plan.json: line 1, column 1: malformed JSON"},
      {"[{\"a\": 1, \"a\": 2}]", "input error: plan.json: [0].a: duplicate key"},
      {"\"text\"", "(top level): expected an object, got string"},
  };
  for (const auto& [bad, expected] : cases) {
    const std::string r = same_outcome(bad);
    EXPECT_NE(r.find(expected), std::string::npos) << r;
  }
  // The same corruptions in the last round, after rounds that went to the verifier already.
  const std::string last = R"({"chunks":[2,3],"dst":1,"op":"copy","src":0})";
  ASSERT_NE(text.rfind(last), std::string::npos) << text;
  std::string dup = text;
  dup.insert(text.rfind(last), last + ",");
  EXPECT_NE(same_outcome(dup).find("invalid: round 5"), std::string::npos);
  std::string bad_chunk = text;
  bad_chunk.replace(text.rfind(last), last.size(),
                    R"({"chunks":[2,5],"dst":1,"op":"copy","src":0})");
  EXPECT_NE(same_outcome(bad_chunk).find("rounds[5].transfers"), std::string::npos);
  // A form error after a verifier error: the form error wins, as in the whole-document read.
  std::string both = replace_once(text, t0, t0 + "," + t0);
  both.replace(both.rfind(last), last.size(), R"({"chunks":[2,3],"dst":1,"op":"copy","src":-1})");
  EXPECT_NE(same_outcome(both).find("rounds[5].transfers[0].src: value -1 out of range"),
            std::string::npos);
}

TEST(ScheduleJsonStream, HeaderKeysInAnyOrder) {
  const std::string rounds =
      R"("rounds": [{"transfers": [{"src": 0, "dst": 1, "chunks": [0, 1], "op": "reduce"},
                                                  {"src": 1, "dst": 0, "chunks": [1, 2], "op": "reduce"}]},
                                   {"transfers": [{"src": 1, "dst": 0, "chunks": [0, 1], "op": "copy"},
                                                  {"src": 0, "dst": 1, "chunks": [1, 2], "op": "copy"}]}])";
  // Streamed (header first), held until the header is complete (rounds first, or "late" before
  // its "straggler"), and header errors after the rounds.
  for (const std::string& text : {
           "{\"collective\": \"allreduce\", \"ranks\": 2, \"chunks\": 2, " + rounds + "}",
           "{" + rounds + ", \"chunks\": 2, \"ranks\": 2}",
           "{\"ranks\": 2, \"chunks\": 2, " + rounds + ", \"collective\": \"allreduce\"}",
           "{\"collective\": \"allreduce\", \"ranks\": 2, \"chunks\": 2, \"late\": [0, 1], " +
               rounds + ", \"straggler\": 1}",
       }) {
    EXPECT_EQ(same_outcome(text).rfind("ok: ", 0), 0u) << text;
  }
  for (const auto& [text, expected] : std::vector<std::pair<std::string, std::string>>{
           {"{\"collective\": \"allreduce\", \"ranks\": 2, \"chunks\": 2, " + rounds +
                ", \"straggler\": 2}",
            "plan.json: straggler: value 2 out of range [0, 1]"},
           {"{\"collective\": \"allreduce\", \"ranks\": 2, \"chunks\": 2, " + rounds +
                ", \"collective\": 1}",
            "collective: duplicate key"},
           {"{\"collective\": \"allreduce\", \"ranks\": 2, \"chunks\": 3, " + rounds + "}",
            "invalid: at the end rank 0 holds chunk 2 without"},
           {"{" + rounds + ", \"chunks\": 2, \"ranks\": 2, \"collective\": \"gather\"}",
            "collective: unknown collective 'gather'"},
           {"{\"collective\": \"allreduce\", \"ranks\": 0, \"chunks\": 2, " + rounds + "}",
            "ranks: value 0 out of range"},
           {"{\"collective\": \"allreduce\", \"ranks\": 2, \"chunks\": 2}", "missing key 'rounds'"},
           {"{\"collective\": \"allreduce\", \"ranks\": 2, \"chunks\": 2, \"rounds\": {}}",
            "rounds: expected an array, got object"},
           {"{\"collective\": \"allreduce\", \"ranks\": 2, \"chunks\": 2, \"rounds\": [{}]}",
            "rounds[0]: missing key 'transfers'"},
       }) {
    const std::string r = same_outcome(text);
    EXPECT_NE(r.find(expected), std::string::npos) << r;
  }
}

// A sink that records what it is given, to see what streams.
class Recorder : public ScheduleJsonSink {
 public:
  void header(const Schedule& h) override { events.push_back("header " + std::to_string(h.ranks)); }
  void round(const Round& r) override {
    events.push_back("round " + std::to_string(r.transfers.size()));
  }
  std::vector<std::string> events;
};

TEST(ScheduleJsonStream, RoundsReachTheSinkWhileTheFileIsRead) {
  // A stream whose tail is a syntax error: the rounds before it were passed on one by one.
  const std::string text = schedule_to_json(generate("ring", 4, {}));
  const std::string cut = text.substr(0, text.rfind("{\"phase\"")) + "oops";
  std::istringstream in(cut);
  Recorder sink;
  EXPECT_THROW(read_schedule_json(in, "plan.json", sink), InputError);
  EXPECT_EQ(sink.events, (std::vector<std::string>{"header 4", "round 4", "round 4", "round 4",
                                                   "round 4", "round 4"}));
}

TEST(ScheduleJsonStream, TheSinksErrorComesAfterTheFormErrors) {
  class Refuse : public ScheduleJsonSink {
    void header(const Schedule&) override { throw ResourceError("too big"); }
    void round(const Round&) override { ADD_FAILURE() << "no round after the header was refused"; }
  };
  const std::string text = schedule_to_json(generate("ring", 4, {}));
  Refuse sink;
  std::istringstream ok(text);
  EXPECT_THROW(read_schedule_json(ok, "plan.json", sink), ResourceError);
  std::istringstream bad(text.substr(0, text.size() - 3));
  EXPECT_THROW(read_schedule_json(bad, "plan.json", sink), InputError);
}

TEST(ScheduleJsonStream, DeepNestingIsRefusedByName) {
  const std::string deep =
      "{\"options\": {\"a\": " + std::string(600, '[') + std::string(600, ']') + "}}";
  const std::string r = stream_outcome(deep);
  EXPECT_NE(r.find("plan.json: line 1, column 529: malformed JSON: nested deeper than 512 levels"),
            std::string::npos)
      << r;
}

TEST(ScheduleJsonStream, RandomMutationsFailTheSameWay) {
  // Byte flips, deletions and insertions of JSON punctuation in small schedules (deterministic).
  const std::vector<std::string> bases = {schedule_to_json(generate("ring", 3, {})),
                                          schedule_to_json(generate("rhd", 4, {})),
                                          schedule_to_json(generate("tree", 5, {}))};
  const std::string alphabet = "{}[],:\"0123456789-e.abcnrstu \n";
  std::mt19937 rng(11);
  int accepted = 0;
  for (int i = 0; i < 1500; ++i) {
    std::string text = bases[static_cast<std::size_t>(i) % bases.size()];
    const int edits = 1 + static_cast<int>(rng() % 3);
    for (int e = 0; e < edits; ++e) {
      const std::size_t at = rng() % text.size();
      const char c = alphabet[rng() % alphabet.size()];
      switch (rng() % 3) {
        case 0:
          text[at] = c;
          break;
        case 1:
          text.erase(at, 1);
          break;
        default:
          text.insert(at, 1, c);
          break;
      }
    }
    accepted += same_outcome(text).rfind("ok: ", 0) == 0;
  }
  EXPECT_LT(accepted, 1500);
}

}  // namespace
}  // namespace ssim::alg
