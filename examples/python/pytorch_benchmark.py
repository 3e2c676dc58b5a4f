"""Training throughput with synthetic data (Bluefog's pytorch_benchmark.py, on flock).

    flockrun -np 4 python examples/python/pytorch_benchmark.py --model resnet18 --batch-size 16

Bluefog's arguments and lines: each iteration runs --num-batches-per-iter training
steps on random images and prints ``Iter #k: X img/sec per CPU`` (warm-up batches
are not timed); every rank prints ``[r] Img/sec per CPU: X +-Y`` and the end
``Total img/sec on N CPU(s): X +-Y`` (the per-iteration sums over ranks: mean and
1.96 standard deviations). flock adds where each step's time went (forward and
backward, waiting for communication, the optimizer step) and, given
``--single-rank-img-sec`` (this script's total at -np 1), speedup and efficiency.
``--dist-optimizer ddp`` runs torch DistributedDataParallel over gloo instead (the method
users would pick otherwise; ddp_support.py), for a comparison by the same script: its
allreduce runs inside backward, so its "communication wait" is the time from the last
gradient to the end of backward.
"""

import argparse
import time
import timeit

import numpy as np
import torch
import torch.nn.functional as F

import flock.torch as bf
from flock import topology as tu

import ddp_support
from example_support import DIST_OPTIMIZERS, DynamicTopology, make_dist_optimizer, print_line


def parse_args(argv=None):
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0],
                                formatter_class=argparse.ArgumentDefaultsHelpFormatter)
    p.add_argument("--model", default="resnet50",
                   help="lenet, or a torchvision model: resnet18, resnet50, mobilenet_v2, ...")
    p.add_argument("--batch-size", type=int, default=32, help="input batch size (per rank)")
    p.add_argument("--num-warmup-batches", type=int, default=10, help="untimed batches first")
    p.add_argument("--num-batches-per-iter", type=int, default=10)
    p.add_argument("--num-iters", type=int, default=10, help="timed iterations")
    p.add_argument("--num-classes", type=int, default=1000, help="torchvision models' classes")
    p.add_argument("--no-cuda", action="store_true", help="accepted; flock runs on CPU here")
    p.add_argument("--profiler", action="store_true",
                   help="profile rank 0's timed steps and print the top operators")
    p.add_argument("--partition", type=int, default=None, help="accepted, unused (as Bluefog)")
    p.add_argument("--dist-optimizer", choices=DIST_OPTIMIZERS + ["ddp"],
                   default="neighbor_allreduce",
                   help="flock's optimizers (Bluefog's names), or ddp: torch "
                        "DistributedDataParallel over gloo, for comparison")
    p.add_argument("--disable-dynamic-topology", action="store_true",
                   help="the static topology instead of one peer per step")
    p.add_argument("--atc-style", action="store_true", help="adapt-then-combine")
    p.add_argument("--lr", type=float, default=0.01)
    p.add_argument("--num-threads", type=int, default=1, help="torch threads per rank")
    p.add_argument("--single-rank-img-sec", type=float,
                   help="the -np 1 total, for speedup and efficiency")
    return p.parse_args(argv)


class LeNet(torch.nn.Module):
    """LeNet-5 for 1x28x28 images."""

    def __init__(self, classes=10):
        super().__init__()
        self.conv1 = torch.nn.Conv2d(1, 6, 5)
        self.conv2 = torch.nn.Conv2d(6, 16, 5)
        self.fc1 = torch.nn.Linear(16 * 4 * 4, 120)
        self.fc2 = torch.nn.Linear(120, 84)
        self.fc3 = torch.nn.Linear(84, classes)

    def forward(self, x):
        x = F.max_pool2d(F.relu(self.conv1(x)), 2)
        x = F.max_pool2d(F.relu(self.conv2(x)), 2)
        x = F.relu(self.fc1(x.flatten(1)))
        return self.fc3(F.relu(self.fc2(x)))


def make_model(name, num_classes):
    """(model, input shape of one image, classes): MNIST size for lenet, CIFAR size for
    resnet18 (as Bluefog's benchmark), ImageNet size otherwise."""
    if name == "lenet":
        return LeNet(), (1, 28, 28), 10
    import torchvision.models
    if not hasattr(torchvision.models, name):
        raise SystemExit("unknown model {!r}: lenet or a torchvision model name".format(name))
    if name == "resnet18":
        return torchvision.models.resnet18(num_classes=10), (3, 32, 32), 10
    return getattr(torchvision.models, name)(num_classes=num_classes), (3, 224, 224), num_classes


