#!/usr/bin/env python3
"""CPU binding per local rank (`hetlaunch cpus`, `hetlaunch bind`, `--numa-binding`), against torch's
own binding code and on this machine.

- torch: for the recorded sysfs trees of tests/data/sysfs (a DGX A100 with NPS4, a DGX H100, a
  single-socket EPYC with four L3 groups, a workstation whose GPUs have numa_node -1) and a few
  broken ones, every mode, all GPUs and subsets in several orders, all CPUs allowed and fewer:
  `hetlaunch cpus --json` gives each local rank the CPUs torch 2.14's torch/numa/binding.py gives
  it, run in the sid chroot (tests/chroot) with the tree mounted as its /sys. Only torch's look-up
  of a GPU's PCI address (there is no CUDA) and of the allowed CPUs (the tree's CPUs are not this
  machine's) are replaced. Where torch raises, hetlaunch fails, naming the same local rank.
- errors: hetlaunch's messages for a tree without the files, a GPU the tree does not have,
  `exclusive` with more GPUs than cores, a worker without a GPU, no CPU left.
- live: `hetlaunch bind` with a tree that maps the worker's GPU to one CPU of this machine sets
  exactly that CPU (sched_getaffinity of the command it executes), keeps CUDA_DEVICE_ORDER or sets
  PCI_BUS_ID, and on an error exits 1 without running the command.
- torchrun: a real torchrun job of 2 workers (`hetlaunch exec --numa-binding node`) on this
  machine's torch: each worker runs bound to the CPU its GPU's node has in the tree.

usage: binding_test.py HETLAUNCH [CASE...] [--torchrun PATH]   (cases: torch errors live torchrun)
"""
import json
import os
import pathlib
import shutil
import signal
import subprocess
import sys
import time

HERE = pathlib.Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent / "data" / "sysfs"))
sys.path.insert(0, str(HERE.parent / "support"))
import make_trees  # noqa: E402
import processes  # noqa: E402
import torchrun_flags  # noqa: E402
from harness import Suite, pick  # noqa: E402

MODES = ["node", "socket", "exclusive", "core-complex"]
MARKER_NAME = "HETLAUNCH_BINDING_TEST"

# Visible devices beyond "all of them", per tree: subsets, in other orders too (a GPU's share
# follows the visible order, not the physical index).
SUBSETS = {
    "dgx-a100-nps4": ["4,5,6", "6,5,4", "0,2,4,6", "3", "1,0,3,2"],
    "dgx-h100": ["1,2,5", "7,0", "3,2,1,0"],
    "epyc-7543p": ["2,0", "1,2,3"],
    "workstation": ["1", "1,0"],
}


def allowed_sets(name):
    """The CPUs the worker may use: all; the first thread of every core; every third CPU left out;
    a NUMA node's CPUs all left out (the GPU's own node for the A100's GPU 0)."""
    m = make_trees.MACHINES[name]
    total = m["cores"] * m["smt"]
    sets = {"all": None, "first threads": list(range(m["cores"])),
            "two of three": [c for c in range(total) if c % 3 != 0]}
    if name == "dgx-a100-nps4":
        sets["without node 3"] = [c for c in range(total) if not (48 <= c % 128 < 64)]
        sets["half of node 7"] = [c for c in range(total) if not (112 <= c < 120)]
    if name == "epyc-7543p":
        sets["0-20"] = list(range(21))
    return sets


def run(argv, timeout=60, **kw):
    return subprocess.run(argv, capture_output=True, text=True, timeout=timeout, **kw)


def hetlaunch_ranks(binary, tree, gpus_file, mode, devices, allowed):
    """Each local rank's cpulist from `hetlaunch cpus --json`, or ('error', message)."""
    argv = [binary, "cpus", "--numa-binding", mode, "--sysfs", str(tree), "--gpu-pci-command", f"cat '{gpus_file}'", "--json"]
    if devices is not None:
        argv += ["--devices", devices]
    if allowed is not None:
        argv += ["--allowed-cpus", make_trees.cpulist(allowed)]
    r = run(argv)
    if r.returncode != 0:
        return ("error", r.stderr.strip())
    return [rank["cpus"] for rank in json.loads(r.stdout)["ranks"]]


