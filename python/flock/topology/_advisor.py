"""The topology advisor's model: for a cluster and a model, each method's time per step
and consensus rate, and the method that reaches a consensus accuracy soonest.

Assumptions (docs/topology.md, "Choosing a topology"):

- ``size`` ranks on machines of ``local_size`` ranks each, numbered machine by
  machine. Each machine has one network link of ``inter`` bytes/s each way (full
  duplex), shared by its ranks; ranks of one machine exchange at ``intra`` bytes/s
  each.
- A step computes for ``compute_s`` and exchanges ``bytes_per_step`` per message.
  Communication hides behind a fraction ``overlap`` of the compute (the backward pass
  that is left when the first gradients are ready); the rest adds to the step.
- A transfer's time is its busiest link's bytes over its rate; links work in
  parallel. Every message also costs ``latency_s``, one after the other per rank.
- Consensus: after k steps the distance to the average has shrunk by rate^k, the
  rate from the method's spectrum (exact for the circulant graphs).
"""

import math
from dataclasses import dataclass
from typing import Dict, List, Optional, Tuple

from flock.errors import FlockInvalidArgumentError


@dataclass(frozen=True)
class Cluster:
    size: int
    local_size: int
    intra: float  # bytes/s between ranks of a machine
    inter: float  # bytes/s of a machine's network link, each way

    @property
    def machines(self) -> int:
        return self.size // self.local_size

    def machine_of(self, rank: int) -> int:
        return rank // self.local_size


@dataclass(frozen=True)
class Traffic:
    """One step's exchange: the busiest machine link's bytes (out), the busiest rank's
    bytes to its own machine, and the messages a rank sends, one after the other."""
    link_bytes: float
    local_bytes: float
    messages: int


@dataclass(frozen=True)
class Candidate:
    method: str
    step_s: float  # predicted time per step
    communication_s: float  # the exchange alone
    link_bytes: float  # per step on the busiest machine link, each way
    rate: float  # distance to the average shrinks by this per step (0: exact)
    steps: Optional[int]  # steps to reach eps; None: never
    time_to_eps_s: Optional[float]


def edge_traffic(cluster: Cluster, send_lists: List[List[int]], nbytes: float) -> Traffic:
    """Traffic when rank r sends nbytes to each rank of send_lists[r]."""
    out = [0.0] * cluster.machines
    local = [0.0] * cluster.size
    for rank, destinations in enumerate(send_lists):
        for dst in destinations:
            if cluster.machine_of(dst) == cluster.machine_of(rank):
                local[rank] += nbytes
            else:
                out[cluster.machine_of(rank)] += nbytes
    return Traffic(max(out), max(local), max((len(d) for d in send_lists), default=0))


def average_traffic(steps: List[Traffic]) -> Traffic:
    """A periodic schedule's traffic per step, averaged over its period."""
    count = len(steps)
    return Traffic(sum(t.link_bytes for t in steps) / count,
                   sum(t.local_bytes for t in steps) / count,
                   round(sum(t.messages for t in steps) / count))


def exchange_seconds(cluster: Cluster, traffic: Traffic, latency_s: float) -> float:
    link = traffic.link_bytes / cluster.inter if cluster.machines > 1 else 0.0
    return max(link, traffic.local_bytes / cluster.intra) + traffic.messages * latency_s


def ring_allreduce_traffic(cluster: Cluster, nbytes: float) -> Traffic:
    """A ring over the ranks, machine by machine: every rank sends 2(n-1)/n of the
    tensor to the next one, and one ring edge leaves each machine."""
    n = cluster.size
    share = 2.0 * (n - 1) / n * nbytes if n > 1 else 0.0
    crossing = share if cluster.machines > 1 else 0.0
    return Traffic(crossing, share if cluster.local_size > 1 else 0.0, 2 * (n - 1))


def local_allreduce_traffic(cluster: Cluster, nbytes: float) -> Traffic:
    """The machine-local average of the hierarchical methods: a ring inside the
    machine (a reduce-scatter and an allgather), nothing on the network."""
    m = cluster.local_size
    share = 2.0 * (m - 1) / m * nbytes if m > 1 else 0.0
    return Traffic(0.0, share, 2 * (m - 1))


def plus(a: Traffic, b: Traffic) -> Traffic:
    """Two exchanges one after the other (their bytes add up link by link)."""
    return Traffic(a.link_bytes + b.link_bytes, a.local_bytes + b.local_bytes,
                   a.messages + b.messages)


