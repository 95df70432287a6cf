// Test support: an independent reader and symbolic executor of MSCCL algorithm XML files (the
// subset msccl-executor-nccl's parser accepts: <algo>, <gpu>, <tb>, <step>, comments). It shares
// no code with algorithms/msccl_xml.cpp on purpose: it reads the file as the runtime would and
// runs it.
//
//   const std::string error = msccl_reader::check_allreduce(xml_text);   // "" when correct
//
// Execution: every thread block runs its steps in order; a step waits for its dependency
// (depid, deps: thread block depid has completed its step number deps, nops counted, as the
// runtime's kernel counts; the target must carry hasdep="1")
// and a receive for the next message on its (peer -> gpu, channel) connection (FIFO, sends
// never block). Buffers hold, per chunk, how many times each rank's input was summed into it.
// A vector clock per thread block checks that conflicting accesses to a chunk are ordered by
// the steps, dependencies and messages (a missing dependency is a race even when this
// particular run order happens to be harmless). At the end every rank's output must hold, in
// every chunk, every rank's contribution exactly once, and no message may be left over.
#pragma once

#include <cctype>
#include <deque>
#include <map>
#include <set>
#include <stdexcept>
#include <string>
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

// One cell: how many times each rank's input is summed into this chunk.
using Cell = std::vector<int>;

struct Step {
  std::string type;
  std::string srcbuf, dstbuf;
  int srcoff = 0, dstoff = 0, cnt = 0, depid = -1, deps = -1;
  bool hasdep = false;
};
struct Tb {
  int gpu = 0, send = -1, recv = -1, chan = 0, global = 0;
  std::vector<Step> steps;
  std::vector<std::size_t> transmissions;  // indices of the non-nop steps
};
struct Message {
  std::vector<Cell> cells;
  std::vector<int> clock;
};
struct Access {
  int tb = -1, tick = 0;  // global thread block and its clock value at the access
};

inline Cell sum(const Cell& a, const Cell& b) {
  Cell c = a;
  for (std::size_t k = 0; k < c.size(); ++k) c[k] += b[k];
  return c;
}

