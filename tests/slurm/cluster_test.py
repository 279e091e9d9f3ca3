#!/usr/bin/env python3
"""hetlaunch on a real Slurm: slurmctld, munged and three slurmd of 4, 2 and 1 CPUs and GPUs
(tests/slurm/real_cluster.py), started and stopped by this test. Every job runs Debian's torchrun
with gloo; every worker runs `hetlaunch check-env --slurm` and records its variables, host name and
CUDA_VISIBLE_DEVICES, which are compared with the plan, and all workers join one all_reduce.

The cases:
  readme     docs/slurm.md's recipe for a job without hetjob components, as written (sizes aside);
  hetjob     a heterogeneous job whose components are not in host-name order (h1, then h0 and h2),
             started with one `srun ... : ... hetlaunch exec --slurm` over all components;
  sbatch     a script printed by `hetlaunch sbatch`, submitted unchanged;
  restart    `sbatch --restarts 1`: a step that fails once runs again in the allocation and completes;
  directives #SBATCH values with blanks, quotes, '#' and backslashes arrive as given (the job's
             name, comment, partition and time in squeue); what sbatch cannot take, it refuses;
  recorded   the variables of a hetjob's batch script and of its steps, read by `--slurm` as the
             unit tests read the recorded copy (tests/slurm/recorded_environments.hpp);
  partial    a hetjob step over one component only: refused, nothing started;
  layout     a step of several tasks a node, and counts that disagree with the node list:
             refused before torchrun starts, naming both;
  node-dies  a node dies mid-job (every process of its host killed): the job ends, nothing is left;
  lost-node  `sbatch --restarts 1 --exclude-failed`: a node dies mid-job, the job goes on without it
             (--no-kill) and the step runs again on the nodes left, the plan made again;
  interrupt  `sbatch --restarts 2`: SIGINT to the batch script and its step (scancel --signal=INT
             --full twice, as a Ctrl-C twice under salloc reaches both) never restarts the step: the job ends
             after the first attempt with 130, and says why;
  hetjob-lost-node  Slurm's rule: a hetjob is cancelled on a node failure even with --no-kill, so
             `sbatch --exclude-failed` refuses several groups.
After every case no process of a job may be left on any host.

usage: cluster_test.py HETLAUNCH WORKER_PY [CASE...]
       cluster_test.py HETLAUNCH WORKER_PY --record HEADER   (rewrites the recorded environments)
"""
import json
import os
import pathlib
import re
import shlex
import subprocess
import sys
import time

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parent))
import real_cluster  # noqa: E402

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parents[1] / "support"))
from harness import Suite, pick  # noqa: E402
from worker_records import rank_problems, read_records  # noqa: E402

ROOT = pathlib.Path(__file__).resolve().parents[2]
HOSTS = real_cluster.NAMES


class case_failed(Exception):
    pass


def expect(condition, message):
    if not condition:
        raise case_failed(message)


