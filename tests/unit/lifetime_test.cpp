// SPDX-License-Identifier: MIT
// Nothing the library returns at run time refers to storage the caller cannot see: every
// diagnostic and result below is read after the cluster, options, environment and strings it
// was made from are gone. Under AddressSanitizer (the sanitized build) a view into any of them
// is a heap-use-after-free; elsewhere the texts are still compared.
#include <doctest/doctest.h>

#include <hetlaunch/hetlaunch.hpp>

#include <string>
#include <vector>

namespace {
// Longer than any small-string buffer, so the text lives on the heap and dies with its string.
std::string heap_text(const char* stem) { return std::string(stem) + std::string(40, 'x'); }

hetlaunch::launch_options options_with(std::string script) {
  hetlaunch::launch_options o;
  o.script = std::move(script);
  return o;
}

bool mentions(const std::string& message, const std::string& what) {
  return message.find(what) != std::string::npos;
}
}  // namespace

TEST_SUITE("lifetime") {
  TEST_CASE("validate on a temporary cluster: the diagnostics own the host and role") {
    const std::vector<hetlaunch::diagnostic> ds = hetlaunch::validate(
        hetlaunch::cluster{{heap_text("gpu-a"), 1}, {heap_text("gpu-a"), 0, heap_text("-role")}});
    REQUIRE(ds.size() == 3);
    CHECK(ds[0].code == hetlaunch::errc::bad_nproc);
    CHECK(ds[0].host == heap_text("gpu-a"));
    CHECK(ds[1].code == hetlaunch::errc::duplicate_host);
    CHECK(ds[2].code == hetlaunch::errc::bad_role);
    CHECK(ds[2].role == heap_text("-role"));
    for (const auto& d : ds) CHECK(mentions(d.message(), "gpu-a"));
  }

  TEST_CASE("first_error on a temporary cluster") {
    const hetlaunch::diagnostic d =
        hetlaunch::first_error(hetlaunch::cluster{{heap_text("bad host"), 1}});
    CHECK(d.code == hetlaunch::errc::bad_host);
    CHECK(mentions(d.message(), "bad host"));
  }

  TEST_CASE("make_plan and validate_plan on temporaries") {
    const auto plan = hetlaunch::make_plan(hetlaunch::cluster{{heap_text("a b"), 2}},
                                           options_with(heap_text("-script")));
    REQUIRE(!plan);
    REQUIRE(plan.error().size() == 3);  // the host, the master address it gives, the script
    CHECK(mentions(plan.error()[0].message(), "a b"));
    CHECK(mentions(plan.error()[1].message(), "a b"));
    CHECK(mentions(plan.error()[2].message(), "-script"));
    const auto problems =
        hetlaunch::validate_plan(hetlaunch::cluster{{heap_text("a b"), 2}}, options_with("t.py"));
    REQUIRE(problems.size() == 2);
    CHECK(mentions(problems[0].message(), "a b"));
  }

  TEST_CASE("the one-call functions on temporaries") {
    const auto cluster_of = [] {
      return hetlaunch::cluster{{heap_text("gpu-a"), 2}, {heap_text("gpu-b"), 1}};
    };
    const auto argv = hetlaunch::try_torchrun_argv(cluster_of(), 1, options_with(heap_text("-x")));
    CHECK(mentions(argv.error().message(), "-x"));
    const auto env = hetlaunch::try_worker_env(cluster_of(), 1, 5, options_with(""));
    CHECK(env.error().code == hetlaunch::errc::local_rank_out_of_range);
    CHECK(mentions(env.error().message(), "gpu-b"));
    const auto direct = hetlaunch::try_direct_worker_env(cluster_of(), 0, 9, options_with(""));
    CHECK(mentions(direct.error().message(), "gpu-a"));
    hetlaunch::launch_options bad_addr;
    bad_addr.master_addr = heap_text("no such address!");
    const auto launch = hetlaunch::validate_launch(cluster_of(), 0, bad_addr);
    REQUIRE(launch.size() == 2);
    CHECK(mentions(launch.front().message(), "no such address!"));
    CHECK(launch.back().code == hetlaunch::errc::empty_script);
    const auto accelerate = hetlaunch::try_accelerate_argv(cluster_of(), 0, bad_addr);
    CHECK(mentions(accelerate.error().message(), "no such address!"));
  }

  TEST_CASE(
      "a fixed topology converts to a cluster only explicitly, and its calls own their text") {
    constexpr auto fixed = hetlaunch::make_cluster({{"gpu-a", 2}, {"gpu-b", 1}});
    const auto env = hetlaunch::try_worker_env(hetlaunch::cluster(fixed), 1, 99, options_with(""));
    CHECK(mentions(env.error().message(), "gpu-b"));
    const auto plan = hetlaunch::make_plan(fixed, options_with(heap_text("-s")));
    REQUIRE(!plan);
    CHECK(mentions(plan.error().front().message(), "-s"));
  }

  TEST_CASE("a plan's diagnostics outlive the plan") {
    hetlaunch::result<hetlaunch::environment, hetlaunch::diagnostic> env = hetlaunch::environment{};
    {
      const auto plan =
          hetlaunch::make_plan(hetlaunch::cluster{{heap_text("gpu-a"), 1}}, options_with(""));
      env = plan->try_worker_env(0, 3);
    }
    CHECK(mentions(env.error().message(), "gpu-a"));
  }

  TEST_CASE("check_worker_env: the diagnostics own the values the environment gave") {
    std::vector<hetlaunch::diagnostic> ds;
    {
      const hetlaunch::cluster c{{heap_text("gpu-a"), 2}, {"b", 1}};
      const hetlaunch::environment env = {{"WORLD_SIZE", heap_text("three")},
                                          {"GROUP_RANK", "0"},
                                          {"LOCAL_WORLD_SIZE", "4"},
                                          {"RANK", "0"},
                                          {"LOCAL_RANK", "0"}};
      ds = hetlaunch::check_worker_env(c, env);
    }
    REQUIRE(ds.size() == 2);
    CHECK(ds[0].code == hetlaunch::errc::env_not_a_number);
    CHECK(mentions(ds[0].message(), "three"));
    CHECK(ds[1].code == hetlaunch::errc::local_world_size_mismatch);
    CHECK(mentions(ds[1].message(), "gpu-a"));
  }

  TEST_CASE("parsers return errors that own their messages") {
    const auto hostfile = hetlaunch::parse_hostfile(heap_text("a slots=0 "));
    CHECK(hostfile.error().code == hetlaunch::errc::bad_nproc);
    const auto list = hetlaunch::parse_host_list(heap_text("a:1,"));
    CHECK(list.error().code == hetlaunch::errc::bad_syntax);
    const auto hosts = hetlaunch::expand_hostlist(heap_text("n[1-"));
    CHECK(mentions(hosts.error().to_string(), "']'"));
    const auto job = hetlaunch::cluster_from_slurm([](const char* name) -> const char* {
      static const std::string nodes = "n[1-2]", counts = "2(x3)";
      if (std::string(name) == "SLURM_JOB_NODELIST") return nodes.c_str();
      if (std::string(name) == "SLURM_TASKS_PER_NODE") return counts.c_str();
      return nullptr;
    });
    CHECK(job.error().code == hetlaunch::errc::count_mismatch);
  }
}

