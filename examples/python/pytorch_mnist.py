"""MNIST-style decentralized training of a small convolutional network (Bluefog's
pytorch_mnist.py arguments and lines, on flock, with nothing downloaded).

    flockrun -np 4 python examples/python/pytorch_mnist.py --epochs 3
    flockrun -np 4 python examples/python/pytorch_mnist.py --data-dir ~/data --atc-style

The data: MNIST in torchvision's layout under --data-dir when it is there (it is
never downloaded), else scikit-learn's digits (1797 8x8 images, shipped with
scikit-learn) scaled to 28x28 as MNIST's, 1400 to train and 397 to test. Each rank
trains on its own shard, reshuffled every epoch, with the learning rate scaled by
the number of ranks. Every rank prints ``[r] Train Epoch: e [i/N (p%)]  Loss: x``
every --log-interval batches; rank 0 prints ``Test set: Average loss: x,
Accuracy: y%`` after each epoch (its own model on the whole test set, or the
average over ranks of their shards with --average-test-result), and every rank
its ``[r]:  [(loss, accuracy), ...]`` at the end.
"""

import argparse
import math
import os

import torch
import torch.nn.functional as F

import flock.torch as bf
from flock import topology as tu

from example_support import DIST_OPTIMIZERS, DynamicTopology, make_dist_optimizer, print_line

VIRTUAL_TOPOLOGIES = ["power2", "ring", "mesh", "star", "InnerOuterRing", "InnerOuterExp2"]


def parse_args(argv=None):
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--batch-size", type=int, default=64, help="per rank (default: 64)")
    p.add_argument("--local-size", type=int, default=-1,
                   help="ranks per machine for the InnerOuter schedules (default: local_size())")
    p.add_argument("--test-batch-size", type=int, default=1000)
    p.add_argument("--epochs", type=int, default=10)
    p.add_argument("--lr", type=float, default=0.01, help="per rank; scaled by size()")
    p.add_argument("--momentum", type=float, default=0.5)
    p.add_argument("--no-cuda", action="store_true", help="accepted; flock runs on CPU here")
    p.add_argument("--dist-optimizer", choices=DIST_OPTIMIZERS, default="neighbor_allreduce")
    p.add_argument("--average-test-result", action="store_true",
                   help="test on a shard per rank and average the results over ranks")
    p.add_argument("--disable-dynamic-topology", action="store_true",
                   help="the static topology instead of one peer per step")
    p.add_argument("--atc-style", action="store_true", help="adapt-then-combine")
    p.add_argument("--virtual-topology", choices=VIRTUAL_TOPOLOGIES, default="power2")
    p.add_argument("--seed", type=int, default=42)
    p.add_argument("--log-interval", type=int, default=10, help="batches between loss lines")
    p.add_argument("--data-dir", help="MNIST here (torchvision layout) if present")
    return p.parse_args(argv)


def digits_as_mnist():
    """scikit-learn's digits as MNIST-sized tensors: (x_train, y_train, x_test, y_test)."""
    from sklearn.datasets import load_digits
    digits = load_digits()
    images = torch.tensor(digits.images, dtype=torch.float32).unsqueeze(1) / 16.0
    # MNIST's digits fill a 20x20 box centred in 28x28.
    images = F.pad(F.interpolate(images, size=(20, 20), mode="bilinear", align_corners=False),
                   (4, 4, 4, 4))
    labels = torch.tensor(digits.target, dtype=torch.int64)
    order = torch.randperm(len(images), generator=torch.Generator().manual_seed(0))
    train, test = order[:1400], order[1400:]
    return images[train], labels[train], images[test], labels[test]


def load_data(data_dir, say):
    """Normalized (x_train, y_train, x_test, y_test): MNIST from data_dir, else digits."""
    mnist = None
    if data_dir and os.path.isdir(os.path.join(data_dir, "MNIST")):
        from torchvision import datasets
        mnist = [datasets.MNIST(data_dir, train=train, download=False) for train in (True, False)]
    if mnist is not None:
        say("data: MNIST from {}".format(data_dir))
        tensors = []
        for part in mnist:
            tensors += [part.data.unsqueeze(1).float() / 255.0, part.targets.long()]
    else:
        say("data: scikit-learn's digits scaled to 28x28 (no MNIST{})".format(
            " under " + data_dir if data_dir else "; --data-dir reads it"))
        tensors = list(digits_as_mnist())
    for i in (0, 2):
        tensors[i] = (tensors[i] - 0.1307) / 0.3081  # MNIST's mean and deviation
    return tensors


class Net(torch.nn.Module):
    """Two convolutions and two fully connected layers for 1x28x28 images."""

    def __init__(self):
        super().__init__()
        self.conv1 = torch.nn.Conv2d(1, 16, kernel_size=5)
        self.conv2 = torch.nn.Conv2d(16, 32, kernel_size=5)
        self.dropout = torch.nn.Dropout(0.25)
        self.fc1 = torch.nn.Linear(32 * 4 * 4, 64)
        self.fc2 = torch.nn.Linear(64, 10)

    def forward(self, x):
        x = F.max_pool2d(F.relu(self.conv1(x)), 2)
        x = F.max_pool2d(F.relu(self.conv2(x)), 2)
        x = self.dropout(F.relu(self.fc1(x.flatten(1))))
        return F.log_softmax(self.fc2(x), dim=1)


