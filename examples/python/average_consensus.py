"""Average consensus: how fast repeated neighbor averaging reaches the global mean.

    flockrun -np 8 python examples/python/average_consensus.py --virtual-topology ring \\
        --save-plot-file consensus.png

Bluefog's pytorch_average_consensus.py arguments and lines. Every rank starts from
its own random vector x_i (--data-size long); each iteration replaces it by
neighbor_allreduce(x_i) over the --virtual-topology (or, with
--enable-dynamic-topology, one peer per step). Every rank prints
``MSE at last iteration:`` — its |x_i - mean| / |mean| — and rank 0 prints the
error max_i |x_i - mean| / (initial spread) at a few iterations with the rate at
which it shrinks, set by the topology's spectral gap. --save-plot-file draws it
(--plot-interactive also shows it). --asynchronous-mode is Bluefog's push-sum over
window ops (push_sum.py): no rank waits for another (--slow-rank makes one slower),
every rank prints its error after its iterations, and the plot shows each rank's
error against time.
"""

import argparse

import torch

import flock.torch as bf
from flock import topology as tu

from example_support import print_line
from push_sum import gather_curves, plot_curves, push_sum
from optional_extras import pyplot_or_none

# name -> (topology for n ranks, is_weighted). Bluefog's names and meanings first
# ("ring" sends to one side only, "mesh" is its weighted two-sided ring), then flock's.
VIRTUAL_TOPOLOGIES = {
    "expo2": (tu.ExponentialGraph, False),
    "expo3": (lambda n: tu.ExponentialGraph(n, base=3), False),
    "expo4": (lambda n: tu.ExponentialGraph(n, base=4), False),
    "ring": (lambda n: tu.RingGraph(n, connect_style=1), False),
    "mesh": (lambda n: tu.RingGraph(n, connect_style=0), True),
    "star": (tu.StarGraph, True),
    "full": (tu.FullyConnectedGraph, False),
    "InnerOuterExpo2": (tu.ExponentialGraph, False),  # dynamic: inner/outer machine hops
    "exponential_two": (tu.ExponentialTwoGraph, False),
    "symmetric_exponential": (tu.SymmetricExponentialGraph, False),
    "grid": (tu.MeshGrid2DGraph, True),
}


def parse_args(argv=None):
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0],
                                formatter_class=argparse.ArgumentDefaultsHelpFormatter)
    p.add_argument("--data-size", "--dim", type=int, default=100000,
                   help="length of each rank's vector")
    p.add_argument("--max-iters", "--iterations", type=int, default=200)
    p.add_argument("--virtual-topology", choices=list(VIRTUAL_TOPOLOGIES), default="expo2")
    p.add_argument("--asynchronous-mode", action="store_true",
                   help="push-sum over window ops: no rank waits for another")
    p.add_argument("--slow-rank", type=int, default=-1,
                   help="asynchronous mode: this rank sleeps --slow-delay each iteration")
    p.add_argument("--slow-delay", type=float, default=0.002, help="seconds")
    p.add_argument("--no-cuda", action="store_true", help="accepted; flock runs on CPU here")
    p.add_argument("--enable-dynamic-topology", "--dynamic", action="store_true",
                   help="one neighbour per iteration")
    p.add_argument("--plot-interactive", action="store_true", help="also show the plot")
    p.add_argument("--save-plot-file", "--plot", metavar="PNG",
                   help="write the error curve here (default with --plot-interactive: "
                        "average_consensus_plot.png)")
    p.add_argument("--seed", type=int, default=2020)
    return p.parse_args(argv)


def dynamic_schedule(args):
    """(send, recv) per iteration, or None for the static topology."""
    if not args.enable_dynamic_topology:
        return None
    if args.virtual_topology == "InnerOuterExpo2":
        return tu.GetInnerOuterExpo2DynamicSendRecvRanks(bf.size(), bf.local_size(), bf.rank())
    return tu.GetDynamicOnePeerSendRecvRanks(bf.load_topology(), bf.rank())


