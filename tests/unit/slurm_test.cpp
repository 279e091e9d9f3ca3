// SPDX-License-Identifier: MIT
// slurm.hpp: a Slurm job's topology from its environment, as recorded from real jobs
// (tests/slurm/recorded_environments.hpp) and as the documented precedence says.
#include <doctest/doctest.h>

#include <hetlaunch/slurm.hpp>

#include "../slurm/recorded_environments.hpp"

#include <map>
#include <string>
#include <vector>

namespace {

struct fake_env {
  std::map<std::string, std::string> vars;
  const char* operator()(const char* name) const {
    const auto it = vars.find(name);
    return it == vars.end() ? nullptr : it->second.c_str();
  }
};

fake_env parse_recorded(const char* lines) {
  fake_env env;
  std::string_view text(lines);
  while (!text.empty()) {
    const std::size_t end = text.find('\n');
    const std::string_view line = text.substr(0, end);
    const std::size_t eq = line.find('=');
    if (eq != std::string_view::npos)
      env.vars[std::string(line.substr(0, eq))] = std::string(line.substr(eq + 1));
    text = end == std::string_view::npos ? std::string_view() : text.substr(end + 1);
  }
  return env;
}

std::string hosts_of(const hetlaunch::cluster& c) {
  std::string out;
  for (std::size_t i = 0; i < c.node_count(); ++i)
    out += hetlaunch::detail::concat(out.empty() ? "" : " ", c.node(i).host, ":", c.nproc(i));
  return out;
}

// A heterogeneous job of two components, as Slurm 22.05 describes it in the batch script.
fake_env hetjob_batch() {
  return fake_env{{{"SLURM_HET_SIZE", "2"},
                   {"SLURM_JOB_NODELIST", "h1"},
                   {"SLURM_TASKS_PER_NODE", "2"},
                   {"SLURM_NODEID", "0"},
                   {"SLURMD_NODENAME", "h1"},
                   {"SLURM_JOB_NODELIST_HET_GROUP_0", "h1"},
                   {"SLURM_TASKS_PER_NODE_HET_GROUP_0", "2"},
                   {"SLURM_JOB_NODELIST_HET_GROUP_1", "h[0,2]"},
                   {"SLURM_TASKS_PER_NODE_HET_GROUP_1", "1(x2)"}}};
}
}  // namespace

