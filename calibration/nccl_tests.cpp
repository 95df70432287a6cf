#include "calibration/nccl_tests.hpp"

#include <algorithm>
#include <cctype>
#include <charconv>
#include <cmath>
#include <cstdio>
#include <nlohmann/json.hpp>
#include <sstream>
#include <tuple>

#include "common/error.hpp"
#include "common/json_dom.hpp"
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

// Half the last printed digit of a number as nccl-tests prints it ("0.01" -> 0.005, "123" ->
// 0.5, "1.5e+04" -> 500): the value before printing lies within that of the printed one.
double print_rounding(const std::string& s) {
  const std::size_t e = s.find_first_of("eE");
  const std::string mantissa = s.substr(0, e);
  int exponent = 0;
  if (e != std::string::npos) {
    std::string_view rest(s);
    rest.remove_prefix(e + 1);
    if (!rest.empty() && rest.front() == '+') rest.remove_prefix(1);
    std::from_chars(rest.data(), rest.data() + rest.size(), exponent);  // checked by number()
  }
  const std::size_t dot = mantissa.find('.');
  const int decimals = dot == std::string::npos ? 0 : static_cast<int>(mantissa.size() - dot - 1);
  return 0.5 * std::pow(10.0, exponent - decimals);
}

// JSON numbers are written with %lf (six decimals).
constexpr double kJsonRounding = 0.5e-6;

std::string printf_ratio(double v) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.4g", v);
  return buf;
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
  if (redop == "none") {
    return "redop none: a collective without a reduction (all_gather_perf, alltoall_perf, "
           "broadcast_perf, ...); stragglesim reads AllReduce logs (all_reduce_perf -o sum)";
  }
  return "redop " + redop + ": stragglesim reads sum AllReduce logs (all_reduce_perf -o sum)";
}

// all_reduce_perf prints root -1 (no root); reduce_perf and broadcast_perf print theirs.
std::string root_problem(const std::string& root) {
  if (root.empty() || root == "-1") return "";
  return "root " + root +
         ": all_reduce_perf prints root -1; a rooted collective (reduce_perf, "
         "broadcast_perf) is not AllReduce";
}

// The text table's column positions, from its header line.
struct Columns {
  int size = -1, count = -1, type = -1, redop = -1, root = -1, time = -1, algbw = -1, busbw = -1,
      wrong = -1;
  // The in-place side: the second time/algbw/busbw/#wrong.
  int ip_time = -1, ip_algbw = -1, ip_busbw = -1, ip_wrong = -1;
  int needed() const {
    return std::max({size, count, type, redop, root, time, algbw, busbw, wrong}) + 1;
  }
  int needed_in_place() const { return std::max({ip_time, ip_algbw, ip_busbw, ip_wrong}) + 1; }
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
    // The first of a pair is out-of-place, the second in-place.
    auto pair = [i](int& out, int& in) {
      if (out < 0) {
        out = i;
      } else if (in < 0) {
        in = i;
      }
    };
    if (h == "size") first(c.size);
    if (h == "count") first(c.count);
    if (h == "type") first(c.type);
    if (h == "redop") first(c.redop);
    if (h == "root") first(c.root);
    if (h == "time" || h == "cputime") pair(c.time, c.ip_time);
    if (h == "algbw") pair(c.algbw, c.ip_algbw);
    if (h == "busbw") pair(c.busbw, c.ip_busbw);
    if (h == "#wrong" || h == "error") pair(c.wrong, c.ip_wrong);
  }
  if (c.time < 0) return std::nullopt;
  return c;
}

