"""``@run``: the elastic training function's wrapper (Horovod's ``hvd.elastic.run``).

A relaunched job runs the user's script from the top on the new world, so
``run`` only has to start from the right state and end the right way:

- before the function: the newest commit on every rank (read by rank 0,
  broadcast), then the reset callbacks; with no commit yet, rank 0's state on
  every rank;
- HostsUpdatedInterrupt (raised by ``commit()`` when flockrun asked for new
  hosts): rank 0 tells flockrun, every rank exits with status 0, and flockrun
  relaunches the job on the new world from that commit;
- anything else the function raises ends the job as it would without ``run``:
  a failure, which flockrun --elastic answers by relaunching from the last commit.
"""

import functools
import sys

from flock import basics
from flock.elastic import _control
from flock.elastic._state import HostsUpdatedInterrupt, State


def run(func):
    """Decorate ``train(state, ...)``; see the module docstring."""

    @functools.wraps(func)
    def wrapper(state: State, *args, **kwargs):
        if not isinstance(state, State):
            raise TypeError(f"flock elastic run: the first argument of {func.__name__} must "
                            f"be a flock elastic State, got {type(state).__name__}")
        if state._resume():
            _say_resumed(state)
            state.on_reset()
        try:
            return func(state, *args, **kwargs)
        except HostsUpdatedInterrupt as interrupt:
            _end_for_relaunch(state, interrupt)

    return wrapper


def _say_resumed(state: State) -> None:
    if basics.rank() != 0:
        return
    meta = state.resumed_from or {}
    print(f"flock.elastic: launch {_control.launch_number()} resumes from commit made by "
          f"{meta.get('world_size')} ranks (launch {meta.get('launch')}) on "
          f"{basics.size()} ranks", file=sys.stderr, flush=True)


def _end_for_relaunch(state: State, interrupt: HostsUpdatedInterrupt) -> None:
    directory = _control.elastic_directory()
    if basics.rank() == 0:
        print(f"flock.elastic: ending launch {_control.launch_number()} at commit "
              f"{state.commits} to relaunch: {interrupt}", file=sys.stderr, flush=True)
        if directory:
            _control.mark_restart(directory, _control.launch_number())
    basics.shutdown()
    sys.exit(0)
