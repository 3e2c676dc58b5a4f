"""Running mpirun: without a shell, forwarding SIGINT/SIGTERM to it.

``run_passthrough`` leaves mpirun's output alone (the user chose mpirun's own
output options). ``run_relayed`` reads mpirun's stdout and stderr through pipes
into an OutputRelay (relay.py), which writes the ranks' lines whole and keeps
what flockrun's summary needs, and stops an mpirun that cannot end a failed job
(_AbortWatchdog). Both return mpirun's exit status, with "killed by signal S" as
128 + S, the way a shell reports it.
"""

import collections
import os
import selectors
import signal
import subprocess
import sys
import time
from typing import Callable, Deque, Dict, List, Mapping, Optional, Tuple

from flockrun.errors import LaunchError
from flockrun.relay import OutputRelay

FORWARDED_SIGNALS = (signal.SIGINT, signal.SIGTERM)

POLL_S = 0.1  # how often unfinished lines are looked at while nothing arrives
# After mpirun exits, a launch agent (ssh) it started may still hold the pipes open.
DRAIN_AFTER_EXIT_S = 2.0
# Once a rank has ended the job (MPI_Abort) or mpirun has reported a failed rank,
# mpirun ends the others within about a second (measured: 1.0-1.1 s on the emulated
# hosts). One still running this long after is waiting for a host it cannot reach
# (OpenMPI: "abort is already in progress"), and would wait forever.
ABORT_GRACE_S = 15.0
# Then mpirun is asked to stop twice (its second SIGTERM forces it), and killed
# if it still runs this long after.
KILL_GRACE_S = 5.0


class _AbortWatchdog:
    """Stops an mpirun that has not ended a failed job in ABORT_GRACE_S."""

    def __init__(self) -> None:
        self.grace = ABORT_GRACE_S
        self.failed_at: Optional[float] = None
        self.stopped_at: Optional[float] = None
        self.killed = False

    def check(self, proc: subprocess.Popen, relay: OutputRelay, now: float) -> None:
        if self.failed_at is None:
            if relay.failure is not None:
                self.failed_at = now
            return
        if proc.poll() is not None or now - self.failed_at < self.grace:
            return
        if self.stopped_at is None:
            self.stopped_at = now
            failure = relay.failure
            print(f"flockrun: mpirun has not ended the job {self.grace:.0f} s after rank "
                  f"{failure.rank} failed: it waits for a host it cannot reach; stopping "
                  f"mpirun (the ranks on that host end once their daemon can reach this "
                  f"host again)", file=sys.stderr, flush=True)
            relay.mute_mpirun()
            proc.terminate()
            time.sleep(0.5)
            proc.terminate()  # mpirun's second SIGTERM forces it
        elif not self.killed and now - self.stopped_at > KILL_GRACE_S:
            self.killed = True
            proc.kill()

    def status(self, mpirun_status: int, relay: OutputRelay) -> int:
        """What mpirun would have returned had it ended the job itself."""
        failure = relay.failure
        if self.stopped_at is None or failure is None:
            return mpirun_status
        if failure.how == "signal" and failure.signal is not None:
            return 128 + failure.signal
        return failure.code if failure.code else 1


class _Forwarder:
    """Signal handler that passes SIGINT/SIGTERM on to mpirun, once it exists.

    Every signal is sent once: each is queued when it lands and taken off the
    queue (``deque.popleft``, one step the handler cannot interrupt) by whoever
    sends it, the handler itself or ``start`` for those that landed before
    mpirun existed.
    """

    def __init__(self) -> None:
        self.child: Optional[subprocess.Popen] = None
        self.received: List[int] = []
        self._unsent: Deque[int] = collections.deque()

    def __call__(self, signum, _frame) -> None:
        self.received.append(signum)
        self._unsent.append(signum)
        self._send_unsent()

    def start(self, argv: List[str], environ: Mapping[str, str],
              **popen_args) -> subprocess.Popen:
        try:
            self.child = subprocess.Popen(argv, env=dict(environ), **popen_args)
        except OSError as exc:
            raise LaunchError(f"cannot start {argv[0]}: {exc}") from None
        self._send_unsent()  # those that landed before the child existed
        return self.child

    def _send_unsent(self) -> None:
        while self.child is not None:
            try:
                signum = self._unsent.popleft()
            except IndexError:
                return
            self.child.send_signal(signum)


