// SPDX-License-Identifier: MIT
// The command's input: the cluster from a hostfile, a host list, a Slurm job or the built-in
// example, filtered by --include/--exclude, and the one plan a command makes of it.
#include "cli.hpp"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <unordered_map>

extern char** environ;

namespace cli {

// The largest file read: far above any real cluster's, far below what would exhaust memory.
constexpr std::size_t max_hostfile_bytes = std::size_t{256} << 20;

// Reads a whole file, refusing directories, files past max_hostfile_bytes and read errors with the
// path and the system's reason. Endless files (/dev/zero) end at the limit.
result<std::string> read_file(const std::string& path, const char* kind) {
  const auto fail_with = [&](const std::string& why) -> result<std::string> {
    return invalid(concat(path, ": ", why));
  };
  const int fd = open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return fail_with(concat("cannot read: ", std::strerror(errno)));
  struct closer {
    int fd;
    ~closer() { close(fd); }
  } close_on_return{fd};
  struct stat st {};
  if (fstat(fd, &st) != 0) return fail_with(concat("cannot read: ", std::strerror(errno)));
  if (S_ISDIR(st.st_mode)) return fail_with("cannot read: it is a directory");
  const auto too_large = [&] {
    return fail_with(concat("is larger than ", max_hostfile_bytes, " bytes, the limit of ", kind));
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
      return fail_with(concat("cannot read: ", std::strerror(errno)));
    }
    if (got == 0) break;
    if (text.size() + static_cast<std::size_t>(got) > max_hostfile_bytes) return too_large();
    text.append(buffer, static_cast<std::size_t>(got));
  }
  return text;
}

hetlaunch::environment process_environment() {
  hetlaunch::environment out;
  for (char** e = environ; *e; ++e) {
    const std::string_view entry(*e);
    const std::size_t eq = entry.find('=');
    if (eq != std::string_view::npos) out.emplace_back(entry.substr(0, eq), entry.substr(eq + 1));
  }
  return out;
}

namespace {
std::string lower(std::string_view text) {
  std::string out(text);
  for (char& c : out)
    if (c >= 'A' && c <= 'Z') c = static_cast<char>(c - 'A' + 'a');
  return out;
}
}  // namespace

// Gives the nodes the --weight flags name their weights and the --max-batch flags their
// ceilings, each in flag order (a later flag wins). HOSTS is a host or a Slurm host list; host
// names compare without case, as DNS names do. Every host named must be a node, and the value
// valid.
result<completed> apply_weights(const input_args& args, hetlaunch::cluster& nodes) {
  std::unordered_map<std::string, std::vector<std::size_t>> by_host;
  for (std::size_t i = 0; i < nodes.node_count(); ++i)
    by_host[lower(nodes.node(i).host)].push_back(i);
  // Each flag: its name, its values, what a valid value is, and what it does to a node.
  const auto apply = [&](const char* flag_name, const char* example,
                         const std::vector<std::string>& flags, auto refusal,
                         auto set) -> result<completed> {
    for (const std::string& flag : flags) {
      const std::size_t eq = flag.rfind('=');
      const std::string where = concat(flag_name, " ", quoted(flag));
      if (eq == std::string::npos || eq == 0) return invalid(concat(where, " is not ", example));
      const std::string_view value = std::string_view(flag).substr(eq + 1);
      if (const std::string why = refusal(value); !why.empty())
        return invalid(concat(where, ": ", why));
      const auto hosts = hetlaunch::expand_hostlist(std::string_view(flag).substr(0, eq),
                                                    args.max_hosts, args.max_bytes);
      if (!hosts) return invalid(concat(where, ": ", hosts.error().to_string()));
      for (const std::string& host : *hosts) {
        const auto it = by_host.find(lower(host));
        if (it == by_host.end())
          return invalid(concat(where, ": host ", quoted(host), " is not a node of the plan"));
        for (const std::size_t i : it->second) set(i, value);
      }
    }
    return completed{};
  };
  const result<completed> weights = apply(
      "--weight", "HOSTS=W (\"gpu[1-4]=2.5\")", args.weights,
      [](std::string_view w) {
        const hetlaunch::weight_check wc = hetlaunch::check_weight(w);
        return wc ? std::string() : hetlaunch::weight_refusal(w, wc.issue);
      },
      [&](std::size_t i, std::string_view w) { nodes.set_weight(i, w); });
  if (!weights) return weights;
  return apply(
      "--max-batch", "HOSTS=M (\"t4-[1-8]=16\")", args.max_batches,
      [](std::string_view m) {
        const result<int> ceiling = hetlaunch::parse_max_batch(m);
        return ceiling ? std::string() : ceiling.error().message;
      },
      [&](std::size_t i, std::string_view m) {
        nodes.set_max_batch(i, *hetlaunch::parse_max_batch(m));
      });
}