# Runs in the sid chroot with the tree as /sys: torch's own binding code, for every case on stdin.
TORCH_SIDE = r'''
import inspect, json, sys, types
import torch
import torch.numa.binding as b
cases = json.load(sys.stdin)
argument = "device_index" if "device_index" in inspect.signature(b._get_logical_cpus_to_bind_to).parameters else "gpu_index"
out = []
for case in cases:
    visible = case["visible"]
    def properties(index, visible=visible):
        domain, bus, rest = visible[index].split(":")
        return types.SimpleNamespace(pci_domain_id=int(domain, 16), pci_bus_id=int(bus, 16),
                                     pci_device_id=int(rest.split(".")[0], 16))
    # The GPU to PCI look-up (no CUDA here) and the allowed CPUs (the tree's, not this machine's).
    torch.accelerator.is_available = lambda: True
    torch.accelerator.current_accelerator = lambda: torch.device("cuda")
    torch.accelerator.device_count = lambda visible=visible: len(visible)
    torch.get_device_module = lambda *a, properties=properties: types.SimpleNamespace(get_device_properties=properties)
    torch.cuda.device_count = lambda visible=visible: len(visible)
    torch.cuda.get_device_properties = properties
    b._get_allowed_cpu_indices_for_current_thread = lambda allowed=case["allowed"]: set(allowed)
    ranks = []
    for rank in range(len(visible)):
        try:
            cpus = b._get_logical_cpus_to_bind_to(**{argument: rank},
                                                  numa_options=b.NumaOptions(affinity_mode=b.AffinityMode(case["mode"])))
            ranks.append(b._get_ranges_str_from_ints(cpus) if cpus else "error: no CPU")
        except Exception as e:
            ranks.append(f"error: {type(e).__name__}: {e}")
    out.append(ranks)
print(json.dumps(out))
'''


def torch_ranks(root, tree, cases):
    """torch's answers for `cases` on `tree`, in the chroot `root`: a private mount namespace
    holds the tree as /sys, with /proc and /dev, and ends with the process."""
    script = ('mount --bind "$1" "$2/sys" && mount -t proc proc "$2/proc" && mount --bind /dev "$2/dev" && '
              'exec chroot "$2" env -i PATH=/usr/bin:/bin HOME=/tmp LANG=C.UTF-8 python3 -c "$3"')
    p = subprocess.Popen(["unshare", "--mount", "--propagation", "private", "sh", "-c", script, "sh", str(tree), str(root),
                          TORCH_SIDE], stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                         start_new_session=True)
    try:
        out, err = p.communicate(json.dumps(cases), timeout=600)
    except subprocess.TimeoutExpired:
        os.killpg(p.pid, signal.SIGKILL)
        p.communicate()
        raise RuntimeError("torch's side did not finish in 600 s")
    if p.returncode != 0:
        raise RuntimeError(f"torch's side failed ({p.returncode}): {err[-3000:]}")
    return json.loads(out.strip().splitlines()[-1])


def broken_trees(base):
    """Trees torch and hetlaunch must both refuse for some mode, with what is broken."""
    out = {}
    tiny = dict(make_trees.machine(1, 1, 1, 1, [("0000:01:00.0", 0), ("0000:02:00.0", 0)]))
    make_trees.build(base / "one-core", tiny)
    out["one-core"] = (tiny, "one core, two GPUs")
    ws = make_trees.MACHINES["workstation"]
    make_trees.build(base / "no-node-cpulist", ws)
    (base / "no-node-cpulist/devices/system/node/node0/cpulist").unlink()
    out["no-node-cpulist"] = (ws, "no node0/cpulist")
    make_trees.build(base / "no-caches", ws)
    for cache in (base / "no-caches/devices/system/cpu").glob("cpu*/cache"):
        shutil.rmtree(cache)
    out["no-caches"] = (ws, "no cache directories")
    make_trees.build(base / "no-gpu-device", ws)
    shutil.rmtree(base / "no-gpu-device/bus/pci/devices/0000:02:00.0")
    out["no-gpu-device"] = (ws, "GPU 1's PCI device missing")
    memory_node = dict(make_trees.MACHINES["dgx-h100"])
    make_trees.build(base / "memory-only-node", memory_node)
    (base / "memory-only-node/devices/system/node/possible").write_text("0-2\n")
    (base / "memory-only-node/devices/system/node/node2").mkdir()
    (base / "memory-only-node/devices/system/node/node2/cpulist").write_text("\n")
    out["memory-only-node"] = (memory_node, "a NUMA node without CPUs (CXL memory)")
    return out


