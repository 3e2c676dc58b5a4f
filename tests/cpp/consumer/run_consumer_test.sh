#!/usr/bin/env bash
# Usage: run_consumer_test.sh FLOCK_BUILD_DIR WORK_DIR MPIEXEC
# Installs the built flock into WORK_DIR/prefix, builds the consumer project
# against it with find_package(flock), and runs it on two ranks.
set -euo pipefail
build=$1 work=$2 mpiexec=$3
here=$(cd "$(dirname "$0")" && pwd)
rm -rf "$work" && mkdir -p "$work"
cmake --install "$build" --prefix "$work/prefix" >/dev/null
cmake -S "$here" -B "$work/build" -DCMAKE_PREFIX_PATH="$work/prefix" >/dev/null
cmake --build "$work/build" >/dev/null
"$mpiexec" --allow-run-as-root --oversubscribe --mca mpi_yield_when_idle 1 -np 2 "$work/build/consumer"
