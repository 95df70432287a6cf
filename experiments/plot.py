#!/usr/bin/env python3
"""Plots of a `stragglesim run` output folder, sized for a two-column paper.

    python3 experiments/plot.py [--format png,svg,pdf] results/default

Reads results.json (axes, baseline, metric, per-point summaries) and results.csv (one row per
run and iteration) and writes, into the same folder, one file per figure and format:

  speedup_vs_<axis>   for every swept axis with two or more values: speedup against the
                      baseline (mean baseline time / mean time on the experiment's metric, as in
                      the summary table), one line (numeric axis) or one marker per value
                      (categorical axis: policy, topology.ecmp, ...) per algorithm, the baseline
                      a dashed line at 1. One panel per combination of the other swept axes; more
                      than 12 combinations: 12 spread evenly over them, the selection stated in
                      the figure. With random iterations, a 95% confidence band (interval for a
                      categorical axis) from a paired bootstrap: iteration indices are resampled
                      with replacement, the same indices for the baseline and the algorithm, and
                      mean(baseline) / mean(algorithm) recomputed, 1000 times, with a fixed seed.
  time_cdf            the CDF of the per-iteration time (the metric) of every algorithm, one
                      panel per sweep point (more than 12 points: 12 spread evenly, stated).
                      Drawn only when runs have several iterations; otherwise it says why not.

Every panel of a figure shares the y range. An axis whose positive values span a decade or more
is logarithmic (symmetric-log when it includes 0). Figures are 3.4 in (one panel) or 7 in wide,
fonts 8 pt and up; PNGs at 300 dpi; SVG and PDF are vector. Needs matplotlib (Debian:
python3-matplotlib); exits with status 2 when it is missing and 1 on bad arguments.
"""
import argparse
import csv
import json
import math
import os
import re
import sys
import textwrap

FORMATS = ("png", "svg", "pdf")

try:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    import numpy as np
    from matplotlib.ticker import FixedLocator, FuncFormatter, LogLocator, NullFormatter
except ImportError:
    sys.stderr.write("plot.py: matplotlib is missing (apt-get install python3-matplotlib)\n")
    sys.exit(2)

MAX_PANELS = 12
BOOTSTRAP_RESAMPLES = 1000
BOOTSTRAP_SEED = 20250601  # fixed: the same results give the same bands
PNG_DPI = 300
ONE_COLUMN_IN = 3.4
TWO_COLUMNS_IN = 7.0
FONT_PT = 8
X_DECADE_RATIO = 16  # a swept axis goes logarithmic from a 16x span (4..64 ranks, 64MiB..1GiB)
# (rows, columns) for 1..12 panels: no empty cell, or exactly one, which holds the legend.
LAYOUT = {1: (1, 1), 2: (1, 2), 3: (1, 3), 4: (1, 4), 5: (2, 3), 6: (2, 3), 7: (2, 4), 8: (2, 4),
          9: (3, 3), 10: (2, 5), 11: (3, 4), 12: (3, 4)}
PANEL_HEIGHT_IN = {1: 2.5, 2: 2.4, 3: 2.0, 4: 1.8, 5: 1.7}
# Algorithms other than the baseline: colour, marker, line style, hollow marker. Neighbours
# differ in all four, so lines that coincide (RHD on Ring at powers of two) stay apart.
STYLES = [("C0", "o", "-", False), ("C1", "s", (0, (4, 1.5)), True), ("C2", "^", ":", False),
          ("C3", "D", "-.", True), ("C4", "v", (0, (1, 1)), False), ("C5", "P", (0, (6, 2, 1, 2)), True),
          ("C6", "X", "-", True), ("C7", "*", "--", False)]
BASELINE_STYLE = {"color": "black", "linestyle": (0, (3, 2)), "linewidth": 1.0}

