// SPDX-License-Identifier: MIT
// hetlaunch: the algorithms shared by fixed_cluster and cluster: prefix sums, role ranks, lookup
// and validation. Each works on any node source, so the constexpr and run-time topologies agree
// by construction.
#ifndef HETLAUNCH_DETAIL_TOPOLOGY_HPP
#define HETLAUNCH_DETAIL_TOPOLOGY_HPP

#include <climits>
#include <cstddef>
#include <cstdint>
#include <string_view>

#include "../diagnostic.hpp"
#include "../node_spec.hpp"
#include "../result.hpp"
#include "heap_sort.hpp"
#include "host_name.hpp"

namespace hetlaunch {

namespace detail {

// FNV-1a of the lower-cased host: host names compare case-insensitively (RFC 4343).
constexpr std::uint64_t host_hash(std::string_view host) noexcept {
  std::uint64_t h = 14695981039346656037ull;
  const char* p = host.data();
  for (std::size_t i = 0, n = host.size(); i < n; ++i)
    h = (h ^ static_cast<unsigned char>(to_lower(p[i]))) * 1099511628211ull;
  return h;
}

// string_view's operator== goes through char_traits, which costs several constexpr steps a
// character; this is the same comparison in one.
constexpr bool same_text(std::string_view a, std::string_view b) noexcept {
  if (a.size() != b.size()) return false;
  const char* x = a.data();
  const char* y = b.data();
  std::size_t i = 0;
  const std::size_t n = a.size();
  while (i < n && x[i] == y[i]) ++i;
  return i == n;
}

constexpr int compare_host(std::string_view a, std::string_view b) noexcept {
  const std::size_t n = a.size() < b.size() ? a.size() : b.size();
  for (std::size_t i = 0; i < n; ++i) {
    const char x = to_lower(a[i]);
    const char y = to_lower(b[i]);
    if (x != y) return x < y ? -1 : 1;
  }
  return a.size() == b.size() ? 0 : (a.size() < b.size() ? -1 : 1);
}

// Exclusive prefix sums of nproc: offsets[i] = sum of nproc before node i, offsets[n] = total.
// 64-bit, so an invalid topology (a sum past INT_MAX, a negative nproc) is representable and
// reported by validation instead of overflowing.
template <class NodeAt>
constexpr void compute_offsets(std::size_t n, NodeAt node_at, long long* offsets) noexcept {
  long long sum = 0;
  for (std::size_t i = 0; i < n; ++i) {
    offsets[i] = sum;
    sum += node_at(i).nproc;
  }
  offsets[n] = sum;
}

// Role ranks as torchrun's agent computes them (reference §2.1): the same exclusive prefix sum,
// restricted to nodes of equal role, in node order. O(n) when every node has one role (the usual
// case), else O(n log n) by sorting node indices on (role, index).
template <class NodeAt>
constexpr void compute_role_offsets(std::size_t n, NodeAt node_at, const long long* offsets,
                                    long long* role_offsets, long long* role_totals,
                                    std::size_t* scratch) noexcept {
  bool one_role = true;
  const std::string_view first_role = n ? node_at(0).role : std::string_view();
  for (std::size_t i = 1; i < n && one_role; ++i) one_role = same_text(node_at(i).role, first_role);
  if (one_role) {
    for (std::size_t i = 0; i < n; ++i) {
      role_offsets[i] = offsets[i];
      role_totals[i] = offsets[n];
    }
    return;
  }
  for (std::size_t i = 0; i < n; ++i) scratch[i] = i;
  heap_sort(scratch, n, [&](std::size_t a, std::size_t b) {
    const int order = node_at(a).role.compare(node_at(b).role);
    return order < 0 || (order == 0 && a < b);
  });
  std::size_t start = 0;
  while (start < n) {
    const std::string_view role = node_at(scratch[start]).role;
    long long sum = 0;
    std::size_t end = start;
    for (; end < n && node_at(scratch[end]).role == role; ++end) {
      role_offsets[scratch[end]] = sum;
      sum += node_at(scratch[end]).nproc;
    }
    for (std::size_t k = start; k < end; ++k) role_totals[scratch[k]] = sum;
    start = end;
  }
}

// The node holding global rank g: the first i with offsets[i + 1] > g (an upper bound over the
// node ends). Branchless, so its cost is the log2(n) loads and nothing else.
// Precondition: 0 <= g < offsets[n], offsets non-decreasing.
constexpr std::size_t node_of_rank(const long long* offsets, std::size_t n, long long g) noexcept {
  if (n == 0) return 0;
  const long long* base = offsets + 1;
  std::size_t len = n;
  while (len > 1) {
    const std::size_t half = len / 2;
    base = (base[half - 1] <= g) ? base + half : base;
    len -= half;
  }
  return static_cast<std::size_t>(base - (offsets + 1)) + ((*base <= g) ? 1u : 0u);
}

constexpr std::size_t role_problem_position(std::string_view role) noexcept {
  const char* p = role.data();
  std::size_t i = 0;
  const std::size_t n = role.size();
  while (i < n && static_cast<unsigned char>(p[i]) > 0x20 && p[i] != 0x7f) ++i;
  return i;
}

// Scratch space for validation: n elements in each array.
struct validation_scratch {
  std::size_t* idx;
  std::size_t* idx_tmp;
  std::uint64_t* key;
  std::uint64_t* key_tmp;
  std::size_t* dup_of;
};

// Within a run of `run` nodes whose hashes share their upper 32 bits (run_node(k) gives the k-th's
// index), finds the nodes whose host an earlier node has: sorts them on (full hash, host, index)
// and calls duplicate(node, first node with that host) for each. O(k log k). `full` and `order`
// hold `run` elements. Runs longer than one come only from duplicates or rare collisions.
template <class NodeAt, class RunNode, class Duplicate>
constexpr void find_run_duplicates(std::size_t run, NodeAt node_at, RunNode run_node, std::uint64_t* full,
                                   std::size_t* order, Duplicate duplicate) noexcept {
  for (std::size_t k = 0; k < run; ++k) {
    full[k] = host_hash(node_at(run_node(k)).host);
    order[k] = k;
  }
  heap_sort(order, run, [&](std::size_t a, std::size_t b) {
    if (full[a] != full[b]) return full[a] < full[b];
    const int cmp = compare_host(node_at(run_node(a)).host, node_at(run_node(b)).host);
    return cmp < 0 || (cmp == 0 && run_node(a) < run_node(b));
  });
  std::size_t first = run_node(order[0]);
  for (std::size_t k = 1; k < run; ++k) {
    const std::size_t prev = order[k - 1], cur = order[k];
    if (full[prev] == full[cur] && compare_host(node_at(run_node(prev)).host, node_at(run_node(cur)).host) == 0)
      duplicate(run_node(cur), first);
    else
      first = run_node(cur);
  }
}

// Marks duplicate hosts: dup_of[i] = the first node with the same host, or n when none.
// Node indices are radix-sorted (stable, O(n)) on the high 32 bits of the host's hash, so equal
// hosts land in one run, in node order. Runs longer than one (duplicates, or rare collisions) are
// then sorted on (full hash, host, index), O(k log k). O(n log n) in the worst case, O(n) as a rule.
template <class NodeAt>
constexpr void find_duplicate_hosts(std::size_t n, NodeAt node_at, validation_scratch s) noexcept {
  std::size_t* idx = s.idx;
  std::uint64_t* key = s.key;
  std::size_t* idx_tmp = s.idx_tmp;
  std::uint64_t* key_tmp = s.key_tmp;
  for (std::size_t i = 0; i < n; ++i) {
    idx[i] = i;
    key[i] = host_hash(node_at(i).host);
    s.dup_of[i] = n;
  }
  for (unsigned shift = 32; shift < 64; shift += 8) {
    std::size_t count[257] = {};
    for (std::size_t i = 0; i < n; ++i) ++count[((key[i] >> shift) & 255u) + 1];
    for (std::size_t b = 1; b < 257; ++b) count[b] += count[b - 1];
    for (std::size_t i = 0; i < n; ++i) {
      const std::size_t pos = count[(key[i] >> shift) & 255u]++;
      idx_tmp[pos] = idx[i];
      key_tmp[pos] = key[i];
    }
    std::size_t* ti = idx; idx = idx_tmp; idx_tmp = ti;
    std::uint64_t* tk = key; key = key_tmp; key_tmp = tk;
  }
  // key[k] is now the hash of node idx[k]; the arrays were swapped an even number of times.
  std::size_t start = 0;
  while (start < n) {
    std::size_t end = start + 1;
    while (end < n && (key[end] >> 32) == (key[start] >> 32)) ++end;
    if (end - start > 1) {
      const std::size_t* run_idx = idx + start;
      find_run_duplicates(
          end - start, node_at, [run_idx](std::size_t k) { return run_idx[k]; }, key_tmp, idx_tmp,
          [&s](std::size_t node, std::size_t first) { s.dup_of[node] = first; });
    }
    start = end;
  }
}

// Reports every problem in node order; stops when `report` returns false. `duplicate_of[i]` is
// the first earlier node with node i's host, or n; it is asked in increasing node order, and only
// when duplicates are not allowed. An array at compile time: indexing costs one constexpr step
// where a call costs several, and Clang's default limit is counted in steps.
template <class NodeAt, class DuplicateOf, class Report>
constexpr void validate_nodes(std::size_t n, NodeAt node_at, validate_options options,
                              DuplicateOf duplicate_of, Report report) noexcept {
  if (n == 0) {
    diagnostic d{};
    d.code = errc::empty_cluster;
    report(d);
    return;
  }
  long long world = 0;
  bool overflow_reported = false;
  // Only a failing check builds a diagnostic: the loop is charged per statement in constexpr.
  const auto problem = [&](std::size_t i, const node_spec& node, errc code) {
    diagnostic d{};
    d.code = code;
    d.node = i;
    d.host = node.host;
    d.role = node.role;
    return d;
  };
  for (std::size_t i = 0; i < n; ++i) {
    const node_spec node = node_at(i);
    if (node.nproc < 1) {
      diagnostic d = problem(i, node, errc::bad_nproc);
      d.value = node.nproc;
      if (!report(d)) return;
    } else {
      world += node.nproc;
      if (world > INT_MAX && !overflow_reported) {
        overflow_reported = true;
        diagnostic d = problem(i, node, errc::world_size_overflow);
        d.value = world;
        d.limit = INT_MAX;
        if (!report(d)) return;
      }
    }
    const host_check hc = check_host(node.host, options.allow_underscore);
    if (hc.issue != host_issue::none) {
      diagnostic d = problem(i, node, errc::bad_host);
      d.issue = hc.issue;
      d.position = hc.position;
      if (!report(d)) return;
    }
    if (!options.allow_duplicate_hosts && duplicate_of[i] != n) {
      diagnostic d = problem(i, node, errc::duplicate_host);
      d.other_node = duplicate_of[i];
      if (!report(d)) return;
    }
    if (node.role.empty()) {
      if (!report(problem(i, node, errc::empty_role))) return;
    } else if (i == 0 || !same_text(node.role, node_at(i - 1).role)) {
      // A role equal to the previous node's was already checked.
      const std::size_t pos = role_problem_position(node.role);
      if (node.role[0] == '-' || pos != node.role.size()) {
        diagnostic d = problem(i, node, errc::bad_role);
        d.position = node.role[0] == '-' ? 0 : pos;
        if (!report(d)) return;
      }
    }
  }
}

// The members rank math needs; fixed_cluster and cluster provide them through topology_queries.
template <class Derived>
class topology_queries {
  constexpr const Derived& self() const noexcept { return static_cast<const Derived&>(*this); }
  constexpr const long long* offsets() const noexcept { return self().offsets_data(); }
  constexpr std::size_t count() const noexcept { return self().node_count(); }