class suite:
    def __init__(self, cluster, binary, worker):
        self.c = cluster
        self.binary = binary
        self.worker = worker
        # `hetlaunch` and a torchrun that adds what Debian's torch 1.13 on Python 3.11 needs
        # (its default --redirects/--tee crash), first on every job's PATH; its streams' logs in
        # the cluster's directory (without --log_dir torchrun leaves a directory in TMPDIR a job).
        self.bin = cluster.work / "bin"
        self.bin.mkdir()
        (self.bin / "hetlaunch").symlink_to(binary)
        logs = cluster.work / "torchelastic"
        logs.mkdir()
        logs.chmod(0o1777)  # jobs of every user
        shim = self.bin / "torchrun"
        shim.write_text(f'#!/bin/sh\nexec /usr/bin/torchrun --redirects 2 --tee 2 --log_dir {shlex.quote(str(logs))} "$@"\n')
        shim.chmod(0o755)
        self.count = 0

    def job_env(self):
        env = self.c.env()
        env["PATH"] = f"{self.bin}:{env.get('PATH', '/usr/bin:/bin')}"
        env["GLOO_SOCKET_IFNAME"] = "eth0"  # the same name on every host
        env.pop("TORCH_ELASTIC_WORKER_IDENTICAL", None)
        return env

    def fresh_dir(self, name):
        self.count += 1
        d = self.c.work / f"{self.count}-{name}"
        d.mkdir()
        d.chmod(0o777)
        return d

    def worker_command(self, out):
        return f"{self.worker} {out} hetlaunch check-env --slurm"

    def start_job(self, d, script_text, *sbatch_args):
        """Submits `script_text` as d/job.sh, its log d/job.log; the job id."""
        script = d / "job.sh"
        script.write_text(script_text)
        return int(self.c.client(["sbatch", "--parsable", *sbatch_args, "--output", str(d / "job.log"), str(script)],
                                 env=self.job_env(), cwd=d).stdout.strip().split(";")[0])

    def submit(self, d, script_text, timeout=240):
        job = self.start_job(d, script_text)
        try:
            state, code = self.c.wait_job(job, timeout=timeout)
        except RuntimeError as e:
            raise case_failed(f"{e}\n{self.log(d)}") from None
        return state, code, self.log(d)

    def no_leftovers(self):
        deadline = time.monotonic() + 15
        while True:
            left = self.c.job_processes()
            if not left:
                return
            if time.monotonic() > deadline:
                raise case_failed(f"processes left on the hosts: {left}")
            time.sleep(0.2)

    def check_workers(self, d, nodes, log):
        """nodes: [(host, nproc, gpus)] in node order; every worker's record against them."""
        problems = rank_problems(read_records(d), [n for _, n, _ in nodes], lambda rank, node: {
            "HOST": nodes[node][0], "CUDA_VISIBLE_DEVICES": ",".join(str(g) for g in range(nodes[node][2])),
            "MASTER_ADDR": nodes[0][0]})
        expect(not problems, "\n".join(problems) + f"\n{log}")
        checks = "".join(p.read_text() for p in d.glob("check-*.txt"))
        expect("mismatch" not in checks.lower(), checks)

    # --- the cases -----------------------------------------------------------------------------
    def readme(self):
        text = (ROOT / "docs" / "slurm.md").read_text()
        section = text[text.index("## Without heterogeneous jobs"):]
        script = re.search(r"```sh\n(#!/bin/bash\n.*?)```", section, re.S).group(1)
        d = self.fresh_dir("readme")
        # The recipe's 8 + 4 GPU nodes are this cluster's 4 + 2 + 1.
        for old, new in (("--nodes=2", "--nodes=3"), ("--ntasks=12", "--ntasks=7"),
                         ("train.py --epochs 3", self.worker_command(d)), ("-- train.py", "-- worker.py")):
            expect(old in script, f"docs/slurm.md's recipe no longer contains {old!r}")
            script = script.replace(old, new)
        state, code, log = self.submit(d, script)
        expect(state == "COMPLETED", f"job {state} {code}:\n{log}")
        expect("node" in log and "h0" in log, f"the plan is not in the job log:\n{log}")
        self.check_workers(d, [("h0", 4, 4), ("h1", 2, 2), ("h2", 1, 1)], log)
        return log

    def hetjob(self):
        d = self.fresh_dir("hetjob")
        script = HETJOB.format(exec_line=f"hetlaunch exec --slurm --master-port 29511 -- {self.worker_command(d)}")
        state, code, log = self.submit(d, script)
        expect(state == "COMPLETED", f"job {state} {code}:\n{log}")
        self.check_workers(d, [("h1", 2, 2), ("h0", 1, 1), ("h2", 1, 1)], log)
        return script

    def directives(self):
        """#SBATCH values that sbatch's parser would split, cut at '#' or stop at a quote arrive as
        given; values sbatch cannot take are refused by sbatch itself, and no job is made."""
        d = self.fresh_dir("directives")
        comment = 'run #5: it\'s "x" a\\b\tpackjob hetjob'
        args = ["sbatch", "--group", "1:1", "--partition", "all", "--time", "10", "--sbatch-arg", "--job-name=my job #2",
                "--sbatch-arg", f"--comment={comment}", "--", "t.py"]
        script = subprocess.run([self.binary, *args], capture_output=True, text=True, check=True).stdout
        try:
            job = self.c.sbatch(self.write(d, script), ["--hold"], cwd=d)
        except subprocess.CalledProcessError as e:
            raise case_failed(f"sbatch refused the script: {e.stderr}\n{script}") from None
        try:
            fields = {}
            for key, spec in (("name", "%j"), ("comment", "%k"), ("partition", "%P"), ("time", "%l")):
                fields[key] = self.c.client(["squeue", "-h", "-j", str(job), "-o", spec]).stdout.rstrip("\n")
        finally:
            self.c.client(["scancel", str(job)], check=False)
        want = {"name": "my job #2", "comment": comment, "partition": "all", "time": "10:00"}
        expect(fields == want, f"sbatch read {fields}, expected {want}:\n{script}")
        # An option and its value in one --sbatch-arg, short or long, with blanks in the value: each
        # becomes one #SBATCH line of two words, and hetlaunch's own lines after it stay its own.
        for given, field, want_value in ((["-J two words"], "%j", "two words"), (["--comment c #1"], "%k", "c #1"),
                                         (["-Jattached"], "%j", "attached"), (["--job two"], "%j", "two")):
            args = ["sbatch", "--group", "1:1", "--partition", "all", "--time", "10",
                    *[x for g in given for x in ("--sbatch-arg", g)], "--", "t.py"]
            script = subprocess.run([self.binary, *args], capture_output=True, text=True, check=True).stdout
            job = self.c.sbatch(self.write(d, script), ["--hold"], cwd=d)
            try:
                got = {spec: self.c.client(["squeue", "-h", "-j", str(job), "-o", spec]).stdout.rstrip("\n")
                       for spec in (field, "%P", "%l")}
            finally:
                self.c.client(["scancel", str(job)], check=False)
            expect(got == {field: want_value, "%P": "all", "%l": "10:00"}, f"{given}: sbatch read {got}:\n{script}")
        # An option that takes a value, given without one, would take the next line ("--partition=all")
        # as its value: refused before any script is written.
        for given in ("-J", "--job-name", "--job", "-HJ", "-J   "):
            r = subprocess.run([self.binary, "sbatch", "--group", "1:1", "--partition", "all", "--sbatch-arg", given,
                                "--", "t.py"], capture_output=True, text=True)
            expect(r.returncode == 2 and "takes a value, which must be in the same --sbatch-arg" in r.stderr
                   and not r.stdout, f"{given!r}: exit {r.returncode} {r.stdout!r} {r.stderr!r}")
        # What sbatch cannot take is refused by sbatch, not turned into another option.
        for flag, value, says in (("--time", "1:00:00 --exclusive", "Invalid --time specification"),
                                  ("--partition", "gpu a100", "invalid partition")):
            script = subprocess.run([self.binary, "sbatch", "--group", "1:1", flag, value, "--", "t.py"],
                                    capture_output=True, text=True, check=True).stdout
            before = self.c.client(["squeue", "-h", "-o", "%i"]).stdout
            r = self.c.client(["sbatch", "--parsable", "--hold", str(self.write(d, script))], check=False, cwd=d)
            after = self.c.client(["squeue", "-h", "-o", "%i"]).stdout
            expect(r.returncode != 0 and says.lower() in r.stderr.lower() and before == after,
                   f"{flag} {value!r}: sbatch exit {r.returncode}, {r.stderr!r}\n{script}")
        return script

    def write(self, d, text):
        self.count += 1
        path = d / f"job-{self.count}.sh"
        path.write_text(text)
        return path

    def check_shares(self, d, hosts, weights, global_batch):
        """Every worker's HETLAUNCH_*BATCH* variables, as it got them, against the plan of the same
        nodes and weights."""
        args = [self.binary, "plan", "--json", "--hosts", hosts, "--global-batch", str(global_batch)]
        for host, weight in weights:
            args += ["--weight", f"{host}={weight}"]
        plan = json.loads(subprocess.run(args, capture_output=True, text=True, check=True).stdout)
        for node in plan["nodes"]:
            for rank in range(node["rank_offset"], node["rank_offset"] + node["nproc"]):
                raw = (d / f"worker-{rank}.environ").read_bytes().split(b"\0")
                env = dict(item.decode().split("=", 1) for item in raw if b"=" in item)
                want = {"HETLAUNCH_GLOBAL_BATCH": str(global_batch), "HETLAUNCH_NODE_BATCH": str(node["node_batch"]),
                        "HETLAUNCH_NODE_BATCH_OFFSET": str(node["node_batch_offset"])}
                got = {k: env.get(k) for k in want}
                expect(got == want, f"rank {rank} on {node['host']} got {got}, the plan gives {want}")

    def sbatch(self):
        d = self.fresh_dir("sbatch")
        # Work shares too: the 2-GPU group weighs 3, the 1-GPU group 0.5.
        args = ["sbatch", "--group", "1:2:3", "--group", "1:4", "--group", "1:1:0.5", "--global-batch", "41",
                "--time", "10", "--sbatch-arg=--job-name=hetlaunch-test", "--master-port", "29512", "--",
                str(self.worker), str(d), "sh", "-c",
                # check-env with the options exec has: with the shares, which it checks too (without
                # them a share variable in a worker is one no plan gave).
                'hetlaunch check-env --slurm --global-batch 41 --weight "$SLURM_JOB_NODELIST_HET_GROUP_0"=3 '
                '--weight "$SLURM_JOB_NODELIST_HET_GROUP_2"=0.5']
        script = subprocess.run([self.binary, *args], capture_output=True, text=True, check=True).stdout
        state, code, log = self.submit(d, script)
        expect(state == "COMPLETED", f"job {state} {code}:\n{script}\n{log}")
        # Slurm gives the 2-GPU component h1, the 4-GPU one h0: component order, not name order.
        self.check_workers(d, [("h1", 2, 2), ("h0", 4, 4), ("h2", 1, 1)], log)
        self.check_shares(d, "h1:2,h0:4,h2:1", [("h1", "3"), ("h2", "0.5")], 41)
        expect("hetjob" in script, script)
        # One group: not a hetjob; the script keeps the job's layout for the step.
        d = self.fresh_dir("sbatch-one-group")
        one = subprocess.run([self.binary, "sbatch", "--group", "2:1:2", "--global-batch", "5", "--master-port", "29514",
                              "--", str(self.worker), str(d), "sh", "-c",
                              'hetlaunch check-env --slurm --global-batch 5 --weight "$SLURM_JOB_NODELIST"=2'],
                             capture_output=True, text=True, check=True).stdout
        state, code, log = self.submit(d, one)
        expect(state == "COMPLETED", f"job {state} {code}:\n{one}\n{log}")
        self.check_workers(d, [("h1", 1, 1), ("h2", 1, 1)], log)
        self.check_shares(d, "h1:1,h2:1", [("h1", "2"), ("h2", "2")], 5)
        return script + "\n" + one

    def restart(self):
        """`sbatch --restarts 1`: rank 0 fails the first attempt; the step runs again in the same
        allocation, every worker of the second attempt sees HETLAUNCH_RESTART_COUNT=1, and the job
        completes. With --restarts 0 the job fails with the step's status."""
        d = self.fresh_dir("restart")
        args = ["sbatch", "--group", "1:2", "--group", "1:1", "--time", "10", "--master-port", "29515", "--restarts",
                "1", "--", str(self.worker), str(d), "hetlaunch", "check-env", "--slurm", "--fail-first-attempt"]
        script = subprocess.run([self.binary, *args], capture_output=True, text=True, check=True).stdout
        started = time.monotonic()
        state, code, log = self.submit(d, script)
        seconds = time.monotonic() - started
        expect(state == "COMPLETED", f"job {state} {code}:\n{script}\n{log}")
        expect(re.search(r"hetlaunch: the step failed \(exit status \d+\): restart 1 of 1", log),
               f"no restart in the log:\n{log}")
        for path in sorted(d.glob("worker-*.environ")):
            env = dict(v.split(b"=", 1) for v in path.read_bytes().split(b"\0") if b"=" in v)
            expect(env.get(b"HETLAUNCH_RESTART_COUNT") == b"1",
                   f"{path.name}: HETLAUNCH_RESTART_COUNT={env.get(b'HETLAUNCH_RESTART_COUNT')}")
        expect(len(list(d.glob("worker-*.environ"))) == 3, f"{len(list(d.glob('worker-*.environ')))} workers recorded")
        print(f"     restart: the job of two attempts took {seconds:.1f} s")
        d = self.fresh_dir("restart-none-left")
        args[args.index("--restarts") + 1] = "0"
        args[args.index(str(self.worker)) + 1] = str(d)
        script = subprocess.run([self.binary, *args], capture_output=True, text=True, check=True).stdout
        job = self.start_job(d, script)
        state, code = self.c.wait_job(job)
        log = self.log(d)
        expect(state == "FAILED", f"job {state} {code}, expected FAILED:\n{log}")
        expect("no restart left (--restarts 0)" in log, f"no refusal in the log:\n{log}")
        # The job's comment names the failure: rank 0 (node 0, h1) failed the attempt.
        shown = self.c.client(["scontrol", "-o", "show", "job", str(job)], check=False).stdout
        comments = {c.strip() for c in re.findall(r"Comment=(.*?) \w+=", shown)}
        expect(comments == {"hetlaunch: restarts_exhausted node 0 host h1 rank 0"},
               f"the job's comment: {comments}:\n{shown}\n{log}")
        print(f"     restart: the failed job's comment: {sorted(comments)}")
        return script

    def kill_h2_when_ready(self, d, job, workers):
        """Once `workers` workers have written d/ready-RANK, every process of h2 is killed; then the
        job is waited for. How many were killed, the job's state and exit code, and the seconds
        from the kill to the job's end."""
        deadline = time.monotonic() + 180
        while len(list(d.glob("ready-*"))) < workers:
            expect(time.monotonic() < deadline, f"the workers did not start:\n{self.log(d)}")
            time.sleep(0.2)
        killed = self.c.kill_host("h2")
        start = time.monotonic()
        try:
            state, code = self.c.wait_job(job, timeout=180)
        except RuntimeError as e:
            raise case_failed(f"{e}\n{self.log(d)}") from None
        return killed, state, code, time.monotonic() - start

    def lost_node(self):
        """`sbatch --restarts 1 --exclude-failed` of one group of 3 nodes: h2 dies mid-job (every
        process of its host killed). The job survives (--no-kill), Slurm takes h2 out of it, and the
        step runs again on h0 and h1 with the plan made again: world size 2, the same global batch
        split over two nodes, HETLAUNCH_RESTART_COUNT=1; the job completes."""
        d = self.fresh_dir("lost-node")
        worker = d / "lost.py"
        worker.write_text(LOST_NODE_WORKER.format(out=d))
        args = ["sbatch", "--group", "3:1", "--restarts", "1", "--exclude-failed", "--min-nodes", "2", "--global-batch", "12",
                "--time", "10", "--master-port", "29516", "--", str(worker)]
        script = subprocess.run([self.binary, *args], capture_output=True, text=True, check=True).stdout
        try:
            killed, state, code, seconds = self.kill_h2_when_ready(d, self.start_job(d, script), workers=3)
        finally:
            self.c.restart_host("h2")
        log = self.log(d)
        expect(state == "COMPLETED", f"job {state} {code} after h2 died:\n{script}\n{log}")
        expect("the job lost nodes: restart 1 of 1 on the 2 nodes left (h[0-1]), plan made again" in log,
               f"no restart on the nodes left in the log:\n{log}")
        expect("2 nodes, world size 2" in log, f"no new plan in the log:\n{log}")
        records = [json.loads(p.read_text()) for p in sorted(d.glob("second-*.json"))]
        expect([(r["RANK"], r["HOST"], r["WORLD_SIZE"], r["HETLAUNCH_RESTART_COUNT"]) for r in records] ==
               [("0", "h0", "2", "1"), ("1", "h1", "2", "1")], f"the second attempt's workers: {records}\n{log}")
        expect(sum(int(r["HETLAUNCH_NODE_BATCH"]) for r in records) == 12, f"node batches {records}")
        print(f"     lost-node: killed {killed} processes on h2; the job finished on h0 and h1 {seconds:.1f} s later")
        return script + "\n" + log

    def interrupt(self):
        """`sbatch --restarts 2` of two groups, every worker waiting in its collectives: once all
        run, SIGINT reaches the batch script and its step twice, as a user's Ctrl-C twice under
        salloc reaches both (scancel --signal=INT --full). srun takes the signals, ends the step
        and returns a status, but the step is not started again: the job ends after one attempt, exit code 130, with the reason in its
        log. A job with the same script and no signal restarts as before (case restart)."""
        d = self.fresh_dir("interrupt")
        worker = d / "hang.py"
        worker.write_text(LOST_NODE_WORKER.format(out=d))
        args = ["sbatch", "--group", "1:2", "--group", "2:1", "--restarts", "2", "--time", "10", "--master-port", "29517",
                "--", str(worker)]
        script = subprocess.run([self.binary, *args], capture_output=True, text=True, check=True).stdout
        job = self.start_job(d, script)
        try:
            deadline = time.monotonic() + 180
            while len(list(d.glob("ready-*"))) < 4:
                expect(time.monotonic() < deadline, f"the workers did not start:\n{self.log(d)}")
                time.sleep(0.2)
            # Twice, as a user presses Ctrl-C: srun takes the first to print the step's state, and
            # ends the step on a second within a second.
            for _ in range(2):
                # The first may end the job already (a loaded machine delivers the second later):
                # then scancel says so, and the checks below still hold.
                r = self.c.client(["scancel", "--signal=INT", "--full", str(job)], check=False)
                expect(r.returncode == 0 or "already completing or completed" in r.stderr,
                       f"scancel --signal=INT: {r.returncode} {r.stderr}")
                time.sleep(0.3)
            state, code = self.c.wait_job(job, timeout=180)
        finally:
            self.c.client(["scancel", str(job)], check=False)
        log = self.log(d)
        expect(state == "FAILED" and code.startswith("130"), f"job {state} {code}, expected FAILED 130:\n{log}")
        expect(re.search(r"hetlaunch: the step ended after SIGINT \(exit status \d+\): a signal never restarts it", log),
               f"no reason in the log:\n{log}")
        expect("restart 1 of 2" not in log and not list(d.glob("second-*")), f"the step ran again:\n{log}")
        return script + "\n" + log

    def hetjob_lost_node(self):
        """Slurm's rule: a heterogeneous job is cancelled when one of its nodes fails, even with
        --no-kill on every component (and requeued); so `sbatch --exclude-failed` refuses several
        groups."""
        r = subprocess.run([self.binary, "sbatch", "--group", "1:2", "--group", "2:1", "--restarts", "1", "--exclude-failed",
                            "--", "train.py"], capture_output=True, text=True)
        expect(r.returncode == 1 and "Slurm cancels a heterogeneous job when one of its nodes fails" in r.stderr,
               f"sbatch --exclude-failed of two groups: exit {r.returncode}, {r.stderr}")
        d = self.fresh_dir("hetjob-lost-node")
        job = self.start_job(d, HETJOB_NO_KILL)
        deadline = time.monotonic() + 60
        while "started" not in self.log(d):
            expect(time.monotonic() < deadline, f"the job did not start:\n{self.log(d)}")
            time.sleep(0.2)
        time.sleep(1)
        self.c.kill_host("h2")
        try:
            deadline = time.monotonic() + 60
            while "DUE TO NODE FAILURE" not in self.log(d):
                expect(time.monotonic() < deadline, f"the hetjob was not cancelled:\n{self.log(d)}")
                time.sleep(0.2)
            shown = self.c.client(["scontrol", "-o", "show", "job", str(job)], check=False).stdout
            # The step's srun may end a moment before the batch script is killed with the job; a
            # script that went on would print 10 s after its srun ended (srun waits up to 7 s for
            # the step's tasks).
            time.sleep(20)
            expect("after the step" not in self.log(d), f"the batch script went on after the node failure:\n{self.log(d)}")
        finally:
            self.c.client(["scancel", str(job)], check=False)
            try:
                self.c.wait_job(job, timeout=60)
            finally:
                self.c.restart_host("h2")
        return f"{self.log(d)}\n{shown}"

    def recorded_environments(self):
        """The variables of a hetjob's batch script and steps, recorded on this cluster."""
        d = self.fresh_dir("recorded")
        dump = d / "dump.sh"
        dump.write_text(f'#!/bin/sh\nenv -0 > "{d}/$1.$(hostname).${{SLURM_PROCID:-0}}.env"\n')
        dump.chmod(0o755)
        script = HETJOB_RECORD.format(dump=dump)
        state, code, log = self.submit(d, script)
        expect(state == "COMPLETED", f"job {state} {code}:\n{log}")
        recorded = {}
        for path in sorted(d.glob("*.env")):
            env = dict(item.split("=", 1) for item in path.read_bytes().decode().split("\0") if "=" in item)
            recorded[path.stem] = {k: v for k, v in env.items() if k.startswith(("SLURM", "CUDA_VISIBLE", "GPU_DEVICE"))
                                   and k != "SLURM_CONF"}
        return recorded

    def recorded(self):
        recorded = self.recorded_environments()
        expect(len(recorded) >= 8, f"recorded only {sorted(recorded)}")
        for name, env in recorded.items():
            here = env["SLURMD_NODENAME"]
            run = lambda *args: subprocess.run([self.binary, *args], env={"PATH": "/usr/bin:/bin", **env},  # noqa: E731
                                               capture_output=True, text=True)
            plan = run("plan", "--slurm", "--json")
            expect(plan.returncode == 0, f"{name}: {plan.stderr}")
            nodes = [(n["host"], n["nproc"]) for n in json.loads(plan.stdout)["nodes"]]
            expect(nodes == [("h1", 2), ("h0", 1), ("h2", 1)], f"{name}: nodes {nodes}")
            argv = run("argv", "--slurm", "--", "t.py")
            partial = name.startswith("step1.")
            several = name.startswith("stepall.")  # 2 tasks on h1: a step of the job's own layout
            if partial:
                expect(argv.returncode == 0 and f"--node_rank={[h for h, _ in nodes].index(here)}" in argv.stdout,
                       f"{name}: {argv.stdout}{argv.stderr}")
            else:
                expect(argv.returncode == 0, f"{name}: {argv.stderr}")
                expect(f"--node_rank={[h for h, _ in nodes].index(here)}" in argv.stdout,
                       f"{name}: on {here}, argv {argv.stdout}")
            ex = run("exec", "--slurm", "--program", "/bin/true", "--", "t.py")
            if partial or several:
                expect(ex.returncode == 1 and "this step runs" in ex.stderr, f"{name}: exec {ex.returncode} {ex.stderr}")
            else:
                expect(ex.returncode == 0, f"{name}: exec {ex.returncode} {ex.stderr}")
        return f"{len(recorded)} environments"

    def partial(self):
        d = self.fresh_dir("partial")
        script = HETJOB_PARTIAL.format(exec_line=f"hetlaunch exec --slurm -- {self.worker_command(d)}")
        state, code, log = self.submit(d, script)
        expect(state == "FAILED", f"job {state} {code}:\n{log}")
        expect("this step runs on 2 of the job's 3 nodes" in log and
               "srun --nodes=1 --ntasks=1 : --nodes=2 --ntasks=2" in log, log)
        expect(not list(d.glob("worker-*")) and "torchrun" not in log.lower().replace("one torchrun", ""), log)
        return log

    def layout(self):
        d = self.fresh_dir("layout")
        script = LAYOUT.format(exec_line=f"hetlaunch exec --slurm -- {self.worker_command(d)}")
        state, code, log = self.submit(d, script)
        expect(state == "COMPLETED", f"job {state} {code}:\n{log}")
        expect(log.count("this step runs '4,2,1' tasks on its nodes (SLURM_STEP_TASKS_PER_NODE), but the plan starts "
                         "one torchrun on each of the job's 3 nodes") == 7, log)
        expect(log.count("HETLAUNCH_TASKS_PER_NODE gives 2 counts but SLURM_JOB_NODELIST names 3 hosts") == 3, log)
        expect(not list(d.glob("worker-*")), log)
        return log

    def node_dies(self):
        d = self.fresh_dir("node-dies")
        loop = d / "loop.py"
        loop.write_text(LOOP_WORKER.format(out=d))
        script = HETJOB.format(exec_line=f"hetlaunch exec --slurm --master-port 29513 -- {loop}")
        job = self.start_job(d, script, "--no-requeue")
        try:
            killed, state, code, ended = self.kill_h2_when_ready(d, job, workers=4)
        finally:
            self.c.restart_host("h2")
        expect(state != "COMPLETED", f"job {state} after h2 died")
        return f"killed {killed} processes on h2; job {job} ended {state} {code} after {ended:.1f} s\n{self.log(d)}"

    def log(self, d):
        p = d / "job.log"
        return p.read_text(errors="replace") if p.exists() else ""


