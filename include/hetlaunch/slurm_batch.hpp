// SPDX-License-Identifier: MIT
// hetlaunch: a Slurm batch script for a mixed job: one hetjob component a node group, every node
// running `hetlaunch exec --slurm`, which plans the job from Slurm's variables when it runs.
#ifndef HETLAUNCH_SLURM_BATCH_HPP
#define HETLAUNCH_SLURM_BATCH_HPP

#include <climits>
#include <cstddef>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "detail/text.hpp"
#include "diagnostic.hpp"
#include "node_group.hpp"
#include "restart.hpp"
#include "result.hpp"
#include "shell.hpp"
#include "weight.hpp"
#include "worker_variables.hpp"

namespace hetlaunch {

/// What a batch script needs besides the node groups. The nodes run `hetlaunch_program` (`plan`,
/// then `exec --slurm`) with `launch_args`, so the launch options are read on the nodes exactly as
/// hetlaunch's command line reads them; the plan is made there, from Slurm's variables.
struct slurm_batch_options {
  /// sbatch options for the first component, one #SBATCH line each: "--account=a", "-A a",
  /// "-Aa", "--comment=two words". Each is read against sbatch's own option table: an option
  /// that takes a value must have it in the same string (hetlaunch's --sbatch-arg).
  std::vector<std::string> sbatch_args;
  /// Every component's --partition and --time; empty: none.
  std::string partition, time;
  /// The hetlaunch the nodes run, as a path (or name) there.
  std::string hetlaunch_program = "hetlaunch";
  /// The launch options for the nodes' hetlaunch, as its command line spells them:
  /// {"--master-port", "29500", "--global-batch", "64", ...}.
  std::vector<std::string> launch_args;
  /// The training script and its arguments.
  std::vector<std::string> command;
  /// Gang restarts, with the options `hetlaunch run` takes (restart.hpp); empty: the step runs
  /// once. The step runs again in the allocation after a failure, at most restarts times, each
  /// worker seeing HETLAUNCH_RESTART_COUNT. With exclude_failed the job goes on without a node
  /// Slurm lost (--no-kill), the plan made again over the nodes left, down to min_nodes: a job of
  /// one group only (Slurm cancels a heterogeneous job when one of its nodes fails).
  std::optional<restart_options> restart;
};

namespace detail {

// sbatch's options (Slurm's src/common/slurm_opt.c, the ones sbatch reads): those that take a
// value, and those that take none or only an optional one written with '='. sbatch reads all of
// a component's #SBATCH lines as one argv, so an option that takes a value given without one
// would take the next line (hetlaunch's own "--partition=gpu") as its value.
inline constexpr std::string_view sbatch_options_with_value[] = {"account",
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
inline constexpr std::string_view sbatch_options_without_value[] = {"consolidate-segments",
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
inline constexpr std::string_view sbatch_short_with_value = "ABCDFGJLMNSabcdeimnopqtwx";
inline constexpr std::string_view sbatch_short_without_value = "HOQVWhksv";

// Whether the long option `name` (without "--") takes a value, as getopt_long resolves it: an
// exact name, or an abbreviation that only options with a value (or only ones without) share.
// Unknown or ambiguous: sbatch itself refuses it, so it cannot take the next line.
enum class sbatch_value { yes, no, unknown };
inline sbatch_value long_option_value(std::string_view name) noexcept {
  bool with = false, without = false;
  for (std::string_view o : sbatch_options_with_value) {
    if (o == name) return sbatch_value::yes;
    with = with || o.substr(0, name.size()) == name;
  }
  for (std::string_view o : sbatch_options_without_value) {
    if (o == name) return sbatch_value::no;
    without = without || o.substr(0, name.size()) == name;
  }
  if (with != without) return with ? sbatch_value::yes : sbatch_value::no;
  return sbatch_value::unknown;
}

// The texts of the batch script's problems. bad_sbatch_option: `text` the option as given,
// `value` 0 not an option, 1 a value-taking option without its value (`position`: the option's
// length in `text`), 2 a line break or NUL.
inline std::string slurm_batch_message(const diagnostic& d) {
  const std::string text(d.text.view());
  switch (d.code) {
    case errc::bad_sbatch_option:
      if (d.value == 2)
        return concat("an #SBATCH option cannot hold a line break or a NUL byte: ",
                      detail::quoted(text));
      if (d.value == 1) {
        const std::string option = text.substr(0, d.position);
        const bool long_option = option.compare(0, 2, "--") == 0;
        return concat("--sbatch-arg ", detail::quoted(text), ": sbatch's ", option,
                      " takes a value, which must be in the same --sbatch-arg (\"", option,
                      long_option ? "=" : "", "VALUE\" or \"", option,
                      " VALUE\"): alone, it would take the next #SBATCH line as its value");
      }
      return concat("--sbatch-arg ", detail::quoted(text),
                    " is not an sbatch option (\"--job-name=x\", \"-A acct\" or \"-Aacct\")");
    case errc::world_size_overflow:
      return concat("the groups up to ", detail::quoted(text), " hold more than ", d.limit,
                    " workers, more than torch's ranks can count");
    case errc::shrink_needs_one_group:
      return "--exclude-failed needs a single --group: Slurm cancels a heterogeneous job when one "
             "of its nodes fails, even with --no-kill (it requeues the whole job instead); give "
             "the nodes one group, or leave --exclude-failed out";
    case errc::bad_min_nodes:
      return concat("--min-nodes ", d.value,
                    d.value < 1 ? " is less than 1" : " is more than the job's ",
                    d.value < 1 ? std::string() : concat(d.limit, " nodes"));
    case errc::bad_group:
      return d.value < 0 ? std::string("a batch script needs at least one node group")
                         : concat("group ", d.node, " (", detail::quoted(text),
                                  ") needs at least one node and one GPU");
    default:
      return core_message(d);
  }
}

inline diagnostic slurm_batch_problem(errc code, std::string_view text) {
  return diagnostic::of(code).with_text(text).with_describe(&slurm_batch_message);
}

// "NODES:GPUS[:WEIGHT]", as hetlaunch's --group spells a group.
inline std::string group_text(const node_group& g) {
  return concat(g.nodes, ":", g.gpus, g.weight == "1" ? std::string() : concat(":", g.weight));
}

// One #SBATCH line a word, written so that sbatch reads back exactly that word. sbatch splits an
// #SBATCH line at blanks, removes quotes, takes a backslash as an escape, ends the line at an
// unquoted '#' and stops at an unmatched quote (src/sbatch/opt.c, _get_argument); a word that
// needs it is therefore written in double quotes, with a backslash before each '"' and backslash
// in it. (A line break or a NUL cannot be written at all: validate_slurm_batch refuses them.)
inline std::string directive_word(const std::string& word) {
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
inline std::string directive(const std::vector<std::string>& words) {
  std::string out = "#SBATCH";
  for (const std::string& w : words) out.append(" ").append(directive_word(w));
  return out + "\n";
}
inline bool breaks_line(std::string_view s) noexcept {
  return s.find_first_of(std::string_view("\n\r\0", 3)) != std::string_view::npos;
}

}  // namespace detail

/// The words of the #SBATCH line for one sbatch option: the option with its value in one word
/// ("--job-name=x", "-Jx"), or an option and its value as two ("-A acct", "--account acct").
/// Errors (bad_sbatch_option): not an option, an option that takes a value given without one
/// (alone, it would take the next #SBATCH line as its value), a line break or NUL byte.
[[nodiscard]] inline result<std::vector<std::string>, diagnostic> sbatch_directive_words(
    const std::string& arg) {
  using detail::sbatch_value;
  const auto problem = [&](long long kind, std::size_t option_size = 0) {
    return detail::slurm_batch_problem(errc::bad_sbatch_option, arg)
        .with_value(kind)
        .with_position(option_size);
  };
  if (detail::breaks_line(arg)) return problem(2);
  if (arg.size() < 2 || arg[0] != '-') return problem(0);
  const std::size_t blank = arg.find_first_of(" \t");
  const std::string option = arg.substr(0, blank);
  std::string value;
  if (blank != std::string::npos) {
    const std::size_t start = arg.find_first_not_of(" \t", blank);
    value = arg.substr(start == std::string::npos ? arg.size() : start);
  }
  const bool split = blank != std::string::npos && !value.empty();
  if (arg.compare(0, 2, "--") == 0) {
    if (option.find('=') != std::string::npos) return std::vector<std::string>{arg};
    if (detail::long_option_value(option.substr(2)) == sbatch_value::yes) {
      if (!split) return problem(1, option.size());
      return std::vector<std::string>{option, value};
    }
    return std::vector<std::string>{arg};  // a switch, or an option sbatch will refuse itself
  }
  // A cluster of short options: switches, then at most one that takes the rest as its value.
  for (std::size_t k = 1; k < option.size(); ++k) {
    const char letter = option[k];
    if (detail::sbatch_short_with_value.find(letter) != std::string_view::npos) {
      if (k + 1 < option.size()) return std::vector<std::string>{arg};  // "-Jname"
      if (!split) return problem(1, option.size());
      return std::vector<std::string>{option, value};
    }
    if (detail::sbatch_short_without_value.find(letter) == std::string_view::npos) break;
  }
  return std::vector<std::string>{arg};
}

/// Every problem of the groups and options, in order: no group, a group without nodes or GPUs
/// (bad_group), a weight that is not one (bad_weight), more workers than torch's ranks can count
/// (world_size_overflow), exclude_failed with several groups (shrink_needs_one_group), min_nodes
/// outside 1..the job's nodes (bad_min_nodes), and each sbatch option, partition or time that
/// sbatch would read otherwise (bad_sbatch_option). The launch options are the nodes' to check.
[[nodiscard]] inline std::vector<diagnostic> validate_slurm_batch(
    const std::vector<node_group>& groups, const slurm_batch_options& o) {
  std::vector<diagnostic> out;
  if (groups.empty())
    out.push_back(detail::slurm_batch_problem(errc::bad_group, "").with_value(-1));
  long long nodes = 0, world = 0;
  bool counted = true;
  for (std::size_t g = 0; g < groups.size(); ++g) {
    const node_group& group = groups[g];
    if (group.nodes < 1 || group.gpus < 1) {
      out.push_back(
          detail::slurm_batch_problem(errc::bad_group, detail::group_text(group)).with_node(g));
      counted = false;
      continue;
    }
    if (const weight_check wc = check_weight(group.weight); !wc)
      out.push_back(diagnostic::of(errc::bad_weight)
                        .with_node(g)
                        .with_text(group.weight)
                        .with_weight(wc.issue));
    nodes += group.nodes;
    // Each term is below 2^62 and the sum stops at the first past INT_MAX: nothing wraps.
    world += static_cast<long long>(group.nodes) * group.gpus;
    if (counted && world > INT_MAX) {
      out.push_back(
          detail::slurm_batch_problem(errc::world_size_overflow, detail::group_text(group))
              .with_node(g)
              .with_limit(INT_MAX));
      counted = false;
    }
  }
  const restart_options r = o.restart.value_or(restart_options{});
  if (r.exclude_failed && groups.size() > 1)
    out.push_back(detail::slurm_batch_problem(errc::shrink_needs_one_group, ""));
  if (counted && !groups.empty() &&
      (r.min_nodes < 1 || r.min_nodes > static_cast<unsigned long long>(nodes)))
    out.push_back(detail::slurm_batch_problem(errc::bad_min_nodes, "")
                      .with_value(static_cast<long long>(
                          std::min<unsigned long long>(r.min_nodes, LLONG_MAX)))
                      .with_limit(nodes));
  for (const std::string& a : o.sbatch_args)
    if (auto words = sbatch_directive_words(a); !words) out.push_back(words.error());
  for (const std::string* s : {&o.partition, &o.time})
    if (detail::breaks_line(*s))
      out.push_back(detail::slurm_batch_problem(
                        errc::bad_sbatch_option,
                        detail::concat(s == &o.partition ? "--partition=" : "--time=", *s))
                        .with_value(2));
  return out;
}

namespace detail {

// After a failed step with exclude_failed: the nodes the job still has (Slurm takes a lost node
// out of a --no-kill job; the step's variables keep the first list), the plan made again over
// them when they are fewer, and the variables `hetlaunch exec --slurm` reads set to them.
inline std::string exclude_failed_block(const restart_options& o, const node_group& g,
                                        const std::string& program, const std::string& tail) {
  return concat(
      "  # The nodes the job still has: Slurm takes a lost node out of a --no-kill job.\n"
      "  nodes=$(scontrol show job \"$SLURM_JOB_ID\" | sed -n 's/^ *NodeList=//p')\n"
      "  count=$(scontrol show hostnames \"$nodes\" | wc -l)\n"
      "  if [ \"$count\" -lt ",
      o.min_nodes,
      " ]; then\n"
      "    echo \"hetlaunch: the step failed (exit status $status); the job has $count node(s) "
      "left ($nodes), fewer than --min-nodes ",
      o.min_nodes,
      "\" >&2\n"
      "    exit \"$status\"\n  fi\n"
      "  if [ \"$count\" -ne \"$SLURM_JOB_NUM_NODES\" ]; then\n"
      "    echo \"hetlaunch: the step failed (exit status $status) and the job lost nodes: "
      "restart $attempt of ",
      o.restarts,
      " on the $count nodes left ($nodes), plan made again\" >&2\n"
      "    export SLURM_JOB_NODELIST=\"$nodes\" SLURM_NODELIST=\"$nodes\" "
      "SLURM_JOB_NUM_NODES=\"$count\" SLURM_NNODES=\"$count\"\n"
      "    export ",
      variables::tasks_per_node, "=\"", g.gpus,
      "(x$count)\"\n"
      "    ",
      program, " plan ", tail,
      "\n"
      "  else\n"
      "    echo \"hetlaunch: the step failed (exit status $status): restart $attempt of ",
      o.restarts,
      "\" >&2\n"
      "  fi\n");
}

inline std::string count_of(long long n, const char* one, const char* many) {
  return concat(n, " ", n == 1 ? one : many);
}

// The script's part that keeps the step's stderr (srun's own lines and torchrun's, which it
// forwards) and, when the job fails, sets the job's comment from them: the reason, and the node,
// host and rank of the first failure, as far as they are known. torchrun's summary of a failed
// group names its first failure's time, host and global rank ("Root Cause (first observed
// failure):"); every node that failed prints one, and the earliest is the cause (the node that
// failed first need not be the first whose task srun sees end). Without a summary (a torchrun
// stopped before it printed one), srun's first failed task names the host ("srun: error: h2:
// task 0: Exited with exit code 1") and torchrun's line the local rank ("failed (exitcode: 1)
// local_rank: 0"). The plan's table (`plan`, run again) gives the host's node and first rank;
// with `moved` (nodes left out between attempts) the node is not named.
inline std::string failure_comment_block(const std::string& plan, bool moved) {
  return concat(
      "# On a failure the job's comment names it (scontrol show job, squeue -o %k): the reason,\n"
      "# and the node, host and rank of the first failure that torchrun and srun report.\n",
      "step_log=$(mktemp \"${TMPDIR:-/tmp}/hetlaunch-step.XXXXXX\")\n",
      "trap 'rm -f \"$step_log\"' EXIT\n", "say_failure() {\n", "  local what\n", "  what=$(", plan,
      " 2>/dev/null | awk -v steplog=\"$step_log\" -v moved=", moved ? 1 : 0, " '\n",
      "    NF >= 6 && $1 ~ /^[0-9]+$/ && $5 ~ /^[0-9]+$/ { node[$2] = $1; first[$2] = $5 }\n",
      "    END {\n", "      while ((getline line < steplog) > 0) {\n",
      "        if (line ~ /Root Cause \\(first observed failure\\)/) { root = 1; t = \"\"; h = \"\"; continue }\n",
      "        n = split(line, f, \" \")\n",
      "        if (root && n >= 3 && f[1] == \"time\") t = f[3]\n",
      "        if (root && n >= 3 && f[1] == \"host\") h = f[3]\n",
      "        if (root && n >= 3 && f[1] == \"rank\") { root = 0\n",
      "          if (h != \"\" && (best == \"\" || t < best)) { best = t; host = h; rank = f[3] } }\n",
      "        if (best == \"\" && failed == \"\" && match(line, /^srun: error: [^:]+: task/)) failed = substr(line, 14, "
      "RLENGTH - 19)\n",
      "        if (lr == \"\" && line !~ /^\\[/ && match(line, /failed \\(exitcode: -?[0-9]+\\) "
      "local_rank: [0-9]+/)) {\n",
      "          n = split(substr(line, RSTART, RLENGTH), w, \" \"); lr = w[n] }\n", "      }\n",
      "      if (host == \"\") host = failed\n", "      if (host == \"\") exit\n",
      "      short = host; sub(/\\..*/, \"\", short)\n",
      "      if (!(host in node) && (short in node)) host = short\n",
      "      if (rank == \"\" && !moved && (host in first) && lr != \"\") rank = first[host] + lr\n",
      "      if (!moved && (host in node)) printf \"node %s \", node[host]\n",
      "      printf \"host %s\", host\n", "      if (rank != \"\") printf \" rank %s\", rank\n",
      "    }')\n",
      "  scontrol update JobId=\"$SLURM_JOB_ID\" Comment=\"hetlaunch: $1${what:+ $what}\" "
      "2>/dev/null || true\n",
      "}\n");
}

}  // namespace detail

/// The batch script, for `sbatch`: one hetjob component a group (a job without components for one
/// group), each node a task that sees all of its GPUs; every component's layout in #SBATCH lines,
/// the sbatch options in the first. The job prints its plan (`hetlaunch plan`, which stops an
/// inconsistent job before anything starts), then one `srun` step runs `hetlaunch exec --slurm`
/// on every node. A group's weight names its component's nodes, which the job knows only when it
/// runs. With restarts the step runs again after a failure (never after a signal), and with
/// exclude_failed over the nodes the job has left. Errors: validate_slurm_batch's.
[[nodiscard]] inline result<std::string, diagnostic> try_slurm_batch_script(
    const std::vector<node_group>& groups, const slurm_batch_options& o) {
  using detail::concat;
  using detail::count_of;
  if (const std::vector<diagnostic> problems = validate_slurm_batch(groups, o); !problems.empty())
    return problems.front();
  long long nodes = 0, world = 0;
  for (const node_group& g : groups) {
    nodes += g.nodes;
    world += static_cast<long long>(g.nodes) * g.gpus;
  }
  std::vector<std::string> exec_args{"--slurm"};
  exec_args.insert(exec_args.end(), o.launch_args.begin(), o.launch_args.end());
  std::string weights;
  for (std::size_t c = 0; c < groups.size(); ++c)
    if (groups[c].weight != "1")
      // Slurm 19.05 and earlier name a component's variables *_PACK_GROUP_<n>.
      weights += concat(" --weight \"",
                        groups.size() == 1 ? std::string("$SLURM_JOB_NODELIST")
                                           : concat("${SLURM_JOB_NODELIST_HET_GROUP_", c,
                                                    ":-$SLURM_JOB_NODELIST_PACK_GROUP_", c, "}"),
                        "\"=", shell_quote(groups[c].weight));
  std::vector<std::string> command{"--"};
  command.insert(command.end(), o.command.begin(), o.command.end());
  const std::string tail = shell_join(exec_args) + weights + " " + shell_join(command);
  const std::string program = shell_quote(o.hetlaunch_program);

  std::string out = "#!/bin/bash\n";
  out += groups.size() == 1
             ? concat("# hetlaunch: a job of ", count_of(nodes, "node", "nodes"), " and ",
                      count_of(world, "worker", "workers"), ":\n")
             : concat("# hetlaunch: a heterogeneous job of ", count_of(nodes, "node", "nodes"),
                      " and ", count_of(world, "worker", "workers"),
                      ", one component a node group:\n");
  long long first = 0, rank = 0;
  for (std::size_t c = 0; c < groups.size(); ++c) {
    const node_group& g = groups[c];
    const long long workers = static_cast<long long>(g.nodes) * g.gpus;
    const long long last_rank = rank + workers - 1;
    out += concat("#   component ", c, ": ", count_of(g.nodes, "node", "nodes"), " of ",
                  count_of(g.gpus, "GPU", "GPUs"),
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
      for (const std::string& a : o.sbatch_args)
        out += detail::directive(*sbatch_directive_words(a));
    if (!o.partition.empty()) out += detail::directive({"--partition=" + o.partition});
    if (!o.time.empty()) out += detail::directive({"--time=" + o.time});
    // A task a GPU: Slurm then reports each component's layout in
    // SLURM_TASKS_PER_NODE_HET_GROUP_<n>.
    out += detail::directive({concat("--nodes=", groups[c].nodes)});
    out += detail::directive({concat("--ntasks-per-node=", groups[c].gpus)});
    out += detail::directive({concat("--gpus-per-node=", groups[c].gpus)});
    if (o.restart && o.restart->exclude_failed)
      out += detail::directive({"--no-kill"});  // a lost node does not end the job
  }
  out += "set -eu\n\n";
  // Without hetjob components the job's layout is in SLURM_TASKS_PER_NODE, which srun replaces
  // with its step's: keep it for the steps. (A hetjob's own variables survive in every step.)
  if (groups.size() == 1)
    out += concat("export ", variables::tasks_per_node, "=\"$SLURM_TASKS_PER_NODE\"\n\n");
  out += "# The plan in the job log before anything starts; an inconsistent job stops here.\n";
  out += concat(program, " plan ", tail, "\n\n");
  // With restarts the step runs again in this allocation after a failure; a node that fails ends
  // the whole step at once (--kill-on-bad-exit), so the next attempt need not wait for the
  // others' collectives to time out.
  const bool restarting = o.restart.has_value();
  const restart_options r = o.restart.value_or(restart_options{});
  const std::string indent = restarting ? "  " : "";
  out += detail::failure_comment_block(concat(program, " plan ", tail), r.exclude_failed);
  out +=
      "\n# One task a node in every component, each seeing all of its node's GPUs; each runs its\n"
      "# node's torchrun (SLURM_NODEID counts the nodes in component order).\n";
  if (restarting)
    out += concat("# The step runs again on a failure, at most ", r.restarts,
                  " times (--restarts); every worker gets\n# ", variables::restart_count,
                  ", the attempt's number from 0.\n",
                  "# A signal never restarts it: Ctrl-C under salloc, scancel --signal=SIG --full "
                  "(or --batch),\n"
                  "# the time limit's SIGTERM. srun takes a SIGINT itself and returns a status, so "
                  "the script\n"
                  "# notes the signal and ends after the step.\n",
                  "interrupted=\nfor signal in INT TERM HUP; do trap \"interrupted=$signal\" "
                  "\"$signal\"; done\n",
                  "attempt=0\nwhile :; do\n",
                  "  [ -z \"$interrupted\" ] || exit $((128 + $(kill -l \"$interrupted\")))\n");
  // The step's stderr also goes to the step log, which only its last attempt's failure reads.
  out += concat(indent, "status=0\n", indent, ": > \"$step_log\"\n", indent, "( ",
                restarting ? "srun --kill-on-bad-exit=1" : "srun");
  for (std::size_t c = 0; c < groups.size(); ++c) {
    if (c > 0) out += concat(" : \\\n    ", indent);
    // With exclude_failed the job's node count can shrink between attempts.
    const std::string step_nodes =
        r.exclude_failed ? std::string("\"$SLURM_JOB_NUM_NODES\"") : concat(groups[c].nodes);
    out += concat(" --nodes=", step_nodes, " --ntasks=", step_nodes,
                  " --ntasks-per-node=1 --gpus-per-node=", groups[c].gpus);
  }
  // The attempt reaches exec as a flag: an inherited HETLAUNCH_RESTART_COUNT is another launch's,
  // and exec removes it.
  out += concat(" \\\n  ", indent, program, " exec ",
                restarting ? "--restart-count \"$attempt\" " : "", tail,
                " 2>&1 1>&3 3>&- | tee -a \"$step_log\" >&2; exit \"${PIPESTATUS[0]}\" ) 3>&1 || "
                "status=$?\n");
  if (!restarting)
    out += "if [ \"$status\" -ne 0 ]; then say_failure worker_failed; exit \"$status\"; fi\n";
  if (restarting)
    out += concat(
        "  if [ -n \"$interrupted\" ]; then\n",
        "    echo \"hetlaunch: the step ended after SIG$interrupted (exit status $status): a "
        "signal never restarts it\" >&2\n",
        "    say_failure interrupted\n", "    exit $((128 + $(kill -l \"$interrupted\")))\n  fi\n",
        "  [ \"$status\" -eq 0 ] && exit 0\n", "  if [ \"$attempt\" -ge ", r.restarts, " ]; then\n",
        "    echo \"hetlaunch: the step failed (exit status $status); no restart left (--restarts ",
        r.restarts, ")\" >&2\n", "    say_failure restarts_exhausted\n",
        "    exit \"$status\"\n  fi\n", "  attempt=$((attempt + 1))\n",
        r.exclude_failed
            ? detail::exclude_failed_block(r, groups[0], program, tail)
            : concat("  echo \"hetlaunch: the step failed (exit status $status): restart $attempt "
                     "of ",
                     r.restarts, "\" >&2\n"),
        "done\n");
  return out;
}

/// try_slurm_batch_script(...).value().
[[nodiscard]] inline std::string slurm_batch_script(const std::vector<node_group>& groups,
                                                    const slurm_batch_options& o) {
  return try_slurm_batch_script(groups, o).value();
}

}  // namespace hetlaunch

#endif  // HETLAUNCH_SLURM_BATCH_HPP
