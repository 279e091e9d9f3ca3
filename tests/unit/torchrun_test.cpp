// SPDX-License-Identifier: MIT
// torchrun_argv.hpp: each node's command line, pinned to golden values that the end-to-end
// tests check against a real torchrun, and the launch options it refuses.
#include <doctest/doctest.h>

#include <hetlaunch/plan.hpp>
#include <hetlaunch/torchrun_argv.hpp>

#include "../support/launch_fixtures.hpp"

#include <string>
#include <tuple>
#include <vector>

using hetlaunch::cluster;
using hetlaunch::environment;
using hetlaunch::launch_options;
using test_support::gpus;
using test_support::strings;
using test_support::train;
using test_support::value_of;

TEST_SUITE("torchrun") {
  TEST_CASE("each node gets its own --nproc_per_node, static rendezvous on node 0 by default") {
    CHECK(hetlaunch::torchrun_argv(gpus(), 0, train()) ==
          strings{"torchrun", "--nnodes=2", "--node_rank=0", "--nproc_per_node=8",
                  "--max_restarts=0", "--master_addr=gpu-a", "--master_port=29500", "train.py",
                  "--epochs", "3"});
    CHECK(hetlaunch::torchrun_argv(gpus(), 1, train()) ==
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
    CHECK(hetlaunch::torchrun_argv(gpus(), 1, o) ==
          strings{"torchrun", "--nnodes=2", "--nproc_per_node=4", "--max_restarts=0",
                  "--rdzv_backend=c10d", "--rdzv_endpoint=[fe80::1]:29400", "--rdzv_id=job7",
                  "train.py", "--epochs", "3"});
    o.master_addr = "[::1]";
    CHECK(hetlaunch::torchrun_argv(gpus(), 0, o)[5] == "--rdzv_endpoint=[::1]:29400");
  }
  TEST_CASE("with c10d, ranks are decided at rendezvous: no worker environment is promised") {
    launch_options o = train();
    o.backend = hetlaunch::rendezvous::c10d;
    o.rdzv_id = "job";
    const auto r = hetlaunch::try_worker_env(gpus(), 0, 0, o);
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
    for (const auto& d : hetlaunch::validate_launch(gpus(), 5, o)) messages.push_back(d.message());
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
    CHECK(hetlaunch::validate_launch(gpus(), 1, ok).empty());
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
  TEST_CASE("--virtual-local-rank is refused: the workers would not be the plan's") {
    launch_options o = train();
    for (const char* arg :
         {"--virtual-local-rank", "--virtual_local_rank", "--virtual", "--virt"}) {
      CAPTURE(arg);
      o.torchrun_args = {arg};
      const auto argv = hetlaunch::try_torchrun_argv(gpus(), 0, o);
      REQUIRE_FALSE(argv);
      CHECK(argv.error().code == hetlaunch::errc::virtual_local_rank);
      CHECK(hetlaunch::try_worker_env(gpus(), 0, 0, o).error().code ==
            hetlaunch::errc::virtual_local_rank);
      CHECK(hetlaunch::make_plan(gpus(), o).error().front().code ==
            hetlaunch::errc::virtual_local_rank);
    }
    o.torchrun_args = {"--virtual-local-rank"};
    CHECK(
        hetlaunch::try_torchrun_argv(gpus(), 0, o).error().message() ==
        "the extra torchrun argument '--virtual-local-rank' (torch 2.14) gives every worker LOCAL_RANK=0 and only "
        "its own device in CUDA_VISIBLE_DEVICES, which the plan, its environments and the workers' checks do not "
        "describe; leave it out: each worker's LOCAL_RANK picks its device");
    // accelerate's command takes no torchrun arguments, so it is not refused.
    CHECK(hetlaunch::try_accelerate_argv(gpus(), 0, o));
    o.torchrun_args = {"--vi"};  // too short to be that option
    CHECK(hetlaunch::try_torchrun_argv(gpus(), 0, o));
  }
}
