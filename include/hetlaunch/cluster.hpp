// SPDX-License-Identifier: MIT
// hetlaunch: topologies (fixed_cluster at compile time, cluster at run time), torchrun's rank
// math over them, and validation.
#ifndef HETLAUNCH_CLUSTER_HPP
#define HETLAUNCH_CLUSTER_HPP

#include <array>
#include <climits>
#include <cstddef>
#include <cstdint>
#include <initializer_list>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "detail/topology.hpp"
#include "diagnostic.hpp"
#include "node_spec.hpp"
#include "result.hpp"
#include "version.hpp"

namespace hetlaunch {

/// A topology fixed at compile time: N nodes, each with its host, nproc and role. Every member is
/// usable in constant expressions (C++17); nothing allocates. The strings are views: build it from
/// literals or other storage that outlives it.
///
/// The rank math follows torchrun's elastic agent with the static rendezvous: node i's workers
/// get global ranks rank_offset(i) .. rank_offset(i) + nproc(i) - 1, where rank_offset(i) is the
/// sum of nproc of the nodes before i.
///
/// Example:
///   constexpr auto c = hetlaunch::make_cluster({{"node0", 8}, {"node1", 4}, {"node2", 2}});
///   static_assert(c.world_size() == 14 && c.rank_offset(2) == 12);
///   static_assert(c.locate(13) == hetlaunch::rank_location{2, 1});
///   HETLAUNCH_STATIC_VALIDATE(c);
template <std::size_t N>
class fixed_cluster : public detail::topology_queries<fixed_cluster<N>> {
  friend class detail::topology_queries<fixed_cluster<N>>;
  template <std::size_t M>
  friend constexpr diagnostic first_error(const fixed_cluster<M>&, validate_options) noexcept;

  std::array<node_spec, N> nodes_{};
  std::array<long long, N + 1> offsets_{};
  std::array<long long, N> role_offsets_{};
  std::array<long long, N> role_totals_{};

  constexpr node_spec node_unchecked(std::size_t i) const noexcept { return nodes_[i]; }
  constexpr const long long* offsets_data() const noexcept { return offsets_.data(); }
  constexpr const long long* role_offsets_data() const noexcept { return role_offsets_.data(); }
  constexpr const long long* role_totals_data() const noexcept { return role_totals_.data(); }

  template <class Nodes>
  constexpr void init(const Nodes& nodes) noexcept {
    node_spec* out = nodes_.data();
    for (std::size_t i = 0; i < N; ++i) out[i] = nodes[i];
    const node_spec* in = nodes_.data();
    const auto node_at = [in](std::size_t i) { return in[i]; };
    detail::compute_offsets(N, node_at, offsets_.data());
    std::array<std::size_t, N> scratch{};
    detail::compute_role_offsets(N, node_at, offsets_.data(), role_offsets_.data(),
                                 role_totals_.data(), scratch.data());
  }

 public:
  /// No nodes (only meaningful for N == 0).
  constexpr fixed_cluster() noexcept = default;
  /// Copies the node specs and computes the prefix sums. Accepts any values; see first_error.
  // (N ? N : 1): a zero-size array type is ill-formed, and fixed_cluster<0> has no nodes to take.
  constexpr explicit fixed_cluster(const node_spec (&nodes)[N ? N : 1]) noexcept { init(nodes); }
  constexpr explicit fixed_cluster(const std::array<node_spec, N>& nodes) noexcept { init(nodes); }

  /// The number of nodes: torchrun's --nnodes and GROUP_WORLD_SIZE.
  [[nodiscard]] constexpr std::size_t node_count() const noexcept { return N; }
  /// All node specs, in node order.
  [[nodiscard]] constexpr const std::array<node_spec, N>& nodes() const noexcept { return nodes_; }
};

/// Builds a fixed_cluster from a braced list of node specs:
///   constexpr auto c = hetlaunch::make_cluster({{"node0", 8}, {"node1", 4}});
template <std::size_t N>
[[nodiscard]] constexpr fixed_cluster<N> make_cluster(const node_spec (&nodes)[N]) noexcept {
  return fixed_cluster<N>(nodes);
}
/// Builds a fixed_cluster from a std::array of node specs.
template <std::size_t N>
[[nodiscard]] constexpr fixed_cluster<N> make_cluster(const std::array<node_spec, N>& nodes) noexcept {
  return fixed_cluster<N>(nodes);
}

/// A topology known at run time. Owns copies of its host and role strings, so it may outlive
/// whatever it was built from. Same rank math and preconditions as fixed_cluster; construction
/// accepts any values (validate() says what is wrong).
///
/// Example:
///   hetlaunch::cluster c{{"gpu-a", 8}, {"gpu-b", 4}};
///   for (const auto& d : hetlaunch::validate(c)) std::cerr << d.message() << '\n';
///   int rank = c.global_rank(1, 3);  // 11
class cluster : public detail::topology_queries<cluster> {
  friend class detail::topology_queries<cluster>;

