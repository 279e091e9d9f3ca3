// SPDX-License-Identifier: MIT
// Run inside a worker: compares the worker's environment with the plan given as argv[1]
// ("host:nproc[:role],...") through hetlaunch::check_worker_env. Prints every disagreement and
// exits 1 when there is one.
#include <hetlaunch/torchrun.hpp>

#include <cstdio>
#include <cstdlib>

#include "plan.hpp"

int main(int argc, char** argv) {
  if (argc != 2) {
    std::fprintf(stderr, "usage: env_checker PLAN\n");
    return 2;
  }
  const hetlaunch::cluster plan = e2e::parse_plan(argv[1]);
  const auto problems =
      hetlaunch::check_worker_env(plan, [](const char* name) { return std::getenv(name); });
  for (const auto& d : problems) std::printf("%s\n", d.message().c_str());
  return problems.empty() ? 0 : 1;
}
