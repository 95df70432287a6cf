// Rounds on demand (round_stream.hpp): every algorithm's streamed rounds equal its materialized
// schedule, at every n in 2..70 and some larger ones, with its options; and both equal what the
// generators produced before they streamed (fingerprints of the materialized schedules taken
// from the pre-streaming code, commit 3380fa6).
#include <gtest/gtest.h>

#include <cstdint>
#include <set>
#include <string>
#include <vector>

#include "algorithms/registry.hpp"
#include "algorithms/stragglar.hpp"
#include "algorithms/verifier.hpp"
#include "common/error.hpp"

namespace ssim::alg {
namespace {

struct Case {
  std::string algorithm;
  std::string option;  // empty: defaults
  std::string value;   // a number, or "n/2"
  std::uint64_t fingerprint;
};

// FNV-1a over the schedules of every rank count of ranks_of(), in order.
const Case kCases[] = {
    {"ring", "", "", 0x3aa5a2aa1dd40504ull},
    {"rhd", "", "", 0x934eb356ec4fef27ull},
    {"rhd", "nonpow2", "rabenseifner", 0x4a0e80f841494fb3ull},
    {"straggler_tree", "", "", 0xd9cef1b51b202fd7ull},
    {"straggler_tree", "straggler", "0", 0x0d767694d37c0eb4ull},
    {"halving_doubling", "", "", 0x303fcd63cd57e61full},
    {"direct_rs_ag", "", "", 0x98902e7f1cab2645ull},
    // MSCCL++'s direct loads: fingerprints taken when they were added, already streamed.
    {"oneshot", "", "", 0x7147d000730b6c44ull},
    {"twoshot", "", "", 0x223ae96382089a45ull},
    // In-switch reduction: taken when it was added (rounds with switch_reduces).
    {"nvls", "", "", 0x56f8411c701db0c3ull},
    {"nvls", "pipeline", "3", 0x436ed61e37e3d506ull},
    // nvls_tree on one node (its default) is nvls with pipeline 1: the same fingerprint
    // (tests/sim/nvls_test.cpp has the multi-node shapes).
    {"nvls_tree", "", "", 0x56f8411c701db0c3ull},
    // collnet by default (one GPU per node): one switch reduction of all ranks; taken when added.
    {"collnet", "", "", 0xd2502fadd7ec5721ull},
    // NCCL's CollNet Direct and Chain: one GPU per node by default, where one slice (one
    // segment) is collnet's one switch reduction of all ranks (same fingerprint); taken when
    // added (tests/sim/nvls_test.cpp has the multi-node shapes).
    {"collnet_direct", "", "", 0xd2502fadd7ec5721ull},
    {"collnet_direct", "pipeline", "3", 0xa4421703da4ebd2dull},
    {"collnet_chain", "segments", "1", 0xd2502fadd7ec5721ull},
    {"collnet_chain", "", "", 0x493aba61dd18f2a5ull},
    {"collnet_chain", "channels", "3", 0x7a1a468b7f6b2505ull},
    {"direct", "", "", 0xbb8a97eb79d3c7aeull},
    {"direct", "straggler", "0", 0x3e3074da7b64ad8cull},
    {"direct", "straggler", "n/2", 0xa3425e118cae45deull},
    // stragglar: n = 33 re-fingerprinted when its searched template (stragglar_tables.hpp)
    // replaced the greedy there; every other n as before.
    {"stragglar", "", "", 0x791544823cb39c24ull},
    {"stragglar", "straggler", "0", 0xe5f3ea16f8d4d023ull},
    {"stragglar", "straggler", "n/2", 0xdaa44398ddb9a57bull},
    // k late ranks: fingerprints of the schedules that matched the pre-streaming k-straggler
    // generator's JSON output at every n here (and n <= 130 spot checks with late=...).
    {"stragglar", "stragglers", "2", 0xf6dc51dcba08fd0cull},
    {"stragglar", "stragglers", "3", 0x419d1e01567f8396ull},
    // Topology-aware schedules (one node by default; tests/algorithms/hierarchical_test.cpp has
    // the multi-node shapes): fingerprints taken when they were added, already streamed;
    // hierarchical on one node is ring (same fingerprint).
    {"hierarchical", "", "", 0x3aa5a2aa1dd40504ull},
    {"stragglar_hier", "", "", 0xad1b343f35903bafull},
    {"stragglar_hier", "straggler", "n/2", 0x88ebd03c68324d6eull},
    {"tree", "", "", 0x30ea492ab4c7c09cull},
    {"tree", "segments", "1", 0xc1cff3c962894021ull},
    {"tree", "segments", "3", 0x3db33fbe4873a5c1ull},
    {"dbtree", "", "", 0x073f797a86744ba9ull},
    {"dbtree", "segments", "2", 0x2a9ad12b6f497645ull},
    {"dbtree", "segments", "5", 0x4b5250340b74810cull},
    // NCCL's Ring and Tree (one node and one channel by default, where nccl_ring is ring:
    // tests/algorithms/nccl_test.cpp checks it and has the multi-node shapes): taken when they
    // were added, already streamed.
    {"nccl_ring", "", "", 0x474cf1ea11a8596aull},
    {"nccl_ring", "channels", "3", 0x633c33e33d30a259ull},
    {"nccl_ring", "loops", "2", 0x46fc3155fc993ae3ull},
    {"nccl_tree", "", "", 0x1271296120791516ull},
    {"nccl_tree", "segments", "3", 0x4c3b855c66376791ull},
    // nccl: NCCL's Ring without a machine, Tree and NVLS when forced (the same rounds as
    // nccl_ring's, nccl_tree's and nvls's: the fingerprints are theirs).
    {"nccl", "", "", 0x474cf1ea11a8596aull},
    {"nccl", "algo", "tree", 0x1271296120791516ull},
};

std::vector<int> ranks_of(const Case& c) {
  const std::string& algorithm = c.algorithm;
  // k late ranks need n >= k+2, and their greedy phase 2 is slower: fewer large n.
  const int k = c.option == "stragglers" ? std::stoi(c.value) : 1;
  std::vector<int> v;
  for (int n = algorithm == "stragglar" ? k + 2 : 2; n <= 70; ++n) v.push_back(n);
  for (int n : {127, 128, 129, 255, 256, 257, 600}) {
    if (k > 1 && n > 129) continue;
    const bool all_to_all = algorithm == "direct_rs_ag" || algorithm == "oneshot" ||
                            algorithm == "twoshot" || algorithm == "nvls" ||
                            algorithm == "nvls_tree";
    // n^2 transfers per round; nccl_ring (and nccl): channels x n, nccl_tree on one node: a
    // chain of n.
    const bool nccl = algorithm.rfind("nccl", 0) == 0;  // nccl_ring, nccl_tree, nccl
    if ((!all_to_all && !nccl) || n <= (nccl ? 129 : 256)) v.push_back(n);
  }
  return v;
}

Options options_for(const Case& c, int n) {
  Options o;
  if (!c.option.empty()) o.set(c.option, c.value == "n/2" ? std::to_string(n / 2) : c.value);
  return o;
}

std::uint64_t mix(std::uint64_t h, std::int64_t v) {
  for (int i = 0; i < 8; ++i) {
    h ^= static_cast<std::uint8_t>(v >> (8 * i));
    h *= 1099511628211ull;
  }
  return h;
}

std::uint64_t mix_round(std::uint64_t h, const Round& r) {
  for (char c : r.phase) h = mix(h, c);
  h = mix(h, static_cast<std::int64_t>(r.transfers.size()));
  for (const Transfer& t : r.transfers) {
    h = mix(h, t.src);
    h = mix(h, t.dst);
    h = mix(h, t.chunk_begin);
    h = mix(h, t.chunk_end);
    h = mix(h, static_cast<int>(t.op));
  }
  // In-network reductions, only where a round has some (the fingerprints above predate them).
  if (!r.switch_reduces.empty()) h = mix(h, static_cast<std::int64_t>(r.switch_reduces.size()));
  for (const SwitchReduce& g : r.switch_reduces) {
    h = mix(h, static_cast<std::int64_t>(g.members.size()));
    for (int m : g.members) h = mix(h, m);
    h = mix(h, static_cast<std::int64_t>(g.receivers.size()));
    for (int x : g.receivers) h = mix(h, x);
    h = mix(h, g.chunk_begin);
    h = mix(h, g.chunk_end);
  }
  return h;
}

std::uint64_t mix_header(std::uint64_t h, const Schedule& s, std::size_t rounds) {
  h = mix(h, s.ranks);
  h = mix(h, s.chunks);
  h = mix(h, s.straggler.value_or(-1));
  return mix(h, static_cast<std::int64_t>(rounds));
}

TEST(RoundStream, EveryRegistryAlgorithmHasCases) {
  std::set<std::string> covered;
  for (const Case& c : kCases) covered.insert(c.algorithm);
  for (const AlgorithmInfo& a : algorithms()) {
    EXPECT_TRUE(covered.count(a.name)) << a.name << " needs cases in round_stream_test";
  }
}

// Streams two generators of the same schedule in lock step (each round checked before the
// other stream moves on, so a round must not depend on the consumer or another stream) and
// compares every round with the materialized schedule.
TEST(RoundStream, StreamEqualsMaterializedAndPreStreamingGenerators) {
  for (const Case& c : kCases) {
    std::uint64_t h = 14695981039346656037ull;
    for (int n : ranks_of(c)) {
      const std::string where = c.algorithm + " n=" + std::to_string(n) +
                                (c.option.empty() ? "" : " " + c.option + "=" + c.value);
      const Options o = options_for(c, n);
      const Schedule s = generate(c.algorithm, n, o);
      GeneratedRounds a = generate_rounds(c.algorithm, n, o);
      GeneratedRounds b = generate_rounds(c.algorithm, n, o);
      Schedule header = s;
      header.rounds.clear();
      ASSERT_EQ(a.header, header) << where;
      if (a.round_count) {
        EXPECT_EQ(*a.round_count, s.rounds.size()) << where;
      }
      std::size_t k = 0;
      for (;; ++k) {
        const Round* ra = a.stream.next();
        if (k == s.rounds.size()) {
          ASSERT_EQ(ra, nullptr) << where << ": more rounds streamed than materialized";
          break;
        }
        ASSERT_NE(ra, nullptr) << where << ": stream ended at round " << k;
        ASSERT_EQ(*ra, s.rounds[k]) << where << " round " << k;
        const Round* rb = b.stream.next();
        ASSERT_NE(rb, nullptr) << where;
        ASSERT_EQ(*rb, s.rounds[k]) << where << " round " << k << " (second stream)";
      }
      EXPECT_EQ(a.stream.next(), nullptr) << where << ": next() after the end";
      h = mix_header(h, s, s.rounds.size());
      for (const Round& r : s.rounds) h = mix_round(h, r);
    }
    EXPECT_EQ(h, c.fingerprint) << c.algorithm << " " << c.option << "=" << c.value
                                << ": differs from the pre-streaming generator";
  }
}

// Large n, streamed without materializing: the counts match the closed forms and the size
// bounds, and every streamed StragglAR round passes the verifier (round by round).
TEST(RoundStream, LargeRankCountsStream) {
  GeneratedRounds ring = generate_rounds("ring", 4096, Options{});
  std::size_t rounds = 0, transfers = 0;
  while (const Round* r = ring.stream.next()) {
    ++rounds;
    transfers += r->transfers.size();
  }
  EXPECT_EQ(rounds, 2u * 4095);
  EXPECT_EQ(transfers, 2u * 4095 * 4096);

  for (int n : {1025, 700}) {  // the timeline construction, and the doubling construction
    GeneratedRounds g = generate_rounds("stragglar", n, Options{});
    const Schedule s = generate("stragglar", n, Options{});
    std::size_t k = 0;
    while (const Round* r = g.stream.next()) {
      ASSERT_LT(k, s.rounds.size());
      ASSERT_EQ(*r, s.rounds[k]) << "stragglar n=" << n << " round " << k;
      ++k;
    }
    EXPECT_EQ(k, s.rounds.size());
    EXPECT_EQ(static_cast<int>(k), n - 2 + stragglar_rounds(n));
  }
}

TEST(RoundStream, BadOptionsFailBeforeAnyRound) {
  auto with = [](const char* key, const char* value) {
    Options o;
    o.set(key, value);
    return o;
  };
  EXPECT_THROW(generate_rounds("tree", 8, with("segments", "0")), InputError);
  EXPECT_THROW(generate_rounds("stragglar", 8, with("straggler", "8")), InputError);
  EXPECT_THROW(generate_rounds("stragglar", 2, Options{}), InputError);
  EXPECT_THROW(generate_rounds("ring", 8, with("segments", "2")), InputError);
}

}  // namespace
}  // namespace ssim::alg
