// SPDX-License-Identifier: MIT
// EXPECT-ERROR: invalid topology: nproc must be at least 1
#include <hetlaunch/cluster.hpp>
constexpr auto c = hetlaunch::make_cluster({{"gpu-a", 8}, {"gpu-b", 0}});
HETLAUNCH_STATIC_VALIDATE(c);
