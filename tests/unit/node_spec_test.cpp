// SPDX-License-Identifier: MIT
// node_spec and rank_location: the value types of a topology, usable in constant expressions.
#include <doctest/doctest.h>

#include <hetlaunch/node_spec.hpp>

namespace {
constexpr hetlaunch::node_spec brief{"node0", 8};
static_assert(brief.host == "node0" && brief.nproc == 8 && brief.role == "default" &&
                  brief.weight == "1",
              "a node given by host and nproc has the default role and weight");
constexpr hetlaunch::node_spec full{"node1", 4, "trainer", "2.5"};
static_assert(full.role == "trainer" && full.weight == "2.5" && full.max_batch == 0,
              "a node given without a ceiling has none");
constexpr hetlaunch::node_spec ceiling{"node2", 4, "default", "1", 12};
static_assert(ceiling.max_batch == 12, "");
}  // namespace

TEST_SUITE("node_spec") {
  TEST_CASE("rank_location compares node and local rank") {
    constexpr hetlaunch::rank_location a{2, 1};
    static_assert(a == hetlaunch::rank_location{2, 1} && a != hetlaunch::rank_location{2, 0} &&
                      a != hetlaunch::rank_location{1, 1},
                  "");
    const hetlaunch::rank_location first{};
    CHECK(first == hetlaunch::rank_location{0, 0});
    CHECK(first != a);
  }
}
