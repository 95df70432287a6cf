#include "schema/result_csv.hpp"

#include <gtest/gtest.h>

#include <map>
#include <regex>
#include <sstream>

#include "common/error.hpp"

namespace ssim::schema {
namespace {

schema::ResultRow measured_row() {
  schema::ResultRow r;
  r.source = schema::ResultSource::measured;
  r.algorithm = "stragglar+nccl-rs";
  r.ranks = 8;
  r.bytes = Bytes{1 << 20};
  r.dtype = "float64";
  r.delay = Seconds{0.005};
  r.straggler = 7;
  r.iteration = 3;
  r.time = Seconds{0.00525};
  r.after_last_arrival = Seconds{0.00025};
  r.algbw = BytesPerSecond{4e9};
  r.busbw = BytesPerSecond{7e9};
  r.wrong = 0;
  r.device = "NVIDIA H100 80GB HBM3, nccl";  // a comma: the field gets quoted
  r.timestamp = "2025-06-01T12:34:56Z";
  r.options = "late=5,7;stragglers=2";  // a comma: quoted
  r.transport = "nccl";
  return r;
}

TEST(ResultCsv, BusFactorIsNcclTestsAllReduceFactor) {
  // 2(n-1)/n: n = 2 -> 1, n = 4 -> 1.5, n = 8 -> 1.75, n = 1 -> 0 (nothing moves).
  EXPECT_DOUBLE_EQ(schema::allreduce_bus_factor(2), 1.0);
  EXPECT_DOUBLE_EQ(schema::allreduce_bus_factor(4), 1.5);
  EXPECT_DOUBLE_EQ(schema::allreduce_bus_factor(8), 1.75);
  EXPECT_DOUBLE_EQ(schema::allreduce_bus_factor(1), 0.0);
  EXPECT_THROW(schema::allreduce_bus_factor(0), InputError);
}

TEST(ResultCsv, BandwidthsUseTheTimeAfterTheLastArrival) {
  // 1 MB in 250 us after the last arrival: algbw = 1e6 / 2.5e-4 = 4e9 B/s; busbw at n = 4 is
  // 4e9 * 1.5 = 6e9. time_s (5.25 ms, mostly the straggler's delay) does not enter.
  schema::ResultRow r;
  r.ranks = 4;
  r.bytes = Bytes{1000000};
  r.time = Seconds{0.00525};
  r.after_last_arrival = Seconds{0.00025};
  schema::set_bandwidths(r);
  EXPECT_DOUBLE_EQ(r.algbw.value, 4e9);
  EXPECT_DOUBLE_EQ(r.busbw.value, 6e9);
  r.after_last_arrival = Seconds{0};
  schema::set_bandwidths(r);
  EXPECT_EQ(r.algbw.value, 0.0);
}

TEST(ResultCsv, HeaderAndRowText) {
  std::ostringstream out;
  schema::ResultCsvWriter csv(out);
  csv.write(measured_row());
  EXPECT_EQ(
      out.str(),
      "source,algorithm,ranks,bytes,dtype,delay_s,straggler,iteration,time_s,"
      "after_last_arrival_s,algbw_GBps,busbw_GBps,wrong,device,timestamp,nccl_version,"
      "nccl_algo,nccl_proto,arrival_spread_s,options,transport\n"
      "measured,stragglar+nccl-rs,8,1048576,float64,0.005,7,3,0.00525,0.00025,4,7,0,"
      "\"NVIDIA H100 80GB HBM3, nccl\",2025-06-01T12:34:56Z,,,,0.005,\"late=5,7;stragglers=2\","
      "nccl\n");
}

TEST(ResultCsv, SimulatedRowLeavesWrongAndStragglerEmpty) {
  schema::ResultRow r = measured_row();
  r.source = schema::ResultSource::simulated;
  r.wrong.reset();
  r.straggler.reset();
  r.delay = Seconds{0};
  r.device = "alphabeta";
  r.timestamp.clear();
  r.time = r.after_last_arrival;
  r.options = "";
  r.transport = "sim";
  EXPECT_EQ(schema::format_result_row(r),
            "simulated,stragglar+nccl-rs,8,1048576,float64,0,,3,0.00025,0.00025,4,7,,alphabeta,"
            ",,,,0,,sim");
}

TEST(ResultCsv, WriteThenReadGivesTheSameRows) {
  schema::ResultRow a = measured_row();
  schema::ResultRow b = measured_row();
  b.source = schema::ResultSource::simulated;
  b.wrong.reset();
  b.straggler.reset();
  b.device = "say \"hi\"\nnext line";
  b.time = Seconds{1.0 / 3.0};  // shortest round-trip text must read back exactly
  a.nccl_version = "2.27.3";
  a.nccl_algo = "Ring,Tree";
  a.nccl_proto = "Simple";
  std::stringstream io;
  {
    schema::ResultCsvWriter csv(io);
    csv.write(a);
    csv.write(b);
  }
  const std::vector<schema::ResultRow> rows = schema::read_result_csv(io, "io.csv");
  ASSERT_EQ(rows.size(), 2u);
  EXPECT_EQ(rows[0], a);
  EXPECT_EQ(rows[1], b);
}

TEST(ResultCsv, ReaderFindsColumnsByNameAndIgnoresExtras) {
  std::istringstream in(
      "extra,timestamp,device,wrong,busbw_GBps,algbw_GBps,after_last_arrival_s,time_s,iteration,"
      "straggler,delay_s,dtype,bytes,ranks,algorithm,source\r\n"
      "x,t,d,2,1.5,1,0.001,0.002,0,,0,int32,4096,4,ring,measured\r\n");
  const std::vector<schema::ResultRow> rows = schema::read_result_csv(in, "r.csv");
  ASSERT_EQ(rows.size(), 1u);
  EXPECT_EQ(rows[0].algorithm, "ring");
  EXPECT_EQ(rows[0].bytes.value, 4096u);
  EXPECT_EQ(rows[0].wrong, std::optional<std::uint64_t>(2));
  EXPECT_EQ(rows[0].timestamp, "t");
  EXPECT_DOUBLE_EQ(rows[0].busbw.value, 1.5e9);
  // Written before the nccl_* columns existed: they read as empty.
  EXPECT_EQ(rows[0].nccl_version, "");
  EXPECT_EQ(rows[0].nccl_proto, "");
  // ... and before options and transport: the options are not recorded (not "the defaults").
  EXPECT_EQ(rows[0].options, std::nullopt);
  EXPECT_EQ(rows[0].transport, "");
}

TEST(ResultCsv, OptionsColumnIsCanonical) {
  EXPECT_EQ(schema::canonical_options({}), "");
  EXPECT_EQ(schema::canonical_options({{"segments", "16"}, {"gpus_per_node", "4"}}),
            "gpus_per_node=4;segments=16");
  EXPECT_THROW(schema::canonical_options({{"a;b", "1"}}), InputError);
  EXPECT_THROW(schema::canonical_options({{"a", "1;2"}}), InputError);
  EXPECT_THROW(schema::canonical_options({{"", "1"}}), InputError);
  const auto parsed = schema::parse_options("segments=16;gpus_per_node=4;late=5,7");
  EXPECT_EQ(parsed, (std::map<std::string, std::string>{
                        {"gpus_per_node", "4"}, {"late", "5,7"}, {"segments", "16"}}));
  EXPECT_TRUE(schema::parse_options("").empty());
  EXPECT_THROW(schema::parse_options("segments"), InputError);
  EXPECT_THROW(schema::parse_options("=4"), InputError);
  EXPECT_THROW(schema::parse_options("a=1;a=2"), InputError);
  EXPECT_THROW(schema::parse_options("a=1;"), InputError);
  // A file's cell in any key order reads back canonical; an empty cell is "the defaults".
  std::istringstream in(
      "source,algorithm,ranks,bytes,dtype,delay_s,straggler,iteration,time_s,"
      "after_last_arrival_s,algbw_GBps,busbw_GBps,wrong,device,timestamp,options,transport\n"
      "measured,hierarchical,8,4096,float32,0,,0,1,1,1,1,,d,t,inter=rhd;gpus_per_node=4,mpi\n"
      "measured,ring,8,4096,float32,0,,0,1,1,1,1,,d,t,,single-gpu\n");
  const std::vector<schema::ResultRow> rows = schema::read_result_csv(in, "o.csv");
  ASSERT_EQ(rows.size(), 2u);
  EXPECT_EQ(rows[0].options, std::optional<std::string>("gpus_per_node=4;inter=rhd"));
  EXPECT_EQ(rows[0].transport, "mpi");
  EXPECT_EQ(rows[1].options, std::optional<std::string>(""));
  EXPECT_EQ(rows[1].transport, "single-gpu");
}

void expect_error(const std::string& text, const std::string& pattern) {
  std::istringstream in(text);
  try {
    schema::read_result_csv(in, "bad.csv");
    ADD_FAILURE() << "no error for: " << text;
  } catch (const InputError& e) {
    EXPECT_TRUE(std::regex_search(e.what(), std::regex(pattern))) << e.what();
  }
}

TEST(ResultCsv, ReaderErrorsNameFileLineAndColumn) {
  const std::string header =
      "source,algorithm,ranks,bytes,dtype,delay_s,straggler,iteration,time_s,"
      "after_last_arrival_s,algbw_GBps,busbw_GBps,wrong,device,timestamp\n";
  expect_error("", "bad.csv: empty file");
  expect_error("source,algorithm\n", "bad.csv:1: missing column 'ranks'");
  expect_error(header + "measured,ring,4,4096,float32,0,,0,1,1,1,1,,d\n",
               "bad.csv:2: 14 fields, the header has 15");
  expect_error(header + "measured,ring,four,4096,float32,0,,0,1,1,1,1,,d,t\n",
               "bad.csv:2: column ranks: bad value 'four'");
  expect_error(
      header + "measured,ring,4,4096,float32,0,,0,1,1,1,1,,d,t\n" +
          "guessed,ring,4,4096,float32,0,,0,1,1,1,1,,d,t\n",
      "bad.csv:3: column source: bad value 'guessed' \\(expected measured or simulated\\)");
  expect_error(header + "measured,ring,4,4096,float32,0,,0,1ms,1,1,1,,d,t\n",
               "column time_s: bad value '1ms'");
  expect_error(header + "measured,ring,4,4096,float32,0,,0,1,1,1,1,,\"open,t\n",
               "bad.csv:2:44: quoted field not closed");
  expect_error(header + "measured,ring,4,4096,float32,0,,0,1,1,1,1,,H100 \"SXM\",t\n",
               "bad.csv:2:49: quote inside an unquoted field");
  const std::string with_options =
      "source,algorithm,ranks,bytes,dtype,delay_s,straggler,iteration,time_s,"
      "after_last_arrival_s,algbw_GBps,busbw_GBps,wrong,device,timestamp,options\n";
  expect_error(with_options + "measured,ring,4,4096,float32,0,,0,1,1,1,1,,d,t,x=1;x=2\n",
               "bad.csv:2: column options: bad value 'x=1;x=2' \\(expected key=value;...: option x "
               "given twice\\)");
}

}  // namespace
}  // namespace ssim::schema
