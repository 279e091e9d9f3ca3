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
#include <iterator>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "detail/deferred.hpp"
#include "detail/rank_math.hpp"
#include "diagnostic.hpp"
#include "node_spec.hpp"
#include "result.hpp"
#include "topology_queries.hpp"
#include "validation.hpp"
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
  constexpr long long role_offset_unchecked(std::size_t i) const noexcept {
    return role_offsets_[i];
  }
  constexpr long long role_total_unchecked(std::size_t i) const noexcept { return role_totals_[i]; }

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
[[nodiscard]] constexpr fixed_cluster<N> make_cluster(
    const std::array<node_spec, N>& nodes) noexcept {
  return fixed_cluster<N>(nodes);
}

template <class Unused = void>
class basic_cluster;
template <class Unused = void>
class basic_cluster_builder;

/// A topology known at run time. Owns copies of its host and role strings, so it may outlive
/// whatever it was built from. Same rank math and preconditions as fixed_cluster; construction
/// accepts any values (validate() says what is wrong).
///
/// Example:
///   hetlaunch::cluster c{{"gpu-a", 8}, {"gpu-b", 4}};
///   for (const auto& d : hetlaunch::validate(c)) std::cerr << d.message() << '\n';
///   int rank = c.global_rank(1, 3);  // 11
// A class template with one instance (`cluster`), so that its members are compiled only where a
// program uses them: including cluster.hpp then costs little more than its standard headers.
template <class Unused>
class basic_cluster : public detail::topology_queries<basic_cluster<Unused>> {
  friend class detail::topology_queries<basic_cluster>;
  template <class>
  friend class basic_cluster_builder;
  template <class T>
  using vector = detail::deferred<std::vector<T>, Unused>;

  // Hosts are stored back to back in one buffer and found by their end offsets; nproc is the step
  // between rank offsets; roles are ids into a table of distinct roles, stored only when there
  // are several. A node costs 16 bytes plus its host's characters, and copies and moves stay
  // valid because nothing points into the buffer.
  std::string text_;
  vector<std::size_t> host_end_;
  vector<std::uint32_t> role_id_;  // per node, only when there are several roles (else all 0)
  vector<std::pair<std::size_t, std::size_t>> roles_;  // (begin, size) in text_, by id
  vector<long long> offsets_{0};
  vector<long long> role_offsets_;    // per node, only when there are several roles
  vector<long long> role_totals_;     // per role id
  vector<std::vector<int>> devices_;  // empty, or one (possibly empty) list per node
  // Weights: ids into a table of texts, stored only once a node has a weight other than "1".
  // A run of equal weights shares one entry, so a cluster of a few GPU types keeps a few.
  vector<std::uint32_t> weight_id_;
  vector<std::string> weights_;  // by id; id 0 is "1"
  vector<int> max_batch_;        // empty, or one ceiling per node (0: none)

  node_spec node_unchecked(std::size_t i) const noexcept {
    const char* base = text_.data();
    const std::size_t begin = i == 0 ? 0 : host_end_[i - 1];
    const auto& role = roles_[role_of(i)];
    return {std::string_view(base + begin, host_end_[i] - begin), nproc_of(i),
            std::string_view(base + role.first, role.second),
            weight_id_.empty() ? std::string_view("1") : std::string_view(weights_[weight_id_[i]]),
            max_batch_.empty() ? 0 : max_batch_[i]};
  }
  // The id of weight `w`: the last one added, "1", or a new one.
  std::uint32_t weight_id(std::string_view w) {
    if (weights_.empty()) weights_.emplace_back("1");
    if (w == weights_.back()) return static_cast<std::uint32_t>(weights_.size() - 1);
    if (w == "1") return 0;
    weights_.emplace_back(w);
    return static_cast<std::uint32_t>(weights_.size() - 1);
  }
  void append_weight(std::string_view w) {
    if (weight_id_.empty() && w == "1") return;
    if (weight_id_.empty()) weight_id_.assign(host_end_.size() - 1, 0);  // nodes so far weigh "1"
    weight_id_.push_back(weight_id(w));
  }
  const long long* offsets_data() const noexcept { return offsets_.data(); }
  long long role_offset_unchecked(std::size_t i) const noexcept {
    return role_offsets_.empty() ? offsets_[i] : role_offsets_[i];
  }
  long long role_total_unchecked(std::size_t i) const noexcept { return role_totals_[role_of(i)]; }
  std::uint32_t role_of(std::size_t i) const noexcept { return role_id_.empty() ? 0 : role_id_[i]; }
  // A node's nproc is the step between its offset and the next: stored once, as the offsets.
  int nproc_of(std::size_t i) const noexcept {
    return static_cast<int>(offsets_[i + 1] - offsets_[i]);
  }

