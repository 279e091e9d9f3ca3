// SPDX-License-Identifier: MIT
// grow_back.hpp: a job that restarted without some of its nodes knows each node's place in the
// job as first given; a host that left and answers again re-enters at its place with its record
// as first given, or stands by as a spare when a spare holds its place.
#include <doctest/doctest.h>

#include <hetlaunch/grow_back.hpp>
#include <hetlaunch/hostfile.hpp>
#include <hetlaunch/plan.hpp>

#include <algorithm>
#include <cstddef>
#include <optional>
#include <random>
#include <string>
#include <vector>

namespace {
using place_list = std::vector<std::size_t>;
using host_names = std::vector<std::string>;
using standby = std::vector<hetlaunch::spare_host>;

hetlaunch::restart_options grow_excluding(int restarts) {
  hetlaunch::restart_options o;
  o.restarts = restarts;
  o.exclude_failed = true;
  return o;
}

// Every field of node j of `c` but its host equals node i of `first`.
bool grow_same_record(const hetlaunch::cluster& c, std::size_t j, const hetlaunch::cluster& first,
                      std::size_t i) {
  const hetlaunch::node_spec a = c.node(j), b = first.node(i);
  return a.nproc == b.nproc && a.role == b.role && a.weight == b.weight &&
         a.max_batch == b.max_batch;
}
}  // namespace

