"""Decentralized training of a ResNet (Bluefog's pytorch_resnet.py arguments, on flock):
synthetic CIFAR-size images by default, CIFAR-10 or an ImageNet folder from local paths.

    flockrun -np 4 python examples/python/pytorch_resnet.py --epochs 2
    flockrun -np 8 python examples/python/pytorch_resnet.py --dataset imagenet \\
        --model resnet50 --train-dir ~/imagenet/train --val-dir ~/imagenet/validation

--dataset synthetic (the default here; nothing to download) draws 32x32 images
around one random pattern per class, so the network has something to learn;
cifar10 reads torchvision's CIFAR-10 under --data-dir (never downloaded); imagenet
reads ImageFolder trees. The learning rate warms up from --base-lr to
--base-lr x size() over --warmup-epochs, then drops tenfold at epochs 30, 60, 80
(Goyal et al., 2017). --batches-per-allreduce accumulates that many batches per
step. Rank 0 prints ``Train Epoch     #e: loss x, accuracy y%`` and
``Validate Epoch  #e: ...`` (means over ranks), with a tqdm bar on stderr when tqdm
is there; --log-dir writes TensorBoard scalars when a SummaryWriter is installed;
--checkpoint-format saves rank 0's model and optimizer after each epoch.
"""

import argparse
import math
import sys

import torch
import torch.nn.functional as F

import flock.torch as bf
from flock import topology as tu

from example_support import DIST_OPTIMIZERS, DynamicTopology, make_dist_optimizer
from optional_extras import import_optional, progress_bar


def parse_args(argv=None):
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0],
                                formatter_class=argparse.ArgumentDefaultsHelpFormatter)
    p.add_argument("--log-dir", help="TensorBoard log directory (none by default)")
    p.add_argument("--checkpoint-format", help="e.g. ./checkpoint-{epoch}.pth.tar")
    p.add_argument("--batches-per-allreduce", type=int, default=1,
                   help="batches accumulated locally per step (multiplies the batch size)")
    p.add_argument("--model", default="resnet18", help="a torchvision model name")
    p.add_argument("--dataset", choices=["synthetic", "cifar10", "imagenet"], default="synthetic")
    p.add_argument("--data-dir", default="./data", help="CIFAR-10's root (torchvision layout)")
    p.add_argument("--train-dir", help="ImageNet training folder")
    p.add_argument("--val-dir", help="ImageNet validation folder")
    p.add_argument("--synthetic-size", type=int, default=2048,
                   help="synthetic training images (validation: a quarter as many)")
    p.add_argument("--batch-size", type=int, default=32, help="per rank")
    p.add_argument("--val-batch-size", type=int, default=32)
    p.add_argument("--epochs", type=int, default=90)
    p.add_argument("--base-lr", type=float, default=0.0125, help="learning rate of one rank")
    p.add_argument("--warmup-epochs", type=float, default=5)
    p.add_argument("--momentum", type=float, default=0.9)
    p.add_argument("--wd", type=float, default=0.00005, help="weight decay")
    p.add_argument("--no-cuda", action="store_true", help="accepted; flock runs on CPU here")
    p.add_argument("--seed", type=int, default=42)
    p.add_argument("--dist-optimizer", choices=DIST_OPTIMIZERS, default="neighbor_allreduce")
    p.add_argument("--atc-style", action="store_true", help="adapt-then-combine")
    p.add_argument("--disable-dynamic-topology", action="store_true",
                   help="the static topology instead of one peer per step")
    p.add_argument("--no-progress", action="store_true", help="no tqdm bar")
    return p.parse_args(argv)


class SyntheticImages(torch.utils.data.Dataset):
    """Image i: its class's fixed random pattern plus noise (the same on every rank)."""

    def __init__(self, size, classes=10, seed=0, shape=(3, 32, 32)):
        g = torch.Generator().manual_seed(seed)
        self.patterns = torch.randn(classes, *shape, generator=torch.Generator().manual_seed(7))
        self.labels = torch.randint(0, classes, (size,), generator=g)
        self.noise_seed = seed

    def __len__(self):
        return len(self.labels)

    def __getitem__(self, i):
        noise = torch.randn(self.patterns.shape[1:],
                            generator=torch.Generator().manual_seed(self.noise_seed * 100003 + i))
        return self.patterns[self.labels[i]] + noise, int(self.labels[i])


