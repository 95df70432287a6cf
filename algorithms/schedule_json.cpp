// The reader of the schedule JSON form (schedule_json.hpp): nlohmann's SAX parser behind every
// entry point, and verify's fast path; the writer is schedule_json_write.cpp.
#include "algorithms/schedule_json.hpp"

#include <algorithm>
#include <array>
#include <charconv>
#include <cstring>
#include <exception>
#include <functional>
#include <istream>
#include <iterator>
#include <memory>
#include <nlohmann/json.hpp>
#include <optional>
#include <set>
#include <span>
#include <sstream>
#include <type_traits>
#include <vector>

#include "algorithms/schedule_verify_sink.hpp"
#include "algorithms/verifier.hpp"
#include "common/error.hpp"
#include "common/json_dom.hpp"

namespace ssim::alg {
namespace {

using nlohmann::json;

// nlohmann keeps the last of two equal keys without a word; a schedule with two "src" in one
// transfer is an error, reported after any syntax error: the DOM of `text` and the key path of its
// first duplicate key.
json parse_noting_duplicates(std::string_view text, std::optional<std::string>& first_duplicate) {
  return parse_json_unique_keys(text,
                                [&first_duplicate](const std::string& path, const std::string&) {
                                  if (!first_duplicate) first_duplicate = path;
                                });
}

using Keys = std::span<const char* const>;
constexpr std::array<const char*, 8> kTopKeys = {"collective", "algorithm", "ranks",   "chunks",
                                                 "straggler",  "late",      "options", "rounds"};
constexpr std::array<const char*, 3> kRoundKeys = {"phase", "switch_reduces", "transfers"};
constexpr std::array<const char*, 3> kSwitchKeys = {"chunks", "members", "receivers"};
constexpr std::array<const char*, 4> kTransferKeys = {"src", "dst", "chunks", "op"};

bool is_one_of(std::string_view key, Keys keys) {
  for (const char* k : keys)
    if (key == k) return true;
  return false;
}

class Reader {
 public:
  explicit Reader(std::string_view source) : source_(source) {}

  [[noreturn]] void fail(const std::string& path, const std::string& what) const {
    throw InputError(std::string(source_) + ": " + path + ": " + what);
  }

  const json& member(const json& obj, const std::string& path, const char* key) const {
    auto it = obj.find(key);
    if (it == obj.end()) fail(path, std::string("missing key '") + key + "'");
    return *it;
  }

  int integer(const json& v, const std::string& path, long long lo, long long hi) const {
    if (!v.is_number_integer())
      fail(path, "expected an integer, got " + std::string(v.type_name()) + " " + v.dump());
    const long long x = v.get<long long>();
    if (x < lo || x > hi) {
      fail(path, "value " + std::to_string(x) + " out of range [" + std::to_string(lo) + ", " +
                     std::to_string(hi) + "]");
    }
    return static_cast<int>(x);
  }

  std::string string(const json& v, const std::string& path) const {
    if (!v.is_string())
      fail(path, "expected a string, got " + std::string(v.type_name()) + " " + v.dump());
    return v.get<std::string>();
  }

  [[noreturn]] void unknown_key(const std::string& path, const std::string& key, Keys keys) const {
    std::string list;
    for (const char* k : keys) list += (list.empty() ? "" : ", ") + std::string(k);
    fail(path, "unknown key '" + key + "' (expected: " + list + ")");
  }

  // The first key not in `keys`, in the object's (sorted) order.
  void only_keys(const json& obj, const std::string& path, Keys keys) const {
    for (auto it = obj.begin(); it != obj.end(); ++it) {
      if (!is_one_of(it.key(), keys)) unknown_key(path, it.key(), keys);
    }
  }

  std::string_view source() const { return source_; }

 private:
  std::string_view source_;
};

constexpr long long kMaxRanks = 1 << 24;
constexpr long long kMaxChunks = 1 << 30;

std::string round_path(std::size_t ri) { return "rounds[" + std::to_string(ri) + "]"; }
std::string transfer_path(std::size_t ri, std::size_t ti) {
  return round_path(ri) + ".transfers[" + std::to_string(ti) + "]";
}

// The header of a schedule document (every key but "rounds", whose presence is checked apart),
// in this order: unknown keys, collective, algorithm, ranks, chunks, straggler, late, options.
Schedule read_header(const Reader& in, const json& doc) {
  in.only_keys(doc, "(top level)", kTopKeys);
  Schedule s;
  if (auto it = doc.find("collective"); it != doc.end()) {
    try {
      s.collective = parse_collective(in.string(*it, "collective"));
    } catch (const InputError& e) {
      in.fail("collective", e.what());
    }
  }
  if (auto it = doc.find("algorithm"); it != doc.end() && !it->is_null())
    s.algorithm = in.string(*it, "algorithm");
  s.ranks = in.integer(in.member(doc, "(top level)", "ranks"), "ranks", 1, kMaxRanks);
  s.chunks = in.integer(in.member(doc, "(top level)", "chunks"), "chunks", 1, kMaxChunks);
  if (auto it = doc.find("straggler"); it != doc.end() && !it->is_null()) {
    s.straggler = in.integer(*it, "straggler", 0, s.ranks - 1);
  }
  if (auto it = doc.find("late"); it != doc.end() && !it->is_null()) {
    if (!it->is_array())
      in.fail("late", "expected an array of ranks, got " + std::string(it->type_name()));
    for (std::size_t i = 0; i < it->size(); ++i) {
      const std::string path = "late[" + std::to_string(i) + "]";
      const int r = in.integer((*it)[i], path, 0, s.ranks - 1);
      if (std::find(s.late.begin(), s.late.end(), r) != s.late.end())
        in.fail(path, "rank listed twice");
      s.late.push_back(r);
    }
    if (!s.late.empty() && s.straggler != s.late.back())
      in.fail("late", "the last late rank must be the straggler");
  }
  if (auto it = doc.find("options"); it != doc.end() && !it->is_null()) {
    if (!it->is_object()) in.fail("options", "expected an object of strings");
    for (auto o = it->begin(); o != it->end(); ++o) {
      s.options[o.key()] = o->is_string() ? o->get<std::string>() : o->dump();
    }
  }
  return s;
}

// One object's members as read, in document order: a transfer of the streamed reader, reused
// from transfer to transfer (no tree of nodes per transfer, as a json object would build).
class Members {
 public:
  void clear() { size_ = 0; }
  void add(const std::string& key, json&& value) {
    if (size_ == items_.size()) items_.emplace_back();
    items_[size_].first = key;
    items_[size_++].second = std::move(value);
  }
  const json* find(std::string_view key) const {
    const json* found = nullptr;  // of two equal keys the last, as in a json object
    for (std::size_t i = 0; i < size_; ++i)
      if (items_[i].first == key) found = &items_[i].second;
    return found;
  }
  // The least key not in `keys` (a json object's first, since its keys are sorted), if any.
  const std::string* first_unknown(Keys keys) const {
    const std::string* first = nullptr;
    for (std::size_t i = 0; i < size_; ++i) {
      if (!is_one_of(items_[i].first, keys) && (!first || items_[i].first < *first))
        first = &items_[i].first;
    }
    return first;
  }

