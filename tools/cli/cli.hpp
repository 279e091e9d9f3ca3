// SPDX-License-Identifier: MIT
// The hetlaunch command: what its parts share. Each command is a row of the table in
// commands.cpp; flags are rows of the table in arguments.cpp; help text comes from both.
#ifndef HETLAUNCH_TOOLS_CLI_HPP
#define HETLAUNCH_TOOLS_CLI_HPP

#include <hetlaunch/hetlaunch.hpp>
#include <hetlaunch/slurm_batch.hpp>

#include <cstddef>
#include <cstdio>
#include <functional>
#include <optional>
#include <sstream>
#include <string>
#include <string_view>
#include <type_traits>
#include <utility>
#include <variant>
#include <vector>

namespace cli {

constexpr int exit_invalid = 1;  // invalid input: nothing was started
constexpr int exit_usage = 2;    // the command line itself is wrong
constexpr int exit_failed =
    1;  // a job that failed without a status of its own (a node never started)
constexpr int exit_cannot_run = 127;  // a program hetlaunch runs itself (ssh) cannot run here

// Message text: text and integers joined, and text quoted as the library's messages quote it.
template <class... Pieces>
std::string concat(const Pieces&... pieces) {
  std::ostringstream out;
  (out << ... << pieces);
  return out.str();
}
inline std::string quoted(std::string_view text) { return hetlaunch::quote(text); }
inline std::string quoted(std::string_view text, std::size_t limit) {
  return hetlaunch::quote(text, limit);
}

// The two ways a command fails, by what is wrong. The command line itself: a usage_error is
// thrown (exit status 2). The input, or what the command met: a helper returns a
// hetlaunch::result whose error's message is printed as it is, with the library's own words
// where the library found it (fail, exit status 1).
struct usage_error {
  std::string message;
  bool recorded = false;  // the job's own job_exited already says it (run, calibrate)
};
using hetlaunch::parse_error;
using hetlaunch::result;
// The value of a result that only says "it worked".
using completed = std::monostate;
// An error for the command line's input: the message names where.
inline parse_error invalid(std::string message) { return parse_error{std::move(message)}; }

// The parts a command's options are made of. A command's options struct derives from the parts
// of the flags it takes and nothing else; the flag table (arguments.cpp) writes each flag into
// its part, and the command line is bound once, before the command runs.

// What every command has: its name, the flags given and its operands.
struct command_line {
  std::string command;
  std::vector<std::string> given;       // every flag given, by its full name, in order
  std::string format;                   // --format (--json, --null), else the command's first
  std::vector<std::string> positional;  // the script and its arguments, or the operands
};

// Where the nodes come from (every command that reads a cluster): the input flags and limits.
struct input_args {
  std::optional<std::string> hostfile;
  std::optional<std::string> hosts;
  bool slurm = false;
  std::string include, exclude;
  std::vector<std::string> weights;      // --weight HOSTS=W, in order
  std::vector<std::string> max_batches;  // --max-batch HOSTS=M, in order
  std::size_t max_hosts = std::size_t{1} << 20;
  std::size_t max_bytes = std::size_t{1} << 27;
  hetlaunch::validate_options validation;  // --allow-duplicate-hosts; the launch options' too
};
struct input_part {
  input_args input;
};

// The launch options: the library's own, with the script and its arguments.
struct launch_part {
  hetlaunch::launch_options launch;
  std::vector<std::string> launch_args;  // the launch flags as given, for the nodes' `exec`
  std::vector<std::string> program;      // --program's words (default: the launch options')
};

// The node and worker a command is about (argv, exec, env, check, accelerate).
struct node_part {
  std::optional<std::size_t> node;
  std::optional<int> local_rank;
  bool direct = false;
  bool agent_env = false;
  bool any_host = false;
  int restart_count = -1;  // exec --restart-count N: the attempt a launcher with restarts runs
};

// --env NAME[=VALUE], in order (run, calibrate, jobset).
struct env_part {
  std::vector<std::string> env;
};

// --group NODES:GPUS[:WEIGHT], in order (jobset, sbatch).
struct groups_part {
  std::vector<std::string> groups;
};

// run, calibrate and discover: reaching the nodes over ssh, and stopping them.
struct remote_args {
  // The library's ssh options, written by --ssh, --ssh-arg and --kill-after; run adds the
  // directory and the variables.
  hetlaunch::ssh_options ssh;
  int fanout = 64;
  std::optional<std::string> env_file;
  std::optional<std::string> chdir;  // default: this process's directory
  bool dry_run = false;
  bool quiet_nodes = false;
  std::optional<std::string> gpu_count_command;
  int discover_timeout = 60;           // seconds a host has to answer its GPU count
  std::optional<std::string> events;   // --events FILE
  bool local = false;                  // --local: every node's command runs here, with no ssh
  bool exit_status_by_reason = false;  // --exit-status-by-reason: the status says the reason
  bool preflight = false;              // run --preflight: every host's facts before the job
  std::optional<std::string> python;   // the Python preflight runs on a host (launch's --python)
};
struct remote_part {
  remote_args remote;
};

// What run does about a rank judged slow: say it (rank_slow), move work off it (the ranks'
// samplers rebalance every window), or leave its node out at rank 0's next checkpoint line.
enum class slow_action { report, rebalance, exclude };

// run and sbatch: starting the whole job again after a failure.
struct restart_args {
  std::optional<int> restarts;  // --restarts N
  bool exclude_failed = false;
  std::optional<int> min_nodes;           // --min-nodes M
  std::vector<std::string> spares;        // --spare HOSTS, in order
  bool grow_back = false;                 // --grow-back: hosts that left rejoin at a checkpoint
  std::optional<int> probe_every;         // --probe-every SECONDS (default 30)
  int hang_timeout = 0;                   // --hang-timeout SECONDS: 0, ranks are never hung
  std::optional<int> checkpoint_timeout;  // --checkpoint-timeout SECONDS (default 1800)
  std::optional<double> slow_factor;      // --slow-factor F (default 2 while ranks report)
  std::optional<slow_action> on_slow;     // --on-slow report|rebalance|exclude (default report)
  std::optional<std::string> metrics;     // --metrics FILE
  // Whether the ranks report their progress (HETLAUNCH_PROGRESS_SECONDS): a flag that reads it.
  bool reporting() const {
    return hang_timeout > 0 || slow_factor.has_value() || on_slow.has_value() ||
           metrics.has_value();
  }
  bool excludes_slow() const { return on_slow == slow_action::exclude; }
};
struct restart_part {
  restart_args restart;
};

// calibrate: measuring each node's speed with the job itself.
struct calibrate_args {
  bool measuring = false;  // not a flag: calibrate runs run's job, watched for the line
  int steps = 20;          // --calibrate-steps N: HETLAUNCH_CALIBRATE_STEPS
  std::optional<std::string> hostfile;  // --write-hostfile FILE
};
struct calibrate_part {
  calibrate_args calibrate;
};

// jobset: the library's JobSet options, written by the flags, and the node selectors by group.
struct jobset_part {
  hetlaunch::jobset_options jobset;
  std::vector<std::string> node_selectors;  // GROUP:KEY=VALUE
};

// sbatch: the library's batch-script options, written by the flags.
struct sbatch_part {
  hetlaunch::slurm_batch_options sbatch;
};

// cpus and bind: the machine whose CPUs are read, and the workers to bind.
struct binding_args {
  std::optional<std::string> sysfs;            // a recorded sysfs tree instead of /sys
  std::optional<std::string> gpu_pci_command;  // prints "INDEX, PCI ADDRESS" lines, not nvidia-smi
  std::optional<std::string> devices;          // the visible GPUs (CUDA_VISIBLE_DEVICES's form)
  std::optional<int> nproc;                    // local ranks (default: one a visible GPU)
  std::optional<std::string> allowed_cpus;     // the CPUs the workers may use
};
struct binding_part {
  binding_args binding;
};

// Each command's options: the parts of the flags it takes.
// expand, compress:
struct hostlist_options : command_line, input_part {};
// plan, check-env:
struct plan_options : command_line, input_part, launch_part {};
// argv, exec, env, check, accelerate:
struct node_options : command_line, input_part, launch_part, node_part {};
// run, calibrate:
struct job_options : command_line,
                     input_part,
                     launch_part,
                     env_part,
                     remote_part,
                     restart_part,
                     calibrate_part {};
struct discover_options : command_line, input_part, remote_part {};
struct preflight_options : command_line, input_part, launch_part, remote_part {};
struct jobset_command_options : command_line, launch_part, env_part, groups_part, jobset_part {};
struct sbatch_command_options : command_line,
                                launch_part,
                                groups_part,
                                restart_part,
                                sbatch_part {};
struct binding_options : command_line, launch_part, binding_part {};  // cpus, bind
using text_options = command_line;                                    // completion, manual

// Every part a flag can be written into, once: its name, the type the flags write, the base of
// a command's options that holds it, and where that is in the options `o`. The bits the flag
// table names (input_bit, ...), the pointers it writes through (parts) and which parts a
// command's options have (parts_of) are all made from this list.
#define HETLAUNCH_CLI_PARTS(X)                               \
  X(line, command_line, command_line, &o)                    \
  X(input, input_args, input_part, &o.input)                 \
  X(launch, launch_part, launch_part, &o)                    \
  X(node, node_part, node_part, &o)                          \
  X(env, env_part, env_part, &o)                             \
  X(groups, groups_part, groups_part, &o)                    \
  X(remote, remote_args, remote_part, &o.remote)             \
  X(restart, restart_args, restart_part, &o.restart)         \
  X(calibrate, calibrate_args, calibrate_part, &o.calibrate) \
  X(jobset, jobset_part, jobset_part, &o)                    \
  X(sbatch, sbatch_part, sbatch_part, &o)                    \
  X(binding, binding_args, binding_part, &o.binding)

// A part as a bit; a command's options have some of them.
enum part_index : unsigned {
#define HETLAUNCH_CLI_PART_INDEX(name, type, base, field) name##_index,
  HETLAUNCH_CLI_PARTS(HETLAUNCH_CLI_PART_INDEX)
#undef HETLAUNCH_CLI_PART_INDEX
};
#define HETLAUNCH_CLI_PART_BIT(name, type, base, field) \
  constexpr unsigned name##_bit = 1u << name##_index;
HETLAUNCH_CLI_PARTS(HETLAUNCH_CLI_PART_BIT)
#undef HETLAUNCH_CLI_PART_BIT

// The parts of one command's options, for the flag table to write into (null: it has none).
struct parts {
#define HETLAUNCH_CLI_PART_POINTER(name, type, base, field) type* name = nullptr;
  HETLAUNCH_CLI_PARTS(HETLAUNCH_CLI_PART_POINTER)
#undef HETLAUNCH_CLI_PART_POINTER
};

template <class Options>
parts parts_of(Options& o) {
  parts p;
#define HETLAUNCH_CLI_PART_OF(name, type, base, field) \
  if constexpr (std::is_base_of<base, Options>::value) p.name = field;
  HETLAUNCH_CLI_PARTS(HETLAUNCH_CLI_PART_OF)
#undef HETLAUNCH_CLI_PART_OF
  return p;
}

// The bits of the parts `p` has.
inline unsigned part_bits(const parts& p) {
  unsigned bits = 0;
#define HETLAUNCH_CLI_PART_BITS(name, type, base, field) \
  if (p.name) bits |= name##_bit;
  HETLAUNCH_CLI_PARTS(HETLAUNCH_CLI_PART_BITS)
#undef HETLAUNCH_CLI_PART_BITS
  return bits;
}

// Which flags a command takes: whole groups, and single flags by name.
enum flag_group : unsigned { input_flags = 1, launch_flags = 2, limit_flags = 4 };

enum class script_use { none, optional, required, operands };
enum class node_use { none, optional, required };

struct command;

// The command line as read, before a command binds it into its options.
struct arguments {
  std::string command;
  bool help = false;
  bool version = false;
  std::vector<std::pair<std::string, std::string>> flags;  // (full name, value), in order
  std::vector<std::string> positional;
};

// Binds the arguments into the parts of a command's options: every flag into its part, the
// format, the script into the launch options. Usage errors (a required flag missing, a
// format the command has not) are thrown as usage_error.
void bind_options(const command& c, const arguments& a, const parts& into);

// How a row of the table runs its command: binds the command's own options and calls it.
struct runner {
  int (*start)(const command& c, const arguments& a);
  unsigned parts;  // the part_bits of the command's options
};
template <class Options, int (*Run)(const Options&)>
int run_bound(const command& c, const arguments& a) {
  Options o;
  bind_options(c, a, parts_of(o));
  return Run(o);
}
template <class Options, int (*Run)(const Options&)>
runner bound() {
  Options o;
  return {&run_bound<Options, Run>, part_bits(parts_of(o))};
}

// A command's usage line is made from this row (usage_line): nothing about its flags is
// written twice.
struct command {
  const char* name;
  const char* operands;     // what script_use::operands takes ("EXPR", "HOST..."); else ""
  const char* summary;      // one line, for the command list
  const char* description;  // for `hetlaunch NAME --help`
  unsigned groups;
  std::vector<const char*> flags;  // single flags beyond the groups
  script_use script;
  node_use node;
  runner run;
  std::vector<const char*> required =
      {};  // flags of `flags` that must be given (checked before run)
  const char* formats =
      "";  // what --format takes, the default first ("sh|json|null"); "" without --format
};

const std::vector<command>& commands();
const command* find_command(const std::string& name);

// arguments.cpp
arguments parse_args(int argc, char** argv);
// A flag a command takes whose part its options lack: a mistake of the tables, found when the
// manual page is made, at every build (empty when there is none).
std::string table_problem();
// The flag table as the manual page and the completion scripts read it.
struct flag_view {
  const char* name;
  const char* alias;  // or nullptr
  const char* value;  // the value's name, or nullptr for a switch
  const char* help;
  unsigned group;  // flag_group bits, or 0
};
std::vector<flag_view> flag_list();
bool command_accepts(const command& c, const char* flag_name);
std::string main_help();
// "hetlaunch NAME ..." without "usage: ": the command's flags, groups and script, from its row.
std::string usage_line(const command& c);
// A usage error when --exclude-failed or --min-nodes is given without --restarts, or --min-nodes
// without --exclude-failed (run, sbatch).
// Whether the flag `name` was given on the command line.
bool given(const command_line& line, const char* name);
void check_restart_flags(const restart_args& r);
// The library's restart options the flags give (check_restart_flags has checked them).
hetlaunch::restart_options restart_options_of(const restart_args& r);
std::string command_help(const command& c);
// The command's description, with the lines made from the library's tables (the variables --env
// may not set).
std::string description_of(const command& c);

// input.cpp
struct input {
  hetlaunch::cluster nodes;
  std::optional<std::size_t> this_node;  // from SLURM_NODEID, in the filtered cluster
  std::string excluded;      // why SLURM_NODEID's node has no place in the filtered cluster
  std::string step_problem;  // why this Slurm step cannot start one torchrun a node
  std::string source;        // for messages: the file, "--hosts", ...
  bool validated = false;    // the parser validated the topology with these options
};
// A whole input file of at most 256 MiB; `kind` names it in the message of one too large
// ("a hostfile", "an env file").
result<std::string> read_file(const std::string& path, const char* kind);
// This process's environment, as NAME=VALUE pairs in order.
hetlaunch::environment process_environment();
// Gives nodes read with slots=auto (nproc 0) their counts (run and discover: resolve_auto).
using auto_resolver = std::function<result<completed>(hetlaunch::cluster&)>;
// The cluster from the chosen input. Without a resolver, slots=auto is an error that names the
// commands that can resolve it.
result<input> read_input(const input_args& args, const auto_resolver& resolve = nullptr);
// Gives the nodes that --weight and --max-batch name their weights and ceilings.
result<completed> apply_weights(const input_args& args, hetlaunch::cluster& nodes);
// One plan for `command`, of `launch` (the command's, or its own copy of it); on problems,
// prints every one and returns nothing.
std::optional<hetlaunch::launch_plan> plan_of(const input& in, const std::string& command,
                                              const hetlaunch::launch_options& launch);
// A plan of other nodes with the same options (a restart's); its problems printed, naming `who`.
std::optional<hetlaunch::launch_plan> plan_again(const hetlaunch::cluster& nodes,
                                                 const hetlaunch::launch_options& launch,
                                                 const std::string& who);
// --node, or SLURM_NODEID's node (a usage error when there is neither).
std::size_t chosen_node(const node_part& n, const input_args& args, const input& in);
// The --env flags in order: NAME=VALUE as given, NAME with this process's value. A bad name or
// an unset NAME is invalid input.
result<hetlaunch::environment> env_flags(const env_part& flags);

// output.cpp
// Prints "hetlaunch: MESSAGE" to stderr; returns exit_invalid.
int fail(const std::string& message);
int fail(const parse_error& error);
using hetlaunch::json_string;
std::string json_array(const std::vector<std::string>& items);
int print_plan(const hetlaunch::launch_plan& plan, bool json);
void print_problems(const std::string& source, const std::vector<hetlaunch::diagnostic>& problems);
int finish_output(int status);

// run.cpp
int run_command(const job_options& o);
int calibrate_command(const job_options& o);

// How a node ended: node_exited's reason (docs/events.md).
enum class node_ending { succeeded, failed, stopped, unreachable, ended_before_start };
// How a job ended: job_exited's reason (docs/events.md).
enum class job_ending {
  succeeded,
  worker_failed,
  unreachable,
  ended_before_start,
  interrupted,
  restarts_exhausted,
  too_few_nodes,
  invalid_input,
  calibration_failed,
  output_failed,
  hung,
  preflight_failed,
};
// The reason's word in events, one table for each.
const char* reason_of(node_ending ending);
const char* reason_of(job_ending ending);
// The exit status --exit-status-by-reason gives an ending; `status`, the one it has without.
int status_by_reason(job_ending ending, int status);

// events.cpp: run --events FILE, one JSON object a line (docs/events.md).
class event_log {
  int fd_ = -1;
  bool ended_ = false, write_failed_ = false;
  std::string pending_;  // written lines a slow reader (a pipe, a fifo) has not taken yet

