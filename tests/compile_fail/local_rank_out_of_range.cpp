// SPDX-License-Identifier: MIT
// EXPECT-ERROR: global_rank\(i, local_rank\): local rank out of range
#include <hetlaunch/cluster.hpp>
constexpr auto c = hetlaunch::make_cluster({{"a", 8}, {"b", 4}});
static_assert(c.global_rank(1, 4) == 12, "");
