// SPDX-License-Identifier: MIT
// diagnostic: what each field means, and who renders the text (the core, or the subsystem that
// found the problem).
#include <doctest/doctest.h>

#include <hetlaunch/accelerate.hpp>
#include <hetlaunch/diagnostic.hpp>
#include <hetlaunch/jobset.hpp>
#include <hetlaunch/ssh.hpp>
#include <hetlaunch/worker_check.hpp>

#include <string>

using hetlaunch::diagnostic;
using hetlaunch::errc;

namespace {
constexpr diagnostic constant_diagnostic =
    diagnostic::of(errc::bad_nproc).with_node(1).with_host("gpu-b").with_value(0);
static_assert(static_cast<bool>(constant_diagnostic) && constant_diagnostic.node == 1 &&
                  constant_diagnostic.host == "gpu-b" && constant_diagnostic.describe == nullptr,
              "built in a constant expression; the core's diagnostics have no describe");
static_assert(!diagnostic{} && !diagnostic::of(errc::ok), "ok is no problem");

hetlaunch::jobset_options jobset_named(std::string name) {
  hetlaunch::jobset_options o;
  o.name = std::move(name);
  o.image = "img";
  o.launch.script = "train.py";
  return o;
}
}  // namespace

TEST_SUITE("diagnostic") {
  TEST_CASE("of and the with_ setters build the same diagnostic as the validation") {
    const hetlaunch::cluster c{{"gpu-a", 8}, {"gpu-b", 0}};
    const diagnostic found = hetlaunch::first_error(c);
    CHECK(found.message() == constant_diagnostic.message());
    CHECK(found.message() == "node 1 ('gpu-b'): nproc must be at least 1, got 0");
  }

  TEST_CASE("position is the offset of the offending character, whatever the code") {
    // bad_name: the first character a DNS label cannot hold.
    const auto name = hetlaunch::validate_jobset({{1, 1, {}}}, jobset_named("train_x"));
    REQUIRE(!name.empty());
    CHECK(name.front().code == errc::bad_name);
    CHECK(name.front().position == 5);
    CHECK(name.front().value == 0);
    // not_utf8: the byte that does not start a character.
    auto utf8 = jobset_named("train");
    utf8.launch.script_args = {"ab\xff"};
    const auto bytes = hetlaunch::validate_jobset({{1, 1, {}}}, utf8);
    REQUIRE(bytes.size() == 1);
    CHECK(bytes.front().code == errc::not_utf8);
    CHECK(bytes.front().position == 2);
    CHECK(bytes.front().limit == 0);
    // nul_byte: where the NUL is.
    hetlaunch::ssh_options ssh;
    ssh.chdir = std::string("/ab\0", 4);
    const auto nul = hetlaunch::validate_ssh(ssh);
    REQUIRE(nul.size() == 1);
    CHECK(nul.front().code == errc::nul_byte);
    CHECK(nul.front().position == 3);
    CHECK(nul.front().limit == 0);
  }

  TEST_CASE("rank_mismatch names its worker in local_rank, not in position") {
    const hetlaunch::cluster c{{"gpu-a", 8}, {"gpu-b", 4}};
    const hetlaunch::environment wrong_rank{{"WORLD_SIZE", "12"},
                                            {"GROUP_RANK", "1"},
                                            {"LOCAL_WORLD_SIZE", "4"},
                                            {"RANK", "9"},
                                            {"LOCAL_RANK", "2"}};
    const auto problems = hetlaunch::check_worker_env(c, wrong_rank);
    REQUIRE(problems.size() == 1);
    CHECK(problems.front().code == errc::rank_mismatch);
    CHECK(problems.front().local_rank == 2);
    CHECK(problems.front().position == 0);
    CHECK(problems.front().value == 9);
    CHECK(problems.front().limit == 10);
    CHECK(problems.front().message() ==
          "node 1 ('gpu-b'): RANK is 9 but the plan gives LOCAL_RANK 2 the global rank 10");
  }

  TEST_CASE("the JobSet, ssh and accelerate render their own problems, the core the rest") {
    const auto jobset = hetlaunch::validate_jobset({{1, 1, {}}}, jobset_named("train_x"));
    REQUIRE(!jobset.empty());
    CHECK((jobset.front().describe == &hetlaunch::detail::jobset_message));
    hetlaunch::ssh_options ssh;
    ssh.kill_after = 0;
    const auto kill = hetlaunch::validate_ssh(ssh);
    REQUIRE(kill.size() == 1);
    CHECK((kill.front().describe == &hetlaunch::detail::ssh_message));
    CHECK(kill.front().message() == "kill_after must be 1..3600 seconds, got 0");
    hetlaunch::launch_options one;
    one.script = "train.py";
    const auto accelerate = hetlaunch::try_accelerate_argv(hetlaunch::cluster{{"solo", 1}}, 0, one);
    REQUIRE(!accelerate);
    CHECK((accelerate.error().describe == &hetlaunch::detail::accelerate_message));
    CHECK(accelerate.error().message() ==
          "accelerate launch --multi_gpu needs at least 2 processes; this job has 1");
    // A code a subsystem shares with the core keeps the core's text.
    ssh.kill_after = 10;
    ssh.program = {};
    const auto empty = hetlaunch::validate_ssh(ssh);
    REQUIRE(empty.size() == 1);
    CHECK(empty.front().code == errc::empty_program);
    CHECK(empty.front().message() == "no ssh program given (it is empty)");
  }

  TEST_CASE("every code has a text, also in a diagnostic built without its subsystem") {
    for (int code = 0; code <= static_cast<int>(errc::bad_host_facts); ++code) {
      const diagnostic d = diagnostic::of(static_cast<errc>(code)).with_text("x");
      CAPTURE(hetlaunch::to_string(d.code));
      const std::string text = d.message();
      CHECK(!text.empty());
      CHECK(text != "unknown problem");
    }
    const diagnostic foreign = diagnostic::of(errc::empty_image).with_text("img");
    CHECK(foreign.message() == "empty_image: 'img'");
  }
}
