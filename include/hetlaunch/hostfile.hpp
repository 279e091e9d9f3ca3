// SPDX-License-Identifier: MIT
// hetlaunch: the host lists clusters already have — DeepSpeed and Open MPI hostfiles, MPICH
// "host:N" files, Horovod "-H h1:4,h2:8" lists — and DeepSpeed's --include/--exclude filters.
#ifndef HETLAUNCH_HOSTFILE_HPP
#define HETLAUNCH_HOSTFILE_HPP

#include <algorithm>
#include <climits>
#include <cstddef>
#include <string>
#include <string_view>
#include <vector>

#include "cluster.hpp"
#include "detail/host_name.hpp"
#include "detail/text.hpp"
#include "result.hpp"

namespace hetlaunch {

namespace detail {

constexpr bool is_blank(char c) noexcept { return c == ' ' || c == '\t'; }

// A positive decimal int: ASCII digits only, at most INT_MAX.
inline bool positive_int(std::string_view text, int& value) {
  long long v = 0;
  if (!parse_decimal(text, INT_MAX, v) || v < 1) return false;
  value = static_cast<int>(v);
  return true;
}

inline std::string host_problem_text(std::string_view host, const host_check& hc) {
  return concat("host ", quoted(host), " is not a valid RFC 1123 name or IP literal: ",
                describe_host_issue(host, hc.issue, hc.position));
}

// The world size check of a parsed list, reported on the line (or column) of the node.
inline result<cluster> checked_cluster(const std::vector<node_spec>& specs, const std::vector<std::size_t>& lines,
                                       const std::vector<std::size_t>& columns) {
  cluster c(specs);
  long long world = 0;
  for (std::size_t i = 0; i < specs.size(); ++i) {
    world += specs[i].nproc;
    if (world > INT_MAX)
      return parse_error{lines[i], columns[i],
                         concat("the world size would be ", world, ", more than ", INT_MAX,
                                " (torch.distributed ranks are 32-bit)")};
  }
  return c;
}

inline const char* const slot_keys[] = {"slots", "count", "cpu"};
inline const char* const max_slot_keys[] = {"max_slots", "max-slots", "slots_max", "slots-max", "cpu_max", "cpu-max",
                                            "max_cpu", "max-cpu", "count_max", "count-max", "max_count", "max-count"};
template <std::size_t N>
bool one_of(std::string_view key, const char* const (&keys)[N]) {
  for (const char* k : keys)
    if (key == k) return true;
  return false;
}

}  // namespace detail

/// What host-list parsing tolerates.
struct hostfile_options {
  /// '_' in host names (RFC 1123 forbids it; some clusters use it).
  bool allow_underscore = false;
};

/// Parses a hostfile into a cluster, one node per host line, in file order:
///   worker-0 slots=8            # DeepSpeed and Open MPI
///   worker-1 slots=4 max_slots=4
///   worker-2:2                  # MPICH
///   worker-3                    # a bare host: 1 slot
/// `#` starts a comment anywhere on a line; blank lines, tabs and CRLF line ends are fine.
/// Open MPI's `count=`/`cpu=` mean slots, and `max_slots` (or a synonym such as `max-slots`)
/// alone sets the slots; max_slots below slots is an error. Hosts must be RFC 1123 names or IP
/// literals (IPv6 without brackets, and then without `:N`). Any other field, a repeated field, a
/// host named twice, a count that is not a positive integer, or a file without hosts is an error
/// with its line and column:
///   line 3, column 11: slots must be a positive integer, got '0'
[[nodiscard]] inline result<cluster> parse_hostfile(std::string_view text, hostfile_options options = {}) {
  std::vector<node_spec> specs;
  std::vector<std::size_t> lines, columns;
  std::size_t line_no = 0;
  std::size_t pos = 0;
  while (pos <= text.size()) {
    ++line_no;
    std::size_t end = text.find('\n', pos);
    if (end == std::string_view::npos) end = text.size();
    std::string_view line = text.substr(pos, end - pos);
    pos = end + 1;
    if (!line.empty() && line.back() == '\r') line.remove_suffix(1);
    const std::size_t hash = line.find('#');
    if (hash != std::string_view::npos) line = line.substr(0, hash);
    // Tokens with their columns.
    std::vector<std::pair<std::string_view, std::size_t>> tokens;
    for (std::size_t i = 0; i < line.size();) {
      if (detail::is_blank(line[i])) {
        ++i;
        continue;
      }
      const std::size_t start = i;
      while (i < line.size() && !detail::is_blank(line[i])) ++i;
      tokens.emplace_back(line.substr(start, i - start), start + 1);
    }
    if (tokens.empty()) {
      if (end == text.size()) break;
      continue;
    }
    const auto error = [&](std::size_t column, std::string message) {
      return parse_error{line_no, column, std::move(message)};
    };
    std::string_view host = tokens[0].first;
    const std::size_t host_column = tokens[0].second;
    int slots = 0, max_slots = 0;
    std::size_t slots_column = 0;
    const std::size_t colon = host.find(':');
    if (colon != std::string_view::npos && host.find(':', colon + 1) == std::string_view::npos) {  // MPICH host:N
      const std::string_view count = host.substr(colon + 1);
      if (!detail::positive_int(count, slots))
        return error(host_column + colon + 1,
                     detail::concat("slots must be a positive integer, got ", detail::quoted(count)));
      slots_column = host_column + colon + 1;
      host = host.substr(0, colon);
    }
    const detail::host_check hc = detail::check_host(host, options.allow_underscore);
    if (hc.issue != host_issue::none) return error(host_column + hc.position, detail::host_problem_text(host, hc));
    for (std::size_t t = 1; t < tokens.size(); ++t) {
      const std::string_view field = tokens[t].first;
      const std::size_t column = tokens[t].second;
      const std::size_t eq = field.find('=');
      const std::string_view key = field.substr(0, eq);
      const bool is_slots = eq != std::string_view::npos && detail::one_of(key, detail::slot_keys);
      const bool is_max = eq != std::string_view::npos && detail::one_of(key, detail::max_slot_keys);
      if (!is_slots && !is_max)
        return error(column, detail::concat("unexpected ", detail::quoted(field), "; expected slots=N or max_slots=N"));
      int value = 0;
      const std::string_view number = field.substr(eq + 1);
      if (!detail::positive_int(number, value))
        return error(column + eq + 1, detail::concat(is_slots ? "slots" : "max_slots", " must be a positive integer, got ",
                                                     detail::quoted(number)));
      int& target = is_slots ? slots : max_slots;
      if (target != 0)
        return error(column, detail::concat(is_slots ? "slots" : "max_slots", " is given twice for host ",
                                            detail::quoted(host)));
      target = value;
      if (is_slots) slots_column = column + eq + 1;
    }
    if (max_slots != 0 && slots != 0 && max_slots < slots)
      return error(slots_column, detail::concat("max_slots (", max_slots, ") is less than slots (", slots, ")"));
    if (slots == 0) slots = max_slots != 0 ? max_slots : 1;
    for (std::size_t k = 0; k < specs.size(); ++k)
      if (detail::compare_host(specs[k].host, host) == 0)
        return error(host_column, detail::concat("host ", detail::quoted(host), " is already on line ", lines[k]));
    specs.push_back({host, slots});
    lines.push_back(line_no);
    columns.push_back(host_column);
    if (end == text.size()) break;
  }
  if (specs.empty()) return parse_error{1, 1, "the hostfile names no hosts"};
  return detail::checked_cluster(specs, lines, columns);
}

/// Parses a Horovod-style host list, "h1:4,h2:8": comma-separated `host:slots` with blanks
/// allowed around items; every item needs its slot count. Errors have line 1 and the column of
/// the offending item (a host named twice, a count that is not a positive integer, an empty
/// item). IPv6 literals cannot be written here (the ':' is the count's).
[[nodiscard]] inline result<cluster> parse_host_list(std::string_view text, hostfile_options options = {}) {
  std::vector<node_spec> specs;
  std::vector<std::size_t> lines, columns;
  std::size_t start = 0;
  while (true) {
    std::size_t comma = text.find(',', start);
    if (comma == std::string_view::npos) comma = text.size();
    std::size_t b = start, e = comma;
    while (b < e && detail::is_blank(text[b])) ++b;
    while (e > b && detail::is_blank(text[e - 1])) --e;
    const std::string_view item = text.substr(b, e - b);
    const std::size_t column = b + 1;
    if (item.empty()) return parse_error{1, column, "empty item; expected host:slots"};
    const std::size_t colon = item.rfind(':');
    if (colon == std::string_view::npos)
      return parse_error{1, column, detail::concat(detail::quoted(item), " has no slot count; expected host:slots")};
    const std::string_view host = item.substr(0, colon);
    if (host.find(':') != std::string_view::npos)
      return parse_error{1, column, "IPv6 addresses cannot be written in host:slots lists"};
    int slots = 0;
    if (!detail::positive_int(item.substr(colon + 1), slots))
      return parse_error{1, column + colon + 1, detail::concat("slots must be a positive integer, got ",
                                                               detail::quoted(item.substr(colon + 1)))};
    const detail::host_check hc = detail::check_host(host, options.allow_underscore);
    if (hc.issue != host_issue::none) return parse_error{1, column + hc.position, detail::host_problem_text(host, hc)};
    for (std::size_t k = 0; k < specs.size(); ++k)
      if (detail::compare_host(specs[k].host, host) == 0)
        return parse_error{1, column, detail::concat("host ", detail::quoted(host), " is already at column ", columns[k])};
    specs.push_back({host, slots});
    lines.push_back(1);
    columns.push_back(column);
    if (comma == text.size()) break;
    start = comma + 1;
  }
  return detail::checked_cluster(specs, lines, columns);
}

/// Applies DeepSpeed's --include or --exclude filter to a cluster:
///   include "worker-0@worker-1:0,2"  keeps all of worker-0's devices and devices 0 and 2 of worker-1
///   exclude "worker-1:0"             keeps everything but device 0 of worker-1
/// Nodespecs are separated by '@'; `host` alone means all of its devices (DeepSpeed's documented
/// meaning, which its code lost in 0.15.2). A node's devices are cluster::devices(i), or 0 ..
/// nproc-1 when it has none. The result keeps the cluster's node order; each kept node runs one
/// worker per selected device and carries the list (CUDA_VISIBLE_DEVICES). Errors, with the
/// column: both filters given, an unknown host, a device the host does not have (upstream
/// accepts it), a malformed device id, an IPv6 host (the ':' is the devices'), and a filter that
/// leaves no device.
[[nodiscard]] inline result<cluster> filter_devices(const cluster& c, std::string_view include,
                                                    std::string_view exclude = {}) {
  if (!include.empty() && !exclude.empty()) return parse_error{1, 1, "include and exclude are mutually exclusive"};
  const bool including = !include.empty();
  const std::string_view text = including ? include : exclude;
  const std::size_t n = c.node_count();
  std::vector<std::vector<int>> available(n);
  for (std::size_t i = 0; i < n; ++i) {
    available[i] = c.devices(i);
    if (available[i].empty())
      for (int d = 0; d < c.nproc(i); ++d) available[i].push_back(d);
  }
  // named[i]: the node is in the filter; chosen[i]: its listed devices (empty = all of them).
  std::vector<bool> named(n, false), whole(n, false);
  std::vector<std::vector<int>> chosen(n);
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
    std::size_t node = n;
    for (std::size_t i = 0; i < n && node == n; ++i)
      if (detail::compare_host(c.node(i).host, host) == 0) node = i;
    if (node == n) return parse_error{1, column, detail::concat("host ", detail::quoted(host), " is not in the cluster")};
    named[node] = true;
    if (colon == std::string_view::npos) {
      whole[node] = true;
    } else {
      std::size_t s = colon + 1;
      while (true) {
        std::size_t comma = spec.find(',', s);
        if (comma == std::string_view::npos) comma = spec.size();
        const std::string_view id_text = spec.substr(s, comma - s);
        long long id = 0;
        if (!detail::parse_decimal(id_text, INT_MAX, id))
          return parse_error{1, column + s, detail::concat("device id must be a non-negative integer, got ",
                                                           detail::quoted(id_text))};
        if (std::find(available[node].begin(), available[node].end(), id) == available[node].end()) {
          return parse_error{1, column + s, detail::concat("device ", id, " is not on host ", detail::quoted(host),
                                                           ", which has devices ", detail::join_ids(available[node]))};
        }
        chosen[node].push_back(static_cast<int>(id));
        if (comma == spec.size()) break;
        s = comma + 1;
      }
    }
    if (at == text.size()) break;
    start = at + 1;
  }
  std::vector<node_spec> specs;
  std::vector<std::vector<int>> kept;
  for (std::size_t i = 0; i < n; ++i) {
    std::vector<int> ids;
    for (int d : available[i]) {
      const bool listed = whole[i] || std::find(chosen[i].begin(), chosen[i].end(), d) != chosen[i].end();
      if (including ? (named[i] && listed) : !(named[i] && listed)) ids.push_back(d);
    }
    if (ids.empty()) continue;
    node_spec s = c.node(i);
    s.nproc = static_cast<int>(ids.size());
    specs.push_back(s);
    kept.push_back(std::move(ids));
  }
  if (specs.empty()) return parse_error{1, 1, "the filter leaves no devices"};
  cluster out(specs);
  for (std::size_t i = 0; i < kept.size(); ++i) out.set_devices(i, std::move(kept[i]));
  return out;
}

}  // namespace hetlaunch

#endif  // HETLAUNCH_HOSTFILE_HPP
