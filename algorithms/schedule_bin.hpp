// The binary form of a schedule (docs/schedule_format.md: the layout byte by byte), for schedules
// too large for JSON: about 4-7 bytes per transfer where JSON takes 45-60, read and written round
// by round.
//
//   ScheduleBinWriter w(out.stream(), header);   // header: a Schedule whose rounds are ignored
//   for (...) w.round(round);
//   w.finish();
//   Schedule s = read_schedule_bin(in, "plan.bin", sink);   // rounds to the sink; InputError
//   StreamedVerify v = verify_schedule_file(in, "plan.bin");  // JSON or binary, by its first bytes
//
// Reading checks the layout, the header's ranges (those of the JSON reader), every transfer
// against the header, the round and transfer counts and the CRC-32 at the end; every error names
// the source and the byte offset of the field. No allocation is sized by a count read from the
// file before the bytes it describes were read. Correctness is the verifier's job.
#pragma once

#include <cstdint>
#include <functional>
#include <istream>
#include <ostream>
#include <string>
#include <string_view>
#include <vector>

#include "algorithms/schedule.hpp"
#include "algorithms/schedule_json.hpp"
#include "algorithms/schedule_writer.hpp"

namespace ssim::alg {

// The first 8 bytes of every binary schedule file.
inline constexpr char kScheduleBinMagic[8] = {'\x89', 'S', 'S', 'I', 'M', '\r', '\n', '\x1a'};
inline constexpr std::uint8_t kScheduleBinVersion = 1;

// Round by round, as ScheduleWriter says; the CRC-32 runs over the bytes as they are written.
class ScheduleBinWriter final : public ScheduleWriter {
 public:
  ScheduleBinWriter(std::ostream& os, const Schedule& header);
  void round(const Round& round) override;
  void finish() override;

 private:
  void flush();  // the CRC-32 of the buffer, then the buffer to the stream
  std::uint32_t crc_ = 0;
  std::uint64_t rounds_ = 0, transfers_ = 0;
  std::vector<std::string> phases_;
};

void write_schedule_bin(std::ostream& os, const Schedule& schedule);
std::string schedule_to_bin(const Schedule& schedule);

// Reads a whole binary schedule from `in`, positioned after the magic when `magic_read`; the
// rounds go to the sink one at a time (its exceptions are kept and rethrown at the end unless
// the input has an error, as with the JSON reader). Returns the header.
Schedule read_schedule_bin(std::istream& in, std::string_view source_name, ScheduleJsonSink& sink,
                           bool magic_read = false);
// The whole schedule in memory (tests, small files).
Schedule read_schedule_bin(std::string_view bytes, std::string_view source_name);

// `stragglesim verify`: a binary schedule (its magic) or JSON (anything else), streamed; `before`
// and `each` as for verify_schedule_json.
StreamedVerify verify_schedule_file(std::istream& in, std::string_view source_name,
                                    const std::function<void(const Schedule& header)>& before = {},
                                    const std::function<void(const Round& round)>& each = {});

// A whole schedule file in memory, JSON or binary by its first bytes.
Schedule read_schedule_any(std::string_view bytes, std::string_view source_name);

// CRC-32 (the polynomial of zlib and PNG, reflected 0xEDB88320), continued from `crc`.
std::uint32_t crc32(std::uint32_t crc, const void* data, std::size_t size);

}  // namespace ssim::alg
