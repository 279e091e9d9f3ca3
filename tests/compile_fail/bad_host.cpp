// SPDX-License-Identifier: MIT
// EXPECT-ERROR: invalid topology: a host is not a valid RFC 1123 name or IP literal
#include <hetlaunch/cluster.hpp>
constexpr auto c = hetlaunch::make_cluster({{"gpu-a;rm -rf /", 8}});
HETLAUNCH_STATIC_VALIDATE(c);