  constexpr diagnostic range_error(errc code, long long value, long long limit) const noexcept {
    diagnostic d{};
    d.code = code;
    d.value = value;
    d.limit = limit;
    return d;
  }
  constexpr diagnostic local_rank_error(std::size_t i, int local_rank) const noexcept {
    diagnostic d = range_error(errc::local_rank_out_of_range, local_rank,
                               self().node_unchecked(i).nproc);
    d.node = i;
    d.host = self().node_unchecked(i).host;
    d.role = self().node_unchecked(i).role;
    return d;
  }
  constexpr long long world_ll() const noexcept { return offsets()[count()]; }

 public:
  /// The node's host, nproc and role. Precondition: i < node_count().
  [[nodiscard]] constexpr node_spec node(std::size_t i) const noexcept {
    HETLAUNCH_DETAIL_EXPECTS(i < count(), "node(i): node index out of range");
    return self().node_unchecked(i);
  }

  /// Sum of nproc over all nodes: torchrun's WORLD_SIZE. O(1).
  /// Precondition: the sum fits int (validation reports world_size_overflow otherwise).
  [[nodiscard]] constexpr int world_size() const noexcept {
    HETLAUNCH_DETAIL_EXPECTS(world_ll() <= INT_MAX, "world_size(): the world size exceeds INT_MAX");
    return static_cast<int>(world_ll());
  }

