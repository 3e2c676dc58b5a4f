"""Decentralized optimization with neighbor_allreduce: diffusion, exact diffusion, gradient tracking.

    flockrun -np 4 python examples/python/decentralized_optimization.py --problem logistic --plot o.png

Rank i holds its own data (A_i, b_i) and the ranks minimize together
(1/n) Σ_i f_i(x), with f_i the least-squares loss ½|A_i x - b_i|²/m or the
l2-regularized logistic loss, talking only to their neighbours. W is the
topology's mixing (uniform over a symmetric graph, so doubly stochastic):

  diffusion (ATC)     x ← W (x − α ∇f_i(x))             a constant step leaves a bias
  exact diffusion     ψ_k = x_k − α ∇f_i(x_k);  φ_k = ψ_k + x_k − ψ_{k−1};
                      x_{k+1} = W̄ φ_k with W̄ = (W + I)/2              (exact)
  gradient tracking   x_{k+1} = W x_k − α' y_k;
                      y_{k+1} = W y_k + ∇f_i(x_{k+1}) − ∇f_i(x_k)         (exact)
                      with α' = α/4: its stability bound shrinks with the
                      topology's spectral gap, and α diverges on a ring of 4.

The reference x* is the centralized solution (closed form for least squares,
Newton's method on allreduced gradients and Hessians for logistic). Rank 0
prints the relative error mean_i |x_i − x*| / |x*| of each method and, with
--plot, draws it per iteration.
"""

import argparse

import torch

import flock.torch as bf

from topology_choices import SYMMETRIC, TOPOLOGIES as ALL_TOPOLOGIES  # beside this script

# Exact diffusion and gradient tracking need a symmetric mixing matrix.
TOPOLOGIES = {name: ALL_TOPOLOGIES[name] for name in SYMMETRIC}


def parse_args(argv=None):
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--problem", choices=["least_squares", "logistic"], default="least_squares")
    p.add_argument("--topology", choices=sorted(TOPOLOGIES), default="ring")
    p.add_argument("--iterations", type=int, default=500)
    p.add_argument("--samples", type=int, default=100, help="per rank")
    p.add_argument("--dim", type=int, default=10)
    p.add_argument("--step-size", type=float, default=None,
                   help="default: 0.5 (least squares) or 1.0 (logistic)")
    p.add_argument("--plot", metavar="PNG")
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
            self.b = torch.where(torch.rand(samples, generator=g, dtype=torch.float64) < p, 1.0, -1.0)

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


def exact_diffusion(problem, x0, alpha, iterations, record):
    x, psi_prev = x0.clone(), x0.clone()
    for _ in range(iterations):
        psi = x - alpha * problem.grad(x)
        phi = psi + x - psi_prev
        x = 0.5 * (mix(phi, "exact.phi") + phi)  # W̄ = (W + I) / 2
        psi_prev = psi
        record(x)


def gradient_tracking(problem, x0, alpha, iterations, record):
    alpha /= 4
    x = x0.clone()
    g = problem.grad(x)
    y = g.clone()
    for _ in range(iterations):
        x_next = mix(x, "tracking.x") - alpha * y
        g_next = problem.grad(x_next)
        y = mix(y, "tracking.y") + g_next - g
        x, g = x_next, g_next
        record(x)


METHODS = {"diffusion": diffusion, "exact diffusion": exact_diffusion,
           "gradient tracking": gradient_tracking}


def main(argv=None):
    args = parse_args(argv)
    torch.set_num_threads(1)
    bf.init()
    bf.set_topology(TOPOLOGIES[args.topology](bf.size()))
    problem = Problem(args.problem, bf.rank(), args.samples, args.dim)
    alpha = args.step_size or (0.5 if args.problem == "least_squares" else 1.0)
    # A safe step for least squares: below 1/L of the worst local Hessian.
    if args.problem == "least_squares":
        lipschitz = bf.allreduce(torch.linalg.eigvalsh(problem.hessian(None)).max().reshape(1),
                                 op="max", name="lipschitz").item()
        alpha = min(alpha, 1.0 / lipschitz)
    x_star = centralized_solution(problem, args.dim)
    curves = {}
    for name, method in METHODS.items():
        errors = []

        def record(x):
            mine = torch.tensor([float((x - x_star).norm() / x_star.norm())])
            errors.append(bf.allreduce(mine, name="error").item())  # mean over ranks

        method(problem, torch.zeros(args.dim, dtype=torch.float64), alpha, args.iterations, record)
        curves[name] = errors
    if bf.rank() == 0:
        print("{} on {} ranks ({} topology), step size {:.3g}, {} iterations:".format(
            args.problem, bf.size(), args.topology, alpha, args.iterations))
        for name, errors in curves.items():
            print("  {:<18} relative error {:.3e}".format(name, errors[-1]))
        if args.plot:
            import matplotlib
            matplotlib.use("Agg")
            import matplotlib.pyplot as plt
            fig, ax = plt.subplots(figsize=(6, 4))
            for name, errors in curves.items():
                ax.semilogy(range(1, len(errors) + 1), [max(e, 1e-17) for e in errors], label=name)
            ax.set(xlabel="iteration", ylabel="mean_i |x_i - x*| / |x*|",
                   title="{} on {} ranks".format(args.problem, bf.size()))
            ax.legend()
            fig.tight_layout()
            fig.savefig(args.plot, dpi=100)
            print("plot written to {}".format(args.plot))
    bf.shutdown()
    return curves


if __name__ == "__main__":
    main()