def torch_case(binary, work):
    sys.path.insert(0, str(HERE.parent / "chroot"))
    import suites_test  # noqa: E402  (its chroot cache and builder)
    root, how = suites_test.build("sid", suites_test.SUITES["sid"]["extra"])
    if root is None:
        print(f"!!!! sid: the chroot could not be built; torch 2.14's binding was not compared. apt said:\n{how}\n!!!!")
        return []
    version = (run(["chroot", str(root), "python3", "-c", "import torch; print(torch.__version__)"], timeout=120).stdout.strip().splitlines() or ["?"])[-1]
    failures, compared, refused = [], 0, 0
    trees = {name: (m, "") for name, m in make_trees.MACHINES.items()}
    trees.update(broken_trees(work))
    for name, (m, broken) in trees.items():
        tree = work / name
        if not tree.exists():
            make_trees.build(tree, m)
        gpus_file = work / f"{name}.gpus"
        gpus_file.write_text("".join(f"{i}, 0000{pci.upper()}\n" for i, (pci, _) in enumerate(m["gpus"])))
        pcis = [pci for pci, _ in m["gpus"]]
        total = m["cores"] * m["smt"]
        cases = []
        subsets = [None] + SUBSETS.get(name, [])
        sets = allowed_sets(name) if name in make_trees.MACHINES else {"all": None}
        for mode in MODES:
            for devices in subsets:
                for label, allowed in sets.items():
                    visible = pcis if devices is None else [pcis[int(i)] for i in devices.split(",")]
                    cases.append({"mode": mode, "devices": devices, "label": label, "visible": visible,
                                  "allowed": list(range(total)) if allowed is None else allowed})
        started = time.monotonic()
        answers = torch_ranks(root, tree, cases)
        for case, want in zip(cases, answers):
            allowed = None if case["label"] == "all" else case["allowed"]
            got = hetlaunch_ranks(binary, tree, gpus_file, case["mode"], case["devices"], allowed)
            what = f"{name} {case['mode']} devices={case['devices'] or 'all'} allowed={case['label']}"
            torch_error = next((i for i, w in enumerate(want) if w.startswith("error")), None)
            if torch_error is not None:
                refused += 1
                if not isinstance(got, tuple):
                    failures.append(f"{what}: torch refuses local rank {torch_error} ({want[torch_error]}), hetlaunch gives {got}")
                elif f"local rank {torch_error} " not in got[1]:
                    failures.append(f"{what}: torch refuses local rank {torch_error} ({want[torch_error]}), "
                                    f"hetlaunch says {got[1]!r}")
            elif got != want:
                failures.append(f"{what}: torch {want}, hetlaunch {got}")
            compared += 1
        print(f"     {name}{' (' + broken + ')' if broken else ''}: {len(cases)} cases "
              f"against torch {version} ({time.monotonic() - started:.1f} s)", flush=True)
    print(f"{compared} cases compared with torch {version}'s torch/numa/binding.py, {refused} of them refused by both")
    return failures


def cli(binary, *args, env=None):
    return run([binary, *args], env=env)


