// SPDX-License-Identifier: MIT
// EXPECT-ERROR: nproc\(i\): node index out of range
#include <hetlaunch/cluster.hpp>
constexpr auto c = hetlaunch::make_cluster({{"a", 8}, {"b", 4}});
static_assert(c.nproc(2) == 1, "");