  void give_up(const char* why);

 public:
  int attempt = 0;  // every event's "attempt"
  event_log() = default;
  event_log(const event_log&) = delete;
  event_log& operator=(const event_log&) = delete;
  ~event_log();
  // Opens `path` for this run alone (a second run on it is refused while this one holds it),
  // never one of `inputs` (it is emptied only once that is known), and never waiting for a
  // reader: a fifo without one is refused.
  result<completed> open(const std::string& path, const std::vector<std::string>& inputs = {});
  // Writes what a slow reader has room for now: run's loop calls it at every turn, so that a
  // reader that stalls never stops the job.
  void pump();
  // Waits up to `seconds` for a slow reader to take what is left, then closes.
  void close(double seconds = 2.0);
  explicit operator bool() const { return fd_ >= 0; }
  // Whether job_exited was written: it is the last event, and only one is.
  bool ended() const { return ended_; }
  // One event: `fields` are the event's own keys ("\"node\": 1, ..."), after event, time and
  // attempt. Nothing without a file.
  void write(const char* event, const std::string& fields);
  // `worker`: the failed worker's keys (", \"rank\": 1, ..."), empty when none is known.
  void node_exited(std::size_t node, std::string_view host, int status, node_ending ending,
                   const std::string& worker = {});
  // `failed_node`, `failed_host`: the first failure, written for the endings that blame a node.
  void job_exited(int status, job_ending ending, std::optional<std::size_t> failed_node = {},
                  std::string_view failed_host = {});
};
// A usage error of run or calibrate found before the job opened its events (on the command
// line) ends the job as invalid input, when --events names a file.
void record_usage_error(int argc, char** argv);

// discover.cpp
int discover_command(const discover_options& o);

// preflight.cpp
int preflight_command(const preflight_options& o);
// The preflight event's and --json's hosts: [{"host", "python", "torch", "cuda", "nccl", "gpus",
// "capability", "gpu_names"}].
std::string host_facts_json(const std::vector<hetlaunch::host_facts>& hosts);
// One "hetlaunch: preflight: ..." line a problem.
std::string preflight_problems_text(const hetlaunch::preflight_verdict& v);
std::vector<int> nproc_of(const hetlaunch::cluster& nodes);
// Asks the hosts of slots=auto nodes for their GPU counts (read_input's auto_resolver). With
// --restarts and --exclude-failed, a host that cannot be reached is left out instead.
// With `facts` (preflight), every host is asked for its facts in the same round.
result<completed> resolve_auto(const remote_args& remote, const restart_args& restart,
                               hetlaunch::cluster& nodes,
                               std::vector<hetlaunch::host_facts>* facts = nullptr);

// jobset.cpp
int jobset_command(const jobset_command_options& o);
// The --group NODES:GPUS[:WEIGHT] flags, in order (usage errors for malformed ones; a WEIGHT
// that is not a weight is invalid input).
result<std::vector<hetlaunch::node_group>> node_groups(const groups_part& flags);

// sbatch.cpp
int sbatch_command(const sbatch_command_options& o);

// binding.cpp
int cpus_command(const binding_options& o);
int bind_command(const binding_options& o);

// manual.cpp: the manual page and the completion scripts, made from the command and flag tables.
int manual_command(const text_options& o);
int completion_command(const text_options& o);

}  // namespace cli

#endif  // HETLAUNCH_TOOLS_CLI_HPP
