"""Consensus error vs iteration for each topology, simulated in-process (no MPI).

    python examples/python/topology_consensus_plot.py [--size 16] [--iterations 60]
                                                      [--seed 0] [--output consensus.png]

Every node starts with a random number; at each iteration node j replaces its
value by sum_i W[i][j] x_i (x <- W^T x), where W is the topology's mixing matrix
(flock.topology, W[i][j] = weight of the edge i -> j). The dynamic one-peer
schedule uses a new W each iteration (its uniform-weight mixing graph). The plot
shows the relative error ||x_k - mean|| / ||x_0 - mean|| on a log scale, with the
spectral prediction |lambda_2|^k dashed for the static graphs. Each curve's
spectral gap and the iterations it takes to reach 1e-6 are printed too (all that
remains when matplotlib is not installed).
"""

import argparse

import numpy as np

from flock import topology as tu

from optional_extras import pyplot_or_none  # examples/python, beside this script

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


def curves(size, iterations, seed):
    """[(label, errors, spectral gap or None)] for each static graph, then one-peer."""
    x0 = np.random.default_rng(seed).uniform(-1.0, 1.0, size)
    result = []
    for name, make in STATIC:
        w = make(size).to_numpy()
        result.append((name, consensus_errors([w] * iterations, x0), tu.spectral_gap(w)))
    result.append(("DynamicOnePeer(ExponentialTwo)",
                   consensus_errors(one_peer_matrices(size, iterations), x0), None))
    return result


def print_summary(results):
    for label, errors, gap in results:
        reached = np.flatnonzero(errors < 1e-6)
        print("{:<32} gap {:>6}  error below 1e-6 after {} iterations".format(
            label, "-" if gap is None else "{:.3f}".format(gap),
            reached[0] if reached.size else "more than {}".format(len(errors) - 1)))


def plot(results, size, iterations, output):
    """Draws the curves into output; False when matplotlib is missing."""
    plt = pyplot_or_none("plot")
    if plt is None:
        return False
    fig, ax = plt.subplots(figsize=(11, 5.5))
    for (label, errors, gap), color in zip(results, plt.cm.tab10.colors):
        if gap is None:
            ax.semilogy(errors, color="black", linewidth=2.2, label=label)
            continue
        ax.semilogy(errors, color=color, label="{} (gap {:.3f})".format(label, gap))
        bound = _cut_at_floor((1.0 - gap) ** np.arange(iterations + 1))
        ax.semilogy(bound, color=color, linestyle="--", linewidth=0.8, alpha=0.6)
    ax.set_xlabel("iteration k")
    ax.set_ylabel("relative error  ||x_k - mean|| / ||x_0 - mean||")
    ax.set_title("Average consensus on {} nodes (dashed: |lambda_2|^k)".format(size))
    ax.set_ylim(FLOOR / 3, 2.0)
    ax.grid(True, which="major", alpha=0.3)
    ax.legend(fontsize=9, loc="upper left", bbox_to_anchor=(1.01, 1.0), borderaxespad=0.0)
    fig.tight_layout()
    fig.savefig(output, dpi=120)
    plt.close(fig)
    return True


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--size", type=int, default=16, help="number of nodes (default 16)")
    parser.add_argument("--iterations", type=int, default=60, help="steps to simulate")
    parser.add_argument("--seed", type=int, default=0, help="seed of the random start")
    parser.add_argument("--output", default="topology_consensus.png", help="PNG file to write")
    args = parser.parse_args()
    results = curves(args.size, args.iterations, args.seed)
    print_summary(results)
    if plot(results, args.size, args.iterations, args.output):
        print("wrote", args.output)


if __name__ == "__main__":
    main()
