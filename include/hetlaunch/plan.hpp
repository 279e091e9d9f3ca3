// SPDX-License-Identifier: MIT
// hetlaunch: launch_plan, a topology and launch options validated once, whose every output then
// costs only its own size.
#ifndef HETLAUNCH_PLAN_HPP
#define HETLAUNCH_PLAN_HPP

#include <climits>
#include <cstddef>
#include <string>
#include <type_traits>
#include <utility>
#include <vector>

#include "cluster.hpp"
#include "diagnostic.hpp"
#include "result.hpp"
#include "accelerate.hpp"
#include "shares.hpp"
#include "shell.hpp"
#include "spawn.hpp"
#include "torchrun_argv.hpp"
#include "worker_check.hpp"
#include "worker_env.hpp"

namespace hetlaunch {

class launch_plan;

namespace detail {
// The topology's problems, then the options'.
template <class Topology>
std::vector<diagnostic> plan_problems(const Topology& c, const launch_options& options) {
  std::vector<diagnostic> out = validate(c, options.validation);
  for (const diagnostic& d : option_problems(c, options)) out.push_back(d);
  return out;
}
}  // namespace detail

/// Every problem of the topology and the launch options at once, in order: the topology's
/// (validate), then the options' (port, master address, rdzv_id with c10d, program, max_restarts,
/// rendezvous_timeout, flag style, extra torchrun arguments that name a computed option, a script
/// that starts with '-'). A missing script is not a problem: a plan without one serves
/// environments. The diagnostics own their text. O(N).
[[nodiscard]] inline std::vector<diagnostic> validate_plan(const cluster& c,
                                                           const launch_options& options) {
  return detail::plan_problems(c, options);
}

/// The launch options' problems alone, for a topology that was validated already (one a
/// hostfile or Slurm reader returned, or a plan's): validate_plan without validate's checks.
[[nodiscard]] inline std::vector<diagnostic> launch_option_problems(const cluster& c,
                                                                    const launch_options& options) {
  return detail::option_problems(c, options);
}

/// A topology and its launch options, validated once by make_plan. It owns copies of both, so
/// nothing it returns refers to the caller's storage, and every output costs O(its own size):
/// building every node's command of a 100,000-node plan is linear, not quadratic.
///
///   auto plan = hetlaunch::make_plan(c, options);
///   if (!plan) { for (const auto& d : plan.error()) std::cerr << d.message() << '\n'; return 1; }
///   for (std::size_t i = 0; i < plan->topology().node_count(); ++i)
///     std::cout << hetlaunch::shell_join(plan->torchrun_argv(i)) << '\n';
class launch_plan {
  cluster topology_;
  launch_options options_;
  bool counts_differ_ = false;
  std::vector<node_batch> batches_;  // every node's work share; empty without a global batch

  launch_plan(cluster c, launch_options o)
      : topology_(std::move(c)),
        options_(std::move(o)),
        counts_differ_(detail::nodes_differ(topology_)) {
    // Validated already: the split alone, O(N).
    if (options_.global_batch > 0)
      batches_ = detail::split_valid(
          topology_.node_count(), [this](std::size_t i) { return topology_.nproc(i); },
          [this](std::size_t i) { return topology_.node(i).weight; }, topology_.world_size(),
          options_.global_batch);
  }
  const node_batch* share(std::size_t node) const noexcept {
    return batches_.empty() ? nullptr : &batches_[node];
  }
  friend result<launch_plan, std::vector<diagnostic>> make_plan(const cluster&,
                                                                const launch_options&);

  diagnostic node_error(std::size_t node) const {
    return diagnostic::of(errc::node_out_of_range)
        .with_value(static_cast<long long>(node))
        .with_limit(static_cast<long long>(topology_.node_count()));
  }
  // Why worker `local_rank` of `node` has no environment to give, if it has none.
  result<bool, diagnostic> worker_error(std::size_t node, int local_rank) const {
    if (node >= topology_.node_count()) return node_error(node);
    const auto rank = topology_.try_global_rank(node, local_rank);
    if (!rank) return rank.error();
    if (options_.backend == rendezvous::c10d)
      return diagnostic::of(errc::ranks_decided_at_rendezvous);
    return true;
  }

 public:
  /// The topology (fixed_cluster inputs are copied into a cluster).
  [[nodiscard]] const cluster& topology() const noexcept { return topology_; }
  /// The launch options.
  [[nodiscard]] const launch_options& options() const noexcept { return options_; }
  /// Whether the nodes run different numbers of workers (then TORCH_ELASTIC_WORKER_IDENTICAL=1
  /// would break the job). O(1): computed once.
  [[nodiscard]] bool counts_differ() const noexcept { return counts_differ_; }
  /// Node `node`'s torchrun argv (see hetlaunch::torchrun_argv); node_out_of_range, or
  /// empty_script when the plan has no script.
  [[nodiscard]] result<std::vector<std::string>, diagnostic> try_torchrun_argv(
      std::size_t node) const {
    if (node >= topology_.node_count()) return node_error(node);
    if (options_.script.empty()) return diagnostic::of(errc::empty_script);
    return detail::build_torchrun_argv(topology_, node, options_);
  }
  /// try_torchrun_argv(node).value(). Preconditions: node < node_count() and a script.
  [[nodiscard]] std::vector<std::string> torchrun_argv(std::size_t node) const {
    return try_torchrun_argv(node).value();
  }

