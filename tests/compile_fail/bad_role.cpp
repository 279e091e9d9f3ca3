// SPDX-License-Identifier: MIT
// EXPECT-ERROR: invalid topology: a role has a blank
#include <hetlaunch/cluster.hpp>
constexpr auto c = hetlaunch::make_cluster({{"a", 1, "-x"}});
void f() { HETLAUNCH_STATIC_VALIDATE(c); }
