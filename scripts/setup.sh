#!/usr/bin/env bash
# Sets up everything flock needs on a fresh Debian 12 machine, as root, and
# builds it. Idempotent: a second run installs nothing new and rebuilds only
# what changed.
#   1. Debian packages (compilers, OpenMPI, pybind11, Eigen, GoogleTest, torch, ...)
#   2. a venv at .venv from /usr/bin/python3 that sees Debian's Python packages
#   3. the CMake build in build/ (library, extension, C++ tests, examples)
#   4. flock installed into the venv (pip, no download), with the `flockrun` and
#      `flock-interactive` commands
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
cd "$root"

packages=(
  build-essential cmake ninja-build git
  # every build (release, sanitizers, fuzzers) reuses unchanged objects (cmake/FlockCcache.cmake)
  ccache
  openmpi-bin libopenmpi-dev
  python3 python3-dev python3-venv python3-pip python3-setuptools python3-wheel
  pybind11-dev python3-pybind11 libeigen3-dev libgtest-dev libgmock-dev libbenchmark-dev
  # the topology library's sparse eigenvalue solver (header-only, on Eigen)
  libspectra-dev
  libdlpack-dev nlohmann-json3-dev
  python3-numpy python3-torch python3-pytest python3-pytest-timeout python3-networkx python3-mpi4py
  # setup.py's "examples" extra, from Debian: the main job needs torch and scikit-learn; the
  # benchmark and ResNet examples torchvision; tqdm and matplotlib add progress bars and plots.
  python3-sklearn python3-torchvision python3-tqdm python3-matplotlib
  iproute2 procps
  # scripts/fuzz.sh: clang and its runtime, which holds libFuzzer
  clang-14 libclang-rt-14-dev
  # tools/check_structure.py (ctest `structure`): the C++ code is clang-format clean
  clang-format-14
  # flock-interactive (notebooks, %%px) and the test that runs the example notebook
  python3-ipyparallel python3-ipykernel python3-nbclient python3-nbformat
)
missing=()
for p in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if [ ${#missing[@]} -gt 0 ]; then
  echo "setup: installing ${missing[*]}"
  sudo_cmd=""
  [ "$(id -u)" -ne 0 ] && sudo_cmd="sudo"
  $sudo_cmd apt-get update -q
  DEBIAN_FRONTEND=noninteractive $sudo_cmd apt-get install -y -q --no-install-recommends "${missing[@]}"
fi

if [ ! -x .venv/bin/python ]; then
  echo "setup: creating .venv (system site packages visible)"
  /usr/bin/python3 -m venv --system-site-packages .venv
fi

# The CPU configuration by default; FLOCK_WITH_NCCL=ON (or AUTO) builds the GPU backend too
# (scripts/test_gpu.sh builds and tests that configuration in build-gpu/).
export FLOCK_WITH_NCCL="${FLOCK_WITH_NCCL:-OFF}"
echo "setup: building in build/ (FLOCK_WITH_NCCL=$FLOCK_WITH_NCCL)"
mkdir -p build
cmake -S . -B build -G Ninja -DCMAKE_BUILD_TYPE=Release -DFLOCK_WITH_NCCL="$FLOCK_WITH_NCCL" \
  -DPython3_EXECUTABLE="$root/.venv/bin/python" \
  >build/configure.log 2>&1 || { cat build/configure.log; exit 1; }
cmake --build build -j "$(nproc)"

echo "setup: installing flock into .venv"
FLOCK_CMAKE_BUILD_DIR="$root/build" .venv/bin/python -m pip install --no-build-isolation --no-deps \
  --no-index --quiet "$root"
.venv/bin/python -c "import flock; print('setup: flock', flock.__version__, 'installed in', '$root/.venv')"
.venv/bin/python -c "import torch, torchvision, sklearn, tqdm, matplotlib" ||
  { echo "setup: the examples' packages (setup.py's 'examples' extra) do not import"; exit 1; }