// "#  Rank  0 Group  0 Pid  40211 on dgx-h100-07 device  0 [0000:18:00] NVIDIA H100 80GB HBM3"
// (older versions without "Group"): the rank, rank 0's "HOST: NAME" ("" for other ranks), and
// whether nccl-tests cut the line ("..." at the end: a process's lines past 2048 characters).
struct RankLine {
  long long rank = 0;
  std::string device;
  bool cut = false;
};
std::optional<RankLine> rank_line(std::string_view line) {
  if (line.empty() || line.front() != '#') return std::nullopt;
  const std::vector<std::string> f = fields_of(line.substr(1));
  if (f.size() < 2 || f[0] != "Rank" || !all_digits(f[1])) return std::nullopt;
  RankLine r;
  const auto [end, ec] = std::from_chars(f[1].data(), f[1].data() + f[1].size(), r.rank);
  if (ec != std::errc() || end != f[1].data() + f[1].size()) r.rank = -1;  // beyond long long
  const std::string_view trimmed = trim(line, kWhitespace);
  r.cut = trimmed.size() >= 3 && trimmed.substr(trimmed.size() - 3) == "...";
  if (r.rank != 0) return r;
  const auto on = std::find(f.begin(), f.end(), "on");
  const std::size_t bracket = line.find(']');
  if (on == f.end() || on + 1 == f.end() || bracket == std::string_view::npos) return r;
  r.device = *(on + 1) + ": " + std::string(trim(line.substr(bracket + 1), kWhitespace));
  return r;
}

// The program a command line runs ("mpirun ... ./build/all_gather_perf -b 8"): the file name
// of a field that ends in _perf or _perf_mpi; "" when none does.
std::string command_program(const std::vector<std::string>& f) {
  for (const std::string& field : f) {
    const std::size_t slash = field.rfind('/');
    const std::string base = slash == std::string::npos ? field : field.substr(slash + 1);
    const bool word = !base.empty() && std::all_of(base.begin(), base.end(), [](char c) {
      return std::islower(static_cast<unsigned char>(c)) || c == '_' ||
             std::isdigit(static_cast<unsigned char>(c));
    });
    auto ends_with = [&](const char* tail) {
      const std::string t(tail);
      return base.size() > t.size() && base.compare(base.size() - t.size(), t.size(), t) == 0;
    };
    if (word && (ends_with("_perf") || ends_with("_perf_mpi"))) return base;
  }
  return "";
}

void check_program(std::string_view name, int line, const std::string& program) {
  std::string lower = lowercase(program);
  lower.erase(std::remove(lower.begin(), lower.end(), '_'), lower.end());
  if (lower.find("allreduce") == std::string::npos) {
    fail(name, line,
         "this is a log of " + program +
             ", not of all_reduce_perf: stragglesim compares and fits AllReduce (use "
             "all_reduce_perf's output)");
  }
}

