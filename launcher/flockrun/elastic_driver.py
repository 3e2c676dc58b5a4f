"""The elastic supervisor: launch, watch the hosts, relaunch, give up when told to.

Each launch runs on the largest world discovery offers (elastic_plan.py). While
it runs, a thread re-runs discovery every ``--discovery-interval`` seconds; when
the hosts change the supervisor asks the job to end at its next commit
(elastic_files.py). A job that loses a host is stopped if it has not committed
within ``--removal-grace`` seconds. How a launch ends decides what comes next:

- exit 0 after such a request: relaunch on the new world (not a failure);
- exit 0 otherwise: the job is done;
- a failed rank: relaunch without its host for a while, at most ``--reset-limit``
  times; a failure on a host that was being taken away does not count;
- the program cannot start, or flockrun was interrupted: stop.
"""

import sys
import threading
import time
from typing import Callable, Dict, List, Optional

from flockrun.discovery import DiscoveryError
from flockrun.elastic_files import clear_messages, request_reset, restart_requested
from flockrun.elastic_options import ElasticSettings
from flockrun.elastic_plan import Change, LaunchResult, World, change_of, choose_world
from flockrun.errors import LaunchError
from flockrun.hosts import Host

# A host whose rank failed is not used again for this long, unless discovery drops
# it and lists it again (it came back) or the job would have too few slots without it.
FAILED_HOST_COOLDOWN_S = 60.0


def say(message: str) -> None:
    print(f"flockrun: {message}", file=sys.stderr, flush=True)


class DiscoveryPoller:
    """Runs discovery on a thread every interval; ``latest()`` is its last answer."""

    def __init__(self, discovery, interval_s: float) -> None:
        self.discovery, self.interval_s = discovery, interval_s
        self._lock = threading.Lock()
        self._answer: Optional[List[Host]] = None
        self._error: Optional[str] = None
        self._count = 0
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._loop, name="discovery", daemon=True)

    def start(self) -> None:
        self._thread.start()

    def stop(self) -> None:
        self._stop.set()

    def _loop(self) -> None:
        while not self._stop.wait(self.interval_s):
            self.poll()

    def poll(self) -> None:
        try:
            hosts, error = self.discovery.find(), None
        except DiscoveryError as exc:
            hosts, error = None, str(exc)
        with self._lock:
            self._answer, self._error = (hosts, None) if error is None else (self._answer, error)
            self._count += 1

    def latest(self):
        """(hosts of the last good answer or None, the last error or None, answers so far)."""
        with self._lock:
            return self._answer, self._error, self._count