def _install_handlers(handler: Callable) -> Dict[int, object]:
    """Install handler for FORWARDED_SIGNALS; return the previous ones."""
    previous = {}
    for signum in FORWARDED_SIGNALS:
        try:
            previous[signum] = signal.signal(signum, handler)
        except ValueError:  # not the main thread: leave signals alone
            break
    return previous


def _restore_handlers(previous: Dict[int, object]) -> None:
    for signum, handler in previous.items():
        signal.signal(signum, handler)


def _shell_status(returncode: int) -> int:
    return returncode if returncode >= 0 else 128 - returncode


def run_passthrough(argv: List[str], environ: Mapping[str, str]) -> int:
    """Run argv with the terminal as its output; return its exit status."""
    forwarder = _Forwarder()
    previous = _install_handlers(forwarder)
    try:
        return _shell_status(forwarder.start(argv, environ).wait())
    finally:
        _restore_handlers(previous)


Tick = Callable[[subprocess.Popen, float], None]


def run_relayed(argv: List[str], environ: Mapping[str, str], relay: OutputRelay,
                flush: Callable[[], None] = lambda: None,
                on_tick: Optional[Tick] = None) -> Tuple[int, Optional[int]]:
    """Run argv with its output going through relay; flush after each round of reads.

    on_tick(mpirun, now) is called after each round too (at least every POLL_S):
    the elastic supervisor watches the hosts from there.
    Returns (exit status, the first signal flockrun forwarded, or None).
    """
    forwarder = _Forwarder()
    previous = _install_handlers(forwarder)
    try:
        proc = forwarder.start(argv, environ, stdout=subprocess.PIPE,
                               stderr=subprocess.PIPE)
        watchdog = _AbortWatchdog()
        try:
            _pump(proc, relay, flush, watchdog, on_tick)
        except BaseException:
            proc.terminate()  # mpirun stops its ranks; none is left behind without output
            proc.wait()
            raise
        status = watchdog.status(_shell_status(proc.wait()), relay)
    finally:
        _restore_handlers(previous)
    return status, (forwarder.received[0] if forwarder.received else None)


def _pump(proc: subprocess.Popen, relay: OutputRelay, flush: Callable[[], None],
          watchdog: _AbortWatchdog, on_tick: Optional[Tick]) -> None:
    """Feed proc's stdout and stderr to relay until both end (or mpirun is gone)."""
    selector = selectors.DefaultSelector()
    for name, pipe in (("stdout", proc.stdout), ("stderr", proc.stderr)):
        os.set_blocking(pipe.fileno(), False)
        selector.register(pipe, selectors.EVENT_READ, name)
    exited_at = None
    try:
        while selector.get_map():
            for key, _ in selector.select(POLL_S):
                data = _read(key.fileobj)
                if data is None:
                    continue
                if not data:
                    selector.unregister(key.fileobj)
                    continue
                relay.feed(key.data, data, time.monotonic())
            now = time.monotonic()
            relay.tick(now)
            flush()
            watchdog.check(proc, relay, now)
            if on_tick is not None:
                on_tick(proc, now)
            if exited_at is None and proc.poll() is not None:
                exited_at = now
            if exited_at is not None and now - exited_at > DRAIN_AFTER_EXIT_S:
                break
    finally:
        selector.close()
        relay.finish()
        flush()
        proc.stdout.close()
        proc.stderr.close()


def _read(pipe) -> Optional[bytes]:
    """Whatever the pipe holds (b"" at its end), None when nothing after all."""
    try:
        return os.read(pipe.fileno(), 65536)
    except BlockingIOError:
        return None


class StreamWriter:
    """write(stream, bytes) into a buffer; flush() sends it to flockrun's stdout/stderr.

    A stream the reader closed (``flockrun ... | head``) is dropped quietly; the job
    goes on.
    """

    def __init__(self) -> None:
        self._pending: Dict[str, List[bytes]] = {"stdout": [], "stderr": []}
        self._broken = set()

    def __call__(self, stream: str, data: bytes) -> None:
        if stream not in self._broken:
            self._pending[stream].append(data)

    def flush(self) -> None:
        for stream, pieces in self._pending.items():
            if not pieces:
                continue
            self._pending[stream] = []
            target = sys.stdout if stream == "stdout" else sys.stderr
            try:
                target.flush()  # flockrun's own text first
                target.buffer.write(b"".join(pieces))
                target.buffer.flush()
            except (BrokenPipeError, ValueError):
                self._broken.add(stream)
