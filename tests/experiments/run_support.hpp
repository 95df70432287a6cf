// Test support for the tests of `stragglesim run` with journals, shards and MPI (cli_journal,
// cli_shard, mpi/cli_mpi_run): their scratch folders and the experiments they run (the one with
// a failing point also in experiment_runner).
#pragma once

#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <string>

namespace ssim::testing {

inline bool contains(const std::string& s, const std::string& what) {
  return s.find(what) != std::string::npos;
}

// /tmp/ssim_<suite>_<tag>_<pid>, emptied of what an earlier run of this process id left there;
// not created.
inline std::string scratch_dir(const std::string& suite, const std::string& tag) {
  const std::string dir = "/tmp/ssim_" + suite + "_" + tag + "_" + std::to_string(::getpid());
  std::filesystem::remove_all(dir);
  return dir;
}

// Writes DIR/NAME.yaml (DIR created if missing) and returns its path: 3 algorithms on a switch
// of 8 ranks, one straggler with an exponential delay of mean 1ms and exponential base delays,
// so that iterations differ; `iterations`, `seed` and the `sweep` map (YAML flow text) as given.
inline std::string write_run_experiment(const std::string& dir, const std::string& name,
                                        int iterations, int seed, const std::string& sweep) {
  std::filesystem::create_directories(dir);
  const std::string path = dir + "/" + name + ".yaml";
  std::ofstream(path) << "topology: {kind: switch, ranks: 8, bandwidth: 450GiB/s, latency: 3us}\n"
                         "algorithms: [stragglar, ring, rhd]\n"
                         "size: 64MiB\n"
                         "stragglers: {count: 1, delay: {distribution: exponential, mean: 1ms}}\n"
                         "iterations: "
                      << iterations << "\nseed: " << seed << "\nsweep: " << sweep
                      << "\n"
                         "delays: {base: {distribution: exponential, mean: 10us}}\n";
  return path;
}

// Two sweep points of ring and rhd on a custom topology; the second point's link set leaves g2
// unreachable, so every run of point 1 fails when it routes (after the 2 runs of point 0).
inline constexpr const char* kFailingPointExperiment =
    "topology:\n"
    "  kind: custom\n"
    "  nodes: [{name: g0}, {name: g1}, {name: g2}, {name: sw, type: switch}]\n"
    "  links: []\n"
    "algorithms: [ring, rhd]\nsize: 1MiB\niterations: 2\n"
    "sweep:\n"
    "  topology.links:\n"
    "    - [{from: g0, to: sw, bandwidth: 1GB/s, latency: 1us}, {from: g1, to: sw, bandwidth: "
    "1GB/s, latency: 1us},\n"
    "       {from: g2, to: sw, bandwidth: 1GB/s, latency: 1us}]\n"
    "    - [{from: g0, to: sw, bandwidth: 1GB/s, latency: 1us}, {from: g1, to: sw, bandwidth: "
    "1GB/s, latency: 1us}]\n";

}  // namespace ssim::testing
