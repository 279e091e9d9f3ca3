// SPDX-License-Identifier: MIT
// restart.hpp: when a failed job starts again and on which nodes, and the smaller topology a
// restart without the failed nodes plans over (same order, roles, weights and devices; the same
// global batch split over what remains).
#include <doctest/doctest.h>

#include <hetlaunch/plan.hpp>
#include <hetlaunch/restart.hpp>

#include <algorithm>
#include <cstddef>
#include <random>
#include <string>
#include <vector>

namespace {
using hetlaunch::restart_verdict;
using nodes = std::vector<std::size_t>;

using spares = std::vector<hetlaunch::spare_host>;
using replacements = std::vector<hetlaunch::node_replacement>;

// The most failed nodes that distinct spares can replace, by trying every assignment: the
// reference for the greedy matching.
std::size_t most_replaceable(const hetlaunch::cluster& c, const nodes& failed, const spares& s,
                             std::size_t from = 0, std::vector<bool> used = {}) {
  if (used.empty()) used.assign(s.size(), false);
  if (from == failed.size()) return 0;
  std::size_t best = most_replaceable(c, failed, s, from + 1, used);  // this one not replaced
  for (std::size_t k = 0; k < s.size(); ++k) {
    if (used[k] || s[k].nproc < c.node(failed[from]).nproc || s[k].nproc <= 0) continue;
    used[k] = true;
    best = std::max(best, 1 + most_replaceable(c, failed, s, from + 1, used));
    used[k] = false;
  }
  return best;
}

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
    // c10d's endpoint on no host of the job is a store of its own: it never follows node 0.
    CHECK_FALSE(moves("store.example", {1, 2}));
    CHECK_FALSE(moves("10.1.0.1", {2}));
    const hetlaunch::cluster spare_for_node0{{"s", 2}, {"h2", 1}, {"h3", 1}};
    CHECK_FALSE(hetlaunch::rendezvous_moves(c, spare_for_node0, o));
    CHECK(hetlaunch::rendezvous_moves(c, hetlaunch::cluster{{"s", 2}, {"h2", 1}}, [&] {
      hetlaunch::launch_options h1 = o;
      h1.master_addr = "h1";
      return h1;
    }()));
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

  TEST_CASE("a spare of at least the failed node's nproc takes its place, and the plan stays") {
    const hetlaunch::cluster c{{"a", 4, "default", "2"}, {"b", 2}, {"c", 1}};
    const spares standing_by{{"s-small", 1}, {"s-big", 8}};
    const auto d = hetlaunch::decide_restart(allowing(1), 0, c, {1}, false, standing_by);
    REQUIRE(d.restart());
    CHECK(d.nodes == nodes{0, 1, 2});
    CHECK(d.replaced == replacements{{1, 1}});  // s-small has too few workers for node 1
    const hetlaunch::cluster next = hetlaunch::restart_topology(c, d, standing_by);
    REQUIRE(next.node_count() == 3);
    CHECK(next.node(1).host == "s-big");
    CHECK(next.node(1).nproc == 2);  // the node's, not the spare's 8
    CHECK(next.world_size() == c.world_size());
    CHECK(next.rank_offset(2) == c.rank_offset(2));
    CHECK(next.node(0).weight == "2");
  }

  TEST_CASE("the smallest spare that fits is taken, leaving the big ones for big nodes") {
    const hetlaunch::cluster c{{"a", 4}, {"b", 2}, {"c", 1}};
    const spares standing_by{{"s8", 8}, {"s2", 2}, {"s4", 4}, {"s2b", 2}};
    const auto d =
        hetlaunch::decide_restart(allowing(1, true), 0, c, {2, 0, 1}, false, standing_by);
    REQUIRE(d.restart());
    // Node 2 (1 worker) takes s2, node 1 (2) takes s2b, node 0 (4) takes s4; s8 stays free.
    CHECK(d.replaced == replacements{{0, 2}, {1, 3}, {2, 1}});
    CHECK(d.nodes == nodes{0, 1, 2});
  }

