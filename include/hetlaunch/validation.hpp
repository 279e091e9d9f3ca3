// SPDX-License-Identifier: MIT
// hetlaunch: validation of any node source: duplicate hosts in O(n log n) at compile time and run
// time, and every node's problems in node order.
#ifndef HETLAUNCH_VALIDATION_HPP
#define HETLAUNCH_VALIDATION_HPP

#include <climits>
#include <cstddef>
#include <cstdint>
#include <string_view>

#include "detail/heap_sort.hpp"
#include "detail/host_name.hpp"
#include "diagnostic.hpp"
#include "node_spec.hpp"
#include "weight.hpp"

namespace hetlaunch {
namespace detail {

constexpr std::size_t role_problem_position(std::string_view role) noexcept {
  const char* p = role.data();
  std::size_t i = 0;
  const std::size_t n = role.size();
  while (i<n&& static_cast<unsigned char>(p[i])> 0x20 && p[i] != 0x7f) ++i;
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
constexpr void find_run_duplicates(std::size_t run, NodeAt node_at, RunNode run_node,
                                   std::uint64_t* full, std::size_t* order,
                                   Duplicate duplicate) noexcept {
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
    if (full[prev] == full[cur] &&
        compare_host(node_at(run_node(prev)).host, node_at(run_node(cur)).host) == 0)
      duplicate(run_node(cur), first);
    else
      first = run_node(cur);
  }
}

// Marks duplicate hosts: dup_of[i] = the first node with the same host, or n when none.
// Node indices are radix-sorted (stable, O(n)) on the high 32 bits of the host's hash, so equal
// hosts land in one run, in node order. Runs longer than one (duplicates, or rare collisions) are
// then sorted on (full hash, host, index), O(k log k). O(n log n) in the worst case, O(n) as a
// rule.
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
    std::size_t* ti = idx;
    idx = idx_tmp;
    idx_tmp = ti;
    std::uint64_t* tk = key;
    key = key_tmp;
    key_tmp = tk;
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
    report(diagnostic::of(errc::empty_cluster));
    return;
  }
  long long world = 0;
  bool overflow_reported = false;
  // Only a failing check builds a diagnostic: the loop is charged per statement in constexpr.
  const auto problem = [&](std::size_t i, const node_spec& node, errc code) {
    return diagnostic::of(code).with_node(i).with_host(node.host).with_role(node.role);
  };
  // The previous node's role, kept rather than read again: a node copied costs constexpr steps.
  std::string_view previous_role;
  for (std::size_t i = 0; i < n; ++i) {
    const node_spec node = node_at(i);
    if (node.nproc < 1) {
      if (!report(problem(i, node, errc::bad_nproc).with_value(node.nproc))) return;
    } else {
      world += node.nproc;
      if (world > INT_MAX && !overflow_reported) {
        overflow_reported = true;
        if (!report(
                problem(i, node, errc::world_size_overflow).with_value(world).with_limit(INT_MAX)))
          return;
      }
    }
    const host_check hc = check_host(node.host, options.allow_underscore);
    if (hc.issue != host_issue::none) {
      if (!report(problem(i, node, errc::bad_host).with_issue(hc.issue).with_position(hc.position)))
        return;
    }
    if (!options.allow_duplicate_hosts && duplicate_of[i] != n) {
      if (!report(problem(i, node, errc::duplicate_host).with_other_node(duplicate_of[i]))) return;
    }
    // is_default_weight written out: a call costs constexpr steps, and this runs for every node.
    if (!(node.weight.size() == 1 && node.weight[0] == '1')) {
      const weight_check wc = check_weight(node.weight);
      if (!wc) {
        if (!report(problem(i, node, errc::bad_weight)
                        .with_weight(wc.issue)
                        .with_position(wc.position)
                        .with_text(node.weight)))
          return;
      }
    }
    if (node.role.empty()) {
      if (!report(problem(i, node, errc::empty_role))) return;
    } else if (i == 0 || !same_text(node.role, previous_role)) {
      // A role equal to the previous node's was already checked.
      const std::size_t pos = role_problem_position(node.role);
      if (node.role[0] == '-' || pos != node.role.size()) {
        if (!report(problem(i, node, errc::bad_role).with_position(node.role[0] == '-' ? 0 : pos)))
          return;
      }
    }
    previous_role = node.role;
  }
}

}  // namespace detail
}  // namespace hetlaunch

#endif  // HETLAUNCH_VALIDATION_HPP
