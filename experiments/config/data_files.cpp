#include "experiments/config/data_files.hpp"

#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <optional>
#include <system_error>

#include "common/error.hpp"
#include "common/suggest.hpp"

namespace ssim::experiments {

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

std::string& library_path() {
  static std::string path;
  return path;
}

}  // namespace

void set_library_path(const std::string& path) { library_path() = path; }

std::vector<std::string> data_dirs() {
  if (const char* env = std::getenv("STRAGGLESIM_DATA_DIR"); env != nullptr && *env != '\0')
    return {env};
  if (!library_path().empty()) {
    std::error_code ec;
    const fs::path lib = fs::absolute(library_path(), ec).parent_path();
    if (is_under(lib, STRAGGLESIM_BINARY_ROOT)) return {STRAGGLESIM_SOURCE_ROOT};
    for (fs::path a = lib; !a.empty(); a = a.parent_path()) {
      const fs::path share = a / "share" / "stragglesim";
      if (fs::is_directory(share, ec)) return {share.string()};
      if (a == a.parent_path()) break;
    }
    return {};
  }
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

std::string shipped_topology(const std::string& name) {
  if (name.empty() || name.find_first_of("/.") != std::string::npos) return "";
  const std::string p = data_file("configs/topologies/" + name + ".yaml");
  std::error_code ec;
  return p.empty() ? p : fs::absolute(p, ec).string();
}

std::vector<std::string> shipped_topology_names() {
  std::vector<std::string> names;
  for (const std::string& dir : data_dirs()) {
    std::error_code ec;
    for (const auto& f : fs::directory_iterator(fs::path(dir) / "configs" / "topologies", ec)) {
      if (f.path().extension() == ".yaml") names.push_back(f.path().stem().string());
    }
    if (!names.empty()) break;
  }
  std::sort(names.begin(), names.end());
  return names;
}

std::string topology_file_argument(const std::string& given, const std::string& flag) {
  std::error_code ec;
  if (fs::exists(given, ec)) return given;
  if (const std::string shipped = shipped_topology(given); !shipped.empty()) return shipped;
  std::string message = flag + " '" + given + "': no such file or shipped topology";
  if (given.find_first_of("/.") == std::string::npos) {
    if (const std::optional<std::string> near = closest_name(given, shipped_topology_names()))
      message += "; did you mean '" + *near + "'?";
  }
  throw InputError(message);
}

}  // namespace ssim::experiments
