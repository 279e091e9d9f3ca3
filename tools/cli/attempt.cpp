// SPDX-License-Identifier: MIT
// One attempt of `run`'s job: every ssh command line comes from the library (ssh.hpp); this file
// starts the ssh clients (process.hpp), multiplexes their output line by line, and stops every
// node when one fails or when it is interrupted.
//
// How a node is stopped: each ssh's standard input is a pipe that this process holds open. The
// remote command (hetlaunch::detail::node_script) tears torchrun and all its workers down when
// that input ends, so closing the pipe stops the node, and so does this process dying (the
// kernel closes the pipe, ssh sends EOF, the connection ends). A node that does not stop within
// --kill-after seconds and a margin has its ssh killed, which ends the connection as well; the
// margin counts from the node's start for a node that was still connecting when the stop began.
#include "job.hpp"
#include "process.hpp"

#include <hetlaunch/calibration.hpp>
#include <hetlaunch/checkpoint_line.hpp>
#include <hetlaunch/failure_report.hpp>
#include <hetlaunch/rank_health.hpp>

#include <signal.h>
#include <sys/wait.h>

#include <algorithm>
#include <cstdio>
#include <cstring>
#include <map>
#include <utility>

namespace cli {
namespace {

// What `run` learns of a node from its lines.
struct node_progress {
  bool started = false;                 // the node script's started line was seen
  bool ended = false;                   // its ended line was seen: ssh's status is the command's
  int worker_failures = 0;              // torchrun's "failed (exitcode: N) local_rank: L" lines
  hetlaunch::torchrun_failure failure;  // the last of those
  // The workers' HETLAUNCH_ERROR lines, the last of each local rank.
  std::map<long long, hetlaunch::worker_error> errors;
};

// torchrun's agent logs "failed (exitcode: 3) local_rank: 0 (pid: 123) of binary: ..." when a
// worker fails (torch 1.13 through 2.x). It then waits up to 300 s for the other nodes in its exit
// barrier, and they wait for a collective that will never complete: a job whose worker failed
// would stop only after minutes. The line is the earliest sign, so it counts as the failure.
void note_worker_failure(node_progress& p, std::string_view line) {
  const std::optional<hetlaunch::torchrun_failure> f = hetlaunch::parse_torchrun_failure(line);
  if (!f) return;
  ++p.worker_failures;
  p.failure = *f;
}

// What rank 0 said in a line of node `node`'s output, after the word `word` that begins it:
// rank 0's own lines are the node's "[rank 0] " lines (ssh_options::rank_lines), and node 0's
// lines after torchrun's "[default0]:" (--tee) or with no prefix (rank 0 is node 0's local rank
// 0 under the static rendezvous). The word inside a log message, or another rank's line, is not
// rank 0's line.
std::optional<std::string_view> rank0_says(std::string_view line, std::size_t node,
                                           std::string_view word) {
  constexpr std::string_view own = "[rank 0] ", teed = "[default0]:";
  if (line.substr(0, own.size()) == own)
    line.remove_prefix(own.size());
  else if (node != 0)
    return std::nullopt;
  else if (line.substr(0, teed.size()) == teed)
    line.remove_prefix(teed.size());
  if (line.substr(0, word.size()) != word) return std::nullopt;
  return line.substr(word.size());
}

// The JSON of a rank's line that begins with `word`, of any rank: after "[rank R] " (run's rank
// prefix), after torchrun's "[defaultK]:" (--tee of that stream), after both ("[defaultK]:[rank
// R] "), or unprefixed. The word inside a log message is not one.
std::optional<std::string_view> rank_line_says(std::string_view line, std::string_view word) {
  const auto skip_prefix = [&line](std::string_view open, char close) {
    if (line.substr(0, open.size()) != open) return;
    std::size_t k = open.size();
    while (k < line.size() && line[k] >= '0' && line[k] <= '9') ++k;
    if (k == open.size() || k >= line.size() || line[k] != close) return;
    line.remove_prefix(k + 1);
    if (close == ']' && !line.empty() && line.front() == ' ') line.remove_prefix(1);
  };
  const std::size_t before = line.size();
  skip_prefix("[default", ']');
  if (line.size() < before && !line.empty() && line.front() == ':') line.remove_prefix(1);
  skip_prefix("[rank ", ']');
  if (line.substr(0, word.size()) != word) return std::nullopt;
  return line.substr(word.size());
}

// A rank's last progress, its node, and its windows judged against its own.
struct rank_seen {
  explicit rank_seen(double slow_factor) : slow(slow_factor) {}
  std::size_t node = 0;
  hetlaunch::rank_progress progress;
  long long window = 0;  // the last window judged
  double rate = 0;       // that window's samples per second
  hetlaunch::slow_watch slow;
};

// How a node ended, classified once: node_exited's reason, and the line run prints about it
// (empty for a node that succeeded).
struct node_end {
  node_ending ending;
  std::string text;
};
// `stopping`: the job was being stopped when its ssh ended; `first_to_fail`: its end is the job's
// first failure; `by_worker`: that failure was a worker's.
node_end end_of(const child& c, const node_progress& p, bool stopping, bool first_to_fail,
                bool by_worker) {
  // ssh's own 255: it could not connect (the node never started), or the connection was lost
  // (the node script never said it ended). A 255 after the node script's ended line is the
  // command's own status: the node failed, and its host is not called unreachable
  // (--exclude-failed would drain a healthy host for a program's exit 255).
  const bool ssh_failed = WIFEXITED(c.status) && WEXITSTATUS(c.status) == 255 && !p.ended;
  if (p.started && c.status == 0) return {node_ending::succeeded, ""};
  const bool stopped = stopping && !first_to_fail;
  const node_ending ending = ssh_failed  ? node_ending::unreachable
                             : stopped   ? node_ending::stopped
                             : p.started ? node_ending::failed
                                         : node_ending::ended_before_start;
  // A node stopped while connecting still starts (and then stops at once), so one that did not
  // start ended by itself, unless it was killed.
  if (!p.started && WIFSIGNALED(c.status))
    return {ending, concat("stopped before the node started (", describe_status(c.status), ")")};
  if (!p.started && ssh_failed)
    return {ending, "ssh failed (exit status 255) before the node started"};
  if (ssh_failed && !stopped)
    return {ending, "the connection was lost (ssh exit status 255 before the node ended)"};
  if (!p.started)
    return {ending, concat("ssh ended before the node started (", describe_status(c.status), ")")};
  if (first_to_fail && by_worker)
    return {ending, concat("a worker failed (exit code ", p.failure.exitcode, "); torchrun ",
                           describe_status(c.status))};
  if (stopped) return {ending, concat("stopped (", describe_status(c.status), ")")};
  return {ending, describe_status(c.status)};
}

// What an attempt came to, before it is classified.
struct attempt_facts {
  int stop_signal = 0;               // the signal that stopped it, 0 for none
  bool local_failure = false;        // this machine could not start a node
  std::optional<node_ending> first;  // how the node that failed first ended
  int first_status = 0;              // its ssh's status as a shell gives it
  bool by_worker = false;            // that failure was a worker's, seen in torchrun's log
  bool every_node_started = true;    // every node's ssh was started
  bool hung = false;                 // the first failure was a hung rank's node, stopped by run
  bool slow_excluded = false;        // stopped at a checkpoint to leave a slow rank's node out
};

// The job's end if this attempt is its last, classified once: the reason and the exit status.
job_end classify(const attempt_facts& f) {
  if (f.stop_signal) return {job_ending::interrupted, 128 + f.stop_signal};
  // No node was to blame: this machine could not start one.
  if (f.local_failure) return {job_ending::ended_before_start, exit_cannot_run};
  if (f.hung) return {job_ending::hung, exit_failed};
  // Stopped to leave a slow node out: an end only when the restart cannot follow (said there).
  if (f.slow_excluded && !f.first) return {job_ending::worker_failed, exit_failed};
  if (f.first && f.by_worker) return {job_ending::worker_failed, 1};  // torchrun's own status
  if (f.first) {
    // A node that ended with status 0 before it started still failed.
    const int status = f.first_status != 0 ? f.first_status : exit_failed;
    switch (*f.first) {
      case node_ending::unreachable:
        return {job_ending::unreachable, status};
      case node_ending::ended_before_start:
        return {job_ending::ended_before_start, status};
      default:
        return {job_ending::worker_failed, status};
    }
  }
  if (!f.every_node_started) return {job_ending::ended_before_start, exit_failed};
  return {job_ending::succeeded, 0};
}

// One attempt: an object over its nodes' state, with a handler for each thing that can happen
// (a node's output, its end, a signal, a tick of the clock). Only run() drives it.
class attempt {
 public:
  attempt(const job_options& o, const hetlaunch::launch_plan& plan,
          const hetlaunch::ssh_options& ssh, event_log& events, metrics_file& metrics,
          const std::vector<probed_host>& probes, const slow_exclusion& may_exclude)
      : o_(o),
        plan_(plan),
        ssh_(ssh),
        events_(events),
        metrics_(metrics),
        probes_(probes),
        may_exclude_(may_exclude),
        n_(plan.topology().node_count()),
        nodes_(n_ + probes.size()),  // the nodes, then one question a probed host
        progress_of_(n_),
        ends_(n_),
        prefixes_(n_),
        grace_(o.remote.ssh.kill_after + 5.0),
        probe_due_(probes.size(), now() + o.restart.probe_every.value_or(30)),
        probe_deadline_(probes.size(), 0.0),
        returned_(probes.size(), false),
        loop_(nodes_) {
    for (std::size_t i = 0; i < n_; ++i)
      prefixes_[i] = concat("[", i, " ", plan.topology().node(i).host, "] ");
  }
  attempt_result run();

