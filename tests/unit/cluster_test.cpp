// SPDX-License-Identifier: MIT
// cluster: the run-time topology owns its strings, and every way of building one agrees.
#include <doctest/doctest.h>

#include <hetlaunch/cluster.hpp>

#include <string>
#include <vector>

using hetlaunch::cluster;

namespace {
// The worked example of the design: 8 + 4 + 2 workers.
constexpr auto fixed_example = hetlaunch::make_cluster({{"node0", 8}, {"node1", 4}, {"node2", 2}});
}  // namespace

TEST_SUITE("cluster") {
  TEST_CASE("a run-time cluster owns its strings") {
    std::vector<std::string> names = {"alpha-node-with-a-long-name-0", "b"};
    std::vector<hetlaunch::node_spec> specs;
    for (const auto& n : names) specs.push_back({n, 2});
    cluster c(specs);
    names.assign(2, std::string(40, 'x'));  // the original storage is overwritten
    CHECK(c.node(0).host == "alpha-node-with-a-long-name-0");
    CHECK(c.node(1).host == "b");
    cluster moved = std::move(c);
    cluster copied = moved;
    CHECK(copied.node(0).host == "alpha-node-with-a-long-name-0");
    CHECK(moved.node(1).host == "b");
    CHECK(copied.role_world_size(0) == 4);
  }

  TEST_CASE("a run-time cluster from an initializer list, a vector and a fixed_cluster agree") {
    const cluster a{{"node0", 8}, {"node1", 4}, {"node2", 2}};
    const cluster b(std::vector<hetlaunch::node_spec>{{"node0", 8}, {"node1", 4}, {"node2", 2}});
    const cluster c(fixed_example);
    for (const cluster* x : {&a, &b, &c}) {
      CHECK(x->node_count() == 3);
      CHECK(x->world_size() == 14);
      CHECK(x->nodes().size() == 3);
      for (int g = 0; g < 14; ++g) CHECK(x->locate(g) == fixed_example.locate(g));
    }
  }
}

TEST_CASE(
    "cluster::nodes() is a view like fixed_cluster::nodes(), and a cluster built from it keeps devices") {
  hetlaunch::cluster c{{"a", 2}, {"b", 1, "ps"}};
  c.set_devices(0, {3, 5});
  const auto nodes = c.nodes();
  CHECK(nodes.size() == 2);
  CHECK(nodes[1].role == "ps");
  std::size_t seen = 0;
  for (const hetlaunch::node_spec spec : nodes) CHECK(spec.nproc == c.nproc(seen++));
  const hetlaunch::cluster copy(c.nodes());
  CHECK(copy.devices(0) == std::vector<int>{3, 5});
  CHECK(copy.node(1).role == "ps");
  const std::vector<hetlaunch::node_spec> specs = c.nodes();  // a list of specs, when one is wanted
  CHECK(specs.size() == 2);
  CHECK(specs[0].host == "a");
}
