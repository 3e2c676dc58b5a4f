"""Decentralized training of a small network on scikit-learn's digits (8x8 images).

The main job of flock's README:

    flockrun -np 4 python examples/python/train_digits.py --dist-optimizer neighbor_allreduce

Each rank trains on its own shard of the training set; the ranks keep their
models close by the chosen communication:

  gradient_allreduce               gradients averaged over all ranks every step
  allreduce                        parameters averaged over all ranks every step
  neighbor_allreduce               parameters averaged with the in-neighbours of the
                                   topology (--topology; --dynamic: one peer per step)
  hierarchical_neighbor_allreduce  machine means averaged with neighbour machines
  win_put, pull_get, push_sum      asynchronous gossip over window ops: no rank waits for
                                   another (digits_async.py; --slow-rank, --step-ms)

--atc switches the decentralized optimizers from adapt-with-combine to
adapt-then-combine. Every epoch reports the training loss, the test accuracy of
each rank's own model and the consensus distance between the ranks' models
(sqrt of the mean over ranks of |x_i - mean x|^2); the end reports every rank's
final test accuracy and that of the averaged model. The digits data ships with
scikit-learn, so nothing is downloaded.
"""

import argparse
import math
import sys
import time

import numpy as np
import torch
import torch.nn.functional as F

import flock.torch as bf
from flock import topology as tu

from digits_async import WINDOW_OPTIMIZERS, train_async  # beside this script
from example_support import DynamicTopology, make_dist_optimizer
from optional_extras import progress_bar, pyplot_or_none
from topology_choices import TOPOLOGIES

OPTIMIZERS = ["gradient_allreduce", "allreduce", "neighbor_allreduce",
              "hierarchical_neighbor_allreduce"] + list(WINDOW_OPTIMIZERS)


def parse_args(argv=None):
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--dist-optimizer", choices=OPTIMIZERS, default="neighbor_allreduce")
    p.add_argument("--topology", choices=sorted(TOPOLOGIES), default="exponential")
    p.add_argument("--dynamic", "--enable-dynamic-topology", action="store_true",
                   help="one-peer dynamic topology (neighbor ops): one neighbour per step")
    p.add_argument("--atc", "--atc-style", action="store_true",
                   help="adapt-then-combine instead of adapt-with-combine")
    p.add_argument("--compression", choices=["none", "fp16", "bf16"], default="none",
                   help="what the optimizer sends travels in half precision")
    p.add_argument("--epochs", type=int, default=20)
    p.add_argument("--batch-size", type=int, default=32, help="per rank")
    p.add_argument("--lr", type=float, default=0.05)
    p.add_argument("--momentum", type=float, default=0.9)
    p.add_argument("--hidden", type=int, default=64)
    p.add_argument("--seed", type=int, default=42)
    p.add_argument("--plot", metavar="PNG", help="write accuracy/loss/consensus curves here")
    p.add_argument("--step-ms", type=float, default=0.0,
                   help="emulated compute per step (sleep), every rank")
    p.add_argument("--slow-rank", type=int, default=-1,
                   help="this rank's emulated compute takes twice --step-ms")
    p.add_argument("--no-progress", action="store_true", help="no tqdm progress bar")
    args = p.parse_args(argv)
    if args.dist_optimizer in WINDOW_OPTIMIZERS and args.compression != "none":
        p.error("--compression applies to the synchronous optimizers, not to window ops")
    return args


def load_data(seed):
    """(x_train, y_train, x_test, y_test) as tensors, standardized by training statistics."""
    from sklearn.datasets import load_digits
    from sklearn.model_selection import train_test_split
    digits = load_digits()
    x_train, x_test, y_train, y_test = train_test_split(
        digits.data.astype(np.float32), digits.target, test_size=0.25, random_state=seed,
        stratify=digits.target)
    mean, std = x_train.mean(0), x_train.std(0) + 1e-6
    as_x = lambda x: torch.from_numpy((x - mean) / std)
    as_y = lambda y: torch.from_numpy(y.astype(np.int64))
    return as_x(x_train), as_y(y_train), as_x(x_test), as_y(y_test)


