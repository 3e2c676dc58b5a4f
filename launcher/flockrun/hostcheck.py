"""Checking, before mpirun starts, that every listed remote host can be reached.

mpirun reports an unknown or unreachable host late, in a box, or hangs until a
TCP timeout. flockrun instead starts, on every remote host at once, what mpirun
would start there first: its launch agent, with mpirun's extra agent arguments
(``plm_rsh_args``, split at spaces as OpenMPI does), and a trivial command,

    ssh [ARGS] -o BatchMode=yes -o ConnectTimeout=5 HOST true   (the default agent)
    AGENT [ARGS] HOST true                                       (--rsh-agent AGENT)

each bounded by PROBE_TIMEOUT_S. A probe that fails is reported in one line
with the agent's own last words ("Could not resolve hostname", "Connection
refused") and the hint that --no-host-check skips the check. Hosts that name
this machine are not probed, as mpirun starts no agent for them: by name
(machine.local_hostnames), or because their address belongs to this machine.
A name that does not resolve is reported as unknown with ssh; a custom agent
may take names that are not network names (containers, emulated hosts), so
there only the probe decides.

BatchMode keeps ssh from asking anything. An ssh probe refused for want of a
password or key passphrase ("Permission denied", status 255) is therefore only
a warning when flockrun has a terminal: mpirun's ssh may ask there, and the
user answer. Without a terminal mpirun's ssh cannot ask either, and it is an
error. (A new host key stays an error: accept it once with ``ssh HOST``.)

The argv of each probe is decided by pure functions; ``check_hosts`` runs them.
"""

import os
import shlex
import signal
import socket
import subprocess
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from typing import Iterable, List, Mapping, NamedTuple, Optional, Sequence, Set, Tuple

from flockrun.errors import LaunchError
from flockrun.hosts import Host

CONNECT_TIMEOUT_S = 5
PROBE_TIMEOUT_S = 10.0
RESOLVE_TIMEOUT_S = 3.0
MAX_PARALLEL_PROBES = 32

SKIP_HINT = "(--no-host-check skips this check)"

# mpirun's own variables for its launch agent (OpenMPI 4 and older names) and the
# arguments it adds to the agent (no other names).
_AGENT_ENV = ("OMPI_MCA_plm_rsh_agent", "OMPI_MCA_orte_rsh_agent")
_AGENT_PARAMS = ("plm_rsh_agent", "orte_rsh_agent", "pls_rsh_agent")
_ARGS_PARAM = "plm_rsh_args"
_MCA_FLAGS = ("-mca", "--mca", "-gmca", "--gmca")

# ssh's status when it could not connect or log in, and its words for a refused login.
_SSH_FAILED = 255
_AUTH_REFUSED = "Permission denied"


@dataclass(frozen=True)
class RemoteStart:
    """How mpirun starts its daemons on other hosts: the agent (None: ssh, mpirun's
    default) and the arguments mpirun adds after the agent's own words."""

    agent: Optional[str] = None
    args: Tuple[str, ...] = ()

    @property
    def is_ssh(self) -> bool:
        return self.agent is None or shlex.split(self.agent)[:1] == ["ssh"]


def remote_start(flockrun_agent: Optional[str], user_mpi_args: Sequence[str],
                 env: Mapping[str, str]) -> RemoteStart:
    """The agent and agent arguments mpirun will use (see launch_agent, rsh_args)."""
    return RemoteStart(launch_agent(flockrun_agent, user_mpi_args, env),
                       rsh_args(user_mpi_args, env))


def launch_agent(flockrun_agent: Optional[str], user_mpi_args: Sequence[str],
                 env: Mapping[str, str]) -> Optional[str]:
    """The agent mpirun will use: the user's --mpi-args choice, flockrun's, the
    OMPI_MCA_ variable, or None for mpirun's default (ssh)."""
    for flag, name, value in zip(user_mpi_args, user_mpi_args[1:], user_mpi_args[2:]):
        if flag in _MCA_FLAGS and name in _AGENT_PARAMS:
            return value
    if flockrun_agent is not None:
        return flockrun_agent
    for name in _AGENT_ENV:
        if env.get(name, "").strip():
            return env[name]
    return None


