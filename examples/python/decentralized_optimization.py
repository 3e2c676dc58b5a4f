"""Decentralized optimization with neighbor_allreduce: diffusion, exact diffusion, gradient
tracking and push-DIGing (Bluefog's pytorch_optimization.py arguments and lines).

    flockrun -np 4 python examples/python/decentralized_optimization.py \\
        --task logistic_regression --method all --save-plot-file o.png

Rank i holds its own data (A_i, b_i) and the ranks minimize together
(1/n) Σ_i f_i(x), with f_i the l2-regularized logistic loss (--task
logistic_regression) or the least-squares loss ½|A_i x - b_i|²/m (--task
linear_regression), talking only to their neighbours. W is the topology's mixing
(doubly stochastic on every --topology offered):

  diffusion (ATC)     x ← W (x − α ∇f_i(x))             a constant step leaves a bias
  exact diffusion     ψ_k = x_k − α ∇f_i(x_k);  φ_k = ψ_k + x_k − ψ_{k−1};
                      x_{k+1} = W̄ φ_k with W̄ = (W + I)/2              (exact)
  gradient tracking   x_{k+1} = W x_k − α' y_k;
                      y_{k+1} = W y_k + ∇f_i(x_{k+1}) − ∇f_i(x_k)         (exact)
                      with α' = α/4: its stability bound shrinks with the
                      topology's spectral gap, and α diverges on a ring of 4.
  push-DIGing         gradient tracking for directed graphs: each rank pushes half
                      of (u, y, v) to its out-neighbours (a column-stochastic mix,
                      neighbor_allreduce with dst_weights; Bluefog used windows),
                      x = u / v, with α' = α/4.

The reference x* is the centralized solution (Newton's method on allreduced
gradients and Hessians; exact in one step for least squares): every rank prints
Bluefog's ``[DG] Rank r: global gradient norm`` / ``local gradient norm`` lines for
it and ``[method] Rank r: ...`` for each method's result (the global norm goes to 0,
the local one does not). Rank 0 prints the relative error mean_i |x_i − x*| / |x*|
of each method and draws it per iteration into --save-plot-file.
"""

import argparse

import torch

import flock.torch as bf
from flock import topology as tu

from example_support import print_line
from optional_extras import pyplot_or_none

# name -> (topology for n ranks, is_weighted); Bluefog's four, then flock's.
TOPOLOGIES = {
    "ring": (tu.RingGraph, False),
    "mesh": (tu.MeshGrid2DGraph, True),
    "star": (tu.StarGraph, True),
    "expo2": (tu.ExponentialGraph, False),
    "symmetric_exponential": (tu.SymmetricExponentialGraph, False),
    "full": (tu.FullyConnectedGraph, False),
}
TASKS = {"logistic_regression": "logistic", "linear_regression": "least_squares"}


def parse_args(argv=None):
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0],
                                formatter_class=argparse.ArgumentDefaultsHelpFormatter)
    p.add_argument("--save-plot-file", "--plot", default="plot.png", metavar="PNG",
                   help="rank 0 draws the errors here ('' for no plot)")
    p.add_argument("--plot-interactive", action="store_true", help="also show the plot")
    p.add_argument("--max-iter", "--iterations", type=int, default=1000)
    p.add_argument("--lr", "--step-size", type=float, default=None,
                   help="step size; default 0.5 (linear, capped at 1/L) or 1.0 (logistic)")
    p.add_argument("--method", choices=list(METHODS) + ["all"], default="exact_diffusion")
    p.add_argument("--task", choices=list(TASKS), default="logistic_regression")
    p.add_argument("--topology", choices=list(TOPOLOGIES), default="ring")
    p.add_argument("--samples", type=int, default=100, help="per rank")
    p.add_argument("--dim", type=int, default=10)
    return p.parse_args(argv)


