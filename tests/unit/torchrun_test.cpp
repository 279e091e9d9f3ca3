// SPDX-License-Identifier: MIT
// torchrun.hpp: each node's command line and each worker's environment, pinned to golden values
// that the end-to-end tests check against a real torchrun.
#include <doctest/doctest.h>

#include <hetlaunch/plan.hpp>
#include <hetlaunch/torchrun.hpp>

#include <cstdio>
#include <cstdint>
#include <cstdlib>
#include <string>
#include <tuple>
#include <vector>

using hetlaunch::cluster;
using hetlaunch::environment;
using hetlaunch::launch_options;
using strings = std::vector<std::string>;

namespace {

const cluster gpus{{"gpu-a", 8}, {"gpu-b", 4}};

launch_options train() {
  launch_options o;
  o.script = "train.py";
  o.script_args = {"--epochs", "3"};
  return o;
}

std::string value_of(const environment& env, const std::string& name) {
  for (const auto& v : env)
    if (v.first == name) return v.second;
  return "<unset>";
}

// Runs `sh -c TEXT` and returns the NUL-separated fields it printed.
strings run_sh(const std::string& text) {
  FILE* p = popen(text.c_str(), "r");
  REQUIRE(p != nullptr);
  std::string out;
  char buf[4096];
  std::size_t n;
  while ((n = fread(buf, 1, sizeof buf, p)) > 0) out.append(buf, n);
  CHECK(pclose(p) == 0);
  strings fields;
  std::size_t start = 0;
  for (std::size_t i = 0; i < out.size(); ++i)
    if (out[i] == '\0') {
      fields.push_back(out.substr(start, i - start));
      start = i + 1;
    }
  return fields;
}

}  // namespace

