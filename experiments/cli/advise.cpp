// `stragglesim advise`: which AllReduce algorithm to use for a topology, size and straggler
// delay distribution, by simulating each candidate over many iterations of random arrivals.
//
// The flags are turned into a one-point experiment document (the same loader and runner as
// `run`), after each flag that holds YAML has been checked on its own so that its errors name
// the flag.
#include <algorithm>
#include <cstdio>
#include <filesystem>
#include <iostream>
#include <optional>
#include <sstream>

#include "algorithms/protocol.hpp"
#include "algorithms/registry.hpp"
#include "common/error.hpp"
#include "common/suggest.hpp"
#include "experiments/cli/advise.hpp"
#include "experiments/cli/commands.hpp"
#include "experiments/config/config.hpp"
#include "experiments/config/data_files.hpp"
#include "experiments/config/resource_check.hpp"
#include "experiments/output/summary.hpp"
#include "experiments/runner/experiment.hpp"

namespace ssim::experiments {
namespace {

std::string yaml_quoted(const std::string& s) {
  std::string out = "\"";
  for (char c : s) {
    if (c == '"' || c == '\\') out += '\\';
    out += c;
  }
  return out + "\"";
}

// A flag holding YAML flow text, parsed alone so that its errors name the flag.
std::string flow_flag(const std::string& flag, const std::string& text) {
  if (text.find_first_of("\r\n") != std::string::npos)
    throw InputError(flag + ": give it on one line");
  return text;
}

std::string checked_distribution(const std::string& flag, const std::string& text) {
  const ConfigReader r = ConfigReader::from_string(flow_flag(flag, text), flag);
  load_distribution(r.root(), ".");
  return text;
}

// --topology: a YAML file, a shipped topology's name, an inline YAML map, or
// KIND:BANDWIDTH:LATENCY.
std::string topology_yaml(const AdviseArgs& a) {
  const std::string& t = a.topology;
  if (!t.empty() && t.front() == '{') {
    const ConfigReader r = ConfigReader::from_string(flow_flag("--topology", t), "--topology");
    r.root().require_map();
    return t;
  }
  std::error_code ec;  // a name too long for a path is simply not a file
  if (std::filesystem::is_regular_file(t, ec))
    return "{file: " + yaml_quoted(std::filesystem::absolute(t, ec).string()) + "}";
  if (const std::string shipped = shipped_topology(t); !shipped.empty())
    return "{file: " + yaml_quoted(shipped) + "}";
  const auto c1 = t.find(':');
  const auto c2 = c1 == std::string::npos ? c1 : t.find(':', c1 + 1);
  if (c2 != std::string::npos && t.find(':', c2 + 1) == std::string::npos) {
    const std::string kind = t.substr(0, c1);
    if (kind != "switch" && kind != "fully_connected" && kind != "ring") {
      throw InputError("--topology '" + t +
                       "': the KIND:BANDWIDTH:LATENCY form takes switch, fully_connected or ring");
    }
    if (a.ranks == 0) throw InputError("--topology " + t + " needs --ranks");
    const std::string bw = t.substr(c1 + 1, c2 - c1 - 1), lat = t.substr(c2 + 1);
    try {
      parse_bandwidth(bw);
      parse_time(lat);
    } catch (const InputError& e) {
      throw InputError("--topology '" + t + "': " + e.what());
    }
    return "{kind: " + kind + ", ranks: " + std::to_string(a.ranks) +
           ", bandwidth: " + yaml_quoted(bw) + ", latency: " + yaml_quoted(lat) + "}";
  }
  const std::vector<std::string> shipped = shipped_topology_names();
  if (const std::optional<std::string> near = closest_name(t, shipped))
    throw InputError("--topology '" + t + "': no such file or shipped topology; did you mean '" +
                     *near + "'?");
  throw InputError(
      "--topology '" + t +
      "': not a file, a shipped topology (configs/topologies/NAME.yaml), a YAML map such as "
      "'{kind: switch, ranks: 8, bandwidth: 450GiB/s, latency: 3us}', or KIND:BANDWIDTH:LATENCY "
      "such as switch:450GiB/s:3us");
}

// --delays FILE: a delays: map (base, persistent), as fit-delays writes it, checked in its own
// file (errors name its line and key) and turned into the experiment's delays, stragglers and
// prediction (the first straggler's rank is the first guess).
std::string delays_file_yaml(const AdviseArgs& a, const std::string& prediction) {
  if (!a.delay_dist.empty() || !a.base_dist.empty() || a.straggler_rank >= 0 ||
      a.persistence != 1.0 || a.probability != -1)
    throw UsageError(
        "--delays FILE replaces --delay-dist, --base-dist, --straggler-rank, --persistence and "
        "--probability");
  const ConfigReader file(a.delays_file);
  const ConfigNode root = file.root();
  all_errors([&] {  // every error of the file at once (experiments/config/reader.hpp)
    root.allow_only({"base", "persistent"});
    load_delay_model(root, file.directory());
  });
  // Copied into the generated experiment, a sample file's path stays relative to this file
  // (made absolute here), not to the working directory.
  auto copied = [&file](const ConfigNode& n) {
    return n.text_with_absolute_files(file.directory(), {"file"});
  };
  std::ostringstream y;
  if (root.has("base")) y << "delays: {base: " << copied(root.child("base")) << "}\n";
  std::string first_rank;
  if (auto list = root.maybe("persistent")) {
    const std::vector<ConfigNode> items = list->items();
    if (!items.empty()) {
      std::string ranks, delay, persistence, probability;
      for (std::size_t i = 0; i < items.size(); ++i) {
        const ConfigNode& it = items[i];
        const std::string d = copied(it.child("delay"));
        const std::string p = it.has("persistence") ? it.child("persistence").text() : "1";
        const std::string q = it.has("probability") ? it.child("probability").text() : "";
        if (i == 0) {
          delay = d;
          persistence = p;
          probability = q;
          first_rank = it.child("rank").text();
        } else if (d != delay || p != persistence || q != probability) {
          it.fail(
              "advise takes one delay distribution, persistence and probability for every "
              "straggler");
        }
        ranks += (i ? ", " : "") + it.child("rank").text();
      }
      y << "stragglers: {ranks: [" << ranks << "], delay: " << delay
        << ", persistence: " << persistence
        << (probability.empty() ? "" : ", probability: " + probability) << "}\n";
    }
  }
  y << "prediction: {" << prediction << (first_rank.empty() ? "" : ", rank: " + first_rank)
    << "}\n";
  return y.str();
}

// The policies of --policy, in the order given: oracle, fixed, previous, adaptive, eager.
std::vector<std::string> advise_policies(const AdviseArgs& a) {
  const std::vector<std::string> policies = split_list("--policy", a.policy);
  for (std::size_t i = 0; i < policies.size(); ++i) {
    const std::string& p = policies[i];
    if (p != "oracle" && p != "fixed" && p != "previous" && p != "adaptive" && p != "eager") {
      const std::optional<std::string> near =
          closest_name(p, {"oracle", "fixed", "previous", "adaptive", "eager"});
      throw UsageError("--policy: unknown policy '" + p + "' (" +
                       (near ? "did you mean '" + *near + "'? " : "") +
                       "allowed: oracle, fixed, previous, adaptive, eager, or several separated "
                       "by commas)");
    }
    if (std::find(policies.begin(), policies.begin() + static_cast<std::ptrdiff_t>(i), p) !=
        policies.begin() + static_cast<std::ptrdiff_t>(i))
      throw UsageError("--policy: " + p + " is listed twice");
  }
  if (!a.fallback.empty() && std::find(policies.begin(), policies.end(), "adaptive") ==
                                 policies.end())
    throw UsageError("--fallback is for --policy adaptive");
  return policies;
}

// The prediction map's contents for `policy` (adaptive with its --fallback list).
std::string prediction_yaml(const AdviseArgs& a, const std::string& policy) {
  std::string y = "policy: " + policy;
  if (policy == "adaptive" && !a.fallback.empty()) {
    y += ", fallback: [";
    const std::vector<std::string> f = split_list("--fallback", a.fallback);
    for (std::size_t i = 0; i < f.size(); ++i) y += (i ? ", " : "") + yaml_quoted(f[i]);
    y += "]";
  }
  return y;
}

// The candidates: --algorithms, or every algorithm the topology can run; in `left_out`, the
// names left out because on this topology they are another candidate's schedule.
std::vector<std::string> advise_candidates(const AdviseArgs& a,
                                           std::vector<std::string>* left_out = nullptr) {
  if (a.size.empty() == a.workload.empty())
    throw UsageError(
        "give --size (one AllReduce) or --workload FILE (a training step), one of them");
  if (!a.workload.empty() && !a.trace.empty())
    throw UsageError("--trace records one AllReduce; with --workload there is a step of them");
  if (!a.size.empty()) {
    try {
      parse_bytes_with_unit(a.size);
    } catch (const InputError& e) {
      throw InputError(std::string("--size: ") + e.what());
    }
  }
  std::vector<std::string> algs =
      a.algorithms.empty() ? std::vector<std::string>() : split_list("--algorithms", a.algorithms);
  for (const std::string& name : algs) {
    try {
      (void)alg::find_algorithm(name);  // named by the flag, with "did you mean"
    } catch (const InputError& e) {
      throw InputError(std::string("--algorithms: ") + e.what());
    }
  }
  if (algs.empty()) {
    // Algorithms that reduce in a switch only where the topology's switch reduces; asked for
    // by name, they are checked like any experiment's.
    std::optional<topo::Topology> t;
    const auto topology = [&]() -> const topo::Topology& {
      if (!t) {
        const ConfigReader r =
            ConfigReader::from_string("topology: " + topology_yaml(a), "--topology");
        t = load_topology(r.root().child("topology"), ".");
      }
      return *t;
    };
    for (const alg::AlgorithmInfo& info : alg::algorithms()) {
      if (info.in_network && (topology().shared_device || unreduced_group(info, topology()) >= 0))
        continue;
      // Ranks sharing one GPU run this project's own transports: one GPU cannot host several
      // ranks of an NCCL communicator, so what NCCL runs is no candidate there.
      if (topology().shared_device && info.name.starts_with("nccl")) continue;
      algs.push_back(info.name);
    }
    // On one node a node-aware schedule is another candidate's (hierarchical is ring there):
    // ranking both would only list the same time twice.
    const int ranks = a.ranks > 0 ? a.ranks : topology().gpu_count();
    const int g = topology().gpus_per_node;
    if (g == 0 || g >= ranks) {
      // CollNet is NCCL's reduction in the network's switches across nodes (SHARP); on one
      // node the switch that reduces is the NVSwitch, which is NVLS (nvls, nccl's choice).
      std::erase_if(algs, [&](const std::string& name) {
        const bool collnet = name.starts_with("collnet");
        if (collnet && left_out) left_out->push_back(name + " (needs nodes: SHARP across them)");
        return collnet;
      });
      std::erase_if(algs, [&](const std::string& name) {
        const alg::AlgorithmInfo& info = alg::find_algorithm(name);
        const bool same = !info.one_node_equals.empty() &&
                          std::find(algs.begin(), algs.end(), info.one_node_equals) != algs.end();
        if (same && left_out) left_out->push_back(name + " (= " + info.one_node_equals + ")");
        return same;
      });
    }
  }
  return algs;
}

// The one-point experiment of `algs` under `policy`.
std::string advise_document(const AdviseArgs& a, const std::vector<std::string>& algs,
                            const std::string& policy) {
  std::ostringstream y;
  y << "name: advise\n";
  y << "topology: " << topology_yaml(a) << "\n";
  // Without --network, the loader takes the topology's network_model (else alphabeta).
  std::vector<std::string> net;
  if (!a.network.empty()) net.push_back("model: " + a.network);
  if (!a.gamma.empty()) net.push_back("gamma: " + yaml_quoted(a.gamma));
  if (a.protocol != "none") net.push_back("protocol: " + a.protocol);
  if (a.steps != "pipelined") net.push_back("steps: " + a.steps);
  y << "network: {";
  for (std::size_t i = 0; i < net.size(); ++i) y << (i ? ", " : "") << net[i];
  y << "}\n";
  y << "algorithms: [";
  for (std::size_t i = 0; i < algs.size(); ++i) y << (i ? ", " : "") << yaml_quoted(algs[i]);
  y << "]\n";
  // The "vs" column: what NCCL runs where it is a candidate, else the paper's baseline, Ring.
  if (std::find(algs.begin(), algs.end(), "nccl") != algs.end()) {
    y << "baseline: nccl\n";
  } else if (std::find(algs.begin(), algs.end(), "ring") != algs.end()) {
    y << "baseline: ring\n";
  }
  if (a.workload.empty()) {
    y << "size: " << yaml_quoted(a.size) << "\n";
  } else {
    // The experiment loader reads the file (errors name its line and key) and runs every
    // candidate on each gradient bucket of the job's steps.
    y << "workload: {file: " << yaml_quoted(std::filesystem::absolute(a.workload).string())
      << "}\n";
  }
  if (!a.delays_file.empty()) {
    y << delays_file_yaml(a, prediction_yaml(a, policy));
    y << "iterations: " << a.iterations << "\nseed: " << a.seed << "\n";
    if (a.ranks > 0) y << "sweep: {ranks: [" << a.ranks << "]}\n";
    return y.str();
  }
  if (!a.base_dist.empty())
    y << "delays: {base: " << checked_distribution("--base-dist", a.base_dist) << "}\n";
  if (!a.delay_dist.empty()) {
    y << "stragglers: {"
      << (a.straggler_rank >= 0 ? "ranks: [" + std::to_string(a.straggler_rank) + "]" : "count: 1")
      << ", delay: " << checked_distribution("--delay-dist", a.delay_dist)
      << ", persistence: " << a.persistence;
    if (a.probability != -1) {
      char p[32];
      std::snprintf(p, sizeof p, "%.17g", a.probability);  // the value given, to the bit
      y << ", probability: " << p;
    }
    y << "}\n";
  } else if (a.probability != -1) {
    throw UsageError("--probability needs --delay-dist (the delay of a late straggler)");
  }
  y << "prediction: {" << prediction_yaml(a, policy);
  if (a.straggler_rank >= 0) y << ", rank: " << a.straggler_rank;
  y << "}\n";
  y << "iterations: " << a.iterations << "\nseed: " << a.seed << "\n";
  if (a.ranks > 0) y << "sweep: {ranks: [" << a.ranks << "]}\n";
  return y.str();
}

std::string pct(double f) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.1f%%", 100 * f);
  return buf;
}

}  // namespace

