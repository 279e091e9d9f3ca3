#!/usr/bin/env python3
"""What `#include <hetlaunch/cluster.hpp>` costs over the standard headers it includes itself.

For each compiler, compiles (-std=c++17 -fsyntax-only) two files many times, alternating: one
including exactly the standard headers that cluster.hpp reaches (found by following its own
includes), one including those and cluster.hpp. Reports the median CPU time (user + system) of
each and their ratio. A benchmark, not a test: run it on a quiet machine.

usage: bench/include_cost.py [--runs N] [--header NAME] [COMPILER...]   (default: g++ clang++)
"""
import argparse
import pathlib
import re
import resource
import statistics
import subprocess
import sys
import tempfile

ROOT = pathlib.Path(__file__).resolve().parent.parent
INCLUDE = ROOT / "include"


def standard_headers(header):
    seen, found = set(), set()

    def walk(path):
        if path in seen:
            return
        seen.add(path)
        for line in path.read_text().splitlines():
            if m := re.match(r"\s*#\s*include\s+<([^>]+)>", line):
                found.add(m.group(1))
            elif m := re.match(r'\s*#\s*include\s+"([^"]+)"', line):
                walk((path.parent / m.group(1)).resolve())

    walk(INCLUDE / "hetlaunch" / header)
    return sorted(found)


def cpu_seconds(compiler, source):
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    subprocess.run([compiler, "-std=c++17", "-fsyntax-only", f"-I{INCLUDE}", str(source)], check=True)
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    return (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=15)
    parser.add_argument("--header", default="cluster.hpp")
    parser.add_argument("compilers", nargs="*", default=["g++", "clang++"])
    args = parser.parse_args()
    headers = standard_headers(args.header)
    with tempfile.TemporaryDirectory() as tmp:
        base = pathlib.Path(tmp) / "standard.cpp"
        lib = pathlib.Path(tmp) / "with_library.cpp"
        base.write_text("".join(f"#include <{h}>\n" for h in headers))
        lib.write_text(base.read_text() + f"#include <hetlaunch/{args.header}>\n")
        print(f"standard headers of {args.header}: {', '.join(headers)}")
        print("| compiler | standard headers alone (s) | with the header (s) | ratio |")
        print("| --- | ---: | ---: | ---: |")
        for compiler in args.compilers:
            alone, together = [], []
            for _ in range(args.runs):
                alone.append(cpu_seconds(compiler, base))
                together.append(cpu_seconds(compiler, lib))
            a, b = statistics.median(alone), statistics.median(together)
            version = subprocess.run([compiler, "--version"], capture_output=True, text=True).stdout.splitlines()[0]
            print(f"| {version} | {a:.3f} | {b:.3f} | {b / a:.2f}x |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
