#!/usr/bin/env python3
"""The figures of docs/calibration.md "Measured on an H200", from the committed data.

    python3 scripts/h200_figures.py [--stragglesim build/experiments/stragglesim] [--out DIR]
                                    [--data 2026-11-26] [--fit-launch-time]

1. Calibrates the shared-device model on the single-gpu transport's no-delay graph-launch runs
   of binary 9b92b19 (2026-11-26-direct/single-gpu-graph-d0-*.csv) with `stragglesim calibrate
   --topology-kind shared_device`, holding out the 5 ms runs and the delay sweep, with
   launch_time not fitted but fixed at the launch probe's measurement (the median per-operation
   time of 2026-11-29-probes/launch.txt's rows with 8 to 64 streams, both patterns: 0.188 us;
   --fit-launch-time fits it with the rest, as the files shipped before did), and writes
   DIR/h200_single_gpu.yaml (the shipped configs/topologies/h200_single_gpu.yaml is this file)
   and DIR/rows.csv (every compared row: measured, simulated, error). (Until 2026-11-30 the
   shipped file was fitted, launch_time included, on the morning binary's runs,
   2026-11-26/graph-d0-*.csv; --data 2026-11-26 --fit-launch-time refits that, while step 2's
   scaling and rank counts still use the shipped files.) With the direct transport's runs it
   does the same with copy_factor 0 (launch_time fitted there):
   DIR/direct/h200_direct.yaml (the shipped configs/topologies/h200_direct.yaml), DIR/direct/rows.csv.
2. Prints, as Markdown: the error summary, the table per algorithm and size (median measured,
   simulated, error; no delay and 5 ms), StragglAR's crossover delay over Ring at 256 MiB
   (measured and simulated, both by linear interpolation of Ring time / StragglAR time between
   the swept delays), and the scaling prediction (DIR/scaling: `stragglesim run` of
   configs/experiments/h200_single_gpu_scaling.yaml), and the direct transport's error summary.
3. With matplotlib: DIR/h200_ALGO.png per algorithm: the measured median per size with the
   iterations' range as error bars and the simulated line, without and with the 5 ms delay.

Compared quantity: time_s when no rank is delayed, after_last_arrival_s with the 5 ms delay.
Exits 1 when a stragglesim command fails or DIR exists and is not empty.
"""
import argparse
import csv
import os
import statistics
import subprocess
import sys
from collections import defaultdict

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
DATA_DIRECT = os.path.join(ROOT, "data", "measured", "h200", "2026-11-26-direct")
# The single-gpu fit's runs: binary 9b92b19's, named single-gpu-graph-d0-ALGO.csv etc.
DATA, PREFIX = DATA_DIRECT, "single-gpu-"
# --data 2026-11-26: the morning binary's (0eb3d26) runs, named graph-d0-ALGO.csv etc.
OLD_DATA = os.path.join(ROOT, "data", "measured", "h200", "2026-11-26")
# The launch probe's reading on one H200: what one operation costs the device to start.
LAUNCH_PROBE = os.path.join(ROOT, "data", "measured", "h200", "2026-11-29-probes", "launch.txt")
ALGOS = ["ring", "rhd", "direct", "tree", "dbtree", "straggler_tree", "stragglar",
         "halving_doubling", "direct_rs_ag", "hierarchical", "stragglar_hier"]


def size_text(b):
    for unit, f in (("GiB", 1 << 30), ("MiB", 1 << 20), ("KiB", 1 << 10)):
        if b >= f:
            return "%g %s" % (b / f, unit)
    return "%d B" % b


def time_text(s):
    return "%.3g ms" % (s * 1e3) if s >= 1e-3 else "%.3g us" % (s * 1e6)


def run(cmd):
    print("$ " + " ".join(cmd), file=sys.stderr)
    r = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    sys.stderr.write(r.stdout)
    if r.returncode != 0:
        sys.exit(1)
    return r.stdout


def probe_launch_time():
    """launch_time in us from the launch probe: the median op_us of its rows with 8 to 64 streams
    ("ring" and "free"; below 8 streams an operation's own latency is not hidden and the figure
    is not the shared launch cost the model's launch_time is)."""
    ops = []
    with open(LAUNCH_PROBE) as f:
        header = None
        for line in f:
            if line.startswith("#") or not line.strip():
                continue
            cells = line.split()
            if header is None:
                header = cells
                continue
            r = dict(zip(header, cells))
            if r["pattern"] in ("ring", "free") and int(r["streams"]) >= 8:
                ops.append(float(r["op_us"]))
    if not ops:
        print("%s: no ring or free rows with 8 or more streams" % LAUNCH_PROBE, file=sys.stderr)
        sys.exit(1)
    return statistics.median(ops)


