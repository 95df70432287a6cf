// stragglar_sat: decides with a SAT solver whether StragglAR's phase 2 on n ranks fits in R
// rounds (default: the lower bound n-2+ceil(log2 n)), or a sound relaxation of that question.
// It writes the question as DIMACS CNF, runs an external solver (CaDiCaL, Kissat, MiniSat:
// none is a build dependency), and checks any schedule the solver returns: a full phase 2 with
// ring ReduceScatter in front goes through the project's verifier, a relaxation through an
// independent replay of its holdings. algorithms/README.md ("The bound is attainable at
// n = 33") has the results and the commands.
//
//   stragglar_sat --ranks 12                              # bound, full problem: SAT, verified
//   stragglar_sat --ranks 33 --keep 9 --time-limit 600    # the last 10 chunks only
//   stragglar_sat --ranks 9 --rounds 10 --expect unsat    # one round under the bound
//   stragglar_sat --ranks 33 --window 7 --cyclic-from 7   # the search that found n = 33
//   stragglar_sat --ranks 33 --cnf q.cnf --cnf-only       # for any other solver
//
// Model (stragglar.cpp): ranks 0..m-1 (m = n-1) and the straggler S = n-1, chunks 0..m-1. In
// round r <= m-1 rank r and S exchange chunk r, after which both hold it finished; both are
// busy in that round. Every other transfer copies a finished chunk from a holder; a rank sends
// at most one and receives at most one chunk per round. S holds every chunk from round m on and
// may then send. At the end every rank holds every chunk.
//
// Variables, for rank v < m, kept chunk c and round t: H(v,c,t) (v holds c at the start of
// round t), Snd(u,c,t) (u sends c in round t; u = S too from round m on), Rcv(v,c,t). Since
// any holder may send to any rank, a round is feasible iff per chunk the receivers are no more
// than the senders: a totalizer per (chunk, round) compares the two counts, so no variable names
// a (sender, receiver) pair and the solver never permutes equal senders.
//
// Relaxation --keep K: only the last K+1 chunks (c >= m-1-K) and the rounds from m-1-K on.
// The dropped chunks only use send and receive ports, and no kept chunk exists before round
// m-1-K, so a phase 2 in R rounds restricts to a solution of the relaxation: UNSAT for some K
// proves R rounds impossible. Ranks 0..m-2-K have no exchange in the kept rounds and start with
// nothing, so they are interchangeable; their receive vectors are ordered lexicographically
// (sound symmetry breaking: any solution can be sorted).
//
// Restrictions (search aids, not sound for UNSAT): --window W, chunk c is copied only in rounds
// c+1..c+W (the doubling construction has W = ceil(log2 n)); --cyclic-from T, rounds T..m-1
// repeat the round before with ranks shifted by one (mod m) and chunks by one, so the middle of
// phase 2 is one round pattern (--template-out writes it in the form stragglar_tables.hpp
// embeds, after verifying its expansion).
#include <unistd.h>

#include <CLI/CLI.hpp>
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <optional>
#include <sstream>
#include <string>
#include <vector>

#include "algorithms/generators.hpp"
#include "algorithms/schedule.hpp"
#include "algorithms/schedule_json.hpp"
#include "algorithms/verifier.hpp"
#include "common/bits.hpp"
#include "common/output_file.hpp"

namespace {

using ssim::alg::Op;
using ssim::alg::Round;
using ssim::alg::Schedule;

using ssim::ceil_log2;

// DIMACS literals; kTrue/kFalse are constants folded away when clauses are added.
constexpr int kTrue = 1 << 30;
constexpr int kFalse = -kTrue;

class Cnf {
 public:
  int fresh() { return ++vars_; }
  // Adds the clause with constants simplified (a true literal drops it, a false one is left out).
  void add(std::initializer_list<int> lits) { add(std::vector<int>(lits)); }
  void add(const std::vector<int>& lits) {
    std::vector<int> c;
    for (int l : lits) {
      if (l == kTrue) return;
      if (l != kFalse) c.push_back(l);
    }
    if (c.empty()) empty_clause_ = true;
    clauses_.push_back(std::move(c));
  }
  int vars() const { return vars_; }
  std::size_t clauses() const { return clauses_.size(); }
  void write(std::ostream& os) const {
    os << "p cnf " << vars_ << " " << clauses_.size() + (empty_clause_ ? 1 : 0) << "\n";
    for (const auto& c : clauses_) {
      for (int l : c) os << l << " ";
      os << "0\n";
    }
  }

