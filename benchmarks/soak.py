"""Soak: N random ops against a numpy reference, and this process's resources over them.

    flockrun -np 4 python benchmarks/soak.py [--ops N] [--seed S] [--max-bytes B]

Every rank draws the same sequence from --seed: each op is one of soak_ops.KINDS (every
global and neighbor op: allreduce, broadcast, allgather, reducescatter and alltoall with
random splits, neighbor ops over static and dynamic topologies, hierarchical ops over
machines emulated with FLOCK_LOCAL_SIZE, pair_gossip), in every dtype the op takes, of 0 to
--max-bytes bytes (log-uniform; 0 one time in 20), blocking or not. Nonblocking handles
pile up (1 to 8) and are synchronized in an order each rank draws for itself. Names are
auto-generated, reused from a small pool, or used once. Now and then the static rank
and machine topologies change (set_topology, set_machine_topology). Every result is
checked against soak_inputs.py's reference.

Resources, read from /proc/self (status: VmRSS, Threads; fd/): after a warm-up (every
kind in every dtype at --max-bytes, then the first tenth of the ops), every tenth of the
ops (rank 0 prints that trend) and at the end, each time with every handle synchronized,
the idle buffers flock keeps for reuse freed (release_idle_buffers: its output and
scratch pools, a cache of blocks used in the last 10 s, which a run of random sizes
fills for a while) and glibc's free memory given back (release_free_memory): resident
memory then counts what is in use, and a leak still shows. The soak passes when every
result was right and, on every rank, resident memory grew less than 5 % and the threads
and open file descriptors did not grow. The lines also show the idle pooled bytes freed
before the first and the last measurement.

Output: one line per rank and a verdict line, on rank 0; exit status 0 on a pass, 1
otherwise. FLOCK_LOCAL_SIZE, unless set: the smallest machine size that makes at least
two machines of equal size (np 4: 2, np 6: 2), else 1 (np 3, 5: one rank per machine).
FLOCK_STALL_SHUTDOWN_S, unless set: 30.
"""

import argparse
import ctypes
import gc
import os
import re
import sys
import time

import numpy as np
import torch

import flock.torch as bf
from flock import _core as core
from flock import topology as tu
from soak_inputs import ITEMSIZE, check
from soak_ops import KINDS, Draw, Job

RSS_GROWTH_LIMIT = 0.05
MAX_PENDING = 8
NAME_POOL = 32
WRONG_LINES_SHOWN = 10
TOPOLOGIES = {
    "ExponentialGraph": tu.ExponentialGraph,
    "RingGraph": tu.RingGraph,
    "RingGraph1": lambda n: tu.RingGraph(n, connect_style=1),
    "StarGraph": tu.StarGraph,
    "MeshGrid2DGraph": tu.MeshGrid2DGraph,
    "FullyConnectedGraph": tu.FullyConnectedGraph,
    "SymmetricExponentialGraph": tu.SymmetricExponentialGraph,
}


def release_free_memory():
    """Gives glibc's free heap memory back to the system (malloc_trim), so that resident
    memory counts what is allocated, not how much was allocated at once at the busiest
    moment: flock tunes malloc to keep up to 1 GiB of freed memory (FLOCK_MALLOC_TUNING),
    and the soak's peak (up to 8 pending ops of up to 4 MB, allgathers and alltoalls of
    np × that) is random. A leak stays allocated and is still counted."""
    try:
        ctypes.CDLL("libc.so.6").malloc_trim(0)
    except (OSError, AttributeError):
        pass  # not glibc: resident memory then includes the allocator's free memory


def release_idle_buffers():
    """Frees the buffers flock keeps for reuse (its output and scratch pools: a cache
    of blocks used in the last 10 s, up to 1 GiB and 512 MiB), so that resident memory
    counts what is in use; returns their bytes, shown beside the memory."""
    return core.release_idle_buffers()


