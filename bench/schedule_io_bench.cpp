// Throughput of the schedule files (docs/schedule_format.md): writing and reading (with
// `stragglesim verify`'s verifier, and the binary reader alone) the JSON and the binary form of
// StragglAR at 1024 ranks (2054 rounds, 2.09 M transfers: 112 MB of JSON, 9.4 MB binary), in
// memory, so the figures are the CPU's, not the disk's. bytes_per_second counts the file's bytes.
//
//   build/bench/schedule_io_bench --benchmark_filter=Schedule
#include <benchmark/benchmark.h>

#include <sstream>
#include <streambuf>
#include <string>

#include "algorithms/registry.hpp"
#include "algorithms/schedule_bin.hpp"
#include "algorithms/schedule_json.hpp"
#include "algorithms/verifier.hpp"

namespace {

using ssim::alg::Schedule;

const Schedule& schedule() {
  static const Schedule s = ssim::alg::generate("stragglar", 1024, ssim::alg::Options{});
  return s;
}
const std::string& json_text() {
  static const std::string t = ssim::alg::schedule_to_json(schedule());
  return t;
}
const std::string& bin_bytes() {
  static const std::string b = ssim::alg::schedule_to_bin(schedule());
  return b;
}

// Counts what is written and drops it.
class NullBuf : public std::streambuf {
 protected:
  std::streamsize xsputn(const char*, std::streamsize n) override { return n; }
  int_type overflow(int_type c) override { return traits_type::not_eof(c); }
};

template <typename Writer>
void write(benchmark::State& state, std::size_t bytes) {
  const Schedule& s = schedule();
  for (auto _ : state) {
    NullBuf buf;
    std::ostream os(&buf);
    Writer w(os, s);
    for (const ssim::alg::Round& r : s.rounds) w.round(r);
    w.finish();
  }
  state.SetBytesProcessed(static_cast<std::int64_t>(state.iterations() * bytes));
}

void BM_ScheduleJsonWrite(benchmark::State& state) {
  write<ssim::alg::ScheduleJsonWriter>(state, json_text().size());
}
void BM_ScheduleBinWrite(benchmark::State& state) {
  write<ssim::alg::ScheduleBinWriter>(state, bin_bytes().size());
}

// Reads a string in place (an istringstream would copy it), seekable as a file is.
class MemBuf : public std::streambuf {
 public:
  explicit MemBuf(const std::string& s) {
    char* p = const_cast<char*>(s.data());
    setg(p, p, p + s.size());
  }

 protected:
  pos_type seekoff(off_type off, std::ios_base::seekdir dir, std::ios_base::openmode) override {
    char* to = (dir == std::ios_base::beg   ? eback()
                : dir == std::ios_base::cur ? gptr()
                                            : egptr()) +
               off;
    if (to < eback() || to > egptr()) return pos_type(off_type(-1));
    setg(eback(), to, egptr());
    return pos_type(to - eback());
  }
  pos_type seekpos(pos_type pos, std::ios_base::openmode mode) override {
    return seekoff(off_type(pos), std::ios_base::beg, mode);
  }
};

void verify(benchmark::State& state, const std::string& bytes) {
  for (auto _ : state) {
    MemBuf buf(bytes);
    std::istream in(&buf);
    const ssim::alg::StreamedVerify v = ssim::alg::verify_schedule_file(in, "bench");
    if (!v.result.ok()) state.SkipWithError("the schedule does not verify");
  }
  state.SetBytesProcessed(static_cast<std::int64_t>(state.iterations() * bytes.size()));
}
void BM_ScheduleJsonVerify(benchmark::State& state) { verify(state, json_text()); }
void BM_ScheduleBinVerify(benchmark::State& state) { verify(state, bin_bytes()); }

void BM_ScheduleBinReadOnly(benchmark::State& state) {
  class Drop : public ssim::alg::ScheduleJsonSink {
    void header(const Schedule&) override {}
    void round(const ssim::alg::Round& r) override { benchmark::DoNotOptimize(r.transfers.data()); }
  };
  for (auto _ : state) {
    MemBuf buf(bin_bytes());
    std::istream in(&buf);
    Drop sink;
    ssim::alg::read_schedule_bin(in, "bench", sink);
  }
  state.SetBytesProcessed(static_cast<std::int64_t>(state.iterations() * bin_bytes().size()));
}

}  // namespace

BENCHMARK(BM_ScheduleJsonWrite)->Unit(benchmark::kMillisecond)->MeasureProcessCPUTime();
BENCHMARK(BM_ScheduleBinWrite)->Unit(benchmark::kMillisecond)->MeasureProcessCPUTime();
BENCHMARK(BM_ScheduleJsonVerify)->Unit(benchmark::kMillisecond)->MeasureProcessCPUTime();
BENCHMARK(BM_ScheduleBinVerify)->Unit(benchmark::kMillisecond)->MeasureProcessCPUTime();
BENCHMARK(BM_ScheduleBinReadOnly)->Unit(benchmark::kMillisecond)->MeasureProcessCPUTime();
BENCHMARK_MAIN();
