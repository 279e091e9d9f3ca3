// SPDX-License-Identifier: MIT
// numa_binding.hpp: the binding modes by torchrun's names.
#include <doctest/doctest.h>

#include <hetlaunch/numa_binding.hpp>

using hetlaunch::numa_binding;

TEST_SUITE("NUMA binding modes") {
  TEST_CASE("mode names are torchrun's") {
    for (numa_binding mode : {numa_binding::node, numa_binding::socket, numa_binding::exclusive,
                              numa_binding::core_complex})
      CHECK(hetlaunch::numa_binding_from_name(hetlaunch::numa_binding_name(mode)) == mode);
    CHECK(hetlaunch::numa_binding_name(numa_binding::core_complex) == "core-complex");
    CHECK(!hetlaunch::numa_binding_from_name("core_complex"));
    static_assert(hetlaunch::numa_binding_from_name("socket") == numa_binding::socket);
  }
}
