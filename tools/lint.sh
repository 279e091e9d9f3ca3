#!/bin/bash
# Checks the layout of C++ files against .clang-format (Google's style, 100 columns) with
# clang-format 14, Debian 12's. Without files: every C++ file of the library, the command, the
# tests, the benchmarks and the examples (single_include/ is generated from include/).
# usage: tools/lint.sh [--clang-format PROGRAM] [FILE...]
# Exits 1 and names each place that differs; `clang-format -i FILE` fixes one.
set -u
root="$(cd "$(dirname "$0")/.." && pwd)"
program=clang-format
if [ "${1:-}" = --clang-format ]; then
  program=$2
  shift 2
fi
files=("$@")
if [ ${#files[@]} -eq 0 ]; then
  mapfile -t files < <(cd "$root" && find include tools bench examples tests \
    \( -name '*.cpp' -o -name '*.hpp' -o -name '*.h' \) -type f | sort | sed "s#^#$root/#")
fi
if ! command -v "$program" >/dev/null; then
  echo "lint: $program not found (Debian: clang-format)" >&2
  exit 2
fi
if "$program" --style="file:$root/.clang-format" --dry-run --Werror "${files[@]}"; then
  echo "lint: ${#files[@]} files formatted as .clang-format says"
else
  echo "lint: files differ from .clang-format (above); clang-format -i FILE fixes them" >&2
  exit 1
fi
