#!/usr/bin/env bash
# Runs every libFuzzer target (tests/fuzz, one per decoder of outside bytes)
# for a bounded time:
#   scripts/fuzz.sh [SECONDS]      SECONDS per target, default 20
# Builds them first if needed: clang (CC/CXX, default clang-14), FLOCK_FUZZ=ON,
# in build-fuzz/ (FLOCK_FUZZ_BUILD_DIR). Each target starts from its seed
# corpus and its past crash inputs, tests/fuzz/<target>/ and regressions/,
# which it only reads; what it learns goes to out/fuzz/<target>/corpus. A
# crash, sanitizer report, leak, out-of-memory or hang stops that target and
# leaves the input in out/fuzz/<target>/ (crash-*, oom-*, timeout-*, leak-*);
# the script runs the others, then exits non-zero. Replay one input with
#   build-fuzz/tests/fuzz/fuzz_<target> out/fuzz/<target>/crash-...
set -uo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
seconds=${1:-20}
build=${FLOCK_FUZZ_BUILD_DIR:-$root/build-fuzz}
out="$root/out/fuzz"
mkdir -p "$out"

if [ ! -f "$build/CMakeCache.txt" ]; then
  echo "fuzz: configuring $build with ${CXX:-clang++-14}"
  CC=${CC:-clang-14} CXX=${CXX:-clang++-14} cmake -S "$root" -B "$build" -G Ninja \
    -DCMAKE_BUILD_TYPE=RelWithDebInfo -DFLOCK_FUZZ=ON -DFLOCK_BUILD_PYTHON=OFF \
    -DFLOCK_BUILD_TESTS=OFF -DFLOCK_BUILD_EXAMPLES=OFF -DFLOCK_WITH_NCCL=OFF \
    >"$out/configure.log" 2>&1 || { cat "$out/configure.log"; exit 1; }
fi
cmake --build "$build" -j "$(nproc)" --target flock_fuzzers || { echo "fuzz: build failed"; exit 1; }

export UBSAN_OPTIONS=print_stacktrace=1
failed=()
for exe in "$build"/tests/fuzz/fuzz_*; do
  target=${exe##*/fuzz_}
  mkdir -p "$out/$target/corpus"
  # -timeout: one input running this long is a hang; the outer timeout is a backstop.
  timeout --kill-after=10 $((seconds + 120)) "$exe" -max_total_time="$seconds" -timeout=10 \
    -rss_limit_mb=2048 -artifact_prefix="$out/$target/" \
    "$out/$target/corpus" "$root/tests/fuzz/$target" >"$out/$target/log" 2>&1
  code=$?
  runs=$(grep -oE '^Done [0-9]+ runs' "$out/$target/log" | grep -oE '[0-9]+')
  if [ "$code" -eq 0 ]; then
    echo "fuzz_$target: ${runs:-?} inputs in ${seconds} s, no crash"
  else
    echo "fuzz_$target: FAILED (exit $code); input and log in $out/$target/:"
    grep -E 'ERROR|runtime error|contract broken|SUMMARY|Test unit written' "$out/$target/log" | head -8
    failed+=("$target")
  fi
done
if [ ${#failed[@]} -gt 0 ]; then
  echo "fuzz: FAILED targets: ${failed[*]}"
  exit 1
fi
echo "fuzz: every target ran ${seconds} s without a crash"