def emulated_local_size(size):
    """The smallest machine size that makes at least two equal machines, else 1."""
    return next((d for d in range(2, size) if size % d == 0 and size // d >= 2), 1)


def resources():
    """[resident bytes, threads, open file descriptors, idle bytes in flock's pool of
    output buffers]."""
    with open("/proc/self/status") as status:
        text = status.read()
    rss = int(re.search(r"^VmRSS:\s+(\d+) kB", text, re.M).group(1)) * 1024
    threads = int(re.search(r"^Threads:\s+(\d+)", text, re.M).group(1))
    return [rss, threads, len(os.listdir("/proc/self/fd")), core.output_pool_free_bytes()]


def mixing_matrix(graph, weighted):
    """W[j][i] of neighbor_allreduce(t) on graph: its weights, else 1/(indegree + 1)."""
    w = np.asarray(graph.to_numpy(), dtype=np.float64)
    if weighted:
        return w
    edges = (w != 0) | np.eye(len(w), dtype=bool)
    return edges / edges.sum(axis=0, keepdims=True)


class Soak:
    def __init__(self, args):
        self.args = args
        self.rank, self.size = bf.rank(), bf.size()
        self.rng = np.random.default_rng([args.seed])  # the same draws on every rank
        self.order_rng = np.random.default_rng([args.seed, self.rank, 1])  # this rank's own
        self.job = Job(self.rank, self.size, bf.local_size(), None, None)
        self.pending = []  # (handle, call, op index, nonblocking)
        self.pending_limit = 1  # ops between two synchronize_all, drawn at each
        self.since_flush = 0
        self.wrong = 0
        self.ops = {kind: 0 for kind in KINDS}
        self.nbytes = 0
        self.rss_trend = []  # resident bytes every tenth of the ops, from the warm-up on

    def report_wrong(self, index, call, nonblocking, what):
        self.wrong += 1
        if self.wrong <= WRONG_LINES_SHOWN:
            print("soak: rank {}: op {} {} {} ({} elements, {}): {}".format(
                self.rank, index, call.kind, call.inputs.dtype, call.inputs.counts[self.rank],
                "nonblocking" if nonblocking else "blocking", what), file=sys.stderr, flush=True)

    def change_topologies(self):
        """New static rank and machine topologies; checks the runtime's view of them."""
        self.synchronize_all()
        name = str(self.rng.choice(sorted(TOPOLOGIES)))
        weighted = bool(self.rng.random() < 0.5)
        graph = TOPOLOGIES[name](self.size)
        bf.set_topology(graph, is_weighted=weighted)
        self.job.static_w = mixing_matrix(graph, weighted)
        machines = self.job.machines
        machine_name = str(self.rng.choice(["RingGraph", "ExponentialGraph", "StarGraph"]))
        machine_weighted = bool(self.rng.random() < 0.5)
        machine_graph = TOPOLOGIES[machine_name](machines)
        bf.set_machine_topology(machine_graph, is_weighted=machine_weighted)
        self.job.machine_w = mixing_matrix(machine_graph, machine_weighted)
        expected = sorted(j for j in range(self.size)
                          if j != self.rank and self.job.static_w[j, self.rank] != 0)
        if bf.in_neighbor_ranks() != expected:
            self.wrong += 1
            print("soak: rank {}: {} in-neighbours {} instead of {}".format(
                self.rank, name, bf.in_neighbor_ranks(), expected), file=sys.stderr, flush=True)

    def draw_name(self, kind, index):
        pick = self.rng.random()
        if kind == "pair_gossip":  # ranks sit some out: a name of its own, never a counter
            return "soak.{}".format(index)
        if pick < 0.3:
            return None  # auto-named: <op>.<k>
        if pick < 0.8:
            return "soak.{}.{}".format(kind, index % NAME_POOL)
        return "soak.{}".format(index)

    def run_op(self, index, kind, **forced):
        # Every shared draw comes before anything that depends on the rank (a pair_gossip
        # this rank sits out, an error): the ranks must stay in step.
        call = KINDS[kind][0](self.job, Draw(self.rng, self.draw_name(kind, index),
                                             self.args.max_bytes, **forced))
        nonblocking = bool(self.rng.random() < 0.5)
        self.since_flush += 1
        flush = self.since_flush >= self.pending_limit or self.rng.random() < 0.1
        if index >= 0:
            self.ops[kind] += 1
        if call.start is not None:
            self.start(index, call, nonblocking)
        if flush:
            self.synchronize_all()

    def start(self, index, call, nonblocking):
        self.nbytes += call.nbytes
        try:
            result = call.start(nonblocking)
        except bf.FlockError as error:
            self.report_wrong(index, call, nonblocking, "raised {!r}".format(error))
            return
        if nonblocking:
            self.pending.append((result, call, index))
        else:
            self.finish(result, call, index, False)

    def finish(self, result, call, index, nonblocking):
        wrong = check(result, call.inputs, call.reference, self.rank)
        if wrong is not None:
            self.report_wrong(index, call, nonblocking, wrong)

    def synchronize_all(self):
        """Waits for every pending handle, in an order this rank draws for itself."""
        for k in self.order_rng.permutation(len(self.pending)):
            handle, call, index = self.pending[k]
            try:
                self.finish(bf.synchronize(handle), call, index, True)
            except bf.FlockError as error:
                self.report_wrong(index, call, True, "synchronize raised {!r}".format(error))
        self.pending, self.since_flush = [], 0
        self.pending_limit = int(self.rng.integers(1, MAX_PENDING + 1))

    def warm_up(self):
        """Every kind in every dtype it takes, at the largest size (shared draws)."""
        index = 0
        for kind, (_, dtypes) in KINDS.items():
            for dtype in dtypes:
                index -= 1  # names of their own: "soak.-1", "soak.-2", ...
                self.run_op(index, kind, dtype=dtype, count=self.args.max_bytes // ITEMSIZE[dtype])
        self.synchronize_all()

    def settle(self):
        """Every handle synchronized, garbage collected, every rank here: resources."""
        self.synchronize_all()
        gc.collect()
        bf.barrier()
        idle = release_idle_buffers()
        release_free_memory()
        measured = resources()
        measured[3] = idle
        return measured

    def run(self):
        self.change_topologies()
        self.warm_up()
        kinds = sorted(self.args.kinds)
        warm_ops = max(1, self.args.ops // 10)
        start = before = None
        for index in range(self.args.ops):
            if index == warm_ops:
                before, start = self.settle(), time.monotonic()
                self.nbytes = 0
                self.rss_trend.append(before[0])
            elif index > warm_ops and (index - warm_ops) % warm_ops == 0:
                self.rss_trend.append(self.settle()[0])
            if self.rng.random() < 1 / 200:
                self.change_topologies()
            self.run_op(index, str(self.rng.choice(kinds)))
        after = self.settle()
        self.rss_trend.append(after[0])
        if before is None:  # fewer ops than a warm-up: no growth to measure
            before, start = after, time.monotonic()
        return before, after, time.monotonic() - start, self.args.ops - min(warm_ops,
                                                                            self.args.ops)


def rank_line(r, row):
    wrong, seconds, ops, mib, rss0, th0, fd0, pool0, rss1, th1, fd1, pool1 = row
    return ("soak: rank {}: {:.0f} ops in {:.1f} s ({:.0f} ops/s, {:.0f} MiB/s submitted); "
            "rss {:.1f} -> {:.1f} MiB ({:+.2f} %; idle pooled buffers freed {:.1f} / {:.1f} MiB); "
            "threads {:.0f} -> {:.0f}; fds {:.0f} -> {:.0f}; {:.0f} wrong".format(
                r, ops, seconds, ops / max(seconds, 1e-9), mib / max(seconds, 1e-9),
                rss0 / 2**20, rss1 / 2**20, 100 * (rss1 - rss0) / rss0, pool0 / 2**20,
                pool1 / 2**20, th0, th1, fd0, fd1, wrong))


def verdict(rows, args):
    """The lines rank 0 prints and whether the soak passed; rows[r] is rank r's
    [wrong, seconds, ops, MiB] + resources() after the warm-up + resources() at the end."""
    lines, failed = [], []
    for r, row in enumerate(rows):
        wrong, rss0, th0, fd0, rss1, th1, fd1 = row[0], *row[4:7], *row[8:11]
        lines.append(rank_line(r, row))
        if wrong:
            failed.append("rank {}: {:.0f} wrong results".format(r, wrong))
        if (rss1 - rss0) / rss0 >= RSS_GROWTH_LIMIT:
            failed.append("rank {}: resident memory grew {:.1f} %".format(
                r, 100 * (rss1 - rss0) / rss0))
        if th1 > th0:
            failed.append("rank {}: threads {:.0f} -> {:.0f}".format(r, th0, th1))
        if fd1 > fd0:
            failed.append("rank {}: open fds {:.0f} -> {:.0f}".format(r, fd0, fd1))
    head = "soak: {} ({} ops at np {}, seed {}, up to {} bytes)".format(
        "FAIL" if failed else "PASS", args.ops, len(rows), args.seed, args.max_bytes)
    lines.append(head + (": " + "; ".join(failed) if failed else
                         ": every result right; memory, threads and fds steady on every rank"))
    return lines, not failed


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--ops", type=int, default=1000, help="random ops after the sweep")
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--max-bytes", type=int, default=4 << 20, help="largest tensor")
    parser.add_argument("--kinds", type=lambda text: text.split(","), default=sorted(KINDS),
                        help="comma-separated op kinds to draw from (default: all): "
                             + ", ".join(sorted(KINDS)))
    args = parser.parse_args(argv)
    unknown = sorted(set(args.kinds) - set(KINDS))
    if unknown:
        parser.error("unknown kinds: " + ", ".join(unknown))
    # Read by init(). A call stuck for 30 s fails (FlockAbortedError): a hang in flock is
    # then a wrong result of the soak, not a soak that never ends.
    os.environ.setdefault("FLOCK_LOCAL_SIZE", str(emulated_local_size(
        int(os.environ.get("OMPI_COMM_WORLD_SIZE", "1")))))
    os.environ.setdefault("FLOCK_STALL_SHUTDOWN_S", "30")
    bf.init()
    soak = Soak(args)
    begin = time.monotonic()
    before, after, seconds, measured = soak.run()
    row = [soak.wrong, seconds, measured, soak.nbytes / 2**20] + before + after
    rows = bf.allgather(torch.tensor([row], dtype=torch.float64), name="soak.summary").tolist()
    lines, passed = verdict(rows, args)
    if soak.rank == 0:
        print("soak: random ops per kind: " + ", ".join("{} {}".format(k, n)
                                                 for k, n in sorted(soak.ops.items())))
        print("soak: total {:.1f} s, warm-up included".format(time.monotonic() - begin))
        print("soak: rank 0 resident MiB every {} ops from the warm-up on: {}".format(
            max(1, args.ops // 10), " ".join("{:.1f}".format(b / 2**20) for b in soak.rss_trend)))
        print("\n".join(lines), flush=True)
    bf.shutdown()
    return 0 if passed else 1


if __name__ == "__main__":
    sys.exit(main())
