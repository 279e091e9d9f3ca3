// SPDX-License-Identifier: MIT
// `hetlaunch run` and `hetlaunch discover`: the processes. Every ssh command line comes from the
// library (ssh.hpp); this file starts the ssh clients, multiplexes their output line by line,
// and stops every node when one fails or when it is interrupted.
//
// How a node is stopped: each ssh's standard input is a pipe that this process holds open. The
// remote command (hetlaunch::detail::node_script) tears torchrun and all its workers down when
// that input ends, so closing the pipe stops the node, and so does this process dying (the
// kernel closes the pipe, ssh sends EOF, the connection ends). A node that does not stop within
// --kill-after seconds and a margin has its ssh killed, which ends the connection as well.
#include "cli.hpp"

#include <hetlaunch/restart.hpp>

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdint>
#include <climits>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <unordered_map>

extern char** environ;

namespace cli {
namespace {


constexpr std::size_t max_line = 1 << 16;  // a longer line is shown in pieces of this size

double now() {
  timespec t{};
  clock_gettime(CLOCK_MONOTONIC, &t);
  return static_cast<double>(t.tv_sec) + static_cast<double>(t.tv_nsec) / 1e9;
}

// Signals arrive as bytes on a pipe, so the poll loop sees them with the output.
int signal_pipe[2] = {-1, -1};
extern "C" void on_signal(int sig) {
  const int saved = errno;
  const unsigned char byte = static_cast<unsigned char>(sig);
  ssize_t ignored = write(signal_pipe[1], &byte, 1);
  (void)ignored;
  errno = saved;
}

void install_signal_handlers() {
  if (signal_pipe[0] >= 0) return;  // discovery, then the job: one pipe for both
  if (pipe2(signal_pipe, O_CLOEXEC | O_NONBLOCK) != 0) return;
  struct sigaction sa {};
  sa.sa_handler = on_signal;
  sigemptyset(&sa.sa_mask);
  sa.sa_flags = SA_RESTART;
  for (int sig : {SIGINT, SIGTERM, SIGHUP, SIGCHLD}) sigaction(sig, &sa, nullptr);
  signal(SIGPIPE, SIG_IGN);  // a node that went away must not take this process with it
}

// A child process with its standard input held open here and its output read line by line.
struct child {
  pid_t pid = -1;
  int in = -1, out = -1, err = -1;
  std::string out_line, err_line, out_all, err_all;
  bool keep_output = false;  // discover: collect instead of printing
  bool started = false;      // the remote command's first line was seen
  int worker_failures = 0;   // torchrun's "failed (exitcode: N) local_rank: L" lines
  int failed_exitcode = 0;   // the last of those exit codes
  bool reaped = false;
  int status = 0;
};

std::optional<child> spawn(const std::vector<std::string>& argv, bool with_input, std::string& error) {
  int in[2] = {-1, -1}, out[2], err[2];
  if ((with_input && pipe2(in, O_CLOEXEC) != 0) || pipe2(out, O_CLOEXEC) != 0 || pipe2(err, O_CLOEXEC) != 0) {
    error = concat("cannot make a pipe: ", std::strerror(errno));
    return std::nullopt;
  }
  std::vector<char*> args;
  for (const auto& a : argv) args.push_back(const_cast<char*>(a.c_str()));
  args.push_back(nullptr);
  const pid_t pid = fork();
  if (pid < 0) {
    error = concat("cannot start ", argv[0], ": ", std::strerror(errno));
    return std::nullopt;
  }
  if (pid == 0) {
    // Its own process group: a Ctrl-C at the terminal reaches this process, which stops the
    // nodes in order, and not every ssh at once.
    setpgid(0, 0);
    for (int sig : {SIGINT, SIGTERM, SIGHUP, SIGCHLD, SIGPIPE}) signal(sig, SIG_DFL);
    if (with_input) dup2(in[0], 0);
    else {
      const int null = open("/dev/null", O_RDONLY);
      dup2(null, 0);
    }
    dup2(out[1], 1);
    dup2(err[1], 2);
    execvp(args[0], args.data());
    const std::string message = concat("hetlaunch: cannot run ", quoted(argv[0]), ": ", std::strerror(errno), "\n");
    ssize_t ignored = write(2, message.data(), message.size());
    (void)ignored;
    _exit(127);
  }
  child c;
  c.pid = pid;
  if (with_input) {
    close(in[0]);
    c.in = in[1];
  }
  close(out[1]);
  close(err[1]);
  c.out = out[0];
  c.err = err[0];
  fcntl(c.out, F_SETFL, O_NONBLOCK);
  fcntl(c.err, F_SETFL, O_NONBLOCK);
  return c;
}

void close_fd(int& fd) {
  if (fd >= 0) close(fd);
  fd = -1;
}

// "exit status 1", "killed by signal 9".
std::string describe_status(int status) {
  if (WIFSIGNALED(status)) return concat("killed by signal ", WTERMSIG(status), " (", strsignal(WTERMSIG(status)), ")");
  return concat("exit status ", WEXITSTATUS(status));
}
int exit_code(int status) { return WIFSIGNALED(status) ? 128 + WTERMSIG(status) : WEXITSTATUS(status); }

// Reaps every child that has ended; `by_pid` finds each one's record.
void reap(std::vector<child>& children, std::unordered_map<pid_t, std::size_t>& by_pid) {
  while (true) {
    int status = 0;
    const pid_t pid = waitpid(-1, &status, WNOHANG);
    if (pid <= 0) return;
    const auto found = by_pid.find(pid);
    if (found == by_pid.end()) continue;
    children[found->second].reaped = true;
    children[found->second].status = status;
    by_pid.erase(found);
  }
}

// One line on a terminal that says how far long work has come ("discover: 12 of 40 hosts
// answered"), redrawn in place and cleared before any other line is written and when the work
// ends. Nothing at all when stderr is not a terminal: logs and pipes never see it.
class progress_line {
  bool tty_ = isatty(STDERR_FILENO) == 1;
  std::string shown_;
  void put(const std::string& text) {
    std::string out = "\r\033[K" + text;
    std::fwrite(out.data(), 1, out.size(), stderr);
    std::fflush(stderr);
  }