TEST_SUITE("torchrun") {
  TEST_CASE("each node gets its own --nproc_per_node, static rendezvous on node 0 by default") {
    CHECK(hetlaunch::torchrun_argv(gpus, 0, train()) ==
          strings{"torchrun", "--nnodes=2", "--node_rank=0", "--nproc_per_node=8",
                  "--max_restarts=0", "--master_addr=gpu-a", "--master_port=29500", "train.py",
                  "--epochs", "3"});
    CHECK(hetlaunch::torchrun_argv(gpus, 1, train()) ==
          strings{"torchrun", "--nnodes=2", "--node_rank=1", "--nproc_per_node=4",
                  "--max_restarts=0", "--master_addr=gpu-a", "--master_port=29500", "train.py",
                  "--epochs", "3"});
  }

  TEST_CASE("every option, dash spellings, extra flags before the script, -m") {
    const cluster c{{"t0", 2, "trainer"}, {"p0", 1, "ps"}};
    launch_options o = train();
    o.master_addr = "10.0.0.1";
    o.master_port = 29612;
    o.rdzv_id = "job1";
    o.max_restarts = 2;
    o.program = {"python3", "-m", "torch.distributed.run"};
    o.torchrun_args = {"--redirects", "2", "--tee", "2"};
    o.module = true;
    o.script = "my.train";
    o.flags = hetlaunch::flag_style::dash;
    o.rendezvous_timeout = 30;
    CHECK(hetlaunch::torchrun_argv(c, 1, o) == strings{"python3",
                                                       "-m",
                                                       "torch.distributed.run",
                                                       "--nnodes=2",
                                                       "--node-rank=1",
                                                       "--nproc-per-node=1",
                                                       "--role=ps",
                                                       "--max-restarts=2",
                                                       "--master-addr=10.0.0.1",
                                                       "--master-port=29612",
                                                       "--rdzv-conf=timeout=30",
                                                       "--rdzv-id=job1",
                                                       "--redirects",
                                                       "2",
                                                       "--tee",
                                                       "2",
                                                       "-m",
                                                       "my.train",
                                                       "--epochs",
                                                       "3"});
  }

  TEST_CASE("c10d: an endpoint, IPv6 bracketed, no --node_rank") {
    launch_options o = train();
    o.backend = hetlaunch::rendezvous::c10d;
    o.rdzv_id = "job7";
    o.master_addr = "fe80::1";
    o.master_port = 29400;
    CHECK(hetlaunch::torchrun_argv(gpus, 1, o) ==
          strings{"torchrun", "--nnodes=2", "--nproc_per_node=4", "--max_restarts=0",
                  "--rdzv_backend=c10d", "--rdzv_endpoint=[fe80::1]:29400", "--rdzv_id=job7",
                  "train.py", "--epochs", "3"});
    o.master_addr = "[::1]";
    CHECK(hetlaunch::torchrun_argv(gpus, 0, o)[5] == "--rdzv_endpoint=[::1]:29400");
  }

  TEST_CASE("with c10d, ranks are decided at rendezvous: no worker environment is promised") {
    launch_options o = train();
    o.backend = hetlaunch::rendezvous::c10d;
    o.rdzv_id = "job";
    const auto r = hetlaunch::try_worker_env(gpus, 0, 0, o);
    REQUIRE_FALSE(r);
    CHECK(r.error().code == hetlaunch::errc::ranks_decided_at_rendezvous);
    CHECK(r.error().message().find("cannot be known in advance") != std::string::npos);
  }

  TEST_CASE("bad launch options are refused with every problem named") {
    launch_options o;
    o.master_port = 0;
    o.master_addr = "a b";
    o.backend = hetlaunch::rendezvous::c10d;
    o.max_restarts = -1;
    o.flags = hetlaunch::flag_style::dash;
    o.torch = {1, 13};
    strings messages;
    for (const auto& d : hetlaunch::validate_launch(gpus, 5, o)) messages.push_back(d.message());
    CHECK(
        messages ==
        strings{
            "node index 5 is out of range: the cluster has 2 nodes",
            "master_port must be 1..65535, got 0",
            "master_addr 'a b' is not a valid host name or IP literal",
            "the c10d rendezvous needs an rdzv_id shared by every node of the job",
            "max_restarts must be 0 or more, got -1",
            "dash flag spellings (--nproc-per-node) need torch 2.0 or later; the options name torch 1.13 (use flag_style::underscore, which every torch accepts)",
            "no training script given",
        });
    const cluster idle{{"gpu-a", 0}};  // diagnostics view the cluster's strings: keep it alive
    const auto r = hetlaunch::try_torchrun_argv(idle, 0, train());
    REQUIRE_FALSE(r);
    CHECK(r.error().message() == "node 0 ('gpu-a'): nproc must be at least 1, got 0");
    launch_options ok = train();
    ok.master_port = 65535;
    CHECK(hetlaunch::validate_launch(gpus, 1, ok).empty());
  }

  TEST_CASE("two agents on one host: refused unless the options allow it") {
    const cluster twice{{"gpu-a", 4, "trainer"}, {"gpu-a", 4, "eval"}};
    launch_options o = train();
    CHECK(hetlaunch::try_torchrun_argv(twice, 1, o).error().code ==
          hetlaunch::errc::duplicate_host);
    o.validation.allow_duplicate_hosts = true;
    o.master_port = 29510;
    CHECK(hetlaunch::torchrun_argv(twice, 1, o)[3] == "--nproc_per_node=4");
    CHECK(value_of(hetlaunch::worker_env(twice, 1, 0, o), "RANK") == "4");
  }

  TEST_CASE("worker environment: torchrun's variables for a heterogeneous job") {
    const cluster c{{"gpu-a", 3}, {"gpu-b", 1}};
    launch_options o = train();
    o.master_addr = "127.0.0.1";
    o.master_port = 29612;
    o.rdzv_id = "job1";
    o.torch = {1, 13};
    CHECK(hetlaunch::worker_env(c, 0, 2, o) == environment{{"LOCAL_RANK", "2"},
                                                           {"RANK", "2"},
                                                           {"GROUP_RANK", "0"},
                                                           {"ROLE_RANK", "2"},
                                                           {"ROLE_NAME", "default"},
                                                           {"LOCAL_WORLD_SIZE", "3"},
                                                           {"WORLD_SIZE", "4"},
                                                           {"GROUP_WORLD_SIZE", "2"},
                                                           {"ROLE_WORLD_SIZE", "4"},
                                                           {"MASTER_ADDR", "127.0.0.1"},
                                                           {"MASTER_PORT", "29612"},
                                                           {"TORCHELASTIC_RESTART_COUNT", "0"},
                                                           {"TORCHELASTIC_MAX_RESTARTS", "0"},
                                                           {"TORCHELASTIC_RUN_ID", "job1"},
                                                           {"TORCHELASTIC_USE_AGENT_STORE", "True"},
                                                           {"NCCL_ASYNC_ERROR_HANDLING", "1"},
                                                           {"OMP_NUM_THREADS", "1"}});
    // A one-worker node: torchrun leaves OMP_NUM_THREADS unset there.
    const environment single = hetlaunch::worker_env(c, 1, 0, o, 1);
    CHECK(value_of(single, "RANK") == "3");
    CHECK(value_of(single, "GROUP_RANK") == "1");
    CHECK(value_of(single, "LOCAL_WORLD_SIZE") == "1");
    CHECK(value_of(single, "OMP_NUM_THREADS") == "<unset>");
    CHECK(value_of(single, "TORCHELASTIC_RESTART_COUNT") == "1");
    o.torch = {2, 2};
    CHECK(value_of(hetlaunch::worker_env(c, 1, 0, o), "TORCH_NCCL_ASYNC_ERROR_HANDLING") == "1");
    CHECK(value_of(hetlaunch::worker_env(c, 1, 0, o), "NCCL_ASYNC_ERROR_HANDLING") == "<unset>");
    CHECK(hetlaunch::try_worker_env(c, 1, 1, o).error().code ==
          hetlaunch::errc::local_rank_out_of_range);
  }

  TEST_CASE("torch versions: the default is the newest known, and newer ones get its rules") {
    CHECK(launch_options{}.torch.code() == hetlaunch::newest_known_torch.code());
    CHECK(hetlaunch::newest_known_torch.code() == 214);
    const cluster c{{"gpu-a", 2}};
    launch_options o = train();
    // TORCHELASTIC_SIGNALS_TO_HANDLE: set by torchrun's launcher from torch 2.9, absent before.
    for (const auto& version :
         std::vector<std::tuple<int, int, std::string>>{{1, 13, "<unset>"},
                                                        {2, 6, "<unset>"},
                                                        {2, 8, "<unset>"},
                                                        {2, 9, "SIGTERM,SIGINT,SIGHUP,SIGQUIT"},
                                                        {2, 14, "SIGTERM,SIGINT,SIGHUP,SIGQUIT"},
                                                        {2, 99, "SIGTERM,SIGINT,SIGHUP,SIGQUIT"},
                                                        {3, 0, "SIGTERM,SIGINT,SIGHUP,SIGQUIT"}}) {
      o.torch = {std::get<0>(version), std::get<1>(version)};
      CAPTURE(o.torch.code());
      CHECK(value_of(hetlaunch::worker_env(c, 0, 0, o), "TORCHELASTIC_SIGNALS_TO_HANDLE") ==
            std::get<2>(version));
    }
    // torchrun's own --signals-to-handle, in either spelling and form, decides it.
    o.torch = {2, 14};
    for (const strings& args : {strings{"--signals-to-handle=SIGTERM,SIGUSR1"},
                                strings{"--signals_to_handle", "SIGTERM,SIGUSR1"}}) {
      o.torchrun_args = args;
      CHECK(value_of(hetlaunch::worker_env(c, 0, 1, o), "TORCHELASTIC_SIGNALS_TO_HANDLE") ==
            "SIGTERM,SIGUSR1");
    }
    // Never for workers started without torchrun.
    CHECK(value_of(hetlaunch::direct_worker_env(c, 0, 0, o), "TORCHELASTIC_SIGNALS_TO_HANDLE") ==
          "<unset>");
  }

  TEST_CASE("worker_env_from_agent: what torchrun passes on from its own environment") {
    const cluster c{{"gpu-a", 2}, {"gpu-b", 1}};
    launch_options o = train();
    o.torch = {2, 14};
    const environment agent{{"TORCH_NCCL_ASYNC_ERROR_HANDLING", "3"},
                            {"OMP_NUM_THREADS", "8"},
                            {"PET_SIGNALS_TO_HANDLE", "SIGTERM,SIGUSR1"},
                            {"PATH", "/usr/bin"}};
    const environment e = hetlaunch::worker_env_from_agent(c, 1, 0, o, agent);
    CHECK(value_of(e, "TORCH_NCCL_ASYNC_ERROR_HANDLING") == "3");
    CHECK(value_of(e, "OMP_NUM_THREADS") == "8");  // kept, even on a one-worker node
    CHECK(value_of(e, "TORCHELASTIC_SIGNALS_TO_HANDLE") == "SIGTERM,SIGUSR1");
    CHECK(value_of(e, "PATH") == "<unset>");  // passed on unchanged: not torchrun's
    // An explicit --signals-to-handle wins over the agent's PET_ default.
    o.torchrun_args = {"--signals-to-handle=SIGINT"};
    CHECK(value_of(hetlaunch::worker_env_from_agent(c, 1, 0, o, agent),
                   "TORCHELASTIC_SIGNALS_TO_HANDLE") == "SIGINT");
    // Before torch 2.2 the variable has its old name, and the agent's old name is passed on.
    o.torch = {1, 13};
    o.torchrun_args = {};
    const environment old =
        hetlaunch::worker_env_from_agent(c, 0, 1, o, {{"NCCL_ASYNC_ERROR_HANDLING", "0"}});
    CHECK(value_of(old, "NCCL_ASYNC_ERROR_HANDLING") == "0");
    CHECK(value_of(old, "OMP_NUM_THREADS") == "1");
    // With an empty agent environment it is worker_env.
    CHECK(hetlaunch::worker_env_from_agent(c, 0, 1, o, {}) == hetlaunch::worker_env(c, 0, 1, o));
    CHECK(hetlaunch::try_worker_env_from_agent(c, 1, 1, o, agent).error().code ==
          hetlaunch::errc::local_rank_out_of_range);
  }

  TEST_CASE("worker_runtime_variables: TORCHELASTIC_ERROR_FILE's value is decided at start") {
    launch_options o = train();
    const auto vars = hetlaunch::worker_runtime_variables(2, o, 1);
    REQUIRE(vars.size() == 1);
    CHECK(vars[0].name == "TORCHELASTIC_ERROR_FILE");
    CHECK(vars[0].pattern == "*/attempt_1/2/error.json");
    o.torchrun_args = {"--log-dir", "/dev/null"};
    CHECK(hetlaunch::worker_runtime_variables(0, o)[0].pattern.empty());
    o.torch = {1, 13};
    CHECK(hetlaunch::worker_runtime_variables(0, o)[0].pattern == "*/attempt_0/0/error.json");
  }

  TEST_CASE("--virtual-local-rank is refused: the workers would not be the plan's") {
    launch_options o = train();
    for (const char* arg :
         {"--virtual-local-rank", "--virtual_local_rank", "--virtual", "--virt"}) {
      CAPTURE(arg);
      o.torchrun_args = {arg};
      const auto argv = hetlaunch::try_torchrun_argv(gpus, 0, o);
      REQUIRE_FALSE(argv);
      CHECK(argv.error().code == hetlaunch::errc::virtual_local_rank);
      CHECK(hetlaunch::try_worker_env(gpus, 0, 0, o).error().code ==
            hetlaunch::errc::virtual_local_rank);
      CHECK(hetlaunch::make_plan(gpus, o).error().front().code ==
            hetlaunch::errc::virtual_local_rank);
    }
    o.torchrun_args = {"--virtual-local-rank"};
    CHECK(
        hetlaunch::try_torchrun_argv(gpus, 0, o).error().message() ==
        "the extra torchrun argument '--virtual-local-rank' (torch 2.14) gives every worker LOCAL_RANK=0 and only "
        "its own device in CUDA_VISIBLE_DEVICES, which the plan, its environments and the workers' checks do not "
        "describe; leave it out: each worker's LOCAL_RANK picks its device");
    // accelerate's command takes no torchrun arguments, so it is not refused.
    CHECK(hetlaunch::try_accelerate_argv(gpus, 0, o));
    o.torchrun_args = {"--vi"};  // too short to be that option
    CHECK(hetlaunch::try_torchrun_argv(gpus, 0, o));
  }

  TEST_CASE("roles: ROLE_RANK and ROLE_WORLD_SIZE count within a role") {
    const cluster c{{"t0", 2, "trainer"}, {"p0", 3, "ps"}, {"t1", 4, "trainer"}};
    const environment e = hetlaunch::worker_env(c, 2, 1, train());
    CHECK(value_of(e, "RANK") == "6");
    CHECK(value_of(e, "ROLE_RANK") == "3");
    CHECK(value_of(e, "ROLE_WORLD_SIZE") == "6");
    CHECK(value_of(e, "ROLE_NAME") == "trainer");
    CHECK(value_of(e, "MASTER_ADDR") == "t0");
  }

  TEST_CASE("direct spawn: no agent store, not marked as a torchelastic launch") {
    const environment e = hetlaunch::direct_worker_env(gpus, 1, 3, train());
    CHECK(value_of(e, "RANK") == "11");
    CHECK(value_of(e, "TORCHELASTIC_USE_AGENT_STORE") == "False");
    CHECK(value_of(e, "TORCHELASTIC_RUN_ID") == "<unset>");
    CHECK(value_of(e, "TORCHELASTIC_RESTART_COUNT") == "<unset>");
  }

  TEST_CASE("spawn_environment merges over a base environment") {
    const char* base[] = {"PATH=/usr/bin",
                          "RANK=99",
                          "TORCHELASTIC_USE_AGENT_STORE=True",
                          "TORCH_ELASTIC_WORKER_IDENTICAL=1",
                          "HOME=/root",
                          nullptr};
    const hetlaunch::spawn_environment env({{"RANK", "3"}, {"WORLD_SIZE", "4"}}, base);
    strings entries;
    for (char* const* p = env.envp(); *p; ++p) entries.emplace_back(*p);
    CHECK(entries == strings{"PATH=/usr/bin", "HOME=/root", "RANK=3", "WORLD_SIZE=4"});
  }

  TEST_CASE("${local_rank} is substituted as torchrun's string.Template does") {
    CHECK(hetlaunch::substitute_local_rank("--out=run${local_rank}.log", 3) == "--out=run3.log");
    CHECK(hetlaunch::substitute_local_rank("$local_rank", 7) == "7");
    CHECK(hetlaunch::substitute_local_rank("$local_rankx ${other} $$ $ $1 ${local_rank", 2) ==
          "$local_rankx ${other} $ $ $1 ${local_rank");
    launch_options o = train();
    o.script_args = {"--seed=${local_rank}"};
    CHECK(hetlaunch::worker_argv(5, o) == strings{"python3", "-u", "train.py", "--seed=5"});
  }

  TEST_CASE("check_worker_env names each disagreement with the plan") {
    const cluster c{{"gpu-a", 8}, {"gpu-b", 4}};
    // Node 1 started with --nproc_per_node=3 instead of 4: its workers see a world of 11.
    const environment got{{"WORLD_SIZE", "11"},
                          {"GROUP_RANK", "1"},
                          {"LOCAL_WORLD_SIZE", "3"},
                          {"RANK", "10"},
                          {"LOCAL_RANK", "2"}};
    strings messages;
    for (const auto& d : hetlaunch::check_worker_env(c, got)) messages.push_back(d.message());
    CHECK(
        messages ==
        strings{
            "WORLD_SIZE is 11 but the plan's world size is 12",
            "node 1 ('gpu-b'): started with LOCAL_WORLD_SIZE 3 (--nproc_per_node), but the plan gives it 4 workers",
        });
    const environment planned = hetlaunch::worker_env(c, 1, 2, train());
    CHECK(hetlaunch::check_worker_env(c, planned).empty());
    const environment odd{{"WORLD_SIZE", "x"},
                          {"GROUP_RANK", "7"},
                          {"LOCAL_WORLD_SIZE", "4"},
                          {"RANK", "1"},
                          {"TORCH_ELASTIC_WORKER_IDENTICAL", "1"}};
    messages.clear();
    for (const auto& d : hetlaunch::check_worker_env(c, odd)) messages.push_back(d.message());
    CHECK(
        messages ==
        strings{
            "WORLD_SIZE='x' is not an integer",
            "LOCAL_RANK is not set; was this process started by torchrun (or with worker_env)?",
            "TORCH_ELASTIC_WORKER_IDENTICAL=1 makes torchrun assume every node runs this node's worker count, which breaks RANK and WORLD_SIZE when nodes differ; unset it",
            "GROUP_RANK 7 is not a node of the plan, which has 2 nodes",
        });
    const environment wrong_rank{{"WORLD_SIZE", "12"},
                                 {"GROUP_RANK", "1"},
                                 {"LOCAL_WORLD_SIZE", "4"},
                                 {"RANK", "3"},
                                 {"LOCAL_RANK", "3"}};
    CHECK(hetlaunch::check_worker_env(c, wrong_rank).front().message() ==
          "node 1 ('gpu-b'): RANK is 3 but the plan gives LOCAL_RANK 3 the global rank 11");
  }

  TEST_CASE("accelerate: num_processes is this machine's count times the machine count") {
    launch_options o = train();
    o.master_addr = "gpu-a";
    CHECK(hetlaunch::accelerate_argv(cluster{{"gpu-a", 8}, {"gpu-b", 2}}, 1, o) ==
          strings{"accelerate",  "launch",
                  "--multi_gpu", "--num_machines",
                  "2",           "--machine_rank",
                  "1",           "--num_processes",
                  "4",           "--main_process_ip",
                  "gpu-a",       "--main_process_port",
                  "29500",       "--rdzv_backend",
                  "static",      "--max_restarts",
                  "0",           "train.py",
                  "--epochs",    "3"});
    CHECK(hetlaunch::try_accelerate_argv(cluster{{"solo", 1}}, 0, o).error().code ==
          hetlaunch::errc::too_few_processes);
  }

  TEST_CASE("shell_quote leaves plain words alone and quotes the rest") {
    CHECK(hetlaunch::shell_quote("train.py") == "train.py");
    CHECK(hetlaunch::shell_quote("--nproc_per_node=8") == "--nproc_per_node=8");
    CHECK(hetlaunch::shell_quote("") == "''");
    CHECK(hetlaunch::shell_quote("it's") == "'it'\\''s'");
    CHECK(hetlaunch::shell_quote("$(id)") == "'$(id)'");
    CHECK(hetlaunch::shell_join({"torchrun", "a b", "*"}) == "torchrun 'a b' '*'");
  }

  TEST_CASE("sh -c \"$(shell_join(argv))\" runs exactly argv, for random bytes") {
    std::uint64_t state = 12345;
    const auto next = [&state] {
      state = state * 6364136223846793005ull + 1442695040888963407ull;
      return static_cast<unsigned>(state >> 33);
    };
    const std::string nasty[] = {"",    "'",  "\"", "$(id)", "`id`",  "\n",    "*",   "?",
                                 "[a]", "-n", "--", "~",     "$HOME", "\\",    "a b", "\t",
                                 ";",   "|",  "&",  "!",     "#",     "{a,b}", "%s"};
    for (int round = 0; round < 200; ++round) {
      strings args = {"first"};  // printf applies its format once even to no arguments
      const unsigned count = next() % 6;
      for (unsigned k = 0; k < count; ++k) {
        std::string a;
        const unsigned pieces = next() % 4;
        for (unsigned p = 0; p < pieces; ++p) {
          if (next() % 2)
            a += nasty[next() % (sizeof nasty / sizeof nasty[0])];
          else
            a += static_cast<char>(1 + next() % 255);  // any byte but NUL
        }
        args.push_back(a);
      }
      strings argv = {"printf", "%s\\000"};
      argv.insert(argv.end(), args.begin(), args.end());
      CHECK(run_sh(hetlaunch::shell_join(argv)) == args);
    }
  }

  TEST_CASE("check_worker_env(c, std::getenv) is unambiguous under using namespace hetlaunch") {
    using namespace hetlaunch;  // argument-dependent lookup must not find an internal overload too
    const cluster one{{"a", 1}};
    const auto problems = check_worker_env(one, [](const char*) -> const char* { return nullptr; });
    CHECK(problems.size() == 5);  // WORLD_SIZE GROUP_RANK LOCAL_WORLD_SIZE RANK LOCAL_RANK missing
    CHECK(check_worker_env(one, std::getenv).size() < 10);  // the point: this call compiles
  }
}
