// Typed access to a YAML document with errors that name the file, line, column, key path
// and value. Only the files of experiments/config/ include yaml-cpp; everything past the loader
// works on typed structs.
//
//   ConfigReader in("exp.yaml");                     // throws InputError if unreadable/malformed
//   ConfigMap top = in.root();
//   top.allow_only({"topology", "iterations"});
//   int iters = top.get_int("iterations", 1, 1, 1000000);   // default 1, range [1, 1e6]
//   Seconds lat = top.child("topology").get_time("latency");  // required key
#pragma once

#include <yaml-cpp/yaml.h>

#include <cstdint>
#include <functional>
#include <initializer_list>
#include <optional>
#include <string>
#include <type_traits>
#include <utility>
#include <vector>

#include "common/units.hpp"

namespace ssim::experiments {

class ConfigReader;
class ConfigNode;

// Every error of a file in one pass. A loader's entry point runs its body under all_errors();
// inside it, collect() runs one part of the document whose failure leaves the others
// meaningful (one key's value, one list item, one section): an InputError there is recorded
// and the loader goes on with the next part. A part whose later checks depend on a value that
// failed is one collect() (the subtree stops at its first error). allow_only() records every
// unknown key and goes on. At the end the outermost all_errors() throws one InputError that
// lists the errors by file (in the order first met), line and column, at most
// kMaxReportedErrors of them, then "... and K more errors"; a single error is its own message,
// unchanged. Outside all_errors() (and inside first_error()) nothing is collected: the first
// error propagates, as it always did.
//
//   Experiment load(const ConfigReader& r) {
//     return all_errors([&] {
//       r.root().allow_only({"iterations", "seed"});       // every unknown key recorded
//       Experiment e;
//       collect([&] { e.iterations = r.root().get_int("iterations", 20, 1, 1000); });
//       collect([&] { e.seed = r.root().get_int("seed", 1, 0, 1 << 30); });
//       return e;                                           // or the errors, all at once
//     });
//   }
inline constexpr std::size_t kMaxReportedErrors = 20;

// Thrown by a nested all_errors() whose part recorded errors: the caller's collect() stops its
// subtree there (the errors are in the log already). Not an InputError, so that no handler
// that rewords InputErrors reports them a second time; never escapes the outermost
// all_errors().
struct ErrorsRecorded {};

// Runs `part`; while errors are collected, an InputError it throws is recorded (and a nested
// all_errors() that recorded some stops it) and the result is false; else errors propagate.
bool collect(const std::function<void()>& part);

// Whether errors are being collected on this thread (inside all_errors(), not in first_error()).
bool collecting_errors();

// Lists the errors of `file` (a loader's own document) before those of the files it names
// (otherwise files come in the order their first error was met). No effect outside
// all_errors().
void list_file_first(const std::string& file);

// An unknown key of `map` recorded with its "did you mean `meant`": a missing `meant` there is
// that same mistake, not a second one; while errors are collected, child(meant) then stops
// its part without a message (ErrorsRecorded), and so does a check of such a key that calls
// stop_if_misspelled(map, meant).
void note_misspelled(const ConfigNode& map, const std::string& meant);
void stop_if_misspelled(const ConfigNode& map, const std::string& meant);

void all_errors_void(const std::function<void()>& body);

// Runs a loader's `body` collecting its errors (above). Nested in another all_errors(), its
// errors join the outer log, and it throws ErrorsRecorded when `body` recorded any (its
// caller must not use a result loaded with errors).
template <typename F>
auto all_errors(F&& body) -> decltype(body()) {
  using R = decltype(body());
  if constexpr (std::is_void_v<R>) {
    all_errors_void(body);
  } else {
    std::optional<R> result;
    all_errors_void([&] { result.emplace(body()); });
    return std::move(*result);
  }
}

// Runs `f` with collection off: its first error propagates (for code that catches an
// InputError to reword it or to try another reading).
void first_error_void(const std::function<void()>& f);
template <typename F>
auto first_error(F&& f) -> decltype(f()) {
  using R = decltype(f());
  if constexpr (std::is_void_v<R>) {
    first_error_void(f);
  } else {
    std::optional<R> result;
    first_error_void([&] { result.emplace(f()); });
    return std::move(*result);
  }
}

// While alive (and `on`), errors are not collected on this thread: as first_error(), for a
// scope.
class FirstErrorScope {
 public:
  explicit FirstErrorScope(bool on = true);
  ~FirstErrorScope();
  FirstErrorScope(const FirstErrorScope&) = delete;
  FirstErrorScope& operator=(const FirstErrorScope&) = delete;

 private:
  bool on_;
  void* previous_;
};

// Values read one by one, each one's error collected, for a use that needs them all:
//   Values v;
//   const int ranks = v([&] { return node.get_int("ranks", std::nullopt, 2, 64); });
//   const Seconds lat = v([&] { return node.get_time("latency"); });
//   v.done();   // stops the subtree (ErrorsRecorded) when one of them failed
// Outside all_errors() the first error propagates at once.
class Values {
 public:
  template <typename F>
  auto operator()(F&& read) -> decltype(read()) {
    using R = decltype(read());
    R value{};
    ok_ = collect([&] { value = read(); }) && ok_;
    return value;
  }
  bool ok() const { return ok_; }
  void done() const {
    if (!ok_) throw ErrorsRecorded{};
  }

 private:
  bool ok_ = true;
};

// A YAML node with the key path that led to it, e.g. "delays.persistent[0].rank".
class ConfigNode {
 public:
  ConfigNode(const ConfigReader* reader, YAML::Node node, std::string path)
      : reader_(reader), node_(std::move(node)), path_(std::move(path)) {}
  ConfigNode(const ConfigNode&) = default;
  // Rebinds to `other`'s node. (YAML::Node's own assignment would overwrite the value in the
  // document the node belongs to, so the default operator= must not be used.)
  ConfigNode& operator=(const ConfigNode& other) {
    reader_ = other.reader_;
    node_.reset(other.node_);
    path_ = other.path_;
    return *this;
  }

