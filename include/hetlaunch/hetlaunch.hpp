// SPDX-License-Identifier: MIT
// hetlaunch: every public header. Include <hetlaunch/cluster.hpp> for the core alone.
#ifndef HETLAUNCH_HETLAUNCH_HPP
#define HETLAUNCH_HETLAUNCH_HPP

#include "config.hpp"
#include "version.hpp"
#include "result.hpp"
#include "host_issue.hpp"
#include "node_spec.hpp"
#include "weight.hpp"
#include "worker_variables.hpp"
#include "diagnostic.hpp"
#include "text.hpp"
#include "cluster.hpp"
#include "shares.hpp"
#include "shell.hpp"
#include "launch_options.hpp"
#include "worker_env.hpp"
#include "torchrun_argv.hpp"
#include "spawn.hpp"
#include "worker_check.hpp"
#include "accelerate.hpp"
#include "plan.hpp"
#include "restart.hpp"
#include "numa_binding.hpp"
#include "cpu_topology.hpp"
#include "cpu_binding.hpp"
#include "ssh.hpp"
#include "node_group.hpp"
#include "document.hpp"
#include "jobset.hpp"
#include "slurm_batch.hpp"
#include "device_filter.hpp"
#include "hostfile.hpp"
#include "slurm_hostlist.hpp"
#include "slurm.hpp"

#endif  // HETLAUNCH_HETLAUNCH_HPP
