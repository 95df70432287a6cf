#include "algorithms/schedule_bin.hpp"

#include <algorithm>
#include <array>
#include <cstdio>
#include <cstring>
#include <exception>
#include <map>
#include <sstream>
#include <streambuf>
#include <unordered_map>

#include "algorithms/schedule_verify_sink.hpp"
#include "algorithms/verifier.hpp"
#include "common/error.hpp"

namespace ssim::alg {
namespace {

// Limits of the header's fields (those of the JSON reader for ranks and chunks).
constexpr std::uint64_t kMaxRanks = std::uint64_t{1} << 24;
constexpr std::uint64_t kMaxChunks = std::uint64_t{1} << 30;
constexpr std::uint64_t kMaxName = 4096;     // bytes of the algorithm name, an option key, a phase
constexpr std::uint64_t kMaxValue = 65536;   // bytes of an option value
constexpr std::uint64_t kMaxOptions = 4096;  // options in the header
constexpr std::uint64_t kMaxPhases = 4096;   // entries of the phase table
constexpr std::uint64_t kMaxTransfers = (std::uint64_t{1} << 31) - 1;  // in one round
constexpr std::size_t kReserve = std::size_t{1} << 16;  // transfers reserved before they are read

std::array<std::uint32_t, 256> make_crc_table() {
  std::array<std::uint32_t, 256> t{};
  for (std::uint32_t i = 0; i < 256; ++i) {
    std::uint32_t c = i;
    for (int k = 0; k < 8; ++k) c = (c & 1) ? 0xEDB88320u ^ (c >> 1) : c >> 1;
    t[i] = c;
  }
  return t;
}

std::uint64_t zigzag(std::int64_t v) {
  return (static_cast<std::uint64_t>(v) << 1) ^ static_cast<std::uint64_t>(v >> 63);
}
std::int64_t unzigzag(std::uint64_t v) {
  return static_cast<std::int64_t>(v >> 1) ^ -static_cast<std::int64_t>(v & 1);
}

void put_varint(std::string& out, std::uint64_t v) {
  while (v >= 0x80) {
    out += static_cast<char>((v & 0x7f) | 0x80);
    v >>= 7;
  }
  out += static_cast<char>(v);
}
void put_string(std::string& out, std::string_view s) {
  put_varint(out, s.size());
  out.append(s);
}

}  // namespace

std::uint32_t crc32(std::uint32_t crc, const void* data, std::size_t size) {
  static const std::array<std::uint32_t, 256> table = make_crc_table();
  const auto* p = static_cast<const unsigned char*>(data);
  crc = ~crc;
  for (std::size_t i = 0; i < size; ++i) crc = table[(crc ^ p[i]) & 0xff] ^ (crc >> 8);
  return ~crc;
}

// --- writer

ScheduleBinWriter::ScheduleBinWriter(std::ostream& os, const Schedule& s) : ScheduleWriter(os) {
  SSIM_CHECK(s.ranks >= 1 && static_cast<std::uint64_t>(s.ranks) <= kMaxRanks && s.chunks >= 1 &&
                 static_cast<std::uint64_t>(s.chunks) <= kMaxChunks,
             "a schedule's ranks and chunks are in range");
  buffer_.append(kScheduleBinMagic, sizeof kScheduleBinMagic);
  buffer_ += static_cast<char>(kScheduleBinVersion);
  buffer_ += static_cast<char>(s.collective);
  put_varint(buffer_, static_cast<std::uint64_t>(s.ranks));
  put_varint(buffer_, static_cast<std::uint64_t>(s.chunks));
  put_varint(buffer_, s.straggler ? static_cast<std::uint64_t>(*s.straggler) + 1 : 0);
  put_varint(buffer_, s.late.size());
  for (int r : s.late) put_varint(buffer_, static_cast<std::uint64_t>(r));
  SSIM_CHECK(s.algorithm.size() <= kMaxName && s.options.size() <= kMaxOptions,
             "the algorithm name and the options fit the binary form");
  put_string(buffer_, s.algorithm);
  put_varint(buffer_, s.options.size());
  for (const auto& [key, value] : s.options) {
    SSIM_CHECK(key.size() <= kMaxName && value.size() <= kMaxValue,
               "an option fits the binary form");
    put_string(buffer_, key);
    put_string(buffer_, value);
  }
}

void ScheduleBinWriter::round(const Round& round) {
  // Version 1 has no field for in-network reductions: refuse rather than drop them.
  if (!round.switch_reduces.empty()) {
    throw InputError(
        "the binary schedule form (version 1) cannot hold in-network reductions "
        "(switch_reduces, as nvls has): write this schedule as JSON (--format json)");
  }
  std::string& out = buffer_;
  const auto known = std::find(phases_.begin(), phases_.end(), round.phase);
  if (known != phases_.end()) {
    put_varint(out, static_cast<std::uint64_t>(known - phases_.begin()) + 2);
  } else {
    SSIM_CHECK(round.phase.size() <= kMaxName, "a phase fits the binary form");
    put_varint(out, 1);
    put_string(out, round.phase);
    if (phases_.size() < kMaxPhases) phases_.push_back(round.phase);
  }
  put_varint(out, round.transfers.size());
  std::int64_t prev_src = 0, prev_begin = 0;
  for (const Transfer& t : round.transfers) {
    put_varint(out, zigzag(t.src - prev_src));
    put_varint(out, zigzag(static_cast<std::int64_t>(t.dst) - t.src));
    put_varint(out, zigzag(t.chunk_begin - prev_begin));
    put_varint(out, (static_cast<std::uint64_t>(t.chunk_end - t.chunk_begin - 1) << 1) |
                        (t.op == Op::copy ? 1u : 0u));
    prev_src = t.src;
    prev_begin = t.chunk_begin;
    if (out.size() >= kFlushBytes) flush();
  }
  ++rounds_;
  transfers_ += round.transfers.size();
}

void ScheduleBinWriter::flush() {
  crc_ = crc32(crc_, buffer_.data(), buffer_.size());
  write_buffer();
}

void ScheduleBinWriter::finish() {
  put_varint(buffer_, 0);
  put_varint(buffer_, rounds_);
  put_varint(buffer_, transfers_);
  crc_ = crc32(crc_, buffer_.data(), buffer_.size());
  for (int i = 0; i < 4; ++i) buffer_ += static_cast<char>((crc_ >> (8 * i)) & 0xff);
  write_buffer();
}

void write_schedule_bin(std::ostream& os, const Schedule& s) {
  ScheduleBinWriter w(os, s);
  for (const Round& r : s.rounds) w.round(r);
  w.finish();
}

std::string schedule_to_bin(const Schedule& s) {
  std::ostringstream os;
  write_schedule_bin(os, s);
  return os.str();
}

// --- reader

namespace {

class BinReader {
 public:
  BinReader(std::istream& in, std::string_view source, ScheduleJsonSink& sink)
      : in_(in), source_(source), sink_(sink), buffer_(kBlock) {}

