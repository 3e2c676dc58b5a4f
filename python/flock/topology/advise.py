"""Which topology for this cluster and model: ``flock.topology.advise(...)`` and

    python -m flock.topology.advise --size 64 --local-size 8 --inter 10gbit \\
        --intra 100gbit --model resnet50 [--compute-ms 180] [--fp16] [--eps 1e-2]

For each method (allreduce, the static exponential graph, the one-peer dynamic
schedule, hierarchical static and one-peer, the ring) it predicts the time per step
(the bytes each link carries, overlapped with compute) and the consensus rate (the
spectral gap per step), and recommends the method that brings the ranks within
``eps`` of their average in the least wall time. The model and its assumptions:
flock/topology/_advisor.py and docs/topology.md ("Choosing a topology").
"""

import argparse
import json
import re
import sys
import types
from dataclasses import asdict, dataclass
from typing import Dict, List, Optional

from flock.errors import FlockInvalidArgumentError
from flock.topology import _advisor as model

# Parameters of a few models (float32 gradients: 4 bytes each) and a rough compute
# time per step (forward and backward, batch 64, one V100-class GPU): assumptions to
# override with --compute-ms.
MODELS = {
    "resnet50": {"parameters": 25_557_032, "compute_ms": 190.0},
    "mobilenet_v2": {"parameters": 3_504_872, "compute_ms": 70.0},
    "vgg16": {"parameters": 138_357_544, "compute_ms": 350.0},
    "bert_base": {"parameters": 110_000_000, "compute_ms": 300.0},
}
_UNITS = {"bit": 1 / 8, "kbit": 1e3 / 8, "mbit": 1e6 / 8, "gbit": 1e9 / 8, "tbit": 1e12 / 8,
          "b/s": 1, "kb/s": 1e3, "mb/s": 1e6, "gb/s": 1e9, "tb/s": 1e12, "": 1}


@dataclass(frozen=True)
class Advice:
    """Every method's prediction (soonest to eps first) and the recommendation."""
    candidates: List[model.Candidate]
    choice: str  # reaches eps in the least wall time
    fastest_step: str  # the least time per step (the most steps per second)

    def table(self) -> str:
        lines = ["| method | step (ms) | exchange (ms) | MB per machine link | rate per step "
                 "| steps to eps | time to eps (ms) |",
                 "| --- | ---: | ---: | ---: | ---: | ---: | ---: |"]
        for c in self.candidates:
            steps = "never" if c.steps is None else str(c.steps)
            reach = "never" if c.time_to_eps_s is None else f"{c.time_to_eps_s * 1e3:.1f}"
            lines.append(f"| {c.method} | {c.step_s * 1e3:.1f} | {c.communication_s * 1e3:.1f} | "
                         f"{c.link_bytes / 1e6:.1f} | {c.rate:.4f} | {steps} | {reach} |")
        return "\n".join(lines)


def parse_rate(text) -> float:
    """'10gbit', '1.25GB/s', '100mbit', or bytes/s as a number."""
    if isinstance(text, (int, float)):
        return float(text)
    found = re.fullmatch(r"\s*([0-9.]+(?:e[-+]?\d+)?)\s*([a-z/]*)\s*", str(text).lower())
    if not found or found.group(2) not in _UNITS:
        raise FlockInvalidArgumentError(
            f"advise: cannot read the rate {text!r}: give e.g. 10gbit, 1.25GB/s or bytes/s")
    return float(found.group(1)) * _UNITS[found.group(2)]


def predict(method: str, cluster: model.Cluster, nbytes: float, compute_s: float, eps: float,
            overlap: float, latency_s: float) -> model.Candidate:
    traffic, period_lambda2, period = model.METHODS[method](cluster, nbytes)
    exchange = model.exchange_seconds(cluster, traffic, latency_s)
    step = model.step_seconds(compute_s, exchange, overlap)
    periods = model.steps_to(period_lambda2, eps)
    steps = None if periods is None else periods * period
    rate = 0.0 if period_lambda2 < 1e-12 else period_lambda2 ** (1.0 / period)  # exact: 0
    return model.Candidate(method, step, exchange, traffic.link_bytes, rate, steps,
                           None if steps is None else steps * step)


