"""Spectral gap and consensus of ExponentialGraph(n) at 10^3..10^6 nodes: flock against
numpy's dense eigvals and scipy's sparse eigs on the same matrices, in one run.

    python benchmarks/bench_topology_scale.py [--sizes 1000 10000 100000 1000000]
        [--dense-up-to 4096] [--sparse-up-to 1000000] [--out-dir out/topology]

Every measurement runs in a process of its own, which reports its wall time and its
peak resident memory (ru_maxrss) beside the memory it had before the measured work
(the imports): "MB" is the difference. Rows:

- flock auto: ``spectral_gap(ExponentialGraph(n))`` (circulant: exact, O(n d));
- flock sparse: the same with ``method="sparse"`` (Spectra's Arnoldi solver), the path
  a non-circulant graph of that size takes;
- flock consensus: ``run_consensus(ExponentialGraph(n), eps=1e-6)``;
- numpy dense: ``np.linalg.eigvals`` of the dense W (O(n^3); only up to --dense-up-to);
- scipy sparse: ``scipy.sparse.linalg.eigs(W, k=2, which="LM")``, the second modulus.

Each |lambda_2| is compared with the exact one: the second largest modulus of numpy's
FFT of W's first row (W is circulant).
"""

import argparse
import json
import os
import resource
import subprocess
import sys
import time

JOBS = ("flock-build", "flock-auto", "flock-sparse", "flock-consensus", "numpy-dense",
        "scipy-sparse")


def offsets(n):
    """ExponentialGraph(n)'s distances: 0 (self) and every power of 2 below n."""
    found, d = [0], 1
    while d < n:
        found.append(d)
        d *= 2
    return found


def exact_lambda2(n):
    import numpy as np
    row = np.zeros(n)
    row[offsets(n)] = 1.0 / len(offsets(n))
    moduli = np.sort(np.abs(np.fft.fft(row)))[::-1]
    return float(moduli[1])


def scipy_matrix(n):
    """W of ExponentialGraph(n) as a scipy CSR matrix: W[i][(i + d) mod n] = 1/(deg + 1)."""
    import numpy as np
    import scipy.sparse as sp
    ds = offsets(n)
    rows = np.repeat(np.arange(n), len(ds))
    cols = (rows + np.tile(ds, n)) % n
    return sp.csr_matrix((np.full(len(rows), 1.0 / len(ds)), (rows, cols)), shape=(n, n))


def measure(job, n):
    """Run in a child: {seconds, lambda2 or iterations, base MB, peak MB}."""
    if job.startswith("flock"):
        import flock.topology as tu
    else:
        import numpy as np
    base = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    began = time.perf_counter()
    result = {}
    if job == "flock-build":
        tu.ExponentialGraph(n)
    elif job in ("flock-auto", "flock-sparse"):
        graph = tu.ExponentialGraph(n)
        result["build_s"] = time.perf_counter() - began
        began = time.perf_counter()
        method = "auto" if job == "flock-auto" else "sparse"
        result["lambda2"] = tu.second_largest_eigenvalue_modulus(graph, method)
    elif job == "flock-consensus":
        graph = tu.ExponentialGraph(n)
        result["build_s"] = time.perf_counter() - began
        began = time.perf_counter()
        run = tu.run_consensus(graph, eps=1e-6, max_iterations=10000)
        result["iterations"], result["converged"] = run.iterations, bool(run.converged)
        result["predicted"] = tu.predicted_consensus_iterations(graph, 1e-6)
    elif job == "numpy-dense":
        w = scipy_matrix(n).toarray()
        result["build_s"] = time.perf_counter() - began
        began = time.perf_counter()
        moduli = np.sort(np.abs(np.linalg.eigvals(w)))[::-1]
        result["lambda2"] = float(moduli[1])
    elif job == "scipy-sparse":
        import scipy.sparse.linalg as sla
        w = scipy_matrix(n)
        result["build_s"] = time.perf_counter() - began
        began = time.perf_counter()
        values = sla.eigs(w, k=2, which="LM", return_eigenvectors=False)
        result["lambda2"] = float(np.sort(np.abs(values))[0])
    result["seconds"] = time.perf_counter() - began
    result["base_mb"] = base
    result["peak_mb"] = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    return result


def run_child(job, n, timeout):
    command = [sys.executable, __file__, "--child", job, str(n)]
    try:
        done = subprocess.run(command, capture_output=True, text=True, timeout=timeout,
                              check=False)
    except subprocess.TimeoutExpired:
        return {"error": f"timeout after {timeout} s"}
    if done.returncode != 0:
        return {"error": (done.stderr.strip().splitlines() or ["exit %d" % done.returncode])[-1]}
    return json.loads(done.stdout.strip().splitlines()[-1])


def wanted(job, n, args):
    if job == "numpy-dense":
        return n <= args.dense_up_to
    if job == "flock-sparse":
        return n <= args.sparse_up_to
    return True


def print_table(rows):
    print("| n | what | seconds | build s | MB (peak − imports) | \\|λ₂\\| | error vs FFT | "
          "iterations (predicted) |")
    print("| ---: | --- | ---: | ---: | ---: | ---: | ---: | --- |")
    for r in rows:
        if "error" in r:
            print(f"| {r['n']} | {r['job']} | – | – | – | – | – | {r['error']} |")
            continue
        lam = f"{r['lambda2']:.12f}" if "lambda2" in r else "–"
        err = f"{abs(r['lambda2'] - r['exact']):.1e}" if "lambda2" in r else "–"
        its = f"{r['iterations']} ({r['predicted']})" if "iterations" in r else "–"
        print(f"| {r['n']} | {r['job']} | {r['seconds']:.3f} | {r.get('build_s', 0.0):.3f} | "
              f"{r['peak_mb'] - r['base_mb']:.0f} | {lam} | {err} | {its} |")


def main():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--sizes", nargs="+", type=int, default=[1000, 10000, 100000, 1000000])
    p.add_argument("--dense-up-to", type=int, default=4096)
    p.add_argument("--sparse-up-to", type=int, default=1000000)
    p.add_argument("--timeout", type=float, default=900)
    p.add_argument("--out-dir", default="out/topology")
    p.add_argument("--child", nargs=2, metavar=("JOB", "N"), help=argparse.SUPPRESS)
    args = p.parse_args()
    if args.child:
        print(json.dumps(measure(args.child[0], int(args.child[1]))))
        return
    rows = []
    for n in args.sizes:
        exact = exact_lambda2(n)
        for job in JOBS:
            if not wanted(job, n, args):
                continue
            row = dict(run_child(job, n, args.timeout), n=n, job=job, exact=exact)
            rows.append(row)
            print(f"  n={n} {job}: {row.get('seconds', row.get('error'))}", flush=True)
    os.makedirs(args.out_dir, exist_ok=True)
    path = os.path.join(args.out_dir, "bench_topology_scale.json")
    with open(path, "w", encoding="utf-8") as handle:
        json.dump({"date": time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime()), "rows": rows},
                  handle, indent=1)
    print()
    print_table(rows)
    print(f"\nraw: {path}")


if __name__ == "__main__":
    main()
