// SPDX-License-Identifier: MIT
// Run as a death test: each mode must end the process through HETLAUNCH_ON_FAILURE (abort), which
// the test expects. Exits 0, which fails the test, if the contract were not enforced.
#include <hetlaunch/cluster.hpp>
#include <hetlaunch/torchrun.hpp>

#include <csignal>
#include <cstdlib>
#include <cstring>

namespace {
// abort() raises SIGABRT; turn it into a plain failing exit so CTest reports a clean failure
// instead of a crash.
extern "C" void on_abort(int) { std::_Exit(3); }
}  // namespace

int main(int argc, char** argv) {
  std::signal(SIGABRT, on_abort);
  const hetlaunch::cluster c{{"a", 2}};
  if (argc > 1 && std::strcmp(argv[1], "precondition") == 0) return c.nproc(5);
  if (argc > 1 && std::strcmp(argv[1], "agent_env") == 0) return static_cast<int>(hetlaunch::agent_env(c, 5).size());
#if HETLAUNCH_USE_EXCEPTIONS
  try {
    return c.try_nproc(5).value();
  } catch (const hetlaunch::bad_result_access&) {
    std::abort();  // the exception carries the error; either way the caller does not go on
  }
#else
  return c.try_nproc(5).value();
#endif
}