TEST_SUITE("lifetime") {
  TEST_CASE("the checked queries of a temporary cluster") {
    const auto rank = hetlaunch::cluster{{heap_text("gpu-a"), 2}}.try_global_rank(0, 7);
    CHECK(mentions(rank.error().message(), "gpu-a"));
    const auto role = hetlaunch::cluster{{heap_text("gpu-a"), 2}}.try_role_rank(0, 9);
    CHECK(mentions(role.error().message(), "gpu-a"));
    CHECK(hetlaunch::cluster{{heap_text("gpu-a"), 2}}.try_locate(5).error().code ==
          hetlaunch::errc::global_rank_out_of_range);
  }

  TEST_CASE("ssh commands, filters, counts and env files on temporaries") {
    hetlaunch::ssh_options ssh;
    ssh.env = {{heap_text("BAD NAME"), "x"}};
    const auto plan = hetlaunch::make_plan(hetlaunch::cluster{{"a", 1}}, options_with("t.py"));
    const auto argv = hetlaunch::try_ssh_argv(*plan, 0, hetlaunch::ssh_options(ssh));
    CHECK(mentions(argv.error().message(), "BAD NAME"));
    const auto problems = hetlaunch::validate_ssh(hetlaunch::ssh_options(ssh));
    CHECK(mentions(problems.front().message(), "BAD NAME"));
    const auto filtered =
        hetlaunch::filter_devices(hetlaunch::cluster{{"a", 2}}, heap_text("zz"), "");
    CHECK(mentions(filtered.error().message, "zz"));
    CHECK(hetlaunch::expand_tasks_per_node(heap_text("2(x")).error().code ==
          hetlaunch::errc::bad_syntax);
    CHECK(mentions(hetlaunch::parse_env_file(heap_text("no equals sign ")).error().message,
                   "no equals sign"));
    CHECK(mentions(hetlaunch::try_compress_hostlist({heap_text("a,b")}).error().message, "a,b"));
    hetlaunch::jobset_options js;
    js.name = "t";
    js.image = heap_text("img\xff");
    js.launch.script = "t.py";
    CHECK(mentions(
        hetlaunch::validate_jobset({{1, 1, {}}}, hetlaunch::jobset_options(js)).front().message(),
        "img"));
  }
}

