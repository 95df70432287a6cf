// Test support: an independent reader and executor of MSCCL algorithm XML files, written from
// the runtime (msccl-executor-nccl): its parser (src/misc/msccl/msccl_parser.cc) for what a file
// may hold and how steps become transmissions, its interpreter kernel (src/device/msccl_kernel.cu,
// mscclRunInterpreter) for how they run. It shares no code with algorithms/msccl_xml.cpp on
// purpose.
//
//   const std::string error = msccl_reader::check_allreduce(xml_text, {.seed = 7});  // "" if good
//
// What it takes from the runtime:
// - Parsing: a `nop` is no transmission; its dependency is kept and handed to the next
//   transmission, which must carry a dependency of its own. Limits: s < 256 steps per thread
//   block, thread block ids 0..k-1 and k <= 216, depid <= 127 (int8_t), cnt 1..71, at most 32
//   send and 32 receive thread blocks per channel, one sender (receiver) per peer and channel,
//   at most 1024 <gpu> elements and 4095 nodes read for one rank (1 + ngpus + its <tb>s + its
//   <step>s; the parser counts no other rank's elements).
// - Flags: each thread block counts steps as the kernel does (before a transmission with d > 0
//   dependencies the counter moves by d - 1; after it, by 1) and publishes the counter as its
//   flag after every transmission with hasdep=1. A transmission waits until, for each dependency
//   (depid, deps), the flag of depid has reached deps in the same iteration.
// - Iterations: the kernel runs the whole program once per slice of the chunks (gridOffset), the
//   flag ordered by (iteration, step); each iteration works on its own data.
// - Connections: one FIFO per (sender, receiver, channel), holding at most `buffer_chunks` chunks
//   (0: unbounded). A send pushes its chunks one at a time and waits for room; a receive takes
//   them one at a time as they come. With large tensors the runtime moves one chunk per piece and
//   its connection buffer (NCCL_STEPS slots, a piece taking MSCCL_CHUNKSTEPS = half of them) holds
//   two pieces: buffer_chunks = 2 is the tightest case it meets.
// - Order: any thread block that can make progress may move next; `seed` picks among them.
// Step types: s, r, rcs, rrs, rrc, rrcs, cpy and nop; `re` (local reductions the parser chains)
// is not modelled and is reported as unsupported. By default a dependency must name a hasdep
// transmission by its counter value (RunOptions::exact_targets).
//
// Checks: every chunk of every rank ends with every rank's input exactly once (a cell is a count
// and a sum of per-rank random 64-bit weights), no message is left over, no deadlock, and (for
// files of at most `race_check_max_tbs` thread blocks) conflicting accesses to a chunk are
// ordered by steps, dependencies and messages (vector clocks), so a missing dependency is an
// error even when this run's order happens to be harmless.
#pragma once

#include <algorithm>
#include <cctype>
#include <cstdint>
#include <deque>
#include <map>
#include <set>
#include <stdexcept>
#include <string>
#include <tuple>
#include <utility>
#include <vector>

