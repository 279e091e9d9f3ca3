// SPDX-License-Identifier: MIT
// Prints the rank plan of a heterogeneous cluster: an 8-GPU node, a 4-GPU node and a node with
// 2 GPUs free. The topology is checked at compile time; a typo in it fails the build.
#include <hetlaunch/cluster.hpp>

#include <cstdio>

namespace {
constexpr auto topology = hetlaunch::make_cluster({
    {"gpu-a", 8},  // a full 8-GPU node
    {"gpu-b", 4},  // a 4-GPU node
    {"gpu-c", 2},  // an 8-GPU node with 6 GPUs taken by another job
});
HETLAUNCH_STATIC_VALIDATE(topology);
static_assert(topology.world_size() == 14, "8 + 4 + 2 workers");
}  // namespace

int main() {
  std::printf("world size %d over %zu nodes\n\n", topology.world_size(), topology.node_count());
  std::printf("%-5s %-8s %6s %7s  %s\n", "node", "host", "nproc", "offset", "global ranks");
  for (std::size_t i = 0; i < topology.node_count(); ++i) {
    const hetlaunch::node_spec node = topology.node(i);
    const int first = topology.rank_offset(i);
    std::printf("%-5zu %-8.*s %6d %7d  %d..%d\n", i, static_cast<int>(node.host.size()),
                node.host.data(), node.nproc, first, first, first + node.nproc - 1);
  }
  const hetlaunch::rank_location last = topology.locate(topology.world_size() - 1);
  std::printf("\nglobal rank %d runs on node %zu as local rank %d\n", topology.world_size() - 1,
              last.node, last.local_rank);
  return 0;
}