 private:
  std::vector<std::pair<std::string, json>> items_;
  std::size_t size_ = 0;
};

const json* find_member(const Members& obj, const char* key) { return obj.find(key); }
const std::string* first_unknown(const Members& obj, Keys keys) { return obj.first_unknown(keys); }

// Transfer `ti` of round `ri` (its members as read), checked against the header's ranks and
// chunks.
Transfer read_transfer_members(const Reader& in, const Members& t, std::size_t ri, std::size_t ti,
                               int ranks, int chunks) {
  // The path is spelled out only when something is wrong: this runs once per transfer.
  const auto field = [&](const char* key) -> const json& {
    const json* v = find_member(t, key);
    if (v == nullptr) in.fail(transfer_path(ri, ti), std::string("missing key '") + key + "'");
    return *v;
  };
  const auto integer = [&](const json& v, const char* key, long long lo, long long hi) {
    if (v.is_number_integer()) {
      const long long x = v.get<long long>();
      if (x >= lo && x <= hi) return static_cast<int>(x);
    }
    return in.integer(v, transfer_path(ri, ti) + key, lo, hi);  // fails with the message
  };
  if (const std::string* key = first_unknown(t, kTransferKeys))
    in.unknown_key(transfer_path(ri, ti), *key, kTransferKeys);
  Transfer tr;
  tr.src = integer(field("src"), ".src", 0, ranks - 1);
  tr.dst = integer(field("dst"), ".dst", 0, ranks - 1);
  const json& ch = field("chunks");
  if (!ch.is_array() || ch.size() != 2)
    in.fail(transfer_path(ri, ti) + ".chunks", "expected [begin, end], got " + ch.dump());
  tr.chunk_begin = integer(ch[0], ".chunks[0]", 0, chunks - 1);
  tr.chunk_end = integer(ch[1], ".chunks[1]", 1, chunks);
  if (tr.chunk_end <= tr.chunk_begin)
    in.fail(transfer_path(ri, ti) + ".chunks", "empty range " + ch.dump());
  const json& op = field("op");
  if (op.is_string() && op.get_ref<const std::string&>() == "reduce") {
    tr.op = Op::reduce;
  } else if (op.is_string() && op.get_ref<const std::string&>() == "copy") {
    tr.op = Op::copy;
  } else {
    try {
      tr.op = parse_op(in.string(op, transfer_path(ri, ti) + ".op"));
    } catch (const InputError& e) {
      if (std::string(e.what()).rfind(std::string(in.source()), 0) == 0) throw;
      in.fail(transfer_path(ri, ti) + ".op", e.what());
    }
  }
  return tr;
}

// The in-network reductions of round `ri` (the value of its "switch_reduces" key), checked for
// form against the header's ranks and chunks; the verifier checks the rest.
std::vector<SwitchReduce> read_switch_reduces(const Reader& in, const json& v, std::size_t ri,
                                              int ranks, int chunks) {
  const std::string path = round_path(ri) + ".switch_reduces";
  if (!v.is_array()) in.fail(path, "expected an array, got " + std::string(v.type_name()));
  std::vector<SwitchReduce> out;
  for (std::size_t k = 0; k < v.size(); ++k) {
    const std::string gpath = path + "[" + std::to_string(k) + "]";
    const json& g = v[k];
    if (!g.is_object()) in.fail(gpath, "expected an object, got " + std::string(g.type_name()));
    in.only_keys(g, gpath, kSwitchKeys);
    SwitchReduce op;
    for (const char* key : {"members", "receivers"}) {
      const json& list = in.member(g, gpath, key);
      const std::string lpath = gpath + "." + key;
      if (!list.is_array() || list.empty())
        in.fail(lpath, "expected a non-empty array of ranks, got " + list.dump());
      std::vector<int>& ranks_out = std::string_view(key) == "members" ? op.members : op.receivers;
      for (std::size_t i = 0; i < list.size(); ++i) {
        ranks_out.push_back(
            in.integer(list[i], lpath + "[" + std::to_string(i) + "]", 0, ranks - 1));
      }
    }
    const json& ch = in.member(g, gpath, "chunks");
    if (!ch.is_array() || ch.size() != 2)
      in.fail(gpath + ".chunks", "expected [begin, end], got " + ch.dump());
    op.chunk_begin = in.integer(ch[0], gpath + ".chunks[0]", 0, chunks - 1);
    op.chunk_end = in.integer(ch[1], gpath + ".chunks[1]", 1, chunks);
    if (op.chunk_end <= op.chunk_begin) in.fail(gpath + ".chunks", "empty range " + ch.dump());
    out.push_back(std::move(op));
  }
  return out;
}

}  // namespace

namespace {

// The text as an input stream, read in place (no copy).
class TextBuf final : public std::streambuf {
 public:
  explicit TextBuf(std::string_view text) {
    char* begin = const_cast<char*>(text.data());  // the get area is only read
    setg(begin, begin, begin + text.size());
  }
};

// Keeps every round the streamed reader passes on: the whole-document form.
class AppendSink final : public ScheduleJsonSink {
 public:
  void header(const Schedule&) override {}
  void round(const Round& round) override { rounds.push_back(round); }
  std::vector<Round> rounds;
};

}  // namespace

Schedule read_schedule_json(std::string_view text, std::string_view source_name) {
  TextBuf buf(text);
  std::istream in(&buf);
  AppendSink sink;
  Schedule s = read_schedule_json(in, source_name, sink);
  s.rounds = std::move(sink.rounds);
  return s;
}

namespace {

// The input of the streamed reader: a window of the stream with enough history to name the line
// and column of a syntax error (the parser reports the byte it stopped at, at most two bytes
// behind what it has read). Iterated by nlohmann's parser one byte at a time.
class StreamInput {
 public:
  explicit StreamInput(std::istream& in) : in_(in), buffer_(new char[kKeep + kBlock]) {}

