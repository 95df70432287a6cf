#include "schema/result_csv.hpp"

#include <algorithm>
#include <charconv>
#include <cmath>
#include <ctime>
#include <istream>
#include <map>
#include <ostream>
#include <set>
#include <system_error>

#include "common/csv.hpp"
#include "common/error.hpp"

namespace ssim::schema {

std::string csv_number(double v) {
  char buf[64];
  const auto [end, ec] = std::to_chars(buf, buf + sizeof buf, v);
  SSIM_CHECK(ec == std::errc(), "to_chars(double) failed");
  return std::string(buf, end);
}

std::string csv_field(const std::string& field) {
  if (field.find_first_of(",\"\r\n") == std::string::npos) return field;
  std::string out = "\"";
  for (char c : field) {
    if (c == '"') out += '"';
    out += c;
  }
  return out + "\"";
}

namespace {

class FieldParser {
 public:
  FieldParser(std::string_view name, int line) : name_(name), line_(line) {}

  [[noreturn]] void fail(std::string_view column, const std::string& value,
                         std::string_view expected) const {
    throw InputError(std::string(name_) + ":" + std::to_string(line_) + ": column " +
                     std::string(column) + ": bad value '" + value + "' (expected " +
                     std::string(expected) + ")");
  }

  template <class T>
  T integer(std::string_view column, const std::string& v) const {
    T out{};
    const auto [end, ec] = std::from_chars(v.data(), v.data() + v.size(), out);
    if (v.empty() || ec != std::errc() || end != v.data() + v.size()) fail(column, v, "an integer");
    return out;
  }

  double real(std::string_view column, const std::string& v) const {
    double out = 0;
    const auto [end, ec] = std::from_chars(v.data(), v.data() + v.size(), out);
    if (v.empty() || ec != std::errc() || end != v.data() + v.size() || !std::isfinite(out))
      fail(column, v, "a number");
    return out;
  }