  TEST_CASE("with exclude_failed only the nodes no spare fits are left out") {
    const hetlaunch::cluster c{{"a", 4}, {"b", 2}, {"c", 1}};
    const spares standing_by{{"s", 2}};
    const auto d = hetlaunch::decide_restart(allowing(1, true), 0, c, {0, 2}, false, standing_by);
    REQUIRE(d.restart());
    CHECK(d.replaced == replacements{{2, 0}});
    CHECK(d.nodes == nodes{1, 2});
    const hetlaunch::cluster next = hetlaunch::restart_topology(c, d, standing_by);
    CHECK(next.node(0).host == "b");
    CHECK(next.node(1).host == "s");
    CHECK(next.world_size() == 3);
    // Without exclude_failed the node no spare fits starts again on its own host.
    const auto same = hetlaunch::decide_restart(allowing(1), 0, c, {0, 2}, false, standing_by);
    CHECK(same.nodes == nodes{0, 1, 2});
    CHECK(hetlaunch::restart_topology(c, same, standing_by).node(0).host == "a");
  }

  TEST_CASE("a spare not asked yet (nproc 0) fits no node; no spare, no restart left, a signal") {
    const hetlaunch::cluster c{{"a", 1}, {"b", 1}};
    CHECK(hetlaunch::decide_restart(allowing(1), 0, c, {1}, false, {{"s", 0}}).replaced.empty());
    CHECK(hetlaunch::decide_restart(allowing(1), 1, c, {1}, false, {{"s", 1}}).verdict ==
          restart_verdict::no_restart_left);
    CHECK(hetlaunch::decide_restart(allowing(1), 0, c, {1}, true, {{"s", 1}}).verdict ==
          restart_verdict::interrupted);
    CHECK(hetlaunch::decide_restart(allowing(1), 0, c, {}, false, {{"s", 1}}).verdict ==
          restart_verdict::succeeded);
  }

  TEST_CASE("a replaced node does not count against min_nodes") {
    const hetlaunch::cluster c{{"a", 1}, {"b", 1}, {"c", 1}};
    const auto d = hetlaunch::decide_restart(allowing(1, true, 3), 0, c, {1}, false, {{"s", 1}});
    CHECK(d.restart());
    const auto short_of_one =
        hetlaunch::decide_restart(allowing(1, true, 3), 0, c, {1, 2}, false, {{"s", 1}});
    CHECK(short_of_one.verdict == restart_verdict::too_few_nodes);
    CHECK(short_of_one.replaced.empty());
  }

  TEST_CASE("node devices stay with their hosts: a spare gets none") {
    hetlaunch::cluster c{{"a", 2}, {"b", 2}};
    c.set_devices(0, {4, 5});
    c.set_devices(1, {6, 7});
    const spares standing_by{{"s", 2}};
    const auto d = hetlaunch::decide_restart(allowing(1), 0, c, {1}, false, standing_by);
    const hetlaunch::cluster next = hetlaunch::restart_topology(c, d, standing_by);
    CHECK(next.devices(0) == std::vector<int>{4, 5});
    CHECK(next.devices(1).empty());
  }

