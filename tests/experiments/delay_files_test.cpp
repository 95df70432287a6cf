#include "experiments/config/delay_files.hpp"

#include <gtest/gtest.h>

#include <sstream>
#include <string>
#include <variant>
#include <vector>

#include "common/error.hpp"

namespace ssim::experiments {
namespace {

using sim::Distribution;
using sim::Trace;
namespace dist = sim::dist;

const std::string kData = std::string(STRAGGLESIM_SOURCE_DIR) + "/tests/data/delays/";

// Runs `f`, which must throw InputError whose message contains `part`.
template <class F>
void expect_input_error(F&& f, const std::string& part) {
  try {
    f();
    ADD_FAILURE() << "no InputError; expected one containing '" << part << "'";
  } catch (const InputError& e) {
    EXPECT_NE(std::string(e.what()).find(part), std::string::npos)
        << "message '" << e.what() << "' lacks '" << part << "'";
  }
}

Distribution samples(const std::string& text) {
  std::istringstream in(text);
  return read_delay_samples(in, "s.txt");
}

// ---------------------------------------------------------------------------------------------
// Empirical samples

TEST(DelaySamplesFile, HeaderNamesTheUnit) {
  const Distribution d = load_delay_samples(kData + "samples_ms.txt");
  const auto& e = std::get<dist::Empirical>(d.params());
  ASSERT_EQ(e.samples.size(), 4u);
  EXPECT_DOUBLE_EQ(e.samples.front().value, 1e-3);
  EXPECT_DOUBLE_EQ(e.samples.back().value, 4e-3);
  EXPECT_NEAR(d.mean()->value, 2.5e-3, 1e-15);
  EXPECT_NE(e.source.find("samples_ms.txt"), std::string::npos);
}

TEST(DelaySamplesFile, UnitColumn) {
  const Distribution d = load_delay_samples(kData + "samples_units.csv");
  const auto& e = std::get<dist::Empirical>(d.params());
  ASSERT_EQ(e.samples.size(), 3u);
  EXPECT_DOUBLE_EQ(e.samples[0].value, 0.5e-3);
  EXPECT_DOUBLE_EQ(e.samples[1].value, 1.5e-3);
  EXPECT_DOUBLE_EQ(e.samples[2].value, 2e-3);
}

TEST(DelaySamplesFile, UnitsInlineWithoutHeader) {
  const Distribution d = samples("3.2ms\n 4 us \n0,s\n");
  const auto& e = std::get<dist::Empirical>(d.params());
  ASSERT_EQ(e.samples.size(), 3u);
  EXPECT_DOUBLE_EQ(e.samples[0].value, 0.0);
  EXPECT_DOUBLE_EQ(e.samples[1].value, 4e-6);
  EXPECT_DOUBLE_EQ(e.samples[2].value, 3.2e-3);
}

TEST(DelaySamplesFile, MalformedRowNamesFileLineAndColumn) {
  expect_input_error([] { load_delay_samples(kData + "samples_bad.txt"); },
                     "samples_bad.txt:4:1: 'fast' is not a number");
}
TEST(DelaySamplesFile, EmptyFile) {
  expect_input_error([] { load_delay_samples(kData + "samples_empty.txt"); }, "no delay samples");
}
TEST(DelaySamplesFile, MissingFile) {
  expect_input_error([] { load_delay_samples(kData + "no_such_file.txt"); }, "cannot open");
}
TEST(DelaySamplesFile, BareNumberWithoutUnit) {
  expect_input_error([] { samples("# comment\n2.5\n"); }, "s.txt:2:1: invalid time '2.5'");
}
TEST(DelaySamplesFile, HeaderWithoutUnit) {
  expect_input_error([] { samples("delay\n2.5\n"); }, "s.txt:1: header 'delay' must name");
}
TEST(DelaySamplesFile, NegativeSample) {
  expect_input_error([] { samples("delay_us\n2\n  -1\n"); }, "s.txt:3:3: time -1 must be >= 0");
}
TEST(DelaySamplesFile, BadQuotingNamesTheColumn) {
  expect_input_error([] { samples("delay_us\n2\n3\"\n"); }, "s.txt:3:2: quote inside an unquoted");
}

// ---------------------------------------------------------------------------------------------
// Traces

// The arrivals of trace_long.csv and trace_wide.csv, in milliseconds.
const std::vector<std::vector<double>> kTraceMs = {
    {1.0, 2.5, 0.5, 4.0}, {1.5, 3.0, 3.0, 0.25}, {6.0, 0.0, 2.0, 5.0}};

void expect_trace(const Trace& t) {
  ASSERT_EQ(t.iterations(), 3);
  ASSERT_EQ(t.ranks(), 4);
  for (int i = 0; i < 3; ++i) {
    for (int r = 0; r < 4; ++r) {
      EXPECT_DOUBLE_EQ(t.at(i)[static_cast<std::size_t>(r)].value,
                       kTraceMs[static_cast<std::size_t>(i)][static_cast<std::size_t>(r)] * 1e-3)
          << i << " " << r;
    }
  }
}

TEST(DelayTraceFile, LongForm) { expect_trace(load_delay_trace(kData + "trace_long.csv")); }
TEST(DelayTraceFile, WideForm) { expect_trace(load_delay_trace(kData + "trace_wide.csv")); }

Trace parse_trace(const std::string& text) {
  std::istringstream in(text);
  return read_delay_trace(in, "t.csv");
}

TEST(DelayTraceFileInvalid, BadHeader) {
  expect_input_error([] { parse_trace("iter,rank,arrival_ms\n0,0,1\n"); },
                     "t.csv:1: expected a header");
}
TEST(DelayTraceFileInvalid, HeaderWithoutUnit) {
  expect_input_error([] { parse_trace("iteration,rank,arrival\n0,0,1\n"); }, "t.csv:1:");
}
TEST(DelayTraceFileInvalid, WideColumnsOutOfOrder) {
  expect_input_error([] { parse_trace("iteration,rank1_ms,rank0_ms\n0,1,2\n"); },
                     "t.csv:1:11: column 2 is 'rank1_ms', expected rank0_<unit>");
}
TEST(DelayTraceFileInvalid, WrongColumnCount) {
  expect_input_error([] { parse_trace("iteration,rank,arrival_ms\n0,0,1\n0,1\n"); },
                     "t.csv:3: expected 3 columns, got 2");
}
TEST(DelayTraceFileInvalid, NotANumber) {
  expect_input_error([] { parse_trace("iteration,rank,arrival_ms\n0,0,soon\n"); },
                     "t.csv:2:5: 'soon' is not a number");
}
TEST(DelayTraceFileInvalid, NegativeArrival) {
  expect_input_error([] { parse_trace("iteration,rank0_ms\n0,-2\n"); },
                     "t.csv:2:3: time -2 must be >= 0");
}
TEST(DelayTraceFileInvalid, BadRankIndex) {
  expect_input_error([] { parse_trace("iteration,rank,arrival_ms\n0,-1,2\n"); },
                     "t.csv:2:3: rank '-1' is not an integer in [0, 65535]");
  // At the top of int, one past the rank would wrap: refused where it is read.
  expect_input_error([] { parse_trace("iteration,rank,arrival_ms\n0,2147483647,2\n"); },
                     "t.csv:2:3: rank '2147483647' is not an integer in [0, 65535]");
  expect_input_error([] { parse_trace("iteration,rank,arrival_ms\n2147483647,0,2\n"); },
                     "t.csv:2:1: iteration '2147483647' is not an integer in [0, 2147483646]");
}
TEST(DelayTraceFileInvalid, DuplicateRow) {
  expect_input_error([] { parse_trace("iteration,rank,arrival_ms\n0,0,1\n0,1,1\n0,0,2\n"); },
                     "t.csv:4: iteration 0 rank 0 already given on line 2");
  expect_input_error([] { parse_trace("iteration,rank0_ms\n0,1\n0,2\n"); },
                     "t.csv:3: iteration 0 already given on line 2");
}
TEST(DelayTraceFileInvalid, IterationGap) {
  expect_input_error([] { load_delay_trace(kData + "trace_gap.csv"); }, "iteration 1 is missing");
}
TEST(DelayTraceFileInvalid, MissingRank) {
  expect_input_error([] { parse_trace("iteration,rank,arrival_ms\n0,0,1\n0,1,1\n1,1,1\n"); },
                     "iteration 1 has no arrival for rank 0");
}
TEST(DelayTraceFileInvalid, NoRows) {
  expect_input_error([] { parse_trace("# nothing\niteration,rank,arrival_ms\n"); }, "no data rows");
  expect_input_error([] { parse_trace(""); }, "empty delay trace");
}

}  // namespace
}  // namespace ssim::experiments
