// SPDX-License-Identifier: MIT
// EXPECT-ERROR: invalid topology: a role is empty
#include <hetlaunch/cluster.hpp>
constexpr auto c = hetlaunch::make_cluster({{"a", 1, ""}});
HETLAUNCH_STATIC_VALIDATE(c);
