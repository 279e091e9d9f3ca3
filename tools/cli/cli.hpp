// SPDX-License-Identifier: MIT
// The hetlaunch command: what its parts share. Each command is a row of the table in
// commands.cpp; flags are rows of the table in arguments.cpp; help text comes from both.
#ifndef HETLAUNCH_TOOLS_CLI_HPP
#define HETLAUNCH_TOOLS_CLI_HPP

#include <hetlaunch/hetlaunch.hpp>

#include <cstddef>
#include <cstdio>
#include <optional>
#include <sstream>
#include <string>
#include <string_view>
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

struct usage_error {
  std::string message;
};

// The flags of one concern, each struct read by the commands named above it.

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
};

// run and discover: reaching the nodes over ssh, and stopping them.
struct remote_args {
  std::string ssh = "ssh";
  std::vector<std::string> ssh_args;
  int fanout = 64;
  std::optional<std::string> env_file;
  std::optional<std::string> chdir;
  bool dry_run = false;
  bool quiet_nodes = false;
  int kill_after = 10;
  std::optional<std::string> gpu_count_command;
  int discover_timeout = 60;          // seconds a host has to answer its GPU count
  std::optional<std::string> events;  // --events FILE
};

// run and sbatch: starting the whole job again after a failure.
struct restart_args {
  std::optional<int> restarts;  // --restarts N
  bool exclude_failed = false;
  std::optional<int> min_nodes;     // --min-nodes M
  std::vector<std::string> spares;  // --spare HOSTS, in order
};

// calibrate: measuring each node's speed with the job itself.
struct calibrate_args {
  bool measuring = false;               // the command is calibrate: run's job, watched for the line
  int steps = 20;                       // --calibrate-steps N: HETLAUNCH_CALIBRATE_STEPS
  std::optional<std::string> hostfile;  // --write-hostfile FILE
};

// jobset: the Kubernetes side of the manifest.
struct jobset_args {
  std::string name, namespace_, image, cpu, memory;
  std::vector<std::string> node_selectors;  // GROUP:KEY=VALUE
  int max_restarts = 0;                     // --jobset-max-restarts
  hetlaunch::jobset_restart_strategy restart_strategy = hetlaunch::jobset_restart_strategy::unset;
};

// sbatch: the Slurm side of the batch script.
struct sbatch_args {
  std::string partition, time;
  std::vector<std::string> directives;  // --sbatch-arg: #SBATCH lines of the job
  std::string hetlaunch_program = "hetlaunch";
};

// cpus and bind: the machine whose CPUs are read, and the workers to bind.
struct binding_args {
  std::optional<std::string> sysfs;            // a recorded sysfs tree instead of /sys
  std::optional<std::string> gpu_pci_command;  // prints "INDEX, PCI ADDRESS" lines, not nvidia-smi
  std::optional<std::string> devices;          // the visible GPUs (CUDA_VISIBLE_DEVICES's form)
  std::optional<int> nproc;                    // local ranks (default: one a visible GPU)
  std::optional<std::string> allowed_cpus;     // the CPUs the workers may use
};

// Every flag's value, after parsing: what every command reads, then one struct a concern.
struct options {
  std::string command;
  std::vector<std::string> given;  // every flag given, by its full name, in order
  bool help = false;
  bool version = false;
  std::string format;  // --format (--json, --null); empty: the command's first format
  hetlaunch::launch_options launch;
  std::vector<std::string> launch_args;  // the launch options as given, for `hetlaunch exec`
  std::vector<std::string> program;
  std::vector<std::string> positional;  // the script and its arguments, or a command's operands
  // the node and worker a command is about (env, argv, exec, check)
  std::optional<std::size_t> node;
  std::optional<int> local_rank;
  bool direct = false;
  bool agent_env = false;
  bool any_host = false;
  // shared by two commands each
  std::vector<std::string> env;     // run, jobset: NAME or NAME=VALUE, in order
  std::vector<std::string> groups;  // jobset, sbatch: NODES:GPUS[:WEIGHT]
  input_args input;
  remote_args remote;
  restart_args restart;
  calibrate_args calibrate;
  jobset_args jobset;
  sbatch_args sbatch;
  binding_args binding;
};

// Which flags a command takes: whole groups, and single flags by name.
enum flag_group : unsigned { input_flags = 1, launch_flags = 2, limit_flags = 4 };

enum class script_use { none, optional, required, operands };
enum class node_use { none, optional, required };

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
  int (*run)(const options&);
  std::vector<const char*> required =
      {};  // flags of `flags` that must be given (checked before run)
  const char* formats =
      "";  // what --format takes, the default first ("sh|json|null"); "" without --format
};

const std::vector<command>& commands();
const command* find_command(const std::string& name);