// Reads the cluster from the chosen input; an error names where (file:line:column) and why.
result<input> read_input(const input_args& args, const auto_resolver& resolve) {
  input in;
  const int sources =
      (args.hostfile.has_value() ? 1 : 0) + (args.hosts.has_value() ? 1 : 0) + (args.slurm ? 1 : 0);
  if (sources > 1) throw usage_error{"give one of --hostfile, --hosts and --slurm"};
  const auto parse_failed = [](const std::string& where, const parse_error& e) -> result<input> {
    return parse_error{e.line ? concat(where, ":", e.line, ":", e.column, ": ", e.message)
                              : concat(where, ": ", e.message),
                       e.code};
  };
  hetlaunch::hostfile_options parsing;
  parsing.allow_duplicate_hosts = args.validation.allow_duplicate_hosts;
  parsing.allow_auto_slots = resolve != nullptr;
  if (args.hostfile.has_value()) {
    result<std::string> text = read_file(*args.hostfile, "a hostfile");
    if (!text) return text.error();
    auto r = hetlaunch::parse_hostfile(*text, parsing);
    if (!r) return parse_failed(*args.hostfile, r.error());
    in.nodes = std::move(*r);
    in.source = *args.hostfile;
    in.validated = !args.validation.allow_underscore;
  } else if (args.hosts.has_value()) {
    auto r = hetlaunch::parse_host_list(*args.hosts, parsing);
    if (!r) return parse_failed("--hosts", r.error());
    in.nodes = std::move(*r);
    in.source = "--hosts";
    in.validated = !args.validation.allow_underscore;
  } else if (args.slurm) {
    // One pass over the environment: a hetjob of C components is read with O(C) look-ups, and
    // getenv would scan the whole environment (which grows with C) for each.
    const hetlaunch::environment process = process_environment();
    std::unordered_map<std::string_view, const char*> variables;
    for (const auto& v : process) variables.emplace(v.first, v.second.c_str());
    auto job = hetlaunch::cluster_from_slurm(
        [&variables](const char* name) -> const char* {
          const auto it = variables.find(name);
          return it == variables.end() ? nullptr : it->second;
        },
        args.max_hosts, args.max_bytes, args.validation);
    if (!job) return parse_failed("--slurm", job.error());
    in.nodes = std::move(job->nodes);
    in.this_node = job->this_node;
    in.step_problem = std::move(job->step_problem);
    in.source = "--slurm";
  } else {
    in.nodes = hetlaunch::cluster{{"gpu-a", 8}, {"gpu-b", 4}, {"gpu-c", 2}};
    in.source = "the built-in example";
  }
  if (resolve) {
    if (result<completed> resolved = resolve(in.nodes); !resolved) return resolved.error();
  }
  if (!args.include.empty() || !args.exclude.empty()) {
    const char* filter = args.include.empty() ? "--exclude" : "--include";
    auto r = hetlaunch::filter_devices_mapped(in.nodes, args.include, args.exclude);
    if (!r) return parse_failed(filter, r.error());
    // SLURM_NODEID counts the job's nodes; this process's node is found again among those kept.
    if (in.this_node) {
      const std::size_t job_node = *in.this_node;
      const auto& kept = r->source_node;
      const auto it = std::lower_bound(kept.begin(), kept.end(), job_node);
      if (it != kept.end() && *it == job_node) {
        in.this_node = static_cast<std::size_t>(it - kept.begin());
      } else {
        in.excluded = concat("this is the job's node ", job_node, " (SLURM_NODEID), host ",
                             quoted(in.nodes.node(job_node).host), ", which ", filter,
                             " leaves out: there is nothing to start here");
        in.this_node.reset();
      }
    }
    in.nodes = std::move(r->nodes);
  }
  if (!args.weights.empty() || !args.max_batches.empty()) {
    if (result<completed> applied = apply_weights(args, in.nodes); !applied) return applied.error();
  }
  return in;
}