def rsh_args(user_mpi_args: Sequence[str], env: Mapping[str, str]) -> Tuple[str, ...]:
    """plm_rsh_args from the user's --mpi-args, else from OMPI_MCA_plm_rsh_args, split at
    spaces as OpenMPI splits it."""
    value = env.get("OMPI_MCA_" + _ARGS_PARAM, "")
    for flag, name, given in zip(user_mpi_args, user_mpi_args[1:], user_mpi_args[2:]):
        if flag in _MCA_FLAGS and name == _ARGS_PARAM:
            value = given
            break
    return tuple(word for word in value.split(" ") if word)


def remote_hosts(hosts: Iterable[Host], local_hostnames: Iterable[str]) -> List[str]:
    """The distinct host entries that do not name this machine, in order."""
    local = {name.lower() for name in local_hostnames}
    names: List[str] = []
    for host in hosts:
        if host.name.rpartition("@")[2].lower() not in local and host.name not in names:
            names.append(host.name)
    return names


def probe_argv(start: RemoteStart, host: str) -> List[str]:
    """The command that checks host the way mpirun will reach it."""
    words = shlex.split(start.agent) if start.agent else ["ssh"]
    if start.is_ssh:
        return [*words, *start.args, "-o", "BatchMode=yes",
                "-o", f"ConnectTimeout={CONNECT_TIMEOUT_S}", host, "true"]
    return [*words, *start.args, host, "true"]


def failure_message(failures: Sequence[Tuple[str, str]], source: str) -> str:
    """One line naming every host that failed and why."""
    if len(failures) == 1:
        host, why = failures[0]
        return f"cannot reach host {host!r} ({source}): {why} {SKIP_HINT}"
    listed = "; ".join(f"{host!r}: {why}" for host, why in failures)
    return f"cannot reach {len(failures)} hosts ({source}): {listed} {SKIP_HINT}"


def login_warning(host: str, source: str, why: str) -> str:
    """The warning for a host whose ssh login needs a password or passphrase."""
    return (f"ssh to host {host!r} ({source}) needs a password or key passphrase: {why}; "
            f"mpirun's ssh may ask for it here {SKIP_HINT}")


def check_hosts(hosts: Sequence[Host], source: str, start: RemoteStart,
                local_hostnames: Iterable[str], can_prompt: bool = False) -> List[str]:
    """Raise LaunchError (one line) when a remote host cannot be reached.

    Returns warnings: with can_prompt (flockrun has a terminal, where mpirun's
    ssh can ask), the hosts whose ssh login wants a password or passphrase.
    On an interrupt (Ctrl-C) the probes still running are ended at once, so the
    KeyboardInterrupt comes through without waiting for their timeouts.
    """
    names = remote_hosts(hosts, local_hostnames)
    if not names:
        return []
    checks = _Checks(start)
    pool = ThreadPoolExecutor(max_workers=min(len(names), MAX_PARALLEL_PROBES))
    try:
        addresses = dict(zip(names, pool.map(checks.resolve, names)))
        names = [n for n in names if not _is_this_machine(addresses[n])]
        # With ssh the names are network names; a custom agent may take others.
        unresolved = {n for n in names if not addresses[n]} if start.agent is None else set()
        verdicts = dict(zip(names, pool.map(checks.probe, names)))
    except BaseException:
        checks.stop()
        raise
    finally:
        pool.shutdown(cancel_futures=True)
    failures = [(name, "unknown host, the name does not resolve" if name in unresolved
                 else verdict.why) for name, verdict in verdicts.items()
                if verdict is not None and not (can_prompt and verdict.login_refused)]
    if failures:
        raise LaunchError(failure_message(failures, source))
    return [login_warning(name, source, verdict.why) for name, verdict in verdicts.items()
            if verdict is not None and verdict.login_refused]


