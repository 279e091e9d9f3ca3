#!/usr/bin/env python3
"""Work shares in a real data-parallel job: two torchrun agents, of 3 and 1 workers with weights 1
and 3, started by `hetlaunch exec --global-batch B` on loopback, train a float64 model with DDP
on gloo. For global batches that split unevenly inside a node, every rank's DDP gradient of each
step must equal the gradient of the whole step's B samples computed here in one process (to
1e-9), both with the loss scaled by the share and with hetlaunch_shares.weighted_allreduce_hook;
without the scale it must not (the usual hand-made fix is wrong). The ranks' samples of a step
must be exactly the step's B positions, and every worker passes `hetlaunch check-env`.

Nothing the test starts outlives it: agents run in sessions of their own and carry a marker in
their environment; the marker's processes are killed at the end, also after a failure or a
signal, and those of a killed earlier run at the start.

usage: ddp_test.py HETLAUNCH [--torchrun PATH] [--work DIR]
"""
import json
import os
import pathlib
import signal
import subprocess
import sys
import time

HERE = pathlib.Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent / "support"))
sys.path.insert(0, str(HERE.parents[1] / "python"))
sys.path.insert(0, str(HERE))
import processes  # noqa: E402
from harness import Suite  # noqa: E402
import torchrun_flags  # noqa: E402
import hetlaunch_shares as shares  # noqa: E402
import ddp_worker  # noqa: E402

MARKER_NAME = "HETLAUNCH_SHARES_TEST"
HOSTS = "127.0.0.1:3,127.0.0.2:1"
WEIGHTS = ["--weight", "127.0.0.2=3"]
STEPS = 3


def reference(global_batch):
    """The gradient of each of the first STEPS steps over all of its B samples, in one process,
    and the steps' sample indices."""
    import torch

    whole = shares.Share(global_batch, 1, global_batch, 0)
    x, y = ddp_worker.data()
    steps = []
    for step, idx in enumerate(shares.ShareBatchSampler(ddp_worker.SAMPLES, whole, seed=3)):
        if step == STEPS:
            break
        model = ddp_worker.model()
        torch.nn.functional.mse_loss(model(x[idx]), y[idx]).backward()
        steps.append((idx, [v for p in model.parameters() for v in p.grad.reshape(-1).tolist()]))
    return steps


def run_job(binary, torchrun, work, global_batch, marker):
    """Both agents of one job; their exit statuses and logs."""
    port = processes.free_port()
    env = {k: v for k, v in os.environ.items() if k != "OMP_NUM_THREADS" and not k.startswith("PET_")}
    env[marker.name] = marker.value
    env["PYTHONFAULTHANDLER"] = "1"  # a worker that hangs shows where, when aborted below
    flags = ["--hosts", HOSTS, *WEIGHTS, "--global-batch", str(global_batch)]
    agents = []
    for node in range(2):
        log = open(work / f"agent-{node}.log", "w")
        agents.append(subprocess.Popen(
            [binary, "exec", "--node", str(node), *flags, "--master-port", port, *torchrun_flags.torchrun(torchrun), "--", str(HERE / "ddp_worker.py"), str(work), str(STEPS), binary, "check-env", *flags],
            stdout=log, stderr=subprocess.STDOUT, env=env, start_new_session=True))
    codes = []
    for a in agents:
        try:
            codes.append(a.wait(timeout=240))
        except subprocess.TimeoutExpired:
            # The hung workers' Python stacks reach the log through torchrun's tee.
            for pid in processes.matching(lambda proc: marker.carried_by(proc)
                                          and b"ddp_worker.py" in (proc / "cmdline").read_bytes()):
                try:
                    os.kill(pid, signal.SIGABRT)
                except ProcessLookupError:
                    pass
            time.sleep(2)
            os.killpg(a.pid, signal.SIGKILL)
            codes.append("timeout")
    return codes, "".join((work / f"agent-{n}.log").read_text() for n in range(2))