plt.rcParams.update({
    "font.size": FONT_PT, "axes.titlesize": FONT_PT, "axes.labelsize": FONT_PT,
    "xtick.labelsize": FONT_PT, "ytick.labelsize": FONT_PT, "legend.fontsize": FONT_PT,
    "figure.titlesize": FONT_PT + 1, "lines.linewidth": 1.2, "lines.markersize": 4,
    "axes.linewidth": 0.6, "grid.linewidth": 0.4, "savefig.dpi": PNG_DPI,
    "svg.fonttype": "none", "pdf.fonttype": 42,
})


def safe(name):
    return re.sub(r"[^A-Za-z0-9]+", "_", name).strip("_")


def style_of(index):
    return STYLES[index % len(STYLES)]


def spread(items, limit):
    """`items` if there are at most `limit`, else `limit` of them evenly spread, ends included."""
    if len(items) <= limit:
        return list(items)
    step = (len(items) - 1) / (limit - 1)
    return [items[round(i * step)] for i in range(limit)]


def human_bytes(v):
    for unit, scale in (("GiB", 2 ** 30), ("MiB", 2 ** 20), ("KiB", 2 ** 10)):
        if v >= scale:
            q = v / scale
            return (f"{q:.0f}" if abs(q - round(q)) < 1e-9 else f"{q:.3g}") + unit
    return f"{v:.0f}B"


def human_number(v):
    return f"{v:.0f}" if abs(v - round(v)) < 1e-9 and abs(v) < 1e6 else f"{v:.3g}"


# --- axes ---------------------------------------------------------------------------------

class XAxis:
    """How one swept axis is drawn: positions, tick labels, scale."""

    def __init__(self, axis):
        self.key = axis["key"]
        self.labels = list(axis["values"])
        numeric = axis["numeric"]
        self.numeric = all(v is not None for v in numeric)
        self.scale, self.linthresh = "linear", None
        if not self.numeric:
            self.positions = list(range(len(self.labels)))
            self.title = self.key
            return
        # Positions in SI units; the tick labels are the values as written, units included.
        unit = axis["unit"]
        self.positions, self.title = list(numeric), self.key
        self.scale, self.linthresh = value_scale(self.positions, X_DECADE_RATIO)
        self.base = 2 if unit == "B" or (unit == "" and all(float(v).is_integer() for v in numeric)) else 10

    def apply(self, ax, width_in):
        """Scale, ticks at every swept value, labels on as many as fit without overlapping."""
        if not self.numeric:
            ax.set_xticks(self.positions)
            ax.set_xticklabels(self.labels)
            ax.set_xlim(-0.5, len(self.labels) - 0.5)
            return
        set_scale(ax.set_xscale, self.scale, self.linthresh, self.base)
        kept = self.fitting_labels(width_in)
        ax.xaxis.set_major_locator(FixedLocator([self.positions[i] for i in kept]))
        ax.xaxis.set_major_formatter(
            FuncFormatter(lambda x, _pos: self.label_at(x)))
        ax.xaxis.set_minor_locator(FixedLocator(self.positions))
        ax.xaxis.set_minor_formatter(NullFormatter())

    def label_at(self, x):
        for p, label in zip(self.positions, self.labels):
            if math.isclose(p, x, rel_tol=1e-9, abs_tol=1e-12):
                return label
        return ""

    def transformed(self, x):
        if self.scale == "log":
            return math.log(x)
        if self.scale == "symlog":
            t = self.linthresh
            return x / t if abs(x) <= t else math.copysign(1 + math.log(abs(x) / t), x)
        return x

    def fitting_labels(self, width_in):
        """Indices of the values to label so that no two labels (8 pt characters) overlap: the
        first and the last, then round values (powers of the log base, multiples of a power of
        ten), then the rest in order; each only when it clears every label kept so far."""
        ts = [self.transformed(x) for x in self.positions]
        lo, hi = min(ts), max(ts)
        if hi <= lo:
            return list(range(len(ts)))
        per_in = (hi - lo) / max(width_in - 0.55, 0.5)
        char_in = FONT_PT * 0.62 / 72

        def clears(i, j):
            room = ((len(self.labels[i]) + len(self.labels[j])) / 2 + 0.8) * char_in * per_in
            return abs(ts[i] - ts[j]) >= room

        def round_value(v):
            if v <= 0:
                return True
            if self.scale != "linear" and math.isclose(math.log(v, self.base), round(math.log(v, self.base)),
                                                       abs_tol=1e-9):
                return True
            return math.isclose(v / 10 ** math.floor(math.log10(v)), 1.0, abs_tol=1e-9)

        n = len(ts)
        order = [0, n - 1] + [i for i in range(1, n - 1) if round_value(self.positions[i])] + \
            [i for i in range(1, n - 1) if not round_value(self.positions[i])]
        kept = []
        for i in order:
            if i not in kept and all(clears(i, j) for j in kept):
                kept.append(i)
        return sorted(kept)


