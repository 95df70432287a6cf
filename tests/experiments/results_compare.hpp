// Test support: whether two `stragglesim run` output folders hold the same results: results.csv
// byte for byte, results.json apart from the fields that differ between equivalent runs by nature
// (status: wall clock, jobs; output: the folder written).
#pragma once

#include <gtest/gtest.h>

#include <nlohmann/json.hpp>
#include <string>

#include "cli_support.hpp"

namespace ssim::testing {

inline nlohmann::json comparable_json(const std::string& dir) {
  nlohmann::json j = nlohmann::json::parse(slurp(dir + "/results.json"));
  j.erase("status");
  j.erase("output");
  return j;
}

inline void expect_same_results(const std::string& a, const std::string& b) {
  const std::string csv = slurp(a + "/results.csv");
  ASSERT_FALSE(csv.empty());
  EXPECT_EQ(csv, slurp(b + "/results.csv")) << a << " vs " << b;
  EXPECT_EQ(comparable_json(a), comparable_json(b)) << a << " vs " << b;
}

}  // namespace ssim::testing
