#!/usr/bin/env python3
"""`hetlaunch jobset`, proven without a Kubernetes cluster.

1. Golden manifests for a few shapes (tests/jobset/golden/*.yaml), reviewed by reading;
   `--update` rewrites them from the current output.
2. Every manifest validates against JobSet's own CRD schema (its v1alpha2 openAPIV3Schema, which
   expands the Job and Pod templates), vendored in tests/jobset/crd/ with its licence (or the file
   HETLAUNCH_JOBSET_CRD names), with python3-jsonschema; then the rules a schema cannot say: no field the schema does not declare (Kubernetes would
   drop it silently), names that are DNS labels, generated Job and pod host names of at most 63
   characters, Indexed completion with one pod per completion.
3. With --pods (root): the pods are simulated. For each pod the manifest describes, a network
   namespace host with that pod's stable host name, reachable by the others under its
   <host>.<subdomain> name, gets the environment Kubernetes would give it (the container's `env`,
   with the downward-API index of the pod) and runs the container's command and args exactly as
   the manifest writes them (parsed from the YAML, not rebuilt), with a real torchrun. The
   job of 4 + 2 + 1 workers all_reduces, and every worker's variables equal the plan; the pods are
   those of the set's third attempt (restart-attempt annotation 2), which every worker sees as
   HETLAUNCH_RESTART_COUNT; each pod's termination message is its node's node_exited.

usage: jobset_test.py HETLAUNCH [--update] [--pods WORKER_PY]
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

import jsonschema
import yaml

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parents[1] / "support"))
import netns  # noqa: E402
import processes  # noqa: E402
import torchrun_flags  # noqa: E402
from harness import Suite, signals_held  # noqa: E402
from worker_records import rank_problems, read_environ, read_records  # noqa: E402

HERE = pathlib.Path(__file__).resolve().parent
GOLDEN = HERE / "golden"
# JobSet's own CRD, vendored with its licence (crd/SOURCE.md says from where); another release's
# file can be named by HETLAUNCH_JOBSET_CRD.
CRD = pathlib.Path(os.environ.get("HETLAUNCH_JOBSET_CRD") or HERE / "crd" / "jobset.x-k8s.io_jobsets.yaml")
RESTART_ATTEMPT = "2"  # the simulated pods are those of the set's third attempt

SHAPES = {
    # docs/kubernetes.md's example: two 8-GPU nodes and one 4-GPU node.
    "readme": ["--name", "train", "--image", "nvcr.io/nvidia/pytorch:25.01-py3", "--group", "2:8", "--group", "1:4",
               "--", "train.py", "--epochs", "3"],
    "selectors": ["--name", "mixed-a100-l4", "--namespace", "research", "--image", "registry.local/train:1",
                  "--group", "1:8", "--group", "3:2", "--node-selector", "0:nvidia.com/gpu.product=A100",
                  "--node-selector", "1:nvidia.com/gpu.product=L4", "--cpu", "16", "--memory", "128Gi",
                  "--env", "NCCL_DEBUG=INFO", "--master-port", "23456", "--max-restarts", "2",
                  "--jobset-max-restarts", "1", "--jobset-restart-strategy", "BlockingRecreate",
                  "-m", "--", "pkg.train", "--lr", "3e-4"],
    # A set JobSet recreates at once after a failure; every pod learns the attempt.
    "restarts": ["--name", "resume", "--image", "img", "--group", "2:8", "--group", "1:4", "--jobset-max-restarts", "5",
                 "--jobset-restart-strategy", "Recreate", "--", "train.py", "--resume"],
    "hostile": ["--name", "h", "--image", "img", "--group", "1:1", "--group", "1:2", "--",
                "train.py", "it's", "$(rm -rf /)", "a\nb", "--node_rank=@"],
    # Work shares: each pod's part of the global batch from its index.
    "shares": ["--name", "shares", "--image", "img", "--group", "3:8:3", "--group", "2:4", "--group", "1:2:1.5",
               "--global-batch", "1001", "--", "train.py"],
}


def manifest(binary, args, json_out=False):
    r = subprocess.run([binary, "jobset", *(["--json"] if json_out else []), *args], capture_output=True, text=True)
    if r.returncode != 0:
        raise RuntimeError(f"hetlaunch jobset {args}: {r.returncode} {r.stderr}")
    return r.stdout


def crd_schema():
    crd = yaml.safe_load(CRD.read_text())
    (version,) = [v for v in crd["spec"]["versions"] if v["name"] == "v1alpha2"]
    return version["schema"]["openAPIV3Schema"]


def undeclared_fields(value, schema, path="$"):
    """Fields the schema does not declare: Kubernetes' structural pruning would drop them. (The
    root's metadata is the API server's ObjectMeta, which it checks itself.)"""
    found = []
    if path == "$.metadata":
        return found
    if isinstance(value, dict):
        props = schema.get("properties")
        extra = schema.get("additionalProperties")
        for key, v in value.items():
            if props is not None and key in props:
                found += undeclared_fields(v, props[key], f"{path}.{key}")
            elif isinstance(extra, dict):
                found += undeclared_fields(v, extra, f"{path}.{key}")
            elif props is not None or extra is not True:
                found.append(f"{path}.{key}")
    elif isinstance(value, list) and "items" in schema:
        for i, v in enumerate(value):
            found += undeclared_fields(v, schema["items"], f"{path}[{i}]")
    return found


DNS_LABEL = re.compile(r"^[a-z]([-a-z0-9]*[a-z0-9])?$")


def rules(doc):
    problems = []
    name = doc["metadata"]["name"]
    if not DNS_LABEL.match(name):
        problems.append(f"name {name!r} is not a DNS label")
    subdomain = doc["spec"]["network"]["subdomain"]
    for rj in doc["spec"]["replicatedJobs"]:
        job = rj["template"]["spec"]
        if job.get("completionMode") != "Indexed" or job["completions"] != job["parallelism"]:
            problems.append(f"{rj['name']}: not one Indexed pod per completion")
        for j in range(rj["replicas"]):
            job_name = f"{name}-{rj['name']}-{j}"
            if len(job_name) > 63:
                problems.append(f"Job name {job_name} is longer than 63")
            for k in range(job["completions"]):
                host = f"{job_name}-{k}"
                if len(host) > 63 or not DNS_LABEL.match(host):
                    problems.append(f"pod host name {host} is not a DNS label of at most 63 characters")
        if not DNS_LABEL.match(subdomain):
            problems.append(f"subdomain {subdomain!r}")
    return problems


def jobset_index_variable(container):
    """The variable the downward API fills with the pod's index."""
    return next(e["name"] for e in container["env"] if "valueFrom" in e)


