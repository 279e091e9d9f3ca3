// SPDX-License-Identifier: MIT
// hetlaunch: plan and launch torchrun jobs whose nodes run different numbers of workers, from a
// shell. Exit status: 0 success, 1 invalid input (nothing was started), 2 usage error.
#include <hetlaunch/hetlaunch.hpp>

#include <arpa/inet.h>
#include <ifaddrs.h>
#include <netinet/in.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <charconv>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <algorithm>
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
  --max-hosts N / --max-bytes N
                             limits of a Slurm host list's expansion (default 1048576 names,
                             134217728 bytes)

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
    {"check-env", "usage: hetlaunch check-env [INPUT] [LAUNCH OPTIONS]\n"
                  "Run inside a worker: compares its RANK, WORLD_SIZE, LOCAL_WORLD_SIZE, GROUP_RANK and\n"
                  "LOCAL_RANK with the plan and prints every disagreement. Exit status 1 on any.\n"},
    {"expand", "usage: hetlaunch expand [--max-hosts N] [--max-bytes N] EXPR\n"
               "Expands a Slurm host list (\"gpu[01-04],cpu7\"), one host a line. At most --max-hosts names\n"
               "(default 1048576) of --max-bytes bytes in all (default 134217728).\n"},
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
  std::size_t max_hosts = std::size_t{1} << 20;
  std::size_t max_bytes = std::size_t{1} << 27;
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
    } else if (a == "--max-hosts") {
      o.max_hosts = static_cast<std::size_t>(to_int(a, value(a), 1, 0x7fffffff));
    } else if (a == "--max-bytes") {
      o.max_bytes = static_cast<std::size_t>(to_int(a, value(a), 1, 0x7fffffff));
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

// A JSON string that is valid UTF-8 whatever the bytes: UTF-8 characters stay as they are, and a
// byte that is not part of one is written \udcXX (Python's surrogateescape: json.loads, then
// .encode("utf-8", "surrogateescape"), gives the bytes back).
std::string json_string(std::string_view s) {
  std::string out = "\"";
  char buf[8];
  for (std::size_t i = 0; i < s.size();) {
    const auto c = static_cast<unsigned char>(s[i]);
    const std::size_t n = hetlaunch::detail::utf8_sequence_length(s, i);
    if (n > 1) {
      out.append(s.data() + i, n);
      i += n;
      continue;
    }
    if (c == '"' || c == '\\') {
      out += '\\';
      out += static_cast<char>(c);
    } else if (c == '\n') {
      out += "\\n";
    } else if (c == '\t') {
      out += "\\t";
    } else if (c < 0x20 || c == 0x7f) {
      std::snprintf(buf, sizeof buf, "\\u%04x", c);
      out += buf;
    } else if (c >= 0x80) {
      std::snprintf(buf, sizeof buf, "\\udc%02x", c);
      out += buf;
    } else {
      out += static_cast<char>(c);
    }
    ++i;
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
  std::optional<std::size_t> this_node;  // from SLURM_NODEID, in the filtered cluster
  std::string excluded;                  // why SLURM_NODEID's node has no place in the filtered cluster
  std::string source;                    // for messages: the file, "--hosts", ...
  bool validated = false;                // the parser validated the topology with these options
};

// The largest hostfile read: far above any real cluster's, far below what would exhaust memory.
constexpr std::size_t max_hostfile_bytes = std::size_t{256} << 20;

// Reads a whole file, refusing directories, files past max_hostfile_bytes and read errors with the
// path and the system's reason. Endless files (/dev/zero) end at the limit.
std::optional<std::string> read_file(const std::string& path, std::string& error) {
  const auto fail_with = [&](const std::string& why) {
    error = hetlaunch::detail::concat(path, ": ", why);
    return std::nullopt;
  };
  const int fd = open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return fail_with(hetlaunch::detail::concat("cannot read: ", std::strerror(errno)));
  struct closer {
    int fd;
    ~closer() { close(fd); }
  } close_on_return{fd};
  struct stat st {};
  if (fstat(fd, &st) != 0) return fail_with(hetlaunch::detail::concat("cannot read: ", std::strerror(errno)));
  if (S_ISDIR(st.st_mode)) return fail_with("cannot read: it is a directory");
  const auto too_large = [&] {
    return fail_with(hetlaunch::detail::concat("is larger than ", max_hostfile_bytes, " bytes, the limit of a hostfile"));
  };
  std::string text;
  if (S_ISREG(st.st_mode)) {
    if (static_cast<unsigned long long>(st.st_size) > max_hostfile_bytes) return too_large();
    text.reserve(static_cast<std::size_t>(st.st_size));
  }
  char buffer[1 << 16];
  while (true) {
    const ssize_t got = read(fd, buffer, sizeof buffer);
    if (got < 0) {
      if (errno == EINTR) continue;
      return fail_with(hetlaunch::detail::concat("cannot read: ", std::strerror(errno)));
    }
    if (got == 0) break;
    if (text.size() + static_cast<std::size_t>(got) > max_hostfile_bytes) return too_large();
    text.append(buffer, static_cast<std::size_t>(got));
  }
  return text;
}

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
  hetlaunch::hostfile_options parsing;
  parsing.allow_duplicate_hosts = o.launch.validation.allow_duplicate_hosts;
  if (o.have_hostfile) {
    std::string error;
    std::optional<std::string> text = read_file(o.hostfile, error);
    if (!text) {
      status = fail(error);
      return std::nullopt;
    }
    auto r = hetlaunch::parse_hostfile(*text, parsing);
    if (!r) return parse_failed(o.hostfile, r.error());
    in.nodes = std::move(*r);
    in.source = o.hostfile;
    in.validated = !o.launch.validation.allow_underscore;
  } else if (o.have_hosts) {
    auto r = hetlaunch::parse_host_list(o.hosts, parsing);
    if (!r) return parse_failed("--hosts", r.error());
    in.nodes = std::move(*r);
    in.source = "--hosts";
    in.validated = !o.launch.validation.allow_underscore;
  } else if (o.slurm) {
    auto job = hetlaunch::cluster_from_slurm([](const char* name) { return std::getenv(name); }, o.max_hosts,
                                             o.max_bytes);
    if (!job) return parse_failed("--slurm", job.error());
    in.nodes = std::move(job->nodes);
    in.this_node = job->this_node;
    in.source = "--slurm";
  } else {
    in.nodes = hetlaunch::cluster{{"gpu-a", 8}, {"gpu-b", 4}, {"gpu-c", 2}};
    in.source = "the built-in example";
  }
  if (!o.include.empty() || !o.exclude.empty()) {
    const char* filter = o.include.empty() ? "--exclude" : "--include";
    auto r = hetlaunch::filter_devices_mapped(in.nodes, o.include, o.exclude);
    if (!r) return parse_failed(filter, r.error());
    // SLURM_NODEID counts the job's nodes; this process's node is found again among those kept.
    if (in.this_node) {
      const std::size_t job_node = *in.this_node;
      const auto& kept = r->source_node;
      const auto it = std::lower_bound(kept.begin(), kept.end(), job_node);
      if (it != kept.end() && *it == job_node) {
        in.this_node = static_cast<std::size_t>(it - kept.begin());
      } else {
        in.excluded = hetlaunch::detail::concat("this is the job's node ", job_node, " (SLURM_NODEID), host ",
                                                hetlaunch::detail::quoted(in.nodes.node(job_node).host), ", which ",
                                                filter, " leaves out: there is nothing to start here");
        in.this_node.reset();
      }
    }
    in.nodes = std::move(r->nodes);
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

// Prints every problem of the topology and the options, once; the plan when there is none.
std::optional<hetlaunch::launch_plan> make_plan(const input& in, const options& o) {
  auto plan = hetlaunch::make_plan(in.nodes, o.launch);
  if (plan) return std::move(*plan);
  for (const auto& d : plan.error()) std::fprintf(stderr, "hetlaunch: %s: %s\n", in.source.c_str(), d.message().c_str());
  return std::nullopt;
}

std::size_t chosen_node(const options& o, const input& in) {
  if (o.node) return *o.node;
  if (in.this_node) return *in.this_node;
  throw usage_error{o.slurm ? "--node is needed (SLURM_NODEID is not set)" : "--node I is needed"};
}

void set_script(options& o, bool required) {
  if (o.positional.empty()) {
    if (required) throw usage_error{"a training script is needed: hetlaunch " + o.command + " ... [--] SCRIPT [ARGS...]"};
    return;
  }
  o.launch.script = o.positional.front();
  o.launch.script_args.assign(o.positional.begin() + 1, o.positional.end());
}

// A problem of one node's output, reported like the plan's.
int node_failed(const input& in, const hetlaunch::diagnostic& d) {
  return fail(hetlaunch::detail::concat(in.source, ": ", d.message()));
}

std::string agent_prefix(const hetlaunch::launch_plan& plan, std::size_t node) {
  std::string prefix;
  for (const auto& v : plan.agent_env(node)) prefix += v.first + "=" + hetlaunch::shell_quote(v.second) + " ";
  return prefix;
}

// The plan's table and commands, written node by node: memory does not grow with the output.
int print_plan(const hetlaunch::launch_plan& plan, bool json) {
  const hetlaunch::cluster& c = plan.topology();
  const bool c10d = plan.options().backend == hetlaunch::rendezvous::c10d;
  if (json) {
    std::printf("{\n  \"world_size\": %d,\n  \"node_count\": %zu,\n  \"rendezvous\": \"%s\",\n  \"nodes\": [\n",
                c.world_size(), c.node_count(), c10d ? "c10d" : "static");
    std::string line;
    for (std::size_t i = 0; i < c.node_count(); ++i) {
      const auto n = c.node(i);
      const std::vector<std::string> argv = plan.torchrun_argv(i);
      line = hetlaunch::detail::concat("    {\"node\": ", i, ", \"host\": ", json_string(n.host), ", \"nproc\": ", n.nproc,
                                       ", \"role\": ", json_string(n.role), ", \"rank_offset\": ", c.rank_offset(i),
                                       ", \"global_ranks\": [", c.rank_offset(i), ", ", c.rank_offset(i) + n.nproc - 1,
                                       "], \"devices\": [");
      for (std::size_t k = 0; k < c.devices(i).size(); ++k) line += hetlaunch::detail::concat(k ? ", " : "", c.devices(i)[k]);
      line += "], \"argv\": " + json_array(argv) + ", \"command\": " + json_string(hetlaunch::shell_join(argv)) + "}";
      line += i + 1 < c.node_count() ? ",\n" : "\n";
      std::fwrite(line.data(), 1, line.size(), stdout);
    }
    std::printf("  ]\n}\n");
    return 0;
  }
  std::printf("%zu nodes, world size %d, %s rendezvous\n\n", c.node_count(), c.world_size(), c10d ? "c10d" : "static");
  std::printf("%-5s %-20s %6s  %-10s %7s  %s\n", "node", "host", "nproc", "role", "offset", "global ranks");
  for (std::size_t i = 0; i < c.node_count(); ++i) {
    const auto n = c.node(i);
    std::printf("%-5zu %-20.*s %6d  %-10.*s %7d  %d..%d\n", i, static_cast<int>(n.host.size()), n.host.data(), n.nproc,
                static_cast<int>(n.role.size()), n.role.data(), c.rank_offset(i), c.rank_offset(i),
                c.rank_offset(i) + n.nproc - 1);
  }
  if (c10d)
    std::printf("\nwith c10d, torchrun orders the nodes by host name and process id when they meet: the offsets\n"
                "above hold only if that order is node order; use --rdzv static to fix them\n");
  std::printf("\ntorchrun commands:\n");
  for (std::size_t i = 0; i < c.node_count(); ++i) {
    const std::string command = agent_prefix(plan, i) + hetlaunch::shell_join(plan.torchrun_argv(i));
    const auto host = c.node(i).host;
    std::printf("  # node %zu on %.*s\n  %s\n", i, static_cast<int>(host.size()), host.data(), command.c_str());
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
    const auto r = hetlaunch::expand_hostlist(o.positional[0], o.max_hosts, o.max_bytes);
    if (!r) return fail(hetlaunch::detail::concat("expand: ", r.error().to_string()));
    for (const auto& h : *r) {
      std::fwrite(h.data(), 1, h.size(), stdout);
      std::fputc('\n', stdout);
    }
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
  const bool needs_script = o.command == "argv" || o.command == "exec" || o.command == "accelerate";
  set_script(o, needs_script);

  if (o.command == "check") {
    // One validation (a parsed topology was validated as it was read; a filter keeps it valid);
    // with --node, that node must exist too.
    const std::vector<hetlaunch::diagnostic> problems =
        in->validated ? hetlaunch::detail::option_problems(in->nodes, o.launch)
                      : hetlaunch::validate_plan(in->nodes, o.launch);
    for (const auto& d : problems) std::fprintf(stderr, "hetlaunch: %s: %s\n", in->source.c_str(), d.message().c_str());
    if (!problems.empty()) return exit_invalid;
    if (o.node && *o.node >= in->nodes.node_count())
      return fail(hetlaunch::detail::concat(in->source, ": node index ", *o.node, " is out of range: the cluster has ",
                                            in->nodes.node_count(), " nodes"));
    std::printf("%s: valid: %zu nodes, world size %d\n", in->source.c_str(), in->nodes.node_count(), in->nodes.world_size());
    return 0;
  }
  const std::optional<hetlaunch::launch_plan> plan = make_plan(*in, o);
  if (!plan) return exit_invalid;
  const hetlaunch::cluster& c = plan->topology();

  if (o.command == "check-env") {
    const auto problems = hetlaunch::check_worker_env(c, [](const char* name) { return std::getenv(name); });
    for (const auto& d : problems) std::fprintf(stderr, "hetlaunch: check-env: %s\n", d.message().c_str());
    return problems.empty() ? 0 : exit_invalid;
  }
  if (o.command == "plan") {
    if (o.launch.script.empty()) {  // the table needs a script to show; train.py stands for it
      options shown = o;
      shown.launch.script = "train.py";
      const auto example = hetlaunch::make_plan(c, shown.launch);
      return print_plan(*example, o.json);
    }
    return print_plan(*plan, o.json);
  }
  if (!o.node && !in->excluded.empty()) return fail(in->excluded);
  const std::size_t node = chosen_node(o, *in);
  if (o.command == "env") {
    if (!o.local_rank) throw usage_error{"env needs --local-rank L"};
    const auto r = o.direct ? plan->try_direct_worker_env(node, *o.local_rank) : plan->try_worker_env(node, *o.local_rank);
    if (!r) return node_failed(*in, r.error());
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
  if (o.command == "accelerate") {
    const auto r = plan->try_accelerate_argv(node);
    if (!r) return node_failed(*in, r.error());
    std::printf("%s\n", hetlaunch::shell_join(*r).c_str());
    return 0;
  }
  const auto argv = plan->try_torchrun_argv(node);
  if (!argv) return node_failed(*in, argv.error());
  if (o.command == "argv") {
    for (const auto& a : *argv) {
      std::fwrite(a.data(), 1, a.size(), stdout);
      std::fputc(o.null ? '\0' : '\n', stdout);
    }
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
  // torch 2.5+ computes ranks as if every node ran this node's count when this is set.
  const char* identical = std::getenv("TORCH_ELASTIC_WORKER_IDENTICAL");
  if (identical && std::string_view(identical) == "1" && hetlaunch::detail::nodes_differ(c)) {
    std::fprintf(stderr, "hetlaunch: unsetting TORCH_ELASTIC_WORKER_IDENTICAL=1: the nodes of this plan run different "
                         "numbers of workers, which it would make torchrun ignore\n");
    unsetenv("TORCH_ELASTIC_WORKER_IDENTICAL");
  }
  // torchrun replaces this process; its environment carries the node's devices.
  for (const auto& v : plan->agent_env(node)) setenv(v.first.c_str(), v.second.c_str(), 1);
  std::vector<char*> args;
  for (const auto& a : *argv) args.push_back(const_cast<char*>(a.c_str()));
  args.push_back(nullptr);
  if (std::fflush(stdout) != 0) return fail(hetlaunch::detail::concat("cannot write the output: ", std::strerror(errno)));
  execvp(args[0], args.data());
  return fail(hetlaunch::detail::concat("cannot run ", hetlaunch::detail::quoted((*argv)[0]), ": ", std::strerror(errno)));
}

// Every write is checked: a full disk or a closed pipe must not look like success.
int finish_output(int status) {
  const bool flushed = std::fflush(stdout) == 0;
  const int flush_errno = errno;
  const bool clean = flushed && !std::ferror(stdout);
  const bool closed = std::fclose(stdout) == 0;
  if (clean && closed) return status;
  std::fprintf(stderr, "hetlaunch: cannot write the output: %s\n",
               std::strerror(!flushed ? flush_errno : (errno ? errno : EIO)));
  return status == 0 ? exit_invalid : status;
}

}  // namespace

int main(int argc, char** argv) {
  try {
    options o = parse_args(argc, argv);
    return finish_output(run(o));
  } catch (const usage_error& e) {
    std::fprintf(stderr, "hetlaunch: %s\nTry `hetlaunch --help`.\n", e.message.c_str());
    return exit_usage;
  }
}