def make_model(hidden, seed):
    torch.manual_seed(seed)  # the same initial model on every rank
    return torch.nn.Sequential(torch.nn.Linear(64, hidden), torch.nn.ReLU(),
                               torch.nn.Linear(hidden, 10))


def make_optimizer(args, model):
    base = torch.optim.SGD(model.parameters(), lr=args.lr, momentum=args.momentum)
    return make_dist_optimizer(args.dist_optimizer, base, model, atc_style=args.atc,
                               compression=args.compression)


def evaluate(model, x, y):
    with torch.no_grad():
        logits = model(x)
        return F.cross_entropy(logits, y).item(), (logits.argmax(1) == y).float().mean().item()


def flat_parameters(model):
    # Through state_dict(): it writes a combination that adapt-then-combine's step() left
    # in flight (overlap_next_forward), which reading model.parameters() would miss.
    return torch.cat([p.detach().reshape(-1) for p in model.state_dict().values()])


def consensus_distance(model, name):
    """sqrt(mean_i |x_i - mean x|^2) over the ranks' parameter vectors."""
    x = flat_parameters(model)
    mean = bf.allreduce(x, name=name + ".mean")
    return math.sqrt(bf.allreduce(torch.tensor([float((x - mean).pow(2).sum())]),
                                  name=name + ".dist").item())


def averaged_model_accuracy(model, x, y):
    averaged = make_model(model[0].out_features, 0)
    averaged.load_state_dict(model.state_dict())
    bf.allreduce_parameters(averaged.state_dict())
    return evaluate(averaged, x, y)[1]


