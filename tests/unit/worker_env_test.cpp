// SPDX-License-Identifier: MIT
// worker_env.hpp: each worker's environment as torchrun gives it, what torchrun passes on
// from its own environment, and what it decides only when a worker starts.
#include <doctest/doctest.h>

#include <hetlaunch/plan.hpp>
#include <hetlaunch/worker_env.hpp>

#include "../support/launch_fixtures.hpp"

#include <string>
#include <vector>

using hetlaunch::cluster;
using hetlaunch::environment;
using hetlaunch::launch_options;
using test_support::train;
using test_support::value_of;

TEST_SUITE("worker environment") {
  TEST_CASE("worker environment: torchrun's variables for a heterogeneous job") {
    const cluster c{{"gpu-a", 3}, {"gpu-b", 1}};
    launch_options o = train();
    o.master_addr = "127.0.0.1";
    o.master_port = 29612;
    o.rdzv_id = "job1";
    o.torch = {1, 13};
    CHECK(hetlaunch::worker_env(c, 0, 2, o) == environment{{"LOCAL_RANK", "2"},
                                                           {"RANK", "2"},
                                                           {"GROUP_RANK", "0"},
                                                           {"ROLE_RANK", "2"},
                                                           {"ROLE_NAME", "default"},
                                                           {"LOCAL_WORLD_SIZE", "3"},
                                                           {"WORLD_SIZE", "4"},
                                                           {"GROUP_WORLD_SIZE", "2"},
                                                           {"ROLE_WORLD_SIZE", "4"},
                                                           {"MASTER_ADDR", "127.0.0.1"},
                                                           {"MASTER_PORT", "29612"},
                                                           {"TORCHELASTIC_RESTART_COUNT", "0"},
                                                           {"TORCHELASTIC_MAX_RESTARTS", "0"},
                                                           {"TORCHELASTIC_RUN_ID", "job1"},
                                                           {"TORCHELASTIC_USE_AGENT_STORE", "True"},
                                                           {"NCCL_ASYNC_ERROR_HANDLING", "1"},
                                                           {"OMP_NUM_THREADS", "1"}});
    // A one-worker node: torchrun leaves OMP_NUM_THREADS unset there.
    const environment single = hetlaunch::worker_env(c, 1, 0, o, 1);
    CHECK(value_of(single, "RANK") == "3");
    CHECK(value_of(single, "GROUP_RANK") == "1");
    CHECK(value_of(single, "LOCAL_WORLD_SIZE") == "1");
    CHECK(value_of(single, "OMP_NUM_THREADS") == "<unset>");
    CHECK(value_of(single, "TORCHELASTIC_RESTART_COUNT") == "1");
    o.torch = {2, 2};
    CHECK(value_of(hetlaunch::worker_env(c, 1, 0, o), "TORCH_NCCL_ASYNC_ERROR_HANDLING") == "1");
    CHECK(value_of(hetlaunch::worker_env(c, 1, 0, o), "NCCL_ASYNC_ERROR_HANDLING") == "<unset>");
    CHECK(hetlaunch::try_worker_env(c, 1, 1, o).error().code ==
          hetlaunch::errc::local_rank_out_of_range);
  }
  TEST_CASE("worker_env_from_agent: what torchrun passes on from its own environment") {
    const cluster c{{"gpu-a", 2}, {"gpu-b", 1}};
    launch_options o = train();
    o.torch = {2, 14};
    const environment agent{{"TORCH_NCCL_ASYNC_ERROR_HANDLING", "3"},
                            {"OMP_NUM_THREADS", "8"},
                            {"PET_SIGNALS_TO_HANDLE", "SIGTERM,SIGUSR1"},
                            {"PATH", "/usr/bin"}};
    const environment e = hetlaunch::worker_env_from_agent(c, 1, 0, o, agent);
    CHECK(value_of(e, "TORCH_NCCL_ASYNC_ERROR_HANDLING") == "3");
    CHECK(value_of(e, "OMP_NUM_THREADS") == "8");  // kept, even on a one-worker node
    CHECK(value_of(e, "TORCHELASTIC_SIGNALS_TO_HANDLE") == "SIGTERM,SIGUSR1");
    CHECK(value_of(e, "PATH") == "<unset>");  // passed on unchanged: not torchrun's
    // An explicit --signals-to-handle wins over the agent's PET_ default.
    o.torchrun_args = {"--signals-to-handle=SIGINT"};
    CHECK(value_of(hetlaunch::worker_env_from_agent(c, 1, 0, o, agent),
                   "TORCHELASTIC_SIGNALS_TO_HANDLE") == "SIGINT");
    // Before torch 2.2 the variable has its old name, and the agent's old name is passed on.
    o.torch = {1, 13};
    o.torchrun_args = {};
    const environment old =
        hetlaunch::worker_env_from_agent(c, 0, 1, o, {{"NCCL_ASYNC_ERROR_HANDLING", "0"}});
    CHECK(value_of(old, "NCCL_ASYNC_ERROR_HANDLING") == "0");
    CHECK(value_of(old, "OMP_NUM_THREADS") == "1");
    // With an empty agent environment it is worker_env.
    CHECK(hetlaunch::worker_env_from_agent(c, 0, 1, o, {}) == hetlaunch::worker_env(c, 0, 1, o));
    CHECK(hetlaunch::try_worker_env_from_agent(c, 1, 1, o, agent).error().code ==
          hetlaunch::errc::local_rank_out_of_range);
  }
  TEST_CASE("worker_runtime_variables: TORCHELASTIC_ERROR_FILE's value is decided at start") {
    launch_options o = train();
    const auto vars = hetlaunch::worker_runtime_variables(2, o, 1);
    REQUIRE(vars.size() == 1);
    CHECK(vars[0].name == "TORCHELASTIC_ERROR_FILE");
    CHECK(vars[0].pattern == "*/attempt_1/2/error.json");
    o.torchrun_args = {"--log-dir", "/dev/null"};
    CHECK(hetlaunch::worker_runtime_variables(0, o)[0].pattern.empty());
    o.torch = {1, 13};
    CHECK(hetlaunch::worker_runtime_variables(0, o)[0].pattern == "*/attempt_0/0/error.json");
  }
  TEST_CASE("roles: ROLE_RANK and ROLE_WORLD_SIZE count within a role") {
    const cluster c{{"t0", 2, "trainer"}, {"p0", 3, "ps"}, {"t1", 4, "trainer"}};
    const environment e = hetlaunch::worker_env(c, 2, 1, train());
    CHECK(value_of(e, "RANK") == "6");
    CHECK(value_of(e, "ROLE_RANK") == "3");
    CHECK(value_of(e, "ROLE_WORLD_SIZE") == "6");
    CHECK(value_of(e, "ROLE_NAME") == "trainer");
    CHECK(value_of(e, "MASTER_ADDR") == "t0");
  }
}
