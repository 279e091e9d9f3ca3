// SPDX-License-Identifier: MIT
// hetlaunch: gang restarts. After a failed attempt the whole job starts again, on the same nodes
// or without the ones that failed; this is the decision and the smaller topology, computed
// without any process (the launcher starts and stops the nodes).
#ifndef HETLAUNCH_RESTART_HPP
#define HETLAUNCH_RESTART_HPP

#include <algorithm>
#include <cstddef>
#include <string>
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

/// A host that stands by (`hetlaunch run --spare HOSTS`): at a restart it takes the place of a
/// failed node of at most its worker count.
struct spare_host {
  std::string host;
  /// Its worker count. 0: not known yet (a slots=auto spare not asked): it replaces no node.
  int nproc = 0;
};

/// A failed node whose place a spare takes in the next attempt.
struct node_replacement {
  std::size_t node;   ///< the failed node, an index into the attempt's topology
  std::size_t spare;  ///< an index into the spares given to decide_restart
  friend bool operator==(const node_replacement& a, const node_replacement& b) noexcept {
    return a.node == b.node && a.spare == b.spare;
  }
};

/// What follows an attempt: the verdict, and for a restart the nodes of the next attempt, as
/// indices into the attempt's topology, in their order there, and the spares that replace some
/// of them (ascending by node).
struct restart_decision {
  restart_verdict verdict = restart_verdict::succeeded;
  std::vector<std::size_t> nodes;
  std::vector<node_replacement> replaced;
  [[nodiscard]] bool restart() const noexcept { return verdict == restart_verdict::restart; }
};

namespace detail {
// The decision, with each node's worker count given by nproc_of(i) (spares fit by it).
template <class NprocOf>
restart_decision decide_restart(const restart_options& options, int restarts_done,
                                std::size_t node_count, NprocOf nproc_of,
                                const std::vector<std::size_t>& failed, bool interrupted,
                                const std::vector<spare_host>& spares) {
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
  std::vector<bool> blamed(node_count, false);
  std::vector<std::size_t> blamed_nodes;  // each once, in the order of `failed`
  for (std::size_t i : failed)
    if (i < node_count && !blamed[i]) blamed[i] = true, blamed_nodes.push_back(i);
  // The most failed nodes a spare can replace: the nodes by worker count (fewest first), each
  // taking the smallest spare that still fits; every spare passed over is too small for the
  // nodes that follow too. Ties go to the node that failed first and the spare given first.
  std::vector<std::size_t> by_size = blamed_nodes, spare_order;
  std::stable_sort(by_size.begin(), by_size.end(),
                   [&](std::size_t a, std::size_t b) { return nproc_of(a) < nproc_of(b); });
  for (std::size_t s = 0; s < spares.size(); ++s)
    if (spares[s].nproc > 0) spare_order.push_back(s);
  std::stable_sort(spare_order.begin(), spare_order.end(),
                   [&](std::size_t a, std::size_t b) { return spares[a].nproc < spares[b].nproc; });
  std::size_t next_spare = 0;
  for (std::size_t i : by_size) {
    while (next_spare < spare_order.size() && spares[spare_order[next_spare]].nproc < nproc_of(i))
      ++next_spare;
    if (next_spare == spare_order.size()) break;
    d.replaced.push_back({i, spare_order[next_spare++]});
    blamed[i] = false;  // it stays, on its spare
  }
  std::sort(d.replaced.begin(), d.replaced.end(),
            [](const node_replacement& a, const node_replacement& b) { return a.node < b.node; });
  for (std::size_t i = 0; i < node_count; ++i)
    if (!(options.exclude_failed && blamed[i])) d.nodes.push_back(i);
  const std::size_t least = options.min_nodes > 0 ? options.min_nodes : 1;
  if (d.nodes.size() < least) {
    d.nodes.clear();
    d.replaced.clear();
    d.verdict = restart_verdict::too_few_nodes;
    return d;
  }
  d.verdict = restart_verdict::restart;
  return d;
}
}  // namespace detail

/// The decision after attempt `restarts_done` (0 for the first) of a job on `node_count` nodes.
/// `failed`: the nodes to blame, the first to fail first, then every node whose host could not
/// be reached (empty when the attempt succeeded); `interrupted`: a signal stopped the job.
/// Without exclude_failed every node stays; with it, the failed nodes are left out. O(N).
[[nodiscard]] inline restart_decision decide_restart(const restart_options& options,
                                                     int restarts_done, std::size_t node_count,
                                                     const std::vector<std::size_t>& failed,
                                                     bool interrupted) {
  return detail::decide_restart(options, restarts_done, node_count, [](std::size_t) { return 0; },
                                failed, interrupted, {});
}

