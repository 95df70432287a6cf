#include "sim/reducing_switches.hpp"

#include <algorithm>
#include <string>
#include <utility>

#include "common/error.hpp"

namespace ssim::sim {

std::size_t ReducingSwitches::resolve(const alg::SwitchReduce& op, const int* map,
                                      std::size_t round, std::size_t j) {
  listed_.clear();
  for (const std::vector<int>* list : {&op.members, &op.receivers}) {
    for (int r : *list) {
      SSIM_CHECK(r >= 0 && r < ranks_, "switch reduction rank out of range");
      listed_.push_back(map ? map[r] : r);
    }
  }
  SSIM_CHECK(!op.members.empty() && !op.receivers.empty() && 0 <= op.chunk_begin &&
                 op.chunk_begin < op.chunk_end && op.chunk_end <= chunks_,
             "switch reduction out of range");
  std::ptrdiff_t index = -1;
  if (const auto known = index_of_.find(listed_); known != index_of_.end()) {
    index = known->second;
  } else {
    index = find_ports();
    if (memo_ints_ + listed_.size() <= kMemoInts) {
      memo_ints_ += listed_.size();
      index_of_.emplace(listed_, index);
    }
  }
  if (index < 0) {
    participants_ = listed_;
    std::sort(participants_.begin(), participants_.end());
    participants_.erase(std::unique(participants_.begin(), participants_.end()),
                        participants_.end());
    std::string list;
    for (std::size_t i = 0; i < participants_.size() && i < 8; ++i)
      list += (i ? ", " : "") + std::to_string(participants_[i]);
    if (participants_.size() > 8) list += ", ...";
    throw InputError("round " + std::to_string(round) + ", switch reduction " + std::to_string(j) +
                     ": topology '" + topology_.name +
                     "' has no reducing switch that joins ranks {" + list +
                     "} (give the switch a reduce: {bandwidth, latency} key)");
  }
  return static_cast<std::size_t>(index);
}

std::ptrdiff_t ReducingSwitches::find_ports() {
  const int sw = topology_.reducing_switch_of(listed_);
  if (sw < 0) return -1;
  std::size_t index = 0;
  while (index < ports_.size() && ports_[index].vertex != sw) ++index;
  if (index == ports_.size()) {
    const std::size_t ranks = static_cast<std::size_t>(ranks_);
    Ports p;
    p.vertex = sw;
    p.up.assign(ranks, -1);
    p.down.assign(ranks, -1);
    for (int l : topology_.in_links(sw)) {
      const int r = topology_.node(topology_.link(l).from).rank;
      if (r >= 0 && p.up[static_cast<std::size_t>(r)] < 0) p.up[static_cast<std::size_t>(r)] = l;
    }
    for (int l : topology_.out_links(sw)) {
      const int r = topology_.node(topology_.link(l).to).rank;
      if (r >= 0 && p.down[static_cast<std::size_t>(r)] < 0)
        p.down[static_cast<std::size_t>(r)] = l;
    }
    ports_.push_back(std::move(p));
  }
  return static_cast<std::ptrdiff_t>(index);
}

}  // namespace ssim::sim
