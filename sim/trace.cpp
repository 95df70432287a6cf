#include "sim/trace.hpp"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <limits>
#include <sstream>
#include <vector>

#include "common/error.hpp"
#include "common/interrupt.hpp"

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

// A time the trace cannot hold as nanoseconds (infinite, or beyond 2^62 ns, about 146 years: a
// denormal bandwidth) is the input error the simulation reports for an overflowing time.
Nanos to_nanos(double seconds) {
  const double ns = seconds * 1e9;
  if (!(std::fabs(ns) < 0x1p62)) {
    throw InputError(
        "the simulated time overflows the trace (" +
        std::string(std::isfinite(ns) ? "beyond 146 years" : "infinite") +
        "): a bandwidth, latency, delay or size is outside any physical range (e.g. a bandwidth "
        "of 1e-300B/s)");
  }
  return std::llround(ns);
}

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

std::string number(double v) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.9g", v);
  return buf;
}

// One counter track: its value is written when a later time comes (or at the end), so a track
// gets one value per nanosecond, and a value equal to the last written one is left out.
struct Counter {
  Nanos ts = -1;  // pending value's time, -1: none pending
  double value = 0;
  bool written = false;
  double last = 0;
  // Windowed traces: the latest value set before the window, written at its start.
  bool has_before = false;
  double before = 0;
};

// The average size in bytes (with the ",\n" before it) of each kind of event, measured on
// ring, rhd and stragglar traces of 8 to 1024 ranks; numbers grow by a few digits with ranks,
// times and byte counts, so a trace's real size differs from the estimate by some percent.
constexpr double kMetaBytes = 76, kTransferBytes = 190, kWaitBytes = 120, kArrowBytes = 90,
                 kInstantBytes = 100, kQueueBytes = 72, kLinkBytes = 95, kHeadBytes = 300;

// The window [from, to] in trace nanoseconds (missing ends: unbounded).
struct Window {
  Nanos from = std::numeric_limits<Nanos>::min(), to = std::numeric_limits<Nanos>::max();
  bool set = false;
  bool overlaps(Nanos a, Nanos b) const { return b >= from && a <= to; }
  bool holds(Nanos t) const { return t >= from && t <= to; }
};

Window window_of(const TraceSelection& s) {
  Window w;
  if (s.from) w.from = to_nanos(s.from->value);
  if (s.to) w.to = to_nanos(s.to->value);
  w.set = s.windowed();
  return w;
}

}  // namespace

struct ChromeTraceWriter::State {
  std::ostream& out;
  const alg::Schedule& schedule;
  const topo::Topology* topology;
  int ranks;
  double t0;
  bool first = true;
  // Track ids start above every pid: Perfetto files an event without a tid (a counter, a
  // process name) under thread tid = pid, and a slice track with that tid in another process
  // would share its name lookups.
  int next_tid;
  // Per rank and side (index 2 * rank + side): lane end times and their tids.
  std::vector<std::vector<Nanos>> lane_end;
  std::vector<std::vector<int>> lane_tid;
  // The latest interval start placed, which only grows (the order TimelineSink promises).
  std::vector<Nanos> last_from;
  // Per rank and side: the sides posted since the queue counter was last brought up to date
  // ([ready, end] in ns) and the latest end among them.
  std::vector<std::vector<std::pair<Nanos, Nanos>>> queued;
  std::vector<Nanos> queued_until;
  std::vector<Counter> queue_counter;
  // Links: selected for a counter, flows on it and their rate sum, the counter.
  std::vector<char> link_selected;
  std::vector<int> link_flows;
  std::vector<double> link_rate;
  std::vector<Counter> link_counter;
  bool links_named = false;
  TraceSelection select;
  Window window;
  std::function<void(std::uint64_t, std::uint64_t)> progress;
  std::uint64_t events = 0, bytes = 0;
  std::vector<std::uint64_t> round_offset;  // transfers before each round: flow arrow ids
  std::string title;

