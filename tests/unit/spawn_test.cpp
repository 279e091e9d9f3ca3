// SPDX-License-Identifier: MIT
// spawn.hpp: starting workers without torchrun: their environment and argv.
#include <doctest/doctest.h>

#include <hetlaunch/plan.hpp>
#include <hetlaunch/spawn.hpp>

#include "../support/launch_fixtures.hpp"

#include <string>
#include <vector>

using hetlaunch::environment;
using hetlaunch::launch_options;
using test_support::gpus;
using test_support::strings;
using test_support::train;
using test_support::value_of;

TEST_SUITE("direct spawn") {
  TEST_CASE("direct spawn: no agent store, not marked as a torchelastic launch") {
    const environment e = hetlaunch::direct_worker_env(gpus(), 1, 3, train());
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
}