// "" when the XML is a correct in-place AllReduce that the runtime's limits accept; else why not.
inline std::string check_allreduce(const std::string& text) try {
  const Node algo = parse_xml(text);
  if (attr(algo, "coll") != "allreduce") return "coll is not allreduce";
  const int ngpus = attr_int(algo, "ngpus"), nchannels = attr_int(algo, "nchannels");
  const bool inplace = attr_int(algo, "inplace") == 1;
  for (const char* key : {"name", "proto", "nchunksperloop", "outofplace", "minBytes", "maxBytes"})
    (void)attr(algo, key);
  if (ngpus < 1 || static_cast<int>(algo.children.size()) != ngpus)
    return "ngpus does not match the <gpu> elements";

  std::vector<Tb> tbs;
  std::vector<std::vector<int>> gpu_tbs(
      static_cast<std::size_t>(ngpus));  // gpu -> local id -> global
  std::vector<std::map<std::string, std::vector<Cell>>> buffers(static_cast<std::size_t>(ngpus));
  std::set<int> seen_gpus;
  for (const Node& g : algo.children) {
    if (g.name != "gpu") return "unexpected <" + g.name + "> in <algo>";
    const int id = attr_int(g, "id");
    if (id < 0 || id >= ngpus || !seen_gpus.insert(id).second)
      return "bad or repeated gpu id " + std::to_string(id);
    const int ic = attr_int(g, "i_chunks"), oc = attr_int(g, "o_chunks"),
              sc = attr_int(g, "s_chunks");
    auto& buf = buffers[static_cast<std::size_t>(id)];
    buf["i"].assign(static_cast<std::size_t>(ic), Cell(static_cast<std::size_t>(ngpus), 0));
    for (Cell& c : buf["i"]) c[static_cast<std::size_t>(id)] = 1;
    if (!inplace)
      buf["o"].assign(static_cast<std::size_t>(oc), Cell(static_cast<std::size_t>(ngpus), 0));
    buf["s"].assign(static_cast<std::size_t>(sc), Cell(static_cast<std::size_t>(ngpus), 0));
    std::map<int, const Node*> by_id;
    for (const Node& t : g.children) {
      if (t.name != "tb") return "unexpected <" + t.name + "> in <gpu>";
      if (!by_id.emplace(attr_int(t, "id"), &t).second)
        return "gpu " + std::to_string(id) + ": repeated tb id";
    }
    if (!by_id.empty() &&
        (by_id.begin()->first != 0 || by_id.rbegin()->first != static_cast<int>(by_id.size()) - 1))
      return "gpu " + std::to_string(id) + ": tb ids are not 0..k-1";
    if (by_id.size() > 216) return "gpu " + std::to_string(id) + ": more than 216 thread blocks";
    std::map<std::pair<int, int>, int> sends_on, recvs_on;  // (channel, peer) -> thread blocks
    std::map<int, int> send_tbs, recv_tbs;                  // channel -> thread blocks
    for (const auto& [tid, t] : by_id) {
      Tb tb;
      tb.gpu = id;
      tb.send = attr_int(*t, "send");
      tb.recv = attr_int(*t, "recv");
      tb.chan = attr_int(*t, "chan");
      tb.global = static_cast<int>(tbs.size());
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
      bool pending_nop = false;
      for (const Node& sn : t->children) {
        if (sn.name != "step") return where + ": unexpected <" + sn.name + ">";
        Step st;
        if (attr_int(sn, "s") != static_cast<int>(tb.steps.size()))
          return where + ": step numbers are not 0, 1, 2, ...";
        st.type = attr(sn, "type");
        st.srcbuf = attr(sn, "srcbuf");
        st.dstbuf = attr(sn, "dstbuf");
        st.srcoff = attr_int(sn, "srcoff");
        st.dstoff = attr_int(sn, "dstoff");
        st.cnt = attr_int(sn, "cnt");
        st.depid = attr_int(sn, "depid");
        st.deps = attr_int(sn, "deps");
        st.hasdep = attr_int(sn, "hasdep") == 1;
        static const std::set<std::string> types{"s",    "r",   "rcs", "rrs", "rrc",
                                                 "rrcs", "cpy", "re",  "nop"};
        if (!types.count(st.type)) return where + ": unknown step type " + st.type;
        if (st.type != "nop" && (st.cnt < 1 || st.cnt >= 72)) return where + ": cnt outside 1..71";
        const bool sends =
            st.type == "s" || st.type == "rcs" || st.type == "rrs" || st.type == "rrcs";
        const bool recvs = st.type[0] == 'r' && st.type != "re";
        if (sends && tb.send < 0) return where + ": a send without a send peer";
        if (recvs && tb.recv < 0) return where + ": a receive without a receive peer";
        if (st.type == "nop" && st.depid < 0) return where + ": a nop without a dependency";
        if (st.type != "nop" && pending_nop && st.depid < 0)
          return where + ": the step after nops carries no dependency of its own";
        pending_nop = st.type == "nop";
        if (st.type != "nop") tb.transmissions.push_back(tb.steps.size());
        tb.steps.push_back(st);
      }
      if (tb.steps.size() > 256) return where + ": more than 256 steps";
      gpu_tbs[static_cast<std::size_t>(id)].push_back(tb.global);
      tbs.push_back(std::move(tb));
    }
  }
  // Dependencies point at an existing step of another thread block of the GPU, marked hasdep.
  for (const Tb& tb : tbs) {
    const auto& local = gpu_tbs[static_cast<std::size_t>(tb.gpu)];
    for (std::size_t k = 0; k < tb.steps.size(); ++k) {
      const Step& st = tb.steps[k];
      if (st.depid < 0) continue;
      const std::string where = "gpu " + std::to_string(tb.gpu) + " step " + std::to_string(k);
      if (st.depid >= static_cast<int>(local.size()))
        return where + ": depid names no thread block";
      const Tb& dep = tbs[static_cast<std::size_t>(local[static_cast<std::size_t>(st.depid)])];
      if (dep.global == tb.global) return where + ": depends on its own thread block";
      if (st.deps < 0 || st.deps >= static_cast<int>(dep.steps.size()) ||
          dep.steps[static_cast<std::size_t>(st.deps)].type == "nop")
        return where + ": deps names no step";
      if (!dep.steps[static_cast<std::size_t>(st.deps)].hasdep)
        return where + ": its dependency is not marked hasdep";
    }
  }

  const std::size_t nt = tbs.size();
  std::vector<std::size_t> pc(nt, 0);
  std::vector<std::vector<int>> clock(nt, std::vector<int>(nt, 0));
  std::vector<std::vector<std::vector<int>>> history(nt);          // clock after each step
  std::map<std::tuple<int, int, int>, std::deque<Message>> links;  // (from, to, channel)
  std::map<std::tuple<int, std::string, int>, std::pair<Access, std::vector<Access>>> accesses;
  auto join = [](std::vector<int>& into, const std::vector<int>& other) {
    for (std::size_t k = 0; k < into.size(); ++k) into[k] = std::max(into[k], other[k]);
  };
  auto before = [&](const Access& a, const std::vector<int>& now) {
    return a.tb < 0 || now[static_cast<std::size_t>(a.tb)] >= a.tick;
  };
  std::size_t remaining = 0;
  for (const Tb& tb : tbs) remaining += tb.steps.size();
  while (remaining > 0) {
    bool progress = false;
    for (std::size_t t = 0; t < nt; ++t) {
      Tb& tb = tbs[t];
      while (pc[t] < tb.steps.size()) {
        const Step& st = tb.steps[pc[t]];
        const std::string where = "gpu " + std::to_string(tb.gpu) + " tb " + std::to_string(t) +
                                  " step " + std::to_string(pc[t]);
        std::vector<int> now = clock[t];
        if (st.depid >= 0) {
          const std::size_t d = static_cast<std::size_t>(
              gpu_tbs[static_cast<std::size_t>(tb.gpu)][static_cast<std::size_t>(st.depid)]);
          const auto target = static_cast<std::size_t>(st.deps);
          if (pc[d] <= target) break;
          join(now, history[d][target]);
        }
        const bool recvs = st.type[0] == 'r' && st.type != "re";
        Message in;
        if (recvs) {
          auto& q = links[{tb.recv, tb.gpu, tb.chan}];
          if (q.empty()) break;
          in = std::move(q.front());
          q.pop_front();
          if (static_cast<int>(in.cells.size()) != st.cnt)
            return where + ": received " + std::to_string(in.cells.size()) + " chunks, expected " +
                   std::to_string(st.cnt);
          join(now, in.clock);
        }
        ++now[t];
        auto& buf = buffers[static_cast<std::size_t>(tb.gpu)];
        auto buffer = [&](const std::string& name) -> std::vector<Cell>& {
          const std::string b = (inplace && name == "o") ? "i" : name;
          auto it = buf.find(b);
          if (it == buf.end()) throw std::runtime_error(where + ": unknown buffer " + name);
          return it->second;
        };
        auto touch = [&](const std::string& name, int off, bool write) {
          if (off < 0 || off + st.cnt > static_cast<int>(buffer(name).size()))
            throw std::runtime_error(where + ": offset " + std::to_string(off) +
                                     " outside buffer " + name);
          for (int c = off; c < off + st.cnt; ++c) {
            auto& [last, reads] = accesses[{tb.gpu, (inplace && name == "o") ? "i" : name, c}];
            if (!before(last, now))
              throw std::runtime_error(where + ": race: accesses chunk " + std::to_string(c) +
                                       " after an unordered write of it");
            if (write) {
              for (const Access& r : reads)
                if (r.tb != static_cast<int>(t) && !before(r, now))
                  throw std::runtime_error(where + ": race: overwrites chunk " + std::to_string(c) +
                                           " while an unordered step reads it");
              last = Access{static_cast<int>(t), now[t]};
              reads.clear();
            } else {
              reads.push_back(Access{static_cast<int>(t), now[t]});
            }
          }
        };
        auto read = [&](const std::string& name, int off) {
          touch(name, off, false);
          return std::vector<Cell>(buffer(name).begin() + off, buffer(name).begin() + off + st.cnt);
        };
        auto write = [&](const std::string& name, int off, const std::vector<Cell>& cells) {
          touch(name, off, true);
          for (int k = 0; k < st.cnt; ++k)
            buffer(name)[static_cast<std::size_t>(off + k)] = cells[static_cast<std::size_t>(k)];
        };
        auto add = [&](const std::vector<Cell>& a, const std::vector<Cell>& b) {
          std::vector<Cell> c;
          for (std::size_t k = 0; k < a.size(); ++k) c.push_back(sum(a[k], b[k]));
          return c;
        };
        std::vector<Cell> out;
        bool sends = false;
        if (st.type == "s") {
          out = read(st.srcbuf, st.srcoff);
          sends = true;
        } else if (st.type == "r") {
          write(st.dstbuf, st.dstoff, in.cells);
        } else if (st.type == "rcs") {
          write(st.dstbuf, st.dstoff, in.cells);
          out = in.cells;
          sends = true;
        } else if (st.type == "rrc" || st.type == "rrcs" || st.type == "rrs") {
          out = add(read(st.srcbuf, st.srcoff), in.cells);
          if (st.type != "rrs") write(st.dstbuf, st.dstoff, out);
          sends = st.type != "rrc";
        } else if (st.type == "cpy") {
          write(st.dstbuf, st.dstoff, read(st.srcbuf, st.srcoff));
        } else if (st.type == "re") {
          write(st.dstbuf, st.dstoff, add(read(st.dstbuf, st.dstoff), read(st.srcbuf, st.srcoff)));
        }
        if (sends) links[{tb.gpu, tb.send, tb.chan}].push_back(Message{out, now});
        clock[t] = now;
        history[t].push_back(now);
        ++pc[t];
        --remaining;
        progress = true;
      }
    }
    if (!progress) {
      for (std::size_t t = 0; t < nt; ++t)
        if (pc[t] < tbs[t].steps.size())
          return "deadlock: gpu " + std::to_string(tbs[t].gpu) + " tb " + std::to_string(t) +
                 " waits at step " + std::to_string(pc[t]);
    }
  }
  for (const auto& [key, q] : links)
    if (!q.empty())
      return "a message from gpu " + std::to_string(std::get<0>(key)) + " to gpu " +
             std::to_string(std::get<1>(key)) + " is never received";
  for (int g = 0; g < ngpus; ++g) {
    const auto& result = buffers[static_cast<std::size_t>(g)][inplace ? "i" : "o"];
    const int chunks = attr_int(algo, "nchunksperloop");
    if (static_cast<int>(result.size()) < chunks)
      return "gpu " + std::to_string(g) + ": output smaller than nchunksperloop";
    for (int c = 0; c < chunks; ++c) {
      for (int r = 0; r < ngpus; ++r) {
        const int times = result[static_cast<std::size_t>(c)][static_cast<std::size_t>(r)];
        if (times != 1)
          return "gpu " + std::to_string(g) + " chunk " + std::to_string(c) + " holds rank " +
                 std::to_string(r) + "'s input " + std::to_string(times) + " times";
      }
    }
  }
  return "";
} catch (const std::exception& e) {
  return e.what();
}

}  // namespace ssim::testing::msccl_reader
