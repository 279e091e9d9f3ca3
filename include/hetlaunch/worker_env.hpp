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
                             int max_batch, std::string_view host) {
  if (o.global_batch > 0 && share != nullptr) {
    env.emplace_back(variables::global_batch, std::to_string(o.global_batch));
    env.emplace_back(variables::node_batch, std::to_string(share->batch));
    env.emplace_back(variables::node_batch_offset, std::to_string(share->offset));
    env.emplace_back(variables::node_host, std::string(host));
  }
  if (max_batch > 0) env.emplace_back(variables::max_batch, std::to_string(max_batch));
  if (o.calibrate_steps > 0)
    env.emplace_back(variables::calibrate_steps, std::to_string(o.calibrate_steps));
  if (o.progress_milliseconds > 0) {
    // Seconds with at most three decimals, no trailing zeros: 250 -> "0.25", 1000 -> "1".
    std::string text = std::to_string(o.progress_milliseconds / 1000);
    int fraction = o.progress_milliseconds % 1000;
    if (fraction) {
      std::string digits = std::to_string(1000 + fraction).substr(1);
      while (digits.back() == '0') digits.pop_back();
      text += "." + digits;
    }
    env.emplace_back(variables::progress_seconds, std::move(text));
  }
  if (o.rebalance_slow_ranks) env.emplace_back(variables::on_slow, "rebalance");
  if (!o.min_compute_capability.empty()) {
    env.emplace_back(variables::min_compute_capability, o.min_compute_capability);
    env.emplace_back(variables::bf16, o.bf16 ? "1" : "0");
  }
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
  append_batch_env(env, o, share, node_max_batch(c, node), spec.host);
  return env;
}

}  // namespace detail

/// What a launcher does to a node's environment (launch_plan::try_node_variables): the variables
/// to set, in order, and the names to remove from what the node inherits (names of
/// hetlaunch::variables, which live for the whole program).
struct node_variables {
  environment set;
  std::vector<std::string_view> unset;
};

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
// worker_env, worker_env_from_agent and try_agent_env(c, node, options) are in plan.hpp: each
// makes a plan and asks it.

}  // namespace hetlaunch

#endif  // HETLAUNCH_WORKER_ENV_HPP
