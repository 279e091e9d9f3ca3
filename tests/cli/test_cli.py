#!/usr/bin/env python3
"""The hetlaunch command's behaviour, pinned by golden files: stdout, stderr and the exit status
of each case. `--update` rewrites the golden files from the current output (review the diff).
`--e2e` also runs `hetlaunch exec` for real: one torchrun agent per node of a heterogeneous
hostfile on loopback, whose workers check their environment with `hetlaunch check-env` and join a
gloo all_reduce.

usage: test_cli.py HETLAUNCH [--update] [--e2e WORKER_PY WORK_DIR]
"""
import os
import pathlib
import shutil
import subprocess
import sys
import tempfile

HERE = pathlib.Path(__file__).resolve().parent
DATA = HERE / "data"
GOLDEN = HERE / "golden"

# name: (arguments, expected exit status). "@DATA@" is the data directory.
CASES = {
    "help": (["--help"], 0),
    "version": (["--version"], 0),
    "no_command": ([], 2),
    "plan_builtin": (["plan"], 0),
    "plan_hostfile": (["plan", "--hostfile", "@DATA@/mixed.hostfile", "--", "train.py", "--lr", "0.1"], 0),
    "plan_json": (["plan", "--hosts", "gpu-a:8,gpu-b:4", "--json", "train.py"], 0),
    "plan_c10d": (["plan", "--hosts", "gpu-a:8,gpu-b:4", "--rdzv", "c10d", "--rdzv-id", "job7"], 0),
    "plan_include": (["plan", "--hosts", "gpu-a:8,gpu-b:4", "--include", "gpu-a@gpu-b:1,3"], 0),
    "plan_bad_hostfile": (["plan", "--hostfile", "@DATA@/zero.hostfile"], 1),
    "plan_help": (["plan", "--help"], 0),
    "argv": (["argv", "--node", "1", "--hostfile", "@DATA@/mixed.hostfile", "--master-port", "29612",
              "--", "train.py", "--data", "my data"], 0),
    "argv_dash_flags": (["argv", "--node", "0", "--hosts", "a:2,b:1", "--dash-flags", "--rdzv-id", "r1",
                         "--max-restarts", "3", "-m", "pkg.train"], 0),
    "argv_node_out_of_range": (["argv", "--node", "3", "--hostfile", "@DATA@/mixed.hostfile", "t.py"], 1),
    "argv_no_script": (["argv", "--node", "0", "--hosts", "a:1"], 2),
    "argv_no_node": (["argv", "--hosts", "a:1", "t.py"], 2),
    "env_sh": (["env", "--node", "2", "--local-rank", "1", "--hostfile", "@DATA@/mixed.hostfile", "--torch", "1.13"], 0),
    "env_json": (["env", "--node", "1", "--local-rank", "0", "--hosts", "a:2,b:1", "--format", "json"], 0),
    "env_direct": (["env", "--node", "0", "--local-rank", "1", "--hosts", "a:2,b:1", "--direct"], 0),
    "env_c10d": (["env", "--node", "0", "--local-rank", "0", "--hosts", "a:2,b:1", "--rdzv", "c10d",
                  "--rdzv-id", "x"], 1),
    "env_bad_format": (["env", "--node", "0", "--local-rank", "0", "--format", "yaml"], 2),
    "check_good": (["check", "--hostfile", "@DATA@/mixed.hostfile"], 0),
    "check_zero": (["check", "--hostfile", "@DATA@/zero.hostfile"], 1),
    "check_duplicate": (["check", "--hostfile", "@DATA@/duplicate.hostfile"], 1),
    "check_hosts_syntax": (["check", "--hosts", "a:4,b"], 1),
    "check_missing_file": (["check", "--hostfile", "@DATA@/absent"], 1),
    "check_bad_port": (["check", "--master-port", "70000"], 2),
    "check_two_inputs": (["check", "--hosts", "a:1", "--hostfile", "@DATA@/mixed.hostfile"], 2),
    "check_unknown_option": (["check", "--nodes", "3"], 2),
    "check_bad_master": (["check", "--master-addr", "a b"], 1),
    "expand": (["expand", "gpu[01-03],cpu[1,3]"], 0),
    "expand_bad": (["expand", "gpu[3-1]"], 1),
    "compress": (["compress", "gpu01", "gpu02", "gpu03", "cpu7"], 0),
    "accelerate": (["accelerate", "--node", "1", "--hosts", "gpu-a:8,gpu-b:2", "train.py"], 0),
    "unknown_command": (["launch"], 2),
}