// arguments.cpp
options parse_args(int argc, char** argv);
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
// A usage error when a flag of c.required was not given, or --format names no format of c's.
void check_required(const command& c, const options& o);
// A usage error when --exclude-failed or --min-nodes is given without --restarts, or --min-nodes
// without --exclude-failed (run, sbatch).
void check_restart_flags(const restart_args& r);
// The output format: --format's (or --json's, --null's), else the command's first.
std::string output_format(const command& c, const options& o);
std::string command_help(const command& c);

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
std::optional<std::string> read_file(const std::string& path, const char* kind, std::string& error);
// This process's environment, as NAME=VALUE pairs in order.
hetlaunch::environment process_environment();
// Gives nodes read with slots=auto (nproc 0) their counts; false with a message on an error.
using auto_resolver = bool (*)(const options&, hetlaunch::cluster&, std::string& error);
// The cluster from the chosen input; on an error, prints it and sets `status`. Without a
// resolver, slots=auto is an error that names the commands that can resolve it.
std::optional<input> read_input(const options& o, int& status, auto_resolver resolve = nullptr);
// Gives the nodes that --weight and --max-batch name their weights and ceilings; false with a
// message on an error.
bool apply_weights(const options& o, hetlaunch::cluster& nodes, std::string& error);
// One plan for the command, of `launch` (o.launch, or a command's own copy of it); on problems,
// prints every one and returns nothing.
std::optional<hetlaunch::launch_plan> plan_of(const input& in, const options& o,
                                              const hetlaunch::launch_options& launch);
// A plan of other nodes with the same options (a restart's); its problems printed, naming `who`.
std::optional<hetlaunch::launch_plan> plan_again(const hetlaunch::cluster& nodes,
                                                 const hetlaunch::launch_options& launch,
                                                 const std::string& who);
std::size_t chosen_node(const options& o, const input& in);
// The script and its arguments, from the positional arguments, into the launch options: done
// once, when the command line is read, for every command that takes a script.
void take_script(options& o);
// The --env flags in order: NAME=VALUE as given, NAME with this process's value. A bad name or
// an unset NAME is invalid input: printed, with `status` set.
std::optional<hetlaunch::environment> env_flags(const options& o, int& status);

// output.cpp
int fail(const std::string& message);
using hetlaunch::json_string;
std::string json_array(const std::vector<std::string>& items);
int print_plan(const hetlaunch::launch_plan& plan, bool json);
void print_problems(const std::string& source, const std::vector<hetlaunch::diagnostic>& problems);
int finish_output(int status);

// run.cpp
int run_command(const options& o);
int calibrate_command(const options& o);

// events.cpp: run --events FILE, one JSON object a line (docs/events.md).
class event_log {
  FILE* file_ = nullptr;
  bool ended_ = false, write_failed_ = false;

 public:
  int attempt = 0;  // every event's "attempt"
  event_log() = default;
  event_log(const event_log&) = delete;
  event_log& operator=(const event_log&) = delete;
  ~event_log();
  bool open(const std::string& path, std::string& error);
  void close();
  explicit operator bool() const { return file_ != nullptr; }
  // Whether job_exited was written: it is the last event, and only one is.
  bool ended() const { return ended_; }
  // One event: `fields` are the event's own keys ("\"node\": 1, ..."), after event, time and
  // attempt. Nothing without a file.
  void write(const char* event, const std::string& fields);
  void node_exited(std::size_t node, std::string_view host, int status, const char* reason);
  void job_exited(int status, const char* reason);
};
// The events of the job this process runs (closed: none).
extern event_log job_events;
// A usage error of run or calibrate ends the job as invalid input, when --events names a file.
void record_usage_error(int argc, char** argv);

// discover.cpp
int discover_command(const options& o);
// Asks the hosts of slots=auto nodes for their GPU counts (an auto_resolver for read_input).
bool resolve_auto(const options& o, hetlaunch::cluster& nodes, std::string& error);

// jobset.cpp
int jobset_command(const options& o);
// The --group NODES:GPUS flags, in order (usage errors for malformed ones).
std::vector<hetlaunch::node_group> node_groups(const options& o);
// A group whose WEIGHT is not a valid weight: printed, and exit_invalid; 0 when all are valid.
int group_weight_problem(const options& o, const std::vector<hetlaunch::node_group>& groups);

// sbatch.cpp
int sbatch_command(const options& o);

// binding.cpp
int cpus_command(const options& o);
int bind_command(const options& o);

// manual.cpp: the manual page and the completion scripts, made from the command and flag tables.
int manual_command(const options& o);
int completion_command(const options& o);

}  // namespace cli

#endif  // HETLAUNCH_TOOLS_CLI_HPP
