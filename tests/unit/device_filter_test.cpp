// SPDX-License-Identifier: MIT
// device_filter.hpp: DeepSpeed's --include/--exclude filters, their documented meaning where
// DeepSpeed's code lost it, and the devices a filtered node's workers see.
#include <doctest/doctest.h>

#include <hetlaunch/device_filter.hpp>
#include <hetlaunch/torchrun.hpp>

#include "../support/cluster_layout.hpp"

#include <string>

using hetlaunch::cluster;
using test_support::layout;

TEST_SUITE("device filters") {
  TEST_CASE("include/exclude filters select devices per node") {
    const cluster pool{{"worker-0", 4}, {"worker-1", 4}};
    CHECK(layout(hetlaunch::filter_devices(pool, "worker-0@worker-1:0,2")) ==
          "worker-0:4[0,1,2,3] worker-1:2[0,2]");
    CHECK(layout(hetlaunch::filter_devices(pool, "worker-1:2,0@worker-1:2")) == "worker-1:2[0,2]");
    CHECK(layout(hetlaunch::filter_devices(pool, "", "worker-1:0")) ==
          "worker-0:4[0,1,2,3] worker-1:3[1,2,3]");
    CHECK(layout(hetlaunch::filter_devices(pool, "", "worker-0")) == "worker-1:4[0,1,2,3]");
  }
  TEST_CASE("the upstream mistakes are errors or fixed") {
    const cluster pool{{"worker-0", 4}, {"worker-1", 4}};
    // DeepSpeed >= 0.15.2 selects nothing for a bare host; the documented meaning is all devices.
    CHECK(layout(hetlaunch::filter_devices(pool, "worker-0")) == "worker-0:4[0,1,2,3]");
    // DeepSpeed accepts a device the host does not have.
    CHECK(layout(hetlaunch::filter_devices(pool, "worker-0:7")) ==
          "ERR 1:10: device 7 is not on host 'worker-0', which has devices 0,1,2,3");
    CHECK(layout(hetlaunch::filter_devices(pool, "nope")) ==
          "ERR 1:1: host 'nope' is not in the cluster");
    CHECK(layout(hetlaunch::filter_devices(pool, "worker-0:")) ==
          "ERR 1:10: device id must be a non-negative integer, got ''");
    CHECK(layout(hetlaunch::filter_devices(pool, "worker-0:-1")) ==
          "ERR 1:10: device id must be a non-negative integer, got '-1'");
    CHECK(layout(hetlaunch::filter_devices(pool, "worker-0@")) ==
          "ERR 1:10: empty node spec; expected host or host:0,1");
    CHECK(layout(hetlaunch::filter_devices(pool, "a", "b")) ==
          "ERR 1:1: include and exclude are mutually exclusive");
    CHECK(layout(hetlaunch::filter_devices(pool, "", "worker-0@worker-1")) ==
          "ERR 1:1: the filter leaves no devices");
  }
  TEST_CASE("a filtered node's workers see the node's devices, as under torchrun") {
    const cluster pool{{"worker-0", 4}, {"worker-1", 4}};
    const cluster picked = *hetlaunch::filter_devices(pool, "worker-1:1,3");
    hetlaunch::launch_options o;
    o.script = "train.py";
    std::string visible;
    for (const auto& v : hetlaunch::worker_env(picked, 0, 1, o))
      if (v.first == "CUDA_VISIBLE_DEVICES") visible = v.second;
    CHECK(visible == "1,3");
    CHECK(hetlaunch::agent_env(picked, 0) ==
          hetlaunch::environment{{"CUDA_VISIBLE_DEVICES", "1,3"}});
    CHECK(hetlaunch::agent_env(pool, 0).empty());
  }
}