def advise(size, local_size, intra, inter, bytes_per_step, compute_s, eps=1e-2,
           overlap=1 / 3, latency_s=20e-6, methods: Optional[List[str]] = None) -> Advice:
    """Predict every method on ``size`` ranks, ``local_size`` a machine, links of
    ``intra``/``inter`` (bytes/s, or text like '10gbit'), exchanging ``bytes_per_step``
    after ``compute_s`` seconds of compute per step; recommend the one that reaches
    a consensus distance ``eps`` (relative to the start) soonest."""
    rates = {"intra": parse_rate(intra), "inter": parse_rate(inter)}
    model.check_arguments(size, local_size, rates, bytes_per_step, compute_s, eps, overlap)
    cluster = model.Cluster(size, local_size, rates["intra"], rates["inter"])
    chosen = methods or list(model.METHODS)
    unknown = sorted(set(chosen) - set(model.METHODS))
    if unknown:
        raise FlockInvalidArgumentError(f"advise: unknown methods {unknown}; choose from "
                                        f"{sorted(model.METHODS)}")
    found = [predict(m, cluster, float(bytes_per_step), float(compute_s), eps, overlap,
                     latency_s) for m in chosen]
    found.sort(key=lambda c: (c.time_to_eps_s is None, c.time_to_eps_s or 0.0, c.step_s))
    fastest = min(found, key=lambda c: c.step_s).method
    return Advice(found, found[0].method, fastest)


class _CallableModule(types.ModuleType):
    """``flock.topology.advise`` is this module once it is imported by name; calling it
    is calling advise(), so the function's name works either way."""

    def __call__(self, *args, **kwargs):
        return advise(*args, **kwargs)


sys.modules[__name__].__class__ = _CallableModule


def parse_args(argv=None):
    p = argparse.ArgumentParser(prog="python -m flock.topology.advise",
                                description=__doc__.splitlines()[0])
    p.add_argument("--size", type=int, required=True, help="ranks in the job")
    p.add_argument("--local-size", type=int, required=True, help="ranks per machine")
    p.add_argument("--inter", required=True, help="a machine's network link, e.g. 10gbit")
    p.add_argument("--intra", required=True, help="between ranks of a machine, e.g. 100gbit")
    p.add_argument("--model", choices=sorted(MODELS), help="gradient size and compute preset")
    p.add_argument("--bytes", type=float, help="bytes exchanged per step (instead of --model)")
    p.add_argument("--compute-ms", type=float, help="compute per step (default: the preset's)")
    p.add_argument("--fp16", action="store_true", help="gradients exchanged in 16 bits")
    p.add_argument("--eps", type=float, default=1e-2, help="consensus distance to reach")
    p.add_argument("--overlap", type=float, default=1 / 3,
                   help="share of compute that hides communication")
    p.add_argument("--latency-us", type=float, default=20.0, help="cost of one message")
    p.add_argument("--json", action="store_true", help="print JSON instead of a table")
    return p.parse_args(argv)


def _inputs(args) -> Dict[str, float]:
    preset = MODELS.get(args.model) if args.model else None
    nbytes = args.bytes if args.bytes is not None else (preset["parameters"] * 4 if preset else None)
    compute_ms = args.compute_ms if args.compute_ms is not None else \
        (preset["compute_ms"] if preset else None)
    if nbytes is None or compute_ms is None:
        raise FlockInvalidArgumentError("advise: give --model, or --bytes and --compute-ms")
    return {"bytes_per_step": nbytes / 2 if args.fp16 else nbytes, "compute_s": compute_ms / 1e3}


def main(argv=None) -> int:
    args = parse_args(argv)
    try:
        inputs = _inputs(args)
        advice = advise(args.size, args.local_size, args.intra, args.inter, eps=args.eps,
                        overlap=args.overlap, latency_s=args.latency_us / 1e6, **inputs)
    except FlockInvalidArgumentError as error:
        print(f"flock.topology.advise: {error}", file=sys.stderr)
        return 2
    if args.json:
        print(json.dumps({"choice": advice.choice, "fastest_step": advice.fastest_step,
                          "inputs": inputs, "candidates": [asdict(c) for c in advice.candidates]},
                         indent=1))
        return 0
    print(f"{args.size} ranks, {args.local_size} a machine; {inputs['bytes_per_step'] / 1e6:.1f} MB "
          f"and {inputs['compute_s'] * 1e3:.0f} ms of compute a step; consensus to {args.eps:g}\n")
    print(advice.table())
    print(f"\nrecommended: {advice.choice} (reaches {args.eps:g} soonest); the fastest step: "
          f"{advice.fastest_step}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
