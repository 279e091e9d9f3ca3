"""A real Slurm cluster on one machine: Debian's slurmctld, three slurmd and a private munged.

The compute hosts h0, h1 and h2 have 4, 2 and 1 CPUs and as many GPUs (character devices with
/dev/null's numbers, declared in gres.conf, so Slurm sets CUDA_VISIBLE_DEVICES as on real GPUs).
Each is a network namespace joined to a bridge (198.18.0.0/24; the controller is 198.18.0.1 in a
namespace of its own), with its own host name (a UTS namespace) and a private /etc/hosts bound
in a mount namespace; the machine's own files are never touched. Daemons use ports 26817/26818
and a munge socket of their own, so no other Slurm is ever reached.

slurmd is entered with `nsenter --net` rather than `ip netns exec`, which remounts /sys and
leaves slurmd without /sys/fs/cgroup.

Everything (daemons, job steps, namespaces, the work directory) is removed by `remove()`, and
`remove_leftovers()` removes what a killed earlier run left, recognised by its names.
"""
import os
import pathlib
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parents[1] / "support"))
import netns  # noqa: E402
import processes  # noqa: E402

NAMES = ["h0", "h1", "h2"]
CPUS = [4, 2, 1]
GPUS = [4, 2, 1]
CONTROLLER = "198.18.0.1"
ADDRESSES = ["198.18.0.10", "198.18.0.11", "198.18.0.12"]
WORK_STEM = "hetlaunch-slurm-test-"


def processes_naming(marker):
    """Processes whose command line or environment names `marker`, other than this one."""
    needle = marker.encode()
    return processes.matching(lambda proc: needle in (proc / "cmdline").read_bytes() + b"\0" +
                              (proc / "environ").read_bytes())


def kill_all(marker):
    processes.kill_until_gone(lambda: processes_naming(marker))


def remove_leftovers():
    """A killed earlier run's daemons, job processes, namespaces and work directory."""
    for work in processes.left_by_killed_runs(WORK_STEM):
        kill_all(str(work))
        shutil.rmtree(work, ignore_errors=True)
    netns.remove_stale("hsl")


