#!/usr/bin/env python3
"""The hetlaunch command's behaviour, pinned by golden files: stdout, stderr and the exit status
of each case. `--update` rewrites the golden files from the current output (review the diff).
`--e2e` runs `hetlaunch exec` for real instead: one torchrun agent per node of a heterogeneous
hostfile on loopback, whose workers check their environment with `hetlaunch check-env` and join a
gloo all_reduce, and `run --local`; and compresses host lists beside the fan-out references, which
must be installed then. `--e2e-only` (another torch's Python, tests/chroot) runs the two jobs alone.

usage: test_cli.py HETLAUNCH [--update]
       test_cli.py HETLAUNCH --e2e WORKER_PY WORK_DIR
       test_cli.py HETLAUNCH --e2e-only WORKER_PY WORK_DIR
"""
import json
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
from worker_records import rank_problems, read_records  # noqa: E402
import processes  # noqa: E402
import torchrun_flags  # noqa: E402
from harness import Suite  # noqa: E402

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
    "env_virtual_local_rank": (["env", "--node", "0", "--local-rank", "1", "--hosts", "a:2,b:1", "--torchrun-arg",
                                "--virtual-local-rank"], 1),
    "env_agent_direct": (["env", "--node", "0", "--local-rank", "1", "--direct", "--agent-env"], 2),
    "env_c10d": (["env", "--node", "0", "--local-rank", "0", "--hosts", "a:2,b:1", "--rdzv", "c10d",
                  "--rdzv-id", "x"], 1),
    "env_bad_format": (["env", "--node", "0", "--local-rank", "0", "--format", "yaml"], 2),
    # Work shares: weights from a hostfile or --weight, a global batch split over nodes and ranks.
    "shares_plan": (["plan", "--hostfile", "@DATA@/weights.hostfile", "--global-batch", "1024"], 0),
    "ceilings_plan": (["plan", "--hostfile", "@DATA@/ceilings.hostfile", "--global-batch", "600", "--max-batch",
                       "a100-1=48", "train.py"], 0),
    "ceilings_plan_json": (["plan", "--hostfile", "@DATA@/ceilings.hostfile", "--json", "train.py"], 0),
    "ceilings_env": (["env", "--hostfile", "@DATA@/ceilings.hostfile", "--node", "2", "--local-rank", "1", "train.py"], 0),
    "ceilings_bad_hostfile": (["plan", "--hostfile", "@DATA@/bad_ceiling.hostfile"], 1),
    "ceilings_bad_flag": (["plan", "--hosts", "a:1", "--max-batch", "a=0"], 1),
    "ceilings_flag_unknown_host": (["plan", "--hosts", "a:1", "--max-batch", "b=4"], 1),
    "ceilings_flag_not_hosts_equals": (["plan", "--hosts", "a:1", "--max-batch", "4"], 1),
    "shares_plan_json": (["plan", "--hosts", "a100-0:8,a100-1:8,t4-0:4", "--weight", "a100-[0-1]=3", "--global-batch", "333",
                          "--json"], 0),
    # CPU binding: torchrun starts each worker through `hetlaunch bind`; a bad mode is a usage error.
    "binding_plan": (["plan", "--hosts", "a100:8,t4:4", "--numa-binding", "exclusive", "--bind-program",
                      "/opt/hetlaunch/bin/hetlaunch", "--python", "/venv/bin/python", "--", "train.py", "--lr", "0.1"], 0),
    "binding_plan_json": (["plan", "--hosts", "a:2,b:1", "--numa-binding", "core-complex", "--json"], 0),
    "binding_no_python": (["argv", "--node", "1", "--hosts", "a:2,b:1", "--numa-binding", "node", "--torchrun-arg",
                           "--no-python", "--", "./train.sh"], 0),
    "binding_run_path": (["plan", "--hosts", "a:2,b:1", "--numa-binding", "node", "--torchrun-arg", "--run-path"], 1),
    "binding_accelerate": (["accelerate", "--node", "0", "--hosts", "a:2,b:1", "--numa-binding", "node", "train.py"], 1),
    "binding_sbatch": (["sbatch", "--group", "1:8", "--group", "2:4", "--hetlaunch", "/opt/hl/hetlaunch", "--numa-binding",
                        "socket", "train.py"], 0),
    "binding_jobset": (["jobset", "--name", "mixed", "--image", "repo/train:1", "--group", "1:8", "--group", "1:4",
                        "--numa-binding", "exclusive", "--bind-program", "/usr/local/bin/hetlaunch", "train.py"], 0),
    # sbatch --exclude-failed: --no-kill and a restart on the nodes the job still has; one group only.
    "sbatch_exclude_failed": (["sbatch", "--group", "3:4:2", "--restarts", "2", "--exclude-failed", "--min-nodes", "2",
                               "--global-batch", "48", "--", "train.py"], 0),
    "sbatch_exclude_failed_hetjob": (["sbatch", "--group", "1:8", "--group", "2:4", "--restarts", "1", "--exclude-failed",
                                      "train.py"], 1),
    "sbatch_exclude_failed_alone": (["sbatch", "--group", "2:4", "--exclude-failed", "train.py"], 2),
    "sbatch_min_nodes_too_many": (["sbatch", "--group", "2:4", "--restarts", "1", "--exclude-failed", "--min-nodes", "3",
                                   "train.py"], 1),
    # One --format a command; --json and --null are its aliases.
    "format_plan_json": (["plan", "--hosts", "a:2,b:1", "--format", "json"], 0),
    "format_argv_null": (["argv", "--node", "1", "--hosts", "a:2,b:1", "--format", "null", "train.py"], 0),
    "format_env_json_alias": (["env", "--node", "1", "--local-rank", "0", "--hosts", "a:2,b:1", "--json"], 0),
    "format_plan_null": (["plan", "--null"], 2),
    "format_jobset_text": (["jobset", "--name", "x", "--image", "i", "--group", "1:1", "--format", "text", "t.py"], 2),
    "binding_bad_mode": (["plan", "--numa-binding", "numa"], 2),
    "binding_needs_mode": (["cpus"], 2),
    "shares_weights_only": (["plan", "--hosts", "a:2,b:2", "--weight", "b=2.5"], 0),
    "shares_later_weight_wins": (["plan", "--hosts", "n1:2,n2:2,n3:2", "--weight", "n[1-3]=2", "--weight", "n2=0.5",
                                  "--global-batch", "20"], 0),
    "shares_env": (["env", "--node", "1", "--local-rank", "0", "--hosts", "a:3,b:1", "--weight", "b=3",
                    "--global-batch", "13"], 0),
    "shares_argv_unchanged": (["argv", "--node", "1", "--hosts", "a:3,b:1", "--weight", "b=3", "--global-batch", "13",
                               "t.py"], 0),
    "shares_accelerate": (["accelerate", "--node", "1", "--hosts", "a:3,b:1", "--weight", "b=3", "--global-batch", "13",
                           "t.py"], 0),
    "shares_sbatch": (["sbatch", "--group", "2:8:3", "--group", "1:4", "--group", "1:2:1.5", "--global-batch", "512",
                       "train.py"], 0),
    "shares_sbatch_one_group": (["sbatch", "--group", "2:4:2", "--global-batch", "64", "train.py"], 0),
    "shares_too_small": (["plan", "--hosts", "a:3,b:1", "--global-batch", "3"], 1),
    "shares_negative": (["plan", "--hosts", "a:3,b:1", "--global-batch", "-8"], 2),
    "shares_not_a_number": (["plan", "--global-batch", "lots"], 2),
    "shares_bad_weight_hostfile": (["plan", "--hostfile", "@DATA@/bad_weight.hostfile"], 1),
    "shares_weight_zero": (["plan", "--hosts", "a:1", "--weight", "a=0"], 1),
    "shares_weight_nan": (["plan", "--hosts", "a:1", "--weight", "a=nan"], 1),
    "shares_weight_large": (["plan", "--hosts", "a:1", "--weight", "a=1000000.5"], 1),
    "shares_weight_negative": (["plan", "--hosts", "a:1", "--weight", "a=-2"], 1),
    "shares_weight_no_host": (["plan", "--hosts", "a:1,b:1", "--weight", "c=2"], 1),
    "shares_weight_not_pair": (["plan", "--hosts", "a:1", "--weight", "2"], 1),
    "shares_sbatch_bad_weight": (["sbatch", "--group", "1:4:0.0000001", "t.py"], 1),
    "shares_sbatch_too_small": (["sbatch", "--group", "2:4", "--global-batch", "7", "t.py"], 1),
    "shares_run_dry_run": (["run", "--hosts", "a:3,b:1", "--weight", "b=3", "--global-batch", "13", "--dry-run",
                            "--chdir", "/work", "t.py"], 0),
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
    # Each argument is a host list, as `scontrol show hostlist` reads its one.
    "compress_empty": (["compress", ""], 0),
    "compress_empty_items": (["compress", "a,,b"], 0),
    "compress_lists": (["compress", "n[1-3],n4", "", "x y", "n5"], 0),
    "compress_bad": (["compress", "a", "b[1-"], 1),
    "accelerate": (["accelerate", "--node", "1", "--hosts", "gpu-a:8,gpu-b:2", "train.py"], 0),
    "unknown_command": (["launch"], 2),
    # The command table: --flag=value, flags a command does not take, switches given a value.
    "flag_equals": (["argv", "--node=1", "--hosts=a:2,b:1", "--master-port=29613", "t.py"], 0),
    # torchrun's own restarts of a static multi-node job: a warning pointing to run --restarts.
    "max_restarts_warning": (["argv", "--node", "1", "--hosts", "a:2,b:1", "--max-restarts", "1", "t.py"], 0),
    "max_restarts_one_node": (["argv", "--node", "0", "--hosts", "a:2", "--max-restarts", "1", "t.py"], 0),
    "run_exclude_failed_alone": (["run", "--hosts", "a:2,b:1", "--exclude-failed", "t.py"], 2),
    "run_min_nodes_above_plan": (["run", "--hosts", "a:2,b:1", "--restarts", "1", "--exclude-failed", "--min-nodes", "3",
                                  "t.py"], 1),
    "flag_not_accepted": (["plan", "--local-rank", "0"], 2),
    "switch_with_value": (["plan", "--json=yes"], 2),
    "flag_before_command": (["--hosts", "a:1", "plan"], 2),
    "run_help": (["run", "--help"], 0),
    # slots=auto is for the commands that can ask the host.
    "plan_auto_refused": (["plan", "--hosts", "a:auto,b:2"], 1),
    "check_auto_refused": (["check", "--hostfile", "@DATA@/auto.hostfile"], 1),
    # run: everything is validated before any host is contacted; --dry-run prints the commands.
    "run_dry_run": (["run", "--hosts", "gpu-a:2,gpu-b:1", "--chdir", "/srv/job", "--env", "NCCL_DEBUG=INFO",
                     "--ssh-arg", "-p", "--ssh-arg", "2222", "--dry-run", "--", "train.py", "it's $(x)"], 0),
    "binding_run_dry_run": (["run", "--hosts", "gpu-a:2,gpu-b:1", "--include", "gpu-a:1@gpu-b", "--numa-binding", "socket", "--chdir", "/srv/job",
                             "--dry-run", "--", "train.py"], 0),
    "run_no_script": (["run", "--hosts", "a:1"], 2),
    "run_bad_hostfile": (["run", "--hostfile", "@DATA@/zero.hostfile", "--ssh", "/nonexistent/ssh", "t.py"], 1),
    # One duplicate-host policy for every input.
    "check_duplicate_allowed": (["check", "--hosts", "a:1,A:2", "--allow-duplicate-hosts"], 0),
    "run_bad_env": (["run", "--hosts", "a:1", "--env", "1X=2", "--dry-run", "t.py"], 1),
    # docs/slurm.md's recipe (tests/slurm/cluster_test.py submits such scripts to a real Slurm).
    "sbatch_readme": (["sbatch", "--group", "2:8", "--group", "1:4", "--partition", "gpu", "--time", "1:00:00",
                       "--sbatch-arg=--job-name=train", "--master-port", "29500", "--", "train.py", "--epochs", "3"], 0),
    "sbatch_quoting": (["sbatch", "--group", "1:1", "--hetlaunch", "/opt/het launch/bin/hetlaunch", "--torchrun-arg",
                        "--tee=2", "-m", "--", "pkg.train", "it's", "$(x)"], 0),
    "sbatch_help": (["sbatch", "--help"], 0),
    "sbatch_no_group": (["sbatch", "t.py"], 2),
    "sbatch_bad_group": (["sbatch", "--group", "2x8", "t.py"], 2),
    "sbatch_zero_gpus": (["sbatch", "--group", "2:0", "t.py"], 2),
    "sbatch_no_script": (["sbatch", "--group", "2:8"], 2),
    "sbatch_too_many_workers": (["sbatch", "--group", "1073741824:1073741824", "t.py"], 1),
    "sbatch_line_break": (["sbatch", "--group", "1:1", "--sbatch-arg", "--comment=a\nb", "t.py"], 2),
    "sbatch_no_input": (["sbatch", "--group", "1:1", "--slurm", "t.py"], 2),
    "sbatch_bad_options": (["sbatch", "--group", "1:1", "--torchrun-arg", "--nnodes=2", "--master-addr", "a b", "t.py"], 1),
}


def run(binary, args, env=None):
    args = [a.replace("@DATA@", str(DATA)) for a in args]
    r = subprocess.run([binary] + args, capture_output=True, env=env, timeout=60)
    # Golden files hold the data directory as @DATA@, so they do not depend on the checkout.
    clean = lambda b: b.decode("utf-8", "replace").replace(str(DATA), "@DATA@")
    return clean(r.stdout), clean(r.stderr), r.returncode


def golden_cases(suite, binary, update):
    # Without the variables `run` forwards, so that its commands do not depend on the caller's.
    forwarded = ("SLURM_", "NCCL_", "GLOO_", "TORCH_", "UCX_", "FI_", "PYTHONPATH")
    env = {k: v for k, v in os.environ.items() if not k.startswith(forwarded)}
    for name, (args, status) in CASES.items():
        out, err, code = run(binary, args, env)
        got = f"$ hetlaunch {' '.join(args)}\n--- exit {code}\n--- stdout\n{out}--- stderr\n{err}"
        path = GOLDEN / f"{name}.txt"
        if update:
            path.write_text(got)
        expected = path.read_text() if path.exists() else "<no golden file>"
        problems = [f"exit {code} (expected {status})" if code != status else "",
                    "the output differs from its golden file" if got != expected else ""]
        suite.report(name, problems, details=f"{got}\n--- expected\n{expected}")


# Host lists whose compressed form scontrol defines: empty lists and items, separators, order,
# repeats, ranges and widths.
COMPRESS_PEER_INPUTS = ["", ",", " ", "a,,b", ",a", "a,", "a b", "a, ,b", "n[1-3],n4", "n3,n1,n1,n2", "n01,n2,n003",
                        "n[01-02],n3", "a1,b1,a2"]


def compress_peers(suite, binary, required):
    """`hetlaunch compress X` prints what `scontrol show hostlist X` prints, exit status included.
    Slurm's scontrol needs only a two-line slurm.conf for it; without scontrol the case fails when
    the real components are required, and says it did not run otherwise."""
    scontrol = shutil.which("scontrol")
    if not scontrol:
        suite.report("compress_matches_scontrol", ["scontrol is not installed (Debian: slurm-client)"] if required
                     else [])
        if not required:
            print("     (scontrol is not installed: compared with the golden files only)")
        return
    with tempfile.TemporaryDirectory() as tmp:
        conf = pathlib.Path(tmp) / "slurm.conf"
        conf.write_text("ClusterName=hetlaunch\nSlurmctldHost=localhost\n")
        env = dict(os.environ, SLURM_CONF=str(conf))
        problems = []
        for text in COMPRESS_PEER_INPUTS:
            theirs = subprocess.run([scontrol, "show", "hostlist", text], capture_output=True, text=True, env=env)
            ours = subprocess.run([binary, "compress", text], capture_output=True, text=True)
            if (ours.returncode, ours.stdout) != (theirs.returncode, theirs.stdout):
                problems.append(f"{text!r}: hetlaunch {ours.returncode} {ours.stdout!r} {ours.stderr!r}, "
                                f"scontrol {theirs.returncode} {theirs.stdout!r}")
        suite.report(f"compress_matches_scontrol ({len(COMPRESS_PEER_INPUTS)} host lists)", problems)


