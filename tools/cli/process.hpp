// SPDX-License-Identifier: MIT
// The processes `run`, `calibrate` and `discover` start: spawning one with its output on pipes,
// reading that output line by line, the one event loop that waits for output, signals and ends,
// signals as bytes on a pipe, and the progress line on a terminal.
#ifndef HETLAUNCH_TOOLS_PROCESS_HPP
#define HETLAUNCH_TOOLS_PROCESS_HPP

#include <poll.h>
#include <signal.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <functional>
#include <optional>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "cli.hpp"

namespace cli {

constexpr std::size_t max_line = 1 << 16;  // a longer line is shown in pieces of this size

// Seconds on the monotonic clock.
double now();

// Signals (SIGINT, SIGTERM, SIGHUP, SIGCHLD) arrive as bytes on signal_pipe[0], so a poll loop
// sees them with the output; SIGPIPE is ignored. Installed once, before the first child.
extern int signal_pipe[2];
void install_signal_handlers();
// The first signal that asks to stop (not SIGCHLD) among those caught so far, 0 for none; the
// ones read are gone.
int take_stop_signal();
// Puts a stop signal that was read back, for take_stop_signal: a loop that stopped for it leaves
// it to its caller.
void keep_stop_signal(int number);

// A child process with its standard input held open here (or /dev/null) and its output on pipes.
struct child {
  pid_t pid = -1;
  int in = -1, out = -1, err = -1;
  std::string out_line, err_line, out_all, err_all;
  bool reaped = false;
  int status = 0;
};

// Starts argv in a process group of its own (a Ctrl-C reaches this process, which stops the
// children in order). Its output pipes are non-blocking.
result<child> spawn(const std::vector<std::string>& argv, bool with_input);
void close_fd(int& fd);
// Whether `program` can be run here, as execvp would find it (a path, or a name on PATH); if not,
// the error says why.
result<completed> can_run(const std::string& program);
// SIGKILL to the child's process group, waits for it, and closes its output unread.
void stop_child(child& c);

// "exit status 1", "killed by signal 9 (Killed)".
std::string describe_status(int status);
// The shell's view of a status: 128 + signal for a child killed by one.
int exit_code(int status);

// The children by pid, so that reaping costs what ended, not every child.
class child_table {
  std::unordered_map<pid_t, std::size_t> index_of_;

 public:
  void add(pid_t pid, std::size_t index) { index_of_[pid] = index; }
  // Calls ended(index, status) for each child of the table that has ended.
  template <class Ended>
  void reap(Ended&& ended) {
    while (true) {
      int status = 0;
      const pid_t pid = waitpid(-1, &status, WNOHANG);
      if (pid <= 0) return;
      const auto found = index_of_.find(pid);
      if (found == index_of_.end()) continue;
      const std::size_t index = found->second;
      index_of_.erase(found);
      ended(index, status);
    }
  }
};

// Where the lines of a stream go: kept (up to a limit), or shown with a prefix. `watch` sees
// every line first; a line it returns true for is its own (a node's started line), neither
// shown nor kept.
struct line_sink {
  std::string* keep = nullptr;
  std::size_t keep_limit = SIZE_MAX;  // stop reading once this much is kept
  FILE* stream = nullptr;
  const std::string* prefix = nullptr;
  bool shown = true;
  std::function<bool(std::string_view)> watch;
  std::size_t whole_line = max_line;  // a line up to this long reaches watch whole
};
line_sink kept_lines(std::string& into, std::size_t limit);
line_sink shown_lines(FILE* stream, const std::string& prefix, bool shown);

// Reads what a stream has and passes each complete line to the sink; a line longer than
// sink.whole_line (max_line unless a watcher needs longer ones whole) goes in pieces. Returns false at end of file (the rest is passed on, fd closed).
bool drain(int& fd, std::string& pending, const line_sink& sink);

// The one loop of every command that runs processes (run, calibrate, discover): it waits for the
// children's output, the signals and the children's ends at once, and hands each to the caller.
// The children are the caller's, by index into a vector that must not move while watched. Each
// wake-up costs what happened: the poll list is rebuilt only when a stream opens or closes, and
// an ended child is found by its pid.
class event_loop {
  std::vector<child>& children_;
  std::vector<std::size_t> open_;  // children that may still have an open stream
  child_table table_;
  std::vector<pollfd> fds_;
  std::vector<std::pair<std::size_t, bool>> owner_;  // (child, stdout?) of fds_[k], k >= 1
  bool dirty_ = true;
  void rebuild();

 public:
  explicit event_loop(std::vector<child>& children) : children_(children) {}
  // Child `index` was started: its streams are watched until they close, and its end.
  void watch(std::size_t index);
  // Stops a watched child at once (stop_child): its streams leave the poll list.
  void stop(std::size_t index) {
    stop_child(children_[index]);
    dirty_ = true;
  }
  // Waits at most `seconds`, then calls signal(number) for each signal that came (SIGCHLD
  // excepted), output(index, from_stdout) for each stream with something to read (the caller
  // drains it), and ended(index, status) for each watched child that ended, marked reaped with
  // its status (what is left in its pipes is the caller's to read first).
  template <class Signal, class Output, class Ended>
  void wait(double seconds, Signal&& signal, Output&& output, Ended&& ended) {
    if (dirty_) rebuild();
    const double ms = seconds * 1000.0;
    poll(fds_.data(), fds_.size(), ms <= 0 ? 0 : ms > 60000 ? 60000 : static_cast<int>(ms) + 1);
    if (fds_[0].revents) {
      unsigned char signals[64];
      const ssize_t got = read(signal_pipe[0], signals, sizeof signals);
      for (ssize_t k = 0; k < got; ++k)
        if (signals[k] != SIGCHLD) signal(static_cast<int>(signals[k]));
    }
    for (std::size_t f = 1; f < fds_.size(); ++f) {
      if (!fds_[f].revents || fds_[f].fd < 0) continue;
      child& c = children_[owner_[f].first];
      int& fd = owner_[f].second ? c.out : c.err;
      if (fd != fds_[f].fd) continue;  // closed since
      output(owner_[f].first, owner_[f].second);
      if (fd < 0) dirty_ = true;
    }
    table_.reap([&](std::size_t index, int status) {
      children_[index].reaped = true;
      children_[index].status = status;
      ended(index, status);
      dirty_ = true;  // its streams are read to their end there, or stay to be read
    });
  }
};

// One line on a terminal that says how far long work has come ("discover: 12 of 40 hosts
// answered"), redrawn in place and cleared before any other line is written and when the work
// ends. Nothing at all when stderr is not a terminal: logs and pipes never see it.
class progress_line {
  bool tty_;
  std::string shown_;
  void put(const std::string& text);

 public:
  progress_line();
  void show(const std::string& text);
  void clear();
};
extern progress_line progress;

// Clears the progress line when a scope ends, by any path.
struct progress_scope {
  progress_scope() = default;
  progress_scope(const progress_scope&) = delete;
  progress_scope& operator=(const progress_scope&) = delete;
  ~progress_scope() { progress.clear(); }
};

// Writes a whole line with one call: lines of different nodes never mix.
void emit(FILE* stream, const std::string& prefix, std::string_view line);

}  // namespace cli

#endif  // HETLAUNCH_TOOLS_PROCESS_HPP