  Schedule read(bool magic_read) {
    if (magic_read) {
      crc_ = crc32(0, kScheduleBinMagic, sizeof kScheduleBinMagic);
      base_ = sizeof kScheduleBinMagic;
    } else {
      char magic[sizeof kScheduleBinMagic];
      for (char& c : magic) c = static_cast<char>(byte("the file's magic number"));
      if (std::memcmp(magic, kScheduleBinMagic, sizeof magic) != 0)
        fail(0, "not a binary schedule (the first 8 bytes are not 89 53 53 49 4D 0D 0A 1A)");
    }
    const std::uint64_t version_at = offset();
    const unsigned version = byte("the format version");
    if (version != kScheduleBinVersion) {
      fail(version_at, "format version " + std::to_string(version) +
                           " is not supported (this stragglesim reads version " +
                           std::to_string(kScheduleBinVersion) + ")");
    }
    Schedule h = read_header();
    ranks_ = h.ranks;
    chunks_ = h.chunks;
    try {
      sink_.header(h);
      sink_open_ = true;
    } catch (...) {
      sink_error_ = std::current_exception();
    }
    read_rounds();
    const std::uint64_t rounds_at = offset();
    const std::uint64_t rounds = varint("the round count");
    if (rounds != rounds_read_)
      fail(rounds_at, "the trailer counts " + std::to_string(rounds) + " rounds, the file holds " +
                          std::to_string(rounds_read_));
    const std::uint64_t transfers_at = offset();
    const std::uint64_t transfers = varint("the transfer count");
    if (transfers != transfers_read_)
      fail(transfers_at, "the trailer counts " + std::to_string(transfers) +
                             " transfers, the file holds " + std::to_string(transfers_read_));
    const std::uint64_t crc_at = offset();
    checksum_here();
    const std::uint32_t expected = crc_;
    std::uint32_t stored = 0;
    for (int i = 0; i < 4; ++i) stored |= static_cast<std::uint32_t>(byte("the CRC-32")) << (8 * i);
    if (stored != expected) {
      fail(crc_at, "CRC-32 mismatch (stored " + hex(stored) + ", computed " + hex(expected) +
                       "): the file is corrupted");
    }
    if (pos_ < size_ || refill()) fail(offset(), "unexpected bytes after the end of the schedule");
    if (sink_error_) std::rethrow_exception(sink_error_);
    return h;
  }