def slurm_case(suite, binary):
    """With --slurm, the node comes from SLURM_NODEID."""
    env = dict(os.environ, SLURM_JOB_NODELIST="gpu[01-02],cpu7", SLURM_TASKS_PER_NODE="8,4,2", SLURM_NODEID="2")
    out, err, code = run(binary, ["argv", "--slurm", "t.py"], env)
    expected = "torchrun\n--nnodes=3\n--node_rank=2\n--nproc_per_node=2\n--max_restarts=0\n--master_addr=gpu01\n--master_port=29500\nt.py\n"
    ok = code == 0 and out == expected
    suite.report("slurm_nodeid", [] if ok else [f"{code} {out!r} {err!r}"])
    # A Slurm job is validated like every other input, with the same duplicate-host policy.
    env = dict(os.environ, SLURM_JOB_NODELIST="a,A", SLURM_TASKS_PER_NODE="1,2")
    refused = run(binary, ["check", "--slurm"], env)
    allowed = run(binary, ["check", "--slurm", "--allow-duplicate-hosts"], env)
    policy = refused[2] == 1 and "allow_duplicate_hosts" in refused[1] and allowed[2] == 0
    suite.report("slurm_duplicate_policy", [] if policy else [f"{refused} {allowed}"])
    # A step that cannot start one torchrun a node: exec refuses before starting anything.
    env = dict(os.environ, SLURM_JOB_NODELIST="a[1-3]", SLURM_TASKS_PER_NODE="4,2,1", SLURM_NODEID="0",
               SLURM_STEP_NUM_NODES="3", SLURM_STEP_TASKS_PER_NODE="4,2,1")
    out, err, code = run(binary, ["exec", "--slurm", "--program", "/bin/echo", "t.py"], env)
    step = code == 1 and out == "" and "this step runs '4,2,1' tasks on its nodes (SLURM_STEP_TASKS_PER_NODE)" in err
    suite.report("slurm_step_refused", [] if step else [f"{code} {out!r} {err!r}"])
    # --agent-env: what torchrun passes on from the environment it is started with.
    env = dict(os.environ, OMP_NUM_THREADS="4", TORCH_NCCL_ASYNC_ERROR_HANDLING="3")
    out, err, code = run(binary, ["env", "--node", "2", "--local-rank", "0", "--agent-env"], env)
    agent = code == 0 and "export OMP_NUM_THREADS=4\n" in out and "export TORCH_NCCL_ASYNC_ERROR_HANDLING=3\n" in out
    suite.report("env_agent_env", [] if agent else [f"{code} {out!r} {err!r}"])
    # docs/slurm.md shows `hetlaunch sbatch`'s output exactly as it is.
    readme = (HERE.parents[1] / "docs" / "slurm.md").read_text()
    shown = run(binary, CASES["sbatch_readme"][0], os.environ)[0]
    in_readme = shown in readme
    suite.report("sbatch_readme_matches",
                 [] if in_readme else ["docs/slurm.md's sbatch script is not what `hetlaunch sbatch` prints"])
    # A script with weights plans on Slurm 19.05 and earlier too, whose components' variables are
    # named *_PACK_GROUP_<n> only: the plan line, run by bash with `set -u` as the script runs it.
    script = run(binary, ["sbatch", "--hetlaunch", os.path.abspath(binary), "--group", "2:8:3", "--group", "1:4",
                          "--global-batch", "64", "--", "train.py"], os.environ)[0].splitlines()
    plan_line = script[script.index("# The plan in the job log before anything starts; an inconsistent job stops here.") + 1]
    pack = {"PATH": "/usr/bin:/bin", "SLURM_JOB_ID": "1", "SLURM_PACK_SIZE": "2", "SLURM_JOB_NODELIST": "a[1-2]",
            "SLURM_TASKS_PER_NODE": "8(x2)", "SLURM_JOB_NODELIST_PACK_GROUP_0": "a[1-2]",
            "SLURM_TASKS_PER_NODE_PACK_GROUP_0": "8(x2)", "SLURM_JOB_NODELIST_PACK_GROUP_1": "b1",
            "SLURM_TASKS_PER_NODE_PACK_GROUP_1": "4"}
    r = subprocess.run(["bash", "-c", "set -eu; " + plan_line.replace(" plan ", " plan --json ", 1)], env=pack,
                       capture_output=True, text=True)
    try:
        nodes = [(n["host"], n["weight"], n["node_batch"]) for n in json.loads(r.stdout)["nodes"]]
    except ValueError:
        nodes = None
    packed = r.returncode == 0 and nodes == [("a1", "3", 28), ("a2", "3", 28), ("b1", "1", 8)]
    suite.report("sbatch_weights_pack_group", [] if packed else [f"FAIL {r.returncode} {r.stdout!r} {r.stderr!r}"])


def limited():
    """In the child: at most 1 GiB of address space, so a runaway allocation fails fast."""
    import resource
    resource.setrlimit(resource.RLIMIT_AS, (1 << 30, 1 << 30))


