#include "experiments/config/delay_files.hpp"

#include <algorithm>
#include <array>
#include <cctype>
#include <charconv>
#include <cmath>
#include <fstream>
#include <limits>
#include <map>
#include <nlohmann/json.hpp>
#include <optional>
#include <sstream>
#include <string_view>
#include <utility>
#include <vector>

#include "common/csv.hpp"
#include "common/error.hpp"
#include "common/input_file.hpp"
#include "common/json_dom.hpp"
#include "common/text.hpp"

namespace ssim::experiments {
namespace {

constexpr CsvOptions kDelayCsv{.comments = true, .trim = true};
constexpr const char* kSuffixHelp = "suffix _s, _ms, _us, _ns or _ps";

std::optional<double> parse_number(std::string_view s) {
  double v = 0.0;
  const auto [ptr, ec] = std::from_chars(s.data(), s.data() + s.size(), v);
  if (s.empty() || ec != std::errc() || ptr != s.data() + s.size() || !std::isfinite(v)) {
    return std::nullopt;
  }
  return v;
}

std::optional<int> parse_int(std::string_view s) {
  int v = 0;
  const auto [ptr, ec] = std::from_chars(s.data(), s.data() + s.size(), v);
  if (s.empty() || ec != std::errc() || ptr != s.data() + s.size()) return std::nullopt;
  return v;
}

struct UnitSuffix {
  std::string_view base;  // the column name without the suffix
  double factor;          // seconds per unit
};

// "arrival_ms" -> {"arrival", 1e-3}; nullopt without a known suffix or without a name before it.
std::optional<UnitSuffix> split_unit_suffix(std::string_view name) {
  static constexpr std::array<std::pair<std::string_view, double>, 5> kSuffixes{
      {{"_s", 1.0}, {"_ms", 1e-3}, {"_us", 1e-6}, {"_ns", 1e-9}, {"_ps", 1e-12}}};
  for (const auto& [suffix, factor] : kSuffixes) {
    if (name.size() > suffix.size() && name.ends_with(suffix)) {
      return UnitSuffix{name.substr(0, name.size() - suffix.size()), factor};
    }
  }
  return std::nullopt;
}

// Cell `k` of a CSV whose header gave the unit.
Seconds cell_time(const CsvReader& csv, const CsvRecord& r, std::size_t k, double factor) {
  const std::string& cell = r.fields[k];
  const std::optional<double> v = parse_number(cell);
  if (!v) csv.fail_at(r, k, "'" + cell + "' is not a number");
  if (*v < 0) csv.fail_at(r, k, "time " + cell + " must be >= 0");
  return Seconds{*v * factor};
}

// An index cell: a rank in [0, 65535] (a topology's most ranks), an iteration or step in
// [0, 2^31 - 2] (so that one past the last is an int too).
int cell_index(const CsvReader& csv, const CsvRecord& r, std::size_t k, std::string_view what) {
  const int most = what == "rank" ? 65535 : std::numeric_limits<int>::max() - 1;
  const std::optional<int> v = parse_int(r.fields[k]);
  if (!v || *v < 0 || *v > most) {
    csv.fail_at(r, k,
                std::string(what) + " '" + r.fields[k] + "' is not an integer in [0, " +
                    std::to_string(most) + "]");
  }
  return *v;
}

std::ifstream open_or_throw(const std::filesystem::path& file, std::string_view what) {
  check_input_file(file.string());  // a regular file within the size limit (common/input_file.hpp)
  std::ifstream in(file);
  if (!in) throw InputError("cannot open " + std::string(what) + " '" + file.string() + "'");
  return in;
}

}  // namespace

sim::Distribution read_delay_samples(std::istream& in, const std::string& source) {
  CsvReader csv(in, source, kDelayCsv);
  std::vector<Seconds> samples;
  std::optional<double> header_factor;  // set by a "delay_ms" header: rows are bare numbers
  bool first = true;
  CsvRecord r;
  while (csv.next(r)) {
    const std::vector<std::string>& fields = r.fields;
    const bool named = !fields[0].empty() && std::isalpha(static_cast<unsigned char>(fields[0][0]));
    if (first && named) {
      first = false;
      if (fields.size() == 1) {
        const std::optional<UnitSuffix> unit = split_unit_suffix(fields[0]);
        if (!unit) {
          csv.fail(r, "header '" + fields[0] + "' must name the unit, e.g. delay_ms (" +
                          kSuffixHelp + ")");
        }
        header_factor = unit->factor;
      } else if (fields.size() != 2 || fields[1] != "unit") {
        csv.fail(r, "expected a header 'name_<unit>' (e.g. delay_ms) or 'name,unit', got '" +
                        joined(r.fields, ",") + "'");
      }
      continue;
    }
    first = false;
    if (header_factor) {
      if (fields.size() != 1) {
        csv.fail(r, "expected one number per line (the header gives the unit)");
      }
      samples.push_back(cell_time(csv, r, 0, *header_factor));
      continue;
    }
    if (fields.size() > 2) csv.fail(r, "expected 'value,unit' or 'value unit'");
    const std::string text = fields.size() == 2 ? fields[0] + fields[1] : fields[0];
    try {
      samples.push_back(parse_time(text));
    } catch (const InputError& e) {
      csv.fail_at(r, 0,
                  std::string(e.what()) + " (or give the unit once in a header such as delay_ms)");
    }
  }
  if (samples.empty()) throw InputError(source + ": no delay samples");
  return sim::Distribution::empirical(std::move(samples), source);
}

sim::Distribution load_delay_samples(const std::filesystem::path& file) {
  std::ifstream in = open_or_throw(file, "delay sample file");
  return read_delay_samples(in, file.string());
}

sim::Trace read_delay_trace(std::istream& in, const std::string& source) {
  CsvReader csv(in, source, kDelayCsv);
  const std::string expected =
      "expected a header 'iteration,rank,arrival_<unit>' or "
      "'iteration,rank0_<unit>,rank1_<unit>,...' (" +
      std::string(kSuffixHelp) + ")";
  CsvRecord header;
  if (!csv.next(header)) throw InputError(source + ": empty delay trace");
  const std::vector<std::string>& names = header.fields;
  if (names.size() < 2 || names[0] != "iteration") csv.fail(header, expected);
  const bool long_form = names[1] == "rank";

  // One unit factor for the arrival column (long form) or per rank column (wide form).
  std::vector<double> factors;
  if (long_form) {
    const std::optional<UnitSuffix> unit =
        names.size() == 3 ? split_unit_suffix(names[2]) : std::nullopt;
    if (!unit) csv.fail(header, expected);
    factors.push_back(unit->factor);
  } else {
    for (std::size_t k = 1; k < names.size(); ++k) {
      const std::optional<UnitSuffix> unit = split_unit_suffix(names[k]);
      const std::string want = "rank" + std::to_string(k - 1);
      if (!unit || unit->base != want) {
        csv.fail_at(header, k,
                    "column " + std::to_string(k + 1) + " is '" + names[k] + "', expected " + want +
                        "_<unit>; " + expected);
      }
      factors.push_back(unit->factor);
    }
  }

  struct Cell {
    Seconds value;
    int line;
  };
  std::map<int, std::map<int, Cell>> rows;  // iteration -> rank -> arrival
  CsvRecord r;
  while (csv.next(r)) {
    const std::vector<std::string>& f = r.fields;
    if (f.size() != names.size()) {
      csv.fail(r, "expected " + std::to_string(names.size()) + " columns, got " +
                      std::to_string(f.size()));
    }
    const int it = cell_index(csv, r, 0, "iteration");
    std::map<int, Cell>& row = rows[it];
    if (long_form) {
      const int rank = cell_index(csv, r, 1, "rank");
      const Seconds v = cell_time(csv, r, 2, factors[0]);
      const auto [pos, inserted] = row.emplace(rank, Cell{v, r.line});
      if (!inserted) {
        csv.fail(r, "iteration " + f[0] + " rank " + f[1] + " already given on line " +
                        std::to_string(pos->second.line));
      }
    } else {
      if (!row.empty()) {
        csv.fail(r, "iteration " + f[0] + " already given on line " +
                        std::to_string(row.begin()->second.line));
      }
      for (std::size_t k = 1; k < f.size(); ++k) {
        row.emplace(static_cast<int>(k - 1), Cell{cell_time(csv, r, k, factors[k - 1]), r.line});
      }
    }
  }
  if (rows.empty()) throw InputError(source + ": no data rows after the header");

  // Ranks 0..R-1 where R is one more than the largest rank seen anywhere.
  int ranks = 0;
  for (const auto& [it, row] : rows) ranks = std::max(ranks, row.rbegin()->first + 1);
  std::vector<std::vector<Seconds>> arrivals;
  arrivals.reserve(rows.size());
  int expect_it = 0;
  for (const auto& [it, row] : rows) {
    if (it != expect_it) {
      throw InputError(source + ": iteration " + std::to_string(expect_it) +
                       " is missing (iterations must run 0.." + std::to_string(rows.size() - 1) +
                       " without gaps)");
    }
    int expect_rank = 0;
    for (const auto& [rank, cell] : row) {
      if (rank != expect_rank) break;
      ++expect_rank;
    }
    if (expect_rank != ranks) {
      throw InputError(source + ": iteration " + std::to_string(it) + " has no arrival for rank " +
                       std::to_string(expect_rank) + " (ranks run 0.." + std::to_string(ranks - 1) +
                       ")");
    }
    std::vector<Seconds>& out = arrivals.emplace_back();
    out.reserve(static_cast<std::size_t>(ranks));
    for (const auto& [rank, cell] : row) out.push_back(cell.value);
    ++expect_it;
  }
  return sim::Trace(std::move(arrivals), source);
}

sim::Trace load_delay_trace(const std::filesystem::path& file) {
  std::ifstream in = open_or_throw(file, "delay trace");
  return read_delay_trace(in, file.string());
}

}  // namespace ssim::experiments