class Problem:
    """This rank's data and loss; every method only calls grad()."""

    def __init__(self, kind, rank, samples, dim, reg=1e-2):
        g = torch.Generator().manual_seed(1234 + rank)
        self.kind, self.reg, self.m = kind, reg, samples
        # Ranks' data differ in distribution, so local minimizers differ from x*.
        self.a = torch.randn(samples, dim, generator=g, dtype=torch.float64) + 0.3 * rank
        x_true = torch.linspace(-1, 1, dim, dtype=torch.float64)
        if kind == "least_squares":
            self.b = self.a @ x_true + 0.1 * torch.randn(samples, generator=g, dtype=torch.float64)
        else:
            p = torch.sigmoid(self.a @ x_true)
            draw = torch.rand(samples, generator=g, dtype=torch.float64)
            self.b = torch.where(draw < p, 1.0, -1.0)

    def grad(self, x):
        if self.kind == "least_squares":
            return self.a.T @ (self.a @ x - self.b) / self.m
        margin = self.b * (self.a @ x)
        return -(self.a.T @ (self.b * torch.sigmoid(-margin))) / self.m + self.reg * x

    def hessian(self, x):
        if self.kind == "least_squares":
            return self.a.T @ self.a / self.m
        s = torch.sigmoid(self.b * (self.a @ x))
        return (self.a.T * (s * (1 - s))) @ self.a / self.m + self.reg * torch.eye(len(x),
                                                                                      dtype=x.dtype)


def centralized_solution(problem, dim):
    """x* of (1/n) Σ f_i: Newton's method on the average gradient and Hessian (exact in one
    step for least squares)."""
    x = torch.zeros(dim, dtype=torch.float64)
    for _ in range(1 if problem.kind == "least_squares" else 30):
        g = bf.allreduce(problem.grad(x), name="xstar.grad")
        h = bf.allreduce(problem.hessian(x), name="xstar.hessian")
        x = x - torch.linalg.solve(h, g)
    return x


def mix(x, name):
    return bf.neighbor_allreduce(x, name=name)


def diffusion(problem, x0, alpha, iterations, record):
    x = x0.clone()
    for _ in range(iterations):
        x = mix(x - alpha * problem.grad(x), "diffusion.x")
        record(x)
    return x


def exact_diffusion(problem, x0, alpha, iterations, record):
    self_weight, neighbor_weights = tu.GetRecvWeights(bf.load_topology(), bf.rank())
    if bf.rank() == 0:  # Bluefog's lines: the mixing weights this rank receives with
        print("self weights with A: {}\n".format(self_weight))
        print("neighbor weights with A:\n")
        for r, w in sorted(neighbor_weights.items()):
            print(r, w)
    x, psi_prev = x0.clone(), x0.clone()
    for _ in range(iterations):
        psi = x - alpha * problem.grad(x)
        phi = psi + x - psi_prev
        x = 0.5 * (mix(phi, "exact.phi") + phi)  # W̄ = (W + I) / 2
        psi_prev = psi
        record(x)
    return x


def gradient_tracking(problem, x0, alpha, iterations, record):
    alpha /= 4
    x = x0.clone()
    g = problem.grad(x)
    y = g.clone()
    for _ in range(iterations):
        x_handle = bf.neighbor_allreduce_nonblocking(x, name="tracking.x")
        y_handle = bf.neighbor_allreduce_nonblocking(y, name="tracking.y")  # both in flight
        x_next = bf.synchronize(x_handle) - alpha * y
        g_next = problem.grad(x_next)
        y = bf.synchronize(y_handle) + g_next - g
        x, g = x_next, g_next
        record(x)
    return x