AdviseRanking rank_advise_candidates(const AdviseArgs& given, std::ostream& err) {
  AdviseArgs a = given;
  require_threads_used(a.jobs, a.threads);
  // Flags checked before anything runs, each naming itself: what would otherwise be ignored (the
  // straggler's flags without a straggler), refused in the generated experiment (--gamma, named
  // by its generated line) or after the ranking (the trace's).
  if (a.delay_dist.empty() && a.delays_file.empty() &&
      (a.straggler_rank >= 0 || a.persistence != 1.0 || a.probability != -1)) {
    throw UsageError(
        "--straggler-rank, --persistence and --probability describe the straggler of "
        "--delay-dist, which is not given (without it no rank is late)");
  }
  if (!a.gamma.empty()) {
    try {
      (void)parse_seconds_per_byte(a.gamma);
    } catch (const InputError& e) {
      throw InputError(std::string("--gamma: ") + e.what());
    }
  }
  if (!a.trace.empty()) {
    if (a.trace_iteration >= a.iterations) {
      throw InputError("--trace-iteration " + std::to_string(a.trace_iteration) +
                       " is past the last iteration (" + std::to_string(a.iterations - 1) + ")");
    }
  }
  std::vector<std::string> left_out;
  const std::vector<std::string> policies = advise_policies(a);
  const std::vector<std::string> candidates = advise_candidates(a, &left_out);
  if (a.protocol == "auto") {
    const bool nccl = std::find(candidates.begin(), candidates.end(), "nccl") != candidates.end();
    a.protocol = nccl ? "simple" : "none";
  }
  // One experiment per policy on the same seed and delays, so every candidate sees the same
  // arrivals in every iteration (the "fastest" column compares them iteration by iteration).
  // The first runs every candidate; the others only the straggler-aware ones (a baseline
  // ignores the policy: its times would be the first experiment's again).
  std::vector<Experiment> experiments;
  std::vector<ExperimentRuns> results;
  for (const std::string& policy : policies) {
    std::vector<std::string> algs = candidates;
    if (!experiments.empty()) {
      std::erase_if(algs, [](const std::string& name) {
        return !alg::find_algorithm(name).straggler_aware;
      });
      if (algs.empty()) break;  // no straggler-aware candidate: no policy changes anything
    }
    const ConfigReader reader =
        ConfigReader::from_string(advise_document(a, algs, policy), "stragglesim advise");
    Experiment e = load_experiment(reader);
    // Link counters need the flow model: --network's, else the topology's (network_model),
    // known once loaded; refused before anything runs or prints.
    if (!a.trace.empty() && a.trace_links > 0 && !e.points.empty() &&
        e.points.front().config.network != sim::NetworkKind::flow) {
      const std::string whose = a.network.empty() ? " (the topology's default)" : "";
      throw InputError("--trace-links " + std::to_string(a.trace_links) +
                       ": link utilization counters need the flow model (--network flow); the "
                       "alphabeta model" + whose + " has no link rates");
    }
    check_experiment_memory(MemoryBudget::from_flag(a.max_memory), e, a.jobs);
    check_experiment_time(TimeBudget::from_flag(a.max_time), e, a.jobs);
    if (const std::string note = experiment_time_note(e, a.jobs); !note.empty())
      err << "stragglesim: note: " << note << "\n";
    ExperimentRuns runs =
        run_experiment_in_memory(e, a.jobs, a.threads, a.quiet ? nullptr : &std::cerr,
                                 Progress::automatic, a.progress_after);
    if (const std::string w = shared_link_warning(e, runs.summaries); !w.empty())
      err << "stragglesim: warning: " << w << "\n";
    experiments.push_back(std::move(e));
    results.push_back(std::move(runs));
  }
  const Experiment& e = experiments.front();
  const bool pairs = experiments.size() > 1;
  // The rows: every candidate of every experiment, a straggler-aware one labelled with its
  // policy when several are ranked; the speedup against the first experiment's baseline.
  std::vector<AdviseRow> rows;
  const AlgorithmSummary& base_summary = results.front().summaries.front()[e.baseline];
  for (std::size_t x = 0; x < experiments.size(); ++x) {
    for (std::size_t k = 0; k < experiments[x].algorithms.size(); ++k) {
      AdviseRow row{experiments[x].algorithms[k].label, &results[x].runs.front()[k],
                    results[x].summaries.front()[k], x, k};
      if (pairs && row.summary.straggler_aware) row.label += " (" + policies[x] + ")";
      if (x > 0) row.summary.speedup = base_summary.mean_completion / row.summary.mean_completion;
      rows.push_back(std::move(row));
    }
  }
  const std::size_t nalg = rows.size();

  // Share of iterations in which each algorithm is the fastest; an iteration that several tie
  // for (within 1e-9) is split among them, so the column sums to 100%.
  std::vector<double> wins(nalg, 0.0);
  const auto completion = [&](std::size_t k, std::size_t i) {
    return rows[k].run->iterations[i].completion.value;
  };
  const std::size_t iters = rows.front().run->iterations.size();
  for (std::size_t i = 0; i < iters; ++i) {
    double best = completion(0, i);
    for (std::size_t k = 1; k < nalg; ++k) best = std::min(best, completion(k, i));
    std::size_t tied = 0;
    for (std::size_t k = 0; k < nalg; ++k)
      if (completion(k, i) <= best * (1 + 1e-9)) ++tied;
    for (std::size_t k = 0; k < nalg; ++k) {
      if (completion(k, i) <= best * (1 + 1e-9))
        wins[k] += 1.0 / static_cast<double>(iters * tied);
    }
  }
  std::vector<std::size_t> order(nalg);
  for (std::size_t k = 0; k < nalg; ++k) order[k] = k;
  std::stable_sort(order.begin(), order.end(), [&](std::size_t x, std::size_t y) {
    return rows[x].summary.mean_completion < rows[y].summary.mean_completion;
  });
  return {policies,          left_out,        std::move(experiments), std::move(results),
          std::move(rows),   std::move(wins), std::move(order)};
}