TEST_SUITE("slurm") {
  TEST_CASE("cluster_from_slurm: nodes from the node list, counts by documented precedence") {
    fake_env env{{{"SLURM_JOB_NODELIST", "gpu[01-02],cpu7"},
                  {"SLURM_TASKS_PER_NODE", "8,4,2"},
                  {"SLURM_NODEID", "1"}}};
    auto job = hetlaunch::cluster_from_slurm(env);
    REQUIRE(job);
    CHECK(job->nodes.node_count() == 3);
    CHECK(job->nodes.node(2).host == "cpu7");
    CHECK(job->nodes.world_size() == 14);
    CHECK(job->this_node.has_value());
    CHECK(job->this_node == 1);
    CHECK(job->counts_from == "SLURM_TASKS_PER_NODE");
    env.vars["HETLAUNCH_TASKS_PER_NODE"] = "4(x2),1";
    CHECK(hetlaunch::cluster_from_slurm(env)->nodes.world_size() == 9);
    env.vars.erase("HETLAUNCH_TASKS_PER_NODE");
    env.vars.erase("SLURM_TASKS_PER_NODE");
    env.vars["SLURM_GPUS_PER_NODE"] = "a100:4";
    CHECK(hetlaunch::cluster_from_slurm(env)->nodes.world_size() == 12);
    env.vars.erase("SLURM_GPUS_PER_NODE");
    env.vars["SLURM_JOB_CPUS_PER_NODE"] = "72(x2),36";
    CHECK(hetlaunch::cluster_from_slurm(env)->counts_from == "SLURM_JOB_CPUS_PER_NODE");
  }
  TEST_CASE("cluster_from_slurm: missing or inconsistent variables are named") {
    const auto error = [](fake_env env) {
      return hetlaunch::cluster_from_slurm(env).error().to_string();
    };
    CHECK(error({}) == "SLURM_JOB_NODELIST is not set; is this running inside a Slurm job?");
    CHECK(
        error({{{"SLURM_JOB_NODELIST", "a[1-2]"}}}) ==
        "no worker counts: none of HETLAUNCH_TASKS_PER_NODE, SLURM_TASKS_PER_NODE, SLURM_GPUS_PER_NODE, SLURM_JOB_CPUS_PER_NODE is set");
    CHECK(error({{{"SLURM_JOB_NODELIST", "a[1-3]"}, {"SLURM_TASKS_PER_NODE", "2(x2)"}}}) ==
          "SLURM_TASKS_PER_NODE gives 2 counts but SLURM_JOB_NODELIST names 3 hosts");
    CHECK(error({{{"SLURM_JOB_NODELIST", "a[1-3"}, {"SLURM_TASKS_PER_NODE", "2"}}}) ==
          "SLURM_JOB_NODELIST: line 1, column 2: '[' without a matching ']'");
    CHECK(error({{{"SLURM_NODELIST", "a[1-2]"}, {"SLURM_TASKS_PER_NODE", "2(x)"}}}) ==
          "SLURM_TASKS_PER_NODE: line 1, column 4: expected a repeat count, got ')'");
    CHECK(error({{{"SLURM_JOB_NODELIST", "a[1-2]"},
                  {"SLURM_TASKS_PER_NODE", "2(x2)"},
                  {"SLURM_NODEID", "2"}}}) ==
          "SLURM_NODEID=2 is out of range: SLURM_JOB_NODELIST names 2 hosts");
    CHECK(error({{{"SLURM_JOB_NODELIST", "a[1-2]"},
                  {"SLURM_TASKS_PER_NODE", "2(x2)"},
                  {"SLURM_NODEID", "x"}}}) == "SLURM_NODEID='x' is not a node index");
    CHECK(error({{{"SLURM_JOB_NODELIST", "a[1-2]"}, {"SLURM_GPUS_PER_NODE", "a100:4,v100:2"}}}) ==
          "SLURM_GPUS_PER_NODE='a100:4,v100:2' is not one count ([type:]N)");
  }
  TEST_CASE("cluster_from_slurm: the recorded environments of a real heterogeneous job") {
    // Slurm 22.05, components h1 (2 tasks), then h0 and h2: every batch script and step finds the
    // job's nodes in component order, and its own node is the host it runs on.
    CHECK(std::size(recorded_environments) >= 10);
    for (const recorded_environment& r : recorded_environments) {
      CAPTURE(r.name);
      const fake_env env = parse_recorded(r.variables);
      const auto job = hetlaunch::cluster_from_slurm(env);
      REQUIRE(job);
      CHECK(hosts_of(job->nodes) == "h1:2 h0:1 h2:1");
      CHECK(job->component_first == std::vector<std::size_t>{0, 1});
      REQUIRE(job->this_node.has_value());
      CHECK(job->nodes.node(*job->this_node).host == env.vars.at("SLURMD_NODENAME"));
      const std::string where(r.name);
      if (where.rfind("step1.", 0) == 0) {
        // --het-group=1: SLURM_NODEID counts the step's two nodes, h0 and h2.
        CHECK(
            job->step_problem ==
            "this step runs on 2 of the job's 3 nodes (SLURM_STEP_NUM_NODES=2, in a job of 2 components), but the plan "
            "starts one torchrun on each of the job's 3 nodes, which would wait for the others: start one task on "
            "every node: srun --nodes=1 --ntasks=1 : --nodes=2 --ntasks=2");
      } else if (where.rfind("stepall.", 0) == 0) {
        // --het-group=0,1 runs each component's own tasks: two on h1.
        CHECK(
            job->step_problem ==
            "this step runs '1,2,1' tasks on its nodes (SLURM_STEP_TASKS_PER_NODE), but the plan starts one torchrun "
            "on each of the job's 3 nodes: start one task a node: srun --nodes=1 --ntasks=1 : --nodes=2 --ntasks=2");
      } else {
        CHECK(job->step_problem.empty());
      }
    }
  }
  TEST_CASE("cluster_from_slurm: a heterogeneous job is read per component, in component order") {
    fake_env env = hetjob_batch();
    auto job = hetlaunch::cluster_from_slurm(env);
    REQUIRE(job);
    CHECK(hosts_of(job->nodes) == "h1:2 h0:1 h2:1");
    CHECK(job->counts_from == "SLURM_TASKS_PER_NODE_HET_GROUP_0");
    CHECK(job->this_node == 0);
    CHECK(job->step_problem.empty());
    // A step over both components: the merged list is sorted by name, SLURM_NODEID is not.
    env.vars["SLURM_JOB_NODELIST"] = "h[0-2]";
    env.vars["SLURM_TASKS_PER_NODE"] = "1(x3)";
    env.vars["SLURM_STEP_NUM_NODES"] = "3";
    env.vars["SLURM_STEP_TASKS_PER_NODE"] = "1(x3)";
    env.vars["SLURM_NODEID"] = "1";
    env.vars["SLURMD_NODENAME"] = "h0";
    job = hetlaunch::cluster_from_slurm(env);
    REQUIRE(job);
    CHECK(job->nodes.node(*job->this_node).host == "h0");
    // The older names Slurm still sets beside the new ones are read as well.
    fake_env pack;
    for (const auto& v : hetjob_batch().vars) {
      std::string name = v.first;
      if (name == "SLURM_HET_SIZE") name = "SLURM_PACK_SIZE";
      const std::size_t at = name.find("_HET_GROUP_");
      if (at != std::string::npos) name.replace(at, 11, "_PACK_GROUP_");
      pack.vars[name] = v.second;
    }
    job = hetlaunch::cluster_from_slurm(pack);
    REQUIRE(job);
    CHECK(hosts_of(job->nodes) == "h1:2 h0:1 h2:1");
    CHECK(job->counts_from == "SLURM_TASKS_PER_NODE_PACK_GROUP_0");
    // Counts of each component by the same precedence as a plain job's.
    env = hetjob_batch();
    env.vars.erase("SLURM_TASKS_PER_NODE_HET_GROUP_1");
    env.vars["SLURM_GPUS_PER_NODE_HET_GROUP_1"] = "a100:4";
    CHECK(hosts_of(hetlaunch::cluster_from_slurm(env)->nodes) == "h1:2 h0:4 h2:4");
    // HETLAUNCH_TASKS_PER_NODE gives every node's count, in component order.
    env.vars["HETLAUNCH_TASKS_PER_NODE"] = "3,2(x2)";
    env.vars.erase("SLURM_GPUS_PER_NODE_HET_GROUP_1");
    CHECK(hosts_of(hetlaunch::cluster_from_slurm(env)->nodes) == "h1:3 h0:2 h2:2");
  }
  TEST_CASE("cluster_from_slurm: a step on only some nodes or with several tasks a node") {
    // A plain job's step on one of its nodes: SLURM_NODEID counts the step's nodes.
    fake_env env{{{"SLURM_JOB_NODELIST", "a[1-3]"},
                  {"SLURM_TASKS_PER_NODE", "4,2,1"},
                  {"SLURM_STEP_NUM_NODES", "1"},
                  {"SLURM_NODEID", "0"},
                  {"SLURMD_NODENAME", "a3"}}};
    auto job = hetlaunch::cluster_from_slurm(env);
    REQUIRE(job);
    CHECK(job->this_node == 2);
    CHECK(
        job->step_problem ==
        "this step runs on 1 of the job's 3 nodes (SLURM_STEP_NUM_NODES=1), but the plan starts one torchrun on each "
        "of the job's 3 nodes, which would wait for the others: start one task on every node: "
        "srun --ntasks-per-node=1 --ntasks=3");
    env.vars.erase("SLURMD_NODENAME");
    job = hetlaunch::cluster_from_slurm(env);
    REQUIRE(job);
    CHECK_FALSE(job->this_node.has_value());
    env.vars["SLURM_STEP_NUM_NODES"] = "3";
    env.vars["SLURM_STEP_TASKS_PER_NODE"] = "4,2,1";
    job = hetlaunch::cluster_from_slurm(env);
    REQUIRE(job);
    CHECK(job->this_node == 0);
    CHECK(job->step_problem.find("this step runs '4,2,1' tasks on its nodes") == 0);
    env.vars["SLURM_STEP_TASKS_PER_NODE"] = "1(x3)";
    CHECK(hetlaunch::cluster_from_slurm(env)->step_problem.empty());
    // A step layout that does not fit the step is not taken for one task a node.
    env.vars["SLURM_STEP_TASKS_PER_NODE"] = "1(x99999999999999)";
    CHECK(hetlaunch::cluster_from_slurm(env).error().to_string() ==
          "SLURM_STEP_TASKS_PER_NODE gives 99999999999999 counts but the step runs on 3 nodes");
  }
  TEST_CASE("cluster_from_slurm: what is wrong in a heterogeneous job is named") {
    const auto error = [](fake_env env) {
      return hetlaunch::cluster_from_slurm(env).error().to_string();
    };
    fake_env env = hetjob_batch();
    env.vars.erase("SLURM_JOB_NODELIST_HET_GROUP_1");
    CHECK(error(env) == "SLURM_HET_SIZE=2 but SLURM_JOB_NODELIST_HET_GROUP_1 is not set");
    env = hetjob_batch();
    env.vars["SLURM_TASKS_PER_NODE_HET_GROUP_1"] = "1";
    CHECK(
        error(env) ==
        "SLURM_TASKS_PER_NODE_HET_GROUP_1 gives 1 counts but SLURM_JOB_NODELIST_HET_GROUP_1 names 2 hosts");
    env.vars.erase("SLURM_TASKS_PER_NODE_HET_GROUP_1");
    CHECK(
        error(env) ==
        "no worker counts for component 1: none of SLURM_TASKS_PER_NODE_HET_GROUP_1, SLURM_GPUS_PER_NODE_HET_GROUP_1, "
        "SLURM_JOB_CPUS_PER_NODE_HET_GROUP_1 is set");
    env = hetjob_batch();
    env.vars["HETLAUNCH_TASKS_PER_NODE"] = "2";
    CHECK(
        error(env) ==
        "HETLAUNCH_TASKS_PER_NODE gives 1 counts but SLURM_JOB_NODELIST_HET_GROUP_0..1 names 3 hosts");
    for (const char* bad : {"0", "x", "-1", "99999999999999999999"}) {
      env = hetjob_batch();
      env.vars["SLURM_HET_SIZE"] = bad;
      CHECK(error(env).find("SLURM_HET_SIZE='") == 0);
    }
    // Both components count against one node limit.
    env = hetjob_batch();
    env.vars["SLURM_JOB_NODELIST_HET_GROUP_1"] = "n[1-1000],m[1-1000]";
    env.vars["SLURM_TASKS_PER_NODE_HET_GROUP_1"] = "1(x2000)";
    CHECK(hetlaunch::cluster_from_slurm(env, 2000).error().code == hetlaunch::errc::limit_exceeded);
    CHECK(hetlaunch::cluster_from_slurm(env, 2000).error().to_string().find(
              "SLURM_JOB_NODELIST_HET_GROUP_1 (after the 1 hosts of the components before it): ") ==
          0);
    CHECK(hetlaunch::cluster_from_slurm(env, 2001));
    env = hetjob_batch();
    env.vars["SLURM_JOB_NODELIST_HET_GROUP_1"] = "h1";
    env.vars["SLURM_TASKS_PER_NODE_HET_GROUP_1"] = "1";
    CHECK(error(env).find("duplicate") != std::string::npos);
  }
}
