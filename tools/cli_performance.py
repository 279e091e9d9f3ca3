#!/usr/bin/env python3
"""Measures the hetlaunch command end to end on big inputs and writes the "End to end" section of
docs/performance.md (between its cli-begin and cli-end markers) and docs/cli.png.

For hostfiles of 1,000 to 1,000,000 lines ("worker-0000001 slots=N"):
  - `hetlaunch check --hostfile F` against `sort F` and `LC_ALL=C sort F`;
  - `hetlaunch plan --hostfile F` against an awk script that prints the same table and commands
    (its output is compared with hetlaunch's byte for byte first, so the reference is honest).
Each time is the median wall-clock time of several runs, output to a file; peak memory is the
process's maximum resident set as GNU time reports it (a fork of this Python process would count
the parent's pages), shown less that of `hetlaunch --version` (the process itself) and as a
multiple of the input plus the output.

Needs: cmake, ninja, g++, awk, sort, GNU time (/usr/bin/time), gnuplot (for the plot).
usage: tools/cli_performance.py [--quick]
"""
import os
import pathlib
import platform
import shutil
import statistics
import subprocess
import sys
import tempfile
import time

import performance_doc

ROOT = pathlib.Path(__file__).resolve().parent.parent
BUILD = ROOT / "build" / "cli-performance"
DOCS = ROOT / "docs"
QUICK = "--quick" in sys.argv
SIZES = [1000, 10000, 100000, 1000000]
REPEAT = 3 if QUICK else 7

AWK_PLAN = r'''
# The table and commands of `hetlaunch plan --hostfile FILE` for "host slots=N" lines.
{ host[NR - 1] = $1; split($2, kv, "="); n[NR - 1] = kv[2]; world += kv[2] }
END {
  printf "%d nodes, world size %d, static rendezvous\n\n", NR, world
  printf "%-5s %-20s %6s  %-10s %7s  %s\n", "node", "host", "nproc", "role", "offset", "global ranks"
  off = 0
  for (i = 0; i < NR; i++) {
    printf "%-5d %-20s %6d  %-10s %7d  %d..%d\n", i, host[i], n[i], "default", off, off, off + n[i] - 1
    off += n[i]
  }
  printf "\ntorchrun commands:\n"
  for (i = 0; i < NR; i++)
    printf "  # node %d on %s\n  torchrun --nnodes=%d --node_rank=%d --nproc_per_node=%d --max_restarts=0 --master_addr=%s --master_port=29500 train.py\n", i, host[i], NR, i, n[i], host[0]
}
'''


def build():
    subprocess.run(["cmake", "-S", str(ROOT), "-B", str(BUILD), "-G", "Ninja", "-DCMAKE_BUILD_TYPE=Release",
                    "-DHETLAUNCH_BUILD_TESTS=OFF", "-DHETLAUNCH_BUILD_BENCHMARKS=ON"], check=True, capture_output=True)
    subprocess.run(["cmake", "--build", str(BUILD), "--target", "hetlaunch_cli", "bench_plan"], check=True,
                   capture_output=True)
    return BUILD / "tools" / "hetlaunch"


def primitives():
    """{(benchmark, nodes): median CPU ms} from bench_plan."""
    out = subprocess.run([str(BUILD / "bench" / "bench_plan"), "--benchmark_format=json",
                          f"--benchmark_repetitions={REPEAT}", "--benchmark_report_aggregates_only=true"],
                         check=True, capture_output=True, text=True).stdout
    import json
    results = {}
    for b in json.loads(out)["benchmarks"]:
        if b.get("aggregate_name") == "median" and "/" in b["run_name"]:
            name, n = b["run_name"].split("/")[:2]
            results[(name, int(n))] = b["cpu_time"]
    return results


def measure(cmd, env=None):
    """(median seconds, peak RSS in bytes, output bytes) of a command whose output goes to a file."""
    times, peaks = [], []
    size = 0
    with tempfile.TemporaryFile() as out, tempfile.NamedTemporaryFile("r") as rss:
        for _ in range(REPEAT):
            out.seek(0)
            out.truncate()
            start = time.monotonic()
            subprocess.run(["/usr/bin/time", "-f", "%M", "-o", rss.name] + cmd, stdout=out,
                           stderr=subprocess.DEVNULL, env=env, check=True)
            times.append(time.monotonic() - start)
            rss.seek(0)
            peaks.append(int(rss.read().split()[-1]) * 1024)
            size = out.tell()
    return statistics.median(times), max(peaks), size


