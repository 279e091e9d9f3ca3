#!/usr/bin/env python3
"""Checks how the headers under include/hetlaunch include each other: every quoted include
comes before the header's first declaration (no include at the end of a header, which is how a
cycle hides behind include guards), a header under detail/ includes only headers under detail/
(the details sit below every public header but the leaves, which include no header of the
library: host_issue.hpp, config.hpp), no header includes a convenience header (one that
only gathers others: hetlaunch.hpp, torchrun.hpp), and the headers' includes form no cycle. Prints
each problem as FILE:LINE: what, and exits 1 when there is one.

usage: tools/include_graph.py [ROOT]     (ROOT: the directory holding hetlaunch/; default include/)
       tools/include_graph.py --self-test (a tree with each of those problems must fail)
"""
import pathlib
import re
import sys
import tempfile

LOCAL = re.compile(r'^\s*#\s*include\s+"([^"]+)"')
# Headers that gather others for users, kept for compatibility: nothing inside may lean on them.
CONVENIENCE = {"hetlaunch.hpp", "torchrun.hpp"}
DECLARATION = re.compile(r"^\s*(namespace|template|class|struct|inline|constexpr|using|enum)\b")


def is_leaf(header: pathlib.Path) -> bool:
    """A public header that includes no header of the library (a value type, the macros)."""
    return not any(LOCAL.match(line) for line in header.read_text().splitlines())


def problems(root: pathlib.Path) -> list:
    headers = sorted((root / "hetlaunch").rglob("*.hpp"))
    edges, found = {}, []
    for header in headers:
        declared = False
        edges[header] = []
        for number, line in enumerate(header.read_text().splitlines(), 1):
            if DECLARATION.match(line):
                declared = True
            local = LOCAL.match(line)
            if not local:
                continue
            target = (header.parent / local.group(1)).resolve()
            where = f"{header.relative_to(root)}:{number}"
            if not target.is_file():
                found.append(f"{where}: \"{local.group(1)}\" does not exist")
                continue
            if declared:
                found.append(f"{where}: \"{local.group(1)}\" is included after the header's first declaration")
            if target.name in CONVENIENCE and target.parent.name == "hetlaunch":
                found.append(f"{where}: includes the convenience header \"{local.group(1)}\"; include what it gathers")
            if header.parent.name == "detail" and target.parent.name != "detail" and not is_leaf(target):
                found.append(f"{where}: detail header includes the public \"{local.group(1)}\"")
            edges[header].append(target)
    # A cycle: depth-first search, reporting the first path that returns to a header on the stack.
    state, stack = {}, []

    def visit(h):
        state[h] = "open"
        stack.append(h)
        for t in edges.get(h, []):
            if state.get(t) == "open":
                cycle = stack[stack.index(t):] + [t]
                found.append("include cycle: " + " -> ".join(str(x.relative_to(root)) for x in cycle))
            elif t not in state:
                visit(t)
        stack.pop()
        state[h] = "done"

    for h in headers:
        if h not in state:
            visit(h)
    return found


def self_test() -> int:
    with tempfile.TemporaryDirectory() as tmp:
        root = pathlib.Path(tmp)
        (root / "hetlaunch").mkdir()
        (root / "hetlaunch" / "a.hpp").write_text('#include "b.hpp"\nnamespace x {}\n')
        (root / "hetlaunch" / "b.hpp").write_text('namespace x {}\n#include "a.hpp"\n')
        (root / "hetlaunch" / "detail").mkdir()
        (root / "hetlaunch" / "detail" / "c.hpp").write_text('#include "../b.hpp"\n#include "../leaf.hpp"\n'
                                                              'namespace x {}\n')
        (root / "hetlaunch" / "leaf.hpp").write_text('#include <string>\nnamespace x {}\n')
        (root / "hetlaunch" / "torchrun.hpp").write_text('namespace x {}\n')
        (root / "hetlaunch" / "d.hpp").write_text('#include "torchrun.hpp"\nnamespace x {}\n')
        got = problems(root)
        want = ['hetlaunch/b.hpp:2: "a.hpp" is included after the header\'s first declaration',
                'hetlaunch/d.hpp:1: includes the convenience header "torchrun.hpp"; include what it gathers',
                'hetlaunch/detail/c.hpp:1: detail header includes the public "../b.hpp"',
                "include cycle: hetlaunch/a.hpp -> hetlaunch/b.hpp -> hetlaunch/a.hpp"]
        if got != want:
            print(f"self-test: expected {want}, got {got}", file=sys.stderr)
            return 1
    print("self-test: a late include, a convenience header included, a detail header over a public one and a "
          "cycle are all found")
    return 0


def main() -> int:
    if "--self-test" in sys.argv[1:]:
        return self_test()
    root = pathlib.Path(sys.argv[1]) if len(sys.argv) > 1 else pathlib.Path(__file__).resolve().parent.parent / "include"
    found = problems(root)
    for p in found:
        print(p, file=sys.stderr)
    return 1 if found else 0


if __name__ == "__main__":
    sys.exit(main())
