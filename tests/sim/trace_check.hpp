// Test support: a strict checker of the Chrome trace JSON that sim/trace.cpp writes, reading it
// the way Perfetto's JSON importer does: ts and dur in microseconds, converted to integer
// nanoseconds (rounded), slices ("X") of one (pid, tid) track either disjoint or nested, never
// partially overlapping (Perfetto drops those, stat slice_drop_overlapping_complete_event);
// instants ("i") and flow ends ("s"/"f") inside some slice or at least at a valid time; every
// flow id started once and finished once, and both ends bound to a slice on their track; every
// time a whole nanosecond; counters ("C") with numeric args, at most one value per nanosecond
// on a track, queue depths whole and >= 0, link utilizations in [0, 1], and every counter back
// at 0 at its last value (queues drained, links idle); no tid equal to a pid.
#pragma once

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <map>
#include <set>
#include <nlohmann/json.hpp>
#include <string>
#include <utility>
#include <vector>

namespace ssim::testing {

struct TraceCounts {
  std::size_t slices = 0;
  std::size_t instants = 0;
  std::size_t flows = 0;  // complete s -> f pairs
  std::size_t counters = 0;  // counter events
  std::vector<nlohmann::json> slice_events;
  // Per counter track ("pid/name"): its values by time in ns.
  std::map<std::string, std::map<long long, double>> counter_tracks;
};

inline long long trace_nanos(double micros) { return std::llround(micros * 1000.0); }

// Adds a gtest failure per problem; returns what it counted.
inline TraceCounts check_trace_strict(const std::string& text) {
  TraceCounts counts;
  const nlohmann::json j = nlohmann::json::parse(text);
  EXPECT_EQ(j.at("displayTimeUnit"), "ns");
  using Track = std::pair<int, int>;
  std::map<Track, std::vector<std::pair<long long, long long>>> tracks;
  std::map<long long, std::vector<std::pair<Track, long long>>> flow_ends[2];  // s, f
  for (const nlohmann::json& e : j.at("traceEvents")) {
    const std::string ph = e.at("ph");
    if (ph == "M") continue;
    const double ts_us = e.at("ts").get<double>();
    const long long ts = trace_nanos(ts_us);
    EXPECT_GE(ts, 0) << e.dump();
    EXPECT_NEAR(ts_us * 1000.0, static_cast<double>(ts), 1e-6) << "not a whole nanosecond: " << e.dump();
    if (ph == "C") {
      ++counts.counters;
      const std::string name = e.at("name");
      const nlohmann::json& args = e.at("args");
      EXPECT_TRUE(args.is_object() && args.size() == 1) << e.dump();
      if (!args.is_object() || args.empty()) continue;
      const nlohmann::json& v = args.begin().value();
      EXPECT_TRUE(v.is_number()) << e.dump();
      if (!v.is_number()) continue;
      const double value = v.get<double>();
      if (name == "send queue" || name == "recv queue") {
        EXPECT_EQ(args.begin().key(), "depth") << e.dump();
        EXPECT_TRUE(v.is_number_integer() && value >= 0) << "queue depth: " << e.dump();
      } else if (name.rfind("link ", 0) == 0) {
        EXPECT_EQ(args.begin().key(), "utilization") << e.dump();
        EXPECT_TRUE(value >= 0 && value <= 1) << "utilization: " << e.dump();
      } else {
        ADD_FAILURE() << "unknown counter " << e.dump();
      }
      auto& values = counts.counter_tracks[std::to_string(e.at("pid").get<int>()) + "/" + name];
      EXPECT_TRUE(values.emplace(ts, value).second) << "two values at " << ts << " ns: " << e.dump();
      continue;
    }
    const Track track{e.at("pid"), e.at("tid")};
    if (ph == "X") {
      const long long dur = trace_nanos(e.at("dur").get<double>());
      EXPECT_GE(dur, 0) << e.dump();
      EXPECT_NEAR(e.at("dur").get<double>() * 1000.0, static_cast<double>(dur), 1e-6) << e.dump();
      tracks[track].emplace_back(ts, ts + dur);
      counts.slice_events.push_back(e);
      ++counts.slices;
    } else if (ph == "i") {
      ++counts.instants;
    } else if (ph == "s" || ph == "f") {
      flow_ends[ph == "f"][e.at("id").get<long long>()].emplace_back(track, ts);
    } else {
      ADD_FAILURE() << "unexpected event phase " << ph << ": " << e.dump();
    }
  }
  // Perfetto files an event without a tid under tid = pid; a track whose tid is some pid would
  // share that thread's name lookups.
  std::set<int> pids, tids;
  for (const nlohmann::json& e : j.at("traceEvents")) {
    pids.insert(e.at("pid").get<int>());
    if (e.contains("tid")) tids.insert(e.at("tid").get<int>());
  }
  for (int tid : tids) EXPECT_FALSE(pids.count(tid)) << "tid " << tid << " is also a pid";
  for (auto& [track, spans] : tracks) {
    // Sorted by start, longest first on ties: a parent precedes its children.
    std::sort(spans.begin(), spans.end(), [](const auto& a, const auto& b) {
      return a.first != b.first ? a.first < b.first : a.second > b.second;
    });
    std::vector<long long> open;  // ends of the enclosing slices
    for (const auto& [begin, end] : spans) {
      while (!open.empty() && open.back() <= begin) open.pop_back();
      if (!open.empty() && end > open.back()) {
        ADD_FAILURE() << "partial overlap on pid " << track.first << " tid " << track.second << ": [" << begin
                      << ", " << end << "] ns crosses the end of its enclosing slice at " << open.back() << " ns";
      }
      open.push_back(end);
    }
  }
  auto inside_slice = [&](const Track& track, long long ts) {
    const auto it = tracks.find(track);
    if (it == tracks.end()) return false;
    return std::any_of(it->second.begin(), it->second.end(),
                       [&](const auto& s) { return s.first <= ts && ts <= s.second; });
  };
  for (const auto& [id, starts] : flow_ends[0]) {
    const auto f = flow_ends[1].find(id);
    EXPECT_EQ(starts.size(), 1u) << "flow " << id << " started " << starts.size() << " times";
    if (f == flow_ends[1].end()) {
      ADD_FAILURE() << "flow " << id << " never finishes";
      continue;
    }
    EXPECT_EQ(f->second.size(), 1u) << "flow " << id << " finished " << f->second.size() << " times";
    EXPECT_TRUE(inside_slice(starts[0].first, starts[0].second)) << "flow " << id << " start outside any slice";
    EXPECT_TRUE(inside_slice(f->second[0].first, f->second[0].second)) << "flow " << id << " end outside any slice";
    EXPECT_LE(starts[0].second, f->second[0].second) << "flow " << id << " goes back in time";
    ++counts.flows;
  }
  for (const auto& [id, ends] : flow_ends[1]) {
    EXPECT_TRUE(flow_ends[0].count(id)) << "flow " << id << " finishes without a start";
  }
  for (const auto& [name, values] : counts.counter_tracks) {
    EXPECT_EQ(values.rbegin()->second, 0.0) << "counter " << name << " ends at " << values.rbegin()->second;
  }
  return counts;
}

}  // namespace ssim::testing
