"""The scaling benchmark's report: from bench_scaling.py's records to Markdown tables, PNG
plots and the JSON summary (run_scaling.py drives it).

Per model, link rate, mode and compression, every method side by side (torch DDP first,
the method users would pick otherwise) in the format of Horovod's and ElasticDL's
benchmark tables: per worker count, images/s, speedup, efficiency, communication share
and the time breakdown of a step:

    fwd+bwd   the compute the layers asked for (the sleeps standing in for the GPU)
    wait      step time - fwd+bwd - apply: what communication added to the step, wherever
              it waited (after backward, inside DDP's backward, in ATC's forward
              pre-hooks when it overlaps the next forward pass)
    apply     the optimizer's update (SGD) of the parameters

With several rounds (run_scaling.py --rounds N, or several records of one cell) every
number is the median over the rounds (scaling_rounds.py): images/s and wait share are
computed per round (images/s = batch x ranks / step s, wait share = wait s / step s),
then their medians taken; the breakdown's columns are each their own median, so they
need not add up exactly. The tables then also show the lowest and highest images/s of
the rounds, "median (min-max)", under a line saying how many rounds.

Speedup = images/s / B and efficiency = speedup / hosts, where images/s is the cell's
median over its rounds and B, the 1-host throughput, is one number per model, rate, mode
and compression: the median over the methods of their 1-host images/s (each the median
over its rounds; on one host they all exchange within a machine, so a per-method
baseline would carry that noise into every efficiency). So efficiency = median images/s
at N hosts / (N x B), which is also the median of the rounds' efficiencies against B;
the JSON summary's efficiency_min and _max are the rounds' lowest and highest against B.
"""

import json
import os
import statistics

import scaling_rounds

METHODS = ("ddp", "allreduce", "neighbor_static", "neighbor_one_peer", "hierarchical",
           "hierarchical_one_peer")
SUMMARY_KEYS = ("model", "rate", "method", "hosts", "images_per_s", "efficiency",
                "wait_share")
# Added to every summary record when some cell has several rounds.
ROUND_KEYS = ("rounds", "images_per_s_min", "images_per_s_max", "efficiency_min",
              "efficiency_max")
COMPRESSIONS = ("none", "fp16")


def summarize(records, batch):
    """Per-round images/s and wait share on each raw record (in place); returns one record
    per cell, the medians over its rounds (scaling_rounds.aggregate), with speedup and
    efficiency against the 1-host median B (see the module's docstring)."""
    for r in records:
        r.setdefault("mode", "hand")  # records saved before the hooks mode existed
        r.setdefault("apply_s", 0.0)
        r.setdefault("compression", "none")  # and before --compression
        r["images_per_s"] = batch * r["ranks"] / r["step_s"]
        r["wait_share"] = r["wait_s"] / r["step_s"]
    rows = scaling_rounds.aggregate(records)
    base = one_host_throughput(rows)
    for r in rows:
        one, per = base.get(_case(r)), r["machines"]
        r["speedup"] = r["images_per_s"] / one if one else None
        r["efficiency"] = r["speedup"] / per if one else None
        r["efficiency_min"] = r["images_per_s_min"] / one / per if one else None
        r["efficiency_max"] = r["images_per_s_max"] / one / per if one else None
    return rows


def one_host_throughput(rows):
    """{case: B}: the median over the methods of the rows' 1-host images/s."""
    one_host = {}
    for r in rows:
        if r["machines"] == 1:
            one_host.setdefault(_case(r), []).append(r["images_per_s"])
    return {key: statistics.median(values) for key, values in one_host.items()}


def _case(r):
    return (r["rate"], r["model"], r["mode"], r.get("compression", "none"))


def cases(records, models, rates):
    """(rate, model, mode, compression) of the records, in the order of `rates` and
    `models`, then mode, then compression (none first)."""
    def place(value, order):
        return (order.index(value), "") if value in order else (len(order), value)

    return sorted({_case(r) for r in records},
                  key=lambda c: (place(c[0], rates), place(c[1], models), c[2],
                                 place(c[3], COMPRESSIONS)))


