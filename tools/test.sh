#!/bin/bash
# Runs the whole test suite: every CMake preset (GCC and Clang, C++17 and C++20, -fno-exceptions,
# ASan+UBSan, the single header, every way of use) and meson (with and without exceptions).
# Needs the packages of tools/install-deps.sh. Exits non-zero when any test fails.
# usage: tools/test.sh [PRESET...]   (default: all of them)
set -u
cd "$(dirname "$0")/.." || exit 2
presets=("$@")
[ ${#presets[@]} -gt 0 ] || presets=(ci-gcc ci-clang ci-noexcept ci-sanitize ci-single-header ci-fuzz meson meson-noexcept)

passed=0 failed=0 broken=()
count() {  # adds a stage's numbers; a stage that could not run at all counts as one failure
  local stage=$1 log=$2 p f
  if grep -q "tests passed" "$log"; then
    f=$(sed -n 's/.* \([0-9]*\) tests failed out of \([0-9]*\).*/\1/p' "$log" | tail -1)
    p=$(( $(sed -n 's/.* tests failed out of \([0-9]*\).*/\1/p' "$log" | tail -1) - f ))
  elif grep -q "^Ok:" "$log"; then
    p=$(( $(sed -n 's/^Ok: *\([0-9]*\)/\1/p' "$log" | tail -1) + $(sed -n 's/^Expected Fail: *\([0-9]*\)/\1/p' "$log" | tail -1) ))
    f=$(( $(sed -n 's/^Fail: *\([0-9]*\)/\1/p' "$log" | tail -1) + $(sed -n 's/^Unexpected Pass: *\([0-9]*\)/\1/p' "$log" | tail -1) + $(sed -n 's/^Timeout: *\([0-9]*\)/\1/p' "$log" | tail -1) ))
  else
    p=0 f=1
  fi
  passed=$((passed + p)) failed=$((failed + f))
  [ "$f" -eq 0 ] || broken+=("$stage")
}

times=()
every_stage=0
[ $# -gt 0 ] || every_stage=1
stage_times=$(mktemp) gcc_log=$(mktemp)
trap 'rm -f "$stage_times" "$gcc_log"' EXIT
for preset in "${presets[@]}"; do
  echo "==== $preset"
  log=$(mktemp)
  start=$SECONDS
  case "$preset" in
    meson|meson-noexcept)
      # One standard each: the CMake configurations build both; these check meson's build.
      opts=(-Dtest_standards=c++17)
      [ "$preset" = meson-noexcept ] && opts=(-Dcpp_eh=none -Dtest_standards=c++20)
      { meson setup --wipe "build/$preset" "${opts[@]}" >/dev/null 2>&1 || meson setup "build/$preset" "${opts[@]}"; } &&
        meson test -C "build/$preset" --print-errorlogs ;;
    *)
      cmake --preset "$preset" >/dev/null && cmake --build --preset "$preset" && ctest --preset "$preset" ;;
  esac 2>&1 | tee "$log"
  count "$preset" "$log"
  [ "$preset" != ci-gcc ] || cp "$log" "$gcc_log"
  rm -f "$log"
  times+=("$preset $((SECONDS - start)) s")
  echo "$preset $((SECONDS - start))" >> "$stage_times"
done

echo
echo "wall time of each stage (build and tests; docs/testing.md says why each is there):"
printf '  %s\n' "${times[@]}"
echo "  all stages: $((SECONDS)) s"
[ ${#broken[@]} -eq 0 ] || echo "failing stages: ${broken[*]}"
echo "tests: $passed passed, $failed failed"
# A run of every stage writes its times into docs/testing.md: the page says what was measured.
if [ "$every_stage" -eq 1 ] && [ "$failed" -eq 0 ]; then
  python3 tools/stage_times.py docs/testing.md "$stage_times" "$gcc_log" &&
    echo "docs/testing.md: the stage times of this run written"
fi
[ "$failed" -eq 0 ]
