// SPDX-License-Identifier: MIT
// Properties over many random topologies, checked against brute-force models.
#include <doctest/doctest.h>

#include <hetlaunch/cluster.hpp>

#include <cstdint>
#include <string>
#include <vector>

namespace {

// A fixed-seed generator whose output does not depend on the standard library.
struct rng {
  std::uint64_t state;
  std::uint32_t next() {
    state = state * 6364136223846793005ull + 1442695040888963407ull;
    return static_cast<std::uint32_t>(state >> 33);
  }
  int below(int n) { return static_cast<int>(next() % static_cast<std::uint32_t>(n)); }
};

struct topology {
  std::vector<std::string> hosts;
  std::vector<std::string> roles;
  std::vector<int> nproc;
  hetlaunch::cluster build() const {
    std::vector<hetlaunch::node_spec> specs;
    for (std::size_t i = 0; i < hosts.size(); ++i) specs.push_back({hosts[i], nproc[i], roles[i]});
    return hetlaunch::cluster(specs);
  }
};

topology random_valid(rng& r) {
  topology t;
  const int n = 1 + r.below(40);
  for (int i = 0; i < n; ++i) {
    t.hosts.push_back(hetlaunch::detail::concat("node", i));
    t.roles.push_back(std::string(1, static_cast<char>('a' + r.below(3))));
    t.nproc.push_back(1 + r.below(9));
  }
  return t;
}

}  // namespace

TEST_SUITE("properties") {
  TEST_CASE("rank math agrees with brute force on random topologies") {
    rng r{42};
    for (int round = 0; round < 500; ++round) {
      const topology t = random_valid(r);
      const hetlaunch::cluster c = t.build();
      REQUIRE(hetlaunch::validate(c).empty());
      long long sum = 0;
      for (std::size_t i = 0; i < t.nproc.size(); ++i) {
        CHECK(c.rank_offset(i) == sum);  // offsets are prefix sums
        sum += t.nproc[i];
      }
      CHECK(c.world_size() == sum);  // the world size is the sum
      for (std::size_t i = 0; i < t.nproc.size(); ++i) {
        int role_before = 0, role_total = 0;
        for (std::size_t j = 0; j < t.nproc.size(); ++j) {
          if (t.roles[j] != t.roles[i]) continue;
          role_total += t.nproc[j];
          if (j < i) role_before += t.nproc[j];
        }
        CHECK(c.role_world_size(i) == role_total);
        for (int l = 0; l < t.nproc[i]; ++l) {
          const int g = c.global_rank(i, l);
          CHECK(c.locate(g) == hetlaunch::rank_location{i, l});  // locate inverts global_rank
          CHECK(c.role_rank(i, l) == role_before + l);
        }
      }
    }
  }

  TEST_CASE("locate visits every rank exactly once, in order") {
    rng r{7};
    for (int round = 0; round < 100; ++round) {
      const hetlaunch::cluster c = random_valid(r).build();
      std::size_t node = 0;
      int local = 0;
      for (int g = 0; g < c.world_size(); ++g) {
        if (local == c.nproc(node)) {
          ++node;
          local = 0;
        }
        CHECK(c.locate(g) == hetlaunch::rank_location{node, local});
        ++local;
      }
    }
  }

  TEST_CASE("duplicate detection agrees with a quadratic model") {
    rng r{2026};
    const char* pool[] = {"a", "A", "b", "gpu-1", "GPU-1", "c.d", "C.D", "x"};
    for (int round = 0; round < 500; ++round) {
      topology t;
      const int n = 1 + r.below(12);
      for (int i = 0; i < n; ++i) {
        t.hosts.push_back(pool[r.below(8)]);
        t.roles.push_back("default");
        t.nproc.push_back(1);
      }
      std::vector<std::size_t> expected_node, expected_other;
      for (std::size_t i = 0; i < t.hosts.size(); ++i)
        for (std::size_t j = 0; j < i; ++j)
          if (hetlaunch::detail::compare_host(t.hosts[i], t.hosts[j]) == 0) {
            expected_node.push_back(i);
            expected_other.push_back(j);
            break;
          }
      const auto all = hetlaunch::validate(t.build());
      REQUIRE(all.size() == expected_node.size());
      for (std::size_t k = 0; k < all.size(); ++k) {
        CHECK(all[k].code == hetlaunch::errc::duplicate_host);
        CHECK(all[k].node == expected_node[k]);
        CHECK(all[k].other_node == expected_other[k]);
      }
    }
  }

  TEST_CASE("hash collisions in the high bits do not hide or invent duplicates") {
    // Thousands of distinct hosts put many pairs into equal 32-bit hash prefixes' neighbourhood;
    // the result must still be exactly the planted duplicates.
    std::vector<std::string> hosts;
    for (int i = 0; i < 20000; ++i) hosts.push_back(hetlaunch::detail::concat("n", i));
    hosts.push_back("N17");
    hosts.push_back("n19999");
    std::vector<hetlaunch::node_spec> specs;
    for (const auto& h : hosts) specs.push_back({h, 1});
    const auto all = hetlaunch::validate(hetlaunch::cluster(specs));
    REQUIRE(all.size() == 2);
    CHECK(all[0].node == 20000);
    CHECK(all[0].other_node == 17);
    CHECK(all[1].node == 20001);
    CHECK(all[1].other_node == 19999);
  }
}
