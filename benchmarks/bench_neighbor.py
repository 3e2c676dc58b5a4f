"""neighbor_allreduce latency of flock on float32 torch tensors, paired with an in-process floor.

Topology: the static one after bf.init(), ExponentialGraph(size()), unweighted, so every
call averages this rank's tensor and its in-neighbours' with weight 1/(indegree + 1).
Cases, each a JSON line on rank 0 with the fields of raw_mpi_neighbor.cc (impl, case, np,
bytes, tensors, reps, median_ms, min_ms, max_ms):

  sizes     4 KiB .. 64 MiB in powers of 4: bf.neighbor_allreduce(t) (impl
            flock_neighbor_allreduce) alternating iteration by iteration with the
            Isend/Irecv floor of raw_mpi_neighbor.cc run in this process through ctypes
            (impl inprocess_isend, see mpi_floor.py); then, for comparison, bf.allreduce(t),
            the global average (impl flock_allreduce);
  resnet50  the 161 gradients of ResNet-50 (25,557,032 float32, see resnet50_parameters)
            submitted with bf.neighbor_allreduce_nonblocking(t, name=...) and then all
            synchronized (tensors 161), against one bf.neighbor_allreduce of one tensor of the
            same total size (tensors 1), the in-process floor on that tensor (tensors 1)
            and the same floor on the 161 tensors (tensors 161: what their messages cost
            MPI itself); the four alternate iteration by iteration.

Alternating cases take turns in every order (all permutations, cycled), so each goes
first, and follows each other, equally often. The in-process floor needs OpenMPI; without it
(or with --no-inprocess-floor) flock runs alone.

Protocol (raw_mpi_neighbor.cc's): warm-up iterations (5; 3 from 4 MiB), the first one's
outputs checked against the expected average (SystemExit if wrong), then timed iterations
(50; 20 from 4 MiB), each bf.barrier(), clock, the work, clock; an iteration's time is the
max over ranks; a line reports the median, min and max of those in milliseconds. Before the
first case, half a second of untimed small calls (see Bench.settle).

    flockrun -np 2 python benchmarks/bench_neighbor.py [--min-bytes N] [--max-bytes N] [--reps N]
        [--no-allreduce] [--no-resnet50] [--no-inprocess-floor]
"""

import argparse
import functools
import itertools
import json
import statistics
import sys
import time

import torch

from mpi_floor import MpiFloor, MpiUnavailable, NeighborFloor
from bench_allreduce import MAX_BYTES, MIN_BYTES, reps_for, warmups_for

RESNET50_TENSORS = 161
RESNET50_PARAMS = 25557032


def resnet50_parameters():
    """[(name, shape)] of torchvision's resnet50().named_parameters(), in order.

    conv1 7x7 3->64 and bn1; four stages of 3, 4, 6, 3 Bottleneck blocks of width 64, 128,
    256, 512 (expansion 4): conv1 1x1, bn1, conv2 3x3, bn2, conv3 1x1, bn3, and in a stage's
    first block downsample.0 (conv 1x1) and downsample.1 (bn); fc 2048->1000. A BatchNorm
    has a weight and a bias (its running statistics are buffers, without gradients).
    3 + 16 * 9 + 4 * 3 + 2 = 161 tensors, 25,557,032 parameters.
    """
    params = []

    def conv(name, cin, cout, k):
        params.append((name + ".weight", (cout, cin, k, k)))

    def bn(name, channels):
        params.extend([(name + ".weight", (channels,)), (name + ".bias", (channels,))])

    conv("conv1", 3, 64, 7)
    bn("bn1", 64)
    cin = 64
    for stage, blocks in enumerate((3, 4, 6, 3)):
        width = 64 << stage
        for block in range(blocks):
            prefix = "layer{}.{}.".format(stage + 1, block)
            for i, (a, b, k) in enumerate(((cin, width, 1), (width, width, 3),
                                           (width, 4 * width, 1)), start=1):
                conv(prefix + "conv{}".format(i), a, b, k)
                bn(prefix + "bn{}".format(i), b)
            if block == 0:
                conv(prefix + "downsample.0", cin, 4 * width, 1)
                bn(prefix + "downsample.1", 4 * width)
            cin = 4 * width
    params.extend([("fc.weight", (1000, 2048)), ("fc.bias", (1000,))])
    return params