  /// Workers on node i: its LOCAL_WORLD_SIZE. O(1). Precondition: i < node_count().
  [[nodiscard]] constexpr int nproc(std::size_t i) const noexcept {
    HETLAUNCH_DETAIL_EXPECTS(i < count(), "nproc(i): node index out of range");
    return self().node_unchecked(i).nproc;
  }

  /// Sum of nproc of the nodes before i: the global rank of node i's local rank 0. O(1).
  /// Precondition: i < node_count() and the offset fits int.
  [[nodiscard]] constexpr int rank_offset(std::size_t i) const noexcept {
    HETLAUNCH_DETAIL_EXPECTS(i < count(), "rank_offset(i): node index out of range");
    const bool fits = offsets()[i] >= 0 && offsets()[i] <= INT_MAX;
    HETLAUNCH_DETAIL_EXPECTS(fits, "rank_offset(i): the offset does not fit int; validate the cluster");
    return static_cast<int>(offsets()[i]);
  }

  /// torchrun's RANK of worker `local_rank` on node i: rank_offset(i) + local_rank. O(1).
  /// Precondition: i < node_count(), 0 <= local_rank < nproc(i), and the rank fits int.
  [[nodiscard]] constexpr int global_rank(std::size_t i, int local_rank) const noexcept {
    HETLAUNCH_DETAIL_EXPECTS(i < count(), "global_rank(i, local_rank): node index out of range");
    const bool on_node = local_rank >= 0 && local_rank < self().node_unchecked(i).nproc;
    HETLAUNCH_DETAIL_EXPECTS(on_node, "global_rank(i, local_rank): local rank out of range");
    const long long g = offsets()[i] + local_rank;
    HETLAUNCH_DETAIL_EXPECTS(g <= INT_MAX, "global_rank(i, local_rank): the rank exceeds INT_MAX");
    return static_cast<int>(g);
  }

