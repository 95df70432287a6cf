#include "experiments/journal.hpp"

#include <charconv>
#include <filesystem>
#include <cstdio>
#include <fstream>
#include <sstream>

#include "common/error.hpp"
#include "experiments/experiment_output.hpp"

namespace ssim::exp {
namespace {

constexpr int kJournalFormat = 1;

std::uint64_t fnv1a(const std::string& text) {
  std::uint64_t h = 14695981039346656037ull;
  for (unsigned char c : text) {
    h ^= c;
    h *= 1099511628211ull;
  }
  return h;
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

JournalHeader header_from_json(const nlohmann::json& j) {
  JournalHeader h;
  if (!j.is_object() || j.value("stragglesim_journal", 0) != kJournalFormat) {
    throw InputError("not a stragglesim journal (format " + std::to_string(kJournalFormat) + ")");
  }
  h.version = j.at("version").get<std::string>();
  h.experiment = j.at("experiment").get<std::string>();
  h.file = j.at("file").get<std::string>();
  h.file_absolute = j.at("file_absolute").get<std::string>();
  h.iterations = j.at("iterations").get<int>();
  h.seed = std::stoull(j.at("seed").get<std::string>());
  h.fingerprint = j.at("fingerprint").get<std::string>();
  h.runs = j.at("runs").get<std::size_t>();
  if (!j.at("shard").is_null()) h.shard = Shard{j.at("shard").at(0).get<int>(), j.at("shard").at(1).get<int>()};
  return h;
}

}  // namespace

Shard parse_shard(const std::string& text) {
  const auto slash = text.find('/');
  if (slash == std::string::npos) {
    throw InputError("--shard '" + text + "': expected I/N with integers 1 <= I <= N (e.g. --shard 2/8)");
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
  char hex[17];
  std::snprintf(hex, sizeof hex, "%016llx", static_cast<unsigned long long>(fnv1a(j.dump())));
  return hex;
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
  const auto st = std::filesystem::status(path, ec);
  if (!ec && std::filesystem::exists(st) && !std::filesystem::is_regular_file(st))
    throw InputError(path + ": is not a regular file; the journal must be one");
  return append ? OutputFile::append(path) : OutputFile(path);
}

}  // namespace

JournalWriter::JournalWriter(const std::string& path, const JournalHeader& header, bool append)
    : out_(open_journal(path, append)) {
  if (!append) {
    // A new journal takes its name with its header (common/output_file.hpp): it is never seen
    // without one, and a rewritten journal replaces the old one at once.
    out_.stream() << header_json(header).dump() << "\n";
    out_.publish();
  }
}

void JournalWriter::append(std::size_t run, const sim::SimulationResult& result) {
  out_.stream() << nlohmann::json{{"run", run}, {"result", run_result_json(result)}}.dump() << "\n";
  out_.flush();
}

Journal read_journal(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw InputError(path + ": no journal here (was this folder written by `stragglesim run`?)");
  std::stringstream buffer;
  buffer << in.rdbuf();
  const std::string text = buffer.str();
  Journal j;
  std::size_t pos = 0;
  int line = 0;
  while (pos < text.size()) {
    const std::size_t end = text.find('\n', pos);
    ++line;
    const bool last = end == std::string::npos;
    const std::string body = text.substr(pos, last ? std::string::npos : end - pos);
    pos = last ? text.size() : end + 1;
    nlohmann::json value;
    try {
      value = nlohmann::json::parse(body);
    } catch (const nlohmann::json::exception&) {
      // A line without its newline is a write cut short by a crash: keep what is whole.
      if (last && line > 1) {
        j.truncated_tail = true;
        break;
      }
      throw InputError(path + ":" + std::to_string(line) + ": damaged journal line (not JSON)");
    }
    try {
      if (line == 1) {
        j.header = header_from_json(value);
        continue;
      }
      const std::size_t run = value.at("run").get<std::size_t>();
      if (run >= j.header.runs) throw InputError("run " + std::to_string(run) + " out of range");
      j.runs[run] = run_result_from_json(value.at("result"));
    } catch (const InputError& e) {
      throw InputError(path + ":" + std::to_string(line) + ": " + e.what());
    } catch (const std::exception& e) {
      if (last && line > 1) {
        j.truncated_tail = true;
        break;
      }
      throw InputError(path + ":" + std::to_string(line) + ": damaged journal line (" + e.what() + ")");
    }
  }
  if (line == 0) throw InputError(path + ": the journal is empty");
  return j;
}

void check_journal_matches(const Journal& j, const Experiment& e, const std::string& path) {
  const std::string want = experiment_fingerprint(e);
  if (j.header.version != STRAGGLESIM_VERSION_STRING) {
    throw InputError(path + ": written by stragglesim " + j.header.version + ", this is " +
                     STRAGGLESIM_VERSION_STRING + ": start a fresh run (another output folder, or without --resume)");
  }
  if (j.header.fingerprint != want || j.header.runs != e.run_count()) {
    throw InputError(path + ": the journal is of another experiment or settings (" + j.header.experiment + " from " +
                     j.header.file + ", iterations " + std::to_string(j.header.iterations) + ", seed " +
                     std::to_string(j.header.seed) + "; fingerprint " + j.header.fingerprint + ", this run's " + want +
                     "): its results cannot be mixed in; use another output folder, or run without --resume");
  }
}

}  // namespace ssim::exp