  State(std::ostream& o, const alg::Schedule& s, const topo::Topology* t, int n,
        double first_arrival)
      : out(o),
        schedule(s),
        topology(t),
        ranks(n),
        t0(first_arrival),
        next_tid(n + 2),
        lane_end(static_cast<std::size_t>(2 * n)),
        lane_tid(lane_end.size()),
        last_from(lane_end.size(), 0),
        queued(lane_end.size()),
        queued_until(lane_end.size(), 0),
        queue_counter(lane_end.size()) {}

  Nanos at(double t) const { return to_nanos(t - t0); }

  void item(const std::string& s) {
    out << (first ? "\n" : ",\n") << s;
    first = false;
    ++events;
    bytes += s.size() + 2;
    if (progress && events % 65536 == 0) progress(events, bytes);
  }
  void meta(int pid, int tid, const char* what, const std::string& args) {
    item("{\"name\":\"" + std::string(what) + "\",\"ph\":\"M\",\"pid\":" + std::to_string(pid) +
         (tid >= 0 ? ",\"tid\":" + std::to_string(tid) : std::string()) + ",\"args\":{" + args +
         "}}");
  }
  void slice(int pid, int tid, const std::string& name, const char* cat, Nanos a, Nanos b,
             const std::string& args) {
    b = std::max(a, b);
    if (b == a && std::string_view(cat) == "wait") return;
    if (!window.overlaps(a, b)) return;
    item("{\"name\":" + json_string(name) + ",\"cat\":\"" + cat +
         "\",\"ph\":\"X\",\"pid\":" + std::to_string(pid) + ",\"tid\":" + std::to_string(tid) +
         ",\"ts\":" + micros_of(a) + ",\"dur\":" + micros_of(b - a) +
         (args.empty() ? std::string() : ",\"args\":{" + args + "}") + "}");
  }
  // An instant event on one track ("s":"t": drawn on that thread only).
  void instant(int pid, int tid, const std::string& name, Nanos ts, const std::string& args) {
    if (!window.holds(ts)) return;
    item("{\"name\":" + json_string(name) +
         ",\"cat\":\"arrival\",\"ph\":\"i\",\"s\":\"t\",\"pid\":" + std::to_string(pid) +
         ",\"tid\":" + std::to_string(tid) + ",\"ts\":" + micros_of(ts) +
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

  // Counter tracks (pid, name, arg) get `value` from `ts` on.
  void set(Counter& c, int pid, const std::string& name, const char* arg, Nanos ts, double value) {
    if (c.ts >= 0 && c.ts != ts) write(c, pid, name, arg);
    c.ts = ts;
    c.value = value;
  }
  void write(Counter& c, int pid, const std::string& name, const char* arg) {
    if (c.ts < 0) return;
    if (c.ts < window.from) {  // before the window: in effect at its start, unless changed
      c.has_before = true;
      c.before = c.value;
      c.ts = -1;
      return;
    }
    if (c.has_before) {  // the value in effect when the window opens
      c.has_before = false;
      if (c.ts > window.from && c.before != 0) emit(c, pid, name, arg, window.from, c.before);
    }
    if (c.ts <= window.to) emit(c, pid, name, arg, c.ts, c.value);
    c.ts = -1;
  }
  // At the end: a counter whose only values came before the window holds the last of them.
  void close(Counter& c, int pid, const std::string& name, const char* arg) {
    write(c, pid, name, arg);
    if (c.has_before && c.before != 0 && window.from <= window.to)
      emit(c, pid, name, arg, window.from, c.before);
    c.has_before = false;
  }
  void emit(Counter& c, int pid, const std::string& name, const char* arg, Nanos ts, double value) {
    if (!c.written || value != c.last) {
      if (pid == ranks + 1 && !links_named) {
        meta(ranks + 1, -1, "process_name", "\"name\":\"links\"");
        meta(ranks + 1, -1, "process_sort_index", "\"sort_index\":" + std::to_string(ranks));
        links_named = true;
      }
      item("{\"name\":" + json_string(name) + ",\"ph\":\"C\",\"pid\":" + std::to_string(pid) +
           ",\"ts\":" + micros_of(ts) + ",\"args\":{\"" + arg + "\":" + number(value) + "}}");
      c.written = true;
      c.last = value;
    }
  }
  static const char* queue_name(int side) { return side == 0 ? "send queue" : "recv queue"; }

  // The queue depth of (rank, side) over the sides posted since the last update: before them
  // the queue was empty (every earlier side had ended when these were posted).
  void update_queue(std::size_t k) {
    std::vector<std::pair<Nanos, int>> steps;
    steps.reserve(2 * queued[k].size());
    for (const auto& [from, to] : queued[k]) {
      steps.emplace_back(from, 1);
      steps.emplace_back(to, -1);
    }
    std::sort(steps.begin(), steps.end());
    const int pid = static_cast<int>(k / 2) + 1;
    const int side = static_cast<int>(k % 2);
    int depth = 0;
    for (std::size_t i = 0; i < steps.size(); ++i) {
      depth += steps[i].second;
      if (i + 1 == steps.size() || steps[i + 1].first != steps[i].first)
        set(queue_counter[k], pid, queue_name(side), "depth", steps[i].first, depth);
    }
    queued[k].clear();
  }
  void post(int rank, int side, Nanos from, Nanos to) {
    const std::size_t k = static_cast<std::size_t>(2 * rank + side);
    if (!queued[k].empty() && from >= queued_until[k]) update_queue(k);
    queued[k].emplace_back(from, to);
    queued_until[k] = queued[k].size() == 1 ? to : std::max(queued_until[k], to);
  }

  // The track for an interval of (rank, side): the first lane free by `from`, a new one if none
  // is. Calls for one (rank, side) come in nondecreasing `from` (TimelineSink), so a lane whose
  // last interval ended by `from` is free for good.
  int place(int rank, int side, Nanos from, Nanos to) {
    const std::size_t k = static_cast<std::size_t>(2 * rank + side);
    SSIM_CHECK(from >= last_from[k],
               "trace: a transfer side came before an earlier one of its rank");
    last_from[k] = from;
    std::vector<Nanos>& e = lane_end[k];
    for (std::size_t i = 0; i < e.size(); ++i) {
      if (e[i] <= from) {
        e[i] = to;
        return lane_tid[k][i];
      }
    }
    return new_lane(rank, side, to);
  }
  // A new track for (rank, side), busy until `end`.
  int new_lane(int rank, int side, Nanos end) {
    const std::size_t k = static_cast<std::size_t>(2 * rank + side);
    const int lane = static_cast<int>(lane_tid[k].size());
    const int tid = next_tid++;
    lane_tid[k].push_back(tid);
    lane_end[k].push_back(end);
    std::string name = side == 0 ? "send" : "recv";
    if (lane > 0) name.append(" ").append(std::to_string(lane + 1));
    meta(rank + 1, tid, "thread_name", "\"name\":\"" + name + "\"");
    meta(rank + 1, tid, "thread_sort_index",
         "\"sort_index\":" + std::to_string(side * 1000 + lane));
    return tid;
  }

  // Slices of the time a side spent between reaching the round and the transfer's start: first
  // waiting for the peer to reach the round, then for a port.
  void waits(int pid, int tid, Nanos own_ready, Nanos peer_ready, Nanos start, int peer) {
    const Nanos peer_until = std::max(own_ready, std::min(peer_ready, start));
    slice(pid, tid, "wait for peer " + std::to_string(peer), "wait", own_ready, peer_until, "");
    slice(pid, tid, "wait for port", "wait", peer_until, start, "");
  }

  std::string link_name(int l) const {
    const topo::Link& link = topology->link(l);
    return "link " + std::to_string(l) + ": " + topology->node(link.from).name + " -> " +
           topology->node(link.to).name;
  }
};

ChromeTraceWriter::ChromeTraceWriter(std::ostream& out, const alg::Schedule& schedule,
                                     const topo::Topology* topology,
                                     std::span<const Seconds> arrival, TraceOptions options) {
  const int n = schedule.ranks;
  SSIM_CHECK(static_cast<int>(arrival.size()) == n && n > 0, "trace: one arrival per rank needed");
  double t0 = arrival[0].value;
  for (const Seconds& a : arrival) t0 = std::min(t0, a.value);
  state_ = std::make_unique<State>(out, schedule, topology, n, t0);
  State& s = *state_;
  s.round_offset.reserve(schedule.rounds.size());
  std::uint64_t before = 0;
  for (const alg::Round& round : schedule.rounds) {
    s.round_offset.push_back(before);
    before += round.transfers.size();
  }
  if (topology) {
    const std::size_t links = static_cast<std::size_t>(topology->link_count());
    s.link_selected.assign(links, options.links ? 0 : 1);
    if (options.links) {
      for (int l : *options.links) {
        SSIM_CHECK(l >= 0 && static_cast<std::size_t>(l) < links, "trace: link id out of range");
        s.link_selected[static_cast<std::size_t>(l)] = 1;
      }
    }
    s.link_flows.assign(links, 0);
    s.link_rate.assign(links, 0.0);
    s.link_counter.resize(links);
  }
  s.select = std::move(options.select);
  s.window = window_of(s.select);
  s.progress = std::move(options.progress);
  out << "{\"displayTimeUnit\":\"ns\",\n\"traceEvents\":[";
  for (int r = 0; r < n; ++r) {
    if (!s.select.rank(r)) continue;
    const int pid = r + 1;
    s.meta(pid, -1, "process_name", "\"name\":\"rank " + std::to_string(r) + "\"");
    s.meta(pid, -1, "process_sort_index", "\"sort_index\":" + std::to_string(r));
    for (int side : {0, 1}) s.new_lane(r, side, 0);
  }
  for (int r = 0; r < n; ++r) {
    if (!s.select.rank(r)) continue;
    const Nanos a = s.at(arrival[r].value);
    const int tid = s.lane_tid[2 * static_cast<std::size_t>(r)][0];
    if (a > 0) s.place(r, 0, 0, a);
    s.slice(r + 1, tid, "arrival", "wait", 0, a, "\"delay_us\":" + micros_of(a));
    s.instant(r + 1, tid, "arrived", a, "\"rank\":" + std::to_string(r));
  }
  s.title = std::move(options.title);
}

ChromeTraceWriter::~ChromeTraceWriter() = default;

void ChromeTraceWriter::transfer_side(const TransferRecord& t, Side side) {
  // A trace can take minutes and gigabytes: SIGINT or SIGTERM stops it here (its temporary is
  // removed by the OutputFile it goes to).
  throw_if_interrupted("stopped while writing the trace; it is not written");
  State& s = *state_;
  SSIM_CHECK(t.src >= 0 && t.src < s.ranks && t.dst >= 0 && t.dst < s.ranks &&
                 static_cast<std::size_t>(t.round) < s.schedule.rounds.size(),
             "trace: transfer of another schedule");
  const std::string chunks = chunk_label(t);
  const Nanos src_ready = s.at(t.src_ready.value), dst_ready = s.at(t.dst_ready.value);
  const Nanos start = s.at(t.start.value), end = s.at(t.end.value), done = s.at(t.done.value);
  std::string args = "\"round\":" + std::to_string(t.round) +
                     ",\"phase\":" + json_string(s.schedule.rounds[t.round].phase) + ",\"op\":\"" +
                     std::string(alg::to_string(t.op)) + "\",\"chunks\":[" +
                     std::to_string(t.chunk_begin) + "," + std::to_string(t.chunk_end) +
                     "],\"bytes\":" + std::to_string(t.bytes);
  // The arrow from the send to its receive sits in the middle of the transfer, inside both
  // slices and away from their edges, where a neighbouring slice could claim it. Its id is
  // the transfer's number in schedule order, from 1.
  const Nanos mid = (start + end) / 2;
  const std::uint64_t id =
      s.round_offset[static_cast<std::size_t>(t.round)] + static_cast<std::uint64_t>(t.index) + 1;
  // The selection: this side's rank and round, and its time (waiting included) in the window.
  if (!s.select.round(t.round) || !s.select.rank(side == Side::send ? t.src : t.dst)) return;
  if (!s.window.overlaps(side == Side::send ? src_ready : dst_ready,
                         side == Side::send ? end : done))
    return;
  // Both transfer slices hold [start, end]: the arrow when both ranks are kept and it overlaps.
  const bool arrow = s.select.rank(t.src) && s.select.rank(t.dst) && s.window.overlaps(start, end);
  if (side == Side::send) {
    const int tid = s.place(t.src, 0, src_ready, end);
    s.waits(t.src + 1, tid, src_ready, dst_ready, start, t.dst);
    s.slice(t.src + 1, tid, "send " + chunks + " -> " + std::to_string(t.dst), "transfer", start,
            end, args);
    if (arrow) s.flow('s', id, t.src + 1, tid, mid);
    s.post(t.src, 0, src_ready, end);
  } else {
    const int tid = s.place(t.dst, 1, dst_ready, done);
    if (done > end) args += ",\"reduce_us\":" + micros_of(done - end);
    s.waits(t.dst + 1, tid, dst_ready, src_ready, start, t.src);
    s.slice(t.dst + 1, tid, "recv " + chunks + " <- " + std::to_string(t.src), "transfer", start,
            done, args);
    if (arrow) s.flow('f', id, t.dst + 1, tid, mid);
    s.post(t.dst, 1, dst_ready, end);
  }
}

void ChromeTraceWriter::flow_rate(std::span<const int> links, double old_rate, double new_rate,
                                  Seconds now) {
  State& s = *state_;
  if (!s.topology) return;
  const Nanos ts = s.at(now.value);
  for (int l : links) {
    const std::size_t i = static_cast<std::size_t>(l);
    if (!s.link_selected[i]) continue;
    s.link_flows[i] += (old_rate == 0 && new_rate > 0) - (old_rate > 0 && new_rate == 0);
    s.link_rate[i] = s.link_flows[i] == 0 ? 0.0 : s.link_rate[i] + (new_rate - old_rate);
    const double capacity = s.topology->link(l).bandwidth.value;
    // Max-min rates never exceed a link's bandwidth; only summation rounding is snapped back
    // (anything larger stays visible, and the trace checker rejects it).
    double utilization = s.link_rate[i] / capacity;
    if (utilization > 1.0 && utilization < 1.0 + 1e-9) utilization = 1.0;
    if (utilization < 0.0 && utilization > -1e-9) utilization = 0.0;
    s.set(s.link_counter[i], s.ranks + 1, s.link_name(l), "utilization", ts, utilization);
  }
}

void ChromeTraceWriter::finish(const IterationResult& result) {
  State& s = *state_;
  for (std::size_t k = 0; k < s.queued.size(); ++k) {
    if (!s.queued[k].empty()) s.update_queue(k);
    s.close(s.queue_counter[k], static_cast<int>(k / 2) + 1,
            State::queue_name(static_cast<int>(k % 2)), "depth");
  }
  for (std::size_t l = 0; l < s.link_counter.size(); ++l) {
    if (s.link_counter[l].ts >= 0 || s.link_counter[l].has_before)
      s.close(s.link_counter[l], s.ranks + 1, s.link_name(static_cast<int>(l)), "utilization");
  }
  s.out << "\n],\n\"otherData\":{\"title\":" << json_string(s.title)
        << ",\"algorithm\":" << json_string(s.schedule.algorithm) << ",\"ranks\":" << s.ranks
        << ",\"bytes\":" << result.bytes << ",\"completion_us\":" << micros(result.completion.value)
        << ",\"after_last_arrival_us\":" << micros(result.after_last_arrival.value) << "}}\n";
}

struct TraceCounter::State {
  const alg::Schedule& schedule;
  int ranks;
  double t0;
  TraceSelection select;
  Window window;
  // Per rank and side: the latest end of the transfers posted (queue counter samples).
  std::vector<Nanos> queued_until;
  std::vector<char> link_selected;
  std::vector<Nanos> link_last;  // the last change counted per link (one sample per ns)
  std::vector<std::uint64_t> link_changes;
  std::vector<char> link_before;  // a change before the window: a sample at its start
  double events = 0, bytes = 0;
  std::vector<double> rank_bytes;

  Nanos at(double t) const { return to_nanos(t - t0); }
  // An event of `size` bytes for `rank` (-1: none), counted in the total when `kept`.
  void add(int rank, double size, bool kept) {
    if (rank >= 0) rank_bytes[static_cast<std::size_t>(rank)] += size;
    if (kept) {
      events += 1;
      bytes += size;
    }
  }
  void slice(int rank, double size, bool kept, Nanos a, Nanos b, bool wait) {
    b = std::max(a, b);
    if ((wait && a == b) || !window.overlaps(a, b)) return;
    add(rank, size, kept);
  }
};

TraceCounter::TraceCounter(const alg::Schedule& schedule, const topo::Topology* topology,
                           std::span<const Seconds> arrival, const TraceOptions& options) {
  const int n = schedule.ranks;
  SSIM_CHECK(static_cast<int>(arrival.size()) == n && n > 0, "trace: one arrival per rank needed");
  double t0 = arrival[0].value;
  for (const Seconds& a : arrival) t0 = std::min(t0, a.value);
  state_ = std::unique_ptr<State>(new State{
      schedule,
      n,
      t0,
      options.select,
      window_of(options.select),
      std::vector<Nanos>(static_cast<std::size_t>(2 * n), std::numeric_limits<Nanos>::min()),
      {},
      {},
      {},
      {},
      0,
      kHeadBytes,
      std::vector<double>(static_cast<std::size_t>(n), 0.0)});
  State& s = *state_;
  if (topology) {
    const std::size_t links = static_cast<std::size_t>(topology->link_count());
    s.link_selected.assign(links, options.links ? 0 : 1);
    if (options.links) {
      for (int l : *options.links) {
        if (l >= 0 && static_cast<std::size_t>(l) < links)
          s.link_selected[static_cast<std::size_t>(l)] = 1;
      }
    }
    s.link_last.assign(links, std::numeric_limits<Nanos>::min());
    s.link_changes.assign(links, 0);
    s.link_before.assign(links, 0);
  }
  for (int r = 0; r < n; ++r) {
    const bool kept = s.select.rank(r);
    for (int k = 0; k < 6; ++k) s.add(r, kMetaBytes, kept);  // process and track names, sorting
    const Nanos a = s.at(arrival[static_cast<std::size_t>(r)].value);
    s.slice(r, kWaitBytes, kept, 0, a, true);  // "arrival": a wait, none when 0
    if (s.window.holds(a)) s.add(r, kInstantBytes, kept);
  }
}

TraceCounter::~TraceCounter() = default;

void TraceCounter::transfer_side(const TransferRecord& t, Side side) {
  throw_if_interrupted("stopped while estimating the trace; it is not written");
  State& s = *state_;
  if (!s.select.round(t.round)) return;
  const bool send = side == Side::send;
  const int rank = send ? t.src : t.dst;
  const Nanos own = s.at((send ? t.src_ready : t.dst_ready).value);
  const Nanos peer = s.at((send ? t.dst_ready : t.src_ready).value);
  const Nanos start = s.at(t.start.value), end = s.at(t.end.value);
  const Nanos last = send ? end : s.at(t.done.value);
  if (!s.window.overlaps(own, last)) return;
  const bool kept = s.select.rank(rank);
  const Nanos peer_until = std::max(own, std::min(peer, start));
  s.slice(rank, kWaitBytes, kept, own, peer_until, true);
  s.slice(rank, kWaitBytes, kept, peer_until, start, true);
  s.slice(rank, kTransferBytes, kept, start, last, false);
  if (s.window.overlaps(start, end)) {
    s.add(rank, kArrowBytes, kept && s.select.rank(t.src) && s.select.rank(t.dst));
  }
  // The queue counter changes where a transfer is posted to an idle port, and where posted
  // transfers overlap; back-to-back transfers leave it unchanged.
  Nanos& until = s.queued_until[static_cast<std::size_t>(2 * rank + (send ? 0 : 1))];
  if (own != until) {
    const int samples = s.window.holds(own) + s.window.holds(end);
    for (int k = 0; k < samples; ++k) s.add(rank, kQueueBytes, kept);
  }
  until = std::max(until, end);
}

void TraceCounter::flow_rate(std::span<const int> links, double, double, Seconds now) {
  State& s = *state_;
  if (s.link_selected.empty()) return;
  const Nanos ts = s.at(now.value);
  for (int l : links) {
    const std::size_t i = static_cast<std::size_t>(l);
    if (!s.link_selected[i] || s.link_last[i] == ts) continue;
    s.link_last[i] = ts;
    if (ts < s.window.from) {
      s.link_before[i] = 1;
    } else if (ts <= s.window.to) {
      ++s.link_changes[i];
    }
  }
}

TraceEstimate TraceCounter::estimate() const {
  const State& s = *state_;
  TraceEstimate e;
  double link_events = 0;
  for (std::size_t l = 0; l < s.link_changes.size(); ++l) {
    link_events += static_cast<double>(s.link_changes[l]) +
                   (s.link_before[l] && s.window.from <= s.window.to ? 1 : 0);
  }
  if (link_events > 0) link_events += 2;  // the "links" process name
  e.link_events = static_cast<std::uint64_t>(link_events);
  e.link_bytes = static_cast<std::uint64_t>(link_events * kLinkBytes);
  e.events = static_cast<std::uint64_t>(s.events) + e.link_events;
  e.bytes = static_cast<std::uint64_t>(s.bytes) + e.link_bytes;
  e.rank_bytes.reserve(s.rank_bytes.size());
  for (double b : s.rank_bytes) e.rank_bytes.push_back(static_cast<std::uint64_t>(b));
  e.rounds = static_cast<int>(s.schedule.rounds.size());
  e.algorithm = s.schedule.algorithm;
  return e;
}

void write_chrome_trace(std::ostream& out, const alg::Schedule& schedule,
                        const IterationResult& result, std::string_view title) {
  SSIM_CHECK(
      result.ranks == schedule.ranks && static_cast<int>(result.arrival.size()) == schedule.ranks,
      "trace of another schedule");
  SSIM_CHECK(result.timeline.size() == schedule.transfer_count(),
             "trace needs a run with record_timeline");
  ChromeTraceWriter w(out, schedule, nullptr, result.arrival,
                      TraceOptions{std::string(title), {}, {}, {}});
  // Schedule order: per rank and side, nondecreasing ready times (a rank's rounds are sequential).
  for (const TransferRecord& t : result.timeline) {
    w.transfer_side(t, TimelineSink::Side::send);
    w.transfer_side(t, TimelineSink::Side::recv);
  }
  w.finish(result);
}

std::string chrome_trace(const alg::Schedule& schedule, const IterationResult& result,
                         std::string_view title) {
  std::ostringstream out;
  write_chrome_trace(out, schedule, result, title);
  return out.str();
}

}  // namespace ssim::sim