  // Strings live in one buffer and are addressed by offset, so copies and moves stay valid.
  struct entry {
    std::size_t host_begin;
    std::size_t host_size;
    std::size_t role_begin;
    std::size_t role_size;
    int nproc;
  };
  std::vector<char> text_;
  std::vector<entry> entries_;
  std::vector<long long> offsets_{0};
  std::vector<long long> role_offsets_;
  std::vector<long long> role_totals_;
  std::vector<std::vector<int>> devices_;  // empty, or one (possibly empty) list per node

  node_spec node_unchecked(std::size_t i) const noexcept {
    const entry& e = entries_[i];
    const char* base = text_.data();
    return {std::string_view(base + e.host_begin, e.host_size), e.nproc,
            std::string_view(base + e.role_begin, e.role_size)};
  }
  const long long* offsets_data() const noexcept { return offsets_.data(); }
  const long long* role_offsets_data() const noexcept { return role_offsets_.data(); }
  const long long* role_totals_data() const noexcept { return role_totals_.data(); }

  template <class It>
  void assign(It first, It last, std::size_t n) {
    entries_.reserve(n);
    std::size_t chars = 0;
    for (It it = first; it != last; ++it) chars += it->host.size() + it->role.size();
    text_.reserve(chars);
    std::string_view previous_role;
    std::size_t previous_role_begin = 0;
    for (It it = first; it != last; ++it) {
      const node_spec& s = *it;
      entry e{text_.size(), s.host.size(), 0, s.role.size(), s.nproc};
      text_.insert(text_.end(), s.host.begin(), s.host.end());
      // Roles repeat from node to node; store each run once.
      if (!entries_.empty() && s.role == previous_role) {
        e.role_begin = previous_role_begin;
      } else {
        e.role_begin = text_.size();
        text_.insert(text_.end(), s.role.begin(), s.role.end());
      }
      previous_role = s.role;
      previous_role_begin = e.role_begin;
      entries_.push_back(e);
    }
    offsets_.assign(n + 1, 0);
    role_offsets_.assign(n, 0);
    role_totals_.assign(n, 0);
    const auto node_at = [this](std::size_t i) { return node_unchecked(i); };
    detail::compute_offsets(n, node_at, offsets_.data());
    std::vector<std::size_t> scratch(n);
    detail::compute_role_offsets(n, node_at, offsets_.data(), role_offsets_.data(),
                                 role_totals_.data(), scratch.data());
  }

 public:
  /// An empty cluster (which validation reports as empty_cluster).
  cluster() = default;
  cluster(std::initializer_list<node_spec> nodes) { assign(nodes.begin(), nodes.end(), nodes.size()); }
  cluster(const std::vector<node_spec>& nodes) { assign(nodes.begin(), nodes.end(), nodes.size()); }  // NOLINT
  template <std::size_t N>
  cluster(const fixed_cluster<N>& fixed) {  // NOLINT: a fixed topology is a cluster
    assign(fixed.nodes().begin(), fixed.nodes().end(), N);
  }

  /// The number of nodes: torchrun's --nnodes and GROUP_WORLD_SIZE.
  [[nodiscard]] std::size_t node_count() const noexcept { return entries_.size(); }
  /// The device ids node i's workers may use (for example after a DeepSpeed-style --include
  /// filter), or an empty list when the node's devices are not restricted. Every worker of the
  /// node sees all of them, as with torchrun (CUDA_VISIBLE_DEVICES); worker l uses the l-th.
  /// Precondition: i < node_count().
  [[nodiscard]] const std::vector<int>& devices(std::size_t i) const noexcept {
    HETLAUNCH_DETAIL_EXPECTS(i < node_count(), "devices(i): node index out of range");
    static const std::vector<int> none;
    return devices_.empty() ? none : devices_[i];
  }
  /// Restricts node i to the given device ids. Precondition: i < node_count().
  void set_devices(std::size_t i, std::vector<int> ids) {
    HETLAUNCH_DETAIL_EXPECTS(i < node_count(), "set_devices(i, ids): node index out of range");
    if (devices_.empty()) devices_.resize(entries_.size());
    devices_[i] = std::move(ids);
  }

