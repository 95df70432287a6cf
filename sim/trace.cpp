#include "sim/trace.hpp"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <sstream>
#include <vector>

#include "common/error.hpp"

namespace ssim::sim {

namespace {

std::string json_string(std::string_view s) {
  std::string out = "\"";
  for (char c : s) {
    switch (c) {
      case '"':
        out += "\\\"";
        break;
      case '\\':
        out += "\\\\";
        break;
      case '\n':
        out += "\\n";
        break;
      case '\t':
        out += "\\t";
        break;
      default:
        if (static_cast<unsigned char>(c) < 0x20) {
          char buf[8];
          std::snprintf(buf, sizeof buf, "\\u%04x",
                        static_cast<unsigned>(static_cast<unsigned char>(c)));
          out += buf;
        } else {
          out += c;
        }
    }
  }
  return out + "\"";
}

// Every time in a trace is first rounded to an integer number of nanoseconds since the first
// arrival; ts and dur are then exact decimal microseconds with three digits. Viewers convert
// microseconds to integer nanoseconds (Perfetto does, and drops a slice that partially overlaps
// its predecessor on a track), so an end rounded apart from its start could make two
// back-to-back slices overlap by one nanosecond. With integer endpoints ts + dur is exactly the
// next slice's ts, and rounding is monotone, so slices placed apart stay apart.
using Nanos = long long;

Nanos to_nanos(double seconds) { return std::llround(seconds * 1e9); }

std::string micros_of(Nanos ns) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%lld.%03lld", ns / 1000, ns % 1000);
  return buf;
}

std::string micros(double seconds) { return micros_of(to_nanos(seconds)); }

std::string chunk_label(const TransferRecord& r) {
  if (r.chunk_end - r.chunk_begin == 1) return "c" + std::to_string(r.chunk_begin);
  if (r.chunk_end == r.chunk_begin) return "c-";
  return "c" + std::to_string(r.chunk_begin) + "-" + std::to_string(r.chunk_end - 1);
}

enum Role { kSend = 0, kRecv = 1 };

// Track assignment: per rank and role, intervals go to the first lane that is free by their start.
struct Lanes {
  std::vector<std::vector<Nanos>> end;  // [rank * 2 + role][lane] = end of its last interval
  std::vector<std::vector<int>> tid;     // same shape, assigned after placement

  explicit Lanes(int ranks) : end(static_cast<std::size_t>(2 * ranks)), tid(end.size()) {}
  int place(int rank, Role role, Nanos from, Nanos to) {
    std::vector<Nanos>& e = end[2 * rank + role];
    for (std::size_t i = 0; i < e.size(); ++i) {
      if (e[i] <= from) {
        e[i] = to;
        return static_cast<int>(i);
      }
    }
    e.push_back(to);
    return static_cast<int>(e.size()) - 1;
  }
};

class Writer {
 public:
  Writer(std::ostream& out, double t0) : out_(out), t0_(t0) {}

  void meta(int pid, int tid, const char* what, const std::string& args) {
    item("{\"name\":\"" + std::string(what) + "\",\"ph\":\"M\",\"pid\":" + std::to_string(pid) +
         (tid >= 0 ? ",\"tid\":" + std::to_string(tid) : std::string()) + ",\"args\":{" + args +
         "}}");
  }
  // Times are seconds of simulated time; they are written relative to the first arrival.
  Nanos at(double t) const { return to_nanos(t - t0_); }

