"""Start and stop flock, and ask about ranks and machines.

``init()`` starts MPI (unless mpi4py or a host program already did) and builds
the runtime; ``shutdown()`` releases it and ``init()`` may be called again.
MPI itself is finalized once, when the interpreter exits. In a multi-rank job,
an uncaught exception on one rank prints its traceback and then ends every
rank, and so does ``sys.exit`` with a non-zero status: finalizing MPI there
would wait forever for ranks that are still inside a collective. The ranks the
launcher then terminates print one line each, not a traceback. A program started
without a launcher runs as one rank and says so once (see _launch_notes.py).
"""

import atexit
import signal
import sys
import threading

from flock import _launch_notes, _rank_hosts
from flock._core_loader import core
from flock._public import publish

_atexit_registered = False
_previous_excepthook = None
_original_sys_exit = None
_requested_exit_status = 0


def init(topology_fn=None, is_weighted=False, device=None):
    """Initializes flock on this rank; call it once on every rank before any op.

    ``device`` (NCCL builds): the CUDA device this rank uses for CUDA tensors, over
    ``FLOCK_DEVICE`` and the default (the rank's index on its host modulo the device
    count); ignored when flock is already initialized.

    Then sets the topology (collective), on every call as Bluefog does:
    ``topology_fn(size())`` when given, else ``ExponentialGraph(size())``, with
    ``is_weighted`` as in ``set_topology``. So a second ``init()`` (a test's setUp,
    say) goes back to the default graph, whatever ``set_topology`` set before.
    """
    global _atexit_registered
    if not _atexit_registered:  # before core.init: a failed init may have started MPI
        atexit.register(_at_exit)
        _atexit_registered = True
    was_initialized = core.is_initialized()
    core.init(device)
    _rank_hosts.remember(core.host_names(), core.rank())
    _install_failure_hooks()
    if not was_initialized:
        _launch_notes.note_single_rank(core.size())
    from flock import _topology_runtime
    _topology_runtime.set_initial_topology(topology_fn, is_weighted)


def shutdown():
    """Releases flock's communicators (and every window); ``init()`` may be called again
    afterwards."""
    from flock import _windows
    _windows.free_all_before_shutdown()
    core.shutdown()


_skip_negotiate_stage = False


def set_skip_negotiate_stage(value):
    """Kept for Bluefog scripts. Bluefog skips its global negotiation round for neighbor ops
    with it; flock's neighbor ops never negotiate (they talk to their peers only, and a
    mismatch is still reported), and its global ops need negotiation to be matched by name,
    so this only records the value for get_skip_negotiate_stage()."""
    global _skip_negotiate_stage
    _skip_negotiate_stage = bool(value)


def get_skip_negotiate_stage():
    """The value last given to set_skip_negotiate_stage() (default False)."""
    return _skip_negotiate_stage


def suspend():
    """Kept for Bluefog scripts (Bluefog pauses its background thread, for notebooks). flock's
    engine thread already sleeps when there is nothing to do, so this does nothing."""


def resume():
    """Counterpart of suspend(); does nothing (see suspend)."""


def is_initialized():
    return core.is_initialized()


def size():
    """Number of ranks in the job."""
    return core.size()


def rank():
    """This process's rank, 0 .. size() - 1."""
    return core.rank()


def local_size():
    """Number of ranks on this machine."""
    return core.local_size()


def local_rank():
    """This process's rank among the ranks of its machine."""
    return core.local_rank()


def machine_size():
    """Number of machines, ``size() // local_size()`` (as Bluefog defines it)."""
    return core.machine_size()


def machine_rank():
    """This machine's index, ``rank() // local_size()``."""
    return core.machine_rank()


def is_homogeneous():
    """True when every machine has the same number of ranks, laid out machine by machine."""
    return core.is_homogeneous()


def mpi_threads_supported():
    """True when MPI runs with MPI_THREAD_MULTIPLE."""
    return core.mpi_threads_supported()


def unified_mpi_window_model_supported():
    """True when MPI's one-sided memory model is unified (MPI_WIN_UNIFIED): a window's
    public and private copies are the same memory, as on OpenMPI over shared memory."""
    return core.unified_mpi_window_model_supported()


def nccl_built():
    """True when this build has the NCCL backend for CUDA tensors."""
    return core.nccl_built()


def _in_multi_rank_job():
    return core.is_initialized() and core.size() > 1


# flockrun reads the two "ending every rank of the job" lines below (ENDING_JOB_RE in
# launcher/flockrun/relay.py): keep their wording in step.
def _abort_job_on_uncaught_exception(kind, value, traceback):
    signum = getattr(value, "flock_termination_signal", None)
    if signum is not None and _in_multi_rank_job():
        _launch_notes.end_by_signal(core.rank(), signum)  # does not return
    _previous_excepthook(kind, value, traceback)
    if _in_multi_rank_job():
        sys.stderr.write(
            "flock: uncaught exception on rank {}; ending every rank of the job\n".format(core.rank()))
        sys.stderr.flush()
        sys.stdout.flush()
        core.abort(1)


def _recording_exit(status=None):
    """sys.exit that remembers the status, so _at_exit can tell failure from success."""
    global _requested_exit_status
    if status is None:
        _requested_exit_status = 0
    elif isinstance(status, int):
        _requested_exit_status = status
    else:
        _requested_exit_status = 1  # sys.exit("message") exits with 1
    _original_sys_exit(status)


def _at_exit():
    if _requested_exit_status != 0 and _in_multi_rank_job():
        sys.stderr.write("flock: rank {} exits with status {}; ending every rank of the job\n".format(
            core.rank(), _requested_exit_status))
        sys.stderr.flush()
        sys.stdout.flush()
        core.abort(_requested_exit_status)
    core.finalize()


def _raise_on_termination(signum, frame):
    # mpirun sends SIGTERM to the surviving ranks when one rank died: say so in
    # the error raised where this rank is (usually waiting in synchronize).
    # Left uncaught, the error ends the rank by that signal with one line (no traceback).
    from flock.errors import FlockAbortedError
    error = FlockAbortedError(
        "the job is being terminated (signal {}): another rank probably failed; its "
        "output says why".format(signum))
    error.flock_termination_signal = signum
    raise error


def _install_failure_hooks():
    global _previous_excepthook, _original_sys_exit
    if (threading.current_thread() is threading.main_thread()
            and signal.getsignal(signal.SIGTERM) == signal.SIG_DFL):
        signal.signal(signal.SIGTERM, _raise_on_termination)
    if _previous_excepthook is None:
        _previous_excepthook = sys.excepthook
        sys.excepthook = _abort_job_on_uncaught_exception
    if _original_sys_exit is None:
        _original_sys_exit = sys.exit
        sys.exit = _recording_exit


publish(globals(), [
    "init", "shutdown", "size", "rank", "local_size", "local_rank", "machine_size", "machine_rank",
    "is_homogeneous", "mpi_threads_supported", "unified_mpi_window_model_supported", "nccl_built"])