def hostile_cases(suite, binary):
    """Hostile input, each case under 1 GiB and 10 seconds: the right answer or a clear error."""
    empty_env = {k: v for k, v in os.environ.items() if not k.startswith("SLURM_") and k != "TORCH_ELASTIC_WORKER_IDENTICAL"}
    # AddressSanitizer reserves terabytes of address space and cannot start under RLIMIT_AS; a
    # sanitized build is bounded by the sanitizer's own resident-memory limit instead.
    probe = subprocess.run([binary, "--version"], capture_output=True, preexec_fn=limited)
    sanitized = b"AddressSanitizer" in probe.stderr
    limit = None if sanitized else limited
    if sanitized:
        options = os.environ.get("ASAN_OPTIONS", "")
        empty_env["ASAN_OPTIONS"] = (options + ":" if options else "") + "hard_rss_limit_mb=1024"

    def case(name, args, status, stderr_has="", stdout=None, env=None, check=None, out_file=None, timeout=10,
             stdout_has=None):
        env = dict(env, ASAN_OPTIONS=empty_env["ASAN_OPTIONS"]) if env and sanitized else env
        try:
            with open(out_file, "wb") if out_file else open(os.devnull, "wb") as sink:
                r = subprocess.run([binary] + args, stdout=sink if out_file else subprocess.PIPE,
                                   stderr=subprocess.PIPE, env=env or empty_env, timeout=timeout, preexec_fn=limit)
            out = r.stdout or b""
            err = r.stderr.decode("utf-8", "replace")
            ok = r.returncode == status and stderr_has in err and (stdout is None or out == stdout) and \
                (stdout_has is None or stdout_has in out)
            ok = ok and (check is None or check(out))
        except subprocess.TimeoutExpired:
            ok, err, r = False, "timed out", None
        suite.report(name, [] if ok else [f"exit {r and r.returncode} (expected {status}), stderr {err[:300]!r}"])

    case("expand_wrapping_range", ["expand", "n[0-18446744073709551615],m"], 1, "too many hosts in range")
    case("expand_number_past_2^64", ["expand", "n99999999999999999999"], 1, "larger than 2^64 - 1")
    case("expand_many_brackets", ["expand", "a[1]" * 30000], 0, stdout=b"a1" * 30000 + b"\n")
    case("expand_wide_names", ["expand", "x" * 120000 + "[0-65535]"], 1, "more than 134217728 bytes, the limit (max_bytes")
    case("expand_max_bytes_raised", ["expand", "--max-bytes", "1000000000", "x" * 120000 + "[0-65535]"], 1,
         "more than 1000000000 bytes")
    case("expand_max_hosts", ["expand", "--max-hosts", "3", "a[1-4]"], 1, "more than 3 hosts, the limit (max_hosts")
    case("plan_huge_node_one_device", ["plan", "--hosts", "a:2147483647", "--include", "a:0"], 0)
    case("plan_huge_node_whole", ["plan", "--hosts", "a:2147483647", "--include", "a"], 1, "more than 65536")
    case("hostfile_directory", ["check", "--hostfile", str(DATA)], 1, "cannot read: it is a directory")
    case("hostfile_proc_mem", ["check", "--hostfile", "/proc/self/mem"], 1, "cannot read: Input/output error")
    # An endless file is read up to the limit, 256 MiB, and no further: about 2 s of CPU, which a
    # loaded machine can stretch well past the other cases' 10 s.
    case("hostfile_endless", ["check", "--hostfile", "/dev/zero"], 1, "is larger than 268435456 bytes, the limit of a hostfile",
         timeout=60)
    case("env_file_endless", ["run", "--hosts", "a:1", "--env-file", "/dev/zero", "--dry-run", "--", "t.py"], 1,
         "/dev/zero: is larger than 268435456 bytes, the limit of an env file", timeout=60)
    case("hostfile_bom", ["check", "--hostfile", str(DATA / "bom.hostfile")], 1,
         "bom.hostfile:1:1: the file starts with a UTF-8 byte order mark (U+FEFF)")
    for command in (["plan"], ["plan", "--json"], ["argv", "--node", "0", "t.py"], ["env", "--node", "0", "--local-rank", "0"],
                    ["check"], ["expand", "a[1-3]"], ["compress", "a1", "a2"], ["accelerate", "--node", "0", "t.py"],
                    ["--help"], ["--version"], ["plan", "--help"]):
        case("full_disk_" + "_".join(c.strip("-") for c in command), command, 1,
             "cannot write the output: No space left on device", out_file="/dev/full")
    slurm = dict(empty_env, SLURM_JOB_NODELIST="n[1-3]", SLURM_TASKS_PER_NODE="2(x3)")
    case("slurm_excluded_node", ["argv", "--slurm", "--exclude", "n1", "t.py"], 1,
         "this is the job's node 0 (SLURM_NODEID), host 'n1', which --exclude leaves out",
         env=dict(slurm, SLURM_NODEID="0"))
    case("slurm_filtered_node", ["argv", "--slurm", "--exclude", "n1", "t.py"], 0,
         stdout=b"torchrun\n--nnodes=2\n--node_rank=0\n--nproc_per_node=2\n--max_restarts=0\n--master_addr=n2\n"
                b"--master_port=29500\nt.py\n", env=dict(slurm, SLURM_NODEID="1"))
    case("slurm_filtered_env", ["env", "--slurm", "--exclude", "n1", "--local-rank", "1"], 0,
         check=lambda out: b"export RANK=3\n" in out and b"export GROUP_RANK=1\n" in out and b"MASTER_ADDR=n2\n" in out,
         env=dict(slurm, SLURM_NODEID="2"))
    case("slurm_filtered_devices", ["argv", "--slurm", "--exclude", "n2:0", "t.py"], 0,
         check=lambda out: b"--nproc_per_node=1\n" in out and b"--node_rank=1\n" in out, env=dict(slurm, SLURM_NODEID="1"))
    case("check_env_overflowing_plan", ["check-env", "--hosts", "a:2147483647,b:1"], 1, "world size would be 2147483648")
    # check-env with work shares: the four variables must be there and be the plan's.
    shares = ["check-env", "--hosts", "a:3,b:1", "--weight", "b=3", "--global-batch", "13"]
    worker = dict(empty_env, WORLD_SIZE="4", GROUP_RANK="1", LOCAL_WORLD_SIZE="1", RANK="3", LOCAL_RANK="0",
                  HETLAUNCH_GLOBAL_BATCH="13", HETLAUNCH_NODE_BATCH="5", HETLAUNCH_NODE_BATCH_OFFSET="8",
                  HETLAUNCH_NODE_HOST="b")
    case("check_env_shares", shares, 0, env=worker)
    case("check_env_shares_host", shares, 1, "node 1 ('b'): HETLAUNCH_NODE_HOST is 'a' but the plan gives 'b'",
         env=dict(worker, HETLAUNCH_NODE_HOST="a"))
    case("check_env_shares_differ", shares, 1, "node 1 ('b'): HETLAUNCH_NODE_BATCH is '4' but the plan gives 5",
         env=dict(worker, HETLAUNCH_NODE_BATCH="4"))
    case("check_env_shares_global", shares, 1, "HETLAUNCH_GLOBAL_BATCH is '12' but the plan gives 13",
         env=dict(worker, HETLAUNCH_GLOBAL_BATCH="12"))
    case("check_env_shares_missing", shares, 1, "HETLAUNCH_NODE_BATCH_OFFSET is not set",
         env={k: v for k, v in worker.items() if k != "HETLAUNCH_NODE_BATCH_OFFSET"})
    case("check_env_shares_not_a_number", shares, 1, "HETLAUNCH_NODE_BATCH='5x' is not an integer",
         env=dict(worker, HETLAUNCH_NODE_BATCH="5x"))
    # Without a global batch a share variable has no business in a worker: an inherited one is named.
    case("check_env_without_shares", shares[:5], 1,
         "HETLAUNCH_GLOBAL_BATCH is '13' but the plan has no global batch: the worker would read a work share "
         "that no launch gave it (an inherited variable?)", env=worker)
    case("check_env_without_shares_each", shares[:5], 1, "HETLAUNCH_NODE_BATCH_OFFSET is '8' but the plan has no",
         env={k: v for k, v in worker.items() if k not in ("HETLAUNCH_GLOBAL_BATCH", "HETLAUNCH_NODE_BATCH")})
    case("check_env_without_shares_clean", shares[:5], 0,
         env={k: v for k, v in worker.items() if not k.startswith("HETLAUNCH_")})
    # exec hands torchrun no share the plan does not have (the "torchrun" here prints what it got).
    show = ["--program", "sh", "--program", "-c", "--program", "env | grep ^HETLAUNCH_ | sort; exit 0"]
    inherited = dict(empty_env, HETLAUNCH_GLOBAL_BATCH="64", HETLAUNCH_NODE_BATCH="32", HETLAUNCH_NODE_BATCH_OFFSET="0")
    case("exec_drops_inherited_shares", ["exec", "--hosts", "127.0.0.1:1", "--node", "0", *show, "--", "t.py"], 0,
         "hetlaunch: unsetting HETLAUNCH_GLOBAL_BATCH: the plan has no global batch", stdout=b"", env=inherited)
    case("exec_replaces_inherited_shares", ["exec", "--hosts", "127.0.0.1:1", "--node", "0", "--global-batch", "8", *show,
                                            "--", "t.py"], 0,
         stdout=b"HETLAUNCH_GLOBAL_BATCH=8\nHETLAUNCH_NODE_BATCH=8\nHETLAUNCH_NODE_BATCH_OFFSET=0\n"
                b"HETLAUNCH_NODE_HOST=127.0.0.1\n", env=inherited)
    # A failure of this machine (the ssh program cannot run) is no host's: no host is left out, and
    # no restart is tried, since every attempt would fail alike.
    case("run_ssh_missing", ["run", "--hosts", "h1:2,h2:1,h3:1", "--ssh", "/nonexistent/ssh", "--restarts", "3",
                             "--exclude-failed", "--", "t.py"], 1,
         "--ssh '/nonexistent/ssh': cannot run it here: No such file or directory")
    case("run_ssh_missing_on_path", ["run", "--hosts", "h1:1", "--ssh", "no-such-ssh-client", "--", "t.py"], 1,
         "--ssh 'no-such-ssh-client': cannot run it here: no such program on PATH")
    case("run_ssh_fails_to_start", ["run", "--hosts", "h1:2,h2:1,h3:1", "--ssh", str(DATA / "bad-interpreter"),
                                    "--restarts", "3", "--exclude-failed", "--", "t.py"], 127,
         "not on a host: not restarting, every attempt would fail the same way",
         check=lambda out: out == b"")
    case("run_ssh_fails_to_start_once", ["run", "--hosts", "h1:1,h2:1", "--ssh", str(DATA / "bad-interpreter"),
                                         "--", "t.py"], 127, "hetlaunch: node 1 ('h2'): not started")
    # The dry run shows what the first attempt runs, and refuses what the run refuses.
    case("run_dry_run_restart_count", ["run", "--hosts", "h1:1", "--restarts", "2", "--dry-run", "--", "t.py"], 0,
         check=lambda out: b" HETLAUNCH_RESTART_COUNT=0 " in out)
    case("run_dry_run_min_nodes", ["run", "--hosts", "h1:1,h2:1", "--restarts", "2", "--exclude-failed", "--min-nodes",
                                   "3", "--dry-run", "--", "t.py"], 1, "--min-nodes 3 is more than the plan's 2 nodes")
    case("run_min_nodes_without_exclude_failed", ["run", "--hosts", "h1:1,h2:1", "--restarts", "2", "--min-nodes", "1",
                                                  "--", "t.py"], 2,
         "--min-nodes needs --exclude-failed (the job shrinks only then)")
    # An sbatch option that takes a value, given without one, would take the next #SBATCH line as its
    # value (sbatch reads a component's lines as one argv): refused. An option and its value in one
    # --sbatch-arg become one line of two words.
    sbatch = ["sbatch", "--group", "1:1", "--partition", "gpu"]
    for given in ("-J", "--job-name", "--job", "-HJ", "-A  ", "--account"):
        case(f"sbatch_arg_without_value_{given.strip().strip('-').lower()}", [*sbatch, "--sbatch-arg", given, "--", "t.py"],
             2, f"--sbatch-arg '{given}': sbatch's ")
    case("sbatch_arg_without_value_message", [*sbatch, "--sbatch-arg=-J", "--", "t.py"], 2,
         "--sbatch-arg '-J': sbatch's -J takes a value, which must be in the same --sbatch-arg (\"-JVALUE\" or "
         "\"-J VALUE\"): alone, it would take the next #SBATCH line as its value")
    for given, line in (("-A acct", b"#SBATCH -A acct\n#SBATCH --partition=gpu\n"),
                        ("--account  my acct", b'#SBATCH --account "my acct"\n#SBATCH --partition=gpu\n'),
                        ("-Aacct", b"#SBATCH -Aacct\n"), ("-HJname", b"#SBATCH -HJname\n"),
                        ("--exclusive", b"#SBATCH --exclusive\n#SBATCH --partition=gpu\n"),
                        ("--job-name=a b", b'#SBATCH "--job-name=a b"\n')):
        case(f"sbatch_arg_{given.split()[0].strip('-').lower()}_{len(given)}", [*sbatch, "--sbatch-arg", given, "--", "t.py"],
             0, check=lambda out, line=line: line in out)
    # Smaller messages: a host list item with two colons; a global batch's problem named by its flag.
    case("hosts_two_colons", ["plan", "--hosts", "a:2:3"], 1,
         "--hosts:1:1: 'a:2:3' has more than one ':'; expected host:slots")
    case("hosts_ipv6_literal", ["plan", "--hosts", "fe80::1:3"], 1, "IPv6 addresses cannot be written in host:slots lists")
    case("global_batch_named_by_its_flag", ["plan", "--hostfile", str(DATA / "mixed.hostfile"), "--global-batch", "2"], 1,
         "hetlaunch: --global-batch: the global batch 2 is smaller than the world size")
    case("weights_without_global_batch_noted", ["plan", "--hosts", "a:2,b:1", "--weight", "a=2"], 0,
         "hetlaunch: note: the nodes' weights have no effect without --global-batch")
    # plan --json's commands start a node as it must be started: with its work share's variables.
    case("plan_json_commands_carry_shares", ["plan", "--json", "--hosts", "a:2,b:1", "--global-batch", "6", "t.py"], 0,
         check=lambda out: b'"env": {"HETLAUNCH_GLOBAL_BATCH": "6", "HETLAUNCH_NODE_BATCH": "2", '
                           b'"HETLAUNCH_NODE_BATCH_OFFSET": "4", "HETLAUNCH_NODE_HOST": "b"}, "command": '
                           b'"HETLAUNCH_GLOBAL_BATCH=6 HETLAUNCH_NODE_BATCH=2 HETLAUNCH_NODE_BATCH_OFFSET=4 '
                           b'HETLAUNCH_NODE_HOST=b torchrun --nnodes=2 --node_rank=1' in out)
    # The plan's own variables cannot be given by --env, an env file, or jobset --env.
    for name in ("HETLAUNCH_GLOBAL_BATCH", "HETLAUNCH_NODE_BATCH", "HETLAUNCH_NODE_BATCH_OFFSET", "HETLAUNCH_NODE_HOST",
                 "HETLAUNCH_RESTART_COUNT", "HETLAUNCH_MAX_BATCH", "HETLAUNCH_CALIBRATE_STEPS"):
        case(f"run_env_owned_{name.lower()}", ["run", "--hosts", "a:1", "--global-batch", "4", "--env", f"{name}=8",
                                               "--dry-run", "--", "t.py"], 1,
             f"--env '{name}=8': '{name}' ")
        case(f"jobset_env_owned_{name.lower()}", ["jobset", "--name", "j", "--image", "i", "--group", "1:1",
                                                  "--env", f"{name}=8", "--", "t.py"], 1, f"'{name}' ")
    case("run_env_owned_message", ["run", "--hosts", "a:1", "--global-batch", "4", "--env", "HETLAUNCH_GLOBAL_BATCH=8",
                                   "--dry-run", "--", "t.py"], 1,
         "--env 'HETLAUNCH_GLOBAL_BATCH=8': 'HETLAUNCH_GLOBAL_BATCH' is set from the plan (--global-batch), and another "
         "value would give the workers wrong work shares; it cannot be given as a variable")
    case("run_env_owned_inherited", ["run", "--hosts", "a:1", "--env", "HETLAUNCH_RESTART_COUNT", "--dry-run", "--", "t.py"],
         1, "'HETLAUNCH_RESTART_COUNT' is the attempt number that a launcher with --restarts sets for each attempt",
         env=dict(empty_env, HETLAUNCH_RESTART_COUNT="3"))
    case("run_env_file_owned", ["run", "--hosts", "a:1", "--global-batch", "4", "--env-file", str(DATA / "owned.env"),
                                "--dry-run", "--", "t.py"], 1,
         "owned.env:3:3: 'HETLAUNCH_GLOBAL_BATCH' is set from the plan (--global-batch)")
    # Only `hetlaunch calibrate` sets the calibration steps: given to a real job, its sampler would
    # stop after them and the job would end as a success.
    case("run_env_calibrate_message", ["run", "--hosts", "a:1", "--env", "HETLAUNCH_CALIBRATE_STEPS=4", "--dry-run", "--",
                                       "t.py"], 1,
         "--env 'HETLAUNCH_CALIBRATE_STEPS=4': 'HETLAUNCH_CALIBRATE_STEPS' is set only by `hetlaunch calibrate`")
    case("run_env_max_batch_message", ["run", "--hosts", "a:1", "--env", "HETLAUNCH_MAX_BATCH=4", "--dry-run", "--",
                                       "t.py"], 1,
         "'HETLAUNCH_MAX_BATCH' is the node's memory ceiling, set from the plan (max_batch= in a hostfile, --max-batch)")
    case("run_env_file_calibrate", ["run", "--hosts", "a:1", "--env-file", str(DATA / "calibrate.env"), "--dry-run", "--",
                                    "t.py"], 1, "calibrate.env:2:1: 'HETLAUNCH_CALIBRATE_STEPS' is set only by")
    case("jobset_env_owned_message", ["jobset", "--name", "j", "--image", "i", "--group", "1:1", "--global-batch", "4",
                                      "--env", "HETLAUNCH_GLOBAL_BATCH=8", "--", "t.py"], 1,
         "'HETLAUNCH_GLOBAL_BATCH' is set from the plan (--global-batch)")
    # torchrun's and accelerate's habits name where the counts come from; a typo names the flag.
    case("torchrun_habit_nproc", ["plan", "--nproc_per_node", "8"], 2,
         "hetlaunch takes each node's worker count from its input, node by node")
    case("accelerate_habit_num_machines", ["plan", "--num_machines", "2"], 2, "takes each node's worker count")
    case("torchrun_habit_node_rank", ["plan", "--node_rank", "1"], 2, "each node's rank is its place in the input")
    case("typo_names_the_flag", ["plan", "--hots", "a:1"], 2, "unknown option '--hots'; did you mean --hosts?")
    case("hostfile_key_typo", ["plan", "--hostfile", str(DATA / "typo.hostfile")], 1,
         "typo.hostfile:3:11: unexpected 'wieght=2' (did you mean weight=?)")
    case("format_empty", ["plan", "--hosts", "a:1", "--format="], 2, "--format needs a format's name")
    case("flag_twice", ["plan", "--hosts", "a:1", "--hosts", "b:2"], 2,
         "--hosts is given twice: it takes one value, and the later would replace the earlier")
    case("switch_twice", ["plan", "--hosts", "a:1", "--json", "--json"], 2, "--json is given twice")
    case("help_before_command", ["--help", "plan"], 0, stdout_has=b"usage: hetlaunch plan")
    case("restarts_0_with_spare", ["run", "--hosts", "a:1", "--restarts", "0", "--spare", "b:1", "--dry-run", "t.py"],
         2, "--spare needs --restarts N above 0")
    case("restarts_0_with_exclude", ["run", "--hosts", "a:1", "--restarts", "0", "--exclude-failed", "--dry-run",
                                     "t.py"], 2, "--exclude-failed needs --restarts N above 0")
    for command in ("plan", "sbatch", "calibrate", "run"):
        extra = ["--group", "1:1"] if command == "sbatch" else ["--hosts", "a:1", "--global-batch", "4"]
        case(f"{command}_empty_script", [command, *extra, "--", ""], 2, "the training script is empty ('')")
    # A flag a command would drop is refused, not ignored.
    case("jobset_master_addr", ["jobset", "--name", "j", "--image", "i", "--group", "1:1", "--master-addr", "x",
                                "--", "t.py"], 2, "jobset takes no --master-addr")
    case("jobset_c10d", ["jobset", "--name", "j", "--image", "i", "--group", "1:1", "--rdzv", "c10d", "--", "t.py"], 2,
         "jobset takes no --rdzv c10d")
    case("accelerate_c10d", ["accelerate", "--hosts", "a:2,b:2", "--node", "0", "--rdzv", "c10d", "--rdzv-id", "j",
                             "--", "t.py"], 2, "accelerate takes no --rdzv c10d")
    case("accelerate_torchrun_arg", ["accelerate", "--hosts", "a:2,b:2", "--node", "0", "--torchrun-arg", "--x", "--",
                                     "t.py"], 2, "accelerate takes no --torchrun-arg")
    case("calibrate_c10d", ["calibrate", "--hosts", "a:1", "--global-batch", "4", "--rdzv", "c10d", "--rdzv-id", "j",
                            "--", "t.py"], 2, "calibrate takes no --rdzv c10d")
    # --local: no ssh in the commands, the rendezvous on this machine.
    case("run_local_dry_run", ["run", "--local", "--hosts", "gpu-a:2,gpu-b:1", "--dry-run", "t.py"], 0,
         check=lambda out: b"ssh " not in out and b"--master_addr=127.0.0.1" in out and out.startswith(b"# node 0"))
    case("check_node_out_of_range", ["check", "--node", "7"], 1, "node index 7 is out of range: the cluster has 3 nodes")
    case("hosts_semicolon", ["check", "--hosts", "a:1;b:1"], 1, "character ';' at position 3 is not allowed")
    case("script_like_an_option", ["plan", "--", "--nproc_per_node=99", "train.py"], 1, "starts with '-'")
    case("overriding_torchrun_arg", ["check", "--torchrun-arg", "--node_rank=5"], 1, "names an option hetlaunch computes")
    case("negative_rdzv_timeout", ["check", "--rdzv-timeout", "-1"], 2, "--rdzv-timeout needs an integer from 1")

    def utf8_json(out):
        import json
        text = out.decode("utf-8")  # strict: invalid UTF-8 raises
        data = json.loads(text)
        arg = data["nodes"][0]["argv"][-1]
        return arg.encode("utf-8", "surrogateescape") == b"caf\xc3\xa9\xff"
    case("json_is_utf8", ["plan", "--json", "--", "t.py", "caf\u00e9\udcff".encode("utf-8", "surrogateescape").decode("utf-8", "surrogateescape")],
         0, check=utf8_json)
    identical = dict(empty_env, TORCH_ELASTIC_WORKER_IDENTICAL="1")
    case("exec_unsets_identical_workers",
         ["exec", "--hosts", "a:2,b:1", "--node", "0", "--program", sys.executable, "--program", "-c", "--program",
          "import os; print(os.environ.get('TORCH_ELASTIC_WORKER_IDENTICAL'))", "--", "t.py"], 0,
         "unsetting TORCH_ELASTIC_WORKER_IDENTICAL: the nodes of this plan run different numbers of workers",
         stdout=b"None\n", env=identical)
    # exec removes every variable the launch owns that the plan does not give, by one rule: an
    # inherited calibration (Slurm's --export=ALL) would end the job after N steps as a success.
    inherited = dict(empty_env, HETLAUNCH_CALIBRATE_STEPS="4", HETLAUNCH_MAX_BATCH="2", HETLAUNCH_RESTART_COUNT="1")
    printed = "import os; print([os.environ.get(n) for n in ('HETLAUNCH_CALIBRATE_STEPS', 'HETLAUNCH_MAX_BATCH', " \
              "'HETLAUNCH_RESTART_COUNT')])"
    case("exec_unsets_inherited_owned",
         ["exec", "--hosts", "a:1", "--node", "0", "--program", sys.executable, "--program", "-c", "--program", printed,
          "--", "t.py"], 0, "unsetting HETLAUNCH_CALIBRATE_STEPS: only `hetlaunch calibrate` sets it",
         stdout=b"[None, None, None]\n", env=inherited)
    # A launcher that restarts the job gives exec the attempt: every worker gets it, an inherited
    # one never.
    case("exec_restart_count_given",
         ["exec", "--hosts", "a:1", "--node", "0", "--restart-count", "2", "--program", sys.executable, "--program",
          "-c", "--program", printed, "--", "t.py"], 0, "unsetting HETLAUNCH_CALIBRATE_STEPS",
         stdout=b"[None, None, '2']\n", env=inherited)
    case("exec_keeps_planned_ceiling",
         ["exec", "--hosts", "a:1", "--max-batch", "a=3", "--node", "0", "--program", sys.executable, "--program", "-c",
          "--program", printed, "--", "t.py"], 0, "unsetting HETLAUNCH_CALIBRATE_STEPS",
         stdout=b"[None, '3', None]\n", env=inherited)


def usage_cases(suite, binary):
    """Every option a command takes, by its own help, is in its usage line: usage cannot drift."""
    import re
    problems = []
    commands = re.findall(r"^  ([a-z-]+) +\S", run(binary, ["--help"])[0].split("commands:")[1].split("\n\n")[0], re.M)
    for command in commands:
        text = run(binary, [command, "--help"])[0]
        lines = text.splitlines()
        usage = " ".join([lines[0]] + [l for l in lines[1:] if l.startswith("       ")])
        own = text.split("\noptions:\n")[1] if "\noptions:\n" in text else ""
        flags = re.findall(r"^  (?:-\w, )?(--[a-z-]+)", own, re.M)
        missing = [f for f in flags if f not in usage]
        if missing or not flags and "options:" in text:
            problems.append(f"usage of {command} lacks {missing}")
    suite.report(f"usage lines name every option of their {len(commands)} commands", problems)
    # docs/cli.md's table: a row a command, in --help's order, each flag it names one the command takes.
    table = (HERE.parents[1] / "docs" / "cli.md").read_text().split("| command | what it does |")[1].split("\n\n")[0]
    rows = re.findall(r"^\| `([a-z-]+)([^|]*(?:\\\|[^|]*)*)\| (.*) \|$", table, re.M)
    documented = [n for name, cell, _ in rows for n in [name, *re.findall(r"`([a-z-]+) ", cell)]]
    doc_problems = [] if documented == commands else [f"docs/cli.md's table names {documented}, --help {commands}"]
    for name, cell, what in rows:
        helps = run(binary, [name, "--help"])[0]
        for flag in sorted(set(re.findall(r"(--[a-z][a-z-]*)", cell + " " + what))):
            if flag not in helps and not any(flag in run(binary, [other, "--help"])[0]
                                             for other in re.findall(r"`([a-z-]+) ", cell)):
                doc_problems.append(f"docs/cli.md gives {name} {flag}, which its --help does not name")
    suite.report(f"docs/cli.md's command table: the {len(commands)} commands of --help, in order, with their flags",
                 doc_problems)


def exec_e2e(binary, worker, work):
    """hetlaunch exec starts real torchrun agents for a heterogeneous hostfile; the job completes.
    Returns the problems."""
    work = pathlib.Path(work)
    shutil.rmtree(work, ignore_errors=True)
    work.mkdir(parents=True)
    hostfile = work / "hostfile"
    hostfile.write_text("127.0.0.1 slots=3\n127.0.0.2 slots=1\n127.0.0.3 slots=2\n")
    port = processes.free_port()
    env = {k: v for k, v in os.environ.items() if k not in ("OMP_NUM_THREADS",) and not k.startswith("PET_")}
    agents = []
    for node in range(3):
        log = open(work / f"agent-{node}.log", "w")
        agents.append(subprocess.Popen(
            [binary, "exec", "--node", str(node), "--hostfile", str(hostfile), "--master-addr", "127.0.0.1",
             "--master-port", port, *torchrun_flags.torchrun(), "--",
             worker, str(work), binary, "check-env", "--hostfile", str(hostfile)],
            stdout=log, stderr=subprocess.STDOUT, env=env, start_new_session=True))
    problems = []
    for node, a in enumerate(agents):
        try:
            code = a.wait(timeout=240)
        except subprocess.TimeoutExpired:
            os.killpg(a.pid, 9)
            code = "a timeout (240 s)"
        if code != 0:
            problems.append(f"node {node}'s agent ended with {code}")
    problems += rank_problems(read_records(work), [3, 1, 2])
    if problems:
        problems += [(work / f"agent-{node}.log").read_text() for node in range(3)]
    return problems


