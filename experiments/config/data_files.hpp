// Where the shipped data (configs/, plot.py) lies for this binary:
//   1. $STRAGGLESIM_DATA_DIR when set (a folder holding configs/ and plot.py, or a source tree);
//   2. an installed binary (PREFIX/bin/stragglesim): PREFIX/share/stragglesim, found from
//      /proc/self/exe;
//   3. a binary run from its build tree: the source tree it was built from.
// A library loaded into another program (the Python module, python/core.cpp) names its own
// file with set_library_path(): 2 becomes A/share/stragglesim for the nearest folder A above it
// that has one (PREFIX for PREFIX/lib/python3.X/dist-packages/stragglesim/), 3 its build tree.
//   std::string yaml = ssim::experiments::data_file("configs/experiments/default.yaml");
#pragma once

#include <string>
#include <vector>

namespace ssim::experiments {

// The folders searched, in order (none of them need exist).
std::vector<std::string> data_dirs();

// The file of the library the data is looked up for, instead of /proc/self/exe (call it once,
// before any lookup).
void set_library_path(const std::string& path);

// `relative` (e.g. "configs/topologies/dgx_h100.yaml", "plot.py") under the first data folder
// that has it; "" when none has. "plot.py" is also found as experiments/plot.py of a source tree.
std::string data_file(const std::string& relative);

// The folders data_dirs() names, for messages: "A, B".
std::string data_dirs_text();

// A shipped topology by its name (`dgx_h100`: configs/topologies/dgx_h100.yaml of the first
// data folder that has it): its absolute path; "" when `name` is none (a name has no '/' and
// no '.').
std::string shipped_topology(const std::string& name);

// The shipped topologies' names, sorted (those of the first data folder that has any).
std::vector<std::string> shipped_topology_names();

// A topology given on the command line (validate --topology): `given` when it is a file, else
// the shipped topology of that name; InputError naming `flag` (with "did you mean" for a near
// miss of a shipped name) when it is neither.
std::string topology_file_argument(const std::string& given, const std::string& flag);

}  // namespace ssim::experiments
