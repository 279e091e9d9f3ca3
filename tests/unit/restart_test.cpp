// SPDX-License-Identifier: MIT
// restart.hpp: when a failed job starts again and on which nodes, and the smaller topology a
// restart without the failed nodes plans over (same order, roles, weights and devices; the same
// global batch split over what remains).
#include <doctest/doctest.h>

#include <hetlaunch/plan.hpp>
#include <hetlaunch/restart.hpp>

#include <cstddef>
#include <random>
#include <string>
#include <vector>

namespace {
using hetlaunch::restart_verdict;
using nodes = std::vector<std::size_t>;

hetlaunch::restart_options allowing(int restarts, bool exclude = false, std::size_t min_nodes = 1) {
  hetlaunch::restart_options o;
  o.restarts = restarts;
  o.exclude_failed = exclude;
  o.min_nodes = min_nodes;
  return o;
}
}  // namespace

TEST_SUITE("gang restarts") {
  TEST_CASE("a job that succeeded, or was interrupted, is not restarted") {
    CHECK(hetlaunch::decide_restart(allowing(3), 0, 3, {}, false).verdict ==
          restart_verdict::succeeded);
    CHECK(hetlaunch::decide_restart(allowing(3), 0, 3, {1}, true).verdict ==
          restart_verdict::interrupted);
    CHECK(hetlaunch::decide_restart(allowing(3), 0, 3, {}, true).verdict ==
          restart_verdict::interrupted);
  }

  TEST_CASE("N restarts allow N + 1 attempts") {
    const auto o = allowing(2);
    CHECK(hetlaunch::decide_restart(o, 0, 3, {2}, false).restart());
    CHECK(hetlaunch::decide_restart(o, 1, 3, {2}, false).restart());
    CHECK(hetlaunch::decide_restart(o, 2, 3, {2}, false).verdict ==
          restart_verdict::no_restart_left);
    CHECK(hetlaunch::decide_restart(allowing(0), 0, 3, {2}, false).verdict ==
          restart_verdict::no_restart_left);
  }

  TEST_CASE("without exclude_failed every node starts again") {
    const auto d = hetlaunch::decide_restart(allowing(1), 0, 3, {1}, false);
    CHECK(d.restart());
    CHECK(d.nodes == nodes{0, 1, 2});
  }

  TEST_CASE(
      "with exclude_failed the failed and unreachable nodes are left out, the rest keep their order") {
    CHECK(hetlaunch::decide_restart(allowing(1, true), 0, 4, {2}, false).nodes == nodes{0, 1, 3});
    CHECK(hetlaunch::decide_restart(allowing(1, true), 0, 4, {3, 0, 3}, false).nodes ==
          nodes{1, 2});
  }

  TEST_CASE("min_nodes stops a shrink; no job shrinks to nothing") {
    CHECK(hetlaunch::decide_restart(allowing(1, true, 3), 0, 4, {2}, false).restart());
    const auto d = hetlaunch::decide_restart(allowing(1, true, 4), 0, 4, {2}, false);
    CHECK(d.verdict == restart_verdict::too_few_nodes);
    CHECK(d.nodes.empty());
    CHECK(hetlaunch::decide_restart(allowing(1, true, 0), 0, 1, {0}, false).verdict ==
          restart_verdict::too_few_nodes);
  }

  TEST_CASE(
      "property: for all small jobs and failures, the next attempt is every node not blamed") {
    std::mt19937 rng(11);
    for (int round = 0; round < 2000; ++round) {
      const std::size_t n = 1 + rng() % 6;
      nodes failed;
      for (std::size_t k = rng() % 3; k > 0; --k) failed.push_back(rng() % n);
      const bool exclude = rng() % 2;
      const std::size_t min_nodes = rng() % (n + 1);
      const int restarts = static_cast<int>(rng() % 3), done = static_cast<int>(rng() % 3);
      const auto d =
          hetlaunch::decide_restart(allowing(restarts, exclude, min_nodes), done, n, failed, false);
      nodes expected;
      for (std::size_t i = 0; i < n; ++i) {
        bool blamed = false;
        for (std::size_t f : failed) blamed = blamed || (exclude && f == i);
        if (!blamed) expected.push_back(i);
      }
      if (failed.empty())
        CHECK(d.verdict == restart_verdict::succeeded);
      else if (done >= restarts)
        CHECK(d.verdict == restart_verdict::no_restart_left);
      else if (expected.size() < (min_nodes > 0 ? min_nodes : 1))
        CHECK(d.verdict == restart_verdict::too_few_nodes);
      else
        CHECK(d.nodes == expected);
    }
  }

  TEST_CASE("the smaller topology keeps order, roles, weights and devices, with new ranks") {
    hetlaunch::cluster c{{"a", 4, "trainer", "2"}, {"b", 2}, {"c", 1, "trainer", "0.5"}, {"d", 3}};
    c.set_devices(2, {5});
    const hetlaunch::cluster smaller = hetlaunch::keep_nodes(c, {0, 2, 3});
    REQUIRE(smaller.node_count() == 3);
    CHECK(smaller.node(1).host == "c");
    CHECK(smaller.node(1).role == "trainer");
    CHECK(smaller.node(1).weight == "0.5");
    CHECK(smaller.node(0).weight == "2");
    CHECK(smaller.devices(1) == std::vector<int>{5});
    CHECK(smaller.devices(0).empty());
    CHECK(smaller.world_size() == 8);
    CHECK(smaller.rank_offset(2) == 5);
  }

  TEST_CASE(
      "a plan made again without the failed node splits the same global batch over the rest") {
    const hetlaunch::cluster c{{"a", 3}, {"b", 1, "default", "3"}, {"c", 2}};
    hetlaunch::launch_options o;
    o.script = "t.py";
    o.global_batch = 60;
    const auto before = hetlaunch::make_plan(c, o);
    REQUIRE(before);
    const auto d = hetlaunch::decide_restart(allowing(1, true), 0, c.node_count(), {2}, false);
    REQUIRE(d.restart());
    const auto after = hetlaunch::make_plan(hetlaunch::keep_nodes(c, d.nodes), o);
    REQUIRE(after);
    CHECK(after->topology().world_size() == 4);
    CHECK(after->node_batch_of(0).batch + after->node_batch_of(1).batch == 60);
    // Every rank gets one sample first; the other 56 go half and half (weight 3 x 1 worker =
    // 1 x 3).
    CHECK(after->node_batch_of(1).batch == 1 + 28);
  }

  TEST_CASE("a given rendezvous address moves when the node it points at is left out") {
    const hetlaunch::cluster c{{"h1", 2}, {"h2", 1}, {"h3", 1}};
    hetlaunch::launch_options o;
    const auto moves = [&](std::string addr, std::vector<std::size_t> keep) {
      o.master_addr = std::move(addr);
      return hetlaunch::rendezvous_moves(c, keep, o);
    };
    // Not given: node 0's host already, whichever node that is.
    CHECK_FALSE(moves("", {1, 2}));
    // The host of node 0, left out: the restart would wait for it.
    CHECK(moves("h1", {1, 2}));
    // Node 0's fast-network address, which names no node: it goes with node 0.
    CHECK(moves("10.1.0.1", {1, 2}));
    CHECK(moves("[fd00::1]", {1, 2}));
    // Node 0 stays: its other address stays too.
    CHECK_FALSE(moves("10.1.0.1", {0, 1}));
    CHECK_FALSE(moves("h1", {0, 2}));
    // An address naming a node that remains (c10d's endpoint on another node) stays.
    CHECK_FALSE(moves("h2", {1, 2}));
    // ... and one naming a host left out moves, even when node 0 remains.
    CHECK(moves("h3", {0, 1}));
    // The same for c10d's endpoint, which the same field holds.
    o.backend = hetlaunch::rendezvous::c10d;
    CHECK(moves("h1", {1, 2}));
    CHECK_FALSE(moves("h2", {1, 2}));
  }

  TEST_CASE("property: the address moves exactly when no remaining node can hold it") {
    // For every subset of a 4-node job that keeps at least one node, and for every address that
    // names a node or none: it stays only if node 0 stays and it names no node left out, or it
    // names a node that remains.
    const hetlaunch::cluster c{{"a", 1}, {"b", 2}, {"c", 1}, {"d", 3}};
    hetlaunch::launch_options o;
    for (unsigned mask = 1; mask < 16; ++mask) {
      std::vector<std::size_t> keep;
      for (std::size_t i = 0; i < 4; ++i)
        if (mask & (1u << i)) keep.push_back(i);
      for (const char* addr : {"a", "b", "c", "d", "elsewhere"}) {
        o.master_addr = addr;
        std::size_t named = 4;
        for (std::size_t i = 0; i < 4; ++i)
          if (c.node(i).host == addr) named = i;
        const bool node0_stays = (mask & 1u) != 0;
        const bool named_stays = named < 4 && (mask & (1u << named)) != 0;
        const bool stays = named < 4 ? named_stays : node0_stays;
        CAPTURE(mask);
        CAPTURE(addr);
        CHECK(hetlaunch::rendezvous_moves(c, keep, o) == !stays);
      }
    }
  }
}
