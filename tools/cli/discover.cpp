// SPDX-License-Identifier: MIT
// `hetlaunch discover`, and slots=auto for `run`: each host's GPU count, asked over ssh with
// the processes of process.hpp, bounded in time and in output.
#include "cli.hpp"
#include "process.hpp"

#include <signal.h>

#include <algorithm>
#include <climits>
#include <cstdio>
#include <cstdlib>
#include <cstring>

namespace cli {
namespace {

// The count a host's GPU command printed: `nvidia-smi -L` lines "GPU n: ...", or one integer.
std::optional<int> gpu_count(const std::string& output, bool custom) {
  if (custom) {
    const auto blank = [](char ch) { return ch == '\n' || ch == ' ' || ch == '\t' || ch == '\r'; };
    std::size_t b = 0, e = output.size();
    while (b < e && blank(output[b])) ++b;
    while (e > b && blank(output[e - 1])) --e;
    const std::string text = output.substr(b, e - b);
    const std::optional<unsigned long long> n = hetlaunch::parse_count(text, INT_MAX);
    if (!n || *n < 1) return std::nullopt;
    return static_cast<int>(*n);
  }
  int count = 0;
  std::size_t start = 0;
  while (start < output.size()) {
    std::size_t end = output.find('\n', start);
    if (end == std::string::npos) end = output.size();
    const std::string_view line(output.data() + start, end - start);
    // "GPU 0: NVIDIA A100 ...", as nvidia-smi -L lists them.
    const std::size_t index_end = line.find_first_not_of("0123456789", 4);
    if (line.substr(0, 4) == "GPU " && index_end != 4 && index_end != std::string_view::npos &&
        line[index_end] == ':')
      ++count;
    start = end + 1;
  }
  if (count == 0) return std::nullopt;
  return count;
}

// The most a host's GPU-count command may print on either stream: `nvidia-smi -L` prints a short
// line a GPU (or a MIG device), so this is far more than any host needs, and a command that
// floods its output is stopped long before it costs memory.
constexpr std::size_t max_count_output = 1 << 16;

// Asks every node with nproc 0 (slots=auto) for its GPU count, at most --fanout at once, and
// gives the cluster those counts. Errors name the host. Each answer is bounded in size and in
// time (--discover-timeout); a signal stops every child and ends the process with 128 + signal.
}  // namespace

result<completed> resolve_auto(const remote_args& remote, const restart_args& restart,
                               hetlaunch::cluster& nodes) {
  std::vector<std::size_t> asked;
  for (std::size_t i = 0; i < nodes.node_count(); ++i)
    if (nodes.nproc(i) == 0) asked.push_back(i);
  if (asked.empty()) return completed{};
  const progress_scope clear_progress;
  // Before the first child: a Ctrl-C now must stop the children, not leave them behind.
  install_signal_handlers();
  const bool custom = remote.gpu_count_command.has_value();
  const std::string command = custom ? *remote.gpu_count_command : "nvidia-smi -L";
  const hetlaunch::ssh_options& ssh = remote.ssh;
  std::vector<child> children(asked.size());
  std::vector<double> started_at(asked.size());
  std::vector<int> counts(nodes.node_count());
  std::size_t next = 0, done = 0;
  // The children still running or with output to read: each wake-up costs them, not every host.
  std::vector<std::size_t> active;
  event_loop loop(children);
  std::vector<std::string> problems(asked.size());
  // run --restarts N --exclude-failed leaves out a host it cannot reach, as at a restart; so it
  // does with a slots=auto host it cannot reach to ask.
  const bool leave_out_unreachable = restart.restarts.value_or(0) > 0 && restart.exclude_failed;
  std::vector<bool> left_out(nodes.node_count(), false);
  const auto host_of = [&](std::size_t k) { return std::string(nodes.node(asked[k]).host); };
  const auto stop_all = [&] {
    for (const std::size_t k : active) loop.stop(k);
    active.clear();
  };
  // Ends child k's question with a problem: it is stopped, its output is dropped.
  const auto give_up = [&](std::size_t k, std::string why) {
    loop.stop(k);
    problems[k] = concat("host ", quoted(host_of(k)), ": ", quoted(command), " ", why);
  };
  const auto on_signal = [&](int number) {
    progress.clear();
    std::fprintf(stderr, "hetlaunch: %s: stopping discovery\n", strsignal(number));
    stop_all();
    job_events.job_exited(128 + number, "interrupted");
    std::exit(128 + number);
  };
  const auto on_output = [&](std::size_t k, bool out) {
    child& c = children[k];
    if (out)
      drain(c.out, c.out_line, kept_lines(c.out_all, max_count_output));
    else
      drain(c.err, c.err_line, kept_lines(c.err_all, max_count_output));
    if (c.out_all.size() + c.out_line.size() > max_count_output ||
        c.err_all.size() + c.err_line.size() > max_count_output)
      if (problems[k].empty() && !c.reaped)
        give_up(k, concat("printed more than ", max_count_output,
                          " bytes (a GPU count is a short line): stopped"));
  };
  const auto on_end = [](std::size_t, int) {};  // reaped: its answer is read once its output ends
  while (done < asked.size()) {
    while (next < asked.size() && active.size() < static_cast<std::size_t>(remote.fanout)) {
      // --local: the host is a label, and this machine answers for it.
      const std::vector<std::string> argv =
          remote.local ? std::vector<std::string>{"sh", "-c", command}
                       : hetlaunch::ssh_command_argv(ssh, nodes.node(asked[next]).host, command);
      result<child> c = spawn(argv, false);
      if (!c) {
        stop_all();
        return c.error();
      }
      started_at[next] = now();
      active.push_back(next);
      children[next] = std::move(*c);
      loop.watch(next++);
    }
    // The signal pipe is always polled: a child that closed its output but runs on is waited
    // for without spinning, and its end (SIGCHLD) or its deadline wakes this loop.
    double wake = now() + 1.0;
    for (const std::size_t k : active)
      wake = std::min(wake, started_at[k] + remote.discover_timeout);
    progress.show(concat("hetlaunch: discover: ", done, " of ", asked.size(), " hosts answered"));
    loop.wait(std::max(0.0, wake - now()), on_signal, on_output, on_end);
    for (std::size_t a = active.size(); a-- > 0;) {
      const std::size_t k = active[a];
      child& c = children[k];
      if (problems[k].empty() && now() - started_at[k] > remote.discover_timeout)
        give_up(k, concat("did not finish within ", remote.discover_timeout,
                          " s (--discover-timeout): stopped"));
      if (!c.reaped || c.out >= 0 || c.err >= 0 || c.pid < 0) continue;
      active[a] = active.back();
      active.pop_back();
      c.pid = -1;
      ++done;
      if (!problems[k].empty()) continue;
      const std::string host = host_of(k);
      const bool exited_ok = WIFEXITED(c.status) && WEXITSTATUS(c.status) == 0;
      const std::optional<int> n = exited_ok ? gpu_count(c.out_all, custom) : std::nullopt;
      const std::string first_error = c.err_all.substr(0, c.err_all.find('\n'));
      const bool unreachable = WIFEXITED(c.status) && WEXITSTATUS(c.status) == 255;
      if (unreachable && leave_out_unreachable) {
        progress.clear();
        std::fprintf(stderr,
                     "hetlaunch: slots=auto: host %s cannot be reached (ssh exit status 255%s): "
                     "left out (--exclude-failed)\n",
                     quoted(host).c_str(),
                     first_error.empty() ? "" : concat(": ", quoted(first_error, 200)).c_str());
        left_out[asked[k]] = true;
      } else if (n)
        counts[asked[k]] = *n;
      else if (exited_ok)
        problems[k] = concat("host ", quoted(host), ": ", quoted(command), " printed no GPU count",
                             custom ? " (expected one positive integer)" : " (no 'GPU n:' lines)",
                             ": it printed ",
                             c.out_all.empty() ? std::string("nothing") : quoted(c.out_all, 200));
      else
        problems[k] = concat(
            "host ", quoted(host), ": ", quoted(command), " failed (", describe_status(c.status),
            first_error.empty() ? std::string(")") : concat("): ", quoted(first_error, 200)));
    }
  }
  std::string error;
  for (const std::string& p : problems)
    if (!p.empty()) error += (error.empty() ? "" : "\n") + std::string("slots=auto: ") + p;
  if (!error.empty()) return invalid(error);
  hetlaunch::cluster_builder builder;
  std::size_t kept = 0;
  for (std::size_t i = 0; i < nodes.node_count(); ++i) {
    if (left_out[i]) continue;
    hetlaunch::node_spec n = nodes.node(i);  // every field of the node, its ceiling too
    if (n.nproc == 0) n.nproc = counts[i];
    builder.add(n);
    ++kept;
  }
  if (kept == 0) return invalid("slots=auto: no host is left to run on");
  nodes = builder.finish();
  return completed{};
}

int discover_command(const discover_options& o) {
  const result<input> in = read_input(o.input, [&o](hetlaunch::cluster& nodes) {
    return resolve_auto(o.remote, restart_args{}, nodes);
  });
  if (!in) return fail(in.error());
  // A hostfile that plans what the input plans: every key a node has beside its count is kept
  // (a weight from the input or --weight), or a plan made from it would split differently.
  // Written line by line: memory stays that of one line, whatever the host count.
  const hetlaunch::cluster& c = in->nodes;
  std::string line;
  for (std::size_t i = 0; i < c.node_count(); ++i) {
    const auto n = c.node(i);
    line = concat(n.host, " slots=", n.nproc);
    if (n.weight != "1") line += concat(" weight=", n.weight);
    if (c.max_batch(i) > 0) line += concat(" max_batch=", c.max_batch(i));
    line += '\n';
    std::fwrite(line.data(), 1, line.size(), stdout);
  }
  return 0;
}

}  // namespace cli
