// SPDX-License-Identifier: MIT
// worker_variables.hpp: the variables a launcher delivers, named once, and which of them the
// launch owns. Every launcher refuses an owned variable from the user (ssh's options, a JobSet's
// env), and a worker of a plan without a global batch may not carry a share variable.
#include <doctest/doctest.h>
#include <algorithm>

#include <hetlaunch/jobset.hpp>
#include <hetlaunch/plan.hpp>
#include <hetlaunch/spawn.hpp>
#include <hetlaunch/ssh.hpp>
#include <hetlaunch/worker_variables.hpp>

#include <string>
#include <string_view>
#include <utility>
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
        "HETLAUNCH_NODE_HOST HETLAUNCH_MAX_BATCH HETLAUNCH_RESTART_COUNT HETLAUNCH_CALIBRATE_STEPS "
        "HETLAUNCH_PROGRESS_SECONDS HETLAUNCH_ON_SLOW HETLAUNCH_MIN_COMPUTE_CAPABILITY HETLAUNCH_BF16\n");
    REQUIRE(unset != std::string::npos);
    CHECK(unset < script.find("export \"$1\""));
  }

  TEST_CASE("one rule for what a node sets and removes, for every plan") {
    // For every combination of a global batch, a ceiling, a calibration, an attempt, progress
    // reports, a rebalance on slow ranks, caller variables and nodes that differ: every owned
    // variable is either set (from the plan, once) or removed, never both;
    // TORCH_ELASTIC_WORKER_IDENTICAL is removed exactly when the counts differ; the caller's
    // variables come after the plan's and before the attempt.
    for (int mask = 0; mask < 128; ++mask) {
      const bool shares = mask & 1, ceiling = mask & 2, calibrating = mask & 4, attempt = mask & 8,
                 differ = mask & 16, reporting = mask & 32, rebalancing = mask & 64;
      hetlaunch::launch_options o;
      o.script = "t.py";
      o.global_batch = shares ? 12 : 0;
      o.calibrate_steps = calibrating ? 20 : 0;
      o.progress_milliseconds = reporting ? 250 : 0;
      o.rebalance_slow_ranks = rebalancing;
      hetlaunch::cluster c{{"a", 2}, {"b", differ ? 1 : 2}};
      if (ceiling) c.set_max_batch(1, 3);
      const auto plan = *hetlaunch::make_plan(c, o);
      const hetlaunch::environment user = {{"NCCL_DEBUG", "INFO"}};
      const auto vars = plan.try_node_variables(1, user, attempt ? 2 : -1).value();
      CAPTURE(mask);
      for (std::string_view name : hetlaunch::variables::owned) {
        int set = 0;
        for (const auto& v : vars.set) set += v.first == name;
        const bool unset =
            std::find(vars.unset.begin(), vars.unset.end(), name) != vars.unset.end();
        const bool planned = (hetlaunch::is_share_variable(name) && shares) ||
                             (name == hetlaunch::variables::max_batch && ceiling) ||
                             (name == hetlaunch::variables::calibrate_steps && calibrating) ||
                             (name == hetlaunch::variables::progress_seconds && reporting) ||
                             (name == hetlaunch::variables::on_slow && rebalancing) ||
                             (name == hetlaunch::variables::restart_count && attempt);
        CAPTURE(name);
        CHECK(set == (planned ? 1 : 0));
        CHECK(unset == !planned);
      }
      const bool identical_removed =
          std::find(vars.unset.begin(), vars.unset.end(), hetlaunch::variables::worker_identical) !=
          vars.unset.end();
      CHECK(identical_removed == differ);
      const auto user_at = std::find(vars.set.begin(), vars.set.end(), user[0]);
      REQUIRE(user_at != vars.set.end());
      if (attempt) CHECK(vars.set.back().first == hetlaunch::variables::restart_count);
      if (!attempt) CHECK(user_at == vars.set.end() - 1);
    }
  }

  TEST_CASE("the progress interval is given in seconds, three decimals at most") {
    const std::vector<std::pair<int, std::string>> cases = {
        {250, "0.25"}, {1000, "1"}, {1, "0.001"}, {1500, "1.5"}, {120, "0.12"}, {60000, "60"}};
    for (const auto& c : cases) {
      hetlaunch::launch_options o;
      o.script = "t.py";
      o.progress_milliseconds = c.first;
      const auto plan = *hetlaunch::make_plan(hetlaunch::cluster{{"a", 1}}, o);
      const auto vars = plan.try_node_variables(0, {}).value();
      CAPTURE(c.first);
      const std::pair<std::string, std::string> wanted{"HETLAUNCH_PROGRESS_SECONDS", c.second};
      CHECK(std::count(vars.set.begin(), vars.set.end(), wanted) == 1);
    }
  }

  TEST_CASE("a node's own variables may not name one the launch owns") {
    hetlaunch::launch_options o;
    o.script = "t.py";
    const auto plan = *hetlaunch::make_plan(hetlaunch::cluster{{"a", 1}}, o);
    for (std::string_view name : hetlaunch::variables::owned) {
      const auto vars = plan.try_node_variables(0, {{std::string(name), "4"}});
      REQUIRE_FALSE(vars);
      CHECK(vars.error().code == hetlaunch::errc::owned_variable);
    }
    CHECK(plan.try_node_variables(0, {{"HETLAUNCH_CALIBRATE_STEPS", "4"}}).error().message() ==
          "'HETLAUNCH_CALIBRATE_STEPS' is set only by `hetlaunch calibrate` (--calibrate-steps): a "
          "job given it stops after that many steps as if it had succeeded; it cannot be given as "
          "a variable");
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

  TEST_CASE("check_worker_env names a ceiling inherited by a node without one") {
    hetlaunch::launch_options o;
    hetlaunch::cluster c{{"a", 1}, {"b", 1}};
    c.set_max_batch(1, 4);
    const auto plan = *hetlaunch::make_plan(c, o);
    hetlaunch::environment env = {{"WORLD_SIZE", "2"},       {"GROUP_RANK", "0"},
                                  {"LOCAL_WORLD_SIZE", "1"}, {"RANK", "0"},
                                  {"LOCAL_RANK", "0"},       {"HETLAUNCH_MAX_BATCH", "2"}};
    auto problems = hetlaunch::check_worker_env(plan, env);
    REQUIRE(problems.size() == 1);
    CHECK(problems[0].code == hetlaunch::errc::batch_mismatch);
    CHECK(problems[0].message() ==
          "node 0 ('a'): HETLAUNCH_MAX_BATCH is '2' but the plan gives this node no ceiling");
    env = {{"WORLD_SIZE", "2"}, {"GROUP_RANK", "1"}, {"LOCAL_WORLD_SIZE", "1"},
           {"RANK", "1"},       {"LOCAL_RANK", "0"}, {"HETLAUNCH_MAX_BATCH", "4"}};
    CHECK(hetlaunch::check_worker_env(plan, env).empty());
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

  TEST_CASE("a direct spawn drops inherited owned variables the plan does not set") {
    hetlaunch::launch_options o;
    o.script = "t.py";
    const auto plan = *hetlaunch::make_plan(hetlaunch::cluster{{"a", 1}}, o);
    const char* base[] = {"HETLAUNCH_GLOBAL_BATCH=64",   "PATH=/bin",
                          "HETLAUNCH_MAX_BATCH=2",       "HETLAUNCH_RESTART_COUNT=3",
                          "HETLAUNCH_CALIBRATE_STEPS=4", nullptr};
    const auto spawned = hetlaunch::spawn_environment(plan.worker_env(0, 0), base);
    bool has_owned = false, has_path = false;
    for (const char* const* e = spawned.envp(); *e; ++e) {
      const std::string_view entry(*e);
      has_owned = has_owned || hetlaunch::is_owned_variable(entry.substr(0, entry.find('=')));
      has_path = has_path || entry == "PATH=/bin";
    }
    CHECK_FALSE(has_owned);
    CHECK(has_path);
  }
}
