#!/usr/bin/env bash
# The GPU path's tests (a step of scripts/test.sh; needs scripts/setup.sh's .venv):
#   1. builds the NCCL configuration in build-gpu/ (FLOCK_WITH_NCCL=ON: the kernels by nvcc for
#      the default architecture list, or FLOCK_CUDA_ARCHS, e.g. 75 for a quick build), with
#      the fake device and flock's fake-device Python package (build-gpu/fake-python)
#   2. ctest's GPU tests (names with nccl, cuda, gpu or fake)
#   3. the Python GPU tests on the fake device under flockrun at np 1-4
#   4. FLOCK_WITH_NCCL=ON pip install . into build-gpu/venv-real: the real module (libcudart +
#      libnccl) on this machine without a GPU driver
# Exits non-zero when anything failed.
set -uo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
cd "$root"
export PATH="$root/.venv/bin:$PATH"
build="$root/build-gpu"
reports="${1:-$root/out/test-reports}"
mkdir -p "$build" "$reports/gpu-nccl" "$reports/gpu-via-mpi"
failed=()

archs=()
[ -n "${FLOCK_CUDA_ARCHS:-}" ] && archs=(-DCMAKE_CUDA_ARCHITECTURES="$FLOCK_CUDA_ARCHS")
cmake -S . -B "$build" -G Ninja -DCMAKE_BUILD_TYPE=Release -DFLOCK_WITH_NCCL=ON \
  -DFLOCK_BUILD_EXAMPLES=OFF -DPython3_EXECUTABLE="$root/.venv/bin/python" "${archs[@]}" \
  >"$build/configure.log" 2>&1 || { cat "$build/configure.log"; exit 1; }
cmake --build "$build" -j "$(nproc)" || { echo "test_gpu: the NCCL build failed"; exit 1; }

timeout --kill-after=10 600 ctest --test-dir "$build" -R "nccl|cuda|gpu|fake" \
  --output-on-failure --output-junit "$reports/ctest-gpu.xml" || failed+=("ctest (GPU)")

fake_lib="$build/tests/fake_device/libflock_fake_device.so"
for np in 1 2 3 4; do
  echo "test_gpu: Python GPU tests on the fake device, flockrun -np $np"
  env PYTHONPATH="$build/fake-python:$root/tests/python/gpu" FLOCK_FAKE_DEVICE_LIB="$fake_lib" \
    FAKE_CUDA_DELAY_US=300 FAKE_NCCL_TIMEOUT_S=60 \
    timeout --kill-after=10 600 flockrun -np "$np" python tests/python/mpi_pytest.py \
    "$reports/gpu-nccl" tests/python/gpu -q -p no:cacheprovider || failed+=("fake device np $np")
done

# The same tests with FLOCK_GPU_VIA_MPI=1 (through pinned memory, every fake NCCL op failing).
for np in 2 3; do
  echo "test_gpu: Python GPU tests over MPI through pinned memory, flockrun -np $np"
  env PYTHONPATH="$build/fake-python:$root/tests/python/gpu" FLOCK_FAKE_DEVICE_LIB="$fake_lib" \
    FAKE_CUDA_DELAY_US=300 FLOCK_GPU_VIA_MPI=1 FAKE_NCCL_FAIL_AFTER=0 \
    timeout --kill-after=10 600 flockrun -np "$np" python tests/python/mpi_pytest.py \
    "$reports/gpu-via-mpi" tests/python/gpu -q -p no:cacheprovider || failed+=("GPU via MPI np $np")
done

echo "test_gpu: FLOCK_WITH_NCCL=ON pip install . (real libcudart and libnccl), used without a driver"
venv="$build/venv-real"
[ -x "$venv/bin/python" ] || /usr/bin/python3 -m venv --system-site-packages "$venv"
if FLOCK_WITH_NCCL=ON FLOCK_CMAKE_BUILD_DIR="$build" "$venv/bin/python" -m pip install \
    --no-build-isolation --no-deps --no-index --quiet "$root"; then
  (cd "$build" && timeout --kill-after=10 300 "$venv/bin/python" -m pytest -q \
    -p no:cacheprovider "$root/tests/python/gpu_real") || failed+=("real module without a driver")
else
  failed+=("FLOCK_WITH_NCCL=ON pip install")
fi

if [ ${#failed[@]} -gt 0 ]; then
  echo "test_gpu: FAILED: ${failed[*]}"
  exit 1
fi
echo "test_gpu: all passed"