 private:
  static constexpr std::size_t kBlock = std::size_t{1} << 20;

  [[noreturn]] void fail(std::uint64_t at, const std::string& what) const {
    throw InputError(std::string(source_) + ": byte " + std::to_string(at) + ": " + what);
  }
  static std::string hex(std::uint32_t v) {
    char buf[16];
    std::snprintf(buf, sizeof buf, "%08x", v);
    return buf;
  }
  std::uint64_t offset() const { return base_ + pos_; }

  void checksum_here() {
    crc_ = crc32(crc_, buffer_.data() + crc_from_, pos_ - crc_from_);
    crc_from_ = pos_;
  }
  bool refill() {
    if (eof_) return false;
    checksum_here();
    base_ += size_;
    in_.read(buffer_.data(), static_cast<std::streamsize>(buffer_.size()));
    size_ = static_cast<std::size_t>(in_.gcount());
    pos_ = crc_from_ = 0;
    if (in_.bad()) throw InputError(std::string(source_) + ": read failed");
    if (size_ == 0) eof_ = true;
    return size_ > 0;
  }
  // One byte; `what` names the field when the file ends before it.
  unsigned byte(const char* what) {
    if (pos_ == size_ && !refill())
      fail(offset(), std::string("truncated: the file ends in ") + what);
    return static_cast<unsigned char>(buffer_[pos_++]);
  }
  // LEB128: 7 bits a byte, low first, at most 10 bytes.
  std::uint64_t varint(const char* what) {
    const std::uint64_t at = offset();
    std::uint64_t v = 0;
    for (int shift = 0;; shift += 7) {
      const unsigned b = byte(what);
      if (shift == 63 && b > 1) fail(at, std::string(what) + ": a varint beyond 64 bits");
      v |= static_cast<std::uint64_t>(b & 0x7f) << shift;
      if ((b & 0x80) == 0) return v;
    }
  }
  // A varint in [lo, hi] (checked before any use).
  std::uint64_t ranged(const char* what, std::uint64_t lo, std::uint64_t hi) {
    const std::uint64_t at = offset();
    const std::uint64_t v = varint(what);
    if (v < lo || v > hi) {
      fail(at, std::string(what) + " " + std::to_string(v) + " out of range [" +
                   std::to_string(lo) + ", " + std::to_string(hi) + "]");
    }
    return v;
  }
  std::string string(const char* what, std::uint64_t max) {
    const std::uint64_t length = ranged(what, 0, max);  // the length, checked before the allocation
    std::string s;
    s.reserve(static_cast<std::size_t>(length));
    for (std::uint64_t i = 0; i < length; ++i) s += static_cast<char>(byte(what));
    return s;
  }