# Components out of host-name order: component 0 is h1, component 1 is h0 and h2.
HETJOB = """#!/bin/bash
#SBATCH -w h1 --nodes=1 --ntasks=2 --gpus-per-node=2
#SBATCH hetjob
#SBATCH -w h0,h2 --nodes=2 --ntasks=2 --ntasks-per-node=1 --gpus-per-node=1
set -eu
hetlaunch plan --slurm
srun --nodes=1 --ntasks=1 --gpus-per-node=2 : --nodes=2 --ntasks=2 --ntasks-per-node=1 --gpus-per-node=1 \\
  {exec_line}
"""

HETJOB_PARTIAL = """#!/bin/bash
#SBATCH -w h1 --nodes=1 --ntasks=2
#SBATCH hetjob
#SBATCH -w h0,h2 --nodes=2 --ntasks=2 --ntasks-per-node=1
srun --het-group=1 {exec_line}
"""

HETJOB_RECORD = """#!/bin/bash
#SBATCH -w h1 --nodes=1 --ntasks=2
#SBATCH hetjob
#SBATCH -w h0,h2 --nodes=2 --ntasks=2 --ntasks-per-node=1
{dump} batch
srun --nodes=1 --ntasks=1 : --nodes=2 --ntasks=2 --ntasks-per-node=1 {dump} step
srun --het-group=0,1 {dump} stepall
srun --het-group=1 {dump} step1
"""

