// SPDX-License-Identifier: MIT
// EXPECT-ERROR: invalid topology: a weight is not a decimal above 0
#include <hetlaunch/cluster.hpp>
constexpr auto c = hetlaunch::make_cluster({{"a", 8, "default", "3"}, {"b", 4, "default", "1e-3"}});
void f() { HETLAUNCH_STATIC_VALIDATE(c); }