  /// Copies of all node specs (views into this cluster), in node order.
  [[nodiscard]] std::vector<node_spec> nodes() const {
    std::vector<node_spec> out;
    out.reserve(entries_.size());
    for (std::size_t i = 0; i < entries_.size(); ++i) out.push_back(node_unchecked(i));
    return out;
  }
};

/// The first problem of a fixed topology in node order, or a diagnostic that converts to false.
/// O(N log N); usable in constant expressions, where it validates thousands of nodes within the
/// compilers' default limits.
template <std::size_t N>
[[nodiscard]] constexpr diagnostic first_error(const fixed_cluster<N>& c,
                                               validate_options options = {}) noexcept {
  std::array<std::size_t, N> idx{}, idx_tmp{}, dup_of{};
  std::array<std::uint64_t, N> key{}, key_tmp{};
  diagnostic first{};
  const node_spec* nodes = c.nodes_.data();
  detail::validate_nodes(
      N, [nodes](std::size_t i) { return nodes[i]; }, options,
      detail::validation_scratch{idx.data(), idx_tmp.data(), key.data(), key_tmp.data(), dup_of.data()},
      [&first](const diagnostic& d) {
        first = d;
        return false;
      });
  return first;
}

namespace detail {
// Every problem, or only the first when `first_only`.
template <class NodeAt>
std::vector<diagnostic> validate_all(std::size_t n, NodeAt node_at, validate_options options,
                                     bool first_only = false) {
  std::vector<std::size_t> idx(n), idx_tmp(n), dup_of(n);
  std::vector<std::uint64_t> key(n), key_tmp(n);
  std::vector<diagnostic> out;
  validate_nodes(n, node_at, options,
                 validation_scratch{idx.data(), idx_tmp.data(), key.data(), key_tmp.data(), dup_of.data()},
                 [&out, first_only](const diagnostic& d) {
                   out.push_back(d);
                   return !first_only;
                 });
  return out;
}
}  // namespace detail

/// Every problem of a topology, in node order (empty when it is valid). O(N log N).
/// The diagnostics view the cluster's strings.
[[nodiscard]] inline std::vector<diagnostic> validate(const cluster& c, validate_options options = {}) {
  return detail::validate_all(c.node_count(), [&c](std::size_t i) { return c.node(i); }, options);
}
/// Every problem of a fixed topology, in node order.
template <std::size_t N>
[[nodiscard]] std::vector<diagnostic> validate(const fixed_cluster<N>& c, validate_options options = {}) {
  return detail::validate_all(N, [&c](std::size_t i) { return c.node(i); }, options);
}
/// The first problem of a run-time topology, or a diagnostic that converts to false.
[[nodiscard]] inline diagnostic first_error(const cluster& c, validate_options options = {}) {
  const std::vector<diagnostic> first =
      detail::validate_all(c.node_count(), [&c](std::size_t i) { return c.node(i); }, options, true);
  return first.empty() ? diagnostic{} : first.front();
}

namespace detail {
// Instantiated by HETLAUNCH_STATIC_VALIDATE with the first problem's code and node index, which
// the compiler prints in "required from" notes; the failing assertion below says what it means.
template <errc Code, std::size_t Node>
struct static_validation {
  static_assert(Code != errc::empty_cluster, "hetlaunch: invalid topology: the cluster has no nodes");
  static_assert(Code != errc::bad_nproc, "hetlaunch: invalid topology: nproc must be at least 1 (the node index is static_validation's second argument)");
  static_assert(Code != errc::world_size_overflow, "hetlaunch: invalid topology: the world size exceeds INT_MAX (torch.distributed ranks are 32-bit)");
  static_assert(Code != errc::bad_host, "hetlaunch: invalid topology: a host is not a valid RFC 1123 name or IP literal (the node index is static_validation's second argument)");
  static_assert(Code != errc::duplicate_host, "hetlaunch: invalid topology: duplicate host; allow it with validate_options{true} (the node index is static_validation's second argument)");
  static_assert(Code != errc::empty_role, "hetlaunch: invalid topology: a role is empty (the node index is static_validation's second argument)");
  static_assert(Code != errc::bad_role, "hetlaunch: invalid topology: a role has a blank or control character or starts with '-' (the node index is static_validation's second argument)");
  static constexpr bool ok = Code == errc::ok;
};
}  // namespace detail

}  // namespace hetlaunch

/// Fails the build when the fixed topology `c` (a constexpr variable) is invalid, with a message
/// that says what is wrong and, in the instantiation note, the node index. A declaration: usable
/// at namespace, class and block scope.
///   constexpr auto c = hetlaunch::make_cluster({{"a", 8}, {"a", 4}});
///   HETLAUNCH_STATIC_VALIDATE(c);  // error: ... duplicate host ... static_validation<errc::duplicate_host, 1>
#define HETLAUNCH_STATIC_VALIDATE(c) HETLAUNCH_STATIC_VALIDATE_WITH(c, ::hetlaunch::validate_options{})

/// HETLAUNCH_STATIC_VALIDATE with options, e.g. hetlaunch::validate_options{true} to allow
/// several agents on one host.
#define HETLAUNCH_STATIC_VALIDATE_WITH(c, options)                                       \
  static_assert(::hetlaunch::detail::static_validation<                                 \
                    ::hetlaunch::first_error((c), (options)).code,                      \
                    ::hetlaunch::first_error((c), (options)).node>::ok,                 \
                "hetlaunch: invalid topology (see the message above)")

#endif  // HETLAUNCH_CLUSTER_HPP