 private:
  int vars_ = 0;
  bool empty_clause_ = false;  // an all-false clause was added: written as "0" (UNSAT)
  std::vector<std::vector<int>> clauses_;
};

int neg(int l) { return -l; }  // kTrue <-> kFalse as well

// At most one of `lits` (sequential counter for more than 5).
void at_most_one(Cnf& f, std::vector<int> lits) {
  std::erase(lits, kFalse);
  if (lits.size() <= 5) {
    for (std::size_t i = 0; i < lits.size(); ++i)
      for (std::size_t j = i + 1; j < lits.size(); ++j) f.add({-lits[i], -lits[j]});
    return;
  }
  int prev = lits[0];  // "one of lits[0..i] is true"
  for (std::size_t i = 1; i < lits.size(); ++i) {
    f.add({-prev, -lits[i]});
    if (i + 1 == lits.size()) break;
    const int s = f.fresh();
    f.add({-prev, s});
    f.add({-lits[i], s});
    prev = s;
  }
}

// Unary count of `lits` by a totalizer: out[k-1] stands for "at least k are true". `up`: at
// least k true implies out[k-1]; otherwise out[k-1] implies at least k true.
std::vector<int> totalizer(Cnf& f, std::vector<int> lits, bool up) {
  std::erase(lits, kFalse);
  if (lits.size() <= 1) return lits;
  const std::size_t half = lits.size() / 2;
  const std::vector<int> a = totalizer(f, {lits.begin(), lits.begin() + half}, up);
  const std::vector<int> b = totalizer(f, {lits.begin() + half, lits.end()}, up);
  std::vector<int> out(a.size() + b.size());
  for (int& o : out) o = f.fresh();
  const int p = static_cast<int>(a.size()), q = static_cast<int>(b.size());
  for (int i = 0; i <= p; ++i) {
    for (int j = 0; j <= q; ++j) {
      if (up && i + j > 0) {  // a >= i and b >= j  ->  out >= i+j
        f.add({i ? -a[i - 1] : kFalse, j ? -b[j - 1] : kFalse, out[i + j - 1]});
      }
      if (!up && i + j < p + q) {  // out >= i+j+1  ->  a >= i+1 or b >= j+1
        f.add({-out[i + j], i < p ? a[i] : kFalse, j < q ? b[j] : kFalse});
      }
    }
  }
  return out;
}

// sum(small) <= sum(large).
void at_most_as_many(Cnf& f, const std::vector<int>& small, const std::vector<int>& large) {
  const std::vector<int> s = totalizer(f, small, true);
  const std::vector<int> l = totalizer(f, large, false);
  for (std::size_t k = 0; k < s.size(); ++k) f.add({-s[k], k < l.size() ? l[k] : kFalse});
}

struct Problem {
  int n = 0;
  int rounds = 0;
  int keep = -1;   // K: chunks m-1-K .. m-1 and rounds from m-1-K on; m-1 (all) by default
  int window = 0;  // 0: none; else chunk c only copied in rounds c+1 .. c+window
  bool symmetry = true;
  int cyclic_from = 0;  // 0: off; else rounds cyclic_from..m-1 repeat the round before, shifted

  int m() const { return n - 1; }
  int first() const { return m() - 1 - keep; }  // first kept chunk and first round
  bool full() const { return first() == 0; }
  int straggler() const { return n - 1; }
  int busy(int t) const { return t < m() ? t : -1; }  // the non-straggler exchanging in round t
};

class Encoding {
 public:
  explicit Encoding(const Problem& p) : p_(p) {
    const int m = p.m(), K = p.keep + 1, T = p.rounds - p.first();
    hold_.assign(static_cast<std::size_t>(m) * K * (T + 1), kFalse);
    send_.assign(static_cast<std::size_t>(m + 1) * K * T, kFalse);
    recv_.assign(static_cast<std::size_t>(m) * K * T, kFalse);
    build();
  }

