// SPDX-License-Identifier: MIT
// hetlaunch: work shares, the split of each optimizer step's global batch over nodes and ranks in
// proportion to the nodes' weights, in exact integer arithmetic.
#ifndef HETLAUNCH_SHARES_HPP
#define HETLAUNCH_SHARES_HPP

#include <algorithm>
#include <array>
#include <climits>
#include <cstddef>
#include <cstdint>
#include <string_view>
#include <vector>

#include "cluster.hpp"
#include "diagnostic.hpp"
#include "result.hpp"
#include "weight.hpp"

#if !defined(__SIZEOF_INT128__)
#error "hetlaunch/shares.hpp needs a 128-bit integer type (GCC or Clang on a 64-bit target)"
#endif

namespace hetlaunch {

/// A node's part of each step: `batch` samples (n_i), starting at `offset` (o_i) within the step.
struct node_batch {
  int batch = 0;
  int offset = 0;
  friend constexpr bool operator==(const node_batch& a, const node_batch& b) noexcept {
    return a.batch == b.batch && a.offset == b.offset;
  }
  friend constexpr bool operator!=(const node_batch& a, const node_batch& b) noexcept {
    return !(a == b);
  }
};

/// A rank's part of each step: `batch` samples (b) from `offset` within the step.
struct rank_batch {
  int batch = 0;
  int offset = 0;
  friend constexpr bool operator==(const rank_batch& a, const rank_batch& b) noexcept {
    return a.batch == b.batch && a.offset == b.offset;
  }
  friend constexpr bool operator!=(const rank_batch& a, const rank_batch& b) noexcept {
    return !(a == b);
  }
};

/// Local rank `local_rank`'s part of its node's samples: the node's n samples dealt out evenly
/// over its `nproc` workers, the lower local ranks taking one more when they do not divide:
/// b = n / nproc + (local_rank < n % nproc), from offset + local_rank * (n / nproc) +
/// min(local_rank, n % nproc). What a worker computes from HETLAUNCH_NODE_BATCH,
/// HETLAUNCH_NODE_BATCH_OFFSET, LOCAL_RANK and LOCAL_WORLD_SIZE.
/// Preconditions: nproc >= 1, 0 <= local_rank < nproc, node.batch >= 0.
[[nodiscard]] constexpr rank_batch batch_of_rank(node_batch node, int nproc,
                                                 int local_rank) noexcept {
  detail::expects(nproc >= 1 && local_rank >= 0 && local_rank < nproc,
                  "batch_of_rank(node, nproc, local_rank): local rank out of range");
  const int base = node.batch / nproc;
  const int extra = node.batch % nproc;
  // local_rank * base <= node.batch: no wrap.
  return {base + (local_rank < extra ? 1 : 0),
          node.offset + local_rank * base + (local_rank < extra ? local_rank : extra)};
}

/// What a rank multiplies its mean loss by before backward(), so that DDP's average of the ranks'
/// gradients (it divides their sum by the world size) is the mean over the whole global batch:
/// b * world_size / global_batch. Preconditions: global_batch >= 1.
[[nodiscard]] constexpr double loss_scale(rank_batch rank, int world_size,
                                          int global_batch) noexcept {
  return static_cast<double>(rank.batch) * static_cast<double>(world_size) /
         static_cast<double>(global_batch);
}

namespace detail {

__extension__ typedef unsigned __int128 uint128;  // E * p_i * w_i reaches 2^102

// The split, up to the samples left. n nodes; nproc_at(i) >= 1 and micros_at(i) in [1, 10^12]
// (a checked weight), world = their nproc's sum <= INT_MAX, world <= global_batch <= INT_MAX.
// Node i gets p_i + floor(E * d_i / D) in out[i].batch (E = B - W, d_i = p_i * w_i, D = the sum
// of d_i) and its remainder E * d_i mod D in rem[i]. Returns the samples left, fewer than n (the
// remainders are each below D and add up to a multiple of it): they go one each to the nodes
// with the largest remainders, ties to the lower index (remainder_order). With d_i < 2^71 and
// E < 2^31, every product fits 128 bits.
template <class NprocAt, class MicrosAt>
constexpr std::size_t split_floors(std::size_t n, NprocAt nproc_at, MicrosAt micros_at,
                                   long long world, int global_batch, node_batch* out,
                                   uint128* rem) noexcept {
  const auto extra = static_cast<uint128>(static_cast<long long>(global_batch) - world);
  uint128 total = 0;
  for (std::size_t i = 0; i < n; ++i)
    total += static_cast<uint128>(nproc_at(i)) * static_cast<uint128>(micros_at(i));
  long long given = 0;
  for (std::size_t i = 0; i < n; ++i) {
    const uint128 part =
        extra * (static_cast<uint128>(nproc_at(i)) * static_cast<uint128>(micros_at(i)));
    const auto floor_part = static_cast<long long>(part / total);  // <= E < 2^31
    rem[i] = part % total;
    out[i].batch = static_cast<int>(nproc_at(i) + floor_part);
    given += floor_part;
  }
  return static_cast<std::size_t>(static_cast<long long>(extra) - given);
}

// Which of two nodes gets a sample left first: the larger remainder, then the lower index.
struct remainder_order {
  const uint128* rem;
  constexpr bool operator()(std::size_t a, std::size_t b) const noexcept {
    return rem[a] > rem[b] || (rem[a] == rem[b] && a < b);
  }
};

// Sets every node's offset: the prefix sums of the batches.
constexpr void set_offsets(std::size_t n, node_batch* out) noexcept {
  int offset = 0;
  for (std::size_t i = 0; i < n; ++i) {
    out[i].offset = offset;
    offset += out[i].batch;  // the sum is the global batch: no wrap
  }
}

// The problem, if any, that stops the split of `global_batch` over n nodes: a node without
// workers, a world size past INT_MAX, a bad weight, or a global batch below the world size.
// Hosts and roles do not matter to it. Sets `world`.
template <class NodeAt>
constexpr diagnostic split_problem(std::size_t n, NodeAt node_at, int global_batch,
                                   long long& world) noexcept {
  world = 0;
  if (n == 0) return diagnostic::of(errc::empty_cluster);
  for (std::size_t i = 0; i < n; ++i) {
    const node_spec node = node_at(i);
    const auto at_node = [&](errc code) {
      return diagnostic::of(code).with_node(i).with_host(node.host).with_role(node.role);
    };
    if (node.nproc < 1) return at_node(errc::bad_nproc).with_value(node.nproc);
    world += node.nproc;
    if (world > INT_MAX)
      return at_node(errc::world_size_overflow).with_value(world).with_limit(INT_MAX);
    if (!is_default_weight(node.weight)) {
      const weight_check wc = check_weight(node.weight);
      if (!wc)
        return at_node(errc::bad_weight)
            .with_weight(wc.issue)
            .with_position(wc.position)
            .with_text(node.weight);
    }
  }
  if (global_batch < 0)
    return diagnostic::of(errc::bad_global_batch)
        .with_value(global_batch)
        .with_variable("global_batch");
  if (global_batch < world)
    return diagnostic::of(errc::global_batch_too_small)
        .with_value(global_batch)
        .with_limit(world)
        .with_variable("global_batch");
  return diagnostic{};
}

template <class NodeAt>
constexpr std::int64_t weight_micros(NodeAt node_at, std::size_t i) noexcept {
  const std::string_view w = node_at(i).weight;
  return is_default_weight(w) ? weight_scale : check_weight(w).micros;
}

// Run time, for a topology known to be valid: the split in O(n) and 12 bytes a node beside the
// result. When every E * d_i and their sum fit 64 bits (any real cluster) the arithmetic is
// 64-bit, else 128-bit. The nodes that get a sample left are found by selection, not sorting.
// d_i is computed again where it is needed rather than stored: fresh memory costs more than
// the arithmetic. A run of equal weight texts is read once.
template <class WeightAt>
struct weight_reader {
  WeightAt weight_at;
  std::string_view last = "1";
  std::int64_t micros = weight_scale;
  std::int64_t operator()(std::size_t i) {
    const std::string_view w = weight_at(i);
    if (w != last) {
      last = w;
      micros = check_weight(w).micros;
    }
    return micros;
  }
};

template <class Word, class Index, class NprocAt, class WeightAt>
std::vector<node_batch> split_with(std::size_t n, NprocAt nproc_at, WeightAt weight_at,
                                   uint128 total, long long world, int global_batch) {
  std::vector<node_batch> out(n);
  std::vector<Word> rem(n);
  weight_reader<WeightAt> micros_of{weight_at};
  const auto extra = static_cast<Word>(static_cast<long long>(global_batch) - world);
  const auto divisor = static_cast<Word>(total);
  long long given = 0;
  for (std::size_t i = 0; i < n; ++i) {
    const Word part = extra * (static_cast<Word>(nproc_at(i)) * static_cast<Word>(micros_of(i)));
    const Word q = part / divisor;  // <= E < 2^31
    rem[i] = part % divisor;
    out[i].batch = static_cast<int>(nproc_at(i) + static_cast<long long>(q));
    given += static_cast<long long>(q);
  }
  const auto left = static_cast<std::size_t>(static_cast<long long>(extra) - given);
  if (left > 0) {
    std::vector<Index> order(n);
    for (std::size_t i = 0; i < n; ++i) order[i] = static_cast<Index>(i);
    const Word* r = rem.data();
    std::nth_element(order.begin(), order.begin() + static_cast<std::ptrdiff_t>(left - 1),
                     order.end(),
                     [r](Index a, Index b) { return r[a] > r[b] || (r[a] == r[b] && a < b); });
    for (std::size_t k = 0; k < left; ++k) ++out[order[k]].batch;
  }
  set_offsets(n, out.data());
  return out;
}

template <class NprocAt, class WeightAt>
std::vector<node_batch> split_valid(std::size_t n, NprocAt nproc_at, WeightAt weight_at,
                                    long long world, int global_batch) {
  uint128 total = 0, largest = 0;
  weight_reader<WeightAt> micros_of{weight_at};
  for (std::size_t i = 0; i < n; ++i) {
    const uint128 d = static_cast<uint128>(nproc_at(i)) * static_cast<uint128>(micros_of(i));
    total += d;
    if (d > largest) largest = d;
  }
  const auto extra = static_cast<uint128>(static_cast<long long>(global_batch) - world);
  const uint128 max64 = ~std::uint64_t{0};
  const bool narrow = total <= max64 && (extra == 0 || largest <= max64 / extra);
  if (n <= 0xffffffffu)
    return narrow ? split_with<std::uint64_t, std::uint32_t>(n, nproc_at, weight_at, total, world,
                                                             global_batch)
                  : split_with<uint128, std::uint32_t>(n, nproc_at, weight_at, total, world,
                                                       global_batch);
  return narrow
             ? split_with<std::uint64_t, std::size_t>(n, nproc_at, weight_at, total, world,
                                                      global_batch)
             : split_with<uint128, std::size_t>(n, nproc_at, weight_at, total, world, global_batch);
}

// Run time: every problem checked, then the split.
template <class NodeAt>
result<std::vector<node_batch>, diagnostic> split_batch(std::size_t n, NodeAt node_at,
                                                        int global_batch) {
  long long world = 0;
  if (const diagnostic d = split_problem(n, node_at, global_batch, world)) return d;
  return split_valid(
      n, [&node_at](std::size_t i) { return node_at(i).nproc; },
      [&node_at](std::size_t i) { return node_at(i).weight; }, world, global_batch);
}

}  // namespace detail

/// The work shares of a fixed topology: every node's part of a global batch, or the problem that
/// stops the split (error converts to true then, and the parts are all zero).
template <std::size_t N>
struct fixed_batch_split {
  diagnostic error{};
  std::array<node_batch, N> nodes{};
  /// Node i's part. Precondition: i < N.
  [[nodiscard]] constexpr node_batch node(std::size_t i) const noexcept {
    detail::expects(i < N, "node(i): node index out of range");
    return nodes[i];
  }
};

/// Splits each step's `global_batch` samples over the nodes of `c` by weight:
/// node i gets p_i + floor(E * p_i * w_i / D) samples, E = global_batch - world size, D the sum of
/// p_i * w_i, and the samples left go one each to the largest remainders, ties to the lower index;
/// offsets are the prefix sums. Exact (no floating point, no wrap for any valid input); usable in
/// constant expressions, O(N log N) there:
///   constexpr auto c = hetlaunch::make_cluster({{"a100", 8, "default", "3"}, {"t4", 4}});
///   constexpr auto s = hetlaunch::split_batch(c, 100);
///   static_assert(s.node(0).batch == 83 && s.node(1) == hetlaunch::node_batch{17, 83});
/// Errors: empty_cluster, bad_nproc, world_size_overflow, bad_weight, bad_global_batch (below 0),
/// global_batch_too_small (below the world size).
template <std::size_t N>
[[nodiscard]] constexpr fixed_batch_split<N> split_batch(const fixed_cluster<N>& c,
                                                         int global_batch) noexcept {
  fixed_batch_split<N> out{};
  const auto node_at = [&c](std::size_t i) { return c.node(i); };
  long long world = 0;
  out.error = detail::split_problem(N, node_at, global_batch, world);
  if (out.error) return out;
  std::array<detail::uint128, N> rem{};
  std::array<std::size_t, N> order{};
  const std::size_t left = detail::split_floors(
      N, [&node_at](std::size_t i) { return node_at(i).nproc; },
      [&node_at](std::size_t i) { return detail::weight_micros(node_at, i); }, world, global_batch,
      out.nodes.data(), rem.data());
  for (std::size_t i = 0; i < N; ++i) order[i] = i;
  if (left > 0) detail::heap_sort(order.data(), N, detail::remainder_order{rem.data()});
  for (std::size_t k = 0; k < left; ++k) ++out.nodes[order[k]].batch;
  detail::set_offsets(N, out.nodes.data());
  return out;
}

/// split_batch for a run-time topology: every node's part, in node order, or the first problem.
/// O(N) time; 32 bytes a node of scratch.
template <class Unused>
[[nodiscard]] result<std::vector<node_batch>, diagnostic> split_batch(
    const basic_cluster<Unused>& c, int global_batch) {
  return detail::split_batch(
      c.node_count(), [&c](std::size_t i) { return c.node(i); }, global_batch);
}

}  // namespace hetlaunch

#endif  // HETLAUNCH_SHARES_HPP
