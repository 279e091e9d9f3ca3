// SPDX-License-Identifier: MIT
// Death tests: each mode breaks a contract, which must end the process through
// HETLAUNCH_ON_FAILURE (its message on stderr, then abort) or, for value() with exceptions, by
// throwing bad_result_access. The mode runs in a child whose stderr the parent reads: the test
// passes (exit 0) only when the child ended as the contract says and printed the library's own
// message, so every build system that runs it checks the same thing.
#include <hetlaunch/cluster.hpp>
#include <hetlaunch/worker_env.hpp>

#include <sys/wait.h>
#include <unistd.h>

#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>

namespace {
// abort() raises SIGABRT: the expected end, reported as a success.
extern "C" void on_abort(int) {
  static const char done[] = "death test: aborted as the contract requires\n";
  const ssize_t ignored = write(2, done, sizeof done - 1);
  (void)ignored;
  std::_Exit(0);
}

// Breaks the contract of `mode`; returns only when it was not enforced.
int break_contract(const char* mode_name) {
  std::signal(SIGABRT, on_abort);
  const hetlaunch::cluster c{{"a", 2}};
  const std::string mode = mode_name;
  if (mode == "precondition") {
    (void)c.nproc(5);
  } else if (mode == "agent_env") {
    (void)hetlaunch::agent_env(c, 5);
  } else if (mode == "value") {
#if HETLAUNCH_USE_EXCEPTIONS
    try {
      (void)c.try_nproc(5).value();
    } catch (const hetlaunch::bad_result_access& e) {
      std::fprintf(stderr, "%s\ndeath test: threw bad_result_access as the contract requires\n",
                   e.what());
      return 0;
    }
#else
    (void)c.try_nproc(5).value();
#endif
  }
  std::fprintf(stderr, "death test: %s returned: its contract was not enforced\n", mode_name);
  return 1;
}

// What the library must have said, and how the process ended.
struct expectation {
  const char* mode;
  const char* message;
  const char* ending;
};
constexpr expectation expectations[] = {
    {"precondition", "hetlaunch: nproc(i): node index out of range\n",
     "death test: aborted as the contract requires\n"},
    {"agent_env", "hetlaunch: agent_env(c, node): node index out of range\n",
     "death test: aborted as the contract requires\n"},
#if HETLAUNCH_USE_EXCEPTIONS
    {"value", "node index 5 is out of range",
     "death test: threw bad_result_access as the contract requires\n"},
#else
    {"value", "node index 5 is out of range", "death test: aborted as the contract requires\n"},
#endif
};
}  // namespace

int main(int argc, char** argv) {
  const expectation* wanted = nullptr;
  for (const expectation& e : expectations)
    if (argc == 2 && std::strcmp(argv[1], e.mode) == 0) wanted = &e;
  if (!wanted) {
    std::fputs("usage: abort_on_bad_access precondition|agent_env|value\n", stderr);
    return 2;
  }
  int pipe_ends[2];
  if (pipe(pipe_ends) != 0) return 2;
  const pid_t child = fork();
  if (child < 0) return 2;
  if (child == 0) {
    dup2(pipe_ends[1], 2);
    close(pipe_ends[0]);
    close(pipe_ends[1]);
    std::_Exit(break_contract(wanted->mode));
  }
  close(pipe_ends[1]);
  std::string said;
  char buffer[4096];
  for (ssize_t n; (n = read(pipe_ends[0], buffer, sizeof buffer)) != 0;) {
    if (n > 0) said.append(buffer, static_cast<std::size_t>(n));
  }
  int status = 0;
  waitpid(child, &status, 0);
  std::fputs(said.c_str(), stderr);
  const std::size_t message = said.find(wanted->message);
  const bool ok = WIFEXITED(status) && WEXITSTATUS(status) == 0 && message != std::string::npos &&
                  said.find(wanted->ending, message) != std::string::npos;
  std::fprintf(stderr, "%s: %s\n", ok ? "ok" : "FAIL",
               ok ? "the contract ended the call with the library's message"
                  : "expected the library's message, then the contract's end");
  return ok ? 0 : 1;
}
