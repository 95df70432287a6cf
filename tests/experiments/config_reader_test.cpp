#include <gtest/gtest.h>

#include "common/error.hpp"
#include "experiments/config/reader.hpp"

namespace ssim::experiments {
namespace {

template <typename F>
std::string error_of(F f) {
  try {
    f();
  } catch (const InputError& e) {
    return e.what();
  }
  return "no error";
}

const char* kDoc =
    "topology:\n"
    "  kind: switch\n"
    "  ranks: 8\n"
    "  bandwidth: 450GiB/s\n"
    "  latency: 3us\n"
    "sizes: [1MiB, 64MiB]\n"
    "flag: yes\n";

TEST(ConfigReader, TypedValues) {
  const ConfigReader r = ConfigReader::from_string(kDoc, "t.yaml");
  const ConfigNode topo = r.root().child("topology");
  EXPECT_EQ(topo.get_choice("kind", {"switch", "ring"}), "switch");
  EXPECT_EQ(topo.get_int("ranks", std::nullopt, 2, 100), 8);
  EXPECT_DOUBLE_EQ(topo.get_bandwidth("bandwidth").value, 450.0 * (1ull << 30));
  EXPECT_DOUBLE_EQ(topo.get_time("latency").value, 3e-6);
  EXPECT_EQ(topo.get_int("missing", 5, 0, 10), 5);
  const auto sizes = r.root().child("sizes").items();
  ASSERT_EQ(sizes.size(), 2u);
  EXPECT_EQ(sizes[1].as_bytes().value, 64u << 20);
  EXPECT_EQ(sizes[1].path(), "sizes[1]");
  EXPECT_TRUE(r.root().get_bool("flag", std::nullopt));
}

TEST(ConfigReader, ErrorsNameFileLineColumnPathAndValue) {
  const ConfigReader r = ConfigReader::from_string(kDoc, "t.yaml");
  const ConfigNode topo = r.root().child("topology");
  EXPECT_EQ(error_of([&] { topo.get_int("ranks", std::nullopt, 16, 100); }),
            "t.yaml:3:10: topology.ranks: must be in [16, 100] (value: 8)");
  EXPECT_EQ(error_of([&] { topo.get_time("bandwidth"); }),
            "t.yaml:4:14: topology.bandwidth: invalid time '450GiB/s': unknown unit 'GiB/s' (accepted: s, ms, us, ns, "
            "ps)");
  EXPECT_EQ(error_of([&] { topo.get_choice("kind", {"ring", "torus2d"}); }),
            "t.yaml:2:9: topology.kind: unknown value 'switch' (expected one of: ring, torus2d)");
  EXPECT_EQ(error_of([&] { topo.allow_only({"kind", "ranks", "bandwidth"}); }),
            "t.yaml:5:3: topology.latency: unknown key 'latency' (allowed here: kind, ranks, bandwidth)");
  EXPECT_EQ(error_of([&] { topo.child("seed"); }),
            "t.yaml:2:3: topology: missing required key 'seed' (value: {kind: switch, ranks: 8, bandwidth: 450GiB/s, "
            "latency: 3us})");
  EXPECT_EQ(error_of([&] { r.root().child("sizes").child("x"); }),
            "t.yaml:6:8: sizes: expected a mapping (key: value pairs) (value: [1MiB, 64MiB])");
}

TEST(ConfigReader, MalformedYamlAndMissingFiles) {
  EXPECT_NE(error_of([] { ConfigReader::from_string("a: [1, 2\nb: 3\n", "bad.yaml"); }).find("bad.yaml:"),
            std::string::npos);
  EXPECT_NE(error_of([] { ConfigReader::from_string("a: [1, 2\nb: 3\n", "bad.yaml"); }).find("malformed YAML"),
            std::string::npos);
  EXPECT_EQ(error_of([] { ConfigReader r("/nonexistent/x.yaml"); }),
            "/nonexistent/x.yaml: cannot open file for reading (No such file or directory)");
  EXPECT_EQ(error_of([] { ConfigReader::from_string("", "e.yaml"); }), "e.yaml: the document is empty");
}

TEST(ConfigReader, AssignmentRebindsWithoutTouchingTheDocument) {
  const ConfigReader r = ConfigReader::from_string(kDoc, "t.yaml");
  ConfigNode n = r.root().child("topology");
  n = r.root().child("flag");  // must not overwrite the topology mapping with "yes"
  EXPECT_EQ(n.path(), "flag");
  EXPECT_TRUE(r.root().child("topology").is_map());
  EXPECT_EQ(r.root().child("topology").get_int("ranks", std::nullopt, 1, 100), 8);
}

}  // namespace
}  // namespace ssim::experiments
