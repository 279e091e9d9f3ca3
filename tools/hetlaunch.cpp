// SPDX-License-Identifier: MIT
// hetlaunch: plan and launch torchrun jobs whose nodes run different numbers of workers, from a
// shell. Exit status: 0 success, 1 invalid input (nothing was started), 2 usage error.
#include <hetlaunch/hetlaunch.hpp>

#include <arpa/inet.h>
#include <ifaddrs.h>
#include <netinet/in.h>
#include <unistd.h>

#include <cerrno>
#include <charconv>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <iterator>
#include <optional>
#include <sstream>
#include <string>
#include <vector>

extern char** environ;

namespace {

constexpr int exit_invalid = 1;
constexpr int exit_usage = 2;

const char* const main_help = R"(usage: hetlaunch COMMAND [OPTIONS] [--] [SCRIPT [ARGS...]]

Plans and launches torchrun jobs whose nodes run different numbers of workers.

commands:
  plan                       the rank table and every node's torchrun command
  argv --node I              node I's torchrun argv, one argument a line (--null: NUL-separated)
  exec --node I              runs node I's torchrun directly (execvp, no shell); refuses when
                             node I's host is an IP address this host does not have (--any-host)
  env --node I --local-rank L
                             the environment torchrun gives that worker
  check                      validates the input and prints every problem
  check-env                  compares this process's environment (a worker's) with the plan
  expand EXPR                expands a Slurm host list, one host a line
  compress HOST...           compresses hosts into a Slurm host list
  accelerate --node I        machine I's `accelerate launch` command

input (default: a built-in example cluster of 8 + 4 + 2 workers):
  --hostfile FILE            DeepSpeed/Open MPI/MPICH hostfile ("host slots=N", "host:N")
  --hosts LIST               "h1:4,h2:8"
  --slurm                    the Slurm job's environment (the node defaults to SLURM_NODEID)
  --include FILTER / --exclude FILTER
                             DeepSpeed-style device filters ("w0@w1:0,2")
  --allow-duplicate-hosts    several agents on one host

launch options:
  --master-addr HOST         default: the first node's host
  --master-port PORT         default: 29500
  --rdzv static|c10d         default: static (c10d decides ranks at rendezvous)
  --rdzv-id ID               default: none (c10d needs one)
  --rdzv-timeout SECONDS     how long agents wait for missing nodes
  --max-restarts N           default: 0
  --dash-flags               spell torchrun's options --nproc-per-node (torch >= 2.0)
  --torch MAJOR.MINOR        the nodes' torch (variable names); default 2.5
  --program CMD              the launcher, word by word, repeatable (default: torchrun)
  --torchrun-arg ARG         an extra torchrun argument, repeatable
  -m, --module               SCRIPT names a Python module

Run `hetlaunch COMMAND --help` for a command's own options; `hetlaunch --version`.
)";

