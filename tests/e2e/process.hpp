// SPDX-License-Identifier: MIT
// Starting and reaping the processes of an end-to-end test: no shell in between, every process in
// one process group so a hung job can be killed whole.
#ifndef HETLAUNCH_TESTS_E2E_PROCESS_HPP
#define HETLAUNCH_TESTS_E2E_PROCESS_HPP

#include <arpa/inet.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <signal.h>
#include <spawn.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <fstream>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

namespace e2e {

struct process {
  pid_t pid = -1;
  int status = -1;
  std::string log;
};

// Starts argv with `envp`, stdout and stderr into `log`, as the leader of a new process group
// (its children, torchrun's workers, stay in that group).
inline process start(const std::vector<std::string>& argv, char* const* envp,
                     const std::string& log) {
  std::vector<char*> args;
  for (const std::string& a : argv) args.push_back(const_cast<char*>(a.c_str()));
  args.push_back(nullptr);
  posix_spawn_file_actions_t files;
  posix_spawn_file_actions_init(&files);
  posix_spawn_file_actions_addopen(&files, 1, log.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
  posix_spawn_file_actions_adddup2(&files, 1, 2);
  posix_spawnattr_t attr;
  posix_spawnattr_init(&attr);
  posix_spawnattr_setflags(&attr, POSIX_SPAWN_SETPGROUP);
  posix_spawnattr_setpgroup(&attr, 0);
  process p;
  p.log = log;
  if (posix_spawnp(&p.pid, args[0], &files, &attr, args.data(), envp) != 0) p.pid = -1;
  posix_spawn_file_actions_destroy(&files);
  posix_spawnattr_destroy(&attr);
  return p;
}

// Waits for every process; after `timeout` kills their group and returns false.
inline bool wait_all(std::vector<process>& ps, std::chrono::seconds timeout) {
  const auto deadline = std::chrono::steady_clock::now() + timeout;
  std::size_t running = 0;
  for (const process& p : ps) running += p.pid > 0 ? 1 : 0;
  while (running > 0) {
    for (process& p : ps) {
      if (p.pid <= 0 || p.status != -1) continue;
      int status = 0;
      if (waitpid(p.pid, &status, WNOHANG) == p.pid) {
        p.status = status;
        --running;
      }
    }
    if (running > 0 && std::chrono::steady_clock::now() > deadline) {
      for (process& p : ps)
        if (p.pid > 0 && p.status == -1)
          kill(-p.pid, SIGKILL);  // its group: torchrun and its workers
      for (process& p : ps)
        if (p.pid > 0 && p.status == -1) waitpid(p.pid, &p.status, 0);
      return false;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
  }
  return true;
}

inline bool exited_ok(const process& p) {
  return p.pid > 0 && WIFEXITED(p.status) && WEXITSTATUS(p.status) == 0;
}

inline std::string read_file(const std::string& path) {
  std::ifstream in(path);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

// A TCP port that was free a moment ago on loopback (the kernel's choice for port 0).
inline int free_port() {
  const int fd = socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  socklen_t len = sizeof addr;
  int port = -1;
  if (fd >= 0 && bind(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr) == 0 &&
      getsockname(fd, reinterpret_cast<sockaddr*>(&addr), &len) == 0)
    port = ntohs(addr.sin_port);
  if (fd >= 0) close(fd);
  return port;
}

}  // namespace e2e

#endif
