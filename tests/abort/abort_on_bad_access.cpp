// SPDX-License-Identifier: MIT
// Death tests: each mode breaks a contract, which must end the process through
// HETLAUNCH_ON_FAILURE (its message on stderr, then abort) or, for value() with exceptions, by
// throwing bad_result_access. The process exits 0 only when that happened and 1 when the call
// returned, so a contract that is not enforced fails the test; CTest also matches the message.
#include <hetlaunch/cluster.hpp>
#include <hetlaunch/torchrun.hpp>

#include <unistd.h>

#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <cstring>

namespace {
// abort() raises SIGABRT: the expected end, reported as a success.
extern "C" void on_abort(int) {
  static const char done[] = "death test: aborted as the contract requires\n";
  const ssize_t ignored = write(2, done, sizeof done - 1);
  (void)ignored;
  std::_Exit(0);
}
}  // namespace

int main(int argc, char** argv) {
  if (argc != 2) {
    std::fputs("usage: abort_on_bad_access precondition|agent_env|value\n", stderr);
    return 2;
  }
  std::signal(SIGABRT, on_abort);
  const hetlaunch::cluster c{{"a", 2}};
  const std::string mode = argv[1];
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
  } else {
    std::fprintf(stderr, "unknown mode '%s'\n", argv[1]);
    return 2;
  }
  std::fprintf(stderr, "death test: %s returned: its contract was not enforced\n", argv[1]);
  return 1;
}
