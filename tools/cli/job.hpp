// SPDX-License-Identifier: MIT
// The job of `run` and `calibrate`: how it ends, and one attempt of it (attempt.cpp). The restart
// loop around the attempts, and the one exit, are run.cpp's.
#ifndef HETLAUNCH_TOOLS_JOB_HPP
#define HETLAUNCH_TOOLS_JOB_HPP

#include <cstddef>
#include <functional>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include <hetlaunch/metrics.hpp>

#include "cli.hpp"
#include "process.hpp"

namespace cli {

// How a job ended, said once: its ending (job_exited's reason) and the status hetlaunch exits
// with.
struct job_end {
  job_ending ending = job_ending::succeeded;
  int status = 0;
  // calibrate: the last attempt's nodes and rank 0's measured line in it (only when measuring).
  std::optional<hetlaunch::cluster> topology = std::nullopt;
  std::string measured = {};
  // The node that failed first in the attempt that ended the job, and its host.
  std::optional<std::size_t> failed_node = std::nullopt;
  std::string failed_host = {};
};

// A host that left the job, probed while an attempt runs (run --grow-back).
struct probed_host {
  std::string host;
  bool rejoins = true;  // its place is empty: it rejoins at a checkpoint (else it stands by)
};

// How one attempt of the job ended.
struct attempt_result {
  job_end end;                        // the job's end if this attempt is its last
  std::vector<std::size_t> failed;    // the node that failed first, then every host not reached
  std::string failure;                // what happened to the node that failed first
  std::string local_failure;          // why a node could not be started from this machine
  std::vector<std::string> returned;  // the probed hosts that answered again
  bool grow = false;                  // stopped at a checkpoint for a host that rejoins
  bool slow = false;                  // stopped at a checkpoint to leave failed's slow node out
  long long checkpoint_step = -1;     // the step of rank 0's last checkpoint line, -1: none
  bool interrupted() const { return end.ending == job_ending::interrupted; }
};

// --metrics FILE: the job as metrics.hpp shows it, FILE replaced whole each time (written beside
// it under a name node_exporter's textfile collector skips, then renamed), so that a scrape never
// reads half a file. A file that cannot be written is said once; the job goes on.
class metrics_file {
 public:
  explicit metrics_file(std::optional<std::string> path) : path_(std::move(path)) {}
  explicit operator bool() const { return path_.has_value(); }
  hetlaunch::job_metrics metrics;  // the job's values (run.cpp), its nodes and ranks (attempt.cpp)
  void write();

 private:
  std::optional<std::string> path_;
  bool failure_said_ = false;
};

// Whether the job may restart without a node that is slow (--on-slow exclude): a restart is
// left, and the job without it is large enough.
using slow_exclusion = std::function<bool(std::size_t node)>;

// Runs every node of `plan` until they have all ended, or stops them all at the first failure
// or signal; node_started, node_exited and node_returned go to `events`, the job's state to
// `metrics`. `probes`: the hosts that left the job, asked every --probe-every seconds; one that
// answers and rejoins stops the attempt at rank 0's next checkpoint line, and so does a slow
// rank's node that `may_exclude` lets leave (--on-slow exclude).

attempt_result run_attempt(const job_options& o, const hetlaunch::launch_plan& plan,
                           const hetlaunch::ssh_options& ssh, event_log& events,
                           metrics_file& metrics, const std::vector<probed_host>& probes,
                           const slow_exclusion& may_exclude);

// discover.cpp: a host's GPU-count question, as discover and slots=auto ask it (also run
// --grow-back's probe of a host that left). Its argv: ssh to the host, or here with --local.
std::vector<std::string> gpu_count_argv(const remote_args& remote, std::string_view host);
// The argv that runs `command` on host (through ssh; here with --local).
std::vector<std::string> host_question_argv(const remote_args& remote, std::string_view host,
                                            const std::string& command);
// The shell command that prints a host's facts (preflight.hpp) with `python`.
std::string host_facts_command(const std::string& python);
// Reads what one stream of a question has; false once the answer is longer than any count could
// be (64 KiB): the caller stops it.
bool read_gpu_count_output(child& c, bool out);
// The count a question that has ended gave: its command exited 0 and printed a count.
std::optional<int> gpu_count_of(const child& c, const remote_args& remote);

// Node i's command: ssh to its host, or with --local the same remote command run here.
std::vector<std::string> node_command(const job_options& o, const hetlaunch::launch_plan& plan,
                                      std::size_t i, const hetlaunch::ssh_options& ssh);

}  // namespace cli

#endif  // HETLAUNCH_TOOLS_JOB_HPP