  const Cnf& cnf() const { return f_; }
  int send(int u, int c, int t) const { return send_[sidx(u, c, t)]; }
  int recv(int v, int c, int t) const { return recv_[ridx(v, c, t)]; }

 private:
  std::size_t hidx(int v, int c, int t) const {
    const int K = p_.keep + 1, T = p_.rounds - p_.first();
    return (static_cast<std::size_t>(v) * K + (c - p_.first())) * (T + 1) + (t - p_.first());
  }
  std::size_t sidx(int u, int c, int t) const {
    const int K = p_.keep + 1, T = p_.rounds - p_.first();
    return (static_cast<std::size_t>(u) * K + (c - p_.first())) * T + (t - p_.first());
  }
  std::size_t ridx(int v, int c, int t) const { return sidx(v, c, t); }

  // Chunk c may be copied in round t.
  bool live(int c, int t) const { return t > c && (p_.window == 0 || t <= c + p_.window); }

  void build() {
    const int m = p_.m(), R = p_.rounds, c0 = p_.first();
    // Holdings: none before the release, rank c from then on, everyone at the end (and after
    // the window).
    for (int v = 0; v < m; ++v) {
      for (int c = c0; c < m; ++c) {
        for (int t = c0; t <= R; ++t) {
          int& h = hold_[hidx(v, c, t)];
          if (t <= c)
            h = kFalse;
          else if (v == c || t == R || (p_.window && t > c + p_.window))
            h = kTrue;
          else
            h = f_.fresh();
        }
      }
    }
    for (int t = c0; t < R; ++t) {
      for (int c = c0; c < m; ++c) {
        if (!live(c, t)) continue;
        for (int v = 0; v < m; ++v) {
          if (v == p_.busy(t)) continue;
          if (hold_[hidx(v, c, t)] != kFalse) send_[sidx(v, c, t)] = f_.fresh();
          if (hold_[hidx(v, c, t)] != kTrue) recv_[ridx(v, c, t)] = f_.fresh();
        }
        if (t >= m) send_[sidx(m, c, t)] = f_.fresh();
      }
    }
    for (int v = 0; v < m; ++v) {
      for (int c = c0; c < m; ++c) {
        for (int t = c0; t < R; ++t) {
          const int h = hold_[hidx(v, c, t)], next = hold_[hidx(v, c, t + 1)];
          const int s = send_[sidx(v, c, t)], r = recv_[ridx(v, c, t)];
          f_.add({-s, h});
          f_.add({-r, -h});
          f_.add({-r, next});
          f_.add({-h, next});
          if (!(v == c && t == c)) f_.add({-next, h, r});
        }
      }
    }
    for (int t = c0; t < R; ++t) {
      for (int u = 0; u <= m; ++u) {
        std::vector<int> s, r;
        for (int c = c0; c < m; ++c) {
          s.push_back(send_[sidx(u, c, t)]);
          if (u < m) r.push_back(recv_[ridx(u, c, t)]);
        }
        at_most_one(f_, s);
        at_most_one(f_, r);
      }
      for (int c = c0; c < m; ++c) {
        if (!live(c, t)) continue;
        std::vector<int> senders, receivers;
        for (int u = 0; u <= m; ++u) senders.push_back(send_[sidx(u, c, t)]);
        for (int v = 0; v < m; ++v) receivers.push_back(recv_[ridx(v, c, t)]);
        at_most_as_many(f_, receivers, senders);
      }
    }
    if (p_.symmetry) order_pool();
    if (p_.cyclic_from > 0) cyclic();
  }

  // Restriction --cyclic-from T: in rounds T..m-1 everything is the round before shifted by one
  // rank (mod m) and one chunk: holdings at the start of the round, sends and receives.
  void cyclic() {
    const int m = p_.m(), c0 = p_.first();
    auto same = [this](int a, int b) {
      f_.add({neg(a), b});
      f_.add({a, neg(b)});
    };
    for (int t = std::max(p_.cyclic_from, c0 + 1); t < m; ++t) {
      for (int v = 0; v < m; ++v) {
        const int w = (v + m - 1) % m;
        for (int c = std::max(c0 + 1, 1); c < m; ++c) {
          same(hold_[hidx(v, c, t)], hold_[hidx(w, c - 1, t - 1)]);
          same(send_[sidx(v, c, t)], send_[sidx(w, c - 1, t - 1)]);
          same(recv_[ridx(v, c, t)], recv_[ridx(w, c - 1, t - 1)]);
        }
      }
    }
  }