  Schedule read_header() {
    Schedule h;
    const std::uint64_t collective_at = offset();
    const unsigned collective = byte("the collective");
    if (collective > static_cast<unsigned>(Collective::allgather))
      fail(collective_at, "collective " + std::to_string(collective) +
                              " unknown (0 allreduce, 1 reduce_scatter, 2 allgather)");
    h.collective = static_cast<Collective>(collective);
    h.ranks = static_cast<int>(ranged("ranks", 1, kMaxRanks));
    h.chunks = static_cast<int>(ranged("chunks", 1, kMaxChunks));
    const std::uint64_t straggler = ranged("straggler + 1", 0, static_cast<std::uint64_t>(h.ranks));
    if (straggler > 0) h.straggler = static_cast<int>(straggler - 1);
    const std::uint64_t late =
        ranged("the late rank count", 0, static_cast<std::uint64_t>(h.ranks));
    std::vector<bool> listed(late > 0 ? static_cast<std::size_t>(h.ranks) : 0);
    for (std::uint64_t i = 0; i < late; ++i) {
      const std::uint64_t at = offset();
      const int r =
          static_cast<int>(ranged("a late rank", 0, static_cast<std::uint64_t>(h.ranks) - 1));
      if (listed[static_cast<std::size_t>(r)])
        fail(at, "late rank " + std::to_string(r) + " listed twice");
      listed[static_cast<std::size_t>(r)] = true;
      h.late.push_back(r);
    }
    if (!h.late.empty() && h.straggler != h.late.back())
      fail(offset(), "the last late rank must be the straggler");
    h.algorithm = string("the algorithm name's length", kMaxName);
    const std::uint64_t options = ranged("the option count", 0, kMaxOptions);
    for (std::uint64_t i = 0; i < options; ++i) {
      const std::uint64_t at = offset();
      std::string key = string("an option key's length", kMaxName);
      std::string value = string("an option value's length", kMaxValue);
      if (!h.options.emplace(std::move(key), std::move(value)).second)
        fail(at, "an option key given twice");
    }
    return h;
  }

  void read_rounds() {
    std::vector<std::string> phases;
    Round round;
    for (;;) {
      const std::uint64_t tag_at = offset();
      const std::uint64_t tag = varint("a round's phase (or the end of the rounds)");
      if (tag == 0) return;
      const std::string where = "round " + std::to_string(rounds_read_);
      if (tag == 1) {
        round.phase = string("a phase's length", kMaxName);
        if (phases.size() < kMaxPhases) phases.push_back(round.phase);
      } else if (tag - 2 < phases.size()) {
        round.phase = phases[static_cast<std::size_t>(tag - 2)];
      } else {
        fail(tag_at, where + ": phase " + std::to_string(tag - 2) + " is not in the table (" +
                         std::to_string(phases.size()) + " phases so far)");
      }
      const std::uint64_t count = ranged("a round's transfer count", 0, kMaxTransfers);
      round.transfers.clear();
      round.transfers.reserve(static_cast<std::size_t>(std::min<std::uint64_t>(count, kReserve)));
      std::int64_t prev_src = 0, prev_begin = 0;
      const std::int64_t ranks = ranks_, chunks = chunks_;
      for (std::uint64_t i = 0; i < count; ++i) {
        const std::uint64_t at = offset();
        const std::int64_t src = prev_src + unzigzag(small(varint("a transfer's src"), at));
        const std::int64_t dst = src + unzigzag(small(varint("a transfer's dst"), at));
        const std::int64_t begin =
            prev_begin + unzigzag(small(varint("a transfer's first chunk"), at));
        const std::uint64_t last = small(varint("a transfer's chunk count and op"), at);
        const std::int64_t end = begin + static_cast<std::int64_t>(last >> 1) + 1;
        const auto bad = [&](const char* field, std::int64_t v, std::int64_t lo, std::int64_t hi) {
          fail(at, where + ", transfer " + std::to_string(i) + ": " + field + " " +
                       std::to_string(v) + " out of range [" + std::to_string(lo) + ", " +
                       std::to_string(hi) + "]");
        };
        if (src < 0 || src >= ranks) bad("src", src, 0, ranks - 1);
        if (dst < 0 || dst >= ranks) bad("dst", dst, 0, ranks - 1);
        if (begin < 0 || begin >= chunks) bad("first chunk", begin, 0, chunks - 1);
        if (end > chunks) bad("chunk end", end, begin + 1, chunks);
        round.transfers.push_back(
            Transfer{static_cast<std::int32_t>(src), static_cast<std::int32_t>(dst),
                     static_cast<std::int32_t>(begin), static_cast<std::int32_t>(end),
                     (last & 1) ? Op::copy : Op::reduce});
        prev_src = src;
        prev_begin = begin;
      }
      ++rounds_read_;
      transfers_read_ += count;
      if (sink_open_) {
        try {
          sink_.round(round);
        } catch (...) {
          sink_error_ = std::current_exception();
          sink_open_ = false;
        }
      }
    }
  }
  // A delta of a transfer field: at most 2^33 (wider cannot be in range; keeps the sums exact).
  std::uint64_t small(std::uint64_t v, std::uint64_t at) const {
    if (v > (std::uint64_t{1} << 33))
      fail(at, "round " + std::to_string(rounds_read_) + ": a transfer field beyond any range");
    return v;
  }

