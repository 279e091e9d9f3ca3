// SPDX-License-Identifier: MIT
// hetlaunch: what a launch needs besides the topology (launch_options), and which of its values
// each output refuses.
#ifndef HETLAUNCH_LAUNCH_OPTIONS_HPP
#define HETLAUNCH_LAUNCH_OPTIONS_HPP

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
#include "numa_binding.hpp"

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
  /// N above 0: every worker gets HETLAUNCH_CALIBRATE_STEPS=N, and its sampler measures N steps,
  /// reports the ranks' rates and stops (`hetlaunch calibrate`). 0: never set, and an inherited
  /// one is removed.
  int calibrate_steps = 0;
  /// M above 0: every worker gets HETLAUNCH_PROGRESS_SECONDS (M / 1000 seconds), and each rank
  /// reports its progress that often (hetlaunch_shares; rank_health.hpp judges it): `hetlaunch
  /// run --hang-timeout` sets it. 0: never set, and an inherited one is removed.
  int progress_milliseconds = 0;
  /// true: every worker gets HETLAUNCH_ON_SLOW=rebalance, and a sampler that does not rebalance
  /// by itself rebalances every window (`hetlaunch run --on-slow rebalance`). false: never set,
  /// and an inherited one is removed.
  bool rebalance_slow_ranks = false;
  /// What preflight found of the job's GPUs (`hetlaunch run --preflight`): every worker gets
  /// HETLAUNCH_MIN_COMPUTE_CAPABILITY (this text, "7.5") and HETLAUNCH_BF16 ("1" or "0"). Empty:
  /// never set (no preflight, or hosts without GPUs), and inherited ones are removed.
  std::string min_compute_capability = {};
  bool bf16 = false;
  /// Each worker runs on the CPUs this mode gives its GPU (torchrun's --numa-binding modes, on
  /// every torch): torchrun starts it with --no-python through `bind_program bind --numa-binding
  /// MODE -- python -u SCRIPT ...`, which sets its CPUs and executes the real command.
  numa_binding binding = numa_binding::none;
  /// The hetlaunch the nodes run for the binding.
  std::string bind_program = "hetlaunch";
};

/// Environment variables as (name, value) pairs, in a documented, stable order.
using environment = std::vector<std::pair<std::string, std::string>>;