def errors_case(binary, work):
    """hetlaunch's own messages for what it refuses."""
    failures = []
    ws = make_trees.MACHINES["workstation"]
    make_trees.build(work / "ws", ws)
    gpus = "printf '0, 00000000:01:00.0\\n1, 00000000:02:00.0\\n'"
    tiny = make_trees.machine(1, 1, 1, 1, [("0000:01:00.0", 0), ("0000:02:00.0", 0)])
    make_trees.build(work / "tiny", tiny)
    expect = [
        (["--sysfs", str(work / "missing"), "--gpu-pci-command", gpus, "--numa-binding", "node"],
         f"cpus: no CPU topology under '{work / 'missing'}': the CPU topology has no devices/system/node/possible"),
        (["--sysfs", str(work / "ws"), "--gpu-pci-command", "printf '0, 00000000:09:00.0\\n'", "--numa-binding", "node"],
         "cpus: local rank 0 (GPU 0, 0000:09:00.0): the CPU topology has no bus/pci/devices/0000:09:00.0/numa_node"),
        (["--sysfs", str(work / "tiny"), "--gpu-pci-command", gpus, "--numa-binding", "exclusive"],
         "cpus: local rank 0 (GPU 0, 0000:01:00.0): exclusive: NUMA node 0 has 1 physical core this worker may use, "
         "fewer than its 2 GPUs"),
        (["--sysfs", str(work / "ws"), "--gpu-pci-command", gpus, "--numa-binding", "node", "--nproc", "3"],
         "cpus: local rank 2 has no GPU: the node shows 2 GPUs (CUDA_VISIBLE_DEVICES, --devices)"),
        (["--sysfs", str(work / "ws"), "--gpu-pci-command", gpus, "--numa-binding", "node", "--devices", "1,5"],
         "cpus: the visible devices '1,5' name GPU 5, which the node does not have (it has 0,1)"),
        (["--sysfs", str(work / "ws"), "--gpu-pci-command", gpus, "--numa-binding", "node", "--devices", "GPU-8a3e"],
         "cpus: the visible devices 'GPU-8a3e' hold 'GPU-8a3e', not a GPU index (UUIDs and MIG devices cannot be bound)"),
        (["--sysfs", str(work / "ws"), "--gpu-pci-command", gpus, "--numa-binding", "node", "--allowed-cpus", "20-30"],
         "cpus: local rank 0 (GPU 0, 0000:01:00.0): node: no CPU of NUMA node 0 is one this worker may use "
         "(allowed: 20-30)"),
        (["--sysfs", str(work / "ws"), "--gpu-pci-command", "echo 0, 0000:01:00", "--numa-binding", "node"],
         "cpus: 'echo 0, 0000:01:00''s output, line 1, column 3: not a PCI address: ' 0000:01:00' "
         "(expected DOMAIN:BUS:DEVICE.FUNCTION, as 00000000:07:00.0)"),
        (["--sysfs", str(work / "ws"), "--gpu-pci-command", "exit 3", "--numa-binding", "node"],
         "cpus: 'exit 3' failed (exit status 3)"),
        (["--sysfs", str(work / "ws"), "--gpu-pci-command", "yes 0, 0000:01:00.0", "--numa-binding", "node"],
         "cpus: 'yes 0, 0000:01:00.0' printed more than 65536 bytes"),
    ]
    # Files that are there but cannot be read are named as such, not as missing: a directory, a
    # FIFO (which must not hang the read), and a file larger than any sysfs file.
    for name, damage, message in (
            ("dir", lambda t: (t / "devices/system/node/node0/cpulist").unlink() or
             (t / "devices/system/node/node0/cpulist").mkdir(),
             "the CPU topology's devices/system/node/node0/cpulist cannot be read: it is a directory"),
            ("fifo", lambda t: (t / "bus/pci/devices/0000:01:00.0/numa_node").unlink() or
             os.mkfifo(t / "bus/pci/devices/0000:01:00.0/numa_node"),
             "the CPU topology's bus/pci/devices/0000:01:00.0/numa_node cannot be read: it is not a regular file"),
            ("large", lambda t: (t / "devices/system/node/node0/cpulist").write_text("0," * 40000 + "0\n"),
             "the CPU topology's devices/system/node/node0/cpulist cannot be read: it is larger than 65536 bytes")):
        tree = work / f"ws-{name}"
        make_trees.build(tree, ws)
        damage(tree)
        r = cli(binary, "cpus", "--sysfs", str(tree), "--gpu-pci-command", gpus, "--numa-binding", "node")
        if r.returncode != 1 or message not in r.stderr or "has no" in r.stderr:
            failures.append(f"a tree whose file is a {name}: exit {r.returncode}, said {r.stderr!r}, expected {message!r}")
    for args, message in expect:
        r = cli(binary, "cpus", *args)
        got = r.stderr.strip()
        if r.returncode != 1 or got != f"hetlaunch: {message}":
            failures.append(f"cpus {' '.join(args)}: exit {r.returncode}, said {got!r}, expected {message!r}")
    r = cli(binary, "cpus", "--numa-binding", "nodes")
    if r.returncode != 2 or "--numa-binding must be node, socket, exclusive or core-complex, got 'nodes'" not in r.stderr:
        failures.append(f"a bad mode: exit {r.returncode}, {r.stderr!r}")
    print(f"     {len(expect) + 1} refusals name what and where", flush=True)
    return failures


def live_tree(work):
    """A tree of this machine's first two allowed CPUs as NUMA nodes 0 and 1 (one core each), GPU 0
    on node 1 and GPU 1 on node 0; the CPUs (a, b)."""
    a, b = sorted(os.sched_getaffinity(0))[:2]
    root = work / "live"
    files = {"devices/system/node/possible": "0-1", "devices/system/node/node0/cpulist": str(a),
             "devices/system/node/node1/cpulist": str(b), "bus/pci/devices/0000:01:00.0/numa_node": "1",
             "bus/pci/devices/0000:02:00.0/numa_node": "0"}
    for cpu, node in ((a, 0), (b, 1)):
        files[f"devices/system/cpu/cpu{cpu}/topology/physical_package_id"] = "0"
        files[f"devices/system/cpu/cpu{cpu}/topology/thread_siblings_list"] = str(cpu)
        files[f"devices/system/cpu/cpu{cpu}/cache/index0/type"] = "Unified"
        files[f"devices/system/cpu/cpu{cpu}/cache/index0/level"] = "3"
        files[f"devices/system/cpu/cpu{cpu}/cache/index0/shared_cpu_list"] = str(cpu)
    for path, text in files.items():
        make_trees.write(root, path, text)
    return root, a, b