  /// The node and local rank of a global rank: the inverse of global_rank. O(log N).
  /// Precondition: 0 <= global_rank < world_size().
  [[nodiscard]] constexpr rank_location locate(int global_rank) const noexcept {
    const bool in_world = global_rank >= 0 && global_rank < world_ll();
    HETLAUNCH_DETAIL_EXPECTS(in_world, "locate(global_rank): global rank out of range");
    const std::size_t i = node_of_rank(offsets(), count(), global_rank);
    return {i, static_cast<int>(global_rank - offsets()[i])};
  }

  /// torchrun's ROLE_RANK: the rank among the workers of nodes with node i's role. O(1).
  /// Precondition as for global_rank.
  [[nodiscard]] constexpr int role_rank(std::size_t i, int local_rank) const noexcept {
    HETLAUNCH_DETAIL_EXPECTS(i < count(), "role_rank(i, local_rank): node index out of range");
    const bool on_node = local_rank >= 0 && local_rank < self().node_unchecked(i).nproc;
    HETLAUNCH_DETAIL_EXPECTS(on_node, "role_rank(i, local_rank): local rank out of range");
    const long long r = self().role_offset_unchecked(i) + local_rank;
    HETLAUNCH_DETAIL_EXPECTS(r <= INT_MAX, "role_rank(i, local_rank): the rank exceeds INT_MAX");
    return static_cast<int>(r);
  }