  class iterator {
   public:
    using iterator_category = std::input_iterator_tag;
    using value_type = char;
    using difference_type = std::ptrdiff_t;
    using pointer = const char*;
    using reference = const char&;

    iterator() = default;
    explicit iterator(StreamInput* input) : input_(input) {}
    reference operator*() const { return input_->buffer_[input_->pos_]; }
    iterator& operator++() {
      ++input_->pos_;
      return *this;
    }
    iterator operator++(int) {
      iterator old = *this;
      ++*this;
      return old;
    }
    bool operator==(const iterator& other) const { return at_end() == other.at_end(); }

   private:
    bool at_end() const {
      return input_ == nullptr || (input_->pos_ == input_->size_ && !input_->refill());
    }
    StreamInput* input_ = nullptr;
  };

  iterator begin() { return iterator(this); }
  iterator end() { return iterator(); }
  bool failed() const { return in_.bad(); }
  std::uint64_t bytes_read() const { return base_ + pos_; }

  // "line L, column C" (1-based) of byte offset `byte` (a newline ends a line).
  std::string position(std::uint64_t byte) const {
    byte = std::min(byte, base_ + size_);
    if (byte < base_) byte = base_;  // not reached: the parser stops within kKeep bytes
    const char* first = buffer_.get();
    const char* at = first + (byte - base_);
    std::uint64_t line = lines_ + 1 + static_cast<std::uint64_t>(std::count(first, at, '\n'));
    std::int64_t last_newline = last_newline_;
    for (const char* p = at; p != first; --p) {
      if (p[-1] == '\n') {
        last_newline = static_cast<std::int64_t>(base_ + (p - 1 - first));
        break;
      }
    }
    return "line " + std::to_string(line) + ", column " +
           std::to_string(static_cast<std::int64_t>(byte) - last_newline);
  }

 private:
  static constexpr std::size_t kKeep = 64, kBlock = std::size_t{1} << 16;

  // Drops all but the last kKeep bytes (counting their newlines) and reads the next block.
  bool refill() {
    if (eof_) return false;
    const std::size_t drop = size_ > kKeep ? size_ - kKeep : 0;
    const char* first = buffer_.get();
    lines_ += static_cast<std::uint64_t>(std::count(first, first + drop, '\n'));
    for (std::size_t i = drop; i > 0; --i) {
      if (first[i - 1] == '\n') {
        last_newline_ = static_cast<std::int64_t>(base_ + i - 1);
        break;
      }
    }
    std::memmove(buffer_.get(), buffer_.get() + drop, size_ - drop);
    base_ += drop;
    size_ -= drop;
    pos_ -= drop;
    in_.read(buffer_.get() + size_, static_cast<std::streamsize>(kBlock));
    const auto got = static_cast<std::size_t>(in_.gcount());
    size_ += got;
    if (got == 0) eof_ = true;
    return got > 0;
  }

  std::istream& in_;
  // Not zeroed: only the bytes read are used. (A zeroed megabyte per reader made each `verify`
  // of a small file cost a fresh mapping and its page faults under ASan.)
  std::unique_ptr<char[]> buffer_;
  std::size_t size_ = 0, pos_ = 0;  // bytes in the buffer, the next one to read
  std::uint64_t base_ = 0;          // stream offset of buffer_[0]
  std::uint64_t lines_ = 0;         // newlines before base_
  std::int64_t last_newline_ = -1;  // offset of the last newline before base_
  bool eof_ = false;
};

// Builds one JSON value from SAX events (a header value, a round's phase, one transfer).
class ValueBuilder {
 public:
  void begin() {
    active_ = true;
    stack_.clear();
    value_ = json();
  }
  bool active() const { return active_; }
  // Each returns true when the value is complete.
  bool add(json&& v) {
    if (stack_.empty()) {
      value_ = std::move(v);
      active_ = false;
      return true;
    }
    insert(std::move(v));
    return false;
  }
  void open(bool object) {
    json fresh = object ? json::object() : json::array();
    if (stack_.empty()) {
      value_ = std::move(fresh);
      stack_.push_back(&value_);
    } else {
      stack_.push_back(insert(std::move(fresh)));
    }
  }
  bool close() {
    stack_.pop_back();
    active_ = !stack_.empty();
    return !active_;
  }
  void key(std::string& k) { key_ = std::move(k); }
  json& value() { return value_; }

