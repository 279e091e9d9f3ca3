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
#include "worker_variables.hpp"

namespace hetlaunch {

namespace detail {

// Whether the nodes run different numbers of workers, which TORCH_ELASTIC_WORKER_IDENTICAL=1
// would make torchrun ignore.
inline bool nodes_differ(const cluster& c) noexcept {
  for (std::size_t i = 1; i < c.node_count(); ++i)
    if (c.nproc(i) != c.nproc(0)) return true;
  return false;
}

// Reads variable `name` of a worker's environment as an integer (with a leading '-' only when
// `may_be_negative`). When it is not set (env_missing) or not such an integer (env_not_a_number),
// reports why to `out` and returns false.
template <class Getenv>
bool read_env_integer(Getenv&& get, const char* name, bool may_be_negative, long long& value,
                      std::vector<diagnostic>& out) {
  const char* text = get(name);
  if (text == nullptr) {
    out.push_back(diagnostic::of(errc::env_missing).with_variable(name));
    return false;
  }
  const std::string_view s(text);
  if (!(may_be_negative ? parse_signed(s, LLONG_MAX, value) : parse_decimal(s, LLONG_MAX, value))) {
    out.push_back(diagnostic::of(errc::env_not_a_number).with_variable(name).with_text(s));
    return false;
  }
  return true;
}

template <class Getenv>
std::vector<diagnostic> compare_worker_env(const cluster& c, Getenv&& get) {
  std::vector<diagnostic> out;
  // A negative rank is read as a number, and then reported as out of range.
  const auto read = [&](const char* name, long long& value) {
    return read_env_integer(get, name, /*may_be_negative=*/true, value, out);
  };
  long long world = 0, group = 0, local_world = 0, rank = 0, local = 0;
  const bool have_world = read("WORLD_SIZE", world);
  const bool have_group = read("GROUP_RANK", group);
  const bool have_local_world = read("LOCAL_WORLD_SIZE", local_world);
  const bool have_rank = read("RANK", rank);
  const bool have_local = read("LOCAL_RANK", local);
  const long long planned_world = c.node_count() ? c.world_size() : 0;
  if (have_world && world != planned_world) {
    out.push_back(diagnostic::of(errc::world_size_mismatch)
                      .with_variable("WORLD_SIZE")
                      .with_value(world)
                      .with_limit(planned_world));
  }
  const char* identical = get(variables::worker_identical.data());
  if (nodes_differ(c) && identical && std::string_view(identical) == "1") {
    out.push_back(diagnostic::of(errc::identical_workers_on_heterogeneous)
                      .with_variable(variables::worker_identical));
  }
  if (!have_group) return out;
  if (group < 0 || static_cast<unsigned long long>(group) >= c.node_count()) {
    out.push_back(diagnostic::of(errc::group_rank_out_of_range)
                      .with_variable("GROUP_RANK")
                      .with_value(group)
                      .with_limit(static_cast<long long>(c.node_count())));
    return out;
  }
  const auto node = static_cast<std::size_t>(group);
  const node_spec spec = c.node(node);
  // A problem of this node's worker.
  const auto here = [&](errc code, const char* variable, long long value, long long limit) {
    return diagnostic::of(code)
        .with_node(node)
        .with_host(spec.host)
        .with_role(spec.role)
        .with_variable(variable)
        .with_value(value)
        .with_limit(limit);
  };
  if (have_local_world && local_world != spec.nproc)
    out.push_back(
        here(errc::local_world_size_mismatch, "LOCAL_WORLD_SIZE", local_world, spec.nproc));
  if (have_local && (local < 0 || local >= spec.nproc)) {
    out.push_back(here(errc::local_rank_out_of_range, "LOCAL_RANK", local, spec.nproc));
  } else if (have_local && have_rank && rank != c.global_rank(node, static_cast<int>(local))) {
    out.push_back(
        here(errc::rank_mismatch, "RANK", rank, c.global_rank(node, static_cast<int>(local)))
            .with_local_rank(static_cast<int>(local)));
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