LAYOUT = """#!/bin/bash
#SBATCH --nodes=3
#SBATCH --ntasks=7
export HETLAUNCH_TASKS_PER_NODE=$SLURM_TASKS_PER_NODE
srun {exec_line} || true
export HETLAUNCH_TASKS_PER_NODE=4,2
srun --ntasks-per-node=1 --ntasks=3 {exec_line} || true
"""

# The first attempt runs until a node dies; the second records what it is and ends.
LOST_NODE_WORKER = """import datetime, json, os, socket, time
import torch, torch.distributed as dist
dist.init_process_group("gloo", timeout=datetime.timedelta(seconds=30))
t = torch.ones(1)
dist.all_reduce(t)
if os.environ["HETLAUNCH_RESTART_COUNT"] == "0":
    open(os.path.join("{out}", "ready-" + os.environ["RANK"]), "w").close()
    while True:
        dist.all_reduce(torch.ones(1))
        time.sleep(0.2)
record = {{k: os.environ.get(k) for k in ("RANK", "WORLD_SIZE", "HETLAUNCH_RESTART_COUNT", "HETLAUNCH_NODE_BATCH")}}
record["HOST"] = socket.gethostname()
with open(os.path.join("{out}", "second-" + os.environ["RANK"] + ".json"), "w") as f:
    json.dump(record, f)
dist.destroy_process_group()
"""