class _Verdict(NamedTuple):
    """Why a probe failed; login_refused: ssh wanted a password or passphrase."""

    why: str
    login_refused: bool = False


class _Checks:
    """The lookups and probes of one check_hosts, run by its threads; ``stop``
    ends those that run (each probe is a session of its own) and skips the rest."""

    def __init__(self, start: RemoteStart) -> None:
        self.start = start
        self._stopping = threading.Event()
        self._lock = threading.Lock()
        self._running: Set[subprocess.Popen] = set()

    def stop(self) -> None:
        with self._lock:
            self._stopping.set()
            running = list(self._running)
        for proc in running:
            _kill_session(proc)

    def resolve(self, host: str) -> List[Tuple[int, str]]:
        """(family, address) pairs of host's name, given RESOLVE_TIMEOUT_S at most."""
        found: List[Tuple[int, str]] = []

        def lookup():
            try:
                for family, _, _, _, sockaddr in socket.getaddrinfo(
                        host.rpartition("@")[2], None):
                    found.append((family, sockaddr[0]))
            except (OSError, UnicodeError):
                pass

        worker = threading.Thread(target=lookup, daemon=True)  # getaddrinfo has no timeout
        worker.start()
        deadline = time.monotonic() + RESOLVE_TIMEOUT_S
        while worker.is_alive() and not self._stopping.is_set() \
                and time.monotonic() < deadline:
            worker.join(0.05)
        return list(found) if not worker.is_alive() else []

    def probe(self, host: str) -> Optional[_Verdict]:
        """None when the probe of host succeeded, else why it did not."""
        argv = probe_argv(self.start, host)
        if self._stopping.is_set():
            return _Verdict("not probed (interrupted)")
        try:
            # A session of its own: on a timeout the agent and whatever it started go.
            proc = subprocess.Popen(argv, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                                    stderr=subprocess.PIPE, start_new_session=True)
        except OSError as exc:
            return _Verdict(f"cannot run {argv[0]} ({exc.strerror}); mpirun starts its "
                            "daemons on other hosts with it (install it, or give --rsh-agent)")
        with self._lock:
            self._running.add(proc)
        if self._stopping.is_set():  # stop() came between the check above and now
            _kill_session(proc)
        try:
            return _verdict(proc, argv, self.start.is_ssh)
        finally:
            with self._lock:
                self._running.discard(proc)


def _verdict(proc: subprocess.Popen, argv: List[str], ssh: bool) -> Optional[_Verdict]:
    """Wait for a probe (PROBE_TIMEOUT_S at most); None when it succeeded, else why not."""
    try:
        _, err = proc.communicate(timeout=PROBE_TIMEOUT_S)
    except subprocess.TimeoutExpired:
        _kill_session(proc)
        proc.communicate()
        return _Verdict(f"no answer within {PROBE_TIMEOUT_S:g} s ({shlex.join(argv)})")
    if proc.returncode == 0:
        return None
    said = [line.strip() for line in err.decode("utf-8", "replace").splitlines()
            if line.strip()]
    why = said[-1] if said else f"exit status {proc.returncode}"
    refused = ssh and proc.returncode == _SSH_FAILED and _AUTH_REFUSED in why
    return _Verdict(f"{why} ({shlex.join(argv)})", refused)


def _kill_session(proc: subprocess.Popen) -> None:
    try:
        os.killpg(proc.pid, signal.SIGKILL)
    except ProcessLookupError:
        pass


def _is_this_machine(addresses: Sequence[Tuple[int, str]]) -> bool:
    """Is one of the addresses this machine's? Only those can be bound to."""
    for family, address in addresses:
        try:
            with socket.socket(family, socket.SOCK_DGRAM) as probe:
                probe.bind((address, 0))
            return True
        except OSError:
            continue
    return False