NcclTestsLog parse_text(std::string_view text, std::string_view name) {
  NcclTestsLog log;
  std::optional<Columns> columns;
  std::vector<long long> listed;  // the ranks of the device lines, in order
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
    if (const auto r = rank_line(line)) {
      if (r->rank < 0 || r->rank >= kMaxLogRanks) {
        fail(name, line_no,
             "device line of rank " + fields_of(line.substr(1))[1] + ": more than " +
                 std::to_string(kMaxLogRanks) + " ranks");
      }
      if (log.device_lines == 0) log.ranks_line = line_no;
      ++log.device_lines;
      listed.push_back(r->rank);
      if (r->cut) log.listing_shortened = true;
      if (!r->device.empty()) log.device = r->device;
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
      // A command line kept with the log ("mpirun ... ./all_gather_perf -b 8 -e 8G").
      if (std::find(f.begin(), f.end(), "NCCL") == f.end()) {
        if (const std::string program = command_program(f); !program.empty()) {
          check_program(name, line_no, program);
          if (log.program.empty()) log.program = program;
          continue;
        }
      }
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
    if (const std::string p = redop_problem(row.redop); !p.empty()) fail(name, line_no, p);
    if (c.root >= 0) {
      if (const std::string p = root_problem(field(c.root)); !p.empty()) fail(name, line_no, p);
    }
    // One side's time, bandwidths and #wrong; `side` names it in messages ("" or "in-place ").
    auto times = [&](int time, int algbw, int busbw, int wrong, const std::string& side) {
      NcclTestsTimes t;
      const std::string time_column = side + "time";
      t.time_us = num(time, time_column.c_str());
      if (t.time_us <= 0)
        fail(name, line_no, "column " + time_column + ": bad value '0' (expected a time > 0)");
      if (const std::string p = time_problem(t.time_us); !p.empty())
        fail(name, line_no, "column " + time_column + ": '" + field(time) + "' us is " + p);
      if (algbw >= 0) {
        t.algbw_GBps = num(algbw, (side + "algbw").c_str());
        t.algbw_rounding = print_rounding(field(algbw));
      }
      if (busbw >= 0) {
        t.busbw_GBps = num(busbw, (side + "busbw").c_str());
        t.busbw_rounding = print_rounding(field(busbw));
      }
      if (wrong >= 0 && field(wrong) != "N/A") t.wrong = num(wrong, (side + "#wrong").c_str());
      return t;
    };
    row.out_of_place = times(c.time, c.algbw, c.busbw, c.wrong, "");
    // The in-place side where the header names it and the row has it (nccl-tests prints it
    // for every row; a table cut after the out-of-place columns is read without it).
    if (c.ip_time >= 0 && static_cast<int>(f.size()) >= c.needed_in_place())
      row.in_place = times(c.ip_time, c.ip_algbw, c.ip_busbw, c.ip_wrong, "in-place ");
    log.rows.push_back(std::move(row));
  }
  if (log.device_lines > kMaxLogRanks) {
    throw InputError(std::string(name) + ": " + std::to_string(log.device_lines) +
                     " \"#  Rank\" lines, more than " + std::to_string(kMaxLogRanks) + " ranks");
  }
  // A complete listing names ranks 0..n-1 once each; anything else was shortened (by hand, or
  // cut by nccl-tests) and leaves the count to the rows.
  if (log.device_lines > 0) {
    std::vector<bool> seen(listed.size(), false);
    bool complete = !log.listing_shortened;
    for (const long long r : listed) {
      if (r >= static_cast<long long>(seen.size()) || seen[static_cast<std::size_t>(r)]) {
        complete = false;
        break;
      }
      seen[static_cast<std::size_t>(r)] = true;
    }
    if (complete) {
      log.ranks = log.device_lines;
      log.ranks_from = NcclTestsRanksFrom::device_lines;
    } else {
      log.listing_shortened = true;
      // At least the highest rank listed ran.
      log.rows_min_ranks = static_cast<int>(*std::max_element(listed.begin(), listed.end())) + 1;
    }
  }
  return log;
}

NcclTestsLog parse_json(std::string_view text, std::string_view name) {
  nlohmann::json doc;
  // nlohmann keeps the last of two equal keys: a duplicate is an error, as in every reader.
  try {
    doc = parse_json_unique_keys(text, [name](const std::string& /*path*/, const std::string& key) {
      throw InputError(std::string(name) + ": duplicate key \"" + key + "\"");
    });
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
      log.ranks_from = NcclTestsRanksFrom::json_config;
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
                       ": not AllReduce; stragglesim compares and fits AllReduce (use "
                       "all_reduce_perf's output)");
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
    if (const std::string p = redop_problem(row.redop); !p.empty()) bad(where, p);
    if (r.contains("root") && r["root"].is_string()) {
      const std::string root(trim(r["root"].get<std::string>(), kWhitespace));
      if (const std::string p = root_problem(root); !p.empty()) bad(where, p);
    }
    auto times = [&](const char* key) {
      const nlohmann::json& o = r[key];
      const std::string op = where + "." + key;
      NcclTestsTimes t;
      t.time_us = o.contains("time") ? number_at(o, "time", op) : number_at(o, "cpu_time", op);
      if (t.time_us <= 0) bad(op, "\"time\" must be > 0");
      if (const std::string p = time_problem(t.time_us); !p.empty())
        bad(op, "\"time\" " + nlohmann::json(t.time_us).dump() + " us is " + p);
      if (o.contains("alg_bw")) t.algbw_GBps = number_at(o, "alg_bw", op);
      if (o.contains("bus_bw")) t.busbw_GBps = number_at(o, "bus_bw", op);
      t.algbw_rounding = t.busbw_rounding = kJsonRounding;
      if (o.contains("nwrong") && !o["nwrong"].is_null()) t.wrong = number_at(o, "nwrong", op);
      return t;
    };
    if (!r.contains("out_of_place") || !r["out_of_place"].is_object())
      bad(where, "no \"out_of_place\" object");
    row.out_of_place = times("out_of_place");
    if (r.contains("in_place") && r["in_place"].is_object()) row.in_place = times("in_place");
    log.rows.push_back(std::move(row));
  }
  return log;
}

