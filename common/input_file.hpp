// Reading input files safely: every file a user names is checked before it is read. Directories,
// devices (/dev/zero), pipes and sockets are refused by name, and so is a file larger than
// kMaxInputFileBytes; stdin ("-") is read up to the same limit.
//
//   check_input_file(path);                              // throws InputError "PATH: why"
//   const std::string text = read_input_file(path);      // or "-" for stdin
#pragma once

#include <cstdint>
#include <string>

namespace ssim {

// The largest input file read (256 MiB): far above any real config, schedule, trace or CSV,
// and small enough that reading it cannot exhaust memory.
inline constexpr std::uint64_t kMaxInputFileBytes = std::uint64_t{256} << 20;

// Throws InputError("PATH: why") unless `path` is an existing regular file of at most
// kMaxInputFileBytes that can be opened for reading. A reader that streams its input (memory
// independent of the file's size: `stragglesim verify`) passes size_limit = false.
void check_input_file(const std::string& path, bool size_limit = true);

// The whole file (checked as above), or stdin for "-" (at most kMaxInputFileBytes).
std::string read_input_file(const std::string& path);

}  // namespace ssim