  /// The environment torchrun's agent gives worker `local_rank` of `node` (see
  /// hetlaunch::worker_env): node_out_of_range, local_rank_out_of_range, or
  /// ranks_decided_at_rendezvous with c10d.
  [[nodiscard]] result<environment, diagnostic> try_worker_env(std::size_t node, int local_rank,
                                                               int restart_count = 0) const {
    if (auto e = worker_error(node, local_rank); !e) return e.error();
    return detail::build_worker_env(topology_, node, local_rank, options_, restart_count,
                                    detail::spawn_mode::torchrun, nullptr, share(node));
  }
  /// try_worker_env(...).value().
  [[nodiscard]] environment worker_env(std::size_t node, int local_rank,
                                       int restart_count = 0) const {
    return try_worker_env(node, local_rank, restart_count).value();
  }
  /// The environment torchrun gives the worker when torchrun runs with `agent` (see
  /// hetlaunch::worker_env_from_agent); the same errors as try_worker_env.
  [[nodiscard]] result<environment, diagnostic> try_worker_env_from_agent(
      std::size_t node, int local_rank, const environment& agent, int restart_count = 0) const {
    if (auto e = worker_error(node, local_rank); !e) return e.error();
    return detail::build_worker_env(topology_, node, local_rank, options_, restart_count,
                                    detail::spawn_mode::torchrun, &agent, share(node));
  }
  /// The environment for starting the worker without torchrun (see hetlaunch::direct_worker_env).
  [[nodiscard]] result<environment, diagnostic> try_direct_worker_env(std::size_t node,
                                                                      int local_rank) const {
    if (auto e = worker_error(node, local_rank); !e) return e.error();
    return detail::build_worker_env(topology_, node, local_rank, options_, 0,
                                    detail::spawn_mode::direct, nullptr, share(node));
  }
  /// try_direct_worker_env(...).value().
  [[nodiscard]] environment direct_worker_env(std::size_t node, int local_rank) const {
    return try_direct_worker_env(node, local_rank).value();
  }
  /// What torchrun's own environment on `node` needs (see hetlaunch::try_agent_env): the node's
  /// devices and, with a global batch, its work share; node_out_of_range.
  [[nodiscard]] result<environment, diagnostic> try_agent_env(std::size_t node) const {
    if (node >= topology_.node_count()) return node_error(node);
    environment env = hetlaunch::agent_env(topology_, node);
    detail::append_batch_env(env, options_, share(node), topology_.max_batch(node));
    return env;
  }
  /// try_agent_env(node).value().
  [[nodiscard]] environment agent_env(std::size_t node) const {
    return try_agent_env(node).value();
  }
  /// Whether the plan splits a global batch (launch_options::global_batch above 0).
  [[nodiscard]] bool has_shares() const noexcept { return !batches_.empty(); }
  /// Node `node`'s part of each step (see split_batch): node_out_of_range, or bad_global_batch
  /// when the plan has no global batch. O(1).
  [[nodiscard]] result<node_batch, diagnostic> try_node_batch(std::size_t node) const {
    if (node >= topology_.node_count()) return node_error(node);
    if (batches_.empty()) {
      return diagnostic::of(errc::bad_global_batch).with_variable("global_batch");
    }
    return batches_[node];
  }
  /// try_node_batch(node).value().
  [[nodiscard]] node_batch node_batch_of(std::size_t node) const {
    return try_node_batch(node).value();
  }
  /// Worker `local_rank` of `node`'s part of each step (see batch_of_rank); the errors of
  /// try_node_batch, and local_rank_out_of_range. O(1).
  [[nodiscard]] result<rank_batch, diagnostic> try_rank_batch(std::size_t node,
                                                              int local_rank) const {
    const auto n = try_node_batch(node);
    if (!n) return n.error();
    if (const auto rank = topology_.try_global_rank(node, local_rank); !rank) return rank.error();
    return batch_of_rank(*n, topology_.nproc(node), local_rank);
  }
  /// try_rank_batch(node, local_rank).value().
  [[nodiscard]] rank_batch rank_batch_of(std::size_t node, int local_rank) const {
    return try_rank_batch(node, local_rank).value();
  }

