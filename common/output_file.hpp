// Writing output files: the one writer every command of every executable uses, so that no output
// harms the machine and none is lost while the program says it succeeded.
//
// What a path given for output becomes:
//   - "-" (or ""): standard output.
//   - a symbolic link is followed to the file it names (at most 40 links);
//   - a path that does not exist, or a regular file: the text goes to a new temporary file in the
//     same folder (created exclusively: O_CREAT | O_EXCL), which is flushed, checked, fsync'd and
//     renamed over the path by commit(). The path holds its old content or the whole new one,
//     never a part; a failure removes the temporary and nothing else.
//   - a character device or a FIFO (/dev/stdout, a named pipe): written in place, never renamed
//     over and never removed.
//   - a directory, a block device or a socket: refused (InputError naming the path).
// Failing to create the file is an InputError (exit 1: a missing or read-only folder); a failed
// write (a full disk, a closed or full standard output, a short write) is an OutputError
// (exit 3) naming the file, or "standard output".
//
//   ssim::OutputFile out(path);            // InputError when it cannot be created
//   out.stream() << text;
//   out.commit();                          // OutputError when a write failed
//   ssim::write_output_file(path, text);   // the same in one call
//
// A file written as work goes (a journal) calls publish() once its first line is written: the
// temporary takes the final name and stays open for appending; OutputFile::append(path) opens an
// existing journal again.
//
// main() of each executable calls guard_standard_streams() first and check_standard_output()
// last: a closed descriptor 0-2 is never handed to an output file, and output to a full or
// closed standard output ends the program with exit 3.
#pragma once

#include <memory>
#include <ostream>
#include <string>
#include <string_view>

#include "common/error.hpp"

namespace ssim {

// A write that failed: exit 3 (the resource class), the message names the file.
class OutputError : public ResourceError {
 public:
  using ResourceError::ResourceError;
};

class OutputFile {
 public:
  explicit OutputFile(const std::string& path);
  // Opens an existing regular file (after following links) for appending; InputError unless it
  // is one. Nothing is ever removed on its behalf.
  static OutputFile append(const std::string& path);
  // Without commit(): closes the file and removes the temporary if this object created it and
  // has not renamed it yet. Never removes anything else.
  ~OutputFile();
  OutputFile(OutputFile&&) noexcept;
  OutputFile& operator=(OutputFile&&) = delete;
  OutputFile(const OutputFile&) = delete;
  OutputFile& operator=(const OutputFile&) = delete;

  std::ostream& stream();
  // Writes out what is buffered; OutputError when a write failed.
  void flush();
  // flush, fsync and rename the temporary to the path; the file stays open for more writes.
  void publish();
  // publish() if not done, then close; OutputError when anything failed.
  void commit();
  // The path as given, or "standard output".
  const std::string& name() const;
  bool is_stdout() const;

 private:
  struct State;
  OutputFile();
  void rename_into_place();
  std::unique_ptr<State> s_;
};

// OutputFile(path) << text, committed.
void write_output_file(const std::string& path, std::string_view text);

// Throws OutputError("standard output: write failed: ...") when std::cout or stdout failed or
// fails to flush now.
void flush_standard_output();

// Call first in main(): opens /dev/null on each of the descriptors 0, 1 and 2 that is closed
// (0 write-only, 1 and 2 read-only), so that output to a closed standard output fails (EBADF)
// rather than landing in the next file opened; and gives std::cout a buffer of its own on
// descriptor 1 that keeps the reason of a failed write (C stdio is not used for stdout).
void guard_standard_streams();

// Call last in main() with the exit code the program would return: flushes standard output and
// closes it; when that fails and `exit_code` is 0, prints "PROGRAM: error: standard output:
// write failed: WHY" to `err` and returns kExitResource, else returns `exit_code`.
int check_standard_output(std::string_view program, std::ostream& err, int exit_code);

}  // namespace ssim
