// The interface of the streamed schedule writers (ScheduleJsonWriter in schedule_json.hpp,
// ScheduleBinWriter in schedule_bin.hpp): built on a stream from the header (a Schedule whose
// rounds are ignored), then round() for each round, then finish() once.
//
//   std::unique_ptr<ScheduleWriter> w = std::make_unique<ScheduleBinWriter>(os, header);
//   while (const Round* r = stream.next()) w->round(*r);
//   w->finish();
//
// Each writer encodes into a buffer and writes it to the stream in blocks of about kFlushBytes,
// also within a round; finish() writes the rest. Check the stream after round() to stop early on
// a failed write.
#pragma once

#include <cstddef>
#include <ostream>
#include <string>

#include "algorithms/schedule.hpp"

namespace ssim::alg {

class ScheduleWriter {
 public:
  virtual ~ScheduleWriter() = default;
  ScheduleWriter(const ScheduleWriter&) = delete;
  ScheduleWriter& operator=(const ScheduleWriter&) = delete;
  virtual void round(const Round& round) = 0;
  virtual void finish() = 0;

 protected:
  static constexpr std::size_t kFlushBytes = std::size_t{1} << 20;
  explicit ScheduleWriter(std::ostream& os) : os_(os) {}
  // Writes buffer_ to the stream and empties it.
  void write_buffer() {
    os_.write(buffer_.data(), static_cast<std::streamsize>(buffer_.size()));
    buffer_.clear();
  }
  std::string buffer_;

 private:
  std::ostream& os_;
};

}  // namespace ssim::alg
