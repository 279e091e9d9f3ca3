// SPDX-License-Identifier: MIT
// launch_options.hpp: the options' problems before the nodes are known (a batch script's) are
// exactly those validate_plan finds once the nodes are known, whatever nodes they turn out to be.
#include <doctest/doctest.h>

#include <hetlaunch/launch_options.hpp>
#include <hetlaunch/plan.hpp>

#include <functional>
#include <string>
#include <vector>

namespace {

std::vector<hetlaunch::errc> codes(const std::vector<hetlaunch::diagnostic>& problems) {
  std::vector<hetlaunch::errc> out;
  for (const auto& d : problems) out.push_back(d.code);
  return out;
}

// One change to valid options each: every check that does not depend on the hosts.
std::vector<std::function<void(hetlaunch::launch_options&)>> option_changes() {
  using o_t = hetlaunch::launch_options;
  return {
      [](o_t&) {},
      [](o_t& o) { o.master_port = 0; },
      [](o_t& o) { o.master_port = 70000; },
      [](o_t& o) { o.master_addr = "a b"; },
      [](o_t& o) { o.master_addr = "198.18.0.1"; },
      [](o_t& o) { o.backend = hetlaunch::rendezvous::c10d; },
      [](o_t& o) {
        o.backend = hetlaunch::rendezvous::c10d;
        o.rdzv_id = "job-1";
      },
      [](o_t& o) { o.max_restarts = -1; },
      [](o_t& o) { o.global_batch = -4; },
      [](o_t& o) { o.global_batch = 5; },
      [](o_t& o) { o.global_batch = 6; },
      [](o_t& o) { o.program.clear(); },
      [](o_t& o) { o.rendezvous_timeout = -1; },
      [](o_t& o) {
        o.flags = hetlaunch::flag_style::dash;
        o.torch = {1, 13};
      },
      [](o_t& o) { o.torchrun_args = {"--nnodes=3"}; },
      [](o_t& o) { o.script = "-x"; },
      [](o_t& o) {
        o.binding = hetlaunch::numa_binding::node;
        o.torchrun_args = {"--run-path"};
      },
      [](o_t& o) {
        o.master_port = 0;
        o.global_batch = 2;
        o.script = "-x";
      },
  };
}

}  // namespace

TEST_SUITE("launch options") {
  TEST_CASE("property: the problems before the nodes are known are those of every topology") {
    // Topologies of world size 6 in several shapes, hosts and roles.
    const std::vector<hetlaunch::cluster> topologies = {
        hetlaunch::cluster{{"a", 6}},
        hetlaunch::cluster{{"a", 4}, {"b", 2}},
        hetlaunch::cluster{{"198.18.0.1", 1}, {"198.18.0.2", 2}, {"198.18.0.3", 3}},
        hetlaunch::cluster{{"x-1", 2}, {"x-2", 2}, {"x-3", 1}, {"x-4", 1}},
    };
    for (const auto& change : option_changes()) {
      hetlaunch::launch_options o;
      o.script = "train.py";
      change(o);
      const auto before = codes(hetlaunch::launch_option_problems(o, 6));
      for (const auto& c : topologies) {
        REQUIRE(c.world_size() == 6);
        CHECK(before == codes(hetlaunch::validate_plan(c, o)));
        CHECK(before == codes(hetlaunch::launch_option_problems(c, o)));
      }
    }
  }

  TEST_CASE("a global batch is checked against the world size given") {
    hetlaunch::launch_options o;
    o.script = "train.py";
    o.global_batch = 8;
    CHECK(hetlaunch::launch_option_problems(o, 8).empty());
    const auto problems = hetlaunch::launch_option_problems(o, 9);
    REQUIRE(problems.size() == 1);
    CHECK(problems.front().code == hetlaunch::errc::global_batch_too_small);
    CHECK(problems.front().limit == 9);
  }
}
