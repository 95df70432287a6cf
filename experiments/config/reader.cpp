#include "experiments/config/reader.hpp"

#include <algorithm>
#include <charconv>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <tuple>
#include <unordered_map>

#include <yaml-cpp/eventhandler.h>

#include "common/error.hpp"
#include "common/input_file.hpp"
#include "common/suggest.hpp"

namespace ssim::experiments {
namespace {

std::string join_path(const std::string& base, const std::string& key) {
  return base.empty() ? key : base + "." + key;
}

constexpr int kMaxDepth = 256;

// The start of each document of a YAML stream, as the parser reports them; nothing is built.
class DocumentStarts : public YAML::EventHandler {
 public:
  std::vector<YAML::Mark> starts;
  void OnDocumentStart(const YAML::Mark& mark) override { starts.push_back(mark); }
  void OnDocumentEnd() override {}
  void OnNull(const YAML::Mark&, YAML::anchor_t) override {}
  void OnAlias(const YAML::Mark&, YAML::anchor_t) override {}
  void OnScalar(const YAML::Mark&, const std::string&, YAML::anchor_t,
                const std::string&) override {}
  void OnSequenceStart(const YAML::Mark&, const std::string&, YAML::anchor_t,
                       YAML::EmitterStyle::value) override {}
  void OnSequenceEnd() override {}
  void OnMapStart(const YAML::Mark&, const std::string&, YAML::anchor_t,
                  YAML::EmitterStyle::value) override {}
  void OnMapEnd() override {}
};

// YAML::Load of the whole text, refusing a second document (which yaml-cpp would ignore).
// The documents are counted by their starts, not with YAML::LoadAll: yaml-cpp 0.7 answers a
// token that cannot start a node (a ',' at the top level) with a null document and leaves the
// token where it was, so LoadAll collects null documents until memory runs out (yaml-cpp issue
// #1040, fixed after 0.7 by PR #1319). A document starting where the previous one started is
// that token: refused at its place.
YAML::Node load_one_document(const std::string& text, const std::string& name) {
  auto at = [&name](const YAML::Mark& m) {
    return name + ":" + std::to_string(m.line + 1) + ":" + std::to_string(m.column + 1);
  };
  DocumentStarts docs;
  try {
    std::istringstream in(text);
    YAML::Parser parser(in);
    while (parser.HandleNextDocument(docs)) {
      const std::vector<YAML::Mark>& s = docs.starts;
      if (s.size() >= 2 && s[s.size() - 1].pos == s[s.size() - 2].pos) {
        const YAML::Mark m = s.back();
        const auto pos = static_cast<std::size_t>(std::max(0, m.pos));
        const auto c = pos < text.size() ? static_cast<unsigned char>(text[pos]) : 0;
        char what[48];
        if (c > 0x20 && c < 0x7F) {
          std::snprintf(what, sizeof what, "'%c'", c);
        } else {
          std::snprintf(what, sizeof what, "byte 0x%02X", c);
        }
        throw InputError(at(m) + ": malformed YAML: " + what + " cannot start a value here");
      }
    }
    if (docs.starts.size() > 1) {
      const YAML::Mark m = docs.starts[1];
      throw InputError(name + (m.line >= 0 ? ":" + std::to_string(m.line + 1) : std::string()) +
                       ": a second YAML document (after '---'): a config is one document");
    }
    return docs.starts.empty() ? YAML::Node() : YAML::Load(text);
  } catch (const YAML::ParserException& e) {
    throw InputError(at(e.mark) + ": malformed YAML: " + e.msg);
  }
}

// Control characters (C0, DEL, C1) in a string: "U+001B at byte 3"; "" when there is none.
std::string control_character(const std::string& s) {
  for (std::size_t i = 0; i < s.size(); ++i) {
    const auto c = static_cast<unsigned char>(s[i]);
    const bool c1 = c == 0xC2 && i + 1 < s.size() && static_cast<unsigned char>(s[i + 1]) >= 0x80 &&
                    static_cast<unsigned char>(s[i + 1]) <= 0x9F;
    if (c < 0x20 || c == 0x7F || c1) {
      char buf[48];
      std::snprintf(buf, sizeof buf, "U+%04X at byte %zu",
                    c1 ? static_cast<unsigned>(static_cast<unsigned char>(s[i + 1])) : c, i + 1);
      return buf;
    }
  }
  return "";
}

// The errors of one load (all_errors), in the order found; reported sorted.
struct ErrorLog {
  struct Entry {
    std::string message;
    std::string file;  // "" when the message names no place
    long line = 0;
    long column = 0;
  };
  std::vector<Entry> entries;
  std::size_t recorded = 0;  // every add, duplicates included
  std::vector<std::string> first_files;  // list_file_first
  std::vector<std::pair<YAML::Node, std::string>> misspelled;  // note_misspelled

