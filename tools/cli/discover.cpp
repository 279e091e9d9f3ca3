// SPDX-License-Identifier: MIT
// `hetlaunch discover`, and slots=auto for `run`: each host's GPU count, asked over ssh with
// the processes of process.hpp, bounded in time and in output.
#include "job.hpp"
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

}  // namespace

std::vector<std::string> host_question_argv(const remote_args& remote, std::string_view host,
                                            const std::string& command) {
  // --local: the host is a label, and this machine answers for it.
  return remote.local ? std::vector<std::string>{"sh", "-c", command}
                      : hetlaunch::ssh_command_argv(remote.ssh, host, command);
}

std::vector<std::string> gpu_count_argv(const remote_args& remote, std::string_view host) {
  return host_question_argv(remote, host, remote.gpu_count_command.value_or("nvidia-smi -L"));
}

std::string host_facts_command(const std::string& python) {
  return concat(hetlaunch::shell_quote(python), " -c ",
                hetlaunch::shell_quote(hetlaunch::host_facts_program()));
}

bool read_gpu_count_output(child& c, bool out) {
  if (out)
    drain(c.out, c.out_line, kept_lines(c.out_all, max_count_output));
  else
    drain(c.err, c.err_line, kept_lines(c.err_all, max_count_output));
  return c.out_all.size() + c.out_line.size() <= max_count_output &&
         c.err_all.size() + c.err_line.size() <= max_count_output;
}

std::optional<int> gpu_count_of(const child& c, const remote_args& remote) {
  if (!WIFEXITED(c.status) || WEXITSTATUS(c.status) != 0) return std::nullopt;
  return gpu_count(c.out_all, remote.gpu_count_command.has_value());
}