struct command_help {
  const char* name;
  const char* text;
};
const command_help command_helps[] = {
    {"plan", "usage: hetlaunch plan [INPUT] [LAUNCH OPTIONS] [--json] [--] [SCRIPT [ARGS...]]\n"
             "Prints the rank table (node, host, nproc, role, offset, global ranks) and every node's\n"
             "torchrun command, shell-quoted. SCRIPT defaults to train.py. --json: the same for programs.\n"},
    {"argv", "usage: hetlaunch argv --node I [INPUT] [LAUNCH OPTIONS] [--null] [--] SCRIPT [ARGS...]\n"
             "Prints node I's torchrun argv, one argument a line, or NUL-terminated with --null.\n"},
    {"exec", "usage: hetlaunch exec --node I [INPUT] [LAUNCH OPTIONS] [--] SCRIPT [ARGS...]\n"
             "Replaces itself with node I's torchrun (execvp, no shell in between). With --slurm the\n"
             "node defaults to SLURM_NODEID. Nothing is started when the input is invalid, nor when node\n"
             "I's host is an IP address that this host does not have (--any-host skips that check).\n"},
    {"env", "usage: hetlaunch env --node I --local-rank L [INPUT] [LAUNCH OPTIONS] [--format sh|json|null] [--direct]\n"
            "Prints the environment torchrun gives that worker (static rendezvous). --direct: the\n"
            "environment for starting the worker without torchrun (no agent store).\n"},
    {"check", "usage: hetlaunch check [INPUT] [LAUNCH OPTIONS]\n"
              "Validates the input and the launch options and prints every problem.\n"
              "Exit status 0: valid; 1: invalid; 2: usage error.\n"},
    {"check-env", "usage: hetlaunch check-env [INPUT]\n"
                  "Run inside a worker: compares its RANK, WORLD_SIZE, LOCAL_WORLD_SIZE, GROUP_RANK and\n"
                  "LOCAL_RANK with the plan and prints every disagreement. Exit status 1 on any.\n"},
    {"expand", "usage: hetlaunch expand EXPR\nExpands a Slurm host list (\"gpu[01-04],cpu7\"), one host a line.\n"},
    {"compress", "usage: hetlaunch compress HOST...\nPrints the hosts as a Slurm host list, as `scontrol show hostlist` does.\n"},
    {"accelerate", "usage: hetlaunch accelerate --node I [INPUT] [LAUNCH OPTIONS] [--] SCRIPT [ARGS...]\n"
                   "Prints machine I's `accelerate launch` command: --num_processes is the machine's own\n"
                   "count times the machine count, which makes accelerate start the right number there.\n"},
};

struct usage_error {
  std::string message;
};

struct options {
  std::string command;
  std::string hostfile;
  bool have_hostfile = false;
  std::string hosts;
  bool have_hosts = false;
  bool slurm = false;
  std::string include, exclude;
  std::optional<std::size_t> node;
  std::optional<int> local_rank;
  bool json = false;
  bool null = false;
  bool direct = false;
  bool any_host = false;
  std::string format = "sh";
  hetlaunch::launch_options launch;
  std::vector<std::string> program;
  std::vector<std::string> positional;
  bool help = false;
};

int to_int(const std::string& flag, const std::string& text, long long low, long long high) {
  long long value = 0;
  const char* begin = text.c_str();
  const char* end = begin + text.size();
  const auto r = std::from_chars(begin, end, value);
  if (text.empty() || r.ec != std::errc() || r.ptr != end || value < low || value > high)
    throw usage_error{hetlaunch::detail::concat(flag, " needs an integer from ", low, " to ", high, ", got ",
                                                hetlaunch::detail::quoted(text))};
  return static_cast<int>(value);
}

