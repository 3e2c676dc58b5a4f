"""Expected topologies computed in numpy from the definitions in SEMANTICS.md and
docs/topology.md, never by calling flock: the tests compare flock against these.

W[i][j] is the weight of the edge i -> j. Circulant generators: row i sends to
(i + d) mod n for each distance d of a set D, plus itself, all with weight
1/(|D| + 1).
"""

import math

import numpy as np


def is_power_of(x, base):
    while x % base == 0:
        x //= base
    return x == 1


def circulant(n, distances):
    distances = set(distances)
    w = np.zeros((n, n))
    for i in range(n):
        w[i, i] = 1.0 / (len(distances) + 1)
        for d in distances:
            w[i, (i + d) % n] = 1.0 / (len(distances) + 1)
    return w


def exponential(n, base=2):
    return circulant(n, [d for d in range(1, n) if is_power_of(d, base)])


def symmetric_exponential(n, base=4):
    return circulant(n, [d for d in range(1, n) if is_power_of(min(d, n - d), base)])


def ring(n, style=0):
    if n == 1:
        return np.ones((1, 1))
    if n == 2:
        return np.full((2, 2), 0.5)
    return circulant(n, {0: [1, n - 1], 1: [n - 1], 2: [1]}[style])


def fully_connected(n):
    return np.full((n, n), 1.0 / n)


def star(n, center=0):
    w = np.zeros((n, n))
    for i in range(n):
        if i == center:
            w[i, :] = 1.0 / n
        else:
            w[i, i] = 1.0 - 1.0 / n
            w[i, center] = 1.0 / n
    return w


def mesh_shape(n):
    rows = max(d for d in range(1, math.isqrt(n) + 1) if n % d == 0)
    return rows, n // rows


def mesh(n, shape=None):
    rows, cols = shape or mesh_shape(n)
    neighbours = [[] for _ in range(n)]
    for r in range(rows):
        for c in range(cols):
            i = r * cols + c
            if c + 1 < cols:
                neighbours[i].append(i + 1)
                neighbours[i + 1].append(i)
            if r + 1 < rows:
                neighbours[i].append(i + cols)
                neighbours[i + cols].append(i)
    w = np.zeros((n, n))
    for i in range(n):
        for j in neighbours[i]:  # Metropolis-Hastings, degree counting the node itself
            w[i, j] = 1.0 / max(len(neighbours[i]) + 1, len(neighbours[j]) + 1)
        w[i, i] = 1.0 - w[i].sum()
    return w


def one_peer_steps(w, rank, steps):
    """(send, recv) lists of the one-peer schedule over the graph of matrix w."""
    n = len(w)
    turns = []
    for r in range(n):
        outs = [j for j in range(n) if j != r and w[r, j] > 0]
        turns.append(sorted(outs, key=lambda j, r=r: (j - r) % n))

    def pick(k, r):
        return turns[r][k % len(turns[r])] if turns[r] else None

    return [([pick(k, rank)] if turns[rank] else [], [s for s in range(n) if s != rank and
                                                      pick(k, s) == rank]) for k in range(steps)]


def exp2_hop(k, count):
    """2^(k mod (floor(log2(count)) + 1)): 1, 2, 4, ... up to the largest power <= count."""
    return 2 ** (k % (int(math.floor(math.log2(count))) + 1))


def inner_outer_step(k, world, local, rank, expo2):
    """(send, recv) of the inner/outer schedules for one rank (machines M >= 2, L > 2)."""
    machines = world // local
    machine, local_rank = divmod(rank, local)
    outgoing = k % local
    if local_rank == outgoing:
        hop = exp2_hop(k, machines - 1) if expo2 else 1
        send = ((machine + hop) % machines) * local + outgoing
        recv = ((machine - hop) % machines) * local + outgoing
        return [send], [recv]
    inner = [(outgoing + 1 + i) % local for i in range(local - 1)]
    hop = exp2_hop(k, local - 2) if expo2 else 1
    place = inner.index(local_rank)
    send = machine * local + inner[(place + hop) % len(inner)]
    recv = machine * local + inner[(place - hop) % len(inner)]
    return [send], [recv]