class Stepper:
    """One training step, timed by phase (seconds, summed over the timed steps)."""

    def __init__(self, args, model, optimizer, data, target):
        self.model, self.optimizer = model, optimizer
        self.data, self.target = data, target
        self.dynamic = None if args.disable_dynamic_topology else DynamicTopology(
            args.dist_optimizer)
        # DDP: the allreduce waits inside backward, after the last gradient
        self.ddp_clock = (ddp_support.LastGradientClock(model)
                          if args.dist_optimizer == "ddp" else None)
        self.timing = False
        self.phases = {"forward+backward": 0.0, "communication wait": 0.0, "optimizer step": 0.0}

    def __call__(self):
        clock = time.perf_counter
        if self.dynamic is not None:
            self.dynamic.apply(self.optimizer)
        t0 = clock()
        self.optimizer.zero_grad()
        F.cross_entropy(self.model(self.data), self.target).backward()
        t1 = clock()
        if self.ddp_clock is not None:
            t1, t2 = self.ddp_clock.last, t1
            self.optimizer.step()
        else:
            self.optimizer.synchronize()
            t2 = clock()
            with self.optimizer.skip_synchronize():
                self.optimizer.step()
        t3 = clock()
        if self.timing:
            for key, seconds in zip(self.phases, (t1 - t0, t2 - t1, t3 - t2)):
                self.phases[key] += seconds


def timed_iterations(args, step, log):
    """img/sec of each timed iteration on this rank."""
    img_secs = []
    profiling = args.profiler and bf.rank() == 0
    with torch.autograd.profiler.profile(enabled=profiling) as profile:
        for k in range(args.num_iters):
            seconds = timeit.timeit(step, number=args.num_batches_per_iter)
            img_secs.append(args.batch_size * args.num_batches_per_iter / seconds)
            log("Iter #%d: %.1f img/sec per CPU" % (k, img_secs[-1]))
    if profiling:
        print(profile.key_averages().table(sort_by="self_cpu_time_total", row_limit=12))
    return img_secs


def report(args, step, img_secs, log):
    """Bluefog's result lines, then where a step's time went and the speedup."""
    print_line("[%d] Img/sec per CPU: %.1f +-%.1f" % (bf.rank(), np.mean(img_secs),
                                                     1.96 * np.std(img_secs)))
    # Per iteration, the job's throughput: the sum over ranks.
    sums = bf.allreduce(torch.tensor(img_secs, dtype=torch.float64), op="sum",
                        name="benchmark.img_secs").numpy()
    log("Total img/sec on %d CPU(s): %.1f +-%.1f" % (bf.size(), np.mean(sums),
                                                     1.96 * np.std(sums)))
    steps = args.num_iters * args.num_batches_per_iter
    spent = sum(step.phases.values())
    log("Where a step's time went (mean over {} steps):".format(steps))
    for phase, seconds in step.phases.items():
        log("  {:<20} {:8.2f} ms  {:5.1f} %".format(phase, 1e3 * seconds / steps,
                                                   100 * seconds / spent))
    if args.single_rank_img_sec:
        speedup = np.mean(sums) / args.single_rank_img_sec
        log("Speedup over 1 CPU: {:.2f}, efficiency {:.1%}".format(speedup, speedup / bf.size()))


def make_training(args, model):
    """(model to call, optimizer): flock's wrapper, or DDP over gloo with plain SGD."""
    if args.dist_optimizer == "ddp":
        ddp_support.init_process_group()
        model = torch.nn.parallel.DistributedDataParallel(model)  # broadcasts rank 0's
        return model, torch.optim.SGD(model.parameters(), lr=args.lr)
    optimizer = make_dist_optimizer(
        args.dist_optimizer, torch.optim.SGD(model.parameters(), lr=args.lr), model,
        args.atc_style)
    bf.broadcast_parameters(model.state_dict(), root_rank=0)
    bf.broadcast_optimizer_state(optimizer, root_rank=0)
    return model, optimizer


def main(argv=None):
    args = parse_args(argv)
    torch.set_num_threads(args.num_threads)
    bf.init()
    if args.dist_optimizer == "hierarchical_neighbor_allreduce":
        bf.set_machine_topology(tu.ExponentialGraph(bf.machine_size()))
    torch.manual_seed(0)
    model, image, classes = make_model(args.model, args.num_classes)
    model, optimizer = make_training(args, model)
    data = torch.rand(args.batch_size, *image)
    target = torch.randint(0, classes, (args.batch_size,))
    step = Stepper(args, model, optimizer, data, target)

    def log(line):  # one rank per machine, as Bluefog
        if bf.local_rank() == 0:
            print(line, flush=True)

    log("Model: %s" % args.model)
    log("Batch size: %d" % args.batch_size)
    log("Number of CPUs: %d" % bf.size())
    if args.dist_optimizer == "ddp":
        log("Distributed optimizer: ddp (torch DistributedDataParallel over gloo)")
    else:
        log("Distributed optimizer: {}{}, {}".format(
            args.dist_optimizer, " (ATC)" if args.atc_style else "",
            "static topology" if step.dynamic is None else step.dynamic.describe()))
    log("Running warmup...")
    timeit.timeit(step, number=args.num_warmup_batches)
    log("Running benchmark...")
    step.timing = True
    img_secs = timed_iterations(args, step, log)
    report(args, step, img_secs, log)
    ddp_support.destroy_process_group()
    bf.shutdown()


if __name__ == "__main__":
    main()
