// SPDX-License-Identifier: MIT
// EXPECT-ERROR: invalid topology: the cluster has no nodes
#include <hetlaunch/cluster.hpp>
constexpr hetlaunch::fixed_cluster<0> c{};
HETLAUNCH_STATIC_VALIDATE(c);
