// SPDX-License-Identifier: MIT
// A program that uses hetlaunch the way a consumer does; every way of use builds and runs it.
#include <hetlaunch/cluster.hpp>

#include <cstdio>

constexpr auto c = hetlaunch::make_cluster({{"node0", 8}, {"node1", 4}, {"node2", 2}});
HETLAUNCH_STATIC_VALIDATE(c);

int main() {
  const hetlaunch::cluster runtime(c);
  const bool ok = runtime.world_size() == 14 &&
                  runtime.locate(13) == hetlaunch::rank_location{2, 1} && HETLAUNCH_VERSION >= 100;
  std::printf("consumer: world size %d, %s\n", runtime.world_size(), ok ? "ok" : "WRONG");
  return ok ? 0 : 1;
}
