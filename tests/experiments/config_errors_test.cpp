// The error collection of the config loader (experiments/config/reader.hpp): all_errors,
// collect, Values, first_error; the loaders' use of it is tested end to end in
// cli_all_errors_test.cpp.
#include <gtest/gtest.h>

#include <string>

#include "common/error.hpp"
#include "experiments/config/config.hpp"
#include "experiments/config/reader.hpp"

namespace ssim::experiments {
namespace {

std::string error_of(const std::function<void()>& f) {
  try {
    f();
  } catch (const InputError& e) {
    return e.what();
  }
  return "";
}

TEST(ConfigErrors, OutsideAllErrorsTheFirstErrorPropagates) {
  const ConfigReader r = ConfigReader::from_string("a: 1\nb: 2\nc: 3\n", "t.yaml");
  EXPECT_FALSE(collecting_errors());
  const std::string m = error_of([&] { r.root().allow_only({"c"}); });
  EXPECT_EQ(m, "t.yaml:1:1: a: unknown key 'a' (did you mean 'c'? allowed here: c)");
  EXPECT_THROW(collect([&] { r.root().get_int("a", std::nullopt, 5, 9); }), InputError);
}

TEST(ConfigErrors, AllErrorsListsThemByLineAndColumn) {
  const ConfigReader r = ConfigReader::from_string("a: 1\nb: x\nc: 3\nd: 4\n", "t.yaml");
  const std::string m = error_of([&] {
    all_errors([&] {
      const ConfigNode root = r.root();
      EXPECT_TRUE(collecting_errors());
      // Found out of order: c's range before b's type, a's key and d's key.
      EXPECT_FALSE(collect([&] { root.get_int("c", std::nullopt, 5, 9); }));
      EXPECT_FALSE(collect([&] { root.get_int("b", std::nullopt, 0, 9); }));
      root.allow_only({"b", "c"});
      EXPECT_TRUE(collect([&] { root.get_int("c", std::nullopt, 0, 9); }));
    });
  });
  EXPECT_EQ(m,
            "t.yaml:1:1: a: unknown key 'a' (allowed here: b, c)\n"
            "t.yaml:2:4: b: expected an integer (value: x)\n"
            "t.yaml:3:4: c: must be in [5, 9] (value: 3)\n"
            "t.yaml:4:1: d: unknown key 'd' (allowed here: b, c)");
  EXPECT_FALSE(collecting_errors());
}

TEST(ConfigErrors, OneErrorIsItsOwnMessage) {
  const ConfigReader r = ConfigReader::from_string("a: 1\n", "t.yaml");
  const std::string alone = error_of([&] { r.root().get_int("a", std::nullopt, 5, 9); });
  EXPECT_EQ(error_of([&] { all_errors([&] { r.root().get_int("a", std::nullopt, 5, 9); }); }),
            alone);
  // The same check reached twice is one error.
  EXPECT_EQ(error_of([&] {
              all_errors([&] {
                collect([&] { r.root().get_int("a", std::nullopt, 5, 9); });
                collect([&] { r.root().get_int("a", std::nullopt, 5, 9); });
              });
            }),
            alone);
}

TEST(ConfigErrors, NestedAllErrorsStopsTheCallersPart) {
  const ConfigReader r = ConfigReader::from_string("a: 1\nb: 2\n", "t.yaml");
  bool after_inner = false;
  const std::string m = error_of([&] {
    all_errors([&] {
      const bool ok = collect([&] {
        // The inner loader records an error and returns normally: the caller's part stops.
        all_errors([&] { collect([&] { r.root().get_int("b", std::nullopt, 5, 9); }); });
        after_inner = true;
      });
      EXPECT_FALSE(ok);
      collect([&] { r.root().get_int("a", std::nullopt, 5, 9); });
    });
  });
  EXPECT_FALSE(after_inner);
  EXPECT_EQ(m,
            "t.yaml:1:4: a: must be in [5, 9] (value: 1)\n"
            "t.yaml:2:4: b: must be in [5, 9] (value: 2)");
}

TEST(ConfigErrors, ValuesStopWhenOneFailed) {
  const ConfigReader r = ConfigReader::from_string("a: 1\nb: 2\nc: 3\n", "t.yaml");
  bool used = false;
  const std::string m = error_of([&] {
    all_errors([&] {
      collect([&] {
        Values v;
        const auto a = v([&] { return r.root().get_int("a", std::nullopt, 5, 9); });
        const auto b = v([&] { return r.root().get_int("b", std::nullopt, 0, 9); });
        const auto c = v([&] { return r.root().get_int("c", std::nullopt, 5, 9); });
        EXPECT_FALSE(v.ok());
        EXPECT_EQ(b, 2);
        v.done();
        used = a + c > 0;
      });
    });
  });
  EXPECT_FALSE(used);
  EXPECT_EQ(m,
            "t.yaml:1:4: a: must be in [5, 9] (value: 1)\n"
            "t.yaml:3:4: c: must be in [5, 9] (value: 3)");
}

TEST(ConfigErrors, FirstErrorTurnsCollectionOff) {
  const ConfigReader r = ConfigReader::from_string("a: 1\nb: 2\n", "t.yaml");
  const std::string m = error_of([&] {
    all_errors([&] {
      collect([&] {
        first_error([&] {
          EXPECT_FALSE(collecting_errors());
          r.root().allow_only({});
        });
      });
      EXPECT_TRUE(collecting_errors());
    });
  });
  EXPECT_EQ(m, "t.yaml:1:1: a: unknown key 'a' (allowed here: )");
}

// By file in the order first met, then line; a message that names no place comes after its
// group's placed ones, in the order found.
TEST(ConfigErrors, SortedByFileThenLine) {
  const std::string m = error_of([&] {
    all_errors([&] {
      collect([] { throw InputError("b.yaml:7:1: x: late"); });
      collect([] { throw InputError("a.yaml:9:2: y: nine"); });
      collect([] { throw InputError("no place at all"); });
      collect([] { throw InputError("b.yaml:2: early"); });
      collect([] { throw InputError("a.yaml:9:1: z: nine, column 1"); });
    });
  });
  EXPECT_EQ(m,
            "b.yaml:2: early\n"
            "b.yaml:7:1: x: late\n"
            "a.yaml:9:1: z: nine, column 1\n"
            "a.yaml:9:2: y: nine\n"
            "no place at all");
}

// A loader's own file first, whatever was met first.
TEST(ConfigErrors, ListFileFirst) {
  const std::string m = error_of([&] {
    all_errors([&] {
      list_file_first("main.yaml");
      collect([] { throw InputError("topo.yaml:2:1: x: early"); });
      collect([] { throw InputError("main.yaml:7:1: y: late"); });
    });
  });
  EXPECT_EQ(m, "main.yaml:7:1: y: late\ntopo.yaml:2:1: x: early");
}

// The loaders collect: an experiment with errors in several top-level keys and a section.
TEST(ConfigErrors, LoadExperimentCollects) {
  const ConfigReader r = ConfigReader::from_string(
      "topology: {kind: switch, ranks: 8, bandwidth: 450GiB/s, latency: 3us}\n"
      "algorithms: [ring]\n"
      "size: 1MiB\n"
      "iterations: 0\n"
      "seed: x\n"
      "network: {model: flwo}\n"
      "metirc: completion\n",
      "e.yaml");
  const std::string m = error_of([&] { load_experiment(r); });
  EXPECT_EQ(m.substr(0, m.find(" allowed here")),
            "e.yaml:4:13: iterations: must be in [1, 10000000] (value: 0)\n"
            "e.yaml:5:7: seed: expected an integer (value: x)\n"
            "e.yaml:6:18: network.model: unknown value 'flwo' (did you mean 'flow'? expected one "
            "of: alphabeta, flow)\n"
            "e.yaml:7:1: metirc: unknown key 'metirc' (did you mean 'metric'?");
}

}  // namespace
}  // namespace ssim::experiments