TEST_SUITE("one error vocabulary") {
  TEST_CASE("every parse error has a code that says what kind of problem it is") {
    using hetlaunch::errc;
    CHECK(hetlaunch::parse_hostfile("a\na\n").error().code == errc::duplicate_host);
    CHECK(hetlaunch::parse_hostfile("a b\n").error().code == errc::bad_syntax);
    CHECK(hetlaunch::parse_hostfile("a_b\n").error().code == errc::bad_host);
    CHECK(hetlaunch::parse_hostfile("# none\n").error().code == errc::empty_cluster);
    CHECK(hetlaunch::parse_hostfile("a slots=2000000000\nb slots=2000000000\n").error().code ==
          errc::world_size_overflow);
    CHECK(hetlaunch::parse_host_list("a:0").error().code == errc::bad_nproc);
    CHECK(hetlaunch::expand_hostlist("n[0-99]", 10).error().code == errc::limit_exceeded);
    CHECK(hetlaunch::expand_tasks_per_node("2(x").error().code == errc::bad_syntax);
    const auto c = *hetlaunch::parse_host_list("a:2,b:2");
    CHECK(hetlaunch::filter_devices(c, "c", "").error().code == errc::unknown_host);
    CHECK(hetlaunch::filter_devices(c, "a:7", "").error().code == errc::unknown_host);
    CHECK(hetlaunch::filter_devices(c, "", "a@b").error().code == errc::no_devices);
  }

  TEST_CASE("cluster_from_slurm validates the job like any topology") {
    const auto env = [](const char* list) {
      return [list](const char* name) -> const char* {
        const std::string n(name);
        if (n == "SLURM_JOB_NODELIST") return list;
        if (n == "SLURM_TASKS_PER_NODE") return "1(x2)";
        return nullptr;
      };
    };
    const auto dup = hetlaunch::cluster_from_slurm(env("n1,N1"));
    CHECK(dup.error().code == hetlaunch::errc::duplicate_host);
    CHECK(mentions(dup.error().message, "allow_duplicate_hosts"));
    hetlaunch::validate_options allow;
    allow.allow_duplicate_hosts = true;
    CHECK(hetlaunch::cluster_from_slurm(env("n1,N1"), std::size_t{1} << 20, std::size_t{1} << 27,
                                        allow));
    CHECK(hetlaunch::cluster_from_slurm(env("n_1,n_2")).error().code == hetlaunch::errc::bad_host);
  }
}
