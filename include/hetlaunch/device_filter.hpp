// SPDX-License-Identifier: MIT
// hetlaunch: DeepSpeed's --include/--exclude device filters ("w0@w1:0,2") applied to a cluster.
#ifndef HETLAUNCH_DEVICE_FILTER_HPP
#define HETLAUNCH_DEVICE_FILTER_HPP

#include <algorithm>
#include <climits>
#include <cstddef>
#include <string>
#include <string_view>
#include <unordered_map>
#include <utility>
#include <vector>

#include "cluster.hpp"
#include "detail/host_name.hpp"
#include "detail/text.hpp"
#include "result.hpp"

namespace hetlaunch {

/// A cluster after a device filter, and where each of its nodes came from.
struct filtered_cluster {
  cluster nodes;
  /// source_node[k]: the index, in the cluster that was filtered, of node k.
  std::vector<std::size_t> source_node;
};

namespace detail {
constexpr std::size_t max_listed_devices = 65536;

// "0,1,2,3", or the first ids and the count for a long list; "0..N-1" for a node's own range.
inline std::string describe_devices(const std::vector<int>& ids, int nproc) {
  if (ids.empty())
    return nproc <= 16 ? join_ids([&] {
      std::vector<int> all;
      for (int d = 0; d < nproc; ++d) all.push_back(d);
      return all;
    }())
                       : concat("0..", nproc - 1);
  if (ids.size() <= 16) return join_ids(ids);
  return concat(join_ids(std::vector<int>(ids.begin(), ids.begin() + 16)), ",... (", ids.size(),
                " devices)");
}
}  // namespace detail

/// filter_devices, also saying which node of `c` each kept node is (see filtered_cluster).
[[nodiscard]] inline result<filtered_cluster> filter_devices_mapped(const cluster& c,
                                                                    std::string_view include,
                                                                    std::string_view exclude = {}) {
  if (!include.empty() && !exclude.empty())
    return parse_error{1, 1, "include and exclude are mutually exclusive"};
  const bool including = !include.empty();
  const std::string_view text = including ? include : exclude;
  const std::size_t n = c.node_count();
  // Hosts by name (case-insensitively, the first node of a name first): O(n log n), then O(log n)
  // a node spec.
  std::vector<std::size_t> by_host(n);
  for (std::size_t i = 0; i < n; ++i) by_host[i] = i;
  std::sort(by_host.begin(), by_host.end(), [&c](std::size_t a, std::size_t b) {
    const int cmp = detail::compare_host(c.node(a).host, c.node(b).host);
    return cmp < 0 || (cmp == 0 && a < b);
  });
  const auto find_node = [&](std::string_view host) {
    const auto it = std::lower_bound(by_host.begin(), by_host.end(), host,
                                     [&c](std::size_t a, std::string_view h) {
                                       return detail::compare_host(c.node(a).host, h) < 0;
                                     });
    return it != by_host.end() && detail::compare_host(c.node(*it).host, host) == 0 ? *it : n;
  };
  const auto has_device = [&c](std::size_t node, long long id) {
    const std::vector<int>& listed = c.devices(node);
    if (listed.empty()) return id < c.nproc(node);
    return std::find(listed.begin(), listed.end(), id) != listed.end();
  };
  // The nodes the filter names: all of their devices (whole), or the ids listed.
  struct selection {
    bool whole = false;
    std::vector<int> ids;
  };
  std::unordered_map<std::size_t, selection> named;
  std::size_t start = 0;
  while (!text.empty()) {
    std::size_t at = text.find('@', start);
    if (at == std::string_view::npos) at = text.size();
    const std::string_view spec = text.substr(start, at - start);
    const std::size_t column = start + 1;
    if (spec.empty()) return parse_error{1, column, "empty node spec; expected host or host:0,1"};
    const std::size_t colon = spec.find(':');
    if (colon != std::string_view::npos && spec.find(':', colon + 1) != std::string_view::npos)
      return parse_error{1, column, "IPv6 hosts cannot be named in include/exclude filters"};
    const std::string_view host = spec.substr(0, colon);
    const std::size_t node = find_node(host);
    if (node == n)
      return parse_error{1, column,
                         detail::concat("host ", detail::quoted(host), " is not in the cluster"),
                         errc::unknown_host};
    selection& sel = named[node];
    if (colon == std::string_view::npos) {
      sel.whole = true;
    } else {
      std::size_t s = colon + 1;
      while (true) {
        std::size_t comma = spec.find(',', s);
        if (comma == std::string_view::npos) comma = spec.size();
        const std::string_view id_text = spec.substr(s, comma - s);
        long long id = 0;
        if (!detail::parse_decimal(id_text, INT_MAX, id))
          return parse_error{1, column + s,
                             detail::concat("device id must be a non-negative integer, got ",
                                            detail::quoted(id_text))};
        if (!has_device(node, id))
          return parse_error{
              1, column + s,
              detail::concat("device ", id, " is not on host ", detail::quoted(host),
                             ", which has devices ",
                             detail::describe_devices(c.devices(node), c.nproc(node))),
              errc::unknown_host};
        sel.ids.push_back(static_cast<int>(id));
        if (comma == spec.size()) break;
        s = comma + 1;
      }
    }
    if (at == text.size()) break;
    start = at + 1;
  }
  for (auto& entry : named) {
    std::sort(entry.second.ids.begin(), entry.second.ids.end());
    entry.second.ids.erase(std::unique(entry.second.ids.begin(), entry.second.ids.end()),
                           entry.second.ids.end());
  }
  // Each node keeps its devices in their order, less (exclude) or only (include) those selected.
  cluster_builder builder;
  std::vector<std::vector<int>> kept;
  filtered_cluster out;
  for (std::size_t i = 0; i < n; ++i) {
    const auto found = named.find(i);
    const selection* sel = found == named.end() ? nullptr : &found->second;
    const auto selected = [sel](int d) {
      return sel && (sel->whole || std::binary_search(sel->ids.begin(), sel->ids.end(), d));
    };
    if (including && !sel) continue;
    if (!including && sel && sel->whole) continue;
    const std::vector<int>& listed = c.devices(i);
    // How many devices the node keeps, before any list is built.
    long long keep = 0;
    if (including)
      keep = sel->whole ? (listed.empty() ? c.nproc(i) : static_cast<long long>(listed.size()))
                        : static_cast<long long>(sel->ids.size());
    else
      keep = (listed.empty() ? c.nproc(i) : static_cast<long long>(listed.size())) -
             (sel ? static_cast<long long>(sel->ids.size()) : 0);
    if (keep <= 0) continue;
    if (keep > static_cast<long long>(detail::max_listed_devices))
      return parse_error{
          1, 1,
          detail::concat("node ", i, " (", detail::quoted(c.node(i).host), ") would list ", keep,
                         " devices, more than ", detail::max_listed_devices,
                         " (a filtered node lists every device it keeps)"),
          errc::limit_exceeded};
    std::vector<int> ids;
    ids.reserve(static_cast<std::size_t>(keep));
    if (listed.empty() && including && !sel->whole) {
      ids = sel->ids;  // sorted, and each one of the node's 0 .. nproc-1
    } else if (listed.empty()) {
      // All of 0 .. nproc-1 but the excluded: nproc is at most max_listed_devices plus their count.
      for (int d = 0; d < c.nproc(i); ++d)
        if (including ? selected(d) : !selected(d)) ids.push_back(d);
    } else {
      for (int d : listed)
        if (including ? selected(d) : !selected(d)) ids.push_back(d);
    }
    node_spec spec = c.node(i);  // every field of the node, its ceiling too
    spec.nproc = static_cast<int>(ids.size());
    builder.add(spec);
    kept.push_back(std::move(ids));
    out.source_node.push_back(i);
  }
  if (kept.empty()) return parse_error{1, 1, "the filter leaves no devices", errc::no_devices};
  out.nodes = builder.finish();
  for (std::size_t k = 0; k < kept.size(); ++k) out.nodes.set_devices(k, std::move(kept[k]));
  return out;
}

/// Applies DeepSpeed's --include or --exclude filter to a cluster:
///   include "worker-0@worker-1:0,2"  keeps all of worker-0's, and devices 0 and 2 of worker-1
///   exclude "worker-1:0"             keeps everything but device 0 of worker-1
/// Nodespecs are separated by '@'; `host` alone means all of its devices (DeepSpeed's documented
/// meaning, which its code lost in 0.15.2). A node's devices are cluster::devices(i), or 0 ..
/// nproc-1 when it has none. The result keeps the cluster's node order; each kept node runs one
/// worker per selected device and carries the list (CUDA_VISIBLE_DEVICES). Errors, with the
/// column: both filters given, an unknown host, a device the host does not have (upstream
/// accepts it), a malformed device id, an IPv6 host (the ':' is the devices'), a filter that
/// leaves no device, and a node that would list more than 65536 devices. O(n log n + filter).
[[nodiscard]] inline result<cluster> filter_devices(const cluster& c, std::string_view include,
                                                    std::string_view exclude = {}) {
  auto r = filter_devices_mapped(c, include, exclude);
  if (!r) return r.error();
  return std::move(r->nodes);
}

}  // namespace hetlaunch

#endif  // HETLAUNCH_DEVICE_FILTER_HPP
