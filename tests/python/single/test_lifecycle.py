"""Single-process behaviour: use before init, init/shutdown/init, settings."""

import re
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest


def run_python(code, timeout=60):
    """Runs `code` in a fresh interpreter (MPI can start once per process)."""
    return subprocess.run([sys.executable, "-c", textwrap.dedent(code)], capture_output=True,
                          text=True, timeout=timeout)


def test_use_before_init_names_the_remedy():
    result = run_python("""
        import torch, flock.torch as bf
        for call in (lambda: bf.allreduce(torch.ones(1)), bf.rank, bf.size, bf.barrier):
            try:
                call()
            except bf.FlockError as e:
                assert type(e).__name__ == "FlockNotInitializedError", type(e)
                assert "flock.init()" in str(e), str(e)
            else:
                raise SystemExit("no error before init")
        print("ok")
    """)
    assert result.returncode == 0 and "ok" in result.stdout, result.stderr


def test_init_shutdown_init_and_ops_after():
    result = run_python("""
        import numpy as np, flock.numpy as fnp
        for round in range(3):
            fnp.init()
            assert fnp.size() == 1 and fnp.rank() == 0
            assert fnp.allreduce(np.array([2.0]), op="sum")[0] == 2.0
            fnp.shutdown()
            assert not fnp.is_initialized()
        print("ok")
    """)
    assert result.returncode == 0 and "ok" in result.stdout, result.stderr


def test_import_works_without_torch_for_numpy_users():
    result = run_python("""
        import sys
        sys.modules["torch"] = None  # importing torch would now fail
        import flock, flock.numpy
        print("ok")
    """)
    assert result.returncode == 0 and "ok" in result.stdout, result.stderr


def test_bad_setting_fails_init_naming_the_variable():
    result = subprocess.run(
        [sys.executable, "-c", "import flock; flock.init()"], capture_output=True, text=True,
        timeout=60, env={**__import__("os").environ, "FLOCK_FUSION_THRESHOLD": "lots"})
    assert result.returncode != 0
    assert "FLOCK_FUSION_THRESHOLD='lots'" in result.stderr


def test_settings_table_lists_every_variable():
    import flock
    names = [row[0] for row in flock._core.settings()]
    assert "FLOCK_LOG_LEVEL" in names and "FLOCK_TIMELINE" in names
    assert all(name.startswith("FLOCK_") for name in names)
    # docs/env.md documents exactly the variables of the table.
    doc = (Path(__file__).resolve().parents[3] / "docs" / "env.md").read_text()
    documented = set(re.findall(r"^\| `(FLOCK_[A-Z_]+)`", doc, re.M))
    assert documented == set(names), "docs/env.md vs settings(): {}".format(
        documented.symmetric_difference(names))


@pytest.mark.parametrize("dtype", ["float32", "bfloat16"])
def test_single_rank_allreduce_is_identity(dtype):
    result = run_python("""
        import torch, flock.torch as bf
        bf.init()
        x = torch.randn(10).to(torch.{0})
        assert torch.equal(bf.allreduce(x), x)
        print("ok")
    """.format(dtype))
    assert result.returncode == 0 and "ok" in result.stdout, result.stderr


MALLOC_PROBE = """
    import ctypes, os, numpy as np, flock.numpy as fnp
    fnp.init()
    # A 64 MiB block freed and allocated again: with the tuning it comes from
    # the heap both times (no fresh mmap, so no new page faults on reuse).
    libc = ctypes.CDLL(None)
    libc.malloc.restype = ctypes.c_void_p
    libc.free.argtypes = [ctypes.c_void_p]
    libc.memset.argtypes = [ctypes.c_void_p, ctypes.c_int, ctypes.c_size_t]
    import resource
    block = libc.malloc(64 << 20); libc.memset(block, 1, 64 << 20); libc.free(block)
    before = resource.getrusage(resource.RUSAGE_SELF).ru_minflt
    block = libc.malloc(64 << 20); libc.memset(block, 1, 64 << 20); libc.free(block)
    print("faults", resource.getrusage(resource.RUSAGE_SELF).ru_minflt - before)
    fnp.shutdown()
"""


def _malloc_probe(**env):
    result = subprocess.run([sys.executable, "-c", textwrap.dedent(MALLOC_PROBE)],
                            capture_output=True, text=True, timeout=60,
                            env={**__import__("os").environ, "FLOCK_LOG_LEVEL": "debug", **env})
    assert result.returncode == 0, result.stderr
    faults = int(re.search(r"faults (\d+)", result.stdout).group(1))
    return faults, result.stderr


def test_malloc_tuning_keeps_large_freed_buffers_for_reuse():
    faults, log = _malloc_probe()
    assert "large buffers stay in the process" in log, log
    assert faults < 1000, "64 MiB reused with {} page faults".format(faults)


def test_malloc_tuning_off_or_user_settings_leave_malloc_alone():
    faults, log = _malloc_probe(FLOCK_MALLOC_TUNING="0")
    assert "malloc:" not in log
    assert faults > 10000, "without the tuning glibc unmaps 64 MiB on free ({} faults)".format(
        faults)
    _, log = _malloc_probe(MALLOC_ARENA_MAX="4")
    assert "left as configured (MALLOC_ARENA_MAX=4)" in log, log
