// SPDX-License-Identifier: MIT
// EXPECT-ERROR: invalid topology: duplicate host
#include <hetlaunch/cluster.hpp>
constexpr auto c = hetlaunch::make_cluster({{"gpu-a", 8}, {"GPU-A", 4}});
HETLAUNCH_STATIC_VALIDATE(c);
