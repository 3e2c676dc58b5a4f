"""Starting an interactive cluster: an ipyparallel controller plus N engines under mpirun.

``start`` launches the controller, waits for its connection files, launches
the engines with mpirun (each engine's id is its MPI rank), waits until all N
have registered and answered, records every process (``interactive_state``)
and returns; the cluster runs on, detached, until ``stop``. A failure, a
timeout or Ctrl-C at any point ends everything started so far and removes
the files, so a failed start leaves nothing behind. ``interactive_teardown``
holds stop and status.
"""

import contextlib
import json
import os
import signal
import socket
import subprocess
import time
from typing import Callable, Iterator, List, Mapping, Optional

from flockrun.interactive_commands import StartCommands, StartRequest
from flockrun.interactive_engine import CONNECTION_VARIABLE, engine_identity
from flockrun.interactive_state import ClusterRecord, EngineRecord, Profile
from flockrun.interactive_teardown import (ClusterError, end_cluster, import_ipyparallel,
                                           live_processes, log_tail)
from flockrun.processes import children_outside, identify

Output = Callable[[str], None]

_HELD_SIGNALS = (signal.SIGINT, signal.SIGTERM)


class _Launched:
    """The Popen handles of this start, for exit statuses and reaping."""

    def __init__(self):
        self.controller: Optional[subprocess.Popen] = None
        self.mpirun: Optional[subprocess.Popen] = None

    def check_running(self, profile: Profile) -> None:
        """Raise ClusterError if the controller or mpirun has exited."""
        for name, proc, log in (("the controller", self.controller, "controller"),
                                ("mpirun (the engines)", self.mpirun, "engines")):
            if proc is not None and proc.poll() is not None:
                raise ClusterError(f"{name} exited with status {proc.returncode} before the "
                                   f"cluster was ready\n{log_tail(profile.log_path(log))}")

    def record_unrecorded(self, record: ClusterRecord) -> None:
        """Put a process started but not yet in the record (an exception came right after
        its Popen) into it, so that end_cluster ends it too. Its pid is still ours: it
        is not reaped yet."""
        if record.controller is None and self.controller is not None:
            record.controller = identify(self.controller.pid)
        if record.mpirun is None and self.mpirun is not None:
            record.mpirun = identify(self.mpirun.pid)

    def reap(self) -> None:
        for proc in (self.controller, self.mpirun):
            if proc is not None:
                try:
                    proc.wait(timeout=1)
                except subprocess.TimeoutExpired:
                    pass  # not ours to wait for any longer; init reaps it


def start(request: StartRequest, *, commands: StartCommands, environ: Mapping[str, str],
          out: Output) -> ClusterRecord:
    """Start the cluster and return its record; raise ClusterError on failure."""
    ipp = import_ipyparallel()
    profile = Profile(request.profile, environ)
    with profile.lock():
        _clear_previous(profile, ipp, out)
        profile.make_dirs()
        record = ClusterRecord(profile=profile.name, num_proc=request.launch.num_proc)
        launched = _Launched()
        began = time.monotonic()
        try:
            _launch(record, launched, profile, commands, environ, began + request.timeout, ipp)
        except BaseException:
            # Everything started so far ends here; the record is kept until then.
            launched.record_unrecorded(record)
            end_cluster(record, profile, graceful=False, out=out)
            launched.reap()
            profile.remove_files()
            raise
    return record


def _clear_previous(profile: Profile, ipp, out: Output) -> None:
    """Refuse a second cluster on a profile; clean up the remains of a dead one.

    A cluster whose controller or mpirun is gone is of no use (a crash, an
    engine that died and took the MPI job with it): its remains are ended.
    """
    record = profile.load_record()
    if record is not None:
        live = live_processes(record)
        if record.ready and record.controller in live and record.mpirun in live:
            raise ClusterError(
                f"a cluster is already running for profile '{profile.name}' ({record.num_proc} "
                f"engines, controller pid {record.controller.pid}); connect with "
                f"ipyparallel.Client(profile='{profile.name}'), stop it with "
                f"'flock-interactive stop --profile {profile.name}', or start another "
                "with --profile OTHER_NAME")
        if live:
            out(f"ending {len(live)} process(es) left by an earlier cluster on profile "
                f"'{profile.name}'")
        end_cluster(record, profile, graceful=False, out=out)
        profile.remove_files()
        return
    client_file = profile.connection_files[0]
    if os.path.exists(client_file):
        if _controller_answers(ipp, client_file):
            raise ClusterError(
                f"profile '{profile.name}' already has a running ipyparallel controller that "
                f"flock-interactive did not start; stop it (ipcluster stop --profile "
                f"{profile.name}) or use --profile OTHER_NAME")
        profile.remove_files()  # left by a controller that died


def _controller_answers(ipp, client_file: str) -> bool:
    try:
        client = ipp.Client(client_file, timeout=2)
    except Exception:  # TimeoutError, or a file that is not a connection file
        return False
    client.close()
    return True