options parse_args(int argc, char** argv) {
  options o;
  o.launch.script.clear();
  int i = 1;
  if (i < argc && argv[i][0] != '-') o.command = argv[i++];
  const auto value = [&](const std::string& flag) -> std::string {
    if (i + 1 >= argc) throw usage_error{flag + " needs a value"};
    return argv[++i];
  };
  bool scripting = false;
  for (; i < argc; ++i) {
    const std::string a = argv[i];
    if (scripting) {
      o.positional.push_back(a);
      continue;
    }
    if (a == "--") {
      scripting = true;
    } else if (a == "-h" || a == "--help") {
      o.help = true;
    } else if (a == "--version") {
      o.command = "--version";
    } else if (a == "--hostfile") {
      o.hostfile = value(a);
      o.have_hostfile = true;
    } else if (a == "--hosts") {
      o.hosts = value(a);
      o.have_hosts = true;
    } else if (a == "--slurm") {
      o.slurm = true;
    } else if (a == "--include") {
      o.include = value(a);
    } else if (a == "--exclude") {
      o.exclude = value(a);
    } else if (a == "--allow-duplicate-hosts") {
      o.launch.validation.allow_duplicate_hosts = true;
    } else if (a == "--node") {
      o.node = static_cast<std::size_t>(to_int(a, value(a), 0, 0x7fffffff));
    } else if (a == "--local-rank") {
      o.local_rank = to_int(a, value(a), 0, 0x7fffffff);
    } else if (a == "--json") {
      o.json = true;
    } else if (a == "--null") {
      o.null = true;
    } else if (a == "--direct") {
      o.direct = true;
    } else if (a == "--any-host") {
      o.any_host = true;
    } else if (a == "--format") {
      o.format = value(a);
      if (o.format != "sh" && o.format != "json" && o.format != "null")
        throw usage_error{"--format must be sh, json or null, got " + hetlaunch::detail::quoted(o.format)};
    } else if (a == "--master-addr") {
      o.launch.master_addr = value(a);
    } else if (a == "--master-port") {
      o.launch.master_port = to_int(a, value(a), 1, 65535);
    } else if (a == "--rdzv") {
      const std::string v = value(a);
      if (v == "static") o.launch.backend = hetlaunch::rendezvous::static_tcp;
      else if (v == "c10d") o.launch.backend = hetlaunch::rendezvous::c10d;
      else throw usage_error{"--rdzv must be static or c10d, got " + hetlaunch::detail::quoted(v)};
    } else if (a == "--rdzv-id") {
      o.launch.rdzv_id = value(a);
    } else if (a == "--rdzv-timeout") {
      o.launch.rendezvous_timeout = to_int(a, value(a), 1, 0x7fffffff);
    } else if (a == "--max-restarts") {
      o.launch.max_restarts = to_int(a, value(a), 0, 0x7fffffff);
    } else if (a == "--dash-flags") {
      o.launch.flags = hetlaunch::flag_style::dash;
    } else if (a == "--torch") {
      const std::string v = value(a);
      const std::size_t dot = v.find('.');
      if (dot == std::string::npos) throw usage_error{"--torch needs MAJOR.MINOR, got " + hetlaunch::detail::quoted(v)};
      o.launch.torch = {to_int(a, v.substr(0, dot), 1, 99), to_int(a, v.substr(dot + 1), 0, 99)};
    } else if (a == "--program") {
      o.program.push_back(value(a));
    } else if (a == "--torchrun-arg") {
      o.launch.torchrun_args.push_back(value(a));
    } else if (a == "-m" || a == "--module") {
      o.launch.module = true;
    } else if (!a.empty() && a[0] == '-' && o.command != "expand" && o.command != "compress") {
      throw usage_error{"unknown option " + hetlaunch::detail::quoted(a)};
    } else {
      // The script: it and everything after it belong to the script.
      scripting = true;
      o.positional.push_back(a);
    }
  }
  if (!o.program.empty()) o.launch.program = o.program;
  return o;
}

std::string json_string(std::string_view s) {
  std::string out = "\"";
  for (char ch : s) {
    const auto c = static_cast<unsigned char>(ch);
    if (c == '"' || c == '\\') {
      out += '\\';
      out += ch;
    } else if (c == '\n') {
      out += "\\n";
    } else if (c == '\t') {
      out += "\\t";
    } else if (c < 0x20) {
      char buf[8];
      std::snprintf(buf, sizeof buf, "\\u%04x", c);
      out += buf;
    } else {
      out += ch;
    }
  }
  return out + "\"";
}

std::string json_array(const std::vector<std::string>& items) {
  std::string out = "[";
  for (std::size_t i = 0; i < items.size(); ++i) out += (i ? ", " : "") + json_string(items[i]);
  return out + "]";
}

int fail(const std::string& message) {
  std::fprintf(stderr, "hetlaunch: %s\n", message.c_str());
  return exit_invalid;
}

struct input {
  hetlaunch::cluster nodes;
  std::optional<std::size_t> this_node;  // from SLURM_NODEID
  std::string source;                    // for messages: the file, "--hosts", ...
};