HETJOB_NO_KILL = """#!/bin/bash
#SBATCH -w h1 --nodes=1 --ntasks=1 --no-kill
#SBATCH hetjob
#SBATCH -w h0,h2 --nodes=2 --ntasks=2 --ntasks-per-node=1 --no-kill
echo started
srun --nodes=1 --ntasks=1 sleep 600 : --nodes=2 --ntasks=2 --ntasks-per-node=1 sleep 600
sleep 10
echo after the step
"""

LOOP_WORKER = """import datetime, os, time
import torch, torch.distributed as dist
dist.init_process_group("gloo", timeout=datetime.timedelta(seconds=30))
open(os.path.join("{out}", "ready-" + os.environ["RANK"]), "w").close()
while True:
    t = torch.ones(1)
    dist.all_reduce(t)
    time.sleep(0.2)
"""


def header(recorded):
    """recorded_environments.hpp: the recorded variables as C++ data for the unit tests."""
    out = ["// SPDX-License-Identifier: MIT",
           "// Written by tests/slurm/cluster_test.py --record: the Slurm variables of a heterogeneous job's",
           "// batch script and steps on a real Slurm (Debian 12's 22.05). Components: h1 (2 tasks), then h0",
           "// and h2 (1 task each). Each name is WHERE.HOST.PROCID: batch (the batch script), step (a step",
           "// `srun -N1 -n1 : -N2 -n2` over both components), stepall (`srun --het-group=0,1`, each",
           "// component's own tasks), step1 (`srun --het-group=1`, component 1 only).",
           "#ifndef HETLAUNCH_TESTS_SLURM_RECORDED_ENVIRONMENTS_HPP",
           "#define HETLAUNCH_TESTS_SLURM_RECORDED_ENVIRONMENTS_HPP",
           "",
           "struct recorded_environment {",
           "  const char* name;",
           "  const char* variables;  // NAME=VALUE lines",
           "};",
           "",
           "inline const recorded_environment recorded_environments[] = {"]
    for name, env in sorted(recorded.items()):
        body = "".join(f"{k}={v}\n" for k, v in sorted(env.items()))
        out.append(f'    {{"{name}", R"({body})"}},')
    out += ["};", "", "#endif", ""]
    return "\n".join(out)


