// The one CSV reader of the project: every CSV the tool reads (result CSVs, calibration sweeps,
// delay sample files, delay traces) goes through it, so quoting, line endings, comments and
// error positions behave the same everywhere.
//
//   std::ifstream in("runs.csv");
//   CsvReader csv(in, "runs.csv", {.comments = true});
//   CsvRecord r;
//   while (csv.next(r)) {
//     if (r.fields.size() != 2) csv.fail(r, "expected 2 fields");          // "runs.csv:3: ..."
//     double v = parse(r.fields[1]);  // on error: csv.fail_at(r, 1, "not a number")
//   }                                                                     // "runs.csv:3:7: ..."
//
// Format (RFC 4180): fields separated by ',', records by a line break ("\n" or "\r\n"). A field
// that starts with '"' is quoted: it runs to the next lone '"', may hold ',', line breaks and
// '""' (one quote), and must be followed by ',' or the end of the record. A '"' inside an
// unquoted field, text after a closing quote and a quote left open at the end of the input are
// errors naming the source, line and column. A line break inside a quoted field reads as "\n".
// Lines and columns count from 1; a column counts bytes.
//
// Options: `comments` skips lines whose first non-blank character is '#' (outside a quoted
// field); `trim` removes spaces and tabs around every unquoted field. Blank records (one empty
// field after trimming) are always skipped.
#pragma once

#include <cstddef>
#include <iosfwd>
#include <map>
#include <string>
#include <vector>

namespace ssim {

struct CsvOptions {
  bool comments = false;
  bool trim = false;
};

struct CsvPosition {
  int line = 0;
  int column = 0;
};

struct CsvRecord {
  int line = 0;  // physical line the record starts on
  std::vector<std::string> fields;
  std::vector<CsvPosition> positions;  // where each field starts, one per field
};

class CsvReader {
 public:
  // `source` names the input in errors (a file name, "-" or "inline").
  CsvReader(std::istream& in, std::string source, CsvOptions options = {});

  // The next non-blank, non-comment record; false at the end of the input. InputError on a
  // malformed record.
  bool next(CsvRecord& record);

  const std::string& source() const { return source_; }
  // InputError "source:line: message", the line being the record's first.
  [[noreturn]] void fail(const CsvRecord& record, const std::string& message) const;
  // InputError "source:line:column: message" at the start of field `field`.
  [[noreturn]] void fail_at(const CsvRecord& record, std::size_t field,
                            const std::string& message) const;

 private:
  bool next_line(std::string& line);
  [[noreturn]] void fail_pos(CsvPosition at, const std::string& message) const;

  std::istream& in_;
  std::string source_;
  CsvOptions options_;
  int line_ = 0;  // physical lines read so far
};

// A header's columns by name (names trimmed of spaces and tabs): the one lookup every CSV reader
// with named columns uses. A name given twice is an InputError "source:line:column: column 'NAME'
// is given twice (columns I and J) ...": which one holds the value would be ambiguous.
std::map<std::string, std::size_t> csv_column_index(const std::string& source,
                                                    const CsvRecord& header);

// Every record of `in`, as CsvReader::next returns them.
std::vector<CsvRecord> read_csv(std::istream& in, const std::string& source,
                                CsvOptions options = {});

}  // namespace ssim
