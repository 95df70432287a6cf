// The input files of the commands beside the YAML: schedule files (JSON or binary, read
// streamed and verified round by round, within a memory budget) and whole text files, each
// from a path or "-" for stdin.
//
//   alg::Schedule s = load_schedule_file("plan.json", MemoryBudget::from_flag(""), 40, "reading");
//   std::string text = read_input("-");                         // stdin
#pragma once

#include <functional>
#include <string>

#include "algorithms/schedule_json.hpp"
#include "common/memory_budget.hpp"

namespace ssim::experiments {

// A schedule file of `verify`, `lower --schedule` and `schedule --from` (JSON or binary by its
// first bytes; "-" for stdin), read streamed and verified round by round: InputError naming the
// file if it cannot be read or is not a correct schedule, ResourceError if the verifier's state
// would not fit `budget` (check_verify_memory, on the header before `before` sees it). `before`
// and `each` as for alg::verify_schedule_file.
alg::StreamedVerify verify_schedule_input(
    const std::string& path, const MemoryBudget& budget,
    const std::function<void(const alg::Schedule& header)>& before = {},
    const std::function<void(const alg::Round& round)>& each = {});

// A schedule file of `lower --schedule` and `schedule --from` (JSON or binary; "-" for stdin),
// read streamed, verified round by round (InputError with the verifier's message if it is not a
// correct schedule) and kept; refused (ResourceError) as it grows beyond `budget` at
// `bytes_per_transfer` (what the caller will build from it, the kept schedule included).
alg::Schedule load_schedule_file(const std::string& path, const MemoryBudget& budget,
                                 double bytes_per_transfer, const std::string& what);

// Reads a whole file, or stdin for "-" (common/input_file.hpp: regular files within the size
// limit). Throws InputError naming the path when it cannot.
std::string read_input(const std::string& path);

}  // namespace ssim::experiments
