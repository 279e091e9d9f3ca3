// SPDX-License-Identifier: MIT
// `run --events FILE`: what happens to a job, one JSON object a line, for schedulers that must
// not scrape stderr. Each line is written with one call and flushed at once; its keys are only
// ever added to. The schema is docs/events.schema.json; docs/events.md describes each event.
#include "cli.hpp"

#include <cerrno>
#include <cstring>
#include <ctime>

namespace cli {

event_log job_events;

event_log::~event_log() { close(); }

result<completed> event_log::open(const std::string& path) {
  close();
  file_ = std::fopen(path.c_str(), "w");
  if (!file_)
    return invalid(concat("--events ", quoted(path), ": cannot write it: ", std::strerror(errno)));
  return completed{};
}

void event_log::close() {
  if (file_) std::fclose(file_);
  file_ = nullptr;
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
  if (!file_) return;
  const std::string line =
      concat("{\"event\": \"", event, "\", \"time\": \"", event_time(),
             "\", \"attempt\": ", attempt, fields.empty() ? "" : ", ", fields, "}\n");
  // A scheduler reading a full disk's error from stderr is better off than one whose run failed
  // because its log could not be written: a failed write is reported once, and the job goes on.
  if (std::fwrite(line.data(), 1, line.size(), file_) != line.size() || std::fflush(file_) != 0) {
    if (!write_failed_)
      std::fprintf(stderr, "hetlaunch: --events: writing failed: %s; the job goes on\n",
                   std::strerror(errno));
    write_failed_ = true;
  }
  if (std::string_view(event) == "job_exited") ended_ = true;
}

void event_log::job_exited(int status, const char* reason) {
  if (!file_ || ended_) return;
  write("job_exited", concat("\"status\": ", status, ", \"reason\": \"", reason, "\""));
}

void event_log::node_exited(std::size_t node, std::string_view host, int status,
                            const char* reason) {
  write("node_exited", concat("\"node\": ", node, ", \"host\": ", json_string(host),
                              ", \"status\": ", status, ", \"reason\": \"", reason, "\""));
}

// The path of --events in a command line whose parsing failed (`hetlaunch run ... --events F`):
// the flags before `--` only, as the parser reads them.
std::optional<std::string> events_path_in(int argc, char** argv) {
  if (argc < 2 || (std::string_view(argv[1]) != "run" && std::string_view(argv[1]) != "calibrate"))
    return std::nullopt;
  std::optional<std::string> path;
  for (int i = 2; i < argc; ++i) {
    const std::string_view a = argv[i];
    if (a == "--") break;
    if (a == "--events" && i + 1 < argc)
      path = argv[++i];
    else if (a.substr(0, 9) == "--events=")
      path = std::string(a.substr(9));
  }
  return path;
}

void record_usage_error(int argc, char** argv) {
  if (!job_events) {
    const std::optional<std::string> path = events_path_in(argc, argv);
    if (!path || !job_events.open(*path)) return;
  }
  job_events.job_exited(exit_usage, "invalid_input");
}

}  // namespace cli
