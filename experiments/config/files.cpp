#include "experiments/config/files.hpp"

#include <fstream>
#include <iostream>

#include "algorithms/schedule_bin.hpp"
#include "common/error.hpp"
#include "common/input_file.hpp"
#include "experiments/config/resource_check.hpp"

namespace ssim::experiments {

alg::StreamedVerify verify_schedule_input(const std::string& path, const MemoryBudget& budget,
                                          const std::function<void(const alg::Schedule&)>& before,
                                          const std::function<void(const alg::Round&)>& each) {
  const std::string name = path == "-" ? "<stdin>" : path;
  std::ifstream file;
  if (path != "-") {
    check_input_file(path, /*size_limit=*/false);
    file.open(path, std::ios::binary);
    if (!file) throw InputError(path + ": cannot open file for reading");
  }
  const alg::StreamedVerify v = alg::verify_schedule_file(
      path == "-" ? std::cin : file, name,
      [&](const alg::Schedule& header) {
        check_verify_memory(budget, header.ranks, header.chunks);
        if (before) before(header);
      },
      each);
  if (!v.result.ok()) throw InputError(name + ": " + v.result.error->to_string());
  return v;
}

alg::Schedule load_schedule_file(const std::string& path, const MemoryBudget& budget,
                                 double bytes_per_transfer, const std::string& what) {
  const std::string name = path == "-" ? "<stdin>" : path;
  alg::Schedule s;
  double transfers = 0, checked = 0;
  const alg::StreamedVerify v = verify_schedule_input(
      path, budget,
      [&](const alg::Schedule&) {
        s.rounds.clear();  // read again after the fast path gave up: from the first round
        transfers = checked = 0;
      },
      [&](const alg::Round& round) {
        transfers += static_cast<double>(round.transfers.size());
        if (transfers > 2 * checked + 65536) {  // checked as it doubles
          budget.require(transfers * bytes_per_transfer,
                         what + " the schedule of " + name + " (" +
                             std::to_string(static_cast<long long>(transfers)) +
                             " transfers and more)",
                         "give a smaller schedule");
          checked = transfers;
        }
        s.rounds.push_back(round);
      });
  budget.require(transfers * bytes_per_transfer,
                 what + " the schedule of " + name + " (" +
                     std::to_string(static_cast<long long>(transfers)) + " transfers)",
                 "give a smaller schedule");
  std::vector<alg::Round> rounds = std::move(s.rounds);
  s = v.header;
  s.rounds = std::move(rounds);
  return s;
}

std::string read_input(const std::string& path) { return read_input_file(path); }

}  // namespace ssim::experiments