def local_e2e(binary, worker, work):
    """`run --local`: the same heterogeneous job on this machine, no ssh, the hosts only labels;
    every worker's variables are the plan's (check-env), the rendezvous on 127.0.0.1. Returns the
    problems."""
    work = pathlib.Path(work) / "local"
    shutil.rmtree(work, ignore_errors=True)
    work.mkdir(parents=True)
    hostfile = work / "hostfile"
    hostfile.write_text("gpu-a slots=3\ngpu-b slots=1\ngpu-c slots=2\n")
    env = {k: v for k, v in os.environ.items() if k not in ("OMP_NUM_THREADS",) and not k.startswith("PET_")}
    r = subprocess.run([binary, "run", "--local", "--hostfile", str(hostfile), "--master-port", processes.free_port(),
                        "--kill-after", "2", *torchrun_flags.torchrun(), "--events", str(work / "events.jsonl"),
                        "--", worker, str(work), binary, "check-env", "--hostfile", str(hostfile), "--master-addr",
                        "127.0.0.1"], capture_output=True, text=True, env=env, timeout=300)
    problems = [] if r.returncode == 0 else [f"run --local exited {r.returncode}:\n{r.stderr[-3000:]}"]
    problems += rank_problems(read_records(work), [3, 1, 2])
    events = [json.loads(line) for line in (work / "events.jsonl").read_text().splitlines()]
    if sorted(e["host"] for e in events if e["event"] == "node_started") != ["gpu-a", "gpu-b", "gpu-c"] or \
            events[-1]["reason"] != "succeeded":
        problems.append(f"the events: {events}")
    return problems


# An ssh client for `run` and `discover` that "connects" by running the remote command here, in a
# shell, as sshd would; HOST is exported so that a command can tell the hosts apart. The real
# client and server are in tests/multihost/ssh_test.py; this tests what does not need them.
FAKE_SSH = """#!/bin/sh
while [ "$1" != "--" ]; do shift; done
HOST=$2; export HOST
shift 2
case $HOST in lost*) echo "ssh: connect to host $HOST port 22: No route to host" >&2; exit 255;; esac
exec sh -c "$*"
"""


