#include "experiments/runner/journal.hpp"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <charconv>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <limits>
#include <memory>
#include <set>
#include <string_view>

#include "common/error.hpp"
#include "experiments/output/experiment_output.hpp"

namespace ssim::experiments {
namespace {

constexpr int kJournalFormat = 2;
// A header holds names and paths only; a run line a few fields and one entry per iteration
// (about 80 bytes each, the name of the algorithm chosen included).
constexpr std::size_t kMaxHeaderBytes = 64 * 1024;
constexpr std::size_t kLineBaseBytes = 64 * 1024;
constexpr std::size_t kLineBytesPerIteration = 512;
constexpr int kMaxIterations = 10'000'000;  // run's --iterations range
constexpr std::uint64_t kMaxRuns = 1ull << 40;

std::uint64_t fnv1a(std::string_view text, std::uint64_t h = 14695981039346656037ull) {
  for (unsigned char c : text) {
    h ^= c;
    h *= 1099511628211ull;
  }
  return h;
}

std::string hex16(std::uint64_t v) {
  char hex[17];
  std::snprintf(hex, sizeof hex, "%016llx", static_cast<unsigned long long>(v));
  return hex;
}

constexpr std::string_view kCheckKey = ",\"check\":\"";

// `object` (a JSON object's text) with its checksum as a last key: the FNV-1a of `salt` and of
// the text before the checksum key.
std::string with_check(const std::string& object, std::string_view salt) {
  const std::string body = object.substr(0, object.size() - 1);
  return body + std::string(kCheckKey) + hex16(fnv1a(body, fnv1a(salt))) + "\"}";
}

// The line without its checksum key, as a JSON object's text; InputError when the checksum is
// missing or does not match.
std::string verified(const std::string& line, std::string_view salt) {
  const std::size_t tail = kCheckKey.size() + 16 + 2;
  if (line.size() < tail + 1 ||
      line.compare(line.size() - tail, kCheckKey.size(), kCheckKey) != 0 ||
      line.compare(line.size() - 2, 2, "\"}") != 0) {
    throw InputError("no checksum (\"check\" as the last key): the line is damaged");
  }
  const std::string body = line.substr(0, line.size() - tail);
  const std::string want = hex16(fnv1a(body, fnv1a(salt)));
  if (line.compare(line.size() - 18, 16, want) != 0) {
    throw InputError("checksum mismatch: the line was edited or damaged");
  }
  return body + "}";
}

const nlohmann::json& field(const nlohmann::json& j, const char* key) {
  const auto it = j.find(key);
  if (it == j.end()) throw InputError(std::string("no \"") + key + "\"");
  return *it;
}

std::uint64_t unsigned_field(const nlohmann::json& j, const char* key, std::uint64_t max) {
  const nlohmann::json& v = field(j, key);
  if (!v.is_number_unsigned() || v.get<std::uint64_t>() > max) {
    throw InputError(std::string("\"") + key + "\": " + v.dump() + " is not an integer in 0.." +
                     std::to_string(max));
  }
  return v.get<std::uint64_t>();
}

int int_field(const nlohmann::json& v, const std::string& what, long long min, long long max) {
  if (!v.is_number_integer() || v.get<long long>() < min || v.get<long long>() > max) {
    throw InputError(what + ": " + v.dump() + " is not an integer in " + std::to_string(min) +
                     ".." + std::to_string(max));
  }
  return static_cast<int>(v.get<long long>());
}

double time_field(const nlohmann::json& v, const std::string& what) {
  if (!v.is_number() || !std::isfinite(v.get<double>()) || v.get<double>() < 0) {
    throw InputError(what + ": " + v.dump() + " is not a finite number >= 0");
  }
  return v.get<double>();
}

std::string string_field(const nlohmann::json& j, const char* key) {
  const nlohmann::json& v = field(j, key);
  if (!v.is_string())
    throw InputError(std::string("\"") + key + "\": " + v.dump() + " is not a string");
  return v.get<std::string>();
}

int parse_positive(const std::string& text, const std::string& whole) {
  int v = 0;
  const auto [ptr, ec] = std::from_chars(text.data(), text.data() + text.size(), v);
  if (text.empty() || ec != std::errc() || ptr != text.data() + text.size() || v < 1) {
    throw InputError("--shard '" + whole + "': expected I/N with integers 1 <= I <= N (e.g. --shard 2/8)");
  }
  return v;
}

nlohmann::json header_json(const JournalHeader& h) {
  return {{"stragglesim_journal", kJournalFormat},
          {"version", h.version},
          {"experiment", h.experiment},
          {"file", h.file},
          {"file_absolute", h.file_absolute},
          {"iterations", h.iterations},
          {"seed", std::to_string(h.seed)},  // a string: JSON readers keep 53 bits of a number
          {"fingerprint", h.fingerprint},
          {"runs", h.runs},
          {"shard", h.shard ? nlohmann::json::array({h.shard->index, h.shard->count}) : nlohmann::json(nullptr)}};
}

// `j` is the header line, checksum verified, without it.
JournalHeader header_from_json(const nlohmann::json& j) {
  JournalHeader h;
  h.version = string_field(j, "version");
  h.experiment = string_field(j, "experiment");
  h.file = string_field(j, "file");
  h.file_absolute = string_field(j, "file_absolute");
  h.iterations = int_field(field(j, "iterations"), "\"iterations\"", 1, kMaxIterations);
  const std::string seed = string_field(j, "seed");
  const auto [ptr, ec] = std::from_chars(seed.data(), seed.data() + seed.size(), h.seed);
  if (seed.empty() || ec != std::errc() || ptr != seed.data() + seed.size() || seed[0] == '-' ||
      seed[0] == '+')
    throw InputError("\"seed\": '" + seed + "' is not a decimal 64-bit seed");
  h.fingerprint = string_field(j, "fingerprint");
  if (h.fingerprint.size() != 16 ||
      h.fingerprint.find_first_not_of("0123456789abcdef") != std::string::npos)
    throw InputError("\"fingerprint\": '" + h.fingerprint + "' is not 16 hex digits");
  h.runs = static_cast<std::size_t>(unsigned_field(j, "runs", kMaxRuns));
  if (h.runs == 0) throw InputError("\"runs\": 0; a journal is of at least one run");
  const nlohmann::json& shard = field(j, "shard");
  if (!shard.is_null()) {
    if (!shard.is_array() || shard.size() != 2 || !shard[0].is_number_integer() ||
        !shard[1].is_number_integer() || shard[0].get<long long>() < 1 ||
        shard[1].get<long long>() < shard[0].get<long long>() ||
        shard[1].get<long long>() > 1'000'000'000) {
      throw InputError("\"shard\": " + shard.dump() + " is not [I, K] with integers 1 <= I <= K");
    }
    h.shard = Shard{static_cast<int>(shard[0].get<long long>()),
                    static_cast<int>(shard[1].get<long long>())};
  }
  return h;
}

std::size_t line_limit(const JournalHeader& h) {
  return kLineBaseBytes + kLineBytesPerIteration * static_cast<std::size_t>(h.iterations);
}

}  // namespace

Shard parse_shard(const std::string& text) {
  const auto slash = text.find('/');
  if (slash == std::string::npos) {
    throw InputError("--shard '" + text + "': expected I/N with integers 1 <= I <= N (e.g. --shard 2/8)");
  }
  if (text.substr(0, slash) == "0") {
    // Slurm array indices (SLURM_ARRAY_TASK_ID) often start at 0; shards count from 1.
    const std::string count = text.substr(slash + 1);
    throw InputError(
        "--shard '" + text + "': shards count from 1 (1/" + count + " .. " + count + "/" + count +
        "); for a 0-based index such as $SLURM_ARRAY_TASK_ID give --shard $((ID+1))/" + count);
  }
  Shard s{parse_positive(text.substr(0, slash), text), parse_positive(text.substr(slash + 1), text)};
  if (s.index > s.count) {
    throw InputError("--shard '" + text + "': shard " + std::to_string(s.index) + " of " + std::to_string(s.count) +
                     " does not exist (1 <= I <= N)");
  }
  return s;
}

std::string experiment_fingerprint(const Experiment& e) {
  nlohmann::json j = experiment_json(e, {}, RunStatus{});
  // Paths (the output folder, the YAML and the settings' echo of file references) depend on
  // the working directory, not on the results; every point's resolved configuration is kept.
  j.erase("status");
  j.erase("output");
  j.erase("settings");
  j["experiment"].erase("file");
  return hex16(fnv1a(j.dump()));
}

JournalHeader header_for(const Experiment& e, std::optional<Shard> shard) {
  JournalHeader h;
  h.version = STRAGGLESIM_VERSION_STRING;
  h.experiment = e.name;
  h.file = e.file;
  std::error_code ec;
  const std::filesystem::path abs = std::filesystem::absolute(e.file, ec);
  h.file_absolute = ec ? e.file : abs.lexically_normal().string();
  h.iterations = e.iterations;
  h.seed = e.seed;
  h.fingerprint = experiment_fingerprint(e);
  h.runs = e.run_count();
  h.shard = shard;
  return h;
}

nlohmann::json run_result_json(const sim::SimulationResult& r) {
  nlohmann::json its = nlohmann::json::array();
  for (const sim::IterationSummary& it : r.iterations) {
    its.push_back({it.iteration, it.completion.value, it.after_last_arrival.value, it.last_rank,
                   it.predicted_straggler, it.chosen});
  }
  return {{"algorithm", r.algorithm},
          {"ranks", r.ranks},
          {"chunks", r.chunks},
          {"rounds", r.rounds},
          {"transfers", r.transfers},
          {"straggler_aware", r.straggler_aware},
          {"mean_completion_s", r.mean_completion.value},
          {"mean_after_last_arrival_s", r.mean_after_last_arrival.value},
          {"algbw", r.algbw.value},
          {"busbw", r.busbw.value},
          {"prediction_accuracy", r.prediction_accuracy},
          {"fallback_fraction", r.fallback_fraction},
          {"shared_link", r.shared_link ? nlohmann::json{{"round", r.shared_link->round},
                                                         {"link", r.shared_link->link},
                                                         {"link_name", r.shared_link->link_name},
                                                         {"transfers", r.shared_link->transfers}}
                                        : nlohmann::json(nullptr)},
          {"iterations", its}};
}

sim::SimulationResult run_result_from_json(const nlohmann::json& j) {
  sim::SimulationResult r;
  r.algorithm = j.at("algorithm").get<std::string>();
  r.ranks = j.at("ranks").get<int>();
  r.chunks = j.at("chunks").get<int>();
  r.rounds = j.at("rounds").get<std::size_t>();
  r.transfers = j.at("transfers").get<std::size_t>();
  r.straggler_aware = j.at("straggler_aware").get<bool>();
  r.mean_completion = Seconds{j.at("mean_completion_s").get<double>()};
  r.mean_after_last_arrival = Seconds{j.at("mean_after_last_arrival_s").get<double>()};
  r.algbw = BytesPerSecond{j.at("algbw").get<double>()};
  r.busbw = BytesPerSecond{j.at("busbw").get<double>()};
  r.prediction_accuracy = j.at("prediction_accuracy").get<double>();
  r.fallback_fraction = j.at("fallback_fraction").get<double>();
  if (const nlohmann::json& l = j.at("shared_link"); !l.is_null()) {
    r.shared_link = sim::SharedLink{l.at("round").get<int>(), l.at("link").get<int>(),
                                    l.at("link_name").get<std::string>(), l.at("transfers").get<int>()};
  }
  for (const nlohmann::json& it : j.at("iterations")) {
    sim::IterationSummary s;
    s.iteration = it.at(0).get<int>();
    s.completion = Seconds{it.at(1).get<double>()};
    s.after_last_arrival = Seconds{it.at(2).get<double>()};
    s.last_rank = it.at(3).get<int>();
    s.predicted_straggler = it.at(4).get<int>();
    s.chosen = it.at(5).get<std::string>();
    r.iterations.push_back(s);
  }
  return r;
}

namespace {

// The journal is read back by --resume and merge: it must be a regular file (or not exist yet).
OutputFile open_journal(const std::string& path, bool append) {
  std::error_code ec;
  // The journal is the run's own file in its output folder, as its lock is (common/
  // folder_lock.hpp, O_NOFOLLOW): a link there is not followed out of the folder, neither to
  // replace its target (--force) nor to append to it (--resume).
  if (std::filesystem::is_symlink(std::filesystem::symlink_status(path, ec))) {
    throw InputError(path +
                     ": is a symbolic link; the journal is the run's own file in its output "
                     "folder and a link there is not followed (remove the link, or give another "
                     "output folder)");
  }
  const auto st = std::filesystem::status(path, ec);
  if (!ec && std::filesystem::exists(st) && !std::filesystem::is_regular_file(st))
    throw InputError(path + ": is not a regular file; the journal must be one");
  return append ? OutputFile::append(path) : OutputFile(path);
}

std::string run_line(const Experiment& e, const std::string& fingerprint, std::size_t run,
                     const sim::SimulationResult& result) {
  const std::size_t nalg = e.algorithms.size();
  const nlohmann::json j{{"run", run},
                         {"point", run / nalg},
                         {"algorithm", e.algorithms[run % nalg].name},
                         {"iterations", e.iterations},
                         {"result", run_result_json(result)}};
  return with_check(j.dump(), fingerprint + "\n");
}

// Checks the types and ranges of a run line's "result" before it is converted.
void check_result(const nlohmann::json& r, const std::string& algorithm, int iterations) {
  if (!r.is_object()) throw InputError("\"result\" is not an object");
  if (string_field(r, "algorithm") != algorithm)
    throw InputError("\"result\" is of algorithm '" + string_field(r, "algorithm") +
                     "', the line's is '" + algorithm + "'");
  int_field(field(r, "ranks"), "\"ranks\"", 1, std::numeric_limits<int>::max());
  int_field(field(r, "chunks"), "\"chunks\"", 1, std::numeric_limits<int>::max());
  unsigned_field(r, "rounds", std::numeric_limits<std::uint64_t>::max());
  unsigned_field(r, "transfers", std::numeric_limits<std::uint64_t>::max());
  if (!field(r, "straggler_aware").is_boolean())
    throw InputError("\"straggler_aware\" is not true or false");
  for (const char* key : {"mean_completion_s", "mean_after_last_arrival_s", "algbw", "busbw",
                          "prediction_accuracy", "fallback_fraction"}) {
    time_field(field(r, key), std::string("\"") + key + "\"");
  }
  const nlohmann::json& link = field(r, "shared_link");
  if (!link.is_null()) {
    if (!link.is_object()) throw InputError("\"shared_link\" is not an object or null");
    int_field(field(link, "round"), "\"shared_link.round\"", 0, std::numeric_limits<int>::max());
    int_field(field(link, "link"), "\"shared_link.link\"", 0, std::numeric_limits<int>::max());
    string_field(link, "link_name");
    int_field(field(link, "transfers"), "\"shared_link.transfers\"", 0,
              std::numeric_limits<int>::max());
  }
  const nlohmann::json& its = field(r, "iterations");
  if (!its.is_array() || its.size() != static_cast<std::size_t>(iterations)) {
    throw InputError("\"iterations\" holds " +
                     (its.is_array() ? std::to_string(its.size()) : std::string("no list")) +
                     " iterations, the experiment runs " + std::to_string(iterations));
  }
  for (std::size_t k = 0; k < its.size(); ++k) {
    const nlohmann::json& it = its[k];
    const std::string where = "iteration " + std::to_string(k);
    if (!it.is_array() || it.size() != 6)
      throw InputError(where + ": not [iteration, completion, after, last, predicted, chosen]");
    if (int_field(it[0], where, 0, kMaxIterations) != static_cast<int>(k))
      throw InputError(where + ": numbered " + it[0].dump());
    time_field(it[1], where + ": completion");
    time_field(it[2], where + ": time after the last arrival");
    int_field(it[3], where + ": last rank", -1, std::numeric_limits<int>::max());
    int_field(it[4], where + ": predicted straggler", -1, std::numeric_limits<int>::max());
    if (!it[5].is_string()) throw InputError(where + ": the algorithm chosen is not a string");
  }
}

// A run line checked against the experiment; InputError saying what is wrong.
std::pair<std::size_t, sim::SimulationResult> checked_run_line(const std::string& line,
                                                               const JournalHeader& h,
                                                               const Experiment& e) {
  const std::string body = verified(line, h.fingerprint + "\n");
  nlohmann::json j;
  try {
    j = nlohmann::json::parse(body);
  } catch (const nlohmann::json::exception&) {
    throw InputError("not JSON");
  }
  if (!j.is_object()) throw InputError("not a JSON object");
  const std::size_t nalg = e.algorithms.size();
  const std::size_t run = static_cast<std::size_t>(unsigned_field(j, "run", kMaxRuns));
  if (run >= e.run_count()) {
    throw InputError("run " + std::to_string(run) + " out of range (the experiment has " +
                     std::to_string(e.run_count()) + " runs)");
  }
  if (h.shard && !h.shard->owns(run)) {
    throw InputError("run " + std::to_string(run) + " is not of shard " +
                     std::to_string(h.shard->index) + "/" + std::to_string(h.shard->count) +
                     " (a line of another shard's journal?)");
  }
  const std::size_t point = static_cast<std::size_t>(unsigned_field(j, "point", kMaxRuns));
  const std::string algorithm = string_field(j, "algorithm");
  const int iterations = int_field(field(j, "iterations"), "\"iterations\"", 1, kMaxIterations);
  const ExperimentAlgorithm& a = e.algorithms[run % nalg];
  if (point != run / nalg || algorithm != a.name || iterations != e.iterations) {
    throw InputError("run " + std::to_string(run) + " says point " + std::to_string(point) + ", " +
                     algorithm + ", " + std::to_string(iterations) +
                     " iterations; the experiment's run " + std::to_string(run) + " is point " +
                     std::to_string(run / nalg) + ", " + a.name + ", " +
                     std::to_string(e.iterations) + " iterations");
  }
  check_result(field(j, "result"), a.name, e.iterations);
  return {run, run_result_from_json(j.at("result"))};
}

// Reads `path` line by line: at most `limit(line)` bytes a line, never the whole file at once.
class LineReader {
 public:
  explicit LineReader(const std::string& path) : path_(path) {
    // O_NONBLOCK: opening a FIFO must not wait for a writer; it is refused below.
    fd_ = open(path.c_str(), O_RDONLY | O_NONBLOCK | O_CLOEXEC | O_NOCTTY);
    if (fd_ < 0) {
      const int err = errno;
      if (err == ENOENT)
        throw InputError(path +
                         ": no journal here (was this folder written by `stragglesim run`?)");
      throw InputError(path + ": cannot read the journal: " + std::strerror(err));
    }
    struct stat st {};
    if (fstat(fd_, &st) != 0 || !S_ISREG(st.st_mode)) {
      close(fd_);
      throw InputError(path +
                       ": is not a regular file (a FIFO, a device or a folder); a journal is one");
    }
    size_ = static_cast<std::uint64_t>(st.st_size);
    fcntl(fd_, F_SETFL, fcntl(fd_, F_GETFL) & ~O_NONBLOCK);
  }
  ~LineReader() { close(fd_); }
  LineReader(const LineReader&) = delete;
  LineReader& operator=(const LineReader&) = delete;