// Reads the cluster from the chosen input; an error names where (file:line:column) and why.
std::optional<input> read_input(const options& o, int& status) {
  input in;
  const int sources = (o.have_hostfile ? 1 : 0) + (o.have_hosts ? 1 : 0) + (o.slurm ? 1 : 0);
  if (sources > 1) throw usage_error{"give one of --hostfile, --hosts and --slurm"};
  const auto parse_failed = [&](const std::string& where, const hetlaunch::parse_error& e) {
    status = fail(e.line ? hetlaunch::detail::concat(where, ":", e.line, ":", e.column, ": ", e.message)
                         : hetlaunch::detail::concat(where, ": ", e.message));
    return std::nullopt;
  };
  if (o.have_hostfile) {
    std::ifstream file(o.hostfile, std::ios::binary);
    if (!file) {
      status = fail(hetlaunch::detail::concat(o.hostfile, ": cannot read: ", std::strerror(errno)));
      return std::nullopt;
    }
    const std::string text((std::istreambuf_iterator<char>(file)), std::istreambuf_iterator<char>());
    auto r = hetlaunch::parse_hostfile(text);
    if (!r) return parse_failed(o.hostfile, r.error());
    in.nodes = std::move(*r);
    in.source = o.hostfile;
  } else if (o.have_hosts) {
    auto r = hetlaunch::parse_host_list(o.hosts);
    if (!r) return parse_failed("--hosts", r.error());
    in.nodes = std::move(*r);
    in.source = "--hosts";
  } else if (o.slurm) {
    auto job = hetlaunch::cluster_from_slurm([](const char* name) { return std::getenv(name); });
    if (!job) return parse_failed("--slurm", job.error());
    in.nodes = std::move(job->nodes);
    if (job->has_this_node) in.this_node = job->this_node;
    in.source = "--slurm";
  } else {
    in.nodes = hetlaunch::cluster{{"gpu-a", 8}, {"gpu-b", 4}, {"gpu-c", 2}};
    in.source = "the built-in example";
  }
  if (!o.include.empty() || !o.exclude.empty()) {
    auto r = hetlaunch::filter_devices(in.nodes, o.include, o.exclude);
    if (!r) return parse_failed(o.include.empty() ? "--exclude" : "--include", r.error());
    in.nodes = std::move(*r);
  }
  return in;
}

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

// Every problem of the topology and the options; printed, and counted.
bool report_problems(const input& in, const options& o, std::size_t node) {
  const std::vector<hetlaunch::diagnostic> problems = hetlaunch::validate_launch(in.nodes, node, o.launch);
  for (const auto& d : problems) std::fprintf(stderr, "hetlaunch: %s: %s\n", in.source.c_str(), d.message().c_str());
  return problems.empty();
}

std::size_t chosen_node(const options& o, const input& in) {
  if (o.node) return *o.node;
  if (in.this_node) return *in.this_node;
  throw usage_error{o.slurm ? "--node is needed (SLURM_NODEID is not set)" : "--node I is needed"};
}

void set_script(options& o, bool required) {
  if (o.positional.empty()) {
    if (required) throw usage_error{"a training script is needed: hetlaunch " + o.command + " ... [--] SCRIPT [ARGS...]"};
    o.launch.script = "train.py";
    return;
  }
  o.launch.script = o.positional.front();
  o.launch.script_args.assign(o.positional.begin() + 1, o.positional.end());
}

