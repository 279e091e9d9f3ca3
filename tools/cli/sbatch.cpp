// SPDX-License-Identifier: MIT
// `hetlaunch sbatch`: the library's Slurm batch script (slurm_batch.hpp) for the --group shapes,
// whose nodes run this hetlaunch's `exec --slurm` with the launch options as given here.
#include "cli.hpp"

#include <algorithm>
#include <cstdio>
#include <vector>

#include <hetlaunch/slurm_batch.hpp>

namespace cli {

int sbatch_command(const sbatch_command_options& o) {
  const result<std::vector<hetlaunch::node_group>> shapes = node_groups(o);
  if (!shapes) return fail(shapes.error());
  const std::vector<hetlaunch::node_group>& groups = *shapes;
  check_restart_flags(o.restart);
  // The flags wrote the script's own options; the restart flags, shared with run, join them.
  hetlaunch::slurm_batch_options batch = o.sbatch;
  if (o.restart.restarts) batch.restart = restart_options_of(o.restart);
  // A problem of the script's own: an sbatch option sbatch would misread is a usage error.
  if (const auto problems = hetlaunch::validate_slurm_batch(groups, batch); !problems.empty()) {
    if (problems.front().code == hetlaunch::errc::bad_sbatch_option)
      throw usage_error{problems.front().message()};
    return fail(concat("sbatch: ", problems.front().message()));
  }
  long long world = 0;
  for (const hetlaunch::node_group& g : groups) world += static_cast<long long>(g.nodes) * g.gpus;
  // The launch options, checked now rather than in the job, against the job's world size.
  if (const auto problems = hetlaunch::launch_option_problems(o.launch, static_cast<int>(world));
      !problems.empty()) {
    print_problems("sbatch", problems);
    return exit_invalid;
  }
  batch.command = {o.launch.script};
  batch.command.insert(batch.command.end(), o.launch.script_args.begin(),
                       o.launch.script_args.end());
  // The nodes run `hetlaunch exec` with the launch options exactly as given here; the workers'
  // binder is the hetlaunch the nodes run, unless told otherwise.
  batch.launch_args = o.launch_args;
  const bool bind_program_given =
      std::find(o.given.begin(), o.given.end(), "--bind-program") != o.given.end();
  if (o.launch.binding != hetlaunch::numa_binding::none && !bind_program_given)
    batch.launch_args.insert(batch.launch_args.end(), {"--bind-program", batch.hetlaunch_program});
  const auto script = hetlaunch::try_slurm_batch_script(groups, batch);
  if (!script) return fail(concat("sbatch: ", script.error().message()));
  std::fwrite(script->data(), 1, script->size(), stdout);
  return 0;
}

}  // namespace cli
