#!/usr/bin/env python3
"""Writes the wall times of a full tools/test.sh run into docs/testing.md, between its
stage-times markers, so that the page says what the last run measured and nobody copies numbers.

    stage_times.py DOC TIMES CTEST_LOG

TIMES holds a line "STAGE SECONDS" a stage, in order; CTEST_LOG is the ci-gcc stage's ctest
output, whose "Test #N: NAME .... Passed 12.34 sec" lines give its longest tests."""
import datetime
import os
import re
import sys

BEGIN = "<!-- stage-times: written by tools/test.sh after a run of every stage -->"
END = "<!-- end of stage-times -->"


def block(stages, tests):
    total = sum(seconds for _, seconds in stages)
    longest = sorted(tests, key=lambda t: -t[1])[:6]
    lines = [BEGIN,
             f"The last run of every stage ({datetime.date.today().isoformat()}, {os.cpu_count()} cores): "
             f"{total:,} s in all.",
             "",
             "| stage | wall time |",
             "| --- | --- |"]
    lines += [f"| `{name}` | {seconds:,} s |" for name, seconds in stages]
    if longest:
        lines += ["", "The longest tests of `ci-gcc`, side by side: " +
                  ", ".join(f"`{name}` {seconds:,.0f} s" for name, seconds in longest) + "."]
    return "\n".join(lines + [END])


def main():
    doc, times, log = sys.argv[1:4]
    stages = []
    for line in open(times):
        name, seconds = line.split()
        stages.append((name, int(seconds)))
    tests = []
    if os.path.exists(log):
        for m in re.finditer(r"Test +#\d+: (\S+) \.+\s+Passed\s+([\d.]+) sec", open(log, errors="replace").read()):
            tests.append((m.group(1), float(m.group(2))))
    text = open(doc).read()
    if BEGIN not in text or END not in text:
        print(f"stage_times: {doc} has no stage-times markers", file=sys.stderr)
        return 1
    head, rest = text.split(BEGIN, 1)
    tail = rest.split(END, 1)[1]
    with open(doc, "w") as f:
        f.write(head + block(stages, tests) + tail)
    return 0


if __name__ == "__main__":
    sys.exit(main())