namespace ssim::experiments {

std::vector<std::vector<double>> read_step_log(std::istream& in, const std::string& source) {
  CsvReader csv(in, source, kDelayCsv);
  const std::string expected =
      "expected a header 'rank,step,seconds', 'rank,step,<name>_<unit>' or 'rank,step,timestamp[_<unit>]' (" +
      std::string(kSuffixHelp) + ")";
  CsvRecord header;
  if (!csv.next(header)) throw InputError(source + ": empty step log");
  const std::vector<std::string>& names = header.fields;
  if (names.size() != 3 || names[0] != "rank" || names[1] != "step") csv.fail(header, expected);
  double factor = 1.0;
  // A timestamp column: when each rank finished each step; the step times are the differences.
  bool timestamps = names[2] == "timestamp";
  if (names[2] != "seconds" && !timestamps) {
    const std::optional<UnitSuffix> unit = split_unit_suffix(names[2]);
    if (!unit) csv.fail_at(header, 2, expected);
    factor = unit->factor;
    timestamps = unit->base == "timestamp";
  }
  struct Cell {
    double seconds;
    int line;
  };
  std::map<int, std::map<int, Cell>> steps;  // step -> rank -> time
  CsvRecord r;
  while (csv.next(r)) {
    if (r.fields.size() != 3)
      csv.fail(r, "expected 3 columns (rank, step, time), got " + std::to_string(r.fields.size()));
    const int rank = cell_index(csv, r, 0, "rank");
    const int step = cell_index(csv, r, 1, "step");
    const Seconds t = cell_time(csv, r, 2, factor);
    const auto [pos, inserted] = steps[step].emplace(rank, Cell{t.value, r.line});
    if (!inserted) {
      csv.fail(r, "rank " + std::to_string(rank) + " step " + std::to_string(step) + " already given on line " +
                      std::to_string(pos->second.line));
    }
  }
  if (steps.empty()) throw InputError(source + ": no data rows after the header");
  int ranks = 0;
  for (const auto& kv : steps) ranks = std::max(ranks, kv.second.rbegin()->first + 1);
  const int first = steps.begin()->first, last = steps.rbegin()->first;
  std::vector<std::vector<double>> times;
  times.reserve(steps.size());
  int expect_step = first;
  for (const auto& [step, row] : steps) {
    if (step != expect_step) {
      throw InputError(source + ": step " + std::to_string(expect_step) + " is missing (steps run " +
                       std::to_string(first) + ".." + std::to_string(last) + " without gaps)");
    }
    int expect_rank = 0;
    for (const auto& cell : row) {
      if (cell.first != expect_rank) break;
      ++expect_rank;
    }
    if (expect_rank != ranks) {
      throw InputError(source + ": step " + std::to_string(step) + " has no time for rank " +
                       std::to_string(expect_rank) + " (ranks run 0.." + std::to_string(ranks - 1) + ")");
    }
    std::vector<double>& out = times.emplace_back();
    for (const auto& cell : row) out.push_back(cell.second.seconds);
    ++expect_step;
  }
  if (!timestamps) return times;
  // Step s of rank r took timestamp[s] - timestamp[s-1]; the first step has no start.
  const std::vector<std::map<int, Cell>*> rows = [&steps] {
    std::vector<std::map<int, Cell>*> v;
    for (auto& kv : steps) v.push_back(&kv.second);
    return v;
  }();
  std::vector<std::vector<double>> durations;
  for (std::size_t s = 1; s < times.size(); ++s) {
    std::vector<double>& out = durations.emplace_back();
    for (std::size_t r = 0; r < times[s].size(); ++r) {
      const double d = times[s][r] - times[s - 1][r];
      if (!(d > 0)) {
        const Cell& cell = rows[s]->at(static_cast<int>(r));
        throw InputError(source + ":" + std::to_string(cell.line) + ": rank " + std::to_string(r) +
                         " timestamp of step " + std::to_string(first + static_cast<int>(s)) +
                         " is not after its step " + std::to_string(first + static_cast<int>(s) - 1) +
                         " (line " + std::to_string(rows[s - 1]->at(static_cast<int>(r)).line) +
                         "): timestamps must increase");
      }
      out.push_back(d);
    }
  }
  return durations;
}

std::vector<std::vector<double>> load_step_log(const std::filesystem::path& file) {
  std::ifstream in = open_or_throw(file, "step log");
  return read_step_log(in, file.string());
}

}  // namespace ssim::experiments