def train(args):
    torch.set_num_threads(1)
    bf.init()
    rank, size = bf.rank(), bf.size()
    bf.set_topology(TOPOLOGIES[args.topology](size))
    if args.dist_optimizer == "hierarchical_neighbor_allreduce":
        bf.set_machine_topology(tu.ExponentialGraph(bf.machine_size()))
    x_train, y_train, x_test, y_test = load_data(args.seed)
    shard = torch.arange(rank, len(x_train), size)  # rank r takes samples r, r+size, ...
    x_local, y_local = x_train[shard], y_train[shard]
    # Every rank takes the same number of steps (shards differ by one sample at most).
    steps_per_epoch = math.ceil((len(x_train) // size) / args.batch_size)

    model = make_model(args.hidden, args.seed)
    bf.broadcast_parameters(model.state_dict(), root_rank=0)
    if args.dist_optimizer in WINDOW_OPTIMIZERS:
        result = train_async(args, model, (x_local, y_local, x_test, y_test), evaluate,
                             averaged_model_accuracy)
        bf.shutdown()
        return result
    optimizer = make_optimizer(args, model)
    dynamic = DynamicTopology(args.dist_optimizer) if args.dynamic else None
    generator = torch.Generator().manual_seed(args.seed * 1000 + rank)

    history = []
    progress = progress_bar(args.epochs * steps_per_epoch, "training",
                            enabled=rank == 0 and not args.no_progress)

    def say(line):
        if progress is not None:
            progress.write(line, file=sys.stdout)  # above the bar
        else:
            print(line, flush=True)

    if rank == 0:
        say("flock: {} ranks ({} machines), {} on the {} topology{}{}; {} training samples per "
            "rank, {} steps per epoch".format(
                size, bf.machine_size(), args.dist_optimizer, args.topology,
                " (dynamic one-peer)" if args.dynamic else "", " with ATC" if args.atc else "",
                len(x_local), steps_per_epoch))
    start = time.monotonic()
    for epoch in range(1, args.epochs + 1):
        order = torch.randperm(len(x_local), generator=generator)
        losses = train_epoch(model, optimizer, dynamic, (x_local[order], y_local[order]),
                             steps_per_epoch, args.batch_size, progress)
        test_loss, test_acc = evaluate(model, x_test, y_test)
        stats = bf.allreduce(torch.tensor([float(np.mean(losses)), test_loss, test_acc]),
                             name="epoch.stats")
        acc_range = bf.allgather(torch.tensor([test_acc]), name="epoch.acc")
        record = dict(epoch=epoch, train_loss=stats[0].item(), test_loss=stats[1].item(),
                      test_acc=stats[2].item(), min_acc=acc_range.min().item(),
                      max_acc=acc_range.max().item(),
                      consensus=consensus_distance(model, "epoch.consensus"))
        history.append(record)
        if rank == 0:
            say("epoch {epoch:3d}  train loss {train_loss:.4f}  test loss {test_loss:.4f}  "
                "test accuracy {test_acc:.2%} (ranks {min_acc:.2%}-{max_acc:.2%})  "
                "consensus distance {consensus:.2e}".format(**record))
    elapsed = time.monotonic() - start
    if progress is not None:
        progress.close()

    final = bf.allgather(torch.tensor([evaluate(model, x_test, y_test)[1]]), name="final.acc")
    averaged = averaged_model_accuracy(model, x_test, y_test)
    if rank == 0:
        samples = args.epochs * steps_per_epoch * args.batch_size * size
        print_summary(args, history, final.tolist(), averaged, elapsed, samples)
    bf.shutdown()
    return history, final.tolist(), averaged


def train_epoch(model, optimizer, dynamic, data, steps, batch_size, progress):
    """One epoch of local steps on this rank's shuffled shard; returns the step losses."""
    x, y = data
    model.train()
    losses = []
    for step in range(steps):
        batch = slice((step * batch_size) % len(x), (step * batch_size) % len(x) + batch_size)
        if dynamic is not None:
            dynamic.apply(optimizer)
        optimizer.zero_grad()
        loss = F.cross_entropy(model(x[batch]), y[batch])
        loss.backward()
        optimizer.step()
        losses.append(loss.item())
        if progress is not None:
            progress.update(1)
    model.eval()
    return losses


def print_summary(args, history, final_accuracies, averaged, elapsed, samples):
    print("summary: {} epochs in {:.1f} s ({:.0f} samples/s over {} ranks)".format(
        args.epochs, elapsed, samples / elapsed, len(final_accuracies)))
    for r, acc in enumerate(final_accuracies):
        print("  rank {} final test accuracy: {:.2%}".format(r, acc))
    print("  averaged model test accuracy: {:.2%}".format(averaged))
    print("  final consensus distance: {:.2e}".format(history[-1]["consensus"]))
    if args.plot and plot(history, args, args.plot):
        print("  curves written to {}".format(args.plot))


def plot(history, args, path):
    """Accuracy, loss and consensus curves in one PNG; False when matplotlib is missing."""
    plt = pyplot_or_none("plot")
    if plt is None:
        return False
    epochs = [h["epoch"] for h in history]
    fig, axes = plt.subplots(1, 3, figsize=(13, 3.8))
    axes[0].plot(epochs, [h["test_acc"] for h in history], label="mean over ranks")
    axes[0].fill_between(epochs, [h["min_acc"] for h in history], [h["max_acc"] for h in history],
                         alpha=0.3, label="min-max over ranks")
    axes[0].set(title="test accuracy", xlabel="epoch")
    axes[0].legend()
    axes[1].plot(epochs, [h["train_loss"] for h in history], label="train")
    axes[1].plot(epochs, [h["test_loss"] for h in history], label="test")
    axes[1].set(title="loss", xlabel="epoch", yscale="log")
    axes[1].legend()
    axes[2].plot(epochs, [max(h["consensus"], 1e-16) for h in history])
    axes[2].set(title="consensus distance", xlabel="epoch", yscale="log")
    fig.suptitle("digits, {} ranks, {}{}{}".format(
        bf.size(), args.dist_optimizer, " dynamic" if args.dynamic else "",
        " ATC" if args.atc else ""))
    fig.tight_layout()
    fig.savefig(path, dpi=100)
    return True


if __name__ == "__main__":
    train(parse_args())
