// SPDX-License-Identifier: MIT
// worker_check.hpp: a worker's actual environment against the plan.
#include <doctest/doctest.h>

#include <hetlaunch/plan.hpp>
#include <hetlaunch/worker_check.hpp>

#include "../support/launch_fixtures.hpp"

#include <cstdlib>
#include <string>
#include <vector>

using hetlaunch::cluster;
using hetlaunch::environment;
using test_support::strings;
using test_support::train;

TEST_SUITE("worker check") {
  TEST_CASE("check_worker_env names each disagreement with the plan") {
    const cluster c{{"gpu-a", 8}, {"gpu-b", 4}};
    // Node 1 started with --nproc_per_node=3 instead of 4: its workers see a world of 11.
    const environment got{{"WORLD_SIZE", "11"},
                          {"GROUP_RANK", "1"},
                          {"LOCAL_WORLD_SIZE", "3"},
                          {"RANK", "10"},
                          {"LOCAL_RANK", "2"}};
    strings messages;
    for (const auto& d : hetlaunch::check_worker_env(c, got)) messages.push_back(d.message());
    CHECK(
        messages ==
        strings{
            "WORLD_SIZE is 11 but the plan's world size is 12",
            "node 1 ('gpu-b'): started with LOCAL_WORLD_SIZE 3 (--nproc_per_node), but the plan gives it 4 workers",
        });
    const environment planned = hetlaunch::worker_env(c, 1, 2, train());
    CHECK(hetlaunch::check_worker_env(c, planned).empty());
    const environment odd{{"WORLD_SIZE", "x"},
                          {"GROUP_RANK", "7"},
                          {"LOCAL_WORLD_SIZE", "4"},
                          {"RANK", "1"},
                          {"TORCH_ELASTIC_WORKER_IDENTICAL", "1"}};
    messages.clear();
    for (const auto& d : hetlaunch::check_worker_env(c, odd)) messages.push_back(d.message());
    CHECK(
        messages ==
        strings{
            "WORLD_SIZE='x' is not an integer",
            "LOCAL_RANK is not set; was this process started by torchrun (or with worker_env)?",
            "TORCH_ELASTIC_WORKER_IDENTICAL=1 makes torchrun assume every node runs this node's worker count, which breaks RANK and WORLD_SIZE when nodes differ; unset it",
            "GROUP_RANK 7 is not a node of the plan, which has 2 nodes",
        });
    const environment wrong_rank{{"WORLD_SIZE", "12"},
                                 {"GROUP_RANK", "1"},
                                 {"LOCAL_WORLD_SIZE", "4"},
                                 {"RANK", "3"},
                                 {"LOCAL_RANK", "3"}};
    CHECK(hetlaunch::check_worker_env(c, wrong_rank).front().message() ==
          "node 1 ('gpu-b'): RANK is 3 but the plan gives LOCAL_RANK 3 the global rank 11");
  }
  TEST_CASE("check_worker_env(c, std::getenv) is unambiguous under using namespace hetlaunch") {
    using namespace hetlaunch;  // argument-dependent lookup must not find an internal overload too
    const cluster one{{"a", 1}};
    const auto problems = check_worker_env(one, [](const char*) -> const char* { return nullptr; });
    CHECK(problems.size() == 5);  // WORLD_SIZE GROUP_RANK LOCAL_WORLD_SIZE RANK LOCAL_RANK missing
    CHECK(check_worker_env(one, std::getenv).size() < 10);  // the point: this call compiles
  }
}
