// SPDX-License-Identifier: MIT
// End-to-end proof against a real torchrun on loopback: one torchrun agent per node, started with
// the argv hetlaunch builds; every worker records its environment and joins a gloo all_reduce;
// every recorded variable must equal hetlaunch's prediction (worker_env), and the sum must be
// right.
//
// usage: torchrun_e2e CASE WORKER_PY ENV_CHECKER WORK_DIR
//   CASE: mixed | roles | single | restart | wrong-nproc | passthrough | virtual
//         | direct DIRECT_LAUNCHER
// Beyond the variables worker_env lists, every variable a worker has that its agent's environment
// does not is compared with worker_env_from_agent and worker_runtime_variables.
#include <hetlaunch/torchrun.hpp>

#include <fnmatch.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <map>
#include <string>
#include <vector>

#include "plan.hpp"
#include "process.hpp"

extern char** environ;

namespace {

int failures = 0;
void fail(const std::string& what) {
  std::printf("FAIL: %s\n", what.c_str());
  ++failures;
}

// The torch the workers import, for the variables whose names depend on it.
hetlaunch::torch_version installed_torch() {
  FILE* p = popen("/usr/bin/python3 -c 'import torch; print(torch.__version__)' 2>/dev/null", "r");
  int major = 0, minor = 0;
  if (p == nullptr || std::fscanf(p, "%d.%d", &major, &minor) != 2) {
    std::printf("cannot import torch with /usr/bin/python3\n");
    std::exit(1);
  }
  pclose(p);
  return {major, minor};
}

// The test's environment without what would change torchrun's defaults for the compared keys.
std::vector<const char*> clean_base() {
  std::vector<const char*> base;
  for (char** e = environ; *e; ++e) {
    const std::string_view entry(*e);
    if (entry.rfind("OMP_NUM_THREADS=", 0) == 0 ||
        entry.rfind("NCCL_ASYNC_ERROR_HANDLING=", 0) == 0 ||
        entry.rfind("TORCH_NCCL_ASYNC_ERROR_HANDLING=", 0) == 0 || entry.rfind("PET_", 0) == 0)
      continue;
    base.push_back(*e);
  }
  base.push_back(nullptr);
  return base;
}

std::map<std::string, std::string> read_env_file(const std::string& path) {
  std::map<std::string, std::string> out;
  const std::string text = e2e::read_file(path);
  for (const std::string& line : e2e::split(text, '\n')) {
    const auto eq = line.find('=');
    if (eq != std::string::npos) out[line.substr(0, eq)] = line.substr(eq + 1);
  }
  return out;
}

const char* const compared[] = {"LOCAL_RANK",
                                "RANK",
                                "GROUP_RANK",
                                "ROLE_RANK",
                                "ROLE_NAME",
                                "LOCAL_WORLD_SIZE",
                                "WORLD_SIZE",
                                "GROUP_WORLD_SIZE",
                                "ROLE_WORLD_SIZE",
                                "MASTER_ADDR",
                                "MASTER_PORT",
                                "TORCHELASTIC_RESTART_COUNT",
                                "TORCHELASTIC_MAX_RESTARTS",
                                "TORCHELASTIC_RUN_ID",
                                "TORCHELASTIC_USE_AGENT_STORE",
                                "NCCL_ASYNC_ERROR_HANDLING",
                                "TORCH_NCCL_ASYNC_ERROR_HANDLING",
                                "OMP_NUM_THREADS"};

// Every worker's recorded variables against the prediction, and the all_reduce sum.
void compare_workers(const hetlaunch::cluster& c, const std::string& dir,
                     const std::function<hetlaunch::environment(std::size_t, int)>& predict) {
  const long long world = c.world_size();
  for (std::size_t node = 0; node < c.node_count(); ++node)
    for (int l = 0; l < c.nproc(node); ++l) {
      const int rank = c.global_rank(node, l);
      const auto got = read_env_file(hetlaunch::detail::concat(dir, "/worker-", rank, ".env"));
      if (got.empty()) {
        fail(hetlaunch::detail::concat("worker ", rank, " left no record"));
        continue;
      }
      const hetlaunch::environment expected = predict(node, l);
      for (const char* key : compared) {
        std::string want = "<unset>";
        for (const auto& v : expected)
          if (v.first == key) want = v.second;
        const auto it = got.find(key);
        const std::string have = it == got.end() ? "<missing>" : it->second;
        if (have != want)
          fail(hetlaunch::detail::concat("node ", node, " local rank ", l, ": ", key, " is '", have,
                                         "', predicted '", want, "'"));
      }
      if (got.count("SUM") == 0 || std::stoll(got.at("SUM")) != world * (world + 1) / 2)
        fail(hetlaunch::detail::concat("rank ", rank, ": all_reduce sum is not ",
                                       world * (world + 1) / 2));
    }
}

// The environment given to torchrun, as name -> value.
std::map<std::string, std::string> as_map(const char* const* envp) {
  std::map<std::string, std::string> out;
  for (; *envp; ++envp) {
    const std::string entry(*envp);
    const auto eq = entry.find('=');
    if (eq != std::string::npos) out[entry.substr(0, eq)] = entry.substr(eq + 1);
  }
  return out;
}

// Every variable a worker has that its agent's environment does not (or has with another value)
// must be predicted: by worker_env_from_agent, with its value, or by worker_runtime_variables,
// with its value's pattern. And every predicted variable must be there.
void compare_whole_environments(const hetlaunch::cluster& c, const std::string& dir,
                                const hetlaunch::launch_options& o,
                                const std::map<std::string, std::string>& agent, int restart) {
  hetlaunch::environment agent_env(agent.begin(), agent.end());
  for (std::size_t node = 0; node < c.node_count(); ++node)
    for (int l = 0; l < c.nproc(node); ++l) {
      const int rank = c.global_rank(node, l);
      const std::string where = hetlaunch::detail::concat("node ", node, " local rank ", l, ": ");
      std::map<std::string, std::string> got;
      for (const std::string& entry :
           e2e::split(e2e::read_file(hetlaunch::detail::concat(dir, "/worker-", rank, ".environ")),
                      '\0')) {
        const auto eq = entry.find('=');
        if (eq != std::string::npos) got[entry.substr(0, eq)] = entry.substr(eq + 1);
      }
      if (got.empty()) {
        fail(where + "left no environment");
        continue;
      }
      std::map<std::string, std::string> predicted;
      for (const auto& v : hetlaunch::worker_env_from_agent(c, node, l, o, agent_env, restart))
        predicted[v.first] = v.second;
      std::map<std::string, std::string> patterns;
      for (const auto& v : hetlaunch::worker_runtime_variables(l, o, restart))
        patterns[v.name] = v.pattern;
      for (const auto& [name, value] : predicted) {
        const auto it = got.find(name);
        if (it == got.end())
          fail(hetlaunch::detail::concat(where, name, " is missing, predicted '", value, "'"));
        else if (it->second != value)
          fail(hetlaunch::detail::concat(where, name, " is '", it->second, "', predicted '", value,
                                         "'"));
      }
      for (const auto& [name, pattern] : patterns) {
        const auto it = got.find(name);
        if (it == got.end())
          fail(hetlaunch::detail::concat(where, name, " is missing, predicted a value like '",
                                         pattern, "'"));
        else if (fnmatch(pattern.c_str(), it->second.c_str(), 0) != 0)
          fail(hetlaunch::detail::concat(where, name, " is '", it->second, "', not like '", pattern,
                                         "'"));
      }
      for (const auto& [name, value] : got) {
        const auto in_agent = agent.find(name);
        const bool added = in_agent == agent.end() || in_agent->second != value;
        if (added && predicted.count(name) == 0 && patterns.count(name) == 0)
          fail(hetlaunch::detail::concat(where, "torchrun added ", name, "='", value,
                                         "', which is not predicted"));
      }
    }
}

struct job {
  std::vector<e2e::process> agents;
  bool finished = false;
};

// One torchrun agent per node, each with the argv hetlaunch builds for it.
job run_torchrun(const hetlaunch::cluster& c, const hetlaunch::launch_options& o,
                 const std::string& dir, int wrong_node = -1, int wrong_nproc = 0,
                 const hetlaunch::environment& agent_extra = {},
                 const std::string& extra_torchrun_arg = "") {
  std::vector<const char*> base = clean_base();
  const hetlaunch::spawn_environment env(agent_extra, base.data());
  job j;
  for (std::size_t node = 0; node < c.node_count(); ++node) {
    std::vector<std::string> argv = hetlaunch::torchrun_argv(c, node, o);
    if (static_cast<int>(node) == wrong_node)  // simulate a node started with the wrong count
      for (std::string& a : argv)
        if (a.rfind("--nproc_per_node=", 0) == 0)
          a = hetlaunch::detail::concat("--nproc_per_node=", wrong_nproc);
    // An option hetlaunch refuses to plan with, put in by hand to show what torchrun does with it.
    if (!extra_torchrun_arg.empty())
      for (std::size_t i = 0; i < argv.size(); ++i)
        if (argv[i] == o.script) {
          argv.insert(argv.begin() + static_cast<std::ptrdiff_t>(i), extra_torchrun_arg);
          break;
        }
    std::printf("  node %zu: %s\n", node, hetlaunch::shell_join(argv).c_str());
    j.agents.push_back(
        e2e::start(argv, env.envp(), hetlaunch::detail::concat(dir, "/agent-", node, ".log")));
  }
  j.finished = e2e::wait_all(j.agents, std::chrono::seconds(240));
  return j;
}

void show_logs(const job& j) {
  for (const e2e::process& p : j.agents)
    std::printf("---- %s\n%s\n", p.log.c_str(), e2e::read_file(p.log).c_str());
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 5) {
    std::fprintf(stderr,
                 "usage: torchrun_e2e CASE WORKER_PY ENV_CHECKER WORK_DIR [DIRECT_LAUNCHER]\n");
    return 2;
  }
  const std::string which = argv[1], worker = argv[2], checker = argv[3], dir = argv[4];
  hetlaunch::launch_options o;
  o.master_addr = "127.0.0.1";
  o.master_port = e2e::free_port();
  o.rdzv_id = "e2e-" + which;
  o.torch = installed_torch();
  o.script = worker;
  // Debian's torch 1.13 on Python 3.11 crashes on the default --redirects/--tee values. With
  // them, torchrun writes the streams under --log_dir; without one it leaves a torchelastic_*
  // directory in TMPDIR for every job.
  o.torchrun_args = {"--redirects", "2", "--tee", "2", "--log_dir", dir + "/torchelastic"};
  o.program = {"/usr/bin/torchrun"};

