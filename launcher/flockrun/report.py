"""flockrun's own account of how a job ended, and its exit status.

Pure functions of what the relay gathered (relay.py, mpirun_messages.py): one
summary of the first failed rank instead of mpirun's boxes and the other ranks'
reports, and an exit status that says what happened:

    0        every rank exited with 0
    N        the first failed rank exited with status N, or called MPI_Abort
             with code N (flock does on an uncaught exception: 1, and on
             sys.exit(N): N)
    128 + S  the first failed rank was killed by signal S, or flockrun itself
             was stopped by signal S (Ctrl-C: 130)
    126/127  the program could not be started: not executable / not found
    other    mpirun's own status (1: mpirun itself failed)
"""

import signal
from typing import List, Optional, Sequence

from flockrun.mpirun_messages import LaunchFailure, RankFailure
from flockrun.program import NOT_EXECUTABLE_STATUS, NOT_FOUND_STATUS


def signal_name(signum: int) -> str:
    try:
        return signal.Signals(signum).name
    except ValueError:
        return f"signal {signum}"


def what_happened(failure: RankFailure) -> str:
    """How the rank ended, in a few words."""
    if failure.how == "signal" and failure.signal is not None:
        return f"was killed by signal {failure.signal} ({signal_name(failure.signal)})"
    if failure.how == "abort":
        return f"ended the job with MPI_Abort (code {failure.code})"
    if failure.how == "improper":
        return "exited without finalizing MPI while the other ranks ran on"
    return f"exited with status {failure.code}"


def failure_summary(failure: RankFailure, host: Optional[str], num_proc: int,
                    last_lines: Sequence[str]) -> List[str]:
    """The lines flockrun prints (to stderr) when a rank failed."""
    where = f" (host {host})" if host else ""
    first = f"flockrun: rank {failure.rank}{where} {what_happened(failure)}"
    if num_proc > 1:
        first += "; mpirun stopped the other ranks"
    lines = [first]
    if last_lines:
        lines.append(f"flockrun: last lines of rank {failure.rank}:")
        lines += ["    " + line for line in last_lines]
    else:
        lines.append(f"flockrun: rank {failure.rank} printed nothing")
    return lines


def launch_failure_line(launch: LaunchFailure) -> str:
    where = f" on host {launch.host}" if launch.host else ""
    return f"flockrun: error: cannot start {launch.executable!r}{where}: {launch.reason}"


def exit_status(mpirun_status: int, failure: Optional[RankFailure],
                launch: Optional[LaunchFailure], stopped_by: Optional[int]) -> int:
    """flockrun's exit status (see the module docstring)."""
    if stopped_by is not None:
        return 128 + stopped_by
    if launch is not None:
        return NOT_FOUND_STATUS if launch.not_found else NOT_EXECUTABLE_STATUS
    if mpirun_status == 0:
        return 0
    if failure is not None and failure.how == "signal" and failure.signal is not None:
        return 128 + failure.signal
    return mpirun_status


def closing_lines(mpirun_status: int, failure: Optional[RankFailure],
                  launch: Optional[LaunchFailure], stopped_by: Optional[int],
                  host: Optional[str], num_proc: int,
                  last_lines: Sequence[str], some_rank_failed: bool = False) -> List[str]:
    """Everything flockrun says after the job, given what happened (may be nothing)."""
    if stopped_by is not None:
        return [f"flockrun: stopped by {signal_name(stopped_by)}; mpirun ended the ranks"]
    if launch is not None:
        return [launch_failure_line(launch)]
    if failure is not None:
        return failure_summary(failure, host, num_proc, last_lines)
    if some_rank_failed and mpirun_status != 0:
        return [f"flockrun: a rank exited with status {mpirun_status} (mpirun did not say "
                "which: it does not when a rank ends before all have started); mpirun "
                "stopped the other ranks"]
    if mpirun_status != 0:
        return [f"flockrun: mpirun exited with status {mpirun_status}"]
    return []
