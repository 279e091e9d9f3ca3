// SPDX-License-Identifier: MIT
// hetlaunch: nodes of one shape, for a scheduler that picks the hosts itself (a JobSet's pods, a
// Slurm batch job's components): the job is known by its groups, the hosts only when it runs.
#ifndef HETLAUNCH_NODE_GROUP_HPP
#define HETLAUNCH_NODE_GROUP_HPP

#include <string>
#include <utility>
#include <vector>

namespace hetlaunch {

/// Nodes of one shape: `nodes` nodes (pods), each running `gpus` workers and asking for that
/// many GPUs.
struct node_group {
  int nodes = 1;
  int gpus = 1;
  /// The pods' nodeSelector (for example {"nvidia.com/gpu.product", "NVIDIA-A100-SXM4-80GB"});
  /// JobSet only.
  std::vector<std::pair<std::string, std::string>> node_selector;
  /// Each node's weight (node_spec::weight): its workers' share of a global batch.
  std::string weight = "1";
};

}  // namespace hetlaunch

#endif  // HETLAUNCH_NODE_GROUP_HPP
