// An independent check of the flow model: replays schedules on SimGrid (its CM02 flow-level
// model, max-min sharing in its LMM solver) and compares every rank's finish time with
// sim::Executor's flow model. A test tool only: sim/ knows nothing of SimGrid.
//
//   simgrid_replay                       the sweep: every registered algorithm at n = 4, 7, 8, 16
//                                        on a switch, a ring and a fat tree, two sizes each
//   simgrid_replay --schedule F.json --topology switch|ring|fat_tree --size BYTES
//                                        one exported schedule (`stragglesim schedule ... --json`)
//   simgrid_replay --platform P.xml      every registered algorithm on a SimGrid platform file,
//                                        given to SimGrid as it is (Engine::load_platform) and to
//                                        stragglesim through its loader (`topology: {simgrid: P}`);
//                                        also checks that both take the same links, bandwidths
//                                        and latencies between every pair of hosts
//   --tolerance X                        relative tolerance on finish times (default 1e-9)
// Exit 0 when every rank of every case agrees within the tolerance, 1 when one does not (each
// such case is printed), 2 on bad arguments.
//
// The platform of a case has one SimGrid link per directed link of our topology (same bandwidth
// and latency, SHARED: one capacity per direction) and, for every rank pair the schedule uses,
// the route our topology chooses, as an explicit route of a Full zone. Every case gets its own
// hosts and links, so all cases run side by side in one simulation without touching each other.
// What SimGrid computes independently: route latencies, the max-min rates of concurrent flows
// and when each flow ends, and so when each rank may go on.
//
// Replay of the executor's semantics (sim/executor.hpp): one actor per rank sleeps until its
// arrival, then works through its rounds; a transfer starts when its sender and its receiver have
// both reached its round (whichever comes second starts an actor for it); that actor sleeps the
// route latency, moves the bytes with Comm::sendto, tells the sender, sleeps gamma * bytes for a
// reduction and tells the receiver. A rank finishes a round when all its transfers of the round
// are done.
//
// Model settings, and why (SimGrid 3.32, src/surf/network_cm02.cpp, NetworkCm02Model::communicate
// and the option list in docs/source/Configuring_SimGrid.rst):
// - network/model:CM02 - the flow model without LV08's corrective factors (latency x13.01,
//   bandwidth x0.97); CM02 sets network/weight-S to 0. We also set bandwidth-factor 1 explicitly.
// - Equal flow weights: CM02 gives each flow the sharing penalty "route latency + weight-S x
//   sum(1 / link bandwidth)", i.e. a flow's share of a bottleneck is inversely proportional to its
//   route latency, like TCP's RTT unfairness. No option removes the latency term, but
//   network/latency-factor:0 makes the flow's own latency phase zero, and a flow without a
//   latency phase is created with penalty 1.0 and keeps it (the latency term is only applied when
//   a latency phase ends). So every flow has weight 1: plain max-min, as in sim/maxmin.hpp. The
//   latency itself is paid by the replaying actor before the flow starts (sleep_for of the route
//   latency as SimGrid sums it, Host::route_to), which is what both models do anyway: the first
//   byte waits the route latency, during which the flow takes no bandwidth.
// - network/TCP-gamma:0 - no TCP window bound (gamma / (2 x latency)) on a flow's rate.
// - network/crosstraffic:0 - no 5% reverse-direction ACK flow on the back route.
// - surf/precision and maxmin/precision - SimGrid's defaults (1e-9 s on event times, 1e-5 B/s on
//   rates; `--help` of any SimGrid program lists them) are coarse next to the 1e-9 relative
//   difference we check on microsecond times; both are set to 1e-13.
//
// What to expect: with 13 algorithms all 312 sweep cases agree within 1e-12 (largest 3e-14).
// When the sweep had 192 cases, one of them, tree at n = 16 on the 3-tier fat tree at 64 KiB,
// differed by 7e-10: there, pairs of
// symmetric flows start at exactly the same time in exact arithmetic; SimGrid keeps them equal
// to the last bit, our event engine lets them drift apart by one ulp, and the pipelined
// schedule doubles such a drift about every round (found by tracing the first differing
// transfer, which this tool prints on a mismatch). A bandwidth perturbed by 1e-13 in both
// simulators removes the tie and the two agree to 1e-15 again. The bandwidths and latencies are
// deliberately not round numbers, which keeps further coincidences of latency and bytes /
// bandwidth away. A modelling difference (a latency paid twice, a link not shared, flows
// weighted by latency) shows as 1e-3 or more.
#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <fstream>
#include <iomanip>
#include <iostream>
#include <map>
#include <memory>
#include <random>
#include <simgrid/s4u.hpp>
#include <sstream>
#include <string>
#include <vector>

