// SPDX-License-Identifier: MIT
// Memory ceilings (max_batch): read from a hostfile, carried by a cluster through restarts and
// spares, delivered to the workers as HETLAUNCH_MAX_BATCH, and checked by check_worker_env. The
// split of a global batch does not depend on them.
#include <doctest/doctest.h>

#include <hetlaunch/hostfile.hpp>
#include <hetlaunch/plan.hpp>
#include <hetlaunch/restart.hpp>

#include <string>
#include <vector>

namespace {
std::string ceiling_env_value(const hetlaunch::environment& env, const std::string& name) {
  std::string found = "(unset)";
  for (const auto& v : env)
    if (v.first == name) found = v.second;
  return found;
}
std::string ceiling_refusal(const char* text) {
  const auto r = hetlaunch::parse_hostfile(text);
  if (r) return "ok";
  return std::to_string(r.error().line) + ":" + std::to_string(r.error().column) + " " +
         std::string(hetlaunch::to_string(r.error().code)) + " " + r.error().message;
}
}  // namespace

TEST_SUITE("memory ceilings") {
  TEST_CASE("a hostfile's max_batch=M is the node's ceiling; a node without one has 0") {
    const auto c =
        hetlaunch::parse_hostfile("a slots=4 max_batch=16\nb slots=2\nc:1 max_batch = 3");
    REQUIRE(c);
    CHECK(c->max_batch(0) == 16);
    CHECK(c->max_batch(1) == 0);
    CHECK(c->max_batch(2) == 3);
    CHECK(c->has_max_batches());
    const auto none = hetlaunch::parse_hostfile("a slots=4\n");
    REQUIRE(none);
    CHECK_FALSE(none->has_max_batches());
    CHECK(none->max_batch(0) == 0);
    CHECK(hetlaunch::parse_hostfile("a max_batch=2147483647")->max_batch(0) == 2147483647);
  }

  TEST_CASE("a ceiling that is not a positive integer up to 2^31 - 1 is refused where it is") {
    const std::string why =
        "max_batch must be a positive integer up to 2147483647 (the most samples one worker "
        "takes in one forward), got ";
    CHECK(ceiling_refusal("a max_batch=0") == "1:13 bad_max_batch " + why + "'0'");
    CHECK(ceiling_refusal("a max_batch=-1") == "1:13 bad_max_batch " + why + "'-1'");
    CHECK(ceiling_refusal("a max_batch=x") == "1:13 bad_max_batch " + why + "'x'");
    CHECK(ceiling_refusal("a max_batch=2147483648") ==
          "1:13 bad_max_batch " + why + "'2147483648'");
    CHECK(ceiling_refusal("a max_batch=99999999999999999999") ==
          "1:13 bad_max_batch " + why + "'99999999999999999999'");
    CHECK(ceiling_refusal("a max_batch=1.5") == "1:13 bad_max_batch " + why + "'1.5'");
    CHECK(ceiling_refusal("a max_batch=") == "1:13 bad_max_batch " + why + "''");
    CHECK(ceiling_refusal("a max_batch=2 max_batch=3") ==
          "1:15 bad_syntax max_batch is given twice for host 'a'");
  }

  TEST_CASE("parse_max_batch reads one ceiling as a hostfile does, for every text up to 3 bytes") {
    // The ceiling alone (--max-batch HOSTS=M) accepts exactly what max_batch=M of a hostfile
    // accepts, with the same message.
    // (Blanks are left out: around a value they are a hostfile's field separators.)
    const char alphabet[] = {'0', '1', '9', '-', '+', 'x', '.'};
    std::string text;
    const auto both_agree = [&] {
      const hetlaunch::result<int> alone = hetlaunch::parse_max_batch(text);
      const auto in_file = hetlaunch::parse_hostfile("a max_batch=" + text);
      REQUIRE_MESSAGE(static_cast<bool>(alone) == static_cast<bool>(in_file), text);
      if (alone) {
        CHECK(*alone == in_file->max_batch(0));
        CHECK(*alone >= 1);
      } else {
        CHECK(alone.error().code == hetlaunch::errc::bad_max_batch);
        CHECK(alone.error().line == 0);
        CHECK(alone.error().message == in_file.error().message);
      }
    };
    for (const char a : alphabet) {
      text = std::string(1, a);
      both_agree();
      for (const char b : alphabet) {
        text = std::string{a, b};
        both_agree();
        for (const char c : alphabet) {
          text = std::string{a, b, c};
          both_agree();
        }
      }
    }
    CHECK(*hetlaunch::parse_max_batch("2147483647") == 2147483647);
    CHECK_FALSE(hetlaunch::parse_max_batch("2147483648"));
    CHECK_FALSE(hetlaunch::parse_max_batch(""));
  }

  TEST_CASE(
      "workers get HETLAUNCH_MAX_BATCH with or without a global batch; the split ignores it") {
    hetlaunch::cluster c{{"a", 2}, {"b", 1}};
    c.set_max_batch(1, 8);
    hetlaunch::launch_options o;
    o.script = "t.py";
    const auto plain = hetlaunch::make_plan(c, o);
    REQUIRE(plain);
    CHECK(ceiling_env_value(plain->agent_env(1), "HETLAUNCH_MAX_BATCH") == "8");
    CHECK(ceiling_env_value(plain->agent_env(0), "HETLAUNCH_MAX_BATCH") == "(unset)");
    CHECK(ceiling_env_value(plain->direct_worker_env(1, 0), "HETLAUNCH_MAX_BATCH") == "8");
    CHECK(ceiling_env_value(hetlaunch::try_agent_env(c, 1, o).value(), "HETLAUNCH_MAX_BATCH") ==
          "8");
    o.global_batch = 30;
    const auto shared = hetlaunch::make_plan(c, o);
    REQUIRE(shared);
    CHECK(ceiling_env_value(shared->agent_env(1), "HETLAUNCH_MAX_BATCH") == "8");
    const hetlaunch::cluster without{{"a", 2}, {"b", 1}};
    const auto reference = hetlaunch::make_plan(without, o);
    for (std::size_t i = 0; i < 2; ++i)
      CHECK(shared->node_batch_of(i) == reference->node_batch_of(i));
  }

  TEST_CASE("check_worker_env: a ceiling that differs from the plan's is a batch_mismatch") {
    hetlaunch::cluster c{{"a", 2}};
    c.set_max_batch(0, 8);
    hetlaunch::launch_options o;
    o.script = "t.py";
    const auto plan = hetlaunch::make_plan(c, o);
    REQUIRE(plan);
    hetlaunch::environment env = plan->direct_worker_env(0, 0);
    CHECK(hetlaunch::check_worker_env(*plan, env).empty());
    env.emplace_back("HETLAUNCH_MAX_BATCH", "9");
    const auto problems = hetlaunch::check_worker_env(*plan, env);
    REQUIRE(problems.size() == 1);
    CHECK(problems.front().code == hetlaunch::errc::batch_mismatch);
  }

  TEST_CASE("a restart keeps each node's ceiling, on a spare too") {
    hetlaunch::cluster c{{"a", 2}, {"b", 2}, {"c", 1}};
    c.set_max_batch(1, 4);
    c.set_max_batch(2, 7);
    const hetlaunch::cluster kept = hetlaunch::keep_nodes(c, {1, 2});
    CHECK(kept.max_batch(0) == 4);
    CHECK(kept.max_batch(1) == 7);
    hetlaunch::restart_options r;
    r.restarts = 1;
    const std::vector<hetlaunch::spare_host> spares{{"s", 2}};
    const auto d = hetlaunch::decide_restart(r, 0, c, {1}, false, spares);
    const hetlaunch::cluster next = hetlaunch::restart_topology(c, d, spares);
    CHECK(next.node(1).host == "s");
    CHECK(next.max_batch(1) == 4);
    CHECK(next.max_batch(2) == 7);
    CHECK(next.max_batch(0) == 0);
  }
}
