// SPDX-License-Identifier: MIT
// hetlaunch: the queries fixed_cluster and cluster share (node, world size, offsets, the node and
// local rank of a global rank, role ranks), written once over the rank math so both agree.
#ifndef HETLAUNCH_TOPOLOGY_QUERIES_HPP
#define HETLAUNCH_TOPOLOGY_QUERIES_HPP

#include <climits>
#include <cstddef>
#include <string_view>

#include "detail/config.hpp"
#include "detail/rank_math.hpp"
#include "diagnostic.hpp"
#include "node_spec.hpp"
#include "result.hpp"

namespace hetlaunch {
namespace detail {

// T, named so that it depends on D: members of a class template that return it are then compiled
// only where a program uses them, not by every includer.
template <class D, class T>
struct dependent_on {
  using type = T;
};

// The members rank math needs; fixed_cluster and cluster provide them through topology_queries.
template <class Derived>
class topology_queries {
  template <class T>
  using checked = typename dependent_on<Derived, result<T, diagnostic>>::type;

  constexpr const Derived& self() const noexcept { return static_cast<const Derived&>(*this); }
  constexpr const long long* offsets() const noexcept { return self().offsets_data(); }
  constexpr std::size_t count() const noexcept { return self().node_count(); }

  constexpr diagnostic range_error(errc code, long long value, long long limit) const noexcept {
    return diagnostic::of(code).with_value(value).with_limit(limit);
  }
  constexpr diagnostic local_rank_error(std::size_t i, int local_rank) const noexcept {
    const node_spec node = self().node_unchecked(i);
    return range_error(errc::local_rank_out_of_range, local_rank, node.nproc)
        .with_node(i)
        .with_host(node.host)
        .with_role(node.role);
  }
  constexpr long long world_ll() const noexcept { return offsets()[count()]; }

 public:
  /// The node's host, nproc and role. Precondition: i < node_count().
  [[nodiscard]] constexpr node_spec node(std::size_t i) const noexcept {
    detail::expects(i < count(), "node(i): node index out of range");
    return self().node_unchecked(i);
  }

  /// Sum of nproc over all nodes: torchrun's WORLD_SIZE. O(1).
  /// Precondition: the sum fits int (validation reports world_size_overflow otherwise).
  [[nodiscard]] constexpr int world_size() const noexcept {
    detail::expects(world_ll() <= INT_MAX, "world_size(): the world size exceeds INT_MAX");
    return static_cast<int>(world_ll());
  }

  /// Workers on node i: its LOCAL_WORLD_SIZE. O(1). Precondition: i < node_count().
  [[nodiscard]] constexpr int nproc(std::size_t i) const noexcept {
    detail::expects(i < count(), "nproc(i): node index out of range");
    return self().node_unchecked(i).nproc;
  }

  /// Sum of nproc of the nodes before i: the global rank of node i's local rank 0. O(1).
  /// Precondition: i < node_count() and the offset fits int.
  [[nodiscard]] constexpr int rank_offset(std::size_t i) const noexcept {
    detail::expects(i < count(), "rank_offset(i): node index out of range");
    const bool fits = offsets()[i] >= 0 && offsets()[i] <= INT_MAX;
    detail::expects(fits, "rank_offset(i): the offset does not fit int; validate the cluster");
    return static_cast<int>(offsets()[i]);
  }

  /// torchrun's RANK of worker `local_rank` on node i: rank_offset(i) + local_rank. O(1).
  /// Precondition: i < node_count(), 0 <= local_rank < nproc(i), and the rank fits int.
  [[nodiscard]] constexpr int global_rank(std::size_t i, int local_rank) const noexcept {
    detail::expects(i < count(), "global_rank(i, local_rank): node index out of range");
    const bool on_node = local_rank >= 0 && local_rank < self().node_unchecked(i).nproc;
    detail::expects(on_node, "global_rank(i, local_rank): local rank out of range");
    const long long g = offsets()[i] + local_rank;
    detail::expects(g <= INT_MAX, "global_rank(i, local_rank): the rank exceeds INT_MAX");
    return static_cast<int>(g);
  }

  /// The node and local rank of a global rank: the inverse of global_rank. O(log N).
  /// Precondition: 0 <= global_rank < world_size().
  [[nodiscard]] constexpr rank_location locate(int global_rank) const noexcept {
    const bool in_world = global_rank >= 0 && global_rank < world_ll();
    detail::expects(in_world, "locate(global_rank): global rank out of range");
    const std::size_t i = node_of_rank(offsets(), count(), global_rank);
    return {i, static_cast<int>(global_rank - offsets()[i])};
  }

