"""The scaling benchmark's report: from bench_scaling.py's records to Markdown tables, PNG
plots and the JSON summary (run_scaling.py drives it).

Per model, link rate and mode, every method side by side (torch DDP first, the method
users would pick otherwise) in the format of Horovod's and ElasticDL's benchmark tables:
per worker count, images/s, speedup, efficiency, communication share and the time
breakdown of a step:

    fwd+bwd   the compute the layers asked for (the sleeps standing in for the GPU)
    wait      step time - fwd+bwd - apply: what communication added to the step, wherever
              it waited (after backward, inside DDP's backward, in ATC's forward
              pre-hooks when it overlaps the next forward pass)
    apply     the optimizer's update (SGD) of the parameters

Speedup = images/s / images/s on 1 host, the median over the methods (on one host
they all exchange within a machine, so a per-method baseline would carry that noise into
every efficiency); efficiency = speedup / hosts; communication share = wait / step time.
"""

import json
import os
import statistics

METHODS = ("ddp", "allreduce", "neighbor_static", "neighbor_one_peer", "hierarchical",
           "hierarchical_one_peer")
SUMMARY_KEYS = ("model", "rate", "method", "hosts", "images_per_s", "efficiency",
                "wait_share")


def summarize(records, batch):
    """Add images/s, speedup, efficiency and wait share to each record (in place)."""
    one_host = {}
    for r in records:
        r.setdefault("mode", "hand")  # records saved before the hooks mode existed
        r.setdefault("apply_s", 0.0)
        r["images_per_s"] = batch * r["ranks"] / r["step_s"]
        r["wait_share"] = r["wait_s"] / r["step_s"]
        if r["machines"] == 1:
            one_host.setdefault(_case(r), []).append(r["images_per_s"])
    base = {key: statistics.median(values) for key, values in one_host.items()}
    for r in records:
        one = base.get(_case(r))
        r["speedup"] = r["images_per_s"] / one if one else None
        r["efficiency"] = r["speedup"] / r["machines"] if one else None
    return records


def _case(r):
    return (r["rate"], r["model"], r["mode"])


def cases(records, models, rates):
    """(rate, model, mode) of the records, in the order of `rates` and `models`."""
    def place(value, order):
        return (order.index(value), "") if value in order else (len(order), value)

    return sorted({_case(r) for r in records},
                  key=lambda c: (place(c[0], rates), place(c[1], models), c[2]))


def _rows(records, case):
    return [r for r in records if _case(r) == case]


def _by_method(rows):
    """[(method, rows sorted by hosts)] in METHODS order."""
    return [(m, sorted((r for r in rows if r["method"] == m), key=lambda r: r["machines"]))
            for m in METHODS if any(r["method"] == m for r in rows)]


def _fmt(value, spec):
    return "-" if value is None else spec.format(value)


def heading(case, rows):
    rate, model, mode = case
    overlap = "" if mode == "hand" else (", ATC overlapping the next forward"
                                         if rows[0].get("overlap") else ", ATC step() waits")
    return "### {}, links {}, {} mode{} (compute {:.3f} s per step)".format(
        model, rate, mode, overlap, rows[0]["compute_s"])


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
        cells = [_fmt(at[h]["images_per_s"], "{:.0f}") if h in at else "-" for h in hosts]
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
        lines.append("| {} ({} x {}) | {} | {:.0f} | {} | {} | {:.0%} | {:.3f} | {:.3f} "
                     "| {:.3f} | {:.3f} |".format(
                         r["ranks"], r["machines"], r["ranks"] // r["machines"], r["method"],
                         r["images_per_s"], _fmt(r["speedup"], "{:.2f}"),
                         _fmt(r["efficiency"], "{:.0%}"), r["wait_share"], r["compute_s"],
                         r["wait_s"], r["apply_s"], r["step_s"]))
    return lines


def table(records, case):
    """The Markdown of one (rate, model, mode): both tables under one heading."""
    rows = _rows(records, case)
    if not rows:
        return ""
    return "\n".join([heading(case, rows), ""] + side_by_side(rows) + [""] +
                     per_workers(rows)) + "\n"


def json_summary(records):
    """The records the issue asks for: one per model, rate, method and host count."""
    out = []
    for r in records:
        item = {k: r[k] for k in SUMMARY_KEYS if k in r}
        item["hosts"] = r["machines"]
        out.append({k: item.get(k) for k in SUMMARY_KEYS})
    return out


def write_summary(records, path):
    with open(path, "w") as out:
        json.dump(json_summary(records), out, indent=1)
        out.write("\n")


def plot(records, case, out_dir):
    """Throughput, efficiency and the breakdown at the most hosts, as one PNG."""
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    rows = _rows(records, case)
    if not rows:
        return None
    rate, model, mode = case
    fig, (left, middle, right) = plt.subplots(1, 3, figsize=(16, 4.4))
    hosts = sorted({r["machines"] for r in rows})
    for method, mine in _by_method(rows):
        style = "s--" if method == "ddp" else "o-"
        x = [r["machines"] for r in mine]
        left.plot(x, [r["images_per_s"] for r in mine], style, label=method)
        middle.plot(x, [100 * (r["efficiency"] or 0) for r in mine], style, label=method)
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
    path = os.path.join(out_dir, "scaling-{}-{}-{}.png".format(model, rate, mode))
    fig.savefig(path, dpi=110)
    plt.close(fig)
    return path


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
