#!/usr/bin/env bash
# Sets everything up (scripts/setup.sh) and runs the main job with flockrun:
# decentralized training on scikit-learn's digits (shipped offline) on 4 ranks
# with neighbor_allreduce over the exponential graph. Extra arguments go to
# examples/python/train_digits.py (e.g. --dynamic, --atc, --plot digits.png).
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
"$root/scripts/setup.sh"
export PATH="$root/.venv/bin:$PATH"
cd "$root"
exec flockrun -np 4 python examples/python/train_digits.py --dist-optimizer neighbor_allreduce "$@"
