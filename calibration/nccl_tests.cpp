#include "calibration/nccl_tests.hpp"

#include <algorithm>
#include <cctype>
#include <charconv>
#include <cmath>
#include <nlohmann/json.hpp>
#include <sstream>

#include "common/error.hpp"
#include "common/text.hpp"

namespace ssim::calib {
namespace {

std::vector<std::string> fields_of(std::string_view line) {
  std::vector<std::string> out;
  std::size_t i = 0;
  while (i < line.size()) {
    while (i < line.size() && std::isspace(static_cast<unsigned char>(line[i]))) ++i;
    const std::size_t start = i;
    while (i < line.size() && !std::isspace(static_cast<unsigned char>(line[i]))) ++i;
    if (i > start) out.emplace_back(line.substr(start, i - start));
  }
  return out;
}

std::optional<double> number(const std::string& s) {
  double v = 0;
  const char* end = s.data() + s.size();
  const auto [p, ec] = std::from_chars(s.data(), end, v);
  if (ec != std::errc() || p != end || !std::isfinite(v)) return std::nullopt;
  return v;
}

[[noreturn]] void fail(std::string_view name, int line, const std::string& what) {
  throw InputError(std::string(name) + ":" + std::to_string(line) + ": " + what);
}

// A measured time in microseconds, as the fits can use it: from 1 ps (below, and denormals,
// is no measurement and breaks the fit) to 1e6 s.
constexpr double kMinTimeUs = 1e-6;
constexpr double kMaxTimeUs = 1e12;
std::string time_problem(double us) {
  if (us < kMinTimeUs) return "below 1 ps (1e-6 us)";
  if (us > kMaxTimeUs) return "above 1e6 s (1e12 us)";
  return "";
}

// What the fits model: AllReduce with sum (nccl-tests' redop column; empty: not given).
std::string redop_problem(const std::string& redop) {
  if (redop.empty() || redop == "sum") return "";
  return "redop " + redop + ": calibrate fits sum AllReduce runs (all_reduce_perf -o sum)";
}

// The text table's column positions, from its header line.
struct Columns {
  int size = -1, count = -1, type = -1, redop = -1, time = -1, algbw = -1, busbw = -1, wrong = -1;
  int needed() const { return std::max({size, count, type, redop, time, algbw, busbw, wrong}) + 1; }
};

// "#  size count type redop root time algbw busbw #wrong ..." -> positions of the first
// (out-of-place) occurrence of each; nullopt when the line is not such a header.
std::optional<Columns> header_columns(std::string_view line) {
  if (line.empty() || line.front() != '#') return std::nullopt;
  line.remove_prefix(1);
  const std::vector<std::string> f = fields_of(line);
  if (f.empty() || f.front() != "size") return std::nullopt;
  Columns c;
  for (int i = 0; i < static_cast<int>(f.size()); ++i) {
    const std::string& h = f[static_cast<std::size_t>(i)];
    auto first = [i](int& slot) {
      if (slot < 0) slot = i;
    };
    if (h == "size") first(c.size);
    if (h == "count") first(c.count);
    if (h == "type") first(c.type);
    if (h == "redop") first(c.redop);
    if (h == "time" || h == "cputime") first(c.time);
    if (h == "algbw") first(c.algbw);
    if (h == "busbw") first(c.busbw);
    if (h == "#wrong" || h == "error") first(c.wrong);
  }
  if (c.time < 0) return std::nullopt;
  return c;
}

// "#  Rank  0 Group  0 Pid  40211 on dgx-h100-07 device  0 [0000:18:00] NVIDIA H100 80GB HBM3"
// (older versions without "Group"): rank 0's "HOST: NAME", or "" for other ranks.
std::optional<std::string> rank_line_device(std::string_view line) {
  if (line.empty() || line.front() != '#') return std::nullopt;
  const std::vector<std::string> f = fields_of(line.substr(1));
  if (f.size() < 2 || f[0] != "Rank" || !all_digits(f[1])) return std::nullopt;
  if (f[1] != "0") return std::string();
  const auto on = std::find(f.begin(), f.end(), "on");
  const std::size_t bracket = line.find(']');
  if (on == f.end() || on + 1 == f.end() || bracket == std::string_view::npos) return std::string();
  return *(on + 1) + ": " + std::string(trim(line.substr(bracket + 1), kWhitespace));
}

void check_program(std::string_view name, int line, const std::string& program) {
  std::string lower = program;
  std::transform(lower.begin(), lower.end(), lower.begin(),
                 [](unsigned char ch) { return static_cast<char>(std::tolower(ch)); });
  lower.erase(std::remove(lower.begin(), lower.end(), '_'), lower.end());
  if (lower.find("allreduce") == std::string::npos) {
    fail(name, line,
         "this is a log of " + program +
             "; calibrate fits AllReduce closed forms (use all_reduce_perf's output)");
  }
}

NcclTestsLog parse_text(std::string_view text, std::string_view name) {
  NcclTestsLog log;
  std::optional<Columns> columns;
  int rank_lines = 0;
  int line_no = 0;
  std::size_t pos = 0;
  while (pos <= text.size()) {
    const std::size_t eol = std::min(text.find('\n', pos), text.size());
    std::string_view line = text.substr(pos, eol - pos);
    pos = eol + 1;
    ++line_no;
    if (!line.empty() && line.back() == '\r') line.remove_suffix(1);
    if (const auto c = header_columns(line)) {
      columns = c;
      continue;
    }
    if (const auto device = rank_line_device(line)) {
      ++rank_lines;
      if (!device->empty()) log.device = *device;
      continue;
    }
    const std::vector<std::string> f = fields_of(line);
    if (f.empty()) continue;
    if (f[0] == "#") {
      // "# Collective test starting: all_reduce_perf"
      if (f.size() >= 5 && f[1] == "Collective" && f[2] == "test" && f[3] == "starting:") {
        log.program = f[4];
        check_program(name, line_no, log.program);
      }
      // "# nccl-tests version 2.17.9 nccl-headers=22703 nccl-library=22703"
      for (const std::string& field : f) {
        if (field.rfind("nccl-library=", 0) == 0) {
          const auto code = number(field.substr(13));
          if (code && *code >= 0 && *code < 1e9)  // else not a version code: ignored
            log.nccl_version = nccl_version_from_code(static_cast<long>(*code));
        }
      }
      continue;
    }
    if (f[0].front() == '#') continue;
    // "NCCL version 2.21.5+cuda12.4" (NCCL_DEBUG=VERSION or INFO)
    if (f.size() >= 3 && f[0] == "NCCL" && f[1] == "version") {
      if (log.nccl_version.empty()) log.nccl_version = f[2].substr(0, f[2].find('+'));
      continue;
    }
    if (!all_digits(f[0])) {
      // A row whose size is not a whole number ("-8", "8.5", "8K", "1e30") is an error, not a
      // line to skip: in a table, with as many fields as the header names and numbers after.
      const auto numeric_start = [](const std::string& t) {
        return std::isdigit(static_cast<unsigned char>(t[0])) || t[0] == '-' || t[0] == '+' ||
               t[0] == '.';
      };
      if (columns && static_cast<int>(f.size()) >= columns->needed() && numeric_start(f[0]) &&
          f.size() >= 2 && numeric_start(f[1]) &&
          std::find(f.begin(), f.end(), "NCCL") == f.end()) {
        fail(name, line_no,
             "column size: bad value '" + f[0] + "' (expected a whole number of bytes)");
      }
      continue;  // NCCL INFO lines and anything else that is not a row
    }
    if (!columns) {
      fail(name, line_no,
           "a table row before the column header line (\"#  size  count  type  redop  root  time  "
           "algbw  busbw  #wrong ...\")");
    }
    const Columns& c = *columns;
    if (static_cast<int>(f.size()) < c.needed()) {
      fail(name, line_no,
           std::to_string(f.size()) + " fields, the header names " + std::to_string(c.needed()) +
               " (size .. out-of-place #wrong)");
    }
    auto field = [&](int index) -> const std::string& {
      return f[static_cast<std::size_t>(index)];
    };
    auto num = [&](int index, const char* column) {
      const auto v = number(field(index));
      if (!v || *v < 0) {
        fail(name, line_no,
             std::string("column ") + column + ": bad value '" + field(index) +
                 "' (expected a number >= 0)");
      }
      return *v;
    };
    NcclTestsRow row;
    row.line = line_no;
    // Counts are integers below 2^64: a larger value is an input error, not a wrapped cast.
    auto whole = [&](int index, const char* column) {
      const double v = num(index, column);
      if (!(v < 0x1p64)) {
        fail(name, line_no,
             std::string("column ") + column + ": value '" + field(index) + "' is too large");
      }
      return static_cast<std::uint64_t>(v);
    };
    const auto [end, ec] = std::from_chars(f[0].data(), f[0].data() + f[0].size(), row.bytes);
    if (ec != std::errc() || end != f[0].data() + f[0].size())
      fail(name, line_no, "column size: value '" + f[0] + "' is too large");
    if (c.count >= 0) row.count = whole(c.count, "count");
    if (c.type >= 0) row.type = field(c.type);
    if (c.redop >= 0) row.redop = field(c.redop);
    row.time_us = num(c.time, "time");
    if (row.time_us <= 0) fail(name, line_no, "column time: bad value '0' (expected a time > 0)");
    if (const std::string p = time_problem(row.time_us); !p.empty())
      fail(name, line_no, "column time: '" + field(c.time) + "' us is " + p);
    if (const std::string p = redop_problem(row.redop); !p.empty()) fail(name, line_no, p);
    if (c.algbw >= 0) row.algbw_GBps = num(c.algbw, "algbw");
    if (c.busbw >= 0) row.busbw_GBps = num(c.busbw, "busbw");
    if (c.wrong >= 0 && field(c.wrong) != "N/A") row.wrong = num(c.wrong, "#wrong");
    log.rows.push_back(std::move(row));
  }
  if (rank_lines > kMaxLogRanks) {
    throw InputError(std::string(name) + ": " + std::to_string(rank_lines) +
                     " \"#  Rank\" lines, more than " + std::to_string(kMaxLogRanks) + " ranks");
  }
  if (rank_lines > 0) log.ranks = rank_lines;
  return log;
}

NcclTestsLog parse_json(std::string_view text, std::string_view name) {
  nlohmann::json doc;
  // nlohmann keeps the last of two equal keys: a duplicate is an error, as in every reader.
  std::vector<std::vector<std::string>> keys;  // per open object
  const nlohmann::json::parser_callback_t no_duplicates =
      [&keys, name](int /*depth*/, nlohmann::json::parse_event_t event, nlohmann::json& parsed) {
        if (event == nlohmann::json::parse_event_t::object_start) keys.emplace_back();
        if (event == nlohmann::json::parse_event_t::object_end && !keys.empty()) keys.pop_back();
        if (event == nlohmann::json::parse_event_t::key && !keys.empty()) {
          const std::string key = parsed.get<std::string>();
          if (std::find(keys.back().begin(), keys.back().end(), key) != keys.back().end())
            throw InputError(std::string(name) + ": duplicate key \"" + key + "\"");
          keys.back().push_back(key);
        }
        return true;
      };
  try {
    doc = nlohmann::json::parse(text, no_duplicates);
  } catch (const nlohmann::json::exception& e) {
    // parse_error, and out_of_range for a number beyond a double (1e400).
    throw InputError(std::string(name) + ": not valid JSON: " + e.what());
  }
  auto bad = [&](const std::string& where, const std::string& what) {
    throw InputError(std::string(name) + ": " + where + ": " + what);
  };
  if (!doc.is_object() || !doc.contains("results") || !doc["results"].is_array())
    bad("top level", "no \"results\" list (expected nccl-tests' -J output)");
  NcclTestsLog log;
  log.json = true;
  if (doc.contains("nccl_version") && doc["nccl_version"].is_number_integer())
    log.nccl_version = nccl_version_from_code(doc["nccl_version"].get<long>());
  if (doc.contains("config") && doc["config"].is_object()) {
    const nlohmann::json& cfg = doc["config"];
    if (cfg.contains("devices") && cfg["devices"].is_array() && !cfg["devices"].empty()) {
      // Threads and GPUs per process: integers in [1, 2^20] (their product with the device
      // count stays far from overflow).
      auto per_process = [&](const char* key) -> long {
        if (!cfg.contains(key)) return 1;
        const nlohmann::json& v = cfg[key];
        if (!v.is_number_integer() || v.get<long>() < 1 || v.get<long>() > (1L << 20))
          bad(std::string("config.") + key, "not an integer in [1, 1048576]");
        return v.get<long>();
      };
      const long threads = per_process("nthreads");
      const long gpus = per_process("ngpus");
      const long ranks = static_cast<long>(cfg["devices"].size()) * threads * gpus;
      if (ranks > kMaxLogRanks) {
        bad("config", std::to_string(ranks) + " ranks (devices x nthreads x ngpus), more than " +
                          std::to_string(kMaxLogRanks));
      }
      log.ranks = static_cast<int>(ranks);
      const nlohmann::json& d0 = cfg["devices"].front();
      if (d0.is_object()) {
        const std::string host = d0.value("hostname", std::string());
        log.device = (host.empty() ? "" : host + ": ") + d0.value("device_info", std::string());
      }
    }
  }
  int index = 0;
  for (const nlohmann::json& r : doc["results"]) {
    ++index;
    const std::string where = "results[" + std::to_string(index - 1) + "]";
    if (!r.is_object()) bad(where, "not an object");
    if (r.contains("experiment_name") && r["experiment_name"].is_string()) {
      log.program = r["experiment_name"].get<std::string>();
      try {
        check_program(name, index, log.program);
      } catch (const InputError&) {
        bad(where, "experiment_name " + log.program +
                       ": calibrate fits AllReduce closed forms (use all_reduce_perf's output)");
      }
    }
    auto number_at = [&](const nlohmann::json& obj, const char* key, const std::string& path) {
      if (!obj.contains(key) || !obj[key].is_number() || obj[key].get<double>() < 0)
        bad(path, std::string("\"") + key + "\" missing or not a number >= 0");
      return obj[key].get<double>();
    };
    NcclTestsRow row;
    row.line = index;
    auto whole_at = [&](const nlohmann::json& obj, const char* key, const std::string& path) {
      const double v = number_at(obj, key, path);
      if (!(v < 0x1p64)) bad(path, std::string("\"") + key + "\" is too large");
      if (v != std::floor(v)) bad(path, std::string("\"") + key + "\" is not a whole number");
      return static_cast<std::uint64_t>(v);
    };
    row.bytes = whole_at(r, "size", where);
    if (r.contains("count")) row.count = whole_at(r, "count", where);
    row.type = r.value("type", std::string());
    row.redop = r.value("redop", std::string());
    if (!r.contains("out_of_place") || !r["out_of_place"].is_object())
      bad(where, "no \"out_of_place\" object");
    const nlohmann::json& o = r["out_of_place"];
    const std::string op = where + ".out_of_place";
    row.time_us = o.contains("time") ? number_at(o, "time", op) : number_at(o, "cpu_time", op);
    if (row.time_us <= 0) bad(op, "\"time\" must be > 0");
    if (const std::string p = time_problem(row.time_us); !p.empty())
      bad(op, "\"time\" " + nlohmann::json(row.time_us).dump() + " us is " + p);
    if (const std::string p = redop_problem(row.redop); !p.empty()) bad(where, p);
    if (o.contains("alg_bw")) row.algbw_GBps = number_at(o, "alg_bw", op);
    if (o.contains("bus_bw")) row.busbw_GBps = number_at(o, "bus_bw", op);
    if (o.contains("nwrong") && !o["nwrong"].is_null()) row.wrong = number_at(o, "nwrong", op);
    log.rows.push_back(std::move(row));
  }
  return log;
}

}  // namespace

bool looks_like_nccl_tests(std::string_view text) {
  const std::size_t first = text.find_first_not_of(" \t\r\n");
  if (first == std::string_view::npos) return false;
  if (text[first] == '{') return text.find("\"results\"") != std::string_view::npos;
  std::size_t pos = 0;
  while (pos < text.size()) {
    const std::size_t eol = std::min(text.find('\n', pos), text.size());
    if (header_columns(text.substr(pos, eol - pos))) return true;
    pos = eol + 1;
  }
  return false;
}

std::string nccl_version_from_code(long code) {
  if (code <= 0) return std::to_string(code);
  long major = 0, minor = 0, patch = 0;
  if (code >= 20900) {
    major = code / 10000;
    minor = code / 100 % 100;
    patch = code % 100;
  } else {
    major = code / 1000;
    minor = code / 100 % 10;
    patch = code % 100;
  }
  return std::to_string(major) + "." + std::to_string(minor) + "." + std::to_string(patch);
}

NcclTestsLog parse_nccl_tests(std::string_view text, std::string_view name) {
  // A NUL byte ends a C string: numbers read up to it would silently drop what follows. Not in
  // a log nccl-tests writes (a binary file, or a log cut by a crash): refused where it is.
  if (const std::size_t nul = text.find('\0'); nul != std::string_view::npos) {
    const std::string_view before = text.substr(0, nul);
    const std::size_t line = 1 + static_cast<std::size_t>(std::count(before.begin(), before.end(), '\n'));
    const std::size_t bol = before.rfind('\n');
    const std::size_t column = nul - (bol == std::string_view::npos ? 0 : bol + 1) + 1;
    throw InputError(std::string(name) + ":" + std::to_string(line) + ":" + std::to_string(column) +
                     ": a NUL byte (an nccl-tests log is text)");
  }
  const std::size_t first = text.find_first_not_of(" \t\r\n");
  NcclTestsLog log = first != std::string_view::npos && text[first] == '{' ? parse_json(text, name)
                                                                           : parse_text(text, name);
  if (log.rows.empty()) {
    throw InputError(std::string(name) + ": no result rows in this nccl-tests " +
                     (log.json ? "JSON" : "log") + " (did the run finish?)");
  }
  return log;
}

std::vector<MeasuredRun> nccl_tests_runs(const NcclTestsLog& log, std::string_view name,
                                         const std::string& algorithm, std::optional<int> ranks,
                                         std::vector<SkippedRows>& skipped) {
  int n = 0;
  if (log.ranks && ranks && *log.ranks != *ranks) {
    throw InputError(std::string(name) + ": the log ran " + std::to_string(*log.ranks) +
                     " ranks, --log-ranks says " + std::to_string(*ranks));
  }
  if (log.ranks) {
    n = *log.ranks;
  } else if (ranks) {
    n = *ranks;
  } else {
    throw InputError(std::string(name) +
                     ": the log does not say how many ranks ran (no \"#  Rank\" device lines); "
                     "give --log-ranks N");
  }
  auto skip = [&](const std::string& reason, int line) {
    for (SkippedRows& s : skipped) {
      if (s.reason == reason) {
        s.lines.push_back(line);
        return;
      }
    }
    skipped.push_back({reason, {line}});
  };
  std::string device = log.device.empty() ? std::string("nccl-tests") : log.device;
  if (!log.nccl_version.empty()) device += ", NCCL " + log.nccl_version;
  std::vector<MeasuredRun> runs;
  for (const NcclTestsRow& r : log.rows) {
    if (r.bytes == 0) {
      skip("size 0 rows", r.line);
      continue;
    }
    if (r.wrong && *r.wrong > 0) {
      skip("rows with wrong elements (#wrong > 0)", r.line);
      continue;
    }
    MeasuredRun run;
    run.line = r.line;
    schema::ResultRow& row = run.row;
    row.source = schema::ResultSource::measured;
    row.algorithm = algorithm;
    row.ranks = n;
    row.bytes = Bytes{r.bytes};
    row.dtype = r.type;
    row.time = Seconds{r.time_us * 1e-6};
    row.after_last_arrival = row.time;
    schema::set_bandwidths(row);
    if (r.wrong) row.wrong = static_cast<std::uint64_t>(*r.wrong);
    row.device = device;
    row.nccl_version = log.nccl_version;
    row.options = "";  // the closed form's defaults model NCCL's AllReduce
    row.transport = "nccl";
    runs.push_back(std::move(run));
  }
  return runs;
}

}  // namespace ssim::calib
