#include "algorithms/schedule.hpp"

#include <charconv>

#include "algorithms/chunk_sizes.hpp"
#include "common/error.hpp"

namespace ssim::alg {

std::string_view to_string(Op op) { return op == Op::reduce ? "reduce" : "copy"; }

std::string_view to_string(Collective c) {
  switch (c) {
    case Collective::allreduce: return "allreduce";
    case Collective::reduce_scatter: return "reduce_scatter";
    case Collective::allgather: return "allgather";
  }
  return "?";
}

Op parse_op(std::string_view name) {
  if (name == "reduce") return Op::reduce;
  if (name == "copy") return Op::copy;
  throw InputError("unknown op '" + std::string(name) + "' (expected reduce or copy)");
}

Collective parse_collective(std::string_view name) {
  if (name == "allreduce") return Collective::allreduce;
  if (name == "reduce_scatter") return Collective::reduce_scatter;
  if (name == "allgather") return Collective::allgather;
  throw InputError("unknown collective '" + std::string(name) +
                   "' (expected allreduce, reduce_scatter or allgather)");
}

Schedule Schedule::make(Collective collective, std::string algorithm, int ranks, int chunks) {
  Schedule s;
  s.collective = collective;
  s.algorithm = std::move(algorithm);
  s.ranks = ranks;
  s.chunks = chunks;
  return s;
}

Round& Schedule::add_round(std::string phase) {
  rounds.push_back(Round{std::move(phase), {}, {}});
  return rounds.back();
}

bool Schedule::has_switch_reduces() const {
  for (const Round& r : rounds) {
    if (!r.switch_reduces.empty()) return true;
  }
  return false;
}

std::size_t Schedule::transfer_count() const {
  std::size_t total = 0;
  for (const Round& r : rounds) total += r.transfers.size();
  return total;
}

void Schedule::append(const Schedule& other) {
  SSIM_CHECK(other.ranks == ranks && other.chunks == chunks, "append needs equal ranks and chunks");
  rounds.insert(rounds.end(), other.rounds.begin(), other.rounds.end());
}

void Schedule::relabel(const std::vector<int>& perm) {
  SSIM_CHECK(static_cast<int>(perm.size()) == ranks, "relabel needs one entry per rank");
  std::vector<char> seen(perm.size(), 0);
  for (int p : perm) {
    SSIM_CHECK(p >= 0 && p < ranks && !seen[p], "relabel needs a permutation");
    seen[p] = 1;
  }
  for (Round& round : rounds) {
    for (Transfer& t : round.transfers) {
      t.src = perm[t.src];
      t.dst = perm[t.dst];
    }
    for (SwitchReduce& g : round.switch_reduces) {
      for (int& m : g.members) m = perm[m];
      for (int& r : g.receivers) r = perm[r];
    }
  }
  if (straggler) straggler = perm[*straggler];
  for (int& r : late) r = perm[r];
}

ByteRange chunk_bytes(std::uint64_t total_bytes, int chunks, int chunk_begin, int chunk_end) {
  SSIM_CHECK(chunks > 0 && 0 <= chunk_begin && chunk_begin <= chunk_end && chunk_end <= chunks,
             "chunk range out of bounds");
  return ChunkSizes(total_bytes, chunks).range(chunk_begin, chunk_end);
}

int schedule_gpus_per_node(const Schedule& schedule) {
  const auto it = schedule.options.find("gpus_per_node");
  if (it == schedule.options.end()) return 0;
  const std::string& text = it->second;
  int g = 0;
  const auto [ptr, ec] = std::from_chars(text.data(), text.data() + text.size(), g);
  return ec != std::errc() || ptr != text.data() + text.size() ? 0 : g;
}

}  // namespace ssim::alg