def hostfile(directory, n):
    path = directory / f"hosts-{n}.txt"
    with open(path, "w") as f:
        for i in range(n):
            f.write("worker-%07d slots=%d\n" % (i, 1 + i % 8))
    return path


def plot(rows):
    if not shutil.which("gnuplot"):
        return False
    with tempfile.NamedTemporaryFile("w", suffix=".dat", delete=False) as data:
        for r in rows:
            data.write(f"{r['n']} {r['check'] * 1000} {r['sort'] * 1000} {r['sort_c'] * 1000} "
                       f"{r['plan'] * 1000} {r['awk'] * 1000}\n")
    script = f"""
set terminal pngcairo size 800,480 font ",10" noenhanced
set output "{DOCS / 'cli.png'}"
set logscale xy
set xlabel "nodes (hostfile lines)"
set ylabel "wall-clock time (ms)"
set key top left
set grid
plot "{data.name}" using 1:2 with linespoints title "hetlaunch check", \\
     "" using 1:3 with linespoints title "sort", \\
     "" using 1:4 with linespoints title "LC_ALL=C sort", \\
     "" using 1:5 with linespoints title "hetlaunch plan", \\
     "" using 1:6 with linespoints title "awk (same table and commands)"
"""
    subprocess.run(["gnuplot"], input=script, text=True, check=True)
    os.unlink(data.name)
    return True


def mb(b):
    return b / (1 << 20)


