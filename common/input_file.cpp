#include "common/input_file.hpp"

#include <filesystem>
#include <fstream>
#include <iostream>

#include "common/error.hpp"

namespace ssim {
namespace {

namespace fs = std::filesystem;

std::string limit_text() { return std::to_string(kMaxInputFileBytes >> 20) + " MiB"; }

// Reads at most the limit; more is an error rather than an unbounded read.
std::string read_capped(std::istream& in, const std::string& label) {
  std::string text;
  char buffer[1 << 16];
  while (in.read(buffer, sizeof buffer) || in.gcount() > 0) {
    text.append(buffer, static_cast<std::size_t>(in.gcount()));
    if (text.size() > kMaxInputFileBytes) {
      throw InputError(label + ": more than " + limit_text() + ", the limit on an input file");
    }
  }
  return text;
}

}  // namespace

void check_input_file(const std::string& path, bool size_limit) {
  std::error_code ec;
  const fs::file_status st = fs::status(path, ec);
  if (!fs::exists(st)) {
    throw InputError(path + ": cannot open file for reading (" +
                     (ec ? ec.message() : std::string("no such file")) + ")");
  }
  if (fs::is_directory(st)) throw InputError(path + ": is a directory, not a file");
  if (!fs::is_regular_file(st)) {
    throw InputError(
        path + ": not a regular file (a device, pipe or socket); give a file, or - for stdin");
  }
  const std::uintmax_t size = fs::file_size(path, ec);
  if (ec) throw InputError(path + ": cannot open file for reading (" + ec.message() + ")");
  if (size_limit && size > kMaxInputFileBytes) {
    throw InputError(path + ": " + std::to_string(size) + " bytes, over the " + limit_text() +
                     " limit on an input file");
  }
  if (!std::ifstream(path, std::ios::binary))
    throw InputError(path + ": cannot open file for reading");
}

std::string read_input_file(const std::string& path) {
  if (path == "-") return read_capped(std::cin, "<stdin>");
  check_input_file(path);
  std::ifstream in(path, std::ios::binary);
  if (!in) throw InputError(path + ": cannot open file for reading");
  return read_capped(in, path);
}

}  // namespace ssim