  std::uint64_t size() const { return size_; }

  // The next line without its newline; false at the end. `whole` is false for a last line
  // without a newline. InputError when a line exceeds `limit` bytes.
  bool next(std::string& line, bool& whole, std::size_t limit, int number) {
    line.clear();
    while (true) {
      if (pos_ == end_) {
        const ssize_t n = read(fd_, buf_, sizeof buf_);
        if (n < 0) {
          if (errno == EINTR) continue;
          throw InputError(path_ + ": cannot read the journal: " + std::strerror(errno));
        }
        if (n == 0) {
          whole = false;
          return !line.empty();
        }
        pos_ = 0;
        end_ = static_cast<std::size_t>(n);
      }
      const char* start = buf_ + pos_;
      const void* nl = std::memchr(start, '\n', end_ - pos_);
      const std::size_t take =
          nl ? static_cast<std::size_t>(static_cast<const char*>(nl) - start) : end_ - pos_;
      if (line.size() + take > limit) {
        throw InputError(
            path_ + ":" + std::to_string(number) + ": line longer than " + std::to_string(limit) +
            " bytes, more than any journal line of this experiment can be: the journal is damaged, "
            "or not a journal; start afresh with --force (or give another output folder)");
      }
      line.append(start, take);
      pos_ += take;
      if (nl) {
        ++pos_;
        whole = true;
        return true;
      }
    }
  }