def calibrate(binary, out, fit_launch_time=False):
    files = sorted(f for f in os.listdir(DATA) if f.endswith(".csv") and f.startswith(
        tuple(PREFIX + k for k in ("graph-d0-", "graph-d5ms-", "sweep-"))))
    first = [f for f in files if f.startswith(PREFIX + "graph-d0-")]
    rest = [f for f in files if f not in first]
    cmd = [binary, "calibrate"] + [os.path.join(DATA, f) for f in first + rest] + [
        "--topology-kind", "shared_device", "--holdout", "file!=%sgraph-d0-*" % PREFIX,
        "--algorithm-option", "hierarchical:gpus_per_node=4",
        "--algorithm-option", "stragglar_hier:gpus_per_node=4",
        "--rows-output", os.path.join(out, "rows.csv"),
        "-o", os.path.join(out, "h200_single_gpu.yaml")]
    if not fit_launch_time:
        cmd += ["--fix", "launch_time=%gus" % probe_launch_time()]
    return run(cmd)


def calibrate_direct(binary, out):
    """The direct transport (DATA_DIRECT): copy_factor 0, fitted on direct-graph-d0-*.csv,
    the 5 ms runs and the sweep held out; writes DIR/direct/h200_direct.yaml (the shipped
    configs/topologies/h200_direct.yaml) and DIR/direct/rows.csv."""
    dest = os.path.join(out, "direct")
    os.makedirs(dest)
    files = sorted(f for f in os.listdir(DATA_DIRECT) if f.endswith(".csv") and f.startswith(
        ("direct-graph-d0-", "direct-graph-d5ms-", "direct-sweep-")))
    first = [f for f in files if f.startswith("direct-graph-d0-")]
    rest = [f for f in files if f not in first]
    run([binary, "calibrate"] + [os.path.join(DATA_DIRECT, f) for f in first + rest] + [
        "--topology-kind", "shared_device", "--fix", "copy_factor=0",
        "--holdout", "file!=direct-graph-d0-*",
        "--algorithm-option", "hierarchical:gpus_per_node=4",
        "--algorithm-option", "stragglar_hier:gpus_per_node=4",
        "--rows-output", os.path.join(dest, "rows.csv"),
        "-o", os.path.join(dest, "h200_direct.yaml")])
    return read_rows(dest)


def read_rows(out):
    with open(os.path.join(out, "rows.csv"), newline="") as f:
        return list(csv.DictReader(f))


def group(rows, prefix):
    """(algorithm, bytes) -> (measured list, median simulated) for the rows of files with
    `prefix`. Delayed rows are simulated each with its own measured delay_s."""
    g = defaultdict(lambda: [[], []])
    for r in rows:
        if not r["file"].startswith(PREFIX + prefix):
            continue
        k = (r["algorithm"], int(r["bytes"]))
        g[k][0].append(float(r["measured_s"]))
        g[k][1].append(float(r["simulated_s"]))
    return {k: (m, statistics.median(s)) for k, (m, s) in g.items()}


def table(rows):
    d0, d5 = group(rows, "graph-d0-"), group(rows, "graph-d5ms-")
    print("| algorithm | size | measured | simulated | error | measured, 5 ms | simulated | error |")
    print("|---|---|---|---|---|---|---|---|")
    for a in ALGOS:
        for b in sorted({k[1] for k in d0 if k[0] == a}):
            cells = []
            for g in (d0, d5):
                if (a, b) not in g:
                    cells += ["-", "-", "-"]
                    continue
                m = statistics.median(g[(a, b)][0])
                s = g[(a, b)][1]
                cells += [time_text(m), time_text(s), "%+.1f%%" % (100 * (s - m) / m)]
            print("| %s | %s | %s |" % (a, size_text(b), " | ".join(cells)))


def crossover(points):
    """points: sorted (delay, ring / stragglar); the first delay where the ratio reaches 1."""
    for (d0, r0), (d1, r1) in zip(points, points[1:]):
        if r0 < 1 <= r1:
            return d0 + (1 - r0) * (d1 - d0) / (r1 - r0)
    return None