  void add(const std::string& message) {
    ++recorded;
    for (const Entry& e : entries) {
      if (e.message == message) return;  // one check reached twice
    }
    entries.push_back(place(message));
  }

  // "FILE:LINE:COLUMN: ..." or "FILE:LINE: ..." (the place every message of this loader starts
  // with); the first ":DIGITS:" ends the file's name.
  static Entry place(const std::string& message) {
    Entry e{message, "", 0, 0};
    for (std::size_t i = message.find(':'); i != std::string::npos; i = message.find(':', i + 1)) {
      std::size_t j = i + 1;
      long line = 0;
      while (j < message.size() && message[j] >= '0' && message[j] <= '9' && line < 1'000'000'000)
        line = line * 10 + (message[j++] - '0');
      if (j == i + 1 || j >= message.size() || message[j] != ':') continue;
      e.file = message.substr(0, i);
      e.line = line;
      std::size_t k = j + 1;
      long column = 0;
      while (k < message.size() && message[k] >= '0' && message[k] <= '9' && column < 1'000'000'000)
        column = column * 10 + (message[k++] - '0');
      if (k > j + 1 && k < message.size() && message[k] == ':') e.column = column;
      break;
    }
    return e;
  }

  std::string report() const {
    if (entries.size() == 1) return entries.front().message;
    // By file (in the order first met), then line and column; the order found breaks ties.
    std::vector<std::string> files = first_files;
    for (const Entry& e : entries) {
      if (std::find(files.begin(), files.end(), e.file) == files.end()) files.push_back(e.file);
    }
    std::vector<const Entry*> order;
    for (const Entry& e : entries) order.push_back(&e);
    auto rank = [&files](const Entry* e) {
      return std::find(files.begin(), files.end(), e->file) - files.begin();
    };
    std::stable_sort(order.begin(), order.end(), [&](const Entry* a, const Entry* b) {
      return std::tuple(rank(a), a->line, a->column) < std::tuple(rank(b), b->line, b->column);
    });
    std::string out;
    const std::size_t shown = std::min(order.size(), kMaxReportedErrors);
    for (std::size_t i = 0; i < shown; ++i) out += (i ? "\n" : "") + order[i]->message;
    if (order.size() > shown) {
      out += "\n... and " + std::to_string(order.size() - shown) + " more errors (" +
             std::to_string(order.size()) + " in all; fix these and run again)";
    }
    return out;
  }
};

thread_local ErrorLog* active_log = nullptr;

// Sets the active log for a scope, restoring the previous one on every exit.
class ActiveLog {
 public:
  explicit ActiveLog(ErrorLog* log) : previous_(active_log) { active_log = log; }
  ~ActiveLog() { active_log = previous_; }
  ActiveLog(const ActiveLog&) = delete;
  ActiveLog& operator=(const ActiveLog&) = delete;

 private:
  ErrorLog* previous_;
};

}  // namespace

bool collect(const std::function<void()>& part) {
  ErrorLog* log = active_log;
  if (log == nullptr) {
    part();
    return true;
  }
  try {
    part();
    return true;
  } catch (const ErrorsRecorded&) {
    return false;
  } catch (const InputError& e) {
    log->add(e.what());
    return false;
  }
}

bool collecting_errors() { return active_log != nullptr; }

void note_misspelled(const ConfigNode& map, const std::string& meant) {
  if (active_log != nullptr) active_log->misspelled.emplace_back(map.yaml(), meant);
}

void stop_if_misspelled(const ConfigNode& map, const std::string& meant) {
  if (active_log == nullptr) return;
  for (const auto& [node, key] : active_log->misspelled) {
    if (key == meant && node.is(map.yaml())) throw ErrorsRecorded{};
  }
}

void list_file_first(const std::string& file) {
  if (active_log != nullptr && active_log->first_files.empty())
    active_log->first_files.push_back(file);
}

void all_errors_void(const std::function<void()>& body) {
  if (ErrorLog* log = active_log) {
    const std::size_t before = log->recorded;
    try {
      body();
    } catch (const InputError& e) {
      log->add(e.what());
      throw ErrorsRecorded{};
    }
    if (log->recorded > before) throw ErrorsRecorded{};
    return;
  }
  ErrorLog own;
  {
    const ActiveLog scope(&own);
    try {
      body();
    } catch (const InputError& e) {
      own.add(e.what());
    } catch (const ErrorsRecorded&) {
    }
  }
  if (!own.entries.empty()) throw InputError(own.report());
}

FirstErrorScope::FirstErrorScope(bool on) : on_(on), previous_(active_log) {
  if (on_) active_log = nullptr;
}

FirstErrorScope::~FirstErrorScope() {
  if (on_) active_log = static_cast<ErrorLog*>(previous_);
}

void first_error_void(const std::function<void()>& f) {
  const ActiveLog scope(nullptr);
  f();
}

// yaml-cpp accepts keys that are null or maps (`? :`) and keeps both of two equal keys (lookups
// then see the first). Every map key must be a plain scalar, once per map.
void ConfigReader::check_keys(const YAML::Node& node, const std::string& path, int depth) const {
  const ConfigNode here(this, node, path);
  if (depth > kMaxDepth)
    here.fail("nested more than " + std::to_string(kMaxDepth) + " levels deep");
  // Aliases share nodes: a few lines can stand for millions of list items. Counted as
  // expanded, since that is what the loader would walk.
  if (++nodes_checked_ > kMaxConfigNodes) {
    here.fail("the document has more than " + std::to_string(kMaxConfigNodes) +
              " values once its aliases (*name) are expanded; a config this large is refused "
              "before it is read (put long lists of samples in a CSV file)");
  }
  if (node.IsSequence()) {
    for (std::size_t i = 0; i < node.size(); ++i)
      check_keys(node[i], path + "[" + std::to_string(i) + "]", depth + 1);
  } else if (node.IsMap()) {
    std::unordered_map<std::string, YAML::Mark> seen;
    for (auto it = node.begin(); it != node.end(); ++it) {
      if (!it->first.IsScalar()) {
        ConfigNode(this, it->first, path)
            .fail(std::string("a key must be a plain name, not ") +
                  (it->first.IsNull() ? "empty (null)" : "a list or a map"));
      }
      const std::string key = it->first.Scalar();
      if (const auto [first, fresh] = seen.emplace(key, it->first.Mark()); !fresh) {
        ConfigNode(this, it->first, join_path(path, key))
            .fail("duplicate key '" + key + "' (first at line " +
                  std::to_string(first->second.line + 1) + ")");
      }
      check_keys(it->second, join_path(path, key), depth + 1);
    }
  }
}

ConfigReader::ConfigReader(const std::string& path) : file_(path) {
  const std::string text = read_input_file(path);
  root_ = load_one_document(text, path);
  if (!root_.IsDefined() || root_.IsNull()) throw InputError(path + ": the file is empty");
  check_keys(root_, "", 0);
}

ConfigReader ConfigReader::from_string(const std::string& text, const std::string& name) {
  ConfigReader r;
  r.file_ = name;
  r.root_ = load_one_document(text, name);
  if (!r.root_.IsDefined() || r.root_.IsNull()) throw InputError(name + ": the document is empty");
  r.check_keys(r.root_, "", 0);
  return r;
}

std::string ConfigReader::directory() const {
  const std::filesystem::path p(file_);
  return p.has_parent_path() ? p.parent_path().string() : std::string(".");
}

void ConfigReader::adopt(const YAML::Node& node, const ConfigReader& owner,
                         const std::string& path) const {
  adopted_.push_back({node, &owner, path});
  if (node.IsSequence()) {
    for (std::size_t i = 0; i < node.size(); ++i)
      adopt(node[i], owner, path + "[" + std::to_string(i) + "]");
  } else if (node.IsMap()) {
    for (auto it = node.begin(); it != node.end(); ++it)
      adopt(it->second, owner, join_path(path, it->first.Scalar()));
  }
}

std::pair<const std::string*, std::string> ConfigReader::origin(const YAML::Node& node,
                                                                const std::string& path) const {
  for (const Adopted& a : adopted_) {
    if (a.node.is(node)) return {&a.owner->file(), a.path};
  }
  return {&file_, path};
}

std::string ConfigNode::text() const {
  if (node_.IsScalar()) return node_.Scalar();
  YAML::Emitter e;
  e.SetMapFormat(YAML::Flow);
  e.SetSeqFormat(YAML::Flow);
  e << node_;
  return e.c_str();
}

void ConfigNode::fail(const std::string& what) const {
  // A message from a nested check that already names a place in this file keeps that (more
  // precise) place, so that no location is printed twice.
  const auto [file, path] = reader_->origin(node_, path_);
  if (what.compare(0, file->size() + 1, *file + ":") == 0) throw InputError(what);
  std::ostringstream os;
  os << *file;
  const YAML::Mark m = node_.Mark();
  if (m.line >= 0) os << ":" << m.line + 1 << ":" << m.column + 1;
  os << ": " << (path.empty() ? std::string("(top level)") : path) << ": " << what;
  if (node_.IsDefined() && !node_.IsNull()) {
    std::string t = text();
    // A long list or map is quoted by its start, not in full.
    if (t.size() > 200) t = t.substr(0, 160) + "... (" + std::to_string(t.size()) + " characters)";
    if (what.find("'" + t + "'") == std::string::npos) os << " (value: " << t << ")";
  }
  throw InputError(os.str());
}

std::string ConfigNode::as_string() const {
  if (!node_.IsScalar()) fail("expected a string");
  // Strings are printed (names, labels, paths): no escape sequence reaches a terminal.
  if (const std::string at = control_character(node_.Scalar()); !at.empty())
    fail("a control character (" + at + ") is not allowed in a string");
  return node_.Scalar();
}

std::int64_t ConfigNode::as_int(std::int64_t lo, std::int64_t hi) const {
  if (!node_.IsScalar()) fail("expected an integer");
  const std::string& s = node_.Scalar();
  std::int64_t v = 0;
  auto [ptr, ec] = std::from_chars(s.data(), s.data() + s.size(), v);
  if (ec != std::errc() || ptr != s.data() + s.size()) fail("expected an integer");
  if (v < lo || v > hi) fail("must be in [" + std::to_string(lo) + ", " + std::to_string(hi) + "]");
  return v;
}

double ConfigNode::as_double(double lo, double hi) const {
  if (!node_.IsScalar()) fail("expected a number");
  const std::string& s = node_.Scalar();
  double v = 0;
  auto [ptr, ec] = std::from_chars(s.data(), s.data() + s.size(), v);
  if (ec != std::errc() || ptr != s.data() + s.size() || !std::isfinite(v))
    fail("expected a number");
  if (v < lo || v > hi) {
    std::ostringstream os;
    os << "must be in [" << lo << ", " << hi << "]";
    fail(os.str());
  }
  return v;
}

bool ConfigNode::as_bool() const {
  if (node_.IsScalar()) {
    const std::string& s = node_.Scalar();
    if (s == "true" || s == "yes" || s == "on") return true;
    if (s == "false" || s == "no" || s == "off") return false;
  }
  fail("expected true or false");
}

template <typename F>
auto with_unit(const ConfigNode& n, F parse) {
  if (!n.is_scalar()) n.fail("expected a scalar with a unit");
  try {
    return parse(n.yaml().Scalar());
  } catch (const InputError& e) {
    n.fail(e.what());
  }
}

Seconds ConfigNode::as_time() const { return with_unit(*this, parse_time); }
Bytes ConfigNode::as_bytes() const { return with_unit(*this, parse_bytes_with_unit); }
BytesPerSecond ConfigNode::as_bandwidth() const { return with_unit(*this, parse_bandwidth); }
SecondsPerByte ConfigNode::as_seconds_per_byte() const {
  return with_unit(*this, parse_seconds_per_byte);
}

const ConfigReader* ConfigReader::adopted_from(const YAML::Node& node) const {
  for (const Adopted& a : adopted_) {
    if (a.node.is(node)) return a.owner;
  }
  return nullptr;
}

std::string ConfigNode::as_input_file(const std::string& base_dir, const std::string& what) const {
  std::filesystem::path p = as_string();
  if (p.is_relative()) {
    // Relative to the file the path is written in (reader.hpp).
    const ConfigReader* owner = reader_->adopted_from(node_);
    p = std::filesystem::path(owner != nullptr ? owner->directory() : base_dir) / p;
  }
  std::error_code ec;
  if (!std::filesystem::exists(p, ec)) fail(what + " '" + p.string() + "' does not exist");
  try {
    check_input_file(p.string());
  } catch (const InputError& e) {
    fail(what + " " + e.what());
  }
  return p.string();
}

std::string ConfigNode::text_with_absolute_files(
    const std::string& base_dir, std::initializer_list<const char*> file_keys) const {
  if (!node_.IsMap() && !node_.IsSequence()) return text();
  YAML::Node copy = YAML::Clone(node_);
  // Walks this node and its copy side by side; the original nodes resolve the paths (their
  // errors name this file, line and key).
  auto walk = [&](auto&& self, const ConfigNode& here, YAML::Node out) -> void {
    if (here.is_map()) {
      for (const std::string& key : here.keys()) {
        const ConfigNode value = here.child(key);
        const bool is_file = std::any_of(file_keys.begin(), file_keys.end(),
                                         [&key](const char* k) { return key == k; });
        if (is_file && value.is_scalar()) {
          std::error_code ec;
          out[key] = std::filesystem::absolute(value.as_input_file(base_dir, key), ec).string();
        } else {
          self(self, value, out[key]);
        }
      }
    } else if (here.is_sequence()) {
      const std::vector<ConfigNode> items = here.items();
      for (std::size_t i = 0; i < items.size(); ++i) self(self, items[i], out[i]);
    }
  };
  walk(walk, *this, copy);
  YAML::Emitter e;
  e.SetMapFormat(YAML::Flow);
  e.SetSeqFormat(YAML::Flow);
  e << copy;
  return e.c_str();
}

std::string ConfigNode::as_choice(std::initializer_list<const char*> choices) const {
  const std::string v = as_string();
  std::string list;
  for (const char* c : choices) {
    if (v == c) return v;
    list += (list.empty() ? "" : ", ") + std::string(c);
  }
  const std::optional<std::string> near =
      closest_name(v, std::vector<std::string>(choices.begin(), choices.end()));
  fail("unknown value '" + v + "' (" + (near ? "did you mean '" + *near + "'? " : "") +
       "expected one of: " + list + ")");
}

bool ConfigNode::has(const std::string& key) const {
  if (!node_.IsMap()) return false;
  const YAML::Node v = node_[key];
  if (!v.IsDefined()) return false;
  // An empty or null value is no default: `policy: ~` must not silently mean the default.
  if (v.IsNull()) {
    ConfigNode(reader_, v, join_path(path_, key))
        .fail("no value (empty or null); give a value, or leave the key out for the default");
  }
  return true;
}

void ConfigNode::require_map() const {
  if (!node_.IsMap()) fail("expected a mapping (key: value pairs)");
}

ConfigNode ConfigNode::child(const std::string& key) const {
  require_map();
  if (!has(key)) {
    stop_if_misspelled(*this, key);
    fail("missing required key '" + key + "'");
  }
  return ConfigNode(reader_, node_[key], join_path(path_, key));
}

std::optional<ConfigNode> ConfigNode::maybe(const std::string& key) const {
  require_map();
  if (!has(key)) return std::nullopt;
  return ConfigNode(reader_, node_[key], join_path(path_, key));
}

std::vector<std::string> ConfigNode::keys() const {
  std::vector<std::string> out;
  if (!node_.IsMap()) return out;
  for (auto it = node_.begin(); it != node_.end(); ++it) out.push_back(it->first.as<std::string>());
  return out;
}

void ConfigNode::allow_only(std::initializer_list<const char*> allowed) const {
  require_map();
  for (auto it = node_.begin(); it != node_.end(); ++it) {
    const std::string key = it->first.as<std::string>();
    bool ok = false;
    std::string list;
    for (const char* a : allowed) {
      ok = ok || key == a;
      list += (list.empty() ? "" : ", ") + std::string(a);
    }
    if (!ok) {
      const std::optional<std::string> near =
          closest_name(key, std::vector<std::string>(allowed.begin(), allowed.end()));
      // Recorded while errors are collected (the key is ignored; the rest can still be read).
      if (near) note_misspelled(*this, *near);
      collect([&] {
        ConfigNode(reader_, it->first, join_path(path_, key))
            .fail("unknown key '" + key + "' (" + (near ? "did you mean '" + *near + "'? " : "") +
                  "allowed here: " + list + ")");
      });
    }
  }
}

std::vector<ConfigNode> ConfigNode::items(bool scalar_ok) const {
  std::vector<ConfigNode> out;
  if (node_.IsSequence()) {
    if (node_.size() == 0)
      fail("an empty list; give at least one item, or leave the key out for the default");
    for (std::size_t i = 0; i < node_.size(); ++i) {
      out.emplace_back(reader_, node_[i], path_ + "[" + std::to_string(i) + "]");
    }
    return out;
  }
  if (scalar_ok && node_.IsScalar()) {
    out.emplace_back(reader_, node_, path_);
    return out;
  }
  fail("expected a list");
}

std::vector<ConfigNode> ConfigNode::unique_items(bool scalar_ok) const {
  std::vector<ConfigNode> out = items(scalar_ok);
  std::unordered_map<std::string, std::size_t> seen;
  for (std::size_t i = 0; i < out.size(); ++i) {
    if (!out[i].is_scalar()) continue;
    const auto [first, fresh] = seen.emplace(out[i].text(), i);
    if (!fresh) {
      const YAML::Mark m = out[first->second].yaml().Mark();
      out[i].fail(
          "'" + out[i].text() + "' is listed twice" +
          (m.line >= 0 ? " (first at line " + std::to_string(m.line + 1) + ")" : std::string()));
    }
  }
  return out;
}

std::string ConfigNode::get_string(const std::string& key,
                                   std::optional<std::string> fallback) const {
  if (!has(key) && fallback) return *fallback;
  return child(key).as_string();
}

std::int64_t ConfigNode::get_int(const std::string& key, std::optional<std::int64_t> fallback,
                                 std::int64_t lo, std::int64_t hi) const {
  if (!has(key) && fallback) return *fallback;
  return child(key).as_int(lo, hi);
}

double ConfigNode::get_double(const std::string& key, std::optional<double> fallback, double lo,
                              double hi) const {
  if (!has(key) && fallback) return *fallback;
  return child(key).as_double(lo, hi);
}

bool ConfigNode::get_bool(const std::string& key, std::optional<bool> fallback) const {
  if (!has(key) && fallback) return *fallback;
  return child(key).as_bool();
}

Seconds ConfigNode::get_time(const std::string& key, std::optional<Seconds> fallback) const {
  if (!has(key) && fallback) return *fallback;
  return child(key).as_time();
}

Bytes ConfigNode::get_bytes(const std::string& key, std::optional<Bytes> fallback) const {
  if (!has(key) && fallback) return *fallback;
  return child(key).as_bytes();
}

BytesPerSecond ConfigNode::get_bandwidth(const std::string& key,
                                         std::optional<BytesPerSecond> fallback) const {
  if (!has(key) && fallback) return *fallback;
  return child(key).as_bandwidth();
}

std::string ConfigNode::get_choice(const std::string& key,
                                   std::initializer_list<const char*> choices,
                                   std::optional<std::string> fallback) const {
  if (!has(key) && fallback) return *fallback;
  return child(key).as_choice(choices);
}

}  // namespace ssim::experiments
