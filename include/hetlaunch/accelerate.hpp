// SPDX-License-Identifier: MIT
// hetlaunch: the `accelerate launch` command of each machine of a heterogeneous job.
#ifndef HETLAUNCH_ACCELERATE_HPP
#define HETLAUNCH_ACCELERATE_HPP

#include <cstddef>
#include <string>
#include <vector>

#include "cluster.hpp"
#include "diagnostic.hpp"
#include "result.hpp"
#include "launch_options.hpp"

namespace hetlaunch {

namespace detail {
// The texts of accelerate's problems; the codes it shares with the core keep the core's.
inline std::string accelerate_message(const diagnostic& d) {
  switch (d.code) {
    case errc::too_few_processes:
      return concat("accelerate launch --multi_gpu needs at least 2 processes; this job has ",
                    d.value);
    case errc::binding_not_carried:
      return "accelerate's command cannot carry --numa-binding (accelerate starts the workers itself); leave it out, "
             "or use accelerate's own --enable_cpu_affinity";
    default:
      return core_message(d);
  }
}

inline diagnostic accelerate_problem(errc code) {
  return diagnostic::of(code).with_describe(&accelerate_message);
}

// Machine `node`'s command from options already checked: only the machine's own process count
// can still refuse, so this costs the command's size.
inline result<std::vector<std::string>, diagnostic> build_accelerate_argv(const cluster& c,
                                                                          std::size_t node,
                                                                          const launch_options& o) {
  if (o.binding != numa_binding::none) return accelerate_problem(errc::binding_not_carried);
  const long long total =
      static_cast<long long>(c.nproc(node)) * static_cast<long long>(c.node_count());
  if (total < 2) {
    return accelerate_problem(errc::too_few_processes).with_value(total);
  }
  std::vector<std::string> argv = {"accelerate",
                                   "launch",
                                   "--multi_gpu",
                                   "--num_machines",
                                   std::to_string(c.node_count()),
                                   "--machine_rank",
                                   std::to_string(node),
                                   "--num_processes",
                                   std::to_string(total),
                                   "--main_process_ip",
                                   std::string(master_host(c, o)),
                                   "--main_process_port",
                                   std::to_string(o.master_port),
                                   "--rdzv_backend",
                                   "static",
                                   "--max_restarts",
                                   std::to_string(o.max_restarts)};
  if (o.module) argv.push_back("-m");
  argv.push_back(o.script);
  argv.insert(argv.end(), o.script_args.begin(), o.script_args.end());
  return argv;
}
}  // namespace detail

// accelerate_argv is in plan.hpp: it makes a plan and asks it (launch_plan::try_accelerate_argv).

}  // namespace hetlaunch

#endif  // HETLAUNCH_ACCELERATE_HPP
