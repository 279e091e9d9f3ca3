// SPDX-License-Identifier: MIT
// hetlaunch: every worker's environment as torchrun's agent gives it with the static rendezvous,
// and what torchrun's own environment on a node needs.
#ifndef HETLAUNCH_WORKER_ENV_HPP
#define HETLAUNCH_WORKER_ENV_HPP

#include <cstddef>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "cluster.hpp"
#include "detail/text.hpp"
#include "diagnostic.hpp"
#include "launch_options.hpp"
#include "result.hpp"
#include "shares.hpp"
#include "worker_variables.hpp"

namespace hetlaunch {

namespace detail {

enum class spawn_mode { torchrun, direct };

// Only a run-time cluster carries device lists.
inline const std::vector<int>* node_devices(const cluster& c, std::size_t node) {
  return c.devices(node).empty() ? nullptr : &c.devices(node);
}
template <std::size_t N>
const std::vector<int>* node_devices(const fixed_cluster<N>&, std::size_t) {
  return nullptr;
}

// The value of `name` in the agent's environment (the later of two equal names wins), if given.
inline const std::string* agent_value(const environment* agent, std::string_view name) {
  const std::string* found = nullptr;
  if (agent)
    for (const auto& v : *agent)
      if (v.first == name) found = &v.second;
  return found;
}

inline constexpr std::string_view default_signals_to_handle = "SIGTERM,SIGINT,SIGHUP,SIGQUIT";

// `agent`: torchrun's own environment, or nullptr for one that sets none of the variables torchrun
// passes on (TORCH_NCCL_ASYNC_ERROR_HANDLING, OMP_NUM_THREADS, PET_SIGNALS_TO_HANDLE).
// The variables of a node's work share, which torchrun passes on from its own environment; none
// without a global batch.
// The node's ceiling follows them, when it has one (with or without a global batch).
inline void append_batch_env(environment& env, const launch_options& o, const node_batch* share,
                             int max_batch) {
  if (o.global_batch > 0 && share != nullptr) {
    env.emplace_back(variables::global_batch, std::to_string(o.global_batch));
    env.emplace_back(variables::node_batch, std::to_string(share->batch));
    env.emplace_back(variables::node_batch_offset, std::to_string(share->offset));
  }
  if (max_batch > 0) env.emplace_back(variables::max_batch, std::to_string(max_batch));
}
// Node i's ceiling: a fixed topology has none.
inline int node_max_batch(const cluster& c, std::size_t i) { return c.max_batch(i); }
template <std::size_t N>
int node_max_batch(const fixed_cluster<N>&, std::size_t) {
  return 0;
}

// Node `node`'s work share, computed for this one call (O(N)); the plan keeps every node's.
// Precondition: the topology and global batch are valid.
template <class Topology>
node_batch one_node_batch(const Topology& c, std::size_t node, const launch_options& o) {
  if (o.global_batch <= 0) return {};
  return split_batch(c, o.global_batch).value()[node];
}
template <std::size_t N>
node_batch one_node_batch(const fixed_cluster<N>& c, std::size_t node, const launch_options& o) {
  if (o.global_batch <= 0) return {};
  return split_batch(cluster(c), o.global_batch).value()[node];
}

// `share`: the node's work share (used when the options have a global batch).
template <class Topology>
environment build_worker_env(const Topology& c, std::size_t node, int local_rank,
                             const launch_options& o, int restart_count, spawn_mode mode,
                             const environment* agent = nullptr,
                             const node_batch* share = nullptr) {
  const node_spec spec = c.node(node);
  environment env;
  const auto set = [&env](const char* name, std::string value) {
    env.emplace_back(name, std::move(value));
  };
  set("LOCAL_RANK", std::to_string(local_rank));
  set("RANK", std::to_string(c.global_rank(node, local_rank)));
  set("GROUP_RANK", std::to_string(node));
  set("ROLE_RANK", std::to_string(c.role_rank(node, local_rank)));
  set("ROLE_NAME", std::string(spec.role));
  set("LOCAL_WORLD_SIZE", std::to_string(spec.nproc));
  set("WORLD_SIZE", std::to_string(c.world_size()));
  set("GROUP_WORLD_SIZE", std::to_string(c.node_count()));
  set("ROLE_WORLD_SIZE", std::to_string(c.role_world_size(node)));
  set("MASTER_ADDR", std::string(master_host(c, o)));
  set("MASTER_PORT", std::to_string(o.master_port));
  if (mode == spawn_mode::torchrun) {
    set("TORCHELASTIC_RESTART_COUNT", std::to_string(restart_count));
    set("TORCHELASTIC_MAX_RESTARTS", std::to_string(o.max_restarts));
    set("TORCHELASTIC_RUN_ID", o.rdzv_id);
    set("TORCHELASTIC_USE_AGENT_STORE", "True");
  } else {
    // No agent hosts a store: worker RANK 0 must host it. "True" would make every rank a client.
    set("TORCHELASTIC_USE_AGENT_STORE", "False");
  }
  // The agent passes its own value on, with "1" as the default.
  const char* nccl =
      o.torch.code() >= 202 ? "TORCH_NCCL_ASYNC_ERROR_HANDLING" : "NCCL_ASYNC_ERROR_HANDLING";
  const std::string* agent_nccl = agent_value(agent, nccl);
  set(nccl, agent_nccl ? *agent_nccl : std::string("1"));
  // torchrun sets OMP_NUM_THREADS=1 in its own environment for more than one worker, unless it is
  // set already; workers get the agent's value.
  if (const std::string* omp = agent_value(agent, "OMP_NUM_THREADS"))
    set("OMP_NUM_THREADS", *omp);
  else if (spec.nproc > 1)
    set("OMP_NUM_THREADS", "1");
  // torch 2.9 (pytorch/pytorch#160690): the launcher sets --signals-to-handle in its own
  // environment (default from PET_SIGNALS_TO_HANDLE), and every worker inherits it.
  if (mode == spawn_mode::torchrun && o.torch.code() >= 209) {
    std::optional<std::string> signals = torchrun_arg_value(o, "signals_to_handle");
    if (!signals)
      if (const std::string* pet = agent_value(agent, "PET_SIGNALS_TO_HANDLE")) signals = *pet;
    set("TORCHELASTIC_SIGNALS_TO_HANDLE",
        signals ? *signals : std::string(default_signals_to_handle));
  }
  if (const std::vector<int>* ids = node_devices(c, node))
    set("CUDA_VISIBLE_DEVICES", join_ids(*ids));
  append_batch_env(env, o, share, node_max_batch(c, node));
  return env;
}

template <class Topology>
result<environment, diagnostic> worker_env(const Topology& c, std::size_t node, int local_rank,
                                           const launch_options& o, int restart_count,
                                           spawn_mode mode, const environment* agent = nullptr) {
  std::vector<diagnostic> problems = launch_problems(c, node, o, output::environment);
  if (problems.empty()) {
    const auto rank = c.try_global_rank(node, local_rank);  // local_rank_out_of_range, if it is
    if (!rank) problems.push_back(rank.error());
  }
  if (!problems.empty()) return problems.front();
  const node_batch share = one_node_batch(c, node, o);
  return build_worker_env(c, node, local_rank, o, restart_count, mode, agent, &share);
}

}  // namespace detail

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
/// share (see split_batch), which torchrun passes on from its own environment too (so set
/// agent_env's values there). torchrun also passes on its own environment; this
/// assumes that environment sets none of the variables torchrun passes on
/// (worker_env_from_agent takes it into account). TORCHELASTIC_ERROR_FILE, whose value torchrun
/// decides when it starts the worker, is described by worker_runtime_variables. `restart_count`
/// is TORCHELASTIC_RESTART_COUNT: 0 at the first start, then the number of failure restarts so
/// far (membership changes do not count). With the c10d rendezvous the error is
/// ranks_decided_at_rendezvous.
[[nodiscard]] inline result<environment, diagnostic> try_worker_env(const cluster& c,
                                                                    std::size_t node,
                                                                    int local_rank,
                                                                    const launch_options& options,
                                                                    int restart_count = 0) {
  return detail::worker_env(c, node, local_rank, options, restart_count,
                            detail::spawn_mode::torchrun);
}
/// try_worker_env(...).value().
[[nodiscard]] inline environment worker_env(const cluster& c, std::size_t node, int local_rank,
                                            const launch_options& options, int restart_count = 0) {
  return try_worker_env(c, node, local_rank, options, restart_count).value();
}
template <std::size_t N>
[[nodiscard]] environment worker_env(const fixed_cluster<N>& c, std::size_t node, int local_rank,
                                     const launch_options& options, int restart_count = 0) {
  return detail::worker_env(c, node, local_rank, options, restart_count,
                            detail::spawn_mode::torchrun)
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
  return detail::worker_env(c, node, local_rank, options, restart_count,
                            detail::spawn_mode::torchrun, &agent);
}
/// try_worker_env_from_agent(...).value().
[[nodiscard]] inline environment worker_env_from_agent(const cluster& c, std::size_t node,
                                                       int local_rank,
                                                       const launch_options& options,
                                                       const environment& agent,
                                                       int restart_count = 0) {
  return try_worker_env_from_agent(c, node, local_rank, options, agent, restart_count).value();
}

/// A variable torchrun gives a worker whose value it decides only when it starts the worker.
struct runtime_variable {
  std::string name;
  /// The value's shape, as a shell pattern (fnmatch): `*` stands for what cannot be known ahead.
  std::string pattern;
  std::string meaning;
};

/// The variables torchrun sets in worker `local_rank`'s environment besides worker_env's, whose
/// values are decided when the worker starts: TORCHELASTIC_ERROR_FILE, where the worker's error
/// handler writes its error, under the agent's log directory (a fresh temporary directory unless
/// --log-dir is given): `*/attempt_<restart_count>/<local_rank>/error.json`, or empty with
/// `--log-dir /dev/null` (torch 2.x).
[[nodiscard]] inline std::vector<runtime_variable> worker_runtime_variables(
    int local_rank, const launch_options& options, int restart_count = 0) {
  const std::optional<std::string> log_dir = detail::torchrun_arg_value(options, "log_dir");
  std::string pattern =
      log_dir && *log_dir == "/dev/null" && options.torch.code() >= 200
          ? std::string()
          : detail::concat("*/attempt_", restart_count, "/", local_rank, "/error.json");
  return {
      {"TORCHELASTIC_ERROR_FILE", std::move(pattern),
       "the file the worker's error handler (torch.distributed.elastic.multiprocessing.errors.record) writes"}};
}

/// What torchrun's own environment on `node` needs beyond the usual: CUDA_VISIBLE_DEVICES when the
/// node carries a device list (torchrun passes it on to every worker). Empty otherwise.
/// Precondition: node < c.node_count() (launch_plan::try_agent_env checks it instead).
[[nodiscard]] inline environment agent_env(const cluster& c, std::size_t node) {
  detail::expects(node < c.node_count(), "agent_env(c, node): node index out of range");
  environment env;
  if (const std::vector<int>* ids = detail::node_devices(c, node))
    env.emplace_back("CUDA_VISIBLE_DEVICES", detail::join_ids(*ids));
  return env;
}
/// agent_env(c, node), then, with a global batch, the node's work share: HETLAUNCH_GLOBAL_BATCH,
/// HETLAUNCH_NODE_BATCH and HETLAUNCH_NODE_BATCH_OFFSET; and HETLAUNCH_MAX_BATCH when the node has
/// a ceiling. Validates the topology and global batch
/// (O(N) a call; launch_plan::agent_env costs the node's output only). Errors as split_batch's.
[[nodiscard]] inline result<environment, diagnostic> try_agent_env(const cluster& c,
                                                                   std::size_t node,
                                                                   const launch_options& options) {
  if (node >= c.node_count()) {
    return diagnostic::of(errc::node_out_of_range)
        .with_value(static_cast<long long>(node))
        .with_limit(static_cast<long long>(c.node_count()));
  }
  environment env = agent_env(c, node);
  if (options.global_batch == 0) {
    detail::append_batch_env(env, options, nullptr, c.max_batch(node));
    return env;
  }
  auto split = split_batch(c, options.global_batch);
  if (!split) return split.error();
  detail::append_batch_env(env, options, &(*split)[node], c.max_batch(node));
  return env;
}

}  // namespace hetlaunch

#endif  // HETLAUNCH_WORKER_ENV_HPP
