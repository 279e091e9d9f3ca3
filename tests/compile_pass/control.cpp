// SPDX-License-Identifier: MIT
// The control of the compile-fail harness: the same path must compile this file, so a broken
// harness (wrong flags, missing include path) cannot make every compile-fail test pass.
#include <hetlaunch/cluster.hpp>
constexpr auto c = hetlaunch::make_cluster({{"gpu-a", 8}, {"gpu-b", 4}});
HETLAUNCH_STATIC_VALIDATE(c);
static_assert(c.locate(11) == hetlaunch::rank_location{1, 3}, "");
