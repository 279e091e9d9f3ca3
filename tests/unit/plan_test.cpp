// SPDX-License-Identifier: MIT
// plan.hpp: a plan is validated once, reports every problem at once, and then gives the same
// commands and environments as the one-call functions, each at the cost of its own size.
#include <doctest/doctest.h>

#include <hetlaunch/plan.hpp>

#include <string>
#include <vector>

using strings = std::vector<std::string>;

TEST_SUITE("plan") {
  TEST_CASE("a plan's outputs are the one-call functions' outputs") {
    const hetlaunch::cluster c{{"gpu-a", 8}, {"gpu-b", 4}, {"gpu-c", 2, "ps"}};
    hetlaunch::launch_options o;
    o.script = "train.py";
    o.script_args = {"--epochs", "3"};
    const auto plan = hetlaunch::make_plan(c, o);
    REQUIRE(plan);
    for (std::size_t i = 0; i < c.node_count(); ++i) {
      CHECK(plan->torchrun_argv(i) == hetlaunch::torchrun_argv(c, i, o));
      CHECK(plan->agent_env(i) == hetlaunch::agent_env(c, i));
      for (int l = 0; l < c.nproc(i); ++l) {
        CHECK(plan->worker_env(i, l) == hetlaunch::worker_env(c, i, l, o));
        CHECK(plan->worker_env(i, l, 2) == hetlaunch::worker_env(c, i, l, o, 2));
        CHECK(plan->direct_worker_env(i, l) == hetlaunch::direct_worker_env(c, i, l, o));
      }
      CHECK(plan->try_accelerate_argv(i).value() == hetlaunch::accelerate_argv(c, i, o));
    }
  }

  TEST_CASE("a plan owns its topology and options") {
    hetlaunch::launch_options o;
    o.script = "train.py";
    auto plan = [&] {
      std::string host = "gpu-a";
      const hetlaunch::cluster c{{host, 2}};
      return *hetlaunch::make_plan(c, o);
    }();
    o.script = "other.py";
    CHECK(plan.topology().node(0).host == "gpu-a");
    CHECK(plan.torchrun_argv(0).back() == "train.py");
  }

  TEST_CASE("a plan without a script serves environments and refuses commands") {
    const hetlaunch::cluster c{{"a", 2}, {"b", 1}};
    const auto plan = hetlaunch::make_plan(c, hetlaunch::launch_options{});
    REQUIRE(plan);
    CHECK(plan->worker_env(1, 0).size() > 10);
    CHECK(plan->try_torchrun_argv(0).error().code == hetlaunch::errc::empty_script);
    CHECK(plan->try_torchrun_argv(2).error().code == hetlaunch::errc::node_out_of_range);
    CHECK(plan->try_worker_env(0, 2).error().code == hetlaunch::errc::local_rank_out_of_range);
    CHECK(plan->try_worker_env(5, 0).error().code == hetlaunch::errc::node_out_of_range);
    CHECK(plan->try_agent_env(2).error().code == hetlaunch::errc::node_out_of_range);
  }

  TEST_CASE("every problem of topology and options at once") {
    const hetlaunch::cluster c{{"a", 0}, {"A", 1}};
    hetlaunch::launch_options o;
    o.master_port = 0;
    o.rendezvous_timeout = -5;
    o.torchrun_args = {"--nproc_per_node=99", "--redirects", "3",      "--node-rank", "5",
                       "--nnode=1",           "--rdzv=x",    "--tee=3"};
    o.script = "--max_restarts=9";
    const auto plan = hetlaunch::make_plan(c, o);
    REQUIRE(!plan);
    std::vector<std::string> messages;
    for (const auto& d : plan.error()) messages.push_back(d.message());
    CHECK(
        messages ==
        strings{
            "node 0 ('a'): nproc must be at least 1, got 0",
            "node 1 ('A'): host is also node 0; two agents on one host must be allowed explicitly (allow_duplicate_hosts)",
            "master_port must be 1..65535, got 0",
            "rendezvous_timeout must be 0 (torchrun's default) or more seconds, got -5",
            "the extra torchrun argument '--nproc_per_node=99' names an option hetlaunch computes (--nnodes, --node_rank, "
            "--nproc_per_node, --master_addr, --master_port, --rdzv_*, --max_restarts, --role, --standalone); set it "
            "through the launch options instead",
            "the extra torchrun argument '--node-rank' names an option hetlaunch computes (--nnodes, --node_rank, "
            "--nproc_per_node, --master_addr, --master_port, --rdzv_*, --max_restarts, --role, --standalone); set it "
            "through the launch options instead",
            "the extra torchrun argument '--nnode=1' names an option hetlaunch computes (--nnodes, --node_rank, "
            "--nproc_per_node, --master_addr, --master_port, --rdzv_*, --max_restarts, --role, --standalone); set it "
            "through the launch options instead",
            "the extra torchrun argument '--rdzv=x' names an option hetlaunch computes (--nnodes, --node_rank, "
            "--nproc_per_node, --master_addr, --master_port, --rdzv_*, --max_restarts, --role, --standalone); set it "
            "through the launch options instead",
            "the script '--max_restarts=9' starts with '-', so torchrun would read it as one of its own options",
        });
  }

  TEST_CASE("the one-call functions refuse overriding arguments too") {
    const hetlaunch::cluster c{{"a", 2}, {"b", 1}};
    hetlaunch::launch_options o;
    o.script = "train.py";
    o.torchrun_args = {"--master-port", "1"};
    CHECK(hetlaunch::try_torchrun_argv(c, 0, o).error().code ==
          hetlaunch::errc::overriding_torchrun_arg);
    o.torchrun_args = {"--redirects",         "2", "--tee", "2", "--log-dir=/tmp/x",
                       "--monitor_interval=1"};
    CHECK(hetlaunch::try_torchrun_argv(c, 0, o));
  }

  TEST_CASE("accelerate ignores the launcher program, so an empty one is no problem for it") {
    const hetlaunch::cluster c{{"a", 2}, {"b", 1}};
    hetlaunch::launch_options o;
    o.script = "train.py";
    o.program.clear();
    CHECK(hetlaunch::try_accelerate_argv(c, 0, o));
    CHECK(hetlaunch::try_torchrun_argv(c, 0, o).error().code == hetlaunch::errc::empty_program);
  }

  TEST_CASE("a fixed topology makes a plan too") {
    constexpr auto fixed = hetlaunch::make_cluster({{"n0", 3}, {"n1", 1}});
    hetlaunch::launch_options o;
    o.script = "t.py";
    const auto plan = hetlaunch::make_plan(fixed, o);
    REQUIRE(plan);
    CHECK(plan->topology().world_size() == 4);
    CHECK(plan->worker_env(1, 0) == hetlaunch::worker_env(fixed, 1, 0, o));
  }

  // Every output of every node of a 100,000-node plan: linear work is well under a second, while
  // an output that validated the whole topology again (as the one-call functions must) would
  // make 10^10 node checks per output and run into the test's time limit instead of passing.
  TEST_CASE("100,000 nodes: every output of every node costs its own size") {
    constexpr std::size_t nodes = 100000;
    std::vector<std::string> hosts;
    for (std::size_t i = 0; i < nodes; ++i) hosts.push_back(hetlaunch::detail::concat("n", i));
    std::vector<hetlaunch::node_spec> specs;
    for (std::size_t i = 0; i < nodes; ++i)
      specs.push_back({hosts[i], 1 + static_cast<int>(i % 8)});
    hetlaunch::launch_options o;
    o.script = "train.py";
    o.global_batch = 1000003;
    const auto plan = hetlaunch::make_plan(hetlaunch::cluster(specs), o);
    REQUIRE(plan);
    std::size_t torchrun_args = 0, accelerate_args = 0, worker_vars = 0, direct_vars = 0,
                agent_vars = 0;
    long long batch = 0;
    for (std::size_t i = 0; i < nodes; ++i) {
      torchrun_args += plan->torchrun_argv(i).size();
      accelerate_args += plan->accelerate_argv(i).size();
      worker_vars += plan->worker_env(i, 0).size();
      direct_vars += plan->direct_worker_env(i, 0).size();
      agent_vars += plan->agent_env(i).size();
      batch += plan->node_batch_of(i).batch;
    }
    CHECK(torchrun_args == nodes * 8);
    CHECK(accelerate_args == nodes * 18);
    std::size_t worker_period = 0, direct_period = 0;  // the node counts repeat every 8 nodes
    for (std::size_t i = 0; i < 8; ++i) {
      worker_period += plan->worker_env(i, 0).size();
      direct_period += plan->direct_worker_env(i, 0).size();
    }
    CHECK(worker_vars == nodes / 8 * worker_period);
    CHECK(direct_vars == nodes / 8 * direct_period);
    CHECK(agent_vars == nodes * 4);  // the share, its offset, the global batch and the host
    CHECK(batch == o.global_batch);
  }

  TEST_CASE("a plan's accelerate command is the one-call function's") {
    const hetlaunch::cluster c{{"a", 3}, {"b", 1}};
    hetlaunch::launch_options o;
    o.script = "t.py";
    o.script_args = {"--lr", "0.1"};
    o.backend = hetlaunch::rendezvous::c10d;
    o.rdzv_id = "job";
    const auto plan = hetlaunch::make_plan(c, o);
    REQUIRE(plan);
    for (std::size_t i = 0; i < 2; ++i)
      CHECK(plan->accelerate_argv(i) == hetlaunch::accelerate_argv(c, i, o));
    CHECK(plan->try_accelerate_argv(2).error().code == hetlaunch::errc::node_out_of_range);
    o.script.clear();
    const auto without_script = hetlaunch::make_plan(c, o);
    REQUIRE(without_script);
    CHECK(without_script->try_accelerate_argv(0).error().code == hetlaunch::errc::empty_script);
    const auto alone = hetlaunch::make_plan(hetlaunch::cluster{{"a", 1}}, o);
    REQUIRE(alone);
    CHECK(alone->try_accelerate_argv(0).error().code == hetlaunch::errc::empty_script);
    o.script = "t.py";
    const auto one_process = hetlaunch::make_plan(hetlaunch::cluster{{"a", 1}}, o);
    REQUIRE(one_process);
    CHECK(one_process->try_accelerate_argv(0).error().code == hetlaunch::errc::too_few_processes);
    CHECK(hetlaunch::try_accelerate_argv(hetlaunch::cluster{{"a", 1}}, 0, o).error().code ==
          hetlaunch::errc::too_few_processes);
  }
}

