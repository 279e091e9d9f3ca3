// SPDX-License-Identifier: MIT
// hetlaunch: every node's torchrun command line and every worker's environment, as torchrun's
// elastic agent builds them with the static rendezvous.
#ifndef HETLAUNCH_TORCHRUN_HPP
#define HETLAUNCH_TORCHRUN_HPP

#include <charconv>
#include <cstddef>
#include <string>
#include <string_view>
#include <system_error>
#include <utility>
#include <vector>

#include "cluster.hpp"
#include "detail/host_name.hpp"
#include "detail/text.hpp"
#include "diagnostic.hpp"
#include "result.hpp"

namespace hetlaunch {

/// torchrun --rdzv_backend: `static_tcp` (torchrun's `static`, the default) or `c10d`.
/// Only the static rendezvous honours --node_rank; with c10d torchrun orders the nodes by host
/// name and process id when they meet, so their ranks cannot be known in advance.
enum class rendezvous { static_tcp, c10d };

/// How torchrun's options are spelled: `--nproc_per_node` (every torch since 1.9) or
/// `--nproc-per-node` (torch 2.0 and later only).
enum class flag_style { underscore, dash };

/// The torch the nodes run. It decides the NCCL async-error variable's name
/// (NCCL_ASYNC_ERROR_HANDLING before 2.2, TORCH_NCCL_ASYNC_ERROR_HANDLING from 2.2) and whether
/// dash spellings exist (2.0).
struct torch_version {
  int major = 2;
  int minor = 5;
  [[nodiscard]] constexpr int code() const noexcept { return major * 100 + minor; }
};

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
};

/// Environment variables as (name, value) pairs, in a documented, stable order.
using environment = std::vector<std::pair<std::string, std::string>>;