def step_seconds(compute_s: float, communication_s: float, overlap: float) -> float:
    return compute_s + max(0.0, communication_s - overlap * compute_s)


def steps_to(rate: float, eps: float) -> Optional[int]:
    if rate <= 1e-12:
        return 1
    if rate >= 1.0 - 1e-12:
        return None
    return max(1, math.ceil(math.log(eps) / math.log(rate)))


def check_arguments(size: int, local_size: int, rates: Dict[str, float], nbytes: float,
                    compute_s: float, eps: float, overlap: float) -> None:
    if size < 1 or local_size < 1 or size % local_size:
        raise FlockInvalidArgumentError(
            f"advise: size ({size}) must be a positive multiple of local_size ({local_size})")
    for name, value in rates.items():
        if not value > 0:
            raise FlockInvalidArgumentError(f"advise: {name} must be a rate > 0 bytes/s, "
                                            f"got {value!r}")
    if nbytes < 0 or compute_s < 0:
        raise FlockInvalidArgumentError("advise: bytes per step and compute time must be >= 0")
    if not 0 < eps < 1:
        raise FlockInvalidArgumentError(f"advise: eps must lie in (0, 1), got {eps!r}")
    if not 0 <= overlap <= 1:
        raise FlockInvalidArgumentError(f"advise: overlap must lie in [0, 1], got {overlap!r}")



def distances(n: int) -> List[int]:
    """The exponential-2 graph's distances below n: 1, 2, 4, ..."""
    found, d = [], 1
    while d < n:
        found.append(d)
        d *= 2
    return found


def shifted_sends(n: int, shifts: List[int]) -> List[List[int]]:
    return [[(r + d) % n for d in shifts] for r in range(n)]


def one_peer_rate(n: int) -> Tuple[float, int]:
    """(|lambda_2| of one period's product, the period) of the one-peer exponential
    schedule over n nodes."""
    from flock import topology as tu
    period = len(distances(n))
    if period == 0:
        return 0.0, 1
    schedule = tu.DynamicOnePeer(tu.ExponentialTwoGraph(n))
    return tu.period_second_eigenvalue_modulus(schedule, period), period


def lambda2(graph) -> float:
    from flock import topology as tu
    return 0.0 if graph.number_of_nodes() == 1 else tu.second_largest_eigenvalue_modulus(graph)


def machine_traffic(cluster: Cluster, nbytes: float, machine_sends: int) -> Traffic:
    """The hierarchical methods: the machine-local average, then each machine sends
    the tensor (a slice from each of its ranks) to machine_sends other machines."""
    crossing = Traffic(nbytes * machine_sends, 0.0, machine_sends)
    return plus(local_allreduce_traffic(cluster, nbytes), crossing)


def allreduce(cluster: Cluster, nbytes: float):
    return ring_allreduce_traffic(cluster, nbytes), 0.0, 1


def exponential(cluster: Cluster, nbytes: float):
    from flock import topology as tu
    sends = shifted_sends(cluster.size, distances(cluster.size))
    return edge_traffic(cluster, sends, nbytes), lambda2(tu.ExponentialTwoGraph(cluster.size)), 1


def one_peer(cluster: Cluster, nbytes: float):
    steps = [edge_traffic(cluster, shifted_sends(cluster.size, [d]), nbytes)
             for d in distances(cluster.size)] or [Traffic(0.0, 0.0, 0)]
    rate, period = one_peer_rate(cluster.size)
    return average_traffic(steps), rate, period


def hierarchical(cluster: Cluster, nbytes: float):
    from flock import topology as tu
    traffic = machine_traffic(cluster, nbytes, len(distances(cluster.machines)))
    return traffic, lambda2(tu.ExponentialTwoGraph(cluster.machines)), 1


def hierarchical_one_peer(cluster: Cluster, nbytes: float):
    rate, period = one_peer_rate(cluster.machines)
    sends = 1 if cluster.machines > 1 else 0
    return machine_traffic(cluster, nbytes, sends), rate, period


def ring(cluster: Cluster, nbytes: float):
    from flock import topology as tu
    n = cluster.size
    shifts = [1, n - 1] if n > 2 else [1][:n - 1]
    return edge_traffic(cluster, shifted_sends(n, shifts), nbytes), lambda2(tu.RingGraph(n)), 1


# name -> the method's (traffic per step, |lambda_2| of one period, period).
METHODS = {"allreduce": allreduce, "exponential": exponential, "one_peer": one_peer,
           "hierarchical": hierarchical, "hierarchical_one_peer": hierarchical_one_peer,
           "ring": ring}
