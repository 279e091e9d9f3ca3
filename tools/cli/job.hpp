// SPDX-License-Identifier: MIT
// The job of `run` and `calibrate`: how it ends, and one attempt of it (attempt.cpp). The restart
// loop around the attempts, and the one exit, are run.cpp's.
#ifndef HETLAUNCH_TOOLS_JOB_HPP
#define HETLAUNCH_TOOLS_JOB_HPP

#include <cstddef>
#include <optional>
#include <string>
#include <vector>

#include "cli.hpp"

namespace cli {

// How a job ended, said once: its ending (job_exited's reason) and the status hetlaunch exits
// with.
struct job_end {
  job_ending ending = job_ending::succeeded;
  int status = 0;
  // calibrate: the last attempt's nodes and rank 0's measured line in it (only when measuring).
  std::optional<hetlaunch::cluster> topology = std::nullopt;
  std::string measured = {};
};

// How one attempt of the job ended.
struct attempt_result {
  job_end end;                      // the job's end if this attempt is its last
  std::vector<std::size_t> failed;  // the node that failed first, then every host not reached
  std::string failure;              // what happened to the node that failed first
  std::string local_failure;        // why a node could not be started from this machine
  bool interrupted() const { return end.ending == job_ending::interrupted; }
};

// Runs every node of `plan` until they have all ended, or stops them all at the first failure
// or signal; node_started and node_exited go to `events`.
attempt_result run_attempt(const job_options& o, const hetlaunch::launch_plan& plan,
                           const hetlaunch::ssh_options& ssh, event_log& events);

// Node i's command: ssh to its host, or with --local the same remote command run here.
std::vector<std::string> node_command(const job_options& o, const hetlaunch::launch_plan& plan,
                                      std::size_t i, const hetlaunch::ssh_options& ssh);

}  // namespace cli

#endif  // HETLAUNCH_TOOLS_JOB_HPP
