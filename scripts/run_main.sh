#!/usr/bin/env bash
# Sets everything up (scripts/setup.sh) and runs the main job with flockrun.
# Until the training example lands, the main job is the allreduce demo on 4 ranks.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
"$root/scripts/setup.sh"
export PATH="$root/.venv/bin:$PATH"
cd "$root"
exec flockrun -np 4 python examples/python/allreduce_demo.py "$@"