  void slice(int pid, int tid, const std::string& name, const char* cat, double from, double to,
             const std::string& args) {
    const Nanos a = at(from), b = std::max(a, at(to));
    if (b == a && std::string_view(cat) == "wait") return;
    item("{\"name\":" + json_string(name) + ",\"cat\":\"" + cat +
         "\",\"ph\":\"X\",\"pid\":" + std::to_string(pid) + ",\"tid\":" + std::to_string(tid) +
         ",\"ts\":" + micros_of(a) + ",\"dur\":" + micros_of(b - a) +
         (args.empty() ? std::string() : ",\"args\":{" + args + "}") + "}");
  }
  // An instant event on one track ("s":"t": drawn on that thread only).
  void instant(int pid, int tid, const std::string& name, double t, const std::string& args) {
    item("{\"name\":" + json_string(name) + ",\"cat\":\"arrival\",\"ph\":\"i\",\"s\":\"t\",\"pid\":" +
         std::to_string(pid) + ",\"tid\":" + std::to_string(tid) + ",\"ts\":" + micros_of(at(t)) +
         (args.empty() ? std::string() : ",\"args\":{" + args + "}") + "}");
  }
  // One end of a flow arrow (ph "s" at the sender, "f" at the receiver), bound to the slice
  // that encloses `ns` on its track ("bp":"e").
  void flow(char ph, std::uint64_t id, int pid, int tid, Nanos ns) {
    item(std::string("{\"name\":\"data\",\"cat\":\"transfer\",\"ph\":\"") + ph +
         "\",\"id\":" + std::to_string(id) + (ph == 'f' ? ",\"bp\":\"e\"" : "") +
         ",\"pid\":" + std::to_string(pid) + ",\"tid\":" + std::to_string(tid) +
         ",\"ts\":" + micros_of(ns) + "}");
  }

 private:
  void item(const std::string& s) {
    out_ << (first_ ? "\n" : ",\n") << s;
    first_ = false;
  }

  std::ostream& out_;
  double t0_;
  bool first_ = true;
};

// Slices of the time a side spent between reaching the round and the transfer's start: first
// waiting for the peer to reach the round, then for a port.
void waits(Writer& w, int pid, int tid, double own_ready, double peer_ready, double start,
           int peer) {
  const double peer_until = std::max(own_ready, std::min(peer_ready, start));
  w.slice(pid, tid, "wait for peer " + std::to_string(peer), "wait", own_ready, peer_until, "");
  w.slice(pid, tid, "wait for port", "wait", peer_until, start, "");
}

}  // namespace

