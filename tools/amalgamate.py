#!/usr/bin/env python3
"""Writes single_include/hetlaunch/hetlaunch.hpp from include/hetlaunch/hetlaunch.hpp.

Each quoted include that resolves under include/hetlaunch is inlined once, where it is first
needed; system includes are kept (once each). The output is deterministic, so --check can
compare it byte for byte with the committed file.

usage: tools/amalgamate.py [--check]
"""
import pathlib
import re
import sys

ROOT = pathlib.Path(__file__).resolve().parent.parent
SOURCE = ROOT / "include" / "hetlaunch" / "hetlaunch.hpp"
TARGET = ROOT / "single_include" / "hetlaunch" / "hetlaunch.hpp"
LOCAL = re.compile(r'^\s*#\s*include\s+"([^"]+)"')
SYSTEM = re.compile(r"^\s*#\s*include\s+<([^>]+)>")


def amalgamate() -> str:
    version = (ROOT / "VERSION").read_text().strip()
    out = [
        "// SPDX-License-Identifier: MIT",
        f"// hetlaunch {version}: the whole library in one header.",
        "// GENERATED FROM include/hetlaunch by tools/amalgamate.py; DO NOT EDIT.",
    ]
    seen_local, seen_system = set(), set()

    def inline(path: pathlib.Path) -> None:
        path = path.resolve()
        if path in seen_local:
            return
        seen_local.add(path)
        out.append(f"// ---- {path.relative_to(ROOT / 'include').as_posix()}")
        for line in path.read_text().splitlines():
            local = LOCAL.match(line)
            if local:
                target = (path.parent / local.group(1)).resolve()
                if not target.is_file():
                    sys.exit(f"{path}: cannot resolve include \"{local.group(1)}\"")
                inline(target)
                continue
            system = SYSTEM.match(line)
            if system:
                if system.group(1) in seen_system:
                    continue
                seen_system.add(system.group(1))
            if line.startswith("// SPDX-License-Identifier"):
                continue
            out.append(line)

    inline(SOURCE)
    return "\n".join(out) + "\n"


def main() -> int:
    text = amalgamate()
    if "--check" in sys.argv[1:]:
        current = TARGET.read_text() if TARGET.is_file() else ""
        if current != text:
            print(f"{TARGET.relative_to(ROOT)} is stale; run tools/amalgamate.py", file=sys.stderr)
            return 1
        return 0
    TARGET.parent.mkdir(parents=True, exist_ok=True)
    TARGET.write_text(text)
    return 0


if __name__ == "__main__":
    sys.exit(main())
