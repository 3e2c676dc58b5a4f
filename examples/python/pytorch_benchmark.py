"""Training throughput with synthetic data (Bluefog's pytorch_benchmark.py, on flock).

    flockrun -np 4 python examples/python/pytorch_benchmark.py --model resnet18 --batch-size 16

Each iteration runs --num-batches-per-iter training steps on random images and
prints ``Iter #k: X img/sec per CPU``; warm-up batches are not timed. The end
prints ``Total img/sec on N CPU(s): X +- Y`` (Y = 1.96 standard deviations over
iterations), where each step's time went — forward and backward (with ATC also
the local update), waiting for communication, the optimizer step — and, given
``--single-rank-img-sec`` (this script's total at -np 1), speedup and efficiency.
"""

import argparse
import statistics
import time
import timeit

import torch
import torch.nn.functional as F

import flock.torch as bf
from flock import topology as tu

DIST_OPTIMIZERS = ["neighbor_allreduce", "hierarchical_neighbor_allreduce", "allreduce",
                   "gradient_allreduce", "empty"]


def parse_args(argv=None):
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--model", default="resnet50",
                   help="lenet, or a torchvision model: resnet18, resnet50, mobilenet_v2, ...")
    p.add_argument("--batch-size", type=int, default=32, help="per rank")
    p.add_argument("--num-warmup-batches", type=int, default=10)
    p.add_argument("--num-batches-per-iter", type=int, default=10)
    p.add_argument("--num-iters", type=int, default=10)
    p.add_argument("--dist-optimizer", choices=DIST_OPTIMIZERS, default="neighbor_allreduce")
    p.add_argument("--atc-style", action="store_true", help="adapt-then-combine")
    p.add_argument("--disable-dynamic-topology", action="store_true",
                   help="the static exponential graph instead of one peer per step")
    p.add_argument("--lr", type=float, default=0.01)
    p.add_argument("--num-threads", type=int, default=1, help="torch threads per rank")
    p.add_argument("--single-rank-img-sec", type=float,
                   help="the -np 1 total, for speedup and efficiency")
    p.add_argument("--no-cuda", action="store_true", help="accepted for Bluefog's scripts (CPU only)")
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


def make_model(name):
    """(model, input shape of one image)."""
    if name == "lenet":
        return LeNet(), (1, 28, 28)
    import torchvision.models
    if not hasattr(torchvision.models, name):
        raise SystemExit("unknown model {!r}: lenet or a torchvision model name".format(name))
    return getattr(torchvision.models, name)(), (3, 224, 224)


def make_optimizer(args, model):
    base = torch.optim.SGD(model.parameters(), lr=args.lr * bf.size(), momentum=0.9)
    if args.dist_optimizer == "gradient_allreduce":
        return bf.DistributedGradientAllreduceOptimizer(base, model)
    wrap = (bf.DistributedAdaptThenCombineOptimizer if args.atc_style
            else bf.DistributedAdaptWithCombineOptimizer)
    return wrap(base, model, communication_type=args.dist_optimizer)


def dynamic_schedule(args):
    """Per step (send, recv) of a one-peer dynamic topology, or None."""
    if args.disable_dynamic_topology:
        return None
    if args.dist_optimizer == "neighbor_allreduce":
        return tu.GetDynamicOnePeerSendRecvRanks(bf.load_topology(), bf.rank())
    if args.dist_optimizer == "hierarchical_neighbor_allreduce" and bf.machine_size() > 1:
        return tu.GetExp2DynamicSendRecvMachineRanks(bf.size(), bf.local_size(), bf.rank(),
                                                      bf.local_rank())
    return None


class Stepper:
    """One training step, timed by phase (seconds, summed over the timed steps)."""

    def __init__(self, args, model, optimizer, data, target):
        self.args, self.model, self.optimizer = args, model, optimizer
        self.data, self.target = data, target
        self.schedule = dynamic_schedule(args)
        self.timing = False
        self.phases = {"forward+backward": 0.0, "communication wait": 0.0, "optimizer step": 0.0}

    def set_knobs(self):
        if self.schedule is None:
            return
        send, recv = next(self.schedule)
        opt, weight = self.optimizer, 1.0 / (len(recv) + 1)
        opt.self_weight = weight
        if self.args.dist_optimizer == "neighbor_allreduce":
            opt.src_weights, opt.dst_weights = {r: weight for r in recv}, list(send)
        else:
            opt.src_machine_weights, opt.dst_machine_weights = {m: weight for m in recv}, list(send)

    def __call__(self):
        clock = time.perf_counter
        self.set_knobs()
        t0 = clock()
        self.optimizer.zero_grad()
        F.cross_entropy(self.model(self.data), self.target).backward()
        t1 = clock()
        self.optimizer.synchronize()
        t2 = clock()
        with self.optimizer.skip_synchronize():
            self.optimizer.step()
        t3 = clock()
        if self.timing:
            for key, seconds in zip(self.phases, (t1 - t0, t2 - t1, t3 - t2)):
                self.phases[key] += seconds


def main(argv=None):
    args = parse_args(argv)
    torch.set_num_threads(args.num_threads)
    bf.init()
    if args.dist_optimizer == "hierarchical_neighbor_allreduce":
        bf.set_machine_topology(tu.ExponentialGraph(bf.machine_size()))
    torch.manual_seed(0)
    model, image = make_model(args.model)
    bf.broadcast_parameters(model.state_dict(), root_rank=0)
    optimizer = make_optimizer(args, model)
    data = torch.randn(args.batch_size, *image)
    target = torch.randint(0, 10 if args.model == "lenet" else 1000, (args.batch_size,))
    step = Stepper(args, model, optimizer, data, target)
    say = print if bf.rank() == 0 else (lambda *a, **k: None)

    say("Model: {}, batch size {} per rank, {} on {} CPU(s){}{}".format(
        args.model, args.batch_size, args.dist_optimizer, bf.size(),
        " (ATC)" if args.atc_style else "",
        "" if step.schedule is None else " with a dynamic one-peer topology"))
    timeit.timeit(step, number=args.num_warmup_batches)
    step.timing = True
    per_iter = []
    for k in range(args.num_iters):
        seconds = timeit.timeit(step, number=args.num_batches_per_iter)
        img_sec = args.batch_size * args.num_batches_per_iter / seconds
        say("Iter #{}: {:.1f} img/sec per CPU".format(k, img_sec))
        per_iter.append(img_sec)
    mean = statistics.mean(per_iter)
    conf = 1.96 * (statistics.stdev(per_iter) if len(per_iter) > 1 else 0.0)
    # Throughput of the job: every rank's mean, summed.
    total = bf.allreduce(torch.tensor([mean, conf]), op="sum", name="benchmark.total")
    say("Img/sec per CPU: {:.1f} +- {:.1f}".format(mean, conf))
    say("Total img/sec on {} CPU(s): {:.1f} +- {:.1f}".format(bf.size(), total[0], total[1]))
    steps = args.num_iters * args.num_batches_per_iter
    spent = sum(step.phases.values())
    say("Where a step's time went (rank 0, mean over {} steps):".format(steps))
    for phase, seconds in step.phases.items():
        say("  {:<20} {:8.2f} ms  {:5.1f} %".format(phase, 1e3 * seconds / steps,
                                                   100 * seconds / spent))
    if args.single_rank_img_sec:
        speedup = total[0].item() / args.single_rank_img_sec
        say("Speedup over 1 CPU: {:.2f}, efficiency {:.1%}".format(speedup, speedup / bf.size()))
    bf.shutdown()


if __name__ == "__main__":
    main()
