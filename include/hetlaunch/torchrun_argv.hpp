// SPDX-License-Identifier: MIT
// hetlaunch: every node's torchrun command line, with the static or the c10d rendezvous.
#ifndef HETLAUNCH_TORCHRUN_ARGV_HPP
#define HETLAUNCH_TORCHRUN_ARGV_HPP

#include <cstddef>
#include <string>
#include <string_view>
#include <vector>

#include "cluster.hpp"
#include "detail/host_name.hpp"
#include "detail/text.hpp"
#include "diagnostic.hpp"
#include "launch_options.hpp"
#include "result.hpp"

namespace hetlaunch {

namespace detail {

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

// With `node_rank_at`, a static launch's --node_rank is left out and *node_rank_at says where it
// goes: a JobSet pod puts its own there.
template <class Topology>
std::vector<std::string> build_torchrun_argv(const Topology& c, std::size_t node,
                                             const launch_options& o,
                                             std::size_t* node_rank_at = nullptr) {
  std::vector<std::string> argv = o.program;
  const node_spec spec = c.node(node);
  argv.push_back(flag(o, "nnodes", std::to_string(c.node_count())));
  if (node_rank_at)
    *node_rank_at = argv.size();
  else if (o.backend == rendezvous::static_tcp)
    argv.push_back(flag(o, "node_rank", std::to_string(node)));
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
    argv.push_back(flag(o, "rdzv_endpoint",
                        is_ipv6_literal(host) ? concat("[", host, "]:", o.master_port)
                                              : concat(host, ":", o.master_port)));
    if (o.rendezvous_timeout > 0)
      argv.push_back(flag(o, "rdzv_conf", concat("join_timeout=", o.rendezvous_timeout)));
  }
  if (o.rdzv_id != "none" || o.backend == rendezvous::c10d)
    argv.push_back(flag(o, "rdzv_id", o.rdzv_id));
  bool no_python = false;
  for (const std::string& arg : o.torchrun_args) no_python = no_python || is_no_python(arg);
  if (o.binding != numa_binding::none && !no_python) argv.push_back(flag(o, "no_python"));
  argv.insert(argv.end(), o.torchrun_args.begin(), o.torchrun_args.end());
  if (o.binding != numa_binding::none) {
    // torchrun runs the binder as the worker; it executes the command torchrun would have run.
    argv.insert(argv.end(), {o.bind_program, "bind", "--numa-binding",
                             std::string(numa_binding_name(o.binding)), "--"});
    if (!no_python) argv.insert(argv.end(), {o.python, "-u"});
  }
  if (o.module) argv.push_back("-m");
  argv.push_back(o.script);
  argv.insert(argv.end(), o.script_args.begin(), o.script_args.end());
  return argv;
}

}  // namespace detail

// The public torchrun_argv and try_torchrun_argv are in plan.hpp: each makes a plan and asks it.

}  // namespace hetlaunch

#endif  // HETLAUNCH_TORCHRUN_ARGV_HPP