def sweep_crossover(rows):
    """Per sweep file (one nominal delay): median delay_s, median measured and simulated time."""
    med, sim, delay = defaultdict(list), defaultdict(list), defaultdict(list)
    for r in rows:
        if not r["file"].startswith(PREFIX + "sweep-") or int(r["bytes"]) != 256 << 20:
            continue
        nominal = r["file"][len(PREFIX):].split("-")[1]
        k = (r["algorithm"], nominal)
        med[k].append(float(r["measured_s"]))
        sim[k].append(float(r["simulated_s"]))
        delay[nominal].append(float(r["delay_s"]))
    at = {n: statistics.median(d) for n, d in delay.items()}
    nominal = sorted(n for n in at if ("ring", n) in med and ("stragglar", n) in med)
    nominal.sort(key=lambda n: at[n])
    meas = [(at[n], statistics.median(med[("ring", n)]) / statistics.median(med[("stragglar", n)]))
            for n in nominal]
    simu = [(at[n], statistics.median(sim[("ring", n)]) / statistics.median(sim[("stragglar", n)]))
            for n in nominal]
    print("\n| delay | Ring / StragglAR measured | simulated |")
    print("|---|---|---|")
    for (d, m), (_, s) in zip(meas, simu):
        print("| %s | %.2fx | %.2fx |" % (time_text(d) if d > 0 else "0", m, s))
    cm, cs = crossover(meas), crossover(simu)
    print("\nStragglAR's crossover over Ring at 256 MiB: measured %s, simulated %s"
          % (time_text(cm) if cm else "none", time_text(cs) if cs else "none"))


def summary(rows, labels=("all (graph d0, d5ms, sweep)", "fitted (graph-d0)",
                          "held out (graph-d5ms, sweep)")):
    def q(vals, p):
        vals = sorted(vals)
        if not vals:
            return float("nan")
        i = p * (len(vals) - 1)
        lo = int(i)
        hi = min(lo + 1, len(vals) - 1)
        return vals[lo] + (vals[hi] - vals[lo]) * (i - lo)
    print("| rows | count | median abs. error | p95 | max |")
    print("|---|---|---|---|---|")
    sets = [(labels[0], rows),
            (labels[1], [r for r in rows if r["held_out"] == "0"]),
            (labels[2], [r for r in rows if r["held_out"] == "1"])]
    for a in ALGOS:
        sets.append((a, [r for r in rows if r["algorithm"] == a]))
    for label, rs in sets:
        e = [abs(float(r["error"])) for r in rs]
        if e:
            print("| %s | %d | %.1f%% | %.1f%% | %.1f%% |"
                  % (label, len(e), 100 * q(e, 0.5), 100 * q(e, 0.95), 100 * max(e)))


def plots(rows, out):
    try:
        import matplotlib
        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        print("\n(no matplotlib: plots skipped; Debian: python3-matplotlib)", file=sys.stderr)
        return
    d0, d5 = group(rows, "graph-d0-"), group(rows, "graph-d5ms-")
    for a in ALGOS:
        fig, axes = plt.subplots(1, 2, figsize=(7, 2.8), sharey=False)
        for ax, g, title in ((axes[0], d0, "no delay (time_s)"),
                             (axes[1], d5, "5 ms straggler (after last arrival)")):
            sizes = sorted(b for (x, b) in g if x == a)
            if not sizes:
                continue
            med = [statistics.median(g[(a, b)][0]) * 1e3 for b in sizes]
            lo = [m - min(g[(a, b)][0]) * 1e3 for m, b in zip(med, sizes)]
            hi = [max(g[(a, b)][0]) * 1e3 - m for m, b in zip(med, sizes)]
            ax.errorbar(sizes, med, yerr=[lo, hi], fmt="o", ms=3, capsize=2, label="measured")
            ax.plot(sizes, [g[(a, b)][1] * 1e3 for b in sizes], "-", label="simulated")
            ax.set_xscale("log", base=2)
            ax.set_yscale("log")
            ax.set_xlabel("bytes per rank")
            ax.set_ylabel("ms")
            ax.set_title("%s, %s" % (a, title), fontsize=8)
            ax.legend(fontsize=7)
        fig.tight_layout()
        path = os.path.join(out, "h200_%s.png" % a)
        fig.savefig(path, dpi=150)
        plt.close(fig)
        print("wrote " + path, file=sys.stderr)


def scaling(binary, out):
    dest = os.path.join(out, "scaling")
    run([binary, "run", os.path.join(ROOT, "configs", "experiments", "h200_single_gpu_scaling.yaml"),
         "-o", dest, "--no-plots"])
    with open(os.path.join(dest, "results.csv"), newline="") as f:
        rows = list(csv.DictReader(f))
    t = {}
    for r in rows:
        k = (int(r["ranks"]), int(r["bytes"]), float(r["delay_s"]) > 0, r["algorithm"])
        t[k] = float(r["after_last_arrival_s"])
    algos = ["ring", "rhd", "stragglar", "direct"]
    print("\n| ranks | size | " + " | ".join(algos) + " | " +
          " | ".join(a + ", 2 ms" for a in algos) + " |")
    print("|---|---|" + "---|" * (2 * len(algos)))
    for n in sorted({k[0] for k in t}):
        for b in sorted({k[1] for k in t if k[0] == n}):
            cells = [time_text(t[(n, b, d, a)]) if (n, b, d, a) in t else "-"
                     for d in (False, True) for a in algos]
            print("| %d | %s | %s |" % (n, size_text(b), " | ".join(cells)))