/// The same decision for a job with hosts standing by: each failed node of `topology` that a
/// spare fits (a spare of at least the node's nproc) stays, on that spare; as many as can be,
/// each spare at most once. Only the failed nodes no spare fits are left out (exclude_failed),
/// or start again on their own hosts. The next attempt's topology is restart_topology(topology,
/// decision, spares). `spares`: the hosts still unused (a caller drops each spare it used).
/// O(N + F log F + S log S) for F failed nodes and S spares.
[[nodiscard]] inline restart_decision decide_restart(const restart_options& options,
                                                     int restarts_done, const cluster& topology,
                                                     const std::vector<std::size_t>& failed,
                                                     bool interrupted,
                                                     const std::vector<spare_host>& spares) {
  return detail::decide_restart(
      options, restarts_done, topology.node_count(),
      [&](std::size_t i) { return topology.node(i).nproc; }, failed, interrupted, spares);
}

/// The topology of the nodes `keep` (indices into `c`, ascending), in their order in `c`, with
/// each node's role, weight, ceiling and device list. Node indices, rank offsets and the world size are
/// those of the smaller topology. Precondition: every index is below c.node_count(). O(N).
[[nodiscard]] inline cluster keep_nodes(const cluster& c, const std::vector<std::size_t>& keep) {
  cluster_builder builder;
  std::size_t chars = 0;
  for (std::size_t i : keep) {
    detail::expects(i < c.node_count(), "keep_nodes(c, keep): node index out of range");
    chars += c.node(i).host.size();
  }
  builder.reserve(keep.size(), chars);
  for (std::size_t i : keep) builder.add(c.node(i));  // every field of the node
  cluster out = builder.finish();
  for (std::size_t k = 0; k < keep.size(); ++k)
    if (!c.devices(keep[k]).empty()) out.set_devices(k, c.devices(keep[k]));
  return out;
}

/// The topology of a restart: the nodes d.nodes of `c`, in their order, each replaced node on
/// its spare's host with the node's nproc, role, weight and ceiling, so that ranks, the world size and
/// the shares stay the node's. A replaced node's device list is dropped: it named the failed
/// host's GPUs. Precondition: `d` came from decide_restart over `c` and these `spares`. O(N).
[[nodiscard]] inline cluster restart_topology(const cluster& c, const restart_decision& d,
                                              const std::vector<spare_host>& spares) {
  cluster_builder builder;
  std::size_t chars = 0, r = 0;
  for (std::size_t i : d.nodes) {
    detail::expects(i < c.node_count(), "restart_topology(c, d, spares): node index out of range");
    chars += c.node(i).host.size();
  }
  for (const node_replacement& x : d.replaced) {
    detail::expects(x.spare < spares.size(), "restart_topology(c, d, spares): no such spare");
    chars += spares[x.spare].host.size();
  }
  builder.reserve(d.nodes.size(), chars);
  std::vector<bool> replaced(d.nodes.size(), false);
  for (std::size_t k = 0; k < d.nodes.size(); ++k) {
    node_spec n = c.node(d.nodes[k]);  // every field of the node, its ceiling too
    while (r < d.replaced.size() && d.replaced[r].node < d.nodes[k]) ++r;
    if (r < d.replaced.size() && d.replaced[r].node == d.nodes[k]) {
      n.host = spares[d.replaced[r].spare].host;  // the spare's host, the node's all else
      replaced[k] = true;
    }
    builder.add(n);
  }
  cluster out = builder.finish();
  for (std::size_t k = 0; k < d.nodes.size(); ++k)
    if (!replaced[k] && !c.devices(d.nodes[k]).empty()) out.set_devices(k, c.devices(d.nodes[k]));
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
  // c10d's endpoint on no host of the job is a store of its own: it stays where it is.
  if (o.backend == rendezvous::c10d && !names_kept && !names_left_out) return false;
  return names_left_out || (!kept[0] && !names_kept);
}

/// Whether the rendezvous address given in `o` must move when the job's topology goes from
/// `before` to `after` (a restart that leaves nodes out, or puts spares in their place): when it
/// is no host of `after`, and it named a host of `before` or node 0 is now on another host (the
/// address was node 0's other name, a fast network's, say). It then becomes the new node 0's
/// host. An address not given never moves. O(N) expected.
[[nodiscard]] inline bool rendezvous_moves(const cluster& before, const cluster& after,
                                           const launch_options& o) {
  if (o.master_addr.empty() || before.node_count() == 0 || after.node_count() == 0) return false;
  const std::string_view addr = detail::unbracketed(o.master_addr);
  bool named_before = false;
  for (std::size_t i = 0; i < before.node_count(); ++i)
    named_before = named_before || before.node(i).host == addr;
  for (std::size_t i = 0; i < after.node_count(); ++i)
    if (after.node(i).host == addr) return false;
  // c10d's endpoint on no host of the job is a store of its own: it stays where it is.
  if (o.backend == rendezvous::c10d && !named_before) return false;
  return named_before || before.node(0).host != after.node(0).host;
}

}  // namespace hetlaunch

#endif  // HETLAUNCH_RESTART_HPP
