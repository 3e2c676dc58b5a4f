"""Asynchronous training on digits with the window optimizers (train_digits.py
--dist-optimizer win_put | pull_get | push_sum): no rank ever waits for another.

Every step "computes" --step-ms (a sleep standing for a larger model's forward and
backward pass) — the --slow-rank twice that — then trains one batch and gossips its
parameters through window ops. Each rank runs the same number of epochs at its own
pace: there is no collective between steps or epochs (a per-epoch report would be one),
so a fast rank never waits for the slow one. At the end every rank prints its steps/s
and final test accuracy, then the averaged model's accuracy.

    flockrun -np 4 python examples/python/train_digits.py --dist-optimizer win_put \\
        --slow-rank 3 --step-ms 10
"""

import math
import time

import torch
import torch.nn.functional as F

import flock.torch as bf

WINDOW_OPTIMIZERS = {"win_put": "DistributedWinPutOptimizer",
                     "pull_get": "DistributedPullGetOptimizer",
                     "push_sum": "DistributedPushSumOptimizer"}


def train_async(args, model, data, evaluate, averaged_model_accuracy):
    """Returns (steps/s, final accuracy) of every rank and the averaged model's accuracy."""
    rank, size = bf.rank(), bf.size()
    x_local, y_local, x_test, y_test = data
    base = torch.optim.SGD(model.parameters(), lr=args.lr, momentum=args.momentum)
    optimizer = getattr(bf, WINDOW_OPTIMIZERS[args.dist_optimizer])(base, model=model)
    optimizer.force_barrier = False  # asynchronous, push-sum included
    steps_per_epoch = math.ceil((len(x_local)) / args.batch_size)
    compute_s = args.step_ms / 1e3 * (2 if rank == args.slow_rank else 1)
    generator = torch.Generator().manual_seed(args.seed * 1000 + rank)
    bf.barrier()
    start, steps = time.monotonic(), 0
    for epoch in range(1, args.epochs + 1):
        order = torch.randperm(len(x_local), generator=generator)
        x, y = x_local[order], y_local[order]
        model.train()
        for step in range(steps_per_epoch):
            time.sleep(compute_s)
            batch = slice(step * args.batch_size, (step + 1) * args.batch_size)
            optimizer.zero_grad()
            F.cross_entropy(model(x[batch]), y[batch]).backward()
            optimizer.step()
            steps += 1
        if rank == 0:
            print("rank 0 epoch {:3d}  test accuracy {:.2%}  ({:.1f} s)".format(
                epoch, evaluate(model, x_test, y_test)[1], time.monotonic() - start), flush=True)
    rate = steps / (time.monotonic() - start)
    optimizer.synchronize()  # the last gossip this rank sent has landed
    bf.barrier()
    optimizer.unregister_window()
    accuracy = evaluate(model, x_test, y_test)[1]
    every = bf.allgather(torch.tensor([[rate, accuracy]]), name="async.final")
    averaged = averaged_model_accuracy(model, x_test, y_test)
    if rank == 0:
        for r in range(size):
            print("  rank {}{}: {:.1f} steps/s, final test accuracy {:.2%}".format(
                r, " (slow)" if r == args.slow_rank else "", every[r, 0].item(),
                every[r, 1].item()))
        print("  averaged model test accuracy: {:.2%}".format(averaged))
    return every.tolist(), averaged
