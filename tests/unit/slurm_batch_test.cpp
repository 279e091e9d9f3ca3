// SPDX-License-Identifier: MIT
// slurm_batch.hpp: the batch script of a mixed Slurm job, its #SBATCH lines as sbatch reads them,
// and what it refuses. (The scripts run on a real Slurm in tests/slurm/cluster_test.py, and the
// command's output is pinned by tests/cli/golden/sbatch*.txt.)
#include <doctest/doctest.h>

#include <hetlaunch/slurm_batch.hpp>

#include <climits>
#include <string>
#include <vector>

namespace {
hetlaunch::slurm_batch_options batch_defaults() {
  hetlaunch::slurm_batch_options o;
  o.command = {"train.py", "--epochs", "3"};
  return o;
}
bool batch_script_has(const std::string& text, const std::string& part) {
  return text.find(part) != std::string::npos;
}
using sbatch_words = std::vector<std::string>;
}  // namespace

TEST_SUITE("slurm_batch") {
  TEST_CASE("a component a group, each node a task that runs hetlaunch exec --slurm") {
    const std::string script =
        hetlaunch::slurm_batch_script({{2, 8, {}, "1"}, {1, 4, {}, "1"}}, batch_defaults());
    CHECK(batch_script_has(
        script, "#!/bin/bash\n# hetlaunch: a heterogeneous job of 3 nodes and 20 workers"));
    CHECK(batch_script_has(script, "#   component 0: 2 nodes of 8 GPUs (nodes 0-1, ranks 0-15)\n"));
    CHECK(batch_script_has(script, "#   component 1: 1 node of 4 GPUs (node 2, ranks 16-19)\n"));
    CHECK(batch_script_has(
        script,
        "#SBATCH --nodes=2\n#SBATCH --ntasks-per-node=8\n#SBATCH --gpus-per-node=8\n"
        "#SBATCH hetjob\n#SBATCH --nodes=1\n"));
    CHECK(batch_script_has(script, "hetlaunch plan --slurm -- train.py --epochs 3\n"));
    // The step's stderr goes to the script's and to the step log, which a failure reads.
    CHECK(
        batch_script_has(script,
                         "( srun --nodes=2 --ntasks=2 --ntasks-per-node=1 --gpus-per-node=8 : \\\n"
                         "     --nodes=1 --ntasks=1 --ntasks-per-node=1 --gpus-per-node=4 \\\n"
                         "  hetlaunch exec --slurm -- train.py --epochs 3 2>&1 1>&3 3>&- | tee -a "
                         "\"$step_log\" >&2; exit \"${PIPESTATUS[0]}\" ) 3>&1 || status=$?\n"));
    // A failed job's comment names the failure, the node and rank read from the plan's table.
    CHECK(batch_script_has(script,
                           "if [ \"$status\" -ne 0 ]; then say_failure worker_failed; exit "
                           "\"$status\"; fi\n"));
    CHECK(batch_script_has(script,
                           "what=$(hetlaunch plan --slurm -- train.py --epochs 3 2>/dev/null | "
                           "awk -v steplog=\"$step_log\" -v moved=0 '"));
    CHECK(
        batch_script_has(script,
                         "scontrol update JobId=\"$SLURM_JOB_ID\" Comment=\"hetlaunch: $1${what:+ "
                         "$what}\" 2>/dev/null || true\n"));
    CHECK(!batch_script_has(
        script, "HETLAUNCH_TASKS_PER_NODE"));  // a hetjob's own variables survive in steps
  }

  TEST_CASE("one group keeps the job's layout for its steps; weights name the nodes when it runs") {
    hetlaunch::slurm_batch_options o = batch_defaults();
    o.launch_args = {"--global-batch", "64"};
    const std::string one = hetlaunch::slurm_batch_script({{2, 8, {}, "2.5"}}, o);
    CHECK(batch_script_has(one, "export HETLAUNCH_TASKS_PER_NODE=\"$SLURM_TASKS_PER_NODE\"\n"));
    CHECK(batch_script_has(
        one, "plan --slurm --global-batch 64 --weight \"$SLURM_JOB_NODELIST\"=2.5 -- train.py"));
    const std::string two = hetlaunch::slurm_batch_script({{1, 8, {}, "3"}, {1, 4, {}, "1"}}, o);
    CHECK(batch_script_has(
        two,
        "--weight \"${SLURM_JOB_NODELIST_HET_GROUP_0:-$SLURM_JOB_NODELIST_PACK_GROUP_0}\"=3 --"));
    CHECK(!batch_script_has(two, "HET_GROUP_1"));  // weight 1 is the default
  }

  TEST_CASE("restarts: a loop that a signal never restarts, the attempt given to exec") {
    hetlaunch::slurm_batch_options o = batch_defaults();
    o.restart = hetlaunch::restart_options{};
    o.restart->restarts = 2;
    const std::string script = hetlaunch::slurm_batch_script({{2, 4, {}, "1"}}, o);
    CHECK(batch_script_has(
        script, "for signal in INT TERM HUP; do trap \"interrupted=$signal\" \"$signal\"; done\n"));
    // The attempt reaches exec as a flag, never as an inherited variable exec would remove.
    CHECK(batch_script_has(script, " exec --restart-count \"$attempt\" "));
    CHECK(!batch_script_has(script, "export HETLAUNCH_RESTART_COUNT"));
    CHECK(batch_script_has(script, "  ( srun --kill-on-bad-exit=1 --nodes=2"));
    CHECK(batch_script_has(script, "no restart left (--restarts 2)"));
    CHECK(batch_script_has(script, "    say_failure restarts_exhausted\n"));
    CHECK(batch_script_has(script, "    say_failure interrupted\n"));
    CHECK(!batch_script_has(script, "--no-kill"));
    o.restart->exclude_failed = true;
    o.restart->min_nodes = 2;
    const std::string shrinking = hetlaunch::slurm_batch_script({{2, 4, {}, "1"}}, o);
    CHECK(batch_script_has(shrinking, "#SBATCH --no-kill\n"));
    CHECK(batch_script_has(shrinking, "--nodes=\"$SLURM_JOB_NUM_NODES\""));
    CHECK(batch_script_has(shrinking, "    export HETLAUNCH_TASKS_PER_NODE=\"4(x$count)\"\n"));
    CHECK(batch_script_has(shrinking, "fewer than --min-nodes 2"));
    // Nodes move between attempts: the comment names the host alone.
    CHECK(batch_script_has(shrinking, "-v moved=1 '"));
  }

  TEST_CASE("an sbatch option is one #SBATCH line, its words read back as given") {
    hetlaunch::slurm_batch_options o = batch_defaults();
    o.sbatch_args = {"--job-name=two words", "-A acct", "--comment c #1", "-Jx", "--exclusive"};
    o.partition = "gpu";
    const std::string script = hetlaunch::slurm_batch_script({{1, 1, {}, "1"}}, o);
    CHECK(batch_script_has(script,
                           "#SBATCH \"--job-name=two words\"\n#SBATCH -A acct\n"
                           "#SBATCH --comment \"c #1\"\n#SBATCH -Jx\n#SBATCH --exclusive\n"
                           "#SBATCH --partition=gpu\n"));
  }

  TEST_CASE("sbatch_directive_words reads an option as sbatch's table says") {
    CHECK(hetlaunch::sbatch_directive_words("--account=a").value() == sbatch_words{"--account=a"});
    CHECK(hetlaunch::sbatch_directive_words("--account a").value() ==
          sbatch_words{"--account", "a"});
    CHECK(hetlaunch::sbatch_directive_words("--acc a").value() ==
          sbatch_words{"--acc", "a"});  // getopt's abbreviation
    CHECK(hetlaunch::sbatch_directive_words("-HJname").value() == sbatch_words{"-HJname"});
    CHECK(hetlaunch::sbatch_directive_words("-A  acct").value() == sbatch_words{"-A", "acct"});
    CHECK(hetlaunch::sbatch_directive_words("--requeue").value() == sbatch_words{"--requeue"});
    for (const char* refused :
         {"-J", "--job-name", "--job", "-HJ", "-A  ", "hetjob", "-", "x\ny"}) {
      CAPTURE(refused);
      const auto r = hetlaunch::sbatch_directive_words(refused);
      REQUIRE(!r);
      CHECK(r.error().code == hetlaunch::errc::bad_sbatch_option);
    }
    CHECK(hetlaunch::sbatch_directive_words("-J").error().message() ==
          "--sbatch-arg '-J': sbatch's -J takes a value, which must be in the same --sbatch-arg "
          "(\"-JVALUE\" or \"-J VALUE\"): alone, it would take the next #SBATCH line as its value");
    CHECK(
        hetlaunch::sbatch_directive_words("hetjob").error().message() ==
        "--sbatch-arg 'hetjob' is not an sbatch option (\"--job-name=x\", \"-A acct\" or \"-Aacct\")");
  }

  TEST_CASE("what the script cannot hold is refused, each problem named") {
    using hetlaunch::errc;
    const auto codes = [](const std::vector<hetlaunch::node_group>& groups,
                          const hetlaunch::slurm_batch_options& o) {
      std::vector<errc> out;
      for (const auto& d : hetlaunch::validate_slurm_batch(groups, o)) out.push_back(d.code);
      return out;
    };
    CHECK(codes({}, batch_defaults()) == std::vector<errc>{errc::bad_group});
    CHECK(codes({{0, 8, {}, "1"}, {1, 0, {}, "1"}}, batch_defaults()) ==
          std::vector<errc>{errc::bad_group, errc::bad_group});
    CHECK(codes({{1, 8, {}, "0"}}, batch_defaults()) == std::vector<errc>{errc::bad_weight});
    const auto over =
        hetlaunch::validate_slurm_batch({{1 << 30, 1 << 30, {}, "1"}}, batch_defaults());
    REQUIRE(over.size() == 1);
    CHECK(over[0].message() ==
          "the groups up to '1073741824:1073741824' hold more than 2147483647 workers, more than "
          "torch's ranks can count");
    // The world size is exact: INT_MAX workers fit, one more does not.
    CHECK(codes({{1, INT_MAX, {}, "1"}}, batch_defaults()).empty());
    CHECK(codes({{1, INT_MAX, {}, "1"}, {1, 1, {}, "1"}}, batch_defaults()) ==
          std::vector<errc>{errc::world_size_overflow});
    hetlaunch::slurm_batch_options o = batch_defaults();
    o.restart = hetlaunch::restart_options{1, true, 1};
    CHECK(codes({{1, 8, {}, "1"}, {1, 4, {}, "1"}}, o) ==
          std::vector<errc>{errc::shrink_needs_one_group});
    o.restart->min_nodes = 3;
    const auto few = hetlaunch::validate_slurm_batch({{2, 8, {}, "1"}}, o);
    REQUIRE(few.size() == 1);
    CHECK(few[0].message() == "--min-nodes 3 is more than the job's 2 nodes");
    o.restart->min_nodes = 0;
    CHECK(codes({{2, 8, {}, "1"}}, o) == std::vector<errc>{errc::bad_min_nodes});
    // A count past any long long is refused as too many, never wrapped to a negative one.
    o.restart->min_nodes = ~std::size_t{0};
    const auto huge = hetlaunch::validate_slurm_batch({{2, 8, {}, "1"}}, o);
    REQUIRE(huge.size() == 1);
    CHECK(huge[0].code == errc::bad_min_nodes);
    CHECK(huge[0].message().find("--min-nodes -") == std::string::npos);
    o = batch_defaults();
    o.partition = "gpu\n#SBATCH --x";
    o.time = std::string("1\0", 2);
    CHECK(codes({{1, 8, {}, "1"}}, o) ==
          std::vector<errc>{errc::bad_sbatch_option, errc::bad_sbatch_option});
    CHECK(!hetlaunch::try_slurm_batch_script({{1, 8, {}, "1"}}, o));
  }
}
