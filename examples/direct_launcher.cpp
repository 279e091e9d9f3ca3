// SPDX-License-Identifier: MIT
// A custom launcher that starts every worker of a heterogeneous job itself, without torchrun:
// each worker gets the environment torchrun would give it (launch_plan::direct_worker_env), but no
// agent store, so worker RANK 0 hosts the rendezvous store at MASTER_ADDR:MASTER_PORT.
//
// This demo runs all nodes' workers on this machine (loopback addresses stand for the hosts); a
// real launcher would start each node's workers on that node, e.g. through ssh or a scheduler.
//
// usage: direct_launcher PORT PYTHON SCRIPT [ARGS...]    ("${local_rank}" in ARGS is substituted)
#include <hetlaunch/plan.hpp>
#include <hetlaunch/spawn.hpp>

#include <signal.h>
#include <spawn.h>
#include <sys/wait.h>

#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

extern char** environ;

int main(int argc, char** argv) {
  if (argc < 4) {
    std::fprintf(stderr, "usage: direct_launcher PORT PYTHON SCRIPT [ARGS...]\n");
    return 2;
  }
  const hetlaunch::cluster topology{{"127.0.0.1", 3}, {"127.0.0.2", 1}, {"127.0.0.3", 2}};
  hetlaunch::launch_options options;
  options.master_addr = "127.0.0.1";
  options.master_port = std::atoi(argv[1]);
  options.python = argv[2];
  options.script = argv[3];
  options.script_args.assign(argv + 4, argv + argc);
  // Validated once, for the workers' environments only: no torchrun runs here, so its program
  // and arguments do not matter. Every worker's environment is then read from the plan.
  const auto plan =
      hetlaunch::make_plan(topology, options, hetlaunch::plan_outputs::worker_environments);
  if (!plan) {
    for (const hetlaunch::diagnostic& d : plan.error())
      std::fprintf(stderr, "direct_launcher: %s\n", d.message().c_str());
    return 2;
  }

  std::vector<pid_t> workers;
  for (std::size_t node = 0; node < topology.node_count(); ++node) {
    for (int local = 0; local < topology.nproc(node); ++local) {
      const hetlaunch::spawn_environment env(plan->direct_worker_env(node, local), environ);
      const std::vector<std::string> command = hetlaunch::worker_argv(local, options);
      std::vector<char*> args;
      for (const std::string& a : command) args.push_back(const_cast<char*>(a.c_str()));
      args.push_back(nullptr);
      pid_t pid = 0;
      if (posix_spawnp(&pid, args[0], nullptr, nullptr, args.data(), env.envp()) != 0) {
        std::fprintf(stderr, "direct_launcher: cannot start %s\n", args[0]);
        for (pid_t w : workers) kill(w, SIGTERM);
        return 1;
      }
      std::printf("node %zu (%s) local rank %d: RANK %d, pid %d\n", node,
                  std::string(topology.node(node).host).c_str(), local,
                  topology.global_rank(node, local), static_cast<int>(pid));
      workers.push_back(pid);
    }
  }
  std::fflush(stdout);
  int failed = 0;
  for (std::size_t done = 0; done < workers.size(); ++done) {
    int status = 0;
    const pid_t pid = wait(&status);
    if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) {
      // One worker gone means the collective never completes: stop the others.
      std::fprintf(stderr, "direct_launcher: worker pid %d failed; stopping the job\n",
                   static_cast<int>(pid));
      for (pid_t w : workers)
        if (w != pid) kill(w, SIGTERM);
      ++failed;
    }
  }
  std::printf("direct_launcher: %zu workers, %s\n", workers.size(),
              failed ? "FAILED" : "all completed");
  return failed ? 1 : 0;
}
