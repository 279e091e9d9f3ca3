// SPDX-License-Identifier: MIT
// The processes `run` and `discover` start: spawning one with its output on pipes, reading that
// output line by line, reaping the ones that ended, signals as bytes on a pipe, and the progress
// line on a terminal.
#ifndef HETLAUNCH_TOOLS_PROCESS_HPP
#define HETLAUNCH_TOOLS_PROCESS_HPP

#include <sys/types.h>
#include <sys/wait.h>

#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <optional>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

namespace cli {

constexpr std::size_t max_line = 1 << 16;  // a longer line is shown in pieces of this size

// Seconds on the monotonic clock.
double now();

// Signals (SIGINT, SIGTERM, SIGHUP, SIGCHLD) arrive as bytes on signal_pipe[0], so a poll loop
// sees them with the output; SIGPIPE is ignored. Installed once, before the first child.
extern int signal_pipe[2];
void install_signal_handlers();

// A child process with its standard input held open here (or /dev/null) and its output on pipes.
struct child {
  pid_t pid = -1;
  int in = -1, out = -1, err = -1;
  std::string out_line, err_line, out_all, err_all;
  bool started = false;     // the remote command's first line was seen
  int worker_failures = 0;  // torchrun's "failed (exitcode: N) local_rank: L" lines
  int failed_exitcode = 0;  // the last of those exit codes
  bool reaped = false;
  int status = 0;
};

// Starts argv in a process group of its own (a Ctrl-C reaches this process, which stops the
// children in order). Its output pipes are non-blocking.
std::optional<child> spawn(const std::vector<std::string>& argv, bool with_input,
                           std::string& error);
void close_fd(int& fd);
// Whether `program` can be run here, as execvp would find it (a path, or a name on PATH); if not,
// `why` says why.
bool can_run(const std::string& program, std::string& why);
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

// Where the lines of a stream go: kept (up to a limit), or shown with a prefix. The node's
// started line is never shown: it sets *started. `watch` sees every line of `watched`.
struct line_sink {
  std::string* keep = nullptr;
  std::size_t keep_limit = SIZE_MAX;  // stop reading once this much is kept
  FILE* stream = nullptr;
  const std::string* prefix = nullptr;
  bool shown = true;
  bool* started = nullptr;
  child* watched = nullptr;
  void (*watch)(child&, std::string_view) = nullptr;
};
line_sink kept_lines(std::string& into, std::size_t limit);
line_sink shown_lines(FILE* stream, const std::string& prefix, bool shown);

// Reads what a stream has and passes each complete line to the sink; a line longer than
// max_line goes in pieces. Returns false at end of file (the rest is passed on, fd closed).
bool drain(int& fd, std::string& pending, const line_sink& sink);

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
