"""One rank of the scaling benchmark: simulated training steps, one JSON line per case.

Run by run_scaling.py under flockrun on 1, 2 or 4 emulated hosts. The GPU is replaced by
sleeps; everything else is real. Two modes:

--mode hooks (default): a user's training loop, zero_grad / forward / backward / step(),
on a synthetic model with the real model's parameters (names and shapes) whose layers
sleep in proportion to their FLOPs (scaling_model.py), communicating through the real
optimizer wrappers and their hooks, or torch DDP over gloo (scaling_hooks.py has the
methods and the timing).

--mode hand: the step by hand, as a comparison (no wrapper, no fusion of the optimizers):

    forward   sleep(compute / 3)
    backward  sleep(compute * 2/3), cut into one slice per gradient in reverse
              layer order, weighted by its size; after each slice that
              gradient's nonblocking op is submitted (what the optimizers'
              backward hooks do), so communication overlaps the rest of the
              backward pass
    wait      synchronize every handle

with real float32 gradients of torchvision's shapes (ResNet-50: 161 tensors, 25.6 M
parameters; MobileNetV2: 158, 3.5 M). Per method:

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

In both modes a step's wait = step time - compute asked for - apply time (apply: the
optimizer's update; none in hand mode): what communication added to the step. Rank 0
prints {"model", "method", "mode", "overlap", "ranks", "machines", "compute_s", "step_s",
"wait_s", "apply_s", "fwd_bwd_s", "step_call_s" (means over the timed steps of each
step's slowest rank), "step_median_s", "step_times", "wait_times"} per case.

    flockrun -np 4 -H h1:2,h2:2 python benchmarks/bench_scaling.py \
        --model resnet50 --compute-s 1.2 --methods allreduce neighbor_one_peer ddp
"""

import argparse
import faulthandler
import json
import signal
import statistics
import sys
import time

import torch

import flock.torch as bf
from flock import topology as tu

import scaling_hooks
from scaling_model import FORWARD_SHARE, MODELS

FLOCK_METHODS = ("allreduce", "neighbor_static", "neighbor_one_peer", "hierarchical",
                 "hierarchical_one_peer")
METHODS = FLOCK_METHODS + ("ddp",)  # torch DDP over gloo: hooks mode only


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
    """Hand mode: rows (step, fwd_bwd, step_call, apply, compute, wait) of the slowest
    rank per step; fwd_bwd ends with the last submission, step_call is the synchronize."""
    names = ["scaling.{}.{}.{}".format(model, method, i) for i in range(len(gradients))]
    step = Step(method, names)
    total = sum(g.numel() for g in gradients)
    slices = [compute_s * (1 - FORWARD_SHARE) * g.numel() / total for g in gradients]
    rows = []
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
            rows.append((end - start, waited - start, end - waited, 0.0, compute_s))
    # A step lasts as long as its slowest rank's.
    return scaling_hooks.slowest_rank(rows, "scaling.{}.{}".format(model, method))


def record(args, method, rows):
    """The JSON line of one case (rank 0 prints it)."""
    columns = list(zip(*rows))
    mean = (lambda i: statistics.mean(columns[i]))
    # The mean, not the median: the one-peer schedule alternates cheap and dear steps
    # (a peer on this host or not), and a median would report only one kind. --steps
    # should cover whole schedule periods.
    return {"model": args.model, "method": method, "mode": args.mode,
            "overlap": args.mode == "hooks" and not args.no_overlap,
            "compression": args.compression,
            "ranks": bf.size(), "machines": bf.machine_size(), "compute_s": args.compute_s,
            "step_s": mean(0), "wait_s": mean(5), "apply_s": mean(3), "fwd_bwd_s": mean(1),
            "step_call_s": mean(2), "step_median_s": statistics.median(columns[0]),
            "step_times": list(columns[0]), "wait_times": list(columns[5])}


def parse_args(argv):
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--model", choices=sorted(MODELS), required=True)
    parser.add_argument("--compute-s", type=float, required=True,
                        help="simulated forward+backward time per step, seconds")
    parser.add_argument("--methods", nargs="+", choices=METHODS, default=list(METHODS))
    parser.add_argument("--mode", choices=("hooks", "hand"), default="hooks",
                        help="hooks: the optimizer wrappers and DDP on a synthetic model; "
                             "hand: ops submitted by hand (no ddp)")
    parser.add_argument("--no-overlap", action="store_true",
                        help="hooks mode: ATC with overlap_next_forward=False (step() waits)")
    parser.add_argument("--compression", choices=("none", "fp16"), default="none",
                        help="hooks mode: flock's compression=fp16, DDP's fp16_compress_hook")
    parser.add_argument("--warmup", type=int, default=2)
    parser.add_argument("--steps", type=int, default=6,
                        help="timed steps; 6 covers whole one-peer periods at 2, 4, 8 ranks")
    args = parser.parse_args(argv)
    if args.mode == "hand" and args.compression != "none":
        parser.error("--compression is for the hooks mode")
    if args.mode == "hand":
        args.methods = [m for m in args.methods if m != "ddp"]  # DDP has no hand mode
    return args


def main(argv=None):
    args = parse_args(argv)
    faulthandler.register(signal.SIGUSR1, all_threads=True)  # kill -USR1: where a hang is
    torch.set_num_threads(1)  # ranks share the cores; the compute is sleeps anyway
    bf.init()
    torch.manual_seed(bf.rank())
    if args.mode == "hand":
        gradients = [torch.randn(shape) for shape in gradient_shapes(args.model)]
    for method in args.methods:
        if args.mode == "hand":
            rows = run_case(args.model, method, gradients, args.compute_s, args.warmup,
                            args.steps)
        else:
            rows = scaling_hooks.run_case(args.model, method, args.compute_s, args.warmup,
                                          args.steps, overlap=not args.no_overlap,
                                          compression=args.compression)
        if bf.rank() == 0:
            print(json.dumps(record(args, method, rows)), flush=True)
    scaling_hooks.ddp_support.destroy_process_group()
    bf.shutdown()
    return 0


if __name__ == "__main__":
    sys.exit(main())