def datasets(args):
    """(train, validation, classes)."""
    if args.dataset == "synthetic":
        return (SyntheticImages(args.synthetic_size, seed=args.seed),
                SyntheticImages(max(args.synthetic_size // 4, 1), seed=args.seed + 1), 10)
    from torchvision import datasets as tv, transforms as t
    normalize = t.Normalize(mean=[0.485, 0.456, 0.406], std=[0.229, 0.224, 0.225])
    if args.dataset == "cifar10":
        try:
            return tuple(tv.CIFAR10(args.data_dir, train=train, download=False,
                                    transform=t.Compose([t.ToTensor(), normalize]))
                         for train in (True, False)) + (10,)
        except RuntimeError as error:
            raise SystemExit("CIFAR-10 not found under {} ({}); flock's examples never "
                             "download: pass --data-dir, or --dataset synthetic".format(
                                 args.data_dir, error))
    train = tv.ImageFolder(args.train_dir, t.Compose([
        t.RandomResizedCrop(224), t.RandomHorizontalFlip(), t.ToTensor(), normalize]))
    val = tv.ImageFolder(args.val_dir, t.Compose([
        t.Resize(256), t.CenterCrop(224), t.ToTensor(), normalize]))
    return train, val, len(train.classes)


def loader(dataset, batch_size, shuffle, epoch=0):
    """This rank's equal shard (DistributedSampler: every rank takes the same steps)."""
    sampler = torch.utils.data.distributed.DistributedSampler(
        dataset, num_replicas=bf.size(), rank=bf.rank(), shuffle=shuffle, seed=0)
    sampler.set_epoch(epoch)
    return torch.utils.data.DataLoader(dataset, batch_size=batch_size, sampler=sampler)


def learning_rate(args, epoch, fraction):
    """Warm-up from base_lr to base_lr x size, then tenfold drops at 30, 60 and 80."""
    scaled = args.base_lr * bf.size() * args.batches_per_allreduce
    if epoch < args.warmup_epochs:
        progress = (epoch + fraction) / args.warmup_epochs
        return scaled * (1.0 / bf.size()) * (progress * (bf.size() - 1) + 1)
    return scaled * 0.1 ** sum(epoch >= e for e in (30, 60, 80))


def run_epoch(args, model, optimizer, data, epoch, train, schedule=None):
    """Mean loss and accuracy over ranks for one pass (training or validation)."""
    model.train(train)
    size = args.batch_size * args.batches_per_allreduce if train else args.val_batch_size
    batches = loader(data, size, shuffle=train, epoch=epoch)
    label = "Train Epoch     #{}" if train else "Validate Epoch  #{}"
    bar = progress_bar(len(batches), label.format(epoch + 1), enabled=args.progress)
    totals = torch.zeros(3, dtype=torch.float64)  # loss sum, correct, samples
    with torch.set_grad_enabled(train):
        for i, (x, y) in enumerate(batches):
            if train:
                step(args, model, optimizer, schedule, x, y, epoch, i / len(batches), totals)
            else:
                output = model(x)
                totals += torch.tensor([F.cross_entropy(output, y, reduction="sum").item(),
                                        (output.argmax(1) == y).sum().item(), len(y)])
            if bar is not None:
                bar.update(1)
    if bar is not None:
        bar.close()
    totals = bf.allreduce(totals, op="sum", name="metrics.train" if train else "metrics.val")
    loss, accuracy = (totals[0] / totals[2]).item(), (totals[1] / totals[2]).item()
    if bf.rank() == 0:
        print((label + ": loss {:.4f}, accuracy {:.2f}%").format(epoch + 1, loss,
                                                                  100 * accuracy), flush=True)
    return loss, accuracy


def step(args, model, optimizer, schedule, x, y, epoch, fraction, totals):
    """One step: --batches-per-allreduce sub-batches, gradients averaged over them."""
    for group in optimizer.param_groups:
        group["lr"] = learning_rate(args, epoch, fraction)
    if schedule is not None:
        schedule.apply(optimizer)
    optimizer.zero_grad()
    parts = math.ceil(len(x) / args.batch_size)
    for j in range(parts):
        xs, ys = x[j * args.batch_size:(j + 1) * args.batch_size], y[
            j * args.batch_size:(j + 1) * args.batch_size]
        output = model(xs)
        loss = F.cross_entropy(output, ys)
        totals += torch.tensor([loss.item() * len(ys), (output.argmax(1) == ys).sum().item(),
                                len(ys)])
        (loss / parts).backward()
    optimizer.step()


def tensorboard_writer(args):
    if not args.log_dir or bf.rank() != 0:
        return None
    module = import_optional("tensorboardX", "TensorBoard logs", say=lambda _: None) or \
        import_optional("torch.utils.tensorboard", "TensorBoard logs")
    return None if module is None else module.SummaryWriter(args.log_dir)


def build(args, classes):
    import torchvision.models
    torch.manual_seed(args.seed)  # the same initial model everywhere
    model = getattr(torchvision.models, args.model)(num_classes=classes)
    optimizer = torch.optim.SGD(model.parameters(), lr=learning_rate(args, 0, 0.0),
                                momentum=args.momentum, weight_decay=args.wd)
    bf.broadcast_parameters(model.state_dict(), root_rank=0)
    bf.broadcast_optimizer_state(optimizer, root_rank=0)
    optimizer = make_dist_optimizer(args.dist_optimizer, optimizer, model, args.atc_style,
                                    args.batches_per_allreduce)
    return model, optimizer


def main(argv=None):
    args = parse_args(argv)
    torch.set_num_threads(1)
    bf.init()
    if args.dist_optimizer == "hierarchical_neighbor_allreduce":
        bf.set_machine_topology(tu.ExponentialGraph(bf.machine_size()))
    train_data, val_data, classes = datasets(args)
    model, optimizer = build(args, classes)
    schedule = None if args.disable_dynamic_topology else DynamicTopology(args.dist_optimizer)
    writer = tensorboard_writer(args)
    # The bar on rank 0 only; without tqdm one line says so, once.
    args.progress = (bf.rank() == 0 and not args.no_progress and
                     import_optional("tqdm", "progress bar") is not None)
    if bf.rank() == 0:
        print("{} on {} ({} training images), {} on {} ranks, {}".format(
            args.model, args.dataset, len(train_data), args.dist_optimizer, bf.size(),
            "static topology" if schedule is None else schedule.describe()), flush=True)
    for epoch in range(args.epochs):
        train = run_epoch(args, model, optimizer, train_data, epoch, True, schedule)
        val = run_epoch(args, model, optimizer, val_data, epoch, False)
        if writer is not None:
            for name, (loss, accuracy) in (("train", train), ("val", val)):
                writer.add_scalar(name + "/loss", loss, epoch)
                writer.add_scalar(name + "/accuracy", accuracy, epoch)
        if args.checkpoint_format and bf.rank() == 0:
            torch.save({"model": model.state_dict(), "optimizer": optimizer.state_dict()},
                       args.checkpoint_format.format(epoch=epoch + 1))
    bf.shutdown()


if __name__ == "__main__":
    sys.exit(main())