 public:
  void show(const std::string& text) {
    if (!tty_ || text == shown_) return;
    put(text);
    shown_ = text;
  }
  void clear() {
    if (!tty_ || shown_.empty()) return;
    put("");
    shown_.clear();
  }
};
progress_line progress;

// Clears the progress line when a scope ends, by any path.
struct progress_scope {
  ~progress_scope() { progress.clear(); }
};

// Writes whole lines with one call each: lines of different nodes never mix.
void emit(FILE* stream, const std::string& prefix, std::string_view line) {
  progress.clear();
  std::string text = prefix;
  text.append(line.data(), line.size());
  text += '\n';
  std::fwrite(text.data(), 1, text.size(), stream);
  std::fflush(stream);
}

// torchrun's agent logs "failed (exitcode: 3) local_rank: 0 (pid: 123) of binary: ..." when a
// worker fails (torch 1.13 through 2.x). It then waits up to 300 s for the other nodes in its exit
// barrier, and they wait for a collective that will never complete: a job whose worker failed
// would stop only after minutes. The line is the earliest sign, so it counts as the failure.
void note_worker_failure(child& c, std::string_view line) {
  const std::size_t at = line.find("failed (exitcode: ");
  if (at == std::string_view::npos || line.find(" local_rank: ", at) == std::string_view::npos) return;
  // "-9" is a worker killed by signal 9, as torchrun writes it.
  const std::string_view rest = line.substr(at + 18);
  const bool negative = !rest.empty() && rest[0] == '-';
  const std::optional<unsigned long long> code =
      hetlaunch::parse_count(rest.substr(negative ? 1 : 0, rest.find(')') - (negative ? 1 : 0)), 1 << 30);
  ++c.worker_failures;
  c.failed_exitcode = code ? static_cast<int>(negative ? -static_cast<long long>(*code) : static_cast<long long>(*code)) : 0;
}

// Reads what a stream has; shows (or keeps) each complete line. Returns false at end of file.
// `keep_limit`: with `keep`, stop reading once that much is kept, so that a stream faster than
// this loop cannot keep it here for ever.
bool drain(int& fd, std::string& pending, std::string* keep, FILE* stream, const std::string& prefix, bool shown,
           bool* marker, child* watched = nullptr, std::size_t keep_limit = SIZE_MAX) {
  char buffer[1 << 15];
  while (true) {
    if (keep && keep->size() + pending.size() > keep_limit) return true;
    const ssize_t got = read(fd, buffer, sizeof buffer);
    if (got < 0 && errno == EINTR) continue;
    if (got < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) return true;
    if (got <= 0) {
      if (!pending.empty()) {
        if (keep) *keep += pending;
        else if (shown) emit(stream, prefix, pending);
        pending.clear();
      }
      close_fd(fd);
      return false;
    }
    pending.append(buffer, static_cast<std::size_t>(got));
    std::size_t start = 0;
    while (true) {
      const std::size_t nl = pending.find('\n', start);
      const bool too_long = nl == std::string::npos && pending.size() - start >= max_line;
      if (nl == std::string::npos && !too_long) break;
      const std::size_t end = too_long ? start + max_line : nl;
      const std::string_view line(pending.data() + start, end - start);
      if (watched) note_worker_failure(*watched, line);
      if (marker && !*marker && line == hetlaunch::node_started_line) *marker = true;
      else if (keep) (*keep += line) += '\n';
      else if (shown) emit(stream, prefix, line);
      start = too_long ? end : end + 1;
    }
    pending.erase(0, start);
  }
}

// The count a host's GPU command printed: `nvidia-smi -L` lines "GPU n: ...", or one integer.
std::optional<int> gpu_count(const std::string& output, bool custom) {
  if (custom) {
    const auto blank = [](char ch) { return ch == '\n' || ch == ' ' || ch == '\t' || ch == '\r'; };
    std::size_t b = 0, e = output.size();
    while (b < e && blank(output[b])) ++b;
    while (e > b && blank(output[e - 1])) --e;
    const std::string text = output.substr(b, e - b);
    const std::optional<unsigned long long> n = hetlaunch::parse_count(text, INT_MAX);
    if (!n || *n < 1) return std::nullopt;
    return static_cast<int>(*n);
  }
  int count = 0;
  std::size_t start = 0;
  while (start < output.size()) {
    std::size_t end = output.find('\n', start);
    if (end == std::string::npos) end = output.size();
    const std::string_view line(output.data() + start, end - start);
    // "GPU 0: NVIDIA A100 ...", as nvidia-smi -L lists them.
    const std::size_t index_end = line.find_first_not_of("0123456789", 4);
    if (line.substr(0, 4) == "GPU " && index_end != 4 && index_end != std::string_view::npos && line[index_end] == ':')
      ++count;
    start = end + 1;
  }
  if (count == 0) return std::nullopt;
  return count;
}

std::vector<std::string> ssh_prefix(const options& o) {
  std::vector<std::string> argv = {o.ssh};
  argv.insert(argv.end(), o.ssh_args.begin(), o.ssh_args.end());
  argv.emplace_back("--");
  return argv;
}

// Stops a child and everything it started: SIGKILL to its process group (spawn gives each child
// a group of its own), waits for it, and drops what it had not yet been read of its output.
void stop_child(child& c) {
  if (c.pid > 0 && !c.reaped) {
    kill(-c.pid, SIGKILL);
    kill(c.pid, SIGKILL);
    int status = 0;
    while (waitpid(c.pid, &status, 0) < 0 && errno == EINTR) {
    }
    c.reaped = true;
    c.status = status;
  }
  close_fd(c.out);
  close_fd(c.err);
}

// The most a host's GPU-count command may print on either stream: `nvidia-smi -L` prints a short
// line a GPU (or a MIG device), so this is far more than any host needs, and a command that
// floods its output is stopped long before it costs memory.
constexpr std::size_t max_count_output = 1 << 16;

// Asks every node with nproc 0 (slots=auto) for its GPU count, at most --fanout at once, and
// gives the cluster those counts. Errors name the host. Each answer is bounded in size and in
// time (--discover-timeout); a signal stops every child and ends the process with 128 + signal.
bool resolve_auto(const options& o, hetlaunch::cluster& nodes, std::string& error) {
  std::vector<std::size_t> asked;
  for (std::size_t i = 0; i < nodes.node_count(); ++i)
    if (nodes.nproc(i) == 0) asked.push_back(i);
  if (asked.empty()) return true;
  const progress_scope clear_progress;
  // Before the first child: a Ctrl-C now must stop the children, not leave them behind.
  install_signal_handlers();
  const bool custom = o.gpu_count_command.has_value();
  const std::string command = custom ? *o.gpu_count_command : "nvidia-smi -L";
  std::vector<child> children(asked.size());
  std::vector<double> started_at(asked.size());
  std::vector<int> counts(nodes.node_count());
  std::size_t next = 0, done = 0;
  // The children still running or with output to read: each wake-up costs them, not every host.
  std::vector<std::size_t> active;
  std::unordered_map<pid_t, std::size_t> by_pid;
  std::vector<std::string> problems(asked.size());
  const auto host_of = [&](std::size_t k) { return std::string(nodes.node(asked[k]).host); };
  const auto stop_all = [&] {
    for (const std::size_t k : active) stop_child(children[k]);
    active.clear();
  };
  // Ends child k's question with a problem: it is stopped, its output is dropped.
  const auto give_up = [&](std::size_t k, std::string why) {
    stop_child(children[k]);
    problems[k] = concat("host ", quoted(host_of(k)), ": ", quoted(command), " ", why);
  };
  while (done < asked.size()) {
    while (next < asked.size() && active.size() < static_cast<std::size_t>(o.fanout)) {
      std::vector<std::string> argv = ssh_prefix(o);
      argv.emplace_back(nodes.node(asked[next]).host);
      argv.push_back(command);
      std::string why;
      auto c = spawn(argv, false, why);
      if (!c) {
        stop_all();
        error = why;
        return false;
      }
      c->keep_output = true;
      by_pid[c->pid] = next;
      started_at[next] = now();
      active.push_back(next);
      children[next++] = std::move(*c);
    }
    // The signal pipe is always polled: a child that closed its output but runs on is waited
    // for without spinning, and its end (SIGCHLD) or its deadline wakes this loop.
    std::vector<pollfd> fds{{signal_pipe[0], POLLIN, 0}};
    std::vector<std::pair<std::size_t, bool>> owner{{0, false}};
    double wake = now() + 1.0;
    for (const std::size_t k : active) {
      if (children[k].out >= 0) fds.push_back({children[k].out, POLLIN, 0}), owner.push_back({k, true});
      if (children[k].err >= 0) fds.push_back({children[k].err, POLLIN, 0}), owner.push_back({k, false});
      wake = std::min(wake, started_at[k] + o.discover_timeout);
    }
    progress.show(concat("hetlaunch: discover: ", done, " of ", asked.size(), " hosts answered"));
    const double wait_ms = std::max(0.0, (wake - now()) * 1000.0) + 1.0;
    poll(fds.data(), fds.size(), static_cast<int>(std::min(wait_ms, 1000.0)));
    if (fds[0].revents) {
      unsigned char sigs[64];
      const ssize_t got = read(signal_pipe[0], sigs, sizeof sigs);
      for (ssize_t s = 0; s < got; ++s) {
        if (sigs[s] == SIGCHLD) continue;
        progress.clear();
        std::fprintf(stderr, "hetlaunch: %s: stopping discovery\n", strsignal(sigs[s]));
        stop_all();
        std::exit(128 + sigs[s]);
      }
    }
    for (std::size_t f = 1; f < fds.size(); ++f) {
      if (!fds[f].revents) continue;
      const std::size_t k = owner[f].first;
      child& c = children[k];
      if (owner[f].second && c.out == fds[f].fd)
        drain(c.out, c.out_line, &c.out_all, stdout, "", false, nullptr, nullptr, max_count_output);
      else if (!owner[f].second && c.err == fds[f].fd)
        drain(c.err, c.err_line, &c.err_all, stderr, "", false, nullptr, nullptr, max_count_output);
      if (c.out_all.size() + c.out_line.size() > max_count_output || c.err_all.size() + c.err_line.size() > max_count_output)
        if (problems[k].empty() && !c.reaped)
          give_up(k, concat("printed more than ", max_count_output, " bytes (a GPU count is a short line): stopped"));
    }
    reap(children, by_pid);
    for (std::size_t a = active.size(); a-- > 0;) {
      const std::size_t k = active[a];
      child& c = children[k];
      if (problems[k].empty() && now() - started_at[k] > o.discover_timeout)
        give_up(k, concat("did not finish within ", o.discover_timeout, " s (--discover-timeout): stopped"));
      if (!c.reaped || c.out >= 0 || c.err >= 0 || c.pid < 0) continue;
      active[a] = active.back();
      active.pop_back();
      c.pid = -1;
      ++done;
      if (!problems[k].empty()) continue;
      const std::string host = host_of(k);
      const bool exited_ok = WIFEXITED(c.status) && WEXITSTATUS(c.status) == 0;
      const std::optional<int> n = exited_ok ? gpu_count(c.out_all, custom) : std::nullopt;
      const std::string first_error = c.err_all.substr(0, c.err_all.find('\n'));
      if (n) counts[asked[k]] = *n;
      else if (exited_ok)
        problems[k] = concat("host ", quoted(host), ": ", quoted(command), " printed no GPU count",
                             custom ? " (expected one positive integer)" : " (no 'GPU n:' lines)", ": it printed ",
                             c.out_all.empty() ? std::string("nothing") : quoted(c.out_all, 200));
      else
        problems[k] = concat("host ", quoted(host), ": ", quoted(command), " failed (", describe_status(c.status),
                             first_error.empty() ? std::string(")") : concat("): ", quoted(first_error, 200)));
    }
  }
  for (const std::string& p : problems)
    if (!p.empty()) error += (error.empty() ? "" : "\n") + std::string("slots=auto: ") + p;
  if (!error.empty()) return false;
  hetlaunch::cluster_builder builder;
  for (std::size_t i = 0; i < nodes.node_count(); ++i) {
    const hetlaunch::node_spec n = nodes.node(i);
    builder.add(n.host, n.nproc == 0 ? counts[i] : n.nproc, n.role, n.weight);
  }
  nodes = builder.finish();
  return true;
}

// The variables every node gets: the forwarded defaults, then --env-file, then --env.
std::optional<hetlaunch::environment> node_environment(const options& o, int& status) {
  hetlaunch::environment env = hetlaunch::forwarded_environment(environ);
  if (o.env_file) {
    std::string error;
    const std::optional<std::string> text = read_file(*o.env_file, error);
    if (!text) {
      status = fail(error);
      return std::nullopt;
    }
    auto parsed = hetlaunch::parse_env_file(*text);
    if (!parsed) {
      status = fail(concat(*o.env_file, ":", parsed.error().line, ":", parsed.error().column, ": ", parsed.error().message));
      return std::nullopt;
    }
    env.insert(env.end(), parsed->begin(), parsed->end());
  }
  std::optional<hetlaunch::environment> flags = env_flags(o, status);
  if (!flags) return std::nullopt;
  env.insert(env.end(), flags->begin(), flags->end());
  return env;
}

// How one attempt of the job ended.
struct attempt_result {
  int status = 0;                   // run's exit status for this attempt
  bool interrupted = false;         // a signal stopped it
  std::vector<std::size_t> failed;  // the node that failed first, then every host not reached
  std::string failure;              // what happened to the node that failed first
};

attempt_result run_attempt(const options& o, const hetlaunch::launch_plan* plan, const hetlaunch::ssh_options& ssh) {
  const auto command_of = [&](std::size_t i) { return hetlaunch::ssh_argv(*plan, i, ssh); };
  install_signal_handlers();
  const std::size_t n = plan->topology().node_count();
  std::vector<child> nodes(n);
  std::vector<std::string> prefixes(n);
  for (std::size_t i = 0; i < n; ++i) prefixes[i] = concat("[", i, " ", plan->topology().node(i).host, "] ");
  std::size_t next = 0;
  bool stopping = false;
  int stop_signal = 0;
  double deadline = 0;
  std::optional<std::size_t> first_failure;
  bool failed_by_worker = false;  // the first failure was a worker's, seen in torchrun's log
  const auto stop = [&](double grace) {
    if (!stopping) {
      stopping = true;
      deadline = now() + grace;
    }
    for (child& c : nodes) close_fd(c.in);
  };
  const auto fanout = static_cast<std::size_t>(o.fanout);
  // Every step costs O(what happened), not O(nodes): the poll list is rebuilt only when a stream
  // opens or closes, and ended children are found by their pid.
  std::size_t connecting = 0, running = 0, started = 0;
  std::unordered_map<pid_t, std::size_t> node_of_pid;
  std::vector<pollfd> fds;
  std::vector<std::pair<std::size_t, bool>> owner;  // (node, stdout?) of fds[k], k >= 1
  bool dirty = true;
  const auto read_node = [&](std::size_t i, bool out) {
    child& c = nodes[i];
    const bool was_started = c.started;
    const bool open = out ? drain(c.out, c.out_line, nullptr, stdout, prefixes[i], !o.quiet_nodes || i == 0, &c.started)
                          : drain(c.err, c.err_line, nullptr, stderr, prefixes[i], true, nullptr, &c);
    if (!was_started && c.started) --connecting, ++started;
    if (!open) dirty = true;
  };
  const progress_scope clear_progress;
  while (true) {
    // Start nodes while fewer than --fanout are still connecting.
    while (!stopping && next < n && connecting < fanout) {
      std::string why;
      auto c = spawn(command_of(next), true, why);
      if (!c) {
        progress.clear();
        std::fprintf(stderr, "hetlaunch: node %zu: %s\n", next, why.c_str());
        first_failure = first_failure ? first_failure : next;
        nodes[next].reaped = true;
        nodes[next].status = 127 << 8;
        ++next;
        stop(o.kill_after + 5.0);
        break;
      }
      node_of_pid[c->pid] = next;
      nodes[next++] = std::move(*c);
      ++connecting;
      ++running;
      dirty = true;
    }
    if (running == 0 && (next == n || stopping)) break;
    if (dirty) {
      fds.assign(1, pollfd{signal_pipe[0], POLLIN, 0});
      owner.assign(1, {0, false});
      for (std::size_t i = 0; i < next; ++i) {
        if (nodes[i].out >= 0) fds.push_back({nodes[i].out, POLLIN, 0}), owner.push_back({i, true});
        if (nodes[i].err >= 0) fds.push_back({nodes[i].err, POLLIN, 0}), owner.push_back({i, false});
      }
      dirty = false;
    }
    if (started < n && !stopping) progress.show(concat("hetlaunch: run: ", started, " of ", n, " nodes started"));
    else progress.clear();
    poll(fds.data(), fds.size(), 100);
    if (fds[0].revents) {
      unsigned char sigs[64];
      const ssize_t got = read(signal_pipe[0], sigs, sizeof sigs);
      for (ssize_t k = 0; k < got; ++k) {
        if (sigs[k] == SIGCHLD) continue;
        if (stop_signal) {  // a second signal: no more waiting
          for (child& c : nodes)
            if (c.pid > 0 && !c.reaped) kill(c.pid, SIGKILL);
        }
        if (!stop_signal) {
          stop_signal = sigs[k];
          progress.clear();
          std::fprintf(stderr, "hetlaunch: %s: stopping every node (again to stop at once)\n", strsignal(stop_signal));
        }
        stop(o.kill_after + 5.0);
      }
    }
    for (std::size_t f = 1; f < fds.size(); ++f) {
      if (!fds[f].revents || fds[f].fd < 0) continue;
      const std::size_t i = owner[f].first;
      if ((owner[f].second ? nodes[i].out : nodes[i].err) != fds[f].fd) continue;  // closed since
      read_node(i, owner[f].second);
      child& c = nodes[i];
      // More failures than restarts: torchrun gives up on this node's workers.
      if (c.worker_failures > plan->options().max_restarts && !stopping) {
        first_failure = i;
        failed_by_worker = true;
        progress.clear();
        std::fprintf(stderr, "hetlaunch: node %zu: a worker failed (exit code %d) and torchrun has no restart left: "
                             "stopping every node\n", i, c.failed_exitcode);
        stop(o.kill_after + 5.0);
      }
    }
    while (true) {
      int child_status = 0;
      const pid_t pid = waitpid(-1, &child_status, WNOHANG);
      if (pid <= 0) break;
      const auto found = node_of_pid.find(pid);
      if (found == node_of_pid.end()) continue;
      const std::size_t i = found->second;
      node_of_pid.erase(found);
      child& c = nodes[i];
      c.reaped = true;
      c.status = child_status;
      // Output still in the pipes is read before the node's end is reported.
      if (c.out >= 0) read_node(i, true);
      if (c.err >= 0) read_node(i, false);
      if (!c.started) --connecting;
      --running;
      c.pid = -1;
      close_fd(c.in);
      // A node whose ssh ended before its script said it started never ran torchrun, whatever
      // ssh's status: a banner and exit 0 (ForceCommand, a login shell that exits) is a failure.
      if ((c.status != 0 || !c.started) && !stopping) {
        first_failure = i;
        stop(o.kill_after + 5.0);
      }
    }
    if (stopping && now() > deadline) {
      for (child& c : nodes)
        if (c.pid > 0 && !c.reaped) kill(c.pid, SIGKILL);
      deadline = now() + 3600;  // killed: only their ends are left to collect
    }
  }
  progress.clear();
  for (child& c : nodes) {
    close_fd(c.out);
    close_fd(c.err);
  }
  // One line for each node that did not end well.
  int result = 0;
  std::string first_failure_text;  // what happened to the node that failed first
  for (std::size_t i = 0; i < n; ++i) {
    const child& c = nodes[i];
    const auto host = plan->topology().node(i).host;
    const std::string who = concat("node ", i, " (", quoted(host), ")");
    if (i >= next) {
      std::fprintf(stderr, "hetlaunch: %s: not started\n", who.c_str());
      continue;
    }
    if (c.status == 0 && c.started) continue;
    std::string what;
    // A node stopped while connecting still starts (and then stops at once), so one that did not
    // start ended by itself, unless it was killed.
    if (!c.started && WIFSIGNALED(c.status))
      what = concat("stopped before the node started (", describe_status(c.status), ")");
    else if (WIFEXITED(c.status) && WEXITSTATUS(c.status) == 255 && !c.started)
      what = "ssh failed (exit status 255) before the node started";
    else if (!c.started)
      what = concat("ssh ended before the node started (", describe_status(c.status), ")");
    else if (failed_by_worker && first_failure && i == *first_failure)
      what = concat("a worker failed (exit code ", c.failed_exitcode, "); torchrun ", describe_status(c.status));
    else if (first_failure && i != *first_failure)
      what = concat("stopped (", describe_status(c.status), ")");
    else if (stop_signal && !first_failure)
      what = concat("stopped (", describe_status(c.status), ")");
    else
      what = describe_status(c.status);
    std::fprintf(stderr, "hetlaunch: %s: %s\n", who.c_str(), what.c_str());
    if (first_failure && i == *first_failure) first_failure_text = what;
  }
  if (stop_signal) result = 128 + stop_signal;
  else if (failed_by_worker) result = 1;  // torchrun's own status when a worker fails
  else if (first_failure) result = exit_code(nodes[*first_failure].status);
  if (result == 0 && (first_failure || next < n)) result = exit_failed;  // a node that never started
  attempt_result r;
  r.status = result;
  r.interrupted = stop_signal != 0;
  if (first_failure) {
    r.failed.push_back(*first_failure);
    r.failure = std::move(first_failure_text);
  }
  // A host that could not be reached is to blame too, whichever node failed first.
  for (std::size_t i = 0; i < next; ++i)
    if (!nodes[i].started && WIFEXITED(nodes[i].status) && WEXITSTATUS(nodes[i].status) == 255 &&
        (!first_failure || i != *first_failure))
      r.failed.push_back(i);
  return r;
}

}  // namespace

int discover_command(options& o) {
  int status = 0;
  options asking = o;
  std::optional<input> in = read_input(asking, status, resolve_auto);
  if (!in) return status;
  const hetlaunch::cluster& c = in->nodes;
  for (std::size_t i = 0; i < c.node_count(); ++i) {
    const auto n = c.node(i);
    std::printf("%.*s slots=%d\n", static_cast<int>(n.host.size()), n.host.data(), n.nproc);
  }
  return 0;
}

int run_command(options& o) {
  if (!o.restarts && (o.exclude_failed || o.min_nodes))
    throw usage_error{concat(o.exclude_failed ? "--exclude-failed" : "--min-nodes", " needs --restarts N")};
  int status = 0;
  std::optional<input> in = read_input(o, status, resolve_auto);
  if (!in) return status;
  take_script(o);
  std::optional<hetlaunch::launch_plan> plan = plan_of(*in, o);
  if (!plan) return exit_invalid;
  hetlaunch::ssh_options ssh;
  ssh.program = {o.ssh};
  ssh.args = o.ssh_args;
  ssh.kill_after = o.kill_after;
  if (o.chdir) ssh.chdir = *o.chdir;
  else {
    char cwd[PATH_MAX];
    if (getcwd(cwd, sizeof cwd)) ssh.chdir = cwd;
  }
  std::optional<hetlaunch::environment> env = node_environment(o, status);
  if (!env) return status;
  ssh.env = std::move(*env);
  const std::size_t n = plan->topology().node_count();
  // Each node's command is made when it is needed: memory stays that of one command.
  if (const auto problems = hetlaunch::validate_ssh(ssh); !problems.empty()) {
    print_problems("run", problems);
    return exit_invalid;
  }
  const auto command_of = [&](std::size_t i) { return hetlaunch::ssh_argv(*plan, i, ssh); };
  if (o.dry_run) {
    for (std::size_t i = 0; i < n; ++i) {
      const auto host = plan->topology().node(i).host;
      const std::string text = concat("# node ", i, " on ", host, "\n", hetlaunch::shell_join(command_of(i)), "\n");
      std::fwrite(text.data(), 1, text.size(), stdout);
    }
    return 0;
  }

  hetlaunch::restart_options restarts;
  restarts.restarts = o.restarts.value_or(0);
  restarts.exclude_failed = o.exclude_failed;
  restarts.min_nodes = static_cast<std::size_t>(o.min_nodes.value_or(1));
  if (restarts.min_nodes > n) {
    return fail(concat("--min-nodes ", restarts.min_nodes, " is more than the plan's ", n, " nodes"));
  }
  const hetlaunch::launch_options launch = plan->options();
  for (int attempt = 0;; ++attempt) {
    hetlaunch::ssh_options this_attempt = ssh;
    // Every worker learns which attempt it is (torchrun passes its environment on).
    if (o.restarts) this_attempt.env.emplace_back("HETLAUNCH_RESTART_COUNT", std::to_string(attempt));
    const attempt_result r = run_attempt(o, &*plan, this_attempt);
    const std::size_t nodes_now = plan->topology().node_count();
    const hetlaunch::restart_decision d =
        hetlaunch::decide_restart(restarts, attempt, nodes_now, r.failed, r.interrupted);
    if (!o.restarts || d.verdict == hetlaunch::restart_verdict::succeeded ||
        d.verdict == hetlaunch::restart_verdict::interrupted)
      return r.status;
    const std::size_t culprit = r.failed.front();
    const std::string blamed = concat("node ", culprit, " (", quoted(plan->topology().node(culprit).host), ") failed: ",
                                      r.failure.empty() ? std::string("could not be reached") : r.failure);
    if (d.verdict == hetlaunch::restart_verdict::no_restart_left) {
      std::fprintf(stderr, "hetlaunch: %s; no restart left (--restarts %d): the job failed after %d attempt%s\n",
                   blamed.c_str(), restarts.restarts, attempt + 1, attempt == 0 ? "" : "s");
      return r.status;
    }
    if (d.verdict == hetlaunch::restart_verdict::too_few_nodes) {
      std::vector<bool> blamed_node(nodes_now, false);
      std::size_t remaining = nodes_now;
      for (std::size_t i : r.failed)
        if (!blamed_node[i]) blamed_node[i] = true, --remaining;
      std::fprintf(stderr, "hetlaunch: %s; without it the job would have %zu node%s, fewer than --min-nodes %zu: "
                           "not restarting\n", blamed.c_str(), remaining, remaining == 1 ? "" : "s", restarts.min_nodes);
      return r.status;
    }
    std::string left_out;
    if (d.nodes.size() < nodes_now) {
      std::vector<bool> kept(nodes_now, false);
      for (std::size_t i : d.nodes) kept[i] = true;
      for (std::size_t i = 0; i < nodes_now; ++i)
        if (!kept[i]) left_out += concat(left_out.empty() ? "" : ", ", i, " (", quoted(plan->topology().node(i).host), ")");
      std::optional<hetlaunch::launch_plan> again =
          plan_again(hetlaunch::keep_nodes(plan->topology(), d.nodes), launch, "run: the plan of the restart");
      if (!again) {
        std::fprintf(stderr, "hetlaunch: %s; the plan without node %s is not valid (above): not restarting\n",
                     blamed.c_str(), left_out.c_str());
        return r.status;
      }
      plan = std::move(again);
    }
    std::fprintf(stderr, "hetlaunch: %s; restart %d of %d: attempt %d starts on %zu node%s%s, world size %d\n",
                 blamed.c_str(), attempt + 1, restarts.restarts, attempt + 2, plan->topology().node_count(),
                 plan->topology().node_count() == 1 ? "" : "s",
                 left_out.empty() ? "" : concat(" (without node ", left_out, ")").c_str(),
                 plan->topology().world_size());
  }
}
}  // namespace cli