  /// torchrun's ROLE_RANK: the rank among the workers of nodes with node i's role. O(1).
  /// Precondition as for global_rank.
  [[nodiscard]] constexpr int role_rank(std::size_t i, int local_rank) const noexcept {
    detail::expects(i < count(), "role_rank(i, local_rank): node index out of range");
    const bool on_node = local_rank >= 0 && local_rank < self().node_unchecked(i).nproc;
    detail::expects(on_node, "role_rank(i, local_rank): local rank out of range");
    const long long r = self().role_offset_unchecked(i) + local_rank;
    detail::expects(r <= INT_MAX, "role_rank(i, local_rank): the rank exceeds INT_MAX");
    return static_cast<int>(r);
  }

  /// torchrun's ROLE_WORLD_SIZE: the workers of all nodes with node i's role. O(1).
  /// Precondition: i < node_count() and the sum fits int.
  [[nodiscard]] constexpr int role_world_size(std::size_t i) const noexcept {
    detail::expects(i < count(), "role_world_size(i): node index out of range");
    const long long w = self().role_total_unchecked(i);
    detail::expects(w <= INT_MAX, "role_world_size(i): the sum exceeds INT_MAX");
    return static_cast<int>(w);
  }

  // Checked variants: no precondition; an out-of-range argument gives a diagnostic
  // (node_out_of_range, local_rank_out_of_range, global_rank_out_of_range). The cluster itself
  // must be valid (see validate) for the values to fit int.

  /// node(i), or node_out_of_range.
  [[nodiscard]] constexpr checked<node_spec> try_node(std::size_t i) const noexcept {
    if (i >= count())
      return range_error(errc::node_out_of_range, static_cast<long long>(i),
                         static_cast<long long>(count()));
    return self().node_unchecked(i);
  }
  /// nproc(i), or node_out_of_range.
  [[nodiscard]] constexpr checked<int> try_nproc(std::size_t i) const noexcept {
    if (i >= count())
      return range_error(errc::node_out_of_range, static_cast<long long>(i),
                         static_cast<long long>(count()));
    return self().node_unchecked(i).nproc;
  }
  /// rank_offset(i), or node_out_of_range.
  [[nodiscard]] constexpr checked<int> try_rank_offset(std::size_t i) const noexcept {
    if (i >= count())
      return range_error(errc::node_out_of_range, static_cast<long long>(i),
                         static_cast<long long>(count()));
    return rank_offset(i);
  }
  /// global_rank(i, local_rank), or node_out_of_range / local_rank_out_of_range.
  [[nodiscard]] constexpr checked<int> try_global_rank(std::size_t i,
                                                       int local_rank) const noexcept {
    if (i >= count())
      return range_error(errc::node_out_of_range, static_cast<long long>(i),
                         static_cast<long long>(count()));
    if (local_rank < 0 || local_rank >= self().node_unchecked(i).nproc)
      return local_rank_error(i, local_rank);
    return global_rank(i, local_rank);
  }
  /// locate(global_rank), or global_rank_out_of_range.
  [[nodiscard]] constexpr checked<rank_location> try_locate(int global_rank) const noexcept {
    if (global_rank < 0 || global_rank >= world_ll())
      return range_error(errc::global_rank_out_of_range, global_rank, world_ll());
    return locate(global_rank);
  }
  /// role_rank(i, local_rank), or node_out_of_range / local_rank_out_of_range.
  [[nodiscard]] constexpr checked<int> try_role_rank(std::size_t i, int local_rank) const noexcept {
    if (i >= count())
      return range_error(errc::node_out_of_range, static_cast<long long>(i),
                         static_cast<long long>(count()));
    if (local_rank < 0 || local_rank >= self().node_unchecked(i).nproc)
      return local_rank_error(i, local_rank);
    return role_rank(i, local_rank);
  }
  /// role_world_size(i), or node_out_of_range.
  [[nodiscard]] constexpr checked<int> try_role_world_size(std::size_t i) const noexcept {
    if (i >= count())
      return range_error(errc::node_out_of_range, static_cast<long long>(i),
                         static_cast<long long>(count()));
    return role_world_size(i);
  }
};

}  // namespace detail
}  // namespace hetlaunch

#endif  // HETLAUNCH_TOPOLOGY_QUERIES_HPP