TEST_SUITE("refusals follow the output") {
  TEST_CASE("an environment needs no script, no program and no torchrun options") {
    const hetlaunch::cluster c{{"a", 2}, {"b", 1}};
    hetlaunch::launch_options o;
    o.program.clear();
    o.rendezvous_timeout = -1;
    o.torchrun_args = {"--nnodes=9"};
    CHECK(hetlaunch::try_worker_env(c, 1, 0, o));
    CHECK(hetlaunch::try_direct_worker_env(c, 1, 0, o));
    const auto argv = hetlaunch::validate_launch(c, 0, o);
    REQUIRE(argv.size() == 4);
    CHECK(argv[0].code == hetlaunch::errc::empty_program);
    CHECK(argv[1].code == hetlaunch::errc::bad_rendezvous_timeout);
    CHECK(argv[2].code == hetlaunch::errc::overriding_torchrun_arg);
    CHECK(argv[3].code == hetlaunch::errc::empty_script);
  }

  TEST_CASE("accelerate's command ignores program, torchrun options and flag style") {
    const hetlaunch::cluster c{{"a", 2}, {"b", 1}};
    hetlaunch::launch_options o;
    o.script = "train.py";
    o.program.clear();
    o.torchrun_args = {"--node_rank=5"};
    o.flags = hetlaunch::flag_style::dash;
    o.torch = {1, 13};
    CHECK(hetlaunch::try_accelerate_argv(c, 0, o));
    o.script.clear();
    CHECK(hetlaunch::try_accelerate_argv(c, 0, o).error().code == hetlaunch::errc::empty_script);
  }

  TEST_CASE("a c10d launch has a command but no predictable environment") {
    const hetlaunch::cluster c{{"a", 2}, {"b", 1}};
    hetlaunch::launch_options o;
    o.script = "train.py";
    o.backend = hetlaunch::rendezvous::c10d;
    o.rdzv_id = "job-7";
    CHECK(hetlaunch::validate_launch(c, 1, o).empty());
    CHECK(hetlaunch::try_torchrun_argv(c, 1, o));
    CHECK(hetlaunch::try_worker_env(c, 1, 0, o).error().code ==
          hetlaunch::errc::ranks_decided_at_rendezvous);
  }
}