  /// Machine `node`'s `accelerate launch` argv (see hetlaunch::accelerate_argv): node_out_of_range,
  /// empty_script, or too_few_processes when the machine's count times the machine count is
  /// below 2. The plan's options were checked once: accelerate's static rendezvous and its
  /// command ask nothing more of them, so this costs the command's own size.
  [[nodiscard]] result<std::vector<std::string>, diagnostic> try_accelerate_argv(
      std::size_t node) const {
    if (node >= topology_.node_count()) return node_error(node);
    if (options_.script.empty()) return diagnostic::of(errc::empty_script);
    return detail::build_accelerate_argv(topology_, node, options_);
  }
  /// try_accelerate_argv(node).value(). Preconditions: node < node_count(), a script, and at least
  /// two processes in the machine's command.
  [[nodiscard]] std::vector<std::string> accelerate_argv(std::size_t node) const {
    return try_accelerate_argv(node).value();
  }
};

/// Validates `c` and `options` once (validate_plan) and, when there is no problem, returns a plan
/// that owns copies of both; otherwise every problem (diagnostics own their text).
[[nodiscard]] inline result<launch_plan, std::vector<diagnostic>> make_plan(
    const cluster& c, const launch_options& options) {
  std::vector<diagnostic> problems = validate_plan(c, options);
  if (!problems.empty()) return problems;
  return launch_plan(c, options);
}
/// make_plan for a fixed topology, copied into a cluster.
template <std::size_t N>
[[nodiscard]] result<launch_plan, std::vector<diagnostic>> make_plan(
    const fixed_cluster<N>& c, const launch_options& options) {
  std::vector<diagnostic> problems = detail::plan_problems(c, options);
  if (!problems.empty()) return problems;
  auto plan = make_plan(cluster(c), options);  // valid: cannot fail
  return plan;
}

/// check_worker_env against a plan: the topology's variables, and with a global batch also
/// HETLAUNCH_GLOBAL_BATCH, HETLAUNCH_NODE_BATCH and HETLAUNCH_NODE_BATCH_OFFSET, which must be
/// set and equal the plan's for the worker's node (GROUP_RANK); a difference is batch_mismatch.
/// Without a global batch, each of them that is set is unplanned_share. A HETLAUNCH_MAX_BATCH
/// that differs from the node's ceiling is batch_mismatch too.
///   for (const auto& d : hetlaunch::check_worker_env(plan, std::getenv))
///     std::cerr << d.message() << '\n';
template <class Getenv,
          std::enable_if_t<!std::is_convertible<Getenv, const environment&>::value, int> = 0>
[[nodiscard]] std::vector<diagnostic> check_worker_env(const launch_plan& plan, Getenv&& get) {
  std::vector<diagnostic> out = detail::compare_worker_env(plan.topology(), get);
  if (!plan.has_shares()) {
    for (std::string_view name : variables::share)
      if (const char* value = get(name.data()))
        out.push_back(diagnostic::of(errc::unplanned_share).with_variable(name).with_text(value));
  }
  // A batch and an offset are counts: a '-' makes them no number.
  const auto read = [&](const char* name, long long& value) {
    return detail::read_env_integer(get, name, /*may_be_negative=*/false, value, out);
  };
  long long group = -1;
  const char* group_text = get("GROUP_RANK");
  const bool have_node = group_text && detail::parse_decimal(group_text, LLONG_MAX, group) &&
                         static_cast<unsigned long long>(group) < plan.topology().node_count();
  const auto compare = [&](const char* name, long long planned, bool per_node) {
    long long value = 0;
    if (!read(name, value) || value == planned) return;
    diagnostic d = diagnostic::of(errc::batch_mismatch)
                       .with_variable(name)
                       .with_value(value)
                       .with_limit(planned)
                       .with_text(get(name));
    if (per_node) {
      const node_spec spec = plan.topology().node(static_cast<std::size_t>(group));
      d.with_node(static_cast<std::size_t>(group)).with_host(spec.host).with_role(spec.role);
    }
    out.push_back(d);
  };
  if (plan.has_shares())
    compare(variables::global_batch.data(), plan.options().global_batch, false);
  if (plan.has_shares() && have_node) {
    const node_batch share = plan.node_batch_of(static_cast<std::size_t>(group));
    compare(variables::node_batch.data(), share.batch, true);
    compare(variables::node_batch_offset.data(), share.offset, true);
  }
  // The node's ceiling, when it has one and the worker was given one.
  if (have_node && plan.topology().max_batch(static_cast<std::size_t>(group)) > 0)
    compare(variables::max_batch.data(), plan.topology().max_batch(static_cast<std::size_t>(group)),
            true);
  return out;
}
/// check_worker_env against a plan, over an environment list (the later of two equal names wins).
[[nodiscard]] inline std::vector<diagnostic> check_worker_env(const launch_plan& plan,
                                                              const environment& env) {
  return check_worker_env(plan, detail::environment_lookup{env});
}

}  // namespace hetlaunch

#endif  // HETLAUNCH_PLAN_HPP