  // Hosts first, roles after them: a role's text is appended when it is first seen.
  void reserve(std::size_t n, std::size_t host_chars) {
    text_.reserve(host_chars);
    host_end_.reserve(n);
    offsets_.reserve(n + 1);
  }
  void append(std::string_view host, int nproc, std::uint32_t role_id, std::string_view weight) {
    text_.append(host.data(), host.size());
    host_end_.push_back(text_.size());
    append_weight(weight);
    if (role_id != 0 && role_id_.empty())
      role_id_.assign(host_end_.size() - 1, 0);  // a second run: ids from here on
    if (!role_id_.empty()) role_id_.push_back(role_id);
    offsets_.push_back(offsets_.back() + nproc);  // 64-bit: n * INT_MAX cannot wrap
  }
  // Role texts go after every host, so they are added at the end.
  void finish(const vector<std::string_view>& role_texts) {
    roles_.clear();
    for (std::string_view r : role_texts) {
      roles_.emplace_back(text_.size(), r.size());
      text_.append(r.data(), r.size());
    }
    role_totals_.assign(roles_.size(), 0);
    if (roles_.size() > 1) {
      role_offsets_.resize(node_count());
      for (std::size_t i = 0; i < node_count(); ++i) {
        role_offsets_[i] = role_totals_[role_of(i)];
        role_totals_[role_of(i)] += nproc_of(i);
      }
    } else if (!roles_.empty()) {
      role_totals_[0] = offsets_.back();
    }
  }

  template <class It>
  void assign(It first, It last, std::size_t n);

 public:
  /// An empty cluster (which validation reports as empty_cluster).
  basic_cluster() = default;
  basic_cluster(std::initializer_list<node_spec> nodes) {
    assign(nodes.begin(), nodes.end(), nodes.size());
  }
  basic_cluster(const vector<node_spec>& nodes) {
    assign(nodes.begin(), nodes.end(), nodes.size());
  }  // NOLINT
  template <std::size_t N>
  explicit basic_cluster(const fixed_cluster<N>& fixed) {
    assign(fixed.nodes().begin(), fixed.nodes().end(), N);
  }

  /// The number of nodes: torchrun's --nnodes and GROUP_WORLD_SIZE.
  [[nodiscard]] std::size_t node_count() const noexcept { return host_end_.size(); }
  /// The device ids node i's workers may use (for example after a DeepSpeed-style --include
  /// filter), or an empty list when the node's devices are not restricted. Every worker of the
  /// node sees all of them, as with torchrun (CUDA_VISIBLE_DEVICES); worker l uses the l-th.
  /// Precondition: i < node_count().
  [[nodiscard]] const std::vector<int>& devices(std::size_t i) const noexcept {
    detail::expects(i < node_count(), "devices(i): node index out of range");
    static const vector<int> none;
    return devices_.empty() ? none : devices_[i];
  }
  /// Restricts node i to the given device ids. Precondition: i < node_count().
  void set_devices(std::size_t i, vector<int> ids) {
    detail::expects(i < node_count(), "set_devices(i, ids): node index out of range");
    if (devices_.empty()) devices_.resize(node_count());
    devices_[i] = std::move(ids);
  }

  /// Gives node i the weight `w` (see node_spec::weight), kept as given; validation checks it.
  /// O(1) amortized. Precondition: i < node_count().
  void set_weight(std::size_t i, std::string_view w) {
    detail::expects(i < node_count(), "set_weight(i, w): node index out of range");
    if (weight_id_.empty()) {
      if (w == "1") return;
      weight_id_.assign(node_count(), 0);
    }
    weight_id_[i] = weight_id(w);
  }
  /// Whether some node has a weight other than "1". O(1).
  [[nodiscard]] bool has_weights() const noexcept { return !weight_id_.empty(); }

