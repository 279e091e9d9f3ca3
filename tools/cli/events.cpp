// SPDX-License-Identifier: MIT
// `run --events FILE`: what happens to a job, one JSON object a line, for schedulers that must
// not scrape stderr. Each line is written with one call and flushed at once; its keys are only
// ever added to. The schema is docs/events.schema.json; docs/events.md describes each event.
#include "cli.hpp"

#include "process.hpp"

#include <fcntl.h>
#include <poll.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <ctime>

namespace cli {

const char* reason_of(node_ending ending) {
  switch (ending) {
    case node_ending::succeeded:
      return "succeeded";
    case node_ending::failed:
      return "failed";
    case node_ending::stopped:
      return "stopped";
    case node_ending::unreachable:
      return "unreachable";
    case node_ending::ended_before_start:
      return "ended_before_start";
  }
  return "failed";
}

const char* reason_of(job_ending ending) {
  switch (ending) {
    case job_ending::succeeded:
      return "succeeded";
    case job_ending::worker_failed:
      return "worker_failed";
    case job_ending::unreachable:
      return "unreachable";
    case job_ending::ended_before_start:
      return "ended_before_start";
    case job_ending::interrupted:
      return "interrupted";
    case job_ending::restarts_exhausted:
      return "restarts_exhausted";
    case job_ending::too_few_nodes:
      return "too_few_nodes";
    case job_ending::invalid_input:
      return "invalid_input";
    case job_ending::calibration_failed:
      return "calibration_failed";
    case job_ending::output_failed:
      return "output_failed";
    case job_ending::hung:
      return "hung";
    case job_ending::preflight_failed:
      return "preflight_failed";
  }
  return "worker_failed";
}

// --exit-status-by-reason: the contract's table (docs/failures.md). An interruption keeps
// 128 + its signal; the two endings of calibrate and of a lost output, which the table does not
// name, come after it.
int status_by_reason(job_ending ending, int status) {
  switch (ending) {
    case job_ending::succeeded:
      return 0;
    case job_ending::worker_failed:
      return 1;
    case job_ending::invalid_input:
      return 2;
    case job_ending::unreachable:
      return 3;
    case job_ending::restarts_exhausted:
      return 4;
    case job_ending::too_few_nodes:
      return 5;
    case job_ending::preflight_failed:
      return 6;
    case job_ending::hung:
      return 7;
    case job_ending::ended_before_start:
      return 8;
    case job_ending::calibration_failed:
      return 9;
    case job_ending::output_failed:
      return 10;
    case job_ending::interrupted:
      break;
  }
  return status;
}

event_log::~event_log() { close(0); }

result<completed> event_log::open(const std::string& path, const std::vector<std::string>& inputs) {
  close(0);
  const std::string where = concat("--events ", quoted(path));
  // O_NONBLOCK: opening a fifo with no reader fails at once (ENXIO) instead of waiting for one.
  const int fd = ::open(path.c_str(), O_WRONLY | O_CREAT | O_NONBLOCK | O_CLOEXEC, 0644);
  if (fd < 0)
    return invalid(
        concat(where, ": cannot write it: ",
               errno == ENXIO ? "it is a fifo that nobody reads" : std::strerror(errno)));
  struct stat st {};
  if (fstat(fd, &st) != 0) {
    const int why = errno;
    ::close(fd);
    return invalid(concat(where, ": ", std::strerror(why)));
  }
  if (S_ISREG(st.st_mode)) {
    // A file another run writes its events to: two runs' lines would interleave.
    if (flock(fd, LOCK_EX | LOCK_NB) != 0) {
      ::close(fd);
      return invalid(concat(where, ": another hetlaunch run writes its events there"));
    }
    for (const std::string& input : inputs) {
      struct stat in {};
      if (::stat(input.c_str(), &in) == 0 && in.st_dev == st.st_dev && in.st_ino == st.st_ino) {
        ::close(fd);
        return invalid(concat(where, ": it is the input ", quoted(input),
                              ", which writing the events would destroy"));
      }
    }
    if (ftruncate(fd, 0) != 0 || lseek(fd, 0, SEEK_SET) < 0) {
      const int why = errno;
      ::close(fd);
      return invalid(concat(where, ": cannot write it: ", std::strerror(why)));
    }
    fcntl(fd, F_SETFL, O_APPEND);  // a regular file takes every line whole, at its end
  }
  fd_ = fd;
  ended_ = write_failed_ = false;
  pending_.clear();
  return completed{};
}

void event_log::give_up(const char* why) {
  // After job_exited there is no job to go on: the write of the job's end failed.
  if (!write_failed_)
    std::fprintf(stderr, "hetlaunch: --events: %s%s\n", why, ended_ ? "" : "; the job goes on");
  write_failed_ = true;
  pending_.clear();
}

void event_log::pump() {
  while (fd_ >= 0 && !write_failed_ && !pending_.empty()) {
    const ssize_t n = ::write(fd_, pending_.data(), pending_.size());
    if (n > 0) {
      pending_.erase(0, static_cast<std::size_t>(n));
      continue;
    }
    if (n < 0 && errno == EINTR) continue;
    if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) return;  // the reader is slow
    give_up(n < 0 && errno == EPIPE ? "the reader went away" : "writing failed");
    if (n < 0 && errno != EPIPE)
      std::fprintf(stderr, "hetlaunch: --events: %s\n", std::strerror(errno));
  }
}

