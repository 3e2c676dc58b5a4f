"""Consensus error vs iteration for each topology, simulated in-process (no MPI).

    python examples/python/topology_consensus_plot.py [--size 16] [--iterations 60]
                                                      [--seed 0] [--output consensus.png]

Every node starts with a random number; at each iteration node j replaces its
value by sum_i W[i][j] x_i (x <- W^T x), where W is the topology's mixing matrix
(flock.topology, W[i][j] = weight of the edge i -> j). The dynamic one-peer
schedule uses a new W each iteration (its uniform-weight mixing graph). The plot
shows the relative error ||x_k - mean|| / ||x_0 - mean|| on a log scale, with the
spectral prediction |lambda_2|^k dashed for the static graphs.
"""

import argparse

import matplotlib

matplotlib.use("Agg")  # files only, no display needed
import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402

from flock import topology as tu  # noqa: E402

STATIC = [
    ("ExponentialTwoGraph", tu.ExponentialTwoGraph),
    ("SymmetricExponentialGraph", tu.SymmetricExponentialGraph),
    ("MeshGrid2DGraph", tu.MeshGrid2DGraph),
    ("StarGraph", tu.StarGraph),
    ("RingGraph", tu.RingGraph),
    ("FullyConnectedGraph", tu.FullyConnectedGraph),
]
FLOOR = 1e-15  # errors below this are rounding noise: a curve ends where it reaches it


def consensus_errors(mixing_matrices, x0):
    """Relative errors after 0, 1, ... steps; mixing_matrices yields one W per step."""
    mean = x0.mean()
    start = np.linalg.norm(x0 - mean)
    x, errors = x0.copy(), [1.0]
    for w in mixing_matrices:
        x = w.T @ x
        errors.append(np.linalg.norm(x - mean) / start)
    return _cut_at_floor(np.array(errors))


def _cut_at_floor(values):
    """Values down to the first one below FLOOR (drawn at FLOOR), then NaN (not drawn)."""
    values = values.astype(float)
    below = np.flatnonzero(values < FLOOR)
    if below.size:
        values[below[0]] = FLOOR
        values[below[0] + 1:] = np.nan
    return values


def one_peer_matrices(size, iterations):
    schedule = tu.DynamicOnePeer(tu.ExponentialTwoGraph(size))
    return (schedule.mixing_graph(k).to_numpy() for k in range(iterations))


def plot(size, iterations, seed, output):
    x0 = np.random.default_rng(seed).uniform(-1.0, 1.0, size)
    fig, ax = plt.subplots(figsize=(11, 5.5))
    for (name, make), color in zip(STATIC, plt.cm.tab10.colors):
        w = make(size).to_numpy()
        errors = consensus_errors([w] * iterations, x0)
        gap = tu.spectral_gap(w)
        ax.semilogy(errors, color=color, label="{} (gap {:.3f})".format(name, gap))
        bound = _cut_at_floor((1.0 - gap) ** np.arange(iterations + 1))
        ax.semilogy(bound, color=color, linestyle="--", linewidth=0.8, alpha=0.6)
    dynamic = consensus_errors(one_peer_matrices(size, iterations), x0)
    ax.semilogy(dynamic, color="black", linewidth=2.2, label="DynamicOnePeer(ExponentialTwo)")
    ax.set_xlabel("iteration k")
    ax.set_ylabel("relative error  ||x_k - mean|| / ||x_0 - mean||")
    ax.set_title("Average consensus on {} nodes (dashed: |lambda_2|^k)".format(size))
    ax.set_ylim(FLOOR / 3, 2.0)
    ax.grid(True, which="major", alpha=0.3)
    ax.legend(fontsize=9, loc="upper left", bbox_to_anchor=(1.01, 1.0), borderaxespad=0.0)
    fig.tight_layout()
    fig.savefig(output, dpi=120)
    plt.close(fig)


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--size", type=int, default=16, help="number of nodes (default 16)")
    parser.add_argument("--iterations", type=int, default=60, help="steps to simulate")
    parser.add_argument("--seed", type=int, default=0, help="seed of the random start")
    parser.add_argument("--output", default="topology_consensus.png", help="PNG file to write")
    args = parser.parse_args()
    plot(args.size, args.iterations, args.seed, args.output)
    print("wrote", args.output)


if __name__ == "__main__":
    main()
