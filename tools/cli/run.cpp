// SPDX-License-Identifier: MIT
// `hetlaunch run` and `hetlaunch calibrate`: the job across its attempts. Each attempt runs in
// attempt.cpp; here the job is read and planned, restarted after a failure as the restart
// options decide (restart.hpp), and ended once, with its events.
#include "job.hpp"
#include "process.hpp"

#include <hetlaunch/calibration.hpp>
#include <hetlaunch/grow_back.hpp>
#include <hetlaunch/restart.hpp>

#include <signal.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdint>
#include <climits>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <unordered_set>

extern char** environ;

namespace cli {
namespace {

// The variables every node gets: the forwarded defaults, then --env-file, then --env.
result<hetlaunch::environment> node_environment(const job_options& o) {
  hetlaunch::environment env = hetlaunch::forwarded_environment(environ);
  if (o.remote.env_file) {
    const result<std::string> text = read_file(*o.remote.env_file, "an env file");
    if (!text) return text.error();
    auto parsed = hetlaunch::parse_env_file(*text);
    if (!parsed)
      return invalid(concat(*o.remote.env_file, ":", parsed.error().line, ":",
                            parsed.error().column, ": ", parsed.error().message));
    env.insert(env.end(), parsed->begin(), parsed->end());
  }
  result<hetlaunch::environment> flags = env_flags(o);
  if (!flags) return flags.error();
  env.insert(env.end(), flags->begin(), flags->end());
  return env;
}

// The --spare flags as hosts that stand by, each with its worker count (0: slots=auto, asked
// when needed). A spare may not be a host of the job, nor be given twice.
std::optional<std::vector<hetlaunch::spare_host>> read_spares(const job_options& o,
                                                              const hetlaunch::cluster& job) {
  hetlaunch::hostfile_options parsing;
  parsing.allow_auto_slots = true;
  std::vector<hetlaunch::spare_host> spares;
  // Host names are compared as DNS compares them, without regard to case: spare "A" is host "a".
  const auto folded = [](std::string_view host) {
    std::string out(host);
    for (char& ch : out)
      if (ch >= 'A' && ch <= 'Z') ch = static_cast<char>(ch - 'A' + 'a');
    return out;
  };
  std::unordered_set<std::string> hosts;
  for (std::size_t i = 0; i < job.node_count(); ++i) hosts.insert(folded(job.node(i).host));
  for (const std::string& text : o.restart.spares) {
    const std::string where = concat("--spare ", quoted(text, 200));
    auto r = hetlaunch::parse_host_list(text, parsing);
    if (!r) {
      fail(concat(where, ": column ", r.error().column, ": ", r.error().message));
      return std::nullopt;
    }
    for (std::size_t i = 0; i < r->node_count(); ++i) {
      const hetlaunch::node_spec n = r->node(i);
      if (!hosts.insert(folded(n.host)).second) {
        std::size_t node = job.node_count();
        for (std::size_t k = 0; k < job.node_count(); ++k)
          if (folded(job.node(k).host) == folded(n.host)) node = k;
        fail(node < job.node_count()
                 ? concat(where, ": host ", quoted(n.host), " is node ", node,
                          "'s host; a spare must be a host the job does not use")
                 : concat(where, ": host ", quoted(n.host), " is given as a spare twice"));
        return std::nullopt;
      }
      spares.push_back({std::string(n.host), n.nproc});
    }
  }
  return spares;
}

// Asks each slots=auto spare for its GPU count, as discover does, when a restart needs spares.
// One that cannot be reached or gives no count is passed over (dropped, with a line saying so).
void ask_auto_spares(const job_options& o, std::vector<hetlaunch::spare_host>& spares) {
  for (std::size_t k = 0; k < spares.size();) {
    if (spares[k].nproc != 0) {
      ++k;
      continue;
    }
    hetlaunch::cluster one{{spares[k].host, 0}};
    // A spare that cannot be asked is passed over, said here: never left out silently.
    const result<completed> asked = resolve_auto(o.remote, restart_args{}, one);
    // A signal while asking: no spare more is asked, and the job ends as interrupted.
    if (const int sig = asked ? 0 : take_stop_signal()) return keep_stop_signal(sig);
    if (asked && one.node_count() == 1 && one.node(0).nproc > 0) {
      spares[k++].nproc = one.node(0).nproc;
      continue;
    }
    std::fprintf(stderr, "hetlaunch: spare %s is passed over: %s\n", quoted(spares[k].host).c_str(),
                 asked ? "it gave no GPU count" : asked.error().message.c_str());
    spares.erase(spares.begin() + static_cast<std::ptrdiff_t>(k));
  }
}

std::string json_hosts(const hetlaunch::cluster& c, const std::vector<std::size_t>& nodes) {
  std::string out = "[";
  for (std::size_t k = 0; k < nodes.size(); ++k)
    out += concat(k ? ", " : "", json_string(c.node(nodes[k]).host));
  return out + "]";
}

// Whether a file run writes (`flag`'s) can be written, asked before the job runs rather than
// found out after it: the file itself when it exists, else its directory.
result<completed> writable(const std::string& path, const char* flag) {
  const auto refused = [&] {
    return invalid(concat(flag, " ", quoted(path), ": cannot write it: ", std::strerror(errno)));
  };
  if (access(path.c_str(), F_OK) == 0) {
    if (access(path.c_str(), W_OK) != 0) return refused();
    return completed{};
  }
  const std::size_t slash = path.rfind('/');
  const std::string dir = slash == std::string::npos ? std::string(".")
                          : slash == 0               ? "/"
                                                     : path.substr(0, slash);
  if (access(dir.c_str(), W_OK | X_OK) != 0) return refused();
  return completed{};
}

job_end invalid_input(int status) { return {job_ending::invalid_input, status}; }

// A signal that came before an attempt started (while the input was read, or spares were asked
// for their GPU counts): the job ends as interrupted, with nothing more started.
std::optional<job_end> interrupted_before(const char* what) {
  const int sig = take_stop_signal();
  if (!sig) return std::nullopt;
  std::fprintf(stderr, "hetlaunch: %s: stopped before %s started\n", strsignal(sig), what);
  return job_end{job_ending::interrupted, 128 + sig};
}

// The job across its attempts: the plan of the attempt to come, the spares still free, and what
// every attempt shares.
struct job {
  const job_options& o;
  event_log& events;
  metrics_file metrics{o.restart.metrics};
  std::optional<hetlaunch::launch_plan> plan = std::nullopt;
  std::vector<hetlaunch::spare_host> spares = {};
  hetlaunch::ssh_options ssh = {};
  hetlaunch::restart_options restarts = {};
  int failure_restarts = 0;  // the restarts --restarts counts: a grow is not one
  // --grow-back: each node's place in the job as first given, the launch options first given,
  // and the hosts whose rejoining the plan refused (never probed again).
  std::optional<hetlaunch::job_places> places = std::nullopt;
  hetlaunch::launch_options first_launch = {};
  std::vector<std::string> refused_hosts = {};
  std::vector<std::string> kept_slow_hosts = {};  // slow, but the plan without them was refused

