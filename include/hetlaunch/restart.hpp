// SPDX-License-Identifier: MIT
// hetlaunch: gang restarts. After a failed attempt the whole job starts again, on the same nodes
// or without the ones that failed; this is the decision and the smaller topology, computed
// without any process (the launcher starts and stops the nodes).
#ifndef HETLAUNCH_RESTART_HPP
#define HETLAUNCH_RESTART_HPP

#include <cstddef>
#include <string_view>
#include <utility>
#include <vector>

#include "cluster.hpp"
#include "launch_options.hpp"

namespace hetlaunch {

/// How a failed job is started again (`hetlaunch run --restarts N [--exclude-failed]
/// [--min-nodes M]`).
struct restart_options {
  /// At most this many restarts after failures: restarts + 1 attempts in all. 0: none.
  int restarts = 0;
  /// Each restart leaves out the nodes that failed (the first one to fail, and every node whose
  /// host could not be reached); the plan is made again over the nodes that remain.
  bool exclude_failed = false;
  /// The fewest nodes the job may shrink to; below it the job fails instead of restarting.
  std::size_t min_nodes = 1;
};

/// Why an attempt is the last, or that it is not.
enum class restart_verdict {
  restart,          ///< start the job again (on `nodes`)
  succeeded,        ///< every node succeeded: done
  interrupted,      ///< stopped by a signal (SIGINT, SIGTERM, SIGHUP): never restarted
  no_restart_left,  ///< the failure came after the last restart allowed
  too_few_nodes,    ///< leaving the failed nodes out would go below min_nodes (or to none)
};

/// What follows an attempt: the verdict, and for a restart the nodes of the next attempt, as
/// indices into the attempt's topology, in their order there.
struct restart_decision {
  restart_verdict verdict = restart_verdict::succeeded;
  std::vector<std::size_t> nodes;
  [[nodiscard]] bool restart() const noexcept { return verdict == restart_verdict::restart; }
};

/// The decision after attempt `restarts_done` (0 for the first) of a job on `node_count` nodes.
/// `failed`: the nodes to blame, the first to fail first, then every node whose host could not
/// be reached (empty when the attempt succeeded); `interrupted`: a signal stopped the job.
/// Without exclude_failed every node stays; with it, the failed nodes are left out. O(N).
[[nodiscard]] inline restart_decision decide_restart(const restart_options& options,
                                                     int restarts_done, std::size_t node_count,
                                                     const std::vector<std::size_t>& failed,
                                                     bool interrupted) {
  restart_decision d;
  if (interrupted) {
    d.verdict = restart_verdict::interrupted;
    return d;
  }
  if (failed.empty()) return d;
  if (restarts_done >= options.restarts) {
    d.verdict = restart_verdict::no_restart_left;
    return d;
  }
  std::vector<bool> out(node_count, false);
  if (options.exclude_failed)
    for (std::size_t i : failed)
      if (i < node_count) out[i] = true;
  for (std::size_t i = 0; i < node_count; ++i)
    if (!out[i]) d.nodes.push_back(i);
  const std::size_t least = options.min_nodes > 0 ? options.min_nodes : 1;
  if (d.nodes.size() < least) {
    d.nodes.clear();
    d.verdict = restart_verdict::too_few_nodes;
    return d;
  }
  d.verdict = restart_verdict::restart;
  return d;
}

/// The topology of the nodes `keep` (indices into `c`, ascending), in their order in `c`, with
/// each node's role, weight and device list. Node indices, rank offsets and the world size are
/// those of the smaller topology. Precondition: every index is below c.node_count(). O(N).
[[nodiscard]] inline cluster keep_nodes(const cluster& c, const std::vector<std::size_t>& keep) {
  cluster_builder builder;
  std::size_t chars = 0;
  for (std::size_t i : keep) {
    detail::expects(i < c.node_count(), "keep_nodes(c, keep): node index out of range");
    chars += c.node(i).host.size();
  }
  builder.reserve(keep.size(), chars);
  for (std::size_t i : keep) {
    const node_spec n = c.node(i);
    builder.add(n.host, n.nproc, n.role, n.weight);
  }
  cluster out = builder.finish();
  for (std::size_t k = 0; k < keep.size(); ++k)
    if (!c.devices(keep[k]).empty()) out.set_devices(k, c.devices(keep[k]));
  return out;
}

/// Whether the rendezvous address given in `o` (master_addr, or c10d's endpoint host) must move
/// when only the nodes `keep` (indices into `before`, ascending) of `before` remain. Node 0 hosts
/// the static rendezvous, and c10d's store when the endpoint names it. The address points at a
/// node left out when it is the host of a node left out, or when node 0 is left out and the
/// address is the host of no node that remains (node 0's fast-network address, say): every
/// agent of the restart would wait for that node. It then becomes the new node 0's host (clear
/// master_addr). An address not given (empty) is node 0's host already: it never moves. O(N).
[[nodiscard]] inline bool rendezvous_moves(const cluster& before,
                                           const std::vector<std::size_t>& keep,
                                           const launch_options& o) {
  if (o.master_addr.empty() || before.node_count() == 0) return false;
  const std::string_view addr = detail::unbracketed(o.master_addr);
  std::vector<bool> kept(before.node_count(), false);
  for (std::size_t i : keep)
    if (i < kept.size()) kept[i] = true;
  bool names_left_out = false, names_kept = false;
  for (std::size_t i = 0; i < kept.size(); ++i)
    if (before.node(i).host == addr) (kept[i] ? names_kept : names_left_out) = true;
  return names_left_out || (!kept[0] && !names_kept);
}

}  // namespace hetlaunch

#endif  // HETLAUNCH_RESTART_HPP