  const std::string& path() const { return path_; }
  const YAML::Node& yaml() const { return node_; }
  const ConfigReader& reader() const { return *reader_; }
  bool is_map() const { return node_.IsMap(); }
  bool is_sequence() const { return node_.IsSequence(); }
  bool is_scalar() const { return node_.IsScalar(); }
  std::string text() const;  // the scalar as written, or a flow dump of the node

  // Errors point at this node: "file:line:column: path: what (value: ...)".
  [[noreturn]] void fail(const std::string& what) const;

  // Scalar conversions of this node.
  std::string as_string() const;
  std::int64_t as_int(std::int64_t lo, std::int64_t hi) const;
  double as_double(double lo, double hi) const;
  bool as_bool() const;
  Seconds as_time() const;
  Bytes as_bytes() const;
  BytesPerSecond as_bandwidth() const;
  SecondsPerByte as_seconds_per_byte() const;
  // A file named by this scalar; an error at this node unless it is a readable regular file
  // within the input size limit (common/input_file.hpp). The one rule for paths inside inputs:
  // a relative path is relative to the folder of the file it is written in. `base_dir` is that
  // folder for this node's document (its reader's directory(); "." for text from the command
  // line); a node adopted from another file (a topology file's key overridden by the including
  // config, a sweep value) resolves against that file's folder.
  std::string as_input_file(const std::string& base_dir, const std::string& what) const;
  // The flow text of this node (as text()) with every value of a map key in `file_keys` made
  // an absolute path by as_input_file: a part of a file copied into a generated document keeps
  // its paths relative to the file it came from.
  std::string text_with_absolute_files(const std::string& base_dir,
                                       std::initializer_list<const char*> file_keys) const;
  // One of `choices`; the error lists them.
  std::string as_choice(std::initializer_list<const char*> choices) const;

  // Map access. `has` is true for present keys; a key present with an empty or null value is
  // an error (null never stands for the default). Strings (as_string) must not hold control
  // characters.
  bool has(const std::string& key) const;
  ConfigNode child(const std::string& key) const;  // required: error names the missing key
  std::optional<ConfigNode> maybe(const std::string& key) const;
  void require_map() const;
  // Unknown keys are errors naming the key and the allowed ones (each one recorded while
  // errors are collected; the first thrown otherwise).
  void allow_only(std::initializer_list<const char*> keys) const;
  std::vector<std::string> keys() const;  // in document order

  // Sequence access (a scalar counts as a one-element list when `scalar_ok`). An empty list is
  // an error (leaving the key out gives the default); so, in unique_items, is a scalar item
  // written twice.
  std::vector<ConfigNode> items(bool scalar_ok = false) const;
  std::vector<ConfigNode> unique_items(bool scalar_ok = false) const;

  // Shorthands: typed value of a key, with a default when absent.
  std::string get_string(const std::string& key,
                         std::optional<std::string> fallback = std::nullopt) const;
  std::int64_t get_int(const std::string& key, std::optional<std::int64_t> fallback,
                       std::int64_t lo, std::int64_t hi) const;
  double get_double(const std::string& key, std::optional<double> fallback, double lo,
                    double hi) const;
  bool get_bool(const std::string& key, std::optional<bool> fallback) const;
  Seconds get_time(const std::string& key, std::optional<Seconds> fallback = std::nullopt) const;
  Bytes get_bytes(const std::string& key, std::optional<Bytes> fallback = std::nullopt) const;
  BytesPerSecond get_bandwidth(const std::string& key,
                               std::optional<BytesPerSecond> fallback = std::nullopt) const;
  std::string get_choice(const std::string& key, std::initializer_list<const char*> choices,
                         std::optional<std::string> fallback = std::nullopt) const;

 private:
  const ConfigReader* reader_;
  YAML::Node node_;
  std::string path_;
};

// The most values (map entries and list items, aliases expanded) a config document may have.
inline constexpr std::size_t kMaxConfigNodes = 1'000'000;

class ConfigReader {
 public:
  // Loads a file; syntax errors name the file, line and column.
  explicit ConfigReader(const std::string& path);
  // Parses text (tests, stdin); `name` is used in messages.
  static ConfigReader from_string(const std::string& text, const std::string& name);

  ConfigNode root() const { return ConfigNode(this, root_, ""); }
  const std::string& file() const { return file_; }
  // Directory of the file, to resolve relative paths inside it ("" for strings).
  std::string directory() const;

  // Values written into this document from another one (a topology file's keys overridden by
  // the including config): `node` and everything below it report errors at their place in
  // `owner`'s file, under `path` there.
  void adopt(const YAML::Node& node, const ConfigReader& owner, const std::string& path) const;
  // Where an error at `node` is reported: the owner's file and path for an adopted node, else
  // this file and `path`.
  std::pair<const std::string*, std::string> origin(const YAML::Node& node,
                                                    const std::string& path) const;
  // The reader of the file `node` was adopted from; nullptr when it is this document's own.
  const ConfigReader* adopted_from(const YAML::Node& node) const;

 private:
  ConfigReader() = default;
  void check_keys(const YAML::Node& node, const std::string& path, int depth) const;
  struct Adopted {
    YAML::Node node;
    const ConfigReader* owner;
    std::string path;
  };
  std::string file_;
  YAML::Node root_;
  mutable std::size_t nodes_checked_ = 0;
  mutable std::vector<Adopted> adopted_;
};

}  // namespace ssim::experiments
