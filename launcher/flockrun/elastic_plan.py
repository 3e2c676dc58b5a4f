"""What an elastic job should run on (pure: no processes, no clocks).

``choose_world`` turns the hosts discovery offers into the world of the next
launch: as many slots as ``--max-np`` allows, hosts the current world already
uses first (so a scale-up keeps the ranks' hosts where it can), hosts that
failed recently left out while enough others remain. ``change_of`` compares a
running world with what discovery offers now: a host taken away (or given fewer
slots) asks the job to end at its next commit; more slots than the job runs on,
below ``--max-np``, ask it to grow at its next commit.
"""

from dataclasses import dataclass
from typing import AbstractSet, Dict, List, Optional, Sequence, Tuple

from flockrun.hosts import Host


@dataclass(frozen=True)
class World:
    """The hosts of one launch, each with the slots it gets, in rank order."""

    hosts: Tuple[Host, ...]

    @property
    def size(self) -> int:
        return sum(h.slots or 0 for h in self.hosts)

    def host_spec(self) -> str:
        """The -H value that starts exactly this world."""
        return ",".join(f"{h.name}:{h.slots}" for h in self.hosts)

    def host_of_rank(self, rank: int) -> Optional[str]:
        """The host mpirun places ``rank`` on (it fills each host's slots in order)."""
        for host in self.hosts:
            if rank < (host.slots or 0):
                return host.name
            rank -= host.slots or 0
        return None


@dataclass(frozen=True)
class Change:
    """Why a running job should be reset: "grow" or "shrink", and what changed."""

    kind: str
    reason: str


def choose_world(offered: Sequence[Host], max_np: int,
                 excluded: AbstractSet[str] = frozenset(),
                 current: Optional[World] = None, min_np: int = 1) -> World:
    """The largest world up to max_np on the offered hosts (possibly empty).

    Hosts in ``excluded`` (their ranks failed recently) are left out while the
    others give at least min_np slots; below that they are tried again rather than
    the job waiting.
    """
    preferred = [h for h in offered if h.name not in excluded]
    world = _fill(_current_first(preferred, current), max_np)
    if world.size >= min_np:
        return world
    return _fill(_current_first(list(offered), current), max_np)


def _current_first(hosts: List[Host], current: Optional[World]) -> List[Host]:
    if current is None:
        return hosts
    order = {h.name: i for i, h in enumerate(current.hosts)}
    return sorted(hosts, key=lambda h: order.get(h.name, len(order)))


def _fill(hosts: Sequence[Host], max_np: int) -> World:
    chosen, left = [], max_np
    for host in hosts:
        take = min(host.slots or 0, left)
        if take > 0:
            chosen.append(Host(host.name, take))
            left -= take
    return World(tuple(chosen))


def change_of(running: World, offered: Sequence[Host], max_np: int,
              excluded: AbstractSet[str] = frozenset()) -> Optional[Change]:
    """The reset the running world needs given what discovery offers, or None."""
    slots: Dict[str, int] = {}
    for host in offered:
        slots[host.name] = slots.get(host.name, 0) + (host.slots or 0)
    for host in running.hosts:
        has = slots.get(host.name, 0)
        if has < (host.slots or 0):
            what = "is no longer offered" if has == 0 else f"now offers {has} slots"
            return Change("shrink", f"host {host.name} {what} (the job uses "
                          f"{host.slots})")
    grown = choose_world(offered, max_np, excluded, running)
    if grown.size > running.size:
        return Change("grow", f"discovery offers {grown.size} slots for the job's "
                      f"{running.size} ranks (at most {max_np})")
    return None


@dataclass(frozen=True)
class LaunchResult:
    """How one launch ended: flockrun's exit status for it, and the failed rank if any."""

    status: int
    failed_rank: Optional[int] = None
    failed_host: Optional[str] = None  # as the world names it (discovery's name)
    cannot_start: bool = False  # the program was not found or not executable
    stopped_by: Optional[int] = None  # a signal flockrun received and passed on