namespace detail {

// "[::1]" -> "::1"; every other address unchanged.
inline std::string_view unbracketed(std::string_view addr) noexcept {
  if (addr.size() >= 2 && addr.front() == '[' && addr.back() == ']')
    return addr.substr(1, addr.size() - 2);
  return addr;
}

template <class Topology>
std::string_view master_host(const Topology& c, const launch_options& o) noexcept {
  if (!o.master_addr.empty()) return unbracketed(o.master_addr);
  return c.node_count() ? c.node(0).host : std::string_view();
}

// Whether extra argument `arg` ("--name" or "--name=value", '-' or '_' between words) names
// torchrun's option `option` (underscore spelling): in full, or abbreviated to at least
// `shortest` characters, as argparse accepts a unique prefix.
inline bool names_option(std::string_view arg, std::string_view option,
                         std::size_t shortest) noexcept {
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
  static constexpr const char* computed[] = {
      "nnodes",        "node_rank", "nproc_per_node", "master_addr",  "master_port", "rdzv_backend",
      "rdzv_endpoint", "rdzv_id",   "rdzv_conf",      "max_restarts", "role",        "standalone"};
  for (const char* full : computed)
    if (names_option(arg, full, 1)) return true;
  return false;
}

// The value of one of torchrun's own options among the extra arguments: "--name=v" or "--name v",
// in either spelling; the last one wins, as for argparse. Abbreviations are not recognised.
inline std::optional<std::string> torchrun_arg_value(const launch_options& o,
                                                     std::string_view name) {
  std::optional<std::string> value;
  for (std::size_t i = 0; i < o.torchrun_args.size(); ++i) {
    const std::string_view arg = o.torchrun_args[i];
    if (!names_option(arg, name, name.size())) continue;
    const std::size_t eq = arg.find('=');
    if (eq != std::string_view::npos)
      value = std::string(arg.substr(eq + 1));
    else if (i + 1 < o.torchrun_args.size())
      value = o.torchrun_args[++i];
  }
  return value;
}

// torch 2.14's --virtual-local-rank (or an abbreviation argparse would accept).
inline bool is_virtual_local_rank(std::string_view arg) noexcept {
  return names_option(arg, "virtual_local_rank", 3);
}

// torchrun's --no-python (or an abbreviation argparse would accept): the script is a program.
inline bool is_no_python(std::string_view arg) noexcept {
  return names_option(arg, "no_python", 4);
}

// Extra torchrun arguments that change how a worker is started, which a binding replaces.
inline void binding_problems(const launch_options& o, std::vector<diagnostic>& out) {
  if (o.binding == numa_binding::none) return;
  for (const std::string& arg : o.torchrun_args)
    if (names_option(arg, "run_path", 4) || names_option(arg, "numa_binding", 4)) {
      out.push_back(diagnostic::of(errc::binding_entrypoint).with_text(arg));
    }
}

// Extra torchrun arguments that change the workers' environment in a way the plan does not
// describe: every output that the workers' variables depend on refuses them.
inline void unpredictable_torchrun_args(const launch_options& o, std::vector<diagnostic>& out) {
  for (const std::string& arg : o.torchrun_args)
    if (is_virtual_local_rank(arg)) {
      out.push_back(diagnostic::of(errc::virtual_local_rank).with_text(arg));
    }
}

// A negative global batch, or one below the world size (when the topology has one: a topology
// whose counts are invalid has its own problems).
// The global batch against `world` workers (-1: a topology too broken to count them).
inline void global_batch_problems(const launch_options& o, long long world,
                                  std::vector<diagnostic>& out) {
  if (o.global_batch == 0) return;
  if (o.global_batch < 0) {
    out.push_back(diagnostic::of(errc::bad_global_batch)
                      .with_value(o.global_batch)
                      .with_variable("global_batch"));
    return;
  }
  if (world < 0 || o.global_batch >= world) return;
  out.push_back(diagnostic::of(errc::global_batch_too_small)
                    .with_value(o.global_batch)
                    .with_variable("global_batch")
                    .with_limit(world));
}

template <class Topology>
void batch_problems(const Topology& c, const launch_options& o, std::vector<diagnostic>& out) {
  if (o.global_batch == 0) return;
  long long world = 0;
  for (std::size_t i = 0; i < c.node_count() && world >= 0; ++i) {
    world = c.node(i).nproc < 1 ? -1 : world + c.node(i).nproc;
    if (world > INT_MAX) world = -1;
  }
  global_batch_problems(o, world, out);
}

// Problems of the options that every output depends on: the rendezvous address and port, the
// run id with c10d, the restart limit. The topology gives the master address when none is set.
// `addr` is checked only when `check_addr`.
inline void environment_problems_at(const launch_options& o, std::string_view addr, bool check_addr,
                                    std::vector<diagnostic>& out) {
  if (o.master_port < 1 || o.master_port > 65535) {
    out.push_back(
        diagnostic::of(errc::bad_port).with_value(o.master_port).with_variable("master_port"));
  }
  if (check_addr && check_host(addr, /*allow_underscore=*/true).issue != host_issue::none) {
    out.push_back(
        diagnostic::of(errc::bad_master_addr).with_variable("master_addr").with_text(addr));
  }
  if (o.backend == rendezvous::c10d && (o.rdzv_id.empty() || o.rdzv_id == "none"))
    out.push_back(diagnostic::of(errc::missing_rdzv_id));
  if (o.max_restarts < 0) {
    out.push_back(diagnostic::of(errc::bad_max_restarts).with_value(o.max_restarts));
  }
}
template <class Topology>
void environment_problems(const Topology& c, const launch_options& o,
                          std::vector<diagnostic>& out) {
  environment_problems_at(o, master_host(c, o), c.node_count() != 0, out);
}

// Problems of what only a command line carries. `torchrun` false: accelerate's command, which
// has its own program and no torchrun options.
inline void command_problems(const launch_options& o, bool torchrun, std::vector<diagnostic>& out) {
  if (torchrun && (o.program.empty() || o.program.front().empty()))
    out.push_back(diagnostic::of(errc::empty_program));
  if (torchrun && o.rendezvous_timeout < 0) {
    out.push_back(diagnostic::of(errc::bad_rendezvous_timeout).with_value(o.rendezvous_timeout));
  }
  if (torchrun && o.flags == flag_style::dash && o.torch.code() < 200) {
    out.push_back(diagnostic::of(errc::dash_flags_need_torch_2).with_value(o.torch.code()));
  }
  if (torchrun)
    for (const std::string& arg : o.torchrun_args)
      if (overrides_computed_flag(arg)) {
        out.push_back(diagnostic::of(errc::overriding_torchrun_arg).with_text(arg));
      }
  if (torchrun) unpredictable_torchrun_args(o, out);
  if (torchrun) binding_problems(o, out);
  if (!o.script.empty() && o.script[0] == '-') {
    out.push_back(diagnostic::of(errc::script_looks_like_option).with_text(o.script));
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

}  // namespace detail

/// The launch options' problems before the nodes are known, as a batch script's are: those of
/// validate_plan that do not depend on the hosts, with `world_size` workers for the global batch
/// (port, master_addr when it is set, rdzv_id with c10d, max_restarts, global_batch, program,
/// rendezvous_timeout, flag style, extra torchrun arguments that name a computed option, the
/// binding, a script that starts with '-').
[[nodiscard]] inline std::vector<diagnostic> launch_option_problems(const launch_options& options,
                                                                    int world_size) {
  std::vector<diagnostic> out;
  detail::environment_problems_at(options, options.master_addr, !options.master_addr.empty(), out);
  detail::global_batch_problems(options, world_size, out);
  detail::command_problems(options, true, out);
  return out;
}

// validate_launch(c, node, options) is in plan.hpp, beside the plan whose outputs it describes.

}  // namespace hetlaunch

#endif  // HETLAUNCH_LAUNCH_OPTIONS_HPP