def _rows(records, case):
    return [r for r in records if _case(r) == case]


def _by_method(rows):
    """[(method, rows sorted by hosts)] in METHODS order."""
    return [(m, sorted((r for r in rows if r["method"] == m), key=lambda r: r["machines"]))
            for m in METHODS if any(r["method"] == m for r in rows)]


def _fmt(value, spec):
    return "-" if value is None else spec.format(value)


def _throughput(r):
    """images/s, and after several rounds their range: "320 (301-334)"."""
    if r.get("rounds", 1) < 2:
        return "{:.0f}".format(r["images_per_s"])
    return "{:.0f} ({:.0f}-{:.0f})".format(r["images_per_s"], r["images_per_s_min"],
                                          r["images_per_s_max"])


def heading(case, rows):
    rate, model, mode, compression = case
    overlap = "" if mode == "hand" else (", ATC overlapping the next forward"
                                         if rows[0].get("overlap") else ", ATC step() waits")
    if compression != "none":
        overlap += ", {} compression".format(compression)
    return "### {}, links {}, {} mode{} (compute {:.3f} s per step)".format(
        model, rate, mode, overlap, rows[0]["compute_s"])


def rounds_note(rows):
    """The line under the heading after several rounds, else []."""
    rounds = max(r.get("rounds", 1) for r in rows)
    if rounds < 2:
        return []
    fewer = min(r.get("rounds", 1) for r in rows)
    return ["Medians over {} rounds{}; images/s as median (lowest-highest round).".format(
        rounds, " ({} for some cells)".format(fewer) if fewer < rounds else ""), ""]


def side_by_side(rows):
    """Methods as rows, host counts as columns: images/s, then efficiency and wait share."""
    hosts = sorted({r["machines"] for r in rows})
    more = [h for h in hosts if h > 1]
    lines = ["| method | " + " | ".join("{} host{}".format(h, "s" * (h > 1)) for h in hosts) +
             " | efficiency {} | wait share {} |".format(
                 " / ".join(map(str, more)) or "-", " / ".join(map(str, hosts))),
             "| --- |" + " ---: |" * (len(hosts) + 2)]
    for method, mine in _by_method(rows):
        at = {r["machines"]: r for r in mine}
        cells = [_throughput(at[h]) if h in at else "-" for h in hosts]
        eff = " / ".join(_fmt(at[h]["efficiency"], "{:.0%}") if h in at else "-" for h in more)
        wait = " / ".join("{:.0%}".format(at[h]["wait_share"]) if h in at else "-"
                          for h in hosts)
        lines.append("| {} | {} | {} | {} |".format(method, " | ".join(cells), eff or "-", wait))
    return lines


def per_workers(rows):
    """The seeds' format: per worker count, each method's numbers and time breakdown."""
    lines = ["| workers (hosts x ranks) | method | images/s | speedup | efficiency "
             "| comm. share | fwd+bwd s | wait s | apply s | step s |",
             "| --- | --- |" + " ---: |" * 8]
    order = {m: i for i, m in enumerate(METHODS)}
    for r in sorted(rows, key=lambda r: (r["machines"], order.get(r["method"], 99))):
        lines.append("| {} ({} x {}) | {} | {} | {} | {} | {:.0%} | {:.3f} | {:.3f} "
                     "| {:.3f} | {:.3f} |".format(
                         r["ranks"], r["machines"], r["ranks"] // r["machines"], r["method"],
                         _throughput(r), _fmt(r["speedup"], "{:.2f}"),
                         _fmt(r["efficiency"], "{:.0%}"), r["wait_share"], r["compute_s"],
                         r["wait_s"], r["apply_s"], r["step_s"]))
    return lines


def table(records, case):
    """The Markdown of one (rate, model, mode): both tables under one heading."""
    rows = _rows(records, case)
    if not rows:
        return ""
    return "\n".join([heading(case, rows), ""] + rounds_note(rows) + side_by_side(rows) +
                     [""] + per_workers(rows)) + "\n"


