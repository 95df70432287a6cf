#include <gtest/gtest.h>

#include <cmath>

#include "common/error.hpp"
#include "experiments/config.hpp"

namespace ssim::exp {
namespace {

topo::Topology load(const std::string& yaml) {
  const ConfigReader r = ConfigReader::from_string(yaml, "t.yaml");
  return load_topology(r.root(), std::string(STRAGGLESIM_SOURCE_DIR) + "/configs");
}

std::string error_of(const std::string& yaml) {
  try {
    load(yaml);
  } catch (const InputError& e) {
    return e.what();
  }
  return "no error";
}

TEST(ConfigTopology, InlineSwitch) {
  const topo::Topology t = load("kind: switch\nranks: 8\nbandwidth: 450GiB/s\nlatency: 3us\n");
  EXPECT_EQ(t.gpu_count(), 8);
  const topo::Route r = t.route(0, 5);
  EXPECT_NEAR(r.latency.value, 3e-6, 1e-18);  // the given latency is GPU-to-GPU
  EXPECT_DOUBLE_EQ(r.bandwidth.value, 450.0 * (1ull << 30));
}

TEST(ConfigTopology, EveryShippedTopologyFileLoads) {
  for (const char* f : {"dgx_h100.yaml", "dgx_a100.yaml", "h100_4x8_rail.yaml", "h200_single_gpu.yaml"}) {
    const topo::Topology t = load(std::string("file: topologies/") + f);
    EXPECT_GE(t.gpu_count(), 8) << f;
    EXPECT_FALSE(t.description.empty()) << f;
  }
  EXPECT_EQ(load("topologies/h100_4x8_rail.yaml").gpu_count(), 32);
}

TEST(ConfigTopology, SharedDevice) {
  const topo::Topology t = load(
      "kind: shared_device\nranks: 4\nmemory_bandwidth: 4TB/s\ncopy_latency: 3us\n"
      "apply_latency: 1us\nlaunch_time: 0.2us\ncopy_factor: 0\n");
  ASSERT_TRUE(t.shared_device.has_value());
  EXPECT_EQ(t.gpu_count(), 4);
  EXPECT_DOUBLE_EQ(t.shared_device->memory_bandwidth.value, 4e12);
  EXPECT_DOUBLE_EQ(t.shared_device->launch_time.value, 0.2e-6);
  EXPECT_EQ(t.shared_device->copy_factor, 0);
  EXPECT_EQ(t.shared_device->reduce_factor, 3);
  EXPECT_FALSE(std::isfinite(t.shared_device->operation_bandwidth.value));
  const std::string head = "kind: shared_device\nranks: 4\nmemory_bandwidth: 4TB/s\ncopy_latency: 3us\n"
                           "apply_latency: 1us\n";
  EXPECT_EQ(error_of(head + "bandwidth: 1GB/s\n").rfind("t.yaml:6:12: bandwidth: unknown key 'bandwidth' for a "
                                                      "shared_device topology", 0),
            0u);
  EXPECT_EQ(error_of(head + "reduce_factor: -1\n").rfind("t.yaml:6:", 0), 0u);
  EXPECT_EQ(error_of(head + "launch_time: -1us\n").rfind("t.yaml:6:", 0), 0u);
}

TEST(ConfigTopology, CustomGraph) {
  const topo::Topology t = load(
      "kind: custom\n"
      "nodes: [{name: a}, {name: b}, {name: s, type: switch}]\n"
      "links:\n"
      "  - {from: a, to: s, bandwidth: 100GB/s, latency: 1us}\n"
      "  - {from: s, to: b, bandwidth: 50GB/s, latency: 2us, duplex: false}\n"
      "  - {from: b, to: a, bandwidth: 10GB/s, latency: 1us, duplex: false}\n");
  EXPECT_EQ(t.gpu_count(), 2);
  EXPECT_DOUBLE_EQ(t.route(0, 1).bandwidth.value, 50e9);
  EXPECT_NEAR(t.route(0, 1).latency.value, 3e-6, 1e-18);
  EXPECT_DOUBLE_EQ(t.route(1, 0).bandwidth.value, 10e9);
}

TEST(ConfigTopology, OtherKinds) {
  EXPECT_EQ(load("{kind: torus2d, x: 4, y: 4, bandwidth: 100GB/s, latency: 1us}").gpu_count(), 16);
  EXPECT_EQ(load("{kind: torus3d, x: 2, y: 2, z: 2, bandwidth: 100GB/s, latency: 1us}").gpu_count(), 8);
  EXPECT_EQ(load("{kind: ring, ranks: 5, bandwidth: 100GB/s, latency: 1us}").gpu_count(), 5);
  EXPECT_EQ(load("{kind: fully_connected, ranks: 5, bandwidth: 100GB/s, latency: 1us}").gpu_count(), 5);
  EXPECT_EQ(load("{kind: fat_tree, k: 4, tiers: 3, bandwidth: 100GB/s, latency: 1us}").gpu_count(), 16);
  EXPECT_EQ(load("{kind: fat_tree, k: 4, tiers: 2, bandwidth: 100GB/s, latency: 1us, ranks: 6, ecmp: true}")
                .gpu_count(),
            6);
}

TEST(ConfigTopology, ErrorsNameLineKeyAndValue) {
  EXPECT_EQ(error_of("kind: switch\nranks: 8\nbandwidth: 0GB/s\nlatency: 3us\n"),
            "t.yaml:3:12: bandwidth: invalid bandwidth '0GB/s': must be > 0");
  EXPECT_EQ(error_of("kind: switch\nranks: 8\nbandwidth: 450\nlatency: 3us\n"),
            "t.yaml:3:12: bandwidth: invalid bandwidth '450': a unit is required (bytes per second as B/s "
            "or Bps, bits per second as bps, b/s or bit/s, each with an optional prefix K (or k), M, G, "
            "T (x1000) or Ki, Mi, Gi, Ti (x1024); e.g. 450GB/s, 450GBps, 450GiB/s, 400Gbps, 400Gb/s, "
            "400Gbit/s, 100Mibit/s)");
  EXPECT_EQ(error_of("kind: swtich\nranks: 8\n"),
            "t.yaml:1:7: kind: unknown value 'swtich' (expected one of: switch, fully_connected, ring, torus2d, "
            "torus3d, fat_tree, hierarchical, custom, shared_device)");
  EXPECT_EQ(error_of("kind: switch\nranks: 1\nbandwidth: 1GB/s\nlatency: 3us\n"),
            "t.yaml:2:8: ranks: must be in [2, 65536] (value: 1)");
  EXPECT_EQ(error_of("kind: switch\nranks: 8\nbandwidth: 1GB/s\nlatency: 3us\nx: 4\n"),
            "t.yaml:5:4: x: unknown key 'x' for a switch topology (allowed: kind, ecmp, name, description, "
            "provenance, ranks, bandwidth, latency) (value: 4)");
  EXPECT_EQ(error_of("kind: switch\nranks: 8\nbandwidth: 1GB/s\n"),
            "t.yaml:1:1: (top level): missing required key 'latency' (value: {kind: switch, ranks: 8, bandwidth: "
            "1GB/s})");
  EXPECT_NE(error_of("file: topologies/nope.yaml").find("t.yaml:1:7: file: topology file"), std::string::npos);
  EXPECT_NE(error_of("{kind: custom, nodes: [{name: a}, {name: b}], links: [{from: a, to: c, bandwidth: 1GB/s, "
                     "latency: 1us}]}")
                .find("links[0].to: unknown node 'c'"),
            std::string::npos);
  EXPECT_NE(error_of("{kind: fat_tree, k: 5, bandwidth: 1GB/s, latency: 1us}").find("t.yaml:1:1: (top level): "),
            std::string::npos);
}

}  // namespace
}  // namespace ssim::exp
