// SPDX-License-Identifier: MIT
// worker_variables.hpp: the variables a launcher delivers, named once, and which of them the
// launch owns. Every launcher refuses an owned variable from the user (ssh's options, a JobSet's
// env), and a worker of a plan without a global batch may not carry a share variable.
#include <doctest/doctest.h>

#include <hetlaunch/jobset.hpp>
#include <hetlaunch/plan.hpp>
#include <hetlaunch/spawn.hpp>
#include <hetlaunch/ssh.hpp>
#include <hetlaunch/worker_variables.hpp>

#include <string>
#include <string_view>
#include <vector>

TEST_SUITE("worker_variables") {
  TEST_CASE("the owned variables: the work share's three and the restart count") {
    static_assert(hetlaunch::is_owned_variable("HETLAUNCH_GLOBAL_BATCH"));
    static_assert(hetlaunch::is_owned_variable("HETLAUNCH_NODE_BATCH"));
    static_assert(hetlaunch::is_owned_variable("HETLAUNCH_NODE_BATCH_OFFSET"));
    static_assert(hetlaunch::is_owned_variable("HETLAUNCH_RESTART_COUNT"));
    static_assert(!hetlaunch::is_owned_variable("HETLAUNCH_TASKS_PER_NODE"));
    static_assert(!hetlaunch::is_owned_variable("HETLAUNCH_GLOBAL_BATCH_"));
    static_assert(!hetlaunch::is_owned_variable("hetlaunch_global_batch"));
    static_assert(!hetlaunch::is_owned_variable(""));
    static_assert(hetlaunch::is_share_variable("HETLAUNCH_NODE_BATCH"));
    static_assert(!hetlaunch::is_share_variable("HETLAUNCH_RESTART_COUNT"));
    for (std::string_view name : hetlaunch::variables::share)
      CHECK(hetlaunch::is_owned_variable(name));
  }

  TEST_CASE("ssh options refuse every owned variable, naming it; others pass") {
    for (std::string_view name : hetlaunch::variables::owned) {
      hetlaunch::ssh_options ssh;
      ssh.env = {{"NCCL_DEBUG", "INFO"}, {std::string(name), "8"}};
      const auto problems = hetlaunch::validate_ssh(ssh);
      REQUIRE(problems.size() == 1);
      CHECK(problems[0].code == hetlaunch::errc::owned_variable);
      std::string quoted_name = "'";  // appended: GCC 12's -Wrestrict misreads "'" + string at -O3
      quoted_name.append(name).append("'");
      CHECK(problems[0].message().find(quoted_name) == 0);
    }
    hetlaunch::ssh_options fine;
    fine.env = {{"HETLAUNCH_TASKS_PER_NODE", "2(x3)"}};
    CHECK(hetlaunch::validate_ssh(fine).empty());
  }

  TEST_CASE("a launcher forwards no owned variable by default") {
    for (std::string_view name : hetlaunch::variables::owned)
      CHECK_FALSE(hetlaunch::forwarded_by_default(name));
    const char* envp[] = {"HETLAUNCH_GLOBAL_BATCH=64", "NCCL_DEBUG=INFO", nullptr};
    const hetlaunch::environment forwarded = hetlaunch::forwarded_environment(envp);
    CHECK(forwarded == hetlaunch::environment{{"NCCL_DEBUG", "INFO"}});
  }

  TEST_CASE("the remote command removes inherited owned variables before it sets the plan's") {
    hetlaunch::launch_options o;
    o.script = "t.py";
    const auto plan = *hetlaunch::make_plan(hetlaunch::cluster{{"a", 1}}, o);
    const auto remote = hetlaunch::try_remote_argv(plan, 0, {}).value();
    const std::string& script = remote[2];
    const std::size_t unset = script.find(
        "unset HETLAUNCH_GLOBAL_BATCH HETLAUNCH_NODE_BATCH HETLAUNCH_NODE_BATCH_OFFSET "
        "HETLAUNCH_MAX_BATCH HETLAUNCH_RESTART_COUNT\n");
    REQUIRE(unset != std::string::npos);
    CHECK(unset < script.find("export \"$1\""));
  }

  TEST_CASE("a JobSet refuses an owned variable in its env: Kubernetes would take the later") {
    hetlaunch::jobset_options o;
    o.name = "j";
    o.image = "img";
    o.launch.script = "t.py";
    o.launch.global_batch = 4;
    o.env = {{"HETLAUNCH_GLOBAL_BATCH", "8"}};
    std::vector<hetlaunch::node_group> groups(1);
    const auto manifest = hetlaunch::try_jobset_manifest(groups, o);
    REQUIRE_FALSE(manifest);
    CHECK(manifest.error().code == hetlaunch::errc::owned_variable);
    o.env = {{"HETLAUNCH_RESTART_COUNT", "0"}};
    REQUIRE_FALSE(hetlaunch::try_jobset_manifest(groups, o));
  }

  TEST_CASE("check_worker_env of a plan without a global batch names each share variable set") {
    hetlaunch::launch_options o;
    const auto plan = *hetlaunch::make_plan(hetlaunch::cluster{{"a", 1}}, o);
    hetlaunch::environment env = {{"WORLD_SIZE", "1"},       {"GROUP_RANK", "0"},
                                  {"LOCAL_WORLD_SIZE", "1"}, {"RANK", "0"},
                                  {"LOCAL_RANK", "0"},       {"HETLAUNCH_NODE_BATCH", "32"}};
    auto problems = hetlaunch::check_worker_env(plan, env);
    REQUIRE(problems.size() == 1);
    CHECK(problems[0].code == hetlaunch::errc::unplanned_share);
    CHECK(problems[0].message() ==
          "HETLAUNCH_NODE_BATCH is '32' but the plan has no global batch: the worker would read a "
          "work share that no launch gave it (an inherited variable?); unset it, or plan with "
          "--global-batch");
    env.pop_back();
    CHECK(hetlaunch::check_worker_env(plan, env).empty());
    // The restart count belongs to a launcher with restarts, not to the plan: it is not checked.
    env.emplace_back("HETLAUNCH_RESTART_COUNT", "2");
    CHECK(hetlaunch::check_worker_env(plan, env).empty());
  }

  TEST_CASE("a direct spawn drops inherited share variables the plan does not set") {
    hetlaunch::launch_options o;
    o.script = "t.py";
    const auto plan = *hetlaunch::make_plan(hetlaunch::cluster{{"a", 1}}, o);
    const char* base[] = {"HETLAUNCH_GLOBAL_BATCH=64", "PATH=/bin", nullptr};
    const auto spawned = hetlaunch::spawn_environment(plan.worker_env(0, 0), base);
    bool has_share = false, has_path = false;
    for (const char* const* e = spawned.envp(); *e; ++e) {
      has_share = has_share || std::string_view(*e).substr(0, 22) == "HETLAUNCH_GLOBAL_BATCH";
      has_path = has_path || std::string_view(*e) == "PATH=/bin";
    }
    CHECK_FALSE(has_share);
    CHECK(has_path);
  }
}
