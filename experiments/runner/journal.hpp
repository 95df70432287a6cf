// The run journal of an experiment: one JSON line per finished run, appended and flushed as each
// run completes, so that a crashed, killed or sharded `stragglesim run` loses nothing.
//
//   <output>/journal.jsonl                                      (format 2)
//   {"stragglesim_journal":2, "version":..., "experiment":..., "file":..., "iterations":...,
//    "seed":"...", "fingerprint":"...", "runs":N, "shard":[I, K] or null, "check":"..."}  <- header
//   {"run":17, "point":5, "algorithm":"ring", "iterations":40, "result":{...}, "check":"..."}
//
// The fingerprint is a hash of everything that decides the runs' results (the resolved points,
// algorithms, iterations, seeds and the tool's version), not of file paths or wall-clock fields:
// a journal is only ever combined with the experiment that wrote it. Every line ends with
// "check", a 64-bit FNV-1a of the line's text before it (and, on a run line, of the header's
// fingerprint): an edited, swapped or foreign line does not pass.
//
// Reading trusts nothing: the file must be a regular file (not a FIFO, a device or a link to
// one) of a size a journal of its header's runs can have, every line is bounded, the header's
// numbers are range-checked, and every run line is checked against the experiment (its
// identity: run, point, algorithm and iteration count; its checksum; every iteration present
// and every time finite and >= 0; a run given once, and owned by the journal's shard). What
// fails is named as FILE:LINE; `run --resume` runs it again, `merge` refuses.
//
//   JournalWriter w(dir / "journal.jsonl", header_for(e, shard), e, /*append=*/false);
//   w.append(run, result);                              // thread-safe if the caller serializes
//   Journal j = read_journal(path);                     // header + each line's text
//   JournalRuns r = journal_runs(j, e, path);           // InputError when it is another experiment
#pragma once

#include <cstdint>
#include <map>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

#include "common/output_file.hpp"
#include "experiments/runner/experiment.hpp"
#include "sim/simulation.hpp"

namespace ssim::experiments {

// Parses "I/K" (1 <= I <= K); InputError naming the flag and the forms accepted.
Shard parse_shard(const std::string& text);

std::string experiment_fingerprint(const Experiment& e);

struct JournalHeader {
  std::string version;
  std::string experiment;
  std::string file;           // the YAML, as given to `run`
  std::string file_absolute;  // the same, absolute (merge reloads from `file` when it exists, else here)
  int iterations = 0;
  std::uint64_t seed = 0;
  std::string fingerprint;
  std::size_t runs = 0;
  std::optional<Shard> shard;
};
JournalHeader header_for(const Experiment& e, std::optional<Shard> shard);

// What the output files need of a run, as JSON (doubles written to round-trip exactly).
nlohmann::json run_result_json(const sim::SimulationResult& r);
sim::SimulationResult run_result_from_json(const nlohmann::json& j);

class JournalWriter {
 public:
  // Creates the file with `header` (append = false) or appends to an existing journal of that
  // header. `e` names each run line's point and algorithm.
  JournalWriter(const std::string& path, const JournalHeader& header, const Experiment& e,
                bool append);
  void append(std::size_t run, const sim::SimulationResult& result);

 private:
  OutputFile out_;
  const Experiment& e_;
  std::string fingerprint_;
};

struct JournalLine {
  int number = 0;  // 1-based; the header is line 1
  std::string text;
};
struct Journal {
  JournalHeader header;
  std::vector<JournalLine> lines;  // the run lines, unchecked
  bool truncated_tail = false;     // the last line was cut off (a crash mid-write) and is ignored
};
// InputError for a missing, unreadable or non-regular file, a damaged or out-of-range header, an
// old format (named), a line longer than a run line of the header's iterations can be, or a
// file larger than the header's runs can fill.
Journal read_journal(const std::string& path);

struct JournalRuns {
  std::map<std::size_t, sim::SimulationResult> runs;  // the lines that passed every check
  std::vector<std::string> damaged;                   // "PATH:LINE: why", in line order
};
// Checks the header against `e` (InputError naming `path` unless the journal was written by this
// experiment with these iterations and seed), then every run line as described above.
JournalRuns journal_runs(const Journal& j, const Experiment& e, const std::string& path);

}  // namespace ssim::experiments
