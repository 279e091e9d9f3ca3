// SPDX-License-Identifier: MIT
// hetlaunch: torchrun's rank math over any node source: prefix sums, role ranks, the node of a
// rank.
#ifndef HETLAUNCH_DETAIL_RANK_MATH_HPP
#define HETLAUNCH_DETAIL_RANK_MATH_HPP

#include <climits>
#include <cstddef>
#include <string_view>

#include "config.hpp"
#include "heap_sort.hpp"
#include "host_name.hpp"

namespace hetlaunch {
namespace detail {

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

}  // namespace detail
}  // namespace hetlaunch

#endif  // HETLAUNCH_DETAIL_RANK_MATH_HPP