  // Loopback addresses stand for distinct hosts; every one of them is this machine.
  std::map<std::string, hetlaunch::cluster> cases = {
      {"mixed", {{"127.0.0.1", 3}, {"127.0.0.2", 1}, {"127.0.0.3", 2}}},
      {"roles", {{"127.0.0.1", 2, "trainer"}, {"127.0.0.2", 1, "ps"}, {"127.0.0.3", 2, "trainer"}}},
      {"single", {{"127.0.0.1", 3}}},
      {"restart", {{"127.0.0.1", 2}, {"127.0.0.2", 1}}},
      {"wrong-nproc", {{"127.0.0.1", 2}, {"127.0.0.2", 1}}},
      {"direct", {{"127.0.0.1", 3}, {"127.0.0.2", 1}, {"127.0.0.3", 2}}},
      {"passthrough", {{"127.0.0.1", 2}, {"127.0.0.2", 1}}},
      {"virtual", {{"127.0.0.1", 3}, {"127.0.0.2", 1}}},
  };
  if (cases.count(which) == 0) {
    std::fprintf(stderr, "unknown case %s\n", which.c_str());
    return 2;
  }
  const hetlaunch::cluster& c = cases.at(which);
  o.script_args = {dir, checker, e2e::format_plan(c)};
  std::printf("%s: nodes %s, world size %d, torch %d.%d\n", which.c_str(),
              e2e::format_plan(c).c_str(), c.world_size(), o.torch.major, o.torch.minor);

