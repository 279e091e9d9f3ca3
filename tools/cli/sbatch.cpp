// SPDX-License-Identifier: MIT
// `hetlaunch sbatch`: a batch script for a heterogeneous Slurm job, one component a node group,
// that starts one torchrun a node through `hetlaunch exec --slurm`.
#include "cli.hpp"

#include <algorithm>
#include <string_view>
#include <vector>

#include <climits>
#include <cstdio>

namespace cli {
namespace {

// One #SBATCH line a word, written so that sbatch reads back exactly that word. sbatch splits an
// #SBATCH line at blanks, removes quotes, takes a backslash as an escape, ends the line at an
// unquoted '#' and stops at an unmatched quote (src/sbatch/opt.c, _get_argument); a word that
// needs it is therefore written in double quotes, with a backslash before each '"' and backslash
// in it. A line break cannot be written at all, and neither can a NUL.
std::string directive_word(const std::string& word) {
  if (word.find_first_of(std::string("\n\r\0", 3)) != std::string::npos)
    throw usage_error{
        concat("an #SBATCH option cannot hold a line break or a NUL byte: ", quoted(word))};
  bool plain = !word.empty() && word[0] != ':';  // sbatch refuses a word that starts with ':'
  for (const char c : word)
    plain = plain && !(c == ' ' || c == '\t' || c == '\v' || c == '\f' || c == '"' || c == '\'' ||
                       c == '\\' || c == '#');
  if (plain) return word;
  std::string out = "\"";
  for (const char c : word) {
    if (c == '"' || c == '\\') out += '\\';
    out += c;
  }
  return out + "\"";
}
std::string directive(const std::string& word) {
  return concat("#SBATCH ", directive_word(word), "\n");
}
std::string directive(const std::vector<std::string>& words) {
  std::string out = "#SBATCH";
  for (const std::string& w : words) out += " " + directive_word(w);
  return out + "\n";
}

// sbatch's options (Slurm's src/common/slurm_opt.c, the ones sbatch reads): those that take a
// value, and those that take none or only an optional one written with '='. sbatch reads all of
// a component's #SBATCH lines as one argv, so an option that takes a value given without one
// would take the next line (hetlaunch's own "--partition=gpu") as its value.
constexpr std::string_view sbatch_options_with_value[] = {"account",
                                                          "acctg-freq",
                                                          "array",
                                                          "autocomplete",
                                                          "batch",
                                                          "bb",
                                                          "bbf",
                                                          "begin",
                                                          "chdir",
                                                          "cluster",
                                                          "cluster-constraint",
                                                          "clusters",
                                                          "comment",
                                                          "constraint",
                                                          "container",
                                                          "container-id",
                                                          "context",
                                                          "core-spec",
                                                          "cores-per-socket",
                                                          "cpu-freq",
                                                          "cpus-per-gpu",
                                                          "cpus-per-task",
                                                          "deadline",
                                                          "delay-boot",
                                                          "dependency",
                                                          "distribution",
                                                          "error",
                                                          "exclude",
                                                          "export",
                                                          "export-file",
                                                          "extra",
                                                          "extra-node-info",
                                                          "gid",
                                                          "gpu-bind",
                                                          "gpu-freq",
                                                          "gpus",
                                                          "gpus-per-node",
                                                          "gpus-per-socket",
                                                          "gpus-per-task",
                                                          "gres",
                                                          "gres-flags",
                                                          "hint",
                                                          "input",
                                                          "job-name",
                                                          "kill-on-invalid-dep",
                                                          "licenses",
                                                          "mail-type",
                                                          "mail-user",
                                                          "mcs-label",
                                                          "mem",
                                                          "mem-bind",
                                                          "mem-per-cpu",
                                                          "mem-per-gpu",
                                                          "mem-update",
                                                          "mincpus",
                                                          "network",
                                                          "nodefile",
                                                          "nodelist",
                                                          "nodes",
                                                          "ntasks",
                                                          "ntasks-per-core",
                                                          "ntasks-per-gpu",
                                                          "ntasks-per-node",
                                                          "ntasks-per-socket",
                                                          "ntasks-per-tres",
                                                          "open-mode",
                                                          "output",
                                                          "partition",
                                                          "power",
                                                          "prefer",
                                                          "priority",
                                                          "profile",
                                                          "qos",
                                                          "reservation",
                                                          "resources",
                                                          "runtime",
                                                          "segment",
                                                          "signal",
                                                          "sockets-per-node",
                                                          "switches",
                                                          "tasks-per-node",
                                                          "thread-spec",
                                                          "threads-per-core",
                                                          "time",
                                                          "time-min",
                                                          "tmp",
                                                          "tres-bind",
                                                          "tres-per-task",
                                                          "uid",
                                                          "wait-all-nodes",
                                                          "wckey",
                                                          "wrap"};
constexpr std::string_view sbatch_options_without_value[] = {"consolidate-segments",
                                                             "contiguous",
                                                             "exclusive",
                                                             "external",
                                                             "get-user-env",
                                                             "help",
                                                             "hold",
                                                             "ignore-pbs",
                                                             "nice",
                                                             "no-kill",
                                                             "no-requeue",
                                                             "oom-kill-step",
                                                             "overcommit",
                                                             "oversubscribe",
                                                             "parsable",
                                                             "propagate",
                                                             "quiet",
                                                             "reboot",
                                                             "requeue",
                                                             "resv-ports",
                                                             "spread-job",
                                                             "spread-segments",
                                                             "stepmgr",
                                                             "test-only",
                                                             "usage",
                                                             "use-min-nodes",
                                                             "verbose",
                                                             "version",
                                                             "wait"};
// Short options: with a value, and without one (-k takes an optional value, attached).
constexpr std::string_view sbatch_short_with_value = "ABCDFGJLMNSabcdeimnopqtwx";
constexpr std::string_view sbatch_short_without_value = "HOQVWhksv";

// Whether the long option `name` (without "--") takes a value, as getopt_long resolves it: an
// exact name, or an abbreviation that only options with a value (or only ones without) share.
// Unknown or ambiguous: sbatch itself refuses it, so it cannot take the next line.
enum class takes_value { yes, no, unknown };
takes_value long_option_value(std::string_view name) {
  bool with = false, without = false;
  for (std::string_view o : sbatch_options_with_value) {
    if (o == name) return takes_value::yes;
    with = with || o.substr(0, name.size()) == name;
  }
  for (std::string_view o : sbatch_options_without_value) {
    if (o == name) return takes_value::no;
    without = without || o.substr(0, name.size()) == name;
  }
  if (with != without) return with ? takes_value::yes : takes_value::no;
  return takes_value::unknown;
}

// The words of one --sbatch-arg's #SBATCH line: the option with its value in the same word, or
// an option and its value as two words ("-A acct", "--account acct"). An option that takes a
// value given without one is refused, naming both ways to give it.
std::vector<std::string> directive_words(const std::string& arg) {
  const auto refuse = [&](const std::string& option) {
    const bool long_option = option.compare(0, 2, "--") == 0;
    throw usage_error{concat("--sbatch-arg ", quoted(arg), ": sbatch's ", option,
                             " takes a value, which must be in the same --sbatch-arg (\"", option,
                             long_option ? "=" : "", "VALUE\" or \"", option,
                             " VALUE\"): alone, it would take the next #SBATCH line as its value")};
  };
  if (arg.size() < 2 || arg[0] != '-')
    throw usage_error{
        concat("--sbatch-arg ", quoted(arg),
               " is not an sbatch option (\"--job-name=x\", \"-A acct\" or \"-Aacct\")")};
  const std::size_t blank = arg.find_first_of(" \t");
  const std::string option = arg.substr(0, blank);
  std::string value;
  if (blank != std::string::npos)
    value = arg.substr(arg.find_first_not_of(" \t", blank) == std::string::npos
                           ? arg.size()
                           : arg.find_first_not_of(" \t", blank));
  const bool split = blank != std::string::npos && !value.empty();
  if (arg.compare(0, 2, "--") == 0) {
    const std::size_t eq = option.find('=');
    if (eq != std::string::npos) return {arg};  // "--name=value", blanks and all: one word
    const std::string name = option.substr(2);
    const takes_value t = long_option_value(name);
    if (t == takes_value::yes) {
      if (!split) refuse(option);
      return {option, value};
    }
    return {arg};  // a switch, or an option sbatch will refuse itself
  }
  // A cluster of short options: switches, then at most one that takes the rest as its value.
  for (std::size_t k = 1; k < option.size(); ++k) {
    const char letter = option[k];
    if (sbatch_short_with_value.find(letter) != std::string_view::npos) {
      if (k + 1 < option.size()) return {arg};  // "-Jname": the value attached
      if (!split) refuse(option);
      return {option, value};
    }
    if (sbatch_short_without_value.find(letter) == std::string_view::npos) break;  // sbatch refuses
  }
  return {arg};
}

// After a failed step with --exclude-failed: the nodes the job still has (Slurm takes a lost node
// out of a --no-kill job; the step's variables keep the first list), the plan made again over
// them when they are fewer, and the variables `hetlaunch exec --slurm` reads set to them.
std::string exclude_failed_block(const options& o, const hetlaunch::node_group& g,
                                 const std::string& program, const std::string& tail) {
  const int min_nodes = o.restart.min_nodes.value_or(1);
  return concat(
      "  # The nodes the job still has: Slurm takes a lost node out of a --no-kill job.\n"
      "  nodes=$(scontrol show job \"$SLURM_JOB_ID\" | sed -n 's/^ *NodeList=//p')\n"
      "  count=$(scontrol show hostnames \"$nodes\" | wc -l)\n"
      "  if [ \"$count\" -lt ",
      min_nodes,
      " ]; then\n"
      "    echo \"hetlaunch: the step failed (exit status $status); the job has $count node(s) left ($nodes), fewer than "
      "--min-nodes ",
      min_nodes,
      "\" >&2\n"
      "    exit \"$status\"\n  fi\n"
      "  if [ \"$count\" -ne \"$SLURM_JOB_NUM_NODES\" ]; then\n"
      "    echo \"hetlaunch: the step failed (exit status $status) and the job lost nodes: restart $attempt of ",
      *o.restart.restarts,
      " on the $count nodes left ($nodes), plan made again\" >&2\n"
      "    export SLURM_JOB_NODELIST=\"$nodes\" SLURM_NODELIST=\"$nodes\" SLURM_JOB_NUM_NODES=\"$count\" "
      "SLURM_NNODES=\"$count\"\n"
      "    export HETLAUNCH_TASKS_PER_NODE=\"",
      g.gpus,
      "(x$count)\"\n"
      "    ",
      program, " plan ", tail,
      "\n"
      "  else\n"
      "    echo \"hetlaunch: the step failed (exit status $status): restart $attempt of ",
      *o.restart.restarts,
      "\" >&2\n"
      "  fi\n");
}

}  // namespace

int sbatch_command(options& o) {
  const std::vector<hetlaunch::node_group> groups = node_groups(o);
  if (const int status = group_weight_problem(o, groups)) return status;
  long long nodes = 0, world = 0;
  for (std::size_t c = 0; c < groups.size(); ++c) {
    nodes += groups[c].nodes;
    world += static_cast<long long>(groups[c].nodes) * groups[c].gpus;
    // torch's ranks are 32-bit; each term is below 2^60, so the sums cannot wrap before this.
    if (world > INT_MAX)
      return fail(concat("sbatch: the groups up to ", quoted(o.groups[c]), " hold more than ",
                         INT_MAX, " workers, more than torch's ranks can count"));
  }
  check_restart_flags(o.restart);
  // Slurm cancels a heterogeneous job when one of its nodes fails, --no-kill or not (and requeues
  // it): only a job of one component can go on without a lost node.
  if (o.restart.exclude_failed && groups.size() > 1)
    return fail(
        "sbatch: --exclude-failed needs a single --group: Slurm cancels a heterogeneous job when one of its "
        "nodes fails, even with --no-kill (it requeues the whole job instead); give the nodes one group, or "
        "leave --exclude-failed out");
  if (o.restart.min_nodes && *o.restart.min_nodes > nodes)
    return fail(concat("sbatch: --min-nodes ", *o.restart.min_nodes, " is more than the job's ",
                       nodes, " nodes"));
  std::vector<std::vector<std::string>> directive_lines;
  for (const std::string& a : o.sbatch.directives) directive_lines.push_back(directive_words(a));
  take_script(o);
  // The launch options, checked now rather than in the job, against the job's world size.
  if (const auto problems = hetlaunch::launch_option_problems(o.launch, static_cast<int>(world));
      !problems.empty()) {
    print_problems("sbatch", problems);
    return exit_invalid;
  }
  std::vector<std::string> script{o.launch.script};
  script.insert(script.end(), o.launch.script_args.begin(), o.launch.script_args.end());
  // The nodes run `hetlaunch exec` with the launch options exactly as given here.
  std::vector<std::string> options{"--slurm"};
  options.insert(options.end(), o.launch_args.begin(), o.launch_args.end());
  // The workers' binder is the hetlaunch the nodes run, unless told otherwise.
  const bool bind_program_given =
      std::find(o.given.begin(), o.given.end(), "--bind-program") != o.given.end();
  if (o.launch.binding != hetlaunch::numa_binding::none && !bind_program_given)
    options.insert(options.end(), {"--bind-program", o.sbatch.hetlaunch_program});
  // A group's weight names its component's nodes, which the job knows only when it runs.
  std::string weights;
  for (std::size_t c = 0; c < groups.size(); ++c)
    if (groups[c].weight != "1")
      // Slurm 19.05 and earlier name a component's variables *_PACK_GROUP_<n>.
      weights += concat(" --weight \"",
                        groups.size() == 1 ? std::string("$SLURM_JOB_NODELIST")
                                           : concat("${SLURM_JOB_NODELIST_HET_GROUP_", c,
                                                    ":-$SLURM_JOB_NODELIST_PACK_GROUP_", c, "}"),
                        "\"=", hetlaunch::shell_quote(groups[c].weight));
  script.insert(script.begin(), "--");
  const std::string tail =
      hetlaunch::shell_join(options) + weights + " " + hetlaunch::shell_join(script);
  const std::string program = hetlaunch::shell_quote(o.sbatch.hetlaunch_program);

  std::string out = "#!/bin/bash\n";
  const auto count = [](long long n, const char* one, const char* many) {
    return concat(n, " ", n == 1 ? one : many);
  };
  out +=
      groups.size() == 1
          ? concat("# hetlaunch: a job of ", count(nodes, "node", "nodes"), " and ",
                   count(world, "worker", "workers"), ":\n")
          : concat("# hetlaunch: a heterogeneous job of ", count(nodes, "node", "nodes"), " and ",
                   count(world, "worker", "workers"), ", one component a node group:\n");
  long long first = 0, rank = 0;
  for (std::size_t c = 0; c < groups.size(); ++c) {
    const hetlaunch::node_group& g = groups[c];
    const long long workers = static_cast<long long>(g.nodes) * g.gpus;
    const long long last_rank = rank + workers - 1;
    out += concat("#   component ", c, ": ", count(g.nodes, "node", "nodes"), " of ",
                  count(g.gpus, "GPU", "GPUs"),
                  g.weight == "1" ? std::string() : concat(" weighing ", g.weight),
                  g.nodes > 1 ? concat(" (nodes ", first, "-", first + g.nodes - 1)
                              : concat(" (node ", first),
                  last_rank > rank ? concat(", ranks ", rank, "-", last_rank, ")\n")
                                   : concat(", rank ", rank, ")\n"));
    first += g.nodes;
    rank += workers;
  }
  for (std::size_t c = 0; c < groups.size(); ++c) {
    if (c > 0) out += "#SBATCH hetjob\n";
    if (c == 0)
      for (const std::vector<std::string>& words : directive_lines) out += directive(words);
    if (!o.sbatch.partition.empty()) out += directive("--partition=" + o.sbatch.partition);
    if (!o.sbatch.time.empty()) out += directive("--time=" + o.sbatch.time);
    // A task a GPU: Slurm then reports each component's layout in
    // SLURM_TASKS_PER_NODE_HET_GROUP_<n>.
    out += directive(concat("--nodes=", groups[c].nodes));
    out += directive(concat("--ntasks-per-node=", groups[c].gpus));
    out += directive(concat("--gpus-per-node=", groups[c].gpus));
    if (o.restart.exclude_failed)
      out += directive("--no-kill");  // a lost node does not end the job
  }
  out += "set -eu\n\n";
  // Without hetjob components the job's layout is in SLURM_TASKS_PER_NODE, which srun replaces
  // with its step's: keep it for the steps. (A hetjob's own variables survive in every step.)
  if (groups.size() == 1) out += "export HETLAUNCH_TASKS_PER_NODE=\"$SLURM_TASKS_PER_NODE\"\n\n";
  out += "# The plan in the job log before anything starts; an inconsistent job stops here.\n";
  out += concat(program, " plan ", tail, "\n\n");
  out +=
      "# One task a node in every component, each seeing all of its node's GPUs; each runs its\n"
      "# node's torchrun (SLURM_NODEID counts the nodes in component order).\n";
  // With --restarts the step runs again in this allocation after a failure; a node that fails
  // ends the whole step at once (--kill-on-bad-exit), so the next attempt need not wait for the
  // others' collectives to time out.
  const bool restarting = o.restart.restarts.has_value();
  const std::string indent = restarting ? "  " : "";
  if (restarting)
    out += concat(
        "# The step runs again on a failure, at most ", *o.restart.restarts,
        " times (--restarts); every worker gets\n# HETLAUNCH_RESTART_COUNT, the attempt's number from 0.\n",
        "# A signal never restarts it: Ctrl-C under salloc, scancel --signal=SIG --full (or --batch),\n"
        "# the time limit's SIGTERM. srun takes a SIGINT itself and returns a status, so the script\n"
        "# notes the signal and ends after the step.\n",
        "interrupted=\nfor signal in INT TERM HUP; do trap \"interrupted=$signal\" \"$signal\"; done\n",
        "attempt=0\nwhile :; do\n",
        "  [ -z \"$interrupted\" ] || exit $((128 + $(kill -l \"$interrupted\")))\n",
        "  export HETLAUNCH_RESTART_COUNT=$attempt\n  status=0\n");
  out += indent + (restarting ? "srun --kill-on-bad-exit=1" : "srun");
  for (std::size_t c = 0; c < groups.size(); ++c) {
    if (c > 0) out += concat(" : \\\n    ", indent);
    // With --exclude-failed the job's node count can shrink between attempts.
    const std::string step_nodes = o.restart.exclude_failed
                                       ? std::string("\"$SLURM_JOB_NUM_NODES\"")
                                       : concat(groups[c].nodes);
    out += concat(" --nodes=", step_nodes, " --ntasks=", step_nodes,
                  " --ntasks-per-node=1 --gpus-per-node=", groups[c].gpus);
  }
  out += concat(" \\\n  ", indent, program, " exec ", tail, restarting ? " || status=$?\n" : "\n");
  if (restarting)
    out += concat(
        "  if [ -n \"$interrupted\" ]; then\n",
        "    echo \"hetlaunch: the step ended after SIG$interrupted (exit status $status): a signal never "
        "restarts it\" >&2\n",
        "    exit $((128 + $(kill -l \"$interrupted\")))\n  fi\n",
        "  [ \"$status\" -eq 0 ] && exit 0\n", "  if [ \"$attempt\" -ge ", *o.restart.restarts,
        " ]; then\n",
        "    echo \"hetlaunch: the step failed (exit status $status); no restart left (--restarts ",
        *o.restart.restarts, ")\" >&2\n", "    exit \"$status\"\n  fi\n",
        "  attempt=$((attempt + 1))\n",
        o.restart.exclude_failed
            ? exclude_failed_block(o, groups[0], program, tail)
            : concat(
                  "  echo \"hetlaunch: the step failed (exit status $status): restart $attempt of ",
                  *o.restart.restarts, "\" >&2\n"),
        "done\n");
  std::fwrite(out.data(), 1, out.size(), stdout);
  return 0;
}

}  // namespace cli