 private:
  // Ancestors stay put while a child is open: nothing else is added to them meanwhile.
  json* insert(json&& v) {
    json& top = *stack_.back();
    if (top.is_array()) {
      top.push_back(std::move(v));
      return &top.back();
    }
    json& slot = top[key_];  // two equal keys: the last one stays, as in nlohmann's DOM
    slot = std::move(v);
    return &slot;
  }
  bool active_ = false;
  json value_;
  std::vector<json*> stack_;
  std::string key_;
};

// nlohmann SAX handler of the streamed reader. It keeps the header values, the round being read
// and the key path (for duplicate keys); each round goes to the sink once it is complete.
//
// Errors rank as in a whole-document reader (what the whole input holds decides, not where
// reading is): a syntax error ends the parse at once; otherwise the first duplicate key (document
// order), then the top level, then the header, then the first bad round, then what the sink threw,
// wins. A bad round is therefore held until the end of the input, and no round goes to the sink
// after a form error.
class StreamHandler {
 public:
  static constexpr std::size_t kMaxDepth = 512;

  StreamHandler(const Reader& in, const StreamInput& input, ScheduleJsonSink& sink)
      : in_(in), input_(input), sink_(sink) {}

  // --- nlohmann's SAX interface
  bool null() { return value(json(nullptr)); }
  bool boolean(bool v) { return value(json(v)); }
  bool number_integer(json::number_integer_t v) { return value(json(v)); }
  bool number_unsigned(json::number_unsigned_t v) { return value(json(v)); }
  bool number_float(json::number_float_t v, const std::string& /*text*/) { return value(json(v)); }
  bool string(std::string& v) { return value(json(std::move(v))); }
  bool binary(json::binary_t& v) { return value(json(json::binary_t(std::move(v)))); }
  bool start_object(std::size_t /*elements*/) { return open(true); }
  bool start_array(std::size_t /*elements*/) { return open(false); }
  bool end_object() { return close(); }
  bool end_array() { return close(); }
  bool key(std::string& k) {
    if (depth_ > 0) {
      Frame& f = frames_[depth_ - 1];
      f.key = k;
      if (!f.insert(k) && !duplicate_) duplicate_ = path();
    }
    on_key(k);
    return true;
  }
  template <typename Exception>
  bool parse_error(std::size_t /*byte*/, const std::string& /*token*/, const Exception& e) {
    if (input_.failed()) throw InputError(std::string(in_.source()) + ": read failed");
    const std::string what = e.what();
    if constexpr (std::is_same_v<Exception, json::parse_error>) {
      // nlohmann's "[json.exception.parse_error.101] parse error at line L,
      // column C: ..." becomes our position and the text after the first ": ".
      const auto colon = what.find(": ");
      throw InputError(
          std::string(in_.source()) + ": " + input_.position(e.byte > 0 ? e.byte - 1 : 0) +
          ": malformed JSON: " + (colon == std::string::npos ? what : what.substr(colon + 2)));
    }
    const auto bracket = what.find("] ");  // e.g. out_of_range 406: a number beyond double, 1e400
    throw InputError(std::string(in_.source()) + ": malformed JSON: " +
                     (bracket == std::string::npos ? what : what.substr(bracket + 2)));
  }

  // After the parse: the first problem as an InputError, else what the sink threw, else the header.
  Schedule finish() {
    if (duplicate_) in_.fail(*duplicate_, "duplicate key (a key may appear once per object)");
    if (!top_type_.empty()) in_.fail("(top level)", "expected an object, got " + top_type_);
    if (unknown_top_) in_.unknown_key("(top level)", *unknown_top_, kTopKeys);
    Schedule header = read_header(in_, header_);
    if (!rounds_present_) in_.fail("(top level)", "missing key 'rounds'");
    if (!rounds_type_.empty()) in_.fail("rounds", "expected an array, got " + rounds_type_);
    if (buffered_) replay_rounds(header);
    if (round_error_) throw InputError(*round_error_);
    if (sink_error_) std::rethrow_exception(sink_error_);
    return header;
  }

 private:
  enum class Kind { object, array, scalar };
  enum class Ctx { root, rounds, round, transfers, transfer };
  enum class Target { header, phase, member, rounds, switch_reduces };
  struct Frame {
    bool object = false;
    std::string key;
    long long index = -1;
    // The keys seen: a few in a vector (a schedule's objects have at most 8), more in a set.
    std::vector<std::string> few;
    std::set<std::string> many;
    void clear() {
      few.clear();
      many.clear();
      key.clear();
      index = -1;
    }
    bool insert(const std::string& k) {  // false: seen before
      if (!many.empty()) return many.insert(k).second;
      if (std::find(few.begin(), few.end(), k) != few.end()) return false;
      if (few.size() < 16) {
        few.push_back(k);
      } else {
        many.insert(few.begin(), few.end());
        many.insert(k);
        few.clear();
      }
      return true;
    }
  };

  // --- key paths for duplicate keys: the same walk as common/json_dom.hpp's
  void count_element() {
    if (depth_ > 0 && !frames_[depth_ - 1].object) ++frames_[depth_ - 1].index;
  }
  void push_frame(bool object) {
    if (depth_ == kMaxDepth) {
      throw InputError(std::string(in_.source()) + ": " + input_.position(input_.bytes_read() - 1) +
                       ": malformed JSON: nested deeper than " + std::to_string(kMaxDepth) +
                       " levels (a schedule has 6)");
    }
    if (frames_.size() == depth_) frames_.emplace_back();
    Frame& f = frames_[depth_++];
    f.clear();
    f.object = object;
  }
  std::string path() const {
    std::string p;
    for (std::size_t i = 0; i < depth_; ++i) {
      const Frame& f = frames_[i];
      if (f.object) {
        p += (p.empty() ? "" : ".") + f.key;
      } else {
        p += "[" + std::to_string(f.index) + "]";
      }
    }
    return p;
  }