  /// Node i's memory ceiling: the most samples one of its workers takes in one forward (its
  /// share runs as micro-batches of at most this many), or 0 for none. Precondition:
  /// i < node_count().
  [[nodiscard]] int max_batch(std::size_t i) const noexcept {
    detail::expects(i < node_count(), "max_batch(i): node index out of range");
    return max_batch_.empty() ? 0 : max_batch_[i];
  }
  /// Gives node i the ceiling `m` (0: none). Preconditions: i < node_count(), m >= 0.
  void set_max_batch(std::size_t i, int m) {
    detail::expects(i < node_count(), "set_max_batch(i, m): node index out of range");
    detail::expects(m >= 0, "set_max_batch(i, m): m must not be negative");
    if (max_batch_.empty()) {
      if (m == 0) return;
      max_batch_.assign(node_count(), 0);
    }
    max_batch_[i] = m;
  }
  /// Whether some node has a ceiling. O(1).
  [[nodiscard]] bool has_max_batches() const noexcept { return !max_batch_.empty(); }

  /// The nodes in node order, as a view of this cluster that copies nothing (as
  /// fixed_cluster::nodes() gives its array). Its node_specs view this cluster's strings. A
  /// cluster built from it is a copy of this one, device lists included; it converts to a
  /// std::vector<node_spec> when a list of specs is wanted.
  class node_list {
    const basic_cluster* c_;

   public:
    explicit node_list(const basic_cluster& c) noexcept : c_(&c) {}
    class iterator {
      const basic_cluster* c_ = nullptr;
      std::size_t i_ = 0;

     public:
      using iterator_category = std::forward_iterator_tag;
      using value_type = node_spec;
      using difference_type = std::ptrdiff_t;
      using pointer = void;
      using reference = node_spec;
      iterator() = default;
      iterator(const basic_cluster* c, std::size_t i) noexcept : c_(c), i_(i) {}
      node_spec operator*() const noexcept { return c_->node_unchecked(i_); }
      iterator& operator++() noexcept { return ++i_, *this; }
      iterator operator++(int) noexcept {
        iterator old = *this;
        ++i_;
        return old;
      }
      friend bool operator==(const iterator& a, const iterator& b) noexcept { return a.i_ == b.i_; }
      friend bool operator!=(const iterator& a, const iterator& b) noexcept { return a.i_ != b.i_; }
    };
    [[nodiscard]] std::size_t size() const noexcept { return c_->node_count(); }
    [[nodiscard]] bool empty() const noexcept { return size() == 0; }
    /// Precondition: i < size().
    node_spec operator[](std::size_t i) const noexcept { return c_->node(i); }
    [[nodiscard]] iterator begin() const noexcept { return {c_, 0}; }
    [[nodiscard]] iterator end() const noexcept { return {c_, size()}; }
    /// The cluster this list views.
    [[nodiscard]] const basic_cluster& source() const noexcept { return *c_; }
    operator vector<node_spec>() const { return vector<node_spec>(begin(), end()); }  // NOLINT
  };
  [[nodiscard]] node_list nodes() const noexcept { return node_list(*this); }
  /// A copy of the cluster `nodes` views, device lists included.
  basic_cluster(const node_list& nodes)
      : basic_cluster(nodes.source()) {}  // NOLINT: a view of a cluster copies it
};

/// Builds a cluster node by node without an intermediate list: the parsers use it so that a
/// million hosts cost their characters and 16 bytes each.
template <class Unused>
class basic_cluster_builder {
  template <class T>
  using vector = detail::deferred<std::vector<T>, Unused>;
  basic_cluster<Unused> c_;
  // Each run of equal roles gets an id as it comes; finish() gives equal roles one id. The runs'
  // texts live in one buffer, addressed by offset.
  std::string role_text_;
  vector<std::pair<std::size_t, std::size_t>> runs_;  // (begin, size) in role_text_
  vector<int> ceilings_;  // empty, or one max_batch per node added so far
  std::string_view run_text(std::size_t r) const noexcept {
    return std::string_view(role_text_).substr(runs_[r].first, runs_[r].second);
  }