def check_job(binary, torchrun, work, global_batch, marker):
    failures = []
    codes, logs = run_job(binary, torchrun, work, global_batch, marker)
    if codes != [0, 0]:
        return [f"B={global_batch}: the agents exited {codes}\n{logs[-4000:]}"]
    plan = json.loads(subprocess.run([binary, "plan", "--json", "--hosts", HOSTS, *WEIGHTS, "--global-batch",
                                      str(global_batch)], capture_output=True, text=True, check=True).stdout)
    records = [json.loads((work / f"rank-{r}.json").read_text()) for r in range(plan["world_size"])]
    # The ranks' shares are the plan's, dealt out inside each node by the rule.
    for node in plan["nodes"]:
        for local in range(node["nproc"]):
            want = shares.rank_batch(node["node_batch"], node["node_batch_offset"], node["nproc"], local)
            got = records[node["rank_offset"] + local]
            if (got["batch"], got["offset"]) != want:
                failures.append(f"B={global_batch}: rank {got['rank']} took {(got['batch'], got['offset'])}, the rule {want}")
    sizes = sorted(r["batch"] for r in records)
    if len(set(sizes)) < 3:
        failures.append(f"B={global_batch}: the ranks' batches {sizes} do not differ inside a node and between nodes")
    tolerance = {"scaled": 1e-9, "hook": 1e-9}
    for step, (indices, full) in enumerate(reference(global_batch)):
        taken = sorted(i for r in records for i in r["indices"][step])
        if taken != sorted(indices):
            failures.append(f"B={global_batch}, step {step}: the ranks took {taken}, the step is {sorted(indices)}")
        for r in records:
            for mode, grads in r["grads"].items():
                worst = max(abs(a - b) for a, b in zip(grads[step], full))
                if mode in tolerance and worst > tolerance[mode]:
                    failures.append(f"B={global_batch}, step {step}, {mode}: rank {r['rank']} is off by {worst:.3g}")
                if mode == "unscaled" and r["rank"] == 0 and worst < 1e-6:
                    failures.append(f"B={global_batch}, step {step}: without the loss scale rank 0's gradient "
                                    f"equals the full batch's (off by {worst:.3g}); the test cannot tell")
    return failures


def torch_python(torchrun):
    """The interpreter torchrun runs on (its #! line), which has torch."""
    first = pathlib.Path(torchrun).read_text(errors="replace").splitlines()[0]
    return first[2:].strip().split()[0] if first.startswith("#!") else "python3"


def main():
    if len(sys.argv) < 2:
        print(__doc__)
        return 2
    binary = sys.argv[1]
    torchrun = processes.torchrun_of(sys.argv)
    try:
        import torch  # noqa: F401  (the reference gradients need it)
    except ImportError:
        python = torch_python(torchrun)
        os.execv(python, [python, __file__, *sys.argv[1:]])
    work_root = pathlib.Path(sys.argv[sys.argv.index("--work") + 1]) if "--work" in sys.argv else None
    scratch = processes.scratch(MARKER_NAME, "hetlaunch-shares-", parent=work_root)
    marker, tmp = scratch.marker, scratch.work
    with Suite("shares ddp", scratch.teardown, scratch.leftovers) as run:
        # Over 3 + 1 workers: 13 = 8 + 5 (3,3,2 | 5); 24 = 13 + 11 (5,4,4 | 11); 37 = 20 + 17 (7,7,6 | 17).
        for global_batch in (13, 24, 37):
            work = tmp / f"B{global_batch}"
            work.mkdir()
            run.case(f"global batch {global_batch} over 3 + 1 workers, weights 1 and 3: DDP gradients equal "
                     f"the full batch's (scaled loss, comm hook)", check_job, binary, torchrun, work, global_batch, marker)
    return run.status


if __name__ == "__main__":
    sys.exit(main())
