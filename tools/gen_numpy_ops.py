"""Writes python/flock/numpy/_ops.py from python/flock/torch/ops.py.

flock.torch and flock.numpy expose the same ops with the same signatures and
docstrings; only the adapter differs. The ops are written out in both modules,
not built at import time, so that help(), IDEs and grep see them. torch/ops.py
is the one to edit; this tool makes numpy's copy (the adapter import swapped).

usage: python tools/gen_numpy_ops.py [--check]
  --check  write nothing; exit 1 if numpy/_ops.py is not what this tool writes
"""

import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
SOURCE = ROOT / "python" / "flock" / "torch" / "ops.py"
TARGET = ROOT / "python" / "flock" / "numpy" / "_ops.py"

HEADER = '''"""flock.numpy's collectives, generated from flock/torch/ops.py: do not edit.

Edit python/flock/torch/ops.py, then run python tools/gen_numpy_ops.py.
"""
'''
TORCH_ADAPTER = "from flock.torch import _adapter\n"
NUMPY_ADAPTER = "from flock import _numpy_adapter as _adapter\n"


def numpy_ops(torch_source):
    """numpy/_ops.py's text: torch/ops.py without its docstring, on numpy's adapter."""
    end_of_docstring = torch_source.index('"""', 3) + len('"""\n')
    body = torch_source[end_of_docstring:]
    if body.count(TORCH_ADAPTER) != 1:
        raise SystemExit("gen_numpy_ops: {} must import its adapter exactly as {!r}".format(
            SOURCE, TORCH_ADAPTER.strip()))
    return HEADER + body.replace(TORCH_ADAPTER, NUMPY_ADAPTER)


def main(argv):
    wanted = numpy_ops(SOURCE.read_text())
    if argv == ["--check"]:
        if not TARGET.exists() or TARGET.read_text() != wanted:
            print("{} is stale: run python tools/gen_numpy_ops.py".format(TARGET))
            return 1
        return 0
    if argv:
        print(__doc__.strip())
        return 2
    TARGET.write_text(wanted)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