def consensus(x, iterations, schedule, record):
    for _ in range(iterations):
        if schedule is None:
            x = bf.neighbor_allreduce(x, name="consensus.x")
        else:
            send, recv = next(schedule)
            w = 1.0 / (len(recv) + 1)
            x = bf.neighbor_allreduce(x, self_weight=w, src_weights={r: w for r in recv},
                                      dst_weights=send, enable_topo_check=False,
                                      name="consensus.x")
        record(x)
    return x


def summarize(args, errors):
    """Rank 0's lines: the error at a few iterations and its geometric rate."""
    label = "{}{} on {} ranks".format(args.virtual_topology,
                                      " (dynamic)" if args.enable_dynamic_topology else "",
                                      bf.size())
    for k in sorted({0, 1, 2, 5, 10, 20, 50, 100, args.max_iters} & set(range(len(errors)))):
        print("iteration {:4d}: consensus error {:.3e}".format(k, errors[k]))
    reached = next((k for k, e in enumerate(errors) if e < 1e-12), len(errors) - 1)
    if reached > 0:  # the rate until the error reaches round-off
        rate = (max(errors[reached], 1e-300) / errors[0]) ** (1.0 / reached)
        print("{}: error shrinks by a factor {:.3f} per iteration ({} iterations to {:.1e})"
              .format(label, rate, reached, errors[reached]))
    return label


def plot(args, errors, label):
    path = args.save_plot_file or "average_consensus_plot.png"
    plt = pyplot_or_none("plot", interactive=args.plot_interactive)
    if plt is None:
        return
    fig, ax = plt.subplots(figsize=(6, 4))
    ax.semilogy(range(len(errors)), [max(e, 1e-17) for e in errors], label=label)
    ax.set(xlabel="iteration", ylabel="max_i |x_i - mean| / initial spread",
           title="average consensus")
    ax.legend()
    fig.tight_layout()
    fig.savefig(path, dpi=100)
    print("plot written to {}".format(path))
    if args.plot_interactive:
        plt.show()


def main(argv=None):
    args = parse_args(argv)
    torch.set_num_threads(1)
    bf.init()
    topology, weighted = VIRTUAL_TOPOLOGIES[args.virtual_topology]
    bf.set_topology(topology(bf.size()), is_weighted=weighted)
    x = torch.randn(args.data_size, dtype=torch.float64,
                    generator=torch.Generator().manual_seed(args.seed * bf.rank()))
    mean = bf.allreduce(x, name="consensus.mean")  # what every rank should reach
    if args.asynchronous_mode:
        return asynchronous(args, x, mean)
    spread0 = max(bf.allreduce(torch.tensor([float((x - mean).norm())]), op="max",
                               name="consensus.spread").item(), 1e-300)
    errors = []

    def record(x):  # the worst rank's distance to the mean
        mine = torch.tensor([float((x - mean).norm() / spread0)])
        errors.append(bf.allreduce(mine, op="max", name="consensus.error").item())

    record(x)
    x = consensus(x, args.max_iters, dynamic_schedule(args), record)
    print_line("MSE at last iteration:  {!s}".format(torch.norm(x - mean) / torch.norm(mean)))
    bf.barrier()  # rank 0's summary after every rank's line
    if bf.rank() == 0:
        label = summarize(args, errors)
        if args.save_plot_file or args.plot_interactive:
            plot(args, errors, label)
    bf.shutdown()
    return errors


def asynchronous(args, x, mean):
    times, errors, estimate, conserved = push_sum(x, mean, args.max_iters, args.slow_rank,
                                                  args.slow_delay)
    print_line("push-sum: {} iterations in {:.3f} s, error {:.3e}, after the last collect "
               "{:.3e}".format(len(errors), times[-1] if times else 0.0,
                               errors[-1] if errors else 0.0,
                               float((estimate - mean).norm() / mean.norm())))
    curves = gather_curves(times, errors)
    if bf.rank() == 0:
        print("push-sum: sum of x / sum of p over the ranks: error {:.3e} (what push-sum "
              "conserves)".format(conserved))
    if bf.rank() == 0 and (args.save_plot_file or args.plot_interactive):
        plt = pyplot_or_none("plot", interactive=args.plot_interactive)
        if plt is not None:
            plot_curves(curves, args.save_plot_file or "average_consensus_plot.png", plt)
    bf.shutdown()
    return [max(c[1][-1] for c in curves)]


if __name__ == "__main__":
    main()