  // Ranks 0..c0-1 are interchangeable in the relaxation: their receive vectors (round-major)
  // are non-increasing in lexicographic order.
  void order_pool() {
    const int m = p_.m(), R = p_.rounds, c0 = p_.first();
    for (int v = 0; v + 1 < c0; ++v) {
      int equal = kTrue;  // the vectors agree so far
      for (int t = c0; t < R; ++t) {
        for (int c = c0; c < m; ++c) {
          const int a = recv_[ridx(v, c, t)], b = recv_[ridx(v + 1, c, t)];
          if (a == kFalse && b == kFalse) continue;
          f_.add({neg(equal), -b, a});  // equal so far: b <= a
          const int e = f_.fresh();
          f_.add({neg(equal), a, b, e});
          f_.add({neg(equal), -a, -b, e});
          equal = e;
        }
      }
    }
  }

  Problem p_;
  Cnf f_;
  std::vector<int> hold_, send_, recv_;
};

// The solver's answer: nullopt when it gave none (time limit, crash).
struct Answer {
  enum class Kind { sat, unsat, unknown } kind = Kind::unknown;
  std::vector<char> value;  // by variable
  double seconds = 0;
};

std::optional<std::string> find_solver(const std::string& requested) {
  if (!requested.empty()) return requested;
  const char* path = std::getenv("PATH");
  std::stringstream dirs(path ? path : "");
  std::vector<std::string> list;
  for (std::string d; std::getline(dirs, d, ':');) list.push_back(d);
  for (const char* name : {"cadical", "kissat", "minisat"}) {
    for (const std::string& d : list) {
      const std::filesystem::path candidate = std::filesystem::path(d) / name;
      if (!d.empty() && ::access(candidate.c_str(), X_OK) == 0) return candidate.string();
    }
  }
  return std::nullopt;
}

std::string quoted(const std::string& s) {
  std::string q = "'";
  for (char ch : s) q += ch == '\'' ? std::string("'\\''") : std::string(1, ch);
  return q + "'";
}

// Runs the solver on `cnf_path`. CaDiCaL and Kissat print "s ..." and "v ..." lines (SAT
// competition format); MiniSat writes its model to a file.
Answer solve(const std::string& solver, const std::string& extra, const std::string& cnf_path,
             int vars, int time_limit) {
  const std::string base = std::filesystem::path(solver).filename().string();
  const bool minisat = base.find("minisat") != std::string::npos;
  const std::string model_path = cnf_path + ".model";
  std::string cmd = quoted(solver) + (extra.empty() ? "" : " " + extra);
  if (minisat) {
    if (time_limit > 0) cmd += " -cpu-lim=" + std::to_string(time_limit);
    cmd += " " + quoted(cnf_path) + " " + quoted(model_path) + " >/dev/null 2>&1";
  } else {
    if (time_limit > 0)
      cmd += (base.find("kissat") != std::string::npos ? " --time=" : " -t ") +
             std::to_string(time_limit);
    cmd += " " + quoted(cnf_path) + " 2>&1";
  }
  Answer a;
  a.value.assign(static_cast<std::size_t>(vars) + 1, 0);
  const auto start = std::chrono::steady_clock::now();
  std::string text;
  if (FILE* pipe = ::popen(cmd.c_str(), "r")) {
    char buf[1 << 16];
    for (std::size_t got; (got = std::fread(buf, 1, sizeof buf, pipe)) > 0;) text.append(buf, got);
    ::pclose(pipe);
  } else {
    throw std::runtime_error("cannot run " + solver);
  }
  a.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  if (minisat) {
    std::ifstream in(model_path);
    std::stringstream all;
    all << in.rdbuf();
    text = all.str();
    std::filesystem::remove(model_path);
  }
  std::stringstream lines(text);
  for (std::string line; std::getline(lines, line);) {
    if (line == "s SATISFIABLE" || line == "SAT") a.kind = Answer::Kind::sat;
    if (line == "s UNSATISFIABLE" || line == "UNSAT") a.kind = Answer::Kind::unsat;
    const bool v_line = line.rfind("v ", 0) == 0;
    if (v_line || (minisat && a.kind == Answer::Kind::sat && line != "SAT")) {
      std::stringstream lits(v_line ? line.substr(2) : line);
      for (long l; lits >> l;) {
        if (l > 0 && l <= vars) a.value[static_cast<std::size_t>(l)] = 1;
      }
    }
  }
  return a;
}

bool is_true(const Answer& a, int lit) {
  if (lit == kTrue) return true;
  if (lit == kFalse) return false;
  const bool v = a.value[static_cast<std::size_t>(std::abs(lit))] != 0;
  return lit > 0 ? v : !v;
}

// The model's rounds (straggler n-1, chunks numbered as in the full problem): per round the
// exchange, then per chunk its receivers paired with its first senders.
std::vector<Round> decode(const Problem& p, const Encoding& e, const Answer& a) {
  const int m = p.m();
  std::vector<Round> rounds;
  for (int t = p.first(); t < p.rounds; ++t) {
    Round r;
    r.phase = t < m ? "straggler-exchange" : "broadcast";
    if (t < m) {
      r.add(t, p.straggler(), t, t + 1, Op::reduce);
      r.add(p.straggler(), t, t, t + 1, Op::reduce);
    }
    for (int c = p.first(); c < m; ++c) {
      std::vector<int> senders;
      for (int u = 0; u <= m; ++u) {
        if (is_true(a, e.send(u, c, t))) senders.push_back(u);
      }
      std::size_t next = 0;
      for (int v = 0; v < m; ++v) {
        if (!is_true(a, e.recv(v, c, t))) continue;
        if (next == senders.size()) throw std::runtime_error("model: chunk without a sender");
        r.add(senders[next++], v, c, c + 1, Op::copy);
      }
    }
    rounds.push_back(std::move(r));
  }
  return rounds;
}

// Independent replay of decoded rounds (relaxations: only the kept chunks): ports, holders,
// busy ranks, and every rank holding every kept chunk at the end. Empty string when fine.
std::string replay(const Problem& p, const std::vector<Round>& rounds) {
  const int m = p.m(), n = p.n;
  std::vector<std::vector<char>> has(static_cast<std::size_t>(n), std::vector<char>(m, 0));
  for (std::size_t i = 0; i < rounds.size(); ++i) {
    const int t = p.first() + static_cast<int>(i);
    std::vector<int> sends(n, 0), recvs(n, 0);
    std::vector<std::pair<int, int>> got;
    for (const auto& x : rounds[i].transfers) {
      if (++sends[x.src] > 1 || ++recvs[x.dst] > 1)
        return "round " + std::to_string(t) + ": a rank uses a port twice";
      if (x.op == Op::reduce) {
        if (x.chunk_begin != t || (x.src != t && x.src != p.straggler()))
          return "round " + std::to_string(t) + ": stray reduce";
      } else {
        if (x.src == p.busy(t) || x.dst == p.busy(t) || x.dst == p.straggler() ||
            (x.src == p.straggler() && t < m))
          return "round " + std::to_string(t) + ": a busy rank copies";
        if (!has[x.src][x.chunk_begin])
          return "round " + std::to_string(t) + ": rank " + std::to_string(x.src) +
                 " sends a chunk it lacks";
      }
      got.emplace_back(x.dst, x.chunk_begin);
    }
    for (auto [v, c] : got) has[v][c] = 1;
    if (t >= m - 1) {
      for (int c = 0; c < m; ++c) has[p.straggler()][c] = 1;
    }
  }
  for (int v = 0; v < n; ++v) {
    for (int c = p.first(); c < m; ++c) {
      if (!has[v][c]) return "rank " + std::to_string(v) + " lacks chunk " + std::to_string(c);
    }
  }
  return {};
}

// A full phase 2: ring ReduceScatter among 0..m-1 in front, then the project's verifier.
std::string verify_full(const Problem& p, const std::vector<Round>& rounds, Schedule& out) {
  out = Schedule::make(ssim::alg::Collective::allreduce, "stragglar", p.n, p.m());
  out.straggler = p.straggler();
  const std::vector<int> members = ssim::alg::iota_ranks(p.m());
  ssim::alg::append_ring_reduce_scatter(out, members, 0);
  for (const Round& r : rounds) out.rounds.push_back(r);
  const ssim::alg::VerifyResult v = ssim::alg::verify(out);
  return v.ok() ? std::string{} : v.error->to_string();
}

// The compact form the generator embeds (stragglar_tables.cpp): rounds 0..T and m..R-1 listed,
// T = cyclic_from; round t in T+1..m-1 is round T with rank v < m renamed (v + t-T) mod m and
// chunk c renamed c + t-T. Each listed round: its copy count, then src, dst, chunk per copy
// (the exchanges are implied).
std::vector<int> make_template(const Problem& p, const std::vector<Round>& rounds) {
  std::vector<int> data;
  for (int t = 0; t < p.rounds; ++t) {
    if (t > p.cyclic_from && t < p.m()) continue;
    std::vector<int> copies;
    for (const auto& x : rounds[static_cast<std::size_t>(t)].transfers) {
      if (x.op == Op::copy) copies.insert(copies.end(), {x.src, x.dst, x.chunk_begin});
    }
    data.push_back(static_cast<int>(copies.size() / 3));
    data.insert(data.end(), copies.begin(), copies.end());
  }
  return data;
}

std::vector<Round> expand_template(const Problem& p, const std::vector<int>& data) {
  const int m = p.m(), base = p.cyclic_from;
  std::vector<Round> rounds;
  std::size_t pos = 0;
  std::vector<int> base_copies;
  for (int t = 0; t < p.rounds; ++t) {
    std::vector<int> copies;
    if (t > base && t < m) {
      const int s = t - base;
      for (std::size_t i = 0; i < base_copies.size(); i += 3) {
        copies.insert(copies.end(), {(base_copies[i] + s) % m, (base_copies[i + 1] + s) % m,
                                     base_copies[i + 2] + s});
      }
    } else {
      const int count = data.at(pos++);
      copies.assign(data.begin() + static_cast<long>(pos),
                    data.begin() + static_cast<long>(pos) + 3 * count);
      pos += static_cast<std::size_t>(3 * count);
      if (t == base) base_copies = copies;
    }
    Round r;
    r.phase = t < m ? "straggler-exchange" : "broadcast";
    if (t < m) {
      r.add(t, p.straggler(), t, t + 1, Op::reduce);
      r.add(p.straggler(), t, t, t + 1, Op::reduce);
    }
    for (std::size_t i = 0; i < copies.size(); i += 3)
      r.add(copies[i], copies[i + 1], copies[i + 2], copies[i + 2] + 1, Op::copy);
    rounds.push_back(std::move(r));
  }
  return rounds;
}

void write_template(const Problem& p, const std::vector<int>& data, const std::string& path,
                    const std::string& command) {
  ssim::OutputFile out(path);  // common/output_file.hpp: whole or absent, devices in place
  std::ostream& os = out.stream();
  os << "// StragglAR phase 2 for n = " << p.n << " in " << p.rounds
     << " rounds, found by algorithms/tools/stragglar_sat:\n//   " << command << "\n"
     << "// Rounds 0.." << p.cyclic_from << " and " << p.m() << ".." << p.rounds - 1
     << " listed (copy count, then src dst chunk per copy);\n// round t in " << p.cyclic_from + 1
     << ".." << p.m() - 1 << " is round " << p.cyclic_from << " shifted by t-" << p.cyclic_from
     << " (ranks mod " << p.m() << ", chunks).\n";
  int column = 0;
  for (std::size_t i = 0; i < data.size(); ++i) {
    const std::string item = std::to_string(data[i]) + ",";
    if (column + static_cast<int>(item.size()) + 1 > 96) {
      os << "\n";
      column = 0;
    }
    os << (column ? " " : "") << item;
    column += static_cast<int>(item.size()) + (column ? 1 : 0);
  }
  os << "\n";
  out.commit();
}

int run(Problem p, const std::string& solver_flag, const std::string& solver_args,
        const std::string& cnf_flag, bool cnf_only, int time_limit, const std::string& expect,
        const std::string& schedule_out, const std::string& template_out,
        const std::string& command) {
  if (p.n < 3) throw std::invalid_argument("--ranks must be at least 3");
  const int bound = p.n - 2 + ceil_log2(p.n);
  if (p.rounds == 0) p.rounds = bound;
  if (p.rounds < p.n - 1)
    throw std::invalid_argument("--rounds must be at least n-1 = " + std::to_string(p.n - 1));
  if (p.keep < 0) p.keep = p.m() - 1;
  if (p.keep > p.m() - 1)
    throw std::invalid_argument("--keep must be at most n-2 = " + std::to_string(p.m() - 1));
  if (p.window < 0) throw std::invalid_argument("--window must be >= 0");
  if (!template_out.empty() && (!p.full() || p.cyclic_from == 0))
    throw std::invalid_argument("--template-out needs the full problem and --cyclic-from");

  const auto t0 = std::chrono::steady_clock::now();
  const Encoding e(p);
  const std::string cnf_path = !cnf_flag.empty()
                                   ? cnf_flag
                                   : (std::filesystem::temp_directory_path() /
                                      ("stragglar_sat_" + std::to_string(::getpid()) + ".cnf"))
                                         .string();
  {
    ssim::OutputFile out(cnf_path);
    e.cnf().write(out.stream());
    out.commit();
  }
  const double encode_s =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  std::cout << "n " << p.n << ", rounds " << p.rounds << " (bound " << bound << "), "
            << (p.full()
                    ? std::string("full problem")
                    : "chunks " + std::to_string(p.first()) + ".." + std::to_string(p.m() - 1) +
                          " and rounds " + std::to_string(p.first()) + ".." +
                          std::to_string(p.rounds - 1) + " (keep " + std::to_string(p.keep) + ")")
            << (p.window ? ", window " + std::to_string(p.window) + " (restricted: no proof)"
                         : std::string{})
            << (p.cyclic_from ? ", cyclic from round " + std::to_string(p.cyclic_from) +
                                    " (restricted: no proof)"
                              : std::string{})
            << (p.symmetry ? "" : ", no symmetry breaking") << "\n"
            << "cnf " << cnf_path << ": " << e.cnf().vars() << " variables, " << e.cnf().clauses()
            << " clauses (" << encode_s << " s)" << std::endl;
  if (cnf_only) return 0;

  const std::optional<std::string> solver = find_solver(solver_flag);
  if (!solver) {
    std::cout << "no SAT solver found (cadical, kissat or minisat in PATH, or --solver): skipped\n";
    if (cnf_flag.empty()) std::filesystem::remove(cnf_path);
    return 77;
  }
  const Answer a = solve(*solver, solver_args, cnf_path, e.cnf().vars(), time_limit);
  if (cnf_flag.empty()) std::filesystem::remove(cnf_path);
  const char* kind = a.kind == Answer::Kind::sat     ? "SAT"
                     : a.kind == Answer::Kind::unsat ? "UNSAT"
                                                     : "UNKNOWN";
  std::cout << "solver " << *solver << ": " << kind << " in " << a.seconds << " s\n";
  if (a.kind == Answer::Kind::sat) {
    const std::vector<Round> rounds = decode(p, e, a);
    if (const std::string bad = replay(p, rounds); !bad.empty()) {
      std::cout << "model rejected by the replay: " << bad << "\n";
      return 1;
    }
    std::cout << "model checked: " << rounds.size() << " rounds replayed, every rank holds chunks "
              << p.first() << ".." << p.m() - 1 << "\n";
    if (p.full()) {
      Schedule s;
      if (const std::string bad = verify_full(p, rounds, s); !bad.empty()) {
        std::cout << "verifier rejects the schedule: " << bad << "\n";
        return 1;
      }
      std::cout << "verifier: ring ReduceScatter + this phase 2 is a correct AllReduce ("
                << s.rounds.size() << " rounds)\n";
      if (!schedule_out.empty()) {
        ssim::OutputFile out(schedule_out);
        ssim::alg::write_schedule_json(out.stream(), s);
        out.commit();
        std::cout << "schedule written to " << schedule_out << "\n";
      }
      if (!template_out.empty()) {
        const std::vector<int> data = make_template(p, rounds);
        Schedule expanded;
        if (const std::string bad = verify_full(p, expand_template(p, data), expanded);
            !bad.empty()) {
          std::cout << "verifier rejects the expanded template: " << bad << "\n";
          return 1;
        }
        write_template(p, data, template_out, command);
        std::cout << "template (" << data.size() << " numbers, expansion verified) written to "
                  << template_out << "\n";
      }
    }
  }
  std::cout << "result: " << kind << "\n";
  if (!expect.empty()) {
    const bool match = (expect == "sat" && a.kind == Answer::Kind::sat) ||
                       (expect == "unsat" && a.kind == Answer::Kind::unsat);
    if (!match) std::cout << "expected " << expect << "\n";
    return match ? 0 : 1;
  }
  return a.kind == Answer::Kind::unknown ? 2 : 0;
}

}  // namespace