namespace {

void run_advise(const AdviseArgs& a) {
  using Row = AdviseRow;
  const AdviseRanking ranking = rank_advise_candidates(a, std::cerr);
  const std::vector<std::string>& policies = ranking.policies;
  const std::vector<std::string>& left_out = ranking.left_out;
  const std::vector<Experiment>& experiments = ranking.experiments;
  const std::vector<AdviseRow>& rows = ranking.rows;
  const std::vector<double>& wins = ranking.wins;
  const std::vector<std::size_t>& order = ranking.order;
  const Experiment& e = experiments.front();
  const sim::SimulationConfig& c = e.points.front().config;
  const AlgorithmSummary& base_summary = ranking.results.front().summaries.front()[e.baseline];
  const std::size_t nalg = rows.size();
  const std::size_t baseline = e.baseline;  // rows of the first experiment come first

  const std::optional<Workload>& job = e.points.front().workload;
  std::string policy_list;
  for (std::size_t x = 0; x < experiments.size(); ++x)
    policy_list += (x ? ", " : "") + policies[x];
  std::cout << c.topology.name << ", " << c.topology.gpu_count() << " ranks, ";
  if (job) {
    std::cout << "training step (" << format_bytes(c.size) << " of gradients in "
              << sim::make_buckets(job->layers, job->bytes_per_param, job->bucket_cap).size()
              << " buckets, each reduced by the candidate)";
  } else {
    std::cout << format_bytes(c.size);
  }
  std::cout << ", " << sim::to_string(c.network) << " model"
            << (c.protocol ? std::string(", NCCL's ") + std::string(alg::to_string(*c.protocol)) +
                                 " costs for every schedule"
                           : std::string())
            << (c.pipelined_kernels ? "" : ", NCCL's steps per round")
            << "; delays: " << c.delays.describe()
            << "; prediction " << policy_list << "; " << e.iterations
            << (job ? " steps" : " iterations") << ", seed " << e.seed << "\n";
  std::cout << (job ? "completion = the step's time; after last arr. = its exposed communication "
                      "(step end - optimizer - last backward end)\n"
                    : "completion = first arrival to last finish (what the step waits)\n");
  if (!left_out.empty()) {
    std::cout << "left out on one node:";
    for (std::size_t i = 0; i < left_out.size(); ++i) std::cout << (i ? ", " : " ") << left_out[i];
    std::cout << "\n";
  }
  std::cout << one_channel_ring_note(e) << uncalibrated_note(e) << "\n";
  const std::string base = e.algorithms[e.baseline].label;
  // The algorithm column as wide as the longest label, so that every row lines up.
  int width = 10;
  for (const Row& row : rows) width = std::max(width, static_cast<int>(row.label.size()));
  char line[1024];
  std::snprintf(line, sizeof line, "%-4s %-*s %12s %12s %16s %9s %8s\n", "rank", width, "algorithm",
                "mean", "p90", "after last arr.", ("vs " + base).c_str(), "fastest");
  std::cout << line;
  for (std::size_t i = 0; i < nalg; ++i) {
    const std::size_t k = order[i];
    const AlgorithmSummary& sk = rows[k].summary;
    char speed[32];
    std::snprintf(speed, sizeof speed, "%.3fx", sk.speedup);
    std::snprintf(line, sizeof line, "%-4zu %-*s %12s %12s %16s %9s %8s\n", i + 1, width,
                  rows[k].label.c_str(), format_time(Seconds{sk.mean_completion}).c_str(),
                  format_time(Seconds{sk.p90_completion}).c_str(),
                  format_time(Seconds{sk.mean_after_last_arrival}).c_str(), speed,
                  pct(wins[k]).c_str());
    std::cout << line;
  }
  const std::size_t best = order.front();
  const AlgorithmSummary& sb = rows[best].summary;
  std::cout << "\nuse " << rows[best].label << ": expected "
            << format_time(Seconds{sb.mean_completion})
            << (job ? " per training step (p90 " : " per AllReduce (p90 ")
            << format_time(Seconds{sb.p90_completion}) << ")";
  if (best != baseline) {
    char speed[32];
    std::snprintf(speed, sizeof speed, "%.3f", sb.speedup);
    std::cout << ", " << speed << "x faster than " << base << " ("
              << format_time(Seconds{base_summary.mean_completion}) << ")";
  }
  if (sb.straggler_aware) {
    const Experiment& eb = experiments[rows[best].experiment];
    if (!eb.points.front().config.adaptive_fallbacks.empty()) {
      std::cout << "; a fallback ran in " << pct(sb.fallback_fraction) << " of iterations";
    } else {
      std::cout << "; straggler predicted right in " << pct(sb.prediction_accuracy)
                << " of iterations";
    }
  }
  std::cout << "\n";
  // The trace of the recommendation, on the arrivals the advisor simulated for that iteration.
  if (!a.trace.empty()) {
    if (a.trace_iteration >= e.iterations) {
      throw InputError("--trace-iteration " + std::to_string(a.trace_iteration) +
                       " is past the last iteration (" + std::to_string(e.iterations - 1) + ")");
    }
    const sim::SimulationResult t = write_trace(
        run_config(experiments[rows[best].experiment], rows[best].algorithm), a.trace_iteration,
        a.trace_links, a.trace_flags, a.trace, a.max_memory, a.max_time, "stragglesim advise");
    std::cout << "trace of " << rows[best].label << ", iteration " << a.trace_iteration
              << " (" << format_time(t.iterations.back().completion) << "): " << a.trace << "\n";
  }
}

}  // namespace