  // Attempt `attempt`'s ssh options: every worker learns which attempt it is (torchrun passes
  // its environment on).
  hetlaunch::ssh_options ssh_of(int attempt) const {
    hetlaunch::ssh_options this_attempt = ssh;
    if (o.restart.restarts) this_attempt.restart_count = attempt;
    return this_attempt;
  }
  void planned() const {
    const hetlaunch::cluster& c = plan->topology();
    events.write("planned",
                 concat("\"nodes\": ", c.node_count(), ", \"world_size\": ", c.world_size(),
                        ", \"global_batch\": ", plan->options().global_batch));
  }
};

// The input read and planned, and the spares: the job's end when they are refused.
std::optional<job_end> plan_job(job& j) {
  const job_options& o = j.o;
  check_restart_flags(o.restart);
  std::vector<hetlaunch::host_facts> facts;
  const bool preflight = o.remote.preflight && !o.remote.dry_run;
  remote_args remote = o.remote;
  remote.python = o.launch.python;
  const result<input> in =
      read_input(o.input, [&o, &remote, &facts, preflight](hetlaunch::cluster& nodes) {
        return resolve_auto(remote, o.restart, nodes, preflight ? &facts : nullptr);
      });
  if (const auto early = interrupted_before("any node")) return *early;
  if (!in) return invalid_input(fail(in.error()));
  hetlaunch::launch_options first_launch = o.launch;
  if (preflight) {
    const hetlaunch::preflight_verdict v = hetlaunch::check_preflight(facts, nproc_of(in->nodes));
    j.events.write("preflight", concat("\"hosts\": ", host_facts_json(facts),
                                       ", \"passed\": ", v.passes() ? "true" : "false"));
    if (!v.passes()) {
      const std::string said = preflight_problems_text(v);
      std::fwrite(said.data(), 1, said.size(), stderr);
      std::fprintf(stderr, "hetlaunch: preflight: no node was started\n");
      return job_end{job_ending::preflight_failed, exit_invalid};
    }
    if (v.min_capability) {
      first_launch.min_compute_capability = *v.min_capability;
      first_launch.bf16 = *v.bf16;
    }
  }
  // The ranks report four times a --hang-timeout, at least once a second.
  if (o.restart.reporting())
    first_launch.progress_milliseconds =
        o.restart.hang_timeout > 0 ? std::min(1000, o.restart.hang_timeout * 250) : 1000;
  first_launch.rebalance_slow_ranks = o.restart.on_slow == slow_action::rebalance;
  // --local: every node is this machine, whatever its label.
  if (o.remote.local && first_launch.master_addr.empty()) first_launch.master_addr = "127.0.0.1";
  j.plan = plan_of(*in, o.command, first_launch);
  if (!j.plan) return invalid_input(exit_invalid);
  j.first_launch = j.plan->options();
  if (o.restart.grow_back) j.places = hetlaunch::places_of(j.plan->topology());
  if (o.restart.metrics && !o.remote.dry_run) {
    // The file is replaced by a rename: whatever is at the path goes, so only a regular file may.
    struct stat st {};
    if (lstat(o.restart.metrics->c_str(), &st) == 0 && !S_ISREG(st.st_mode))
      return invalid_input(fail(concat("--metrics ", quoted(*o.restart.metrics),
                                       ": not a regular file (run replaces the file whole, by a "
                                       "rename)")));
    if (const result<completed> ok = writable(*o.restart.metrics, "--metrics"); !ok)
      return invalid_input(fail(ok.error()));
  }
  std::optional<std::vector<hetlaunch::spare_host>> spares = read_spares(o, j.plan->topology());
  if (!spares) return invalid_input(exit_invalid);
  j.spares = std::move(*spares);
  j.restarts = restart_options_of(o.restart);
  const std::size_t n = j.plan->topology().node_count();
  if (j.restarts.min_nodes > n)
    return invalid_input(fail(
        concat("--min-nodes ", j.restarts.min_nodes, " is more than the plan's ", n, " nodes")));
  return std::nullopt;
}

// The ssh options every node is started with: the job's end when they are refused.
std::optional<job_end> connect_job(job& j) {
  const job_options& o = j.o;
  j.ssh = o.remote.ssh;
  if (o.remote.chdir) {
    j.ssh.chdir = *o.remote.chdir;
  } else {
    char cwd[PATH_MAX];
    if (getcwd(cwd, sizeof cwd)) j.ssh.chdir = cwd;
  }
  result<hetlaunch::environment> env = node_environment(o);
  if (!env) return invalid_input(fail(env.error()));
  j.ssh.env = std::move(*env);
  // Each node's command is made when it is needed: memory stays that of one command.
  if (const auto problems = hetlaunch::validate_ssh(j.ssh); !problems.empty()) {
    print_problems("run", problems);
    return invalid_input(exit_invalid);
  }
  // A program this machine cannot run fails every node alike: refused before any connection.
  if (!o.remote.dry_run && !o.remote.local)
    if (const result<completed> runnable = can_run(j.ssh.program.front()); !runnable)
      return invalid_input(
          fail(concat("--ssh ", quoted(j.ssh.program.front()), ": ", runnable.error().message)));
  // Every node's command is made the same way: one that cannot be made is refused before the
  // job is planned, never found out while nodes run.
  if (const auto first = hetlaunch::try_ssh_argv(*j.plan, 0, j.ssh_of(0)); !first) {
    print_problems("run", {first.error()});
    return invalid_input(exit_invalid);
  }
  return std::nullopt;
}

// --dry-run: the first attempt's commands, exactly.
job_end dry_run(const job& j) {
  j.planned();
  const hetlaunch::ssh_options first = j.ssh_of(0);
  for (std::size_t i = 0; i < j.plan->topology().node_count(); ++i) {
    const std::string text =
        concat("# node ", i, " on ", j.plan->topology().node(i).host, "\n",
               hetlaunch::shell_join(node_command(j.o, *j.plan, i, first)), "\n");
    std::fwrite(text.data(), 1, text.size(), stdout);
  }
  return {job_ending::succeeded, 0};
}

// The restart options of an attempt that ended: a slow node stopped for (--on-slow exclude) is
// left out, with or without --exclude-failed.
hetlaunch::restart_options restart_options_for(const job& j, bool slow) {
  hetlaunch::restart_options options = j.restarts;
  if (slow) options.exclude_failed = true;
  return options;
}

// The restart's decision. Spares written host:auto are asked for their GPU count only when one is
// needed: a failed node that no spare of a known count replaces (asking each can take
// --discover-timeout).
hetlaunch::restart_decision decide(job& j, const attempt_result& r) {
  const int attempt = j.failure_restarts;
  const hetlaunch::cluster& topology = j.plan->topology();
  const hetlaunch::restart_options options = restart_options_for(j, r.slow);
  hetlaunch::restart_decision d =
      hetlaunch::decide_restart(options, attempt, topology, r.failed, false, j.spares);
  std::vector<std::size_t> failed_nodes = r.failed;
  std::sort(failed_nodes.begin(), failed_nodes.end());
  failed_nodes.erase(std::unique(failed_nodes.begin(), failed_nodes.end()), failed_nodes.end());
  const bool any_auto = std::any_of(j.spares.begin(), j.spares.end(),
                                    [](const hetlaunch::spare_host& s) { return s.nproc == 0; });
  if (attempt < j.restarts.restarts && any_auto && d.replaced.size() < failed_nodes.size()) {
    ask_auto_spares(j.o, j.spares);
    d = hetlaunch::decide_restart(options, attempt, topology, r.failed, false, j.spares);
  }
  return d;
}

// What a restart changes, in the words of its line and its event.
struct restart_change {
  std::size_t failed_node = 0;
  std::string failed_host;
  std::string blamed;  // "node 1 ("b") failed: ..."
  std::vector<std::size_t> excluded;
  std::string left_out;       // "1 ("b"), 2 ("c")"
  std::string replaced_text;  // "node 1 on spare "t" instead of "b""
  std::string replaced_json;
  std::string moved_master;  // why the rendezvous moved, if it did
};

// The restart event that begins every attempt after the first (docs/events.md), its fields
// as JSON values: a failure's, a slow node's, a grow's.
struct restart_event {
  std::string failed_node = "null", failed_host = "null";
  std::string excluded = "[]", replaced = "[]", readmitted = "[]";
  std::size_t nodes = 0;
  int world_size = 0;
  const char* reason = "failure";
};

void write_restart(const job& j, int attempt, const restart_event& e) {
  j.events.attempt = attempt + 1;
  j.events.write("restart",
                 concat("\"failed_node\": ", e.failed_node, ", \"failed_host\": ", e.failed_host,
                        ", \"excluded\": ", e.excluded, ", \"replaced\": ", e.replaced,
                        ", \"nodes\": ", e.nodes, ", \"world_size\": ", e.world_size,
                        ", \"reason\": \"", e.reason, "\", \"readmitted\": ", e.readmitted));
}

restart_change change_of(const job& j, const hetlaunch::restart_decision& d,
                         const attempt_result& r) {
  const hetlaunch::cluster& topology = j.plan->topology();
  restart_change x;
  x.failed_node = r.failed.front();
  x.failed_host = std::string(topology.node(x.failed_node).host);
  x.blamed =
      concat("node ", x.failed_node, " (", quoted(x.failed_host), r.slow ? "): " : ") failed: ",
             r.failure.empty() ? std::string("could not be reached") : r.failure);
  std::vector<bool> kept(topology.node_count(), false);
  for (std::size_t i : d.nodes) kept[i] = true;
  for (std::size_t i = 0; i < topology.node_count(); ++i)
    if (!kept[i]) {
      x.excluded.push_back(i);
      x.left_out +=
          concat(x.left_out.empty() ? "" : ", ", i, " (", quoted(topology.node(i).host), ")");
    }
  x.replaced_json = "[";
  for (const hetlaunch::node_replacement& k : d.replaced) {
    const std::string& spare = j.spares[k.spare].host;
    x.replaced_text += concat(x.replaced_text.empty() ? "" : ", ", "node ", k.node, " on spare ",
                              quoted(spare), " instead of ", quoted(topology.node(k.node).host));
    x.replaced_json += concat(x.replaced_json.size() > 1 ? ", " : "", "{\"node\": ", k.node,
                              ", \"host\": ", json_string(topology.node(k.node).host),
                              ", \"spare\": ", json_string(spare), "}");
  }
  x.replaced_json += "]";
  return x;
}

// The plan of the restart, without the nodes left out and with the spares taken; false when it
// is not valid (said above). A spare is used once: the ones taken are no longer free.
bool replan(job& j, const hetlaunch::restart_decision& d, restart_change& x) {
  const hetlaunch::cluster& topology = j.plan->topology();
  hetlaunch::cluster next = hetlaunch::restart_topology(topology, d, j.spares);
  hetlaunch::launch_options launch = j.plan->options();
  // --local: the rendezvous is this machine's, whichever labels remain.
  if (!j.o.remote.local && hetlaunch::rendezvous_moves(topology, next, launch)) {
    x.moved_master = concat(
        "the rendezvous moves to the new node 0 (", quoted(next.node(0).host),
        "): ", launch.backend == hetlaunch::rendezvous::c10d ? "the endpoint " : "--master-addr ",
        quoted(launch.master_addr), " was on a node ",
        x.excluded.empty() ? "replaced" : "left out");
    launch.master_addr.clear();
  }
  std::optional<hetlaunch::launch_plan> again =
      plan_again(next, launch, "run: the plan of the restart");
  if (!again) {
    std::fprintf(stderr,
                 "hetlaunch: %s; the plan without node %s is not valid (above): not restarting\n",
                 x.blamed.c_str(), x.left_out.c_str());
    return false;
  }
  j.plan = std::move(again);
  std::vector<bool> used(j.spares.size(), false);
  for (const hetlaunch::node_replacement& k : d.replaced) used[k.spare] = true;
  std::vector<hetlaunch::spare_host> free_spares;
  for (std::size_t k = 0; k < j.spares.size(); ++k)
    if (!used[k]) free_spares.push_back(std::move(j.spares[k]));
  j.spares = std::move(free_spares);
  return true;
}

// The restart's line and its event, once the new plan is made.
// `attempt`: the attempt that ended; `restart`: how many restarts --restarts counted before.
void announce_restart(const job& j, int attempt, int restart, const restart_change& x,
                      const hetlaunch::cluster& before, const char* reason) {
  const hetlaunch::cluster& now = j.plan->topology();
  std::fprintf(
      stderr,
      "hetlaunch: %s; restart %d of %d: attempt %d starts on %zu node%s%s%s, world size %d\n",
      x.blamed.c_str(), restart + 1, j.restarts.restarts, attempt + 2, now.node_count(),
      now.node_count() == 1 ? "" : "s",
      x.left_out.empty() ? "" : concat(" (without node ", x.left_out, ")").c_str(),
      x.replaced_text.empty() ? "" : concat(" (", x.replaced_text, ")").c_str(), now.world_size());
  if (!x.moved_master.empty()) std::fprintf(stderr, "hetlaunch: %s\n", x.moved_master.c_str());
  write_restart(j, attempt,
                {concat(x.failed_node), json_string(x.failed_host), json_hosts(before, x.excluded),
                 x.replaced_json, "[]", now.node_count(), now.world_size(), reason});
}

// --grow-back: the hosts that left the job, each to be probed while the next attempt runs, less
// those whose rejoining the plan refused.
std::vector<probed_host> probes_of(const job& j) {
  std::vector<probed_host> out;
  if (!j.places) return out;
  const hetlaunch::job_places& p = *j.places;
  for (std::string& host : hetlaunch::hosts_that_left(p, j.plan->topology(), j.spares)) {
    if (std::find(j.refused_hosts.begin(), j.refused_hosts.end(), host) != j.refused_hosts.end())
      continue;
    // The decision the answer would bring: the host rejoins, or a spare holds its places.
    const bool rejoins = hetlaunch::decide_grow(p, j.plan->topology(), j.spares, {host}).grows();
    out.push_back({std::move(host), rejoins});
  }
  return out;
}

// The hosts that answered again: each whose place a spare holds stands by as a spare from now
// on; the decision says which rejoin at their places.
hetlaunch::grow_decision take_returned(job& j, const attempt_result& r) {
  if (!j.places || r.returned.empty()) return {};
  hetlaunch::grow_decision g =
      hetlaunch::decide_grow(*j.places, j.plan->topology(), j.spares, r.returned);
  j.spares.insert(j.spares.end(), g.new_spares.begin(), g.new_spares.end());
  return g;
}

// The restart of a grow: the attempt stopped at rank 0's checkpoint line, and the next starts with
// every readmitted node at its place, each node with its record as first given (weights,
// ceilings), the shares split again. Not counted against --restarts. When the plan of that job
// is refused (said above), the job starts again as it was, and those hosts are not probed again.
void grow_restart(job& j, int attempt, const attempt_result& r, const hetlaunch::grow_decision& g) {
  const hetlaunch::job_places next = hetlaunch::grow_places(*j.places, g);
  const hetlaunch::cluster grown = hetlaunch::grow_topology(*j.places, j.plan->topology(), next);
  hetlaunch::launch_options launch = j.plan->options();
  // Node 0 back on its own host: the rendezvous goes back where it was first given.
  if (grown.node(0).host == j.places->first.node(0).host)
    launch.master_addr = j.first_launch.master_addr;
  std::string back, readmitted = "[";
  for (std::size_t k = 0; k < g.readmitted.size(); ++k) {
    const std::string_view host = j.places->first.node(g.readmitted[k]).host;
    back += concat(k ? ", " : "", "node ", g.readmitted[k], " (", quoted(host), ")");
    readmitted += concat(k ? ", " : "", json_string(host));
  }
  readmitted += "]";
  std::optional<hetlaunch::launch_plan> again =
      plan_again(grown, launch, "run: the plan of the grow-back");
  if (!again) {
    for (std::size_t i : g.readmitted) j.refused_hosts.emplace_back(j.places->first.node(i).host);
    std::fprintf(stderr,
                 "hetlaunch: the plan with %s back is not valid (above): attempt %d starts as the "
                 "last one did, and those hosts are not probed again\n",
                 back.c_str(), attempt + 2);
  } else {
    j.plan = std::move(again);
    j.places = next;
  }
  const hetlaunch::cluster& now = j.plan->topology();
  std::fprintf(stderr,
               "hetlaunch: grow-back at the checkpoint of step %lld: attempt %d starts on %zu "
               "node%s (%s back), world size %d\n",
               r.checkpoint_step, attempt + 2, now.node_count(), now.node_count() == 1 ? "" : "s",
               back.c_str(), now.world_size());
  write_restart(j, attempt,
                {"null", "null", "[]", "[]", again ? readmitted : "[]", now.node_count(),
                 now.world_size(), "grow"});
}

// The job's end when the attempt that ended is the last one, else the next attempt's plan.
std::optional<job_end> restart_after(job& j, int attempt, const attempt_result& r) {
  const job_options& o = j.o;
  const hetlaunch::grow_decision g = take_returned(j, r);
  if (r.grow && g.grows()) {
    grow_restart(j, attempt, r, g);
    return std::nullopt;
  }
  if (!r.local_failure.empty() && !r.interrupted()) {
    std::fprintf(
        stderr, "hetlaunch: the job failed on this machine (%s), not on a host%s\n",
        r.local_failure.c_str(),
        o.restart.restarts ? ": not restarting, every attempt would fail the same way" : "");
    return r.end;
  }
  if (!o.restart.restarts || r.interrupted() || r.failed.empty()) return r.end;
  const hetlaunch::restart_decision d = decide(j, r);
  if (const auto early = interrupted_before("the restart")) return *early;
  restart_change x = change_of(j, d, r);
  job_end end = r.end;
  if (d.verdict == hetlaunch::restart_verdict::no_restart_left) {
    std::fprintf(
        stderr,
        "hetlaunch: %s; no restart left (--restarts %d): the job failed after %d attempt%s\n",
        x.blamed.c_str(), j.restarts.restarts, attempt + 1, attempt == 0 ? "" : "s");
    end.ending = job_ending::restarts_exhausted;
    return end;
  }
  if (d.verdict == hetlaunch::restart_verdict::too_few_nodes) {
    std::vector<std::size_t> blamed = r.failed;
    std::sort(blamed.begin(), blamed.end());
    blamed.erase(std::unique(blamed.begin(), blamed.end()), blamed.end());
    const std::size_t remaining = j.plan->topology().node_count() - blamed.size();
    std::fprintf(
        stderr,
        "hetlaunch: %s; without it the job would have %zu node%s, fewer than --min-nodes %zu: "
        "not restarting\n",
        x.blamed.c_str(), remaining, remaining == 1 ? "" : "s", j.restarts.min_nodes);
    end.ending = job_ending::too_few_nodes;
    return end;
  }
  const hetlaunch::cluster before = j.plan->topology();
  if ((!x.excluded.empty() || !d.replaced.empty()) && !replan(j, d, x)) {
    if (!r.slow) return end;
    // Stopped at a checkpoint for a slow node the plan cannot do without: the job goes on as it
    // was (said by replan), and that host is not left out for being slow again.
    j.kept_slow_hosts.emplace_back(x.failed_host);
    std::fprintf(stderr, "hetlaunch: attempt %d starts as the last one did, with %s\n", attempt + 2,
                 quoted(x.failed_host).c_str());
    write_restart(j, attempt,
                  {concat(x.failed_node), json_string(x.failed_host), "[]", "[]", "[]",
                   before.node_count(), before.world_size(), "slow"});
    return std::nullopt;
  }
  if (j.places) j.places = hetlaunch::places_after_restart(*j.places, d);
  announce_restart(j, attempt, j.failure_restarts++, x, before, r.slow ? "slow" : "failure");
  return std::nullopt;
}

// --on-slow exclude: a slow rank's node may leave when a restart is left and the job can restart
// without it (a spare in its place, or enough nodes left), unless the plan without it was
// refused before.
slow_exclusion slow_exclusion_of(const job& j) {
  return [&j](std::size_t node) {
    const hetlaunch::cluster& topology = j.plan->topology();
    const std::string host(topology.node(node).host);
    if (std::find(j.kept_slow_hosts.begin(), j.kept_slow_hosts.end(), host) !=
        j.kept_slow_hosts.end())
      return false;
    return hetlaunch::decide_restart(restart_options_for(j, true), j.failure_restarts, topology,
                                     {node}, false, j.spares)
               .verdict == hetlaunch::restart_verdict::restart;
  };
}

job_end run_job(const job_options& o, event_log& events) {
  job j{o, events};
  if (const auto refused = plan_job(j)) return *refused;
  if (const auto refused = connect_job(j)) return *refused;
  if (o.remote.dry_run) return dry_run(j);
  j.planned();
  for (int attempt = 0;; ++attempt) {
    events.attempt = attempt;
    j.metrics.metrics.attempt = attempt;
    j.metrics.metrics.restarts = attempt;  // every attempt after the first is a restart
    j.metrics.metrics.world_size = j.plan->topology().world_size();
    const attempt_result r = run_attempt(o, *j.plan, j.ssh_of(attempt), events, j.metrics,
                                         probes_of(j), slow_exclusion_of(j));
    if (const auto end = restart_after(j, attempt, r)) return *end;
  }
}

// The one exit of run and calibrate: the output is flushed first, so that job_exited carries the
// exit status hetlaunch ends with, whatever happened last, and it is written once.
int end_job(const job_options& o, const job_end& e, event_log& events) {
  const int written = finish_output(e.status);
  const job_ending ending = written != e.status ? job_ending::output_failed : e.ending;
  const int status = o.remote.exit_status_by_reason ? status_by_reason(ending, written) : written;
  events.job_exited(status, ending, e.failed_node, e.failed_host);
  events.close();
  return status;
}

// The files run reads: its events must never be one of them.
std::vector<std::string> inputs_of(const job_options& o) {
  std::vector<std::string> out;
  for (const std::optional<std::string>& f : {o.input.hostfile, o.remote.env_file})
    if (f) out.push_back(*f);
  return out;
}

// Runs a job of run or calibrate with its events: `body` gives the job's end, written at the one
// exit. A usage error found from here on ends the job with its job_exited too.
template <class Body>
int with_events(const job_options& o, Body&& body) {
  event_log events;
  install_signal_handlers();  // a signal from here on ends the job with its job_exited
  if (o.remote.events)
    if (const result<completed> opened = events.open(*o.remote.events, inputs_of(o)); !opened)
      return end_job(o, invalid_input(fail(opened.error())), events);
  try {
    return end_job(o, body(events), events);
  } catch (usage_error& e) {
    events.job_exited(exit_usage, job_ending::invalid_input);
    events.close();
    e.recorded = true;
    throw;
  }
}

}  // namespace

int run_command(const job_options& o) {
  return with_events(o, [&o](event_log& events) { return run_job(o, events); });
}

namespace {
int write_measured(const job_options& o, const hetlaunch::cluster& c, const std::string& measured);

// calibrate's job: refused before it starts when its hostfile cannot be written, and ended as
// calibration_failed when the job succeeded but what it measured cannot be read or written.
job_end calibrate_job(const job_options& o, event_log& events) {
  if (o.calibrate.hostfile) {
    // A hostfile holds a host's count, not which of its devices: the selection would be lost,
    // and a run of the file would use other devices than the ones measured.
    if (!o.input.include.empty() || !o.input.exclude.empty())
      return invalid_input(fail(concat(
          "--write-hostfile ", quoted(*o.calibrate.hostfile), ": the job selects devices (",
          o.input.include.empty() ? "--exclude" : "--include",
          "), which a hostfile cannot hold (it has slots=N, not device numbers): calibrate without "
          "--write-hostfile and give run the weights it prints with the same selection")));
    if (const result<completed> ok = writable(*o.calibrate.hostfile, "--write-hostfile"); !ok)
      return invalid_input(fail(ok.error()));
  }
  const job_end ended = run_job(o, events);
  if (ended.status != 0 || !ended.topology || o.remote.dry_run) {
    if (ended.topology && ended.status != 0)
      std::fprintf(stderr,
                   "hetlaunch: calibrate: the job failed (exit status %d): nothing measured\n",
                   ended.status);
    return ended;
  }
  const int status = write_measured(o, *ended.topology, ended.measured);
  return status == 0 ? ended : job_end{job_ending::calibration_failed, status};
}

}  // namespace

// `hetlaunch calibrate`: run's job, then the line its rank 0 printed, as a table, JSON or a
// hostfile. The weights are computed here from the rates (calibration.hpp), not taken from the
// script. The job's end is written once, after the measurement was read and written.
int calibrate_command(const job_options& given) {
  job_options o = given;  // run's job, watched for the measured line
  // The measured line names nodes by their index in the input; c10d would order them itself.
  if (o.launch.backend == hetlaunch::rendezvous::c10d)
    throw usage_error{
        "calibrate takes no --rdzv c10d: c10d orders the nodes by host name at its "
        "rendezvous, and the measurement names nodes by their place in the input"};
  o.calibrate.measuring = true;
  o.launch.calibrate_steps = o.calibrate.steps;  // the one launch that sets it: every worker's
  return with_events(o, [&o](event_log& events) { return calibrate_job(o, events); });
}

namespace {
// A measured figure in calibrate's JSON: six significant digits, or null when not measured.
std::string json_figure(const std::optional<double>& v) {
  char text[40];
  std::snprintf(text, sizeof text, "%.6g", v.value_or(0));
  return v ? std::string(text) : std::string("null");
}

// Which nodes pay their way (docs/shares.md): the all-reduce and the step predicted with and
// without each node, as JSON keys (", \"allreduce_seconds\": ..., \"prediction\": [...]") or as
// the table's last lines.
std::string predictions_text(const hetlaunch::cluster& c, const hetlaunch::measurement& m,
                             const std::vector<hetlaunch::predicted_step>& predicted,
                             int global_batch, bool json) {
  const auto who = [&c](const hetlaunch::predicted_step& p) {
    return p.without ? std::string(c.node(*p.without).host) : std::string();
  };
  const double allreduce = m.allreduce_seconds.value_or(0);
  char line[512];
  std::string text;
  if (json) {
    text = concat(", \"allreduce_seconds\": ", json_figure(m.allreduce_seconds),
                  ", \"prediction\": [");
    for (std::size_t k = 0; k < predicted.size(); ++k)
      text += concat(k ? ", " : "", "{\"without\": ",
                     predicted[k].without ? json_string(who(predicted[k])) : std::string("null"),
                     ", \"step_seconds\": ", json_figure(predicted[k].step_seconds),
                     ", \"slows_the_job\": ", predicted[k].slows_the_job ? "true" : "false",
                     ", \"allreduce_seconds\": ", json_figure(predicted[k].allreduce_seconds), "}");
    return text + "]";
  }
  if (predicted.empty()) return text;
  std::snprintf(line, sizeof line, "\npredicted step of %d samples (all-reduce %.4f s%s):\n",
                global_batch, allreduce, m.allreduce_seconds ? "" : ", not measured");
  text += line;
  for (const hetlaunch::predicted_step& p : predicted) {
    const std::string what =
        p.without ? concat("without node ", *p.without, " (", who(p), ")") : "the whole job";
    // A job without a node whose all-reduce was measured apart says its own.
    char own[64] = "";
    if (p.without && m.nodes[*p.without].allreduce_seconds_without)
      std::snprintf(own, sizeof own, " (all-reduce %.4f s)", p.allreduce_seconds);
    std::snprintf(line, sizeof line, "  %-32.*s %10.4f s%s%s\n",
                  static_cast<int>(std::min<std::size_t>(what.size(), 200)), what.data(),
                  p.step_seconds, own, p.slows_the_job ? "  slows the job" : "");
    text += line;
  }
  return text;
}

// Each node's measurement as JSON objects ({...}, {...}) or as the table's lines with its head.
std::string nodes_text(const hetlaunch::cluster& c, const hetlaunch::measurement& m,
                       const std::vector<std::string>& weights, bool json) {
  std::string text;
  if (json) {
    for (std::size_t i = 0; i < c.node_count(); ++i) {
      const hetlaunch::node_measurement& n = m.nodes[i];
      text += concat(i ? ", " : "", "{\"node\": ", i, ", \"host\": ", json_string(c.node(i).host),
                     ", \"nproc\": ", c.node(i).nproc,
                     ", \"samples_per_second\": ", json_figure(n.samples_per_second),
                     ", \"weight\": ", json_string(weights[i]), ", \"max_batch\": ", c.max_batch(i),
                     ", \"overhead_seconds\": ", json_figure(n.overhead_seconds),
                     ", \"allreduce_seconds_without\": ", json_figure(n.allreduce_seconds_without),
                     "}");
    }
    return text;
  }
  // A worker's own work between steps is a column when the script measured it (weights have
  // at most 14 characters: 7 digits, a point and 6 more).
  bool any_overhead = false;
  for (const hetlaunch::node_measurement& n : m.nodes)
    any_overhead = any_overhead || n.overhead_seconds;
  const int weight_width = any_overhead ? 14 : 0;
  char line[512];
  std::snprintf(line, sizeof line, "%-5s %-20s %7s %14s  %-*s%s\n", "node", "host", "workers",
                "samples/s", weight_width, "weight", any_overhead ? "  between steps" : "");
  text += line;
  for (std::size_t i = 0; i < c.node_count(); ++i) {
    char own[40] = "";
    if (m.nodes[i].overhead_seconds)
      std::snprintf(own, sizeof own, "  %11.4f s", *m.nodes[i].overhead_seconds);
    else if (any_overhead)
      std::snprintf(own, sizeof own, "  %11s", "-");
    std::snprintf(line, sizeof line, "%-5zu %-20.*s %7d %14.2f  %-*s%s\n", i,
                  static_cast<int>(c.node(i).host.size()), c.node(i).host.data(), c.node(i).nproc,
                  m.nodes[i].samples_per_second, weight_width, weights[i].c_str(), own);
    text += line;
  }
  return text;
}

// The measured line as a table or JSON, and the hostfile: 0, or the status of the failure.
int write_measured(const job_options& o, const hetlaunch::cluster& c, const std::string& measured) {
  if (measured.empty())
    return fail(concat(
        "calibrate: rank 0 never printed a ", hetlaunch::measured_prefix,
        "line. A hetlaunch_shares.ShareBatchSampler prints it once it has handed out ",
        o.calibrate.steps,
        " steps (--calibrate-steps), in as many epochs as that takes: the script ended "
        "before (a loop bounded by fewer steps?), or its sampler is not a ShareBatchSampler"));
  const auto m = hetlaunch::parse_measurement(measured, c.node_count());
  if (!m)
    return fail(concat("calibrate: the ", hetlaunch::measured_prefix, "line, column ",
                       m.error().column, ": ", m.error().message));
  const double allreduce = m->allreduce_seconds.value_or(0);
  // A node's figure not measured is its default: no own work, the whole job's all-reduce.
  std::vector<double> rates, overheads, allreduce_without;
  for (const hetlaunch::node_measurement& n : m->nodes) {
    rates.push_back(n.samples_per_second);
    overheads.push_back(n.overhead_seconds.value_or(0));
    allreduce_without.push_back(n.allreduce_seconds_without.value_or(allreduce));
  }
  const auto weights = hetlaunch::weights_from_rates(rates);
  if (!weights) return fail(concat("calibrate: ", weights.error().message));
  const std::vector<hetlaunch::predicted_step> predicted = hetlaunch::predict_steps(
      c, rates, o.launch.global_batch, allreduce, overheads, allreduce_without);
  std::string text =
      o.format == "json"
          ? concat("{\"step\": ", m->step, ", \"nodes\": [", nodes_text(c, *m, *weights, true), "]",
                   predictions_text(c, *m, predicted, o.launch.global_batch, true), "}\n")
          : concat("measured over ", m->step, " steps\n\n", nodes_text(c, *m, *weights, false),
                   predictions_text(c, *m, predicted, o.launch.global_batch, false));
  std::fwrite(text.data(), 1, text.size(), stdout);
  if (o.calibrate.hostfile) {
    std::string hostfile =
        concat("# written by hetlaunch calibrate: samples per second per worker, over ", m->step,
               " steps\n");
    for (std::size_t i = 0; i < c.node_count(); ++i) {
      hostfile += concat(c.node(i).host, " slots=", c.node(i).nproc, " weight=", (*weights)[i]);
      if (c.max_batch(i) > 0) hostfile += concat(" max_batch=", c.max_batch(i));
      hostfile += '\n';
    }
    FILE* f = std::fopen(o.calibrate.hostfile->c_str(), "w");
    const bool written =
        f && std::fwrite(hostfile.data(), 1, hostfile.size(), f) == hostfile.size();
    const int why = errno;
    if (f && std::fclose(f) != 0 && written)
      return fail(
          concat("--write-hostfile ", quoted(*o.calibrate.hostfile), ": ", std::strerror(errno)));
    if (!written)
      return fail(concat("--write-hostfile ", quoted(*o.calibrate.hostfile),
                         ": cannot write it: ", std::strerror(why)));
  }
  return 0;
}

}  // namespace
}  // namespace cli