  TEST_CASE(
      "property: for random jobs and failure sequences, spares replace as many nodes as can be, "
      "each fitting and used once, and the rest follows the decision without spares") {
    std::mt19937 rng(23);
    for (int round = 0; round < 3000; ++round) {
      const std::size_t n = 1 + rng() % 5;
      std::vector<hetlaunch::node_spec> specs;
      std::vector<std::string> names;
      // Appended, not "h" + ...: GCC 12 at -O3 warns falsely (-Wrestrict) on operator+ here.
      for (std::size_t i = 0; i < n; ++i)
        names.push_back(std::string(1, 'h').append(std::to_string(i)));
      for (std::size_t i = 0; i < n; ++i)
        specs.push_back({names[i], static_cast<int>(1 + rng() % 4)});
      const hetlaunch::cluster c(specs);
      spares standing_by;
      for (std::size_t k = rng() % 4; k > 0; --k)
        standing_by.push_back({std::string(1, 's').append(std::to_string(standing_by.size())),
                               static_cast<int>(rng() % 5)});
      nodes failed;
      for (std::size_t k = 1 + rng() % 3; k > 0; --k) failed.push_back(rng() % n);
      const bool exclude = rng() % 2;
      const std::size_t min_nodes = rng() % (n + 1);
      const auto options = allowing(2, exclude, min_nodes);
      const auto d = hetlaunch::decide_restart(options, 0, c, failed, false, standing_by);
      CAPTURE(round);
      if (d.verdict == restart_verdict::too_few_nodes) {
        // Even the best replacement leaves too few nodes.
        nodes distinct = failed;
        std::sort(distinct.begin(), distinct.end());
        distinct.erase(std::unique(distinct.begin(), distinct.end()), distinct.end());
        const std::size_t best = most_replaceable(c, distinct, standing_by);
        CHECK(exclude);
        CHECK(n - (distinct.size() - best) < std::max<std::size_t>(min_nodes, 1));
        continue;
      }
      REQUIRE(d.restart());
      nodes distinct = failed;
      std::sort(distinct.begin(), distinct.end());
      distinct.erase(std::unique(distinct.begin(), distinct.end()), distinct.end());
      CHECK(d.replaced.size() == most_replaceable(c, distinct, standing_by));
      std::vector<bool> spare_used(standing_by.size(), false);
      for (const auto& r : d.replaced) {
        CHECK(std::find(distinct.begin(), distinct.end(), r.node) != distinct.end());
        REQUIRE(r.spare < standing_by.size());
        CHECK_FALSE(spare_used[r.spare]);
        spare_used[r.spare] = true;
        CHECK(standing_by[r.spare].nproc >= c.node(r.node).nproc);
      }
      // The next attempt: every node but the failed ones no spare replaced (with exclude_failed).
      nodes expected;
      for (std::size_t i = 0; i < n; ++i) {
        const bool is_failed = std::find(distinct.begin(), distinct.end(), i) != distinct.end();
        bool is_replaced = false;
        for (const auto& r : d.replaced) is_replaced = is_replaced || r.node == i;
        if (!(exclude && is_failed && !is_replaced)) expected.push_back(i);
      }
      CHECK(d.nodes == expected);
      const hetlaunch::cluster next = hetlaunch::restart_topology(c, d, standing_by);
      REQUIRE(next.node_count() == d.nodes.size());
      long long world = 0;
      for (std::size_t k = 0; k < d.nodes.size(); ++k) {
        CHECK(next.node(k).nproc == c.node(d.nodes[k]).nproc);
        world += c.node(d.nodes[k]).nproc;
      }
      CHECK(next.world_size() == world);
      // When every failed node is replaced, nothing about the ranks changes.
      if (d.replaced.size() == distinct.size()) {
        CHECK(next.world_size() == c.world_size());
        for (std::size_t i = 0; i < n; ++i) CHECK(next.rank_offset(i) == c.rank_offset(i));
      }
    }
  }

  TEST_CASE("the rendezvous address, before and after a restart's topology") {
    const hetlaunch::cluster before{{"h1", 2}, {"h2", 1}, {"h3", 1}};
    hetlaunch::launch_options o;
    const auto moves = [&](std::string addr, const hetlaunch::cluster& after) {
      o.master_addr = std::move(addr);
      return hetlaunch::rendezvous_moves(before, after, o);
    };
    const hetlaunch::cluster spare_for_node0{{"s", 2}, {"h2", 1}, {"h3", 1}};
    const hetlaunch::cluster spare_for_node2{{"h1", 2}, {"h2", 1}, {"s", 1}};
    const hetlaunch::cluster without_node0{{"h2", 1}, {"h3", 1}};
    CHECK_FALSE(moves("", spare_for_node0));
    CHECK(moves("h1", spare_for_node0));        // the host of node 0, gone
    CHECK(moves("10.1.0.1", spare_for_node0));  // node 0's other name goes with it
    CHECK_FALSE(moves("10.1.0.1", spare_for_node2));
    CHECK_FALSE(moves("h2", spare_for_node0));  // a host that remains
    CHECK(moves("h3", spare_for_node2));
    CHECK(moves("[h1]", without_node0));
    // For a restart without spares it agrees with the answer over the nodes kept.
    for (unsigned mask = 1; mask < 8; ++mask) {
      nodes keep;
      for (std::size_t i = 0; i < 3; ++i)
        if (mask & (1u << i)) keep.push_back(i);
      for (const char* addr : {"h1", "h2", "h3", "elsewhere"}) {
        o.master_addr = addr;
        CAPTURE(mask);
        CAPTURE(addr);
        CHECK(hetlaunch::rendezvous_moves(before, hetlaunch::keep_nodes(before, keep), o) ==
              hetlaunch::rendezvous_moves(before, keep, o));
      }
    }
  }
}