def numel(shape):
    n = 1
    for d in shape:
        n *= d
    return n


def input_tensor(rank, count):
    """Rank r's input, as in raw_mpi_neighbor.cc: (r + 1) + 0.25 * (i mod 13), exact in float32."""
    return ((torch.arange(count) % 13).to(torch.float32) * 0.25 + (rank + 1))


FLOOR = "inprocess_isend"


class Bench:
    def __init__(self, reps_override, inprocess_floor):
        import flock.torch as bf
        self.bf = bf
        bf.init()
        for name in ("neighbor_allreduce", "neighbor_allreduce_nonblocking", "in_neighbor_ranks",
                     "out_neighbor_ranks"):
            if not hasattr(bf, name):
                raise SystemExit("flock.torch has no {} (yet)".format(name))
        self.rank, self.size = bf.rank(), bf.size()
        self.sources = list(bf.in_neighbor_ranks())
        self.reps_override = reps_override
        self.mpi = None
        if inprocess_floor and not bf.mpi_threads_supported():
            print("no in-process floor: MPI_THREAD_MULTIPLE not provided", file=sys.stderr)
        elif inprocess_floor:
            try:
                self.mpi = MpiFloor()
            except MpiUnavailable as error:
                if self.rank == 0:
                    print("no in-process floor: {}".format(error), file=sys.stderr)

    def check_average(self, out, what):
        """out against the uniform average of this rank's and its in-neighbours' inputs."""
        flat = out.reshape(-1).to(torch.float64)
        ranks = [self.rank] + self.sources
        base = sum(r + 1 for r in ranks) / len(ranks)
        want = (torch.arange(flat.numel()) % 13).to(torch.float64) * 0.25 + base
        if not torch.allclose(flat, want, rtol=1e-5, atol=0):
            i = int((flat - want).abs().argmax())
            raise SystemExit("rank {}: {}: wrong neighbor average at element {}: got {}, want {}"
                             .format(self.rank, what, i, flat[i].item(), want[i].item()))

    def check_global_average(self, out, what):
        base = (self.size + 1) / 2  # the mean of rank + 1 over ranks
        want = (torch.arange(out.numel()) % 13).to(torch.float64) * 0.25 + base
        if not torch.allclose(out.reshape(-1).to(torch.float64), want, rtol=1e-5, atol=0):
            raise SystemExit("rank {}: {}: wrong allreduce average".format(self.rank, what))

    def measure(self, nbytes, works):
        """works: {key: (work, check)}. Each iteration runs every work after its own barrier,
        iteration i in the (i mod len)-th of all their orders; the first warm-up's results go
        to check.
        Returns {key: [max over ranks per rep]}."""
        bf, clock = self.bf, time.perf_counter
        for i in range(warmups_for(nbytes)):
            for work, check in works.values():
                bf.barrier()
                out = work()
                if i == 0:
                    check(out)
        reps = reps_for(nbytes, self.reps_override)
        elapsed = {key: [] for key in works}
        orders = list(itertools.permutations(works.items()))
        for i in range(reps):
            for key, (work, _) in orders[i % len(orders)]:
                bf.barrier()
                start = clock()
                work()
                elapsed[key].append(clock() - start)
        return {key: bf.allreduce(torch.tensor(values, dtype=torch.float64), op="max",
                                  name="bench.max").tolist()
                for key, values in elapsed.items()}

    def report(self, impl, case, nbytes, tensors, slowest):
        if self.rank != 0:
            return
        line = {"impl": impl, "case": case, "np": self.size, "bytes": nbytes, "tensors": tensors,
                "reps": len(slowest), "median_ms": statistics.median(slowest) * 1e3,
                "min_ms": min(slowest) * 1e3, "max_ms": max(slowest) * 1e3}
        print(json.dumps(line), flush=True)

    def settle(self, seconds=0.5):
        """Runs small neighbor_allreduces for about `seconds` before anything is timed.

        On this VM a job's first fraction of a second is slow (first touches of MPI's and
        torch's memory, threads finding their cores); without this, it lands in the first
        case (4 KiB) of some runs and not others.
        """
        bf = self.bf
        t = input_tensor(self.rank, 1024)
        start = time.perf_counter()
        while True:
            for _ in range(50):
                bf.barrier()
                bf.neighbor_allreduce(t, name="bench.settle")
            done = torch.tensor([float(time.perf_counter() - start >= seconds)])
            if bf.allreduce(done, op="min", name="bench.settle.done").item() > 0:
                return

    def sizes(self, nbytes, with_allreduce):
        bf = self.bf
        t = input_tensor(self.rank, nbytes // 4)
        neighbor_name = "bench.neighbor.{}".format(nbytes)
        allreduce_name = "bench.allreduce.{}".format(nbytes)
        neighbor = {"flock_neighbor_allreduce": (
            lambda: bf.neighbor_allreduce(t, name=neighbor_name),
            functools.partial(self.check_average, what="flock_neighbor_allreduce"))}
        neighbor.update(self.floor_case(t))
        cases = [neighbor]
        if with_allreduce:
            cases.append({"flock_allreduce": (
                lambda: bf.allreduce(t, name=allreduce_name),
                functools.partial(self.check_global_average, what="flock_allreduce"))})
        for works in cases:
            for impl, slowest in self.measure(nbytes, works).items():
                self.report(impl, "sizes", nbytes, 1, slowest)

    def floor_case(self, t, check=None):
        """{FLOOR: (work, check)} for the in-process floor on t (a tensor or a list), or {}
        without one."""
        if self.mpi is None:
            return {}
        bf = self.bf
        floor = NeighborFloor(self.mpi, t, self.sources, bf.out_neighbor_ranks())
        return {FLOOR: (floor, check or functools.partial(self.check_average, what=FLOOR))}

    def resnet50(self):
        bf = self.bf
        params = resnet50_parameters()
        total = sum(numel(shape) for _, shape in params)
        if len(params) != RESNET50_TENSORS or total != RESNET50_PARAMS:
            raise SystemExit("ResNet-50 list: {} tensors, {} params; want {}, {}".format(
                len(params), total, RESNET50_TENSORS, RESNET50_PARAMS))
        grads = [(input_tensor(self.rank, numel(shape)).view(shape), "bench.resnet50." + name)
                 for name, shape in params]
        fused = input_tensor(self.rank, total)

        def per_tensor():
            handles = [bf.neighbor_allreduce_nonblocking(t, name=n) for t, n in grads]
            return [bf.synchronize(h) for h in handles]

        def check_per_tensor(outs):
            for out, (_, name) in zip(outs, grads):
                self.check_average(out, name)

        flock = "flock_neighbor_allreduce"
        works = {(flock, RESNET50_TENSORS): (per_tensor, check_per_tensor),
                 (flock, 1): (lambda: bf.neighbor_allreduce(fused, name="bench.resnet50.fused"),
                             lambda out: self.check_average(out, "bench.resnet50.fused"))}
        works.update({(key, 1): case for key, case in self.floor_case(fused).items()})
        # What 161 tensors cost MPI itself: the same floor on the list.
        works.update({(key, RESNET50_TENSORS): case
                      for key, case in self.floor_case([t for t, _ in grads],
                                                       check_per_tensor).items()})
        for (impl, tensors), values in self.measure(total * 4, works).items():
            self.report(impl, "resnet50", total * 4, tensors, values)

    def shutdown(self):
        self.bf.shutdown()


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--min-bytes", type=int, default=MIN_BYTES)
    parser.add_argument("--max-bytes", type=int, default=MAX_BYTES)
    parser.add_argument("--reps", type=int, default=0, help="timed iterations for every case")
    parser.add_argument("--no-allreduce", dest="allreduce", action="store_false",
                        help="skip the bf.allreduce comparison")
    parser.add_argument("--no-resnet50", dest="resnet50", action="store_false",
                        help="skip the ResNet-50 case")
    parser.add_argument("--no-inprocess-floor", dest="inprocess_floor", action="store_false",
                        help="do not alternate flock with the Isend/Irecv floor in this process")
    args = parser.parse_args(argv)
    torch.set_num_threads(1)  # two cores, shared: no intra-op thread pool in the way
    bench = Bench(args.reps, args.inprocess_floor)
    bench.settle()
    nbytes = args.min_bytes
    while nbytes <= args.max_bytes:
        bench.sizes(nbytes, args.allreduce)
        nbytes *= 4
    if args.resnet50:
        bench.resnet50()
    bench.shutdown()
    return 0


if __name__ == "__main__":
    sys.exit(main())
