// SPDX-License-Identifier: MIT
// The commands: one function each, and the table that names them, says what each takes, and
// gives the help text.
#include "cli.hpp"

#include <arpa/inet.h>
#include <ifaddrs.h>
#include <netinet/in.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>

namespace cli {
namespace {

// Whether an IP literal is an address of this host (any loopback address counts). Names are not
// resolved: only IP literals are checked.
std::optional<bool> address_is_local(std::string_view host, std::string& local_addresses) {
  in6_addr v6{};
  in_addr v4{};
  const std::string text(host);
  const bool is_v4 = inet_pton(AF_INET, text.c_str(), &v4) == 1;
  const bool is_v6 = !is_v4 && inet_pton(AF_INET6, text.c_str(), &v6) == 1;
  if (!is_v4 && !is_v6) return std::nullopt;
  if (is_v4 && (ntohl(v4.s_addr) >> 24) == 127) return true;
  if (is_v6 && IN6_IS_ADDR_LOOPBACK(&v6)) return true;
  ifaddrs* list = nullptr;
  if (getifaddrs(&list) != 0) return std::nullopt;
  bool found = false;
  for (ifaddrs* a = list; a; a = a->ifa_next) {
    if (!a->ifa_addr) continue;
    char buf[INET6_ADDRSTRLEN] = {};
    if (a->ifa_addr->sa_family == AF_INET) {
      const auto* sin = reinterpret_cast<const sockaddr_in*>(a->ifa_addr);
      found = found || (is_v4 && sin->sin_addr.s_addr == v4.s_addr);
      inet_ntop(AF_INET, &sin->sin_addr, buf, sizeof buf);
    } else if (a->ifa_addr->sa_family == AF_INET6) {
      const auto* sin6 = reinterpret_cast<const sockaddr_in6*>(a->ifa_addr);
      found = found || (is_v6 && std::memcmp(&sin6->sin6_addr, &v6, sizeof v6) == 0);
      inet_ntop(AF_INET6, &sin6->sin6_addr, buf, sizeof buf);
    } else {
      continue;
    }
    local_addresses += (local_addresses.empty() ? "" : ", ") + std::string(buf);
  }
  freeifaddrs(list);
  return found;
}

// The input and the one plan of a command; an error when the input is invalid, and nothing
// (the problems printed already) when the plan is.
struct planned {
  input in;
  hetlaunch::launch_plan plan;
};
result<std::optional<planned>> read_and_plan(const command_line& line, const input_part& from,
                                             const launch_part& with,
                                             const char* stand_in_script = nullptr) {
  result<input> in = read_input(from.input);
  if (!in) return in.error();
  hetlaunch::launch_options launch = with.launch;
  if (launch.script.empty() && stand_in_script) launch.script = stand_in_script;
  std::optional<hetlaunch::launch_plan> plan = plan_of(*in, line.command, launch);
  if (!plan) return std::optional<planned>();
  return std::optional<planned>(planned{std::move(*in), std::move(*plan)});
}
// read_and_plan's status: the error printed, or exit_invalid after printed problems.
template <class Planned>
int plan_failed(const Planned& p) {
  return p ? exit_invalid : fail(p.error());
}

int node_failed(const input& in, const hetlaunch::diagnostic& d) {
  return fail(concat(in.source, ": ", d.message()));
}

// Runs a per-node command, body(planned, node), on the plan and its node: --node, or
// SLURM_NODEID's; or prints why there is none, and returns the status to exit with. Without
// --node, a Slurm step that does not run one task on every node of the job (step_problem) is
// refused when this node is not known either; with `one_torchrun_a_node`, even when it is (exec,
// which starts torchrun: a step on only some nodes would wait for the others' rendezvous until it
// times out, and several tasks on a node would start several torchruns as one node).
template <class Body>
int on_node(const node_options& o, Body body, bool one_torchrun_a_node = false) {
  const auto made = read_and_plan(o, o, o);
  if (!made || !*made) return plan_failed(made);
  const planned& p = **made;
  const bool step_refused = !o.node && !p.in.step_problem.empty();
  if (step_refused && one_torchrun_a_node) return fail(concat("--slurm: ", p.in.step_problem));
  if (!o.node && !p.in.excluded.empty()) return fail(p.in.excluded);
  if (step_refused && !p.in.this_node) return fail(concat("--slurm: ", p.in.step_problem));
  return body(p, chosen_node(o, o.input, p.in));
}

int plan_command(const plan_options& o) {
  // The commands need a script to show; train.py stands for a missing one.
  const auto p = read_and_plan(o, o, o, "train.py");
  if (!p || !*p) return plan_failed(p);
  return print_plan((*p)->plan, o.format == "json");
}

int check_command(const node_options& o) {
  const result<input> in = read_input(o.input);
  if (!in) return fail(in.error());
  // One validation: a parsed topology was validated as it was read, and a filter keeps it valid.
  const std::vector<hetlaunch::diagnostic> problems =
      in->validated ? hetlaunch::launch_option_problems(in->nodes, o.launch)
                    : hetlaunch::validate_plan(in->nodes, o.launch);
  print_problems(in->source, problems);
  if (!problems.empty()) return exit_invalid;
  if (o.node && *o.node >= in->nodes.node_count())
    return fail(concat(in->source, ": node index ", *o.node, " is out of range: the cluster has ",
                       in->nodes.node_count(), " nodes"));
  std::printf("%s: valid: %zu nodes, world size %d\n", in->source.c_str(), in->nodes.node_count(),
              in->nodes.world_size());
  return 0;
}

int check_env_command(const plan_options& o) {
  const auto made = read_and_plan(o, o, o);
  if (!made || !*made) return plan_failed(made);
  const auto& p = *made;
  const auto problems =
      hetlaunch::check_worker_env(p->plan, [](const char* name) { return std::getenv(name); });
  for (const auto& d : problems)
    std::fprintf(stderr, "hetlaunch: check-env: %s\n", d.message().c_str());
  return problems.empty() ? 0 : exit_invalid;
}

int env_command(const node_options& o) {
  if (o.direct && o.agent_env)
    throw usage_error{"--agent-env describes torchrun's environment; --direct has no torchrun"};
  return on_node(o, [&o](const planned& p, std::size_t node) {
    const hetlaunch::environment agent =
        o.agent_env ? process_environment() : hetlaunch::environment();
    const auto r = o.direct      ? p.plan.try_direct_worker_env(node, *o.local_rank)
                   : o.agent_env ? p.plan.try_worker_env_from_agent(node, *o.local_rank, agent)
                                 : p.plan.try_worker_env(node, *o.local_rank);
    if (!r) return node_failed(p.in, r.error());
    if (o.format == "json") {
      std::printf("{");
      for (std::size_t i = 0; i < r->size(); ++i)
        std::printf("%s%s: %s", i ? ", " : "", json_string((*r)[i].first).c_str(),
                    json_string((*r)[i].second).c_str());
      std::printf("}\n");
      return 0;
    }
    for (const auto& v : *r) {
      if (o.format == "null")
        std::printf("%s=%s%c", v.first.c_str(), v.second.c_str(), '\0');
      else
        std::printf("export %s=%s\n", v.first.c_str(), hetlaunch::shell_quote(v.second).c_str());
    }
    // What torchrun decides only when it starts the worker, said rather than left out.
    if (o.format == "sh" && !o.direct)
      for (const auto& v : hetlaunch::worker_runtime_variables(*o.local_rank, p.plan.options()))
        std::printf("# %s is set by torchrun when the worker starts: %s\n", v.name.c_str(),
                    v.pattern.empty() ? "empty" : ("a path like " + v.pattern).c_str());
    return 0;
  });
}

int accelerate_command(const node_options& o) {
  // `accelerate launch` takes no torchrun arguments and meets at a static rendezvous: a flag it
  // would drop is refused rather than ignored.
  if (given(o, "--torchrun-arg"))
    throw usage_error{
        "accelerate takes no --torchrun-arg: `accelerate launch` has no place for them"};
  if (o.launch.backend == hetlaunch::rendezvous::c10d)
    throw usage_error{
        "accelerate takes no --rdzv c10d: its command meets at a static rendezvous (--rdzv_backend "
        "static), where each machine's rank is its place in the input"};
  return on_node(o, [](const planned& p, std::size_t node) {
    const auto r = p.plan.try_accelerate_argv(node);
    if (!r) return node_failed(p.in, r.error());
    // accelerate passes its environment on to every worker: the node's devices and work share.
    std::string prefix;
    for (const auto& v : p.plan.agent_env(node))
      prefix += v.first + "=" + hetlaunch::shell_quote(v.second) + " ";
    std::printf("%s%s\n", prefix.c_str(), hetlaunch::shell_join(*r).c_str());
    return 0;
  });
}

int argv_command(const node_options& o) {
  return on_node(o, [&o](const planned& p, std::size_t node) {
    const auto argv = p.plan.try_torchrun_argv(node);
    if (!argv) return node_failed(p.in, argv.error());
    for (const auto& a : *argv) {
      std::fwrite(a.data(), 1, a.size(), stdout);
      std::fputc(o.format == "null" ? '\0' : '\n', stdout);
    }
    return 0;
  });
}

// Why exec removes an inherited variable the launch owns (launch_plan::try_node_variables).
static std::string unset_reason(std::string_view name, const hetlaunch::launch_plan& plan) {
  if (name == hetlaunch::variables::worker_identical)
    return "the nodes of this plan run different numbers of workers, which it would make torchrun "
           "ignore";
  if (hetlaunch::is_share_variable(name) && !plan.has_shares())
    return "the plan has no global batch, so the workers have no work share";
  if (name == hetlaunch::variables::max_batch) return "this node has no memory ceiling in the plan";
  if (name == hetlaunch::variables::calibrate_steps)
    return "only `hetlaunch calibrate` sets it; inherited, it would stop the job after that many "
           "steps as if it had succeeded";
  if (name == hetlaunch::variables::restart_count)
    return "it is the attempt number of another launch's restarts";
  if (name == hetlaunch::variables::progress_seconds)
    return "only `hetlaunch run --hang-timeout` sets it; inherited, every rank would print progress "
           "lines nobody reads";
  return "the launch sets it, and this plan has no value for it";
}

int exec_command(const node_options& o) {
  return on_node(
      o,
      [&o](const planned& p, std::size_t node) {
        const auto argv = p.plan.try_torchrun_argv(node);
        if (!argv) return node_failed(p.in, argv.error());
        const hetlaunch::cluster& c = p.plan.topology();
        // A node whose host is an IP literal must be started on the host that has that address,
        // so two hosts cannot both run, say, node 1 (torchrun itself would let them collide).
        std::string local;
        const std::string_view host = c.node(node).host;
        if (!o.any_host && address_is_local(host, local) == false)
          return fail(concat("node ", node, " is ", host,
                             ", which is not an address of this host (",
                             local.empty() ? std::string("it has none") : "it has " + local,
                             "); start each node on its own host, or pass --any-host"));
        // One rule for what a node sets and removes (launch_plan::try_node_variables): what
        // the caller's environment holds of the launch's own variables (a shell that once
        // evaluated `hetlaunch env --global-batch`, Slurm's --export=ALL, a calibration) must not
        // reach a plan that does not give it.
        const auto vars = p.plan.try_node_variables(node, {}, o.restart_count);
        if (!vars) return node_failed(p.in, vars.error());
        for (std::string_view name : vars->unset) {
          const std::string variable(name);
          if (!std::getenv(variable.c_str())) continue;
          std::fprintf(stderr, "hetlaunch: unsetting %s: %s\n", variable.c_str(),
                       unset_reason(name, p.plan).c_str());
          unsetenv(variable.c_str());
        }
        // torchrun replaces this process; its environment carries the node's devices.
        for (const auto& v : vars->set) setenv(v.first.c_str(), v.second.c_str(), 1);
        std::vector<char*> args;
        for (const auto& a : *argv) args.push_back(const_cast<char*>(a.c_str()));
        args.push_back(nullptr);
        if (std::fflush(stdout) != 0)
          return fail(concat("cannot write the output: ", std::strerror(errno)));
        execvp(args[0], args.data());
        return fail(concat("cannot run ", quoted((*argv)[0]), ": ", std::strerror(errno)));
      },
      /*one_torchrun_a_node=*/true);
}

int expand_command(const hostlist_options& o) {
  if (o.positional.size() != 1) throw usage_error{"expand takes one host list"};
  const auto r = hetlaunch::expand_hostlist(o.positional[0], o.input.max_hosts, o.input.max_bytes);
  if (!r) return fail(concat("expand: ", r.error().to_string()));
  for (const auto& h : *r) {
    std::fwrite(h.data(), 1, h.size(), stdout);
    std::fputc('\n', stdout);
  }
  return 0;
}

// The arguments are one host list, as scontrol reads its one, joined by commas: "" and "a,,b"
// are lists too (of no host, and of a and b), so `compress` prints what `scontrol show hostlist`
// prints for them. An error's column is told within its own argument.
int compress_command(const hostlist_options& o) {
  if (o.positional.empty()) throw usage_error{"compress takes one or more host lists"};
  std::string joined = o.positional.front();
  for (std::size_t i = 1; i < o.positional.size(); ++i) joined.append(",").append(o.positional[i]);
  const auto r = hetlaunch::expand_hostlist(joined, o.input.max_hosts, o.input.max_bytes);
  if (!r && r.error().code != hetlaunch::errc::empty_cluster) {
    const hetlaunch::parse_error& e = r.error();
    if (o.positional.size() == 1 || e.line != 1 || e.column == 0)
      return fail(concat("compress: ", e.to_string()));
    std::size_t start = 0, i = 0;  // the argument the column falls in, and where it starts
    while (i + 1 < o.positional.size() && e.column - 1 > start + o.positional[i].size()) {
      start += o.positional[i].size() + 1;
      ++i;
    }
    return fail(
        concat("compress: argument ", i + 1, ", column ", e.column - start, ": ", e.message));
  }
  std::printf("%s\n", r ? hetlaunch::compress_hostlist(*r).c_str() : "");
  return 0;
}

// The command that starts a job and waits for it.
void add_run_command(std::vector<command>& table) {
  table.insert(
      table.end(),
      {
          {"run",
           "",
           "starts every node's torchrun over ssh and returns the job's status",
           "Validates everything, then starts every node's torchrun over ssh (at most --fanout connections\n"
           "open at once while starting), prints each output line as `[NODE HOST] line`, and exits 0 only\n"
           "when every node does. When a node fails, or on SIGINT/SIGTERM/SIGHUP, every other node is\n"
           "stopped: torchrun and its workers get SIGTERM, and SIGKILL --kill-after seconds later.\n"
           "Each node runs the plan's own torchrun command, so the nodes need torchrun but not hetlaunch\n"
           "(--program chooses another launcher); the plan is made once, here. Hosts with slots=auto\n"
           "(host:auto) are asked for their GPU count first, as `hetlaunch discover` does. The remote\n"
           "login shell must be a POSIX shell. See docs/multi-host.md.\n"
           "A node counts as started only when its remote command says so: an ssh that ends before that\n"
           "(a banner and exit 0 from a ForceCommand or a login shell that exits) fails the job.\n"
           "Exit status: 0 when every node succeeded; 1 for invalid input, a worker that failed (as\n"
           "torchrun itself exits then) or a node that ended before it started; 2 for a usage error;\n"
           "128+N when stopped by signal N. Otherwise it is the status of the node that failed first, as\n"
           "its torchrun or ssh gave it (255: ssh could not connect), which can be 2, 126 or 127 too:\n"
           "hetlaunch's own lines on stderr name the node and what happened. 127 also when the ssh\n"
           "program fails to start here: that blames no host and is never restarted.\n"
           "--events FILE writes what happens as JSON lines (planned, node_started, node_exited,\n"
           "node_returned, restart, job_exited), and job_exited's reason tells the endings apart that\n"
           "share a status (invalid_input, worker_failed, ...); see docs/events.md. With --restarts, a\n"
           "--spare host of at least a failed node's nproc takes its place: same node index, ranks and\n"
           "share. With --grow-back, a host that left and answers again rejoins at its own place when\n"
           "rank 0 next prints a HETLAUNCH_CHECKPOINT line (hetlaunch_shares.checkpoint_saved).\n"
           "With --hang-timeout S every rank reports its progress (hetlaunch_shares, a line a second that\n"
           "run reads and does not show); a rank silent, or in one step, for more than S seconds is hung\n"
           "(--checkpoint-timeout inside hetlaunch_shares.checkpointing()): event rank_hung, and the job\n"
           "stops with reason hung (status 1) or restarts without its node as after a failure. The ranks\n"
           "waiting for it in a collective are not named. --slow-factor F (2 by default while the ranks\n"
           "report) says, once an episode, a rank whose samples per second stay below its own earlier\n"
           "rate / F two windows in a row (rank_slow): judged against itself, never against ranks of\n"
           "another share, so a slower GPU type is not slow. --on-slow rebalance has every sampler that\n"
           "does not rebalance by itself rebalance every window, so work moves off the slow rank;\n"
           "--on-slow exclude restarts the job without its node at rank 0's next checkpoint line (a\n"
           "restart counted against --restarts; --spare and --grow-back apply). --metrics FILE keeps\n"
           "FILE a Prometheus text exposition for node_exporter's textfile collector (docs/metrics.md).\n"
           "--local runs every node's command on this machine instead, with no ssh (docs/multi-host.md).\n"
           "--preflight asks every host for its torch, CUDA, NCCL and GPUs first and refuses hosts that\n"
           "cannot run one job before any node starts (reason preflight_failed). A failed node's node_exited\n"
           "names the worker torchrun saw fail first (rank, local rank, exit code, and its error when its\n"
           "entry point is wrapped in @record); --exit-status-by-reason gives each reason its own exit\n"
           "status (docs/failures.md).\n"
           "Under torchrun each worker's lines come whole, begun with \"[rank R] \" (--no-rank-prefix: as\n"
           "torchrun passes them).\n",
           input_flags | launch_flags,
           {"--ssh",
            "--ssh-arg",
            "--fanout",
            "--env",
            "--env-file",
            "--chdir",
            "--dry-run",
            "--quiet-nodes",
            "--kill-after",
            "--gpu-count-command",
            "--discover-timeout",
            "--restarts",
            "--exclude-failed",
            "--min-nodes",
            "--spare",
            "--grow-back",
            "--probe-every",
            "--hang-timeout",
            "--checkpoint-timeout",
            "--slow-factor",
            "--on-slow",
            "--metrics",
            "--events",
            "--exit-status-by-reason",
            "--preflight",
            "--python",
            "--local",
            "--no-rank-prefix"},
           script_use::required,
           node_use::none,
           bound<job_options, run_command>()},
      });
}

// The commands that measure the nodes before a job: their speed, their GPU count.
void add_measure_commands(std::vector<command>& table) {
  table.insert(
      table.end(),
      {
          {"calibrate",
           "",
           "runs the job to measure each node's speed, and prints the weights",
           "Starts the job as `run` does, with HETLAUNCH_CALIBRATE_STEPS=N (--calibrate-steps, default 20)\n"
           "in every worker. A script whose sampler is hetlaunch_shares.ShareBatchSampler measures its steps\n"
           "in that mode, and after N steps rank 0 prints one line HETLAUNCH_MEASURED {json} and the\n"
           "sampler stops, so the script ends. calibrate reads that line and prints per node its host,\n"
           "workers, samples per second (per worker) and weight: the rate over the slowest node's, the\n"
           "slowest 1. --json prints the same as JSON; --write-hostfile FILE writes a hostfile for run\n"
           "(slots=, weight= and any max_batch=). Exit status: 0 when measured; the job's status when it\n"
           "failed; 1 when the script never printed the line or printed one that is malformed or names a\n"
           "node the job does not have. The nodes' output goes to stderr, stdout is calibrate's own.\n"
           "Needs --global-batch. See docs/shares.md.\n",
           input_flags | launch_flags,
           {"--ssh", "--ssh-arg", "--fanout", "--env", "--env-file", "--chdir", "--quiet-nodes",
            "--kill-after", "--gpu-count-command", "--discover-timeout", "--calibrate-steps",
            "--write-hostfile", "--events", "--exit-status-by-reason", "--local",
            "--no-rank-prefix", "--format", "--json"},
           script_use::required,
           node_use::none,
           bound<job_options, calibrate_command>(),
           {"--global-batch"},
           "text|json"},
          {"preflight",
           "",
           "asks each host for its Python, torch, CUDA, NCCL and GPUs, and says whether they can run one job",
           "Asks every host, over ssh, all at once (at most --fanout), what its Python (--python, default\n"
           "python3) imports: torch's version, torch.version.cuda, NCCL's version and each GPU's name and\n"
           "compute capability; hosts written slots=auto are asked for their GPU count in the same command.\n"
           "Prints a table (--json: {\"passed\", \"hosts\", \"problems\", \"min_compute_capability\", \"bf16\"}).\n"
           "Refuses hosts that differ in torch or NCCL major.minor or CUDA major, that lack torch, that mix\n"
           "hosts with GPUs and hosts without, or that have fewer GPUs than their nproc: each problem names\n"
           "the hosts and both versions. A job of CPU-only hosts (gloo) passes on versions alone. Exit\n"
           "status: 0 when the hosts can run one job, 1 when not or when a host cannot be asked, 2 for a\n"
           "usage error. `run --preflight` does the same before any node starts. See docs/failures.md.\n",
           input_flags,
           {"--ssh", "--ssh-arg", "--fanout", "--gpu-count-command", "--discover-timeout",
            "--python", "--local", "--format", "--json"},
           script_use::none,
           node_use::none,
           bound<preflight_options, preflight_command>(),
           {},
           "text|json"},
          {"discover",
           "",
           "asks each slots=auto host for its GPU count and prints the hostfile",
           "Asks every host written with slots=auto (host:auto) for its GPU count over ssh, all at once,\n"
           "and prints the resolved hostfile. The count is the number of `GPU n:` lines of `nvidia-smi -L`,\n"
           "or what --gpu-count-command prints. A host whose command fails, prints no count, prints more\n"
           "than 64 KiB or does not finish within --discover-timeout seconds is an error that names it\n"
           "and shows what it printed. SIGINT, SIGTERM or SIGHUP stops every ssh it started. Each node's\n"
           "weight (weight= or --weight) is printed beside its count, so a plan of the output splits a\n"
           "global batch as a plan of the input does.\n",
           input_flags,
           {"--ssh", "--ssh-arg", "--fanout", "--gpu-count-command", "--discover-timeout"},
           script_use::none,
           node_use::none,
           bound<discover_options, discover_command>()},
      });
}

// The commands that write a scheduler's job.
void add_scheduler_commands(std::vector<command>& table) {
  table.insert(
      table.end(),
      {
          {"jobset",
           "",
           "a Kubernetes JobSet that runs the mixed job",
           "Prints a JobSet (jobset.x-k8s.io/v1alpha2) manifest, YAML (--json: JSON), for kubectl apply -f -:\n"
           "one replicatedJob per --group, each an Indexed Job of NODES pods asking for GPUS nvidia.com/gpu.\n"
           "Pod k of group g runs torchrun as node offset(g) + k with --nproc_per_node GPUS, the static\n"
           "rendezvous on the first pod's stable host name (NAME-g0-0-0.NAME) and --master-port. With\n"
           "--global-batch each pod computes its work share from its index (WEIGHT: the group's weight).\n"
           "With --numa-binding the image needs hetlaunch too, at --bind-program's path, and nvidia-smi.\n"
           "Needs the JobSet controller in the cluster; see docs/kubernetes.md.\n",
           launch_flags,
           {"--name", "--namespace", "--image", "--group", "--node-selector", "--cpu", "--memory",
            "--env", "--jobset-max-restarts", "--jobset-restart-strategy", "--format", "--json"},
           script_use::required,
           node_use::none,
           bound<jobset_command_options, jobset_command>(),
           {"--name", "--image", "--group"},
           "yaml|json"},
          {"sbatch",
           "",
           "a Slurm batch script: a hetjob component per node group",
           "Prints a batch script for `sbatch`: one heterogeneous-job component per --group (NODES nodes\n"
           "of GPUS GPUs each, in node order), a task a GPU, so that Slurm reports each component's\n"
           "layout. The script prints the plan (`hetlaunch plan --slurm`), then starts one task a node\n"
           "in every component with all of its node's GPUs, which runs `hetlaunch exec --slurm` with\n"
           "the launch options given here. --sbatch-arg lines go to the job (the first component);\n"
           "--partition and --time to every component. A group's WEIGHT reaches the nodes as --weight on\n"
           "its component's node list, for --global-batch. --restarts N runs the step again in the same\n"
           "allocation after a failure, at most N times, with HETLAUNCH_RESTART_COUNT for the workers.\n"
           "--exclude-failed (one --group only: Slurm cancels a heterogeneous job on a node failure) adds\n"
           "--no-kill, so a lost node does not end the job: the step runs again on the nodes the job still\n"
           "has, the plan made again over them; --min-nodes M stops it below M nodes.\n",
           launch_flags,
           {"--group", "--partition", "--time", "--sbatch-arg", "--hetlaunch", "--restarts",
            "--exclude-failed", "--min-nodes"},
           script_use::required,
           node_use::none,
           bound<sbatch_command_options, sbatch_command>(),
           {"--group"}},
      });
}

// The commands that print a plan, a node's command or its variables, or check them.
void add_plan_commands(std::vector<command>& table) {
  table.insert(
      table.end(),
      {
          {"plan",
           "",
           "the rank table and every node's torchrun command",
           "Prints the rank table (node, host, nproc, role, offset, global ranks; with weights or\n"
           "--global-batch also each node's weight, batch and batch offset) and every node's torchrun\n"
           "command, shell-quoted. SCRIPT defaults to train.py. --json: the same for programs.\n",
           input_flags | launch_flags,
           {"--format", "--json"},
           script_use::optional,
           node_use::none,
           bound<plan_options, plan_command>(),
           {},
           "text|json"},
          {"argv",
           "",
           "node I's torchrun argv, one argument a line",
           "Prints node I's torchrun argv, one argument a line, or NUL-terminated with --null.\n",
           input_flags | launch_flags,
           {"--node", "--format", "--null"},
           script_use::required,
           node_use::required,
           bound<node_options, argv_command>(),
           {},
           "lines|null"},
          {"exec",
           "",
           "runs node I's torchrun in place of itself (no shell)",
           "Replaces itself with node I's torchrun (execvp, no shell in between). With --slurm the\n"
           "node defaults to SLURM_NODEID. Nothing is started when the input is invalid, nor when node\n"
           "I's host is an IP address that this host does not have (--any-host skips that check).\n"
           "TORCH_ELASTIC_WORKER_IDENTICAL=1 is removed, with a message, when the nodes differ, and so\n"
           "are inherited work-share variables (HETLAUNCH_*BATCH*) when the plan has no global batch.\n",
           input_flags | launch_flags,
           {"--node", "--any-host", "--restart-count"},
           script_use::required,
           node_use::required,
           bound<node_options, exec_command>()},
          {"env",
           "",
           "the environment torchrun gives one worker",
           "Prints the environment torchrun gives that worker (static rendezvous). --direct: the\n"
           "environment for starting the worker without torchrun (no agent store). --agent-env: as\n"
           "torchrun gives it when started with this environment (it passes on its own\n"
           "TORCH_NCCL_ASYNC_ERROR_HANDLING and OMP_NUM_THREADS). The sh format ends with a comment on\n"
           "TORCHELASTIC_ERROR_FILE, which torchrun decides when the worker starts.\n",
           input_flags | launch_flags,
           {"--node", "--local-rank", "--format", "--json", "--null", "--direct", "--agent-env"},
           script_use::optional,
           node_use::required,
           bound<node_options, env_command>(),
           {"--local-rank"},
           "sh|json|null"},
          {"check",
           "",
           "validates the input and prints every problem",
           "Validates the input and the launch options and prints every problem.\n"
           "Exit status 0: valid; 1: invalid; 2: usage error.\n",
           input_flags | launch_flags,
           {"--node"},
           script_use::optional,
           node_use::optional,
           bound<node_options, check_command>()},
          {"check-env",
           "",
           "compares this process's environment (a worker's) with the plan",
           "Run inside a worker: compares its RANK, WORLD_SIZE, LOCAL_WORLD_SIZE, GROUP_RANK and\n"
           "LOCAL_RANK with the plan and prints every disagreement; with --global-batch also\n"
           "HETLAUNCH_GLOBAL_BATCH, HETLAUNCH_NODE_BATCH, HETLAUNCH_NODE_BATCH_OFFSET and\n"
           "HETLAUNCH_NODE_HOST; without it,\n"
           "each of those that is set is a disagreement. Exit status 1 on any.\n",
           input_flags | launch_flags,
           {},
           script_use::optional,
           node_use::none,
           bound<plan_options, check_env_command>()},
      });
}

// The commands over host lists and accelerate's configuration.
void add_host_list_commands(std::vector<command>& table) {
  table.insert(
      table.end(),
      {
          {"expand",
           "EXPR",
           "expands a Slurm host list, one host a line",
           "Expands a Slurm host list (\"gpu[01-04],cpu7\"), one host a line. At most --max-hosts names\n"
           "(default 1048576) of --max-bytes bytes in all (default 134217728).\n",
           limit_flags,
           {},
           script_use::operands,
           node_use::none,
           bound<hostlist_options, expand_command>()},
          {"compress",
           "HOSTLIST...",
           "compresses hosts into a Slurm host list",
           "Prints the hosts of the host lists as one Slurm host list, as `scontrol show hostlist`\n"
           "does: \"n[1-3],n4\" prints n[1-4], \"a,,b\" prints a,b and \"\" an empty line. Hosts keep\n"
           "their order and repeats. At most --max-hosts names of --max-bytes bytes in all.\n",
           limit_flags,
           {},
           script_use::operands,
           node_use::none,
           bound<hostlist_options, compress_command>()},
          {"accelerate",
           "",
           "machine I's `accelerate launch` command",
           "Prints machine I's `accelerate launch` command: --num_processes is the machine's own\n"
           "count times the machine count, which makes accelerate start the right number there. The\n"
           "machine's CUDA_VISIBLE_DEVICES and work share (--global-batch) come first, as assignments.\n",
           input_flags | launch_flags,
           {"--node"},
           script_use::required,
           node_use::required,
           bound<node_options, accelerate_command>()},
      });
}

// The commands over CPU binding and this tool's own texts.
void add_binding_and_text_commands(std::vector<command>& table) {
  table.insert(
      table.end(),
      {
          {"cpus",
           "",
           "each local rank's GPU, NUMA node and CPUs by --numa-binding",
           "Prints, for this machine (or the recorded tree --sysfs ROOT), each local rank's GPU, the GPU's\n"
           "NUMA node and the CPUs --numa-binding MODE gives it, by the rules of torch 2.14's\n"
           "torch/numa/binding.py: node (every CPU of the GPU's NUMA node), socket (of every NUMA node of\n"
           "its socket), exclusive (the node's physical cores split evenly among the node's GPUs, lower\n"
           "GPUs taking the extra) or core-complex (one last-level-cache group per GPU, largest first).\n"
           "Local rank L uses the L-th visible GPU (--devices, else CUDA_VISIBLE_DEVICES, else every GPU);\n"
           "the GPUs' PCI addresses come from nvidia-smi or --gpu-pci-command. The CPUs are always within\n"
           "those allowed: this process's affinity, every CPU of a --sysfs tree, or --allowed-cpus.\n"
           "--json: {\"mode\", \"ranks\": [{\"local_rank\", \"gpu\", \"pci\", \"numa_node\", \"cpus\"}]}.\n",
           0,
           {"--numa-binding", "--nproc", "--devices", "--sysfs", "--gpu-pci-command",
            "--allowed-cpus", "--format", "--json"},
           script_use::none,
           node_use::none,
           bound<binding_options, cpus_command>(),
           {"--numa-binding"},
           "text|json"},
          {"bind",
           "",
           "runs a worker on the CPUs of its GPU (what torchrun starts with --numa-binding)",
           "Runs as a worker: finds its GPU (the LOCAL_RANK-th of CUDA_VISIBLE_DEVICES, else of every\n"
           "GPU), sets its own CPU affinity to what --numa-binding MODE gives that GPU within its current\n"
           "affinity (as `hetlaunch cpus` prints it), sets CUDA_DEVICE_ORDER=PCI_BUS_ID unless set, and\n"
           "replaces itself with the command (execvp). On any error it exits 1 without running it, naming\n"
           "the node (GROUP_RANK), host and local rank. A plan with --numa-binding makes torchrun start\n"
           "every worker this way (torchrun --no-python ... hetlaunch bind --numa-binding MODE -- python3\n"
           "-u SCRIPT ...), on every torch.\n",
           0,
           {"--numa-binding", "--sysfs", "--gpu-pci-command"},
           script_use::required,
           node_use::none,
           bound<binding_options, bind_command>(),
           {"--numa-binding"}},
          {"completion",
           "bash|zsh",
           "a shell completion script for hetlaunch",
           "Prints a completion script for bash or zsh, made from hetlaunch's own command and flag\n"
           "tables: commands, each command's options, files after --hostfile and --env-file, the words\n"
           "of --rdzv and --format. Try it with `source <(hetlaunch completion bash)`; installs put it in\n"
           "share/bash-completion/completions/hetlaunch and share/zsh/site-functions/_hetlaunch.\n",
           0,
           {},
           script_use::operands,
           node_use::none,
           bound<text_options, completion_command>()},
          {"manual",
           "",
           "the manual page, hetlaunch(1), in roff",
           "Prints the manual page in roff, made from the same tables as the help: read it with\n"
           "`hetlaunch manual | man -l -`; installs put it in share/man/man1/hetlaunch.1.\n",
           0,
           {},
           script_use::none,
           node_use::none,
           bound<text_options, manual_command>()},
      });
}

}  // namespace

// Every command, in the order --help lists them.
const std::vector<command>& commands() {
  static const std::vector<command> table = [] {
    std::vector<command> all;
    add_run_command(all);
    add_measure_commands(all);
    add_scheduler_commands(all);
    add_plan_commands(all);
    add_host_list_commands(all);
    add_binding_and_text_commands(all);
    return all;
  }();
  return table;
}

const command* find_command(const std::string& name) {
  for (const command& c : commands())
    if (name == c.name) return &c;
  return nullptr;
}

}  // namespace cli
