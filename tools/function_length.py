#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""Names every function of the command (tools/cli) longer than a limit, 85 lines by default: a
function that long does more than one thing. Reads the files as clang-format lays them out
(tools/lint.sh): a function's body opens on the line of its closing parenthesis and closes
with a brace at the indentation it began with.

usage: tools/function_length.py [--limit N] [FILE...]   (exit 1 when one is longer)
"""
import argparse
import pathlib
import re
import sys

ROOT = pathlib.Path(__file__).resolve().parent.parent
CONTROL = re.compile(r"^\s*(if|for|while|switch|catch|else|do)\b")
OPENS_BODY = re.compile(r"\)\s*(const)?\s*(noexcept)?\s*(->\s*[\w:<>, ]+)?\s*(:[^{]*)?\{\s*$")


def code_of(line):
    """The line without its string and character literals and its comment."""
    line = re.sub(r'"(\\.|[^"\\])*"', '""', line)
    line = re.sub(r"'(\\.|[^'\\])*'", "''", line)
    return line.split("//")[0]


def long_functions(path, limit):
    lines = path.read_text().split("\n")
    found = []
    depth = 0
    start = None  # (line index, depth inside the body, first line)
    for n, line in enumerate(lines):
        code = code_of(line)
        for k, ch in enumerate(code):
            if ch == "{":
                depth += 1
                if start is None and k == len(code.rstrip()) - 1:
                    head = " ".join(code_of(l) for l in lines[max(0, n - 4):n + 1])
                    if OPENS_BODY.search(head) and not CONTROL.match(code) and "= [" not in head \
                            and "](" not in code:
                        start = (n, depth, line.strip())
            elif ch == "}":
                if start is not None and depth == start[1]:
                    length = n - start[0] + 1
                    if length > limit:
                        found.append((start[0] + 1, length, start[2]))
                    start = None
                depth -= 1
    return found


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--limit", type=int, default=85)
    parser.add_argument("files", nargs="*")
    args = parser.parse_args()
    files = [pathlib.Path(f) for f in args.files] or sorted((ROOT / "tools" / "cli").glob("*.[ch]pp"))
    bad = 0
    for path in files:
        for line, length, head in long_functions(path, args.limit):
            print(f"{path}:{line}: {length} lines (at most {args.limit}): {head}")
            bad += 1
    if bad:
        return 1
    print(f"function length: {len(files)} files, no function over {args.limit} lines")
    return 0


if __name__ == "__main__":
    sys.exit(main())