def value_scale(values, ratio=10):
    """("log", None) when the positive values span `ratio` or more (a decade), ("symlog", the
    smallest positive) when they also include 0, else ("linear", None)."""
    positive = [v for v in values if v > 0]
    if len(positive) < 2 or max(positive) / min(positive) < ratio or any(v < 0 for v in values):
        return "linear", None
    return ("log", None) if len(positive) == len(values) else ("symlog", min(positive))


def set_scale(setter, scale, linthresh, base=10):
    if scale == "log":
        setter("log", base=base)
    elif scale == "symlog":
        setter("symlog", linthresh=linthresh, linscale=0.5, base=base)


# --- data ---------------------------------------------------------------------------------

def metric_column(result):
    return "time_s" if result["metric"] == "completion" else "after_last_arrival_s"


def iteration_times(result, rows):
    """{(point, label): numpy array of the metric per iteration, in iteration order}."""
    column = metric_column(result)
    times = {}
    for r in rows:
        times.setdefault((int(r["point"]), r["label"]), []).append((int(r["iteration"]), float(r[column])))
    return {k: np.array([t for _, t in sorted(v)]) for k, v in times.items()}


def varies(values):
    return len(values) > 1 and float(np.ptp(values)) > 1e-12 * max(float(np.max(np.abs(values))), 1e-300)


def paired_bootstrap(baseline, times, seed):
    """95% interval of mean(baseline) / mean(times) over iteration resamples, paired."""
    n = min(len(baseline), len(times))
    rng = np.random.default_rng(seed)
    idx = rng.integers(0, n, size=(BOOTSTRAP_RESAMPLES, n))
    ratios = baseline[:n][idx].mean(axis=1) / times[:n][idx].mean(axis=1)
    lo, hi = np.percentile(ratios, [2.5, 97.5])
    return float(lo), float(hi)


class Data:
    def __init__(self, result, rows):
        self.result = result
        self.labels = [a["label"] for a in result["algorithms"]]
        self.baseline = result["baseline"]
        self.others = [label for label in self.labels if label != self.baseline]
        self.points = [p for p in result["points"] if "summary" in p]
        self.times = iteration_times(result, rows)
        self.iterations = int(result["iterations"])
        self.random = self.iterations > 1 and any(varies(v) for v in self.times.values())
        self.metric = result["metric"].replace("_", " ")

    def speedup(self, point, label):
        return point["summary"][label]["speedup"]

    def interval(self, point, label):
        """The bootstrap interval of the point's speedup, or None without random iterations."""
        base = self.times.get((point["point"], self.baseline))
        mine = self.times.get((point["point"], label))
        if not self.random or base is None or mine is None or len(base) < 2:
            return None
        return paired_bootstrap(base, mine, BOOTSTRAP_SEED + point["point"])

    def uncertainty_note(self, how):
        if self.iterations == 1:
            return "1 iteration per run: no confidence band."
        if not self.random:
            return f"the {self.iterations} iterations of each run are identical: no confidence band."
        return (f"{how}: 95% CI, paired bootstrap over the {self.iterations} iterations "
                f"({BOOTSTRAP_RESAMPLES} resamples, seed {BOOTSTRAP_SEED}).")


# --- figures ------------------------------------------------------------------------------