TEST_SUITE("growing back") {
  TEST_CASE(
      "a node left out after a failure comes back at its place, with its weight and ceiling") {
    const hetlaunch::cluster first = hetlaunch::parse_hostfile(
                                         "a slots=8 weight=3 max_batch=64\n"
                                         "b slots=4 weight=1 max_batch=16\n"
                                         "c slots=2\n")
                                         .value();
    hetlaunch::job_places p = hetlaunch::places_of(first);
    CHECK(p.places == place_list{0, 1, 2});
    // b fails; --exclude-failed leaves it out.
    const auto d = hetlaunch::decide_restart(grow_excluding(1), 0, first, {1}, false, {});
    REQUIRE(d.restart());
    const hetlaunch::cluster shrunk = hetlaunch::restart_topology(first, d, {});
    p = hetlaunch::places_after_restart(p, d);
    CHECK(p.places == place_list{0, 2});
    CHECK(hetlaunch::hosts_that_left(p, shrunk, {}) == host_names{"b"});
    // Nothing returned: nothing changes.
    CHECK_FALSE(hetlaunch::decide_grow(p, shrunk, {}, {}).grows());
    // A host that never left changes nothing either.
    CHECK_FALSE(hetlaunch::decide_grow(p, shrunk, {}, {"a", "z"}).grows());
    // b answers again.
    const hetlaunch::grow_decision g = hetlaunch::decide_grow(p, shrunk, {}, {"b"});
    REQUIRE(g.grows());
    CHECK(g.readmitted == place_list{1});
    CHECK(g.new_spares.empty());
    const hetlaunch::job_places next = hetlaunch::grow_places(p, g);
    CHECK(next.places == place_list{0, 1, 2});
    const hetlaunch::cluster grown = hetlaunch::grow_topology(p, shrunk, next);
    REQUIRE(grown.node_count() == 3);
    CHECK(grown.node(1).host == "b");
    CHECK(grown.node(1).weight == "1");
    CHECK(grown.max_batch(1) == 16);
    CHECK(grown.world_size() == 14);
    CHECK(grown.rank_offset(2) == 12);
    CHECK(hetlaunch::hosts_that_left(next, grown, {}).empty());
  }

  TEST_CASE("a host whose place a spare holds stands by as a spare, with its node's nproc") {
    const hetlaunch::cluster first = hetlaunch::parse_host_list("a:4,b:2").value();
    const standby pool{{"t", 4}};
    hetlaunch::job_places p = hetlaunch::places_of(first);
    const auto d = hetlaunch::decide_restart(grow_excluding(1), 0, first, {1}, false, pool);
    REQUIRE(d.replaced.size() == 1);
    const hetlaunch::cluster on_spare = hetlaunch::restart_topology(first, d, pool);
    p = hetlaunch::places_after_restart(p, d);
    CHECK(p.places == place_list{0, 1});
    CHECK(on_spare.node(1).host == "t");
    // The spare was used: the pool is empty now, and b left.
    CHECK(hetlaunch::hosts_that_left(p, on_spare, {}) == host_names{"b"});
    const hetlaunch::grow_decision g = hetlaunch::decide_grow(p, on_spare, {}, {"b"});
    CHECK_FALSE(g.grows());
    REQUIRE(g.new_spares.size() == 1);
    CHECK(g.new_spares[0].host == "b");
    CHECK(g.new_spares[0].nproc == 2);
    // Once it stands by, it is no longer a host that left.
    CHECK(hetlaunch::hosts_that_left(p, on_spare, g.new_spares).empty());
  }

  TEST_CASE("node devices come back with their host; a node on a spare keeps the spare's host") {
    hetlaunch::cluster first = hetlaunch::parse_host_list("a:2,b:2,c:2").value();
    first.set_devices(0, {4, 5});
    first.set_devices(1, {2, 3});
    const standby pool{{"t", 2}};
    hetlaunch::job_places p = hetlaunch::places_of(first);
    // a and b fail: the spare takes one place (a, the first to fail), b is left out.
    const auto d = hetlaunch::decide_restart(grow_excluding(2), 0, first, {0, 1}, false, pool);
    REQUIRE(d.restart());
    const hetlaunch::cluster now = hetlaunch::restart_topology(first, d, pool);
    p = hetlaunch::places_after_restart(p, d);
    CHECK(p.places == place_list{0, 2});
    CHECK(now.node(0).host == "t");
    CHECK(hetlaunch::hosts_that_left(p, now, {}) == host_names{"a", "b"});
    const hetlaunch::grow_decision g = hetlaunch::decide_grow(p, now, {}, {"b", "a"});
    CHECK(g.readmitted == place_list{1});
    REQUIRE(g.new_spares.size() == 1);
    CHECK(g.new_spares[0].host == "a");
    const hetlaunch::job_places next = hetlaunch::grow_places(p, g);
    const hetlaunch::cluster grown = hetlaunch::grow_topology(p, now, next);
    REQUIRE(grown.node_count() == 3);
    CHECK(grown.node(0).host == "t");
    CHECK(grown.devices(0).empty());
    CHECK(grown.node(1).host == "b");
    CHECK(grown.devices(1) == std::vector<int>{2, 3});
  }

  TEST_CASE(
      "property: over random failures and returns, every node holds its first record at its "
      "place, on its own host or a spare's, and a job whose hosts all returned is whole again") {
    std::mt19937 rng(41);
    for (int round = 0; round < 2000; ++round) {
      CAPTURE(round);
      const std::size_t n = 1 + rng() % 6;
      std::vector<hetlaunch::node_spec> specs;
      std::vector<std::string> names, weights;
      for (std::size_t i = 0; i < n; ++i) {
        names.push_back(std::string(1, 'h').append(std::to_string(i)));
        weights.push_back(std::to_string(1 + rng() % 3));
      }
      for (std::size_t i = 0; i < n; ++i) {
        hetlaunch::node_spec s{names[i], static_cast<int>(1 + rng() % 4)};
        s.weight = weights[i];
        s.max_batch = static_cast<int>(rng() % 3) * 8;
        specs.push_back(s);
      }
      const hetlaunch::cluster first(specs);
      // The model: each first node's host now (its own, a spare's), or none when it is out.
      std::vector<std::optional<std::string>> held(n);
      for (std::size_t i = 0; i < n; ++i) held[i] = names[i];
      hetlaunch::job_places p = hetlaunch::places_of(first);
      hetlaunch::cluster current = first;
      standby pool;
      int spare_names = 0;
      for (int step = 0; step < 6; ++step) {
        CAPTURE(step);
        if (rng() % 2 == 0) {
          // A failure: some nodes fail, a spare may stand by, the failed ones no spare fits go.
          if (rng() % 2) pool.push_back({"s" + std::to_string(spare_names++), 1 + int(rng() % 4)});
          std::vector<std::size_t> failed;
          for (std::size_t k = 1 + rng() % 2; k > 0; --k)
            failed.push_back(rng() % current.node_count());
          const auto d =
              hetlaunch::decide_restart(grow_excluding(100), 0, current, failed, false, pool);
          if (!d.restart()) continue;
          std::vector<bool> kept(current.node_count(), false);
          for (std::size_t k : d.nodes) kept[k] = true;
          for (std::size_t k = 0; k < current.node_count(); ++k)
            if (!kept[k]) held[p.places[k]].reset();
          for (const auto& x : d.replaced) held[p.places[x.node]] = pool[x.spare].host;
          current = hetlaunch::restart_topology(current, d, pool);
          p = hetlaunch::places_after_restart(p, d);
          standby free;
          for (std::size_t s = 0; s < pool.size(); ++s) {
            bool used = false;
            for (const auto& x : d.replaced) used = used || x.spare == s;
            if (!used) free.push_back(pool[s]);
          }
          pool = free;
        } else {
          // Some of the hosts that left answer again.
          const host_names left = hetlaunch::hosts_that_left(p, current, pool);
          host_names returned;
          for (const std::string& h : left)
            if (rng() % 2) returned.push_back(h);
          const hetlaunch::grow_decision g = hetlaunch::decide_grow(p, current, pool, returned);
          for (std::size_t i = 0; i < n; ++i) {
            const bool back =
                std::find(returned.begin(), returned.end(), names[i]) != returned.end();
            const bool readmitted =
                std::find(g.readmitted.begin(), g.readmitted.end(), i) != g.readmitted.end();
            CHECK(readmitted == (back && !held[i]));
            if (readmitted) held[i] = names[i];
          }
          for (const auto& s : g.new_spares) {
            const std::size_t i = static_cast<std::size_t>(std::stoi(s.host.substr(1)));
            CHECK(std::find(returned.begin(), returned.end(), s.host) != returned.end());
            CHECK(held[i].has_value());
            CHECK(*held[i] != s.host);
            CHECK(s.nproc == first.node(i).nproc);
            pool.push_back(s);
          }
          const hetlaunch::job_places next = hetlaunch::grow_places(p, g);
          current = hetlaunch::grow_topology(p, current, next);
          p = next;
        }
        // Every node at its place, with its first record, on the host the model says.
        REQUIRE(p.places.size() == current.node_count());
        place_list expected;
        for (std::size_t i = 0; i < n; ++i)
          if (held[i]) expected.push_back(i);
        CHECK(p.places == expected);
        for (std::size_t k = 0; k < p.places.size(); ++k) {
          CHECK(grow_same_record(current, k, first, p.places[k]));
          CHECK(current.node(k).host == *held[p.places[k]]);
        }
        // Ranks, world size and shares are a fresh plan's of the same hosts with those records.
        std::vector<hetlaunch::node_spec> fresh_specs;
        for (std::size_t k = 0; k < p.places.size(); ++k) {
          hetlaunch::node_spec s = first.node(p.places[k]);
          s.host = *held[p.places[k]];
          fresh_specs.push_back(s);
        }
        if (!fresh_specs.empty()) {
          const hetlaunch::cluster fresh(fresh_specs);
          hetlaunch::launch_options shares;
          shares.global_batch = static_cast<int>(4 * fresh.world_size());
          const auto a = hetlaunch::make_plan(current, shares);
          const auto b = hetlaunch::make_plan(fresh, shares);
          REQUIRE(a);
          REQUIRE(b);
          CHECK(current.world_size() == fresh.world_size());
          for (std::size_t k = 0; k < fresh.node_count(); ++k) {
            CHECK(current.rank_offset(k) == fresh.rank_offset(k));
            CHECK(a->node_batch_of(k).batch == b->node_batch_of(k).batch);
            CHECK(a->node_batch_of(k).offset == b->node_batch_of(k).offset);
            CHECK(a->topology().max_batch(k) == b->topology().max_batch(k));
          }
        }
        // The hosts that left: the first hosts not held by their own node, not busy elsewhere.
        host_names left;
        for (std::size_t i = 0; i < n; ++i) {
          bool busy = false;
          for (std::size_t k = 0; k < current.node_count(); ++k)
            busy = busy || current.node(k).host == names[i];
          for (const auto& s : pool) busy = busy || s.host == names[i];
          if (!busy) left.push_back(names[i]);
        }
        CHECK(hetlaunch::hosts_that_left(p, current, pool) == left);
      }
      // Every host that left answers: each node out is back, and with no spare holding a place
      // the job is the first one again.
      const hetlaunch::grow_decision all =
          hetlaunch::decide_grow(p, current, pool, hetlaunch::hosts_that_left(p, current, pool));
      const hetlaunch::job_places next = hetlaunch::grow_places(p, all);
      const hetlaunch::cluster whole = hetlaunch::grow_topology(p, current, next);
      bool on_spares = false;
      for (std::size_t k = 0; k < current.node_count(); ++k)
        on_spares = on_spares || current.node(k).host != first.node(p.places[k]).host;
      bool every_host_free = true;  // no host of an out node runs elsewhere or stands by
      for (std::size_t i = 0; i < n; ++i) {
        if (held[i]) continue;
        for (std::size_t k = 0; k < current.node_count(); ++k)
          every_host_free = every_host_free && current.node(k).host != names[i];
        for (const auto& s : pool) every_host_free = every_host_free && s.host != names[i];
      }
      if (!on_spares && every_host_free) {
        REQUIRE(whole.node_count() == n);
        for (std::size_t i = 0; i < n; ++i) {
          CHECK(whole.node(i).host == first.node(i).host);
          CHECK(grow_same_record(whole, i, first, i));
          CHECK(whole.rank_offset(i) == first.rank_offset(i));
        }
      }
    }
  }
}