SKIPPED = []  # cases that cannot run here; the suite then exits 77 (skipped) when all else passed
LIVE_GPUS = "printf '0, 00000000:01:00.0\\n1, 00000000:02:00.0\\n'"


def live_case(binary, work):
    failures = []
    if len(os.sched_getaffinity(0)) < 2:
        SKIPPED.append("live (this process may use only one CPU)")
        return failures
    root, a, b = live_tree(work)
    report = "import os, sys; print(sorted(os.sched_getaffinity(0)), os.environ.get('CUDA_DEVICE_ORDER'))"
    base = {k: v for k, v in os.environ.items() if k not in ("CUDA_VISIBLE_DEVICES", "CUDA_DEVICE_ORDER", "LOCAL_RANK")}
    bind = [binary, "bind", "--numa-binding", "node", "--sysfs", str(root), "--gpu-pci-command", LIVE_GPUS, "--"]
    for env, want in [({"LOCAL_RANK": "0"}, f"[{b}] PCI_BUS_ID"), ({"LOCAL_RANK": "1"}, f"[{a}] PCI_BUS_ID"),
                      ({"LOCAL_RANK": "0", "CUDA_VISIBLE_DEVICES": "1"}, f"[{a}] PCI_BUS_ID"),
                      ({"LOCAL_RANK": "1", "CUDA_VISIBLE_DEVICES": "1,0"}, f"[{b}] PCI_BUS_ID"),
                      ({"LOCAL_RANK": "0", "CUDA_DEVICE_ORDER": "FASTEST_FIRST"}, f"[{b}] FASTEST_FIRST")]:
        r = run([*bind, sys.executable, "-c", report], env={**base, **env})
        if r.returncode != 0 or r.stdout.strip() != want:
            failures.append(f"bind with {env}: exit {r.returncode}, printed {r.stdout.strip()!r} {r.stderr.strip()!r}, "
                            f"expected {want!r}")
    # Errors: exit 1, the command never runs, the message names the node, host and local rank.
    ran = work / "ran"
    touch = ["sh", "-c", f"touch '{ran}'"]
    for env, prefix, message in [
            ({"LOCAL_RANK": "0", "GROUP_RANK": "3"}, ["taskset", "-c", str(a)],
             f"(GPU 0, 0000:01:00.0): node: no CPU of NUMA node 1 is one this worker may use (allowed: {a})"),
            ({}, [], "LOCAL_RANK is not set"),
            ({"LOCAL_RANK": "2"}, [], "local rank 2 has no GPU: the node shows 2 GPUs"),
            ({"LOCAL_RANK": "0", "CUDA_VISIBLE_DEVICES": "7"}, [], "name GPU 7, which the node does not have")]:
        r = run([*prefix, *bind, *touch], env={**base, **env})
        if r.returncode != 1 or ran.exists() or message not in r.stderr or "hetlaunch: bind: " not in r.stderr:
            failures.append(f"bind with {env} {prefix}: exit {r.returncode}, ran={ran.exists()}, said {r.stderr.strip()!r}, "
                            f"expected {message!r}")
        if env.get("GROUP_RANK") and f"bind: node 3 ({os.uname().nodename})" not in r.stderr:
            failures.append(f"bind's error does not name node 3 and the host: {r.stderr.strip()!r}")
    r = run([*bind, str(work / "no-such-program")], env={**base, "LOCAL_RANK": "0"})
    if r.returncode != 1 or "cannot run" not in r.stderr:
        failures.append(f"bind of a missing program: exit {r.returncode}, {r.stderr!r}")
    print(f"     bind sets exactly the CPU of the worker's GPU (CPUs {a} and {b}), "
          f"and refuses without running the command", flush=True)
    return failures


def torch_python(torchrun):
    first = pathlib.Path(torchrun).read_text(errors="replace").splitlines()[0]
    return first[2:].strip().split()[0] if first.startswith("#!") else "python3"