std::optional<hetlaunch::launch_plan> plan_again(const hetlaunch::cluster& nodes,
                                                 const hetlaunch::launch_options& launch,
                                                 const std::string& who) {
  auto plan = hetlaunch::make_plan(nodes, launch);
  if (plan) return std::move(*plan);
  // A problem of the global batch is the flag's, not the input's.
  for (const hetlaunch::diagnostic& d : plan.error())
    print_problems(d.code == hetlaunch::errc::global_batch_too_small ||
                           d.code == hetlaunch::errc::bad_global_batch
                       ? std::string("--global-batch")
                       : who,
                   {d});
  return std::nullopt;
}

std::optional<hetlaunch::launch_plan> plan_of(const input& in, const std::string& command,
                                              const hetlaunch::launch_options& launch) {
  std::optional<hetlaunch::launch_plan> plan = plan_again(in.nodes, launch, in.source);
  // torchrun's own restarts under the static rendezvous restart one node's workers, not the job
  // (docs/multi-host.md): said wherever a torchrun command is made or started.
  const bool makes_commands = command == "plan" || command == "argv" || command == "exec" ||
                              command == "run" || command == "check" || command == "accelerate";
  if (plan && plan->topology().has_weights() && !plan->has_shares())
    std::fprintf(stderr,
                 "hetlaunch: note: the nodes' weights have no effect without --global-batch: a "
                 "weight divides a global batch, and this plan has none\n");
  if (plan && makes_commands && launch.max_restarts > 0 &&
      launch.backend == hetlaunch::rendezvous::static_tcp && plan->topology().node_count() > 1)
    std::fprintf(
        stderr,
        "hetlaunch: warning: --max-restarts %d: with the static rendezvous torchrun restarts only the failed "
        "node's workers; the other nodes learn of it when a collective fails or times out, and on torch 2.x the "
        "restarted group often fails to form. `hetlaunch run --restarts N` restarts the whole job.\n",
        launch.max_restarts);
  return plan;
}

std::size_t chosen_node(const node_part& n, const input_args& args, const input& in) {
  if (n.node) return *n.node;
  if (in.this_node) return *in.this_node;
  throw usage_error{args.slurm ? "--node is needed (SLURM_NODEID is not set)"
                               : "--node I is needed"};
}

result<hetlaunch::environment> env_flags(const env_part& flags) {
  hetlaunch::environment env;
  for (const std::string& e : flags.env) {
    const std::size_t eq = e.find('=');
    const std::string name = e.substr(0, eq);
    if (!hetlaunch::is_environment_name(name))
      return invalid(concat("--env ", quoted(e), ": ", hetlaunch::env_name_refusal(name)));
    if (hetlaunch::is_owned_variable(name))
      return invalid(concat(
          "--env ", quoted(e), ": ",
          hetlaunch::diagnostic::of(hetlaunch::errc::owned_variable).with_text(name).message()));
    if (eq != std::string::npos) {
      env.emplace_back(name, e.substr(eq + 1));
      continue;
    }
    const char* local = std::getenv(name.c_str());
    if (!local)
      return invalid(
          concat("--env ", name, ": ", name, " is not set here (give --env ", name, "=VALUE)"));
    env.emplace_back(name, local);
  }
  return env;
}

}  // namespace cli
