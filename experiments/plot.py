#!/usr/bin/env python3
"""Plots of a `stragglesim run` output folder.

    python3 experiments/plot.py results/default

Reads results.json (axes, baseline, metric, per-point summaries) and results.csv (one row per
run and iteration) and writes, into the same folder:

  speedup_vs_<axis>.png  for every swept axis with two or more values: speedup against the
                         baseline (baseline mean time / mean time, on the experiment's metric)
                         with one line per algorithm; one panel per combination of the other
                         axes (up to 12), else the geometric mean over them.
  time_cdf.png           the CDF of the per-iteration time (the metric) of every algorithm,
                         one panel per sweep point (up to 9 points, evenly spread).

Needs matplotlib (Debian: python3-matplotlib); exits with status 2 when it is missing.
"""
import csv
import json
import math
import os
import re
import sys

try:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
except ImportError:
    sys.stderr.write("plot.py: matplotlib is missing (apt-get install python3-matplotlib)\n")
    sys.exit(2)

UNIT_LABEL = {"s": "s", "B": "bytes", "B/s": "B/s", "": ""}


def safe(name):
    return re.sub(r"[^A-Za-z0-9]+", "_", name).strip("_")


def x_positions(axis):
    """Numeric x values (seconds shown in ms) or category positions, tick labels, log scale."""
    labels = axis["values"]
    numeric = axis["numeric"]
    if all(v is not None for v in numeric):
        xs = [v * 1e3 if axis["unit"] == "s" else v for v in numeric]
        positive = [x for x in xs if x > 0]
        log = len(positive) == len(xs) and max(xs) / min(xs) >= 16
        unit = "ms" if axis["unit"] == "s" else UNIT_LABEL.get(axis["unit"], axis["unit"])
        return xs, labels, log, unit
    return list(range(len(labels))), labels, False, ""


def geomean(values):
    return math.exp(sum(math.log(v) for v in values) / len(values)) if values else float("nan")


def panel_grid(count):
    cols = min(count, 4 if count > 6 else 3 if count > 4 else count)
    rows = (count + cols - 1) // cols
    return rows, cols


def plot_speedup(result, out_dir):
    axes = result["axes"]
    labels = [a["label"] for a in result["algorithms"]]
    baseline = result["baseline"]
    metric = result["metric"].replace("_", " ")
    points = [p for p in result["points"] if "summary" in p]
    written = []
    for k, axis in enumerate(axes):
        if len(axis["values"]) < 2:
            continue
        others = [a for j, a in enumerate(axes) if j != k and len(a["values"]) > 1]
        combos = []
        for p in points:
            combo = tuple(p["values"][a["key"]] for a in others)
            if combo not in combos:
                combos.append(combo)
        aggregate = len(combos) > 12
        panels = [None] if aggregate or not others else combos
        rows, cols = panel_grid(len(panels))
        fig, grid = plt.subplots(rows, cols, figsize=(max(5.2 * cols, 6.4), 3.8 * rows + 0.4), squeeze=False)
        xs, ticks, log, unit = x_positions(axis)
        for i, combo in enumerate(panels):
            ax = grid[i // cols][i % cols]
            for label in labels:
                ys = []
                for v in axis["values"]:
                    sel = [p for p in points if p["values"][axis["key"]] == v and
                           (combo is None or tuple(p["values"][a["key"]] for a in others) == combo)]
                    ys.append(geomean([p["summary"][label]["speedup"] for p in sel]))
                style = "--" if label == baseline else "-"
                ax.plot(xs, ys, style, marker="o", markersize=3, label=label)
            if log:
                ax.set_xscale("log", base=2 if axis["unit"] in ("", "B") else 10)
            if axis["unit"] == "B" or not all(v is not None for v in axis["numeric"]):
                ax.set_xticks(xs)
                ax.set_xticklabels(ticks, rotation=45 if len(ticks) > 6 else 0, fontsize=8)
            ax.axhline(1.0, color="grey", linewidth=0.6)
            ax.set_xlabel(axis["key"] + (" (" + unit + ")" if unit and axis["unit"] != "B" else ""))
            ax.set_ylabel("speedup vs " + baseline)
            if combo is not None and others:
                ax.set_title(", ".join(f"{a['key']}={c}" for a, c in zip(others, combo)), fontsize=9)
            elif aggregate:
                ax.set_title("geometric mean over " + ", ".join(a["key"] for a in others), fontsize=9)
            ax.grid(True, alpha=0.3)
        for j in range(len(panels), rows * cols):
            grid[j // cols][j % cols].axis("off")
        grid[0][0].legend(fontsize=8)
        fig.suptitle(f"{result['experiment']['name']}: speedup vs {axis['key']}\n"
                     f"({baseline} mean {metric} time / mean {metric} time)", fontsize=10)
        fig.tight_layout()
        path = os.path.join(out_dir, f"speedup_vs_{safe(axis['key'])}.png")
        fig.savefig(path, dpi=110)
        plt.close(fig)
        written.append(path)
    return written


def plot_cdf(result, rows, out_dir):
    column = "time_s" if result["metric"] == "completion" else "after_last_arrival_s"
    points = [p for p in result["points"] if "summary" in p]
    if not points:
        return []
    if len(points) > 9:
        step = (len(points) - 1) / 8
        points = [points[round(i * step)] for i in range(9)]
    labels = [a["label"] for a in result["algorithms"]]
    times = {}
    for r in rows:
        times.setdefault((int(r["point"]), r["label"]), []).append(float(r[column]))
    nrows, cols = panel_grid(len(points))
    fig, grid = plt.subplots(nrows, cols, figsize=(max(5.2 * cols, 6.4), 3.8 * nrows + 0.4), squeeze=False)
    for i, p in enumerate(points):
        ax = grid[i // cols][i % cols]
        for label in labels:
            t = sorted(times.get((p["point"], label), []))
            if not t:
                continue
            ms = [v * 1e3 for v in t]
            ys = [(j + 1) / len(t) for j in range(len(t))]
            ax.step(ms, ys, where="post", label=label)
        ax.set_xlabel(result["metric"].replace("_", " ") + " time (ms)")
        ax.set_ylabel("fraction of iterations")
        title = ", ".join(f"{a['key']}={p['values'][a['key']]}" for a in result["axes"])
        ax.set_title(title or "all iterations", fontsize=9)
        ax.grid(True, alpha=0.3)
    for j in range(len(points), nrows * cols):
        grid[j // cols][j % cols].axis("off")
    grid[0][0].legend(fontsize=8)
    fig.suptitle(f"{result['experiment']['name']}:\nCDF of per-iteration {result['metric'].replace('_', ' ')} time",
                 fontsize=10)
    fig.tight_layout()
    path = os.path.join(out_dir, "time_cdf.png")
    fig.savefig(path, dpi=110)
    plt.close(fig)
    return [path]


def main(argv):
    if len(argv) != 2:
        sys.stderr.write("usage: plot.py RESULTS_DIR (a `stragglesim run` output folder)\n")
        return 1
    out_dir = argv[1]
    with open(os.path.join(out_dir, "results.json")) as f:
        result = json.load(f)
    with open(os.path.join(out_dir, "results.csv"), newline="") as f:
        rows = list(csv.DictReader(f))
    written = plot_speedup(result, out_dir) + plot_cdf(result, rows, out_dir)
    print("plots: " + " ".join(written))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
