// The run journal of an experiment: one JSON line per finished run, appended and flushed as each
// run completes, so that a crashed, killed or sharded `stragglesim run` loses nothing.
//
//   <output>/journal.jsonl
//   {"stragglesim_journal":1, "version":..., "experiment":..., "file":..., "iterations":...,
//    "seed":"...", "fingerprint":"...", "runs":N, "shard":[I, K] or null}     <- header line
//   {"run":17, "result":{...}}                                                <- one per run
//
// The fingerprint is a hash of everything that decides the runs' results (the resolved points,
// algorithms, iterations, seeds and the tool's version), not of file paths or wall-clock fields:
// a journal is only ever combined with the experiment that wrote it.
//
//   JournalWriter w(dir / "journal.jsonl", header_for(e, shard), /*append=*/false);
//   w.append(run, result);                              // thread-safe if the caller serializes
//   Journal j = read_journal(path);                     // header + every whole run line
//   check_journal_matches(j, e, path);                  // InputError when it is another experiment
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>

#include <nlohmann/json.hpp>

#include "common/output_file.hpp"
#include "experiments/experiment.hpp"
#include "sim/simulation.hpp"

namespace ssim::exp {

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
  // Creates the file with `header` (append = false) or appends to an existing journal.
  JournalWriter(const std::string& path, const JournalHeader& header, bool append);
  void append(std::size_t run, const sim::SimulationResult& result);

 private:
  OutputFile out_;
};

struct Journal {
  JournalHeader header;
  std::map<std::size_t, sim::SimulationResult> runs;
  bool truncated_tail = false;  // the last line was cut off (a crash mid-write) and is ignored
};
// InputError for a missing or unreadable file, a bad header, or a damaged line before the last.
Journal read_journal(const std::string& path);
// InputError (naming `path`) unless the journal was written by this experiment.
void check_journal_matches(const Journal& j, const Experiment& e, const std::string& path);

}  // namespace ssim::exp
