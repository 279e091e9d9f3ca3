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

/// What a plan is made for (make_plan's third argument); the values combine with `|`. A plan
/// refuses to be made only for the problems of what it is made for; its other outputs refuse
/// for theirs when asked.
enum class plan_outputs : unsigned {
  torchrun_commands = 1U,    ///< torchrun_argv
  worker_environments = 2U,  ///< worker_env, worker_env_from_agent, direct_worker_env
  work_shares = 4U,          ///< agent_env, node_batch, rank_batch
  accelerate_commands = 8U,  ///< accelerate_argv
  all = 15U,
};
[[nodiscard]] constexpr plan_outputs operator|(plan_outputs a, plan_outputs b) noexcept {
  return static_cast<plan_outputs>(static_cast<unsigned>(a) | static_cast<unsigned>(b));
}

namespace detail {
// The topology's problems, then the options'.
template <class Topology>
std::vector<diagnostic> plan_problems(const Topology& c, const launch_options& options) {
  std::vector<diagnostic> out = validate(c, options.validation);
  for (const diagnostic& d : option_problems(c, options)) out.push_back(d);
  return out;
}

// The outputs an option's problem stops. A worker's environment carries the rendezvous, the
// restart limit and the share, but no command; torchrun's command carries no share; accelerate's
// has its own program and rendezvous (always static) and no torchrun arguments; a work share is
// the topology and the global batch alone.
constexpr plan_outputs outputs_stopped_by(errc code) noexcept {
  using o = plan_outputs;
  switch (code) {
    case errc::bad_port:
    case errc::bad_master_addr:
    case errc::bad_max_restarts:
      return o::torchrun_commands | o::worker_environments | o::accelerate_commands;
    case errc::missing_rdzv_id:
    case errc::virtual_local_rank:
      return o::torchrun_commands | o::worker_environments;
    case errc::bad_global_batch:
    case errc::global_batch_too_small:
      return o::worker_environments | o::work_shares;
    case errc::script_looks_like_option:
      return o::torchrun_commands | o::accelerate_commands;
    case errc::empty_program:
    case errc::bad_rendezvous_timeout:
    case errc::dash_flags_need_torch_2:
    case errc::overriding_torchrun_arg:
    case errc::binding_entrypoint:
      return o::torchrun_commands;
    default:  // the topology's: every output
      return o::all;
  }
}
// Whether a problem with `code` stops any of `outputs`.
constexpr bool stops(errc code, plan_outputs outputs) noexcept {
  return (static_cast<unsigned>(outputs_stopped_by(code)) & static_cast<unsigned>(outputs)) != 0;
}
// Node index `node` of a topology of `count` nodes, which it is not.
inline diagnostic node_out_of_range(std::size_t node, std::size_t count) {
  return diagnostic::of(errc::node_out_of_range)
      .with_value(static_cast<long long>(node))
      .with_limit(static_cast<long long>(count));
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
/// building every node's command of a 100,000-node plan is linear, not quadratic. Its topology is
/// valid, and so are the options of the outputs it was made for (all of them unless make_plan
/// was told otherwise); a problem of its options stops only the outputs that depend on that
/// option, and problems() lists them.
///
///   auto plan = hetlaunch::make_plan(c, options);
///   if (!plan) { for (const auto& d : plan.error()) std::cerr << d.message() << '\n'; return 1; }
///   for (std::size_t i = 0; i < plan->topology().node_count(); ++i)
///     std::cout << hetlaunch::shell_join(plan->torchrun_argv(i)) << '\n';
class launch_plan {
  cluster topology_;
  launch_options options_;
  std::vector<diagnostic> problems_;  // the options', in validate_plan's order
  bool counts_differ_ = false;
  std::vector<node_batch> batches_;  // every node's work share; empty without a global batch

  launch_plan(cluster c, launch_options o, std::vector<diagnostic> problems)
      : topology_(std::move(c)),
        options_(std::move(o)),
        problems_(std::move(problems)),
        counts_differ_(detail::nodes_differ(topology_)) {
    // Validated already: the split alone, O(N).
    if (options_.global_batch > 0 && !first_problem(plan_outputs::work_shares))
      batches_ = detail::split_valid(
          topology_.node_count(), [this](std::size_t i) { return topology_.nproc(i); },
          [this](std::size_t i) { return topology_.node(i).weight; }, topology_.world_size(),
          options_.global_batch);
  }
  const node_batch* share(std::size_t node) const noexcept {
    return batches_.empty() ? nullptr : &batches_[node];
  }
  friend result<launch_plan, std::vector<diagnostic>> make_plan(const cluster&,
                                                                const launch_options&,
                                                                plan_outputs);

  // The first problem of the options that stops `output`, if any.
  const diagnostic* first_problem(plan_outputs output) const noexcept {
    for (const diagnostic& d : problems_)
      if (detail::stops(d.code, output)) return &d;
    return nullptr;
  }
  diagnostic node_error(std::size_t node) const {
    return detail::node_out_of_range(node, topology_.node_count());
  }
  // Why `node`'s `output` cannot be given, if it cannot: the index, then the options.
  result<bool, diagnostic> output_error(std::size_t node, plan_outputs output) const {
    if (node >= topology_.node_count()) return node_error(node);
    if (const diagnostic* d = first_problem(output)) return *d;
    return true;
  }
  // Why worker `local_rank` of `node` has no environment to give, if it has none.
  result<bool, diagnostic> worker_error(std::size_t node, int local_rank) const {
    if (auto e = output_error(node, plan_outputs::worker_environments); !e) return e.error();
    if (options_.backend == rendezvous::c10d)
      return diagnostic::of(errc::ranks_decided_at_rendezvous);
    const auto rank = topology_.try_global_rank(node, local_rank);
    if (!rank) return rank.error();
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
  /// The problems of the options, in validate_plan's order, of a plan made for some outputs only;
  /// each stops only the outputs that depend on its option (the port stops the commands and the
  /// workers' environments, the global batch the environments and the shares, the program
  /// torchrun's command). Empty for a plan made for all outputs.
  [[nodiscard]] const std::vector<diagnostic>& problems() const noexcept { return problems_; }
  /// Node `node`'s torchrun argv (see hetlaunch::torchrun_argv); node_out_of_range, the first
  /// problem of the options the command depends on (every one but the global batch's), or
  /// empty_script when the plan has no script.
  [[nodiscard]] result<std::vector<std::string>, diagnostic> try_torchrun_argv(
      std::size_t node) const {
    if (auto e = output_error(node, plan_outputs::torchrun_commands); !e) return e.error();
    if (options_.script.empty()) return diagnostic::of(errc::empty_script);
    return detail::build_torchrun_argv(topology_, node, options_);
  }
  /// try_torchrun_argv(node).value(). Preconditions: node < node_count() and a script.
  [[nodiscard]] std::vector<std::string> torchrun_argv(std::size_t node) const {
    return try_torchrun_argv(node).value();
  }

  /// The environment torchrun's agent gives worker `local_rank` of `node` (see
  /// hetlaunch::worker_env): node_out_of_range, the first problem of the options an environment
  /// depends on (the port, the master address, the run id with c10d, the restart limit, the
  /// global batch, an extra torchrun argument that changes the ranks), ranks_decided_at_rendezvous
  /// with c10d, or local_rank_out_of_range.
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
  /// devices and, with a global batch, its work share; node_out_of_range, or the global batch's
  /// problem.
  [[nodiscard]] result<environment, diagnostic> try_agent_env(std::size_t node) const {
    if (auto e = output_error(node, plan_outputs::work_shares); !e) return e.error();
    environment env = hetlaunch::agent_env(topology_, node);
    detail::append_batch_env(env, options_, share(node), topology_.max_batch(node),
                             topology_.node(node).host);
    return env;
  }
  /// try_agent_env(node).value().
  [[nodiscard]] environment agent_env(std::size_t node) const {
    return try_agent_env(node).value();
  }
  /// The one rule for what a launcher does to node `node`'s environment before its torchrun
  /// starts (the ssh node script, `exec`, a direct spawn, `env`, a JobSet pod, a Slurm step):
  /// `set` is the node's agent_env, then `user` (the caller's own variables: --env, an env
  /// file), then HETLAUNCH_RESTART_COUNT when `restart_count` is 0 or more; `unset` names every
  /// variable the launch owns that `set` has no value for (an inherited one would hand the
  /// workers a share, a ceiling, an attempt or a calibration that this launch does not have), and
  /// TORCH_ELASTIC_WORKER_IDENTICAL when the nodes' counts differ. Errors: those of
  /// try_agent_env, and owned_variable for a name of `user` that the launch owns.
  [[nodiscard]] result<node_variables, diagnostic> try_node_variables(
      std::size_t node, const environment& user = {}, int restart_count = -1) const {
    auto agent = try_agent_env(node);
    if (!agent) return agent.error();
    node_variables out;
    out.set = std::move(*agent);
    for (const auto& v : user) {
      if (is_owned_variable(v.first))
        return diagnostic::of(errc::owned_variable).with_text(v.first);
      out.set.push_back(v);
    }
    if (restart_count >= 0)
      out.set.emplace_back(variables::restart_count, std::to_string(restart_count));
    for (std::string_view name : variables::owned) {
      bool given = false;
      for (const auto& v : out.set) given = given || v.first == name;
      if (!given) out.unset.push_back(name);
    }
    if (counts_differ_) out.unset.push_back(variables::worker_identical);
    return out;
  }
  /// try_node_variables(...).value().
  [[nodiscard]] node_variables node_variables_of(std::size_t node, const environment& user = {},
                                                 int restart_count = -1) const {
    return try_node_variables(node, user, restart_count).value();
  }
  /// Whether the plan splits a global batch (launch_options::global_batch above 0).
  [[nodiscard]] bool has_shares() const noexcept { return !batches_.empty(); }
  /// Node `node`'s part of each step (see split_batch): node_out_of_range, the global batch's
  /// problem, or bad_global_batch when the plan has no global batch. O(1).
  [[nodiscard]] result<node_batch, diagnostic> try_node_batch(std::size_t node) const {
    if (auto e = output_error(node, plan_outputs::work_shares); !e) return e.error();
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
  /// the first problem of the options the command depends on (the port, the master address, the
  /// restart limit, a script that starts with '-'), empty_script, binding_not_carried, or
  /// too_few_processes when the machine's count times the machine count is below 2. The command
  /// has its own program and always the static rendezvous, and carries no torchrun arguments.
  /// This costs the command's own size.
  [[nodiscard]] result<std::vector<std::string>, diagnostic> try_accelerate_argv(
      std::size_t node) const {
    if (auto e = output_error(node, plan_outputs::accelerate_commands); !e) return e.error();
    if (options_.script.empty()) return diagnostic::of(errc::empty_script);
    return detail::build_accelerate_argv(topology_, node, options_);
  }
  /// try_accelerate_argv(node).value(). Preconditions: node < node_count(), a script, and at least
  /// two processes in the machine's command.
  [[nodiscard]] std::vector<std::string> accelerate_argv(std::size_t node) const {
    return try_accelerate_argv(node).value();
  }
};

/// Validates `c` and `options` once (validate_plan) and, when there is no problem of the topology
/// or of the options the outputs `made_for` depend on, returns a plan that owns copies of both;
/// otherwise every problem, the options' included (diagnostics own their text). Made for all
/// outputs (the default), a plan has no problem left; made for some, its other outputs refuse for
/// the options' problems that concern them (problems()). A scheduler that wants only the
/// workers' environments makes a plan for plan_outputs::worker_environments: it needs no script
/// and no program.
[[nodiscard]] inline result<launch_plan, std::vector<diagnostic>> make_plan(
    const cluster& c, const launch_options& options, plan_outputs made_for = plan_outputs::all) {
  std::vector<diagnostic> problems = validate(c, options.validation);
  bool refused = !problems.empty();
  for (diagnostic& d : detail::option_problems(c, options)) {
    refused = refused || detail::stops(d.code, made_for);
    problems.push_back(std::move(d));
  }
  if (refused) return problems;
  return launch_plan(c, options, std::move(problems));
}
/// make_plan for a fixed topology, copied into a cluster.
template <std::size_t N>
[[nodiscard]] result<launch_plan, std::vector<diagnostic>> make_plan(
    const fixed_cluster<N>& c, const launch_options& options,
    plan_outputs made_for = plan_outputs::all) {
  if (!validate(c, options.validation).empty()) return detail::plan_problems(c, options);
  return make_plan(cluster(c), options, made_for);
}

/// Every problem that stops torchrun_argv(c, node, options), in order: the topology's (validate),
/// the node index, master_port, master_addr, rdzv_id (c10d), max_restarts, program,
/// rendezvous_timeout, flag style, extra torchrun arguments naming a computed option, a script
/// that starts with '-', and a missing script. Empty when the command can be built. A c10d
/// launch is sound, but its workers' ranks are decided when the agents meet: try_worker_env
/// refuses it with ranks_decided_at_rendezvous, since no environment can be predicted.
[[nodiscard]] inline std::vector<diagnostic> validate_launch(const cluster& c, std::size_t node,
                                                             const launch_options& options) {
  std::vector<diagnostic> out = validate(c, options.validation);
  if (node >= c.node_count()) out.push_back(detail::node_out_of_range(node, c.node_count()));
  for (diagnostic& d : detail::option_problems(c, options))
    if (detail::stops(d.code, plan_outputs::torchrun_commands)) out.push_back(std::move(d));
  if (options.script.empty()) out.push_back(diagnostic::of(errc::empty_script));
  return out;
}

// The one-call functions: each makes a plan of its topology and options for its own output, and
// gives that plan's output, so both ways refuse for the same problems. Each validates the whole
// topology again: O(N) a call; for many outputs, make the plan once.
namespace detail {
// The first problem of a refused plan that stops `made_for` for `node`, in validate_launch's
// order: the topology's, the node index, the options'.
template <class Topology>
diagnostic first_refusal(const Topology& c, const std::vector<diagnostic>& problems,
                         plan_outputs made_for, std::size_t node) {
  for (const diagnostic& d : problems)
    if (outputs_stopped_by(d.code) == plan_outputs::all) return d;
  if (node >= c.node_count()) return node_out_of_range(node, c.node_count());
  for (const diagnostic& d : problems)
    if (stops(d.code, made_for)) return d;
  return problems.front();  // not reached: a refused plan has a problem of its outputs
}

template <class Topology, class Output>
auto from_plan(const Topology& c, const launch_options& options, plan_outputs made_for,
               std::size_t node, Output output)
    -> decltype(output(std::declval<const launch_plan&>())) {
  const auto plan = make_plan(c, options, made_for);
  if (!plan) return first_refusal(c, plan.error(), made_for, node);
  return output(*plan);
}
}  // namespace detail

/// torchrun's argv for `node`: program, then --nnodes, --node_rank (static), --nproc_per_node
/// (this node's own count), --role (when not "default"), --max_restarts, the rendezvous
/// (--master_addr/--master_port, or --rdzv_backend=c10d --rdzv_endpoint=HOST:PORT with IPv6
/// bracketed), --rdzv_id (when set), the extra torchrun_args, -m, the script and its arguments.
/// With a numa_binding, --no_python follows --rdzv_id (unless the extra arguments have it) and the
/// worker command is `bind_program bind --numa-binding MODE -- python -u [-m] SCRIPT ARGS...`
/// (without `python -u` when the extra arguments say --no-python).
/// Full option names only, all before the script. The first problem (see validate_launch) is
/// the error: launch_plan::try_torchrun_argv of make_plan(c, options,
/// plan_outputs::torchrun_commands).
///
/// Example, node 1 of {{"gpu-a", 8}, {"gpu-b", 4}} with script "train.py":
///   torchrun --nnodes=2 --node_rank=1 --nproc_per_node=4 --max_restarts=0
///            --master_addr=gpu-a --master_port=29500 train.py
[[nodiscard]] inline result<std::vector<std::string>, diagnostic> try_torchrun_argv(
    const cluster& c, std::size_t node, const launch_options& options) {
  return detail::from_plan(c, options, plan_outputs::torchrun_commands, node,
                           [&](const launch_plan& p) { return p.try_torchrun_argv(node); });
}
template <std::size_t N>
[[nodiscard]] result<std::vector<std::string>, diagnostic> try_torchrun_argv(
    const fixed_cluster<N>& c, std::size_t node, const launch_options& options) {
  return detail::from_plan(c, options, plan_outputs::torchrun_commands, node,
                           [&](const launch_plan& p) { return p.try_torchrun_argv(node); });
}
/// try_torchrun_argv(...).value(): on a problem throws bad_result_access (or, without
/// exceptions, reports through HETLAUNCH_ON_FAILURE).
[[nodiscard]] inline std::vector<std::string> torchrun_argv(const cluster& c, std::size_t node,
                                                            const launch_options& options) {
  return try_torchrun_argv(c, node, options).value();
}
template <std::size_t N>
[[nodiscard]] std::vector<std::string> torchrun_argv(const fixed_cluster<N>& c, std::size_t node,
                                                     const launch_options& options) {
  return try_torchrun_argv(c, node, options).value();
}

/// The environment torchrun's agent gives worker `local_rank` of `node` (static rendezvous), with
/// torchrun's names and values, in this order: LOCAL_RANK RANK GROUP_RANK ROLE_RANK ROLE_NAME
/// LOCAL_WORLD_SIZE WORLD_SIZE GROUP_WORLD_SIZE ROLE_WORLD_SIZE MASTER_ADDR MASTER_PORT
/// TORCHELASTIC_RESTART_COUNT TORCHELASTIC_MAX_RESTARTS TORCHELASTIC_RUN_ID
/// TORCHELASTIC_USE_AGENT_STORE=True, NCCL_ASYNC_ERROR_HANDLING=1 (torch < 2.2) or
/// TORCH_NCCL_ASYNC_ERROR_HANDLING=1, OMP_NUM_THREADS=1 when the node runs more than one
/// worker, TORCHELASTIC_SIGNALS_TO_HANDLE=SIGTERM,SIGINT,SIGHUP,SIGQUIT (torch 2.9 and later; an
/// extra `--signals-to-handle` argument's value when given), and CUDA_VISIBLE_DEVICES when the
/// node carries a device list (cluster::devices): every worker of the node sees all of the node's
/// devices, as under torchrun, which passes its own CUDA_VISIBLE_DEVICES on to each worker (so set
/// agent_env's value in torchrun's environment); with a global batch,
/// HETLAUNCH_GLOBAL_BATCH, HETLAUNCH_NODE_BATCH and HETLAUNCH_NODE_BATCH_OFFSET, the node's work
/// share (see split_batch), and HETLAUNCH_MAX_BATCH for a node with a ceiling, which torchrun
/// passes on from its own environment too (so set agent_env's values there). torchrun also passes
/// on its own environment; this assumes that environment sets none of the variables torchrun
/// passes on (worker_env_from_agent takes it into account). TORCHELASTIC_ERROR_FILE, whose value
/// torchrun decides when it starts the worker, is described by worker_runtime_variables.
/// `restart_count` is TORCHELASTIC_RESTART_COUNT: 0 at the first start, then the number of failure
/// restarts so far (membership changes do not count). No script or program is needed. The errors:
/// launch_plan::try_worker_env's of make_plan(c, options,
/// plan_outputs::worker_environments); with the c10d rendezvous,
/// ranks_decided_at_rendezvous.
[[nodiscard]] inline result<environment, diagnostic> try_worker_env(const cluster& c,
                                                                    std::size_t node,
                                                                    int local_rank,
                                                                    const launch_options& options,
                                                                    int restart_count = 0) {
  return detail::from_plan(
      c, options, plan_outputs::worker_environments, node,
      [&](const launch_plan& p) { return p.try_worker_env(node, local_rank, restart_count); });
}
/// try_worker_env(...).value().
[[nodiscard]] inline environment worker_env(const cluster& c, std::size_t node, int local_rank,
                                            const launch_options& options, int restart_count = 0) {
  return try_worker_env(c, node, local_rank, options, restart_count).value();
}
template <std::size_t N>
[[nodiscard]] environment worker_env(const fixed_cluster<N>& c, std::size_t node, int local_rank,
                                     const launch_options& options, int restart_count = 0) {
  return detail::from_plan(c, options, plan_outputs::worker_environments, node,
                           [&](const launch_plan& p) {
                             return p.try_worker_env(node, local_rank, restart_count);
                           })
      .value();
}

/// The environment torchrun gives the worker when torchrun itself runs with `agent` (its whole
/// environment, or the part of it that matters): worker_env's variables, except that a
/// TORCH_NCCL_ASYNC_ERROR_HANDLING (NCCL_ASYNC_ERROR_HANDLING before torch 2.2) or OMP_NUM_THREADS
/// set in `agent` is passed on as it is, and PET_SIGNALS_TO_HANDLE there is the default of
/// TORCHELASTIC_SIGNALS_TO_HANDLE (torch 2.9 and later). Every other variable of `agent` reaches
/// the worker unchanged and is not listed. The same errors as try_worker_env.
[[nodiscard]] inline result<environment, diagnostic> try_worker_env_from_agent(
    const cluster& c, std::size_t node, int local_rank, const launch_options& options,
    const environment& agent, int restart_count = 0) {
  return detail::from_plan(
      c, options, plan_outputs::worker_environments, node, [&](const launch_plan& p) {
        return p.try_worker_env_from_agent(node, local_rank, agent, restart_count);
      });
}
/// try_worker_env_from_agent(...).value().
[[nodiscard]] inline environment worker_env_from_agent(const cluster& c, std::size_t node,
                                                       int local_rank,
                                                       const launch_options& options,
                                                       const environment& agent,
                                                       int restart_count = 0) {
  return try_worker_env_from_agent(c, node, local_rank, options, agent, restart_count).value();
}

/// The environment for a launcher that starts the workers itself, without torchrun: the same
/// rank variables as worker_env, TORCHELASTIC_USE_AGENT_STORE=False (no agent hosts a store, so
/// worker RANK 0 hosts it at MASTER_ADDR:MASTER_PORT; claiming an agent store would leave every
/// rank waiting as a client), and no TORCHELASTIC_RUN_ID / _RESTART_COUNT / _MAX_RESTARTS, so
/// torch.distributed.is_torchelastic_launched() is false. The same errors as try_worker_env.
[[nodiscard]] inline result<environment, diagnostic> try_direct_worker_env(
    const cluster& c, std::size_t node, int local_rank, const launch_options& options) {
  return detail::from_plan(
      c, options, plan_outputs::worker_environments, node,
      [&](const launch_plan& p) { return p.try_direct_worker_env(node, local_rank); });
}
/// try_direct_worker_env(...).value().
[[nodiscard]] inline environment direct_worker_env(const cluster& c, std::size_t node,
                                                   int local_rank, const launch_options& options) {
  return try_direct_worker_env(c, node, local_rank, options).value();
}

/// agent_env(c, node), then, with a global batch, the node's work share: HETLAUNCH_GLOBAL_BATCH,
/// HETLAUNCH_NODE_BATCH and HETLAUNCH_NODE_BATCH_OFFSET; and HETLAUNCH_MAX_BATCH when the node has
/// a ceiling. Errors: launch_plan::try_agent_env's of make_plan(c, options, plan_outputs::work_shares) (the topology's, the
/// node index, the global batch's).
[[nodiscard]] inline result<environment, diagnostic> try_agent_env(const cluster& c,
                                                                   std::size_t node,
                                                                   const launch_options& options) {
  return detail::from_plan(c, options, plan_outputs::work_shares, node,
                           [&](const launch_plan& p) { return p.try_agent_env(node); });
}

/// The `accelerate launch` argv for machine `node` that really yields the heterogeneous job:
/// accelerate divides --num_processes by --num_machines to get each machine's
/// --nproc_per_node, so each machine is given its own nproc times the machine count:
///   accelerate launch --multi_gpu --num_machines N --machine_rank i --num_processes nproc_i*N
///     --main_process_ip ADDR --main_process_port PORT --rdzv_backend static
///     --max_restarts K [-m] script args...
/// A numa_binding is refused (binding_not_carried): accelerate starts the workers itself.
/// The static backend keeps --machine_rank meaningful. Roles and torchrun_args are not forwarded
/// (accelerate has no such options); program[0] is ignored in favour of "accelerate". Errors:
/// launch_plan::try_accelerate_argv's of make_plan(c, options,
/// plan_outputs::accelerate_commands).
[[nodiscard]] inline result<std::vector<std::string>, diagnostic> try_accelerate_argv(
    const cluster& c, std::size_t node, const launch_options& options) {
  return detail::from_plan(c, options, plan_outputs::accelerate_commands, node,
                           [&](const launch_plan& p) { return p.try_accelerate_argv(node); });
}
/// try_accelerate_argv(...).value().
[[nodiscard]] inline std::vector<std::string> accelerate_argv(const cluster& c, std::size_t node,
                                                              const launch_options& options) {
  return try_accelerate_argv(c, node, options).value();
}

/// check_worker_env against a plan: the topology's variables, and with a global batch also
/// HETLAUNCH_GLOBAL_BATCH, HETLAUNCH_NODE_BATCH and HETLAUNCH_NODE_BATCH_OFFSET, which must be
/// set and equal the plan's for the worker's node (GROUP_RANK); a difference is batch_mismatch,
/// and a HETLAUNCH_NODE_HOST unset or other than the node's host is host_mismatch.
/// Without a global batch, each of them that is set is unplanned_share. A HETLAUNCH_MAX_BATCH
/// that differs from the node's ceiling, or is set for a node without one, is batch_mismatch too.
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
    // The host the sampler keeps its learned rates by: a worker with another would give a
    // checkpoint's rates to the wrong node.
    const node_spec spec = plan.topology().node(static_cast<std::size_t>(group));
    const char* host = get(variables::node_host.data());
    if (host == nullptr || std::string_view(host) != spec.host || !*host)
      out.push_back(diagnostic::of(errc::host_mismatch)
                        .with_variable(variables::node_host)
                        .with_text(host ? host : "")
                        .with_node(static_cast<std::size_t>(group))
                        .with_host(spec.host)
                        .with_role(spec.role));
  }
  // The node's ceiling, when it has one and the worker was given one; one inherited by a worker
  // of a node without a ceiling would cut its share into micro-batches nobody planned.
  if (have_node && (plan.topology().max_batch(static_cast<std::size_t>(group)) > 0 ||
                    get(variables::max_batch.data())))
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
