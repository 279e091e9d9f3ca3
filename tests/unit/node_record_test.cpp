// SPDX-License-Identifier: MIT
// One record a node: every function that makes a cluster from a cluster keeps each field of
// each node it keeps (host, nproc, role, weight, ceiling, devices), unless changing that field
// is what it is for.
#include <doctest/doctest.h>

#include <hetlaunch/cluster.hpp>
#include <hetlaunch/device_filter.hpp>
#include <hetlaunch/restart.hpp>

#include <random>
#include <string>
#include <vector>

namespace {
// A cluster of 1 to 6 nodes, every field drawn: roles, weights, ceilings (some none) and, on some
// nodes, device lists.
hetlaunch::cluster random_cluster(std::mt19937& rng) {
  const std::vector<std::string> roles = {"default", "trainer", "eval"};
  const std::vector<std::string> weights = {"1", "2.5", "0.5", "3"};
  std::vector<std::string> hosts;
  const std::size_t n = 1 + rng() % 6;
  for (std::size_t i = 0; i < n; ++i) {
    std::string host = "h";
    host += std::to_string(i);
    hosts.push_back(std::move(host));
  }
  hetlaunch::cluster_builder b;
  for (std::size_t i = 0; i < n; ++i) {
    hetlaunch::node_spec spec{hosts[i], 1 + static_cast<int>(rng() % 4),
                              roles[rng() % roles.size()], weights[rng() % weights.size()],
                              static_cast<int>(rng() % 3) * 4};
    b.add(spec);
  }
  hetlaunch::cluster c = b.finish();
  for (std::size_t i = 0; i < n; ++i)
    if (rng() % 2) {
      std::vector<int> ids;
      for (int d = 0; d < c.nproc(i); ++d) ids.push_back(2 * d + 1);
      c.set_devices(i, ids);
    }
  return c;
}

// Node `to` of `after` is node `from` of `before`, field by field, but for those named changed.
void same_node(const hetlaunch::cluster& before, std::size_t from, const hetlaunch::cluster& after,
               std::size_t to, bool host_changes = false, bool nproc_changes = false,
               bool devices_change = false) {
  const hetlaunch::node_spec a = before.node(from), b = after.node(to);
  CAPTURE(from);
  CAPTURE(to);
  if (!host_changes) CHECK(a.host == b.host);
  if (!nproc_changes) CHECK(a.nproc == b.nproc);
  CHECK(a.role == b.role);
  CHECK(a.weight == b.weight);
  CHECK(a.max_batch == b.max_batch);
  CHECK(before.max_batch(from) == after.max_batch(to));
  if (!devices_change) CHECK(before.devices(from) == after.devices(to));
}
}  // namespace

TEST_SUITE("one record a node") {
  TEST_CASE("cluster_builder::add(node_spec) and cluster::node(i) carry every field") {
    hetlaunch::cluster_builder b;
    b.add(hetlaunch::node_spec{"a", 2, "trainer", "2.5", 7});
    b.add(hetlaunch::node_spec{"b", 1});
    const hetlaunch::cluster c = b.finish();
    CHECK(c.node(0).max_batch == 7);
    CHECK(c.max_batch(0) == 7);
    CHECK(c.node(1).max_batch == 0);
    CHECK(c.node(0).role == "trainer");
    CHECK(c.node(0).weight == "2.5");
    const hetlaunch::cluster listed{{"x", 1, "default", "1", 3}, {"y", 2}};
    CHECK(listed.max_batch(0) == 3);
    CHECK(listed.max_batch(1) == 0);
  }

  TEST_CASE("property: filters, exclusion and restarts keep every field of every node they keep") {
    std::mt19937 rng(48);
    for (int round = 0; round < 400; ++round) {
      const hetlaunch::cluster c = random_cluster(rng);
      const std::size_t n = c.node_count();
      CAPTURE(round);
      // --exclude of one device of node 0, and --include of node 0 whole: the kept nodes keep
      // all but the devices and the count the filter is for.
      const std::string host0(c.node(0).host);
      for (const auto& [include, exclude] :
           {std::pair<std::string, std::string>{
                "", host0 + ":" + std::to_string(c.devices(0).empty() ? 0 : c.devices(0)[0])},
            std::pair<std::string, std::string>{host0, ""}}) {
        const auto filtered = hetlaunch::filter_devices_mapped(c, include, exclude);
        if (!filtered) continue;  // the filter left nothing
        for (std::size_t k = 0; k < filtered->nodes.node_count(); ++k)
          same_node(c, filtered->source_node[k], filtered->nodes, k, false, true, true);
      }
      // Leaving nodes out (--exclude-failed).
      std::vector<std::size_t> keep;
      for (std::size_t i = 0; i < n; ++i)
        if (rng() % 3 || keep.empty()) keep.push_back(i);
      const hetlaunch::cluster kept = hetlaunch::keep_nodes(c, keep);
      REQUIRE(kept.node_count() == keep.size());
      for (std::size_t k = 0; k < keep.size(); ++k) same_node(c, keep[k], kept, k);
      // A restart on spares: a replaced node keeps all but its host and its device list.
      hetlaunch::restart_options options;
      options.restarts = 1;
      options.exclude_failed = true;
      const std::vector<std::size_t> failed = {rng() % n};
      const std::vector<hetlaunch::spare_host> spares = {{"spare", 4}};
      const hetlaunch::restart_decision d =
          hetlaunch::decide_restart(options, 0, c, failed, false, spares);
      REQUIRE(d.restart());
      const hetlaunch::cluster next = hetlaunch::restart_topology(c, d, spares);
      for (std::size_t k = 0; k < d.nodes.size(); ++k) {
        const bool replaced = d.nodes[k] == failed[0];
        same_node(c, d.nodes[k], next, k, replaced, false, replaced);
        if (replaced) CHECK(next.node(k).host == "spare");
      }
    }
  }
}