def json_summary(rows):
    """The records the issue asks for: one per model, rate, method and host count (and
    compression), from summarize()'s rows. Their keys are SUMMARY_KEYS, and ROUND_KEYS
    too when some row has several rounds, and "compression" when some row compresses."""
    keys = SUMMARY_KEYS
    if any(r.get("rounds", 1) > 1 for r in rows):
        keys += ROUND_KEYS
    if any(r.get("compression", "none") != "none" for r in rows):
        keys += ("compression",)
    out = []
    for r in rows:
        item = dict(r, hosts=r["machines"])
        out.append({k: item.get(k) for k in keys})
    return out


def write_summary(records, path):
    with open(path, "w") as out:
        json.dump(json_summary(records), out, indent=1)
        out.write("\n")


def plot(records, case, out_dir):
    """Throughput (with each round's range after several rounds), efficiency and the
    breakdown at the most hosts, as one PNG: scaling-MODEL-RATE-MODE[-COMPRESSION].png."""
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    rows = _rows(records, case)
    if not rows:
        return None
    rate, model, mode, compression = case
    if compression != "none":
        mode += ", " + compression
    fig, (left, middle, right) = plt.subplots(1, 3, figsize=(16, 4.4))
    hosts = sorted({r["machines"] for r in rows})
    _plot_methods(left, middle, rows)
    ones = [r["images_per_s"] for r in rows if r["machines"] == 1]
    if ones:
        base = statistics.median(ones)  # the baseline of the efficiencies
        left.plot(hosts, [base * h for h in hosts], "k:", label="linear scaling")
    left.set(xlabel="hosts", ylabel="images/s", xticks=hosts,
             title="{}: throughput, links {} ({})".format(model, rate, mode))
    middle.set(xlabel="hosts", ylabel="efficiency %", xticks=hosts, ylim=(0, 110),
               title="{}: scaling efficiency".format(model))
    middle.axhline(100, color="k", linestyle=":", linewidth=0.8)
    left.legend(fontsize=7)
    middle.legend(fontsize=7)
    _breakdown(right, rows, max(hosts))
    fig.tight_layout()
    path = os.path.join(out_dir, "scaling-{}-{}-{}.png".format(
        model, rate, mode.replace(", ", "-")))
    fig.savefig(path, dpi=110)
    plt.close(fig)
    return path


def _plot_methods(left, middle, rows):
    """Per method: images/s against hosts (a bar from the lowest to the highest round
    after several rounds) on `left`, efficiency on `middle`."""
    for method, mine in _by_method(rows):
        style = "s--" if method == "ddp" else "o-"
        x = [r["machines"] for r in mine]
        line, = left.plot(x, [r["images_per_s"] for r in mine], style, label=method)
        if any(r.get("rounds", 1) > 1 for r in mine):
            left.vlines(x, [r["images_per_s_min"] for r in mine],
                        [r["images_per_s_max"] for r in mine], colors=line.get_color())
        middle.plot(x, [100 * (r["efficiency"] or 0) for r in mine], style, label=method)


def _breakdown(axes, rows, hosts):
    """Stacked bars of a step's fwd+bwd, wait and apply per method at `hosts` hosts."""
    mine = [(m, rs[-1]) for m, rs in _by_method([r for r in rows if r["machines"] == hosts])]
    names = [m for m, _ in mine]
    bottom = [0.0] * len(mine)
    for label, key in (("fwd+bwd (compute)", "compute_s"), ("wait", "wait_s"),
                       ("apply", "apply_s")):
        values = [max(0.0, r[key]) for _, r in mine]
        axes.bar(names, values, bottom=bottom, label=label)
        bottom = [b + v for b, v in zip(bottom, values)]
    axes.set(ylabel="seconds per step", title="time per step, {} hosts".format(hosts))
    axes.tick_params(axis="x", labelrotation=30, labelsize=7)
    axes.legend(fontsize=7)