int plan(options& o, const input& in) {
  if (!report_problems(in, o, 0)) return exit_invalid;
  const hetlaunch::cluster& c = in.nodes;
  std::vector<std::vector<std::string>> commands;
  for (std::size_t i = 0; i < c.node_count(); ++i) commands.push_back(hetlaunch::torchrun_argv(c, i, o.launch));
  if (o.json) {
    std::printf("{\n  \"world_size\": %d,\n  \"node_count\": %zu,\n  \"rendezvous\": \"%s\",\n  \"nodes\": [\n",
                c.world_size(), c.node_count(), o.launch.backend == hetlaunch::rendezvous::c10d ? "c10d" : "static");
    for (std::size_t i = 0; i < c.node_count(); ++i) {
      const auto n = c.node(i);
      std::printf("    {\"node\": %zu, \"host\": %s, \"nproc\": %d, \"role\": %s, \"rank_offset\": %d, "
                  "\"global_ranks\": [%d, %d], \"devices\": [",
                  i, json_string(n.host).c_str(), n.nproc, json_string(n.role).c_str(), c.rank_offset(i),
                  c.rank_offset(i), c.rank_offset(i) + n.nproc - 1);
      for (std::size_t k = 0; k < c.devices(i).size(); ++k) std::printf("%s%d", k ? ", " : "", c.devices(i)[k]);
      std::printf("], \"argv\": %s, \"command\": %s}%s\n", json_array(commands[i]).c_str(),
                  json_string(hetlaunch::shell_join(commands[i])).c_str(), i + 1 < c.node_count() ? "," : "");
    }
    std::printf("  ]\n}\n");
    return 0;
  }
  std::printf("%zu nodes, world size %d, %s rendezvous\n\n", c.node_count(), c.world_size(),
              o.launch.backend == hetlaunch::rendezvous::c10d ? "c10d" : "static");
  std::printf("%-5s %-20s %6s  %-10s %7s  %s\n", "node", "host", "nproc", "role", "offset", "global ranks");
  for (std::size_t i = 0; i < c.node_count(); ++i) {
    const auto n = c.node(i);
    std::printf("%-5zu %-20s %6d  %-10s %7d  %d..%d\n", i, std::string(n.host).c_str(), n.nproc,
                std::string(n.role).c_str(), c.rank_offset(i), c.rank_offset(i), c.rank_offset(i) + n.nproc - 1);
  }
  if (o.launch.backend == hetlaunch::rendezvous::c10d)
    std::printf("\nwith c10d, torchrun orders the nodes by host name and process id when they meet: the offsets\n"
                "above hold only if that order is node order; use --rdzv static to fix them\n");
  std::printf("\ntorchrun commands:\n");
  for (std::size_t i = 0; i < c.node_count(); ++i) {
    const hetlaunch::environment agent = hetlaunch::agent_env(c, i);
    std::string prefix;
    for (const auto& v : agent) prefix += v.first + "=" + hetlaunch::shell_quote(v.second) + " ";
    std::printf("  # node %zu on %s\n  %s%s\n", i, std::string(c.node(i).host).c_str(), prefix.c_str(),
                hetlaunch::shell_join(commands[i]).c_str());
  }
  return 0;
}