 public:
  /// Reserves room for `nodes` nodes whose hosts have `host_chars` characters in all.
  void reserve(std::size_t nodes, std::size_t host_chars) { c_.reserve(nodes, host_chars); }
  /// Appends a node. O(1) amortized.
  void add(std::string_view host, int nproc, std::string_view role = "default",
           std::string_view weight = "1") {
    if (runs_.empty() || !detail::same_text(role, run_text(runs_.size() - 1))) {
      runs_.emplace_back(role_text_.size(), role.size());
      role_text_.append(role.data(), role.size());
    }
    c_.append(host, nproc, static_cast<std::uint32_t>(runs_.size() - 1), weight);
    if (!ceilings_.empty()) ceilings_.push_back(0);
  }
  /// Appends a node with everything it has: host, nproc, role, weight and ceiling. A cluster made
  /// from another's nodes keeps each field by this one call. O(1) amortized.
  void add(const node_spec& n) {
    add(n.host, n.nproc, n.role, n.weight);
    if (n.max_batch > 0 && ceilings_.empty()) ceilings_.assign(c_.node_count(), 0);
    if (!ceilings_.empty()) ceilings_.back() = n.max_batch > 0 ? n.max_batch : 0;
  }
  [[nodiscard]] std::size_t node_count() const noexcept { return c_.node_count(); }
  /// The cluster; the builder is left empty. O(n + r log r) for r runs of roles.
  [[nodiscard]] basic_cluster<Unused> finish() {
    // Runs sorted by text give each distinct role one id, in order of first appearance.
    const std::size_t r = runs_.size();
    vector<std::size_t> order(r);
    for (std::size_t k = 0; k < r; ++k) order[k] = k;
    detail::heap_sort(order.data(), r, [this](std::size_t a, std::size_t b) {
      const int cmp = run_text(a).compare(run_text(b));
      return cmp < 0 || (cmp == 0 && a < b);
    });
    vector<std::uint32_t> first_run(r);  // the first run with the same text
    for (std::size_t k = 0; k < r; ++k)
      first_run[order[k]] = k > 0 && run_text(order[k]) == run_text(order[k - 1])
                                ? first_run[order[k - 1]]
                                : static_cast<std::uint32_t>(order[k]);
    vector<std::uint32_t> id(r);
    vector<std::string_view> roles;
    for (std::size_t k = 0; k < r; ++k) {
      if (first_run[k] == k) {
        id[k] = static_cast<std::uint32_t>(roles.size());
        roles.push_back(run_text(k));
      } else {
        id[k] = id[first_run[k]];
      }
    }
    if (roles.size() > 1)
      for (std::uint32_t& role : c_.role_id_) role = id[role];
    else
      c_.role_id_.clear();
    c_.finish(roles);
    c_.max_batch_ = std::move(ceilings_);
    basic_cluster<Unused> out = std::move(c_);
    *this = basic_cluster_builder();
    return out;
  }
};

/// The run-time topology (see basic_cluster above).
using cluster = basic_cluster<>;
/// Builds a cluster node by node (see basic_cluster_builder above).
using cluster_builder = basic_cluster_builder<>;

template <class Unused>
template <class It>
void basic_cluster<Unused>::assign(It first, It last, std::size_t n) {
  basic_cluster_builder<Unused> b;
  std::size_t chars = 0;
  for (It it = first; it != last; ++it) chars += it->host.size();
  b.reserve(n, chars);
  for (It it = first; it != last; ++it) b.add(*it);
  *this = b.finish();
}

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
  const auto node_at = [nodes](std::size_t i) { return nodes[i]; };
  if (!options.allow_duplicate_hosts)
    detail::find_duplicate_hosts(N, node_at,
                                 detail::validation_scratch{idx.data(), idx_tmp.data(), key.data(),
                                                            key_tmp.data(), dup_of.data()});
  detail::validate_nodes(N, node_at, options, dup_of.data(), [&first](const diagnostic& d) {
    first = d;
    return false;
  });
  return first;
}

