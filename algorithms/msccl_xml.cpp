#include "algorithms/msccl_xml.hpp"

#include <algorithm>
#include <cstdint>
#include <limits>
#include <map>
#include <sstream>
#include <utility>
#include <vector>

#include "common/bits.hpp"
#include "common/error.hpp"

namespace ssim::alg {
namespace {

// One step of one thread block before numbering: a send of one MSCCL chunk, or a receive of one
// that reduces or copies.
struct StepOp {
  int rank = 0;
  bool send = false;
  bool reduce = false;
  int chunk = 0;                          // MSCCL chunk
  int tb = 0;                             // thread block index on `rank`
  int pos = 0;                            // position among the transmissions of that thread block
  std::vector<int> after;                 // ops (same rank) this one must follow
  std::vector<std::pair<int, int>> deps;  // (thread block, pos) after pruning
  int step = 0;                           // step number `s`, nops counted
  bool hasdep = false;
};

struct ThreadBlock {
  int peer = 0;
  bool send = false;  // sends to `peer`, else receives from it
  int channel = 0;
  std::vector<int> ops;  // in execution order
};

std::string limit_error(const Schedule& s, const std::string& what) {
  return "msccl-xml: " + s.algorithm + " with " + std::to_string(s.ranks) + " ranks: " + what;
}

// First MSCCL chunk of schedule chunk c when `chunks` schedule chunks share `per_loop` MSCCL
// chunks as evenly as whole chunks allow.
int first_msccl_chunk(int c, int chunks, int per_loop) {
  return static_cast<int>(static_cast<long long>(c) * per_loop / chunks);
}

std::string export_with(const Schedule& s, const MscclExport& ex) {
  const MscclLimits& limits = ex.limits;
  const int per_loop = ex.nchunksperloop;
  const auto n = static_cast<std::size_t>(s.ranks);
  if (s.ranks > limits.max_gpus) {
    throw InputError(limit_error(s, "MSCCL's parser reads at most " +
                                        std::to_string(limits.max_gpus) +
                                        " <gpu> elements (MAX_SUBS)"));
  }
  if (per_loop < s.chunks) {
    throw InputError(limit_error(s, "nchunksperloop " + std::to_string(per_loop) +
                                        " cannot hold the schedule's " + std::to_string(s.chunks) +
                                        " chunks (each needs at least one MSCCL chunk)"));
  }
  if (per_loop > limits.max_chunks) {
    throw InputError(limit_error(s, "nchunksperloop " + std::to_string(per_loop) +
                                        " is over MSCCL's " + std::to_string(limits.max_chunks) +
                                        " (chunk offsets are 16-bit)"));
  }
  auto msccl_range = [&](const Transfer& t) {
    return std::pair{first_msccl_chunk(t.chunk_begin, s.chunks, per_loop),
                     first_msccl_chunk(t.chunk_end, s.chunks, per_loop)};
  };

  // Thread blocks: per rank, one per peer it sends to and one per peer it receives from, ids in
  // peer order (the send one first). Separate thread blocks let a rank take in what a peer sends
  // while its own sends to that peer wait for room in the connection's buffer.
  std::vector<std::map<int, std::pair<int, int>>> peers(n);  // rank -> peer -> (send tb, recv tb)
  for (const Round& r : s.rounds) {
    for (const Transfer& t : r.transfers) {
      peers[static_cast<std::size_t>(t.src)].try_emplace(t.dst, -1, -1).first->second.first = 0;
      peers[static_cast<std::size_t>(t.dst)].try_emplace(t.src, -1, -1).first->second.second = 0;
    }
  }
  std::vector<std::vector<ThreadBlock>> tbs(n);
  for (std::size_t a = 0; a < n; ++a) {
    std::size_t count = 0;
    for (const auto& [peer, ids] : peers[a]) count += (ids.first == 0) + (ids.second == 0);
    if (count > static_cast<std::size_t>(limits.max_threadblocks_per_gpu)) {
      throw InputError(limit_error(
          s, "rank " + std::to_string(a) + " needs " + std::to_string(count) +
                 " thread blocks (one per peer it sends to, one per peer it receives from); "
                 "MSCCL runs at most " +
                 std::to_string(limits.max_threadblocks_per_gpu) +
                 " per GPU (MSCCL_MAX_NUM_THREAD_BLOCKS)"));
    }
    for (auto& [peer, ids] : peers[a]) {
      for (int* id : {&ids.first, &ids.second}) {
        if (*id < 0) continue;
        *id = static_cast<int>(tbs[a].size());
        tbs[a].push_back(ThreadBlock{peer, id == &ids.first, 0, {}});
      }
    }
  }

  // Channels: per unordered pair, the lowest channel on which both ranks have room (a rank's
  // thread blocks for one peer count once against the per-channel limit on sends and receives).
  int nchannels = 1;
  {
    std::vector<std::vector<int>> used(n);  // rank -> channel -> peers
    for (std::size_t a = 0; a < n; ++a) {
      for (const auto& [b, ids] : peers[a]) {
        if (static_cast<std::size_t>(b) < a) continue;
        auto& ua = used[a];
        auto& ub = used[static_cast<std::size_t>(b)];
        int c = 0;
        auto count = [](const std::vector<int>& u, int ch) {
          return ch < static_cast<int>(u.size()) ? u[static_cast<std::size_t>(ch)] : 0;
        };
        while (count(ua, c) >= limits.max_threadblocks_per_channel ||
               count(ub, c) >= limits.max_threadblocks_per_channel)
          ++c;
        if (c >= limits.max_channels) {
          throw InputError(limit_error(
              s, "ranks " + std::to_string(a) + " and " + std::to_string(b) +
                     " need a channel beyond MSCCL's " + std::to_string(limits.max_channels) +
                     " (" + std::to_string(limits.max_threadblocks_per_channel) +
                     " thread blocks per channel)"));
        }
        for (auto* u : {&ua, &ub}) {
          if (static_cast<int>(u->size()) <= c) u->resize(static_cast<std::size_t>(c) + 1, 0);
          ++(*u)[static_cast<std::size_t>(c)];
        }
        const auto& ids_b = peers[static_cast<std::size_t>(b)].at(static_cast<int>(a));
        for (int id : {ids.first, ids.second})
          if (id >= 0) tbs[a][static_cast<std::size_t>(id)].channel = c;
        for (int id : {ids_b.first, ids_b.second})
          if (id >= 0) tbs[static_cast<std::size_t>(b)][static_cast<std::size_t>(id)].channel = c;
        nchannels = std::max(nchannels, c + 1);
      }
    }
  }

  // Transmissions per thread block and per rank, before any step is built (nops only add).
  {
    std::vector<std::vector<int>> count(n);
    std::vector<long long> per_rank(n, 0);
    for (std::size_t a = 0; a < n; ++a) count[a].assign(tbs[a].size(), 0);
    for (const Round& r : s.rounds) {
      for (const Transfer& t : r.transfers) {
        const auto [b, e] = msccl_range(t);
        for (const bool send : {true, false}) {
          const int rank = send ? t.src : t.dst, peer = send ? t.dst : t.src;
          const auto a = static_cast<std::size_t>(rank);
          const auto& ids = peers[a].at(peer);
          int& c = count[a][static_cast<std::size_t>(send ? ids.first : ids.second)];
          c += e - b;
          per_rank[a] += e - b;
          if (c > limits.max_steps_per_threadblock) {
            throw InputError(limit_error(
                s, "rank " + std::to_string(rank) + "'s thread block " +
                       (send ? "sending to " : "receiving from ") + std::to_string(peer) +
                       " needs over " + std::to_string(limits.max_steps_per_threadblock) +
                       " steps (one per MSCCL chunk, nchunksperloop " + std::to_string(per_loop) +
                       "); MSCCL runs at most " + std::to_string(limits.max_steps_per_threadblock) +
                       " per thread block (MSCCL_MAX_NUM_STEPS)"));
          }
          const long long nodes = 1 + s.ranks + static_cast<long long>(tbs[a].size()) + per_rank[a];
          if (nodes > limits.max_nodes) {
            throw InputError(limit_error(
                s, "rank " + std::to_string(rank) + " needs over " +
                       std::to_string(limits.max_nodes) +
                       " XML nodes (<algo>, every <gpu>, its <tb>s and <step>s; nchunksperloop " +
                       std::to_string(per_loop) + "); MSCCL's parser stores at most " +
                       std::to_string(limits.max_nodes) + " (MAX_NODES)"));
          }
        }
      }
    }
  }

  // Steps in round order, one per MSCCL chunk: a round's sends, then its receives.
  std::vector<StepOp> ops;
  for (const Round& r : s.rounds) {
    for (int pass = 0; pass < 2; ++pass) {  // a round's sends (reads) before its receives (writes)
      for (const Transfer& t : r.transfers) {
        const auto [b, e] = msccl_range(t);
        for (int c = b; c < e; ++c) {
          StepOp op;
          op.send = pass == 0;
          op.rank = op.send ? t.src : t.dst;
          const int peer = op.send ? t.dst : t.src;
          const auto& ids = peers[static_cast<std::size_t>(op.rank)].at(peer);
          op.tb = op.send ? ids.first : ids.second;
          ThreadBlock& tb = tbs[static_cast<std::size_t>(op.rank)][static_cast<std::size_t>(op.tb)];
          op.pos = static_cast<int>(tb.ops.size());
          op.reduce = t.op == Op::reduce;
          op.chunk = c;
          tb.ops.push_back(static_cast<int>(ops.size()));
          ops.push_back(std::move(op));
        }
      }
    }
  }

  // Per rank, chunk by chunk in step order: a send (read) follows the chunk's last write; a
  // receive (write) follows the last write and every read since. Per MSCCL chunk, so a receive
  // waits only for the sends of the same chunk, never for a whole transfer.
  {
    std::vector<std::vector<int>> by_rank(n);
    for (std::size_t id = 0; id < ops.size(); ++id)
      by_rank[static_cast<std::size_t>(ops[id].rank)].push_back(static_cast<int>(id));
    std::vector<int> last_write(static_cast<std::size_t>(per_loop));
    std::vector<std::vector<int>> reads(static_cast<std::size_t>(per_loop));
    for (std::size_t a = 0; a < n; ++a) {
      std::fill(last_write.begin(), last_write.end(), -1);
      for (auto& r : reads) r.clear();
      for (int id : by_rank[a]) {
        StepOp& op = ops[static_cast<std::size_t>(id)];
        const auto k = static_cast<std::size_t>(op.chunk);
        if (last_write[k] >= 0) op.after.push_back(last_write[k]);
        if (op.send) {
          reads[k].push_back(id);
        } else {
          op.after.insert(op.after.end(), reads[k].begin(), reads[k].end());
          reads[k].clear();
          last_write[k] = id;
        }
      }
    }
  }

  // Dependencies on other thread blocks of the same GPU: the latest step needed per thread block,
  // dropped where an earlier step of this thread block already waited for as much.
  for (std::size_t a = 0; a < n; ++a) {
    for (ThreadBlock& tb : tbs[a]) {
      std::map<int, int> awaited;  // thread block -> highest pos waited for so far
      for (int id : tb.ops) {
        StepOp& op = ops[static_cast<std::size_t>(id)];
        std::map<int, int> need;
        for (int d : op.after) {
          const StepOp& dep = ops[static_cast<std::size_t>(d)];
          if (dep.tb == op.tb) continue;
          int& p = need.try_emplace(dep.tb, -1).first->second;
          p = std::max(p, dep.pos);
        }
        for (const auto& [t, p] : need) {
          auto it = awaited.find(t);
          if (it != awaited.end() && it->second >= p) continue;
          awaited[t] = p;
          op.deps.emplace_back(t, p);
        }
      }
    }
  }

  // depid is 8 bits: where a rank waits for a thread block beyond max_depid, its thread blocks
  // are renumbered, the awaited ones first (peer order kept within each group).
  {
    std::vector<std::vector<int>> by_rank(n);
    for (std::size_t id = 0; id < ops.size(); ++id)
      by_rank[static_cast<std::size_t>(ops[id].rank)].push_back(static_cast<int>(id));
    for (std::size_t a = 0; a < n; ++a) {
      std::vector<char> awaited(tbs[a].size(), 0);
      int highest = -1;
      for (int id : by_rank[a]) {
        for (const auto& d : ops[static_cast<std::size_t>(id)].deps) {
          awaited[static_cast<std::size_t>(d.first)] = 1;
          highest = std::max(highest, d.first);
        }
      }
      if (highest <= limits.max_depid) continue;
      std::vector<int> order;  // new id -> old id
      for (int pass = 1; pass >= 0; --pass)
        for (std::size_t t = 0; t < tbs[a].size(); ++t)
          if (awaited[t] == pass) order.push_back(static_cast<int>(t));
      const auto count = std::count(awaited.begin(), awaited.end(), 1);
      if (count > limits.max_depid + 1) {
        throw InputError(limit_error(
            s, "rank " + std::to_string(a) + " has steps that wait for " + std::to_string(count) +
                   " of its thread blocks; MSCCL stores depid in 8 bits (at most " +
                   std::to_string(limits.max_depid) + ")"));
      }
      std::vector<int> new_id(tbs[a].size());
      std::vector<ThreadBlock> renumbered;
      for (std::size_t k = 0; k < order.size(); ++k) {
        new_id[static_cast<std::size_t>(order[k])] = static_cast<int>(k);
        renumbered.push_back(std::move(tbs[a][static_cast<std::size_t>(order[k])]));
      }
      tbs[a] = std::move(renumbered);
      for (int id : by_rank[a]) {
        StepOp& op = ops[static_cast<std::size_t>(id)];
        op.tb = new_id[static_cast<std::size_t>(op.tb)];
        for (auto& d : op.deps) d.first = new_id[static_cast<std::size_t>(d.first)];
      }
    }
  }

  // Step numbers (`s`): each dependency beyond the first is a nop step before the step, and `deps`
  // names the target's step number with the nops counted. That is what the runtime compares: its
  // parser (msccl_parser.cc) keeps no nop but moves a nop's dependency onto the next transmission,
  // and its kernel (msccl_kernel.cu, mscclRunInterpreter) advances its step counter by the number
  // of dependencies less one before a transmission, then, after a transmission with hasdep=1,
  // publishes that counter as the thread block's flag; a wait on (depid, deps) ends once the flag
  // of depid reaches deps. So the counter is the XML step number, nops included.
  for (std::size_t a = 0; a < n; ++a) {
    long long nodes = 1 + s.ranks + static_cast<long long>(tbs[a].size());
    for (ThreadBlock& tb : tbs[a]) {
      int next = 0;
      for (int id : tb.ops) {
        StepOp& op = ops[static_cast<std::size_t>(id)];
        next += op.deps.empty() ? 0 : static_cast<int>(op.deps.size()) - 1;
        op.step = next++;
      }
      nodes += next;
      if (next > limits.max_steps_per_threadblock) {
        throw InputError(limit_error(s, "rank " + std::to_string(a) + "'s thread block " +
                                            (tb.send ? "sending to " : "receiving from ") +
                                            std::to_string(tb.peer) + " needs " +
                                            std::to_string(next) + " steps; MSCCL runs at most " +
                                            std::to_string(limits.max_steps_per_threadblock) +
                                            " per thread block (MSCCL_MAX_NUM_STEPS)"));
      }
    }
    if (nodes > limits.max_nodes) {
      throw InputError(limit_error(
          s, "rank " + std::to_string(a) + " needs " + std::to_string(nodes) +
                 " XML nodes (<algo>, every <gpu>, its <tb>s and <step>s, nops included; "
                 "nchunksperloop " +
                 std::to_string(per_loop) + "); MSCCL's parser stores at most " +
                 std::to_string(limits.max_nodes) + " (MAX_NODES)"));
    }
  }
  auto target = [&](int rank, std::pair<int, int> dep) -> StepOp& {
    const ThreadBlock& tb =
        tbs[static_cast<std::size_t>(rank)][static_cast<std::size_t>(dep.first)];
    return ops[static_cast<std::size_t>(tb.ops[static_cast<std::size_t>(dep.second)])];
  };
  for (StepOp& op : ops)
    for (const auto& d : op.deps) target(op.rank, d).hasdep = true;

  std::ostringstream os;
  std::string name;
  for (char c : s.algorithm) {
    if (c == '&')
      name += "&amp;";
    else if (c == '<')
      name += "&lt;";
    else if (c == '"')
      name += "&quot;";
    else
      name += c;
  }
  if (s.straggler) name += " (straggler " + std::to_string(*s.straggler) + ")";
  os << "<algo name=\"" << name << "\" proto=\"Simple\" nchannels=\"" << nchannels
     << "\" nchunksperloop=\"" << per_loop << "\" ngpus=\"" << s.ranks
     << "\" coll=\"allreduce\" inplace=\"1\" outofplace=\"0\" minBytes=\"" << ex.min_bytes
     << "\" maxBytes=\"" << ex.max_bytes << "\">\n";
  auto step_line = [&](int step, const char* type, int off, int cnt, int depid, int deps,
                       bool hasdep) {
    os << "      <step s=\"" << step << "\" type=\"" << type << "\" srcbuf=\"i\" srcoff=\"" << off
       << "\" dstbuf=\"i\" dstoff=\"" << off << "\" cnt=\"" << cnt << "\" depid=\"" << depid
       << "\" deps=\"" << deps << "\" hasdep=\"" << (hasdep ? 1 : 0) << "\"/>\n";
  };
  for (std::size_t a = 0; a < n; ++a) {
    os << "  <gpu id=\"" << a << "\" i_chunks=\"" << per_loop << "\" o_chunks=\"" << per_loop
       << "\" s_chunks=\"0\">\n";
    for (std::size_t t = 0; t < tbs[a].size(); ++t) {
      const ThreadBlock& tb = tbs[a][t];
      os << "    <tb id=\"" << t << "\" send=\"" << (tb.send ? tb.peer : -1) << "\" recv=\""
         << (tb.send ? -1 : tb.peer) << "\" chan=\"" << tb.channel << "\">\n";
      int step = 0;
      for (int id : tb.ops) {
        const StepOp& op = ops[static_cast<std::size_t>(id)];
        for (std::size_t k = 1; k < op.deps.size(); ++k)
          step_line(step++, "nop", 0, 0, op.deps[k].first, target(op.rank, op.deps[k]).step, false);
        const int depid = op.deps.empty() ? -1 : op.deps[0].first;
        const int deps = op.deps.empty() ? -1 : target(op.rank, op.deps[0]).step;
        step_line(step++, op.send ? "s" : (op.reduce ? "rrc" : "r"), op.chunk, 1, depid, deps,
                  op.hasdep);
      }
      os << "    </tb>\n";
    }
    os << "  </gpu>\n";
  }
  os << "</algo>\n";
  return os.str();
}

}  // namespace

std::vector<int> msccl_chunk_shares(int chunks, int nchunksperloop) {
  std::vector<int> shares;
  for (int c = 0; c < chunks; ++c)
    shares.push_back(first_msccl_chunk(c + 1, chunks, nchunksperloop) -
                     first_msccl_chunk(c, chunks, nchunksperloop));
  return shares;
}

std::vector<int> msccl_nchunksperloop_candidates(int chunks) {
  // Powers of two from the smallest that holds every chunk; the first whose largest share is
  // within 12.5% of the mean (or an even split) comes first, smaller ones after it, largest first.
  std::vector<int> powers;
  for (long long p = 1; p <= 32768; p *= 2)
    if (p >= chunks) powers.push_back(static_cast<int>(p));
  std::vector<int> out;
  for (std::size_t k = 0; k < powers.size(); ++k) {
    const int p = powers[k];
    const int largest = (p + chunks - 1) / chunks;
    if (static_cast<long long>(largest) * chunks * 8 <= 9LL * p) {
      for (std::size_t j = k + 1; j-- > 0;) out.push_back(powers[j]);
      break;
    }
  }
  if (out.empty()) out.assign(powers.rbegin(), powers.rend());
  if (!is_pow2(chunks)) out.push_back(chunks);
  return out;
}

MscclExported schedule_to_msccl_xml(const Schedule& s, const MscclExport& ex) {
  if (s.has_switch_reduces()) {
    throw InputError(
        "msccl-xml: the schedule has in-network reductions (switch_reduces), which "
        "MSCCL's XML (point-to-point send/recv/reduce steps) cannot express");
  }
  if (s.collective != Collective::allreduce)
    throw InputError("msccl-xml: only AllReduce schedules are exported, got " +
                     std::string(to_string(s.collective)));
  if (ex.min_bytes < 0 || ex.max_bytes < 0)
    throw InputError("msccl-xml: minBytes and maxBytes must not be negative");
  if (ex.max_bytes != 0 && ex.min_bytes > ex.max_bytes) {
    throw InputError("msccl-xml: minBytes " + std::to_string(ex.min_bytes) + " is above maxBytes " +
                     std::to_string(ex.max_bytes) + ": the runtime would never use the file");
  }
  if (ex.nchunksperloop < 0)
    throw InputError("msccl-xml: nchunksperloop must be positive, got " +
                     std::to_string(ex.nchunksperloop));
  auto too_small = [&](int per_loop) {
    if (ex.max_bytes != 0 && ex.max_bytes < per_loop) {
      throw InputError(limit_error(s, "maxBytes " + std::to_string(ex.max_bytes) +
                                          " is below nchunksperloop " + std::to_string(per_loop) +
                                          ": no tensor of at least one byte per MSCCL chunk fits"));
    }
  };
  if (ex.nchunksperloop != 0) {
    too_small(ex.nchunksperloop);
    return MscclExported{export_with(s, ex), ex.nchunksperloop};
  }
  // Chosen: the first candidate whose file fits the runtime's limits.
  const std::vector<int> candidates = msccl_nchunksperloop_candidates(s.chunks);
  for (std::size_t k = 0; k < candidates.size(); ++k) {
    MscclExport e = ex;
    e.nchunksperloop = candidates[k];
    std::string xml;
    try {
      xml = export_with(s, e);
    } catch (const InputError&) {
      if (k + 1 == candidates.size()) throw;
      continue;
    }
    too_small(e.nchunksperloop);  // a choice that fits the limits but not maxBytes is refused
    return MscclExported{std::move(xml), e.nchunksperloop};
  }
  throw InputError("msccl-xml: no nchunksperloop to try");  // not reached: candidates not empty
}

double msccl_transmission_count(const Schedule& s, int nchunksperloop) {
  double count = 0;
  for (const Round& r : s.rounds)
    for (const Transfer& t : r.transfers)
      count += 2.0 * (first_msccl_chunk(t.chunk_end, s.chunks, nchunksperloop) -
                      first_msccl_chunk(t.chunk_begin, s.chunks, nchunksperloop));
  return count;
}

}  // namespace ssim::alg
