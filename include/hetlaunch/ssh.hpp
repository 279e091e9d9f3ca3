// SPDX-License-Identifier: MIT
// hetlaunch: starting a plan's nodes over ssh: each node's ssh command line, the remote command
// that runs torchrun and stops it with all its workers when the connection ends, and the
// environment a launcher forwards. Pure computation; `hetlaunch run` manages the processes.
#ifndef HETLAUNCH_SSH_HPP
#define HETLAUNCH_SSH_HPP

#include <cstddef>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "diagnostic.hpp"
#include "plan.hpp"
#include "result.hpp"
#include "shell.hpp"
#include "torchrun_argv.hpp"

namespace hetlaunch {

/// How a node is reached and what it is given besides torchrun's own command.
struct ssh_options {
  /// The ssh client, word by word.
  std::vector<std::string> program = {"ssh"};
  /// Arguments for ssh before the host: "-o", "BatchMode=yes", "-i", "key", "-p", "2222", ...
  std::vector<std::string> args;
  /// Variables set on the node before torchrun starts, in order (a later one wins). None may be
  /// one the launch owns (worker_variables.hpp): the plan sets those.
  environment env;
  /// A launcher with restarts: the attempt, 0 first, given to every worker as
  /// HETLAUNCH_RESTART_COUNT. -1: none.
  int restart_count = -1;
  /// The directory torchrun runs in on the node; empty: the login directory.
  std::string chdir;
  /// When the connection ends (the launcher stops the node, fails or dies), torchrun and every
  /// process under it get SIGTERM, and SIGKILL this many seconds later if they still run.
  int kill_after = 10;
  /// Each worker's lines reach the node's output whole and begun with "[rank R] " (R its RANK),
  /// stdout to stdout and stderr to stderr. Without it the lines of a node's workers glue
  /// together: torchrun starts them with `python -u`, where print writes a line and its newline
  /// in two writes. It takes effect where rank_lines_apply says.
  bool rank_lines = true;
};

/// The first line a node's remote command writes to its standard output, once torchrun has been
/// started: a launcher reads it to know that the node is up, and does not show it.
constexpr std::string_view node_started_line = "hetlaunch: node started";
/// The line the node script prints last, before it exits with its command's status: "hetlaunch:
/// node ended STATUS". A launcher that saw it knows an ssh status of 255 was the command's own,
/// not a lost connection.
constexpr std::string_view node_ended_prefix = "hetlaunch: node ended ";

namespace detail {

// The worker torchrun starts when rank_lines applies, as `python -u PROGRAM [-m] SCRIPT ARGS`:
// it forks a writer (twice, so that the worker never has it as a child to wait for) and then
// becomes the worker, `python -u [-m] SCRIPT ARGS` under the interpreter torchrun chose, its
// stdout and stderr pipes to the writer. So the worker keeps its pid, its signals, its exit
// status and its error file. The writer reads both pipes until every holder has closed them, cuts
// the bytes at each newline (a progress bar's carriage returns stay in its line, as a launcher
// that shows whole lines shows them), and writes the lines with the prefix in writes of at most
// 4 KiB that end at a line's end (a longer line in one write), each under an exclusive flock of
// the program's file, which every writer of the node shares: a pipe keeps only 4 KiB whole among
// other writers', and a socket nothing. A line
// with no end yet is held up to 16 MiB (the longest measured line) and then written with a
// newline, as is what is held when the pipe closes. It ignores the signals meant for the worker
// (torch 2.x sends them to the whole process group) and ends when the pipes close: then, when the
// worker left an error in its TORCHELASTIC_ERROR_FILE (an entry point wrapped in torch's @record),
// it writes the error's first line as one HETLAUNCH_ERROR line (failure_report.hpp) on stderr.
inline std::string_view rank_lines_program() {
  return R"py(import fcntl, json, os, select, signal, sys
LONGEST = 16 << 20
def put(fd, pieces, lock):
    batch = b""
    for piece in pieces + [b""]:
        if batch and (not piece or len(batch) + len(piece) > 4096):
            try:
                if lock is not None:
                    fcntl.flock(lock, fcntl.LOCK_EX)
                while batch:
                    batch = batch[os.write(fd, batch):]
            except OSError:
                pass
            finally:
                if lock is not None:
                    fcntl.flock(lock, fcntl.LOCK_UN)
            batch = b""
        batch += piece
def pump(into, prefix, lock):
    poller = select.poll()
    held = {}
    for fd in into:
        poller.register(fd, select.POLLIN)
        held[fd] = ([], 0)
    while held:
        for fd, _ in poller.poll():
            if fd not in held:
                continue
            data = os.read(fd, 65536)
            chunks, size = held[fd]
            pieces = []
            last = data.rfind(b"\n")
            if last >= 0:
                text = b"".join(chunks + [data[:last]])
                pieces = [prefix + line + b"\n" for line in text.split(b"\n")]
                chunks, size = [], 0
            if data[last + 1:]:
                chunks.append(data[last + 1:])
                size += len(data) - last - 1
            if chunks and (size >= LONGEST or not data):
                pieces.append(prefix + b"".join(chunks) + b"\n")
                chunks, size = [], 0
            put(into[fd], pieces, lock)
            held[fd] = (chunks, size)
            if not data:
                poller.unregister(fd)
                del held[fd]
def relay_error(prefix, lock):
    try:
        with open(os.environ["TORCHELASTIC_ERROR_FILE"], "rb") as f:
            message = json.loads(f.read(1 << 20).decode("utf-8", "replace"))["message"]
        if isinstance(message, dict):
            message = message["message"]
        line = "".join(c if c >= " " else " " for c in (str(message).splitlines() or [""])[0])
        line = line.encode("utf-8", "replace")[:1024].decode("utf-8", "ignore")
        said = {"rank": int(os.environ["RANK"]), "local_rank": int(os.environ["LOCAL_RANK"]), "error": line}
    except (KeyError, OSError, TypeError, ValueError):
        return
    put(2, [prefix + b"HETLAUNCH_ERROR " + json.dumps(said, ensure_ascii=False).encode("utf-8", "replace") + b"\n"], lock)
def main():
    prefix = ("[rank %s] " % os.environ.get("RANK", "?")).encode()
    out_r, out_w = os.pipe()
    err_r, err_w = os.pipe()
    child = os.fork()
    if child == 0:
        try:
            if os.fork() == 0:
                for name in ("SIGINT", "SIGTERM", "SIGHUP", "SIGQUIT", "SIGUSR1", "SIGUSR2", "SIGPIPE"):
                    signal.signal(getattr(signal, name), signal.SIG_IGN)
                for fd in (0, out_w, err_w):
                    os.close(fd)
                try:
                    lock = os.open(sys.argv[0], os.O_RDONLY)
                except OSError:
                    lock = None
                pump({out_r: 1, err_r: 2}, prefix, lock)
                relay_error(prefix, lock)
        finally:
            os._exit(0)
    os.waitpid(child, 0)
    os.dup2(out_w, 1)
    os.dup2(err_w, 2)
    for fd in (out_r, out_w, err_r, err_w):
        os.close(fd)
    try:
        os.execv(sys.executable, [sys.executable, "-u"] + sys.argv[1:])
    except OSError as e:
        os.write(2, ("hetlaunch: cannot start %s: %s\n" % (sys.executable, e)).encode())
        os._exit(127)
main()
)py";
}

// The remote side of a node, a POSIX sh script run as
//   sh -c SCRIPT hetlaunch-node KILL_AFTER DIR COUNT NAME=VALUE... COMMAND...
// It removes the variables the launch owns from the login environment (the plan's are among the
// NAME=VALUEs), starts COMMAND in the background, in a session of its own where setsid exists,
// and watches standard input, which the launcher holds open for as long as the node should run.
// ssh gives a command without a terminal no signal when the connection ends, so end of input is
// the signal: every process of the job then gets SIGTERM, and SIGKILL after KILL_AFTER seconds.
// The job's processes are COMMAND's descendants and every process of a session one of them
// belongs to (NSsid, Linux 4.1 and later), the script's own session never counting. A process
// keeps its session when its parent dies, so a child forked during the teardown whose parent
// then exits (a wrapper's, a worker's started in a session of its own by torch) is still found.
// The first look reads all of /proc/*/status, breadth first from COMMAND (grep -s reads them:
// mawk's getline ends the program at a file whose process ended between its open and its read). A
// later look (once signalled processes have ended, and after SIGKILL) reads only the job's known
// processes and those created since the previous look, and needs no reading at all when the known
// ones are gone and nothing was created: the kernel hands out pids in a cycle, so a process created
// since the previous look has a pid between the pid cursor then and now (the last pid of
// /proc/loadavg), and one that existed then and was not of the job cannot join it later (it can
// neither enter a session of the job nor become a child of a job process). That holds while the
// cursor cannot have gone the whole way round, which takes at least pid_max - 300 pids given out or
// skipped as in use; with fewer than that in forks since (the processes line of /proc/stat) plus
// tasks then, the later look is partial, otherwise it reads everything again (pid_max comes from
// the first look's awk: sh's read takes a /proc/sys file one byte at a time and gets one). Pids
// chosen outright (ns_last_pid, clone3's set_tid: checkpoint and restore, with privilege) are
// outside this. The partial looks spare a host that runs many node scripts most of its work.
// While the job's COMMAND runs, the watcher sleeps until the deadline and is woken when COMMAND
// ends: the script signals it with USR1, whose trap also kills the sleep, so that a signal that
// comes between the watcher's check and its wait still wakes it. Once COMMAND is gone it checks
// the signalled processes every 0.1 s for a second (most end within it), then at doubling
// intervals up to a second. A process that appears while none ends gets SIGKILL at the deadline.
// SIGTERM goes once to each process, SIGKILL to all that remain. The watcher ignores SIGTERM once
// it is tearing down, so that COMMAND ending early does not cut the teardown short. The script
// exits with COMMAND's status, which ssh passes on.
// The variables it removes come before it, from launch_plan::try_node_variables.
// `after_exports` runs once the variables are exported, before COMMAND starts (rank_lines_script).
inline std::string node_script(std::string_view after_exports = {}) {
  return concat(R"sh(kill_after=$1 dir=$2 n=$3 lines_py=""
shift 3
if [ -n "$dir" ]; then cd -- "$dir" || { echo "hetlaunch: cannot enter $dir on $(hostname)" >&2; exit 126; }; fi
)sh",
                R"sh(while [ "$n" -gt 0 ]; do export "$1" || exit 126; shift; n=$((n - 1)); done
)sh",
                after_exports, R"sh(read -r self_stat < /proc/$$/stat
rest=${self_stat##*) }; rest=${rest#* }; rest=${rest#* }; rest=${rest#* }; self_session=${rest%% *}
sessions="" pids="" cursor="" forks="" tasks=""
mark() {
  read -r _ _ _ tasks_now cursor_now < /proc/loadavg
  tasks_now=${tasks_now#*/} forks_now=""
  while read -r key value _; do [ "$key" = processes ] && { forks_now=$value; break; }; done < /proc/stat
}
look() {
  found=$(grep -s -e "^State:" -e "^PPid:" -e "^NSsid:" "$@" | awk -F "[/:\t ]+" -v root="$job" -v known="$sessions" -v own="$self_session" "
    BEGIN { getline pid_max < \"/proc/sys/kernel/pid_max\"; pid_max += 0 }
    function take(p) { if (!(p in want)) { want[p] = 1; queue[++tail] = p } }
    function join(s, i, n, m) { if (s == own || (s in in_job)) return; in_job[s] = 1
      n = split(members[s], m, \" \"); for (i = 1; i <= n; i++) take(m[i]) }
    \$5 == \"State\" { zombie = \$6 == \"Z\" }
    \$5 == \"PPid\" && !zombie { kids[\$6] = kids[\$6] \" \" \$3; live[\$3] = 1 }
    \$5 == \"NSsid\" && !zombie { members[\$6] = members[\$6] \" \" \$3; session[\$3] = \$6 }
    END { n = split(known, k, \" \"); for (x = 1; x <= n; x++) join(k[x]); join(root); take(root)
      for (head = 1; head <= tail; head++) { p = queue[head]; if (p in session) join(session[p])
        c = split(kids[p], ch, \" \"); for (y = 1; y <= c; y++) take(ch[y]) }
      line = \"\"; for (p in want) if (p in live) line = line \" \" p; line = line \";\"
      for (q in in_job) line = line \" \" q; print line \";\" pid_max }")
  pids=${found%%;*} found=${found#*;} sessions=${found%;*} pid_max=${found##*;}
}
scan() {
  from=$cursor forks_then=$forks tasks_then=$tasks
  mark
  cursor=$cursor_now forks=$forks_now tasks=$tasks_now
  if [ -z "$from" ] || [ -z "$forks_then" ] || [ -z "$forks" ] || [ "${pid_max:-0}" -le 300 ]; then
    look /proc/[0-9]*/status
    return
  fi
  files="" alive=""
  for p in $pids; do files="$files /proc/$p/status"; ! kill -0 "$p" 2>/dev/null || alive=1; done
  listed=""
  for f in /proc/[0-9]*; do
    p=${f#/proc/}
    case $p in *[!0-9]*) ;; *) listed="$listed $p" ;; esac
  done
  mark
  if [ $((2 * (forks_now - forks_then) + tasks_then)) -ge $((pid_max - 300)) ]; then look /proc/[0-9]*/status; return; fi
  for p in $listed; do
    if [ "$cursor_now" -ge "$from" ]; then [ "$p" -gt "$from" ] && [ "$p" -le "$cursor_now" ] || continue
    else [ "$p" -gt "$from" ] || [ "$p" -le "$cursor_now" ] || continue; fi
    files="$files /proc/$p/status" alive=1
  done
  if [ -n "$alive" ]; then look /dev/null $files; else pids=""; fi
}
all_alive() { for p in "$@"; do kill -0 "$p" 2>/dev/null || return 1; done; return 0; }
any_alive() { for p in "$@"; do kill -0 "$p" 2>/dev/null && return 0; done; return 1; }
now_cs() { read -r up rest < /proc/uptime; now=${up%.*}${up#*.}; }
echo "hetlaunch: node started"
exec 3<&0 </dev/null
if command -v setsid >/dev/null 2>&1; then setsid "$@" 3<&- & else "$@" 3<&- & fi
job=$!
(
  trap "" USR1
  while IFS= read -r line <&3; do :; done
  trap "" TERM
  sleeper=""
  trap 'woken=1; [ -z "$sleeper" ] || kill -KILL "$sleeper" 2>/dev/null' USR1
  export LC_ALL=C
  signalled=" "
  now_cs
  deadline=$((now + kill_after * 100))
  scan
  while [ -n "$pids" ]; do
    for p in $pids; do case "$signalled" in *" $p "*) ;; *) kill -TERM "$p" 2>/dev/null; signalled="$signalled$p " ;; esac; done
    pause=10 polls=0
    while woken=""; all_alive $pids; do
      now_cs
      [ "$now" -lt "$deadline" ] || break
      left=$((deadline - now))
      case " $pids " in *" $job "*) pause=$left ;; *) [ "$left" -ge "$pause" ] || pause=$left ;; esac
      sleep $((pause / 100)).$((pause % 100 / 10))$((pause % 10)) &
      sleeper=$!
      [ -n "$woken" ] || wait "$sleeper" 2>/dev/null
      kill -KILL "$sleeper" 2>/dev/null
      ended=$sleeper sleeper=""
      wait "$ended" 2>/dev/null
      polls=$((polls + 1))
      [ "$polls" -lt 10 ] || [ "$pause" -ge 100 ] || pause=$((pause * 2))
    done
    now_cs
    [ "$now" -lt "$deadline" ] || break
    scan
  done
  rounds=50
  while [ -n "$pids" ] && [ "$rounds" -gt 0 ]; do
    kill -KILL $pids 2>/dev/null
    ! any_alive $pids || sleep 0.1
    rounds=$((rounds - 1))
    scan
  done
) &
watcher=$!
exec 3<&-
wait "$job" 2>/dev/null
status=$?
kill "$watcher" 2>/dev/null
kill -USR1 "$watcher" 2>/dev/null
wait "$watcher" 2>/dev/null
[ -z "$lines_py" ] || rm -f -- "$lines_py"
echo "hetlaunch: node ended $status"
exit "$status")sh");
}

// The node script's part that writes rank_lines_program to a file of its own (removed when the
// node ends) and puts the file's path in place of argument `at` of COMMAND.
inline std::string rank_lines_script(std::size_t at) {
  return concat(R"sh(lines_code=')sh", rank_lines_program(), R"sh('
i=0
while :; do
  lines_py=${TMPDIR:-/tmp}/hetlaunch-rank-lines.$$.$i.py
  (umask 077 && set -C && printf "%s\n" "$lines_code" > "$lines_py") 2>/dev/null && break
  i=$((i + 1))
  [ "$i" -lt 20 ] || { echo "hetlaunch: cannot write $lines_py on $(hostname)" >&2; exit 126; }
done
i=0
for a in "$@"; do shift; [ "$i" != )sh",
                std::to_string(at), R"sh( ] || a=$lines_py; set -- "$@" "$a"; i=$((i + 1)); done
)sh");
}

// The texts of the ssh options' problems; the codes it shares with the core keep the core's.
inline std::string ssh_message(const diagnostic& d) {
  switch (d.code) {
    case errc::nul_byte:
      return concat("the ", d.variable, " ", quoted(d.text), " holds a NUL byte at position ",
                    d.position, ", which no argument or variable can carry");
    case errc::bad_kill_after:
      return concat("kill_after must be 1..3600 seconds, got ", d.value);
    default:
      return core_message(d);
  }
}

inline diagnostic ssh_problem(errc code, std::string_view text) {
  return diagnostic::of(code).with_text(text).with_describe(&ssh_message);
}

}  // namespace detail

/// Every problem of the ssh options, in order: an empty program, a variable name that is not a
/// shell name (letters, digits, '_', not starting with a digit) or that the launch owns
/// (owned_variable: the work share's and HETLAUNCH_RESTART_COUNT), a NUL byte in a variable's value
/// or in the directory (nul_byte), kill_after outside 1..3600.
[[nodiscard]] inline std::vector<diagnostic> validate_ssh(const ssh_options& ssh) {
  std::vector<diagnostic> out;
  if (ssh.program.empty() || ssh.program.front().empty()) {
    out.push_back(detail::ssh_problem(errc::empty_program, "").with_variable("ssh program"));
  }
  // A NUL cannot reach the node: the remote command is one C string, and sh would cut it there.
  const auto nul = [&out](std::string_view what, std::string_view text) {
    const std::size_t at = text.find('\0');
    if (at == std::string_view::npos) return;
    out.push_back(detail::ssh_problem(errc::nul_byte, text).with_variable(what).with_position(at));
  };
  for (const auto& v : ssh.env) {
    if (!detail::is_env_name(v.first))
      out.push_back(detail::ssh_problem(errc::bad_env_name, v.first));
    else if (is_owned_variable(v.first))
      out.push_back(detail::ssh_problem(errc::owned_variable, v.first));
    nul("value of variable", v.second);
  }
  nul("directory", ssh.chdir);
  if (ssh.kill_after < 1 || ssh.kill_after > 3600) {
    out.push_back(detail::ssh_problem(errc::bad_kill_after, "").with_value(ssh.kill_after));
  }
  return out;
}

/// Whether ssh_options::rank_lines changes a node's command: it is on, the program is torchrun
/// (a file named torchrun, or `PYTHON -m torch.distributed.run`), and torchrun starts its workers
/// with Python (torchrun_args has no --no-python and no --run-path). Another program's workers
/// may not be started as torchrun's are, so their lines are left as they come.
[[nodiscard]] inline bool rank_lines_apply(const launch_options& o,
                                           const ssh_options& ssh) noexcept {
  if (!ssh.rank_lines || o.program.empty()) return false;
  const std::string_view first = o.program.front();
  bool torchrun = first.substr(first.rfind('/') + 1) == "torchrun";
  for (std::size_t i = 1; i + 1 < o.program.size(); ++i)
    torchrun = torchrun || (o.program[i] == "-m" && o.program[i + 1] == "torch.distributed.run");
  if (!torchrun) return false;
  for (const std::string& arg : o.torchrun_args)
    if (detail::is_no_python(arg) || detail::names_option(arg, "run_path", 4)) return false;
  return true;
}

/// The command the node's shell runs: {"sh", "-c", SCRIPT, "hetlaunch-node", KILL_AFTER, DIR,
/// COUNT, the variables (launch_plan::try_node_variables of the node, ssh.env and
/// ssh.restart_count: the plan's agent_env, then ssh.env, then HETLAUNCH_RESTART_COUNT) as
/// NAME=VALUE, then the node's torchrun argv}. SCRIPT first unsets what the same rule removes:
/// the owned variables the node is not given, and TORCH_ELASTIC_WORKER_IDENTICAL when the plan's
/// nodes differ (torch 2.5+ would compute ranks as if every node ran this node's count). Where
/// rank_lines_apply, the torchrun argv has "hetlaunch-rank-lines.py" before the script (and -m
/// after it), which SCRIPT replaces with the path of the file it writes the line writer to.
/// Errors: node_out_of_range, empty_script, and those of validate_ssh.
[[nodiscard]] inline result<std::vector<std::string>, diagnostic> try_remote_argv(
    const launch_plan& plan, std::size_t node, const ssh_options& ssh) {
  auto argv = plan.try_torchrun_argv(node);
  if (!argv) return argv.error();
  if (const std::vector<diagnostic> problems = validate_ssh(ssh); !problems.empty())
    return problems.front();
  auto vars = plan.try_node_variables(node, ssh.env, ssh.restart_count);
  if (!vars) return vars.error();
  std::string script = "unset";
  for (std::string_view name : vars->unset) script.append(" ").append(name);
  std::string after_exports;
  if (rank_lines_apply(plan.options(), ssh)) {
    // The writer goes in as the script torchrun's Python runs; -m moves behind it.
    std::size_t at = argv->size() - plan.options().script_args.size() - 1;
    if (plan.options().module) argv->erase(argv->begin() + static_cast<std::ptrdiff_t>(--at));
    argv->insert(argv->begin() + static_cast<std::ptrdiff_t>(at), "hetlaunch-rank-lines.py");
    if (plan.options().module)
      argv->insert(argv->begin() + static_cast<std::ptrdiff_t>(at + 1), "-m");
    after_exports = detail::rank_lines_script(at);
  }
  script = script.size() > 5 ? script + "\n" + detail::node_script(after_exports)
                             : detail::node_script(after_exports);
  std::vector<std::string> out = {"sh",
                                  "-c",
                                  std::move(script),
                                  "hetlaunch-node",
                                  std::to_string(ssh.kill_after),
                                  ssh.chdir,
                                  std::to_string(vars->set.size())};
  out.reserve(out.size() + vars->set.size() + argv->size());
  for (const auto& v : vars->set) out.push_back(detail::concat(v.first, "=", v.second));
  for (std::string& a : *argv) out.push_back(std::move(a));
  return out;
}

/// ssh's argv that runs `remote_command` (one string, for the remote login shell) on `host`:
/// ssh.program, ssh.args, "--", the host, the command. Every ssh command line of a launcher has
/// this shape: a node's (ssh_argv), and a question to a host (`hetlaunch discover`'s GPU count).
[[nodiscard]] inline std::vector<std::string> ssh_command_argv(const ssh_options& ssh,
                                                               std::string_view host,
                                                               std::string remote_command) {
  std::vector<std::string> out = ssh.program;
  out.insert(out.end(), ssh.args.begin(), ssh.args.end());
  out.emplace_back("--");
  out.emplace_back(host);
  out.push_back(std::move(remote_command));
  return out;
}

/// ssh's argv for `node`: ssh.program, ssh.args, "--", the node's host, and the remote command
/// (try_remote_argv) quoted once more for the remote login shell, which must be a POSIX shell
/// (sh, bash, dash, zsh, ksh). Every argument of the script arrives byte for byte: quotes, $(),
/// newlines, bytes that are not UTF-8. ssh must not be given -n or -f: the node runs for as long
/// as ssh's standard input stays open (see ssh_options::kill_after).
///
/// Example, node 1 of {{"gpu-a", 8}, {"gpu-b", 4}}:
///   ssh -- gpu-b 'exec sh -c '\''...'\'' hetlaunch-node 10 /work 0 torchrun --nnodes=2 ...'
[[nodiscard]] inline result<std::vector<std::string>, diagnostic> try_ssh_argv(
    const launch_plan& plan, std::size_t node, const ssh_options& ssh) {
  auto remote = try_remote_argv(plan, node, ssh);
  if (!remote) return remote.error();
  return ssh_command_argv(ssh, plan.topology().node(node).host,
                          detail::concat("exec ", shell_join(*remote)));
}
/// try_ssh_argv(...).value().
[[nodiscard]] inline std::vector<std::string> ssh_argv(const launch_plan& plan, std::size_t node,
                                                       const ssh_options& ssh) {
  return try_ssh_argv(plan, node, ssh).value();
}

/// Whether a launcher forwards the variable to every node unless told otherwise: NCCL_*, GLOO_*,
/// TORCH_* (but not TORCH_ELASTIC_WORKER_IDENTICAL, which would break a mixed job), UCX_*, FI_*
/// and PYTHONPATH: what the fabric and torch read, as DeepSpeed's launcher forwards them.
[[nodiscard]] inline bool forwarded_by_default(std::string_view name) noexcept {
  if (name == variables::worker_identical || is_owned_variable(name)) return false;
  for (std::string_view prefix : {"NCCL_", "GLOO_", "TORCH_", "UCX_", "FI_"})
    if (name.substr(0, prefix.size()) == prefix) return true;
  return name == "PYTHONPATH";
}

/// The variables of `envp` (a NULL-terminated "NAME=VALUE" array, such as environ) that
/// forwarded_by_default accepts, in their order.
[[nodiscard]] inline environment forwarded_environment(const char* const* envp) {
  environment out;
  for (const char* const* e = envp; e && *e; ++e) {
    const std::string_view entry(*e);
    const std::size_t eq = entry.find('=');
    if (eq == std::string_view::npos || !forwarded_by_default(entry.substr(0, eq))) continue;
    out.emplace_back(std::string(entry.substr(0, eq)), std::string(entry.substr(eq + 1)));
  }
  return out;
}

/// Reads NAME=VALUE lines, as DeepSpeed's .deepspeed_env holds them: the value is everything after
/// the first '=' (taken as it is: no quotes are removed); blank lines and lines starting with '#'
/// are skipped; a trailing '\r' is dropped. A line without '=', with a name that is not a shell
/// name, or with a name the launch owns (owned_variable: the plan sets those, and ssh_options::env
/// may not hold them) is an error at its line and column, and so is a NUL byte anywhere, comments
/// included (no variable can hold one, and a file with one is not text).
[[nodiscard]] inline result<environment> parse_env_file(std::string_view text) {
  if (const std::size_t nul = text.find('\0'); nul != std::string_view::npos) {
    const std::size_t newline = text.rfind('\n', nul);
    const std::size_t line_start = newline == std::string_view::npos ? 0 : newline + 1;
    std::size_t line_no = 1;
    for (std::size_t i = 0; i < line_start; ++i)
      if (text[i] == '\n') ++line_no;
    return parse_error{line_no, nul - line_start + 1,
                       "a NUL byte, which no variable can hold (is this a text file?)",
                       errc::nul_byte};
  }
  environment out;
  std::size_t line_no = 0;
  std::size_t start = 0;
  while (start < text.size()) {
    std::size_t end = text.find('\n', start);
    if (end == std::string_view::npos) end = text.size();
    std::string_view line = text.substr(start, end - start);
    ++line_no;
    start = end + 1;
    if (!line.empty() && line.back() == '\r') line.remove_suffix(1);
    std::size_t first = 0;
    while (first < line.size() && (line[first] == ' ' || line[first] == '\t')) ++first;
    if (first == line.size() || line[first] == '#') continue;
    const std::size_t eq = line.find('=');
    if (eq == std::string_view::npos)
      return parse_error{line_no, first + 1,
                         detail::concat("expected NAME=VALUE, got ", detail::quoted(line))};
    const std::string_view name = line.substr(first, eq - first);
    if (!detail::is_env_name(name))
      return parse_error{line_no, first + 1, env_name_refusal(name), errc::bad_env_name};
    if (is_owned_variable(name))
      return parse_error{line_no, first + 1,
                         diagnostic::of(errc::owned_variable).with_text(name).message(),
                         errc::owned_variable};
    out.emplace_back(std::string(name), std::string(line.substr(eq + 1)));
  }
  return out;
}

}  // namespace hetlaunch

#endif  // HETLAUNCH_SSH_HPP
