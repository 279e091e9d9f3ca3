// SPDX-License-Identifier: MIT
// hetlaunch: every node's torchrun command line and every worker's environment, as torchrun's
// elastic agent builds them with the static rendezvous.
#ifndef HETLAUNCH_TORCHRUN_HPP
#define HETLAUNCH_TORCHRUN_HPP

#include <climits>
#include <cstddef>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "cluster.hpp"
#include "detail/host_name.hpp"
#include "detail/text.hpp"
#include "diagnostic.hpp"
#include "result.hpp"
#include "shares.hpp"
#include "shell.hpp"

namespace hetlaunch {

/// torchrun --rdzv_backend: `static_tcp` (torchrun's `static`, the default) or `c10d`.
/// Only the static rendezvous honours --node_rank; with c10d torchrun orders the nodes by host
/// name and process id when they meet, so their ranks cannot be known in advance.
enum class rendezvous { static_tcp, c10d };

/// How torchrun's options are spelled: `--nproc_per_node` (every torch since 1.9) or
/// `--nproc-per-node` (torch 2.0 and later only).
enum class flag_style { underscore, dash };

/// The torch the nodes run. It decides the NCCL async-error variable's name
/// (NCCL_ASYNC_ERROR_HANDLING before 2.2, TORCH_NCCL_ASYNC_ERROR_HANDLING from 2.2), whether
/// dash spellings exist (2.0) and whether torchrun sets TORCHELASTIC_SIGNALS_TO_HANDLE (2.9). The
/// default is the newest torch whose rules hetlaunch knows; a newer one gets the same rules.
struct torch_version {
  int major = 2;
  int minor = 14;
  [[nodiscard]] constexpr int code() const noexcept { return major * 100 + minor; }
};

/// The newest torch whose rules hetlaunch knows (and the default of launch_options::torch).
inline constexpr torch_version newest_known_torch{2, 14};

/// What torchrun needs besides the topology.
struct launch_options {
  /// static: --master_addr (every node connects here; node 0 hosts the store). c10d: the host of
  /// --rdzv_endpoint. Empty means node 0's host. IPv6 literals may be given with or without
  /// brackets.
  std::string master_addr;
  int master_port = 29500;
  rendezvous backend = rendezvous::static_tcp;
  /// --rdzv_id; workers see it as TORCHELASTIC_RUN_ID. c10d needs a real one ("none" is refused).
  std::string rdzv_id = "none";
  int max_restarts = 0;
  /// The launcher: {"torchrun"}, or {"python3", "-m", "torch.distributed.run"}.
  std::vector<std::string> program = {"torchrun"};
  /// Extra torchrun options, placed after hetlaunch's and before the script.
  std::vector<std::string> torchrun_args;
  bool module = false;  ///< -m: `script` names a Python module
  std::string script;   ///< the training script (or module)
  std::vector<std::string> script_args;
  flag_style flags = flag_style::underscore;
  // Additions beyond torchrun's own flags:
  torch_version torch{};
  /// Static rendezvous timeout in seconds (--rdzv_conf=timeout=N): how long the agents wait for a
  /// node that never comes. 0 keeps torchrun's default (900 s).
  int rendezvous_timeout = 0;
  /// Direct spawn: the Python interpreter (torchrun uses its own sys.executable).
  std::string python = "python3";
  /// How the topology is validated before a command or environment is built; for example
  /// `validation.allow_duplicate_hosts = true` to run several agents on one host.
  validate_options validation{};
  /// The samples of one optimizer step over the whole job, split over the nodes by weight
  /// (shares.hpp), or 0 for no work shares. When above 0 it must be at least the world size, and
  /// every worker gets HETLAUNCH_GLOBAL_BATCH, HETLAUNCH_NODE_BATCH and
  /// HETLAUNCH_NODE_BATCH_OFFSET (see worker_env).
  int global_batch = 0;
};

/// Environment variables as (name, value) pairs, in a documented, stable order.
using environment = std::vector<std::pair<std::string, std::string>>;

namespace detail {

// "[::1]" -> "::1"; every other address unchanged.
inline std::string_view unbracketed(std::string_view addr) noexcept {
  if (addr.size() >= 2 && addr.front() == '[' && addr.back() == ']') return addr.substr(1, addr.size() - 2);
  return addr;
}

template <class Topology>
std::string_view master_host(const Topology& c, const launch_options& o) noexcept {
  if (!o.master_addr.empty()) return unbracketed(o.master_addr);
  return c.node_count() ? c.node(0).host : std::string_view();
}

inline diagnostic launch_problem(errc code) {
  diagnostic d{};
  d.code = code;
  return d;
}

// Whether extra argument `arg` ("--name" or "--name=value", '-' or '_' between words) names
// torchrun's option `option` (underscore spelling): in full, or abbreviated to at least
// `shortest` characters, as argparse accepts a unique prefix.
inline bool names_option(std::string_view arg, std::string_view option, std::size_t shortest) noexcept {
  if (arg.size() < 3 || arg[0] != '-' || arg[1] != '-') return false;
  std::string_view name = arg.substr(2);
  name = name.substr(0, name.find('='));
  if (name.empty() || name.size() < shortest || name.size() > option.size()) return false;
  for (std::size_t k = 0; k < name.size(); ++k)
    if ((name[k] == '-' ? '_' : name[k]) != option[k]) return false;
  return true;
}

// torchrun's options that hetlaunch computes; an extra argument naming one (in either spelling,
// or abbreviated, which argparse accepts) would silently replace the computed value.
inline bool overrides_computed_flag(std::string_view arg) noexcept {
  static constexpr const char* computed[] = {"nnodes",      "node_rank",     "nproc_per_node", "master_addr",
                                             "master_port", "rdzv_backend",  "rdzv_endpoint",  "rdzv_id",
                                             "rdzv_conf",   "max_restarts",  "role",           "standalone"};
  for (const char* full : computed)
    if (names_option(arg, full, 1)) return true;
  return false;
}

// The value of one of torchrun's own options among the extra arguments: "--name=v" or "--name v",
// in either spelling; the last one wins, as for argparse. Abbreviations are not recognised.
inline std::optional<std::string> torchrun_arg_value(const launch_options& o, std::string_view name) {
  std::optional<std::string> value;
  for (std::size_t i = 0; i < o.torchrun_args.size(); ++i) {
    const std::string_view arg = o.torchrun_args[i];
    if (!names_option(arg, name, name.size())) continue;
    const std::size_t eq = arg.find('=');
    if (eq != std::string_view::npos) value = std::string(arg.substr(eq + 1));
    else if (i + 1 < o.torchrun_args.size()) value = o.torchrun_args[++i];
  }
  return value;
}

// torch 2.14's --virtual-local-rank (or an abbreviation argparse would accept).
inline bool is_virtual_local_rank(std::string_view arg) noexcept { return names_option(arg, "virtual_local_rank", 3); }

// Extra torchrun arguments that change the workers' environment in a way the plan does not
// describe: every output that the workers' variables depend on refuses them.
inline void unpredictable_torchrun_args(const launch_options& o, std::vector<diagnostic>& out) {
  for (const std::string& arg : o.torchrun_args)
    if (is_virtual_local_rank(arg)) {
      diagnostic d = launch_problem(errc::virtual_local_rank);
      d.text = arg;
      out.push_back(d);
    }
}

// A negative global batch, or one below the world size (when the topology has one: a topology
// whose counts are invalid has its own problems).
template <class Topology>
void batch_problems(const Topology& c, const launch_options& o, std::vector<diagnostic>& out) {
  if (o.global_batch == 0) return;
  diagnostic d = launch_problem(o.global_batch < 0 ? errc::bad_global_batch : errc::global_batch_too_small);
  d.value = o.global_batch;
  d.variable = "global_batch";
  if (o.global_batch < 0) {
    out.push_back(d);
    return;
  }
  long long world = 0;
  for (std::size_t i = 0; i < c.node_count() && world <= INT_MAX; ++i) {
    if (c.node(i).nproc < 1) return;
    world += c.node(i).nproc;
  }
  if (world > INT_MAX || o.global_batch >= world) return;
  d.limit = world;
  out.push_back(d);
}

// Problems of the options that every output depends on: the rendezvous address and port, the
// run id with c10d, the restart limit. The topology gives the master address when none is set.
template <class Topology>
void environment_problems(const Topology& c, const launch_options& o, std::vector<diagnostic>& out) {
  if (o.master_port < 1 || o.master_port > 65535) {
    diagnostic d = launch_problem(errc::bad_port);
    d.value = o.master_port;
    d.variable = "master_port";
    out.push_back(d);
  }
  const std::string_view addr = master_host(c, o);
  if (c.node_count() && check_host(addr, true).issue != host_issue::none) {
    diagnostic d = launch_problem(errc::bad_master_addr);
    d.variable = "master_addr";
    d.text = addr;
    out.push_back(d);
  }
  if (o.backend == rendezvous::c10d && (o.rdzv_id.empty() || o.rdzv_id == "none"))
    out.push_back(launch_problem(errc::missing_rdzv_id));
  if (o.max_restarts < 0) {
    diagnostic d = launch_problem(errc::bad_max_restarts);
    d.value = o.max_restarts;
    out.push_back(d);
  }
}

// Problems of what only a command line carries. `torchrun` false: accelerate's command, which
// has its own program and no torchrun options.
inline void command_problems(const launch_options& o, bool torchrun, std::vector<diagnostic>& out) {
  if (torchrun && (o.program.empty() || o.program.front().empty())) out.push_back(launch_problem(errc::empty_program));
  if (torchrun && o.rendezvous_timeout < 0) {
    diagnostic d = launch_problem(errc::bad_rendezvous_timeout);
    d.value = o.rendezvous_timeout;
    out.push_back(d);
  }
  if (torchrun && o.flags == flag_style::dash && o.torch.code() < 200) {
    diagnostic d = launch_problem(errc::dash_flags_need_torch_2);
    d.value = o.torch.code();
    out.push_back(d);
  }
  if (torchrun)
    for (const std::string& arg : o.torchrun_args)
      if (overrides_computed_flag(arg)) {
        diagnostic d = launch_problem(errc::overriding_torchrun_arg);
        d.text = arg;
        out.push_back(d);
      }
  if (torchrun) unpredictable_torchrun_args(o, out);
  if (!o.script.empty() && o.script[0] == '-') {
    diagnostic d = launch_problem(errc::script_looks_like_option);
    d.text = o.script;
    out.push_back(d);
  }
}

// Every problem of the options as a plan holds them (a plan without a script is valid).
template <class Topology>
std::vector<diagnostic> option_problems(const Topology& c, const launch_options& o) {
  std::vector<diagnostic> out;
  environment_problems(c, o, out);
  batch_problems(c, o, out);
  command_problems(o, true, out);
  return out;
}

// What a one-call function builds, which decides what it may refuse for.
enum class output { torchrun_argv, accelerate_argv, environment };

// The problems that stop `what` for `node`: the topology's first, then the node index, then the
// options that output depends on.
template <class Topology>
std::vector<diagnostic> launch_problems(const Topology& c, std::size_t node, const launch_options& o, output what) {
  std::vector<diagnostic> out = validate(c, o.validation);
  if (node >= c.node_count()) {
    diagnostic d = launch_problem(errc::node_out_of_range);
    d.value = static_cast<long long>(node);
    d.limit = static_cast<long long>(c.node_count());
    out.push_back(d);
  }
  environment_problems(c, o, out);
  if (what == output::environment) {
    batch_problems(c, o, out);
    if (o.backend == rendezvous::c10d) out.push_back(launch_problem(errc::ranks_decided_at_rendezvous));
    unpredictable_torchrun_args(o, out);
    return out;
  }
  command_problems(o, what == output::torchrun_argv, out);
  if (o.script.empty()) out.push_back(launch_problem(errc::empty_script));
  return out;
}

inline std::string flag(const launch_options& o, std::string_view name) {
  std::string out = "--";
  for (char c : name) out += (o.flags == flag_style::dash && c == '_') ? '-' : c;
  return out;
}
inline std::string flag(const launch_options& o, std::string_view name, std::string_view value) {
  std::string out = flag(o, name);
  out += '=';
  out.append(value.data(), value.size());
  return out;
}

template <class Topology>
std::vector<std::string> build_torchrun_argv(const Topology& c, std::size_t node, const launch_options& o) {
  std::vector<std::string> argv = o.program;
  const node_spec spec = c.node(node);
  argv.push_back(flag(o, "nnodes", std::to_string(c.node_count())));
  if (o.backend == rendezvous::static_tcp) argv.push_back(flag(o, "node_rank", std::to_string(node)));
  argv.push_back(flag(o, "nproc_per_node", std::to_string(spec.nproc)));
  if (spec.role != "default") argv.push_back(flag(o, "role", spec.role));
  argv.push_back(flag(o, "max_restarts", std::to_string(o.max_restarts)));
  const std::string_view host = master_host(c, o);
  if (o.backend == rendezvous::static_tcp) {
    argv.push_back(flag(o, "master_addr", host));
    argv.push_back(flag(o, "master_port", std::to_string(o.master_port)));
    if (o.rendezvous_timeout > 0)
      argv.push_back(flag(o, "rdzv_conf", concat("timeout=", o.rendezvous_timeout)));
  } else {
    argv.push_back(flag(o, "rdzv_backend", "c10d"));
    argv.push_back(flag(o, "rdzv_endpoint", is_ipv6_literal(host) ? concat("[", host, "]:", o.master_port)
                                                                 : concat(host, ":", o.master_port)));
    if (o.rendezvous_timeout > 0)
      argv.push_back(flag(o, "rdzv_conf", concat("join_timeout=", o.rendezvous_timeout)));
  }
  if (o.rdzv_id != "none" || o.backend == rendezvous::c10d) argv.push_back(flag(o, "rdzv_id", o.rdzv_id));
  argv.insert(argv.end(), o.torchrun_args.begin(), o.torchrun_args.end());
  if (o.module) argv.push_back("-m");
  argv.push_back(o.script);
  argv.insert(argv.end(), o.script_args.begin(), o.script_args.end());
  return argv;
}

template <class Topology>
result<std::vector<std::string>, diagnostic> torchrun_argv(const Topology& c, std::size_t node,
                                                           const launch_options& o) {
  const std::vector<diagnostic> problems = launch_problems(c, node, o, output::torchrun_argv);
  if (!problems.empty()) return problems.front();
  return build_torchrun_argv(c, node, o);
}

enum class spawn_mode { torchrun, direct };

// Only a run-time cluster carries device lists.
inline const std::vector<int>* node_devices(const cluster& c, std::size_t node) {
  return c.devices(node).empty() ? nullptr : &c.devices(node);
}
template <std::size_t N>
const std::vector<int>* node_devices(const fixed_cluster<N>&, std::size_t) { return nullptr; }

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
inline void append_batch_env(environment& env, const launch_options& o, const node_batch* share) {
  if (o.global_batch <= 0 || share == nullptr) return;
  env.emplace_back("HETLAUNCH_GLOBAL_BATCH", std::to_string(o.global_batch));
  env.emplace_back("HETLAUNCH_NODE_BATCH", std::to_string(share->batch));
  env.emplace_back("HETLAUNCH_NODE_BATCH_OFFSET", std::to_string(share->offset));
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
environment build_worker_env(const Topology& c, std::size_t node, int local_rank, const launch_options& o,
                             int restart_count, spawn_mode mode, const environment* agent = nullptr,
                             const node_batch* share = nullptr) {
  const node_spec spec = c.node(node);
  environment env;
  const auto set = [&env](const char* name, std::string value) { env.emplace_back(name, std::move(value)); };
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
  const char* nccl = o.torch.code() >= 202 ? "TORCH_NCCL_ASYNC_ERROR_HANDLING" : "NCCL_ASYNC_ERROR_HANDLING";
  const std::string* agent_nccl = agent_value(agent, nccl);
  set(nccl, agent_nccl ? *agent_nccl : std::string("1"));
  // torchrun sets OMP_NUM_THREADS=1 in its own environment for more than one worker, unless it is
  // set already; workers get the agent's value.
  if (const std::string* omp = agent_value(agent, "OMP_NUM_THREADS")) set("OMP_NUM_THREADS", *omp);
  else if (spec.nproc > 1) set("OMP_NUM_THREADS", "1");
  // torch 2.9 (pytorch/pytorch#160690): the launcher sets --signals-to-handle in its own
  // environment (default from PET_SIGNALS_TO_HANDLE), and every worker inherits it.
  if (mode == spawn_mode::torchrun && o.torch.code() >= 209) {
    std::optional<std::string> signals = torchrun_arg_value(o, "signals_to_handle");
    if (!signals)
      if (const std::string* pet = agent_value(agent, "PET_SIGNALS_TO_HANDLE")) signals = *pet;
    set("TORCHELASTIC_SIGNALS_TO_HANDLE", signals ? *signals : std::string(default_signals_to_handle));
  }
  if (const std::vector<int>* ids = node_devices(c, node)) set("CUDA_VISIBLE_DEVICES", join_ids(*ids));
  append_batch_env(env, o, share);
  return env;
}

template <class Topology>
result<environment, diagnostic> worker_env(const Topology& c, std::size_t node, int local_rank,
                                           const launch_options& o, int restart_count, spawn_mode mode,
                                           const environment* agent = nullptr) {
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

/// Every problem that stops torchrun_argv(c, node, options), in order: the topology's (validate),
/// the node index, master_port, master_addr, rdzv_id (c10d), max_restarts, program,
/// rendezvous_timeout, flag style, extra torchrun arguments naming a computed option, a script
/// that starts with '-', and a missing script. Empty when the command can be built. A c10d
/// launch is sound, but its workers' ranks are decided when the agents meet: try_worker_env
/// refuses it with ranks_decided_at_rendezvous, since no environment can be predicted.
[[nodiscard]] inline std::vector<diagnostic> validate_launch(const cluster& c, std::size_t node,
                                                             const launch_options& options) {
  return detail::launch_problems(c, node, options, detail::output::torchrun_argv);
}

/// torchrun's argv for `node`: program, then --nnodes, --node_rank (static), --nproc_per_node
/// (this node's own count), --role (when not "default"), --max_restarts, the rendezvous
/// (--master_addr/--master_port, or --rdzv_backend=c10d --rdzv_endpoint=HOST:PORT with IPv6
/// bracketed), --rdzv_id (when set), the extra torchrun_args, -m, the script and its arguments.
/// Full option names only, all before the script. The first problem (see validate_launch) is
/// the error.
///
/// Example, node 1 of {{"gpu-a", 8}, {"gpu-b", 4}} with script "train.py":
///   torchrun --nnodes=2 --node_rank=1 --nproc_per_node=4 --max_restarts=0
///            --master_addr=gpu-a --master_port=29500 train.py
[[nodiscard]] inline result<std::vector<std::string>, diagnostic>
try_torchrun_argv(const cluster& c, std::size_t node, const launch_options& options) {
  return detail::torchrun_argv(c, node, options);
}
template <std::size_t N>
[[nodiscard]] result<std::vector<std::string>, diagnostic>
try_torchrun_argv(const fixed_cluster<N>& c, std::size_t node, const launch_options& options) {
  return detail::torchrun_argv(c, node, options);
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
/// share (see split_batch), which torchrun passes on from its own environment too (so set
/// agent_env's values there). torchrun also passes on its own environment; this
/// assumes that environment sets none of the variables torchrun passes on
/// (worker_env_from_agent takes it into account). TORCHELASTIC_ERROR_FILE, whose value torchrun
/// decides when it starts the worker, is described by worker_runtime_variables. `restart_count` is TORCHELASTIC_RESTART_COUNT: 0 at the first start, then the
/// number of failure restarts so far (membership changes do not count).
/// With the c10d rendezvous the error is ranks_decided_at_rendezvous.
[[nodiscard]] inline result<environment, diagnostic> try_worker_env(const cluster& c, std::size_t node, int local_rank,
                                                                    const launch_options& options, int restart_count = 0) {
  return detail::worker_env(c, node, local_rank, options, restart_count, detail::spawn_mode::torchrun);
}
/// try_worker_env(...).value().
[[nodiscard]] inline environment worker_env(const cluster& c, std::size_t node, int local_rank,
                                            const launch_options& options, int restart_count = 0) {
  return try_worker_env(c, node, local_rank, options, restart_count).value();
}
template <std::size_t N>
[[nodiscard]] environment worker_env(const fixed_cluster<N>& c, std::size_t node, int local_rank,
                                     const launch_options& options, int restart_count = 0) {
  return detail::worker_env(c, node, local_rank, options, restart_count, detail::spawn_mode::torchrun).value();
}

/// The environment torchrun gives the worker when torchrun itself runs with `agent` (its whole
/// environment, or the part of it that matters): worker_env's variables, except that a
/// TORCH_NCCL_ASYNC_ERROR_HANDLING (NCCL_ASYNC_ERROR_HANDLING before torch 2.2) or OMP_NUM_THREADS
/// set in `agent` is passed on as it is, and PET_SIGNALS_TO_HANDLE there is the default of
/// TORCHELASTIC_SIGNALS_TO_HANDLE (torch 2.9 and later). Every other variable of `agent` reaches the
/// worker unchanged and is not listed. The same errors as try_worker_env.
[[nodiscard]] inline result<environment, diagnostic> try_worker_env_from_agent(const cluster& c, std::size_t node,
                                                                               int local_rank,
                                                                               const launch_options& options,
                                                                               const environment& agent,
                                                                               int restart_count = 0) {
  return detail::worker_env(c, node, local_rank, options, restart_count, detail::spawn_mode::torchrun, &agent);
}
/// try_worker_env_from_agent(...).value().
[[nodiscard]] inline environment worker_env_from_agent(const cluster& c, std::size_t node, int local_rank,
                                                       const launch_options& options, const environment& agent,
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
[[nodiscard]] inline std::vector<runtime_variable> worker_runtime_variables(int local_rank, const launch_options& options,
                                                                           int restart_count = 0) {
  const std::optional<std::string> log_dir = detail::torchrun_arg_value(options, "log_dir");
  std::string pattern = log_dir && *log_dir == "/dev/null" && options.torch.code() >= 200
                            ? std::string()
                            : detail::concat("*/attempt_", restart_count, "/", local_rank, "/error.json");
  return {{"TORCHELASTIC_ERROR_FILE", std::move(pattern),
           "the file the worker's error handler (torch.distributed.elastic.multiprocessing.errors.record) writes"}};
}

/// What torchrun's own environment on `node` needs beyond the usual: CUDA_VISIBLE_DEVICES when the
/// node carries a device list (torchrun passes it on to every worker). Empty otherwise.
/// Precondition: node < c.node_count() (launch_plan::try_agent_env checks it instead).
[[nodiscard]] inline environment agent_env(const cluster& c, std::size_t node) {
  HETLAUNCH_DETAIL_EXPECTS(node < c.node_count(), "agent_env(c, node): node index out of range");
  environment env;
  if (const std::vector<int>* ids = detail::node_devices(c, node))
    env.emplace_back("CUDA_VISIBLE_DEVICES", detail::join_ids(*ids));
  return env;
}
/// agent_env(c, node), then, with a global batch, the node's work share: HETLAUNCH_GLOBAL_BATCH,
/// HETLAUNCH_NODE_BATCH and HETLAUNCH_NODE_BATCH_OFFSET. Validates the topology and global batch
/// (O(N) a call; launch_plan::agent_env costs the node's output only). Errors as split_batch's.
[[nodiscard]] inline result<environment, diagnostic> try_agent_env(const cluster& c, std::size_t node,
                                                                   const launch_options& options) {
  if (node >= c.node_count()) {
    diagnostic d = detail::launch_problem(errc::node_out_of_range);
    d.value = static_cast<long long>(node);
    d.limit = static_cast<long long>(c.node_count());
    return d;
  }
  environment env = agent_env(c, node);
  if (options.global_batch == 0) return env;
  auto split = split_batch(c, options.global_batch);
  if (!split) return split.error();
  detail::append_batch_env(env, options, &(*split)[node]);
  return env;
}

}  // namespace hetlaunch

// Each in a header of its own, and reachable from here as they always were.
#include "accelerate.hpp"
#include "spawn.hpp"
#include "worker_check.hpp"

#endif  // HETLAUNCH_TORCHRUN_HPP