#include "algorithms/registry.hpp"
#include "algorithms/schedule_json.hpp"
#include "common/error.hpp"
#include "experiments/config/config.hpp"
#include "sim/executor.hpp"
#include "topologies/generators.hpp"

namespace sg4 = simgrid::s4u;

namespace {

struct Transfer {
  int src = 0;
  int dst = 0;
  std::uint64_t bytes = 0;
  bool reduce = false;
  int ends_ready = 0;
  double latency = 0;  // route latency, from SimGrid
  double start = -1;   // when both ends were there
  double end = -1;     // when the last byte arrived
};

struct Case {
  std::string label;
  ssim::alg::Schedule schedule;
  std::unique_ptr<ssim::topo::Topology> topology;
  std::uint64_t bytes = 0;
  double gamma = 0;
  std::vector<double> arrival;
  // Replay state.
  std::vector<sg4::Host*> hosts;
  std::vector<Transfer> transfers;
  std::vector<std::vector<std::vector<int>>> rank_rounds;  // [rank][round] -> transfer ids
  std::vector<sg4::SemaphorePtr> done;                     // per rank: one release per transfer
  std::vector<double> finish;
  double t0 = 0;  // when the case starts (platform files: cases run one after another)
};

// Bytes of chunks [begin, end) of `total` cut into `chunks` chunks, the last one taking the
// remainder (DESIGN.md, "The schedule IR"), written here again rather than taken from alg::.
std::uint64_t transfer_bytes(std::uint64_t total, int chunks, int begin, int end) {
  const std::uint64_t each = total / static_cast<std::uint64_t>(chunks);
  std::uint64_t bytes = each * static_cast<std::uint64_t>(end - begin);
  if (end == chunks) bytes += total - each * static_cast<std::uint64_t>(chunks);
  return bytes;
}

// The case's transfer list, on hosts already set.
void build_transfers(Case& c) {
  const int n = c.schedule.ranks;
  c.rank_rounds.assign(static_cast<std::size_t>(n),
                       std::vector<std::vector<int>>(c.schedule.rounds.size()));
  for (std::size_t k = 0; k < c.schedule.rounds.size(); ++k) {
    for (const ssim::alg::Transfer& x : c.schedule.rounds[k].transfers) {
      const int id = static_cast<int>(c.transfers.size());
      c.transfers.push_back(Transfer{
          x.src, x.dst, transfer_bytes(c.bytes, c.schedule.chunks, x.chunk_begin, x.chunk_end),
          x.op == ssim::alg::Op::reduce});
      c.rank_rounds[x.src][k].push_back(id);
      c.rank_rounds[x.dst][k].push_back(id);
    }
  }
}

// Builds the case's hosts, links and routes in `zone`, and its transfer list.
void build_platform(sg4::NetZone* zone, Case& c, int index) {
  const ssim::topo::Topology& t = *c.topology;
  const std::string prefix = "c" + std::to_string(index) + "_";
  const int n = c.schedule.ranks;
  for (int r = 0; r < n; ++r)
    c.hosts.push_back(zone->create_host(prefix + "gpu" + std::to_string(r), 1e9));
  std::vector<sg4::Link*> links;
  for (int l = 0; l < t.link_count(); ++l) {
    const ssim::topo::Link& link = t.link(l);
    links.push_back(zone->create_link(prefix + "link" + std::to_string(l), link.bandwidth.value)
                        ->set_latency(link.latency.value)
                        ->seal());
  }
  std::map<std::pair<int, int>, bool> routed;
  for (const ssim::alg::Round& round : c.schedule.rounds) {
    for (const ssim::alg::Transfer& x : round.transfers) {
      if (!routed[{x.src, x.dst}]) {
        routed[{x.src, x.dst}] = true;
        std::vector<sg4::LinkInRoute> route;
        for (int l : t.route(x.src, x.dst).links)
          route.emplace_back(links[static_cast<std::size_t>(l)]);
        zone->add_route(c.hosts[x.src]->get_netpoint(), c.hosts[x.dst]->get_netpoint(), nullptr,
                        nullptr, route, /*symmetrical=*/false);
      }
    }
  }
  build_transfers(c);
}

void run_transfer(Case* c, int id) {
  Transfer& x = c->transfers[static_cast<std::size_t>(id)];
  x.start = sg4::Engine::get_clock() - c->t0;
  sg4::this_actor::sleep_for(x.latency);
  sg4::Comm::sendto(c->hosts[x.src], c->hosts[x.dst], x.bytes);
  x.end = sg4::Engine::get_clock() - c->t0;
  c->done[x.src]->release();
  if (x.reduce && c->gamma > 0) sg4::this_actor::sleep_for(c->gamma * static_cast<double>(x.bytes));
  c->done[x.dst]->release();
}

void run_rank(Case* c, int rank) {
  sg4::this_actor::sleep_until(c->t0 + c->arrival[rank]);
  for (const std::vector<int>& round : c->rank_rounds[rank]) {
    for (int id : round) {
      Transfer& x = c->transfers[static_cast<std::size_t>(id)];
      if (++x.ends_ready == 2) {
        sg4::Actor::create("xfer", c->hosts[x.src], [c, id] { run_transfer(c, id); });
      }
    }
    for (std::size_t i = 0; i < round.size(); ++i) c->done[rank]->acquire();
  }
  c->finish[rank] = sg4::Engine::get_clock() - c->t0;
}

ssim::topo::Topology make_topology(const std::string& kind, int n) {
  using ssim::BytesPerSecond;
  using ssim::Seconds;
  if (kind == "switch") {
    return ssim::topo::make_switch(
        {.ranks = n, .bandwidth = BytesPerSecond{437.3e9}, .latency = Seconds{2.93e-6}});
  }
  if (kind == "ring") {
    return ssim::topo::make_ring(
        {.ranks = n, .bandwidth = BytesPerSecond{97.1e9}, .latency = Seconds{1.07e-6}});
  }
  if (kind == "fat_tree") {
    // Up to 8 hosts: a 2-tier k = 4 tree with 2:1 oversubscribed leaf-spine links; 16: the
    // 3-tier k = 4 tree (16 hosts).
    const bool three = n > 8;
    return ssim::topo::make_fat_tree({.k = 4,
                                      .tiers = three ? 3 : 2,
                                      .bandwidth = BytesPerSecond{47.3e9},
                                      .latency = Seconds{0.537e-6},
                                      .oversubscription = three ? 1.0 : 2.0,
                                      .ranks = n});
  }
  throw ssim::UsageError("--topology must be switch, ring or fat_tree, got '" + kind + "'");
}

// `platform`: the topology read from a platform file (its rank count only), else the sweep's.
std::vector<Case> sweep_cases(const ssim::topo::Topology* platform) {
  std::vector<Case> cases;
  std::mt19937_64 rng(15);
  for (const ssim::alg::AlgorithmInfo& info : ssim::alg::algorithms()) {
    if (info.in_network) continue;  // switch reductions: switch_reduce_test, nvls_test
    for (int n : {4, 7, 8, 16}) {
      if (platform != nullptr && n != 4) break;  // one rank count: the platform's
      if (platform != nullptr) n = platform->gpu_count();
      if (!info.supports_ranks(n)) continue;
      for (const char* topo : {"switch", "ring", "fat_tree"}) {
        if (platform != nullptr && std::string(topo) != "switch") break;  // one topology
        for (int variant = 0; variant < 2; ++variant) {
          Case c;
          c.schedule = ssim::alg::generate(info.name, n, ssim::alg::Options{});
          c.topology = std::make_unique<ssim::topo::Topology>(
              platform != nullptr ? *platform : make_topology(topo, n));
          if (platform != nullptr) topo = "platform";
          const auto chunks = static_cast<std::uint64_t>(c.schedule.chunks);
          // Variant 0: small, everyone at 0, no reduction cost. Variant 1: large, arrivals
          // spread over 50 us, a reduction cost of 2 ps per byte.
          c.bytes = variant == 0 ? chunks * 4096 + 3 : (256ull << 20) + 12345;
          c.gamma = variant == 0 ? 0.0 : 2e-12;
          c.arrival.assign(static_cast<std::size_t>(n), 0.0);
          if (variant == 1) {
            for (double& a : c.arrival) a = static_cast<double>(rng() % 1000) * 50e-9;
          }
          c.label = info.name + " n=" + std::to_string(n) + " " + topo +
                    " bytes=" + std::to_string(c.bytes) +
                    (variant == 1 ? " staggered, gamma 2ps/B" : "");
          cases.push_back(std::move(c));
        }
      }
    }
  }
  return cases;
}

std::string read_file(const std::string& path) {
  std::ifstream in(path);
  if (!in) throw ssim::InputError(path + ": cannot be read");
  std::ostringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

struct Args {
  std::string schedule;
  std::string platform;
  std::string topology;
  std::uint64_t size = 0;
  double tolerance = 1e-9;
};

Args parse_args(int argc, char** argv) {
  Args a;
  for (int i = 1; i < argc; ++i) {
    const std::string flag = argv[i];
    if (i + 1 >= argc) throw ssim::UsageError(flag + " needs a value (or is unknown)");
    const std::string value = argv[++i];
    auto number = [&](auto parse) {
      std::size_t used = 0;
      try {
        const auto v = parse(value, &used);
        if (used == value.size() && v > 0) return v;
      } catch (const std::exception&) {
      }
      throw ssim::UsageError(flag + " needs a positive number, got '" + value + "'");
    };
    if (flag == "--schedule")
      a.schedule = value;
    else if (flag == "--platform")
      a.platform = value;
    else if (flag == "--topology")
      a.topology = value;
    else if (flag == "--size")
      a.size = number([](const std::string& v, std::size_t* used) { return std::stoull(v, used); });
    else if (flag == "--tolerance")
      a.tolerance =
          number([](const std::string& v, std::size_t* used) { return std::stod(v, used); });
    else
      throw ssim::UsageError("unknown option " + flag);
  }
  if (!a.schedule.empty() && !a.platform.empty())
    throw ssim::UsageError("--schedule and --platform do not go together");
  if (!a.schedule.empty() && (a.topology.empty() || a.size == 0)) {
    throw ssim::UsageError("--schedule needs --topology and --size (bytes, > 0)");
  }
  return a;
}

}  // namespace

int main(int argc, char** argv) {
  Args args;
  std::vector<Case> cases;
  std::unique_ptr<ssim::topo::Topology> platform;
  try {
    args = parse_args(argc, argv);
    if (!args.platform.empty()) {
      platform = std::make_unique<ssim::topo::Topology>(
          ssim::experiments::simgrid_platform_file(args.platform));
      cases = sweep_cases(platform.get());
    } else if (args.schedule.empty()) {
      cases = sweep_cases(nullptr);
    } else {
      Case c;
      c.schedule = ssim::alg::read_schedule_json(read_file(args.schedule), args.schedule);
      c.topology =
          std::make_unique<ssim::topo::Topology>(make_topology(args.topology, c.schedule.ranks));
      c.bytes = args.size;
      c.arrival.assign(static_cast<std::size_t>(c.schedule.ranks), 0.0);
      c.label = args.schedule + " on " + args.topology;
      cases.push_back(std::move(c));
    }
  } catch (...) {
    return ssim::report_exception("simgrid_replay", std::cerr);
  }

  int sg_argc = 1;
  sg4::Engine engine(&sg_argc, argv);
  sg4::Engine::set_config("network/model:CM02");
  sg4::Engine::set_config("network/latency-factor:0");
  sg4::Engine::set_config("network/bandwidth-factor:1");
  sg4::Engine::set_config("network/weight-S:0");
  sg4::Engine::set_config("network/TCP-gamma:0");
  sg4::Engine::set_config("network/crosstraffic:0");
  sg4::Engine::set_config("surf/precision:1e-13");
  sg4::Engine::set_config("maxmin/precision:1e-13");
  sg4::Engine::set_config("contexts/stack-size:128");

  if (platform != nullptr) {
    // SimGrid reads the file itself; stragglesim's reading of it must give the same links
    // (names, bandwidths, latencies) between every pair of hosts.
    engine.load_platform(args.platform);
    const int n = platform->gpu_count();
    std::vector<sg4::Host*> hosts;
    for (int r = 0; r < n; ++r)
      hosts.push_back(engine.host_by_name(platform->node(platform->vertex_of_rank(r)).name));
    int pairs = 0;
    for (int a = 0; a < n; ++a) {
      for (int b = 0; b < n; ++b) {
        if (a == b) continue;
        std::vector<sg4::Link*> links;
        double latency = 0;
        hosts[a]->route_to(hosts[b], links, &latency);
        const ssim::topo::Route ours = platform->route(a, b);
        bool same = links.size() == ours.links.size() && latency == ours.latency.value;
        for (std::size_t i = 0; same && i < links.size(); ++i) {
          const ssim::topo::Link& l = platform->link(ours.links[i]);
          std::string name = links[i]->get_name();
          for (const char* suffix : {"_UP", "_DOWN"}) {
            const std::string s(suffix);
            if (name.size() > s.size() && name.compare(name.size() - s.size(), s.size(), s) == 0)
              name.resize(name.size() - s.size());
          }
          same = name == l.link_class && links[i]->get_bandwidth() == l.bandwidth.value &&
                 links[i]->get_latency() == l.latency.value;
        }
        if (!same) {
          std::cout << "MISMATCH route " << a << " -> " << b << ": SimGrid takes";
          for (const sg4::Link* l : links)
            std::cout << " " << l->get_name() << " (" << l->get_bandwidth() << " B/s, "
                      << l->get_latency() << " s)";
          std::cout << "; stragglesim";
          for (int id : ours.links)
            std::cout << " " << platform->link(id).link_class << " ("
                      << platform->link(id).bandwidth.value << " B/s, "
                      << platform->link(id).latency.value << " s)";
          std::cout << "\n";
          return 1;
        }
        ++pairs;
      }
    }
    std::cout << "simgrid_replay: " << args.platform << ": the routes of all " << pairs
              << " host pairs agree (links, bandwidths, latencies)\n";
    for (Case& c : cases) {
      c.hosts = hosts;
      build_transfers(c);
    }
  } else {
    auto* zone = sg4::create_full_zone("replay");
    for (std::size_t i = 0; i < cases.size(); ++i)
      build_platform(zone, cases[i], static_cast<int>(i));
    zone->seal();
  }
  for (Case& c : cases) {
    const int n = c.schedule.ranks;
    c.finish.assign(static_cast<std::size_t>(n), -1.0);
    for (int r = 0; r < n; ++r) c.done.push_back(sg4::Semaphore::create(0));
    for (Transfer& x : c.transfers) {
      std::vector<sg4::Link*> links;
      c.hosts[x.src]->route_to(c.hosts[x.dst], links, &x.latency);
    }
    if (platform == nullptr) {
      for (int r = 0; r < n; ++r) {
        sg4::Actor::create("rank" + std::to_string(r), c.hosts[r], [&c, r] { run_rank(&c, r); });
      }
    }
  }
  if (platform != nullptr) {
    // One platform for all cases: they run one after another, each from its own t0.
    sg4::Actor::create("cases", cases.front().hosts.front(), [&cases] {
      for (Case& c : cases) {
        c.t0 = sg4::Engine::get_clock();
        std::vector<sg4::ActorPtr> ranks;
        for (int r = 0; r < c.schedule.ranks; ++r) {
          ranks.push_back(sg4::Actor::create("rank" + std::to_string(r), c.hosts[r],
                                             [&c, r] { run_rank(&c, r); }));
        }
        for (const sg4::ActorPtr& a : ranks) a->join();
      }
    });
  }
  engine.run();

  int failed = 0;
  double worst = 0;
  std::string worst_label;
  int tight = 0;  // cases within 1e-12
  std::size_t ranks_checked = 0;
  for (const Case& c : cases) {
    std::vector<ssim::Seconds> arrival;
    for (double a : c.arrival) arrival.push_back(ssim::Seconds{a});
    ssim::sim::Executor ex(
        c.schedule, *c.topology,
        ssim::sim::NetworkConfig{ssim::sim::NetworkKind::flow, ssim::SecondsPerByte{c.gamma}},
        ssim::Bytes{c.bytes});
    ssim::sim::RunOptions options;
    options.record_timeline = true;
    const ssim::sim::IterationResult ours = ex.run(arrival, options);
    const double scale = ours.last_finish.value;
    double case_worst = 0;
    for (std::size_t r = 0; r < c.finish.size(); ++r) {
      case_worst = std::max(case_worst, std::abs(ours.finish[r].value - c.finish[r]) / scale);
      ++ranks_checked;
    }
    if (case_worst > worst) {
      worst = case_worst;
      worst_label = c.label;
    }
    tight += case_worst <= 1e-12 ? 1 : 0;
    if (!(case_worst <= args.tolerance)) {
      ++failed;
      std::cout << "MISMATCH " << c.label << ": relative difference " << case_worst << "\n";
      // The transfer that goes wrong first: the earliest start among those whose end differs.
      const ssim::sim::TransferRecord* first = nullptr;
      std::size_t first_id = 0;
      for (std::size_t i = 0; i < ours.timeline.size(); ++i) {
        const ssim::sim::TransferRecord& t = ours.timeline[i];
        if (std::abs(t.end.value - c.transfers[i].end) > 1e-12 * scale &&
            (first == nullptr || t.start.value < first->start.value)) {
          first = &t;
          first_id = i;
        }
      }
      if (first != nullptr) {
        const Transfer& x = c.transfers[first_id];
        std::cout << std::setprecision(17) << "  first differing transfer: round " << first->round
                  << " #" << first->index << " " << first->src << "->" << first->dst << " "
                  << first->bytes << " B: start " << first->start.value << " / " << x.start
                  << " s, end " << first->end.value << " / " << x.end
                  << " s (stragglesim / SimGrid)\n";
      }
      for (std::size_t r = 0; r < c.finish.size(); ++r) {
        std::cout << "  rank " << r << ": stragglesim " << ours.finish[r].value << " s, SimGrid "
                  << c.finish[r] << " s, difference " << ours.finish[r].value - c.finish[r]
                  << " s\n";
      }
    }
  }
  std::cout << "simgrid_replay: " << cases.size() << " cases, " << ranks_checked
            << " rank finish times; " << tight << " cases agree within 1e-12; the largest relative "
            << "difference is " << worst << " (" << worst_label << "); tolerance " << args.tolerance
            << ", " << failed << " cases outside\n";
  return failed == 0 ? 0 : 1;
}
