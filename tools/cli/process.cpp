// SPDX-License-Identifier: MIT
// The processes `run` and `discover` start, and how their output is read (process.hpp).
#include "process.hpp"

#include "cli.hpp"

#include <fcntl.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <signal.h>
#include <time.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <string_view>

namespace cli {

double now() {
  timespec t{};
  clock_gettime(CLOCK_MONOTONIC, &t);
  return static_cast<double>(t.tv_sec) + static_cast<double>(t.tv_nsec) / 1e9;
}

// Signals arrive as bytes on a pipe, so the poll loop sees them with the output.
int signal_pipe[2] = {-1, -1};

namespace {
extern "C" void on_signal(int sig) {
  const int saved = errno;
  const unsigned char byte = static_cast<unsigned char>(sig);
  ssize_t ignored = write(signal_pipe[1], &byte, 1);
  (void)ignored;
  errno = saved;
}
}  // namespace

void install_signal_handlers() {
  if (signal_pipe[0] >= 0) return;  // discovery, then the job: one pipe for both
  if (pipe2(signal_pipe, O_CLOEXEC | O_NONBLOCK) != 0) return;
  struct sigaction sa {};
  sa.sa_handler = on_signal;
  sigemptyset(&sa.sa_mask);
  sa.sa_flags = SA_RESTART;
  // SIGUSR1, SIGUSR2 and SIGALRM would end this process silently, with its nodes left to their
  // own teardown and no job_exited: each stops the job as SIGTERM does.
  for (int sig : {SIGINT, SIGTERM, SIGHUP, SIGCHLD, SIGUSR1, SIGUSR2, SIGALRM})
    sigaction(sig, &sa, nullptr);
  signal(SIGPIPE, SIG_IGN);  // a node that went away must not take this process with it
}

void keep_stop_signal(int number) {
  const unsigned char byte = static_cast<unsigned char>(number);
  ssize_t ignored = write(signal_pipe[1], &byte, 1);
  (void)ignored;
}

int take_stop_signal() {
  if (signal_pipe[0] < 0) return 0;
  unsigned char byte = 0;
  int first = 0;
  while (read(signal_pipe[0], &byte, 1) == 1)
    if (byte != SIGCHLD && !first) first = byte;
  return first;
}

result<child> spawn(const std::vector<std::string>& argv, bool with_input) {
  // `exec_failed` carries the child's errno when it cannot run argv[0]; it closes on a successful
  // exec. A program that cannot run here is this machine's failure, not the host's.
  int in[2] = {-1, -1}, out[2], err[2], exec_failed[2];
  if ((with_input && pipe2(in, O_CLOEXEC) != 0) || pipe2(out, O_CLOEXEC) != 0 ||
      pipe2(err, O_CLOEXEC) != 0 || pipe2(exec_failed, O_CLOEXEC) != 0)
    return invalid(concat("cannot make a pipe: ", std::strerror(errno)));
  std::vector<char*> args;
  for (const auto& a : argv) args.push_back(const_cast<char*>(a.c_str()));
  args.push_back(nullptr);
  const pid_t pid = fork();
  if (pid < 0) {
    for (int fd : {in[0], in[1], out[0], out[1], err[0], err[1], exec_failed[0], exec_failed[1]})
      if (fd >= 0) close(fd);
    return invalid(concat("cannot start ", argv[0], ": ", std::strerror(errno)));
  }
  if (pid == 0) {
    // Its own process group: a Ctrl-C at the terminal reaches this process, which stops the
    // nodes in order, and not every ssh at once.
    setpgid(0, 0);
    for (int sig : {SIGINT, SIGTERM, SIGHUP, SIGCHLD, SIGPIPE}) signal(sig, SIG_DFL);
    if (with_input)
      dup2(in[0], 0);
    else {
      const int null = open("/dev/null", O_RDONLY);
      dup2(null, 0);
    }
    dup2(out[1], 1);
    dup2(err[1], 2);
    execvp(args[0], args.data());
    const int failure = errno;
    ssize_t ignored = write(exec_failed[1], &failure, sizeof failure);
    (void)ignored;
    _exit(127);
  }
  close(exec_failed[1]);
  int failure = 0;
  ssize_t got;
  while ((got = read(exec_failed[0], &failure, sizeof failure)) < 0 && errno == EINTR) {
  }
  close(exec_failed[0]);
  if (got == static_cast<ssize_t>(sizeof failure)) {
    int status = 0;
    while (waitpid(pid, &status, 0) < 0 && errno == EINTR) {
    }
    for (int fd : {in[0], in[1], out[0], out[1], err[0], err[1]})
      if (fd >= 0) close(fd);
    return invalid(concat("cannot run ", quoted(argv[0]), ": ", std::strerror(failure)));
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

result<completed> can_run(const std::string& program) {
  const auto runnable = [](const std::string& path) {
    struct stat st {};
    return stat(path.c_str(), &st) == 0 && S_ISREG(st.st_mode) && access(path.c_str(), X_OK) == 0;
  };
  if (program.empty()) return invalid("an empty program name");
  if (program.find('/') != std::string::npos) {
    if (runnable(program)) return completed{};
    struct stat st {};
    return invalid(stat(program.c_str(), &st) != 0
                       ? concat("cannot run it here: ", std::strerror(errno))
                   : S_ISREG(st.st_mode) ? std::string("cannot run it here: it is not executable")
                                         : std::string("cannot run it here: it is not a file"));
  }
  const char* path = std::getenv("PATH");
  std::string_view dirs = path ? path : "/usr/local/bin:/usr/bin:/bin";
  while (true) {
    const std::size_t colon = dirs.find(':');
    const std::string_view dir = dirs.substr(0, colon);
    if (runnable(concat(dir.empty() ? std::string_view(".") : dir, "/", program)))
      return completed{};
    if (colon == std::string_view::npos) break;
    dirs.remove_prefix(colon + 1);
  }
  return invalid("cannot run it here: no such program on PATH");
}

void close_fd(int& fd) {
  if (fd >= 0) close(fd);
  fd = -1;
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

// "exit status 1", "killed by signal 9".
std::string describe_status(int status) {
  if (WIFSIGNALED(status))
    return concat("killed by signal ", WTERMSIG(status), " (", strsignal(WTERMSIG(status)), ")");
  return concat("exit status ", WEXITSTATUS(status));
}
int exit_code(int status) {
  return WIFSIGNALED(status) ? 128 + WTERMSIG(status) : WEXITSTATUS(status);
}

line_sink kept_lines(std::string& into, std::size_t limit) {
  line_sink sink;
  sink.keep = &into;
  sink.keep_limit = limit;
  return sink;
}
line_sink shown_lines(FILE* stream, const std::string& prefix, bool shown) {
  line_sink sink;
  sink.stream = stream;
  sink.prefix = &prefix;
  sink.shown = shown;
  return sink;
}

bool drain(int& fd, std::string& pending, const line_sink& sink) {
  std::string* const keep = sink.keep;
  char buffer[1 << 15];
  while (true) {
    if (keep && keep->size() + pending.size() > sink.keep_limit) return true;
    const ssize_t got = read(fd, buffer, sizeof buffer);
    if (got < 0 && errno == EINTR) continue;
    if (got < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) return true;
    if (got <= 0) {
      if (!pending.empty()) {
        if (keep)
          *keep += pending;
        else if (sink.shown)
          emit(sink.stream, *sink.prefix, pending);
        pending.clear();
      }
      close_fd(fd);
      return false;
    }
    pending.append(buffer, static_cast<std::size_t>(got));
    std::size_t start = 0;
    while (true) {
      const std::size_t nl = pending.find('\n', start);
      const bool too_long = nl == std::string::npos && pending.size() - start >= sink.whole_line;
      if (nl == std::string::npos && !too_long) break;
      const std::size_t end = too_long ? start + sink.whole_line : nl;
      const std::string_view line(pending.data() + start, end - start);
      const bool watchers_own = sink.watch && sink.watch(line);
      if (watchers_own) {
        // a node's started line: neither shown nor kept
      } else if (keep) {
        (*keep += line) += '\n';
      } else if (sink.shown) {
        emit(sink.stream, *sink.prefix, line);
      }
      start = too_long ? end : end + 1;
    }
    pending.erase(0, start);
  }
}

void event_loop::watch(std::size_t index) {
  open_.push_back(index);
  table_.add(children_[index].pid, index);
  dirty_ = true;
}

void event_loop::rebuild() {
  fds_.assign(1, pollfd{signal_pipe[0], POLLIN, 0});
  owner_.assign(1, {0, false});
  std::size_t kept = 0;
  for (const std::size_t index : open_) {
    const child& c = children_[index];
    if (c.out < 0 && c.err < 0) continue;  // both streams closed: no longer polled
    open_[kept++] = index;
    if (c.out >= 0) fds_.push_back({c.out, POLLIN, 0}), owner_.push_back({index, true});
    if (c.err >= 0) fds_.push_back({c.err, POLLIN, 0}), owner_.push_back({index, false});
  }
  open_.resize(kept);
  dirty_ = false;
}

progress_line::progress_line() : tty_(isatty(STDERR_FILENO) == 1) {}
void progress_line::put(const std::string& text) {
  std::string out = "\r\033[K" + text;
  std::fwrite(out.data(), 1, out.size(), stderr);
  std::fflush(stderr);
}
void progress_line::show(const std::string& text) {
  if (!tty_ || text == shown_) return;
  put(text);
  shown_ = text;
}
void progress_line::clear() {
  if (!tty_ || shown_.empty()) return;
  put("");
  shown_.clear();
}
progress_line progress;

void emit(FILE* stream, const std::string& prefix, std::string_view line) {
  progress.clear();
  std::string text = prefix;
  text.append(line.data(), line.size());
  text += '\n';
  std::fwrite(text.data(), 1, text.size(), stream);
  std::fflush(stream);
}

}  // namespace cli
