// SPDX-License-Identifier: MIT
// hetlaunch: checking the environment a worker actually got against the plan.
#ifndef HETLAUNCH_WORKER_CHECK_HPP
#define HETLAUNCH_WORKER_CHECK_HPP

#include <climits>
#include <cstddef>
#include <string_view>
#include <utility>
#include <vector>

#include "cluster.hpp"
#include "diagnostic.hpp"
#include "launch_options.hpp"

namespace hetlaunch {

namespace detail {

// Whether the nodes run different numbers of workers, which TORCH_ELASTIC_WORKER_IDENTICAL=1
// would make torchrun ignore.
inline bool nodes_differ(const cluster& c) noexcept {
  for (std::size_t i = 1; i < c.node_count(); ++i)
    if (c.nproc(i) != c.nproc(0)) return true;
  return false;
}

template <class Getenv>
std::vector<diagnostic> compare_worker_env(const cluster& c, Getenv&& get) {
  std::vector<diagnostic> out;
  const auto read = [&](const char* name, long long& value) {
    const char* text = get(name);
    diagnostic d{};
    d.variable = name;
    if (text == nullptr) {
      d.code = errc::env_missing;
      out.push_back(d);
      return false;
    }
    const std::string_view s(text);
    if (!detail::parse_signed(s, LLONG_MAX, value)) {
      d.code = errc::env_not_a_number;
      d.text = s;
      out.push_back(d);
      return false;
    }
    return true;
  };
  long long world = 0, group = 0, local_world = 0, rank = 0, local = 0;
  const bool have_world = read("WORLD_SIZE", world);
  const bool have_group = read("GROUP_RANK", group);
  const bool have_local_world = read("LOCAL_WORLD_SIZE", local_world);
  const bool have_rank = read("RANK", rank);
  const bool have_local = read("LOCAL_RANK", local);
  const long long planned_world = c.node_count() ? c.world_size() : 0;
  if (have_world && world != planned_world) {
    diagnostic d{};
    d.code = errc::world_size_mismatch;
    d.variable = "WORLD_SIZE";
    d.value = world;
    d.limit = planned_world;
    out.push_back(d);
  }
  const char* identical = get("TORCH_ELASTIC_WORKER_IDENTICAL");
  if (nodes_differ(c) && identical && std::string_view(identical) == "1") {
    diagnostic d{};
    d.code = errc::identical_workers_on_heterogeneous;
    d.variable = "TORCH_ELASTIC_WORKER_IDENTICAL";
    out.push_back(d);
  }
  if (!have_group) return out;
  if (group < 0 || static_cast<unsigned long long>(group) >= c.node_count()) {
    diagnostic d{};
    d.code = errc::group_rank_out_of_range;
    d.variable = "GROUP_RANK";
    d.value = group;
    d.limit = static_cast<long long>(c.node_count());
    out.push_back(d);
    return out;
  }
  const auto node = static_cast<std::size_t>(group);
  const node_spec spec = c.node(node);
  diagnostic here{};
  here.node = node;
  here.host = spec.host;
  here.role = spec.role;
  if (have_local_world && local_world != spec.nproc) {
    diagnostic d = here;
    d.code = errc::local_world_size_mismatch;
    d.variable = "LOCAL_WORLD_SIZE";
    d.value = local_world;
    d.limit = spec.nproc;
    out.push_back(d);
  }
  if (have_local && (local < 0 || local >= spec.nproc)) {
    diagnostic d = here;
    d.code = errc::local_rank_out_of_range;
    d.variable = "LOCAL_RANK";
    d.value = local;
    d.limit = spec.nproc;
    out.push_back(d);
  } else if (have_local && have_rank && rank != c.global_rank(node, static_cast<int>(local))) {
    diagnostic d = here;
    d.code = errc::rank_mismatch;
    d.variable = "RANK";
    d.value = rank;
    d.local_rank = static_cast<int>(local);
    d.limit = c.global_rank(node, static_cast<int>(local));
    out.push_back(d);
  }
  return out;
}

}  // namespace detail

/// Compares the variables a worker actually got with the plan (static rendezvous), and returns
/// every disagreement: WORLD_SIZE, GROUP_RANK outside the plan, LOCAL_WORLD_SIZE not the node's
/// nproc (a node started with the wrong --nproc_per_node), LOCAL_RANK outside the node, RANK not
/// the planned global rank, missing or non-numeric variables, and TORCH_ELASTIC_WORKER_IDENTICAL=1
/// on a layout whose nodes differ. `get(name)` returns the value or nullptr, as std::getenv does:
///   for (const auto& d : hetlaunch::check_worker_env(plan, std::getenv)) std::cerr << d.message();
/// The diagnostics own copies of the values they quote.
template <class Getenv>
[[nodiscard]] std::vector<diagnostic> check_worker_env(const cluster& c, Getenv&& get) {
  return detail::compare_worker_env(c, std::forward<Getenv>(get));
}
namespace detail {
// An environment list read as std::getenv reads the process's: the later of two equal names wins.
struct environment_lookup {
  const environment& env;
  const char* operator()(const char* name) const {
    const char* found = nullptr;
    for (const auto& v : env)
      if (v.first == name) found = v.second.c_str();
    return found;
  }
};
}  // namespace detail

/// check_worker_env over an environment list (the later of two equal names wins).
[[nodiscard]] inline std::vector<diagnostic> check_worker_env(const cluster& c,
                                                              const environment& env) {
  return detail::compare_worker_env(c, detail::environment_lookup{env});
}

}  // namespace hetlaunch

#endif  // HETLAUNCH_WORKER_CHECK_HPP