void write_chrome_trace(std::ostream& out, const alg::Schedule& schedule,
                        const IterationResult& result, std::string_view title) {
  const int n = result.ranks;
  SSIM_CHECK(n == schedule.ranks && static_cast<int>(result.arrival.size()) == n,
             "trace of another schedule");
  SSIM_CHECK(result.timeline.size() == schedule.transfer_count(),
             "trace needs a run with record_timeline");
  const double t0 = result.first_arrival.value;

  // Place every slice group (waits + transfer) of each side in start order.
  Lanes lanes(n);
  for (int r = 0; r < n; ++r) {
    const Nanos a = to_nanos(result.arrival[r].value - t0);
    if (a > 0) lanes.place(r, kSend, 0, a);
  }
  struct Side {
    Nanos from, to;
    std::size_t record;
    Role role;
  };
  std::vector<Side> sides;
  sides.reserve(2 * result.timeline.size());
  for (std::size_t i = 0; i < result.timeline.size(); ++i) {
    const TransferRecord& t = result.timeline[i];
    sides.push_back({to_nanos(t.src_ready.value - t0), to_nanos(t.end.value - t0), i, kSend});
    sides.push_back({to_nanos(t.dst_ready.value - t0), to_nanos(t.done.value - t0), i, kRecv});
  }
  std::stable_sort(sides.begin(), sides.end(),
                   [](const Side& a, const Side& b) { return a.from < b.from; });
  std::vector<int> lane_of(2 * result.timeline.size());
  for (const Side& s : sides) {
    const TransferRecord& t = result.timeline[s.record];
    lane_of[2 * s.record + s.role] =
        lanes.place(s.role == kSend ? t.src : t.dst, s.role, s.from, s.to);
  }

  out << "{\"displayTimeUnit\":\"ns\",\n\"otherData\":{\"title\":" << json_string(title)
      << ",\"algorithm\":" << json_string(schedule.algorithm) << ",\"ranks\":" << n
      << ",\"bytes\":" << result.bytes << ",\"completion_us\":" << micros(result.completion.value)
      << ",\"after_last_arrival_us\":" << micros(result.after_last_arrival.value)
      << "},\n\"traceEvents\":[";
  Writer w(out, t0);
  int next_tid = 1;
  for (int r = 0; r < n; ++r) {
    const int pid = r + 1;
    w.meta(pid, -1, "process_name", "\"name\":\"rank " + std::to_string(r) + "\"");
    w.meta(pid, -1, "process_sort_index", "\"sort_index\":" + std::to_string(r));
    for (Role role : {kSend, kRecv}) {
      const std::size_t count = std::max<std::size_t>(1, lanes.end[2 * r + role].size());
      std::vector<int>& tids = lanes.tid[2 * r + role];
      for (std::size_t lane = 0; lane < count; ++lane) {
        const int tid = next_tid++;
        tids.push_back(tid);
        std::string name = role == kSend ? "send" : "recv";
        if (lane > 0) name.append(" ").append(std::to_string(lane + 1));
        w.meta(pid, tid, "thread_name", "\"name\":\"" + name + "\"");
        w.meta(pid, tid, "thread_sort_index",
               "\"sort_index\":" + std::to_string(role * 1000 + static_cast<int>(lane)));
      }
    }
  }
  for (int r = 0; r < n; ++r) {
    const double a = result.arrival[r].value;
    w.slice(r + 1, lanes.tid[2 * r][0], "arrival", "wait", t0, a, "\"delay_us\":" + micros(a - t0));
    w.instant(r + 1, lanes.tid[2 * r][0], "arrived", a, "\"rank\":" + std::to_string(r));
  }
  for (std::size_t i = 0; i < result.timeline.size(); ++i) {
    const TransferRecord& t = result.timeline[i];
    const std::string chunks = chunk_label(t);
    const std::string args = "\"round\":" + std::to_string(t.round) +
                             ",\"phase\":" + json_string(schedule.rounds[t.round].phase) +
                             ",\"op\":\"" + std::string(alg::to_string(t.op)) + "\",\"chunks\":[" +
                             std::to_string(t.chunk_begin) + "," + std::to_string(t.chunk_end) +
                             "],\"bytes\":" + std::to_string(t.bytes);
    const int send_tid = lanes.tid[2 * t.src][lane_of[2 * i]];
    const int recv_tid = lanes.tid[2 * t.dst + 1][lane_of[2 * i + 1]];
    waits(w, t.src + 1, send_tid, t.src_ready.value, t.dst_ready.value, t.start.value, t.dst);
    w.slice(t.src + 1, send_tid, "send " + chunks + " -> " + std::to_string(t.dst), "transfer",
            t.start.value, t.end.value, args);
    waits(w, t.dst + 1, recv_tid, t.dst_ready.value, t.src_ready.value, t.start.value, t.src);
    w.slice(
        t.dst + 1, recv_tid, "recv " + chunks + " <- " + std::to_string(t.src), "transfer",
        t.start.value, t.done.value,
        args + (t.done.value > t.end.value ? ",\"reduce_us\":" + micros(t.done.value - t.end.value)
                                           : std::string()));
    // The arrow from the send to its receive sits in the middle of the transfer, inside both
    // slices and away from their edges, where a neighbouring slice could claim it.
    const Nanos mid = (w.at(t.start.value) + w.at(t.end.value)) / 2;
    w.flow('s', i + 1, t.src + 1, send_tid, mid);
    w.flow('f', i + 1, t.dst + 1, recv_tid, mid);
  }
  out << "\n]}\n";
}

std::string chrome_trace(const alg::Schedule& schedule, const IterationResult& result,
                         std::string_view title) {
  std::ostringstream out;
  write_chrome_trace(out, schedule, result, title);
  return out.str();
}

}  // namespace ssim::sim
