// SPDX-License-Identifier: MIT
// hetlaunch: growing back. A job that restarted without some of its nodes (left out after a
// failure, or replaced by a spare) keeps, for each node it runs, the place that node had in the
// job as first given. A host that left and answers again re-enters at its own place, with its
// node's record as first given; a host whose place a spare holds stands by as a spare instead.
// Computed without any process: the launcher probes the hosts and restarts the job.
#ifndef HETLAUNCH_GROW_BACK_HPP
#define HETLAUNCH_GROW_BACK_HPP

#include <algorithm>
#include <cstddef>
#include <string>
#include <string_view>
#include <vector>

#include "cluster.hpp"
#include "restart.hpp"

namespace hetlaunch {

/// A job across its restarts: the topology as first given, and for each node of the current
/// attempt the index of the first topology's node whose place it holds (ascending: restarts
/// keep the nodes' order).
struct job_places {
  cluster first;
  std::vector<std::size_t> places;
};

/// A job that has not restarted: every node in its own place.
[[nodiscard]] inline job_places places_of(const cluster& first) {
  job_places p{first, {}};
  p.places.reserve(first.node_count());
  for (std::size_t i = 0; i < first.node_count(); ++i) p.places.push_back(i);
  return p;
}

/// The places after a failure's restart: the nodes `d.nodes` (indices into the attempt's
/// topology) keep the places they held; a node on a spare keeps its place too. O(N).
/// Precondition: `d` came from decide_restart over the attempt whose places `p` holds.
[[nodiscard]] inline job_places places_after_restart(const job_places& p,
                                                     const restart_decision& d) {
  job_places next{p.first, {}};
  next.places.reserve(d.nodes.size());
  for (std::size_t k : d.nodes) {
    detail::expects(k < p.places.size(), "places_after_restart(p, d): node index out of range");
    next.places.push_back(p.places[k]);
  }
  return next;
}

/// The hosts that left the job: the first topology's hosts whose nodes are out or held by a
/// spare, less every host the attempt `current` runs on and every host of `spares` (each may
/// have come back in another role). In the first topology's order, each once. O(N + S) expected.
[[nodiscard]] inline std::vector<std::string> hosts_that_left(
    const job_places& p, const cluster& current, const std::vector<spare_host>& spares) {
  std::vector<bool> held_by_own(p.first.node_count(), false);
  for (std::size_t k = 0; k < p.places.size() && k < current.node_count(); ++k)
    if (p.places[k] < held_by_own.size() && current.node(k).host == p.first.node(p.places[k]).host)
      held_by_own[p.places[k]] = true;
  std::vector<std::string_view> busy;
  busy.reserve(current.node_count() + spares.size());
  for (std::size_t k = 0; k < current.node_count(); ++k) busy.push_back(current.node(k).host);
  for (const spare_host& s : spares) busy.emplace_back(s.host);
  std::sort(busy.begin(), busy.end());
  std::vector<std::string> out;
  for (std::size_t i = 0; i < p.first.node_count(); ++i) {
    const std::string_view host = p.first.node(i).host;
    if (held_by_own[i] || std::binary_search(busy.begin(), busy.end(), host)) continue;
    if (std::find(out.begin(), out.end(), host) == out.end()) out.emplace_back(host);
  }
  return out;
}

/// What the hosts that answered again change.
struct grow_decision {
  /// The first topology's nodes that re-enter on their own hosts, ascending.
  std::vector<std::size_t> readmitted;
  /// The returned hosts whose place a spare holds: they stand by, with their node's nproc.
  std::vector<spare_host> new_spares;
  /// Whether anything changes: a restart is worth it only when a node re-enters.
  [[nodiscard]] bool grows() const noexcept { return !readmitted.empty(); }
};

/// Which of the `returned` hosts (hosts_that_left that answered) re-enter: each first-topology
/// node that is out and whose host returned takes its place again; a returned host whose place
/// a spare holds joins the spares. A host not among hosts_that_left changes nothing. O(N + R)
/// expected.
[[nodiscard]] inline grow_decision decide_grow(const job_places& p, const cluster& current,
                                               const std::vector<spare_host>& spares,
                                               const std::vector<std::string>& returned) {
  grow_decision g;
  std::vector<std::string> left = hosts_that_left(p, current, spares);
  std::sort(left.begin(), left.end());
  std::vector<bool> in_job(p.first.node_count(), false);
  for (std::size_t place : p.places)
    if (place < in_job.size()) in_job[place] = true;
  std::vector<std::string_view> answered;
  for (const std::string& host : returned)
    if (std::binary_search(left.begin(), left.end(), host)) answered.emplace_back(host);
  std::sort(answered.begin(), answered.end());
  std::vector<std::string_view> spared;  // one spare a host, whatever its node count
  for (std::size_t i = 0; i < p.first.node_count(); ++i) {
    const node_spec n = p.first.node(i);
    if (!std::binary_search(answered.begin(), answered.end(), n.host)) continue;
    if (!in_job[i])
      g.readmitted.push_back(i);
    else
      spared.push_back(n.host);
  }
  std::sort(spared.begin(), spared.end());
  spared.erase(std::unique(spared.begin(), spared.end()), spared.end());
  // In the first topology's order, with the nproc of the host's first node.
  for (std::size_t i = 0; i < p.first.node_count() && !spared.empty(); ++i) {
    const node_spec n = p.first.node(i);
    const auto at = std::lower_bound(spared.begin(), spared.end(), n.host);
    if (at == spared.end() || *at != n.host) continue;
    g.new_spares.push_back({std::string(n.host), n.nproc});
    spared.erase(at);
  }
  return g;
}

/// The next attempt after a grow: every node of `current` in its place, and each readmitted
/// node in its own, in the first topology's order. Every node has its record as first given
/// (weight, ceiling, role, nproc); a node on a spare keeps the spare's host, and a node on its
/// own host its devices. Precondition: `g` came from decide_grow over `p` and `current`. O(N).
[[nodiscard]] inline job_places grow_places(const job_places& p, const grow_decision& g) {
  job_places next{p.first, {}};
  std::size_t a = 0, b = 0;
  while (a < p.places.size() || b < g.readmitted.size()) {
    if (b == g.readmitted.size() || (a < p.places.size() && p.places[a] < g.readmitted[b]))
      next.places.push_back(p.places[a++]);
    else
      next.places.push_back(g.readmitted[b++]);
  }
  return next;
}

/// The topology of `next` (grow_places of `p`), with each node's host: its host in `current`
/// when it held its place there (its own, or a spare's), else its own.
[[nodiscard]] inline cluster grow_topology(const job_places& p, const cluster& current,
                                           const job_places& next) {
  cluster_builder builder;
  std::vector<std::size_t> from_current(next.places.size(), current.node_count());
  std::size_t k = 0;
  for (std::size_t j = 0; j < next.places.size(); ++j) {
    while (k < p.places.size() && p.places[k] < next.places[j]) ++k;
    if (k < p.places.size() && p.places[k] == next.places[j]) from_current[j] = k;
  }
  for (std::size_t j = 0; j < next.places.size(); ++j) {
    node_spec n = p.first.node(next.places[j]);  // the record as first given
    if (from_current[j] < current.node_count()) n.host = current.node(from_current[j]).host;
    builder.add(n);
  }
  cluster out = builder.finish();
  for (std::size_t j = 0; j < next.places.size(); ++j) {
    const std::size_t i = next.places[j];
    const bool own_host = out.node(j).host == p.first.node(i).host;
    if (own_host && !p.first.devices(i).empty()) out.set_devices(j, p.first.devices(i));
  }
  return out;
}

}  // namespace hetlaunch

#endif  // HETLAUNCH_GROW_BACK_HPP