CLI::App* add_advise_options(CLI::App& app, AdviseArgs& args) {
  AdviseArgs* a = &args;
  CLI::App* cmd = app.add_subcommand("advise",
                                     "Which AllReduce algorithm to use under a straggler delay "
                                     "distribution (ranked by mean completion)");
  cmd->add_option("--topology", a->topology,
                  "Topology: YAML file, shipped name (dgx_h100), '{kind: switch, ...}' or "
                  "switch:450GiB/s:3us")
      ->required();
  cmd->add_option("-r,--ranks", a->ranks,
                  "Rank count (sets the topology's; default: the topology's)")
      ->check(CLI::Range(2, 65536));
  cmd->add_option("--size", a->size, "AllReduce size per rank, e.g. 1GiB (or --workload)");
  cmd->add_option("--workload", a->workload,
                  "Rank the algorithms by training step time: FILE's workload: section (a train "
                  "job, e.g. configs/train/gpt2_medium_64gpu.yaml), each bucket's AllReduce run "
                  "by the candidate; iterations are steps");
  cmd->add_option(
      "--delay-dist", a->delay_dist,
      "Straggler delay: a time (5ms) or a YAML map, e.g. '{distribution: lognormal, mean: 9.5ms, "
      "p90: 18.8ms}'; default: no straggler");
  cmd->add_option("--delays", a->delays_file,
                  "A delays: map in a YAML file (base, persistent), e.g. what fit-delays writes; "
                  "replaces --delay-dist, --base-dist, --straggler-rank and --persistence");
  cmd->add_option("--straggler-rank", a->straggler_rank,
                  "The straggler's home rank (default: the last rank)")
      ->check(non_negative_number());
  cmd->add_option("--persistence", a->persistence,
                  "Share of iterations the straggler is on its home rank")
      ->check(CLI::Range(0.0, 1.0));
  cmd->add_option("--probability", a->probability,
                  "Share of iterations in which the straggler is late at all (default 1: every "
                  "iteration); which rank is late follows --persistence")
      ->check(CLI::Range(0.0, 1.0));
  cmd->add_option("--base-dist", a->base_dist,
                  "Delay of every rank, every iteration (same forms as --delay-dist)");
  cmd->add_option("--policy", a->policy,
                  "Straggler prediction of straggler-aware algorithms: oracle, fixed, previous, "
                  "adaptive or eager, or several separated by commas to rank algorithm x policy "
                  "pairs (default previous)");
  cmd->add_option("--fallback", a->fallback,
                  "Baselines --policy adaptive may fall back to, comma-separated (default ring)");
  cmd->add_option("--network", a->network,
                  "Network model (default: the topology file's network_model, else alphabeta)")
      ->check(CLI::IsMember({"alphabeta", "flow"}));
  cmd->add_option("--gamma", a->gamma, "Reduce cost, e.g. 0.05ns/B (default 0)");
  cmd->add_option("--protocol", a->protocol,
                  "Every candidate that names no protocol runs as NCCL's send/recv with this one, "
                  "as nccl does (none: by its routes alone; simple, ll, ll128; default auto: "
                  "simple where nccl is a candidate, else none)")
      ->check(CLI::IsMember({"auto", "none", "simple", "ll", "ll128"}));
  cmd->add_option("--steps", a->steps,
                  "How NCCL kernels take their steps' latencies: pipelined (overlapped, the "
                  "default) or per_round (as network: {steps: per_round})")
      ->check(CLI::IsMember({"per_round", "pipelined"}));
  cmd->add_option("--algorithms", a->algorithms,
                  "Candidates, comma-separated (default: every algorithm)");
  cmd->add_option("-n,--iterations", a->iterations, "Iterations per algorithm (default 200)")
      ->check(CLI::Range(1, 10'000'000));
  add_seed_option(*cmd, a->seed, "Seed (default 1)");
  cmd->add_option("-j,--jobs", a->jobs, "Parallel runs (default: hardware concurrency)")
      ->check(CLI::Range(1, 1024));
  CLI::Option* trace = cmd->add_option(
      "--trace", a->trace,
      "Write the Chrome trace (Perfetto) of the recommended algorithm's iteration to FILE (pick "
      "another with --algorithms NAME)");
  cmd->add_option("--trace-iteration", a->trace_iteration, "Iteration to trace (default 0)")
      ->check(non_negative_number())
      ->needs(trace);
  add_trace_links_option(*cmd, a->trace_links);
  cmd->get_option("--trace-links")->needs(trace);
  add_trace_selection_options(*cmd, a->trace_flags, trace);
  add_max_memory_option(*cmd, a->max_memory);
  add_max_time_option(*cmd, a->max_time);
  add_threads_option(*cmd, a->threads, "; used only with --jobs 1, else each run gets one");
  cmd->add_flag("-q,--quiet", a->quiet, "No progress on stderr");
  cmd->add_option("--progress-after", a->progress_after,
                  "Seconds before progress appears on stderr, as `run` prints it (default 5: a "
                  "quicker answer prints none)")
      ->check(CLI::Range(0.0, 86400.0));
  return cmd;
}

void add_advise_command(CLI::App& app) {
  auto a = std::make_shared<AdviseArgs>();
  add_advise_options(app, *a)->callback([a] { run_advise(*a); });
}

}  // namespace ssim::experiments
