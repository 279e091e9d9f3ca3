#!/usr/bin/env python3
"""Sysfs trees of real machines, built from their documented topologies: the files Linux has
under /sys for NUMA nodes, CPUs (package, SMT siblings, caches) and the GPUs' PCI devices, and
only those. A tree's root stands for /sys (`hetlaunch cpus --sysfs ROOT`).

- dgx-a100-nps4: 2 x AMD EPYC 7742 (64 cores, 2 threads each), NPS4: 8 NUMA nodes of 16 cores,
  4-core CCXs sharing an L3; 8 A100s on NUMA nodes 3,3,1,1,7,7,5,5 (NVIDIA's DGX A100 guide).
- dgx-h100: 2 x Xeon Platinum 8480C (56 cores, 2 threads), one NUMA node and one L3 a socket;
  GPUs 0-3 on node 0, 4-7 on node 1.
- epyc-7543p: 1 x AMD EPYC 7543P (32 cores, 2 threads), NPS1: one NUMA node, 4 CCDs of 8 cores,
  each with its own L3; 4 GPUs.
- workstation: 1 socket, 8 cores with 2 threads, one L3, 2 GPUs whose numa_node is -1.

Linux numbers the first thread of every core first (cpu N and N + cores are siblings).

usage: make_trees.py OUT_DIR [NAME...]   (writes OUT_DIR/NAME for each, all by default)
"""
import pathlib
import sys


def machine(sockets, nodes_per_socket, cores_per_node, cores_per_l3, gpus, smt=2):
    """gpus: [(pci, numa_node)] in nvidia-smi's index order."""
    cores = sockets * nodes_per_socket * cores_per_node
    return dict(sockets=sockets, nodes_per_socket=nodes_per_socket, cores_per_node=cores_per_node,
                cores_per_l3=cores_per_l3, gpus=gpus, smt=smt, cores=cores)


MACHINES = {
    "dgx-a100-nps4": machine(2, 4, 16, 4, [("0000:07:00.0", 3), ("0000:0f:00.0", 3), ("0000:47:00.0", 1),
                                          ("0000:4e:00.0", 1), ("0000:87:00.0", 7), ("0000:90:00.0", 7),
                                          ("0000:b7:00.0", 5), ("0000:bd:00.0", 5)]),
    "dgx-h100": machine(2, 1, 56, 56, [("0000:18:00.0", 0), ("0000:2a:00.0", 0), ("0000:3a:00.0", 0),
                                       ("0000:5d:00.0", 0), ("0000:9a:00.0", 1), ("0000:ab:00.0", 1),
                                       ("0000:ba:00.0", 1), ("0000:db:00.0", 1)]),
    "epyc-7543p": machine(1, 1, 32, 8, [("0000:01:00.0", 0), ("0000:41:00.0", 0), ("0000:81:00.0", 0),
                                        ("0000:c1:00.0", 0)]),
    "workstation": machine(1, 1, 8, 8, [("0000:01:00.0", -1), ("0000:02:00.0", -1)]),
}


def cpulist(cpus):
    cpus = sorted(cpus)
    out, i = [], 0
    while i < len(cpus):
        j = i
        while j + 1 < len(cpus) and cpus[j + 1] == cpus[j] + 1:
            j += 1
        out.append(str(cpus[i]) if i == j else f"{cpus[i]}-{cpus[j]}")
        i = j + 1
    return ",".join(out)


def write(root, relative, text):
    path = root / relative
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text + "\n")


def build(root, m):
    cores, smt = m["cores"], m["smt"]
    nodes = m["sockets"] * m["nodes_per_socket"]

    def threads(core):
        return [core + k * cores for k in range(smt)]

    write(root, "devices/system/node/possible", cpulist(range(nodes)))
    write(root, "devices/system/node/online", cpulist(range(nodes)))
    write(root, "devices/system/cpu/possible", cpulist(range(cores * smt)))
    write(root, "devices/system/cpu/online", cpulist(range(cores * smt)))
    for node in range(nodes):
        first = node * m["cores_per_node"]
        write(root, f"devices/system/node/node{node}/cpulist",
              cpulist(c for core in range(first, first + m["cores_per_node"]) for c in threads(core)))
    for core in range(cores):
        socket = core // (m["nodes_per_socket"] * m["cores_per_node"])
        l3_first = core - core % m["cores_per_l3"]
        l3 = [c for k in range(l3_first, l3_first + m["cores_per_l3"]) for c in threads(k)]
        for cpu in threads(core):
            base = f"devices/system/cpu/cpu{cpu}"
            write(root, f"{base}/topology/physical_package_id", str(socket))
            write(root, f"{base}/topology/core_id", str(core % (cores // m["sockets"])))
            write(root, f"{base}/topology/thread_siblings_list", cpulist(threads(core)))
            for index, (level, kind, shared) in enumerate([(1, "Data", threads(core)), (1, "Instruction", threads(core)),
                                                           (2, "Unified", threads(core)), (3, "Unified", l3)]):
                write(root, f"{base}/cache/index{index}/level", str(level))
                write(root, f"{base}/cache/index{index}/type", kind)
                write(root, f"{base}/cache/index{index}/shared_cpu_list", cpulist(shared))
    for pci, node in m["gpus"]:
        write(root, f"bus/pci/devices/{pci}/numa_node", str(node))
        write(root, f"bus/pci/devices/{pci}/local_cpulist",
              cpulist(c for core in range(cores) for c in threads(core)
                      if node < 0 or core // m["cores_per_node"] == node))


def nvidia_smi(name):
    """What `nvidia-smi --query-gpu=index,pci.bus_id --format=csv,noheader` prints on the machine."""
    return "".join(f"{i}, 0000{pci.upper()}\n" for i, (pci, _) in enumerate(MACHINES[name]["gpus"]))


def main():
    out = pathlib.Path(sys.argv[1])
    for name in sys.argv[2:] or MACHINES:
        build(out / name, MACHINES[name])
        (out / f"{name}.gpus").write_text(nvidia_smi(name))


if __name__ == "__main__":
    main()