namespace {
using hetlaunch::errc;
using hetlaunch::plan_outputs;

// One problem of the options, and what each output answers with it: the problem's code where the
// output depends on the option, the output's own refusal, or nothing (the output is given).
struct refusal_case {
  const char* name;
  void (*apply)(hetlaunch::launch_options&);
  errc torchrun, environment, share, accelerate;  // errc::ok: given
  unsigned stops;                                 // the plan_outputs it stops, as bits
};

constexpr unsigned bits(plan_outputs o) { return static_cast<unsigned>(o); }
constexpr unsigned torchrun_bit = bits(plan_outputs::torchrun_commands);
constexpr unsigned environment_bit = bits(plan_outputs::worker_environments);
constexpr unsigned share_bit = bits(plan_outputs::work_shares);
constexpr unsigned accelerate_bit = bits(plan_outputs::accelerate_commands);

const refusal_case refusal_cases[] = {
    {"no problem", [](hetlaunch::launch_options&) {}, errc::ok, errc::ok, errc::ok, errc::ok, 0},
    {"an empty program", [](hetlaunch::launch_options& o) { o.program.clear(); },
     errc::empty_program, errc::ok, errc::ok, errc::ok, torchrun_bit},
    {"a negative rendezvous timeout",
     [](hetlaunch::launch_options& o) { o.rendezvous_timeout = -1; }, errc::bad_rendezvous_timeout,
     errc::ok, errc::ok, errc::ok, torchrun_bit},
    {"an overriding torchrun argument",
     [](hetlaunch::launch_options& o) { o.torchrun_args = {"--nnodes=3"}; },
     errc::overriding_torchrun_arg, errc::ok, errc::ok, errc::ok, torchrun_bit},
    {"dash flags on torch 1.13",
     [](hetlaunch::launch_options& o) {
       o.flags = hetlaunch::flag_style::dash;
       o.torch = {1, 13};
     },
     errc::dash_flags_need_torch_2, errc::ok, errc::ok, errc::ok, torchrun_bit},
    {"a binding whose entry point an argument replaces",
     [](hetlaunch::launch_options& o) {
       o.binding = hetlaunch::numa_binding::node;
       o.torchrun_args = {"--run-path"};
     },
     errc::binding_entrypoint, errc::ok, errc::ok, errc::binding_not_carried, torchrun_bit},
    {"--virtual-local-rank",
     [](hetlaunch::launch_options& o) { o.torchrun_args = {"--virtual-local-rank"}; },
     errc::virtual_local_rank, errc::virtual_local_rank, errc::ok, errc::ok,
     torchrun_bit | environment_bit},
    {"c10d without a run id",
     [](hetlaunch::launch_options& o) { o.backend = hetlaunch::rendezvous::c10d; },
     errc::missing_rdzv_id, errc::missing_rdzv_id, errc::ok, errc::ok,
     torchrun_bit | environment_bit},
    {"a script that starts with '-'", [](hetlaunch::launch_options& o) { o.script = "-x"; },
     errc::script_looks_like_option, errc::ok, errc::ok, errc::script_looks_like_option,
     torchrun_bit | accelerate_bit},
    {"port 0", [](hetlaunch::launch_options& o) { o.master_port = 0; }, errc::bad_port,
     errc::bad_port, errc::ok, errc::bad_port, torchrun_bit | environment_bit | accelerate_bit},
    {"a master address with a blank", [](hetlaunch::launch_options& o) { o.master_addr = "a b"; },
     errc::bad_master_addr, errc::bad_master_addr, errc::ok, errc::bad_master_addr,
     torchrun_bit | environment_bit | accelerate_bit},
    {"a negative restart limit", [](hetlaunch::launch_options& o) { o.max_restarts = -1; },
     errc::bad_max_restarts, errc::bad_max_restarts, errc::ok, errc::bad_max_restarts,
     torchrun_bit | environment_bit | accelerate_bit},
    {"a global batch below the world size",
     [](hetlaunch::launch_options& o) { o.global_batch = 2; }, errc::ok,
     errc::global_batch_too_small, errc::global_batch_too_small, errc::ok,
     environment_bit | share_bit},
    {"a negative global batch", [](hetlaunch::launch_options& o) { o.global_batch = -6; }, errc::ok,
     errc::bad_global_batch, errc::bad_global_batch, errc::ok, environment_bit | share_bit},
    {"no script", [](hetlaunch::launch_options& o) { o.script.clear(); }, errc::empty_script,
     errc::ok, errc::ok, errc::empty_script, 0},
};

template <class Result>
errc refusal_of(const Result& r) {
  return r ? errc::ok : r.error().code;
}

hetlaunch::launch_options refusal_options(const refusal_case& k) {
  hetlaunch::launch_options o;
  o.script = "train.py";
  o.global_batch = 6;
  k.apply(o);
  return o;
}

// Every output of a plan for node 0, worker 0, as refusal codes, beside the expected ones.
template <class Plan>
void check_plan_answers(const Plan& p, const refusal_case& k) {
  CHECK(refusal_of(p.try_torchrun_argv(0)) == k.torchrun);
  CHECK(refusal_of(p.try_worker_env(0, 0)) == k.environment);
  CHECK(refusal_of(p.try_direct_worker_env(0, 0)) == k.environment);
  CHECK(refusal_of(p.try_worker_env_from_agent(0, 0, {})) == k.environment);
  CHECK(refusal_of(p.try_agent_env(0)) == k.share);
  CHECK(refusal_of(p.try_node_batch(0)) == k.share);
  CHECK(refusal_of(p.try_rank_batch(0, 0)) == k.share);
  CHECK(refusal_of(p.try_accelerate_argv(0)) == k.accelerate);
}
}  // namespace