namespace {

// What one host's answer says: its count, that it could not be reached, or what is wrong with it.
struct gpu_answer {
  std::optional<int> count;
  bool unreachable = false;  // ssh exited 255
  std::string first_error;   // the first line of its stderr
  std::string problem;
};

gpu_answer answer_of(const child& c, const std::string& host, const std::string& command,
                     bool custom) {
  gpu_answer a;
  const bool exited_ok = WIFEXITED(c.status) && WEXITSTATUS(c.status) == 0;
  a.count = exited_ok ? gpu_count(c.out_all, custom) : std::nullopt;
  a.first_error = c.err_all.substr(0, c.err_all.find('\n'));
  a.unreachable = WIFEXITED(c.status) && WEXITSTATUS(c.status) == 255;
  if (a.count) return a;
  if (exited_ok)
    a.problem = concat("host ", quoted(host), ": ", quoted(command), " printed no GPU count",
                       custom ? " (expected one positive integer)" : " (no 'GPU n:' lines)",
                       ": it printed ",
                       c.out_all.empty() ? std::string("nothing") : quoted(c.out_all, 200));
  else
    a.problem = concat(
        "host ", quoted(host), ": ", quoted(command), " failed (", describe_status(c.status),
        a.first_error.empty() ? std::string(")") : concat("): ", quoted(a.first_error, 200)));
  return a;
}

// The nodes with the counts asked for, without the ones left out.
result<completed> with_counts(hetlaunch::cluster& nodes, const std::vector<int>& counts,
                              const std::vector<bool>& left_out) {
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

// The questions to the slots=auto hosts: an object over their children, with a handler for a
// signal, a child's output and a tick of the clock (each child's deadline, and its answer once
// it has ended).
class gpu_questions {
 public:
  gpu_questions(const remote_args& remote, const restart_args& restart, hetlaunch::cluster& nodes,
                std::vector<std::size_t> asked, std::vector<hetlaunch::host_facts>* facts)
      : remote_(remote),
        nodes_(nodes),
        asked_(std::move(asked)),
        custom_(remote.gpu_count_command.has_value()),
        command_(custom_ ? *remote.gpu_count_command : "nvidia-smi -L"),
        facts_(facts),
        facts_of_(facts ? nodes.node_count() : 0),
        // run --restarts N --exclude-failed leaves out a host it cannot reach, as at a restart;
        // so it does with a slots=auto host it cannot reach to ask.
        leave_out_unreachable_(restart.restarts.value_or(0) > 0 && restart.exclude_failed),
        children_(asked_.size()),
        started_at_(asked_.size()),
        problems_(asked_.size()),
        counts_(nodes.node_count()),
        left_out_(nodes.node_count(), false),
        loop_(children_) {}
  result<completed> ask();

 private:
  const remote_args& remote_;
  const std::string python_ = remote_.python.value_or("python3");  // what runs the facts program
  hetlaunch::cluster& nodes_;
  const std::vector<std::size_t> asked_;  // the nodes asked, by index
  const bool custom_;
  const std::string command_;
  // --preflight: every host is asked for its facts too, in the same command as its GPU count.
  std::vector<hetlaunch::host_facts>* const facts_;
  // The facts program as a shell command, made once: every host is asked the same.
  const std::string facts_question_ = facts_ ? host_facts_command(python_) : std::string();
  std::vector<hetlaunch::host_facts> facts_of_;  // by node index
  const bool leave_out_unreachable_;
  std::vector<child> children_;
  std::vector<double> started_at_;
  std::vector<std::string> problems_;
  std::vector<int> counts_;
  std::vector<bool> left_out_;
  std::size_t next_ = 0, done_ = 0;
  // The children still running or with output to read: each wake-up costs them, not every host.
  std::vector<std::size_t> active_;
  int stopped_by_ = 0;  // the signal that stopped every question, kept for the caller
  event_loop loop_;

  std::string host_of(std::size_t k) const { return std::string(nodes_.node(asked_[k]).host); }
  bool counts(std::size_t k) const { return nodes_.nproc(asked_[k]) == 0; }
  // What host k runs: its GPU count command, its facts program, or the one after the other (the
  // count's status is the command's).
  std::string question(std::size_t k) const {
    if (!facts_) return command_;
    if (!counts(k)) return facts_question_;
    return concat(command_, "; hetlaunch_count_status=$?; ", facts_question_,
                  " || true; exit $hetlaunch_count_status");
  }
  const std::string& what(std::size_t k) const { return counts(k) ? command_ : facts_command_; }
  const std::string facts_command_ = concat(python_, " -c ...");
  result<completed> start();
  void stop_all() {
    for (const std::size_t k : active_) loop_.stop(k);
    active_.clear();
  }
  // Ends child k's question with a problem: it is stopped, its output is dropped.
  void give_up(std::size_t k, const std::string& why) {
    loop_.stop(k);
    problems_[k] = concat("host ", quoted(host_of(k)), ": ", quoted(what(k)), " ", why);
  }
  void on_signal(int number);
  void on_output(std::size_t k, bool out);
  void on_tick();
  void take_answer(std::size_t k);
};

// Starts questions while fewer than --fanout are open.
result<completed> gpu_questions::start() {
  while (next_ < asked_.size() && active_.size() < static_cast<std::size_t>(remote_.fanout)) {
    result<child> c =
        spawn(host_question_argv(remote_, nodes_.node(asked_[next_]).host, question(next_)), false);
    if (!c) {
      stop_all();
      return c.error();
    }
    started_at_[next_] = now();
    active_.push_back(next_);
    children_[next_] = std::move(*c);
    loop_.watch(next_++);
  }
  return completed{};
}

void gpu_questions::on_signal(int number) {
  if (stopped_by_) return;
  stopped_by_ = number;
  progress.clear();
  std::fprintf(stderr, "hetlaunch: %s: stopping discovery\n", strsignal(number));
  stop_all();
}

void gpu_questions::on_output(std::size_t k, bool out) {
  child& c = children_[k];
  if (!read_gpu_count_output(c, out))
    if (problems_[k].empty() && !c.reaped)
      give_up(k, concat("printed more than ", max_count_output, " bytes (",
                        counts(k) ? "a GPU count is a short line" : "a host's facts are one line",
                        "): stopped"));
}

// Each open question past its deadline is stopped; each one that has ended is answered.
void gpu_questions::on_tick() {
  for (std::size_t a = active_.size(); a-- > 0;) {
    const std::size_t k = active_[a];
    child& c = children_[k];
    if (problems_[k].empty() && now() - started_at_[k] > remote_.discover_timeout)
      give_up(k, concat("did not finish within ", remote_.discover_timeout,
                        " s (--discover-timeout): stopped"));
    if (!c.reaped || c.out >= 0 || c.err >= 0 || c.pid < 0) continue;
    active_[a] = active_.back();
    active_.pop_back();
    c.pid = -1;
    ++done_;
    if (problems_[k].empty()) take_answer(k);
  }
}

void gpu_questions::take_answer(std::size_t k) {
  const std::string host = host_of(k);
  if (facts_) {
    // The facts line is the program's own; what came before it is the GPU count's.
    child& c = children_[k];
    const std::string line_start = concat("\n", hetlaunch::host_facts_prefix);
    const std::size_t at = ("\n" + c.out_all).rfind(line_start);
    if (at == std::string::npos) {
      if (!(WIFEXITED(c.status) && WEXITSTATUS(c.status) == 255 && leave_out_unreachable_)) {
        const std::string first_error = c.err_all.substr(0, c.err_all.find('\n'));
        problems_[k] = concat("host ", quoted(host), ": ", quoted(what(k)), " printed no ",
                              hetlaunch::host_facts_prefix, "line (", describe_status(c.status),
                              first_error.empty() ? "" : ": ",
                              first_error.empty() ? std::string() : quoted(first_error, 200),
                              "): is --python ", quoted(python_), " a Python 3 there?");
        return;
      }
    } else {
      const std::size_t end = c.out_all.find('\n', at);
      const std::string json = c.out_all.substr(
          at + hetlaunch::host_facts_prefix.size(),
          end == std::string::npos ? std::string::npos
                                   : end - at - hetlaunch::host_facts_prefix.size());
      auto f = hetlaunch::parse_host_facts(json, host);
      if (!f) {
        problems_[k] = concat("host ", quoted(host), ": its ", hetlaunch::host_facts_prefix,
                              "line, column ", f.error().column, ": ", f.error().message);
        return;
      }
      facts_of_[asked_[k]] = std::move(*f);
      c.out_all.erase(at == 0 ? 0 : at - 1);
      if (!counts(k)) return;
    }
  }
  const gpu_answer answer = answer_of(children_[k], host, command_, custom_);
  if (answer.unreachable && leave_out_unreachable_) {
    progress.clear();
    std::fprintf(
        stderr,
        "hetlaunch: slots=auto: host %s cannot be reached (ssh exit status 255%s): left out "
        "(--exclude-failed)\n",
        quoted(host).c_str(),
        answer.first_error.empty() ? "" : concat(": ", quoted(answer.first_error, 200)).c_str());
    left_out_[asked_[k]] = true;
  } else if (answer.count) {
    counts_[asked_[k]] = *answer.count;
  } else {
    problems_[k] = answer.problem;
  }
}

result<completed> gpu_questions::ask() {
  const progress_scope clear_progress;
  while (done_ < asked_.size() && !stopped_by_) {
    if (const result<completed> started = start(); !started) return started;
    // The signal pipe is always polled: a child that closed its output but runs on is waited
    // for without spinning, and its end (SIGCHLD) or its deadline wakes this loop.
    double wake = now() + 1.0;
    for (const std::size_t k : active_)
      wake = std::min(wake, started_at_[k] + remote_.discover_timeout);
    progress.show(concat("hetlaunch: discover: ", done_, " of ", asked_.size(), " hosts answered"));
    loop_.wait(
        std::max(0.0, wake - now()), [this](int number) { on_signal(number); },
        [this](std::size_t k, bool out) { on_output(k, out); },
        [](std::size_t, int) {});  // reaped: its answer is read once its output ends
    on_tick();
  }
  if (stopped_by_) {
    keep_stop_signal(stopped_by_);
    return invalid(concat("slots=auto: stopped by ", strsignal(stopped_by_)));
  }
  std::string error;
  for (std::size_t k = 0; k < problems_.size(); ++k)
    if (!problems_[k].empty())
      error += concat(error.empty() ? "" : "\n",
                      counts(k) ? "slots=auto: " : "preflight: ", problems_[k]);
  if (!error.empty()) return invalid(error);
  if (facts_)
    for (std::size_t i = 0; i < nodes_.node_count(); ++i)
      if (!left_out_[i]) facts_->push_back(std::move(facts_of_[i]));
  return with_counts(nodes_, counts_, left_out_);
}

}  // namespace

// Asks every node with nproc 0 (slots=auto) for its GPU count, at most --fanout at once, and
// gives the cluster those counts. With `facts`, every host is asked for its facts in the same
// round (one ssh a host), appended to `facts` in the order of the nodes kept. Errors name the
// host. Each answer is bounded in size and in time (--discover-timeout); a signal stops every
// child and is kept for the caller (take_stop_signal), which ends with 128 + signal.
result<completed> resolve_auto(const remote_args& remote, const restart_args& restart,
                               hetlaunch::cluster& nodes,
                               std::vector<hetlaunch::host_facts>* facts) {
  std::vector<std::size_t> asked;
  for (std::size_t i = 0; i < nodes.node_count(); ++i)
    if (nodes.nproc(i) == 0 || facts) asked.push_back(i);
  if (asked.empty()) return completed{};
  // Before the first child: a Ctrl-C now must stop the children, not leave them behind.
  install_signal_handlers();
  return gpu_questions(remote, restart, nodes, std::move(asked), facts).ask();
}

int discover_command(const discover_options& o) {
  const result<input> in = read_input(o.input, [&o](hetlaunch::cluster& nodes) {
    return resolve_auto(o.remote, restart_args{}, nodes);
  });
  if (const int sig = take_stop_signal()) return 128 + sig;
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