namespace ssim::experiments {

namespace {

struct RankTrace {
  std::string file;
  std::map<int, double> steps;  // step -> seconds
};

// One rank's trace, from `in` (named `file` in errors), added to `ranks`.
void read_profiler_trace(std::istream& in, const std::string& file,
                         std::map<int, RankTrace>& ranks) {
  nlohmann::json j;
  // nlohmann keeps the last of two equal keys ("dur", "rank"): a duplicate is an error, as in
  // every reader.
  try {
    j = parse_json_unique_keys(in, [&file](const std::string& /*path*/, const std::string& key) {
      throw InputError(file + ": duplicate key \"" + key + "\" (a key may appear once per object)");
    });
  } catch (const nlohmann::json::exception& e) {
    // parse_error, and out_of_range for a number beyond a double (1e400).
    throw InputError(file + ": not a JSON profiler trace (" + e.what() + ")");
  }
  if (!j.is_object()) throw InputError(file + ": expected a JSON object with traceEvents");
  const auto info = j.find("distributedInfo");
  const nlohmann::json* rank_field =
      info != j.end() && info->is_object() && info->contains("rank") ? &(*info)["rank"] : nullptr;
  if (!rank_field || !rank_field->is_number_integer() || rank_field->get<long long>() < 0 ||
      rank_field->get<long long>() > 1'000'000) {
    throw InputError(file + ": distributedInfo.rank: missing or not an integer in [0, 1000000] (the rank of "
                     "the trace, as PyTorch's profiler records it under DDP)");
  }
  const int rank = rank_field->get<int>();
  const auto events = j.find("traceEvents");
  if (events == j.end() || !events->is_array()) throw InputError(file + ": traceEvents: missing or not a list");
  RankTrace t{file, {}};
  constexpr std::string_view kStep = "ProfilerStep#";
  for (std::size_t i = 0; i < events->size(); ++i) {
    const nlohmann::json& ev = (*events)[i];
    if (!ev.is_object() || !ev.contains("name") || !ev["name"].is_string()) continue;
    const std::string name = ev["name"].get<std::string>();
    if (!std::string_view(name).starts_with(kStep)) continue;
    const std::string where = file + ": traceEvents[" + std::to_string(i) + "]";
    const std::optional<int> step = parse_int(std::string_view(name).substr(kStep.size()));
    if (!step || *step < 0) throw InputError(where + ".name: '" + name + "' is not ProfilerStep#<step>");
    if (!ev.contains("dur") || !ev["dur"].is_number() || !std::isfinite(ev["dur"].get<double>()) ||
        !(ev["dur"].get<double>() > 0)) {
      throw InputError(where + ".dur: the step's duration (microseconds) must be a number > 0");
    }
    if (!t.steps.emplace(*step, ev["dur"].get<double>() * 1e-6).second)
      throw InputError(where + ": step " + std::to_string(*step) + " given twice");
  }
  if (t.steps.empty()) throw InputError(file + ": no ProfilerStep#<step> spans in traceEvents");
  const auto [pos, inserted] = ranks.emplace(rank, std::move(t));
  if (!inserted) throw InputError(file + ": rank " + std::to_string(rank) + " is also the rank of " + pos->second.file);
}

// times[step - first][rank] from every rank's trace.
std::vector<std::vector<double>> step_times(const std::map<int, RankTrace>& ranks) {
  if (ranks.empty()) throw InputError("no profiler traces given");
  const int n = ranks.rbegin()->first + 1;
  for (int r = 0; r < n; ++r) {
    if (!ranks.count(r))
      throw InputError("no profiler trace for rank " + std::to_string(r) + " (ranks run 0.." + std::to_string(n - 1) + ")");
  }
  const RankTrace& zero = ranks.at(0);
  const int first = zero.steps.begin()->first, last = zero.steps.rbegin()->first;
  // Every rank has exactly rank 0's steps, first..last without a gap: checked on the steps
  // given (the maps) before anything of size last - first + 1 is allocated.
  for (int r = 0; r < n; ++r) {
    const RankTrace& t = ranks.at(r);
    long long expect = first;
    for (const auto& [step, seconds] : t.steps) {
      if (step < first || step > last) {
        throw InputError(t.file + ": ProfilerStep#" + std::to_string(step) + " is beyond steps " +
                         std::to_string(first) + ".." + std::to_string(last) + " of " + zero.file);
      }
      if (step != expect) break;
      ++expect;
    }
    if (expect != static_cast<long long>(last) + 1) {
      throw InputError(t.file + ": no ProfilerStep#" + std::to_string(expect) + " (rank " +
                       std::to_string(r) + "; steps run " + std::to_string(first) + ".." +
                       std::to_string(last) + " in " + zero.file + ", without gaps)");
    }
  }
  std::vector<std::vector<double>> times(zero.steps.size(),
                                         std::vector<double>(static_cast<std::size_t>(n)));
  for (int r = 0; r < n; ++r) {
    std::size_t s = 0;
    for (const auto& [step, seconds] : ranks.at(r).steps) times[s++][static_cast<std::size_t>(r)] = seconds;
  }
  return times;
}

}  // namespace

std::vector<std::vector<double>> load_profiler_traces(const std::vector<std::filesystem::path>& files) {
  std::map<int, RankTrace> ranks;
  for (const std::filesystem::path& path : files) {
    std::ifstream in = open_or_throw(path, "profiler trace");
    read_profiler_trace(in, path.string(), ranks);
  }
  return step_times(ranks);
}

std::vector<std::vector<double>> read_profiler_traces(
    const std::vector<std::pair<std::string, std::string>>& traces) {
  std::map<int, RankTrace> ranks;
  for (const auto& [source, text] : traces) {
    std::istringstream in(text);
    read_profiler_trace(in, source, ranks);
  }
  return step_times(ranks);
}

}  // namespace ssim::experiments