class Figure:
    """A grid of panels sharing the y axis, a title, notes and one legend (in the spare cell
    when the grid has one, else above the panels)."""

    def __init__(self, count, title, notes, legend_entries):
        self.rows, self.cols = LAYOUT[count]
        self.count = count
        self.width = ONE_COLUMN_IN if self.cols == 1 else TWO_COLUMNS_IN
        self.panel_w = self.width / self.cols
        self.header = textwrap.wrap(title, int(self.width * 72 / ((FONT_PT + 1) * 0.62)))
        self.notes = [line for note in notes
                      for line in textwrap.wrap(note, int(self.width * 72 / (FONT_PT * 0.56)))]
        self.title_chars = int(self.panel_w * 72 / (FONT_PT * 0.6))
        self.spare = self.rows * self.cols > count
        ncol = len(legend_entries) if self.cols > 1 else min(len(legend_entries), 3)
        ncol = max(1, min(ncol, 6))
        self.legend_rows = 0 if self.spare else math.ceil(len(legend_entries) / ncol)
        self.ncol = ncol
        line_in = (FONT_PT + 2) * 1.25 / 72
        self.top_in = 0.06 + line_in * (len(self.header) + len(self.notes)) + 0.18 * self.legend_rows
        height = self.rows * PANEL_HEIGHT_IN[self.cols] + self.top_in
        self.fig, grid = plt.subplots(self.rows, self.cols, figsize=(self.width, height), squeeze=False,
                                      sharey=True)
        self.axes = [grid[i // self.cols][i % self.cols] for i in range(count)]
        self.spare_ax = grid[-1][-1] if self.spare else None
        y = 1 - 0.04 / height
        for i, line in enumerate(self.header):
            self.fig.text(0.5, y, line, ha="center", va="top", fontsize=FONT_PT + 1, weight="bold")
            y -= line_in / height
        for line in self.notes:
            self.fig.text(0.5, y, line, ha="center", va="top", fontsize=FONT_PT, style="italic")
            y -= line_in / height
        self.legend_y = y
        self.height = height

    def label_axes(self, xlabel, ylabel):
        """The y label on the first column, the x label under the lowest panel of each column."""
        for i, ax in enumerate(self.axes):
            if i % self.cols == 0:
                ax.set_ylabel(ylabel)
            if i + self.cols >= self.count:
                ax.set_xlabel(xlabel)

    def finish(self, handles, labels):
        if self.spare:
            self.spare_ax.axis("off")
            self.spare_ax.legend(handles, labels, loc="center", frameon=False)
        else:
            self.fig.legend(handles, labels, loc="upper center", bbox_to_anchor=(0.5, self.legend_y),
                            ncol=self.ncol, frameon=False, handlelength=2.6, columnspacing=1.2)
        for ax in self.axes:
            ax.grid(True, which="major", alpha=0.35)
        rect = (0, 0, 1, 1 - (self.top_in + 0.06) / self.height)
        for _ in range(2):  # the second pass sees the tick labels the first one settled
            self.fig.tight_layout(pad=0.5, h_pad=0.7, w_pad=0.6, rect=rect)

    def save(self, out_dir, stem, formats):
        paths = []
        for fmt in formats:
            path = os.path.join(out_dir, f"{stem}.{fmt}")
            self.fig.savefig(path, format=fmt, dpi=PNG_DPI)
            paths.append(path)
        plt.close(self.fig)
        return paths


def shared_y(figure, values, reference=None):
    """One y range for every panel; logarithmic when the values span a decade."""
    values = [v for v in values if v is not None and math.isfinite(v)]
    if reference is not None:
        values.append(reference)
    if not values:
        return
    scale, linthresh = value_scale(values)
    if scale != "linear":
        set_scale(figure.axes[0].set_yscale, scale, linthresh)
        lo, hi = min(values) / 1.15, max(values) * 1.15
    else:
        pad = 0.06 * (max(values) - min(values) or abs(max(values)) or 1)
        lo, hi = min(values) - pad, max(values) + pad
    figure.axes[0].set_ylim(lo, hi)


def plot_speedup(data, axis_index, formats, out_dir):
    result = data.result
    axis = result["axes"][axis_index]
    x = XAxis(axis)
    others = [a for j, a in enumerate(result["axes"]) if j != axis_index and len(a["values"]) > 1]
    combos = []
    for p in data.points:
        combo = tuple(p["values"][a["key"]] for a in others)
        if combo not in combos:
            combos.append(combo)
    shown = spread(combos, MAX_PANELS)
    notes = []
    if len(shown) < len(combos):
        keys = ", ".join(a["key"] for a in others)
        notes.append(f"panels: {len(shown)} of the {len(combos)} values of {keys}, evenly spread "
                     f"(all in results.csv).")
    notes.insert(0, f"y: mean {data.baseline} time / mean time ({data.metric} time).")
    notes.append(data.uncertainty_note("shaded" if x.numeric else "error bars"))
    title = f"{result['experiment']['name']}: speedup vs {axis['key']}"
    legend = [data.baseline + " (baseline)"] + data.others
    fig = Figure(len(shown), title, notes, legend)
    all_y = []
    handles = {}
    dodge = 0.5 / max(len(data.others), 1)
    for combo, ax in zip(shown, fig.axes):
        selected = {p["values"][axis["key"]]: p for p in data.points
                    if tuple(p["values"][a["key"]] for a in others) == combo}
        handles[data.baseline] = ax.axhline(1.0, zorder=5, **BASELINE_STYLE)
        for j, label in enumerate(data.others):
            color, marker, linestyle, hollow = style_of(j)
            xs, ys, lo, hi = [], [], [], []
            for pos, value in zip(x.positions, axis["values"]):
                p = selected.get(value)
                if p is None:
                    continue
                xs.append(pos)
                ys.append(data.speedup(p, label))
                band = data.interval(p, label)
                lo.append(band[0] if band else None)
                hi.append(band[1] if band else None)
            all_y += ys + [v for v in lo + hi if v is not None]
            face = "white" if hollow else color
            if x.numeric:
                (h,) = ax.plot(xs, ys, color=color, linestyle=linestyle, marker=marker,
                               markerfacecolor=face, markeredgecolor=color, zorder=3 + j * 0.01)
                if any(v is not None for v in lo):
                    ax.fill_between(xs, [v if v is not None else y for v, y in zip(lo, ys)],
                                    [v if v is not None else y for v, y in zip(hi, ys)],
                                    color=color, alpha=0.18, linewidth=0, zorder=2)
            else:  # categorical: markers side by side, never joined
                offset = (j - (len(data.others) - 1) / 2) * dodge
                xd = [v + offset for v in xs]
                if any(v is not None for v in lo):
                    # A percentile interval of a ratio of means need not contain the point
                    # estimate (a skewed bootstrap); the bar then starts at the point.
                    err = [[max(0.0, y - (l if l is not None else y)) for y, l in zip(ys, lo)],
                           [max(0.0, (h if h is not None else y) - y) for y, h in zip(ys, hi)]]
                    ax.errorbar(xd, ys, yerr=err, fmt="none", ecolor=color, elinewidth=0.9, capsize=2,
                                zorder=3)
                (h,) = ax.plot(xd, ys, linestyle="none", marker=marker, markersize=5, color=color,
                               markerfacecolor=face, markeredgecolor=color, zorder=4)
            handles[label] = h
        x.apply(ax, fig.panel_w)
        if combo:
            ax.set_title(textwrap.fill(", ".join(f"{a['key']}={c}" for a, c in zip(others, combo)),
                                       fig.title_chars))
    fig.label_axes(x.title, f"speedup vs {data.baseline}")
    shared_y(fig, all_y, reference=1.0)
    fig.finish([handles[data.baseline]] + [handles[l] for l in data.others], legend)
    return fig.save(out_dir, "speedup_vs_" + safe(axis["key"]), formats)


def plot_cdf(data, formats, out_dir):
    result = data.result
    points = spread(data.points, MAX_PANELS)
    notes = []
    if len(points) < len(data.points):
        notes.append(f"panels: {len(points)} of the {len(data.points)} sweep points, evenly spread in "
                     f"sweep order (all in results.csv).")
    notes.append(f"{data.iterations} iterations per run; each step is one iteration.")
    title = f"{result['experiment']['name']}: CDF of the per-iteration {data.metric} time"
    legend = [data.baseline + " (baseline)"] + data.others
    fig = Figure(len(points), title, notes, legend)
    handles = {}
    for p, ax in zip(points, fig.axes):
        ms_all = []
        for j, label in enumerate([data.baseline] + data.others):
            t = data.times.get((p["point"], label))
            if t is None or len(t) == 0:
                continue
            ms = np.sort(t) * 1e3
            ms_all += [ms[0], ms[-1]]
            ys = np.arange(1, len(ms) + 1) / len(ms)
            if label == data.baseline:
                (h,) = ax.step(ms, ys, where="post", zorder=5, **BASELINE_STYLE)
            else:
                color, _marker, linestyle, _hollow = style_of(j - 1)
                (h,) = ax.step(ms, ys, where="post", color=color, linestyle=linestyle, zorder=3)
            handles[label] = h
        scale, linthresh = value_scale(ms_all)
        set_scale(ax.set_xscale, scale, linthresh)
        if scale == "log":
            ax.xaxis.set_major_locator(LogLocator(base=10, subs=(1.0, 2.0, 5.0)))
            ax.xaxis.set_major_formatter(FuncFormatter(lambda v, _pos: f"{v:g}"))
            ax.xaxis.set_minor_formatter(NullFormatter())
        title = ", ".join(f"{a['key']}={p['values'][a['key']]}" for a in result["axes"])
        if title:
            ax.set_title(textwrap.fill(title, fig.title_chars))
    fig.label_axes(f"{data.metric} time (ms)", "fraction of iterations")
    fig.axes[0].set_ylim(0, 1.02)
    drawn = [(handles[label], text) for label, text in zip([data.baseline] + data.others, legend)
             if label in handles]
    fig.finish([h for h, _ in drawn], [text for _, text in drawn])
    return fig.save(out_dir, "time_cdf", formats)


def parse_formats(text):
    formats = [f.strip().lower() for f in text.split(",")]
    bad = [f for f in formats if f not in FORMATS]
    if bad or not text.strip():
        raise ValueError(f"invalid plot format '{text}': expected a comma-separated list of "
                         f"{', '.join(FORMATS)} (e.g. png,pdf)")
    return list(dict.fromkeys(formats))


def main(argv):
    parser = argparse.ArgumentParser(prog="plot.py", description="Plots of a `stragglesim run` output folder")
    parser.add_argument("--format", default="png", help="comma-separated: png, svg, pdf (default png)")
    parser.add_argument("results_dir", help="a `stragglesim run` output folder")
    try:
        args = parser.parse_args(argv[1:])
    except SystemExit as e:  # argparse exits 2, which here means "no matplotlib"
        return 1 if e.code else 0
    try:
        formats = parse_formats(args.format)
    except ValueError as e:
        sys.stderr.write(f"plot.py: {e}\n")
        return 1
    out_dir = args.results_dir
    with open(os.path.join(out_dir, "results.json")) as f:
        result = json.load(f)
    with open(os.path.join(out_dir, "results.csv"), newline="") as f:
        rows = list(csv.DictReader(f))
    data = Data(result, rows)
    if not data.points:
        print("plots: none (no finished sweep point in results.json)")
        return 0
    written, skipped = [], []
    swept = [k for k, a in enumerate(result["axes"]) if len(a["values"]) >= 2]
    for k in swept:
        written += plot_speedup(data, k, formats, out_dir)
    if not swept:
        skipped.append("speedup_vs_<axis>: no swept axis with two or more values")
    if data.iterations > 1:
        written += plot_cdf(data, formats, out_dir)
    else:
        skipped.append("time_cdf: 1 iteration per run, a CDF needs several "
                       "(set iterations: in the YAML or --iterations)")
    print("plots: " + (" ".join(written) if written else "none"))
    for why in skipped:
        print("plots: no " + why)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
