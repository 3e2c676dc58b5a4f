"""Elastic training on digits: the main job's model, surviving lost and added hosts.

    flockrun --elastic -np 4 --min-np 2 --max-np 6 \\
        --host-discovery-script ./hosts.sh python examples/python/elastic_digits.py

The model, optimizer, sampler position, epoch and step are a TorchState committed
every --commit-every steps and at each epoch's end. When flockrun relaunches the
job on another world (a rank or host failed, hosts were added or taken away), the
script starts again from the top and ``train`` resumes from the last commit: the
learning rate is set for the new size (lr = --base-lr × size), the topology is
rebuilt, and the ElasticSampler hands out the rest of the epoch's samples over the
new ranks, none twice. Rank 0 prints each epoch (world size, loss, test accuracy)
and, with --json FILE, writes the final record a test or a scenario reads.

--fail-at-step N makes rank --fail-rank kill itself (SIGKILL), or stop (SIGSTOP: a
hung rank, which the others' stall inspector reports after FLOCK_STALL_SHUTDOWN_S),
at step N of the first launch: the failures the elastic tests demonstrate.
"""

import argparse
import json
import os
import signal
import sys
import time

import torch
import torch.nn.functional as F

import flock.torch as bf
from flock import topology as tu

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from example_support import make_dist_optimizer  # noqa: E402  (beside this script)
from train_digits import evaluate, load_data, make_model  # noqa: E402

OPTIMIZERS = ["gradient_allreduce", "neighbor_allreduce", "hierarchical_neighbor_allreduce"]


def parse_args(argv=None):
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--dist-optimizer", choices=OPTIMIZERS, default="gradient_allreduce")
    p.add_argument("--epochs", type=int, default=12)
    p.add_argument("--batch-size", type=int, default=16, help="per rank")
    p.add_argument("--base-lr", type=float, default=0.02, help="lr = base-lr x size")
    p.add_argument("--momentum", type=float, default=0.9)
    p.add_argument("--hidden", type=int, default=64)
    p.add_argument("--seed", type=int, default=42)
    p.add_argument("--commit-every", type=int, default=10, help="steps between commits")
    p.add_argument("--step-ms", type=float, default=0.0, help="emulated compute per step")
    p.add_argument("--fail-at-step", type=int, default=-1)
    p.add_argument("--fail-rank", type=int, default=-1, help="default: the last rank")
    p.add_argument("--fail-signal", choices=["KILL", "STOP"], default="KILL",
                   help="STOP: the rank hangs instead of dying")
    p.add_argument("--json", metavar="FILE", help="rank 0 writes the final record here")
    p.add_argument("--print-commits", action="store_true", help="rank 0 prints each commit")
    return p.parse_args(argv)


def make_state(args, data):
    x_train, y_train = data[0], data[1]
    dataset = torch.utils.data.TensorDataset(x_train, y_train)
    sampler = bf.elastic.ElasticSampler(dataset, batch_size=args.batch_size, seed=args.seed)
    model = make_model(args.hidden, args.seed)
    base = torch.optim.SGD(model.parameters(), lr=args.base_lr * bf.size(),
                           momentum=args.momentum)
    optimizer = make_dist_optimizer(args.dist_optimizer, base, model)
    state = bf.elastic.TorchState(model, optimizer, sampler=sampler, epoch=0, step=0,
                                  samples=0, history=[], sizes=[])
    machines = args.dist_optimizer == "hierarchical_neighbor_allreduce"
    if machines:
        bf.set_machine_topology(tu.ExponentialGraph(bf.machine_size()))
    state.register_reset_callbacks([bf.elastic.scale_learning_rate(optimizer, args.base_lr),
                                    bf.elastic.rebuild_topology(
                                        "machine" if machines else "exponential"),
                                    lambda: print_resumed(args, state)])
    loader = torch.utils.data.DataLoader(dataset, batch_sampler=sampler)
    return state, loader


def commit(args, state):
    """state.commit(), and with --print-commits a line saying so (also when the job
    ends at this commit to change its hosts)."""
    try:
        state.commit()
    finally:
        if args.print_commits and bf.rank() == 0 and sys.exc_info()[0] in (
                None, bf.elastic.HostsUpdatedInterrupt):
            print(f"committed step {state.step} ({bf.size()} ranks)", flush=True)


def print_resumed(args, state):
    if args.print_commits and bf.rank() == 0:
        print(f"resumed at step {state.step} ({bf.size()} ranks)", flush=True)


def maybe_fail(args, step):
    """The demonstrated failure: one rank of the first launch is killed."""
    fail_rank = args.fail_rank if args.fail_rank >= 0 else bf.size() - 1
    first_launch = os.environ.get("FLOCK_ELASTIC_LAUNCH", "1") == "1"
    if first_launch and step == args.fail_at_step and bf.rank() == fail_rank:
        print(f"rank {bf.rank()}: SIG{args.fail_signal} at step {step} (--fail-at-step)",
              flush=True)
        os.kill(os.getpid(), getattr(signal, "SIG" + args.fail_signal))


def train_epoch(args, state, loader):
    state.model.train()
    for x, y in loader:
        time.sleep(args.step_ms / 1e3)
        state.optimizer.zero_grad()
        # A rank whose share of the epoch's last round is empty still steps (zero
        # gradient), so that every rank makes the same collectives.
        loss = F.cross_entropy(state.model(x), y) if len(y) else state.model(x).sum() * 0.0
        loss.backward()
        state.optimizer.step()
        state.samples += state.sampler.record_batch()
        state.step += 1
        maybe_fail(args, state.step)
        if state.step % args.commit_every == 0:
            commit(args, state)


def run(args):
    torch.set_num_threads(1)
    bf.init()
    data = load_data(args.seed)
    state, loader = make_state(args, data)

    @bf.elastic.run
    def train(state):
        while state.epoch < args.epochs:
            if state.sizes[-1:] != [bf.size()]:
                state.sizes.append(bf.size())
            train_epoch(args, state, loader)
            loss, accuracy = evaluate(state.model, data[2], data[3])
            state.history.append({"epoch": state.epoch, "size": bf.size(), "step": state.step,
                                  "samples": state.samples, "loss": loss,
                                  "accuracy": accuracy})
            if bf.rank() == 0:
                print(f"epoch {state.epoch:3d}  ranks {bf.size()}  step {state.step:5d}  "
                      f"test loss {loss:.4f}  test accuracy {accuracy:.2%}", flush=True)
            state.epoch += 1
            state.sampler.set_epoch(state.epoch)
            commit(args, state)

    train(state)
    if bf.rank() == 0:
        record = {"accuracy": state.history[-1]["accuracy"], "step": state.step,
                  "sizes": state.sizes, "history": state.history}
        print(f"final test accuracy {record['accuracy']:.2%} after {state.step} steps; "
              f"world sizes {state.sizes}", flush=True)
        if args.json:
            with open(args.json, "w", encoding="utf-8") as handle:
                json.dump(record, handle)


if __name__ == "__main__":
    run(parse_args())