int run_main(int argc, char** argv) {
  CLI::App app{
      "stragglar_sat: is StragglAR's phase 2 on n ranks possible in R rounds? (SAT encoding)",
      "stragglar_sat"};
  Problem p;
  std::string solver, solver_args, cnf, expect, schedule_out, template_out;
  bool cnf_only = false, no_symmetry = false;
  int time_limit = 0;
  app.add_option("--ranks,-n", p.n, "number of ranks n (>= 3), the straggler included")->required();
  app.add_option("--rounds,-r", p.rounds, "phase-2 rounds R (default: the bound n-2+ceil(log2 n))")
      ->check(CLI::NonNegativeNumber);
  app.add_option("--keep,-k", p.keep,
                 "relaxation: keep chunks n-2-K..n-2 and rounds from n-2-K on (default: all)")
      ->check(CLI::NonNegativeNumber);
  app.add_option("--window", p.window,
                 "restriction (no proof): chunk c only copied in rounds c+1..c+W (0: off)")
      ->check(CLI::NonNegativeNumber);
  app.add_option("--cyclic-from", p.cyclic_from,
                 "restriction (no proof): rounds T..n-2 repeat the round before, shifted by one "
                 "rank and chunk (0: off)")
      ->check(CLI::NonNegativeNumber);
  app.add_flag("--no-symmetry", no_symmetry, "no lexicographic order on interchangeable ranks");
  app.add_option("--solver", solver,
                 "solver executable (default: cadical, kissat or minisat in PATH)");
  app.add_option("--solver-args", solver_args,
                 "extra solver arguments, e.g. \"--sat --seed=3\" (passed through the shell)");
  app.add_option("--time-limit", time_limit, "solver time limit in seconds (0: none)")
      ->check(CLI::NonNegativeNumber);
  app.add_option("--cnf", cnf, "write the CNF here (and keep it)");
  app.add_flag("--cnf-only", cnf_only, "only write the CNF");
  app.add_option("--expect", expect, "exit 1 unless the answer is this")
      ->check(CLI::IsMember({"sat", "unsat"}));
  app.add_option("--schedule-out", schedule_out,
                 "full problem: write the verified schedule (phase 1 + 2) as JSON");
  app.add_option("--template-out", template_out,
                 "full problem with --cyclic-from: write the compact form the generator embeds");
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    return app.exit(e);
  }
  p.symmetry = !no_symmetry;
  try {
    std::string command = "stragglar_sat";
    for (int i = 1; i < argc; ++i) command += std::string(" ") + argv[i];
    return run(p, solver, solver_args, cnf, cnf_only, time_limit, expect, schedule_out,
               template_out, command);
  } catch (const ssim::OutputError& e) {
    std::cerr << "stragglar_sat: error: " << e.what() << "\n";
    return ssim::kExitResource;
  } catch (const std::exception& e) {
    std::cerr << "stragglar_sat: error: " << e.what() << "\n";
    return 1;
  }
}

int main(int argc, char** argv) {
  ssim::guard_standard_streams();
  return ssim::check_standard_output("stragglar_sat", std::cerr, run_main(argc, argv));
}
