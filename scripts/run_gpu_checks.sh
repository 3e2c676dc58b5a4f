#!/usr/bin/env bash
# The first thing to run on a real GPU machine (a cluster node with NVIDIA GPUs, the CUDA
# toolkit, NCCL and an MPI): builds flock against the real CUDA runtime and NCCL, then runs
# the GPU benchmark (flock vs raw NCCL, benchmarks/gpu) with one rank per GPU.
#
#   scripts/run_gpu_checks.sh [benchmark options...]     e.g. --max-bytes 64M --rounds 5
#
# Environment (all optional):
#   FLOCK_CUDA_ARCHS  CUDA architectures to compile for (CMAKE_CUDA_ARCHITECTURES), e.g. 80 or
#                     native; default: flock's list (every GPU code nvcc knows from sm_75 on,
#                     which takes a while to compile)
#   GPU_BENCH_NP      ranks for the benchmark; default: the number of GPUs nvidia-smi lists
#                     (2 if it lists none or is missing)
#   MPIRUN            the MPI launcher (default: mpirun)
#   MPIRUN_ARGS       extra launcher arguments, e.g. "--allow-run-as-root" or "--mca btl ^openib"
#   JOBS              build jobs (default: nproc)
#
# It writes only into build-gpu-real/ and docs/performance/gpu-<hostname>.json (the
# benchmark's rows; commit it with a note on the machine). Nothing is installed or removed.
set -euo pipefail

root=$(cd "$(dirname "$0")/.." && pwd)
cd "$root"
build="$root/build-gpu-real"
host=$(hostname -s 2>/dev/null || hostname)
json="$root/docs/performance/gpu-$host.json"
launcher="${MPIRUN:-mpirun}"
read -r -a launcher_args <<<"${MPIRUN_ARGS:-}"

step() { printf '\n== run_gpu_checks: %s\n' "$*"; }

# 1. Configure the NCCL build: FLOCK_WITH_NCCL=ON fails here, with what is missing, when the
#    CUDA toolkit or NCCL cannot be found (set CUDAToolkit_ROOT or NCCL_HOME in the
#    environment then). Tests and benchmarks on; the Python module off (not needed here).
step "configuring $build (FLOCK_WITH_NCCL=ON, the real CUDA runtime and NCCL)"
archs=()
if [ -n "${FLOCK_CUDA_ARCHS:-}" ]; then archs=(-DCMAKE_CUDA_ARCHITECTURES="$FLOCK_CUDA_ARCHS"); fi
generator=()
if command -v ninja >/dev/null 2>&1; then generator=(-G Ninja); fi
cmake -S "$root" -B "$build" "${generator[@]}" -DCMAKE_BUILD_TYPE=Release \
  -DFLOCK_WITH_NCCL=ON -DFLOCK_BUILD_TESTS=ON -DFLOCK_BUILD_EXAMPLES=ON \
  -DFLOCK_BUILD_PYTHON=OFF "${archs[@]}"

# 2. Build everything, the benchmark included (benchmarks/flock_gpu_bench, linked with
#    libcudart and libnccl).
step "building (${JOBS:-$(nproc)} jobs)"
cmake --build "$build" -j "${JOBS:-$(nproc)}"

# 3. GPU tests on the real devices. Every GPU test of ctest runs on the fake device
#    (tests/fake_device: names with nccl, cuda, gpu or fake), which CI covers on machines
#    without a GPU; none needs a real one yet, so there is nothing to run here.
step "GPU tests on real devices"
echo "none yet: the GPU tests run on the fake device in CI (scripts/test_gpu.sh)"

# 4. The benchmark, one rank per GPU. flock gives local rank r the device r % (GPU count),
#    and the raw NCCL side uses the same device.
gpus=0
if command -v nvidia-smi >/dev/null 2>&1; then
  gpus=$(nvidia-smi -L 2>/dev/null | grep -c '^GPU' || true)
fi
np="${GPU_BENCH_NP:-$gpus}"
case "$np" in
  '' | *[!0-9]*) echo "GPU_BENCH_NP must be a number of ranks (got '$np')" >&2; exit 2 ;;
esac
if [ "$np" -lt 1 ]; then
  echo "nvidia-smi lists no GPU: running 2 ranks (set GPU_BENCH_NP to choose)"
  np=2
fi
step "benchmark: $launcher -np $np flock_gpu_bench $*"
mkdir -p "$(dirname "$json")"
"$launcher" "${launcher_args[@]}" -np "$np" "$build/benchmarks/flock_gpu_bench" \
  --json "$json" "$@" | tee "$build/gpu_bench.log"

step "done"
echo "table: $build/gpu_bench.log"
echo "rows:  $json"
