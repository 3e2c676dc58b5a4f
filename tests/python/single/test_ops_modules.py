"""flock.torch's and flock.numpy's ops are functions written out in their modules (so
help(), IDEs and grep see them), numpy's generated from torch's and kept up to date."""

import inspect
import subprocess
import sys
from pathlib import Path

import flock.numpy as fnp
import flock.torch as bf
import flock.torch.ops as torch_ops

ROOT = Path(__file__).resolve().parents[3]
GENERATOR = ROOT / "tools" / "gen_numpy_ops.py"


def test_numpy_ops_file_is_generated_from_torch_ops():
    result = subprocess.run([sys.executable, str(GENERATOR), "--check"],
                            capture_output=True, text=True)
    assert result.returncode == 0, result.stdout + result.stderr


def test_the_generator_notices_a_stale_copy(tmp_path, monkeypatch):
    sys.path.insert(0, str(GENERATOR.parent))
    try:
        import gen_numpy_ops
    finally:
        sys.path.remove(str(GENERATOR.parent))
    stale = tmp_path / "_ops.py"
    stale.write_text(gen_numpy_ops.numpy_ops(gen_numpy_ops.SOURCE.read_text()) + "# edited\n")
    monkeypatch.setattr(gen_numpy_ops, "TARGET", stale)
    assert gen_numpy_ops.main(["--check"]) == 1


def test_each_op_is_defined_in_its_frameworks_module():
    for name in torch_ops.__all__:
        for module, where in ((bf, "torch/ops.py"), (fnp, "numpy/_ops.py")):
            fn = getattr(module, name)
            assert inspect.isfunction(fn), name
            source = Path(inspect.getsourcefile(inspect.unwrap(fn))).as_posix()
            # barrier, synchronize, wait and poll are the shared _collectives functions
            assert source.endswith(where) or source.endswith("_collectives.py"), (name, source)
        assert inspect.signature(getattr(bf, name)) == inspect.signature(getattr(fnp, name))
        assert getattr(bf, name).__doc__ == getattr(fnp, name).__doc__