class slurm_cluster:
    def __init__(self):
        self.work = pathlib.Path(tempfile.gettempdir()) / f"{WORK_STEM}{os.getpid()}"
        self.prefix = f"hsl{os.getpid()}"
        # No /etc/netns files: each daemon binds the cluster's hosts file in a mount namespace.
        self.network = netns.network(self.prefix, [("ctl", [f"{CONTROLLER}/24"])] +
                                     [(n, [f"{a}/24"]) for n, a in zip(NAMES, ADDRESSES)])
        self.ctl_ns = self.network.namespaces[0]
        self.host_ns = self.network.namespaces[1:]
        self.daemons = []
        self.conf = self.work / "slurm.conf"

    # --- setup -----------------------------------------------------------------------------
    def start(self):
        remove_leftovers()
        self.work.mkdir(mode=0o755)
        try:
            self._network()
            self._munge()
            self._configure()
            self._slurmctld()
            for i in range(len(NAMES)):
                self._slurmd(i)
            self._wait_idle()
        except BaseException:
            self.remove()
            raise
        return self

    def _network(self):
        self.network.create()
        (self.work / "hosts").write_text("127.0.0.1 localhost\n" + f"{CONTROLLER} ctl\n" +
                                         "".join(f"{a} {n}\n" for a, n in zip(ADDRESSES, NAMES)))

    def _munge(self):
        m = self.work / "munge"
        m.mkdir(mode=0o711)
        m.chmod(0o711)  # munged refuses a socket directory other than 0711 (umask aside)
        key = m / "munge.key"
        key.write_bytes(os.urandom(1024))
        key.chmod(0o400)
        self.munge_socket = m / "munge.socket"
        # --force: the work directory lives under the sticky /tmp, which munged would refuse.
        self._spawn("munged", ["munged", "--foreground", "--force", f"--socket={self.munge_socket}",
                               f"--key-file={key}", f"--pid-file={m / 'munged.pid'}",
                               f"--log-file={m / 'munged.log'}", f"--seed-file={m / 'munged.seed'}"], ns=None)
        self._wait_for(lambda: self.munge_socket.exists(), "munged's socket", m / "munged.log")

    def _configure(self):
        w = self.work
        (w / "state").mkdir()
        nodes, gres = [], ["AutoDetect=off\n"]
        for i, (name, addr) in enumerate(zip(NAMES, ADDRESSES)):
            dev = w / f"dev-{name}"
            dev.mkdir()
            for g in range(GPUS[i]):
                os.mknod(dev / f"nvidia{g}", 0o666 | 0o020000, os.makedev(1, 3))
            # Smaller hosts weigh less, so Slurm gives a component the smallest host that fits (a
            # hetjob's components are placed one by one, without going back).
            nodes.append(f"NodeName={name} NodeAddr={addr} CPUs={CPUS[i]} Gres=gpu:{GPUS[i]} Weight={CPUS[i]} "
                         "State=UNKNOWN\n")
            gres.append(f"NodeName={name} Name=gpu File={dev}/nvidia[0-{GPUS[i] - 1}]\n")
        self.conf.write_text(
            "ClusterName=hetlaunch\n"
            f"SlurmctldHost=ctl({CONTROLLER})\n"
            "SlurmUser=root\nSlurmdUser=root\n"
            "AuthType=auth/munge\nCredType=cred/munge\n"
            f"AuthInfo=socket={self.munge_socket}\n"
            "ProctrackType=proctrack/linuxproc\nTaskPlugin=task/none\n"
            "SelectType=select/cons_tres\nSelectTypeParameters=CR_CPU\n"
            "ReturnToService=2\nMpiDefault=none\nGresTypes=gpu\n"
            "SlurmdParameters=config_overrides\n"
            "SlurmctldPort=26817\nSlurmdPort=26818\n"
            f"StateSaveLocation={w / 'state'}\n"
            f"SlurmdSpoolDir={w / 'spool-%n'}\n"
            f"SlurmctldPidFile={w / 'slurmctld.pid'}\n"
            f"SlurmdPidFile={w / 'slurmd-%n.pid'}\n"
            f"SlurmctldLogFile={w / 'slurmctld.log'}\n"
            f"SlurmdLogFile={w / 'slurmd-%n.log'}\n"
            "SlurmctldDebug=info\nSlurmdDebug=info\n"
            "JobCompType=jobcomp/none\nAccountingStorageType=accounting_storage/none\n"
            "InactiveLimit=0\nKillWait=5\nMinJobAge=300\nMessageTimeout=10\n"
            # A dead host is noticed within seconds, not Slurm's default 300.
            "SlurmdTimeout=5\n"
            # Only the backfill scheduler starts heterogeneous jobs: every second, not every 30.
            "SchedulerParameters=bf_interval=1\n"
            + "".join(nodes) +
            f"PartitionName=all Nodes={','.join(NAMES)} Default=YES MaxTime=INFINITE State=UP\n")
        (w / "gres.conf").write_text("".join(gres))

    def env(self):
        """The environment every Slurm command and daemon of this cluster runs with."""
        env = dict(os.environ)
        env["SLURM_CONF"] = str(self.conf)
        for name in list(env):
            if name.startswith(("SLURM_", "SBATCH_", "SRUN_", "SALLOC_")) and name != "SLURM_CONF":
                del env[name]
        return env

    def _in_host(self, ns, name, argv):
        """argv inside host namespace `ns` under host name `name`, with the cluster's /etc/hosts."""
        script = ('hostname "$1" && mount --bind "$2" /etc/hosts && shift 2 && exec "$@"')
        return ["nsenter", f"--net=/run/netns/{ns}", "unshare", "--uts", "--mount", "--propagation", "private",
                "sh", "-c", script, "sh", name, str(self.work / "hosts"), *argv]

    def _spawn(self, label, argv, ns):
        log = open(self.work / f"{label}.out", "ab")
        proc = subprocess.Popen(argv, stdout=log, stderr=subprocess.STDOUT, env=self.env(),
                                start_new_session=True, cwd=self.work)
        self.daemons.append((label, proc))
        return proc

    def _wait_for(self, ready, what, log, timeout=30):
        deadline = time.monotonic() + timeout
        while not ready():
            dead = [label for label, p in self.daemons if p.poll() is not None]
            if dead or time.monotonic() > deadline:
                text = pathlib.Path(log).read_text(errors="replace") if pathlib.Path(log).exists() else ""
                out = "".join((self.work / f"{d}.out").read_text(errors="replace") for d in dead)
                raise RuntimeError(f"{what} did not come up (dead: {dead}):\n{out}\n{text[-3000:]}")
            time.sleep(0.1)

    def _slurmctld(self):
        self._spawn("slurmctld", self._in_host(self.ctl_ns, "ctl", ["slurmctld", "-D", "-i", "-f", str(self.conf)]),
                    self.ctl_ns)
        self._wait_for(lambda: self.scontrol_ok(), "slurmctld", self.work / "slurmctld.log")

    def _slurmd(self, i):
        self._spawn(f"slurmd-{NAMES[i]}", self._in_host(self.host_ns[i], NAMES[i],
                                                        ["slurmd", "-D", "-N", NAMES[i], "-f", str(self.conf)]),
                    self.host_ns[i])

    def scontrol_ok(self):
        return self.client(["scontrol", "ping"], check=False).returncode == 0

    def _wait_idle(self):
        def idle():
            out = self.client(["sinfo", "-h", "-N", "-o", "%N %t"], check=False).stdout
            states = dict(line.split() for line in out.splitlines() if line.strip())
            return all(states.get(n) == "idle" for n in NAMES)
        self._wait_for(idle, "the compute nodes", self.work / "slurmctld.log", timeout=60)

    # --- use -------------------------------------------------------------------------------
    def client_argv(self, argv):
        """argv run on the controller's host (a login node), where srun and sbatch are run from."""
        return ["nsenter", f"--net=/run/netns/{self.ctl_ns}", *argv]

    def client(self, argv, check=True, timeout=120, **kwargs):
        return subprocess.run(self.client_argv(argv), env=kwargs.pop("env", self.env()), capture_output=True,
                              text=True, check=check, timeout=timeout, cwd=kwargs.pop("cwd", self.work), **kwargs)

    def sbatch(self, script, args=(), cwd=None):
        """Submits `script` and returns its job id."""
        out = self.client(["sbatch", "--parsable", *args, str(script)], cwd=cwd or self.work).stdout
        return int(out.strip().split(";")[0].split("+")[0])

    def wait_job(self, job, timeout=240):
        """Waits until job `job` has left the queue; returns its state and exit code from scontrol."""
        deadline = time.monotonic() + timeout
        last = ""
        while time.monotonic() < deadline:
            r = self.client(["scontrol", "-o", "show", "job", str(job)], check=False)
            last = r.stdout
            states = re.findall(r"JobState=(\S+)", last)
            if states and all(s not in ("PENDING", "RUNNING", "CONFIGURING", "COMPLETING") for s in states):
                codes = re.findall(r"ExitCode=(\S+)", last)
                return states[0], codes[0] if codes else ""
            time.sleep(0.3)
        self.client(["scancel", str(job)], check=False)
        raise RuntimeError(f"job {job} did not end within {timeout} s:\n{last}")

    def job_processes(self):
        """Processes of jobs still running on the compute hosts (slurmstepd and what it started)."""
        daemons = {p.pid for _, p in self.daemons}
        left = []
        for pid in processes_naming(str(self.work)):
            try:
                comm = pathlib.Path(f"/proc/{pid}/comm").read_text().strip()
            except OSError:
                continue
            if pid in daemons or comm in ("slurmd", "slurmctld", "slurmscriptd", "munged", "nsenter", "unshare"):
                continue
            left.append((pid, comm))
        return left

    def kill_host(self, name):
        """The host dies: every process in its network namespace (slurmd, job steps, torchrun,
        workers) is killed at once. Returns how many."""
        ns = self.host_ns[NAMES.index(name)]
        target = os.stat(f"/run/netns/{ns}").st_ino
        killed = processes.kill_until_gone(
            lambda: processes.matching(lambda proc: os.stat(proc / "ns" / "net").st_ino == target))
        self.daemons = [(label, p) for label, p in self.daemons if p.poll() is None]
        return killed

    def restart_host(self, name):
        """The host comes back: its slurmd starts again and the node returns to service."""
        self._slurmd(NAMES.index(name))
        self._wait_idle()

    # --- teardown --------------------------------------------------------------------------
    def remove(self):
        for label, proc in reversed(self.daemons):
            if proc.poll() is None:
                try:
                    os.killpg(proc.pid, signal.SIGTERM)
                except ProcessLookupError:
                    pass
        for label, proc in reversed(self.daemons):
            try:
                proc.wait(timeout=10)
            except subprocess.TimeoutExpired:
                os.killpg(proc.pid, signal.SIGKILL)
                proc.wait()
        self.daemons = []
        # Job steps outlive slurmd by design; everything of this cluster names its work directory.
        kill_all(str(self.work))
        self.network.remove()
        shutil.rmtree(self.work, ignore_errors=True)
