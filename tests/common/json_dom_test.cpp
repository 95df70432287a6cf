// parse_json_unique_keys (common/json_dom.hpp): nlohmann's DOM and nlohmann's syntax errors, plus
// every repeated key with its path.
#include "common/json_dom.hpp"

#include <gtest/gtest.h>

#include <sstream>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

namespace ssim {
namespace {

using nlohmann::json;
using Duplicates = std::vector<std::pair<std::string, std::string>>;

json parse_noting(const std::string& text, Duplicates& seen) {
  return parse_json_unique_keys(text, [&seen](const std::string& path, const std::string& key) {
    seen.emplace_back(path, key);
  });
}

// What a parse throws: "type: what()", or "ok".
template <typename Parse>
std::string outcome(Parse parse) {
  try {
    parse();
  } catch (const json::parse_error& e) {
    return "parse_error at byte " + std::to_string(e.byte) + ": " + e.what();
  } catch (const json::exception& e) {
    return std::string("json::exception: ") + e.what();
  }
  return "ok";
}

TEST(JsonDom, TheSameDocumentAsNlohmann) {
  const std::vector<std::string> docs = {
      R"({"collective": "allreduce", "ranks": 4, "rounds": [{"phase": "rs", "transfers": [
          {"src": 0, "dst": 1, "chunks": [0, 1], "op": "reduce"}, {"src": 1, "dst": 2,
          "chunks": [], "op": "copy"}]}, {"transfers": []}], "straggler": null})",
      R"([1, -2, 18446744073709551615, -9223372036854775808, 2.5e-3, true, false, null,
          "\u00e9\n"])",
      R"({"a": {"b": {"c": [[], {}, [[[{}]]]]}}, "": ""})",
      "  42  ",
      R"("text")",
      "[]",
      "{}",
  };
  for (const std::string& text : docs) {
    Duplicates seen;
    EXPECT_EQ(parse_noting(text, seen), json::parse(text)) << text;
    std::istringstream in(text);
    EXPECT_EQ(parse_json_unique_keys(in, {}), json::parse(text)) << text;
    EXPECT_TRUE(seen.empty()) << text;
  }
}

TEST(JsonDom, EveryRepeatedKeyWithItsPathAndTheLaterValueKept) {
  Duplicates seen;
  const json doc = parse_noting(
      R"({"a": 1, "r": [{"x": 1}, {"y": [0, {"k": 1, "k": {"z": 2}}]}], "a": 3, "a": [4]})", seen);
  const Duplicates expected = {{"r[1].y[1].k", "k"}, {"a", "a"}, {"a", "a"}};
  EXPECT_EQ(seen, expected);
  EXPECT_EQ(doc, json::parse(R"({"a": [4], "r": [{"x": 1}, {"y": [0, {"k": {"z": 2}}]}]})"));
  seen.clear();
  parse_noting(R"([[{"a": 1}], [{"b": 1, "b": 2}]])", seen);
  EXPECT_EQ(seen, (Duplicates{{"[1][0].b", "b"}}));
  // The same key in two objects, or as a key and a value, is no duplicate.
  seen.clear();
  parse_noting(R"([{"a": "a"}, {"a": {"a": "a"}}])", seen);
  EXPECT_TRUE(seen.empty());
}

TEST(JsonDom, ACallbackThatThrowsEndsTheParseBeforeALaterSyntaxError) {
  const std::string text = R"({"a": 1, "a": 2, )";
  const auto refuse = [](const std::string& path, const std::string&) {
    throw std::runtime_error("duplicate " + path);
  };
  try {
    parse_json_unique_keys(text, refuse);
    FAIL() << "no exception";
  } catch (const std::runtime_error& e) {
    EXPECT_STREQ(e.what(), "duplicate a");
  }
  std::istringstream in(text);
  EXPECT_THROW(parse_json_unique_keys(in, refuse), std::runtime_error);
  // Noted without throwing: the syntax error is what comes out.
  Duplicates seen;
  EXPECT_THROW(parse_noting(text, seen), json::parse_error);
  EXPECT_EQ(seen.size(), 1u);
}

TEST(JsonDom, SyntaxErrorsAsNlohmannThrowsThem) {
  const std::vector<std::string> bad = {
      "",        "{",         R"({"a" 1})", "[1,]",     "[1] 2",       R"({"a": 1e400})",
      "nul",     "[\"\\x\"]", "{\"a\":",   "[1, {]",  "{\"k\": [1}", "\"\x01\"",
  };
  for (const std::string& text : bad) {
    const std::string expected = outcome([&] { const json j = json::parse(text); });
    ASSERT_NE(expected, "ok") << text;
    EXPECT_EQ(outcome([&] { (void)parse_json_unique_keys(text, {}); }), expected) << text;
    std::istringstream in(text), in2(text);
    EXPECT_EQ(outcome([&] { (void)parse_json_unique_keys(in, {}); }),
              outcome([&] { const json j = json::parse(in2); }))
        << text;
  }
}

}  // namespace
}  // namespace ssim
