// SPDX-License-Identifier: MIT
// hetlaunch: node_spec and rank_location, the value types of a topology.
#ifndef HETLAUNCH_NODE_SPEC_HPP
#define HETLAUNCH_NODE_SPEC_HPP

#include <cstddef>
#include <string_view>

namespace hetlaunch {

/// One node of a topology: a literal type, so `{{"node0", 8}, {"node1", 4}}` is a constant.
struct node_spec {
  std::string_view host;              ///< where the node's torchrun agent runs
  int nproc = 0;                      ///< workers on this node (torchrun --nproc_per_node)
  std::string_view role = "default";  ///< torchrun --role; ROLE_RANK counts within a role
  /// The relative speed of one of this node's workers, as an exact decimal ("2.5"): its share
  /// of a global batch (see shares.hpp). Only the split of a global batch reads it.
  std::string_view weight = "1";
  /// The most samples one of this node's workers takes in one forward (its memory ceiling), or
  /// 0 for none. A cluster made from a cluster (cluster_builder::add(node_spec)) keeps it with
  /// the rest of the node.
  int max_batch = 0;
};

/// Where a global rank lives: node index and local rank on that node.
struct rank_location {
  std::size_t node = 0;
  int local_rank = 0;
  friend constexpr bool operator==(const rank_location& a, const rank_location& b) noexcept {
    return a.node == b.node && a.local_rank == b.local_rank;
  }
  friend constexpr bool operator!=(const rank_location& a, const rank_location& b) noexcept {
    return !(a == b);
  }
};

}  // namespace hetlaunch

#endif  // HETLAUNCH_NODE_SPEC_HPP