namespace detail {
// Every node whose host an earlier node has, as (node, first node with that host), in node
// order. Keys pack the upper 32 bits of the host's hash with the node index, so sorting them
// brings equal hosts together in node order: 8 bytes a node, O(n) as a rule. Runs that share the
// hash bits (duplicates, or rare collisions) are sorted on (full hash, host, index), O(k log k),
// so the worst case is O(n log n).
template <class NodeAt>
deferred<std::vector<std::pair<std::size_t, std::size_t>>, NodeAt> duplicate_hosts(std::size_t n,
                                                                                   NodeAt node_at) {
  deferred<std::vector<std::pair<std::size_t, std::size_t>>, NodeAt> dups;
  if (n > 0xffffffffu) {  // more nodes than 32-bit indices: the general algorithm
    deferred<std::vector<std::size_t>, NodeAt> idx(n), idx_tmp(n), dup_of(n);
    deferred<std::vector<std::uint64_t>, NodeAt> key(n), key_tmp(n);
    find_duplicate_hosts(
        n, node_at,
        validation_scratch{idx.data(), idx_tmp.data(), key.data(), key_tmp.data(), dup_of.data()});
    for (std::size_t i = 0; i < n; ++i)
      if (dup_of[i] != n) dups.emplace_back(i, dup_of[i]);
    return dups;
  }
  deferred<std::vector<std::uint64_t>, NodeAt> keys(n);
  for (std::size_t i = 0; i < n; ++i)
    keys[i] = (host_hash(node_at(i).host) & 0xffffffff00000000ull) | i;
  // In place, by the top 16 bits (American flag sort), then each bucket by its whole key: the
  // buckets hold n / 65536 keys on average, so this is linear, and it needs no second array.
  const auto less = [](std::uint64_t a, std::uint64_t b) { return a < b; };
  if (n <= 65536) {
    heap_sort(keys.data(), n, less);
  } else {
    deferred<std::vector<std::size_t>, NodeAt> start(65537, 0);
    for (std::size_t i = 0; i < n; ++i) ++start[(keys[i] >> 48) + 1];
    for (std::size_t b = 1; b <= 65536; ++b) start[b] += start[b - 1];
    deferred<std::vector<std::size_t>, NodeAt> next(start.begin(), start.end() - 1);
    for (std::size_t b = 0; b < 65536; ++b)
      while (next[b] < start[b + 1]) {
        std::uint64_t k = keys[next[b]];
        std::size_t home = static_cast<std::size_t>(k >> 48);
        while (home != b) {  // cycle each key to its bucket
          const std::uint64_t displaced = keys[next[home]];
          keys[next[home]++] = k;
          k = displaced;
          home = static_cast<std::size_t>(k >> 48);
        }
        keys[next[b]++] = k;
      }
    for (std::size_t b = 0; b < 65536; ++b)
      if (start[b + 1] - start[b] > 1)
        heap_sort(keys.data() + start[b], start[b + 1] - start[b], less);
  }
  deferred<std::vector<std::uint64_t>, NodeAt> full;  // a run's full hashes
  deferred<std::vector<std::size_t>, NodeAt> order;   // a run's positions, sorted
  std::size_t start = 0;
  while (start < n) {
    std::size_t end = start + 1;
    while (end < n && (keys[end] >> 32) == (keys[start] >> 32)) ++end;
    if (end - start > 1) {
      const std::size_t run = end - start;
      const std::uint64_t* run_keys = keys.data() + start;
      full.resize(run);
      order.resize(run);
      find_run_duplicates(
          run, node_at,
          [run_keys](std::size_t k) { return static_cast<std::size_t>(run_keys[k] & 0xffffffffu); },
          full.data(), order.data(),
          [&dups](std::size_t node, std::size_t first) { dups.emplace_back(node, first); });
    }
    start = end;
  }
  heap_sort(dups.data(), dups.size(),
            [](const auto& a, const auto& b) { return a.first < b.first; });
  return dups;
}

// Every problem, or only the first when `first_only`.
template <class NodeAt>
deferred<std::vector<diagnostic>, NodeAt> validate_all(std::size_t n, NodeAt node_at,
                                                       validate_options options,
                                                       bool first_only = false) {
  deferred<std::vector<std::pair<std::size_t, std::size_t>>, NodeAt> dups;
  if (!options.allow_duplicate_hosts) dups = duplicate_hosts(n, node_at);
  // The sparse duplicates read as the array validate_nodes expects, in increasing node order.
  struct sparse_duplicates {
    const deferred<std::vector<std::pair<std::size_t, std::size_t>>, NodeAt>& dups;
    std::size_t n;
    std::size_t next = 0;
    std::size_t operator[](std::size_t i) {
      while (next < dups.size() && dups[next].first < i) ++next;
      return next < dups.size() && dups[next].first == i ? dups[next].second : n;
    }
  } duplicate_of{dups, n};
  deferred<std::vector<diagnostic>, NodeAt> out;
  validate_nodes(n, node_at, options, duplicate_of, [&out, first_only](const diagnostic& d) {
    out.push_back(d);
    return !first_only;
  });
  return out;
}
}  // namespace detail

