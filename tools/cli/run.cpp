// SPDX-License-Identifier: MIT
// `hetlaunch run`: every ssh command line comes from the library (ssh.hpp); this file starts the
// ssh clients (process.hpp), multiplexes their output line by line, and stops every node when
// one fails or when it is interrupted.
//
// How a node is stopped: each ssh's standard input is a pipe that this process holds open. The
// remote command (hetlaunch::detail::node_script) tears torchrun and all its workers down when
// that input ends, so closing the pipe stops the node, and so does this process dying (the
// kernel closes the pipe, ssh sends EOF, the connection ends). A node that does not stop within
// --kill-after seconds and a margin has its ssh killed, which ends the connection as well; the
// margin counts from the node's start for a node that was still connecting when the stop began.
#include "cli.hpp"
#include "process.hpp"

#include <hetlaunch/calibration.hpp>
#include <hetlaunch/restart.hpp>

#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdint>
#include <climits>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <unordered_set>

extern char** environ;

namespace cli {
namespace {

// What `run` learns of a node from its lines.
struct node_progress {
  bool started = false;     // the node script's started line was seen
  bool ended = false;       // its ended line was seen: ssh's status is the command's
  int worker_failures = 0;  // torchrun's "failed (exitcode: N) local_rank: L" lines
  int failed_exitcode = 0;  // the last of those exit codes
};

// torchrun's agent logs "failed (exitcode: 3) local_rank: 0 (pid: 123) of binary: ..." when a
// worker fails (torch 1.13 through 2.x). It then waits up to 300 s for the other nodes in its exit
// barrier, and they wait for a collective that will never complete: a job whose worker failed
// would stop only after minutes. The line is the earliest sign, so it counts as the failure.
void note_worker_failure(node_progress& p, std::string_view line) {
  // A worker's own line ("[rank 1] ", "[default1]:"), whatever it says, is not torchrun's report.
  if (line.substr(0, 1) == "[") return;
  const std::size_t at = line.find("failed (exitcode: ");
  if (at == std::string_view::npos || line.find(" local_rank: ", at) == std::string_view::npos)
    return;
  // "-9" is a worker killed by signal 9, as torchrun writes it.
  const std::string_view rest = line.substr(at + 18);
  const std::optional<long long> code =
      hetlaunch::parse_integer(rest.substr(0, rest.find(')')), -(1 << 30), 1 << 30);
  ++p.worker_failures;
  p.failed_exitcode = static_cast<int>(code.value_or(0));
}

// calibrate: the last HETLAUNCH_MEASURED line of rank 0 (node 0's local rank 0 under the static
// rendezvous), a whole line that begins with the word, after torchrun's "[default0]:" (--tee) and
// the node's "[rank 0] " (ssh_options::rank_lines) where they are: the word inside a log
// message, or another rank's line, is not a measurement.
void note_measured(std::string_view line, std::string& measured) {
  for (std::string_view rank0 : {std::string_view("[default0]:"), std::string_view("[rank 0] ")})
    if (line.substr(0, rank0.size()) == rank0) line.remove_prefix(rank0.size());
  if (line.substr(0, hetlaunch::measured_prefix.size()) == hetlaunch::measured_prefix)
    measured = std::string(line.substr(hetlaunch::measured_prefix.size()));
}

// The variables every node gets: the forwarded defaults, then --env-file, then --env.
result<hetlaunch::environment> node_environment(const job_options& o) {
  hetlaunch::environment env = hetlaunch::forwarded_environment(environ);
  if (o.remote.env_file) {
    const result<std::string> text = read_file(*o.remote.env_file, "an env file");
    if (!text) return text.error();
    auto parsed = hetlaunch::parse_env_file(*text);
    if (!parsed)
      return invalid(concat(*o.remote.env_file, ":", parsed.error().line, ":",
                            parsed.error().column, ": ", parsed.error().message));
    env.insert(env.end(), parsed->begin(), parsed->end());
  }
  result<hetlaunch::environment> flags = env_flags(o);
  if (!flags) return flags.error();
  env.insert(env.end(), flags->begin(), flags->end());
  return env;
}

// How one attempt of the job ended.
struct attempt_result {
  std::string measured;             // calibrate: rank 0's last measured line (note_measured)
  int status = 0;                   // run's exit status for this attempt
  bool interrupted = false;         // a signal stopped it
  std::vector<std::size_t> failed;  // the node that failed first, then every host not reached
  std::string failure;              // what happened to the node that failed first
  std::string local_failure;        // why a node could not be started from this machine
  // job_exited's reason if this attempt is the last: succeeded, worker_failed, unreachable,
  // ended_before_start or interrupted.
  const char* reason = "succeeded";
};

// How a node ended, said once: node_exited's reason, and the line run prints about it (empty for
// a node that succeeded). `stopping`: the job was being stopped when its ssh ended;
// `first_to_fail`: its end is the job's first failure; `by_worker`: that failure was a worker's.
struct node_end {
  const char* reason;
  std::string text;
};
node_end end_of(const child& c, const node_progress& p, bool stopping, bool first_to_fail,
                bool by_worker) {
  // ssh's own 255: it could not connect (the node never started), or the connection was lost
  // (the node script never said it ended). A 255 after the node script's ended line is the
  // command's own status: the node failed, and its host is not called unreachable
  // (--exclude-failed would drain a healthy host for a program's exit 255).
  const bool ssh_failed = WIFEXITED(c.status) && WEXITSTATUS(c.status) == 255 && !p.ended;
  if (p.started && c.status == 0) return {"succeeded", ""};
  const char* reason = ssh_failed                   ? "unreachable"
                       : stopping && !first_to_fail ? "stopped"
                       : p.started                  ? "failed"
                                                    : "ended_before_start";
  // A node stopped while connecting still starts (and then stops at once), so one that did not
  // start ended by itself, unless it was killed.
  if (!p.started && WIFSIGNALED(c.status))
    return {reason, concat("stopped before the node started (", describe_status(c.status), ")")};
  if (!p.started && ssh_failed)
    return {reason, "ssh failed (exit status 255) before the node started"};
  if (ssh_failed && !(stopping && !first_to_fail))
    return {reason, "the connection was lost (ssh exit status 255 before the node ended)"};
  if (!p.started)
    return {reason, concat("ssh ended before the node started (", describe_status(c.status), ")")};
  if (first_to_fail && by_worker)
    return {reason, concat("a worker failed (exit code ", p.failed_exitcode, "); torchrun ",
                           describe_status(c.status))};
  if (stopping && !first_to_fail)
    return {reason, concat("stopped (", describe_status(c.status), ")")};
  return {reason, describe_status(c.status)};
}

// The job's reason when the node that failed first ended for `node_reason`.
const char* job_reason_of(const char* node_reason) {
  const std::string_view r = node_reason;
  if (r == "unreachable") return "unreachable";
  if (r == "ended_before_start") return "ended_before_start";
  return "worker_failed";
}

// Node i's command: ssh to its host, or with --local the same remote command run here.
std::vector<std::string> node_command(const job_options& o, const hetlaunch::launch_plan& plan,
                                      std::size_t i, const hetlaunch::ssh_options& ssh) {
  return o.remote.local ? hetlaunch::try_remote_argv(plan, i, ssh).value()
                        : hetlaunch::ssh_argv(plan, i, ssh);
}

attempt_result run_attempt(const job_options& o, const hetlaunch::launch_plan* plan,
                           const hetlaunch::ssh_options& ssh) {
  const auto command_of = [&](std::size_t i) { return node_command(o, *plan, i, ssh); };
  install_signal_handlers();
  const std::size_t n = plan->topology().node_count();
  std::vector<child> nodes(n);
  std::vector<node_progress> progress_of(n);
  std::vector<std::string> ends(n);  // the line said about each node that did not end well
  std::vector<std::string> prefixes(n);
  for (std::size_t i = 0; i < n; ++i)
    prefixes[i] = concat("[", i, " ", plan->topology().node(i).host, "] ");
  std::size_t next = 0;
  bool stopping = false;
  int stop_signal = 0;
  double deadline = 0;
  std::optional<std::size_t> first_failure;
  std::string local_failure;
  bool failed_by_worker = false;  // the first failure was a worker's, seen in torchrun's log
  const char* first_failure_reason = "failed";  // node_exited's reason of the first failure
  event_log& events = job_events;
  double stopped_at = 0;    // when the stop began
  bool killed_all = false;  // every ssh has had SIGKILL: only their ends are left to collect
  const double grace = o.remote.ssh.kill_after + 5.0;
  const auto stop = [&] {
    if (!stopping) {
      stopping = true;
      stopped_at = now();
      deadline = stopped_at + grace;
    }
    for (child& c : nodes) close_fd(c.in);
  };
  // A node still connecting when the stop began starts its teardown only once its script runs:
  // it gets the same grace from then, so that run does not end while that node's teardown is
  // still under way. Twice the grace from the stop bounds it, however slow the connections.
  const auto started_while_stopping = [&] {
    if (stopping && !killed_all)
      deadline = std::min(stopped_at + 2 * grace, std::max(deadline, now() + grace));
  };
  const auto fanout = static_cast<std::size_t>(o.remote.fanout);
  std::size_t connecting = 0, running = 0, started = 0;
  std::string measured;
  event_loop loop(nodes);
  const auto read_node = [&](std::size_t i, bool out) {
    child& c = nodes[i];
    node_progress& p = progress_of[i];
    const bool was_started = p.started;
    // calibrate's stdout is its own table or JSON: the nodes' lines all go to stderr there.
    line_sink sink = shown_lines(out && !o.calibrate.measuring ? stdout : stderr, prefixes[i],
                                 !out || !o.remote.quiet_nodes || i == 0);
    const bool measuring = o.calibrate.measuring && i == 0;
    // Rank 0's measured line grows with the node count (about 80 bytes a node): it is read
    // whole up to 16 MiB, some 200,000 nodes.
    if (out && measuring) sink.whole_line = std::size_t{16} << 20;
    if (out)
      sink.watch = [&p, measuring, &measured](std::string_view line) {
        if (!p.started && line == hetlaunch::node_started_line) {
          p.started = true;  // the node script's own line: not shown
          return true;
        }
        if (p.started &&
            line.substr(0, hetlaunch::node_ended_prefix.size()) == hetlaunch::node_ended_prefix) {
          p.ended = true;  // the node script's own last line: not shown
          return true;
        }
        if (measuring) note_measured(line, measured);
        return false;
      };
    else
      sink.watch = [&p](std::string_view line) {
        note_worker_failure(p, line);
        return false;
      };
    drain(out ? c.out : c.err, out ? c.out_line : c.err_line, sink);
    if (!was_started && p.started) {
      --connecting, ++started;
      started_while_stopping();
      if (events)
        events.write(
            "node_started",
            concat("\"node\": ", i, ", \"host\": ", json_string(plan->topology().node(i).host)));
    }
  };
  const auto on_signal = [&](int number) {
    if (stop_signal) {  // a second signal: no more waiting
      for (child& c : nodes)
        if (c.pid > 0 && !c.reaped) kill(c.pid, SIGKILL);
      killed_all = true;
    }
    if (!stop_signal) {
      stop_signal = number;
      progress.clear();
      std::fprintf(stderr, "hetlaunch: %s: stopping every node (again to stop at once)\n",
                   strsignal(stop_signal));
    }
    stop();
  };
  const auto on_output = [&](std::size_t i, bool out) {
    read_node(i, out);
    // More failures than restarts: torchrun gives up on this node's workers.
    if (progress_of[i].worker_failures > plan->options().max_restarts && !stopping) {
      first_failure = i;
      failed_by_worker = true;
      progress.clear();
      std::fprintf(
          stderr,
          "hetlaunch: node %zu: a worker failed (exit code %d) and torchrun has no restart left: "
          "stopping every node\n",
          i, progress_of[i].failed_exitcode);
      stop();
    }
  };
  const auto on_end = [&](std::size_t i, int) {
    child& c = nodes[i];
    // Output still in the pipes is read before the node's end is reported.
    if (c.out >= 0) read_node(i, true);
    if (c.err >= 0) read_node(i, false);
    if (!progress_of[i].started) --connecting;
    --running;
    c.pid = -1;
    close_fd(c.in);
    // A node whose ssh ended before its script said it started never ran torchrun, whatever
    // ssh's status: a banner and exit 0 (ForceCommand, a login shell that exits) is a failure.
    const bool fails_first = (c.status != 0 || !progress_of[i].started) && !stopping;
    const node_end end =
        end_of(c, progress_of[i], stopping, fails_first || (first_failure && *first_failure == i),
               failed_by_worker);
    events.node_exited(i, plan->topology().node(i).host, exit_code(c.status), end.reason);
    ends[i] = end.text;
    if (fails_first) {
      first_failure = i;
      first_failure_reason = end.reason;
      stop();
    }
  };
  const progress_scope clear_progress;
  while (true) {
    // Start nodes while fewer than --fanout are still connecting.
    while (!stopping && next < n && connecting < fanout) {
      result<child> c = spawn(command_of(next), true);
      if (!c) {
        const std::string& why = c.error().message;
        // This machine's failure (the ssh program cannot run, no process can be made): it would
        // be the same for every node, so no host is blamed, and no restart would help.
        progress.clear();
        std::fprintf(stderr, "hetlaunch: node %zu: %s\n", next, why.c_str());
        local_failure = why;
        stop();
        break;
      }
      nodes[next] = std::move(*c);
      loop.watch(next++);
      ++connecting;
      ++running;
    }
    if (running == 0 && (next == n || stopping)) break;
    if (started < n && !stopping)
      progress.show(concat("hetlaunch: run: ", started, " of ", n, " nodes started"));
    else
      progress.clear();
    loop.wait(0.1, on_signal, on_output, on_end);
    job_events.pump();  // a slow events reader gets what it has room for, never holding the job
    if (stopping && now() > deadline) {
      for (child& c : nodes)
        if (c.pid > 0 && !c.reaped) kill(c.pid, SIGKILL);
      killed_all = true;
      deadline = now() + 3600;
    }
  }
  progress.clear();
  for (child& c : nodes) {
    close_fd(c.out);
    close_fd(c.err);
  }
  // One line for each node that did not end well.
  int result = 0;
  for (std::size_t i = 0; i < n; ++i) {
    const std::string who = concat("node ", i, " (", quoted(plan->topology().node(i).host), ")");
    if (i >= next)
      std::fprintf(stderr, "hetlaunch: %s: not started\n", who.c_str());
    else if (!ends[i].empty())
      std::fprintf(stderr, "hetlaunch: %s: %s\n", who.c_str(), ends[i].c_str());
  }
  if (stop_signal)
    result = 128 + stop_signal;
  else if (failed_by_worker)
    result = 1;  // torchrun's own status when a worker fails
  else if (first_failure)
    result = exit_code(nodes[*first_failure].status);
  if (!local_failure.empty() && !stop_signal) result = exit_cannot_run;
  if (result == 0 && (first_failure || next < n))
    result = exit_failed;  // a node that never started
  attempt_result r;
  r.measured = std::move(measured);
  r.local_failure = local_failure;
  r.status = result;
  r.interrupted = stop_signal != 0;
  if (r.interrupted)
    r.reason = "interrupted";
  else if (!local_failure.empty())
    r.reason = "ended_before_start";  // no node was to blame: this machine could not start one
  else if (first_failure)
    r.reason = job_reason_of(first_failure_reason);
  else if (result != 0)
    r.reason = "ended_before_start";
  if (first_failure) {
    r.failed.push_back(*first_failure);
    r.failure = ends[*first_failure];
  }
  // A host that could not be reached is to blame too, whichever node failed first.
  for (std::size_t i = 0; i < next; ++i)
    if (!progress_of[i].started && WIFEXITED(nodes[i].status) &&
        WEXITSTATUS(nodes[i].status) == 255 && (!first_failure || i != *first_failure))
      r.failed.push_back(i);
  return r;
}

// The --spare flags as hosts that stand by, each with its worker count (0: slots=auto, asked
// when needed). A spare may not be a host of the job, nor be given twice.
std::optional<std::vector<hetlaunch::spare_host>> read_spares(const job_options& o,
                                                              const hetlaunch::cluster& job) {
  hetlaunch::hostfile_options parsing;
  parsing.allow_auto_slots = true;
  std::vector<hetlaunch::spare_host> spares;
  // Host names are compared as DNS compares them, without regard to case: spare "A" is host "a".
  const auto folded = [](std::string_view host) {
    std::string out(host);
    for (char& ch : out)
      if (ch >= 'A' && ch <= 'Z') ch = static_cast<char>(ch - 'A' + 'a');
    return out;
  };
  std::unordered_set<std::string> hosts;
  for (std::size_t i = 0; i < job.node_count(); ++i) hosts.insert(folded(job.node(i).host));
  for (const std::string& text : o.restart.spares) {
    const std::string where = concat("--spare ", quoted(text, 200));
    auto r = hetlaunch::parse_host_list(text, parsing);
    if (!r) {
      fail(concat(where, ": column ", r.error().column, ": ", r.error().message));
      return std::nullopt;
    }
    for (std::size_t i = 0; i < r->node_count(); ++i) {
      const hetlaunch::node_spec n = r->node(i);
      if (!hosts.insert(folded(n.host)).second) {
        std::size_t node = job.node_count();
        for (std::size_t k = 0; k < job.node_count(); ++k)
          if (folded(job.node(k).host) == folded(n.host)) node = k;
        fail(node < job.node_count()
                 ? concat(where, ": host ", quoted(n.host), " is node ", node,
                          "'s host; a spare must be a host the job does not use")
                 : concat(where, ": host ", quoted(n.host), " is given as a spare twice"));
        return std::nullopt;
      }
      spares.push_back({std::string(n.host), n.nproc});
    }
  }
  return spares;
}

// Asks each slots=auto spare for its GPU count, as discover does, when a restart needs spares.
// One that cannot be reached or gives no count is passed over (dropped, with a line saying so).
void ask_auto_spares(const job_options& o, std::vector<hetlaunch::spare_host>& spares) {
  for (std::size_t k = 0; k < spares.size();) {
    if (spares[k].nproc != 0) {
      ++k;
      continue;
    }
    hetlaunch::cluster one{{spares[k].host, 0}};
    // A spare that cannot be asked is passed over, said here: never left out silently.
    const result<completed> asked = resolve_auto(o.remote, restart_args{}, one);
    if (asked && one.node_count() == 1 && one.node(0).nproc > 0) {
      spares[k++].nproc = one.node(0).nproc;
      continue;
    }
    std::fprintf(stderr, "hetlaunch: spare %s is passed over: %s\n", quoted(spares[k].host).c_str(),
                 asked ? "it gave no GPU count" : asked.error().message.c_str());
    spares.erase(spares.begin() + static_cast<std::ptrdiff_t>(k));
  }
}

std::string json_hosts(const hetlaunch::cluster& c, const std::vector<std::size_t>& nodes) {
  std::string out = "[";
  for (std::size_t k = 0; k < nodes.size(); ++k)
    out += concat(k ? ", " : "", json_string(c.node(nodes[k]).host));
  return out + "]";
}

// How a job ended, said once: hetlaunch's exit status and job_exited's reason.
struct job_end {
  int status;
  const char* reason;
  // The last attempt's nodes and rank 0's measured line in it: what calibrate reads.
  std::optional<hetlaunch::cluster> topology = std::nullopt;
  std::string measured = {};
};
job_end invalid_input(int status) { return {status, "invalid_input"}; }

// A signal that came before the job started (while the input was read, say): the job ends as
// interrupted, with nothing started.
std::optional<job_end> interrupted_early() {
  const int sig = take_stop_signal();
  if (!sig) return std::nullopt;
  std::fprintf(stderr, "hetlaunch: %s: stopped before any node started\n", strsignal(sig));
  return job_end{128 + sig, "interrupted"};
}

job_end run_job(const job_options& o) {
  check_restart_flags(o.restart);
  const result<input> in = read_input(o.input, [&o](hetlaunch::cluster& nodes) {
    return resolve_auto(o.remote, o.restart, nodes);
  });
  if (const auto early = interrupted_early()) return *early;
  if (!in) return invalid_input(fail(in.error()));
  hetlaunch::launch_options first_launch = o.launch;
  // --local: every node is this machine, whatever its label.
  if (o.remote.local && first_launch.master_addr.empty()) first_launch.master_addr = "127.0.0.1";
  std::optional<hetlaunch::launch_plan> plan = plan_of(*in, o.command, first_launch);
  if (!plan) return invalid_input(exit_invalid);
  std::optional<std::vector<hetlaunch::spare_host>> spares = read_spares(o, plan->topology());
  if (!spares) return invalid_input(exit_invalid);
  hetlaunch::ssh_options ssh = o.remote.ssh;
  if (o.remote.chdir)
    ssh.chdir = *o.remote.chdir;
  else {
    char cwd[PATH_MAX];
    if (getcwd(cwd, sizeof cwd)) ssh.chdir = cwd;
  }
  result<hetlaunch::environment> env = node_environment(o);
  if (!env) return invalid_input(fail(env.error()));
  ssh.env = std::move(*env);
  const std::size_t n = plan->topology().node_count();
  // Each node's command is made when it is needed: memory stays that of one command.
  if (const auto problems = hetlaunch::validate_ssh(ssh); !problems.empty()) {
    print_problems("run", problems);
    return invalid_input(exit_invalid);
  }
  const hetlaunch::restart_options restarts = restart_options_of(o.restart);
  if (restarts.min_nodes > n) {
    return invalid_input(
        fail(concat("--min-nodes ", restarts.min_nodes, " is more than the plan's ", n, " nodes")));
  }
  // A program this machine cannot run fails every node alike: refused before any connection.
  if (!o.remote.dry_run && !o.remote.local)
    if (const result<completed> runnable = can_run(ssh.program.front()); !runnable)
      return invalid_input(
          fail(concat("--ssh ", quoted(ssh.program.front()), ": ", runnable.error().message)));
  event_log& events = job_events;
  const auto planned = [&] {
    events.write("planned", concat("\"nodes\": ", plan->topology().node_count(),
                                   ", \"world_size\": ", plan->topology().world_size(),
                                   ", \"global_batch\": ", plan->options().global_batch));
  };
  // The dry run shows the first attempt's commands exactly.
  const auto attempt_ssh = [&](int attempt) {
    hetlaunch::ssh_options this_attempt = ssh;
    // Every worker learns which attempt it is (torchrun passes its environment on).
    if (o.restart.restarts) this_attempt.restart_count = attempt;
    return this_attempt;
  };
  // Every node's command is made the same way: one that cannot be made is refused before the
  // job is planned, never found out while nodes run.
  if (const auto first = hetlaunch::try_ssh_argv(*plan, 0, attempt_ssh(0)); !first) {
    print_problems("run", {first.error()});
    return invalid_input(exit_invalid);
  }
  if (o.remote.dry_run) {
    planned();
    const hetlaunch::ssh_options first = attempt_ssh(0);
    const auto command_of = [&](std::size_t i) { return node_command(o, *plan, i, first); };
    for (std::size_t i = 0; i < n; ++i) {
      const auto host = plan->topology().node(i).host;
      const std::string text =
          concat("# node ", i, " on ", host, "\n", hetlaunch::shell_join(command_of(i)), "\n");
      std::fwrite(text.data(), 1, text.size(), stdout);
    }
    return {0, "succeeded"};
  }

  planned();
  for (int attempt = 0;; ++attempt) {
    events.attempt = attempt;
    const attempt_result r = run_attempt(o, &*plan, attempt_ssh(attempt));
    const auto ended = [&](const char* reason) {
      return job_end{r.status, reason, plan->topology(), r.measured};
    };
    if (!r.local_failure.empty() && !r.interrupted) {
      std::fprintf(
          stderr, "hetlaunch: the job failed on this machine (%s), not on a host%s\n",
          r.local_failure.c_str(),
          o.restart.restarts ? ": not restarting, every attempt would fail the same way" : "");
      return ended(r.reason);
    }
    const hetlaunch::cluster& topology = plan->topology();
    const std::size_t nodes_now = topology.node_count();
    if (!o.restart.restarts || r.interrupted || r.failed.empty()) return ended(r.reason);
    hetlaunch::restart_decision d =
        hetlaunch::decide_restart(restarts, attempt, topology, r.failed, r.interrupted, *spares);
    // Spares written host:auto are asked for their GPU count only when one is needed: a failed
    // node that no spare of a known count replaces (asking each can take --discover-timeout).
    std::vector<std::size_t> failed_nodes = r.failed;
    std::sort(failed_nodes.begin(), failed_nodes.end());
    failed_nodes.erase(std::unique(failed_nodes.begin(), failed_nodes.end()), failed_nodes.end());
    const bool any_auto = std::any_of(spares->begin(), spares->end(),
                                      [](const hetlaunch::spare_host& s) { return s.nproc == 0; });
    if (attempt < restarts.restarts && any_auto && d.replaced.size() < failed_nodes.size()) {
      ask_auto_spares(o, *spares);
      d = hetlaunch::decide_restart(restarts, attempt, topology, r.failed, r.interrupted, *spares);
    }
    const std::size_t culprit = r.failed.front();
    const std::string blamed =
        concat("node ", culprit, " (", quoted(topology.node(culprit).host),
               ") failed: ", r.failure.empty() ? std::string("could not be reached") : r.failure);
    if (d.verdict == hetlaunch::restart_verdict::no_restart_left) {
      std::fprintf(
          stderr,
          "hetlaunch: %s; no restart left (--restarts %d): the job failed after %d attempt%s\n",
          blamed.c_str(), restarts.restarts, attempt + 1, attempt == 0 ? "" : "s");
      return ended("restarts_exhausted");
    }
    if (d.verdict == hetlaunch::restart_verdict::too_few_nodes) {
      std::vector<bool> blamed_node(nodes_now, false);
      std::size_t remaining = nodes_now;
      for (std::size_t i : r.failed)
        if (!blamed_node[i]) blamed_node[i] = true, --remaining;
      std::fprintf(
          stderr,
          "hetlaunch: %s; without it the job would have %zu node%s, fewer than --min-nodes %zu: "
          "not restarting\n",
          blamed.c_str(), remaining, remaining == 1 ? "" : "s", restarts.min_nodes);
      return ended("too_few_nodes");
    }
    std::string left_out, replaced_text, moved_master;
    std::vector<std::size_t> excluded;
    {
      std::vector<bool> kept(nodes_now, false);
      for (std::size_t i : d.nodes) kept[i] = true;
      for (std::size_t i = 0; i < nodes_now; ++i)
        if (!kept[i]) {
          excluded.push_back(i);
          left_out +=
              concat(left_out.empty() ? "" : ", ", i, " (", quoted(topology.node(i).host), ")");
        }
    }
    std::string replaced_json = "[";
    for (const hetlaunch::node_replacement& x : d.replaced) {
      const std::string& spare = (*spares)[x.spare].host;
      replaced_text += concat(replaced_text.empty() ? "" : ", ", "node ", x.node, " on spare ",
                              quoted(spare), " instead of ", quoted(topology.node(x.node).host));
      replaced_json += concat(replaced_json.size() > 1 ? ", " : "", "{\"node\": ", x.node,
                              ", \"host\": ", json_string(topology.node(x.node).host),
                              ", \"spare\": ", json_string(spare), "}");
    }
    replaced_json += "]";
    const std::string excluded_json = json_hosts(topology, excluded);
    const std::string failed_host(topology.node(culprit).host);
    if (!excluded.empty() || !d.replaced.empty()) {
      hetlaunch::cluster next = hetlaunch::restart_topology(topology, d, *spares);
      hetlaunch::launch_options launch = plan->options();
      // --local: the rendezvous is this machine's, whichever labels remain.
      if (!o.remote.local && hetlaunch::rendezvous_moves(topology, next, launch)) {
        moved_master = concat(
            "the rendezvous moves to the new node 0 (", quoted(next.node(0).host), "): ",
            launch.backend == hetlaunch::rendezvous::c10d ? "the endpoint " : "--master-addr ",
            quoted(launch.master_addr), " was on a node ",
            excluded.empty() ? "replaced" : "left out");
        launch.master_addr.clear();
      }
      std::optional<hetlaunch::launch_plan> again =
          plan_again(next, launch, "run: the plan of the restart");
      if (!again) {
        std::fprintf(
            stderr,
            "hetlaunch: %s; the plan without node %s is not valid (above): not restarting\n",
            blamed.c_str(), left_out.c_str());
        return ended(r.reason);
      }
      plan = std::move(again);
      // A spare is used once: the ones taken now are no longer free.
      std::vector<bool> used(spares->size(), false);
      for (const hetlaunch::node_replacement& x : d.replaced) used[x.spare] = true;
      std::vector<hetlaunch::spare_host> free_spares;
      for (std::size_t k = 0; k < spares->size(); ++k)
        if (!used[k]) free_spares.push_back(std::move((*spares)[k]));
      *spares = std::move(free_spares);
    }
    std::fprintf(
        stderr,
        "hetlaunch: %s; restart %d of %d: attempt %d starts on %zu node%s%s%s, world size %d\n",
        blamed.c_str(), attempt + 1, restarts.restarts, attempt + 2, plan->topology().node_count(),
        plan->topology().node_count() == 1 ? "" : "s",
        left_out.empty() ? "" : concat(" (without node ", left_out, ")").c_str(),
        replaced_text.empty() ? "" : concat(" (", replaced_text, ")").c_str(),
        plan->topology().world_size());
    if (!moved_master.empty()) std::fprintf(stderr, "hetlaunch: %s\n", moved_master.c_str());
    events.attempt = attempt + 1;
    events.write("restart", concat("\"failed_node\": ", culprit, ", \"failed_host\": ",
                                   json_string(failed_host), ", \"excluded\": ", excluded_json,
                                   ", \"replaced\": ", replaced_json,
                                   ", \"nodes\": ", plan->topology().node_count(),
                                   ", \"world_size\": ", plan->topology().world_size()));
  }
}

// The one exit of run and calibrate: the output is flushed first, so that job_exited carries the
// exit status hetlaunch ends with, whatever happened last, and it is written once.
int end_job(job_end e) {
  const int status = finish_output(e.status);
  job_events.job_exited(status, status != e.status ? "output_failed" : e.reason);
  job_events.close();
  return status;
}

// The files run reads: its events must never be one of them.
std::vector<std::string> inputs_of(const job_options& o) {
  std::vector<std::string> out;
  for (const std::optional<std::string>& f : {o.input.hostfile, o.remote.env_file})
    if (f) out.push_back(*f);
  return out;
}

std::optional<job_end> open_events(const job_options& o) {
  install_signal_handlers();  // a signal from here on ends the job with its job_exited
  if (!o.remote.events) return std::nullopt;
  if (const result<completed> opened = job_events.open(*o.remote.events, inputs_of(o)); !opened)
    return invalid_input(fail(opened.error()));
  return std::nullopt;
}

}  // namespace

int run_command(const job_options& o) {
  if (const std::optional<job_end> failed = open_events(o)) return end_job(*failed);
  return end_job(run_job(o));
}

namespace {
// Whether --write-hostfile's file can be written, asked before the job runs rather than found
// out after it: the file itself when it exists, else its directory.
result<completed> writable(const std::string& path) {
  if (access(path.c_str(), F_OK) == 0) {
    if (access(path.c_str(), W_OK) != 0)
      return invalid(
          concat("--write-hostfile ", quoted(path), ": cannot write it: ", std::strerror(errno)));
    return completed{};
  }
  const std::size_t slash = path.rfind('/');
  const std::string dir = slash == std::string::npos ? std::string(".")
                          : slash == 0               ? "/"
                                                     : path.substr(0, slash);
  if (access(dir.c_str(), W_OK | X_OK) != 0)
    return invalid(
        concat("--write-hostfile ", quoted(path), ": cannot write it: ", std::strerror(errno)));
  return completed{};
}

int write_measured(const job_options& o, const hetlaunch::cluster& c, const std::string& measured);

}  // namespace

// `hetlaunch calibrate`: run's job, then the line its rank 0 printed, as a table, JSON or a
// hostfile. The weights are computed here from the rates (calibration.hpp), not taken from the
// script. The job's end is written once, after the measurement was read and written.
int calibrate_command(const job_options& given) {
  job_options o = given;  // run's job, watched for the measured line
  // The measured line names nodes by their index in the input; c10d would order them itself.
  if (o.launch.backend == hetlaunch::rendezvous::c10d)
    throw usage_error{
        "calibrate takes no --rdzv c10d: c10d orders the nodes by host name at its "
        "rendezvous, and the measurement names nodes by their place in the input"};
  o.calibrate.measuring = true;
  o.launch.calibrate_steps = o.calibrate.steps;  // the one launch that sets it: every worker's
  if (const std::optional<job_end> failed = open_events(o)) return end_job(*failed);
  if (o.calibrate.hostfile) {
    // A hostfile holds a host's count, not which of its devices: the selection would be lost,
    // and a run of the file would use other devices than the ones measured.
    if (!o.input.include.empty() || !o.input.exclude.empty())
      return end_job(invalid_input(fail(concat(
          "--write-hostfile ", quoted(*o.calibrate.hostfile), ": the job selects devices (",
          o.input.include.empty() ? "--exclude" : "--include",
          "), which a hostfile cannot hold (it has slots=N, not device numbers): calibrate without "
          "--write-hostfile and give run the weights it prints with the same selection"))));
    if (const result<completed> ok = writable(*o.calibrate.hostfile); !ok)
      return end_job(invalid_input(fail(ok.error())));
  }
  const job_end job = run_job(o);
  if (job.status != 0 || !job.topology || o.remote.dry_run) {
    if (job.topology && job.status != 0)
      std::fprintf(stderr,
                   "hetlaunch: calibrate: the job failed (exit status %d): nothing measured\n",
                   job.status);
    return end_job(job);
  }
  const int status = write_measured(o, *job.topology, job.measured);
  return end_job(status == 0 ? job : job_end{status, "calibration_failed"});
}

namespace {
// The measured line as a table or JSON, and the hostfile: 0, or the status of the failure.
int write_measured(const job_options& o, const hetlaunch::cluster& c, const std::string& measured) {
  if (measured.empty())
    return fail(concat(
        "calibrate: rank 0 never printed a ", hetlaunch::measured_prefix,
        "line. A hetlaunch_shares.ShareBatchSampler prints it once it has handed out ",
        o.calibrate.steps,
        " steps (--calibrate-steps), in as many epochs as that takes: the script ended "
        "before (a loop bounded by fewer steps?), or its sampler is not a ShareBatchSampler"));
  const auto m = hetlaunch::parse_measurement(measured, c.node_count());
  if (!m)
    return fail(concat("calibrate: the ", hetlaunch::measured_prefix, "line, column ",
                       m.error().column, ": ", m.error().message));
  std::vector<double> rates;
  for (const hetlaunch::node_measurement& n : m->nodes) rates.push_back(n.samples_per_second);
  const auto weights = hetlaunch::weights_from_rates(rates);
  if (!weights) return fail(concat("calibrate: ", weights.error().message));
  char rate[40];
  std::string text;
  if (o.format == "json") {
    text = concat("{\"step\": ", m->step, ", \"nodes\": [");
    for (std::size_t i = 0; i < c.node_count(); ++i) {
      std::snprintf(rate, sizeof rate, "%.6g", rates[i]);
      text += concat(i ? ", " : "", "{\"node\": ", i, ", \"host\": ", json_string(c.node(i).host),
                     ", \"nproc\": ", c.node(i).nproc, ", \"samples_per_second\": ", rate,
                     ", \"weight\": ", json_string((*weights)[i]),
                     ", \"max_batch\": ", c.max_batch(i), "}");
    }
    text += "]}\n";
  } else {
    text = concat("measured over ", m->step, " steps\n\n");
    char line[512];
    std::snprintf(line, sizeof line, "%-5s %-20s %7s %14s  %s\n", "node", "host", "workers",
                  "samples/s", "weight");
    text += line;
    for (std::size_t i = 0; i < c.node_count(); ++i) {
      std::snprintf(line, sizeof line, "%-5zu %-20.*s %7d %14.2f  %s\n", i,
                    static_cast<int>(c.node(i).host.size()), c.node(i).host.data(), c.node(i).nproc,
                    rates[i], (*weights)[i].c_str());
      text += line;
    }
  }
  std::fwrite(text.data(), 1, text.size(), stdout);
  if (o.calibrate.hostfile) {
    std::string hostfile =
        concat("# written by hetlaunch calibrate: samples per second per worker, over ", m->step,
               " steps\n");
    for (std::size_t i = 0; i < c.node_count(); ++i) {
      hostfile += concat(c.node(i).host, " slots=", c.node(i).nproc, " weight=", (*weights)[i]);
      if (c.max_batch(i) > 0) hostfile += concat(" max_batch=", c.max_batch(i));
      hostfile += '\n';
    }
    FILE* f = std::fopen(o.calibrate.hostfile->c_str(), "w");
    const bool written =
        f && std::fwrite(hostfile.data(), 1, hostfile.size(), f) == hostfile.size();
    const int why = errno;
    if (f && std::fclose(f) != 0 && written)
      return fail(
          concat("--write-hostfile ", quoted(*o.calibrate.hostfile), ": ", std::strerror(errno)));
    if (!written)
      return fail(concat("--write-hostfile ", quoted(*o.calibrate.hostfile),
                         ": cannot write it: ", std::strerror(why)));
  }
  return 0;
}

}  // namespace
}  // namespace cli
