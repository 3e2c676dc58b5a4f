"""One rank of the scaling benchmark: simulated training steps, one JSON line per case.

Run by run_scaling.py under flockrun on 1, 2 or 4 emulated hosts. A step is
what a data-parallel training step does to the network, with the GPU replaced
by sleeps:

    forward   sleep(compute / 3)
    backward  sleep(compute * 2/3), cut into one slice per gradient in reverse
              layer order, weighted by its size; after each slice that
              gradient's nonblocking op is submitted (what the optimizers'
              backward hooks do), so communication overlaps the rest of the
              backward pass
    wait      synchronize every handle: the time spent here is the step's
              communication that compute did not hide

The gradients are real float32 tensors of torchvision's model (ResNet-50:
161 tensors, 25.6 M parameters; MobileNetV2: 158, 3.5 M). Per method:

    allreduce           allreduce_nonblocking(average) per gradient
    neighbor_static     neighbor_allreduce on the static exponential-2 graph
    neighbor_one_peer   neighbor_allreduce with the dynamic one-peer exponential
                        schedule: each step one peer, 2^k away, k rotating
    hierarchical        hierarchical_neighbor_allreduce on the exponential-2 graph
                        of machines (one machine: the local average)
    hierarchical_one_peer
                        hierarchical_neighbor_allreduce with the dynamic one-peer
                        exponential schedule of machines (one machine neighbour
                        per step, 2^k machines away)

Rank 0 prints {"model", "method", "ranks", "machines", "compute_s", "step_s",
"wait_s" (means over the timed steps), "step_median_s", "step_times",
"wait_times" (each step's slowest rank)} per case.

    flockrun -np 4 -H h1:2,h2:2 python benchmarks/bench_scaling.py \
        --model resnet50 --compute-s 1.2 --methods allreduce neighbor_one_peer
"""

import argparse
import json
import statistics
import sys
import time

import torch
import torchvision

import flock.torch as bf
from flock import topology as tu

METHODS = ("allreduce", "neighbor_static", "neighbor_one_peer", "hierarchical",
           "hierarchical_one_peer")
MODELS = {"resnet50": torchvision.models.resnet50,
          "mobilenet_v2": torchvision.models.mobilenet_v2}
FORWARD_SHARE = 1 / 3  # backward costs about twice the forward pass


def gradient_shapes(model):
    """Parameter shapes in backward order (last layer's gradient is ready first)."""
    return [p.shape for p in reversed(list(MODELS[model]().parameters()))]


class Step:
    """Submits one method's ops per gradient and waits for them."""

    def __init__(self, method, names):
        self.method = method
        self.names = names
        self.handles = []
        self.send_recv = None
        if method == "neighbor_static":
            bf.set_topology(tu.ExponentialTwoGraph(bf.size()))
        elif method == "neighbor_one_peer":
            bf.set_topology(tu.ExponentialTwoGraph(bf.size()))
            self.schedule = tu.GetDynamicOnePeerSendRecvRanks(bf.load_topology(), bf.rank())
        elif method == "hierarchical":
            bf.set_machine_topology(tu.ExponentialTwoGraph(bf.machine_size()))
        elif method == "hierarchical_one_peer":
            self.schedule = tu.GetExp2DynamicSendRecvMachineRanks(
                bf.size(), bf.local_size(), bf.rank(), bf.local_rank())

    def begin(self):
        """Called once per step before the backward pass."""
        self.handles = []
        if self.method in ("neighbor_one_peer", "hierarchical_one_peer"):
            send, recv = next(self.schedule)
            self.send_recv = (list(send), list(recv))

    def submit(self, index, gradient):
        name = self.names[index]
        if self.method == "allreduce":
            handle = bf.allreduce_nonblocking(gradient, average=True, name=name)
        elif self.method == "neighbor_static":
            handle = bf.neighbor_allreduce_nonblocking(gradient, name=name)
        elif self.method == "neighbor_one_peer":
            weight, src, dst = self._uniform_one_peer_weights()
            handle = bf.neighbor_allreduce_nonblocking(
                gradient, self_weight=weight, src_weights=src, dst_weights=dst, name=name)
        elif self.method == "hierarchical_one_peer":
            weight, src, dst = self._uniform_one_peer_weights()
            handle = bf.hierarchical_neighbor_allreduce_nonblocking(
                gradient, self_weight=weight, src_machine_weights=src,
                dst_machine_weights=dst, name=name)
        else:
            handle = bf.hierarchical_neighbor_allreduce_nonblocking(gradient, name=name)
        self.handles.append(handle)

    def _uniform_one_peer_weights(self):
        """(self weight, {source: weight}, destinations) of this step's peers,
        averaging this rank (machine) with what it receives."""
        send, recv = self.send_recv
        weight = 1.0 / (len(recv) + 1)
        return weight, {peer: weight for peer in recv}, send

    def wait(self):
        for handle in self.handles:
            bf.synchronize(handle)


