#include "algorithms/msccl_xml.hpp"

#include <algorithm>
#include <cstdint>
#include <limits>
#include <map>
#include <sstream>
#include <vector>

#include "common/error.hpp"

namespace ssim::alg {
namespace {

// One step of one thread block before numbering: a send, or a receive that reduces or copies.
struct StepOp {
  int rank = 0;
  int peer = 0;
  bool send = false;
  bool reduce = false;
  int chunk = 0;
  int count = 0;
  int tb = 0;              // thread block index on `rank`
  int pos = 0;             // position among the real (non-nop) steps of that thread block
  std::vector<int> after;  // ops (same rank) this one must follow
  std::vector<std::pair<int, int>> deps;  // (thread block, pos) after pruning
  int step = 0;                           // step number `s`, nops counted
  bool hasdep = false;
};

struct ThreadBlock {
  int peer = 0;
  bool sends = false;
  bool receives = false;
  int channel = 0;
  std::vector<int> ops;  // in execution order
};

std::string limit_error(const Schedule& s, const std::string& what) {
  return "msccl-xml: " + s.algorithm + " with " + std::to_string(s.ranks) + " ranks: " + what;
}

}  // namespace

double msccl_transmission_count(const Schedule& s, const MscclLimits& limits) {
  double count = 0;
  for (const Round& r : s.rounds)
    for (const Transfer& t : r.transfers)
      count += 2.0 * ((t.chunk_count() + limits.max_count - 1) / limits.max_count);
  return count;
}

std::string schedule_to_msccl_xml(const Schedule& s, const MscclLimits& limits) {
  if (s.collective != Collective::allreduce)
    throw InputError("msccl-xml: only AllReduce schedules are exported, got " +
                     std::string(to_string(s.collective)));
  const auto n = static_cast<std::size_t>(s.ranks);
  const auto chunks = static_cast<std::size_t>(s.chunks);

  // Thread blocks: one per (rank, peer) pair that exchanges anything, ids in peer order.
  std::vector<std::map<int, int>> peers(n);  // rank -> peer -> thread block id
  for (const Round& r : s.rounds) {
    for (const Transfer& t : r.transfers) {
      peers[static_cast<std::size_t>(t.src)][t.dst] = 0;
      peers[static_cast<std::size_t>(t.dst)][t.src] = 0;
    }
  }
  std::vector<std::vector<ThreadBlock>> tbs(n);
  for (std::size_t a = 0; a < n; ++a) {
    if (peers[a].size() > static_cast<std::size_t>(limits.max_threadblocks_per_gpu)) {
      throw InputError(limit_error(
          s, "rank " + std::to_string(a) + " talks to " + std::to_string(peers[a].size()) +
                 " peers; MSCCL runs at most " + std::to_string(limits.max_threadblocks_per_gpu) +
                 " thread blocks per GPU (one per peer here)"));
    }
    for (auto& [peer, id] : peers[a]) {
      id = static_cast<int>(tbs[a].size());
      tbs[a].push_back(ThreadBlock{peer, false, false, 0, {}});
    }
  }

  // Channels: per unordered pair, the lowest channel on which both ranks have room.
  int nchannels = 1;
  {
    std::vector<std::vector<int>> used(n);  // rank -> channel -> thread blocks
    for (std::size_t a = 0; a < n; ++a) {
      for (auto& [b, id] : peers[a]) {
        if (static_cast<std::size_t>(b) < a) continue;
        auto& ua = used[a];
        auto& ub = used[static_cast<std::size_t>(b)];
        int c = 0;
        auto count = [](const std::vector<int>& u, int ch) {
          return ch < static_cast<int>(u.size()) ? u[ch] : 0;
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
        tbs[a][static_cast<std::size_t>(id)].channel = c;
        tbs[static_cast<std::size_t>(b)]
           [static_cast<std::size_t>(peers[static_cast<std::size_t>(b)].at(static_cast<int>(a)))]
               .channel = c;
        nchannels = std::max(nchannels, c + 1);
      }
    }
  }

  // Transmissions per thread block, before anything per step is built (nops only add to them).
  auto pieces = [&](const Transfer& t) {
    return (t.chunk_count() + limits.max_count - 1) / limits.max_count;
  };
  {
    std::vector<std::vector<int>> count(n);
    for (std::size_t a = 0; a < n; ++a) count[a].assign(tbs[a].size(), 0);
    for (const Round& r : s.rounds) {
      for (const Transfer& t : r.transfers) {
        for (const auto& [rank, peer] : {std::pair{t.src, t.dst}, std::pair{t.dst, t.src}}) {
          const auto a = static_cast<std::size_t>(rank);
          int& c = count[a][static_cast<std::size_t>(peers[a].at(peer))];
          c += pieces(t);
          if (c > limits.max_steps_per_threadblock) {
            throw InputError(limit_error(s, "rank " + std::to_string(rank) +
                                                "'s thread block for peer " + std::to_string(peer) +
                                                " needs over " +
                                                std::to_string(limits.max_steps_per_threadblock) +
                                                " steps; MSCCL runs at most " +
                                                std::to_string(limits.max_steps_per_threadblock) +
                                                " per thread block (MSCCL_MAX_NUM_STEPS)"));
          }
        }
      }
    }
  }

  // Steps in round order: a round's sends, then its receives.
  std::vector<StepOp> ops;
  auto add_op = [&](StepOp op) {
    ThreadBlock& tb =
        tbs[static_cast<std::size_t>(op.rank)]
           [static_cast<std::size_t>(peers[static_cast<std::size_t>(op.rank)].at(op.peer))];
    op.tb = peers[static_cast<std::size_t>(op.rank)].at(op.peer);
    op.pos = static_cast<int>(tb.ops.size());
    (op.send ? tb.sends : tb.receives) = true;
    tb.ops.push_back(static_cast<int>(ops.size()));
    ops.push_back(std::move(op));
  };
  for (const Round& r : s.rounds) {
    for (int pass = 0; pass < 2; ++pass) {  // a round's sends (reads) before its receives (writes)
      for (const Transfer& t : r.transfers) {
        for (int c = t.chunk_begin; c < t.chunk_end; c += limits.max_count) {
          StepOp op;
          op.send = pass == 0;
          op.rank = op.send ? t.src : t.dst;
          op.peer = op.send ? t.dst : t.src;
          op.reduce = t.op == Op::reduce;
          op.chunk = c;
          op.count = std::min(limits.max_count, t.chunk_end - c);
          add_op(std::move(op));
        }
      }
    }
  }

  // Per rank, chunk by chunk in step order: a send (read) follows the chunk's last write; a
  // receive (write) follows the last write and every read since.
  {
    std::vector<std::vector<int>> by_rank(n);
    for (std::size_t id = 0; id < ops.size(); ++id)
      by_rank[static_cast<std::size_t>(ops[id].rank)].push_back(static_cast<int>(id));
    std::vector<int> last_write(chunks);
    std::vector<std::vector<int>> reads(chunks);
    for (std::size_t a = 0; a < n; ++a) {
      std::fill(last_write.begin(), last_write.end(), -1);
      for (auto& r : reads) r.clear();
      for (int id : by_rank[a]) {
        StepOp& op = ops[static_cast<std::size_t>(id)];
        for (int c = op.chunk; c < op.chunk + op.count; ++c) {
          const auto k = static_cast<std::size_t>(c);
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

  // Step numbers (`s`): each dependency beyond the first is a nop step before the step, and `deps`
  // names the target's step number with the nops counted. That is what the runtime compares: its
  // parser (msccl_parser.cc) keeps no nop but moves a nop's dependency onto the next transmission,
  // and its kernel (msccl_kernel.cu, mscclRunInterpreter) advances its step counter by the number
  // of dependencies less one before a transmission, then, after a transmission with hasdep=1,
  // publishes that counter as the thread block's flag; a wait on (depid, deps) ends once the flag
  // of depid reaches deps. So the counter is the XML step number, nops included.
  for (std::size_t a = 0; a < n; ++a) {
    for (ThreadBlock& tb : tbs[a]) {
      int next = 0;
      for (int id : tb.ops) {
        StepOp& op = ops[static_cast<std::size_t>(id)];
        next += op.deps.empty() ? 0 : static_cast<int>(op.deps.size()) - 1;
        op.step = next++;
      }
      if (next > limits.max_steps_per_threadblock) {
        throw InputError(limit_error(s, "rank " + std::to_string(a) + "'s thread block for peer " +
                                            std::to_string(tb.peer) + " needs " +
                                            std::to_string(next) + " steps; MSCCL runs at most " +
                                            std::to_string(limits.max_steps_per_threadblock) +
                                            " per thread block (MSCCL_MAX_NUM_STEPS)"));
      }
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
     << "\" nchunksperloop=\"" << s.chunks << "\" ngpus=\"" << s.ranks
     << "\" coll=\"allreduce\" inplace=\"1\" outofplace=\"0\" minBytes=\"0\" "
     << "maxBytes=\"" << std::numeric_limits<std::int64_t>::max() << "\">\n";
  auto step_line = [&](int step, const char* type, int off, int cnt, int depid, int deps,
                       bool hasdep) {
    os << "      <step s=\"" << step << "\" type=\"" << type << "\" srcbuf=\"i\" srcoff=\"" << off
       << "\" dstbuf=\"i\" dstoff=\"" << off << "\" cnt=\"" << cnt << "\" depid=\"" << depid
       << "\" deps=\"" << deps << "\" hasdep=\"" << (hasdep ? 1 : 0) << "\"/>\n";
  };
  for (std::size_t a = 0; a < n; ++a) {
    os << "  <gpu id=\"" << a << "\" i_chunks=\"" << s.chunks << "\" o_chunks=\"" << s.chunks
       << "\" s_chunks=\"0\">\n";
    for (std::size_t t = 0; t < tbs[a].size(); ++t) {
      const ThreadBlock& tb = tbs[a][t];
      os << "    <tb id=\"" << t << "\" send=\"" << (tb.sends ? tb.peer : -1) << "\" recv=\""
         << (tb.receives ? tb.peer : -1) << "\" chan=\"" << tb.channel << "\">\n";
      int step = 0;
      for (int id : tb.ops) {
        const StepOp& op = ops[static_cast<std::size_t>(id)];
        for (std::size_t k = 1; k < op.deps.size(); ++k)
          step_line(step++, "nop", 0, 0, op.deps[k].first, target(op.rank, op.deps[k]).step, false);
        const int depid = op.deps.empty() ? -1 : op.deps[0].first;
        const int deps = op.deps.empty() ? -1 : target(op.rank, op.deps[0]).step;
        step_line(step++, op.send ? "s" : (op.reduce ? "rrc" : "r"), op.chunk, op.count, depid,
                  deps, op.hasdep);
      }
      os << "    </tb>\n";
    }
    os << "  </gpu>\n";
  }
  os << "</algo>\n";
  return os.str();
}

}  // namespace ssim::alg
