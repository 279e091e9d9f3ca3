// SPDX-License-Identifier: MIT
// The command line: the table of flags, parsing (`--flag value` and `--flag=value`), and the help
// text, which is made from the flag and command tables.
#include "cli.hpp"

#include <algorithm>
#include <cstdlib>
#include <optional>
#include <string_view>

namespace cli {
namespace {

// An integer from low to high: an optional '-', then digits as the library reads every count.
long long to_integer(std::string_view flag, const std::string& text, long long low,
                     long long high) {
  const std::optional<long long> value = hetlaunch::parse_integer(text, low, high);
  if (!value)
    throw usage_error{
        concat(flag, " needs an integer from ", low, " to ", high, ", got ", quoted(text))};
  return *value;
}
int to_int(std::string_view flag, const std::string& text, long long low, long long high) {
  return static_cast<int>(to_integer(flag, text, low, high));
}
// A plain decimal ("2", "1.5"), more than `above` and at most `high`.
double to_factor(std::string_view flag, const std::string& text, double above, double high) {
  const bool digits_only = !text.empty() && text.size() <= 20 &&
                           std::all_of(text.begin(), text.end(),
                                       [](char c) { return (c >= '0' && c <= '9') || c == '.'; }) &&
                           std::count(text.begin(), text.end(), '.') <= 1 && text.front() != '.' &&
                           text.back() != '.';
  const double v = digits_only ? std::strtod(text.c_str(), nullptr) : 0;
  if (!digits_only || !(v > above && v <= high))
    throw usage_error{concat(flag, " needs a number above ", hetlaunch::detail::number_text(above),
                             " and at most ", hetlaunch::detail::number_text(high), ", got ",
                             quoted(text))};
  return v;
}

struct flag {
  const char* name;
  const char* alias;  // a short spelling, or nullptr
  const char* value;  // the value's name in help, or nullptr for a switch
  unsigned group;     // the group it belongs to, or 0 when commands name it one by one
  const char* help;
  unsigned part;  // the part of a command's options it is written into (its _bit)
  void (*apply)(const parts& into, const std::string& value);
  bool repeatable = false;  // may be given more than once, each adding a value
};

const flag flag_table[] = {
    // input
    {"--hostfile", nullptr, "FILE", input_flags,
     "DeepSpeed/Open MPI/MPICH hostfile (\"host slots=N\", \"host:N\")", input_bit,
     [](const parts& p, const std::string& v) { p.input->hostfile = v; }},
    {"--hosts", nullptr, "LIST", input_flags, "\"h1:4,h2:8\"", input_bit,
     [](const parts& p, const std::string& v) { p.input->hosts = v; }},
    {"--slurm", nullptr, nullptr, input_flags,
     "the Slurm job's environment (the node defaults to SLURM_NODEID)", input_bit,
     [](const parts& p, const std::string&) { p.input->slurm = true; }},
    {"--include", nullptr, "FILTER", input_flags,
     "keep only these hosts or devices (DeepSpeed style: \"w0@w1:0,2\")", input_bit,
     [](const parts& p, const std::string& v) { p.input->include = v; }},
    {"--exclude", nullptr, "FILTER", input_flags, "leave out these hosts or devices", input_bit,
     [](const parts& p, const std::string& v) { p.input->exclude = v; }},
    {"--weight", nullptr, "HOSTS=W", input_flags,
     "these hosts' weight (a host or a Slurm host list); repeatable, later wins", input_bit,
     [](const parts& p, const std::string& v) { p.input->weights.push_back(v); }, true},
    {"--max-batch", nullptr, "HOSTS=M", input_flags,
     "these hosts' memory ceiling: at most M samples a worker in one forward; repeatable, later wins",
     input_bit, [](const parts& p, const std::string& v) { p.input->max_batches.push_back(v); },
     true},
    {"--allow-duplicate-hosts", nullptr, nullptr, input_flags, "several agents on one host",
     input_bit,
     [](const parts& p, const std::string&) { p.input->validation.allow_duplicate_hosts = true; }},
    {"--max-hosts", nullptr, "N", input_flags | limit_flags,
     "most names a Slurm host list may expand to (1048576)", input_bit,
     [](const parts& p, const std::string& v) {
       p.input->max_hosts = static_cast<std::size_t>(to_integer("--max-hosts", v, 1, 0x7fffffff));
     }},
    {"--max-bytes", nullptr, "N", input_flags | limit_flags,
     "most bytes those names may take (134217728)", input_bit,
     [](const parts& p, const std::string& v) {
       p.input->max_bytes = static_cast<std::size_t>(to_integer("--max-bytes", v, 1, 0x7fffffff));
     }},
    // launch
    {"--master-addr", nullptr, "HOST", launch_flags, "default: the first node's host", launch_bit,
     [](const parts& p, const std::string& v) { p.launch->launch.master_addr = v; }},
    {"--master-port", "--port", "PORT", launch_flags, "default: 29500", launch_bit,
     [](const parts& p, const std::string& v) {
       p.launch->launch.master_port = to_int("--master-port", v, 1, 65535);
     }},
    {"--rdzv", nullptr, "static|c10d", launch_flags,
     "default: static (c10d decides ranks at rendezvous)", launch_bit,
     [](const parts& p, const std::string& v) {
       if (v == "static")
         p.launch->launch.backend = hetlaunch::rendezvous::static_tcp;
       else if (v == "c10d")
         p.launch->launch.backend = hetlaunch::rendezvous::c10d;
       else
         throw usage_error{"--rdzv must be static or c10d, got " + quoted(v)};
     }},
    {"--rdzv-id", nullptr, "ID", launch_flags, "default: none (c10d needs one)", launch_bit,
     [](const parts& p, const std::string& v) { p.launch->launch.rdzv_id = v; }},
    {"--rdzv-timeout", nullptr, "SECONDS", launch_flags, "how long agents wait for missing nodes",
     launch_bit,
     [](const parts& p, const std::string& v) {
       p.launch->launch.rendezvous_timeout = to_int("--rdzv-timeout", v, 1, 0x7fffffff);
     }},
    {"--max-restarts", nullptr, "N", launch_flags, "default: 0", launch_bit,
     [](const parts& p, const std::string& v) {
       p.launch->launch.max_restarts = to_int("--max-restarts", v, 0, 0x7fffffff);
     }},
    {"--global-batch", nullptr, "B", launch_flags,
     "samples a step, split over the nodes by weight (default: 0, none)", launch_bit,
     [](const parts& p, const std::string& v) {
       p.launch->launch.global_batch = to_int("--global-batch", v, 0, 0x7fffffff);
     }},
    {"--dash-flags", nullptr, nullptr, launch_flags,
     "spell torchrun's options --nproc-per-node (torch >= 2.0)", launch_bit,
     [](const parts& p, const std::string&) {
       p.launch->launch.flags = hetlaunch::flag_style::dash;
     }},
    {"--torch", nullptr, "MAJOR.MINOR", launch_flags,
     "the nodes' torch (variable names); default 2.14, the newest known (a newer one gets its rules)",
     launch_bit,
     [](const parts& p, const std::string& v) {
       const std::size_t dot = v.find('.');
       if (dot == std::string::npos)
         throw usage_error{"--torch needs MAJOR.MINOR, got " + quoted(v)};
       p.launch->launch.torch = {to_int("--torch", v.substr(0, dot), 1, 99),
                                 to_int("--torch", v.substr(dot + 1), 0, 99)};
     }},
    {"--program", nullptr, "WORD", launch_flags,
     "the launcher, word by word, repeatable (default: torchrun)", launch_bit,
     [](const parts& p, const std::string& v) { p.launch->program.push_back(v); }, true},
    {"--torchrun-arg", nullptr, "ARG", launch_flags, "an extra torchrun argument, repeatable",
     launch_bit,
     [](const parts& p, const std::string& v) { p.launch->launch.torchrun_args.push_back(v); },
     true},
    {"--module", "-m", nullptr, launch_flags, "SCRIPT names a Python module", launch_bit,
     [](const parts& p, const std::string&) { p.launch->launch.module = true; }},
    {"--numa-binding", nullptr, "MODE", launch_flags,
     "bind each worker to the CPUs near its GPU: node, socket, exclusive or core-complex (any torch)",
     launch_bit,
     [](const parts& p, const std::string& v) {
       const auto mode = hetlaunch::numa_binding_from_name(v);
       if (!mode || *mode == hetlaunch::numa_binding::none)
         throw usage_error{"--numa-binding must be node, socket, exclusive or core-complex, got " +
                           quoted(v)};
       p.launch->launch.binding = *mode;
     }},
    {"--python", nullptr, "PATH", launch_flags,
     "the hosts' Python, for binding and preflight (default: python3; workers without binding "
     "run torchrun's own)",
     launch_bit, [](const parts& p, const std::string& v) { p.launch->launch.python = v; }},
    {"--bind-program", nullptr, "PATH", launch_flags,
     "the hetlaunch the nodes run to bind workers (default: hetlaunch)", launch_bit,
     [](const parts& p, const std::string& v) { p.launch->launch.bind_program = v; }},
    // one command's or a few
    {"--node", nullptr, "I", 0, "the node", node_bit,
     [](const parts& p, const std::string& v) {
       p.node->node = static_cast<std::size_t>(to_integer("--node", v, 0, 0x7fffffff));
     }},
    {"--restart-count", nullptr, "N", 0,
     "the attempt this node runs, for a launcher that restarts the job (every worker gets "
     "HETLAUNCH_RESTART_COUNT=N; an inherited one is removed)",
     node_bit,
     [](const parts& p, const std::string& v) {
       p.node->restart_count = to_int("--restart-count", v, 0, 0x7fffffff);
     }},
    {"--local-rank", nullptr, "L", 0, "the worker on that node", node_bit,
     [](const parts& p, const std::string& v) {
       p.node->local_rank = to_int("--local-rank", v, 0, 0x7fffffff);
     }},
    {"--json", nullptr, nullptr, 0, "JSON for programs (--format json)", line_bit,
     [](const parts& p, const std::string&) { p.line->format = "json"; }},
    {"--null", nullptr, nullptr, 0,
     "end each item with a NUL byte instead of a newline (--format null)", line_bit,
     [](const parts& p, const std::string&) { p.line->format = "null"; }},
    {"--direct", nullptr, nullptr, 0, "the environment for starting the worker without torchrun",
     node_bit, [](const parts& p, const std::string&) { p.node->direct = true; }},
    {"--agent-env", nullptr, nullptr, 0, "as torchrun gives it when started with this environment",
     node_bit, [](const parts& p, const std::string&) { p.node->agent_env = true; }},
    {"--any-host", nullptr, nullptr, 0, "start even when the node's IP address is not this host's",
     node_bit, [](const parts& p, const std::string&) { p.node->any_host = true; }},
    {"--format", nullptr, "FORMAT", 0,
     "the output's form: the command's own words, the default first (see its usage)", line_bit,
     [](const parts& p, const std::string& v) {
       if (v.empty()) throw usage_error{"--format needs a format's name, got ''"};
       p.line->format = v;
     }},
    {"--ssh", nullptr, "PROGRAM", 0, "the ssh client (default: ssh)", remote_bit,
     [](const parts& p, const std::string& v) { p.remote->ssh.program = {v}; }},
    {"--ssh-arg", nullptr, "ARG", 0, "an argument for ssh, before the host; repeatable", remote_bit,
     [](const parts& p, const std::string& v) { p.remote->ssh.args.push_back(v); }, true},
    {"--fanout", nullptr, "N", 0,
     "most nodes connecting at once (default: 64); a node counts until it starts", remote_bit,
     [](const parts& p, const std::string& v) {
       p.remote->fanout = to_int("--fanout", v, 1, 4096);
     }},
    {"--env", nullptr, "NAME[=VALUE]", 0,
     "set NAME on every node: this value, or the local one; repeatable", env_bit,
     [](const parts& p, const std::string& v) { p.env->env.push_back(v); }, true},
    {"--env-file", nullptr, "FILE", 0, "NAME=VALUE lines to set on every node (# comments)",
     remote_bit, [](const parts& p, const std::string& v) { p.remote->env_file = v; }},
    {"--chdir", nullptr, "DIR", 0,
     "the directory to run in on every node (default: this one's path)", remote_bit,
     [](const parts& p, const std::string& v) { p.remote->chdir = v; }},
    {"--dry-run", nullptr, nullptr, 0, "print each node's ssh command instead of running it",
     remote_bit, [](const parts& p, const std::string&) { p.remote->dry_run = true; }},
    {"--gpu-count-command", nullptr, "CMD", 0,
     "prints a host's GPU count (default: counts `nvidia-smi -L` lines)", remote_bit,
     [](const parts& p, const std::string& v) { p.remote->gpu_count_command = v; }},
    {"--discover-timeout", nullptr, "SECONDS", 0,
     "how long a slots=auto host has to print its GPU count (default: 60)", remote_bit,
     [](const parts& p, const std::string& v) {
       p.remote->discover_timeout = to_int("--discover-timeout", v, 1, 86400);
     }},
    {"--quiet-nodes", nullptr, nullptr, 0, "show only node 0's output and every node's errors",
     remote_bit, [](const parts& p, const std::string&) { p.remote->quiet_nodes = true; }},
    {"--no-rank-prefix", nullptr, nullptr, 0,
     "leave the workers' lines as torchrun passes them (no \"[rank R] \", lines may mix)",
     remote_bit, [](const parts& p, const std::string&) { p.remote->ssh.rank_lines = false; }},
    {"--sysfs", nullptr, "ROOT", 0,
     "read the CPU topology from this recorded /sys tree instead of /sys", binding_bit,
     [](const parts& p, const std::string& v) { p.binding->sysfs = v; }},
    {"--gpu-pci-command", nullptr, "CMD", 0,
     "prints \"INDEX, PCI ADDRESS\" a GPU (default: nvidia-smi --query-gpu=index,pci.bus_id)",
     binding_bit, [](const parts& p, const std::string& v) { p.binding->gpu_pci_command = v; }},
    {"--devices", nullptr, "LIST", 0,
     "the visible GPUs, as CUDA_VISIBLE_DEVICES (default: it, or every GPU)", binding_bit,
     [](const parts& p, const std::string& v) { p.binding->devices = v; }},
    {"--nproc", nullptr, "N", 0, "local ranks (default: one a visible GPU)", binding_bit,
     [](const parts& p, const std::string& v) {
       p.binding->nproc = to_int("--nproc", v, 1, 4096);
     }},
    {"--allowed-cpus", nullptr, "LIST", 0,
     "the CPUs the workers may use (default: this process's, or all of --sysfs)", binding_bit,
     [](const parts& p, const std::string& v) { p.binding->allowed_cpus = v; }},
    {"--name", nullptr, "NAME", 0, "the JobSet's name (a DNS label)", jobset_bit,
     [](const parts& p, const std::string& v) { p.jobset->jobset.name = v; }},
    {"--namespace", nullptr, "NS", 0, "its namespace (default: kubectl's)", jobset_bit,
     [](const parts& p, const std::string& v) { p.jobset->jobset.namespace_ = v; }},
    {"--image", nullptr, "IMAGE", 0, "the container image (it needs torchrun, not hetlaunch)",
     jobset_bit, [](const parts& p, const std::string& v) { p.jobset->jobset.image = v; }},
    {"--group", nullptr, "NODES:GPUS[:WEIGHT]", 0,
     "NODES nodes of GPUS GPUs each, in node order; WEIGHT: each node's weight; repeatable",
     groups_bit, [](const parts& p, const std::string& v) { p.groups->groups.push_back(v); }, true},
    {"--node-selector", nullptr, "G:KEY=VALUE", 0,
     "a nodeSelector for group G's pods (0 is the first); repeatable", jobset_bit,
     [](const parts& p, const std::string& v) { p.jobset->node_selectors.push_back(v); }, true},
    {"--cpu", nullptr, "CPU", 0, "each pod's CPU request (\"8\", \"500m\")", jobset_bit,
     [](const parts& p, const std::string& v) { p.jobset->jobset.cpu = v; }},
    {"--memory", nullptr, "MEMORY", 0, "each pod's memory request (\"64Gi\")", jobset_bit,
     [](const parts& p, const std::string& v) { p.jobset->jobset.memory = v; }},
    {"--jobset-max-restarts", nullptr, "N", 0,
     "how often JobSet recreates every Job after a failure (default: 0)", jobset_bit,
     [](const parts& p, const std::string& v) {
       p.jobset->jobset.jobset_max_restarts =
           static_cast<int>(to_integer("--jobset-max-restarts", v, 0, 1000000));
     }},
    {"--jobset-restart-strategy", nullptr, "STRATEGY", 0,
     "Recreate (every Job at once, JobSet's default) or BlockingRecreate (once the old pods are gone)",
     jobset_bit,
     [](const parts& p, const std::string& v) {
       if (v == "Recreate")
         p.jobset->jobset.restart_strategy = hetlaunch::jobset_restart_strategy::recreate;
       else if (v == "BlockingRecreate")
         p.jobset->jobset.restart_strategy = hetlaunch::jobset_restart_strategy::blocking_recreate;
       else
         throw usage_error{"--jobset-restart-strategy must be Recreate or BlockingRecreate, got " +
                           quoted(v)};
     }},
    {"--partition", nullptr, "P", 0, "every component's partition", sbatch_bit,
     [](const parts& p, const std::string& v) { p.sbatch->sbatch.partition = v; }},
    {"--time", nullptr, "T", 0, "every component's time limit (\"1:00:00\")", sbatch_bit,
     [](const parts& p, const std::string& v) { p.sbatch->sbatch.time = v; }},
    {"--sbatch-arg", nullptr, "ARG", 0,
     "an #SBATCH option of the job (\"--job-name=x\"); repeatable", sbatch_bit,
     [](const parts& p, const std::string& v) { p.sbatch->sbatch.sbatch_args.push_back(v); }, true},
    {"--hetlaunch", nullptr, "PATH", 0,
     "the hetlaunch the nodes run (default: hetlaunch, from PATH)", sbatch_bit,
     [](const parts& p, const std::string& v) { p.sbatch->sbatch.hetlaunch_program = v; }},
    {"--restarts", nullptr, "N", 0,
     "after a failure, start the whole job again, at most N times (default: 0)", restart_bit,
     [](const parts& p, const std::string& v) {
       p.restart->restarts = to_int("--restarts", v, 0, 1000000);
     }},
    {"--exclude-failed", nullptr, nullptr, 0,
     "each restart leaves out the failed nodes (run: the first to fail, hosts not reached; sbatch: nodes Slurm lost)",
     restart_bit, [](const parts& p, const std::string&) { p.restart->exclude_failed = true; }},
    {"--min-nodes", nullptr, "M", 0,
     "fail instead of restarting on fewer than M nodes (default: 1)", restart_bit,
     [](const parts& p, const std::string& v) {
       p.restart->min_nodes = to_int("--min-nodes", v, 1, 0x7fffffff);
     }},
    {"--calibrate-steps", nullptr, "N", 0,
     "steps the script measures before it reports (HETLAUNCH_CALIBRATE_STEPS, default: 20)",
     calibrate_bit,
     [](const parts& p,
        const std::string& v) { p.calibrate->steps = to_int("--calibrate-steps", v, 1, 1000000); }},
    {"--write-hostfile", nullptr, "FILE", 0,
     "write the measured weights as a hostfile for run: host slots=N weight=W (and max_batch=M)",
     calibrate_bit, [](const parts& p, const std::string& v) { p.calibrate->hostfile = v; }},
    {"--spare", nullptr, "HOSTS", 0,
     "hosts that stand by (--hosts syntax, host:N or host:auto): with --restarts, a failed node "
     "restarts on one with at least its nproc, keeping its ranks and share; repeatable",
     restart_bit, [](const parts& p, const std::string& v) { p.restart->spares.push_back(v); },
     true},
    {"--grow-back", nullptr, nullptr, 0,
     "with --restarts, probe the hosts that left the job (as discover asks them); one that "
     "answers rejoins at its own place at rank 0's next HETLAUNCH_CHECKPOINT line (a restart "
     "that does not count against --restarts)",
     restart_bit, [](const parts& p, const std::string&) { p.restart->grow_back = true; }},
    {"--probe-every", nullptr, "SECONDS", 0,
     "with --grow-back, how often a host that left is probed (default: 30)", restart_bit,
     [](const parts& p, const std::string& v) {
       p.restart->probe_every = to_int("--probe-every", v, 1, 86400);
     }},
    {"--hang-timeout", nullptr, "SECONDS", 0,
     "a rank with no progress for this long is hung (rank_hung): the job stops, or restarts "
     "without its node as after a failure; needs hetlaunch_shares in the script (default: 0, off)",
     restart_bit,
     [](const parts& p,
        const std::string&
            v) { p.restart->hang_timeout = to_int("--hang-timeout", v, 0, 604800); }},
    {"--checkpoint-timeout", nullptr, "SECONDS", 0,
     "with --hang-timeout, the limit while a rank is inside hetlaunch_shares.checkpointing() "
     "(default: 1800)",
     restart_bit,
     [](const parts& p,
        const std::string&
            v) { p.restart->checkpoint_timeout = to_int("--checkpoint-timeout", v, 1, 604800); }},
    {"--slow-factor", nullptr, "F", 0,
     "a rank whose samples per second stay below its own earlier rate / F for two windows is "
     "slow (rank_slow, reported once an episode); judged against itself, never against ranks of "
     "another share; needs hetlaunch_shares in the script (default: 2, with --hang-timeout)",
     restart_bit,
     [](const parts& p,
        const std::string& v) { p.restart->slow_factor = to_factor("--slow-factor", v, 1, 100); }},
    {"--on-slow", nullptr, "report|rebalance|exclude", 0,
     "what a slow rank brings (default: report, rank_slow alone): rebalance, the samplers "
     "rebalance every window so work moves off it; exclude, the job restarts without its node at "
     "rank 0's next HETLAUNCH_CHECKPOINT line (needs --restarts)",
     restart_bit,
     [](const parts& p, const std::string& v) {
       if (v == "report")
         p.restart->on_slow = slow_action::report;
       else if (v == "rebalance")
         p.restart->on_slow = slow_action::rebalance;
       else if (v == "exclude")
         p.restart->on_slow = slow_action::exclude;
       else
         throw usage_error{"--on-slow must be report, rebalance or exclude, got " + quoted(v)};
     }},
    {"--metrics", nullptr, "FILE", 0,
     "keep FILE a Prometheus text exposition of the job and each rank (node_exporter's textfile "
     "collector reads NAME.prom files in its directory), replaced whole each second and at each "
     "event",
     restart_bit,
     [](const parts& p, const std::string& v) {
       if (v.empty()) throw usage_error{"--metrics needs a file name, got ''"};
       p.restart->metrics = v;
     }},
    {"--local", nullptr, nullptr, 0,
     "run every node's command on this machine, with no ssh: host names are labels, "
     "--master-addr defaults to 127.0.0.1 (try a job on one machine)",
     remote_bit, [](const parts& p, const std::string&) { p.remote->local = true; }},
    {"--preflight", nullptr, nullptr, 0,
     "before any node starts, ask every host for its Python, torch, CUDA, NCCL and GPUs (in the "
     "round that asks slots=auto hosts) and refuse hosts that cannot run one job "
     "(docs/failures.md); the workers get HETLAUNCH_MIN_COMPUTE_CAPABILITY and HETLAUNCH_BF16",
     remote_bit, [](const parts& p, const std::string&) { p.remote->preflight = true; }},
    {"--exit-status-by-reason", nullptr, nullptr, 0,
     "exit with the status of job_exited's reason: 0 succeeded, 1 worker_failed, 2 "
     "invalid_input, 3 unreachable, 4 restarts_exhausted, 5 too_few_nodes, 6 preflight_failed, "
     "7 hung, 8 ended_before_start, 9 calibration_failed, 10 output_failed, 128+N interrupted "
     "by signal N (docs/failures.md)",
     remote_bit, [](const parts& p, const std::string&) { p.remote->exit_status_by_reason = true; }},
    {"--events", nullptr, "FILE", 0,
     "write what happens to the job to FILE, one JSON object a line (docs/events.md)", remote_bit,
     [](const parts& p, const std::string& v) { p.remote->events = v; }},
    {"--kill-after", nullptr, "SECONDS", 0,
     "after a failure or a signal, how long the other nodes get to stop (10)", remote_bit,
     [](const parts& p, const std::string& v) {
       p.remote->ssh.kill_after = to_int("--kill-after", v, 1, 3600);
     }},
};

const flag* find_flag(std::string_view name) {
  for (const flag& f : flag_table)
    if (name == f.name || (f.alias && name == f.alias)) return &f;
  return nullptr;
}

bool accepts(const command& c, const flag& f) {
  if (f.group & c.groups) return true;
  for (const char* name : c.flags)
    if (std::string_view(name) == f.name) return true;
  return false;
}

std::string flag_line(const flag& f) {
  std::string left = f.alias ? concat(f.alias, ", ", f.name) : std::string(f.name);
  if (f.value) left += concat(" ", f.value);
  if (left.size() < 27)
    left.append(27 - left.size(), ' ');
  else
    left += concat("\n", std::string(29, ' '));
  return concat("  ", left, f.help, "\n");
}

}  // namespace

std::vector<flag_view> flag_list() {
  std::vector<flag_view> out;
  for (const flag& f : flag_table) out.push_back({f.name, f.alias, f.value, f.help, f.group});
  return out;
}

bool command_accepts(const command& c, const char* name) {
  const flag* f = find_flag(name);
  return f && accepts(c, *f);
}

std::string table_problem() {
  for (const command& c : commands())
    for (const flag& f : flag_table)
      if (accepts(c, f) && !(c.run.parts & f.part))
        return concat(c.name, " takes ", f.name, ", which its options have no part for");
  return {};
}

// "unknown option", with where a torchrun or accelerate habit's number comes from instead, or
// the nearest flag the command takes when the name is a typo of one.
std::string unknown_option(const std::string& name, const command* cmd) {
  std::string spelled = name;
  std::replace(spelled.begin(), spelled.end(), '_', '-');
  for (const char* counts : {"--nproc-per-node", "--num-processes", "--num-machines", "--nnodes",
                             "--num-gpus", "--gpus-per-node", "--nproc"})
    if (spelled == counts)
      return concat("unknown option ", quoted(name),
                    ": hetlaunch takes each node's worker count from its input, node by node "
                    "(--hosts a:8,b:4, a hostfile's slots=N, or --slurm), and the node count "
                    "from the hosts listed");
  for (const char* rank : {"--node-rank", "--machine-rank"})
    if (spelled == rank)
      return concat("unknown option ", quoted(name),
                    ": each node's rank is its place in the input (--node I picks one for exec, "
                    "env and argv)");
  const flag* nearest = nullptr;
  std::size_t best = 3;
  for (const flag& f : flag_table) {
    if (cmd && !accepts(*cmd, f)) continue;
    const std::size_t d = hetlaunch::detail::edit_distance(spelled, f.name);
    if (d < best) best = d, nearest = &f;
  }
  if (nearest)
    return concat("unknown option ", quoted(name), "; did you mean ", nearest->name, "?");
  return "unknown option " + quoted(name);
}

arguments parse_args(int argc, char** argv) {
  arguments a;
  int i = 1;
  const command* cmd = nullptr;
  if (i < argc && argv[i][0] != '-') {
    a.command = argv[i++];
    cmd = find_command(a.command);
    if (!cmd) throw usage_error{"unknown command " + quoted(a.command)};
  }
  bool scripting = false;
  for (; i < argc; ++i) {
    const std::string word = argv[i];
    if (scripting) {
      a.positional.push_back(word);
      continue;
    }
    if (word == "--") {
      scripting = true;
      continue;
    }
    if (word == "-h" || word == "--help") {
      a.help = true;
      continue;
    }
    if (word == "--version" && !cmd) {
      a.version = true;
      continue;
    }
    if (word.size() > 1 && word[0] == '-') {
      const std::size_t eq = word.rfind("--", 0) == 0 ? word.find('=') : std::string::npos;
      const std::string name = word.substr(0, eq);
      const flag* f = find_flag(name);
      if (!f) throw usage_error{unknown_option(name, cmd)};
      if (!cmd)
        throw usage_error{concat(name, " needs a command before it: hetlaunch COMMAND ", name)};
      if (!accepts(*cmd, *f)) throw usage_error{concat(cmd->name, " does not take ", name)};
      std::string value;
      if (f->value) {
        if (eq != std::string::npos)
          value = word.substr(eq + 1);
        else if (i + 1 < argc)
          value = argv[++i];
        else
          throw usage_error{concat(name, " needs a value (", f->value, ")")};
      } else if (eq != std::string::npos) {
        throw usage_error{concat(name, " takes no value")};
      }
      a.flags.emplace_back(name, std::move(value));
      continue;
    }
    if (!cmd && a.help && find_command(word)) {  // hetlaunch --help COMMAND
      a.command = word;
      cmd = find_command(word);
      continue;
    }
    if (!cmd) throw usage_error{"unknown command " + quoted(word)};
    if (cmd->script == script_use::none)
      throw usage_error{concat(cmd->name, " takes no script or operand, got ", quoted(word))};
    // A script: it and everything after it belong to the script. Operands: each stands alone.
    if (cmd->script != script_use::operands) scripting = true;
    a.positional.push_back(word);
  }
  return a;
}

namespace {
// A usage error when a flag of c.required was not given, or --format names no format of c's.
void check_required(const command& c, const command_line& line) {
  for (const char* name : c.required) {
    bool given = false;
    for (const std::string& g : line.given) given = given || g == name;
    if (given) continue;
    const flag& f = *find_flag(name);
    throw usage_error{concat(c.name, " needs ", f.repeatable ? "at least one " : "", f.name,
                             f.value ? " " : "", f.value ? f.value : "")};
  }
  if (line.format.empty()) return;
  // --format, or --json / --null, must name one of the command's own formats.
  std::vector<std::string_view> words;
  for (std::string_view rest = c.formats; !rest.empty();) {
    const std::size_t bar = rest.find('|');
    words.push_back(rest.substr(0, bar));
    rest = bar == std::string_view::npos ? std::string_view() : rest.substr(bar + 1);
  }
  for (const std::string_view w : words)
    if (w == line.format) return;
  std::string list;
  for (std::size_t k = 0; k < words.size(); ++k)
    list += concat(k == 0 ? "" : k + 1 == words.size() ? " or " : ", ", words[k]);
  throw usage_error{concat("--format must be ", list, ", got ", quoted(line.format))};
}
}  // namespace

void bind_options(const command& c, const arguments& a, const parts& into) {
  command_line& line = *into.line;
  line.command = a.command;
  line.positional = a.positional;
  for (const auto& [name, value] : a.flags) {
    const flag& f = *find_flag(name);
    // A flag that takes one value, given twice, would silently keep only the later one.
    if (!f.repeatable &&
        std::find(line.given.begin(), line.given.end(), f.name) != line.given.end())
      throw usage_error{concat(f.name, " is given twice: ",
                               f.value
                                   ? "it takes one value, and the later would replace the earlier"
                                   : "give it once")};
    f.apply(into, value);
    line.given.push_back(f.name);
    if ((f.group & launch_flags) && into.launch) {
      into.launch->launch_args.push_back(name);
      if (f.value) into.launch->launch_args.push_back(value);
    }
  }
  check_required(c, line);
  if (line.format.empty()) {
    const std::string_view formats = c.formats;
    line.format = std::string(formats.substr(0, formats.find('|')));
  }
  if (c.script == script_use::required && line.positional.empty())
    throw usage_error{
        concat("a training script is needed: hetlaunch ", c.name, " ... [--] SCRIPT [ARGS...]")};
  if (c.node == node_use::required && !(into.node && into.node->node) &&
      !(into.input && into.input->slurm))
    throw usage_error{"--node I is needed"};
  if (into.launch) {
    hetlaunch::launch_options& launch = into.launch->launch;
    if (!into.launch->program.empty()) launch.program = into.launch->program;
    // The script and its arguments, for every command that takes a script.
    if ((c.script == script_use::optional || c.script == script_use::required) &&
        !line.positional.empty()) {
      if (line.positional.front().empty())
        throw usage_error{concat("the training script is empty (''): hetlaunch ", c.name,
                                 " ... [--] SCRIPT [ARGS...]")};
      launch.script = line.positional.front();
      launch.script_args.assign(line.positional.begin() + 1, line.positional.end());
    }
    if (into.input) launch.validation = into.input->validation;
  }
}

std::string main_help() {
  std::string out =
      "usage: hetlaunch COMMAND [OPTIONS] [--] [SCRIPT [ARGS...]]\n\n"
      "Plans and launches torchrun jobs whose nodes run different numbers of workers.\n"
      "Exit status: 0 success, 1 invalid input or a failed job, 2 usage error.\n\ncommands:\n";
  for (const command& c : commands()) {
    std::string left = concat("  ", c.name);
    if (left.size() < 14) left.append(14 - left.size(), ' ');
    out += concat(left, " ", c.summary, "\n");
  }
  out += "\ninput (default: a built-in example cluster of 8 + 4 + 2 workers):\n";
  for (const flag& f : flag_table)
    if (f.group & input_flags) out += flag_line(f);
  out += "\nlaunch options:\n";
  for (const flag& f : flag_table)
    if (f.group & launch_flags) out += flag_line(f);
  out += "\nRun `hetlaunch COMMAND --help` for a command's own options; `hetlaunch --version`.\n";
  return out;
}

namespace {
std::string usage_word(const flag& f, bool optional, const char* value = nullptr) {
  std::string word = f.name;
  if (f.value) word += concat(" ", value ? value : f.value);
  if (optional) word = concat("[", word, "]");
  if (f.repeatable) word += "...";
  return word;
}
bool is_required(const command& c, const char* name) {
  for (const char* r : c.required)
    if (std::string_view(r) == name) return true;
  return false;
}
}  // namespace

std::string usage_line(const command& c) {
  std::vector<std::string> words = {"hetlaunch", c.name};
  if (c.node == node_use::required) words.push_back("--node I");
  for (const char* name : c.required) words.push_back(usage_word(*find_flag(name), false));
  if (c.groups & input_flags)
    words.push_back("[INPUT]");
  else if (c.groups & limit_flags)
    for (const flag& f : flag_table)
      if (f.group & limit_flags) words.push_back(usage_word(f, true));
  if (c.groups & launch_flags) words.push_back("[LAUNCH OPTIONS]");
  for (const char* name : c.flags)
    if (!is_required(c, name) &&
        !(c.node == node_use::required && std::string_view(name) == "--node"))
      words.push_back(usage_word(*find_flag(name), true,
                                 std::string_view(name) == "--format" ? c.formats : nullptr));
  if (c.script == script_use::required)
    words.push_back("[--] SCRIPT [ARGS...]");
  else if (c.script == script_use::optional)
    words.push_back("[--] [SCRIPT [ARGS...]]");
  else if (c.script == script_use::operands && *c.operands)
    words.push_back(c.operands);
  // Lines of at most 100 columns after "usage: ", continued under the command.
  std::string out, line;
  for (const std::string& w : words) {
    if (!line.empty() && 7 + line.size() + 1 + w.size() > 100) {
      out += concat(line, "\n");
      line = std::string(7, ' ');
      line += w;
      continue;
    }
    if (!line.empty()) line += ' ';
    line += w;
  }
  return out + line;
}

bool given(const command_line& line, const char* name) {
  return std::find(line.given.begin(), line.given.end(), name) != line.given.end();
}

void check_restart_flags(const restart_args& r) {
  // --restarts 0 restarts nothing: a spare or an exclusion given with it would never be used.
  const bool restarting = r.restarts && *r.restarts > 0;
  if (!restarting && !r.spares.empty())
    throw usage_error{
        "--spare needs --restarts N above 0 (a spare takes a failed node's place at a restart)"};
  if (!restarting && (r.exclude_failed || r.min_nodes))
    throw usage_error{concat(r.exclude_failed ? "--exclude-failed" : "--min-nodes",
                             " needs --restarts N above 0")};
  if (r.min_nodes && !r.exclude_failed)
    throw usage_error{"--min-nodes needs --exclude-failed (the job shrinks only then)"};
  if (!restarting && r.grow_back)
    throw usage_error{
        "--grow-back needs --restarts N above 0 (a host leaves the job at a restart)"};
  if (r.probe_every && !r.grow_back) throw usage_error{"--probe-every needs --grow-back"};
  if (r.checkpoint_timeout && r.hang_timeout == 0)
    throw usage_error{"--checkpoint-timeout needs --hang-timeout SECONDS above 0"};
  if (r.excludes_slow() && !restarting)
    throw usage_error{
        "--on-slow exclude needs --restarts N above 0 (the job restarts without the slow rank's "
        "node)"};
}

hetlaunch::restart_options restart_options_of(const restart_args& r) {
  hetlaunch::restart_options out;
  out.restarts = r.restarts.value_or(0);
  out.exclude_failed = r.exclude_failed;
  out.min_nodes = static_cast<std::size_t>(std::max(r.min_nodes.value_or(1), 0));
  return out;
}

std::string description_of(const command& c) {
  std::string out = c.description;
  // Which variables --env may not set comes from the library's own list, never written again.
  if (command_accepts(c, "--env")) {
    std::string names;
    const auto& owned = hetlaunch::variables::owned;
    for (std::size_t k = 0; k < owned.size(); ++k)
      names += concat(k == 0 ? "" : k + 1 == owned.size() ? " or " : ", ", owned[k]);
    const std::string text = concat(
        "--env and --env-file may not set ", names,
        ": the launch sets them (the plan, --restarts, calibrate, --hang-timeout, --on-slow) or "
        "removes them.");
    // Wrapped at the width of the descriptions written by hand.
    std::size_t line_start = out.size();
    for (std::size_t at = 0; at < text.size();) {
      std::size_t end = text.find(' ', at);
      if (end == std::string::npos) end = text.size();
      if (out.size() - line_start + (end - at) + 1 > 96 && out.size() > line_start) {
        out.back() = '\n';
        line_start = out.size();
      }
      out.append(text, at, end - at).push_back(' ');
      at = end + 1;
    }
    out.back() = '\n';
  }
  return out;
}

std::string command_help(const command& c) {
  std::string out = concat("usage: ", usage_line(c), "\n", description_of(c));
  std::string own;
  for (const char* name : c.flags) own += flag_line(*find_flag(name));
  if (!own.empty()) out += concat("\noptions:\n", own);
  if (c.groups & input_flags)
    out += "\nINPUT: --hostfile, --hosts, --slurm, --include/--exclude (see `hetlaunch --help`)\n";
  else if (c.groups & limit_flags) {
    out += "\noptions:\n";
    for (const flag& f : flag_table)
      if (f.group & limit_flags) out += flag_line(f);
  }
  if (c.groups & launch_flags)
    out += "LAUNCH OPTIONS: --master-addr, --master-port, --rdzv, ... (see `hetlaunch --help`)\n";
  return out;
}

}  // namespace cli