  std::istream& in_;
  std::string_view source_;
  ScheduleJsonSink& sink_;
  std::vector<char> buffer_;
  std::size_t size_ = 0, pos_ = 0, crc_from_ = 0;
  std::uint64_t base_ = 0;  // file offset of buffer_[0]
  bool eof_ = false;
  std::uint32_t crc_ = 0;
  int ranks_ = 0, chunks_ = 0;
  std::uint64_t rounds_read_ = 0, transfers_read_ = 0;
  bool sink_open_ = false;
  std::exception_ptr sink_error_;
};

class Collect : public ScheduleJsonSink {
 public:
  explicit Collect(Schedule& s) : s_(s) {}
  void header(const Schedule&) override {}
  void round(const Round& r) override { s_.rounds.push_back(r); }

 private:
  Schedule& s_;
};

// Bytes already read from a stream that cannot seek, then the rest of the stream.
class PrefixedBuf : public std::streambuf {
 public:
  PrefixedBuf(std::string prefix, std::istream& rest) : prefix_(std::move(prefix)), rest_(rest) {
    setg(prefix_.data(), prefix_.data(), prefix_.data() + prefix_.size());
  }

 protected:
  int_type underflow() override {
    if (gptr() < egptr()) return traits_type::to_int_type(*gptr());
    rest_.read(block_.data(), static_cast<std::streamsize>(block_.size()));
    const std::streamsize got = rest_.gcount();
    if (got <= 0) return traits_type::eof();
    setg(block_.data(), block_.data(), block_.data() + got);
    return traits_type::to_int_type(*gptr());
  }

 private:
  std::string prefix_;
  std::istream& rest_;
  std::array<char, 1 << 16> block_{};
};

}  // namespace

Schedule read_schedule_bin(std::istream& in, std::string_view source_name, ScheduleJsonSink& sink,
                           bool magic_read) {
  BinReader reader(in, source_name, sink);
  return reader.read(magic_read);
}

Schedule read_schedule_bin(std::string_view bytes, std::string_view source_name) {
  std::istringstream in{std::string(bytes)};
  Schedule s;
  Collect sink(s);
  Schedule header = read_schedule_bin(in, source_name, sink);
  header.rounds = std::move(s.rounds);
  return header;
}

Schedule read_schedule_any(std::string_view bytes, std::string_view source_name) {
  if (bytes.size() >= sizeof kScheduleBinMagic &&
      std::memcmp(bytes.data(), kScheduleBinMagic, sizeof kScheduleBinMagic) == 0)
    return read_schedule_bin(bytes, source_name);
  return read_schedule_json(bytes, source_name);
}

StreamedVerify verify_schedule_file(std::istream& in, std::string_view source_name,
                                    const std::function<void(const Schedule& header)>& before,
                                    const std::function<void(const Round& round)>& each) {
  const std::istream::pos_type start = in.tellg();
  std::string head(sizeof kScheduleBinMagic, '\0');
  in.read(head.data(), static_cast<std::streamsize>(head.size()));
  if (in.bad()) throw InputError(std::string(source_name) + ": read failed");
  head.resize(static_cast<std::size_t>(in.gcount()));
  if (head.size() == sizeof kScheduleBinMagic &&
      std::memcmp(head.data(), kScheduleBinMagic, head.size()) == 0) {
    detail::VerifyingSink sink(before, each);
    StreamedVerify out;
    out.header = read_schedule_bin(in, source_name, sink, /*magic_read=*/true);
    out.result = sink.finish();
    return out;
  }
  if (start != std::istream::pos_type(-1)) {
    in.clear();
    in.seekg(start);
    if (in) return verify_schedule_json(in, source_name, before, each);
    throw InputError(std::string(source_name) + ": read failed (cannot read the input again)");
  }
  // A pipe: the bytes read so far, then the rest (read by the nlohmann reader, as it cannot seek).
  in.clear(in.rdstate() & ~std::ios::failbit & ~std::ios::eofbit);
  PrefixedBuf buf(std::move(head), in);
  std::istream joined(&buf);
  return verify_schedule_json(joined, source_name, before, each);
}

}  // namespace ssim::alg