  /// torchrun's ROLE_WORLD_SIZE: the workers of all nodes with node i's role. O(1).
  /// Precondition: i < node_count() and the sum fits int.
  [[nodiscard]] constexpr int role_world_size(std::size_t i) const noexcept {
    HETLAUNCH_DETAIL_EXPECTS(i < count(), "role_world_size(i): node index out of range");
    const long long w = self().role_total_unchecked(i);
    HETLAUNCH_DETAIL_EXPECTS(w <= INT_MAX, "role_world_size(i): the sum exceeds INT_MAX");
    return static_cast<int>(w);
  }

  // Checked variants: no precondition; an out-of-range argument gives a diagnostic
  // (node_out_of_range, local_rank_out_of_range, global_rank_out_of_range). The cluster itself
  // must be valid (see validate) for the values to fit int.

  /// node(i), or node_out_of_range.
  [[nodiscard]] constexpr result<node_spec, diagnostic> try_node(std::size_t i) const noexcept {
    if (i >= count()) return range_error(errc::node_out_of_range, static_cast<long long>(i), static_cast<long long>(count()));
    return self().node_unchecked(i);
  }
  /// nproc(i), or node_out_of_range.
  [[nodiscard]] constexpr result<int, diagnostic> try_nproc(std::size_t i) const noexcept {
    if (i >= count()) return range_error(errc::node_out_of_range, static_cast<long long>(i), static_cast<long long>(count()));
    return self().node_unchecked(i).nproc;
  }
  /// rank_offset(i), or node_out_of_range.
  [[nodiscard]] constexpr result<int, diagnostic> try_rank_offset(std::size_t i) const noexcept {
    if (i >= count()) return range_error(errc::node_out_of_range, static_cast<long long>(i), static_cast<long long>(count()));
    return rank_offset(i);
  }
  /// global_rank(i, local_rank), or node_out_of_range / local_rank_out_of_range.
  [[nodiscard]] constexpr result<int, diagnostic> try_global_rank(std::size_t i, int local_rank) const noexcept {
    if (i >= count()) return range_error(errc::node_out_of_range, static_cast<long long>(i), static_cast<long long>(count()));
    if (local_rank < 0 || local_rank >= self().node_unchecked(i).nproc) return local_rank_error(i, local_rank);
    return global_rank(i, local_rank);
  }
  /// locate(global_rank), or global_rank_out_of_range.
  [[nodiscard]] constexpr result<rank_location, diagnostic> try_locate(int global_rank) const noexcept {
    if (global_rank < 0 || global_rank >= world_ll()) return range_error(errc::global_rank_out_of_range, global_rank, world_ll());
    return locate(global_rank);
  }
  /// role_rank(i, local_rank), or node_out_of_range / local_rank_out_of_range.
  [[nodiscard]] constexpr result<int, diagnostic> try_role_rank(std::size_t i, int local_rank) const noexcept {
    if (i >= count()) return range_error(errc::node_out_of_range, static_cast<long long>(i), static_cast<long long>(count()));
    if (local_rank < 0 || local_rank >= self().node_unchecked(i).nproc) return local_rank_error(i, local_rank);
    return role_rank(i, local_rank);
  }
  /// role_world_size(i), or node_out_of_range.
  [[nodiscard]] constexpr result<int, diagnostic> try_role_world_size(std::size_t i) const noexcept {
    if (i >= count()) return range_error(errc::node_out_of_range, static_cast<long long>(i), static_cast<long long>(count()));
    return role_world_size(i);
  }
};

}  // namespace detail
}  // namespace hetlaunch

#endif  // HETLAUNCH_DETAIL_TOPOLOGY_HPP