def torchrun_case(binary, work, torchrun, marker):
    failures = []
    if len(os.sched_getaffinity(0)) < 2:
        SKIPPED.append("torchrun (this process may use only one CPU)")
        return failures
    root, a, b = live_tree(work)
    # `hetlaunch bind` on the node, told where the tree and the GPU list are.
    binder = work / "bind-with-tree"
    binder.write_text(f'#!/bin/sh\ncommand="$1"; shift\nexec "{binary}" "$command" --sysfs "{root}" '
                      f'--gpu-pci-command "{LIVE_GPUS}" "$@"\n')
    binder.chmod(0o755)
    env = {k: v for k, v in os.environ.items() if not k.startswith(("PET_", "CUDA_", "TORCHELASTIC_"))}
    env[marker.name] = marker.value
    port = processes.free_port()
    started = time.monotonic()
    # Both GPUs: rank 0 has GPU 0 (node 1, CPU b), rank 1 GPU 1 (node 0, CPU a). Then only device 1
    # (--include): the plan's CUDA_VISIBLE_DEVICES reaches bind, and the one worker has GPU 1.
    for name, hosts, include, want in [("both", "127.0.0.1:2", [], [(b, None), (a, None)]),
                                       ("device-1", "127.0.0.1:2", ["--include", "127.0.0.1:1"], [(a, "1")])]:
        out = work / f"records-{name}"
        out.mkdir()
        argv = [binary, "exec", "--node", "0", "--hosts", hosts, *include, "--numa-binding", "node",
                "--bind-program", str(binder), "--python", torch_python(torchrun), *torchrun_flags.torchrun(torchrun),
                "--master-port", port, "--", str(HERE / "affinity_worker.py"), str(out)]
        p = subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, env=env,
                             start_new_session=True)
        try:
            log, _ = p.communicate(timeout=240)
        except subprocess.TimeoutExpired:
            os.killpg(p.pid, signal.SIGKILL)
            log, _ = p.communicate()
            failures.append(f"{name}: the job did not end in 240 s")
        if p.returncode != 0:
            failures.append(f"{name}: the job exited {p.returncode}:\n{log[-3000:]}")
        world = len(want)
        for rank, (cpu, devices) in enumerate(want):
            record = out / f"rank-{rank}.json"
            if not record.exists():
                failures.append(f"{name}: rank {rank} left no record")
                continue
            got = json.loads(record.read_text())
            expected = {"LOCAL_RANK": str(rank), "affinity": [cpu], "CUDA_DEVICE_ORDER": "PCI_BUS_ID",
                        "sum": world * (world - 1) // 2, "WORLD_SIZE": str(world), "CUDA_VISIBLE_DEVICES": devices}
            failures += [f"{name}: rank {rank}: {k} is {got.get(k)!r}, expected {v!r}"
                         for k, v in expected.items() if got.get(k) != v]
    version = run([torch_python(torchrun), "-c", "import torch; print(torch.__version__)"]).stdout.strip()
    print(f"     torch {version}: torchrun --numa-binding node through hetlaunch bind, "
          f"ranks 0 and 1 on CPUs {b} and {a} ({time.monotonic() - started:.1f} s)", flush=True)
    return failures


def main():
    args = sys.argv[1:]
    if not args:
        print(__doc__)
        return 2
    torchrun = args[args.index("--torchrun") + 1] if "--torchrun" in args else shutil.which("torchrun") or "/usr/bin/torchrun"
    if "--torchrun" in args:
        del args[args.index("--torchrun"):args.index("--torchrun") + 2]
    binary = str(pathlib.Path(args[0]).resolve())
    cases = {"errors": lambda work: errors_case(binary, work),
             "live": lambda work: live_case(binary, work),
             "torchrun": lambda work: torchrun_case(binary, work, torchrun, marker),
             "torch": lambda work: torch_case(binary, work)}
    chosen = pick(cases, args[1:])
    scratch = processes.scratch(MARKER_NAME, "hetlaunch-binding-")
    marker, tmp = scratch.marker, scratch.work  # the torchrun case's workers carry the marker
    with Suite("binding", scratch.teardown, scratch.leftovers) as run:
        for name in chosen:
            work = tmp / name
            work.mkdir()
            run.case(name, cases[name], work)
    if SKIPPED and run.status == 0:
        print(f"skipped: {', '.join(SKIPPED)}")
        return 77
    return run.status


if __name__ == "__main__":
    sys.exit(main())