 private:
  const job_options& o_;
  const hetlaunch::launch_plan& plan_;
  const hetlaunch::ssh_options& ssh_;
  event_log& events_;
  metrics_file& metrics_;
  const std::vector<probed_host>& probes_;
  const slow_exclusion& may_exclude_;
  const std::size_t n_;
  std::vector<child> nodes_;
  std::vector<node_progress> progress_of_;
  std::vector<std::string> ends_;  // the line said about each node that did not end well
  std::vector<std::string> prefixes_;
  std::size_t next_ = 0, connecting_ = 0, running_ = 0, started_ = 0;
  bool stopping_ = false;
  bool killed_all_ = false;  // every ssh has had SIGKILL: only their ends are left to collect
  int stop_signal_ = 0;
  double stopped_at_ = 0;  // when the stop began
  double deadline_ = 0;    // when the nodes still running get SIGKILL
  const double grace_;
  std::optional<std::size_t> first_failure_;
  node_ending first_failure_ending_ = node_ending::failed;
  bool failed_by_worker_ = false;  // the first failure was a worker's, seen in torchrun's log
  std::string local_failure_;
  std::string measured_;
  std::vector<double> probe_due_;       // when each probed host is asked next
  std::vector<double> probe_deadline_;  // when its question under way is given up
  std::vector<bool> returned_;          // it answered: it is not asked again
  bool rejoin_pending_ = false;         // a host that rejoins answered: stop at a checkpoint
  bool grow_ = false;                   // stopped at a checkpoint for it
  long long checkpoint_step_ = -1;
  bool bad_checkpoint_said_ = false;  // a script that writes one bad line writes it each time
  bool bad_progress_said_ = false;
  std::map<long long, rank_seen> ranks_;  // every rank that reported, by global rank
  std::string hung_;                      // what run said of the hung rank it stopped the job for
  std::optional<std::size_t> slow_node_;  // --on-slow exclude: the node to leave out
  std::string slow_;                      // what run said of the slow rank of slow_node_
  bool slow_excluded_ = false;            // stopped at a checkpoint to leave it out
  bool metrics_due_ = true;               // something the metrics show changed
  double metrics_written_ = 0;
  event_loop loop_;