namespace detail {

inline bool safe_for_shell(std::string_view arg) noexcept {
  if (arg.empty()) return false;
  for (char c : arg) {
    const bool plain = is_alpha(c) || is_digit(c) || c == '_' || c == '-' || c == '.' || c == '/' ||
                       c == ',' || c == ':' || c == '=' || c == '+' || c == '@' || c == '%';
    if (!plain) return false;
  }
  return true;
}

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

// torchrun's options that hetlaunch computes; an extra argument naming one (in either spelling,
// or abbreviated, which argparse accepts) would silently replace the computed value.
inline bool overrides_computed_flag(std::string_view arg) noexcept {
  if (arg.size() < 3 || arg[0] != '-' || arg[1] != '-') return false;
  std::string_view name = arg.substr(2);
  name = name.substr(0, name.find('='));
  if (name.empty()) return false;
  static constexpr const char* computed[] = {"nnodes",      "node_rank",     "nproc_per_node", "master_addr",
                                             "master_port", "rdzv_backend",  "rdzv_endpoint",  "rdzv_id",
                                             "rdzv_conf",   "max_restarts",  "role",           "standalone"};
  for (const char* full : computed) {
    const std::string_view f(full);
    if (name.size() > f.size()) continue;
    bool prefix = true;
    for (std::size_t k = 0; k < name.size() && prefix; ++k) prefix = (name[k] == '-' ? '_' : name[k]) == f[k];
    if (prefix) return true;
  }
  return false;
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
    if (o.backend == rendezvous::c10d) out.push_back(launch_problem(errc::ranks_decided_at_rendezvous));
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

template <class Topology>
environment build_worker_env(const Topology& c, std::size_t node, int local_rank, const launch_options& o,
                             int restart_count, spawn_mode mode) {
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
  set(o.torch.code() >= 202 ? "TORCH_NCCL_ASYNC_ERROR_HANDLING" : "NCCL_ASYNC_ERROR_HANDLING", "1");
  if (spec.nproc > 1) set("OMP_NUM_THREADS", "1");
  if (const std::vector<int>* ids = node_devices(c, node)) set("CUDA_VISIBLE_DEVICES", join_ids(*ids));
  return env;
}

template <class Topology>
result<environment, diagnostic> worker_env(const Topology& c, std::size_t node, int local_rank,
                                           const launch_options& o, int restart_count, spawn_mode mode) {
  std::vector<diagnostic> problems = launch_problems(c, node, o, output::environment);
  if (problems.empty()) {
    const auto rank = c.try_global_rank(node, local_rank);  // local_rank_out_of_range, if it is
    if (!rank) problems.push_back(rank.error());
  }
  if (!problems.empty()) return problems.front();
  return build_worker_env(c, node, local_rank, o, restart_count, mode);
}

}  // namespace detail

/// Quotes one argument for POSIX sh: unchanged when it is made only of characters sh never
/// interprets, else in single quotes with each ' written as '\''. Empty gives ''.
/// Precondition: no NUL byte (no process argument can hold one).
[[nodiscard]] inline std::string shell_quote(std::string_view arg) {
  if (detail::safe_for_shell(arg)) return std::string(arg);
  std::string out = "'";
  for (char c : arg) {
    if (c == '\'') out += "'\\''";
    else out += c;
  }
  out += '\'';
  return out;
}

/// Joins an argv into one line for POSIX sh: `sh -c "$(shell_join(argv))"` runs exactly argv,
/// whatever bytes the arguments hold (quotes, $(), backticks, newlines, globs, blanks, '').
[[nodiscard]] inline std::string shell_join(const std::vector<std::string>& argv) {
  std::string out;
  for (std::size_t i = 0; i < argv.size(); ++i) {
    if (i) out += ' ';
    out += shell_quote(argv[i]);
  }
  return out;
}

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
/// worker, and CUDA_VISIBLE_DEVICES when the node carries a device list (cluster::devices): every
/// worker of the node sees all of the node's devices, as under torchrun, which passes its own
/// CUDA_VISIBLE_DEVICES on to each worker (so set agent_env's value in torchrun's environment). torchrun also passes on its own environment; the last two assume it does not already
/// set them. `restart_count` is TORCHELASTIC_RESTART_COUNT: 0 at the first start, then the
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

/// The environment for a launcher that starts the workers itself, without torchrun: the same
/// rank variables as worker_env, TORCHELASTIC_USE_AGENT_STORE=False (no agent hosts a store, so
/// worker RANK 0 hosts it at MASTER_ADDR:MASTER_PORT; claiming an agent store would leave every
/// rank waiting as a client), and no TORCHELASTIC_RUN_ID / _RESTART_COUNT / _MAX_RESTARTS, so
/// torch.distributed.is_torchelastic_launched() is false.
[[nodiscard]] inline result<environment, diagnostic> try_direct_worker_env(const cluster& c, std::size_t node,
                                                                           int local_rank, const launch_options& options) {
  return detail::worker_env(c, node, local_rank, options, 0, detail::spawn_mode::direct);
}
/// try_direct_worker_env(...).value().
[[nodiscard]] inline environment direct_worker_env(const cluster& c, std::size_t node, int local_rank,
                                                   const launch_options& options) {
  return try_direct_worker_env(c, node, local_rank, options).value();
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

/// Replaces the local rank in one script argument as torchrun does (Python's
/// string.Template.safe_substitute with local_rank): "${local_rank}" and "$local_rank" become the
/// number, "$$" becomes "$", anything else stays as it is.
[[nodiscard]] inline std::string substitute_local_rank(std::string_view arg, int local_rank) {
  std::string out;
  const std::string value = std::to_string(local_rank);
  const auto ident_char = [](char c, bool first) {
    return detail::is_alpha(c) || c == '_' || (!first && detail::is_digit(c));
  };
  std::size_t i = 0;
  while (i < arg.size()) {
    if (arg[i] != '$' || i + 1 == arg.size()) {
      out += arg[i++];
      continue;
    }
    const char next = arg[i + 1];
    if (next == '$') {
      out += '$';
      i += 2;
    } else if (next == '{') {
      std::size_t end = i + 2;
      while (end < arg.size() && ident_char(arg[end], end == i + 2)) ++end;
      if (end < arg.size() && arg[end] == '}' && arg.substr(i + 2, end - i - 2) == "local_rank") {
        out += value;
        i = end + 1;
      } else {
        out += arg[i++];
      }
    } else if (ident_char(next, true)) {
      std::size_t end = i + 1;
      while (end < arg.size() && ident_char(arg[end], end == i + 1)) ++end;
      if (arg.substr(i + 1, end - i - 1) == "local_rank") out += value;
      else out.append(arg.data() + i, end - i);
      i = end;
    } else {
      out += arg[i++];
    }
  }
  return out;
}

/// The command torchrun's agent runs for a worker, for launchers that start workers themselves:
/// {python, "-u", ("-m",) script, script_args with the local rank substituted}.
[[nodiscard]] inline std::vector<std::string> worker_argv(int local_rank, const launch_options& options) {
  std::vector<std::string> argv = {options.python, "-u"};
  if (options.module) argv.push_back("-m");
  argv.push_back(options.script);
  for (const std::string& a : options.script_args) argv.push_back(substitute_local_rank(a, local_rank));
  return argv;
}

/// An environment block for execve / posix_spawn: `vars` over a base environment (usually
/// `environ`). A base entry is dropped when `vars` sets the same name, and so are the base's
/// TORCHELASTIC_* and TORCH_ELASTIC_WORKER_IDENTICAL, which describe some other launch.
/// envp() stays valid while this object lives and is not modified.
class spawn_environment {
  std::vector<std::string> entries_;
  std::vector<char*> pointers_;

 public:
  spawn_environment(const environment& vars, const char* const* base) {
    const auto overridden = [&vars](std::string_view name) {
      if (name.substr(0, 13) == "TORCHELASTIC_" || name == "TORCH_ELASTIC_WORKER_IDENTICAL") return true;
      for (const auto& v : vars)
        if (v.first == name) return true;
      return false;
    };
    for (const char* const* e = base; e && *e; ++e) {
      const std::string_view entry(*e);
      const std::size_t eq = entry.find('=');
      if (eq == std::string_view::npos || !overridden(entry.substr(0, eq))) entries_.emplace_back(entry);
    }
    for (const auto& v : vars) entries_.push_back(detail::concat(v.first, "=", v.second));
    for (std::string& s : entries_) pointers_.push_back(s.data());
    pointers_.push_back(nullptr);
  }
  spawn_environment(const spawn_environment&) = delete;
  spawn_environment& operator=(const spawn_environment&) = delete;

  /// The null-terminated array of "NAME=value" strings.
  [[nodiscard]] char* const* envp() const noexcept { return pointers_.data(); }
  [[nodiscard]] const std::vector<std::string>& entries() const noexcept { return entries_; }
};

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
    const auto r = std::from_chars(s.data(), s.data() + s.size(), value);
    if (s.empty() || r.ec != std::errc() || r.ptr != s.data() + s.size()) {
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
    d.position = static_cast<std::size_t>(local);
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
/// The diagnostics view the strings `get` returned and the cluster's.
template <class Getenv>
[[nodiscard]] std::vector<diagnostic> check_worker_env(const cluster& c, Getenv&& get) {
  return detail::compare_worker_env(c, std::forward<Getenv>(get));
}
/// check_worker_env over an environment list (the later of two equal names wins).
[[nodiscard]] inline std::vector<diagnostic> check_worker_env(const cluster& c, const environment& env) {
  return detail::compare_worker_env(c, [&env](const char* name) -> const char* {
    const char* found = nullptr;
    for (const auto& v : env)
      if (v.first == name) found = v.second.c_str();
    return found;
  });
}

/// The `accelerate launch` argv for machine `node` that really yields the heterogeneous job:
/// accelerate divides --num_processes by --num_machines to get each machine's
/// --nproc_per_node, so each machine is given its own nproc times the machine count:
///   accelerate launch --multi_gpu --num_machines N --machine_rank i --num_processes nproc_i*N
///     --main_process_ip ADDR --main_process_port PORT --rdzv_backend static
///     --max_restarts K [-m] script args...
/// The static backend keeps --machine_rank meaningful. Roles and torchrun_args are not forwarded
/// (accelerate has no such options); program[0] is ignored in favour of "accelerate".
[[nodiscard]] inline result<std::vector<std::string>, diagnostic>
try_accelerate_argv(const cluster& c, std::size_t node, const launch_options& options) {
  launch_options o = options;
  o.backend = rendezvous::static_tcp;  // accelerate is always given the static rendezvous
  const std::vector<diagnostic> problems = detail::launch_problems(c, node, o, detail::output::accelerate_argv);
  if (!problems.empty()) return problems.front();
  const long long total = static_cast<long long>(c.nproc(node)) * static_cast<long long>(c.node_count());
  if (total < 2) {
    diagnostic d = detail::launch_problem(errc::too_few_processes);
    d.value = total;
    return d;
  }
  std::vector<std::string> argv = {"accelerate", "launch", "--multi_gpu",
                                   "--num_machines", std::to_string(c.node_count()),
                                   "--machine_rank", std::to_string(node),
                                   "--num_processes", std::to_string(total),
                                   "--main_process_ip", std::string(detail::master_host(c, o)),
                                   "--main_process_port", std::to_string(o.master_port),
                                   "--rdzv_backend", "static",
                                   "--max_restarts", std::to_string(o.max_restarts)};
  if (o.module) argv.push_back("-m");
  argv.push_back(o.script);
  argv.insert(argv.end(), o.script_args.begin(), o.script_args.end());
  return argv;
}
/// try_accelerate_argv(...).value().
[[nodiscard]] inline std::vector<std::string> accelerate_argv(const cluster& c, std::size_t node,
                                                              const launch_options& options) {
  return try_accelerate_argv(c, node, options).value();
}

}  // namespace hetlaunch

#endif  // HETLAUNCH_TORCHRUN_HPP
