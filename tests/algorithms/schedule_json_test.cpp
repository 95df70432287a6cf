#include "algorithms/schedule_json.hpp"

#include <gtest/gtest.h>

#include "algorithms/registry.hpp"
#include "common/error.hpp"

namespace ssim::alg {
namespace {

std::string read_error(const std::string& text) {
  try {
    read_schedule_json(text, "plan.json");
  } catch (const InputError& e) {
    return e.what();
  }
  return "no error";
}

TEST(ScheduleJson, RoundTripsEveryRegisteredAlgorithm) {
  for (const AlgorithmInfo& info : algorithms()) {
    for (int n : {3, 4, 8, 13}) {
      if (!info.supports_ranks(n)) continue;
      Options opts;
      if (info.straggler_aware) opts.set("straggler", "1");
      const Schedule s = generate(info.name, n, opts);
      const Schedule back = read_schedule_json(schedule_to_json(s), "mem");
      EXPECT_EQ(back, s) << info.name << " n=" << n;
    }
  }
}

TEST(ScheduleJson, WritesTheDocumentedForm) {
  Schedule s = Schedule::make(Collective::allreduce, "x", 2, 1);
  s.add_round("p").add(0, 1, 0, 1, Op::reduce);
  const std::string json = schedule_to_json(s);
  EXPECT_NE(json.find("\"collective\": \"allreduce\""), std::string::npos) << json;
  EXPECT_NE(json.find("\"straggler\": null"), std::string::npos) << json;
  EXPECT_NE(json.find(R"({"phase":"p","transfers":[{"chunks":[0,1],"dst":1,"op":"reduce","src":0}]})"),
            std::string::npos)
      << json;
}

TEST(ScheduleJson, SyntaxErrorsNameLineAndColumn) {
  const std::string e = read_error("{\"ranks\": 2,\n \"chunks\": }");
  EXPECT_NE(e.find("plan.json: line 2, column"), std::string::npos) << e;
  EXPECT_NE(e.find("malformed JSON"), std::string::npos) << e;
}

TEST(ScheduleJson, ContentErrorsNameTheKeyPath) {
  const std::string head = R"({"ranks": 2, "chunks": 1, "rounds": [{"transfers": [)";
  EXPECT_NE(read_error(head + R"({"src": 0, "dst": 2, "chunks": [0, 1], "op": "copy"}]}]})")
                .find("rounds[0].transfers[0].dst: value 2 out of range [0, 1]"),
            std::string::npos);
  EXPECT_NE(read_error(head + R"({"src": 0, "dst": 1, "chunks": [0, 1], "op": "add"}]}]})").find(
                "rounds[0].transfers[0].op: unknown op 'add'"),
            std::string::npos)
      << read_error(head + R"({"src": 0, "dst": 1, "chunks": [0, 1], "op": "add"}]}]})");
  EXPECT_NE(read_error(head + R"({"src": "0", "dst": 1, "chunks": [0, 1], "op": "copy"}]}]})")
                .find("rounds[0].transfers[0].src: expected an integer, got string"),
            std::string::npos);
  EXPECT_NE(read_error(head + R"({"src": 0, "dst": 1, "chunk": [0, 1], "op": "copy"}]}]})")
                .find("unknown key 'chunk'"),
            std::string::npos);
  EXPECT_NE(read_error(R"({"ranks": 2, "chunks": 1})").find("missing key 'rounds'"), std::string::npos);
  EXPECT_NE(read_error(R"({"ranks": 0, "chunks": 1, "rounds": []})").find("ranks: value 0 out of range"),
            std::string::npos);
  EXPECT_NE(read_error(R"([1, 2])").find("expected an object"), std::string::npos);
  EXPECT_NE(read_error(R"({"collective": "gather", "ranks": 2, "chunks": 1, "rounds": []})")
                .find("collective: unknown collective 'gather'"),
            std::string::npos);
}

}  // namespace
}  // namespace ssim::alg