def events_cases(suite, binary, ssh, tmp):
    """`run --events FILE` with the stand-in ssh: each way a job ends, its exact event sequence and
    reason, every line valid by docs/events.schema.json; hot spares (asked when needed, passed
    over when lost, the smallest that fits taken)."""
    import job_events  # python3-jsonschema: only where these cases run

    log = pathlib.Path(tmp) / "events.jsonl"

    def run(args, program, expected_status, expected, check=None, timeout=60):
        log.unlink(missing_ok=True)
        argv = [binary, "run", *args, "--ssh", str(ssh), "--kill-after", "1", "--events", str(log)]
        if program is not None:
            argv += ["--program", "sh", "--program", "-c", "--program", program]
        r = subprocess.run(argv + ["--", "t.py"], capture_output=True, text=True, timeout=timeout)
        events, problems = job_events.read(log)
        if r.returncode != expected_status:
            problems.append(f"run exited {r.returncode}, expected {expected_status}: {r.stderr[-1500:]}")
        problems += job_events.compare(events, expected)
        if events and events[-1].get("status") != r.returncode:
            problems.append(f"job_exited's status {events[-1].get('status')} is not run's {r.returncode}")
        if check and not problems:
            problems += check(events, r)
        return problems

    def started(attempt, *nodes):
        return [("node_started", attempt, i, h, None) for i, h in nodes]

    def exited(attempt, *nodes):
        return [("node_exited", attempt, i, h, reason) for i, h, reason in nodes]

    def planned_keys(nodes, world, batch=0):
        def check(events, _r):
            p = events[0]
            got = (p["nodes"], p["world_size"], p["global_batch"])
            return [] if got == (nodes, world, batch) else [f"planned says {got}, expected {(nodes, world, batch)}"]
        return check

    suite.case("events_succeeded", run, ["--hosts", "a:1,b:2", "--global-batch", "6"], "sleep 1; echo hi", 0,
               [("planned", 0), *started(0, (0, "a"), (1, "b")), *exited(0, (0, "a", "succeeded"), (1, "b", "succeeded")),
                ("job_exited", 0, "succeeded")], planned_keys(2, 3, 6))
    # The sleeps leave every node time to start before anything ends, on a loaded machine too.
    fail_b = 'case $HOST in b) sleep 1.5; exit 3;; esac; exec sleep 30'
    suite.case("events_worker_failed", run, ["--hosts", "a:1,b:2"], fail_b, 3,
               [("planned", 0), *started(0, (0, "a"), (1, "b")), *exited(0, (1, "b", "failed")),
                *exited(0, (0, "a", "stopped")), ("job_exited", 0, "worker_failed")])
    # --fanout 1: node 0 starts, then node 1's host cannot be reached.
    suite.case("events_unreachable", run, ["--hosts", "a:1,lost-b:2", "--fanout", "1"], "exec sleep 30", 255,
               [("planned", 0), *started(0, (0, "a")), *exited(0, (1, "lost-b", "unreachable")),
                *exited(0, (0, "a", "stopped")), ("job_exited", 0, "unreachable")])
    suite.case("events_ended_before_start", run, ["--hosts", "a:1", "--ssh-arg", "-x", "--program", "true",
                                                  "--chdir", "/nonexistent-dir"], None, 126,
               [("planned", 0), *exited(0, (0, "a", "ended_before_start")), ("job_exited", 0, "ended_before_start")])

    def restart_shape(status_reason, attempts, hosts=(("a", "stopped"), ("b", "failed"))):
        rows = [("planned", 0)]
        for k in range(attempts):
            if k:
                rows.append(("restart", k))
            rows += started(k, (0, "a"), (1, "b"))
            rows += exited(k, (1, "b", "failed")) + exited(k, (0, "a", "stopped"))
        return rows + [("job_exited", attempts - 1, status_reason)]
    suite.case("events_restarts_exhausted", run, ["--hosts", "a:1,b:2", "--restarts", "1"], fail_b, 3,
               restart_shape("restarts_exhausted", 2))
    suite.case("events_too_few_nodes", run, ["--hosts", "a:1,b:2", "--restarts", "1", "--exclude-failed",
                                             "--min-nodes", "2"], fail_b, 3, restart_shape("too_few_nodes", 1))

    # A failed worker's root cause: torchrun's failure line names its local rank and exit code,
    # its relayed HETLAUNCH_ERROR line its rank and error (read, not shown); job_exited blames the
    # node that failed first.
    said = ('case $HOST in b) sleep 1.5; echo "[rank 2] Traceback" >&2; '
            'echo \'[rank 2] HETLAUNCH_ERROR {"rank": 2, "local_rank": 1, "error": "ValueError: \u00e9 bad"}\' >&2; '
            'echo "ERROR:torch.distributed.elastic.multiprocessing.api:failed (exitcode: 1) local_rank: 1 '
            '(pid: 9) of binary: /usr/bin/python3" >&2; exit 1;; esac; exec sleep 30')

    def root_cause(rank, error, exitcode=1, local=1, status=1):
        def check(events, r):
            got = {k: v for e in events if e["event"] == "node_exited" and e["node"] == 1
                   for k, v in e.items() if k in ("rank", "local_rank", "exitcode", "error")}
            want = {"rank": rank, "local_rank": local, "exitcode": exitcode}
            if error is not None:
                want["error"] = error
            problems = [] if got == want else [f"node 1's node_exited has {got}, expected {want}"]
            blamed = {k: events[-1].get(k) for k in ("failed_node", "failed_host")}
            if blamed != {"failed_node": 1, "failed_host": "b"}:
                problems.append(f"job_exited blames {blamed}")
            if "HETLAUNCH_ERROR" in r.stderr or "Traceback" not in r.stderr:
                problems.append(f"the relay was shown, or the traceback not: {r.stderr[-800:]}")
            return problems
        return check
    failed_rows = [("planned", 0), *started(0, (0, "a"), (1, "b")), *exited(0, (1, "b", "failed")),
                   *exited(0, (0, "a", "stopped")), ("job_exited", 0, "worker_failed")]
    suite.case("events_failed_worker_root_cause", run, ["--hosts", "a:1,b:2"], said, 1, failed_rows,
               root_cause(2, "ValueError: \u00e9 bad"))
    # No relay (an entry point without @record): the rank is the node's first rank + local rank.
    unsaid = said.replace("HETLAUNCH_ERROR", "nothing relayed")
    suite.case("events_failed_worker_without_record", run, ["--hosts", "a:1,b:2"],
               unsaid.replace("nothing relayed", "x"), 1, failed_rows, root_cause(2, None))
    # --exit-status-by-reason: each reason its own status; job_exited says the same status.
    suite.case("events_status_by_reason_worker_failed", run, ["--hosts", "a:1,b:2", "--exit-status-by-reason"],
               fail_b, 1, failed_rows)
    suite.case("events_status_by_reason_unreachable", run,
               ["--hosts", "a:1,lost-b:2", "--fanout", "1", "--exit-status-by-reason"], "exec sleep 30", 3,
               [("planned", 0), *started(0, (0, "a")), *exited(0, (1, "lost-b", "unreachable")),
                *exited(0, (0, "a", "stopped")), ("job_exited", 0, "unreachable")])
    suite.case("events_status_by_reason_restarts_exhausted", run,
               ["--hosts", "a:1,b:2", "--restarts", "1", "--exit-status-by-reason"], fail_b, 4,
               restart_shape("restarts_exhausted", 2))
    suite.case("events_status_by_reason_too_few_nodes", run,
               ["--hosts", "a:1,b:2", "--restarts", "1", "--exclude-failed", "--min-nodes", "2",
                "--exit-status-by-reason"], fail_b, 5, restart_shape("too_few_nodes", 1))
    suite.case("events_status_by_reason_ended_before_start", run,
               ["--hosts", "a:1", "--ssh-arg", "-x", "--program", "true", "--chdir", "/nonexistent-dir",
                "--exit-status-by-reason"], None, 8,
               [("planned", 0), *exited(0, (0, "a", "ended_before_start")), ("job_exited", 0, "ended_before_start")])

    # Node 1 fails in the first attempt only. Spares: lost-s cannot be asked (passed over), t
    # answers 2 GPUs, u has 4: t is the smallest that fits node 1's 2 workers.
    once = ('[ "$HETLAUNCH_RESTART_COUNT" = 0 ] && case $HOST in b) sleep 1.5; exit 3;; *) exec sleep 30;; esac; '
            'sleep 1; echo ran')
    count = "case $HOST in t) echo 2;; *) exit 4;; esac"

    def replaced_by(spare, excluded=(), passed_over=()):
        def check(events, r):
            restart = [e for e in events if e["event"] == "restart"][0]
            problems = []
            want = {"failed_node": 1, "failed_host": "b", "excluded": list(excluded),
                    "replaced": [{"node": 1, "host": "b", "spare": spare}], "nodes": 2, "world_size": 3}
            got = {k: restart[k] for k in want}
            if got != want:
                problems.append(f"restart event {got}, expected {want}")
            line = f"restart 1 of 2: attempt 2 starts on 2 nodes (node 1 on spare '{spare}' instead of 'b'), world size 3"
            for line in [line] + list(passed_over):
                if line not in r.stderr:
                    problems.append(f"no '{line}' in {r.stderr[-1500:]}")
            return problems
        return check
    suite.case("events_spare_replaces", run,
               ["--hosts", "a:1,b:2", "--restarts", "2", "--spare", "lost-s:auto,t:auto", "--spare", "u:1",
                "--gpu-count-command", count], once, 0,
               [("planned", 0), *started(0, (0, "a"), (1, "b")), *exited(0, (1, "b", "failed")),
                *exited(0, (0, "a", "stopped")), ("restart", 1), *started(1, (0, "a"), (1, "t")),
                *exited(1, (0, "a", "succeeded"), (1, "t", "succeeded")), ("job_exited", 1, "succeeded")],
               replaced_by("t", passed_over=["hetlaunch: spare 'lost-s' is passed over: slots=auto: host 'lost-s': "
                                             "'case $HOST in t) echo 2;; *) exit 4;; esac' failed (exit status 255): "
                                             "'ssh: connect to host lost-s port 22: No route to host'"]))
    # A spare of a known count that fits: the auto spares are not asked (each could cost
    # --discover-timeout), so the one that cannot be reached is never passed over.
    def no_asking(events, r):
        return [f"an auto spare was asked: {r.stderr[-800:]}"] if "passed over" in r.stderr else []
    suite.case("events_fixed_spare_fits_auto_not_asked", run,
               ["--hosts", "a:1,b:2", "--restarts", "2", "--spare", "lost-s:auto", "--spare", "u:4",
                "--gpu-count-command", count], once, 0,
               [("planned", 0), *started(0, (0, "a"), (1, "b")), *exited(0, (1, "b", "failed")),
                *exited(0, (0, "a", "stopped")), ("restart", 1), *started(1, (0, "a"), (1, "u")),
                *exited(1, (0, "a", "succeeded"), (1, "u", "succeeded")), ("job_exited", 1, "succeeded")], no_asking)
    # A spare that cannot be reached when its turn comes fails like any node, and the next spare
    # takes its place; one too small is never taken. (--fanout 1: node 0 starts before node 1 is
    # tried, so the order of the events is fixed.)
    # Node 0 runs until it is stopped in the first two attempts, so that it is "stopped" however
    # long node 1 takes to fail on a loaded machine; in the third, both nodes end by themselves.
    slow_a = ('case $HOST in b) [ "$HETLAUNCH_RESTART_COUNT" = 0 ] && exit 3;; '
              'a) [ "$HETLAUNCH_RESTART_COUNT" = 2 ] || exec sleep 30;; esac; sleep 1; echo ran')
    suite.case("events_lost_spare_passed_over", run,
               ["--hosts", "a:1,b:2", "--restarts", "2", "--spare", "small:1,lost-x:2,t:3", "--fanout", "1"], slow_a, 0,
               [("planned", 0), *started(0, (0, "a"), (1, "b")), *exited(0, (1, "b", "failed")),
                *exited(0, (0, "a", "stopped")), ("restart", 1), *started(1, (0, "a")),
                *exited(1, (1, "lost-x", "unreachable")), *exited(1, (0, "a", "stopped")), ("restart", 2),
                *started(2, (0, "a"), (1, "t")), *exited(2, (0, "a", "succeeded"), (1, "t", "succeeded")),
                ("job_exited", 2, "succeeded")])
    # No spare fits: --exclude-failed shrinks the job as before.
    suite.case("events_no_spare_fits", run,
               ["--hosts", "a:1,b:2", "--restarts", "1", "--exclude-failed", "--spare", "small:1"], once, 0,
               [("planned", 0), *started(0, (0, "a"), (1, "b")), *exited(0, (1, "b", "failed")),
                *exited(0, (0, "a", "stopped")), ("restart", 1), *started(1, (0, "a")),
                *exited(1, (0, "a", "succeeded")), ("job_exited", 1, "succeeded")])

    # --grow-back: b fails and is left out; once the second attempt's node 0 has started, b
    # answers its probe (b-up exists), and at rank 0's next checkpoint line the job starts again
    # with b back at its place, a restart --restarts 1 does not count. No clock decides it: b
    # answers only after node 0 ran, and node 0 prints checkpoint lines until it is stopped. Its
    # first three lines cannot be read: said once, they change nothing.
    up = pathlib.Path(tmp) / "b-up"
    grow = (f'case "$HETLAUNCH_RESTART_COUNT.$HOST" in 0.b) sleep 1.5; exit 3;; 0.*) exec sleep 30;; '
            f'1.a) touch {up}; for i in 1 2 3; do echo \'HETLAUNCH_CHECKPOINT {{"step": -1}}\'; done; '
            f'while true; do echo \'HETLAUNCH_CHECKPOINT {{"step": 5}}\'; sleep 0.2; done;; '
            f'*) sleep 1; echo ran;; esac')
    answers = f'case $HOST in b) [ -e {up} ] && echo 2 || exit 1;; *) echo 1;; esac'

    def grew_back(events, r):
        problems = []
        restarts = [e for e in events if e["event"] == "restart"]
        want = [{"reason": "failure", "failed_node": 1, "failed_host": "b", "excluded": ["b"], "readmitted": [],
                 "nodes": 1, "world_size": 1},
                {"reason": "grow", "failed_node": None, "failed_host": None, "excluded": [], "readmitted": ["b"],
                 "nodes": 2, "world_size": 3}]
        got = [{k: e[k] for k in want[0]} for e in restarts]
        if got != want:
            problems.append(f"restart events {got}, expected {want}")
        returned = [e for e in events if e["event"] == "node_returned"]
        if [(e["attempt"], e["host"]) for e in returned] != [(1, "b")]:
            problems.append(f"node_returned events {returned}")
        for line in ["hetlaunch: host 'b' answers again: it rejoins the job at its place at rank 0's next checkpoint "
                     "line", "hetlaunch: grow-back at the checkpoint of step 5: attempt 3 starts on 2 nodes "
                     "(node 1 ('b') back), world size 3"]:
            if line not in r.stderr:
                problems.append(f"no {line!r} in {r.stderr[-1500:]}")
        if r.stderr.count(": not a checkpoint") != 1:
            problems.append(f"the unreadable checkpoint lines are not said once: {r.stderr[-1500:]}")
        return problems

    def fresh(marker, program):
        """run() of `program` with `marker` (the file its stand-in host answers by) not there yet."""
        def case(args, expected, check):
            marker.unlink(missing_ok=True)
            return run(args, program, 0, expected, check)
        return case
    suite.case("events_grow_back", fresh(up, grow),
               ["--hosts", "a:1,b:2", "--restarts", "1", "--exclude-failed", "--grow-back", "--probe-every", "1",
                "--gpu-count-command", answers],
               [("planned", 0), *started(0, (0, "a"), (1, "b")), *exited(0, (1, "b", "failed")),
                *exited(0, (0, "a", "stopped")), ("restart", 1), *started(1, (0, "a")), job_events.returned(1, "b"),
                *exited(1, (0, "a", "stopped")), ("restart", 2), *started(2, (0, "a"), (1, "b")),
                *exited(2, (0, "a", "succeeded"), (1, "b", "succeeded")), ("job_exited", 2, "succeeded")], grew_back)

    # A host whose place a spare holds stands by as a spare once it answers: when the spare fails
    # in turn, it takes the place back. t fails only after b's probe has answered (b-answered).
    answered = pathlib.Path(tmp) / "b-answered"
    stand_by = (f'case "$HETLAUNCH_RESTART_COUNT.$HOST" in 0.b) sleep 1.5; exit 3;; 0.*|1.a) exec sleep 30;; '
                f'1.t) while [ ! -e {answered} ]; do sleep 0.1; done; sleep 1; exit 3;; *) sleep 1; echo ran;; esac')
    probe_b = f'case $HOST in b) touch {answered}; echo 2;; *) echo 1;; esac'

    def spare_again(events, r):
        restarts = [e for e in events if e["event"] == "restart"]
        want = [[{"node": 1, "host": "b", "spare": "t"}], [{"node": 1, "host": "t", "spare": "b"}]]
        got = [e["replaced"] for e in restarts]
        problems = [] if got == want else [f"replacements {got}, expected {want}"]
        if "hetlaunch: host 'b' answers again: a spare holds its place, so it stands by as a spare" not in r.stderr:
            problems.append(f"b did not stand by: {r.stderr[-1500:]}")
        return problems

    suite.case("events_returned_host_stands_by", fresh(answered, stand_by),
               ["--hosts", "a:1,b:2", "--restarts", "2", "--spare", "t:2", "--grow-back", "--probe-every", "1",
                "--gpu-count-command", probe_b],
               [("planned", 0), *started(0, (0, "a"), (1, "b")), *exited(0, (1, "b", "failed")),
                *exited(0, (0, "a", "stopped")), ("restart", 1), *started(1, (0, "a"), (1, "t")), job_events.returned(1, "b"),
                *exited(1, (1, "t", "failed")), *exited(1, (0, "a", "stopped")), ("restart", 2),
                *started(2, (0, "a"), (1, "b")), *exited(2, (0, "a", "succeeded"), (1, "b", "succeeded")),
                ("job_exited", 2, "succeeded")], spare_again)

    # --hang-timeout: every rank says its progress (HETLAUNCH_PROGRESS lines, read by run and not
    # shown). b's rank 1 says it computes step 3 and goes silent (a stopped process); a's rank 0
    # says it waits for the others (computed) the whole time. Only rank 1 is hung: the job stops,
    # reason hung, status 1, and b's node ended as failed. No clock decides the order: a reports
    # until it is stopped. --hang-timeout 3, not 1: a's shell loop, every 0.2 s, has paused for
    # more than a second on a loaded machine, and was then rightly named too.
    def said(rank, step, phase, seconds=0):
        return (f"echo 'HETLAUNCH_PROGRESS {{\"rank\": {rank}, \"step\": {step}, \"phase\": \"{phase}\", "
                f"\"phase_seconds\": {seconds}}}'")

    def asked(seconds):  # four reports a --hang-timeout
        return f'[ "$HETLAUNCH_PROGRESS_SECONDS" = {seconds} ] || {{ echo "no progress interval" >&2; exit 9; }}; '
    waits = f"while true; do {said(0, 3, 'computed', 40)}; sleep 0.2; done"
    silent = (asked("0.75") + f'case "$HETLAUNCH_RESTART_COUNT.$HOST" in 1.*) sleep 1; echo ran;; *.a) {waits};; '
              f'*.b) {said(1, 3, "computing")}; exec sleep 30;; esac')

    def named(status_line):
        def check(events, r):
            problems = []
            hung = [e for e in events if e["event"] == "rank_hung"]
            if len(hung) != 1 or not 3.0 <= hung[0]["seconds"] < 12:
                problems.append(f"rank_hung events {hung}")
            # The nodes stop because of it: every node_exited comes after rank_hung.
            kinds = [e["event"] for e in events]
            if "rank_hung" in kinds and "node_exited" in kinds[:kinds.index("rank_hung")]:
                problems.append(f"a node ended before rank_hung: {kinds}")
            if status_line not in r.stderr:
                problems.append(f"no {status_line!r} in {r.stderr[-1500:]}")
            if "HETLAUNCH_PROGRESS" in r.stdout + r.stderr:
                problems.append(f"progress lines were shown: {(r.stdout + r.stderr)[-1500:]}")
            return problems
        return check
    suite.case("events_hung_rank_stops_the_job", run, ["--hosts", "a:1,b:1", "--hang-timeout", "3"], silent, 1,
               [("planned", 0), *started(0, (0, "a"), (1, "b")), job_events.hung(0, 1, "b", 1, 3),
                *exited(0, (1, "b", "failed"), (0, "a", "stopped")), ("job_exited", 0, "hung")],
               named("hetlaunch: node 1 ('b'): rank 1 hung in step 3 (no progress line for 3"))
    # With --restarts and --exclude-failed the hung rank's node is left out like a failed one.
    suite.case("events_hung_rank_restarts_without_its_node", run,
               ["--hosts", "a:1,b:1", "--hang-timeout", "3", "--restarts", "1", "--exclude-failed"],
               silent, 0,
               [("planned", 0), *started(0, (0, "a"), (1, "b")), job_events.hung(0, 1, "b", 1, 3),
                *exited(0, (1, "b", "failed"), (0, "a", "stopped")), ("restart", 1), *started(1, (0, "a")),
                *exited(1, (0, "a", "succeeded")), ("job_exited", 1, "succeeded")])
    # A rank that keeps reporting, but computes one step past the limit, is stuck: named, while a
    # rank that has waited far longer for the others is not.
    stuck = (asked("0.75") + f'case $HOST in a) {waits};; b) while true; do {said(1, 8, "computing", 5)}; '
             'sleep 0.2; done;; esac')
    suite.case("events_stuck_rank_is_named_not_its_victims", run, ["--hosts", "a:1,b:1", "--hang-timeout", "3"],
               stuck, 1,
               [("planned", 0), *started(0, (0, "a"), (1, "b")), job_events.hung(0, 1, "b", 1, 8),
                *exited(0, (1, "b", "failed"), (0, "a", "stopped")), ("job_exited", 0, "hung")],
               named("hetlaunch: node 1 ('b'): rank 1 hung in step 8 (computing the step for 5"))
    # Inside checkpointing() the checkpoint limit holds: silent for 3 s, past --hang-timeout 2 but
    # within --checkpoint-timeout 6, the rank is not hung, and the job succeeds (a waits, saying so).
    checkpoint = (asked("0.5") + f'case $HOST in a) for i in $(seq 20); do {said(0, 3, "computed")}; '
                  f'sleep 0.2; done; echo ran;; '
                  f'b) {said(1, 3, "checkpointing")}; sleep 3; {said(1, 4, "computing")}; sleep 0.5; echo ran;; esac')
    suite.case("events_checkpoint_within_its_timeout_is_not_hung", run,
               ["--hosts", "a:1,b:1", "--hang-timeout", "2", "--checkpoint-timeout", "6"], checkpoint, 0,
               [("planned", 0), *started(0, (0, "a"), (1, "b")),
                *exited(0, (0, "a", "succeeded"), (1, "b", "succeeded")), ("job_exited", 0, "succeeded")])

    # --slow-factor: each rank is judged against its own earlier windows. a's rank 0 runs at 300
    # samples/s throughout and b's rank 1 at 100 (another share: never slow for that); then b's
    # rate drops to 30 for two windows (below 100 / 2), and recovers. One rank_slow, for rank 1,
    # with its own expected rate; the job is not stopped (report).
    def windows(rank, rates):
        return "; ".join(f"echo 'HETLAUNCH_PROGRESS {{\"rank\": {rank}, \"step\": {10 * k}, \"phase\": "
                         f"\"computing\", \"phase_seconds\": 0, \"window\": {k}, \"samples_per_second\": {r}}}'"
                         for k, r in enumerate(rates, 1))
    every_second = '[ "$HETLAUNCH_PROGRESS_SECONDS" = 1 ] || { echo "no progress interval" >&2; exit 9; }; '
    slowed = (every_second + f'case $HOST in a) {windows(0, [300] * 12)};; '
              f'b) {windows(1, [100, 104, 98, 101, 99, 102, 30, 28, 29, 100, 101, 97])};; esac; echo ran')

    def slow_named(events, r):
        got = [(e["samples_per_second"], e["expected"], e["step"]) for e in events if e["event"] == "rank_slow"]
        problems = [] if got == [(28, 100, 80)] else [f"rank_slow events {got}"]
        line = "hetlaunch: node 1 ('b'): rank 1 is slow: 28 samples/s, below its own earlier rate 100 / 2 two windows"
        if line not in r.stderr:
            problems.append(f"no {line!r} in {r.stderr[-1500:]}")
        return problems
    suite.case("events_slow_rank_against_its_own_rate", run, ["--hosts", "a:1,b:1", "--slow-factor", "2"], slowed, 0,
               [("planned", 0), *started(0, (0, "a"), (1, "b")), job_events.slow(0, 1, "b", 1),
                *exited(0, (0, "a", "succeeded"), (1, "b", "succeeded")), ("job_exited", 0, "succeeded")], slow_named)

    # --on-slow exclude: rank 1 (b) is slow; at rank 0's next checkpoint line the job stops and
    # restarts without b (a restart counted against --restarts, reason slow), even without
    # --exclude-failed. a says a checkpoint every half second, so that one comes after the judgement
    # however late b's lines arrive.
    checkpoints = "; ".join(f"sleep 0.5; echo 'HETLAUNCH_CHECKPOINT {{\"step\": {10 * k}}}'" for k in range(1, 30))
    excluded = (every_second + 'case "$HETLAUNCH_RESTART_COUNT.$HOST" in 1.*) echo ran;; '
                f'*.a) {windows(0, [300] * 8)}; {checkpoints}; exec sleep 30;; '
                f'*.b) {windows(1, [100, 104, 98, 101, 99, 102, 30, 28])}; exec sleep 30;; *) exec sleep 30;; esac')

    def left_out(events, r):
        restart = [e for e in events if e["event"] == "restart"]
        got = [(e["reason"], e["failed_node"], e["failed_host"], e["excluded"], e["nodes"]) for e in restart]
        problems = [] if got == [("slow", 1, "b", ["b"], 2)] else [f"restart events {got}"]
        for line in ["rank 1 is slow: 28 samples/s, below its own earlier rate 100 / 2 two windows in a row: its "
                     "node leaves the job at rank 0's next checkpoint line",
                     "to start again without node 1 ('b')", "restart 1 of 1: attempt 2 starts on 2 nodes (without "
                     "node 1 ('b'))"]:
            if line not in r.stderr:
                problems.append(f"no {line!r} in {r.stderr[-2000:]}")
        return problems
    suite.case("events_slow_rank_excluded_at_the_checkpoint", run,
               ["--hosts", "a:1,b:1,c:1", "--slow-factor", "2", "--on-slow", "exclude", "--restarts", "1"], excluded, 0,
               [("planned", 0), *started(0, (0, "a"), (1, "b"), (2, "c")), job_events.slow(0, 1, "b", 1),
                *exited(0, (0, "a", "stopped"), (1, "b", "stopped"), (2, "c", "stopped")), ("restart", 1),
                *started(1, (0, "a"), (1, "c")), *exited(1, (0, "a", "succeeded"), (1, "c", "succeeded")),
                ("job_exited", 1, "succeeded")], left_out)
    # With no restart left the slow node stays, and the job is not stopped: said, not done.
    stays = (every_second + f'case $HOST in a) {windows(0, [300] * 8)}; sleep 1; echo "HETLAUNCH_CHECKPOINT '
             f'{{\"step\": 90}}"; sleep 0.5; echo ran;; b) {windows(1, [100, 104, 98, 101, 99, 102, 30, 28])}; '
             'sleep 1.5; echo ran;; esac')

    def stays_said(events, r):
        line = "two windows in a row: it stays in the job (no restart left"
        return [] if line in r.stderr else [f"no {line!r} in {r.stderr[-1500:]}"]
    suite.case("events_slow_rank_stays_without_a_restart_left", run,
               ["--hosts", "a:1,b:1", "--on-slow", "exclude", "--restarts", "1", "--min-nodes", "2",
                "--exclude-failed"], stays, 0,
               [("planned", 0), *started(0, (0, "a"), (1, "b")), job_events.slow(0, 1, "b", 1),
                *exited(0, (0, "a", "succeeded"), (1, "b", "succeeded")), ("job_exited", 0, "succeeded")], stays_said)
    # --on-slow rebalance: every worker is told (HETLAUNCH_ON_SLOW=rebalance), and the ranks report.
    rebalance = ('[ "$HETLAUNCH_ON_SLOW" = rebalance ] && [ "$HETLAUNCH_PROGRESS_SECONDS" = 1 ] || '
                 '{ echo "not told to rebalance" >&2; exit 9; }; echo ran')
    suite.case("events_on_slow_rebalance_tells_every_worker", run,
               ["--hosts", "a:1,b:2", "--on-slow", "rebalance"], rebalance, 0,
               [("planned", 0), *started(0, (0, "a"), (1, "b")), *exited(0, (0, "a", "succeeded"), (1, "b", "succeeded")),
                ("job_exited", 0, "succeeded")])

    # --metrics FILE: while the job runs, node a copies the file run keeps (this machine's: the
    # stand-in ssh runs here); it shows both nodes up, each rank's step, rate and own expected
    # rate. Once the job has ended, the file shows no node up.
    metrics = pathlib.Path(tmp) / "job.prom"
    seen = pathlib.Path(tmp) / "seen.prom"
    watched = (every_second + f'case $HOST in a) {windows(0, [300] * 8)}; sleep 2; cp {metrics} {seen}; echo ran;; '
               f'b) {windows(1, [100, 104, 98, 101, 99, 102, 30, 28])}; sleep 2.5; echo ran;; esac')

    def metrics_shown(events, r):
        problems = []
        values = {}
        for text, when in ((seen, "running"), (metrics, "ended")):
            if not text.exists():
                problems.append(f"no metrics file {text}: {r.stderr[-1000:]}")
                continue
            for line in text.read_text().splitlines():
                if not line.startswith("#"):
                    name, value = line.rsplit(" ", 1)
                    values[(when, name)] = value
        want = {("running", "hetlaunch_job_attempt"): "0", ("running", "hetlaunch_job_world_size"): "2",
                ("running", "hetlaunch_restarts_total"): "0",
                ("running", 'hetlaunch_node_up{node="0",host="a"}'): "1",
                ("running", 'hetlaunch_node_up{node="1",host="b"}'): "1",
                ("running", 'hetlaunch_rank_step{rank="1",node="1",host="b"}'): "80",
                ("running", 'hetlaunch_rank_samples_per_second{rank="1",node="1",host="b"}'): "28",
                ("running", 'hetlaunch_rank_expected_samples_per_second{rank="1",node="1",host="b"}'): "100.5",
                ("running", 'hetlaunch_rank_expected_samples_per_second{rank="0",node="0",host="a"}'): "300",
                ("ended", 'hetlaunch_node_up{node="0",host="a"}'): "0",
                ("ended", 'hetlaunch_node_up{node="1",host="b"}'): "0"}
        for key, value in want.items():
            if values.get(key) != value:
                problems.append(f"{key}: {values.get(key)!r}, expected {value!r}")
        age = values.get(("running", 'hetlaunch_rank_seconds_since_progress{rank="1",node="1",host="b"}'))
        if age is None or not 1.0 <= float(age) < 10:
            problems.append(f"rank 1's seconds since progress, 2 s after its last line: {age}")
        leftovers = [p.name for p in metrics.parent.iterdir() if p.name.endswith(".tmp")]
        if leftovers:
            problems.append(f"files left beside the metrics: {leftovers}")
        return problems
    suite.case("events_metrics_file_while_running_and_after", run,
               ["--hosts", "a:1,b:1", "--metrics", str(metrics)], watched, 0,
               [("planned", 0), *started(0, (0, "a"), (1, "b")), job_events.slow(0, 1, "b", 1),
                *exited(0, (0, "a", "succeeded"), (1, "b", "succeeded")), ("job_exited", 0, "succeeded")], metrics_shown)

    def invalid(args, status, script="t.py"):
        log.unlink(missing_ok=True)
        own_ssh = [] if "--ssh" in args else ["--ssh", str(ssh)]
        r = subprocess.run([binary, "run", *own_ssh, *args, "--events", str(log), "--", script],
                           capture_output=True, text=True, timeout=30)
        events, problems = job_events.read(log)
        problems += job_events.compare(events, [("job_exited", 0, "invalid_input")])
        if r.returncode != status or (events and events[0]["status"] != status):
            problems.append(f"exit {r.returncode}, event {events}, expected {status}: {r.stderr}")
        return problems
    for name, args, status in [
            ("bad_slots", ["--hosts", "a:0"], 1),
            # --exit-status-by-reason: invalid input exits 2, as a usage error does.
            ("bad_slots_status_by_reason", ["--hosts", "a:0", "--exit-status-by-reason"], 2),
            ("usage", ["--hosts", "a:1", "--exclude-failed"], 2),
            ("unknown_flag_after_events", ["--hosts", "a:1", "--no-such-flag"], 2),
            ("spare_without_restarts", ["--hosts", "a:1", "--spare", "s:1"], 2),
            ("grow_back_without_restarts", ["--hosts", "a:1", "--grow-back"], 2),
            ("probe_every_without_grow_back", ["--hosts", "a:1", "--restarts", "1", "--probe-every", "5"], 2),
            ("probe_every_zero", ["--hosts", "a:1", "--restarts", "1", "--grow-back", "--probe-every", "0"], 2),
            ("slow_factor_one", ["--hosts", "a:1", "--slow-factor", "1"], 2),
            ("slow_factor_not_a_number", ["--hosts", "a:1", "--slow-factor", "2x"], 2),
            ("checkpoint_timeout_without_hang_timeout", ["--hosts", "a:1", "--checkpoint-timeout", "60"], 2),
            ("on_slow_unknown", ["--hosts", "a:1", "--on-slow", "restart"], 2),
            ("on_slow_exclude_without_restarts", ["--hosts", "a:1", "--on-slow", "exclude"], 2),
            ("metrics_empty", ["--hosts", "a:1", "--metrics", ""], 2),
            ("metrics_in_no_directory", ["--hosts", "a:1", "--metrics", "/nonexistent-dir/job.prom"], 1),
            # Replaced by a rename: a device or a directory at the path is never replaced.
            ("metrics_a_device", ["--hosts", "a:1", "--metrics", "/dev/full"], 1),
            ("metrics_a_directory", ["--hosts", "a:1", "--metrics", "/tmp"], 1),
            ("spare_is_a_node", ["--hosts", "a:1", "--restarts", "1", "--spare", "a:1"], 1),
            ("spare_twice", ["--hosts", "a:1", "--restarts", "1", "--spare", "s:1", "--spare", "s:2"], 1),
            # Host names are case-insensitive: spare "A" is node 0's host "a", and "S" is "s" again.
            ("spare_is_a_node_in_other_case", ["--hosts", "a:1", "--restarts", "1", "--spare", "A:1"], 1),
            ("spare_twice_in_other_case", ["--hosts", "a:1", "--restarts", "1", "--spare", "s:1,S:2"], 1),
            ("spare_bad_slots", ["--hosts", "a:1", "--restarts", "1", "--spare", "s:-1"], 1),
            ("unknown_ssh", ["--hosts", "a:1", "--ssh", "/nonexistent/ssh"], 1),
            # A flag that takes one value, given twice, would silently keep the later one.
            ("hosts_twice", ["--hosts", "a:1", "--hosts", "b:2"], 2),
            ("ssh_twice", ["--hosts", "a:1", "--ssh", str(ssh), "--ssh", str(ssh)], 2)]:
        suite.case(f"events_invalid_{name}", invalid, args, status)
    # An empty script: refused before anything is planned (it once aborted after `planned`).
    suite.case("events_invalid_empty_script", invalid, ["--hosts", "a:1"], 2, "")
    suite.case("events_invalid_empty_script_dry_run", invalid, ["--hosts", "a:1", "--dry-run"], 2, "")

    # A program that exits 255 after its node started failed: its host is not unreachable (an
    # --exclude-failed would drain a healthy host).
    suite.case("events_255_after_start_is_failed", run, ["--hosts", "a:1"], "sleep 0.3; exit 255", 255,
               [("planned", 0), *started(0, (0, "a")), *exited(0, (0, "a", "failed")),
                ("job_exited", 0, "worker_failed")])

    def usage_events_scan():
        """A usage error writes job_exited to run's own --events, never to a file named by the
        training script's arguments (the scan stops at the script)."""
        mine = pathlib.Path(tmp) / "mine.txt"
        mine.write_text("the script's own file\n")
        log.unlink(missing_ok=True)
        r = subprocess.run([binary, "run", "--events", str(log), "--hosts", "a:1", "--restart", "2", "train.py",
                            "--events", str(mine)], capture_output=True, text=True, timeout=30)
        events, problems = job_events.read(log)
        problems += job_events.compare(events, [("job_exited", 0, "invalid_input")])
        if mine.read_text() != "the script's own file\n":
            problems.append(f"the script's --events file was written: {mine.read_text()!r}")
        if r.returncode != 2:
            problems.append(f"run exited {r.returncode}: {r.stderr}")
        return problems
    suite.case("events_usage_error_stops_at_the_script", usage_events_scan)

    def events_is_an_input():
        """--events naming the hostfile or the env file is refused before either is emptied."""
        problems = []
        hostfile = pathlib.Path(tmp) / "job.hostfile"
        envfile = pathlib.Path(tmp) / "job.env"
        for flag, path, text in [("--hostfile", hostfile, "a slots=1\n"), ("--env-file", envfile, "A=1\n")]:
            path.write_text(text)
            args = ["--hostfile", str(hostfile)] if flag == "--hostfile" else ["--hosts", "a:1", "--env-file", str(path)]
            if flag != "--hostfile":
                hostfile.write_text("a slots=1\n")
            r = subprocess.run([binary, "run", *args, "--ssh", str(ssh), "--events", str(path), "--", "t.py"],
                               capture_output=True, text=True, timeout=30)
            if r.returncode != 1 or "which writing the events would destroy" not in r.stderr:
                problems.append(f"--events {flag}'s file: exit {r.returncode}, {r.stderr[-500:]}")
            if path.read_text() != text:
                problems.append(f"the {flag} file was changed: {path.read_text()!r}")
        return problems
    suite.case("events_never_an_input", events_is_an_input)

    def events_fifo():
        """A fifo nobody reads is refused at once; a reader that stalls never holds the job: it
        ends, and says the reader did not take the last events."""
        import select
        problems = []
        fifo = pathlib.Path(tmp) / "events.fifo"
        fifo.unlink(missing_ok=True)
        os.mkfifo(fifo)
        start = time.monotonic()
        r = subprocess.run([binary, "run", "--hosts", "a:1", "--ssh", str(ssh), "--events", str(fifo), "--program",
                            "true", "--", "t.py"], capture_output=True, text=True, timeout=30)
        if r.returncode != 1 or "a fifo that nobody reads" not in r.stderr or time.monotonic() - start > 10:
            problems.append(f"no reader: exit {r.returncode} after {time.monotonic() - start:.1f} s: {r.stderr[-300:]}")
        reader = os.open(fifo, os.O_RDONLY | os.O_NONBLOCK)
        filler = os.open(fifo, os.O_WRONLY | os.O_NONBLOCK)
        try:
            while True:  # the pipe full before run writes its first line: a reader that stalls
                os.write(filler, b"x" * 4096)
        except BlockingIOError:
            pass
        try:
            start = time.monotonic()
            r = subprocess.run([binary, "run", "--hosts", "a:1", "--ssh", str(ssh), "--events", str(fifo), "--program",
                                "sh", "--program", "-c", "--program", "echo ran", "--", "t.py"], capture_output=True,
                               text=True, timeout=60)
            took = time.monotonic() - start
            if r.returncode != 0 or "ran" not in r.stdout or "did not take the last events in time" not in r.stderr \
                    or took > 30:
                problems.append(f"a stalled reader: exit {r.returncode} after {took:.1f} s: {r.stderr[-500:]}")
        finally:
            os.close(filler)
            os.close(reader)
        return problems
    suite.case("events_fifo_without_or_with_a_stalled_reader", events_fifo)

    def events_locked():
        """A second run on the events file of a run that is still going is refused."""
        log.unlink(missing_ok=True)
        first = subprocess.Popen([binary, "run", "--hosts", "a:1", "--ssh", str(ssh), "--kill-after", "1", "--events",
                                  str(log), "--program", "sh", "--program", "-c", "--program", "exec sleep 30", "--",
                                  "t.py"], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        try:
            deadline = time.monotonic() + 20
            while time.monotonic() < deadline and (not log.exists() or "node_started" not in log.read_text()):
                time.sleep(0.05)
            r = subprocess.run([binary, "run", "--hosts", "a:1", "--ssh", str(ssh), "--events", str(log), "--program",
                                "true", "--", "t.py"], capture_output=True, text=True, timeout=30)
            problems = [] if r.returncode == 1 and "another hetlaunch run writes its events there" in r.stderr else \
                [f"the second run: exit {r.returncode}: {r.stderr[-500:]}"]
        finally:
            first.send_signal(signal.SIGTERM)
            first.communicate(timeout=30)
        events, read_problems = job_events.read(log)
        return problems + read_problems + job_events.compare(
            events, [("planned", 0), *started(0, (0, "a")), *exited(0, (0, "a", "stopped")),
                     ("job_exited", 0, "interrupted")])
    suite.case("events_one_run_a_file", events_locked)

    def output_full():
        """stdout on a full disk: run exits 1 and job_exited says so, with the true cause."""
        log.unlink(missing_ok=True)
        with open("/dev/full", "w") as full:
            r = subprocess.run([binary, "run", "--hosts", "a:1", "--ssh", str(ssh), "--events", str(log), "--program",
                                "sh", "--program", "-c", "--program", "echo ran", "--", "t.py"], stdout=full,
                               stderr=subprocess.PIPE, text=True, timeout=30)
        events, problems = job_events.read(log)
        problems += job_events.compare(events, [("planned", 0), *started(0, (0, "a")), *exited(0, (0, "a", "succeeded")),
                                                ("job_exited", 0, "output_failed")])
        if r.returncode != 1 or "cannot write the output" not in r.stderr or "No child processes" in r.stderr or \
                (events and events[-1]["status"] != 1):
            problems.append(f"exit {r.returncode}, events {events[-1:]}: {r.stderr[-300:]}")
        return problems
    suite.case("events_output_failed", output_full)

    def events_full_without_a_job():
        """The job's end that cannot be written is said as such: there is no job to go on."""
        r = subprocess.run([binary, "run", "--hosts", "a:0", "--events", "/dev/full", "--", "t.py"],
                           capture_output=True, text=True, timeout=30)
        ok = r.returncode == 1 and "--events: writing failed" in r.stderr and "the job goes on" not in r.stderr
        return [] if ok else [f"exit {r.returncode}: {r.stderr[-500:]}"]
    suite.case("events_write_failed_without_a_job", events_full_without_a_job)

    def other_signals():
        """SIGUSR1, SIGUSR2 and SIGALRM stop the job as SIGTERM does, with its job_exited."""
        problems = []
        for sig in (signal.SIGUSR1, signal.SIGALRM):
            log.unlink(missing_ok=True)
            proc = subprocess.Popen([binary, "run", "--hosts", "a:1", "--ssh", str(ssh), "--kill-after", "1",
                                     "--events", str(log), "--program", "sh", "--program", "-c", "--program",
                                     "exec sleep 30", "--", "t.py"], stdout=subprocess.PIPE, stderr=subprocess.PIPE)
            deadline = time.monotonic() + 20
            while time.monotonic() < deadline and (not log.exists() or "node_started" not in log.read_text()):
                time.sleep(0.05)
            proc.send_signal(sig)
            proc.communicate(timeout=30)
            events, read_problems = job_events.read(log)
            problems += read_problems + job_events.compare(
                events, [("planned", 0), *started(0, (0, "a")), *exited(0, (0, "a", "stopped")),
                         ("job_exited", 0, "interrupted")])
            if proc.returncode != 128 + sig:
                problems.append(f"{sig.name}: run exited {proc.returncode}")
        return problems
    suite.case("events_other_signals_interrupt", other_signals)

    def interrupted():
        log.unlink(missing_ok=True)
        proc = subprocess.Popen([binary, "run", "--hosts", "a:1,b:2", "--ssh", str(ssh), "--kill-after", "1",
                                 "--events", str(log), "--program", "sh", "--program", "-c", "--program",
                                 "echo up; exec sleep 30", "--", "t.py"], stdout=subprocess.PIPE, stderr=subprocess.PIPE)
        deadline = time.monotonic() + 20
        while time.monotonic() < deadline and (not log.exists() or log.read_text().count("node_started") < 2):
            time.sleep(0.05)
        proc.send_signal(signal.SIGINT)
        proc.communicate(timeout=30)
        events, problems = job_events.read(log)
        problems += job_events.compare(events, [("planned", 0), *started(0, (0, "a"), (1, "b")),
                                                *exited(0, (0, "a", "stopped"), (1, "b", "stopped")),
                                                ("job_exited", 0, "interrupted")])
        if proc.returncode != 130:
            problems.append(f"run exited {proc.returncode}, expected 130")
        return problems
    suite.case("events_interrupted", interrupted)

    def calibrate(program, status, message, extra=()):
        r = subprocess.run([binary, "calibrate", "--hosts", "a:1,b:2", "--ssh", str(ssh), "--global-batch", "6",
                            *extra, "--program", "sh", "--program", "-c", "--program", program, "--", "t.py"],
                           capture_output=True, text=True, timeout=60)
        return [] if r.returncode == status and message in r.stderr + r.stdout else \
            [f"exit {r.returncode}, expected {status} with {message!r}: {r.stdout[-800:]} {r.stderr[-1500:]}"]
    line = 'HETLAUNCH_MEASURED {"step": 20, "nodes": [{"node": 0, "samples_per_second": 50}, ' \
           '{"node": 1, "samples_per_second": 125.5}]}'
    suite.case("calibrate_table", calibrate,
               f'[ "$HETLAUNCH_CALIBRATE_STEPS" = 7 ] || exit 9; case $HOST in a) echo \'[default0]:{line}\';; esac', 0,
               "1     b                          2         125.50  2.51", ["--calibrate-steps", "7"])
    # Which nodes pay their way: with its all-reduce, the step of the whole job (6 samples at
    # 2:5 per worker: a takes 1, b's workers 3 and 2) and of the job without each node.
    timed = line.replace('}]}', '}], "allreduce_seconds": 0.01}')
    suite.case("calibrate_predicts_the_step_without_each_node", calibrate,
               f"case $HOST in a) echo '{timed}';; esac", 0,
               "predicted step of 6 samples (all-reduce 0.0100 s):\n"
               "  the whole job                        0.0339 s\n"
               "  without node 0 (a)                   0.0339 s\n"
               "  without node 1 (b)                   0.1300 s\n")
    suite.case("calibrate_json_prediction", calibrate, f"case $HOST in a) echo '{timed}';; esac", 0,
               '"allreduce_seconds": 0.01, "prediction": [{"without": null, "step_seconds": 0.0339044, '
               '"slows_the_job": false, "allreduce_seconds": 0.01}, {"without": "a", "step_seconds": 0.0339044, '
               '"slows_the_job": false, "allreduce_seconds": 0.01}, '
               '{"without": "b", "step_seconds": 0.13, "slows_the_job": false, "allreduce_seconds": 0.01}]}', ["--json"])
    # An all-reduce as slow as its slowest member: without b, the job reduces in 0.001 s, not 0.01.
    apart = timed.replace('"samples_per_second": 125.5}', '"samples_per_second": 125.5, "allreduce_seconds_without": 0.001}')
    suite.case("calibrate_allreduce_without_a_node", calibrate, f"case $HOST in a) echo '{apart}';; esac", 0,
               "  without node 0 (a)                   0.0339 s\n"
               "  without node 1 (b)                   0.1210 s (all-reduce 0.0010 s)\n")
    suite.case("calibrate_json_allreduce_without_a_node", calibrate, f"case $HOST in a) echo '{apart}';; esac", 0,
               '"overhead_seconds": null, "allreduce_seconds_without": 0.001}], "allreduce_seconds": 0.01, '
               '"prediction": [{"without": null, "step_seconds": 0.0339044, "slows_the_job": false, '
               '"allreduce_seconds": 0.01}, {"without": "a", "step_seconds": 0.0339044, "slows_the_job": false, '
               '"allreduce_seconds": 0.01}, {"without": "b", "step_seconds": 0.121, "slows_the_job": false, '
               '"allreduce_seconds": 0.001}]}', ["--json"])
    # A node's own work between steps (its optimizer, loop and loader) delays the step: a's 0.5 s
    # makes the whole job 0.02 + 0.5 + 0.01 s, and the job without a b's 0.024 + 0.01 s.
    own = timed.replace('"samples_per_second": 50}', '"samples_per_second": 50, "overhead_seconds": 0.5}')
    suite.case("calibrate_own_work_between_steps", calibrate, f"case $HOST in a) echo '{own}';; esac", 0,
               "node  host                 workers      samples/s  weight          between steps\n"
               "0     a                          1          50.00  1                    0.5000 s\n"
               "1     b                          2         125.50  2.51                      -\n"
               "\npredicted step of 6 samples (all-reduce 0.0100 s):\n"
               "  the whole job                        0.5300 s\n"
               "  without node 0 (a)                   0.0339 s  slows the job\n")
    suite.case("calibrate_json_own_work_between_steps", calibrate, f"case $HOST in a) echo '{own}';; esac", 0,
               '"max_batch": 0, "overhead_seconds": 0.5, "allreduce_seconds_without": null}, {"node": 1, "host": "b", '
               '"nproc": 2, "samples_per_second": 125.5, "weight": "2.51", "max_batch": 0, "overhead_seconds": null, '
               '"allreduce_seconds_without": null}]', ["--json"])
    suite.case("calibrate_without_allreduce_says_so", calibrate, f"case $HOST in a) echo '{line}';; esac", 0,
               "predicted step of 6 samples (all-reduce 0.0000 s, not measured):")
    # A measured line past 64 KiB (more than about 840 nodes' worth) is read whole.
    long_line = line.replace('{"step": 20,', '{"step": 20, "pad": "\'"$pad"\'",')
    suite.case("calibrate_line_past_64_kib", calibrate,
               "pad=$(head -c 100000 /dev/zero | tr '\\0' x); case $HOST in a) echo '" + long_line + "';; esac", 0,
               "1     b                          2         125.50  2.51")
    suite.case("calibrate_never_printed", calibrate, "true", 1,
               "hetlaunch: calibrate: rank 0 never printed a HETLAUNCH_MEASURED line")
    # Only rank 0's own whole lines count: the word inside a log message, or node 1's line, is not
    # a measurement.
    suite.case("calibrate_only_rank_0", calibrate,
               f"case $HOST in a) echo 'INFO: saw {line}';; b) echo '{line}';; esac", 1,
               "rank 0 never printed a HETLAUNCH_MEASURED line")
    def calibrate_end(program, extra, status, reason, says):
        log.unlink(missing_ok=True)
        r = subprocess.run([binary, "calibrate", "--hosts", "a:1,b:2", "--ssh", str(ssh), "--global-batch", "6",
                            "--events", str(log), *extra, "--program", "sh", "--program", "-c", "--program", program,
                            "--", "t.py"], capture_output=True, text=True, timeout=60)
        events, problems = job_events.read(log)
        if r.returncode != status or says not in r.stderr or not events or events[-1]["event"] != "job_exited" or \
                (events[-1]["status"], events[-1]["reason"]) != (status, reason):
            problems.append(f"exit {r.returncode}, last event {events[-1:]}, expected {status} {reason}: "
                            f"{r.stderr[-800:]}")
        return problems, events
    # calibrate's own failure after a job that succeeded: job_exited says the status it exits with.
    suite.case("calibrate_failure_is_the_job_end", lambda: calibrate_end(
        "true", [], 1, "calibration_failed", "never printed")[0])

    def hostfile_checked_first():
        problems, events = calibrate_end(f"echo '{line}'", ["--write-hostfile", "/nonexistent-dir/out.hostfile"],
                                         1, "invalid_input", "--write-hostfile '/nonexistent-dir/out.hostfile': cannot write it")
        if any(e["event"] == "planned" for e in events):
            problems.append("the job ran before --write-hostfile was found unwritable")
        return problems
    suite.case("calibrate_write_hostfile_checked_before_the_job", hostfile_checked_first)

    def hostfile_with_devices():
        problems, events = calibrate_end(f"echo '{line}'", ["--write-hostfile", str(pathlib.Path(tmp) / "w.hostfile"),
                                                            "--include", "b:1"],
                                         1, "invalid_input", "which a hostfile cannot hold")
        if any(e["event"] == "planned" for e in events):
            problems.append("the job ran before the device selection was refused")
        return problems
    suite.case("calibrate_write_hostfile_refuses_a_device_selection", hostfile_with_devices)
    suite.case("calibrate_never_printed_names_the_steps", calibrate, "true", 1,
               "once it has handed out 7 steps (--calibrate-steps)", ["--calibrate-steps", "7"])
    suite.case("calibrate_malformed", calibrate, "echo 'HETLAUNCH_MEASURED {\"step\": 1, \"nodes\": ['", 1,
               "hetlaunch: calibrate: the HETLAUNCH_MEASURED line, column 23: expected '{'")
    suite.case("calibrate_unknown_node", calibrate,
               "echo 'HETLAUNCH_MEASURED {\"step\": 1, \"nodes\": [{\"node\": 5, \"samples_per_second\": 1}]}'", 1,
               "column 32: node 5 is not a node of the job's 2")
    suite.case("calibrate_job_failed", calibrate, "exit 3", 3, "hetlaunch: calibrate: the job failed (exit status 3)")

    def calibrate_events():
        log.unlink(missing_ok=True)
        program = f"case $HOST in a) echo '{line}';; esac; sleep 1"
        r = subprocess.run([binary, "calibrate", "--hosts", "a:1,b:2", "--ssh", str(ssh), "--global-batch", "6",
                            "--events", str(log), "--json", "--program", "sh", "--program", "-c", "--program", program,
                            "--", "t.py"], capture_output=True, text=True, timeout=60)
        events, problems = job_events.read(log)
        problems += job_events.compare(events, [("planned", 0), *started(0, (0, "a"), (1, "b")),
                                                *exited(0, (0, "a", "succeeded"), (1, "b", "succeeded")),
                                                ("job_exited", 0, "succeeded")])
        # stdout is calibrate's JSON alone: the nodes' lines went to stderr.
        try:
            weights = [n["weight"] for n in json.loads(r.stdout)["nodes"]]
        except ValueError:
            weights = None
        if r.returncode != 0 or weights != ["1", "2.51"]:
            problems.append(f"exit {r.returncode}, stdout {r.stdout!r}")
        return problems
    suite.case("calibrate_events_and_json", calibrate_events)

    def calibrate_needs_global_batch():
        r = subprocess.run([binary, "calibrate", "--hosts", "a:1", "--", "t.py"], capture_output=True, text=True)
        return [] if r.returncode == 2 and "calibrate needs --global-batch B" in r.stderr else [r.stderr]
    suite.case("calibrate_needs_global_batch", calibrate_needs_global_batch)

    def unwritable():
        r = subprocess.run([binary, "run", "--hosts", "a:1", "--events", "/nonexistent-dir/e.jsonl", "--ssh", str(ssh),
                            "--", "t.py"], capture_output=True, text=True, timeout=30)
        expected = "hetlaunch: --events '/nonexistent-dir/e.jsonl': cannot write it: No such file or directory\n"
        return [] if r.returncode == 1 and r.stderr == expected else [f"{r.returncode} {r.stderr!r}"]
    suite.case("events_file_cannot_be_written", unwritable)


# A stand-in torch for preflight: what each host's Python imports, told apart by HOST (the
# stand-in ssh exports it). Host "nt..." has no torch.
STANDIN_TORCH = """import os, types
_host = os.environ.get("HOST", "")
if _host.startswith("nt"):
    raise ModuleNotFoundError("No module named 'torch'")
_hosts = {
    "a": ("2.6.0+cu124", "12.4", (2, 21, 5), [("NVIDIA A100-SXM4-80GB", (8, 0))] * 2),
    "b": ("2.6.1+cu124", "12.4", (2, 21, 5), [("Tesla T4", (7, 5))]),
    "c": ("2.14.1+cu128", "12.8", (2, 27, 3), [("NVIDIA H100", (9, 0))] * 4),
    "h": ("2.6.0+cu124", "12.4", (2, 21, 5), [("NVIDIA H100", (9, 0))] * 8),
    "old": ("1.13.1+cu117", "11.7", 21205, [("Tesla V100", (7, 0))] * 2),
}
__version__, _cuda, _nccl, _gpus = _hosts.get(_host, ("2.6.0", None, None, []))
version = types.SimpleNamespace(cuda=_cuda)
cuda = types.SimpleNamespace(
    is_available=lambda: bool(_gpus), device_count=lambda: len(_gpus),
    get_device_capability=lambda i: _gpus[i][1], get_device_name=lambda i: _gpus[i][0],
    nccl=types.SimpleNamespace(version=lambda: _nccl))
"""


def preflight_cases(suite, binary, ssh, tmp):
    """`preflight` and `run --preflight` with the stand-in ssh and a stand-in torch: each rule
    refuses with the hosts and both versions, no node starts when it does, the workers learn the
    least capability and bf16, and slots=auto hosts are asked their count and facts in one ssh."""
    import job_events  # python3-jsonschema: only where these cases run

    standin = pathlib.Path(tmp) / "standin"
    (standin / "torch").mkdir(parents=True)
    (standin / "torch" / "__init__.py").write_text(STANDIN_TORCH)
    calls = pathlib.Path(tmp) / "ssh-calls"
    counting_ssh = pathlib.Path(tmp) / "counting-ssh"
    counting_ssh.write_text(f'#!/bin/sh\necho x >> {calls}\nexec {ssh} "$@"\n')
    counting_ssh.chmod(0o755)
    env = dict(os.environ, PYTHONPATH=str(standin))
    log = pathlib.Path(tmp) / "preflight-events.jsonl"

    def preflight(args, status, out=None, err=None, check=None, python=sys.executable):
        calls.unlink(missing_ok=True)
        r = subprocess.run([binary, "preflight", *args, "--ssh", str(counting_ssh), "--python", python],
                           capture_output=True, text=True, env=env, timeout=60)
        problems = [] if r.returncode == status else [f"exit {r.returncode}, expected {status}: {r.stderr}"]
        for want, got in ((out, r.stdout), (err, r.stderr)):
            if want is not None and want not in got:
                problems.append(f"no {want!r} in {got!r}")
        if check and not problems:
            problems += check(r)
        return problems

    suite.case("preflight_mixed_gpus_pass", preflight, ["--hosts", "a:2,b:1"], 0,
               "the hosts can run one job (least capability 7.5, bf16 not on every GPU)")
    suite.case("preflight_cpu_hosts_pass_on_versions", preflight, ["--hosts", "d:4,e:2"], 0,
               "the hosts can run one job (no GPU: gloo)")
    suite.case("preflight_torch_differs", preflight, ["--hosts", "a:2,c:1"], 1, None,
               "hetlaunch: preflight: hosts 'a' and 'c' differ in torch (major.minor): 2.6.0+cu124 and 2.14.1+cu128\n")
    suite.case("preflight_cuda_and_nccl_of_torch_1_13", preflight, ["--hosts", "a:2,old:2"], 1, None,
               "differ in CUDA (major): 12.4 and 11.7")
    suite.case("preflight_too_few_gpus", preflight, ["--hosts", "a:2,b:2"], 1, None,
               "hetlaunch: preflight: host 'b' has 1 GPU for its 2 workers\n")
    suite.case("preflight_gpus_and_none", preflight, ["--hosts", "a:2,d:1"], 1, None,
               "host 'a' has 2 GPUs and host 'd' none")
    suite.case("preflight_no_torch", preflight, ["--hosts", "a:2,nt1:1"], 1, None,
               "host 'nt1' (Python ")

    def as_json(r):
        got = json.loads(r.stdout)
        want = {"passed": True, "min_compute_capability": "8.0", "bf16": True, "problems": []}
        problems = [f"{k}: {got.get(k)!r}" for k in want if got.get(k) != want[k]]
        hosts = [(h["host"], h["torch"], h["cuda"], h["nccl"], h["gpus"], h["capability"]) for h in got["hosts"]]
        if hosts != [("a", "2.6.0+cu124", "12.4", "2.21.5", 2, "8.0"), ("h", "2.6.0+cu124", "12.4", "2.21.5", 8, "9.0")]:
            problems.append(f"hosts {hosts}")
        return problems
    suite.case("preflight_json", preflight, ["--hosts", "a:2,h:8", "--json"], 0, check=as_json)

    # slots=auto and preflight together: one ssh a host, the count and the facts in one command.
    def one_round(r):
        asked = calls.read_text().count("x") if calls.exists() else 0
        return [] if asked == 2 else [f"{asked} ssh calls for 2 hosts: {r.stdout}"]
    suite.case("preflight_with_slots_auto_one_ssh_a_host", preflight,
               ["--hosts", "a:auto,h:auto", "--gpu-count-command", "case $HOST in a) echo 2;; h) echo 8;; esac"], 0,
               "the hosts can run one job", None, one_round)
    suite.case("preflight_python_missing", preflight, ["--hosts", "a:2"], 1, None,
               "hetlaunch: preflight: host 'a': '/nonexistent/python3 -c ...' printed no HETLAUNCH_FACTS line "
               "(exit status 127", python="/nonexistent/python3")

    def run(args, program, status, expected, check=None):
        log.unlink(missing_ok=True)
        marker = pathlib.Path(tmp) / "node-ran"
        marker.unlink(missing_ok=True)
        r = subprocess.run([binary, "run", *args, "--preflight", "--python", sys.executable, "--ssh", str(ssh),
                            "--events", str(log), "--program", "sh", "--program", "-c", "--program",
                            f"touch {marker}; {program}", "--", "t.py"],
                           capture_output=True, text=True, env=env, timeout=60)
        events, problems = job_events.read(log)
        problems += job_events.compare(events, expected)
        if r.returncode != status:
            problems.append(f"run exited {r.returncode}, expected {status}: {r.stderr[-1500:]}")
        if status and marker.exists():
            problems.append("a node started")
        if check and not problems:
            problems += check(events, r)
        return problems

    def refused_with(text):
        def check(events, r):
            hosts = [h["host"] for h in events[0]["hosts"]]
            problems = [] if hosts == ["a", "c"] and events[0]["passed"] is False else [f"preflight event {events[0]}"]
            return problems + ([] if text in r.stderr else [f"no {text!r} in {r.stderr!r}"])
        return check
    refused = [("preflight", 0), ("job_exited", 0, "preflight_failed")]
    suite.case("run_preflight_refuses_before_any_node", run, ["--hosts", "a:2,c:1"], "true", 1, refused,
               refused_with("hetlaunch: preflight: no node was started"))
    suite.case("run_preflight_status_by_reason", run, ["--hosts", "a:2,c:1", "--exit-status-by-reason"], "true",
               6, refused, refused_with("differ in torch (major.minor): 2.6.0+cu124 and 2.14.1+cu128"))
    told = ('[ "$HETLAUNCH_MIN_COMPUTE_CAPABILITY" = 7.5 ] && [ "$HETLAUNCH_BF16" = 0 ] || '
            '{ echo "told $HETLAUNCH_MIN_COMPUTE_CAPABILITY $HETLAUNCH_BF16" >&2; exit 9; }')
    suite.case("run_preflight_tells_every_worker", run, ["--hosts", "a:2,b:1"], told, 0,
               [("preflight", 0), ("planned", 0), ("node_started", 0, 0, "a", None), ("node_started", 0, 1, "b", None),
                ("node_exited", 0, 0, "a", "succeeded"), ("node_exited", 0, 1, "b", "succeeded"),
                ("job_exited", 0, "succeeded")])
    # CPU hosts: neither variable, and an inherited one never reaches a worker.
    untold = ('[ -z "${HETLAUNCH_MIN_COMPUTE_CAPABILITY+x}" ] && [ -z "${HETLAUNCH_BF16+x}" ] || '
              '{ echo told >&2; exit 9; }')
    env["HETLAUNCH_BF16"] = "1"
    suite.case("run_preflight_cpu_hosts_tell_nothing", run, ["--hosts", "d:1,e:1"], untold, 0,
               [("preflight", 0), ("planned", 0), ("node_started", 0, 0, "d", None), ("node_started", 0, 1, "e", None),
                ("node_exited", 0, 0, "d", "succeeded"), ("node_exited", 0, 1, "e", "succeeded"),
                ("job_exited", 0, "succeeded")])


def stand_in_ssh(tmp):
    """FAKE_SSH written into `tmp`, executable: its path."""
    ssh = pathlib.Path(tmp) / "ssh"
    ssh.write_text(FAKE_SSH)
    ssh.chmod(0o755)
    return ssh


def fake_ssh_cases(suite, binary):
    """Discover, run's node statuses and signals, and preflight with the stand-in ssh (the events
    cases run in shards of their own: events_in_shards)."""
    with tempfile.TemporaryDirectory() as tmp:
        ssh = stand_in_ssh(tmp)
        base = [binary]
        preflight_cases(suite, binary, ssh, tmp)

        def check(name, ok, detail):
            suite.report(name, [] if ok else [repr(detail)])

        count = 'case $HOST in a) echo 3;; b) echo " 2 ";; c) true;; d) echo none;; *) exit 4;; esac'
        r = subprocess.run(base + ["discover", "--hosts", "a:auto,b:auto,x:5", "--ssh", str(ssh),
                                   "--gpu-count-command", count], capture_output=True, text=True, timeout=30)
        check("discover_gpu_count_command", r.returncode == 0 and r.stdout == "a slots=3\nb slots=2\nx slots=5\n",
              (r.returncode, r.stdout, r.stderr))
        # Weights and ceilings survive: from --weight and --max-batch (host lists, later flags win)
        # and from a hostfile, so that a plan of the printed hostfile splits a global batch as a
        # plan of the input does, and gives the workers the same ceilings.
        hf = pathlib.Path(tmp) / "weighted"
        hf.write_text("a slots=auto weight=2.5 max_batch=16\nb slots=auto\nx slots=5 weight=0.125\n")
        r = subprocess.run(base + ["discover", "--hostfile", str(hf), "--weight", "b=4", "--weight", "a=3",
                                   "--max-batch", "x=2", "--ssh", str(ssh), "--gpu-count-command", count],
                           capture_output=True, text=True, timeout=30)
        check("discover_keeps_weights", r.returncode == 0 and
              r.stdout == "a slots=3 weight=3 max_batch=16\nb slots=2 weight=4\nx slots=5 weight=0.125 max_batch=2\n",
              (r.returncode, r.stdout, r.stderr))
        printed = pathlib.Path(tmp) / "printed"
        printed.write_text(r.stdout)
        plans = [subprocess.run(base + ["plan", "--json", "--global-batch", "100", *args], capture_output=True,
                                text=True, timeout=30).stdout
                 for args in (["--hostfile", str(printed)],
                              ["--hosts", "a:3,b:2,x:5", "--weight", "a=3", "--weight", "b=4", "--weight", "x=0.125"])]
        split = [[(n["node_batch"], n["weight"]) for n in json.loads(p)["nodes"]] if p else None for p in plans]
        check("discover_output_plans_the_same_split", split[0] is not None and split[0] == split[1], split)
        # A slots=auto host that cannot be reached (ssh's 255) is left out with --exclude-failed, as a
        # host with fixed slots is; without it, the job fails, naming the host.
        unreachable = count.replace("*) exit 4;;", "z) echo 'ssh: connect to host z: No route to host' >&2; exit 255;; "
                                                   "*) exit 4;;")
        r = subprocess.run(base + ["run", "--hosts", "a:auto,z:auto,x:5", "--ssh", str(ssh), "--gpu-count-command",
                                   unreachable, "--restarts", "1", "--exclude-failed", "--dry-run", "--", "t.py"],
                           capture_output=True, text=True, timeout=30)
        check("run_auto_unreachable_left_out", r.returncode == 0 and "# node 0 on a\n" in r.stdout and
              "# node 1 on x\n" in r.stdout and " z " not in r.stdout and
              "hetlaunch: slots=auto: host 'z' cannot be reached (ssh exit status 255: 'ssh: connect to host z: "
              "No route to host'): left out (--exclude-failed)" in r.stderr, (r.returncode, r.stdout[-300:], r.stderr))
        r = subprocess.run(base + ["run", "--hosts", "a:auto,z:auto", "--ssh", str(ssh), "--gpu-count-command",
                                   unreachable, "--dry-run", "--", "t.py"], capture_output=True, text=True, timeout=30)
        check("run_auto_unreachable_fails_without_exclude_failed", r.returncode == 1 and
              "host 'z'" in r.stderr and "failed (exit status 255)" in r.stderr, (r.returncode, r.stderr))
        r = subprocess.run(base + ["run", "--hosts", "z:auto", "--ssh", str(ssh), "--gpu-count-command",
                                   unreachable, "--restarts", "1", "--exclude-failed", "--dry-run", "--", "t.py"],
                           capture_output=True, text=True, timeout=30)
        check("run_auto_unreachable_none_left", r.returncode == 1 and "no host is left to run on" in r.stderr,
              (r.returncode, r.stderr))
        r = subprocess.run(base + ["discover", "--hosts", "c:auto,d:auto,e:auto", "--ssh", str(ssh),
                                   "--gpu-count-command", count], capture_output=True, text=True, timeout=30)
        expected = ["host 'c': 'case", "printed no GPU count (expected one positive integer)",
                    "host 'd': ", "host 'e': ", "failed (exit status 4)"]
        check("discover_prints_nothing_or_fails", r.returncode == 1 and all(e in r.stderr for e in expected),
              (r.returncode, r.stderr))
        # A job that succeeds prints its nodes' lines and nothing else; one that fails returns the
        # failed node's status and says which node it was.
        r = subprocess.run(base + ["run", "--hosts", "a:1,b:2", "--ssh", str(ssh), "--program", "sh", "--program", "-c",
                                   "--program", "echo hi; echo err >&2", "--", "t.py"], capture_output=True, text=True,
                           timeout=30)
        check("run_clean_output", r.returncode == 0 and sorted(r.stdout.splitlines()) == ["[0 a] hi", "[1 b] hi"] and
              sorted(r.stderr.splitlines()) == ["[0 a] err", "[1 b] err"], (r.returncode, r.stdout, r.stderr))
        r = subprocess.run(base + ["run", "--hosts", "a:1,b:2", "--ssh", str(ssh), "--kill-after", "1", "--program", "sh",
                                   "--program", "-c", "--program", 'case $HOST in b) exit 3;; esac; exec sleep 30',
                                   "--", "t.py"], capture_output=True, text=True, timeout=30)
        check("run_failed_node_status", r.returncode == 3 and "hetlaunch: node 1 ('b'): exit status 3" in r.stderr and
              "hetlaunch: node 0 ('a'): stopped" in r.stderr, (r.returncode, r.stderr))
        # SIGTERM and SIGHUP stop every node as SIGINT does: the nodes' processes are gone when
        # run exits with 143 or 129.
        for sig, code in ((signal.SIGTERM, 143), (signal.SIGHUP, 129)):
            marker = pathlib.Path(tmp) / f"job-{sig}"
            proc = subprocess.Popen(base + ["run", "--hosts", "a:1,b:2", "--ssh", str(ssh), "--kill-after", "1",
                                            "--program", "sh", "--program", "-c",
                                            "--program", f'echo up; exec sleep 300 # {marker}', "--", "t.py"],
                                    stdout=subprocess.PIPE, stderr=subprocess.PIPE)
            deadline = time.monotonic() + 20
            out = b""
            os.set_blocking(proc.stdout.fileno(), False)
            while out.count(b"up") < 2 and time.monotonic() < deadline:
                out += proc.stdout.read() or b""
                time.sleep(0.05)
            proc.send_signal(sig)
            try:
                _, err = proc.communicate(timeout=20)
            except subprocess.TimeoutExpired:
                proc.kill()
                _, err = proc.communicate()
            left = subprocess.run(["pgrep", "-f", str(marker)], capture_output=True, text=True).stdout.split()
            check(f"run_stops_on_{signal.Signals(sig).name}", proc.returncode == code and not left and
                  b"[0 a] up" in out and b"[1 b] up" in out, (proc.returncode, out, err, left))
            for pid in left:
                os.kill(int(pid), signal.SIGKILL)


# A failed step's stderr as the batch script keeps it: node 1's torchrun (h2) ends first, so srun
# names h2 first, but node 0's rank 0 (h1) failed first, as both torchruns' summaries say.
STEP_LOG = """ERROR:torch.distributed.elastic.multiprocessing.api:failed (exitcode: 7) local_rank: 0 (pid: 9) of binary: /usr/bin/python3
ERROR:torch.distributed.elastic.multiprocessing.api:failed (exitcode: 1) local_rank: 0 (pid: 8) of binary: /usr/bin/python3
Root Cause (first observed failure):
[0]:
  time      : 2026-12-06_12:13:52
  host      : h2.cluster.example
  rank      : 2 (local_rank: 0)
  exitcode  : 1 (pid: 8)
srun: error: h2: task 0: Exited with exit code 1
Root Cause (first observed failure):
[0]:
  time      : 2026-12-06_12:13:49
  host      : h1.cluster.example
  rank      : 0 (local_rank: 0)
  exitcode  : 7 (pid: 9)
srun: error: h1: task 0: Terminated
"""


def slurm_comment_cases(suite, binary):
    """The comment a failed batch script sets, from its step's stderr: the earliest of torchrun's
    summaries names the cause (not the first task srun sees end), its host matched to the plan's
    by its short name; without summaries, srun's first failed host and torchrun's local rank; with
    --exclude-failed the node is not named. The script's own function, run by bash, with scontrol
    and hetlaunch as stand-ins."""
    with tempfile.TemporaryDirectory() as tmp:
        def comment(reason, log_text, *sbatch_args):
            groups = ["--group", "1:2", "--group", "1:1"] if "--exclude-failed" not in sbatch_args else \
                ["--group", "2:1"]  # nodes left out: one group
            script = run(binary, ["sbatch", *groups, *sbatch_args, "--", "t.py"], os.environ)[0]
            function = script[script.index("say_failure() {"):]
            function = function[:function.index("\n}\n") + 3]
            log = pathlib.Path(tmp) / "step.log"
            log.write_text(log_text)
            stubs = (f'scontrol() {{ echo "$@"; }}; hetlaunch() {{ {binary} plan --hosts h1:2,h2:1 -- t.py; }}; '
                     f'step_log={log}; SLURM_JOB_ID=7\n')
            return subprocess.run(["bash", "-c", stubs + function + f"say_failure {reason}"],
                                  capture_output=True, text=True, timeout=30).stdout

        def case(reason, log_text, expected, *sbatch_args):
            got = comment(reason, log_text, *sbatch_args)
            return [] if got == expected else [f"{got!r}, expected {expected!r}"]
        suite.case("slurm_comment_names_the_earliest_summary", case, "worker_failed", STEP_LOG,
                   "update JobId=7 Comment=hetlaunch: worker_failed node 0 host h1 rank 0\n")
        without = "\n".join(line for line in STEP_LOG.splitlines()
                            if line.startswith(("srun", "ERROR"))) + "\n"
        suite.case("slurm_comment_without_summaries_reads_srun_and_torchrun", case, "restarts_exhausted", without,
                   "update JobId=7 Comment=hetlaunch: restarts_exhausted node 1 host h2 rank 2\n", "--restarts", "1")
        suite.case("slurm_comment_nodes_that_move_name_the_host", case, "restarts_exhausted", STEP_LOG,
                   "update JobId=7 Comment=hetlaunch: restarts_exhausted host h1 rank 0\n",
                   "--restarts", "1", "--exclude-failed")
        suite.case("slurm_comment_with_nothing_reported", case, "interrupted", "",
                   "update JobId=7 Comment=hetlaunch: interrupted\n", "--restarts", "1")


# The `run --events` cases spend their time in their programs' sleeps (a minute, one after
# another) and share nothing but a directory: they run in EVENT_SHARDS processes of this script
# (--events-shard K/N), each with a directory of its own, beside the other cases.
EVENT_SHARDS = 6


class Shard:
    """A suite that runs every `count`-th case given to it, from the `index`-th, and passes the
    others over: the same cases in `count` shards run each of them once."""

    def __init__(self, suite, index, count):
        self.suite, self.index, self.count, self.given = suite, index, count, 0

    def case(self, name, function, *args, **kwargs):
        mine = self.given % self.count == self.index
        self.given += 1
        return self.suite.case(name, function, *args, **kwargs) if mine else True


def events_shard(binary, index, count):
    """This process is one shard of the events cases: runs its cases and says its counts."""
    with Suite(f"cli events {index}/{count}") as suite:
        with tempfile.TemporaryDirectory() as tmp:
            events_cases(Shard(suite, index, count), binary, stand_in_ssh(tmp), tmp)
    return suite.status


class events_in_shards:
    """with events_in_shards(suite, binary): the events cases run in EVENT_SHARDS processes while
    the block runs; at its end their lines are printed, in the shards' order, and their counts
    added to `suite`'s. A shard that ends without its counts (a crash) fails the suite; a block
    that raises (a signal) stops the shards."""

    def __init__(self, suite, binary):
        self.suite, self.binary = suite, binary

    def __enter__(self):
        self.shards = []
        for k in range(EVENT_SHARDS):
            out = tempfile.TemporaryFile()
            proc = subprocess.Popen([sys.executable, __file__, self.binary, "--events-shard", f"{k}/{EVENT_SHARDS}"],
                                    stdout=out, stderr=subprocess.STDOUT)
            self.shards.append((proc, out))
        return self

    def __exit__(self, kind, _error, _trace):
        try:
            if kind is None:
                for proc, _ in self.shards:
                    proc.wait()
        finally:  # interrupted, here or in the block: the shards stop (their suites tear down)
            for proc, _ in self.shards:
                if proc.poll() is None:
                    proc.terminate()
                    try:
                        proc.wait(timeout=30)
                    except subprocess.TimeoutExpired:
                        proc.kill()
                        proc.wait()
        for k, (proc, out) in enumerate(self.shards):
            out.seek(0)
            text = out.read().decode(errors="replace")
            out.close()
            if kind is not None:
                continue
            counts = re.search(rf"^cli events {k}/{EVENT_SHARDS}: (\d+) passed, (\d+) failed", text, re.M)
            print(text[:counts.start()] if counts else text, end="", flush=True)
            if counts:
                self.suite.passed += int(counts.group(1))
                self.suite.failed += int(counts.group(2))
            else:
                self.suite.report(f"events shard {k}/{EVENT_SHARDS}",
                                  [f"ended with status {proc.returncode} and no counts"])
        return False


def main():
    binary = sys.argv[1]
    if "--events-shard" in sys.argv:
        index, count = sys.argv[sys.argv.index("--events-shard") + 1].split("/")
        return events_shard(binary, int(index), int(count))
    update = "--update" in sys.argv
    e2e = "--e2e-only" in sys.argv or "--e2e" in sys.argv
    if e2e:
        i = sys.argv.index("--e2e-only" if "--e2e-only" in sys.argv else "--e2e")
        worker, work = sys.argv[i + 1], sys.argv[i + 2]
    with Suite("cli") as suite:
        if not e2e:
            with events_in_shards(suite, binary):
                golden_cases(suite, binary, update)
                compress_peers(suite, binary, required=False)
                slurm_case(suite, binary)
                slurm_comment_cases(suite, binary)
                hostile_cases(suite, binary)
                fake_ssh_cases(suite, binary)
                usage_cases(suite, binary)
        elif "--e2e-only" not in sys.argv:  # the references are installed where the jobs run
            compress_peers(suite, binary, required=True)
        if e2e:
            suite.case("exec_e2e: 3 torchrun agents (3 + 1 + 2 workers) started by hetlaunch exec",
                       exec_e2e, binary, worker, work)
            suite.case("run --local: the same job on this machine, no ssh, hosts as labels",
                       local_e2e, binary, worker, work)
    return suite.status

if __name__ == "__main__":
    sys.exit(main())
