// main() for the replay build of a libFuzzer harness (no libFuzzer, any compiler): runs
// LLVMFuzzerTestOneInput once on every file named, or on every file in a folder named, in
// sorted order. CI replays the seed corpora with it (ctest -L fuzz); a finding shows as an
// uncaught exception, a crash or a sanitizer report, with the file printed first.
//
//   fuzz_topology_replay fuzz/corpus/topology crash-1234
#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <iterator>
#include <string>
#include <vector>

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size);

int main(int argc, char** argv) {
  namespace fs = std::filesystem;
  std::vector<fs::path> files;
  for (int i = 1; i < argc; ++i) {
    const fs::path p(argv[i]);
    if (fs::is_directory(p)) {
      for (const auto& e : fs::directory_iterator(p)) {
        if (e.is_regular_file()) files.push_back(e.path());
      }
    } else if (fs::is_regular_file(p)) {
      files.push_back(p);
    } else {
      std::cerr << argv[0] << ": not a file or folder: " << p.string() << "\n";
      return 2;
    }
  }
  std::sort(files.begin(), files.end());
  if (files.empty()) {
    std::cerr << argv[0] << ": no input files\n";
    return 2;
  }
  for (const fs::path& f : files) {
    std::ifstream in(f, std::ios::binary);
    const std::string data((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
    if (!in.good() && !in.eof()) {
      std::cerr << argv[0] << ": cannot read " << f.string() << "\n";
      return 2;
    }
    std::cerr << "replay: " << f.string() << " (" << data.size() << " bytes)\n";
    LLVMFuzzerTestOneInput(reinterpret_cast<const std::uint8_t*>(data.data()), data.size());
  }
  std::cout << "replayed " << files.size() << " inputs\n";
  return 0;
}