  bool open(bool object) {
    count_element();
    push_frame(object);
    on_open(object);
    return true;
  }
  bool close() {
    if (depth_ > 0) --depth_;
    on_close();
    return true;
  }
  bool value(json&& v) {
    count_element();
    on_value(std::move(v));
    return true;
  }

  // --- the schedule's structure (also fed by replay_rounds)
  void on_open(bool object) {
    if (builder_.active()) return builder_.open(object);
    if (skip_ > 0) {
      ++skip_;
      return;
    }
    place(object ? Kind::object : Kind::array, nullptr);
  }
  void on_close() {
    if (builder_.active()) {
      if (builder_.close()) captured();
      return;
    }
    if (skip_ > 0) {
      --skip_;
      return;
    }
    const Ctx ended = ctx_.back();
    ctx_.pop_back();
    if (ended == Ctx::round) finish_round();
    if (ended == Ctx::transfer) finish_transfer();
  }
  void on_value(json&& v) {
    if (builder_.active()) {
      if (builder_.add(std::move(v))) captured();
      return;
    }
    if (skip_ > 0) return;
    place(Kind::scalar, &v);
  }
  void on_key(std::string& k) {
    if (builder_.active()) return builder_.key(k);
    if (skip_ == 0) key_ = k;
  }

  static std::string type_of(Kind kind, const json* v) {
    return kind == Kind::object ? "object" : kind == Kind::array ? "array" : v->type_name();
  }
  void skip(Kind kind) {
    if (kind != Kind::scalar) skip_ = 1;
  }
  void capture(Target target, Kind kind, json* v) {
    target_ = target;
    target_key_ = key_;
    builder_.begin();
    if (kind == Kind::scalar) {
      builder_.add(std::move(*v));
      captured();
    } else {
      builder_.open(kind == Kind::object);
    }
  }
  static void keep_first(std::optional<std::string>& first, const std::string& key) {
    if (!first || key < *first)
      first = key;  // as in a json object (sorted keys): the least key comes first
  }
  bool form_error() const {
    return duplicate_ || !top_type_.empty() || unknown_top_ || round_error_ || header_failed_;
  }

  // A value begins where the structure is `ctx_.back()`.
  void place(Kind kind, json* v) {
    if (ctx_.empty()) {  // the document
      if (kind == Kind::object && !seen_top_) {
        seen_top_ = true;
        ctx_.push_back(Ctx::root);
        return;
      }
      top_type_ = type_of(kind, v);
      return skip(kind);
    }
    switch (ctx_.back()) {
      case Ctx::root:
        if (key_ == "rounds") {
          rounds_present_ = true;
          if (kind == Kind::array) return start_rounds();
          rounds_type_ = type_of(kind, v);
          return skip(kind);
        }
        if (is_one_of(key_, kTopKeys)) return capture(Target::header, kind, v);
        keep_first(unknown_top_, key_);
        return skip(kind);
      case Ctx::rounds: {
        ++round_index_;
        if (form_error()) return skip(kind);
        if (kind != Kind::object) {
          round_error_ =
              message(round_path(round_index_ - 1), "expected an object, got " + type_of(kind, v));
          return skip(kind);
        }
        ctx_.push_back(Ctx::round);
        unknown_round_.reset();
        phase_.reset();
        switch_reduces_.reset();
        round_.switch_reduces.clear();
        transfers_present_ = false;
        transfers_type_.clear();
        transfer_error_.reset();
        transfer_index_ = 0;
        round_.phase.clear();
        round_.transfers.clear();
        return;
      }
      case Ctx::round:
        if (key_ == "phase") return capture(Target::phase, kind, v);
        if (key_ == "switch_reduces") return capture(Target::switch_reduces, kind, v);
        if (key_ == "transfers") {
          transfers_present_ = true;
          if (kind == Kind::array) {
            ctx_.push_back(Ctx::transfers);
            return;
          }
          transfers_type_ = type_of(kind, v);
          return skip(kind);
        }
        keep_first(unknown_round_, key_);
        return skip(kind);
      case Ctx::transfers:
        ++transfer_index_;
        if (transfer_error_) return skip(kind);
        if (kind != Kind::object) {
          transfer_error_ = message(transfer_path(round_index_ - 1, transfer_index_ - 1),
                                    "expected an object, got " + type_of(kind, v));
          return skip(kind);
        }
        ctx_.push_back(Ctx::transfer);
        members_.clear();
        return;
      case Ctx::transfer:
        if (kind == Kind::scalar) return members_.add(key_, std::move(*v));
        return capture(Target::member, kind, v);
    }
  }

  std::string message(const std::string& path, const std::string& what) const {
    return std::string(in_.source()) + ": " + path + ": " + what;
  }

  void captured() {
    json& v = builder_.value();
    switch (target_) {
      case Target::header:
        header_[target_key_] = std::move(v);
        break;
      case Target::phase:
        phase_ = std::move(v);
        break;
      case Target::switch_reduces:
        switch_reduces_ = std::move(v);
        break;
      case Target::rounds:
        rounds_ = std::move(v);
        break;
      case Target::member:
        members_.add(target_key_, std::move(v));
        break;
    }
  }

  void finish_transfer() {
    try {
      round_.transfers.push_back(read_transfer_members(in_, members_, round_index_ - 1,
                                                       transfer_index_ - 1, ranks_, chunks_));
    } catch (const InputError& e) {
      transfer_error_ = e.what();
    }
  }

  // The "rounds" array begins. It streams when collective, ranks and chunks came before it (as
  // `schedule` writes them); otherwise the rounds are kept until the header is complete.
  void start_rounds() {
    if (replaying_) {
      ctx_.push_back(Ctx::rounds);
      return;
    }
    if (rounds_started_ ||
        form_error()) {  // a second "rounds" or an earlier error: that one is reported
      skip_ = 1;
      return;
    }
    rounds_started_ = true;
    // Everything read_header() checks is then final, except "late" without its "straggler".
    if (!header_.contains("collective") || !header_.contains("ranks") ||
        !header_.contains("chunks") ||
        (header_.contains("late") && !header_.contains("straggler"))) {
      buffered_ = true;
      target_ = Target::rounds;
      builder_.begin();
      builder_.open(false);
      return;
    }
    try {
      open_sink(read_header(in_, header_));
    } catch (const InputError&) {
      header_failed_ = true;  // the same error, or one before it, is reported at the end
      skip_ = 1;
      return;
    }
    ctx_.push_back(Ctx::rounds);
  }