/// Every problem of a topology, in node order (empty when it is valid), as a
/// std::vector<diagnostic> (named through the template parameter, so that it is compiled only
/// where validate is called). O(N log N). The diagnostics own their text: they may outlive `c`.
template <class Unused>
[[nodiscard]] detail::deferred<std::vector<diagnostic>, Unused> validate(
    const basic_cluster<Unused>& c, validate_options options = {}) {
  return detail::validate_all(
      c.node_count(), [&c](std::size_t i) { return c.node(i); }, options);
}
/// Every problem of a fixed topology, in node order, as a std::vector<diagnostic>.
template <std::size_t N>
[[nodiscard]] detail::deferred<std::vector<diagnostic>, fixed_cluster<N>> validate(
    const fixed_cluster<N>& c, validate_options options = {}) {
  return detail::validate_all(
      N, [&c](std::size_t i) { return c.node(i); }, options);
}
/// The first problem of a run-time topology, or a diagnostic that converts to false.
template <class Unused>
[[nodiscard]] diagnostic first_error(const basic_cluster<Unused>& c,
                                     validate_options options = {}) {
  const auto first = detail::validate_all(
      c.node_count(), [&c](std::size_t i) { return c.node(i); }, options, true);
  return first.empty() ? diagnostic{} : first.front();
}

namespace detail {
// Instantiated by HETLAUNCH_STATIC_VALIDATE with the first problem's code and node index, which
// the compiler prints in "required from" notes; the failing assertion below says what it means.
template <errc Code, std::size_t Node>
struct static_validation {
  static_assert(Code != errc::empty_cluster,
                "hetlaunch: invalid topology: the cluster has no nodes");
  static_assert(
      Code != errc::bad_nproc,
      "hetlaunch: invalid topology: nproc must be at least 1 (the node index is static_validation's second argument)");
  static_assert(
      Code != errc::world_size_overflow,
      "hetlaunch: invalid topology: the world size exceeds INT_MAX (torch.distributed ranks are 32-bit)");
  static_assert(
      Code != errc::bad_host,
      "hetlaunch: invalid topology: a host is not a valid RFC 1123 name or IP literal (the node index is static_validation's second argument)");
  static_assert(
      Code != errc::duplicate_host,
      "hetlaunch: invalid topology: duplicate host; allow it with validate_options::allow_duplicate_hosts (the node index is static_validation's second argument)");
  static_assert(
      Code != errc::empty_role,
      "hetlaunch: invalid topology: a role is empty (the node index is static_validation's second argument)");
  static_assert(
      Code != errc::bad_role,
      "hetlaunch: invalid topology: a role has a blank or control character or starts with '-' (the node index is static_validation's second argument)");
  static_assert(
      Code != errc::bad_weight,
      "hetlaunch: invalid topology: a weight is not a decimal above 0 and at most 1000000 with at most 6 fractional digits (the node index is static_validation's second argument)");
  static constexpr bool ok = Code == errc::ok;
};
}  // namespace detail

}  // namespace hetlaunch

/// Fails the build when the fixed topology `c` (a constexpr variable) is invalid, with a message
/// that says what is wrong and, in the instantiation note, the node index. A declaration: usable
/// at namespace, class and block scope.
///   constexpr auto c = hetlaunch::make_cluster({{"a", 8}, {"a", 4}});
///   HETLAUNCH_STATIC_VALIDATE(c);
///   // error: ... duplicate host ... static_validation<errc::duplicate_host, 1>
#define HETLAUNCH_STATIC_VALIDATE(c) \
  HETLAUNCH_STATIC_VALIDATE_WITH(c, ::hetlaunch::validate_options{})

/// HETLAUNCH_STATIC_VALIDATE with options, e.g. to allow several agents on one host:
///   constexpr hetlaunch::validate_options shared{/*allow_duplicate_hosts=*/true};
///   HETLAUNCH_STATIC_VALIDATE_WITH(c, shared);
#define HETLAUNCH_STATIC_VALIDATE_WITH(c, options)                                               \
  static_assert(                                                                                 \
      ::hetlaunch::detail::static_validation<::hetlaunch::first_error((c), (options)).code,      \
                                             ::hetlaunch::first_error((c), (options)).node>::ok, \
      "hetlaunch: invalid topology (see the message above)")

#endif  // HETLAUNCH_CLUSTER_HPP