def _launch(record: ClusterRecord, launched: _Launched, profile: Profile,
            commands: StartCommands, environ: Mapping[str, str], deadline: float, ipp) -> None:
    """Controller, then engines; fills the record as each process starts."""
    with _signals_held():
        launched.controller = _spawn(commands.controller, environ,
                                     profile.log_path("controller"))
        record.controller = identify(launched.controller.pid)
    profile.save_record(record)
    connection = _wait_for_connection_files(profile, launched, deadline)
    engine_env = dict(environ, **{CONNECTION_VARIABLE: connection})
    with _signals_held():
        launched.mpirun = _spawn(commands.engines, engine_env, profile.log_path("engines"))
        record.mpirun = identify(launched.mpirun.pid)
    profile.save_record(record)
    client = _connect(ipp, profile, deadline)
    try:
        _wait_for_engines(client, record.num_proc, launched, profile, deadline)
        record.engines = _identify_engines(client, record.num_proc, deadline, profile)
    except ClusterError:
        raise
    except Exception as exc:  # ipyparallel's: TimeoutError, RemoteError, ...
        raise ClusterError(f"the engines did not answer ({_named(exc)})\n"
                           + log_tail(profile.log_path("engines"))) from None
    finally:
        client.close()
    record.ready = True
    profile.save_record(record)


def _connect(ipp, profile: Profile, deadline: float):
    """An ipyparallel client of the controller; ClusterError when it cannot connect."""
    timeout = _remaining(deadline, profile)
    try:
        return ipp.Client(profile.connection_files[0], timeout=timeout)
    except Exception as exc:  # TimeoutError, a refused connection, a torn file, ...
        raise ClusterError(f"cannot connect to the controller ({_named(exc)})\n"
                           + log_tail(profile.log_path("controller"))) from None


def _named(exc: Exception) -> str:
    """"TimeoutError: what it said", on one line, for an error message."""
    said = " ".join(str(exc).split())
    return f"{type(exc).__name__}: {said}" if said else type(exc).__name__


@contextlib.contextmanager
def _signals_held() -> Iterator[None]:
    """SIGINT and SIGTERM wait until the block is done, then arrive as usual.

    Around a spawn, so that no process runs without the Popen handle that ends it
    (a signal during Popen, after the fork, would lose the handle otherwise).
    Only the main thread can do this; elsewhere the block runs as it is.
    """
    held: List[int] = []
    previous = {}
    try:
        for signum in _HELD_SIGNALS:
            if signal.getsignal(signum) is not None:  # None: not Python's to restore
                previous[signum] = signal.signal(signum,
                                                 lambda number, _frame: held.append(number))
    except ValueError:  # not the main thread
        pass
    try:
        yield
    finally:
        for signum, handler in previous.items():
            signal.signal(signum, handler)
        for signum in held:
            signal.raise_signal(signum)


def _spawn(argv: List[str], environ: Mapping[str, str], log_path: str) -> subprocess.Popen:
    """Start argv detached: its own session, no terminal input, output to log_path."""
    with open(log_path, "wb") as log:
        try:
            return subprocess.Popen(argv, env=dict(environ), stdin=subprocess.DEVNULL,
                                    stdout=log, stderr=subprocess.STDOUT,
                                    start_new_session=True)
        except OSError as exc:
            raise ClusterError(f"cannot start {argv[0]}: {exc}") from None


def _remaining(deadline: float, profile: Profile) -> float:
    left = deadline - time.monotonic()
    if left <= 0:
        raise ClusterError("the cluster was not ready in time (see --timeout)\n"
                           + log_tail(profile.log_path("engines")))
    return left


def _wait_for_connection_files(profile: Profile, launched: _Launched, deadline: float) -> str:
    """The engine connection file's content, once the controller has written both."""
    while True:
        try:
            with open(profile.connection_files[0], encoding="utf-8") as handle:
                json.load(handle)  # complete, not half-written
            with open(profile.connection_files[1], encoding="utf-8") as handle:
                return json.dumps(json.load(handle), separators=(",", ":"))
        except (FileNotFoundError, ValueError):
            pass
        launched.check_running(profile)
        if time.monotonic() >= deadline:
            raise ClusterError("the controller wrote no connection files in time (see "
                               f"--timeout)\n{log_tail(profile.log_path('controller'))}")
        time.sleep(0.1)


def _wait_for_engines(client, num_proc: int, launched: _Launched, profile: Profile,
                      deadline: float) -> None:
    """Until num_proc engines have registered; fail fast if a process died."""
    while len(client.ids) < num_proc:
        launched.check_running(profile)
        if time.monotonic() >= deadline:
            raise ClusterError(
                f"only {len(client.ids)} of {num_proc} engines registered in time (see "
                f"--timeout)\n{log_tail(profile.log_path('engines'))}")
        time.sleep(0.1)


def _identify_engines(client, num_proc: int, deadline: float,
                      profile: Profile) -> List[EngineRecord]:
    """Check that engine i is rank i and record where each engine runs."""
    if sorted(client.ids) != list(range(num_proc)):
        raise ClusterError(f"engine ids {sorted(client.ids)} are not the ranks "
                           f"0..{num_proc - 1}: was another engine started on this profile?")
    view = client[list(range(num_proc))]
    answers = view.apply_async(engine_identity).get(timeout=_remaining(deadline, profile))
    here = socket.gethostname()
    engines = []
    for engine_id, (rank, host, pid) in enumerate(answers):
        if rank != engine_id:
            raise ClusterError(f"engine {engine_id} reports MPI rank {rank}")
        local = host == here
        me = identify(pid) if local else None
        engines.append(EngineRecord(rank=rank, host=host, pid=pid, local=local,
                                    start_time=me.start_time if me else 0,
                                    nannies=sorted(children_outside({me})) if me else []))
    return engines