def main():
    binary = build()
    base = measure([str(binary), "--version"])[1]
    env_c = dict(os.environ, LC_ALL="C")
    awk = shutil.which("awk")
    awk_name = pathlib.Path(os.path.realpath(awk)).name
    rows = []
    with tempfile.TemporaryDirectory() as d:
        d = pathlib.Path(d)
        program = d / "plan.awk"
        program.write_text(AWK_PLAN)
        for n in SIZES:
            f = hostfile(d, n)
            size = f.stat().st_size
            with open(d / "ours", "wb") as o, open(d / "theirs", "wb") as t:
                subprocess.run([str(binary), "plan", "--hostfile", str(f)], stdout=o, check=True)
                subprocess.run([awk, "-f", str(program), str(f)], stdout=t, check=True)
            if subprocess.run(["cmp", "-s", str(d / "ours"), str(d / "theirs")]).returncode != 0:
                raise SystemExit(f"the awk reference differs from hetlaunch plan at {n} nodes")
            check, check_rss, _ = measure([str(binary), "check", "--hostfile", str(f)])
            sort, sort_rss, _ = measure(["sort", str(f)])
            sort_c, _, _ = measure(["sort", str(f)], env_c)
            plan, plan_rss, plan_out = measure([str(binary), "plan", "--hostfile", str(f)])
            awk_t, awk_rss, _ = measure([awk, "-f", str(program), str(f)])
            rows.append(dict(n=n, size=size, check=check, check_rss=check_rss, sort=sort, sort_rss=sort_rss,
                             sort_c=sort_c, plan=plan, plan_rss=plan_rss, plan_out=plan_out, awk=awk_t, awk_rss=awk_rss))
            print(f"{n}: check {check * 1000:.1f} ms, sort {sort * 1000:.1f} ms, C sort {sort_c * 1000:.1f} ms, "
                  f"plan {plan * 1000:.1f} ms, awk {awk_t * 1000:.1f} ms", file=sys.stderr)
    have_plot = plot(rows)
    prim = primitives()
    top = next(r for r in rows if r["n"] == 1000000)
    hundred_k = next(r for r in rows if r["n"] == 100000)
    lines = [
        "<!-- cli-begin: written by tools/cli_performance.py -->",
        "## End to end: the hetlaunch command on big hostfiles",
        "",
        f"Measured by `tools/cli_performance.py` on {platform.processor() or platform.machine()}, {os.cpu_count()} cores, "
        f"Linux {platform.release()}; hetlaunch built in Release by g++. Wall-clock medians of {REPEAT} runs, output to a "
        f"file; peak memory is the process's maximum resident set, less the {mb(base):.1f} MB of `hetlaunch --version` "
        f"(the process itself) where it says so. Hostfile lines are `worker-0000001 slots=N` (23 bytes). The awk reference "
        f"({awk_name}) prints exactly what `hetlaunch plan` prints: the script checks that byte for byte at every size.",
        "",
        "| goal | measured | |",
        "| --- | --- | --- |",
    ]
    check_ratio = top["check"] / top["sort"]
    check_ratio_c = top["check"] / top["sort_c"]
    lines.append(f"| `check --hostfile` of 1,000,000 lines within 2x of `sort` of the same file | "
                 f"{top['check'] * 1000:.0f} ms vs {top['sort'] * 1000:.0f} ms: **{check_ratio:.2f}x** "
                 f"({check_ratio_c:.2f}x of `LC_ALL=C sort`, {top['sort_c'] * 1000:.0f} ms) | "
                 f"{'met' if check_ratio <= 2 else 'not met'} |")
    plan_ratio = hundred_k["plan"] / hundred_k["awk"]
    lines.append(f"| `plan` of 100,000 nodes within 3x of an awk script printing the same table and commands | "
                 f"{hundred_k['plan'] * 1000:.0f} ms vs {hundred_k['awk'] * 1000:.0f} ms: **{plan_ratio:.2f}x** | "
                 f"{'met' if plan_ratio <= 3 else 'not met'} |")
    check_mem = (top["check_rss"] - base) / top["size"]
    lines.append(f"| peak memory of `check` within 3x of the input (1,000,000 lines, {mb(top['size']):.0f} MB) | "
                 f"{mb(top['check_rss']):.0f} MB, {mb(top['check_rss'] - base):.0f} MB less the process: "
                 f"**{check_mem:.2f}x** ({top['check_rss'] / top['size']:.2f}x with it) | "
                 f"{'met' if check_mem <= 3 else 'not met'} |")
    plan_mem = (top["plan_rss"] - base) / (top["size"] + top["plan_out"])
    lines.append(f"| peak memory of `plan` within 3x of the input plus the output (1,000,000 nodes: "
                 f"{mb(top['size']):.0f} MB in, {mb(top['plan_out']):.0f} MB out) | {mb(top['plan_rss']):.0f} MB: "
                 f"**{plan_mem:.2f}x** | {'met' if plan_mem <= 3 else 'not met'} |")
    lines += ["", "| nodes | input (MB) | check (ms) | sort (ms) | LC_ALL=C sort (ms) | check peak (MB) | sort peak (MB) "
              "| plan (ms) | awk (ms) | plan output (MB) | plan peak (MB) | awk peak (MB) |",
              "| ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |"]
    for r in rows:
        lines.append(f"| {r['n']:,} | {mb(r['size']):.2f} | {r['check'] * 1000:.1f} | {r['sort'] * 1000:.1f} | "
                     f"{r['sort_c'] * 1000:.1f} | {mb(r['check_rss']):.1f} | {mb(r['sort_rss']):.1f} | "
                     f"{r['plan'] * 1000:.1f} | {r['awk'] * 1000:.1f} | {mb(r['plan_out']):.1f} | "
                     f"{mb(r['plan_rss']):.1f} | {mb(r['awk_rss']):.1f} |")
    lines += ["", "Both commands are linear: from 10,000 nodes up, ten times the nodes cost about ten times the time (below that, starting the process dominates). `plan` writes node by node, so "
              "its memory is that of the plan (16 bytes a node plus its host name, and the rank offsets), not of its "
              "output; `check` holds the file, the cluster and, while it looks for duplicate hosts, 8 bytes a node."]
    if have_plot:
        lines += ["", "![end to end](cli.png)"]
    lines += ["", "The primitives behind them (`bench/bench_plan.cpp`, CPU time, medians): `parse_hostfile` of the same "
              "text beside splitting it into lines (the floor of any parser), and every node's shell-quoted torchrun "
              "command from one `make_plan`.", "",
              "| nodes | parse_hostfile (ms) | split into lines (ms) | make_plan + every command (ms) |",
              "| ---: | ---: | ---: | ---: |"]
    for n in SIZES:
        lines.append(f"| {n:,} | {prim[('parse_hostfile', n)]:.2f} | {prim[('split_lines', n)]:.2f} | "
                     f"{prim[('plan_commands', n)]:.2f} |")
    lines.append("<!-- cli-end -->")
    section = "\n".join(lines) + "\n"
    performance_doc.write_section("cli", section, before="## Run time")
    print(section)


if __name__ == "__main__":
    main()
