// SPDX-License-Identifier: MIT
// hetlaunch: all of a torchrun launch in one include: the plan and its one-call functions
// (plan.hpp), every node's command line, the options, every worker's environment, starting
// workers without torchrun, accelerate's command, checking a worker's environment and shell
// quoting. A convenience and compatibility header: no header of the library includes it.
#ifndef HETLAUNCH_TORCHRUN_HPP
#define HETLAUNCH_TORCHRUN_HPP

#include "accelerate.hpp"
#include "launch_options.hpp"
#include "plan.hpp"
#include "shell.hpp"
#include "spawn.hpp"
#include "torchrun_argv.hpp"
#include "worker_check.hpp"
#include "worker_env.hpp"

#endif  // HETLAUNCH_TORCHRUN_HPP