  void open_sink(const Schedule& header) {
    ranks_ = header.ranks;
    chunks_ = header.chunks;
    try {
      sink_.header(header);
      sink_open_ = true;
    } catch (...) {
      sink_error_ = std::current_exception();
    }
  }

  void finish_round() {
    const std::string rpath = round_path(round_index_ - 1);
    try {
      if (unknown_round_) in_.unknown_key(rpath, *unknown_round_, kRoundKeys);
      if (phase_ && !phase_->is_null()) round_.phase = in_.string(*phase_, rpath + ".phase");
      if (!transfers_present_) in_.fail(rpath, "missing key 'transfers'");
      if (!transfers_type_.empty())
        in_.fail(rpath + ".transfers", "expected an array, got " + transfers_type_);
      if (transfer_error_) throw InputError(*transfer_error_);
      if (switch_reduces_) {
        round_.switch_reduces =
            read_switch_reduces(in_, *switch_reduces_, round_index_ - 1, ranks_, chunks_);
      }
    } catch (const InputError& e) {
      round_error_ = e.what();
      return;
    }
    if (!sink_open_ || form_error()) return;
    try {
      sink_.round(round_);
    } catch (...) {
      sink_error_ = std::current_exception();
      sink_open_ = false;
    }
  }

  // Rounds that came before the header was complete: checked and passed on now, as if streamed.
  void replay_rounds(const Schedule& header) {
    open_sink(header);
    replaying_ = true;
    ctx_.assign(1, Ctx::root);
    key_ = "rounds";
    const json rounds = std::move(rounds_);
    replay(rounds);
  }
  void replay(const json& v) {
    if (v.is_object()) {
      on_open(true);
      for (auto it = v.begin(); it != v.end(); ++it) {
        std::string k = it.key();
        on_key(k);
        replay(*it);
      }
      on_close();
    } else if (v.is_array()) {
      on_open(false);
      for (const json& x : v) replay(x);
      on_close();
    } else {
      on_value(json(v));
    }
  }

  const Reader& in_;
  const StreamInput& input_;
  ScheduleJsonSink& sink_;

  std::vector<Frame> frames_;  // reused: frames_[0, depth_) is the open path
  std::size_t depth_ = 0;
  std::optional<std::string> duplicate_;

  std::vector<Ctx> ctx_;
  std::string key_;
  std::size_t skip_ = 0;  // > 0: inside a value that is not read (its depth)
  ValueBuilder builder_;
  Target target_ = Target::header;
  std::string target_key_;

  bool seen_top_ = false;
  std::string top_type_;
  std::optional<std::string> unknown_top_;
  json header_ = json::object();
  bool rounds_present_ = false, rounds_started_ = false, buffered_ = false, replaying_ = false;
  bool header_failed_ = false;
  std::string rounds_type_;
  json rounds_;  // buffered rounds only
  int ranks_ = 0, chunks_ = 0;

  std::size_t round_index_ = 0, transfer_index_ = 0;
  Round round_;
  std::optional<std::string> unknown_round_;
  std::optional<json> phase_;
  std::optional<json> switch_reduces_;
  bool transfers_present_ = false;
  std::string transfers_type_;
  std::optional<std::string> transfer_error_;
  std::optional<std::string> round_error_;
  Members members_;  // of the transfer being read

  bool sink_open_ = false;
  std::exception_ptr sink_error_;
};

// The fast path of the streamed reader, for the files `schedule` writes: a hand-written scanner of
// the subset of JSON a well-formed schedule uses (integers without sign, fraction or exponent;
// strings without escapes or control characters, except a round's phase, which nlohmann decodes;
// each key once; "rounds" after "collective", "ranks" and "chunks" and last; any whitespace). It
// hands rounds to the sink as the streamed reader does. On anything outside that subset, valid or
// not, it gives up (returns false), and the caller reads the input again with the nlohmann reader,
// which then finds the same header and rounds or reports the problem with its message: the fast
// path never reports a form error itself.
class FastJsonReader {
 public:
  FastJsonReader(std::istream& in, std::string_view source, ScheduleJsonSink& sink)
      : in_(in), source_(source), sink_(sink), buffer_(new char[kBlock]) {}

  // True: the input was read to its end without a problem (header in *header); false: give up.
  bool read(Schedule* header) {
    ws();
    if (!eat('{')) return false;
    if (!read_header_members(header)) return false;
    if (!read_rounds()) return false;
    ws();
    if (!eat('}')) return false;
    ws();
    if (peek() != kEof) return false;
    if (in_.bad()) throw InputError(std::string(source_) + ": read failed");
    if (sink_error_) std::rethrow_exception(sink_error_);
    return true;
  }

 private:
  static constexpr int kEof = -1;
  static constexpr std::size_t kBlock = std::size_t{1} << 20;
  static constexpr std::size_t kMaxHeaderBytes = std::size_t{1} << 24;

