#include "common/csv.hpp"

#include <gtest/gtest.h>

#include <map>
#include <sstream>
#include <string>
#include <vector>

#include "common/error.hpp"

namespace ssim {
namespace {

std::vector<CsvRecord> read(const std::string& text, CsvOptions options = {}) {
  std::istringstream in(text);
  return read_csv(in, "t.csv", options);
}

std::string error_of(const std::string& text, CsvOptions options = {}) {
  try {
    read(text, options);
  } catch (const InputError& e) {
    return e.what();
  }
  return "no error";
}

using Fields = std::vector<std::string>;

TEST(Csv, PlainFieldsAndLineNumbers) {
  const auto r = read("a,b,c\n1,,3\n\n4,5,\n");
  ASSERT_EQ(r.size(), 3u);
  EXPECT_EQ(r[0].fields, (Fields{"a", "b", "c"}));
  EXPECT_EQ(r[1].fields, (Fields{"1", "", "3"}));
  EXPECT_EQ(r[1].line, 2);
  EXPECT_EQ(r[2].fields, (Fields{"4", "5", ""}));  // a trailing comma is an empty last field
  EXPECT_EQ(r[2].line, 4);                         // the blank line 3 is skipped
  EXPECT_EQ(r[1].positions[2].column, 4);
}

TEST(Csv, QuotedFields) {
  const auto r = read("\"a,b\",\"say \"\"hi\"\"\",\"two\nlines\",x\r\nnext,\"\"\n");
  ASSERT_EQ(r.size(), 2u);
  EXPECT_EQ(r[0].fields, (Fields{"a,b", "say \"hi\"", "two\nlines", "x"}));
  EXPECT_EQ(r[0].line, 1);
  EXPECT_EQ(r[0].positions[3].line, 2);  // after the line break inside the third field
  EXPECT_EQ(r[0].positions[3].column, 8);
  EXPECT_EQ(r[1].fields, (Fields{"next", ""}));
  EXPECT_EQ(r[1].line, 3);
}

TEST(Csv, CrLfLineEndingsAreDropped) {
  const auto r = read("a,b\r\n1,2\r\n");
  ASSERT_EQ(r.size(), 2u);
  EXPECT_EQ(r[1].fields, (Fields{"1", "2"}));
}

TEST(Csv, CommentsAndTrimmingAreOptions) {
  const std::string text = "# header comment\n  a , b\n   # indented comment\n\"q\" , 2 \n";
  const auto plain = read(text.substr(text.find('\n') + 1, 8));  // "  a , b\n"
  EXPECT_EQ(plain.at(0).fields, (Fields{"  a ", " b"}));
  const auto r = read(text, {.comments = true, .trim = true});
  ASSERT_EQ(r.size(), 2u);
  EXPECT_EQ(r[0].fields, (Fields{"a", "b"}));
  EXPECT_EQ(r[0].line, 2);
  EXPECT_EQ(r[0].positions[1].column, 7);
  EXPECT_EQ(r[1].fields, (Fields{"q", "2"}));
  EXPECT_EQ(r[1].line, 4);
  // Without `comments` a '#' line is data.
  EXPECT_EQ(read("# x\n").at(0).fields, (Fields{"# x"}));
}

TEST(Csv, ErrorsNameLineAndColumn) {
  EXPECT_EQ(error_of("a,b\n1,\"open\n2,3\n"), "t.csv:2:3: quoted field not closed");
  EXPECT_EQ(error_of("a,b\n1,x\"y\n"),
            "t.csv:2:4: quote inside an unquoted field (quote the "
            "whole field)");
  EXPECT_EQ(error_of("\"a\"b,c\n"),
            "t.csv:1:4: unexpected text after a closing quote (a quote inside a quoted field is "
            "written \"\")");
}

TEST(Csv, ReaderFailsAtRecordsAndFields) {
  std::istringstream in("a,b\n1, 22\n");
  CsvReader csv(in, "f.csv", {.trim = true});
  CsvRecord r;
  ASSERT_TRUE(csv.next(r));
  ASSERT_TRUE(csv.next(r));
  try {
    csv.fail_at(r, 1, "not small");
  } catch (const InputError& e) {
    EXPECT_STREQ(e.what(), "f.csv:2:4: not small");
  }
  try {
    csv.fail(r, "too many");
  } catch (const InputError& e) {
    EXPECT_STREQ(e.what(), "f.csv:2: too many");
  }
  EXPECT_FALSE(csv.next(r));
}

TEST(Csv, ColumnIndexRefusesANameGivenTwice) {
  const std::vector<CsvRecord> ok = read("bytes, seconds ,kind\n1,2,p2p\n");
  const std::map<std::string, std::size_t> index = csv_column_index("t.csv", ok.front());
  EXPECT_EQ(index.at("bytes"), 0u);
  EXPECT_EQ(index.at("seconds"), 1u);  // names are trimmed
  EXPECT_EQ(index.at("kind"), 2u);
  const std::vector<CsvRecord> twice = read("# c\nbytes,seconds,x,seconds \n1,2,3,4\n",
                                            {.comments = true});
  try {
    (void)csv_column_index("t.csv", twice.front());
    FAIL() << "no error";
  } catch (const InputError& e) {
    EXPECT_EQ(std::string(e.what()),
              "t.csv:2:17: column 'seconds' is given twice (columns 2 and 4): which one holds "
              "the value is ambiguous");
  }
}

}  // namespace
}  // namespace ssim