 private:
  std::string path_;
  int fd_ = -1;
  std::uint64_t size_ = 0;
  char buf_[1 << 16];
  std::size_t pos_ = 0, end_ = 0;
};

}  // namespace

JournalWriter::JournalWriter(const std::string& path, const JournalHeader& header,
                             const Experiment& e, bool append)
    : out_(open_journal(path, append)), e_(e), fingerprint_(header.fingerprint) {
  if (!append) {
    // A new journal takes its name with its header (common/output_file.hpp): it is never seen
    // without one, and a rewritten journal replaces the old one at once.
    out_.stream() << with_check(header_json(header).dump(), "") << "\n";
    out_.publish();
  }
}

void JournalWriter::append(std::size_t run, const sim::SimulationResult& result) {
  out_.stream() << run_line(e_, fingerprint_, run, result) << "\n";
  out_.flush();
}

Journal read_journal(const std::string& path) {
  auto reader = std::make_unique<LineReader>(path);
  Journal j;
  std::string line;
  bool whole = false;
  if (!reader->next(line, whole, kMaxHeaderBytes, 1))
    throw InputError(path + ": the journal is empty");
  const std::string at_header = path + ":1: ";
  nlohmann::json value;
  try {
    value = nlohmann::json::parse(line);
  } catch (const nlohmann::json::exception&) {
    throw InputError(at_header + "not a stragglesim journal (its header is not JSON)");
  }
  const auto format = value.is_object() ? value.find("stragglesim_journal") : value.end();
  if (!value.is_object() || format == value.end() || !format->is_number_integer()) {
    throw InputError(at_header +
                     "not a stragglesim journal (no \"stragglesim_journal\" format number)");
  }
  if (format->get<long long>() != kJournalFormat) {
    const std::string writer =
        value.contains("version") && value["version"].is_string()
            ? " (written by stragglesim " + value["version"].get<std::string>() + ")"
            : std::string();
    throw InputError(at_header + "journal format " + std::to_string(format->get<long long>()) +
                     writer + "; this stragglesim reads format " + std::to_string(kJournalFormat) +
                     " only (lines with identity and checksum): start afresh with --force, or give "
                     "another output folder");
  }
  try {
    j.header = header_from_json(nlohmann::json::parse(verified(line, "")));
  } catch (const std::exception& e) {
    throw InputError(at_header + "damaged journal header: " + e.what() +
                     "; start afresh with --force, or give another output folder");
  }
  if (!whole) throw InputError(at_header + "the header is cut off");
  const std::size_t limit = line_limit(j.header);
  const double most = static_cast<double>(kMaxHeaderBytes) +
                      static_cast<double>(j.header.runs) * static_cast<double>(limit + 1);
  if (static_cast<double>(reader->size()) > most) {
    throw InputError(
        path + ": " + std::to_string(reader->size()) + " bytes, more than a journal of " +
        std::to_string(j.header.runs) + " runs of " + std::to_string(j.header.iterations) +
        " iterations can be: the journal is damaged, or not a journal; start afresh with --force");
  }
  for (int number = 2; reader->next(line, whole, limit, number); ++number) {
    if (!whole) {
      // A line without its newline is a write cut short by a crash: the runs before it stand.
      j.truncated_tail = true;
      break;
    }
    j.lines.push_back({number, std::move(line)});
    line = std::string();
  }
  return j;
}

JournalRuns journal_runs(const Journal& j, const Experiment& e, const std::string& path) {
  const std::string want = experiment_fingerprint(e);
  const JournalHeader& h = j.header;
  if (h.version != STRAGGLESIM_VERSION_STRING) {
    throw InputError(path + ": written by stragglesim " + h.version + ", this is " +
                     STRAGGLESIM_VERSION_STRING +
                     ": start a fresh run (another output folder, or --force without --resume)");
  }
  if (h.fingerprint != want || h.runs != e.run_count() || h.iterations != e.iterations ||
      h.seed != e.seed) {
    throw InputError(
        path + ": the journal is of another experiment or settings (" + h.experiment + " from " +
        h.file + ", iterations " + std::to_string(h.iterations) + ", seed " +
        std::to_string(h.seed) + ", fingerprint " + h.fingerprint + "; this run: " + e.name +
        ", iterations " + std::to_string(e.iterations) + ", seed " + std::to_string(e.seed) +
        ", fingerprint " + want +
        "): its results cannot be mixed in; use another output folder, or run without --resume");
  }
  JournalRuns out;
  std::map<std::size_t, int> line_of;  // run -> the line that first gave it
  std::set<std::size_t> repeated;
  for (const JournalLine& l : j.lines) {
    const std::string where = path + ":" + std::to_string(l.number) + ": ";
    try {
      auto run = checked_run_line(l.text, h, e);
      if (const auto first = line_of.find(run.first); first != line_of.end()) {
        out.damaged.push_back(where + "run " + std::to_string(run.first) + " again (also line " +
                              std::to_string(first->second) + "): a run is journaled once");
        repeated.insert(run.first);
        continue;
      }
      line_of[run.first] = l.number;
      out.runs[run.first] = std::move(run.second);
    } catch (const std::exception& ex) {
      out.damaged.push_back(where + "damaged journal line: " + ex.what());
    }
  }
  for (const std::size_t run : repeated) out.runs.erase(run);
  return out;
}

}  // namespace ssim::experiments