  if (which == "wrong-nproc") {
    // Node 1 is started with 2 workers instead of 1: the workers' own check must name it.
    const job j = run_torchrun(c, o, dir, 1, 2);
    if (!j.finished) fail("the job did not end");
    for (const auto& a : j.agents)
      if (e2e::exited_ok(a)) fail("an agent exited 0 although its workers found a mismatch");
    std::string reports;
    for (int rank = 0; rank < 4; ++rank)
      reports += e2e::read_file(hetlaunch::detail::concat(dir, "/check-", rank, ".txt"));
    std::printf("%s", reports.c_str());
    for (
        const char* expected :
        {"node 1 ('127.0.0.2'): started with LOCAL_WORLD_SIZE 2 (--nproc_per_node), but the plan gives it 1 workers",
         "WORLD_SIZE is 4 but the plan's world size is 3"})
      if (reports.find(expected) == std::string::npos)
        fail(hetlaunch::detail::concat("no report: ", expected));
  } else if (which == "direct") {
    // A launcher that starts every worker itself (examples/direct_launcher), no torchrun.
    if (argc < 6) return 2;
    std::vector<const char*> base = clean_base();
    const hetlaunch::spawn_environment env({}, base.data());
    std::vector<e2e::process> launcher = {
        e2e::start({argv[5], hetlaunch::detail::concat(o.master_port), "/usr/bin/python3", worker,
                    dir, checker, e2e::format_plan(c)},
                   env.envp(), dir + "/launcher.log")};
    if (!e2e::wait_all(launcher, std::chrono::seconds(240)) || !e2e::exited_ok(launcher[0])) {
      fail("the direct launcher's job did not complete");
      std::printf("%s\n", e2e::read_file(dir + "/launcher.log").c_str());
    }
    // The launcher names the NCCL variable for the torch generation of its own options.
    hetlaunch::launch_options launcher_options = o;
    launcher_options.torch = hetlaunch::launch_options{}.torch;
    compare_workers(c, dir, [&](std::size_t node, int l) {
      return hetlaunch::direct_worker_env(c, node, l, launcher_options);
    });
  } else if (which == "virtual") {
    // torch 2.14's --virtual-local-rank: hetlaunch refuses it, and this shows why.
    hetlaunch::launch_options with = o;
    with.torchrun_args.push_back("--virtual-local-rank");
    const auto refused = hetlaunch::try_torchrun_argv(c, 0, with);
    if (refused || refused.error().code != hetlaunch::errc::virtual_local_rank)
      fail("--virtual-local-rank in torchrun_args is not refused");
    else
      std::printf("refused: %s\n", refused.error().message().c_str());
    if (o.torch.code() < 214) {
      std::printf("virtual: torch %d.%d has no --virtual-local-rank; only the refusal is checked\n",
                  o.torch.major, o.torch.minor);
      return failures ? 1 : 0;
    }
    o.script_args = {dir};  // no check command: the workers' LOCAL_RANK is not the plan's
    const job j = run_torchrun(c, o, dir, -1, 0, {}, "--virtual-local-rank");
    bool ok = j.finished;
    for (const auto& a : j.agents) ok = ok && e2e::exited_ok(a);
    if (!ok) {
      fail("the torchrun job did not complete");
      show_logs(j);
    }
    for (std::size_t node = 0; node < c.node_count(); ++node)
      for (int l = 0; l < c.nproc(node); ++l) {
        const auto got = read_env_file(
            hetlaunch::detail::concat(dir, "/worker-", c.global_rank(node, l), ".env"));
        const std::string local = got.count("LOCAL_RANK") ? got.at("LOCAL_RANK") : "<missing>";
        const std::string devices =
            got.count("CUDA_VISIBLE_DEVICES") ? got.at("CUDA_VISIBLE_DEVICES") : "<missing>";
        if (local != "0" || devices != std::to_string(l))
          fail(hetlaunch::detail::concat("node ", node, " local rank ", l, ": LOCAL_RANK=", local,
                                         " CUDA_VISIBLE_DEVICES=", devices, ", expected 0 and ",
                                         l));
      }
    if (!failures)
      std::printf(
          "virtual: every worker has LOCAL_RANK=0 and CUDA_VISIBLE_DEVICES=<its local rank>\n");
  } else if (which == "passthrough") {
    // torchrun passes these on from its own environment rather than setting its defaults.
    const hetlaunch::environment agent_extra = {
        {o.torch.code() >= 202 ? "TORCH_NCCL_ASYNC_ERROR_HANDLING" : "NCCL_ASYNC_ERROR_HANDLING",
         "3"},
        {"OMP_NUM_THREADS", "2"},
        {"PET_SIGNALS_TO_HANDLE", "SIGTERM,SIGUSR1"}};
    const job j = run_torchrun(c, o, dir, -1, 0, agent_extra);
    bool ok = j.finished;
    for (const auto& a : j.agents) ok = ok && e2e::exited_ok(a);
    if (!ok) {
      fail("the torchrun job did not complete");
      show_logs(j);
    }
    std::vector<const char*> base = clean_base();
    const hetlaunch::spawn_environment env(agent_extra, base.data());
    const auto agent = as_map(env.envp());
    hetlaunch::environment agent_env(agent.begin(), agent.end());
    compare_workers(c, dir, [&](std::size_t node, int l) {
      return hetlaunch::worker_env_from_agent(c, node, l, o, agent_env);
    });
    compare_whole_environments(c, dir, o, agent, 0);
  } else {
    const bool restart = which == "restart";
    if (restart) {
      o.max_restarts = 1;
      o.script_args.push_back("--crash-once");
    }
    const job j = run_torchrun(c, o, dir);
    bool ok = j.finished;
    for (const auto& a : j.agents) ok = ok && e2e::exited_ok(a);
    if (!ok) {
      fail("the torchrun job did not complete");
      show_logs(j);
    }
    // After one failure restart, TORCHELASTIC_RESTART_COUNT is 1 in every restarted worker.
    compare_workers(c, dir, [&](std::size_t node, int l) {
      return hetlaunch::worker_env(c, node, l, o, restart ? 1 : 0);
    });
    std::vector<const char*> base = clean_base();
    const hetlaunch::spawn_environment env({}, base.data());
    compare_whole_environments(c, dir, o, as_map(env.envp()), restart ? 1 : 0);
  }
  std::printf("%s: %s\n", which.c_str(),
              failures ? "FAILED" : "every variable and the sum as predicted");
  return failures ? 1 : 0;
}