int run(options& o) {
  if (o.command == "--version") {
    std::printf("hetlaunch %d.%d.%d\n", HETLAUNCH_VERSION_MAJOR, HETLAUNCH_VERSION_MINOR, HETLAUNCH_VERSION_PATCH);
    return 0;
  }
  if (o.command.empty()) {
    std::fputs(main_help, o.help ? stdout : stderr);
    return o.help ? 0 : exit_usage;
  }
  if (o.help) {
    for (const auto& h : command_helps)
      if (o.command == h.name) {
        std::fputs(h.text, stdout);
        return 0;
      }
    throw usage_error{"unknown command " + hetlaunch::detail::quoted(o.command)};
  }
  if (o.command == "expand") {
    if (o.positional.size() != 1) throw usage_error{"expand takes one host list"};
    const auto r = hetlaunch::expand_hostlist(o.positional[0]);
    if (!r) return fail(hetlaunch::detail::concat("expand: ", r.error().to_string()));
    for (const auto& h : *r) std::printf("%s\n", h.c_str());
    return 0;
  }
  if (o.command == "compress") {
    if (o.positional.empty()) throw usage_error{"compress takes one or more hosts"};
    std::printf("%s\n", hetlaunch::compress_hostlist(o.positional).c_str());
    return 0;
  }
  bool known = false;
  for (const auto& h : command_helps) known = known || o.command == h.name;
  if (!known) throw usage_error{"unknown command " + hetlaunch::detail::quoted(o.command)};

  int status = 0;
  const std::optional<input> in = read_input(o, status);
  if (!in) return status;
  const hetlaunch::cluster& c = in->nodes;

  if (o.command == "check") {
    set_script(o, false);
    if (!report_problems(*in, o, 0)) return exit_invalid;
    std::printf("%s: valid: %zu nodes, world size %d\n", in->source.c_str(), c.node_count(), c.world_size());
    return 0;
  }
  if (o.command == "check-env") {
    const auto problems = hetlaunch::check_worker_env(c, [](const char* name) { return std::getenv(name); });
    for (const auto& d : problems) std::fprintf(stderr, "hetlaunch: check-env: %s\n", d.message().c_str());
    return problems.empty() ? 0 : exit_invalid;
  }
  if (o.command == "plan") {
    set_script(o, false);
    return plan(o, *in);
  }
  const std::size_t node = chosen_node(o, *in);
  if (o.command == "env") {
    if (!o.local_rank) throw usage_error{"env needs --local-rank L"};
    set_script(o, false);
    if (!report_problems(*in, o, node)) return exit_invalid;
    const auto r = o.direct ? hetlaunch::try_direct_worker_env(c, node, *o.local_rank, o.launch)
                            : hetlaunch::try_worker_env(c, node, *o.local_rank, o.launch);
    if (!r) return fail(r.error().message());
    if (o.format == "json") {
      std::printf("{");
      for (std::size_t i = 0; i < r->size(); ++i)
        std::printf("%s%s: %s", i ? ", " : "", json_string((*r)[i].first).c_str(), json_string((*r)[i].second).c_str());
      std::printf("}\n");
    } else {
      for (const auto& v : *r) {
        if (o.format == "null") std::printf("%s=%s%c", v.first.c_str(), v.second.c_str(), '\0');
        else std::printf("export %s=%s\n", v.first.c_str(), hetlaunch::shell_quote(v.second).c_str());
      }
    }
    return 0;
  }
  set_script(o, true);
  if (!report_problems(*in, o, node)) return exit_invalid;
  if (o.command == "accelerate") {
    const auto r = hetlaunch::try_accelerate_argv(c, node, o.launch);
    if (!r) return fail(r.error().message());
    std::printf("%s\n", hetlaunch::shell_join(*r).c_str());
    return 0;
  }
  const std::vector<std::string> argv = hetlaunch::torchrun_argv(c, node, o.launch);
  if (o.command == "argv") {
    for (const auto& a : argv) std::printf("%s%c", a.c_str(), o.null ? '\0' : '\n');
    return 0;
  }
  // exec: a node whose host is an IP literal must be started on the host that has that address,
  // so two hosts cannot both run, say, node 1 (torchrun itself would let them collide).
  std::string local;
  const std::string_view host = c.node(node).host;
  if (!o.any_host && address_is_local(host, local) == false)
    return fail(hetlaunch::detail::concat("node ", node, " is ", host, ", which is not an address of this host (",
                                          local.empty() ? "it has none" : "it has " + local,
                                          "); start each node on its own host, or pass --any-host"));
  // torchrun replaces this process; its environment carries the node's devices.
  for (const auto& v : hetlaunch::agent_env(c, node)) setenv(v.first.c_str(), v.second.c_str(), 1);
  std::vector<char*> args;
  for (const auto& a : argv) args.push_back(const_cast<char*>(a.c_str()));
  args.push_back(nullptr);
  std::fflush(stdout);
  execvp(args[0], args.data());
  return fail(hetlaunch::detail::concat("cannot run ", hetlaunch::detail::quoted(argv[0]), ": ", std::strerror(errno)));
}

}  // namespace

int main(int argc, char** argv) {
  try {
    options o = parse_args(argc, argv);
    return run(o);
  } catch (const usage_error& e) {
    std::fprintf(stderr, "hetlaunch: %s\nTry `hetlaunch --help`.\n", e.message.c_str());
    return exit_usage;
  }
}
