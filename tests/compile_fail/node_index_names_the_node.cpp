// SPDX-License-Identifier: MIT
// EXPECT-ERROR: static_validation<hetlaunch::errc::bad_nproc, 2
#include <hetlaunch/cluster.hpp>
constexpr auto c = hetlaunch::make_cluster({{"a", 8}, {"b", 4}, {"c", -1}});
HETLAUNCH_STATIC_VALIDATE(c);