def rank_check(binary, out):
    """The shipped 8-rank files against the runs at 4, 16, 32 and 64 ranks (DATA_DIRECT,
    TRANSPORT-ranksN-*.csv): every parameter fixed, nothing fitted (as
    H200Calibration.RankCountsTheFitNeverSaw)."""
    for transport, topology in (("single-gpu", "h200_single_gpu.yaml"), ("direct", "h200_direct.yaml")):
        files = sorted(os.path.join(DATA_DIRECT, f) for f in os.listdir(DATA_DIRECT)
                       if f.startswith(transport + "-ranks") and f.endswith(".csv"))
        fix = []
        with open(os.path.join(ROOT, "configs", "topologies", topology)) as f:
            for line in f:
                key, _, value = line.partition(":")
                if key in ("memory_bandwidth", "copy_latency", "apply_latency", "launch_time",
                           "operation_bandwidth", "copy_factor", "reduce_factor",
                           "apply_copy_factor", "unaligned_factor"):
                    fix += ["--fix", "%s=%s" % (key, value.strip())]
        rows_csv = os.path.join(out, "ranks-%s.csv" % transport)
        run([binary, "calibrate"] + files + ["--topology-kind", "shared_device", "--holdout",
                                             "delay_s>0", "--rows-output", rows_csv] + fix)
        with open(rows_csv, newline="") as f:
            rows = list(csv.DictReader(f))
        print("\nRank counts the 8-rank fit never saw, --transport %s (%s, %d rows):\n"
              % (transport, topology, len(rows)))
        print("| ranks | median, no delay | median, 2 ms | p95 |")
        print("|---|---|---|---|")
        for n in sorted({int(r["ranks"]) for r in rows}):
            e = lambda d: [abs(float(r["error"])) for r in rows
                           if int(r["ranks"]) == n and (float(r["delay_s"]) > 0) == d]
            q = lambda v, p: sorted(v)[min(len(v) - 1, int(p * len(v)))]
            print("| %d | %.1f%% | %.1f%% | %.1f%% |"
                  % (n, 100 * statistics.median(e(False)), 100 * statistics.median(e(True)),
                     100 * q(e(False) + e(True), 0.95)))
        allv = lambda d: [abs(float(r["error"])) for r in rows if (float(r["delay_s"]) > 0) == d]
        print("| all | %.1f%% | %.1f%% | |" % (100 * statistics.median(allv(False)),
                                              100 * statistics.median(allv(True))))


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--stragglesim", default=os.path.join(ROOT, "build", "experiments", "stragglesim"))
    p.add_argument("--out", default="h200_figures")
    p.add_argument("--data", choices=["2026-11-26-direct", "2026-11-26"], default="2026-11-26-direct",
                   help="the single-gpu runs to fit: 9b92b19's (default; the shipped file) or the "
                   "morning binary's (the file shipped until 2026-11-30)")
    p.add_argument("--fit-launch-time", action="store_true",
                   help="fit launch_time with the other parameters instead of fixing it at the "
                   "launch probe's %s" % os.path.relpath(LAUNCH_PROBE, ROOT))
    a = p.parse_args()
    global DATA, PREFIX
    if a.data == "2026-11-26":
        DATA, PREFIX = OLD_DATA, ""
    if os.path.exists(a.out) and (not os.path.isdir(a.out) or os.listdir(a.out)):
        print("%s exists and is not an empty folder: choose another --out" % a.out, file=sys.stderr)
        sys.exit(1)
    os.makedirs(a.out, exist_ok=True)
    calibrate(a.stragglesim, a.out, a.fit_launch_time)
    rows = read_rows(a.out)
    summary(rows)
    print()
    table(rows)
    sweep_crossover(rows)
    scaling(a.stragglesim, a.out)
    rank_check(a.stragglesim, a.out)
    print("\nDirect transport (%s):\n" % os.path.relpath(DATA_DIRECT, ROOT))
    summary(calibrate_direct(a.stragglesim, a.out),
            ("all", "fitted (direct-graph-d0)", "held out (direct-graph-d5ms, direct-sweep)"))
    plots(rows, a.out)


if __name__ == "__main__":
    main()