def main():
    args = sys.argv[1:]
    record = None
    if "--record" in args:
        i = args.index("--record")
        record = pathlib.Path(args[i + 1])
        del args[i:i + 2]
    binary, worker = os.path.abspath(args[0]), os.path.abspath(args[1])
    cases = {"readme": "readme", "hetjob": "hetjob", "sbatch": "sbatch", "restart": "restart",
             "directives": "directives", "recorded": "recorded", "partial": "partial", "layout": "layout",
             "node-dies": "node_dies", "lost-node": "lost_node", "interrupt": "interrupt",
             "hetjob-lost-node": "hetjob_lost_node"}
    chosen = pick(cases, args[2:])
    cluster = real_cluster.slurm_cluster()

    def leftovers():
        left = subprocess.run(["ip", "netns", "list"], capture_output=True, text=True).stdout
        return ([f"namespaces left behind: {left}"] if cluster.prefix in left else []) + \
            [f"process left behind: {pid}" for pid in real_cluster.processes_naming(str(cluster.work))]

    with Suite("slurm", cluster.remove, leftovers) as run:
        started = time.monotonic()
        cluster.start()
        print(f"cluster up in {time.monotonic() - started:.1f} s", flush=True)
        s = suite(cluster, binary, worker)
        if record:
            record.write_text(header(s.recorded_environments()))
            print(f"wrote {record}")
            return 0

        def checked(method):
            """The case's failed expectation, and any job process it left on the hosts."""
            problems = []
            try:
                shown = getattr(s, method)()
                if os.environ.get("SLURM_TEST_SHOW"):
                    print(shown)
            except case_failed as e:
                problems.append(str(e))
            try:
                s.no_leftovers()
            except case_failed as left:
                problems.append(str(left))
            return problems

        for name in chosen:
            run.case(name, checked, cases[name])
    return run.status


if __name__ == "__main__":
    sys.exit(main())