  void start_nodes();
  line_sink sink_of(std::size_t i, bool out);
  void read_node(std::size_t i, bool out);
  void on_output(std::size_t i, bool out);
  void on_end(std::size_t i);
  void on_signal(int number);
  void on_tick();
  void stop();
  void kill_all();
  void started_while_stopping();
  void probe();
  void take_answer(std::size_t k);
  void stop_probes();
  void on_checkpoint(std::string_view json);
  void on_progress(std::size_t i, std::string_view json);
  void judge_slow(long long rank, const rank_seen& r, const hetlaunch::slow_judgement& j);
  std::string what_follows_slow(std::size_t node) const;
  void judge_hangs();
  void write_metrics(bool force);
  void say_ends() const;
  std::string worker_fields(std::size_t i) const;
  attempt_result outcome() const;
};

// node_exited's keys of the worker that failed on node i, where torchrun reported one: its rank
// (its own RANK when it relayed its error; else, under the static rendezvous, the node's first
// rank plus its local rank), local rank, exit code, and error when it relayed one.
std::string attempt::worker_fields(std::size_t i) const {
  const node_progress& p = progress_of_[i];
  if (p.worker_failures == 0) return "";
  const long long local = p.failure.local_rank;
  const auto relayed = p.errors.find(local);
  std::string out;
  if (relayed != p.errors.end())
    out = concat(", \"rank\": ", relayed->second.rank);
  else if (plan_.options().backend == hetlaunch::rendezvous::static_tcp)
    out = concat(", \"rank\": ", plan_.topology().rank_offset(i) + local);
  out += concat(", \"local_rank\": ", local, ", \"exitcode\": ", p.failure.exitcode);
  if (relayed != p.errors.end()) out += concat(", \"error\": ", json_string(relayed->second.error));
  return out;
}

void attempt::stop() {
  if (!stopping_) {
    stopping_ = true;
    stopped_at_ = now();
    deadline_ = stopped_at_ + grace_;
  }
  for (child& c : nodes_) close_fd(c.in);
}

void attempt::kill_all() {
  for (child& c : nodes_)
    if (c.pid > 0 && !c.reaped) kill(c.pid, SIGKILL);
  killed_all_ = true;
}

// A node still connecting when the stop began starts its teardown only once its script runs: it
// gets the same grace from then, so that run does not end while that node's teardown is still
// under way. Twice the grace from the stop bounds it, however slow the connections.
void attempt::started_while_stopping() {
  if (stopping_ && !killed_all_)
    deadline_ = std::min(stopped_at_ + 2 * grace_, std::max(deadline_, now() + grace_));
}

// Starts nodes while fewer than --fanout are still connecting.
void attempt::start_nodes() {
  const auto fanout = static_cast<std::size_t>(o_.remote.fanout);
  while (!stopping_ && next_ < n_ && connecting_ < fanout) {
    result<child> c = spawn(node_command(o_, plan_, next_, ssh_), true);
    if (!c) {
      // This machine's failure (the ssh program cannot run, no process can be made): it would
      // be the same for every node, so no host is blamed, and no restart would help.
      local_failure_ = c.error().message;
      progress.clear();
      std::fprintf(stderr, "hetlaunch: node %zu: %s\n", next_, local_failure_.c_str());
      stop();
      return;
    }
    nodes_[next_] = std::move(*c);
    loop_.watch(next_++);
    ++connecting_;
    ++running_;
  }
}

// Where node i's lines go, and what run watches for in them.
line_sink attempt::sink_of(std::size_t i, bool out) {
  node_progress& p = progress_of_[i];
  // calibrate's stdout is its own table or JSON: the nodes' lines all go to stderr there.
  line_sink sink = shown_lines(out && !o_.calibrate.measuring ? stdout : stderr, prefixes_[i],
                               !out || !o_.remote.quiet_nodes || i == 0);
  if (!out) {
    const long long nproc = plan_.topology().nproc(i);
    sink.watch = [&p, nproc](std::string_view line) {
      note_worker_failure(p, line);
      const auto said = rank_line_says(line, hetlaunch::worker_error_prefix);
      if (!said) return false;
      // The error is in the worker's traceback above: its relay is read, not shown. One is kept
      // a local rank of the node, whatever a script prints.
      auto e = hetlaunch::parse_worker_error_line(*said);
      if (!e || e->local_rank >= nproc) return false;
      p.errors[e->local_rank] = std::move(*e);
      return true;
    };
    return sink;
  }
  const bool measuring = o_.calibrate.measuring && i == 0;
  const bool watching_checkpoints = !probes_.empty() || o_.restart.excludes_slow();
  const bool watching_progress = o_.restart.reporting();
  // Rank 0's measured line grows with the node count (about 80 bytes a node): it is read whole
  // up to 16 MiB, some 200,000 nodes.
  if (measuring) sink.whole_line = std::size_t{16} << 20;
  sink.watch = [&p, i, measuring, watching_checkpoints, watching_progress,
                this](std::string_view line) {
    if (!p.started && line == hetlaunch::node_started_line) {
      p.started = true;  // the node script's own line: not shown
      return true;
    }
    if (p.started &&
        line.substr(0, hetlaunch::node_ended_prefix.size()) == hetlaunch::node_ended_prefix) {
      p.ended = true;  // the node script's own last line: not shown
      return true;
    }
    if (measuring)
      if (const auto said = rank0_says(line, i, hetlaunch::measured_prefix)) measured_ = *said;
    if (watching_checkpoints)
      if (const auto said = rank0_says(line, i, hetlaunch::checkpoint_prefix)) on_checkpoint(*said);
    if (watching_progress)
      if (const auto said = rank_line_says(line, hetlaunch::progress_prefix)) {
        on_progress(i, *said);
        return true;  // read by run, not shown: a line a rank a second
      }
    return false;
  };
  return sink;
}

void attempt::read_node(std::size_t i, bool out) {
  child& c = nodes_[i];
  const bool was_started = progress_of_[i].started;
  drain(out ? c.out : c.err, out ? c.out_line : c.err_line, sink_of(i, out));
  if (was_started || !progress_of_[i].started) return;
  --connecting_, ++started_;
  metrics_due_ = true;
  started_while_stopping();
  events_.write("node_started", concat("\"node\": ", i,
                                       ", \"host\": ", json_string(plan_.topology().node(i).host)));
}

void attempt::on_output(std::size_t i, bool out) {
  if (i >= n_) {  // a probed host's answer: bounded, as discover bounds it
    if (!read_gpu_count_output(nodes_[i], out) && !nodes_[i].reaped) loop_.stop(i);
    return;
  }
  read_node(i, out);
  // More failures than restarts: torchrun gives up on this node's workers.
  if (progress_of_[i].worker_failures <= plan_.options().max_restarts || stopping_) return;
  first_failure_ = i;
  failed_by_worker_ = true;
  progress.clear();
  std::fprintf(stderr,
               "hetlaunch: node %zu: a worker failed (exit code %d) and torchrun has no restart "
               "left: stopping every node\n",
               i, progress_of_[i].failure.exitcode);
  stop();
}

void attempt::on_end(std::size_t i) {
  if (i >= n_) return;  // a probed host's answer is read once its output has ended (probe)
  child& c = nodes_[i];
  // Output still in the pipes is read before the node's end is reported.
  if (c.out >= 0) read_node(i, true);
  if (c.err >= 0) read_node(i, false);
  if (!progress_of_[i].started) --connecting_;
  --running_;
  c.pid = -1;
  close_fd(c.in);
  // A node whose ssh ended before its script said it started never ran torchrun, whatever ssh's
  // status: a banner and exit 0 (ForceCommand, a login shell that exits) is a failure.
  const bool fails_first = (c.status != 0 || !progress_of_[i].started) && !stopping_;
  node_end end =
      end_of(c, progress_of_[i], stopping_, fails_first || first_failure_ == i, failed_by_worker_);
  if (!hung_.empty() && first_failure_ == i) end.text = concat(hung_, "; ", end.text);
  events_.node_exited(i, plan_.topology().node(i).host, exit_code(c.status), end.ending,
                      end.ending == node_ending::failed ? worker_fields(i) : std::string());
  metrics_due_ = true;
  ends_[i] = end.text;
  if (!fails_first) return;
  first_failure_ = i;
  first_failure_ending_ = end.ending;
  stop();
}

void attempt::on_signal(int number) {
  if (stop_signal_) kill_all();  // a second signal: no more waiting
  if (!stop_signal_) {
    stop_signal_ = number;
    progress.clear();
    std::fprintf(stderr, "hetlaunch: %s: stopping every node (again to stop at once)\n",
                 strsignal(stop_signal_));
  }
  stop();
}

void attempt::on_tick() {
  if (started_ < n_ && !stopping_)
    progress.show(concat("hetlaunch: run: ", started_, " of ", n_, " nodes started"));
  else
    progress.clear();
  probe();
  judge_hangs();
  write_metrics(false);
  events_.pump();  // a slow events reader gets what it has room for, never holding the job
  if (stopping_ && now() > deadline_) {
    kill_all();
    deadline_ = now() + 3600;
  }
}

attempt_result attempt::run() {
  install_signal_handlers();
  {
    const progress_scope clear_progress;
    while (true) {
      start_nodes();
      if (running_ == 0 && (next_ == n_ || stopping_)) break;
      on_tick();
      loop_.wait(
          0.1, [this](int number) { on_signal(number); },
          [this](std::size_t i, bool out) { on_output(i, out); },
          [this](std::size_t i, int) { on_end(i); });
    }
  }
  probe();  // the answers that came while the nodes stopped
  stop_probes();
  write_metrics(true);
  for (child& c : nodes_) {
    close_fd(c.out);
    close_fd(c.err);
  }
  say_ends();
  return outcome();
}

// Each host that left is asked for its GPU count every --probe-every seconds, as discover asks
// it; a question past --discover-timeout is stopped, and one that has ended is answered. A
// question this machine cannot start now is asked again at the next probe. While the job stops,
// answers still count (a host that answered can stand by for the restart), but none is asked.
void attempt::probe() {
  const double t = now();
  for (std::size_t k = 0; k < probes_.size(); ++k) {
    child& c = nodes_[n_ + k];
    if (c.pid > 0) {
      if (!c.reaped && t > probe_deadline_[k]) loop_.stop(n_ + k);
      if (c.reaped && c.out < 0 && c.err < 0) take_answer(k);
      continue;
    }
    if (stopping_ || returned_[k] || t < probe_due_[k]) continue;
    probe_due_[k] = t + o_.restart.probe_every.value_or(30);
    result<child> asked = spawn(gpu_count_argv(o_.remote, probes_[k].host), false);
    if (!asked) continue;
    c = std::move(*asked);
    probe_deadline_[k] = t + o_.remote.discover_timeout;
    loop_.watch(n_ + k);
  }
}

void attempt::take_answer(std::size_t k) {
  child& c = nodes_[n_ + k];
  const bool answers = gpu_count_of(c, o_.remote).has_value();
  c = child{};
  if (!answers) return;
  returned_[k] = true;
  const probed_host& h = probes_[k];
  events_.write("node_returned", concat("\"host\": ", json_string(h.host)));
  progress.clear();
  std::fprintf(stderr, "hetlaunch: host %s answers again: %s\n", quoted(h.host).c_str(),
               h.rejoins ? "it rejoins the job at its place at rank 0's next checkpoint line"
                         : "a spare holds its place, so it stands by as a spare");
  if (h.rejoins) rejoin_pending_ = true;
}

void attempt::stop_probes() {
  for (std::size_t k = 0; k < probes_.size(); ++k)
    if (nodes_[n_ + k].pid > 0) loop_.stop(n_ + k);
}

// Rank 0's checkpoint line: the moment a host that answered again can rejoin without losing a
// trained step. A line that cannot be read is said once an attempt, and changes nothing.
void attempt::on_checkpoint(std::string_view json) {
  const auto step = hetlaunch::parse_checkpoint_line(json);
  if (!step) {
    if (std::exchange(bad_checkpoint_said_, true)) return;
    progress.clear();
    std::fprintf(stderr, "hetlaunch: rank 0's %sline, column %zu: %s: not a checkpoint\n",
                 std::string(hetlaunch::checkpoint_prefix).c_str(), step.error().column,
                 step.error().message.c_str());
    return;
  }
  checkpoint_step_ = *step;
  if (slow_node_ && !stopping_) {
    slow_excluded_ = true;
    progress.clear();
    std::fprintf(stderr,
                 "hetlaunch: rank 0 saved the checkpoint of step %lld: stopping every node, to "
                 "start again without node %zu (%s)\n",
                 *step, *slow_node_, quoted(plan_.topology().node(*slow_node_).host).c_str());
    stop();
    return;
  }
  if (!rejoin_pending_ || stopping_) return;
  grow_ = true;
  progress.clear();
  std::fprintf(stderr,
               "hetlaunch: rank 0 saved the checkpoint of step %lld: stopping every node, to "
               "start again with the hosts that answered\n",
               *step);
  stop();
}

// A rank's progress line: when it came, and since when the rank is in its phase (its own age of
// the phase, so that the hosts' clocks never meet). A line that cannot be read is said once.
void attempt::on_progress(std::size_t i, std::string_view json) {
  const auto report = hetlaunch::parse_progress_line(json);
  if (!report) {
    if (std::exchange(bad_progress_said_, true)) return;
    progress.clear();
    std::fprintf(stderr, "hetlaunch: node %zu: a %sline, column %zu: %s: not a rank's progress\n",
                 i, std::string(hetlaunch::progress_prefix).c_str(), report.error().column,
                 report.error().message.c_str());
    return;
  }
  const double t = now();
  rank_seen& r = ranks_.try_emplace(report->rank, o_.restart.slow_factor.value_or(2)).first->second;
  r.node = i;
  r.progress.step = report->step;
  r.progress.phase = report->phase;
  r.progress.phase_started = t - report->phase_seconds;
  r.progress.last_report = t;
  if (report->window > r.window) {
    r.window = report->window;
    r.rate = report->samples_per_second;
    metrics_due_ = true;
    judge_slow(report->rank, r, r.slow.add_window(report->samples_per_second));
  }
}

// A rank slow against its own earlier windows: said once an episode, as rank_slow.
void attempt::judge_slow(long long rank, const rank_seen& r, const hetlaunch::slow_judgement& j) {
  if (!j.episode_starts) return;
  const std::string host(plan_.topology().node(r.node).host);
  const auto rate = [](double v) {
    return hetlaunch::detail::number_text(std::round(v * 10) / 10);
  };
  events_.write("rank_slow",
                concat("\"node\": ", r.node, ", \"host\": ", json_string(host), ", \"rank\": ",
                       rank, ", \"samples_per_second\": ", rate(j.samples_per_second),
                       ", \"expected\": ", rate(j.expected), ", \"step\": ", r.progress.step));
  const std::string said = concat(
      "rank ", rank, " is slow: ", rate(j.samples_per_second),
      " samples/s, below its own earlier rate ", rate(j.expected), " / ",
      hetlaunch::detail::number_text(o_.restart.slow_factor.value_or(2)), " two windows in a row");
  progress.clear();
  std::fprintf(stderr, "hetlaunch: node %zu (%s): %s%s\n", r.node, quoted(host).c_str(),
               said.c_str(), what_follows_slow(r.node).c_str());
  // The node to leave out is the first one chosen, and the restart says why of it, not of a
  // rank judged slow after.
  if (o_.restart.excludes_slow() && !slow_node_ && may_exclude_(r.node)) {
    slow_node_ = r.node;
    slow_ = said;
  }
}

// What run does about a rank judged slow, in words after its line.
std::string attempt::what_follows_slow(std::size_t node) const {
  switch (o_.restart.on_slow.value_or(slow_action::report)) {
    case slow_action::rebalance:
      return ": the samplers move work off it at the next window";
    case slow_action::exclude:
      if (slow_node_) return concat(": node ", *slow_node_, " leaves the job first");
      if (!may_exclude_(node))
        return ": it stays in the job (no restart left, or the job would be too small without "
               "its node)";
      return ": its node leaves the job at rank 0's next checkpoint line (HETLAUNCH_CHECKPOINT)";
    case slow_action::report:
      break;
  }
  return "";
}

// --metrics: the job now, written when something it shows changed, and at least once a second
// (the ranks' seconds since progress grow, and a file that ages tells a monitor that run itself
// stopped); `force` writes it now.
void attempt::write_metrics(bool force) {
  if (!metrics_) return;
  const double t = now();
  if (!force && !metrics_due_ && t - metrics_written_ < 1.0) return;
  metrics_due_ = false;
  metrics_written_ = t;
  hetlaunch::job_metrics& m = metrics_.metrics;
  m.nodes.clear();
  m.ranks.clear();
  for (std::size_t i = 0; i < n_; ++i)
    m.nodes.push_back({i, std::string(plan_.topology().node(i).host),
                       progress_of_[i].started && nodes_[i].pid > 0});
  for (const auto& [rank, r] : ranks_)
    m.ranks.push_back({rank, r.node, std::string(plan_.topology().node(r.node).host),
                       r.progress.step, r.rate, r.slow.expected(), t - r.progress.last_report});
  metrics_.write();
}

// --hang-timeout: a rank gone silent, or stuck in its step, past its limit stops the job (or
// restarts it, its node counted as failed). The ranks that wait for it are not named.
void attempt::judge_hangs() {
  if (o_.restart.hang_timeout <= 0 || stopping_ || ranks_.empty()) return;
  const hetlaunch::hang_limits limits{
      static_cast<double>(o_.restart.hang_timeout),
      static_cast<double>(o_.restart.checkpoint_timeout.value_or(1800))};
  std::vector<hetlaunch::rank_progress> seen;
  std::vector<long long> rank_of;
  for (const auto& [rank, r] : ranks_) {
    seen.push_back(r.progress);
    rank_of.push_back(rank);
  }
  const double t = now();
  const std::vector<std::size_t> hung = hetlaunch::hung_ranks(seen, t, limits);
  if (hung.empty()) return;
  const long long rank = rank_of[hung.front()];
  const rank_seen& r = ranks_.at(rank);
  const bool silent = hetlaunch::judge_hang(r.progress, t, limits) == hetlaunch::rank_stall::silent;
  const double seconds = t - (silent ? r.progress.last_report : r.progress.phase_started);
  const std::string host(plan_.topology().node(r.node).host);
  events_.write("rank_hung",
                concat("\"node\": ", r.node, ", \"host\": ", json_string(host),
                       ", \"rank\": ", rank, ", \"step\": ", r.progress.step, ", \"seconds\": ",
                       hetlaunch::detail::number_text(std::floor(seconds * 10) / 10)));
  hung_ = concat("rank ", rank, " hung in step ", r.progress.step, " (",
                 silent                                                     ? "no progress line"
                 : r.progress.phase == hetlaunch::rank_phase::checkpointing ? "checkpointing"
                                                                            : "computing the step",
                 " for ", hetlaunch::detail::number_text(std::floor(seconds * 10) / 10), " s)");
  progress.clear();
  std::fprintf(stderr, "hetlaunch: node %zu (%s): %s: stopping every node\n", r.node,
               quoted(host).c_str(), hung_.c_str());
  first_failure_ = r.node;
  first_failure_ending_ = node_ending::failed;
  stop();
}

// One line for each node that did not end well.
void attempt::say_ends() const {
  for (std::size_t i = 0; i < n_; ++i) {
    const std::string who = concat("node ", i, " (", quoted(plan_.topology().node(i).host), ")");
    if (i >= next_)
      std::fprintf(stderr, "hetlaunch: %s: not started\n", who.c_str());
    else if (!ends_[i].empty())
      std::fprintf(stderr, "hetlaunch: %s: %s\n", who.c_str(), ends_[i].c_str());
  }
}

attempt_result attempt::outcome() const {
  attempt_facts facts;
  facts.stop_signal = stop_signal_;
  facts.local_failure = !local_failure_.empty();
  if (first_failure_) {
    facts.first = failed_by_worker_ ? node_ending::failed : first_failure_ending_;
    facts.first_status = exit_code(nodes_[*first_failure_].status);
  }
  facts.by_worker = failed_by_worker_;
  facts.hung = !hung_.empty();
  facts.slow_excluded = slow_excluded_;
  facts.every_node_started = next_ == n_;
  attempt_result r;
  r.end = classify(facts);
  if (first_failure_) {
    r.end.failed_node = *first_failure_;
    r.end.failed_host = std::string(plan_.topology().node(*first_failure_).host);
  }
  if (o_.calibrate.measuring) {
    r.end.topology = plan_.topology();
    r.end.measured = measured_;
  }
  r.local_failure = local_failure_;
  for (std::size_t k = 0; k < probes_.size(); ++k)
    if (returned_[k]) r.returned.push_back(probes_[k].host);
  r.grow = grow_ && !first_failure_ && !stop_signal_ && local_failure_.empty();
  r.checkpoint_step = checkpoint_step_;
  if (first_failure_) {
    r.failed.push_back(*first_failure_);
    r.failure = ends_[*first_failure_];
  } else if (slow_excluded_ && !stop_signal_ && local_failure_.empty()) {
    r.failed.push_back(*slow_node_);
    r.failure = slow_;
    r.slow = true;
  }
  // A host that could not be reached is to blame too, whichever node failed first.
  for (std::size_t i = 0; i < next_; ++i)
    if (!progress_of_[i].started && WIFEXITED(nodes_[i].status) &&
        WEXITSTATUS(nodes_[i].status) == 255 && first_failure_ != i)
      r.failed.push_back(i);
  return r;
}

}  // namespace

std::vector<std::string> node_command(const job_options& o, const hetlaunch::launch_plan& plan,
                                      std::size_t i, const hetlaunch::ssh_options& ssh) {
  return o.remote.local ? hetlaunch::try_remote_argv(plan, i, ssh).value()
                        : hetlaunch::ssh_argv(plan, i, ssh);
}

attempt_result run_attempt(const job_options& o, const hetlaunch::launch_plan& plan,
                           const hetlaunch::ssh_options& ssh, event_log& events,
                           metrics_file& metrics, const std::vector<probed_host>& probes,
                           const slow_exclusion& may_exclude) {
  return attempt(o, plan, ssh, events, metrics, probes, may_exclude).run();
}

}  // namespace cli
