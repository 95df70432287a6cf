#include "experiments/config/data_files.hpp"

#include <cstdlib>
#include <filesystem>
#include <system_error>

namespace ssim::exp {

namespace {

namespace fs = std::filesystem;

// The running binary's folder, or empty when /proc/self/exe cannot be read.
fs::path exe_dir() {
  std::error_code ec;
  const fs::path exe = fs::read_symlink("/proc/self/exe", ec);
  return ec ? fs::path() : exe.parent_path();
}

// Whether `inner` is `outer` or lies below it (both made canonical where they exist).
bool is_under(const fs::path& inner, const fs::path& outer) {
  std::error_code ec;
  const fs::path a = fs::weakly_canonical(inner, ec);
  if (ec) return false;
  const fs::path b = fs::weakly_canonical(outer, ec);
  if (ec) return false;
  auto ai = a.begin();
  for (auto bi = b.begin(); bi != b.end(); ++bi, ++ai) {
    if (bi->empty()) continue;  // a trailing separator
    if (ai == a.end() || *ai != *bi) return false;
  }
  return true;
}

}  // namespace

std::vector<std::string> data_dirs() {
  if (const char* env = std::getenv("STRAGGLESIM_DATA_DIR"); env != nullptr && *env != '\0')
    return {env};
  std::vector<std::string> dirs;
  const fs::path exe = exe_dir();
  if (!exe.empty()) {
    dirs.push_back((exe.parent_path() / "share" / "stragglesim").string());
    if (is_under(exe, STRAGGLESIM_BINARY_ROOT)) dirs.emplace_back(STRAGGLESIM_SOURCE_ROOT);
  }
  return dirs;
}

std::string data_file(const std::string& relative) {
  std::vector<std::string> names{relative};
  if (relative == "plot.py") names.emplace_back("experiments/plot.py");
  for (const std::string& dir : data_dirs()) {
    for (const std::string& name : names) {
      const fs::path p = fs::path(dir) / name;
      std::error_code ec;
      if (fs::is_regular_file(p, ec)) return p.string();
    }
  }
  return "";
}

std::string data_dirs_text() {
  std::string text;
  for (const std::string& d : data_dirs()) text += (text.empty() ? "" : ", ") + d;
  return text.empty() ? "no folder (/proc/self/exe unreadable)" : text;
}

}  // namespace ssim::exp
