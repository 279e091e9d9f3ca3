// SPDX-License-Identifier: MIT
// What the command writes: errors, JSON strings, the plan's table and commands, and the final
// check that every write reached its destination.
#include "cli.hpp"

#include <cerrno>
#include <cstdio>
#include <cstring>

namespace cli {

int fail(const std::string& message) {
  std::fprintf(stderr, "hetlaunch: %s\n", message.c_str());
  return exit_invalid;
}

int fail(const parse_error& error) { return fail(error.to_string()); }

void print_problems(const std::string& source, const std::vector<hetlaunch::diagnostic>& problems) {
  for (const auto& d : problems)
    std::fprintf(stderr, "hetlaunch: %s: %s\n", source.c_str(), d.message().c_str());
}

std::string json_array(const std::vector<std::string>& items) {
  std::string out = "[";
  for (std::size_t i = 0; i < items.size(); ++i) out += (i ? ", " : "") + json_string(items[i]);
  return out + "]";
}

namespace {
std::string agent_prefix(const hetlaunch::launch_plan& plan, std::size_t node) {
  std::string prefix;
  for (const auto& v : plan.agent_env(node))
    prefix += v.first + "=" + hetlaunch::shell_quote(v.second) + " ";
  return prefix;
}

// The plan as JSON, node by node.
void print_plan_json(const hetlaunch::launch_plan& plan) {
  const hetlaunch::cluster& c = plan.topology();
  const bool c10d = plan.options().backend == hetlaunch::rendezvous::c10d;
  std::printf(
      "{\n  \"world_size\": %d,\n  \"node_count\": %zu,\n  \"rendezvous\": \"%s\",\n  \"global_batch\": %d,\n"
      "  \"numa_binding\": \"%s\",\n  \"nodes\": [\n",
      c.world_size(), c.node_count(), c10d ? "c10d" : "static", plan.options().global_batch,
      std::string(hetlaunch::numa_binding_name(plan.options().binding)).c_str());
  std::string line;
  for (std::size_t i = 0; i < c.node_count(); ++i) {
    const auto n = c.node(i);
    const std::vector<std::string> argv = plan.torchrun_argv(i);
    line = concat("    {\"node\": ", i, ", \"host\": ", json_string(n.host),
                  ", \"nproc\": ", n.nproc, ", \"role\": ", json_string(n.role),
                  ", \"rank_offset\": ", c.rank_offset(i), ", \"global_ranks\": [",
                  c.rank_offset(i), ", ", c.rank_offset(i) + n.nproc - 1, "], \"devices\": [");
    for (std::size_t k = 0; k < c.devices(i).size(); ++k)
      line += concat(k ? ", " : "", c.devices(i)[k]);
    const hetlaunch::node_batch share =
        plan.has_shares() ? plan.node_batch_of(i) : hetlaunch::node_batch{};
    line += concat("], \"weight\": ", json_string(n.weight), ", \"node_batch\": ", share.batch,
                   ", \"node_batch_offset\": ", share.offset, ", \"max_batch\": ", c.max_batch(i));
    // The node's command as a shell runs it: the variables torchrun must be started with (the
    // work share's), then torchrun; "env" holds the same variables for a launcher of its own.
    line += ", \"argv\": " + json_array(argv) + ", \"env\": {";
    const hetlaunch::environment env = plan.agent_env(i);
    for (std::size_t k = 0; k < env.size(); ++k)
      line += concat(k ? ", " : "", json_string(env[k].first), ": ", json_string(env[k].second));
    line +=
        "}, \"command\": " + json_string(agent_prefix(plan, i) + hetlaunch::shell_join(argv)) + "}";
    line += i + 1 < c.node_count() ? ",\n" : "\n";
    std::fwrite(line.data(), 1, line.size(), stdout);
  }
  std::printf("  ]\n}\n");
}

// The table's row of node i; weights and work shares have columns only when the plan has them.
void print_plan_row(const hetlaunch::launch_plan& plan, std::size_t i, bool shares) {
  const hetlaunch::cluster& c = plan.topology();
  const auto n = c.node(i);
  const std::string ranks = concat(c.rank_offset(i), "..", c.rank_offset(i) + n.nproc - 1);
  std::printf(
      "%-5zu %-20.*s %6d  %-10.*s %7d  %s", i, static_cast<int>(n.host.size()), n.host.data(),
      n.nproc, static_cast<int>(n.role.size()), n.role.data(), c.rank_offset(i),
      shares ? concat(ranks, std::string(ranks.size() < 13 ? 13 - ranks.size() : 0, ' ')).c_str()
             : ranks.c_str());
  if (shares) {
    std::printf("  %-8.*s", static_cast<int>(n.weight.size()), n.weight.data());
    if (plan.has_shares()) {
      const hetlaunch::node_batch share = plan.node_batch_of(i);
      std::printf(" %10d %12d", share.batch, share.offset);
    } else {
      std::printf(" %10s %12s", "-", "-");
    }
  }
  if (c.has_max_batches()) {
    if (c.max_batch(i) > 0)
      std::printf(" %9d", c.max_batch(i));
    else
      std::printf(" %9s", "-");
  }
  std::printf("\n");
}

// The plan as a table, then each node's command.
void print_plan_table(const hetlaunch::launch_plan& plan) {
  const hetlaunch::cluster& c = plan.topology();
  const bool c10d = plan.options().backend == hetlaunch::rendezvous::c10d;
  std::printf("%zu nodes, world size %d, %s rendezvous", c.node_count(), c.world_size(),
              c10d ? "c10d" : "static");
  if (plan.has_shares()) std::printf(", global batch %d", plan.options().global_batch);
  if (plan.options().binding != hetlaunch::numa_binding::none)
    std::printf(", workers bound by --numa-binding %s",
                std::string(hetlaunch::numa_binding_name(plan.options().binding)).c_str());
  std::printf("\n\n");
  const bool shares = plan.has_shares() || c.has_weights();
  std::printf("%-5s %-20s %6s  %-10s %7s  %s", "node", "host", "nproc", "role", "offset",
              "global ranks");
  if (shares) std::printf("   %-8s %10s %12s", "weight", "node batch", "batch offset");
  if (c.has_max_batches()) std::printf(" %9s", "max batch");
  std::printf("\n");
  for (std::size_t i = 0; i < c.node_count(); ++i) print_plan_row(plan, i, shares);
  if (c10d)
    std::printf(
        "\nwith c10d, torchrun orders the nodes by host name and process id when they meet: the offsets\n"
        "above hold only if that order is node order; use --rdzv static to fix them\n");
  std::printf("\ntorchrun commands:\n");
  for (std::size_t i = 0; i < c.node_count(); ++i) {
    const std::string command =
        agent_prefix(plan, i) + hetlaunch::shell_join(plan.torchrun_argv(i));
    const auto host = c.node(i).host;
    std::printf("  # node %zu on %.*s\n  %s\n", i, static_cast<int>(host.size()), host.data(),
                command.c_str());
  }
}

}  // namespace

// The plan's table and commands, written node by node: memory does not grow with the output.
int print_plan(const hetlaunch::launch_plan& plan, bool json) {
  if (json)
    print_plan_json(plan);
  else
    print_plan_table(plan);
  return 0;
}

// Every write is checked: a full disk or a closed pipe must not look like success. Once: run
// and calibrate finish their output before their last event, and main finishes it again.
int finish_output(int status) {
  static bool finished = false;
  if (finished) return status;
  finished = true;
  errno = 0;
  const bool flushed = std::fflush(stdout) == 0;
  const int flush_errno = errno;
  const bool clean = flushed && !std::ferror(stdout);
  errno = 0;
  const bool closed = std::fclose(stdout) == 0;
  const int close_errno = errno;
  if (clean && closed) return status;
  // An earlier write that failed leaves only the stream's error flag: its errno is long gone.
  const int why = !flushed && flush_errno  ? flush_errno
                  : !closed && close_errno ? close_errno
                                           : EIO;
  std::fprintf(stderr, "hetlaunch: cannot write the output: %s\n", std::strerror(why));
  return status == 0 ? exit_invalid : status;
}

}  // namespace cli