// AllReduce's busbw / algbw in nccl-tests: 2(n-1)/n.
double allreduce_factor(long n) {
  return 2.0 * static_cast<double>(n - 1) / static_cast<double>(n);
}

// The busbw / algbw a side's printed bandwidths allow, within their print rounding; nullopt when
// they allow any (algbw printed as 0).
struct FactorRange {
  double lo = 0, hi = 0;
};
std::optional<FactorRange> factor_range(double algbw, double algbw_rounding, double busbw,
                                        double busbw_rounding) {
  if (algbw - algbw_rounding <= 0) return std::nullopt;
  constexpr double kSlack = 1e-9;  // the division's own rounding
  return FactorRange{
      std::max(0.0, (busbw - busbw_rounding) / (algbw + algbw_rounding)) * (1 - kSlack),
      (busbw + busbw_rounding) / (algbw - algbw_rounding) * (1 + kSlack)};
}

// The rank counts n in [1, kMaxLogRanks] with 2(n-1)/n in r (2(n-1)/n grows with n): [first,
// second], empty when first > second.
std::pair<int, int> ranks_in(const FactorRange& r) {
  constexpr int kMax = kMaxLogRanks;
  int a = 1;
  if (r.lo > 0) {
    if (r.lo >= 2) {
      a = kMax + 1;
    } else {
      a = static_cast<int>(std::min(std::ceil(2.0 / (2.0 - r.lo)), double{kMax + 1}));
      while (a > 1 && allreduce_factor(a - 1) >= r.lo) --a;
      while (a <= kMax && allreduce_factor(a) < r.lo) ++a;
    }
  }
  int b = kMax;
  if (r.hi < 2) {
    b = static_cast<int>(std::min(std::floor(2.0 / (2.0 - r.hi)), double{kMax}));
    while (b < kMax && allreduce_factor(b + 1) <= r.hi) ++b;
    while (b >= 1 && allreduce_factor(b) > r.hi) --b;
  }
  return {a, b};
}

std::string ranks_text(int a, int b) {
  if (a == b) return "n = " + std::to_string(a);
  if (b >= kMaxLogRanks) return "n >= " + std::to_string(a);
  return "n = " + std::to_string(a) + ".." + std::to_string(b);
}

std::string number_text(double v) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%g", v);
  return buf;
}

// "in-place busbw 21.08 / algbw 11.24 = 1.875, 2(n-1)/n for n = 16"
std::string factor_text(const std::string& side, double algbw, double busbw, int a, int b,
                        const FactorRange& r) {
  std::string s = side + "busbw " + number_text(busbw) + " / algbw " + number_text(algbw) + " = " +
                  printf_ratio(busbw / algbw);
  if (a <= b) return s + ", 2(n-1)/n for " + ranks_text(a, b);
  if (r.hi < 1 && r.lo > 0) {
    return s +
           ", below 1, which AllReduce's 2(n-1)/n is for no n (it is 0 or >= 1); (n-1)/n is "
           "what all_gather_perf and reduce_scatter_perf print: not an AllReduce log";
  }
  return s + ", which is 2(n-1)/n for no whole n (not an AllReduce log?)";
}

