"""Rounds of the scaling benchmark: the order its jobs run in, and the medians over rounds.

run_scaling.py --rounds N runs every job N times. A job is one flockrun on `hosts`
emulated hosts at one link rate, for one model and one compression, running the methods
one after the other. The rounds are interleaved, so that a slow spell of the shared
machine falls on one round of many jobs rather than on every round of one job:

    round 1 of every job (rates, then hosts, then models, then compressions, in the
    order given), then round 2 of every job, ... ; round k (1-based) runs the methods
    in the given order rotated left by k - 1, so that no method has the same place in
    its job every round (which stays cyclic: each method still follows the same one)

(schedule()). bench_scaling.py prints one record per method and job; run_scaling.py
adds the job's "rate" and "round". aggregate() then reduces the records of one cell
(rate, model, mode, compression, method, hosts, ranks) to one: the median over its
records of every timing (step, wait, apply, compute, ...) and of the per-record images/s
and wait share, with the per-record minimum and maximum of images/s and how many records
(rounds) there were. Every record of a cell counts as a round, whatever its "round" says,
so the records of several separate runs, concatenated, aggregate the same way; with one
record per cell, the aggregate's numbers are that record's.

No imports of the other benchmark modules: scaling_report.py and run_scaling.py use this.
"""

import statistics

# What identifies a cell: the records of one cell are its rounds.
CELL_KEYS = ("rate", "model", "mode", "compression", "method", "machines", "ranks")
# Per-record numbers whose median over the rounds the aggregate reports.
MEDIAN_KEYS = ("images_per_s", "wait_share", "step_s", "wait_s", "apply_s", "compute_s",
               "fwd_bwd_s", "step_call_s", "step_median_s")
# Per-record lists and tags that do not carry over to the aggregate.
DROPPED_KEYS = ("round", "step_times", "wait_times")


def rotate(methods, index):
    """`methods` rotated left by `index` (modulo their number), as a new list."""
    methods = list(methods)
    if not methods:
        return methods
    index %= len(methods)
    return methods[index:] + methods[:index]


def schedule(rounds, rates, hosts, models, compressions, methods):
    """The jobs in the order they run: dicts {round, rate, hosts, model, compression,
    methods}, round 1 of every job first; round k's methods rotated left by k - 1."""
    return [{"round": k, "rate": rate, "hosts": count, "model": model,
             "compression": compression, "methods": rotate(methods, k - 1)}
            for k in range(1, rounds + 1) for rate in rates for count in hosts
            for model in models for compression in compressions]


def cell(record):
    """The key of a record's cell (None for a key the record lacks)."""
    return tuple(record.get(key) for key in CELL_KEYS)


def aggregate(records):
    """One record per cell, in the order the cells first appear in `records`: see the
    module's docstring. `records` need "images_per_s" and "wait_share" already."""
    groups = {}
    for record in records:
        groups.setdefault(cell(record), []).append(record)
    return [median_record(group) for group in groups.values()]


def median_record(rounds):
    """The aggregate of one cell's records: medians, images/s min and max, rounds."""
    out = {k: v for k, v in rounds[0].items() if k not in DROPPED_KEYS}
    for key in MEDIAN_KEYS:
        values = [r[key] for r in rounds if r.get(key) is not None]
        if values:
            out[key] = statistics.median(values)
    throughputs = [r["images_per_s"] for r in rounds]
    out.update(rounds=len(rounds), images_per_s_min=min(throughputs),
               images_per_s_max=max(throughputs))
    return out