  // --- input
  int peek() {
    if (pos_ == size_ && !refill()) return kEof;
    return static_cast<unsigned char>(buffer_[pos_]);
  }
  bool refill() {
    if (eof_) return false;
    in_.read(buffer_.get(), static_cast<std::streamsize>(kBlock));
    size_ = static_cast<std::size_t>(in_.gcount());
    pos_ = 0;
    if (size_ == 0) {
      eof_ = true;
      if (in_.bad()) throw InputError(std::string(source_) + ": read failed");
    }
    return size_ > 0;
  }
  bool eat(char c) {
    if (peek() != static_cast<unsigned char>(c)) return false;
    ++pos_;
    return true;
  }
  void ws() {
    for (;;) {
      while (pos_ < size_) {
        const char c = buffer_[pos_];
        if (c != ' ' && c != '\n' && c != '\r' && c != '\t') return;
        ++pos_;
      }
      if (!refill()) return;
    }
  }
  // A string without escapes or control characters, its opening quote already read; `capture`
  // receives its bytes. False: not such a string.
  bool plain_string(std::string& capture) {
    capture.clear();
    for (;;) {
      const std::size_t start = pos_;
      while (pos_ < size_) {
        const auto u = static_cast<unsigned char>(buffer_[pos_]);
        if (u == '"' || u == '\\' || u < 0x20) break;
        ++pos_;
      }
      capture.append(buffer_.get() + start, pos_ - start);
      if (pos_ < size_) {
        if (buffer_[pos_] != '"') return false;
        ++pos_;
        return true;
      }
      if (!refill()) return false;
      if (capture.size() > kMaxHeaderBytes) return false;
    }
  }
  // A key and its colon.
  bool key(std::string& k) {
    ws();
    if (!eat('"') || !plain_string(k)) return false;
    ws();
    return eat(':');
  }
  // An integer in [lo, hi]: digits only (no sign, fraction, exponent or leading zero).
  bool integer(long long lo, long long hi, std::int32_t& out) {
    ws();
    long long v = 0;
    int digits = 0;
    for (;;) {
      int c = peek();
      if (c < '0' || c > '9') {
        if (digits == 0 || c == '.' || c == 'e' || c == 'E') return false;
        break;
      }
      if (digits == 1 && v == 0) return false;  // a leading zero: not JSON
      if (++digits > 10) return false;
      v = v * 10 + (c - '0');
      ++pos_;
    }
    if (v < lo || v > hi) return false;
    out = static_cast<std::int32_t>(v);
    return true;
  }
  bool literal(const char* word) {
    for (const char* w = word; *w; ++w)
      if (!eat(*w)) return false;
    return true;
  }

  // A header value's text (any JSON value), copied into `raw` for nlohmann to parse.
  bool raw_value(std::string& raw) {
    int depth = 0;
    bool in_string = false, escaped = false;
    for (;;) {
      const int c = peek();
      if (c == kEof || raw.size() > kMaxHeaderBytes) return false;
      if (in_string) {
        if (escaped) {
          escaped = false;
        } else if (c == '\\') {
          escaped = true;
        } else if (c == '"') {
          in_string = false;
          if (depth == 0) {
            raw += static_cast<char>(c);
            ++pos_;
            return true;
          }
        }
      } else if (c == '"') {
        in_string = true;
      } else if (c == '{' || c == '[') {
        ++depth;
      } else if (c == '}' || c == ']') {
        if (depth == 0) return !raw.empty();
        if (--depth == 0) {
          raw += static_cast<char>(c);
          ++pos_;
          return true;
        }
      } else if (c == ',' && depth == 0) {
        return !raw.empty();
      }
      raw += static_cast<char>(c);
      ++pos_;
    }
  }

  // The members before "rounds" (its key and colon read on success), parsed by nlohmann and
  // checked by read_header() as the other readers do.
  bool read_header_members(Schedule* header) {
    json doc = json::object();
    std::string k, raw;
    for (;;) {
      if (!key(k)) return false;
      if (k == "rounds") break;
      if (!is_one_of(k, kTopKeys) || doc.contains(k)) return false;
      ws();
      raw.clear();
      if (!raw_value(raw)) return false;
      std::optional<std::string> duplicate;
      try {
        doc[k] = parse_noting_duplicates(raw, duplicate);
      } catch (const json::exception&) {
        return false;
      }
      if (duplicate) return false;
      ws();
      if (!eat(',')) return false;
    }
    if (!doc.contains("collective") || !doc.contains("ranks") || !doc.contains("chunks") ||
        (doc.contains("late") && !doc.contains("straggler")))
      return false;
    try {
      *header = read_header(Reader(source_), doc);
    } catch (const InputError&) {
      return false;
    }
    ranks_ = header->ranks;
    chunks_ = header->chunks;
    try {
      sink_.header(*header);
      sink_open_ = true;
    } catch (...) {
      sink_error_ = std::current_exception();
    }
    return true;
  }

  bool read_rounds() {
    ws();
    if (!eat('[')) return false;
    ws();
    if (eat(']')) return true;
    for (;;) {
      if (!read_round()) return false;
      ws();
      if (eat(']')) return true;
      if (!eat(',')) return false;
    }
  }

  bool read_round() {
    ws();
    if (!eat('{')) return false;
    round_.phase.clear();
    round_.transfers.clear();
    bool phase = false, transfers = false;
    for (;;) {
      if (!key(key_)) return false;
      ws();
      if (key_ == "phase" && !phase) {
        phase = true;
        if (peek() == 'n') {
          if (!literal("null")) return false;
        } else if (!eat('"') || !phase_string()) {
          return false;
        }
      } else if (key_ == "transfers" && !transfers) {
        transfers = true;
        if (!read_transfers()) return false;
      } else {
        return false;
      }
      ws();
      if (eat('}')) break;
      if (!eat(',')) return false;
    }
    if (!transfers) return false;
    if (sink_open_) {
      try {
        sink_.round(round_);
      } catch (...) {
        sink_error_ = std::current_exception();
        sink_open_ = false;
      }
    }
    return true;
  }