class ElasticSupervisor:
    """Runs an elastic job to its end; ``run()`` returns flockrun's exit status."""

    def __init__(self, settings: ElasticSettings, discovery,
                 launch: Callable[[World, int, Callable], LaunchResult],
                 clock: Callable[[], float] = time.monotonic) -> None:
        self.settings, self.launch, self.clock = settings, launch, clock
        self.poller = DiscoveryPoller(discovery, settings.discovery_interval_s)
        self.describe = discovery.describe()
        self.excluded: Dict[str, float] = {}  # host -> until when it is left out
        self.failures = 0

    def run(self) -> int:
        s = self.settings
        say(f"elastic job of {s.min_np}..{s.max_np} ranks on hosts from {self.describe}; "
            f"commits in {s.directory}")
        self.poller.poll()
        hosts, error, _ = self.poller.latest()
        if hosts is None:
            raise LaunchError(error or f"{self.describe} gave no answer")
        self.poller.start()
        try:
            return self._launches()
        finally:
            self.poller.stop()

    def _launches(self) -> int:
        launch_id, world = 0, None
        while True:
            world = self._wait_for_world(world)
            launch_id += 1
            clear_messages(self.settings.directory)
            say(f"launch {launch_id}: {world.size} ranks on {world.host_spec()}")
            watch = _LaunchWatch(self, world, launch_id)
            result = self.launch(world, launch_id, watch.tick)
            status = self._after(result, watch, launch_id)
            if status is not None:
                return status

    def _after(self, result: LaunchResult, watch: "_LaunchWatch",
               launch_id: int) -> Optional[int]:
        """flockrun's exit status when the job is over, None to relaunch."""
        if result.stopped_by is not None or result.cannot_start:
            return result.status
        if result.status == 0 and restart_requested(self.settings.directory, launch_id):
            say(f"launch {launch_id} ended at a commit to change its hosts; relaunching")
            return None
        if result.status == 0:
            say(f"elastic job done after {launch_id} launches "
                f"({self.failures} relaunches after failures)")
            return 0
        if watch.stopped_for_removal or watch.removed(result.failed_host):
            say(f"launch {launch_id} ended while its host {result.failed_host or ''} was "
                f"being taken away; relaunching (not counted as a failure)")
            return None
        return self._after_failure(result, launch_id)

    def _after_failure(self, result: LaunchResult, launch_id: int) -> Optional[int]:
        self.failures += 1
        limit = self.settings.reset_limit
        if self.failures > limit:
            say(f"giving up: launch {launch_id} failed, and --reset-limit {limit} "
                f"relaunches after failures are used up")
            return result.status
        if result.failed_host is not None:
            self.excluded[result.failed_host] = self.clock() + FAILED_HOST_COOLDOWN_S
        where = f" on host {result.failed_host}" if result.failed_host else ""
        say(f"launch {launch_id} failed (rank {result.failed_rank}{where}); relaunching from "
            f"the last commit (failure {self.failures} of at most {limit})")
        return None

    def excluded_now(self, offered: List[Host]) -> set:
        """Failed hosts still left out: not cooled down and not dropped by discovery since."""
        now, names = self.clock(), {h.name for h in offered}
        for name in list(self.excluded):
            if self.excluded[name] <= now:
                del self.excluded[name]
        return {name for name in self.excluded if name in names}

    def forget_dropped(self, offered: List[Host]) -> None:
        """A failed host discovery no longer lists may be used again once it returns."""
        names = {h.name for h in offered}
        for name in [n for n in self.excluded if n not in names]:
            del self.excluded[name]

    def _wait_for_world(self, previous: Optional[World]) -> World:
        """The next world of at least --min-np ranks; waits for hosts up to the timeout."""
        s = self.settings
        deadline, told = self.clock() + s.timeout_s, None
        while True:
            hosts, error, _ = self.poller.latest()
            offered = hosts or []
            self.forget_dropped(offered)
            world = choose_world(offered, s.max_np, self.excluded_now(offered), previous,
                                 s.min_np)
            if world.size >= s.min_np:
                return world
            why = error or f"{self.describe} offers {world.size} usable slots"
            if self.clock() >= deadline:
                raise LaunchError(f"waited {s.timeout_s:g} s for --min-np {s.min_np} "
                                  f"slots: {why}")
            if why != told:
                say(f"waiting for hosts: {why}; the job needs at least {s.min_np} "
                    f"(up to {s.timeout_s:g} s)")
                told = why
            time.sleep(min(0.2, s.discovery_interval_s))


class _LaunchWatch:
    """Watches one launch: asks it to change hosts, stops it when a host leaves for good."""

    def __init__(self, supervisor: ElasticSupervisor, world: World, launch_id: int) -> None:
        self.supervisor, self.world, self.launch_id = supervisor, world, launch_id
        self.requested: Optional[Change] = None
        self.deadline: Optional[float] = None
        self.removed_hosts: set = set()
        self.stopped_for_removal = False
        self.seen = 0
        self.last_error: Optional[str] = None

    def removed(self, host: Optional[str]) -> bool:
        return host is not None and host in self.removed_hosts

    def tick(self, mpirun, now: float) -> None:
        hosts, error, count = self.supervisor.poller.latest()
        if count != self.seen:
            self.seen = count
            self._look(hosts, error)
        if self.deadline is not None and now >= self.deadline and mpirun.poll() is None \
                and not self.stopped_for_removal:
            self.stopped_for_removal = True
            say(f"launch {self.launch_id} did not commit within --removal-grace "
                f"{self.supervisor.settings.removal_grace_s:.0f} s of losing a host; "
                f"stopping it (steps since its last commit are lost)")
            mpirun.terminate()

    def _look(self, hosts: Optional[List[Host]], error: Optional[str]) -> None:
        if error is not None and error != self.last_error:
            say(f"warning: {error}; the job keeps its hosts")
        self.last_error = error
        if hosts is None or error is not None:
            return
        sup = self.supervisor
        sup.forget_dropped(hosts)
        change = change_of(self.world, hosts, sup.settings.max_np, sup.excluded_now(hosts))
        escalates = self.requested is not None and self.requested.kind == "grow" \
            and change is not None and change.kind == "shrink"
        if change is None or (self.requested is not None and not escalates):
            return
        self.requested = change
        request_reset(sup.settings.directory, self.launch_id, change)
        say(f"{change.reason}: asking launch {self.launch_id} to end at its next commit")
        if change.kind == "shrink":
            names = {h.name for h in hosts}
            self.removed_hosts = {h.name for h in self.world.hosts if h.name not in names}
            self.deadline = sup.clock() + sup.settings.removal_grace_s