namespace ssim::testing::msccl_reader {

struct Node {
  std::string name;
  std::map<std::string, std::string> attrs;
  std::vector<Node> children;
};

inline Node parse_xml(const std::string& text) {
  std::size_t i = 0;
  auto fail = [&](const std::string& what) {
    throw std::runtime_error("xml at byte " + std::to_string(i) + ": " + what);
  };
  auto skip_space = [&] {
    while (i < text.size() && std::isspace(static_cast<unsigned char>(text[i]))) ++i;
  };
  std::vector<Node> stack;
  stack.push_back(Node{"#root", {}, {}});
  while (true) {
    skip_space();
    if (i >= text.size()) break;
    if (text[i] != '<') fail("expected '<'");
    if (text.compare(i, 4, "<!--") == 0) {
      const std::size_t end = text.find("-->", i + 4);
      if (end == std::string::npos) fail("unterminated comment");
      i = end + 3;
      continue;
    }
    if (text.compare(i, 2, "</") == 0) {
      const std::size_t end = text.find('>', i);
      if (end == std::string::npos) fail("unterminated closing tag");
      const std::string name = text.substr(i + 2, end - i - 2);
      if (stack.size() < 2 || stack.back().name != name) fail("unexpected </" + name + ">");
      Node done = std::move(stack.back());
      stack.pop_back();
      stack.back().children.push_back(std::move(done));
      i = end + 1;
      continue;
    }
    ++i;
    Node node;
    while (i < text.size() && (std::isalnum(static_cast<unsigned char>(text[i])) || text[i] == '_'))
      node.name += text[i++];
    if (node.name.empty()) fail("expected an element name");
    while (true) {
      skip_space();
      if (i >= text.size()) fail("unterminated <" + node.name + ">");
      if (text[i] == '/' || text[i] == '>') break;
      std::string key;
      while (i < text.size() &&
             (std::isalnum(static_cast<unsigned char>(text[i])) || text[i] == '_'))
        key += text[i++];
      if (key.empty() || i + 1 >= text.size() || text[i] != '=' || text[i + 1] != '"')
        fail("bad attribute in <" + node.name + ">");
      i += 2;
      const std::size_t end = text.find('"', i);
      if (end == std::string::npos) fail("unterminated attribute value");
      if (!node.attrs.emplace(key, text.substr(i, end - i)).second)
        fail("attribute " + key + " twice");
      i = end + 1;
    }
    if (text[i] == '/') {
      if (i + 1 >= text.size() || text[i + 1] != '>') fail("expected '/>'");
      i += 2;
      stack.back().children.push_back(std::move(node));
    } else {
      ++i;
      stack.push_back(std::move(node));
    }
  }
  if (stack.size() != 1) fail("unclosed <" + stack.back().name + ">");
  if (stack[0].children.size() != 1 || stack[0].children[0].name != "algo")
    throw std::runtime_error("expected one <algo>");
  return stack[0].children[0];
}

inline int attr_int(const Node& n, const std::string& key) {
  const auto it = n.attrs.find(key);
  if (it == n.attrs.end()) throw std::runtime_error("<" + n.name + "> has no " + key);
  std::size_t used = 0;
  const long long v = std::stoll(it->second, &used);
  if (used != it->second.size())
    throw std::runtime_error("<" + n.name + "> " + key + "=\"" + it->second +
                             "\" is not an integer");
  return static_cast<int>(v);
}

inline const std::string& attr(const Node& n, const std::string& key) {
  const auto it = n.attrs.find(key);
  if (it == n.attrs.end()) throw std::runtime_error("<" + n.name + "> has no " + key);
  return it->second;
}

struct RunOptions {
  std::uint64_t seed = 1;
  int buffer_chunks = 0;  // per connection; 0: unbounded
  int iterations = 2;
  std::size_t race_check_max_tbs = 600;
  // Require every (depid, deps) to name a hasdep transmission by its counter value. The runtime
  // does not: a wait for another value ends at the first hasdep transmission at or after it.
  bool exact_targets = true;
};

// A chunk's content: how many inputs were summed into it and the sum of their weights.
struct Cell {
  std::uint64_t sum = 0;
  int count = 0;
};
inline Cell operator+(const Cell& a, const Cell& b) {
  return Cell{a.sum + b.sum, a.count + b.count};
}

struct Transmission {
  std::string type;
  std::string srcbuf, dstbuf;
  int srcoff = 0, dstoff = 0, cnt = 0;
  bool hasdep = false;
  int step = 0;                           // the kernel's step counter for it
  std::vector<std::pair<int, int>> deps;  // (thread block on this gpu, step), nops' included
  bool sends() const { return type == "s" || type == "rcs" || type == "rrs" || type == "rrcs"; }
  bool receives() const { return type[0] == 'r' && type != "re"; }
};
struct Tb {
  int gpu = 0, id = 0, send = -1, recv = -1, chan = 0;
  std::vector<Transmission> program;
};
struct Unit {
  Cell cell;
  std::vector<int> clock;
};

inline std::uint64_t splitmix(std::uint64_t& x) {
  std::uint64_t z = (x += 0x9e3779b97f4a7c15ULL);
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
  return z ^ (z >> 31);
}

// "" when the XML is a correct in-place AllReduce that the runtime's limits accept and that ends
// correctly, without deadlock, in each run (the file is read once; exact_targets is the first
// run's); else why not, with the run's buffer and seed when there are several.
inline std::string check_allreduce_runs(const std::string& text,
                                        const std::vector<RunOptions>& runs) try {
  if (runs.empty()) throw std::invalid_argument("no run");
  const RunOptions& first = runs.front();
  const Node algo = parse_xml(text);
  if (attr(algo, "coll") != "allreduce") return "coll is not allreduce";
  const int ngpus = attr_int(algo, "ngpus"), nchannels = attr_int(algo, "nchannels");
  const int chunks = attr_int(algo, "nchunksperloop");
  const bool inplace = attr_int(algo, "inplace") == 1;
  if (std::stoll(attr(algo, "minBytes")) < 0 || std::stoll(attr(algo, "maxBytes")) < 0)
    return "negative minBytes or maxBytes";
  for (const char* key : {"name", "proto", "outofplace"}) (void)attr(algo, key);
  if (ngpus < 1 || static_cast<int>(algo.children.size()) != ngpus)
    return "ngpus does not match the <gpu> elements";
  if (ngpus > 1024) return "more than 1024 <gpu> elements (the parser's MAX_SUBS)";
  if (nchannels < 1 || nchannels > 32) return "nchannels outside 1..32";
  if (chunks < 1 || chunks > 32767) return "nchunksperloop outside 1..32767";

  std::vector<Tb> tbs;
  std::vector<std::vector<int>> gpu_tbs(static_cast<std::size_t>(ngpus));  // gpu -> id -> index
  std::vector<std::map<std::string, int>> sizes(static_cast<std::size_t>(ngpus));
  std::set<int> seen_gpus;
  for (const Node& g : algo.children) {
    if (g.name != "gpu") return "unexpected <" + g.name + "> in <algo>";
    const int id = attr_int(g, "id");
    if (id < 0 || id >= ngpus || !seen_gpus.insert(id).second)
      return "bad or repeated gpu id " + std::to_string(id);
    auto& size = sizes[static_cast<std::size_t>(id)];
    size["i"] = attr_int(g, "i_chunks");
    size["o"] = attr_int(g, "o_chunks");
    size["s"] = attr_int(g, "s_chunks");
    if (size["i"] != chunks) return "gpu " + std::to_string(id) + ": i_chunks != nchunksperloop";
    if (size["s"] < 0) return "gpu " + std::to_string(id) + ": negative s_chunks";
    std::map<int, const Node*> by_id;
    int nodes = 1 + ngpus;  // what the parser stores for this rank: <algo>, every <gpu>, ...
    for (const Node& t : g.children) {
      if (t.name != "tb") return "unexpected <" + t.name + "> in <gpu>";
      if (!by_id.emplace(attr_int(t, "id"), &t).second)
        return "gpu " + std::to_string(id) + ": repeated tb id";
      nodes += 1 + static_cast<int>(t.children.size());  // ... its <tb>s and their <step>s
    }
    if (nodes > 4095)
      return "gpu " + std::to_string(id) + ": " + std::to_string(nodes) +
             " XML nodes for the parser (at most 4095)";
    if (!by_id.empty() &&
        (by_id.begin()->first != 0 || by_id.rbegin()->first != static_cast<int>(by_id.size()) - 1))
      return "gpu " + std::to_string(id) + ": tb ids are not 0..k-1";
    if (by_id.size() > 216) return "gpu " + std::to_string(id) + ": more than 216 thread blocks";
    std::map<std::pair<int, int>, int> sends_on, recvs_on;  // (channel, peer) -> thread blocks
    std::map<int, int> send_tbs, recv_tbs;                  // channel -> thread blocks
    for (const auto& [tid, t] : by_id) {
      Tb tb;
      tb.gpu = id;
      tb.id = tid;
      tb.send = attr_int(*t, "send");
      tb.recv = attr_int(*t, "recv");
      tb.chan = attr_int(*t, "chan");
      const std::string where = "gpu " + std::to_string(id) + " tb " + std::to_string(tid);
      if (tb.send == id || tb.recv == id || tb.send < -1 || tb.recv < -1 || tb.send >= ngpus ||
          tb.recv >= ngpus)
        return where + ": bad peer";
      if (tb.chan < 0 || tb.chan >= nchannels) return where + ": channel outside nchannels";
      if (tb.send >= 0 && ++sends_on[{tb.chan, tb.send}] > 1)
        return where + ": second sender to one peer on one channel";
      if (tb.recv >= 0 && ++recvs_on[{tb.chan, tb.recv}] > 1)
        return where + ": second receiver from one peer on one channel";
      if (tb.send >= 0 && ++send_tbs[tb.chan] > 32)
        return where + ": more than 32 send thread blocks on a channel";
      if (tb.recv >= 0 && ++recv_tbs[tb.chan] > 32)
        return where + ": more than 32 receive thread blocks on a channel";
      std::vector<std::pair<int, int>> pending;  // nops' dependencies, for the next transmission
      int step = 0, s_expected = 0;
      for (const Node& sn : t->children) {
        if (sn.name != "step") return where + ": unexpected <" + sn.name + ">";
        const int s = attr_int(sn, "s");
        if (s != s_expected++) return where + ": step numbers are not 0, 1, 2, ...";
        if (s >= 256) return where + ": more than 256 steps";
        Transmission tr;
        tr.type = attr(sn, "type");
        tr.srcbuf = attr(sn, "srcbuf");
        tr.dstbuf = attr(sn, "dstbuf");
        tr.srcoff = attr_int(sn, "srcoff");
        tr.dstoff = attr_int(sn, "dstoff");
        tr.cnt = attr_int(sn, "cnt");
        const int depid = attr_int(sn, "depid"), deps = attr_int(sn, "deps");
        const int hasdep = attr_int(sn, "hasdep");
        if (hasdep != 0 && hasdep != 1) return where + ": hasdep is not 0 or 1";
        tr.hasdep = hasdep == 1;
        static const std::set<std::string> types{"s",   "r",    "rcs", "rrs",
                                                 "rrc", "rrcs", "cpy", "nop"};
        if (!types.count(tr.type)) return where + ": step type " + tr.type + " not supported";
        if (depid > 127) return where + ": depid " + std::to_string(depid) + " over 127 (int8_t)";
        if (depid >= 0) pending.emplace_back(depid, deps);
        if (tr.type == "nop") continue;
        if (depid < 0 && !pending.empty())
          return where + ": the step after nops carries no dependency of its own";
        if (tr.cnt < 1 || tr.cnt >= 72) return where + ": cnt outside 1..71";
        if (tr.sends() && tb.send < 0) return where + ": a send without a send peer";
        if (tr.receives() && tb.recv < 0) return where + ": a receive without a receive peer";
        tr.deps = std::move(pending);
        pending.clear();
        if (!tr.deps.empty()) step += static_cast<int>(tr.deps.size()) - 1;
        tr.step = step++;
        tb.program.push_back(std::move(tr));
      }
      if (!pending.empty()) return where + ": nops at the end of a thread block";
      gpu_tbs[static_cast<std::size_t>(id)].push_back(static_cast<int>(tbs.size()));
      tbs.push_back(std::move(tb));
    }
  }
  // Dependencies name a thread block of the GPU and the counter value of one of its hasdep
  // transmissions (the runtime would accept any value, but then waits for a later step or never).
  for (const Tb& tb : tbs) {
    const auto& local = gpu_tbs[static_cast<std::size_t>(tb.gpu)];
    for (const Transmission& tr : tb.program) {
      for (const auto& [depid, deps] : tr.deps) {
        const std::string where = "gpu " + std::to_string(tb.gpu) + " tb " + std::to_string(tb.id) +
                                  " step " + std::to_string(tr.step);
        if (depid >= static_cast<int>(local.size())) return where + ": depid names no thread block";
        const Tb& dep = tbs[static_cast<std::size_t>(local[static_cast<std::size_t>(depid)])];
        const Transmission* target = nullptr;
        for (const Transmission& x : dep.program)
          if (x.step == deps) target = &x;
        if (!first.exact_targets) continue;
        if (target == nullptr) return where + ": deps names no step";
        if (!target->hasdep) return where + ": its dependency is not marked hasdep";
      }
    }
  }

  // Execution, once per run.
  auto execute = [&](const RunOptions& run) -> std::string {
    const std::size_t nt = tbs.size();
    const int iters = std::max(1, run.iterations);
    const bool clocks = nt <= run.race_check_max_tbs;
    std::uint64_t rng = run.seed;
    std::vector<std::uint64_t> weight(static_cast<std::size_t>(ngpus));
    Cell total;
    for (auto& w : weight) {
      w = splitmix(rng);
      total = total + Cell{w, 1};
    }
    // buffers[gpu][buffer][iteration * chunks_of_buffer + chunk]
    std::vector<std::map<std::string, std::vector<Cell>>> buffers(static_cast<std::size_t>(ngpus));
    for (int g = 0; g < ngpus; ++g) {
      auto& buf = buffers[static_cast<std::size_t>(g)];
      const auto& size = sizes[static_cast<std::size_t>(g)];
      buf["i"].assign(static_cast<std::size_t>(iters * size.at("i")),
                      Cell{weight[static_cast<std::size_t>(g)], 1});
      if (!inplace) buf["o"].assign(static_cast<std::size_t>(iters * size.at("o")), Cell{});
      buf["s"].assign(static_cast<std::size_t>(iters * size.at("s")), Cell{});
    }
    struct State {
      std::size_t pc = 0;  // iteration * program size + transmission
      bool started = false;
      int done = 0;  // chunks of the current transmission moved
      long long flag = -1;
      std::vector<int> clock;
      std::vector<std::vector<int>> published;  // clock at each flag value, by pc
    };
    std::vector<State> state(nt);
    for (std::size_t t = 0; t < nt; ++t) {
      if (clocks) state[t].clock.assign(nt, 0);
      state[t].published.resize(tbs[t].program.size() * static_cast<std::size_t>(iters));
    }
    // Connections (from, to, channel) as indices into `links`, with their two thread blocks.
    std::map<std::tuple<int, int, int>, int> link_ids;
    auto link_id = [&](int from, int to, int chan) {
      return link_ids.try_emplace({from, to, chan}, static_cast<int>(link_ids.size()))
          .first->second;
    };
    std::vector<int> in_link(nt, -1), out_link(nt, -1);
    for (std::size_t t = 0; t < nt; ++t) {
      if (tbs[t].recv >= 0) in_link[t] = link_id(tbs[t].recv, tbs[t].gpu, tbs[t].chan);
      if (tbs[t].send >= 0) out_link[t] = link_id(tbs[t].gpu, tbs[t].send, tbs[t].chan);
    }
    std::vector<std::deque<Unit>> links(link_ids.size());
    std::vector<int> receiver(link_ids.size(), -1), sender(link_ids.size(), -1);
    for (std::size_t t = 0; t < nt; ++t) {
      if (in_link[t] >= 0) receiver[static_cast<std::size_t>(in_link[t])] = static_cast<int>(t);
      if (out_link[t] >= 0) sender[static_cast<std::size_t>(out_link[t])] = static_cast<int>(t);
    }
    struct Access {
      int tb = -1, tick = 0;
    };
    // accesses[gpu][buffer][iteration * chunks_of_buffer + chunk]: the last write and reads since.
    std::vector<std::map<std::string, std::vector<std::pair<Access, std::vector<Access>>>>>
        accesses(static_cast<std::size_t>(ngpus));
    if (clocks) {
      for (int g = 0; g < ngpus; ++g)
        for (const auto& [b, size] : sizes[static_cast<std::size_t>(g)])
          accesses[static_cast<std::size_t>(g)][b].resize(static_cast<std::size_t>(iters * size));
    }
    auto join = [](std::vector<int>& into, const std::vector<int>& other) {
      for (std::size_t k = 0; k < into.size(); ++k) into[k] = std::max(into[k], other[k]);
    };
    constexpr long long kIter = 1 << 16;
    auto flag_index = [&](const Tb& tb, long long value) -> std::size_t {
      // pc of the transmission that published `value`
      const long long it = value / kIter, step = value % kIter;
      for (std::size_t k = 0; k < tb.program.size(); ++k)
        if (tb.program[k].step == step) return static_cast<std::size_t>(it) * tb.program.size() + k;
      throw std::logic_error("flag without a transmission");
    };

    std::vector<int> candidates;
    std::vector<char> listed(nt, 0);
    auto wake = [&](int t) {
      const std::size_t u = static_cast<std::size_t>(t);
      if (listed[u] || state[u].pc >= tbs[u].program.size() * static_cast<std::size_t>(iters))
        return;
      listed[u] = 1;
      candidates.push_back(t);
    };
    for (std::size_t t = 0; t < nt; ++t) wake(static_cast<int>(t));
    const std::size_t cap =
        run.buffer_chunks > 0 ? static_cast<std::size_t>(run.buffer_chunks) : SIZE_MAX;

    // One move of thread block t: start its transmission, or move one chunk of it, or finish it.
    // Returns false when it has to wait.
    auto move = [&](std::size_t t) -> bool {
      Tb& tb = tbs[t];
      State& st = state[t];
      const std::size_t psize = tb.program.size();
      const int it = static_cast<int>(st.pc / psize);
      const Transmission& tr = tb.program[st.pc % psize];
      auto where = [&] {
        return "gpu " + std::to_string(tb.gpu) + " tb " + std::to_string(tb.id) + " step " +
               std::to_string(tr.step);
      };
      const auto& local = gpu_tbs[static_cast<std::size_t>(tb.gpu)];
      if (!st.started) {
        for (const auto& [depid, deps] : tr.deps) {
          const std::size_t d = static_cast<std::size_t>(local[static_cast<std::size_t>(depid)]);
          if (state[d].flag < it * kIter + deps) return false;
        }
        if (clocks) {
          for (const auto& [depid, deps] : tr.deps) {
            const std::size_t d = static_cast<std::size_t>(local[static_cast<std::size_t>(depid)]);
            join(st.clock, state[d].published[flag_index(tbs[d], state[d].flag)]);
          }
        }
        st.started = true;
        st.done = 0;
        return true;
      }
      if (st.done < tr.cnt) {
        if (tr.receives() && links[static_cast<std::size_t>(in_link[t])].empty()) return false;
        if (tr.sends() && links[static_cast<std::size_t>(out_link[t])].size() >= cap) return false;
        if (clocks) ++st.clock[t];
        auto& buf = buffers[static_cast<std::size_t>(tb.gpu)];
        const auto& size = sizes[static_cast<std::size_t>(tb.gpu)];
        auto cell = [&](const std::string& name, int off, bool write) -> Cell& {
          const std::string b = (inplace && name == "o") ? "i" : name;
          const auto sz = size.find(b);
          if (sz == size.end() || buf.find(b) == buf.end())
            throw std::runtime_error(where() + ": unknown buffer " + name);
          if (off < 0 || off + tr.cnt > sz->second)
            throw std::runtime_error(where() + ": offset " + std::to_string(off) +
                                     " outside buffer " + name);
          const int c = off + st.done;
          if (clocks) {
            auto& [last, reads] = accesses[static_cast<std::size_t>(tb.gpu)][b]
                                          [static_cast<std::size_t>(it * sz->second + c)];
            auto before = [&](const Access& a) {
              return a.tb < 0 || st.clock[static_cast<std::size_t>(a.tb)] >= a.tick;
            };
            if (!before(last))
              throw std::runtime_error(where() + ": race: accesses chunk " + std::to_string(c) +
                                       " after an unordered write of it");
            if (write) {
              for (const Access& r : reads)
                if (!before(r))
                  throw std::runtime_error(where() + ": race: overwrites chunk " +
                                           std::to_string(c) + " while an unordered step reads it");
              last = Access{static_cast<int>(t), st.clock[t]};
              reads.clear();
            } else {
              reads.push_back(Access{static_cast<int>(t), st.clock[t]});
            }
          }
          return buf[b][static_cast<std::size_t>(it * sz->second + c)];
        };
        Unit in;
        if (tr.receives()) {
          auto& q = links[static_cast<std::size_t>(in_link[t])];
          in = std::move(q.front());
          q.pop_front();
          if (clocks) join(st.clock, in.clock);
          if (sender[static_cast<std::size_t>(in_link[t])] >= 0)
            wake(sender[static_cast<std::size_t>(in_link[t])]);
        }
        Cell out;
        if (tr.type == "s") {
          out = cell(tr.srcbuf, tr.srcoff, false);
        } else if (tr.type == "r") {
          cell(tr.dstbuf, tr.dstoff, true) = in.cell;
        } else if (tr.type == "rcs") {
          cell(tr.dstbuf, tr.dstoff, true) = in.cell;
          out = in.cell;
        } else if (tr.type == "rrs") {
          out = cell(tr.srcbuf, tr.srcoff, false) + in.cell;
        } else if (tr.type == "rrc" || tr.type == "rrcs") {
          out = cell(tr.srcbuf, tr.srcoff, false) + in.cell;
          cell(tr.dstbuf, tr.dstoff, true) = out;
        } else if (tr.type == "cpy") {
          const Cell v = cell(tr.srcbuf, tr.srcoff, false);
          cell(tr.dstbuf, tr.dstoff, true) = v;
        }
        if (tr.sends()) {
          links[static_cast<std::size_t>(out_link[t])].push_back(
              Unit{out, clocks ? st.clock : std::vector<int>{}});
          if (receiver[static_cast<std::size_t>(out_link[t])] >= 0)
            wake(receiver[static_cast<std::size_t>(out_link[t])]);
        }
        ++st.done;
        return true;
      }
      if (tr.hasdep) {
        st.flag = it * kIter + tr.step;
        if (clocks) st.published[st.pc] = st.clock;
        for (int other : local) wake(other);
      }
      st.started = false;
      ++st.pc;
      return true;
    };

    while (!candidates.empty()) {
      const std::size_t k = static_cast<std::size_t>(splitmix(rng) % candidates.size());
      const int t = candidates[k];
      const std::size_t u = static_cast<std::size_t>(t);
      bool moved = false;
      // A few moves in a row, so that a transmission is not always cut into single chunks.
      const int burst = 1 + static_cast<int>(splitmix(rng) % 4);
      for (int b = 0;
           b < burst && state[u].pc < tbs[u].program.size() * static_cast<std::size_t>(iters);
           ++b) {
        if (!move(u)) break;
        moved = true;
      }
      if (!moved || state[u].pc >= tbs[u].program.size() * static_cast<std::size_t>(iters)) {
        listed[u] = 0;
        candidates[k] = candidates.back();
        candidates.pop_back();
      }
    }
    // A deadlock: report the thread blocks that wait and on what (the first few).
    std::string stuck;
    int nstuck = 0;
    for (std::size_t t = 0; t < nt; ++t) {
      const State& st = state[t];
      const Tb& tb = tbs[t];
      if (st.pc >= tb.program.size() * static_cast<std::size_t>(iters)) continue;
      const Transmission& tr = tb.program[st.pc % tb.program.size()];
      if (++nstuck > 6) continue;
      stuck += (stuck.empty() ? "" : "; ") + std::string("gpu ") + std::to_string(tb.gpu) + " tb " +
               std::to_string(tb.id) + " step " + std::to_string(tr.step) + " (" + tr.type +
               ", iteration " + std::to_string(st.pc / tb.program.size()) + ") ";
      if (!st.started) {
        stuck += "waits for a dependency";
      } else if (tr.receives() && links[static_cast<std::size_t>(in_link[t])].empty()) {
        stuck += "waits for data from gpu " + std::to_string(tb.recv);
      } else {
        stuck += "waits for room to gpu " + std::to_string(tb.send);
      }
    }
    if (nstuck > 0)
      return "deadlock: " + stuck +
             (nstuck > 6 ? "; and " + std::to_string(nstuck - 6) + " more" : "");
    for (const auto& [key, id] : link_ids)
      if (!links[static_cast<std::size_t>(id)].empty())
        return "a message from gpu " + std::to_string(std::get<0>(key)) + " to gpu " +
               std::to_string(std::get<1>(key)) + " is never received";
    for (int g = 0; g < ngpus; ++g) {
      const auto& result = buffers[static_cast<std::size_t>(g)][inplace ? "i" : "o"];
      const int size = sizes[static_cast<std::size_t>(g)].at(inplace ? "i" : "o");
      if (size < chunks) return "gpu " + std::to_string(g) + ": output smaller than nchunksperloop";
      for (int it = 0; it < iters; ++it) {
        for (int c = 0; c < chunks; ++c) {
          const Cell& cell = result[static_cast<std::size_t>(it * size + c)];
          if (cell.count != total.count || cell.sum != total.sum)
            return "gpu " + std::to_string(g) + " chunk " + std::to_string(c) + " (iteration " +
                   std::to_string(it) + ") holds " + std::to_string(cell.count) +
                   " contributions, not each of the " + std::to_string(ngpus) + " inputs once";
        }
      }
    }
    return "";
  };
  for (const RunOptions& run : runs) {
    const std::string e = execute(run);
    if (!e.empty()) {
      if (runs.size() == 1) return e;
      return "buffer " + std::to_string(run.buffer_chunks) + " seed " + std::to_string(run.seed) +
             ": " + e;
    }
  }
  return "";
} catch (const std::exception& e) {
  return e.what();
}

inline std::string check_allreduce(const std::string& text, const RunOptions& run = {}) {
  return check_allreduce_runs(text, {run});
}

}  // namespace ssim::testing::msccl_reader
