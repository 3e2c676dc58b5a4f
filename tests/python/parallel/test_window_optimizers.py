"""The window optimizers step by step against numpy references of their update rules,
made deterministic with barriers (force_barrier, and one before each forward pass):

  win_put, pull_get   x ← W x − lr·g(x)      W: 1/(in-degree+1) on the exponential graph
  push_sum            n ← P(x∘w), w ← P w, x ← n / w − lr·g(x_old)   P: out-degree shares

Each rank's loss is 0.5·|x − t_r|², so g(x) = x − t_r. Also: dynamic dst_weights, the
windows freed with the optimizer, and several optimizers side by side (window_prefix).
"""

import gc

import numpy as np
import pytest
import torch

import flock.torch as bf

LR = 0.1
DIM = 4


class Quadratic(torch.nn.Module):
    def __init__(self, start, target):
        super().__init__()
        self.x = torch.nn.Parameter(torch.tensor(start, dtype=torch.float64))
        self.target = torch.tensor(target, dtype=torch.float64)

    def forward(self):
        return 0.5 * ((self.x - self.target) ** 2).sum()


def start_of(r):
    return [float(r + 1)] * DIM


def target_of(r):
    return [float(2 * r - 1) + 0.5 * i for i in range(DIM)]


def mixing(size):
    """W[i, j]: weight of rank j's value in rank i's update (uniform over in-neighbours)."""
    graph = bf.load_topology()
    w = np.zeros((size, size))
    for i in range(size):
        sources = sorted(set(graph.predecessors(i)) - {i})
        for j in sources + [i]:
            w[i, j] = 1.0 / (len(sources) + 1)
    return w


def train(make, steps, rank, before_step=None):
    model = Quadratic(start_of(rank), target_of(rank))
    opt = make(torch.optim.SGD(model.parameters(), lr=LR), model)
    opt.force_barrier = True
    trajectory = []
    for k in range(steps):
        bf.barrier()  # every rank at the same step before its forward pass
        if before_step is not None:
            before_step(opt, k)
        opt.zero_grad()
        model().backward()
        opt.step()
        trajectory.append(model.x.detach().numpy().copy())
    return opt, trajectory


def reference_average(size, steps):
    w = mixing(size)
    x = np.array([start_of(r) for r in range(size)])
    t = np.array([target_of(r) for r in range(size)])
    out = []
    for _ in range(steps):
        x = w @ x - LR * (x - t)
        out.append(x.copy())
    return out


@pytest.mark.parametrize("kind", ["win_put", "pull_get"])
def test_win_put_and_pull_get_follow_the_reference(rank, size, kind):
    make = {"win_put": bf.DistributedWinPutOptimizer,
            "pull_get": bf.DistributedPullGetOptimizer}[kind]
    opt, got = train(lambda o, m: make(o, model=m, window_prefix=kind), 6, rank)
    want = reference_average(size, 6)
    for k in range(6):
        np.testing.assert_allclose(got[k], want[k][rank], rtol=1e-12, err_msg="step {}".format(k))
    opt.unregister_window()
    assert bf.get_current_created_window_names() == []


def test_push_sum_follows_the_reference(rank, size):
    opt, got = train(lambda o, m: bf.DistributedPushSumOptimizer(o, model=m), 6, rank)
    graph = bf.load_topology()
    p = np.zeros((size, size))  # p[i, j]: share of rank j's (n, w) that lands at rank i
    for j in range(size):
        outs = sorted(set(graph.successors(j)) - {j})
        for i in outs + [j]:
            p[i, j] = 1.0 / (len(outs) + 1)
    x = np.array([start_of(r) for r in range(size)])
    t = np.array([target_of(r) for r in range(size)])
    w = np.ones(size)
    for k in range(6):
        n = p @ (x * w[:, None])
        w = p @ w
        x = n / w[:, None] - LR * (x - t)
        np.testing.assert_allclose(got[k], x[rank], rtol=1e-12, err_msg="step {}".format(k))
    opt.unregister_window()


def test_dynamic_dst_weights_one_peer_per_step(rank, size):
    """Each step rank r puts only to its k-th out-neighbour (cycling); the others' slots
    keep what was put there last (at first: a copy of the receiver's own start)."""
    graph = bf.load_topology()
    outs = {j: sorted(set(graph.successors(j)) - {j}) for j in range(size)}

    def one_peer(opt, k):
        mine = outs[rank]
        opt.dst_weights = {mine[k % len(mine)]: 1.0} if mine else {}

    opt, got = train(lambda o, m: bf.DistributedWinPutOptimizer(o, model=m, window_prefix="dyn"),
                     6, rank, one_peer)
    x = np.array([start_of(r) for r in range(size)])
    t = np.array([target_of(r) for r in range(size)])
    ins = {i: sorted(set(graph.predecessors(i)) - {i}) for i in range(size)}
    slots = {i: {j: x[i].copy() for j in ins[i]} for i in range(size)}
    for k in range(6):
        for j in range(size):
            if outs[j]:
                slots[outs[j][k % len(outs[j])]][j] = x[j].copy()
        mixed = np.array([(x[i] + sum(slots[i].values())) / (len(ins[i]) + 1)
                          for i in range(size)])
        x = mixed - LR * (x - t)
        np.testing.assert_allclose(got[k], x[rank], rtol=1e-12, err_msg="step {}".format(k))
    opt.unregister_window()


def test_windows_are_freed_with_the_optimizer(rank):
    model = Quadratic(start_of(rank), target_of(rank))
    opt = bf.DistributedWinPutOptimizer(torch.optim.SGD(model.parameters(), lr=LR), model=model,
                                        window_prefix="gone")
    assert bf.get_current_created_window_names() == ["gone.x"]
    del opt
    gc.collect()
    assert bf.get_current_created_window_names() == []
    bf.barrier()


def test_two_optimizers_need_different_prefixes(rank):
    a = Quadratic(start_of(rank), target_of(rank))
    b = Quadratic(start_of(rank), target_of(rank))
    first = bf.DistributedWinPutOptimizer(torch.optim.SGD(a.parameters(), lr=LR), model=a)
    with pytest.raises(bf.FlockError, match="exists already"):
        bf.DistributedWinPutOptimizer(torch.optim.SGD(b.parameters(), lr=LR), model=b)
    second = bf.DistributedWinPutOptimizer(torch.optim.SGD(b.parameters(), lr=LR), model=b,
                                           window_prefix="second")
    assert bf.get_current_created_window_names() == ["x", "second.x"]
    first.unregister_window()
    second.unregister_window()