def check_manifests(run, binary, update):
    have_crd = CRD.exists()
    validator = jsonschema.Draft7Validator(crd_schema()) if have_crd else None
    for name, args in SHAPES.items():
        text = manifest(binary, args)
        path = GOLDEN / f"{name}.yaml"
        if update:
            path.write_text(text)
        problems = [] if path.exists() and path.read_text() == text else [f"differs from {path}"]
        doc = yaml.safe_load(text)
        if json.loads(manifest(binary, args, json_out=True)) != doc:
            problems.append("the JSON and YAML manifests differ")
        if have_crd:
            problems += [f"schema: {e.message} at {list(e.absolute_path)}" for e in validator.iter_errors(doc)]
            problems += [f"undeclared field {f}" for f in undeclared_fields(doc, crd_schema())]
        problems += rules(doc)
        run.report(f"manifest {name}", problems)
    # Each pod's command puts its node rank, offset(group) + index, where torchrun reads it: run
    # every pod's command and args of a 1:8 + 3:2 job as written, with printf as the launcher.
    doc = yaml.safe_load(manifest(binary, ["--name", "r", "--image", "i", "--group", "1:8", "--group", "3:2",
                                           "--program", "printf", "--program", "%s\\n", "--", "t.py", "x y"]))
    ranks = []
    for rj in doc["spec"]["replicatedJobs"]:
        job = rj["template"]["spec"]
        container = job["template"]["spec"]["containers"][0]
        for k in range(job["completions"]):
            out = subprocess.run(container["command"] + container["args"], capture_output=True, text=True,
                                 env={"PATH": os.environ["PATH"], "HETLAUNCH_POD_INDEX": str(k)}).stdout.splitlines()
            # printf prints the arguments after its format: --nnodes, then the node rank.
            ranks.append(out[1] if len(out) > 1 else out)
            if out[-2:] != ["t.py", "x y"]:
                ranks.append(f"script arguments {out[-2:]}")
    ok = ranks == ["--node_rank=0", "--node_rank=1", "--node_rank=2", "--node_rank=3"]
    run.report("pod k of group g is node offset(g) + k", [] if ok else [f"node ranks {ranks}"])
    # With a global batch each pod computes its node's part, and its host, from its index: run every
    # pod's command as written, with a launcher that prints them, and compare with the plan of the
    # same nodes.
    for groups, global_batch in [(["3:8:3", "2:4", "1:2:1.5"], 1001), (["5:1", "4:2:2.5"], 13), (["7:3"], 100),
                                 (["2:2:0.000001", "3:1:1000000"], 2**31 - 1)]:
        args = ["--name", "w", "--image", "i", "--global-batch", str(global_batch), "--program", "sh", "--program", "-c",
                "--program", 'echo "$HETLAUNCH_GLOBAL_BATCH $HETLAUNCH_NODE_BATCH $HETLAUNCH_NODE_BATCH_OFFSET '
                '$HETLAUNCH_NODE_HOST"']
        hosts, weights = [], []
        for g, group in enumerate(groups):
            nodes, gpus, *weight = group.split(":")
            args += ["--group", group]
            for k in range(int(nodes)):
                hosts.append(f"w-g{g}-0-{k}.w:{gpus}")
                weights += ["--weight", f"w-g{g}-0-{k}.w={weight[0]}"] if weight else []
        doc = yaml.safe_load(manifest(binary, [*args, "--", "t.py"]))
        got = []
        for rj in doc["spec"]["replicatedJobs"]:
            job = rj["template"]["spec"]
            container = job["template"]["spec"]["containers"][0]
            env = {"PATH": os.environ["PATH"]}
            env.update({e["name"]: e["value"] for e in container["env"] if "value" in e})
            for k in range(job["completions"]):
                env[jobset_index_variable(container)] = str(k)
                got.append(subprocess.run(container["command"] + container["args"], capture_output=True, text=True,
                                          env=env).stdout.strip())
        plan = json.loads(subprocess.run([binary, "plan", "--json", "--hosts", ",".join(hosts), *weights,
                                          "--global-batch", str(global_batch)], capture_output=True, text=True,
                                         check=True).stdout)
        want = [f"{global_batch} {n['node_batch']} {n['node_batch_offset']} {n['host']}" for n in plan["nodes"]]
        run.report(f"pods of {' + '.join(groups)} take their plan's part of {global_batch}",
                   [] if got == want else [f"{got}, the plan {want}"])
    # docs/kubernetes.md's example is the golden manifest `readme`, as it is.
    readme = (HERE.parent.parent / "docs" / "kubernetes.md").read_text()
    in_readme = (GOLDEN / "readme.yaml").read_text() in readme
    run.report("docs/kubernetes.md shows the golden manifest 'readme'",
               [] if in_readme else ["the manifest is not in the page, as it is"])
    # The schema check itself catches what it should: a misspelt field and a wrong type.
    if have_crd:
        doc = yaml.safe_load(manifest(binary, SHAPES["readme"]))
        doc["spec"]["replicatedJobs"][0]["template"]["spec"]["paralelism"] = 2
        doc["spec"]["replicatedJobs"][1]["replicas"] = "one"
        caught = bool(undeclared_fields(doc, crd_schema())) and any(validator.iter_errors(doc))
        run.report("the checks catch a misspelt field and a wrong type", [] if caught else ["not caught"])
    # Names Kubernetes would refuse are refused with a message.
    for bad, expected in [(["--name", "Train"], "is not a DNS label"), (["--name", "x" * 60], "more than 63"),
                          (["--name", "ok", "--namespace", "a_b"], "namespace")]:
        args = [*bad, "--image", "i", "--group", "2:1", "--", "t.py"]
        r = subprocess.run([binary, "jobset", *args], capture_output=True, text=True)
        ok = r.returncode == 1 and expected in r.stderr
        run.report(f"refused: {' '.join(bad)[:40]}", [] if ok else [f"exit {r.returncode}: {r.stderr}"])


