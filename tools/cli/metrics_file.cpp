// SPDX-License-Identifier: MIT
// run --metrics FILE: the exposition metrics.hpp makes, put in place whole.
#include "job.hpp"

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>

namespace cli {

void metrics_file::write() {
  if (!path_) return;
  const std::string text = hetlaunch::metrics_exposition(metrics);
  // Beside FILE, so that the rename stays within one file system; hidden and without ".prom", so
  // that the collector never reads it half written.
  const std::size_t slash = path_->rfind('/');
  const std::string dir = slash == std::string::npos ? "" : path_->substr(0, slash + 1);
  const std::string base = slash == std::string::npos ? *path_ : path_->substr(slash + 1);
  const std::string temporary = concat(dir, ".", base, ".", getpid(), ".tmp");
  const int fd = open(temporary.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  bool written = fd >= 0;
  for (std::size_t at = 0; written && at < text.size();) {
    const ssize_t n = ::write(fd, text.data() + at, text.size() - at);
    if (n < 0 && errno == EINTR) continue;
    written = n > 0;
    if (written) at += static_cast<std::size_t>(n);
  }
  const int why = errno;
  if (fd >= 0 && close(fd) != 0) written = false;
  if (written && rename(temporary.c_str(), path_->c_str()) == 0) return;
  const int failed = written ? errno : why;
  if (fd >= 0) unlink(temporary.c_str());
  if (std::exchange(failure_said_, true)) return;
  progress.clear();
  std::fprintf(stderr, "hetlaunch: --metrics %s: cannot write it: %s (the job goes on)\n",
               quoted(*path_).c_str(), std::strerror(failed));
}

}  // namespace cli