def set_topology(args):
    """The static graph; InnerOuter* are schedules over the default one (see dynamic())."""
    n = bf.size()
    graphs = {"ring": (tu.RingGraph, False), "mesh": (tu.RingGraph, True),
              "star": (tu.StarGraph, False)}
    if args.virtual_topology in graphs:
        graph, weighted = graphs[args.virtual_topology]
        bf.set_topology(graph(n), is_weighted=weighted)


def dynamic(args):
    """The per-step knob setter, or None (static topology)."""
    if args.disable_dynamic_topology or args.dist_optimizer in ("gradient_allreduce", "win_put"):
        return None
    local_size = bf.local_size() if args.local_size == -1 else args.local_size
    if args.virtual_topology == "InnerOuterRing":
        return InnerOuter(tu.GetInnerOuterRingDynamicSendRecvRanks(bf.size(), local_size,
                                                                   bf.rank()))
    if args.virtual_topology == "InnerOuterExp2":
        return InnerOuter(tu.GetInnerOuterExpo2DynamicSendRecvRanks(bf.size(), local_size,
                                                                    bf.rank()))
    return DynamicTopology(args.dist_optimizer)


class InnerOuter(DynamicTopology):
    """A given (send, recv) schedule for neighbor_allreduce."""

    def __init__(self, schedule):  # pylint: disable=super-init-not-called
        self.kind, self.schedule = "neighbor_allreduce", schedule


def shard(count, epoch, seed):
    """This rank's sample indices for the epoch: equal shards of one shared shuffle."""
    order = torch.randperm(count, generator=torch.Generator().manual_seed(seed + epoch))
    per_rank = count // bf.size()
    return order[bf.rank() * per_rank:(bf.rank() + 1) * per_rank]


def train(args, model, optimizer, schedule, data, epoch):
    model.train()
    x, y = data
    mine = shard(len(x), epoch, args.seed)
    batches = math.ceil(len(mine) / args.batch_size)
    for batch_idx in range(batches):
        index = mine[batch_idx * args.batch_size:(batch_idx + 1) * args.batch_size]
        if schedule is not None:
            schedule.apply(optimizer)
        optimizer.zero_grad()
        loss = F.nll_loss(model(x[index]), y[index])
        loss.backward()
        optimizer.step()
        if batch_idx % args.log_interval == 0:
            print_line("[{}] Train Epoch: {} [{}/{} ({:.0f}%)]\tLoss: {:.6f}".format(
                bf.rank(), epoch, batch_idx * args.batch_size, len(mine),
                100.0 * batch_idx / batches, loss.item()))


def test(args, model, data, record):
    model.eval()
    x, y = data
    if args.average_test_result:
        x, y = x[bf.rank()::bf.size()], y[bf.rank()::bf.size()]
    loss, correct = 0.0, 0
    with torch.no_grad():
        for start in range(0, len(x), args.test_batch_size):
            output = model(x[start:start + args.test_batch_size])
            target = y[start:start + args.test_batch_size]
            loss += F.nll_loss(output, target, reduction="sum").item()
            correct += (output.argmax(1) == target).sum().item()
    loss, accuracy = loss / len(x), correct / len(x)
    if args.average_test_result:
        loss, accuracy = bf.allreduce(torch.tensor([loss, accuracy]), name="test.avg").tolist()
    if bf.rank() == 0:
        print("\nTest set: Average loss: {:.4f}, Accuracy: {:.2f}%\n".format(
            loss, 100.0 * accuracy), flush=True)
    record.append((loss, 100.0 * accuracy))


def main(argv=None):
    args = parse_args(argv)
    torch.set_num_threads(1)
    torch.manual_seed(args.seed)  # the same initial model on every rank
    bf.init()
    set_topology(args)
    if args.dist_optimizer == "hierarchical_neighbor_allreduce":
        bf.set_machine_topology(tu.ExponentialGraph(bf.machine_size()))
    x_train, y_train, x_test, y_test = load_data(
        args.data_dir, print if bf.rank() == 0 else (lambda line: None))
    model = Net()
    optimizer = torch.optim.SGD(model.parameters(), lr=args.lr * bf.size(),
                                momentum=args.momentum)
    bf.broadcast_parameters(model.state_dict(), root_rank=0)
    bf.broadcast_optimizer_state(optimizer, root_rank=0)
    optimizer = make_dist_optimizer(args.dist_optimizer, optimizer, model, args.atc_style)
    schedule = dynamic(args)
    record = []
    for epoch in range(1, args.epochs + 1):
        train(args, model, optimizer, schedule, (x_train, y_train), epoch)
        test(args, model, (x_test, y_test), record)
    print_line("[{}]:  {}".format(bf.rank(), record))
    bf.barrier()
    bf.shutdown()
    return record


if __name__ == "__main__":
    main()