void event_log::close(double seconds) {
  if (fd_ < 0) return;
  const double until = now() + seconds;
  pump();
  while (!pending_.empty() && !write_failed_ && now() < until) {
    pollfd p{fd_, POLLOUT, 0};
    poll(&p, 1, 100);
    pump();
  }
  if (!pending_.empty() && !write_failed_)
    give_up("the reader did not take the last events in time");
  ::close(fd_);
  fd_ = -1;
}

// RFC 3339, UTC, milliseconds: 2026-12-03T06:48:40.123Z.
std::string event_time() {
  timespec now{};
  clock_gettime(CLOCK_REALTIME, &now);
  tm utc{};
  gmtime_r(&now.tv_sec, &utc);
  char text[96];
  std::snprintf(text, sizeof text, "%04d-%02d-%02dT%02d:%02d:%02d.%03dZ", utc.tm_year + 1900,
                utc.tm_mon + 1, utc.tm_mday, utc.tm_hour, utc.tm_min, utc.tm_sec,
                static_cast<int>(now.tv_nsec / 1000000));
  return text;
}

void event_log::write(const char* event, const std::string& fields) {
  if (fd_ < 0) return;
  const std::string line =
      concat("{\"event\": \"", event, "\", \"time\": \"", event_time(),
             "\", \"attempt\": ", attempt, fields.empty() ? "" : ", ", fields, "}\n");
  // A scheduler reading a full disk's error from stderr is better off than one whose run failed
  // because its log could not be written: a failed write is reported once, and the job goes on.
  // A reader that is slow (a pipe) gets the lines later, at most this much held back for it.
  constexpr std::size_t most_held = std::size_t{8} << 20;
  if (std::string_view(event) == "job_exited") ended_ = true;
  if (!write_failed_) {
    if (pending_.size() + line.size() > most_held)
      give_up("the reader takes nothing (8 MiB of events are waiting)");
    else
      pending_ += line;
    pump();
  }
}

void event_log::job_exited(int status, job_ending ending, std::optional<std::size_t> failed_node,
                           std::string_view failed_host) {
  if (fd_ < 0 || ended_) return;
  std::string fields = concat("\"status\": ", status, ", \"reason\": \"", reason_of(ending), "\"");
  // The first failure of the attempt that ended the job, where a node is to blame.
  const bool blames_a_node = ending == job_ending::worker_failed ||
                             ending == job_ending::unreachable ||
                             ending == job_ending::restarts_exhausted || ending == job_ending::hung;
  if (blames_a_node && failed_node)
    fields += concat(", \"failed_node\": ", *failed_node,
                     ", \"failed_host\": ", json_string(failed_host));
  write("job_exited", fields);
}

void event_log::node_exited(std::size_t node, std::string_view host, int status, node_ending ending,
                            const std::string& worker) {
  write("node_exited",
        concat("\"node\": ", node, ", \"host\": ", json_string(host), ", \"status\": ", status,
               ", \"reason\": \"", reason_of(ending), "\"", worker));
}

// The path of --events in a command line whose parsing failed (`hetlaunch run ... --events F`):
// read as the parser reads flags, from the flag table, up to the script (the first operand, or
// `--`), which with its arguments is the training script's own. A flag the table does not know
// is read as a switch: a value after it is an operand, which ends the reading.
std::optional<std::string> events_path_in(int argc, char** argv) {
  if (argc < 2 || (std::string_view(argv[1]) != "run" && std::string_view(argv[1]) != "calibrate"))
    return std::nullopt;
  const std::vector<flag_view> known = flag_list();
  std::optional<std::string> path;
  for (int i = 2; i < argc; ++i) {
    const std::string_view a = argv[i];
    if (a == "--" || a.empty() || a[0] != '-') break;
    const std::size_t eq = a.find('=');
    const std::string_view name = a.substr(0, eq);
    const flag_view* f = nullptr;
    for (const flag_view& k : known)
      if (name == k.name || (k.alias && name == k.alias)) f = &k;
    if (!f || !f->value || eq != std::string_view::npos) {
      if (f && name == "--events" && eq != std::string_view::npos)
        path = std::string(a.substr(eq + 1));
      continue;
    }
    if (i + 1 >= argc) break;
    if (name == "--events") path = argv[i + 1];
    ++i;
  }
  return path;
}

void record_usage_error(int argc, char** argv) {
  const std::optional<std::string> path = events_path_in(argc, argv);
  event_log events;
  if (!path || !events.open(*path)) return;
  events.job_exited(exit_usage, job_ending::invalid_input);
}

}  // namespace cli