def _sleep_until(deadline):
    delay = deadline - time.perf_counter()
    if delay > 0:
        time.sleep(delay)


def run_case(model, method, gradients, compute_s, warmup, steps):
    names = ["scaling.{}.{}.{}".format(model, method, i) for i in range(len(gradients))]
    step = Step(method, names)
    total = sum(g.numel() for g in gradients)
    slices = [compute_s * (1 - FORWARD_SHARE) * g.numel() / total for g in gradients]
    step_times, wait_times = [], []
    for k in range(warmup + steps):
        bf.barrier()  # steps start together, as after a synchronous data load
        start = time.perf_counter()
        ready = start + compute_s * FORWARD_SHARE
        _sleep_until(ready)
        step.begin()
        for i, gradient in enumerate(gradients):
            # Deadlines, not durations: the cost of submitting is hidden in
            # the next slice, as a GPU would compute while the CPU submits.
            ready += slices[i]
            _sleep_until(ready)
            step.submit(i, gradient)
        waited = time.perf_counter()
        step.wait()
        end = time.perf_counter()
        if k >= warmup:
            step_times.append(end - start)
            wait_times.append(end - waited)
    # A step lasts as long as its slowest rank's.
    step_times = bf.allreduce(torch.tensor(step_times, dtype=torch.float64), op=bf.Max,
                              name="scaling.step").tolist()
    wait_times = bf.allreduce(torch.tensor(wait_times, dtype=torch.float64), op=bf.Max,
                              name="scaling.wait").tolist()
    return step_times, wait_times


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--model", choices=sorted(MODELS), required=True)
    parser.add_argument("--compute-s", type=float, required=True,
                        help="simulated forward+backward time per step, seconds")
    parser.add_argument("--methods", nargs="+", choices=METHODS, default=list(METHODS))
    parser.add_argument("--warmup", type=int, default=2)
    parser.add_argument("--steps", type=int, default=6,
                        help="timed steps; 6 covers whole one-peer periods at 2, 4, 8 ranks")
    args = parser.parse_args(argv)
    bf.init()
    torch.manual_seed(bf.rank())
    gradients = [torch.randn(shape) for shape in gradient_shapes(args.model)]
    for method in args.methods:
        step_times, wait_times = run_case(args.model, method, gradients, args.compute_s,
                                          args.warmup, args.steps)
        if bf.rank() == 0:
            # The mean, not the median: the one-peer schedule alternates cheap and
            # dear steps (a peer on this host or not), and a median would report
            # only one kind. --steps should cover whole schedule periods.
            print(json.dumps({"model": args.model, "method": method, "ranks": bf.size(),
                              "machines": bf.machine_size(), "compute_s": args.compute_s,
                              "step_s": statistics.mean(step_times),
                              "wait_s": statistics.mean(wait_times),
                              "step_median_s": statistics.median(step_times),
                              "step_times": step_times, "wait_times": wait_times}),
                  flush=True)
    bf.shutdown()
    return 0


if __name__ == "__main__":
    sys.exit(main())
