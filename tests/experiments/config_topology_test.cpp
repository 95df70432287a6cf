#include <gtest/gtest.h>
#include <unistd.h>

#include <cmath>
#include <filesystem>
#include <fstream>

#include "common/error.hpp"
#include "experiments/config/config.hpp"

namespace ssim::experiments {
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

// network_model: the model a file's figures hold in (experiments that name none run it); kept
// by copies; any other value is refused at its key; the 2-node H100 file says flow.
TEST(ConfigTopology, NetworkModelKey) {
  const std::string base = "kind: switch\nranks: 4\nbandwidth: 100GB/s\nlatency: 1us\n";
  const topo::Topology t = load(base + "network_model: flow\n");
  EXPECT_EQ(t.network_model, "flow");
  const topo::Topology copy = t;
  EXPECT_EQ(copy.network_model, "flow");
  EXPECT_EQ(default_network(copy), sim::NetworkKind::flow);
  EXPECT_EQ(load(base).network_model, "");
  EXPECT_EQ(default_network(load(base)), sim::NetworkKind::alphabeta);
  EXPECT_EQ(default_network(load(base + "network_model: alphabeta\n")),
            sim::NetworkKind::alphabeta);
  const std::string e = error_of(base + "network_model: packets\n");
  EXPECT_NE(e.find("t.yaml:5:16: network_model: unknown value 'packets' (expected one of: "
                   "alphabeta, flow)"),
            std::string::npos)
      << e;
  EXPECT_EQ(load("topologies/h100_8xib400.yaml").network_model, "flow");
  EXPECT_EQ(load("topologies/dgx_h100.yaml").network_model, "");
}

TEST(ConfigTopology, EveryShippedTopologyFileLoads) {
  int files = 0;
  for (const auto& entry : std::filesystem::directory_iterator(std::string(STRAGGLESIM_SOURCE_DIR) +
                                                               "/configs/topologies")) {
    if (entry.path().extension() != ".yaml") continue;
    const std::string f = entry.path().filename().string();
    const topo::Topology t = load("file: topologies/" + f);
    EXPECT_GE(t.gpu_count(), 8) << f;
    EXPECT_FALSE(t.description.empty()) << f;
    ++files;
  }
  EXPECT_EQ(files, 9);  // every .yaml there (a new one: count it here)
  EXPECT_EQ(load("topologies/h100_4x8_rail.yaml").gpu_count(), 32);
  // The 8-GPU NVSwitch nodes of H100 and H200 reduce in the switch at the published NVLS figure
  // (274 GB/s algbw, configs/topologies/dgx_h100.yaml names the sources); the A100's does not.
  for (const char* f : {"dgx_h100.yaml", "dgx_h200.yaml", "dgx_a100.yaml"}) {
    const topo::Topology t = load(std::string("file: topologies/") + f);
    const std::vector<int> all = {0, 1, 2, 3, 4, 5, 6, 7};
    const int sw = t.reducing_switch_of(all);
    if (std::string(f) == "dgx_a100.yaml") {
      EXPECT_LT(sw, 0) << f;
      continue;
    }
    ASSERT_GE(sw, 0) << f;
    EXPECT_DOUBLE_EQ(t.node(sw).reduce->bandwidth.value, 274e9) << f;
    EXPECT_DOUBLE_EQ(t.node(sw).reduce->latency.value, 1e-6) << f;
  }
}

TEST(ConfigTopology, ReducingSwitch) {
  const std::string sw = "kind: switch\nranks: 4\nbandwidth: 400GB/s\nlatency: 2us\n";
  const topo::Topology t = load(sw + "reduce: {bandwidth: 1TB/s, latency: 0.5us}\n");
  ASSERT_TRUE(t.has_reducing_switch());
  const int all[] = {0, 1, 2, 3};
  const int s = t.reducing_switch_of(all);
  ASSERT_EQ(s, 4);  // GPUs first, then the switch
  ASSERT_TRUE(t.node(s).reduce.has_value());
  EXPECT_DOUBLE_EQ(t.node(s).reduce->bandwidth.value, 1e12);
  EXPECT_DOUBLE_EQ(t.node(s).reduce->latency.value, 0.5e-6);
  EXPECT_FALSE(load(sw).has_reducing_switch());
  EXPECT_EQ(load(sw).reducing_switch_of(all), -1);

  // hierarchical: NVSwitches (nvlink) and, separately, the switches the NICs plug into (fabric).
  const std::string h =
      "kind: hierarchical\nnodes: 2\ngpus_per_node: 4\n"
      "nic: {bandwidth: 50GB/s, latency: 1us}\nfabric: {kind: rail_optimized, spines: 0";
  const topo::Topology nvls = load(h +
                                   "}\nnvlink: {bandwidth: 400GB/s, latency: 2us, reduce: "
                                   "{bandwidth: 500GB/s, latency: 1us}}\n");
  const int node0[] = {0, 1, 2, 3}, node1[] = {4, 5, 6, 7}, rail0[] = {0, 4}, both[] = {0, 1, 4};
  EXPECT_GE(nvls.reducing_switch_of(node0), 0);
  EXPECT_GE(nvls.reducing_switch_of(node1), 0);
  EXPECT_NE(nvls.reducing_switch_of(node0), nvls.reducing_switch_of(node1));
  EXPECT_EQ(nvls.reducing_switch_of(rail0), -1);
  EXPECT_EQ(nvls.reducing_switch_of(both), -1);
  const topo::Topology sharp = load(
      h +
      ", reduce: {bandwidth: 50GB/s, latency: 1us}}\nnvlink: {bandwidth: 400GB/s, latency: 2us}\n");
  EXPECT_EQ(sharp.reducing_switch_of(node0), -1);
  EXPECT_GE(sharp.reducing_switch_of(rail0), 0);

  // custom: on a switch node only.
  const std::string c =
      "kind: custom\nnodes:\n  - {name: a}\n  - {name: b}\n  - {name: s, type: switch, reduce: "
      "{bandwidth: 100GB/s, latency: 1us}}\nlinks:\n  - {from: a, to: s, bandwidth: 10GB/s, "
      "latency: 1us}\n"
      "  - {from: b, to: s, bandwidth: 10GB/s, latency: 1us}\n";
  const int ab[] = {0, 1};
  EXPECT_EQ(load(c).reducing_switch_of(ab), 2);

  // Bad input: one message naming file, line and key.
  EXPECT_EQ(error_of(sw + "reduce: {bandwidth: 0GB/s, latency: 1us}\n")
                .rfind("t.yaml:5:21: reduce.bandwidth:", 0),
            0u)
      << error_of(sw + "reduce: {bandwidth: 0GB/s, latency: 1us}\n");
  EXPECT_NE(error_of(sw + "reduce: {bandwidth: -1GB/s, latency: 1us}\n").find("reduce.bandwidth"),
            std::string::npos);
  EXPECT_NE(error_of(sw + "reduce: {bandwidth: 100, latency: 1us}\n").find("a unit is required"),
            std::string::npos);
  EXPECT_NE(error_of(sw + "reduce: {latency: 1us}\n").find("bandwidth"), std::string::npos);
  EXPECT_NE(error_of(sw + "reduce: {bandwidth: 1TB/s, latency: -1us}\n").find("reduce.latency"),
            std::string::npos);
  EXPECT_NE(error_of(sw + "reduce: {bandwidth: 1TB/s, latency: 1us, lanes: 2}\n").find("lanes"),
            std::string::npos);
  const std::string ring = "kind: ring\nranks: 4\nbandwidth: 400GB/s\nlatency: 2us\n";
  EXPECT_EQ(error_of(ring + "reduce: {bandwidth: 1TB/s, latency: 1us}\n")
                .rfind("t.yaml:5:9: reduce: a ring topology has no switch that could reduce", 0),
            0u)
      << error_of(ring + "reduce: {bandwidth: 1TB/s, latency: 1us}\n");
  std::string gpu = c;
  gpu.replace(gpu.find("{name: a}"), 9, "{name: a, reduce: {bandwidth: 1TB/s, latency: 1us}}");
  EXPECT_NE(error_of(gpu).find("reduce on GPU node 'a'"), std::string::npos) << error_of(gpu);
  const std::string h1 =
      "kind: hierarchical\nnodes: 2\ngpus_per_node: 1\nnic: {bandwidth: 50GB/s, latency: 1us}\n"
      "fabric: {kind: leaf_spine, spines: 1}\n"
      "nvlink: {bandwidth: 400GB/s, latency: 2us, reduce: {bandwidth: 500GB/s, latency: 1us}}\n";
  EXPECT_NE(error_of(h1).find("no switch joined to GPUs by nvlink links"), std::string::npos)
      << error_of(h1);
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
  const std::string head =
      "kind: shared_device\nranks: 4\nmemory_bandwidth: 4TB/s\ncopy_latency: 3us\n"
      "apply_latency: 1us\n";
  EXPECT_EQ(error_of(head + "bandwidth: 1GB/s\n")
                .rfind("t.yaml:6:12: bandwidth: unknown key 'bandwidth' for a "
                       "shared_device topology",
                       0),
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
  EXPECT_EQ(load("{kind: torus3d, x: 2, y: 2, z: 2, bandwidth: 100GB/s, latency: 1us}").gpu_count(),
            8);
  EXPECT_EQ(load("{kind: ring, ranks: 5, bandwidth: 100GB/s, latency: 1us}").gpu_count(), 5);
  EXPECT_EQ(load("{kind: fully_connected, ranks: 5, bandwidth: 100GB/s, latency: 1us}").gpu_count(),
            5);
  EXPECT_EQ(load("{kind: fat_tree, k: 4, tiers: 3, bandwidth: 100GB/s, latency: 1us}").gpu_count(),
            16);
  EXPECT_EQ(load("{kind: fat_tree, k: 4, tiers: 2, bandwidth: 100GB/s, latency: 1us, ranks: 6, "
                 "ecmp: true}")
                .gpu_count(),
            6);
}

TEST(ConfigTopology, ErrorsNameLineKeyAndValue) {
  EXPECT_EQ(error_of("kind: switch\nranks: 8\nbandwidth: 0GB/s\nlatency: 3us\n"),
            "t.yaml:3:12: bandwidth: invalid bandwidth '0GB/s': must be > 0");
  EXPECT_EQ(
      error_of("kind: switch\nranks: 8\nbandwidth: 450\nlatency: 3us\n"),
      "t.yaml:3:12: bandwidth: invalid bandwidth '450': a unit is required (bytes per second as "
      "B/s "
      "or Bps, bits per second as bps, b/s or bit/s, each with an optional prefix K (or k), M, G, "
      "T (x1000) or Ki, Mi, Gi, Ti (x1024); e.g. 450GB/s, 450GBps, 450GiB/s, 400Gbps, 400Gb/s, "
      "400Gbit/s, 100Mibit/s)");
  EXPECT_EQ(error_of("kind: swtich\nranks: 8\n"),
            "t.yaml:1:7: kind: unknown value 'swtich' (did you mean 'switch'? expected one of: switch, fully_connected, "
            "ring, torus2d, "
            "torus3d, fat_tree, hierarchical, custom, shared_device)");
  EXPECT_EQ(error_of("kind: switch\nranks: 1\nbandwidth: 1GB/s\nlatency: 3us\n"),
            "t.yaml:2:8: ranks: must be in [2, 65536] (value: 1)");
  EXPECT_EQ(error_of("kind: switch\nranks: 8\nbandwidth: 1GB/s\nlatency: 3us\nx: 4\n"),
            "t.yaml:5:4: x: unknown key 'x' for a switch topology (allowed: kind, ecmp, name, "
            "description, "
            "provenance, network_model, ranks, bandwidth, latency, reduce) (value: 4)");
  EXPECT_EQ(error_of("kind: switch\nranks: 8\nbandwidth: 1GB/s\n"),
            "t.yaml:1:1: (top level): missing required key 'latency' (value: {kind: switch, ranks: "
            "8, bandwidth: "
            "1GB/s})");
  EXPECT_NE(error_of("file: topologies/nope.yaml").find("t.yaml:1:7: file: topology file"),
            std::string::npos);
  EXPECT_NE(error_of("{kind: custom, nodes: [{name: a}, {name: b}], links: [{from: a, to: c, "
                     "bandwidth: 1GB/s, "
                     "latency: 1us}]}")
                .find("links[0].to: unknown node 'c'"),
            std::string::npos);
  EXPECT_NE(error_of("{kind: fat_tree, k: 5, bandwidth: 1GB/s, latency: 1us}")
                .find("t.yaml:1:1: (top level): "),
            std::string::npos);
}

// ASTRA-sim's analytical network YAML (`topology`, `npus_count`, `bandwidth` in GB/s = 2^30 B/s
// per link, `latency` in ns per hop) read as a topology: the same network as our own kinds where
// one exists (its Switch latency is per hop: our switch's GPU-to-GPU latency is twice it).
class AstraSimNetwork : public ::testing::Test {
 protected:
  // One folder per process and test: ctest runs the tests of this fixture in parallel, and a
  // shared folder was removed under one by another's TearDown.
  std::string dir_ = ::testing::TempDir() + "astra_sim_network_test_" + std::to_string(::getpid()) +
                     "_" + ::testing::UnitTest::GetInstance()->current_test_info()->name();
  void SetUp() override { std::filesystem::create_directories(dir_); }
  void TearDown() override { std::filesystem::remove_all(dir_); }
  std::string write(const std::string& name, const std::string& text) {
    std::ofstream(dir_ + "/" + name) << text;
    return dir_ + "/" + name;
  }
  topo::Topology astra(const std::string& network, const std::string& extra = "") {
    write("n.yml", network);
    const ConfigReader r = ConfigReader::from_string("astra_sim: n.yml" + extra + "\n", "t.yaml");
    return load_topology(r.root(), dir_);
  }
  std::string astra_error(const std::string& network, const std::string& extra = "") {
    try {
      astra(network, extra);
    } catch (const InputError& e) {
      return e.what();
    }
    return "no error";
  }
};

TEST_F(AstraSimNetwork, OneDimensionIsOurOwnKind) {
  const std::string lists = "npus_count: [8]\nbandwidth: [50.0]\nlatency: [500.0]\n";
  const topo::Topology ring = astra("topology: [Ring]\n" + lists);
  const topo::Topology our_ring =
      load("kind: ring\nranks: 8\nbandwidth: 50GiB/s\nlatency: 500ns\n");
  const topo::Topology sw = astra("topology: [Switch]\n" + lists);
  const topo::Topology our_switch =
      load("kind: switch\nranks: 8\nbandwidth: 50GiB/s\nlatency: 1us\n");
  const topo::Topology fc = astra("topology: [FullyConnected]\n" + lists);
  const topo::Topology our_fc =
      load("kind: fully_connected\nranks: 8\nbandwidth: 50GiB/s\nlatency: 500ns\n");
  for (int s = 0; s < 8; ++s) {
    for (int d = 0; d < 8; ++d) {
      if (s == d) continue;
      for (const auto& [a, b] : {std::pair{&ring, &our_ring}, {&sw, &our_switch}, {&fc, &our_fc}}) {
        const topo::Route x = a->route(s, d), y = b->route(s, d);
        EXPECT_EQ(x.links.size(), y.links.size()) << a->name << " " << s << "->" << d;
        EXPECT_NEAR(x.latency.value, y.latency.value, 1e-18) << a->name;
        EXPECT_DOUBLE_EQ(x.bandwidth.value, y.bandwidth.value) << a->name;
      }
    }
  }
  EXPECT_NE(ring.description.find("from ASTRA-sim network"), std::string::npos);
  // Forks that count a GB as 1e9 bytes.
  EXPECT_DOUBLE_EQ(
      astra("topology: [Ring]\n" + lists, "\ngigabyte: 1e9").route(0, 1).bandwidth.value, 50e9);
}

TEST_F(AstraSimNetwork, MultiDimensional) {
  const topo::Topology t = astra(
      "topology: [ Ring, FullyConnected, Switch ]\nnpus_count: [ 4, 2, 2 ]\n"
      "bandwidth: [ 50.0, 25.0, 12.5 ]  # GB/s\nlatency: [ 500.0, 500.0, 500.0 ]  # ns\n");
  EXPECT_EQ(t.gpu_count(), 16);
  EXPECT_NEAR(t.route(0, 8).latency.value, 1e-6, 1e-18);  // the Switch dimension: 2 hops
  EXPECT_DOUBLE_EQ(t.route(0, 8).bandwidth.value, 12.5 * (1ull << 30));
  EXPECT_NEAR(t.route(0, 4).latency.value, 0.5e-6, 1e-18);  // FullyConnected: 1 hop
  // The file named as a topology file is recognised (npus_count and no kind).
  const ConfigReader r = ConfigReader::from_string("file: n.yml\n", "t.yaml");
  const topo::Topology same = load_topology(r.root(), dir_);
  EXPECT_EQ(same.link_count(), t.link_count());
  EXPECT_DOUBLE_EQ(same.route(0, 8).bandwidth.value, t.route(0, 8).bandwidth.value);
}

TEST_F(AstraSimNetwork, BadInputNamesTheFileAndKey) {
  const std::string ok = "npus_count: [8]\nbandwidth: [50]\nlatency: [500]\n";
  auto has = [](const std::string& e, const std::string& what) {
    return e.find(what) != std::string::npos && e.find("n.yml") != std::string::npos;
  };
  EXPECT_PRED2(has, astra_error("topology: [Torus]\n" + ok), "Ring, FullyConnected, Switch");
  EXPECT_PRED2(has, astra_error("topology: [Ring, Ring]\n" + ok), "one entry per dimension");
  EXPECT_PRED2(has, astra_error("topology: [Ring]\n" + ok + "links_count: [2]\n"), "links_count");
  EXPECT_PRED2(has,
               astra_error("topology: [Ring]\nnpus_count: [1]\nbandwidth: [50]\nlatency: [5]\n"),
               "at least 2");
  EXPECT_PRED2(has,
               astra_error("topology: [Ring]\nnpus_count: [8]\nbandwidth: [0]\nlatency: [5]\n"),
               "bandwidth");
  EXPECT_PRED2(has, astra_error("topology: [Ring]\nnpus_count: [8]\nlatency: [5]\n"), "bandwidth");
  EXPECT_NE(astra_error("topology: [Ring]\n" + ok, "\ngigabyte: 1000").find("gigabyte"),
            std::string::npos);
  EXPECT_NE(astra_error("topology: [Ring]\n" + ok, "\necmp: true").find("ecmp"), std::string::npos);
}

// SimGrid platform files (XML 4.1, one Full zone): hosts are ranks in document order, links'
// vertices are inferred from the routes, units as SimGrid reads them.
std::string platform(const std::string& zone_body, const std::string& routing = "Full") {
  return "<?xml version='1.0'?>\n<!DOCTYPE platform SYSTEM \"https://simgrid.org/simgrid.dtd\">\n"
         "<platform version=\"4.1\">\n<zone id=\"z\" routing=\"" +
         routing + "\">\n" + zone_body + "</zone>\n</platform>\n";
}

std::string simgrid_error(const std::string& xml) {
  try {
    simgrid_platform(xml, "p.xml");
  } catch (const InputError& e) {
    return e.what();
  }
  return "no error";
}

// Three hosts on a one-way ring of SHARED links: c -> a -> b -> c, each crossed one way.
const char* const kOneWayRing =
    "<host id=\"c\" speed=\"1Gf\"/>\n<host id=\"a\" speed=\"1Gf\"/>\n<host id=\"b\" "
    "speed=\"1Gf\"/>\n"
    "<link id=\"ab\" bandwidth=\"1Gbps\" latency=\"50us\"/>\n"
    "<link id=\"bc\" bandwidth=\"2KiBps\" latency=\"1ms\"/>\n"
    "<link id=\"ca\" bandwidth=\"3MBps\" latency=\"0.5\"/>\n"
    "<route src=\"a\" dst=\"b\" symmetrical=\"NO\"><link_ctn id=\"ab\"/></route>\n"
    "<route src=\"b\" dst=\"c\" symmetrical=\"NO\"><link_ctn id=\"bc\"/></route>\n"
    "<route src=\"c\" dst=\"a\" symmetrical=\"NO\"><link_ctn id=\"ca\"/></route>\n";

TEST(SimGridPlatform, UnitsRanksAndSharedLinks) {
  const topo::Topology t = simgrid_platform(platform(kOneWayRing), "p.xml");
  ASSERT_EQ(t.gpu_count(), 3);
  EXPECT_EQ(t.node(t.vertex_of_rank(0)).name, "c");  // document order
  EXPECT_EQ(t.node(t.vertex_of_rank(1)).name, "a");
  EXPECT_EQ(t.node_count(), 3);  // host-to-host links: no switch
  ASSERT_EQ(t.link_count(), 3);
  const topo::Route ab = t.route(1, 2);
  ASSERT_EQ(ab.links.size(), 1u);
  EXPECT_EQ(t.link(ab.links[0]).link_class, "ab");
  EXPECT_DOUBLE_EQ(ab.bandwidth.value, 1e9 / 8);  // bits, 1000 per prefix
  EXPECT_DOUBLE_EQ(ab.latency.value, 50e-6);
  EXPECT_DOUBLE_EQ(t.route(2, 0).bandwidth.value, 2048);  // 1024 per binary prefix
  EXPECT_DOUBLE_EQ(t.route(2, 0).latency.value, 1e-3);
  EXPECT_DOUBLE_EQ(t.route(0, 1).bandwidth.value, 3e6);
  EXPECT_DOUBLE_EQ(t.route(0, 1).latency.value, 0.5);  // a bare number: seconds, as SimGrid
  EXPECT_NE(t.description.find("from SimGrid platform p.xml"), std::string::npos);
}

// The shipped platform is its YAML twin: same routes, latencies and bottlenecks between every
// pair; the file named directly (recognised by its '<') is read the same way.
TEST(SimGridPlatform, ShippedPlatformIsItsYamlTwin) {
  const topo::Topology xml = load("simgrid: topologies/simgrid/two_leaves_8hosts.xml");
  const topo::Topology direct = load("file: topologies/simgrid/two_leaves_8hosts.xml");
  const topo::Topology yaml = load("file: topologies/simgrid/two_leaves_8hosts.yaml");
  ASSERT_EQ(xml.gpu_count(), 8);
  EXPECT_EQ(xml.node_count(), 10);  // two inferred leaf switches
  EXPECT_EQ(xml.link_count(), 18);
  for (int s = 0; s < 8; ++s) {
    for (int d = 0; d < 8; ++d) {
      if (s == d) continue;
      for (const topo::Topology* other : {&direct, &yaml}) {
        const topo::Route x = xml.route(s, d), y = other->route(s, d);
        EXPECT_EQ(x.links.size(), y.links.size()) << s << "->" << d;
        EXPECT_DOUBLE_EQ(x.latency.value, y.latency.value) << s << "->" << d;
        EXPECT_DOUBLE_EQ(x.bandwidth.value, y.bandwidth.value) << s << "->" << d;
      }
    }
  }
  EXPECT_DOUBLE_EQ(xml.route(0, 5).latency.value, 5e-6);      // nic 1.5us + spine 2us + nic 1.5us
  EXPECT_DOUBLE_EQ(xml.route(0, 5).bandwidth.value, 12.5e9);  // 12.5GBps; the spine 100Gbps too
}

TEST(SimGridPlatform, BadInputNamesFileLineAndWhat) {
  const std::string hosts = "<host id=\"a\" speed=\"1Gf\"/>\n<host id=\"b\" speed=\"1Gf\"/>\n";
  const std::string ab = "<link id=\"ab\" bandwidth=\"1GBps\" latency=\"1us\"/>\n";
  auto has = [](const std::string& err, const std::string& what) {
    return err.find(what) != std::string::npos;
  };
  // A symmetrical route over a SHARED link: crossed both ways, one capacity: refused (line 7).
  std::string e = simgrid_error(
      platform(hosts + ab + "<route src=\"a\" dst=\"b\">\n<link_ctn id=\"ab\"/></route>\n"));
  EXPECT_TRUE(has(e, "p.xml:9: <link_ctn>: the symmetrical route a <-> b crosses SHARED link ab"))
      << e;
  // The same with symmetrical="NO" and a route back over the same link.
  e = simgrid_error(
      platform(hosts + ab +
               "<route src=\"a\" dst=\"b\" symmetrical=\"NO\"><link_ctn id=\"ab\"/></route>\n"
               "<route src=\"b\" dst=\"a\" symmetrical=\"NO\"><link_ctn id=\"ab\"/></route>\n"));
  EXPECT_TRUE(has(e,
                  "p.xml:9: <route>: the route b -> a: with the routes before it, this route puts "
                  "hosts b and a at one point"))
      << e;
  EXPECT_TRUE(has(simgrid_error(platform(
                      hosts + "<link id=\"f\" bandwidth=\"1GBps\" sharing_policy=\"FATPIPE\"/>\n")),
                  "p.xml:7: <link>: sharing_policy=\"FATPIPE\""));
  EXPECT_TRUE(has(simgrid_error(platform(hosts, "Floyd")), "p.xml:4: <zone>: routing=\"Floyd\""));
  EXPECT_TRUE(
      has(simgrid_error(platform("<cluster id=\"c\" prefix=\"h\" suffix=\"\" radical=\"0-3\" "
                                 "speed=\"1Gf\" bw=\"1GBps\" lat=\"1us\"/>\n")),
          "p.xml:5: <cluster>: a cluster inside a zone is not read"));
  EXPECT_TRUE(has(simgrid_error(platform("<zone id=\"in\" routing=\"Full\"/>\n")),
                  "p.xml:5: <zone>: nested zones"));
  EXPECT_TRUE(has(
      simgrid_error(platform("<host id=\"a\" speed=\"1Gf\"><prop id=\"x\" value=\"1\"/></host>\n")),
      "p.xml:5: <prop>: properties are not read"));
  EXPECT_TRUE(has(simgrid_error(platform(
                      hosts + "<link id=\"l\" bandwidth=\"1GBps\" bandwidth_file=\"bw.txt\"/>\n")),
                  "profiles are not modelled"));
  EXPECT_TRUE(has(simgrid_error(platform(hosts + "<link id=\"l\" bandwidth=\"1Gbit\"/>\n")),
                  "p.xml:7: <link>: bandwidth \"1Gbit\""));
  EXPECT_TRUE(has(simgrid_error(platform(hosts + "<link id=\"l\" bandwidth=\"1e308YBps\"/>\n")),
                  "p.xml:7: <link>: bandwidth \"1e308YBps\""));
  EXPECT_TRUE(has(
      simgrid_error(platform(hosts + "<route src=\"a\" dst=\"b\"><link_ctn id=\"zz\"/></route>\n")),
      "p.xml:7: <link_ctn>: link zz is not declared above"));
  EXPECT_TRUE(has(
      simgrid_error(platform(hosts +
                             "<link id=\"s\" bandwidth=\"1GBps\" sharing_policy=\"SPLITDUPLEX\"/>\n"
                             "<route src=\"a\" dst=\"b\"><link_ctn id=\"s\"/></route>\n")),
      "p.xml:8: <link_ctn>: SPLITDUPLEX link s (line 7) needs direction"));
  EXPECT_TRUE(has(simgrid_error(platform(hosts)), "p.xml:5: <host>: host a is in no route"));
  EXPECT_TRUE(has(simgrid_error("<platform version=\"4\">\n</platform>\n"),
                  "p.xml:1: <platform>: platform version \"4\""));
  EXPECT_TRUE(has(simgrid_error("<platform version=\"4.1\">\n<zone id=\"z\" routing=\"Full\">\n"),
                  "<zone> (line 2) is not closed"));
  // A declared route that is not the one stragglesim takes: a -> c written over the slow direct
  // link while a -> b -> c is faster.
  e =
      simgrid_error(platform(
          hosts + "<host id=\"c\" speed=\"1Gf\"/>\n"
                  "<link id=\"ab\" bandwidth=\"1GBps\" latency=\"1us\"/>\n<link id=\"bc\" "
                  "bandwidth=\"1GBps\" latency=\"1us\"/>\n"
                  "<link id=\"ac\" bandwidth=\"1GBps\" latency=\"10us\"/>\n"
                  "<route src=\"a\" dst=\"b\" symmetrical=\"NO\"><link_ctn id=\"ab\"/></route>\n"
                  "<route src=\"b\" dst=\"c\" symmetrical=\"NO\"><link_ctn id=\"bc\"/></route>\n"
                  "<route src=\"a\" dst=\"c\" symmetrical=\"NO\"><link_ctn id=\"ac\"/></route>\n"));
  EXPECT_TRUE(has(e,
                  "p.xml:13: <route>: the route a -> c takes [ac], but on the network the routes "
                  "describe stragglesim routes it over [ab, bc]"))
      << e;
  // In a simulate or run file: the entry takes no other key.
  EXPECT_TRUE(
      has(error_of("simgrid: topologies/simgrid/two_leaves_8hosts.xml\necmp: true\n"), "ecmp"));
}

// A SimGrid FLAT cluster: hosts in radical order behind one switch, each on its private
// split-duplex link; the backbone is one link every host-to-host route crosses the same way.
TEST(SimGridPlatform, Cluster) {
  const topo::Topology t = load("simgrid: topologies/simgrid/cluster_16hosts.xml");
  ASSERT_EQ(t.gpu_count(), 16);
  EXPECT_EQ(t.node(t.vertex_of_rank(3)).name, "gpu3");
  EXPECT_EQ(t.link_count(), 33);  // 16 x (up, down) + the backbone
  const topo::Route r = t.route(3, 12);
  ASSERT_EQ(r.links.size(), 3u);
  EXPECT_EQ(t.link(r.links[0]).link_class, "c_link_3");
  EXPECT_EQ(t.link(r.links[1]).link_class, "c_backbone");
  EXPECT_EQ(t.route(12, 3).links[1], r.links[1]);  // one backbone, crossed one way by all
  EXPECT_DOUBLE_EQ(r.latency.value, 5e-6);         // 2 us + 1 us + 2 us
  EXPECT_DOUBLE_EQ(r.bandwidth.value, 25e9);
  const std::string c =
      "<platform version=\"4.1\">\n<cluster id=\"c\" prefix=\"h\" radical=\"0-1,4\" "
      "speed=\"1Gf\" bw=\"1GBps\" lat=\"1us\"";
  const topo::Topology small = simgrid_platform(c + "/>\n</platform>\n", "p.xml");
  EXPECT_EQ(small.gpu_count(), 3);
  EXPECT_EQ(small.node(small.vertex_of_rank(2)).name, "h4");
  EXPECT_EQ(small.link_count(), 6);  // no backbone: up and down links of one switch
  auto has = [](const std::string& err, const std::string& what) {
    return err.find(what) != std::string::npos;
  };
  EXPECT_TRUE(has(simgrid_error(c + " sharing_policy=\"SHARED\"/>\n</platform>\n"),
                  "p.xml:2: <cluster>: sharing_policy=\"SHARED\": every host's private link"));
  EXPECT_TRUE(has(simgrid_error(c + " topology=\"TORUS\"/>\n</platform>\n"),
                  "p.xml:2: <cluster>: topology=\"TORUS\""));
  EXPECT_TRUE(
      has(simgrid_error(c + " bb_bw=\"1GBps\" bb_sharing_policy=\"FATPIPE\"/>\n</platform>\n"),
          "p.xml:2: <cluster>: sharing_policy=\"FATPIPE\""));
  EXPECT_TRUE(has(
      simgrid_error("<platform version=\"4.1\">\n<cluster id=\"c\" prefix=\"h\" radical=\"3-1\" "
                    "speed=\"1Gf\" bw=\"1GBps\"/>\n</platform>\n"),
      "p.xml:2: <cluster>: radical=\"3-1\""));
}

}  // namespace
}  // namespace ssim::experiments
