"""Bluefog's window optimizers exist in flock.torch and fail with a clear "not supported
yet" error (a FlockUnsupportedError naming the window issue), before and without init();
the window ops themselves are there (tests/python/parallel/test_windows.py)."""

import traceback

import pytest

torch = pytest.importorskip("torch")
import flock.torch as bf  # noqa: E402
from flock.torch import _windows_pending  # noqa: E402

# What Bluefog's optimizer examples build.
EXAMPLE_CALLS = {
    "DistributedWinPutOptimizer": lambda: bf.DistributedWinPutOptimizer(
        torch.optim.SGD(torch.nn.Linear(2, 2).parameters(), lr=0.1), model=None),
    "DistributedPushSumOptimizer": lambda: bf.DistributedPushSumOptimizer(
        torch.optim.SGD(torch.nn.Linear(2, 2).parameters(), lr=0.1), model=None),
}


@pytest.mark.parametrize("name", sorted(EXAMPLE_CALLS))
def test_bluefog_example_calls_fail_clearly(name):
    with pytest.raises(bf.FlockUnsupportedError) as raised:
        EXAMPLE_CALLS[name]()
    message = str(raised.value)
    assert "flock.torch.{} is not supported yet".format(name) in message
    assert "issue 24" in message and "win_put" in message


def test_the_traceback_ends_at_the_call():
    with pytest.raises(bf.FlockUnsupportedError) as raised:
        bf.DistributedPullGetOptimizer(None, model=None)
    frames = [f.name for f in traceback.extract_tb(raised.value.__traceback__)]
    assert frames[-1] == "DistributedPullGetOptimizer" and "not_supported_yet" not in frames, \
        frames


@pytest.mark.parametrize("name", _windows_pending.__all__)
def test_every_window_name_is_exported_and_raises(name):
    stub = getattr(bf, name)
    assert stub.__name__ == name
    with pytest.raises(bf.FlockUnsupportedError, match=name):
        stub()


def test_the_list_holds_bluefogs_window_family():
    names = set(_windows_pending.__all__)
    assert names == {"DistributedWinPutOptimizer", "DistributedPullGetOptimizer",
                     "DistributedPushSumOptimizer"}
    for name in ("win_create", "win_free", "win_put", "win_get", "win_accumulate", "win_update",
                 "win_update_then_collect", "win_mutex", "win_lock", "get_win_version",
                 "get_current_created_window_names", "win_associated_p",
                 "turn_on_win_ops_with_associated_p", "turn_off_win_ops_with_associated_p"):
        assert callable(getattr(bf, name)), name
