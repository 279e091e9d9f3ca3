#!/usr/bin/env python3
"""Finds the largest fixed topology that HETLAUNCH_STATIC_VALIDATE accepts within a compiler's
default constexpr limits (no -fconstexpr-steps / -fconstexpr-ops-limit), by bisection.

Nodes are named like real clusters: "gpu-node-00001.rack07" (21 characters), 1..8 workers each.
usage: tools/constexpr_limit.py [COMPILER...]   (default: g++ clang++)
       tools/constexpr_limit.py --source N         (prints the test source for N nodes)
"""
import pathlib
import subprocess
import sys
import tempfile
import time

ROOT = pathlib.Path(__file__).resolve().parent.parent


def source(n: int) -> str:
    nodes = ",".join('{"gpu-node-%05d.rack%02d", %d}' % (i, i % 40, 1 + i % 8) for i in range(n))
    return ("#include <hetlaunch/cluster.hpp>\n"
            f"constexpr auto c = hetlaunch::make_cluster({{{nodes}}});\n"
            "HETLAUNCH_STATIC_VALIDATE(c);\n"
            f"static_assert(c.locate(c.world_size() - 1).node == {n - 1}, \"\");\n")


def compiles(compiler: str, n: int) -> tuple:
    with tempfile.NamedTemporaryFile("w", suffix=".cpp", delete=False) as f:
        f.write(source(n))
    start = time.monotonic()
    ok = subprocess.run([compiler, "-std=c++17", "-fsyntax-only", f"-I{ROOT / 'include'}", f.name],
                        capture_output=True).returncode == 0
    pathlib.Path(f.name).unlink()
    return ok, time.monotonic() - start


def largest(compiler: str) -> tuple:
    lo, hi = 64, 64
    while compiles(compiler, hi)[0]:
        lo, hi = hi, hi * 2
    while hi - lo > max(lo // 50, 1):
        mid = (lo + hi) // 2
        if compiles(compiler, mid)[0]:
            lo = mid
        else:
            hi = mid
    return lo, compiles(compiler, lo)[1]


def main() -> int:
    if sys.argv[1:2] == ["--source"]:
        sys.stdout.write(source(int(sys.argv[2])))
        return 0
    for compiler in sys.argv[1:] or ["g++", "clang++"]:
        version = subprocess.run([compiler, "--version"], capture_output=True, text=True).stdout.splitlines()[0]
        n, seconds = largest(compiler)
        print(f"{version}: {n} nodes validate at compile time ({seconds:.1f} s for that file)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
