#!/usr/bin/env bash
# Sets everything up (scripts/setup.sh) and runs the whole test suite:
#   1. C++ tests (ctest): units, MPI tests at np 1-6, the find_package consumer
#   2. launcher tests, single-process Python tests and flock across emulated
#      hosts (network namespaces; skipped where they cannot be made); then the
#      elastic jobs (flockrun --elastic here and on emulated hosts) as a step of
#      their own
#   3. the Python API under flockrun at np 1-6 (one job per size)
#   4. sanitizers (scripts/sanitizers.sh): ASan+UBSan C++ unit and MPI tests (np 2-4,
#      leak detection on), the Python API at np 4 on the ASan module, TSan unit and MPI
#      tests (np 2-4), and the GPU path's C++ tests on the fake device under both
#   5. soak (benchmarks/soak.py): 500 random ops against numpy at np 3 and 4, memory,
#      threads and fds steady
#   6. fuzzing (scripts/fuzz.sh): each libFuzzer target for 20 s (clang build in build-fuzz/)
#   7. the GPU path (scripts/test_gpu.sh): the NCCL configuration built in build-gpu/, its
#      C++ and Python tests on the fake device (np 1-4), and the real module without a driver
# Every step has a timeout; a hang is reported as a failure. Exits non-zero
# when anything failed. Reports land in out/test-reports/.
set -uo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
cd "$root"
scripts/setup.sh || { echo "test: set-up failed"; exit 1; }
echo "test: set-up took $SECONDS s"

export PATH="$root/.venv/bin:$PATH"
reports="$root/out/test-reports"
rm -rf "$reports" && mkdir -p "$reports/logs"
failed_steps=() failed_logs=() steps_run=0

# run_step NAME TIMEOUT_SECONDS COMMAND...: runs a step, records its failure or hang.
run_step() {
  local name=$1 limit=$2
  shift 2
  echo
  echo "==== $name ===="
  steps_run=$((steps_run + 1))
  local started=$SECONDS log="$reports/logs/step-$steps_run.log"
  # tee in a process substitution, not a pipe: a stray process still holding the
  # output cannot keep this script waiting (only tee, for at most 5 s).
  local to_log tee_pid code waited=0
  exec {to_log}> >(tee "$log")
  tee_pid=$!
  timeout --kill-after=10 "$limit" "$@" >&"$to_log" 2>&1
  code=$?
  exec {to_log}>&-
  while kill -0 "$tee_pid" 2>/dev/null && [ "$waited" -lt 50 ]; do
    sleep 0.1
    waited=$((waited + 1))
  done
  echo "test: step '$name' took $((SECONDS - started)) s"
  if [ "$code" -eq 124 ] || [ "$code" -eq 137 ]; then
    echo "test: step '$name' HUNG: no result within ${limit}s (treated as a failure)"
    failed_steps+=("$name (timeout)")
    failed_logs+=("$log")
  elif [ "$code" -ne 0 ]; then
    echo "test: step '$name' FAILED with exit code $code"
    failed_steps+=("$name")
    failed_logs+=("$log")
  fi
}

run_step "C++ tests (ctest)" 900 \
  ctest --test-dir build --output-on-failure --output-junit "$reports/ctest.xml"
elastic_jobs=(tests/python/launcher/test_elastic_end_to_end.py
              tests/python/cluster/test_elastic_hosts.py)
run_step "launcher, single-process and emulated-cluster tests" 900 \
  python -m pytest -p no:cacheprovider --timeout=300 tests/python/launcher tests/python/single \
  tests/python/cluster "${elastic_jobs[@]/#/--ignore=}" \
  --junitxml "$reports/junit-single.xml"
run_step "elastic jobs: flockrun --elastic on this host and on emulated hosts" 900 \
  python -m pytest -p no:cacheprovider --timeout=300 "${elastic_jobs[@]}" \
  --junitxml "$reports/junit-elastic.xml"
for np in 1 2 3 4 5 6; do
  run_step "Python API under flockrun -np $np" 900 \
    flockrun -np "$np" python tests/python/mpi_pytest.py "$reports" tests/python/parallel -q
done

for np in 3 4; do
  run_step "soak: 500 random ops under flockrun -np $np" 300 \
    flockrun -np "$np" python benchmarks/soak.py --ops 500 --max-bytes 1048576 --seed "$np"
done

run_step "ASan+UBSan: C++ unit and MPI tests (np 2-4)" 1500 scripts/sanitizers.sh asan
run_step "ASan+UBSan: Python API under flockrun -np 4" 1200 scripts/sanitizers.sh asan-py
run_step "TSan: C++ unit tests and MPI tests (np 2-4)" 1200 \
  scripts/sanitizers.sh tsan
run_step "ASan+UBSan and TSan: the GPU path on the fake device" 1500 scripts/sanitizers.sh gpu
run_step "fuzzing (libFuzzer, 20 s per target)" 600 scripts/fuzz.sh 20
run_step "GPU path: NCCL build, fake-device tests at np 1-4, real module" 1500 \
  scripts/test_gpu.sh "$reports"

python "$root/scripts/summarize_reports.py" "$reports"
echo "test: the whole command took $SECONDS s"
if [ ${#failed_steps[@]} -gt 0 ]; then
  # A long log's failure is easy to miss (and CI shows only its end): the lines
  # that say why each failed step failed, again, last.
  for log in "${failed_logs[@]}"; do python "$root/scripts/failure_lines.py" "$log"; done
  echo "test: FAILED steps: ${failed_steps[*]}"
  exit 1
fi
echo "test: all steps passed"