def run(binary, args, env=None):
    args = [a.replace("@DATA@", str(DATA)) for a in args]
    r = subprocess.run([binary] + args, capture_output=True, env=env, timeout=60)
    # Golden files hold the data directory as @DATA@, so they do not depend on the checkout.
    clean = lambda b: b.decode("utf-8", "replace").replace(str(DATA), "@DATA@")
    return clean(r.stdout), clean(r.stderr), r.returncode


def golden_cases(binary, update):
    failures = 0
    env = {k: v for k, v in os.environ.items() if not k.startswith("SLURM_")}
    for name, (args, status) in CASES.items():
        out, err, code = run(binary, args, env)
        got = f"$ hetlaunch {' '.join(args)}\n--- exit {code}\n--- stdout\n{out}--- stderr\n{err}"
        path = GOLDEN / f"{name}.txt"
        if update:
            path.write_text(got)
        expected = path.read_text() if path.exists() else "<no golden file>"
        if code != status or got != expected:
            failures += 1
            print(f"FAIL {name}: exit {code} (expected {status})\n{got}\n--- expected\n{expected}")
        else:
            print(f"ok   {name}")
    return failures


def slurm_case(binary):
    """With --slurm, the node comes from SLURM_NODEID."""
    env = dict(os.environ, SLURM_JOB_NODELIST="gpu[01-02],cpu7", SLURM_TASKS_PER_NODE="8,4,2", SLURM_NODEID="2")
    out, err, code = run(binary, ["argv", "--slurm", "t.py"], env)
    expected = "torchrun\n--nnodes=3\n--node_rank=2\n--nproc_per_node=2\n--max_restarts=0\n--master_addr=gpu01\n--master_port=29500\nt.py\n"
    ok = code == 0 and out == expected
    print(("ok   " if ok else f"FAIL slurm: {code} {out!r} {err!r}\nFAIL ") + "slurm_nodeid")
    return 0 if ok else 1


def exec_e2e(binary, worker, work):
    """hetlaunch exec starts real torchrun agents for a heterogeneous hostfile; the job completes."""
    work = pathlib.Path(work)
    shutil.rmtree(work, ignore_errors=True)
    work.mkdir(parents=True)
    hostfile = work / "hostfile"
    hostfile.write_text("127.0.0.1 slots=3\n127.0.0.2 slots=1\n127.0.0.3 slots=2\n")
    with tempfile.TemporaryDirectory() as d:
        import socket
        s = socket.socket()
        s.bind(("127.0.0.1", 0))
        port = str(s.getsockname()[1])
        s.close()
    env = {k: v for k, v in os.environ.items() if k not in ("OMP_NUM_THREADS",) and not k.startswith("PET_")}
    agents = []
    for node in range(3):
        log = open(work / f"agent-{node}.log", "w")
        agents.append(subprocess.Popen(
            [binary, "exec", "--node", str(node), "--hostfile", str(hostfile), "--master-addr", "127.0.0.1",
             "--master-port", port, "--program", "/usr/bin/torchrun", "--torchrun-arg", "--redirects",
             "--torchrun-arg", "2", "--torchrun-arg", "--tee", "--torchrun-arg", "2", "--",
             worker, str(work), binary, "check-env", "--hostfile", str(hostfile)],
            stdout=log, stderr=subprocess.STDOUT, env=env, start_new_session=True))
    failures = 0
    for a in agents:
        try:
            if a.wait(timeout=240) != 0:
                failures += 1
        except subprocess.TimeoutExpired:
            os.killpg(a.pid, 9)
            failures += 1
    for rank in range(6):
        record = work / f"worker-{rank}.env"
        values = dict(line.split("=", 1) for line in record.read_text().splitlines()) if record.exists() else {}
        if values.get("SUM") != "21" or values.get("RANK") != str(rank) or values.get("WORLD_SIZE") != "6":
            failures += 1
            print(f"FAIL exec e2e: worker {rank} recorded {values}")
    if failures:
        for node in range(3):
            print((work / f"agent-{node}.log").read_text())
    print(("ok   " if not failures else "FAIL ") + "exec_e2e: 3 torchrun agents (3 + 1 + 2 workers) started by hetlaunch exec")
    return failures


def main():
    binary = sys.argv[1]
    update = "--update" in sys.argv
    failures = golden_cases(binary, update) + slurm_case(binary)
    if "--e2e" in sys.argv:
        i = sys.argv.index("--e2e")
        failures += exec_e2e(binary, sys.argv[i + 1], sys.argv[i + 2])
    print(f"cli: {failures} failures")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