 private:
  std::string_view name_;
  int line_;
};

}  // namespace

std::string_view to_string(ResultSource source) {
  return source == ResultSource::measured ? "measured" : "simulated";
}

double allreduce_bus_factor(int ranks) {
  if (ranks < 1) throw InputError("bus factor needs ranks >= 1, got " + std::to_string(ranks));
  return 2.0 * (ranks - 1) / ranks;
}

void set_bandwidths(ResultRow& row) {
  const double t = row.after_last_arrival.value;
  row.algbw = BytesPerSecond{t > 0 ? static_cast<double>(row.bytes.value) / t : 0.0};
  row.busbw = BytesPerSecond{row.algbw.value * allreduce_bus_factor(row.ranks)};
}

std::string canonical_options(const std::map<std::string, std::string>& options) {
  std::string out;
  for (const auto& [key, value] : options) {
    if (key.empty() || key.find_first_of("=;") != std::string::npos)
      throw InputError("option name '" + key + "' is empty or holds '=' or ';'");
    if (value.find(';') != std::string::npos)
      throw InputError("option " + key + "'s value '" + value + "' holds ';'");
    out += (out.empty() ? "" : ";") + key + "=" + value;
  }
  return out;
}

std::map<std::string, std::string> parse_options(std::string_view text) {
  std::map<std::string, std::string> out;
  if (text.empty()) return out;
  std::size_t start = 0;
  while (true) {
    const std::size_t end = std::min(text.find(';', start), text.size());
    const std::string_view item = text.substr(start, end - start);
    const std::size_t eq = item.find('=');
    if (eq == std::string_view::npos)
      throw InputError("option '" + std::string(item) + "' is not key=value");
    const std::string key(item.substr(0, eq));
    if (key.empty()) throw InputError("option '" + std::string(item) + "' has no name");
    if (!out.emplace(key, std::string(item.substr(eq + 1))).second)
      throw InputError("option " + key + " given twice");
    if (end == text.size()) break;
    start = end + 1;
  }
  return out;
}

std::string utc_timestamp_now() {
  const std::time_t now = std::time(nullptr);
  std::tm tm{};
  gmtime_r(&now, &tm);
  char buf[32];
  std::strftime(buf, sizeof buf, "%Y-%m-%dT%H:%M:%SZ", &tm);
  return buf;
}

const std::vector<std::string>& result_csv_columns() {
  static const std::vector<std::string> columns = {"source",
                                                   "algorithm",
                                                   "ranks",
                                                   "bytes",
                                                   "dtype",
                                                   "delay_s",
                                                   "straggler",
                                                   "iteration",
                                                   "time_s",
                                                   "after_last_arrival_s",
                                                   "algbw_GBps",
                                                   "busbw_GBps",
                                                   "wrong",
                                                   "device",
                                                   "timestamp",
                                                   "nccl_version",
                                                   "nccl_algo",
                                                   "nccl_proto",
                                                   "arrival_spread_s",
                                                   "options",
                                                   "transport"};
  return columns;
}

ResultCsvWriter::ResultCsvWriter(std::ostream& out) : out_(out) {
  const auto& columns = result_csv_columns();
  for (std::size_t i = 0; i < columns.size(); ++i) out_ << (i ? "," : "") << columns[i];
  out_ << "\n";
}

void ResultCsvWriter::write(const ResultRow& row) { out_ << format_result_row(row) << "\n"; }

std::string format_result_row(const ResultRow& row) {
  const std::vector<std::string> fields = {
      std::string(to_string(row.source)),
      csv_field(row.algorithm),
      std::to_string(row.ranks),
      std::to_string(row.bytes.value),
      csv_field(row.dtype),
      csv_number(row.delay.value),
      row.straggler ? std::to_string(*row.straggler) : std::string(),
      std::to_string(row.iteration),
      csv_number(row.time.value),
      csv_number(row.after_last_arrival.value),
      csv_number(row.algbw.value / 1e9),
      csv_number(row.busbw.value / 1e9),
      row.wrong ? std::to_string(*row.wrong) : std::string(),
      csv_field(row.device),
      csv_field(row.timestamp),
      csv_field(row.nccl_version),
      csv_field(row.nccl_algo),
      csv_field(row.nccl_proto),
      csv_number(row.time.value - row.after_last_arrival.value),
      csv_field(row.options.value_or("")),
      csv_field(row.transport)};
  std::string out;
  for (std::size_t i = 0; i < fields.size(); ++i) out += (i ? "," : "") + fields[i];
  return out;
}

std::vector<ResultRow> read_result_csv(std::istream& in, std::string_view name) {
  CsvReader csv(in, std::string(name));
  CsvRecord head;
  if (!csv.next(head))
    throw InputError(std::string(name) + ": empty file (expected a result CSV header)");
  const std::vector<std::string>& header = head.fields;
  // A column given twice is refused (common/csv.hpp), never the first one taken silently.
  const std::map<std::string, std::size_t> index = csv_column_index(std::string(name), head);
  // The columns added after the first version (from nccl_version on) may be missing;
  // arrival_spread_s is time_s - after_last_arrival_s and is not read back.
  const std::set<std::string> optional = {"nccl_version",     "nccl_algo", "nccl_proto",
                                          "arrival_spread_s", "options",   "transport"};
  constexpr std::size_t kAbsent = static_cast<std::size_t>(-1);
  std::vector<std::size_t> at;
  for (const std::string& column : result_csv_columns()) {
    auto it = index.find(column);
    if (it == index.end() && optional.count(column)) {
      at.push_back(kAbsent);
      continue;
    }
    if (it == index.end()) {
      throw InputError(std::string(name) + ":1: missing column '" + column +
                       "' (a result CSV has the columns of schema/result_csv.hpp)");
    }
    at.push_back(it->second);
  }

  std::vector<ResultRow> rows;
  CsvRecord record;
  while (csv.next(record)) {
    const std::vector<std::string>& f = record.fields;
    if (f.size() != header.size()) {
      csv.fail(record, std::to_string(f.size()) + " fields, the header has " +
                           std::to_string(header.size()));
    }
    const FieldParser p(name, record.line);
    const auto& columns = result_csv_columns();
    static const std::string kEmpty;
    auto get = [&](std::size_t c) -> const std::string& {
      return at[c] == kAbsent ? kEmpty : f[at[c]];
    };
    ResultRow r;
    if (get(0) == "measured") {
      r.source = ResultSource::measured;
    } else if (get(0) == "simulated") {
      r.source = ResultSource::simulated;
    } else {
      p.fail(columns[0], get(0), "measured or simulated");
    }
    r.algorithm = get(1);
    r.ranks = p.integer<int>(columns[2], get(2));
    r.bytes = Bytes{p.integer<std::uint64_t>(columns[3], get(3))};
    r.dtype = get(4);
    r.delay = Seconds{p.real(columns[5], get(5))};
    if (!get(6).empty()) r.straggler = p.integer<int>(columns[6], get(6));
    r.iteration = p.integer<int>(columns[7], get(7));
    r.time = Seconds{p.real(columns[8], get(8))};
    r.after_last_arrival = Seconds{p.real(columns[9], get(9))};
    r.algbw = BytesPerSecond{p.real(columns[10], get(10)) * 1e9};
    r.busbw = BytesPerSecond{p.real(columns[11], get(11)) * 1e9};
    if (!get(12).empty()) r.wrong = p.integer<std::uint64_t>(columns[12], get(12));
    r.device = get(13);
    r.timestamp = get(14);
    r.nccl_version = get(15);
    r.nccl_algo = get(16);
    r.nccl_proto = get(17);
    if (at[19] != kAbsent) {
      try {
        r.options = canonical_options(parse_options(get(19)));
      } catch (const InputError& e) {
        p.fail(columns[19], get(19), std::string("key=value;...: ") + e.what());
      }
    }
    r.transport = get(20);
    rows.push_back(std::move(r));
  }
  return rows;
}

}  // namespace ssim::schema