  // The phase string after its opening quote: plain, or decoded by nlohmann (escapes, UTF-8).
  bool phase_string() {
    std::string& text = round_.phase;
    text.clear();
    bool plain = true, escaped = false;
    for (;;) {
      const int c = peek();
      if (c == kEof || text.size() > kMaxHeaderBytes) return false;
      ++pos_;
      if (escaped) {
        escaped = false;
      } else if (c == '\\') {
        escaped = true;
        plain = false;
      } else if (c == '"') {
        break;
      } else if (c >= 0x80) {
        plain = false;
      } else if (c < 0x20) {
        return false;
      }
      text += static_cast<char>(c);
    }
    if (plain) return true;
    try {
      text = json::parse("\"" + text + "\"").get<std::string>();
    } catch (const json::exception&) {
      return false;
    }
    return true;
  }

  bool read_transfers() {
    if (!eat('[')) return false;
    ws();
    if (eat(']')) return true;
    for (;;) {
      if (!read_transfer()) return false;
      ws();
      if (eat(']')) return true;
      if (!eat(',')) return false;
    }
  }

  // The form `schedule` writes, {"chunks":[B,E],"dst":D,"op":"reduce","src":S}, matched in the
  // buffer; false (nothing consumed) for anything else or too near the buffer's end.
  bool canonical_transfer() {
    if (size_ - pos_ < 128) return false;
    const char* p = buffer_.get() + pos_;
    const auto literal = [&p](const char* text, std::size_t n) {
      if (std::memcmp(p, text, n) != 0) return false;
      p += n;
      return true;
    };
    const auto number = [&p](long long lo, long long hi, std::int32_t& out) {
      long long v = 0;
      const char* first = p;
      while (*p >= '0' && *p <= '9' && p - first < 10) v = v * 10 + (*p++ - '0');
      if (p == first || (*first == '0' && p - first > 1) || v < lo || v > hi) return false;
      out = static_cast<std::int32_t>(v);
      return true;
    };
    Transfer t;
    if (!literal("{\"chunks\":[", 11) || !number(0, chunks_ - 1, t.chunk_begin) ||
        !literal(",", 1) || !number(1, chunks_, t.chunk_end) || !literal("],\"dst\":", 8) ||
        !number(0, ranks_ - 1, t.dst) || !literal(",\"op\":\"", 7))
      return false;
    if (literal("reduce\"", 7)) {
      t.op = Op::reduce;
    } else if (literal("copy\"", 5)) {
      t.op = Op::copy;
    } else {
      return false;
    }
    if (!literal(",\"src\":", 7) || !number(0, ranks_ - 1, t.src) || *p != '}' ||
        t.chunk_end <= t.chunk_begin)
      return false;
    pos_ = static_cast<std::size_t>(p + 1 - buffer_.get());
    round_.transfers.push_back(t);
    return true;
  }

  bool read_transfer() {
    ws();
    if (canonical_transfer()) return true;
    if (!eat('{')) return false;
    Transfer t;
    unsigned seen = 0;
    for (;;) {
      if (!key(key_)) return false;
      unsigned bit = 0;
      if (key_ == "src") {
        bit = 1;
        if (!integer(0, ranks_ - 1, t.src)) return false;
      } else if (key_ == "dst") {
        bit = 2;
        if (!integer(0, ranks_ - 1, t.dst)) return false;
      } else if (key_ == "chunks") {
        bit = 4;
        ws();
        if (!eat('[') || !integer(0, chunks_ - 1, t.chunk_begin)) return false;
        ws();
        if (!eat(',') || !integer(1, chunks_, t.chunk_end)) return false;
        ws();
        if (!eat(']') || t.chunk_end <= t.chunk_begin) return false;
      } else if (key_ == "op") {
        bit = 8;
        ws();
        if (!eat('"') || !plain_string(op_)) return false;
        if (op_ == "reduce") {
          t.op = Op::reduce;
        } else if (op_ == "copy") {
          t.op = Op::copy;
        } else {
          return false;
        }
      } else {
        return false;
      }
      if (seen & bit) return false;
      seen |= bit;
      ws();
      if (eat('}')) break;
      if (!eat(',')) return false;
    }
    if (seen != 15) return false;
    round_.transfers.push_back(t);
    return true;
  }

  std::istream& in_;
  std::string_view source_;
  ScheduleJsonSink& sink_;
  std::unique_ptr<char[]> buffer_;  // kBlock bytes, not zeroed (StreamInput says why)
  std::size_t size_ = 0, pos_ = 0;
  bool eof_ = false;
  int ranks_ = 0, chunks_ = 0;
  Round round_;
  std::string key_, op_;
  bool sink_open_ = false;
  std::exception_ptr sink_error_;
};

}  // namespace

Schedule read_schedule_json(std::istream& in, std::string_view source_name,
                            ScheduleJsonSink& sink) {
  const Reader reader(source_name);
  StreamInput input(in);
  StreamHandler handler(reader, input, sink);
  json::sax_parse(input.begin(), input.end(), &handler);
  if (input.failed()) throw InputError(std::string(source_name) + ": read failed");
  return handler.finish();
}

StreamedVerify verify_schedule_json(std::istream& in, std::string_view source_name,
                                    const std::function<void(const Schedule& header)>& before,
                                    const std::function<void(const Round& round)>& each) {
  StreamedVerify out;
  // A stream that can be read again (a file, a string) takes the fast path first; what it gives
  // up on is read again by the nlohmann reader, with a fresh verifier.
  const std::istream::pos_type start = in.tellg();
  if (start != std::istream::pos_type(-1)) {
    detail::VerifyingSink fast_sink(before, each);
    FastJsonReader fast(in, source_name, fast_sink);
    if (fast.read(&out.header)) {
      out.result = fast_sink.finish();
      return out;
    }
    in.clear();
    in.seekg(start);
    if (!in)
      throw InputError(std::string(source_name) + ": read failed (cannot read the input again)");
  }
  detail::VerifyingSink sink(before, each);
  out.header = read_schedule_json(in, source_name, sink);
  out.result = sink.finish();
  return out;
}

}  // namespace ssim::alg
