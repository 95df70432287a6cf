#include "sim/trace.hpp"

#include <gtest/gtest.h>

#include <cmath>
#include <cstdlib>
#include <fstream>
#include <map>
#include <nlohmann/json.hpp>
#include <set>
#include <sstream>

#include "algorithms/registry.hpp"
#include "tests/sim/trace_check.hpp"
#include "topologies/generators.hpp"

namespace ssim::sim {
namespace {

const std::string kGolden =
    std::string(STRAGGLESIM_SOURCE_DIR) + "/tests/data/sim/ring4.trace.json";

// Ring, 4 ranks, 4096 B (1024 B chunks) on a 1 GB/s, 1 us switch, gamma 0.1 ns/B: each transfer
// takes 1 + 1.024 = 2.024 us, each reduction 0.1024 us. Rank 2 arrives 3 us after the others.
IterationResult ring4(const alg::Schedule& s) {
  const topo::Topology t =
      topo::make_switch({.ranks = 4, .bandwidth = BytesPerSecond{1e9}, .latency = Seconds{1e-6}});
  Executor ex(s, t, NetworkConfig{NetworkKind::alphabeta, SecondsPerByte{1e-10}}, Bytes{4096});
  RunOptions o;
  o.record_timeline = true;
  return ex.run(std::vector<Seconds>{Seconds{0}, Seconds{0}, Seconds{3e-6}, Seconds{0}}, o);
}

// The strict check (tests/sim/trace_check.hpp); returns the X events in file order.
std::vector<nlohmann::json> check_structure(const std::string& text) {
  return testing::check_trace_strict(text).slice_events;
}

TEST(ChromeTrace, Ring4MatchesGoldenFile) {
  const alg::Schedule s = alg::generate("ring", 4, alg::Options{});
  const std::string text = chrome_trace(s, ring4(s), "ring, 4 ranks");
  if (std::getenv("SSIM_UPDATE_GOLDEN") != nullptr) {
    std::ofstream(kGolden) << text;
    GTEST_SKIP() << "golden file rewritten: " << kGolden;
  }
  std::ifstream in(kGolden);
  ASSERT_TRUE(in) << "missing " << kGolden << " (run with SSIM_UPDATE_GOLDEN=1 to create it)";
  std::stringstream want;
  want << in.rdbuf();
  EXPECT_EQ(text, want.str());
}

TEST(ChromeTrace, Ring4IsValidAndComplete) {
  const alg::Schedule s = alg::generate("ring", 4, alg::Options{});
  const IterationResult r = ring4(s);
  const std::vector<nlohmann::json> slices = check_structure(chrome_trace(s, r));
  int sends = 0, recvs = 0, arrivals = 0, peer_waits = 0;
  for (const nlohmann::json& e : slices) {
    const std::string name = e.at("name");
    if (name.rfind("send ", 0) == 0) {
      ++sends;
      EXPECT_TRUE(e.at("args").contains("phase"));
    }
    if (name.rfind("recv ", 0) == 0) ++recvs;
    if (name == "arrival") {
      ++arrivals;
      EXPECT_EQ(e.at("pid"), 3);  // rank 2
      EXPECT_DOUBLE_EQ(e.at("dur").get<double>(), 3.0);
    }
    if (name.rfind("wait for peer", 0) == 0) ++peer_waits;
  }
  EXPECT_EQ(sends, 24);
  EXPECT_EQ(recvs, 24);
  EXPECT_EQ(arrivals, 1);
  // Rank 1 sends to late rank 2 and rank 3 receives from it: both wait in round 0.
  EXPECT_GE(peer_waits, 2);
  // The first transfer: rank 0 sends chunk 3 to rank 1 in round 0, from 0 to 2.024 us.
  EXPECT_EQ(slices[1].at("name"), "send c3 -> 1");
  EXPECT_NEAR(slices[1].at("dur").get<double>(), 2.024, 1e-9);
}

TEST(ChromeTrace, EveryTransferHasAFlowArrowAndEveryRankAnArrivalMark) {
  const alg::Schedule s = alg::generate("ring", 4, alg::Options{});
  const testing::TraceCounts c = testing::check_trace_strict(chrome_trace(s, ring4(s)));
  EXPECT_EQ(c.flows, s.transfer_count());
  EXPECT_EQ(c.instants, 4u);
}

// The case Perfetto used to drop slices from: 64-rank ring, alpha-beta, times that are not
// whole nanoseconds (3 us + 1 GiB / 255 chunks over 450 GiB/s, gamma 0.05 ns/B) and a late rank.
// Before integer-nanosecond endpoints, ts and dur were rounded separately to the picosecond and
// a share of the slices overlapped their successor by 1 ns after conversion (this test failed).
TEST(ChromeTrace, LargeRingHasNoOverlapAfterNanosecondConversion) {
  const int n = 64;
  const alg::Schedule s = alg::generate("ring", n, alg::Options{});
  const topo::Topology t = topo::make_switch(
      {.ranks = n, .bandwidth = BytesPerSecond{450.0 * (1ull << 30)}, .latency = Seconds{3e-6}});
  Executor ex(s, t, NetworkConfig{NetworkKind::alphabeta, SecondsPerByte{5e-11}},
              Bytes{1ull << 30});
  RunOptions o;
  o.record_timeline = true;
  std::vector<Seconds> arrivals(n, Seconds{0});
  arrivals[17] = Seconds{1.234567e-3};
  const testing::TraceCounts c = testing::check_trace_strict(chrome_trace(s, ex.run(arrivals, o)));
  EXPECT_EQ(c.flows, s.transfer_count());
  EXPECT_GT(c.slices, 2 * s.transfer_count());
}

TEST(ChromeTrace, OverlappingFlowsGetSeparateTracks) {
  // Flow model, everyone sends to rank 0 in one round: rank 0 receives 3 flows at once.
  alg::Schedule s = alg::Schedule::make(alg::Collective::allreduce, "fan-in", 4, 1);
  alg::Round& round = s.add_round("gather");
  for (int r = 1; r < 4; ++r) round.add(r, 0, 0, 1, alg::Op::reduce);
  const topo::Topology t =
      topo::make_switch({.ranks = 4, .bandwidth = BytesPerSecond{1e9}, .latency = Seconds{1e-6}});
  Executor ex(s, t, NetworkConfig{NetworkKind::flow, SecondsPerByte{0}}, Bytes{3000});
  RunOptions o;
  o.record_timeline = true;
  const std::string text = chrome_trace(s, ex.run(std::vector<Seconds>(4, Seconds{0}), o));
  const std::vector<nlohmann::json> slices = check_structure(text);
  std::set<int> recv_tracks;
  for (const nlohmann::json& e : slices) {
    if (e.at("pid") == 1 && e.at("name").get<std::string>().rfind("recv", 0) == 0)
      recv_tracks.insert(e.at("tid").get<int>());
  }
  EXPECT_EQ(recv_tracks.size(), 3u);
  EXPECT_NE(text.find("\"recv 3\""), std::string::npos);
}

// Fan-in on a 1 GB/s switch: ranks 1..3 each send 3000 B to rank 0 at once. The flow model
// shares the switch -> gpu0 link three ways: each sender's uplink runs at 1/3, the shared link
// at 1 (one value when all three start moving at 1 us, 0 when they all end); rank 0's receive
// queue holds 3 transfers from its arrival until the last byte, each sender's send queue 1.
TEST(ChromeTrace, FlowModelHasLinkUtilizationAndQueueCounters) {
  alg::Schedule s = alg::Schedule::make(alg::Collective::allreduce, "fan-in", 4, 1);
  alg::Round& round = s.add_round("gather");
  for (int r = 1; r < 4; ++r) round.add(r, 0, 0, 1, alg::Op::reduce);
  const topo::Topology t =
      topo::make_switch({.ranks = 4, .bandwidth = BytesPerSecond{1e9}, .latency = Seconds{1e-6}});
  Executor ex(s, t, NetworkConfig{NetworkKind::flow, SecondsPerByte{0}}, Bytes{3000});
  const std::vector<Seconds> arrivals(4, Seconds{0});
  std::ostringstream out;
  ChromeTraceWriter w(out, s, &t, arrivals,
                      {.title = "fan-in", .links = std::nullopt, .select = {}, .progress = {}});
  RunOptions o;
  o.trace = &w;
  const IterationResult r = ex.run(arrivals, o);
  w.finish(r);
  const testing::TraceCounts c = testing::check_trace_strict(out.str());
  EXPECT_EQ(c.flows, 3u);
  // The route's latency, then 9 us at 1/3 GB/s each; all end together.
  const long long end = std::llround(r.completion.value * 1e9);
  EXPECT_EQ(end, std::llround((t.route(1, 0).latency.value + 9e-6) * 1e9));
  EXPECT_EQ(c.counter_tracks.at("1/recv queue"), (std::map<long long, double>{{0, 3}, {end, 0}}));
  EXPECT_EQ(c.counter_tracks.at("2/send queue"), (std::map<long long, double>{{0, 1}, {end, 0}}));
  int links = 0;
  for (const auto& [name, values] : c.counter_tracks) {
    if (name.rfind("5/link ", 0) != 0) continue;
    ++links;
    const double busy = name.find("switch -> gpu0") != std::string::npos ? 1.0 : 1.0 / 3;
    ASSERT_EQ(values.size(), 2u) << name;
    EXPECT_EQ(values.rbegin()->first, end) << name;
    EXPECT_NEAR(values.begin()->second, busy, 1e-9) << name;  // written with 9 digits
  }
  EXPECT_EQ(links, 4);  // three uplinks and the shared downlink; idle links get no counter
  // Only the selected link when a selection is given.
  std::ostringstream one;
  ChromeTraceWriter w1(one, s, &t, arrivals,
                       {.title = "", .links = std::vector<int>{1}, .select = {}, .progress = {}});
  o.trace = &w1;
  w1.finish(ex.run(arrivals, o));
  std::size_t selected = 0;
  for (const auto& [name, values] : testing::check_trace_strict(one.str()).counter_tracks)
    selected += name.rfind("5/link ", 0) == 0;
  EXPECT_EQ(selected, 1u);
}

// In the alpha-beta model a rank's queue is its port FIFO: in ring4, rank 1's send port holds
// its round-0 send to late rank 2 from 0 until that transfer ends.
TEST(ChromeTrace, AlphaBetaQueueIsThePortFifo) {
  const alg::Schedule s = alg::generate("ring", 4, alg::Options{});
  const testing::TraceCounts c = testing::check_trace_strict(chrome_trace(s, ring4(s)));
  const auto& send1 = c.counter_tracks.at("2/send queue");
  EXPECT_EQ(send1.begin()->first, 0);
  EXPECT_EQ(send1.begin()->second, 1);
  // Transfer 0 -> 1 ... rank 2 arrives at 3 us, so 1 -> 2 ends at 3 + 2.024 us; the queue stays
  // at 1 while rank 1 works through its rounds, and drains at its end.
  EXPECT_EQ(std::next(send1.begin())->second, 0);
  EXPECT_EQ(c.counter_tracks.size(), 8u);  // send and recv queue of each rank, no links
}

// Streaming: the slices written while the run goes equal those of a trace replayed from the
// kept timeline, for the dataflow pass, the event engine and the flow model (whose events come
// in completion order).
TEST(ChromeTrace, StreamedTraceHasTheSlicesOfTheReplayedOne) {
  const int n = 16;
  const alg::Schedule s = alg::generate("ring", n, alg::Options{});
  const topo::Topology t = topo::make_switch(
      {.ranks = n, .bandwidth = BytesPerSecond{450.0 * (1ull << 30)}, .latency = Seconds{3e-6}});
  std::vector<Seconds> arrivals(n, Seconds{0});
  arrivals[5] = Seconds{2e-5};
  for (NetworkKind kind : {NetworkKind::alphabeta, NetworkKind::flow}) {
    for (bool engine : {false, true}) {
      Executor ex(s, t, NetworkConfig{kind, SecondsPerByte{5e-11}}, Bytes{1 << 20});
      std::ostringstream out;
      ChromeTraceWriter w(out, s, &t, arrivals);
      RunOptions o;
      o.record_timeline = true;
      o.use_event_engine = engine;
      o.trace = &w;
      const IterationResult r = ex.run(arrivals, o);
      w.finish(r);
      auto slices = [](const std::string& text) {
        std::multiset<std::string> set;
        for (const nlohmann::json& e : testing::check_trace_strict(text).slice_events) {
          nlohmann::json x = e;
          x.erase("tid");  // lanes may be numbered in another order
          set.insert(x.dump());
        }
        return set;
      };
      const auto streamed = slices(out.str());
      EXPECT_EQ(streamed, slices(chrome_trace(s, r))) << to_string(kind) << " engine " << engine;
      EXPECT_GE(streamed.size(), 2 * s.transfer_count());
    }
  }
}

// Every algorithm, both models and both alpha-beta evaluations, random arrivals on a ring
// topology (links shared, so flows overlap): the streamed trace passes the strict check and
// has the replayed trace's slices. The streamed writer relies on the TimelineSink order (per
// rank and side, nondecreasing ready times); a break of it shows here as an overlap or a
// missing slice.
TEST(ChromeTrace, EveryAlgorithmStreamsAValidTrace) {
  for (int n : {6, 8}) {
    const topo::Topology t =
        topo::make_ring({.ranks = n, .bandwidth = BytesPerSecond{50e9}, .latency = Seconds{2e-6}});
    std::vector<Seconds> arrivals;
    for (int r = 0; r < n; ++r) arrivals.push_back(Seconds{1e-6 * ((r * 37) % 11)});
    for (const alg::AlgorithmInfo& info : alg::algorithms()) {
      if (info.in_network) continue;  // switch reductions: switch_reduce_test, nvls_test
      if (!info.supports_ranks(n)) continue;
      const alg::Schedule s = alg::generate(info.name, n, alg::Options{});
      for (NetworkKind kind : {NetworkKind::alphabeta, NetworkKind::flow}) {
        for (bool engine : {false, true}) {
          if (kind == NetworkKind::flow && !engine) continue;
          Executor ex(s, t, NetworkConfig{kind, SecondsPerByte{2e-11}}, Bytes{3 << 20});
          std::ostringstream out;
          ChromeTraceWriter w(out, s, &t, arrivals);
          RunOptions o;
          o.record_timeline = true;
          o.use_event_engine = engine;
          o.trace = &w;
          const IterationResult r = ex.run(arrivals, o);
          w.finish(r);
          SCOPED_TRACE(info.name + " n=" + std::to_string(n) + " " + std::string(to_string(kind)) +
                       (engine ? " engine" : " dataflow"));
          const testing::TraceCounts c = testing::check_trace_strict(out.str());
          EXPECT_EQ(c.flows, s.transfer_count());
          EXPECT_EQ(c.slices, testing::check_trace_strict(chrome_trace(s, r)).slices);
        }
      }
    }
  }
}

// A pipelined NCCL kernel (NetworkConfig::pipelined_kernels) finishes a rank's transfers out of
// round order: a step of one channel lands before an earlier one of another. Executor::run holds
// such a run's sides and hands them to the trace in ready order (TimelineSink), so the trace is
// as valid as a per-round run's: every transfer once (a send and a receive slice, one arrow), no
// overlap on a track, queues drained, and the run times the same as untraced. Two nodes of four
// ranks (NVLink inside, one NIC each across), a late rank, Simple's costs, both models.
TEST(ChromeTrace, PipelinedNcclKernelsStreamAValidTrace) {
  const topo::Topology t = topo::make_hierarchical({.nodes = 2,
                                                    .gpus_per_node = 8,
                                                    .nvlink_bandwidth = BytesPerSecond{400e9},
                                                    .nvlink_latency = Seconds{1e-6},
                                                    .nic_bandwidth = BytesPerSecond{50e9},
                                                    .nic_latency = Seconds{2e-6},
                                                    .spine_bandwidth = BytesPerSecond{50e9},
                                                    .spine_latency = Seconds{1e-6}});
  std::vector<Seconds> arrivals;
  for (int r = 0; r < 16; ++r) arrivals.push_back(Seconds{1e-3 + 1e-6 * ((r * 37) % 11)});
  for (const auto& [name, channels] :
       {std::pair<std::string, std::string>{"nccl_ring", "4"}, {"nccl_tree", "4"}}) {
    alg::Options options;
    options.set("proto", "simple");
    options.set("channels", channels);
    const alg::Schedule s = alg::generate(name, 16, options);
    for (NetworkKind kind : {NetworkKind::alphabeta, NetworkKind::flow}) {
      SCOPED_TRACE(name + " " + std::string(to_string(kind)));
      NetworkConfig network{kind, SecondsPerByte{2e-12}};
      network.pipelined_kernels = true;
      Executor ex(s, t, network, Bytes{4 << 20});
      RunOptions timeline;
      timeline.record_timeline = true;
      const IterationResult untraced = ex.run(arrivals, timeline);
      // In the order the run finishes them (the dataflow pass: schedule order; the event engine:
      // when the last byte lands, or the reduction ends), some rank's sides are ready out of
      // order: what a trace must not be handed. A side is ready by its start at the latest.
      struct Told {
        double at, ready;
        int rank, side;
      };
      std::vector<Told> told;
      for (const TransferRecord& x : untraced.timeline) {
        ASSERT_TRUE(std::isfinite(x.src_ready.value) && std::isfinite(x.dst_ready.value));
        const bool flow = kind == NetworkKind::flow;
        told.push_back({flow ? x.end.value : 0, std::min(x.src_ready, x.start).value, x.src, 0});
        told.push_back({flow ? x.done.value : 0, std::min(x.dst_ready, x.start).value, x.dst, 1});
      }
      std::stable_sort(told.begin(), told.end(),
                       [](const Told& a, const Told& b) { return a.at < b.at; });
      bool out_of_order = false;
      std::map<std::pair<int, int>, double> last_ready;
      for (const Told& x : told) {
        auto [it, fresh] = last_ready.try_emplace({x.rank, x.side}, x.ready);
        if (!fresh && x.ready < it->second) out_of_order = true;
        it->second = std::max(it->second, x.ready);
      }
      if (name == "nccl_tree") {
        EXPECT_TRUE(out_of_order);  // a ring's channels keep in step here
      }
      std::ostringstream out;
      ChromeTraceWriter w(out, s, &t, arrivals);
      RunOptions o;
      o.trace = &w;
      const IterationResult r = ex.run(arrivals, o);
      w.finish(r);
      EXPECT_EQ(r.completion.value, untraced.completion.value);
      EXPECT_EQ(r.last_finish.value, untraced.last_finish.value);
      const testing::TraceCounts c = testing::check_trace_strict(out.str());
      EXPECT_EQ(c.flows, s.transfer_count());
      std::size_t sends = 0, recvs = 0;
      for (const nlohmann::json& e : c.slice_events) {
        const std::string slice = e.at("name");
        sends += slice.rfind("send ", 0) == 0;
        recvs += slice.rfind("recv ", 0) == 0;
      }
      EXPECT_EQ(sends, s.transfer_count());
      EXPECT_EQ(recvs, s.transfer_count());
    }
  }
}

}  // namespace
}  // namespace ssim::sim