# ---- simulated pods --------------------------------------------------------------------------

PREFIX = f"hj{os.getpid()}"
NPROC = [4, 2, 1]


def simulate_pods(binary, worker):
    """4 + 2 + 1 workers: three groups of one pod each (4, 2 and 1 GPUs). Returns the problems."""
    netns.remove_stale("hj")
    work = pathlib.Path(tempfile.mkdtemp(prefix="hetlaunch-jobset-"))
    work.chmod(0o755)
    # With work shares (the first group weighing 2): check-env checks every worker's part too.
    args = ["--name", "sim", "--image", "unused", "--group", "1:4:2", "--group", "1:2", "--group", "1:1",
            "--global-batch", "29", *torchrun_flags.torchrun(), "--master-port", "29801",
            "--env", "GLOO_SOCKET_IFNAME=eth0", "--", worker, str(work), binary, "check-env", "--hosts",
            "sim-g0-0-0.sim:4,sim-g1-0-0.sim:2,sim-g2-0-0.sim:1", "--weight", "sim-g0-0-0.sim=2", "--global-batch", "29"]
    doc = yaml.safe_load(manifest(binary, args))
    subdomain = doc["spec"]["network"]["subdomain"]
    pods = []  # (host, container, index)
    for rj in doc["spec"]["replicatedJobs"]:
        job = rj["template"]["spec"]
        for k in range(job["completions"]):
            host = f"{doc['metadata']['name']}-{rj['name']}-0-{k}"
            pods.append((host, job["template"]["spec"]["containers"][0], k))
    addresses = [f"198.18.2.{i + 1}" for i in range(len(pods))]
    # Each pod a host, resolving the others by their pod host names, as the headless Service does.
    network = netns.network(PREFIX, [(f"p{i}", [f"{addresses[i]}/24"]) for i in range(len(pods))],
                            etc_hosts="127.0.0.1 localhost\n" + "".join(
                                f"{addresses[i]} {pods[i][0]}.{subdomain} {pods[i][0]}\n" for i in range(len(pods))))
    names = network.namespaces
    procs = []
    problems = []
    try:
        network.create()
        for i, (host, container, k) in enumerate(pods):
            # The termination message goes where the test reads it, not to this machine's /dev.
            env = {"PATH": "/usr/local/bin:/usr/bin:/bin", "HOSTNAME": host,
                   "HETLAUNCH_TERMINATION_LOG": str(work / f"pod-{i}.termination")}
            for e in container["env"]:
                if "value" in e:
                    env[e["name"]] = e["value"]
                elif e["name"] == "HETLAUNCH_RESTART_COUNT":  # the downward API: the set's restart attempt
                    assert e["valueFrom"]["fieldRef"]["fieldPath"] == \
                        "metadata.annotations['jobset.sigs.k8s.io/restart-attempt']"
                    env[e["name"]] = RESTART_ATTEMPT
                else:  # the downward API: the Job's completion index annotation
                    assert e["valueFrom"]["fieldRef"]["fieldPath"] == \
                        "metadata.annotations['batch.kubernetes.io/job-completion-index']"
                    env[e["name"]] = str(k)
            command = container["command"] + container["args"]
            log = open(work / f"pod-{i}.log", "w")
            procs.append(subprocess.Popen(
                ["ip", "netns", "exec", names[i], "unshare", "--uts", "sh", "-c", 'hostname "$0" && exec "$@"', host,
                 "env", "-i", *[f"{k2}={v}" for k2, v in env.items()], *command],
                stdout=log, stderr=subprocess.STDOUT, start_new_session=True))
        deadline = time.monotonic() + 240
        codes = []
        for p in procs:
            try:
                codes.append(p.wait(timeout=max(1, deadline - time.monotonic())))
            except subprocess.TimeoutExpired:
                os.killpg(p.pid, signal.SIGKILL)
                codes.append(None)
        if codes != [0] * len(procs):
            problems.append(f"pods exited {codes}")
        # Each container's termination message: its node's node_exited.
        for i, (host, _, _) in enumerate(pods):
            path = work / f"pod-{i}.termination"
            said = json.loads(path.read_text()) if path.exists() else None
            want = {"event": "node_exited", "node": i, "host": f"{host}.{subdomain}", "status": 0,
                    "reason": "succeeded"}
            if said != want:
                problems.append(f"pod {i}'s termination message {said}, expected {want}")
        problems += rank_problems(read_records(work), NPROC,
                                  lambda rank, node: {"MASTER_ADDR": "sim-g0-0-0.sim", "MASTER_PORT": "29801"})
        for rank in range(7):
            attempt = read_environ(work / f"worker-{rank}.environ")
            if attempt.get(b"HETLAUNCH_RESTART_COUNT") != RESTART_ATTEMPT.encode():
                problems.append(f"rank {rank} got HETLAUNCH_RESTART_COUNT={attempt.get(b'HETLAUNCH_RESTART_COUNT')}, "
                                f"not the pod's restart-attempt annotation {RESTART_ATTEMPT}")
        if problems:
            for i in range(len(pods)):
                print((work / f"pod-{i}.log").read_text(errors="replace")[-2000:])
    finally:
        with signals_held():
            for p in procs:
                if p.poll() is None:
                    os.killpg(p.pid, signal.SIGKILL)
                    p.wait()
            network.remove()
            shutil.rmtree(work, ignore_errors=True)
    left = processes.matching(lambda proc: str(work).encode() in (proc / "cmdline").read_bytes())
    if left:
        problems.append(f"processes left: {left}")
    return problems


def main():
    binary = sys.argv[1]
    update = "--update" in sys.argv
    with Suite("jobset") as run:
        if not CRD.exists():
            run.report("the JobSet CRD", [f"{CRD} does not exist (HETLAUNCH_JOBSET_CRD names the file "
                                          "jobset.x-k8s.io_jobsets.yaml of a JobSet release)"])
        check_manifests(run, binary, update)
        if "--pods" in sys.argv:
            if os.geteuid() != 0:
                run.report("simulated pods", ["they need root (network namespaces)"])
            else:
                run.case("simulated pods: 4 + 2 + 1 workers from the manifest's own commands, each with its work "
                         "share", simulate_pods, binary, sys.argv[sys.argv.index("--pods") + 1])
    return run.status


if __name__ == "__main__":
    sys.exit(main())