// The rank count from the rows where the log gave none, and every row checked against it.
void resolve_ranks(NcclTestsLog& log, std::string_view name) {
  // "file:line: ..." for text, "file: results[i]: ..." for JSON, as the parsers name rows.
  const auto fail_row = [&](int line, const std::string& what) {
    if (!log.json) fail(name, line, what);
    throw InputError(std::string(name) + ": results[" + std::to_string(line - 1) + "]: " + what);
  };
  int lo = log.rows_min_ranks, hi = kMaxLogRanks;
  int lo_line = log.listing_shortened ? log.ranks_line : 0, hi_line = 0;
  for (const NcclTestsRow& row : log.rows) {
    for (int side = 0; side < 2; ++side) {
      if (side == 1 && !row.in_place) continue;
      const NcclTestsTimes& t = side == 0 ? row.out_of_place : *row.in_place;
      const auto range =
          factor_range(t.algbw_GBps, t.algbw_rounding, t.busbw_GBps, t.busbw_rounding);
      if (!range) continue;
      const auto [a, b] = ranks_in(*range);
      const std::string what =
          factor_text(side == 0 ? "" : "in-place ", t.algbw_GBps, t.busbw_GBps, a, b, *range);
      if (log.ranks) {
        if (*log.ranks >= a && *log.ranks <= b) continue;
        const std::string count =
            log.ranks_from == NcclTestsRanksFrom::json_config
                ? "config.devices x nthreads x ngpus says " + std::to_string(*log.ranks) + " ranks"
                : "the log's device lines (line " + std::to_string(log.ranks_line) + ") list " +
                      std::to_string(*log.ranks) + " ranks";
        fail_row(row.line, what + "; " + count + ": the rows disagree with the log's rank count");
      }
      if (a > b) fail_row(row.line, what);
      if (std::max(lo, a) > std::min(hi, b)) {
        std::string before = ranks_text(lo, hi);
        std::string where;
        if (lo_line > 0) where += "line " + std::to_string(lo_line);
        if (hi_line > 0 && hi_line != lo_line)
          where += (where.empty() ? "line " : " and ") + std::to_string(hi_line);
        fail_row(row.line, what + "; the rows before it" +
                               (log.listing_shortened ? " and the device listing" : "") +
                               " allow " + before + (where.empty() ? "" : " (" + where + ")") +
                               ": the rows disagree on the rank count");
      }
      if (a > lo) {
        lo = a;
        lo_line = row.line;
      }
      if (b < hi) {
        hi = b;
        hi_line = row.line;
      }
    }
  }
  if (log.ranks) {
    log.rows_min_ranks = log.rows_max_ranks = *log.ranks;
    return;
  }
  log.rows_min_ranks = lo;
  log.rows_max_ranks = hi;
  if (lo == hi) {
    log.ranks = lo;
    log.ranks_from = NcclTestsRanksFrom::bandwidths;
    log.ranks_line = std::max(lo_line, hi_line);
  }
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

namespace {

// The first NCCL_ALGO=... / NCCL_PROTO=... of the text, with its line.
void find_nccl_settings(std::string_view text, NcclTestsLog& log) {
  int line = 1;
  std::size_t begin = 0;
  while (begin < text.size() && (log.nccl_algo_line == 0 || log.nccl_proto_line == 0)) {
    std::size_t end = text.find('\n', begin);
    if (end == std::string_view::npos) end = text.size();
    const std::string_view l = text.substr(begin, end - begin);
    for (auto [key, value, at] : {std::tuple{"NCCL_ALGO=", &log.nccl_algo, &log.nccl_algo_line},
                                  std::tuple{"NCCL_PROTO=", &log.nccl_proto, &log.nccl_proto_line}}) {
      const std::size_t k = l.find(key);
      if (*at != 0 || k == std::string_view::npos) continue;
      const std::size_t v = k + std::string_view(key).size();
      std::size_t e = v;
      while (e < l.size() && (std::isalnum(static_cast<unsigned char>(l[e])) || l[e] == '_' ||
                              l[e] == ',' || l[e] == '^' || l[e] == ':'))
        ++e;
      if (e == v) continue;
      *value = std::string(l.substr(v, e - v));
      *at = line;
    }
    begin = end + 1;
    ++line;
  }
}

std::string lower(std::string_view s) {
  std::string out(s);
  for (char& c : out) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return out;
}

}  // namespace

std::string nccl_algo_option(std::string_view value) {
  const std::string v = lower(value);
  if (v == "ring" || v == "tree" || v == "nvls") return v;
  if (v == "nvlstree" || v == "nvls_tree") return "nvls_tree";
  if (v == "collnetdirect" || v == "collnet_direct") return "collnet_direct";
  if (v == "collnetchain" || v == "collnet_chain") return "collnet_chain";
  return "";
}

std::string nccl_proto_option(std::string_view value) {
  const std::string v = lower(value);
  return v == "ll" || v == "ll128" || v == "simple" ? v : "";
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
  resolve_ranks(log, name);
  find_nccl_settings(text, log);
  return log;
}

std::string describe_ranks(const NcclTestsLog& log) {
  if (!log.ranks) return "an unknown number of ranks";
  const std::string n = std::to_string(*log.ranks) + " ranks";
  const std::string line = std::to_string(log.ranks_line);
  switch (log.ranks_from) {
    case NcclTestsRanksFrom::device_lines:
      return n + " (" + std::to_string(log.device_lines) + " device lines from line " + line + ")";
    case NcclTestsRanksFrom::json_config:
      return n + " (config: devices x nthreads x ngpus)";
    case NcclTestsRanksFrom::bandwidths:
      return n + " (busbw/algbw = 2(n-1)/n, fixed at line " + line +
             (log.listing_shortened ? "; the device listing is shortened" : "; no device lines") +
             ")";
    case NcclTestsRanksFrom::none:
      break;
  }
  return n;
}

std::vector<MeasuredRun> nccl_tests_runs(const NcclTestsLog& log, std::string_view name,
                                         const std::string& algorithm, std::optional<int> ranks,
                                         std::vector<SkippedRows>& skipped) {
  int n = 0;
  if (log.ranks && ranks && *log.ranks != *ranks) {
    throw InputError(std::string(name) + ": the log ran " + std::to_string(*log.ranks) +
                     " ranks, --log-ranks says " + std::to_string(*ranks) +
                     " (the log: " + describe_ranks(log) + ")");
  }
  const std::string allowed = ranks_text(log.rows_min_ranks, log.rows_max_ranks);
  if (log.ranks) {
    n = *log.ranks;
  } else if (ranks) {
    if (*ranks < log.rows_min_ranks || *ranks > log.rows_max_ranks) {
      throw InputError(std::string(name) + ": --log-ranks " + std::to_string(*ranks) +
                       ": the rows' busbw/algbw = 2(n-1)/n allow " + allowed);
    }
    n = *ranks;
  } else {
    throw InputError(std::string(name) +
                     ": the log does not say how many ranks ran (no complete \"#  Rank\" device "
                     "listing, and the rows' busbw/algbw = 2(n-1)/n allow " +
                     allowed + "); give --log-ranks N");
  }
  auto skip = [&](const std::string& reason, int line) { add_skipped(skipped, reason, line); };
  std::string device = log.device.empty() ? std::string("nccl-tests") : log.device;
  if (!log.nccl_version.empty()) device += ", NCCL " + log.nccl_version;
  std::vector<MeasuredRun> runs;
  for (const NcclTestsRow& r : log.rows) {
    if (r.bytes == 0) {
      skip("size 0 rows", r.line);
      continue;
    }
    if (r.out_of_place.wrong && *r.out_of_place.wrong > 0) {
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
    row.time = Seconds{r.out_of_place.time_us * 1e-6};
    row.after_last_arrival = row.time;
    schema::set_bandwidths(row);
    if (r.out_of_place.wrong) row.wrong = static_cast<std::uint64_t>(*r.out_of_place.wrong);
    row.device = device;
    row.nccl_version = log.nccl_version;
    row.options = "";  // the closed form's defaults model NCCL's AllReduce
    row.transport = "nccl";
    runs.push_back(std::move(run));
  }
  return runs;
}

}  // namespace ssim::calib
