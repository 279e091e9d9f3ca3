// SPDX-License-Identifier: MIT
// EXPECT-ERROR: locate\(global_rank\): global rank out of range
#include <hetlaunch/cluster.hpp>
constexpr auto c = hetlaunch::make_cluster({{"a", 8}, {"b", 4}});
static_assert(c.locate(12).node == 1, "");
