// SPDX-License-Identifier: MIT
// accelerate.hpp: each machine's `accelerate launch` for a mixed job.
#include <doctest/doctest.h>

#include <hetlaunch/accelerate.hpp>
#include <hetlaunch/plan.hpp>

#include "../support/launch_fixtures.hpp"

#include <string>
#include <vector>

using hetlaunch::cluster;
using hetlaunch::launch_options;
using test_support::strings;
using test_support::train;

TEST_SUITE("accelerate") {
  TEST_CASE("accelerate: num_processes is this machine's count times the machine count") {
    launch_options o = train();
    o.master_addr = "gpu-a";
    CHECK(hetlaunch::accelerate_argv(cluster{{"gpu-a", 8}, {"gpu-b", 2}}, 1, o) ==
          strings{"accelerate",  "launch",
                  "--multi_gpu", "--num_machines",
                  "2",           "--machine_rank",
                  "1",           "--num_processes",
                  "4",           "--main_process_ip",
                  "gpu-a",       "--main_process_port",
                  "29500",       "--rdzv_backend",
                  "static",      "--max_restarts",
                  "0",           "train.py",
                  "--epochs",    "3"});
    CHECK(hetlaunch::try_accelerate_argv(cluster{{"solo", 1}}, 0, o).error().code ==
          hetlaunch::errc::too_few_processes);
  }
}
