"""Asynchronous push-sum consensus over window ops (average_consensus.py
--asynchronous-mode, Bluefog's push-sum mode).

Every rank keeps a value x_i and a weight p_i (1 at the start). Each iteration it
accumulates its share 1/(out-degree+1) of (x_i, p_i) into each out-neighbour's window
(win_accumulate, p travelling with the data), keeps one share itself, and collects
what its in-neighbours sent (win_update_then_collect). No rank waits for another: a
slow rank (--slow-rank) only contributes less often. x_i / p_i tends to the average
of the starting values on any strongly connected directed graph, because the sums of
x and of p never change.
"""

import time

import torch

import flock.torch as bf


def push_sum(x, mean, iterations, slow_rank=-1, slow_delay_s=0.0):
    """This rank's (times, errors) per iteration, its final estimate x / p, and the
    relative error of (sum of x) / (sum of p) over the ranks."""
    outs = bf.out_neighbor_ranks()
    share = 1.0 / (len(outs) + 1)
    bf.turn_on_win_ops_with_associated_p()
    bf.win_create(x, name="push_sum.x", zero_init=True)
    bf.barrier()
    norm = max(float(mean.norm()), 1e-300)
    start = time.perf_counter()
    times, errors = [], []
    for _ in range(iterations):
        if bf.rank() == slow_rank:
            time.sleep(slow_delay_s)
        bf.win_accumulate(x, "push_sum.x", self_weight=share,
                          dst_weights={r: share for r in outs}, require_mutex=True)
        bf.win_update_then_collect("push_sum.x")
        estimate = x / bf.win_associated_p("push_sum.x")
        times.append(time.perf_counter() - start)
        errors.append(float((estimate - mean).norm()) / norm)
    bf.barrier()  # every accumulate has landed: collect what is left
    bf.win_update_then_collect("push_sum.x")
    p = bf.win_associated_p("push_sum.x")
    estimate = x / p
    # The sums of x and of p never change, so their ratio is the average exactly,
    # whatever the ranks' pace (a fast rank may stop before its estimate converged).
    sums = bf.allreduce(torch.cat([x, torch.tensor([p], dtype=x.dtype)]), average=False,
                        name="push_sum.sums")
    conserved = float((sums[:-1] / sums[-1] - mean).norm()) / norm
    bf.win_free("push_sum.x")
    bf.turn_off_win_ops_with_associated_p()
    return times, errors, estimate, conserved


def gather_curves(times, errors):
    """Every rank's (times, errors), on every rank (same iteration count everywhere)."""
    both = torch.tensor([times, errors], dtype=torch.float64).reshape(1, 2, -1)
    every = bf.allgather(both, name="push_sum.curves")
    return [(every[r, 0].tolist(), every[r, 1].tolist()) for r in range(every.shape[0])]


def plot_curves(curves, path, pyplot):
    fig, ax = pyplot.subplots(figsize=(6, 4))
    for r, (times, errors) in enumerate(curves):
        ax.semilogy(times, [max(e, 1e-17) for e in errors], label="rank {}".format(r))
    ax.set(xlabel="seconds", ylabel="|x_i / p_i - mean| / |mean|",
           title="asynchronous push-sum consensus")
    ax.legend(fontsize="small")
    fig.tight_layout()
    fig.savefig(path, dpi=100)
    print("plot written to {}".format(path))