def push_diging(problem, x0, alpha, iterations, record):
    """Push-DIGing (Nedić, Olshevsky, Shi 2017, Alg. 2) with a column-stochastic mix: keep
    half, push the other half split evenly over the out-neighbours. w = (u, y, v) travels
    as one tensor so its parts stay consistent."""
    alpha /= 4
    n = len(x0)
    out_ranks, in_ranks = bf.out_neighbor_ranks(), bf.in_neighbor_ranks()
    push = {"self_weight": 0.5, "src_weights": {r: 1.0 for r in in_ranks},
            "dst_weights": {r: 0.5 / len(out_ranks) for r in out_ranks}}
    g = problem.grad(x0)
    w = torch.cat([x0, g, torch.ones(1, dtype=x0.dtype)])
    x = x0.clone()
    for _ in range(iterations):
        w[:n] -= alpha * w[n:2 * n]
        w = bf.neighbor_allreduce(w, name="push_diging.w", **push)
        x = w[:n] / w[-1]
        g_next = problem.grad(x)
        w[n:2 * n] += g_next - g
        g = g_next
        record(x)
    return x


METHODS = {"diffusion": diffusion, "exact_diffusion": exact_diffusion,
           "gradient_tracking": gradient_tracking, "push_diging": push_diging}


def print_gradient_norms(label, problem, x):
    """Bluefog's check: the average gradient vanishes at x*, this rank's own does not."""
    local = problem.grad(x)
    overall = bf.allreduce(local, name="gradient")
    print_line("[{}] Rank {}: global gradient norm: {}".format(label, bf.rank(),
                                                                torch.norm(overall)))
    print_line("[{}] Rank {}: local gradient norm: {}".format(label, bf.rank(), torch.norm(local)))


def step_size(args, problem):
    alpha = args.lr or (0.5 if problem.kind == "least_squares" else 1.0)
    if problem.kind == "least_squares" and args.lr is None:
        # A safe step: below 1/L of the worst local Hessian.
        lipschitz = bf.allreduce(torch.linalg.eigvalsh(problem.hessian(None)).max().reshape(1),
                                 op="max", name="lipschitz").item()
        alpha = min(alpha, 1.0 / lipschitz)
    return alpha


def plot(args, curves):
    plt = pyplot_or_none("plot", interactive=args.plot_interactive)
    if plt is None:
        return
    fig, ax = plt.subplots(figsize=(6, 4))
    for name, errors in curves.items():
        ax.semilogy(range(1, len(errors) + 1), [max(e, 1e-17) for e in errors], label=name)
    ax.set(xlabel="iteration", ylabel="mean_i |x_i - x*| / |x*|",
           title="{} on {} ranks ({})".format(args.task, bf.size(), args.topology))
    ax.legend()
    fig.tight_layout()
    fig.savefig(args.save_plot_file, dpi=100)
    print("plot written to {}".format(args.save_plot_file))
    if args.plot_interactive:
        plt.show()


def main(argv=None):
    args = parse_args(argv)
    torch.set_num_threads(1)
    bf.init()
    topology, weighted = TOPOLOGIES[args.topology]
    bf.set_topology(topology(bf.size()), is_weighted=weighted)
    problem = Problem(TASKS[args.task], bf.rank(), args.samples, args.dim)
    alpha = step_size(args, problem)
    x_star = centralized_solution(problem, args.dim)
    print_gradient_norms("DG", problem, x_star)
    curves = {}
    for name in METHODS if args.method == "all" else [args.method]:
        errors = []

        def record(x):
            mine = torch.tensor([float((x - x_star).norm() / x_star.norm())])
            errors.append(bf.allreduce(mine, name="error").item())  # mean over ranks

        x = METHODS[name](problem, torch.zeros(args.dim, dtype=torch.float64), alpha,
                          args.max_iter, record)
        print_gradient_norms(name, problem, x)
        curves[name] = errors
    bf.barrier()  # rank 0's summary after every rank's lines
    if bf.rank() == 0:
        print("{} on {} ranks ({} topology), step size {:.3g}, {} iterations:".format(
            args.task, bf.size(), args.topology, alpha, args.max_iter))
        for name, errors in curves.items():
            print("  {:<18} relative error {:.3e}".format(name, errors[-1]))
        if args.save_plot_file:
            plot(args, curves)
    bf.shutdown()
    return curves


if __name__ == "__main__":
    main()