TEST_SUITE("one answer from both ways") {
  TEST_CASE("each problem of the options stops exactly the outputs that depend on its option") {
    const hetlaunch::cluster c{{"a", 2}, {"b", 1}};
    for (const refusal_case& k : refusal_cases) {
      CAPTURE(k.name);
      const hetlaunch::launch_options o = refusal_options(k);
      // The one-call functions.
      CHECK(refusal_of(hetlaunch::try_torchrun_argv(c, 0, o)) == k.torchrun);
      CHECK(refusal_of(hetlaunch::try_worker_env(c, 0, 0, o)) == k.environment);
      CHECK(refusal_of(hetlaunch::try_direct_worker_env(c, 0, 0, o)) == k.environment);
      CHECK(refusal_of(hetlaunch::try_worker_env_from_agent(c, 0, 0, o, {})) == k.environment);
      CHECK(refusal_of(hetlaunch::try_agent_env(c, 0, o)) == k.share);
      CHECK(refusal_of(hetlaunch::try_accelerate_argv(c, 0, o)) == k.accelerate);
      // A plan made for all outputs refuses every problem of the options, as before.
      const auto all = hetlaunch::make_plan(c, o);
      CHECK(bool(all) == (k.stops == 0));
      if (all) check_plan_answers(*all, k);
      // A plan made for one output refuses only for that output's problems, and then answers
      // as the one-call functions do for every output.
      for (plan_outputs made_for :
           {plan_outputs::torchrun_commands, plan_outputs::worker_environments,
            plan_outputs::work_shares, plan_outputs::accelerate_commands}) {
        const unsigned made_for_bits = bits(made_for);
        CAPTURE(made_for_bits);
        const auto plan = hetlaunch::make_plan(c, o, made_for);
        REQUIRE(bool(plan) == !(k.stops & bits(made_for)));
        if (!plan) {
          CHECK(plan.error().size() == 1);
          continue;
        }
        check_plan_answers(*plan, k);
        CHECK(plan->problems().size() == (k.stops ? 1U : 0U));
      }
    }
  }

  TEST_CASE("a plan for the workers' environments needs no script and no program") {
    const hetlaunch::cluster c{{"a", 2}, {"b", 1}};
    hetlaunch::launch_options o;
    o.program.clear();
    o.torchrun_args = {"--node_rank=4"};
    const auto strict = hetlaunch::make_plan(c, o);
    REQUIRE(!strict);
    CHECK(strict.error().size() == 2);  // both problems at once
    const auto plan =
        hetlaunch::make_plan(c, o, plan_outputs::worker_environments | plan_outputs::work_shares);
    REQUIRE(plan);
    CHECK(plan->worker_env(1, 0) == hetlaunch::worker_env(c, 1, 0, o));
    CHECK(plan->problems().size() == 2);
    CHECK(plan->try_torchrun_argv(0).error().code == errc::empty_program);
    CHECK(hetlaunch::try_torchrun_argv(c, 0, o).error().code == errc::empty_program);
  }

  // For every combination of up to three problems, every node index (one past the last too) and
  // every local rank (one past too): each one-call function answers as the plan made for all
  // outputs when that plan can be made, and try_torchrun_argv refuses exactly when
  // validate_launch lists a problem, with its first.
  TEST_CASE("property: the one-call functions and the plan agree on every combination") {
    const hetlaunch::cluster c{{"a", 2}, {"b", 1}, {"c", 3, "ps"}};
    const std::size_t count = sizeof refusal_cases / sizeof refusal_cases[0];
    std::size_t combinations = 0;
    for (std::size_t i = 0; i < count; ++i)
      for (std::size_t j = i; j < count; ++j)
        for (std::size_t k = j; k < count; ++k) {
          hetlaunch::launch_options o = refusal_options(refusal_cases[i]);
          refusal_cases[j].apply(o);
          refusal_cases[k].apply(o);
          ++combinations;
          const auto all = hetlaunch::make_plan(c, o);
          for (std::size_t node = 0; node <= c.node_count(); ++node) {
            const std::vector<hetlaunch::diagnostic> listed =
                hetlaunch::validate_launch(c, node, o);
            const auto argv = hetlaunch::try_torchrun_argv(c, node, o);
            REQUIRE(bool(argv) == listed.empty());
            if (!argv) CHECK(argv.error().code == listed.front().code);
            const auto accelerate = hetlaunch::try_accelerate_argv(c, node, o);
            const auto agent = hetlaunch::try_agent_env(c, node, o);
            if (all) {
              CHECK(refusal_of(all->try_torchrun_argv(node)) == refusal_of(argv));
              CHECK(refusal_of(all->try_accelerate_argv(node)) == refusal_of(accelerate));
              CHECK(refusal_of(all->try_agent_env(node)) == refusal_of(agent));
              if (argv) CHECK(all->torchrun_argv(node) == *argv);
            }
            const int nproc = node < c.node_count() ? c.nproc(node) : 1;
            for (int local = 0; local <= nproc; ++local) {
              const auto env = hetlaunch::try_worker_env(c, node, local, o, 1);
              const auto direct = hetlaunch::try_direct_worker_env(c, node, local, o);
              if (all) {
                CHECK(refusal_of(all->try_worker_env(node, local, 1)) == refusal_of(env));
                CHECK(refusal_of(all->try_direct_worker_env(node, local)) == refusal_of(direct));
                if (env) CHECK(all->worker_env(node, local, 1) == *env);
              }
            }
          }
        }
    CHECK(combinations == count * (count + 1) * (count + 2) / 6);
  }
}
