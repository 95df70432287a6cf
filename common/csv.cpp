#include "common/csv.hpp"

#include <istream>
#include <utility>

#include "common/error.hpp"

namespace ssim {
namespace {

bool blank(char c) { return c == ' ' || c == '\t'; }

}  // namespace

CsvReader::CsvReader(std::istream& in, std::string source, CsvOptions options)
    : in_(in), source_(std::move(source)), options_(options) {}

bool CsvReader::next_line(std::string& line) {
  if (!std::getline(in_, line)) return false;
  ++line_;
  if (!line.empty() && line.back() == '\r') line.pop_back();
  return true;
}

void CsvReader::fail_pos(CsvPosition at, const std::string& message) const {
  throw InputError(source_ + ":" + std::to_string(at.line) + ":" + std::to_string(at.column) +
                   ": " + message);
}

void CsvReader::fail(const CsvRecord& record, const std::string& message) const {
  throw InputError(source_ + ":" + std::to_string(record.line) + ": " + message);
}

void CsvReader::fail_at(const CsvRecord& record, std::size_t field,
                        const std::string& message) const {
  SSIM_CHECK(field < record.positions.size(), "CSV field index out of range");
  fail_pos(record.positions[field], message);
}

bool CsvReader::next(CsvRecord& record) {
  std::string text;
  while (next_line(text)) {
    record.line = line_;
    record.fields.clear();
    record.positions.clear();
    if (options_.comments) {
      std::size_t first = 0;
      while (first < text.size() && blank(text[first])) ++first;
      if (first < text.size() && text[first] == '#') continue;
    }
    std::size_t i = 0;
    while (true) {  // one field per pass
      if (options_.trim) {
        while (i < text.size() && blank(text[i])) ++i;
      }
      record.positions.push_back({line_, static_cast<int>(i) + 1});
      std::string field;
      if (i < text.size() && text[i] == '"') {
        const CsvPosition open = record.positions.back();
        ++i;
        while (true) {
          if (i == text.size()) {
            if (!next_line(text)) fail_pos(open, "quoted field not closed");
            field += '\n';
            i = 0;
            continue;
          }
          const char c = text[i++];
          if (c != '"') {
            field += c;
          } else if (i < text.size() && text[i] == '"') {
            field += '"';
            ++i;
          } else {
            break;
          }
        }
        if (options_.trim) {
          while (i < text.size() && blank(text[i])) ++i;
        }
        if (i < text.size() && text[i] != ',') {
          fail_pos({line_, static_cast<int>(i) + 1},
                   "unexpected text after a closing quote (a quote inside a quoted field is "
                   "written \"\")");
        }
      } else {
        const std::size_t start = i;
        while (i < text.size() && text[i] != ',') {
          if (text[i] == '"') {
            fail_pos({line_, static_cast<int>(i) + 1},
                     "quote inside an unquoted field (quote the whole field)");
          }
          ++i;
        }
        std::size_t end = i;
        if (options_.trim) {
          while (end > start && blank(text[end - 1])) --end;
        }
        field.assign(text, start, end - start);
      }
      record.fields.push_back(std::move(field));
      if (i == text.size()) break;
      ++i;  // the ','
    }
    if (record.fields.size() == 1 && record.fields[0].empty()) continue;
    return true;
  }
  return false;
}

std::vector<CsvRecord> read_csv(std::istream& in, const std::string& source, CsvOptions options) {
  CsvReader reader(in, source, options);
  std::vector<CsvRecord> records;
  CsvRecord r;
  while (reader.next(r)) records.push_back(r);
  return records;
}

std::map<std::string, std::size_t> csv_column_index(const std::string& source,
                                                    const CsvRecord& header) {
  std::map<std::string, std::size_t> index;
  for (std::size_t i = 0; i < header.fields.size(); ++i) {
    std::string_view name = header.fields[i];
    while (!name.empty() && (name.front() == ' ' || name.front() == '\t')) name.remove_prefix(1);
    while (!name.empty() && (name.back() == ' ' || name.back() == '\t')) name.remove_suffix(1);
    const auto [at, added] = index.emplace(std::string(name), i);
    if (!added) {
      const CsvPosition p = i < header.positions.size() ? header.positions[i]
                                                        : CsvPosition{header.line, 0};
      throw InputError(source + ":" + std::to_string(p.line) + ":" + std::to_string(p.column) +
                       ": column '" + printable(name) + "' is given twice (columns " +
                       std::to_string(at->second + 1) + " and " + std::to_string(i + 1) +
                       "): which one holds the value is ambiguous");
    }
  }
  return index;
}

}  // namespace ssim
