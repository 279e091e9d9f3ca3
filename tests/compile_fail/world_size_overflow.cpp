// SPDX-License-Identifier: MIT
// EXPECT-ERROR: invalid topology: the world size exceeds INT_MAX
#include <hetlaunch/cluster.hpp>
constexpr auto c = hetlaunch::make_cluster({{"a", 2147483647}, {"b", 1}});
HETLAUNCH_STATIC_VALIDATE(c);
