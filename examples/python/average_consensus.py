"""Average consensus: how fast repeated neighbor averaging reaches the global mean.

    flockrun -np 8 python examples/python/average_consensus.py --topology exponential --plot c.png

Every rank starts from its own random vector x_i; each iteration replaces it by
neighbor_allreduce(x_i) (static topology, or --dynamic: one peer per step). The
consensus error max_i |x_i - mean|/|mean_0 spread| shrinks geometrically at a
rate set by the topology's spectral gap; rank 0 prints it and, with --plot,
draws it per iteration.
"""

import argparse

import torch

import flock.torch as bf
from flock import topology as tu

from topology_choices import TOPOLOGIES  # examples/python, beside this script



def parse_args(argv=None):
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--topology", choices=sorted(TOPOLOGIES), default="exponential")
    p.add_argument("--dynamic", action="store_true", help="one-peer dynamic topology")
    p.add_argument("--iterations", type=int, default=50)
    p.add_argument("--dim", type=int, default=1000, help="length of each rank's vector")
    p.add_argument("--plot", metavar="PNG")
    return p.parse_args(argv)


def consensus_error(x, mean, spread0):
    """max over ranks of |x_i - mean| relative to the initial spread."""
    mine = torch.tensor([float((x - mean).norm() / spread0)])
    return bf.allreduce(mine, op="max", name="consensus.error").item()


def main(argv=None):
    args = parse_args(argv)
    torch.set_num_threads(1)
    bf.init()
    rank = bf.rank()
    bf.set_topology(TOPOLOGIES[args.topology](bf.size()))
    x = torch.randn(args.dim, dtype=torch.float64, generator=torch.Generator().manual_seed(rank))
    mean = bf.allreduce(x, name="consensus.mean")  # what every rank should reach
    spread0 = max(bf.allreduce(torch.tensor([float((x - mean).norm())]), op="max",
                               name="consensus.spread").item(), 1e-300)
    schedule = tu.GetDynamicOnePeerSendRecvRanks(bf.load_topology(), rank) if args.dynamic else None
    errors = [consensus_error(x, mean, spread0)]
    for _ in range(args.iterations):
        if schedule is None:
            x = bf.neighbor_allreduce(x, name="consensus.x")
        else:
            send, recv = next(schedule)
            w = 1.0 / (len(recv) + 1)
            x = bf.neighbor_allreduce(x, self_weight=w, src_weights={r: w for r in recv},
                                      dst_weights=send, name="consensus.x")
        errors.append(consensus_error(x, mean, spread0))
    if rank == 0:
        label = "{}{} on {} ranks".format(args.topology, " (dynamic)" if args.dynamic else "",
                                          bf.size())
        for k in sorted({0, 1, 2, 5, 10, 20, 50, 100, args.iterations} & set(range(len(errors)))):
            print("iteration {:4d}: consensus error {:.3e}".format(k, errors[k]))
        # The geometric rate until the error reaches round-off.
        reached = next((k for k, e in enumerate(errors) if e < 1e-12), len(errors) - 1)
        if reached > 0:
            rate = (max(errors[reached], 1e-300) / errors[0]) ** (1.0 / reached)
            print("{}: error shrinks by a factor {:.3f} per iteration ({} iterations to {:.1e})"
                  .format(label, rate, reached, errors[reached]))
        if args.plot:
            import matplotlib
            matplotlib.use("Agg")
            import matplotlib.pyplot as plt
            fig, ax = plt.subplots(figsize=(6, 4))
            ax.semilogy(range(len(errors)), [max(e, 1e-17) for e in errors], label=label)
            ax.set(xlabel="iteration", ylabel="max_i |x_i - mean| / initial spread",
                   title="average consensus")
            ax.legend()
            fig.tight_layout()
            fig.savefig(args.plot, dpi=100)
            print("plot written to {}".format(args.plot))
    bf.shutdown()
    return errors


if __name__ == "__main__":
    main()
