#!/usr/bin/env python3
"""Plots of a `stragglesim run` output folder, sized for a two-column paper.

    python3 experiments/plot.py [--format png,svg,pdf] results/default

Reads results.json (axes, baseline, metric, per-point summaries) and results.csv (one row per
run and iteration) and writes, into the same folder, one file per figure, page and format:

  speedup_vs_<axis>   for every swept axis with two or more values: speedup against the
                      baseline (mean baseline time / mean time on the experiment's metric, as in
                      the summary table), one line (numeric axis) or one marker per value
                      (categorical axis: policy, ECMP, ...) per algorithm, the baseline a dashed
                      line at 1. One panel per combination of the other swept axes, the
                      categorical ones varying fastest (so that oracle and adaptive panels sit
                      side by side). More than 12 panels: several pages (`_2`, `_3`, ...), every
                      panel drawn, the page number in the title. With random iterations, a 95%
                      confidence band (interval for a categorical axis) from a paired bootstrap:
                      iteration indices are resampled with replacement, the same indices for the
                      baseline and the algorithm, and mean(baseline) / mean(algorithm)
                      recomputed, 1000 times, with a fixed seed. Lines that coincide are named
                      in a note under the title.
  time_vs_<axis>      for a categorical axis (ECMP, network model, policy...): the mean time of
                      every algorithm, baseline included, so that a setting that slows every
                      algorithm (Ring 2x slower without ECMP) is seen, not normalized away.
  speedup_heatmap     when message size and straggler delay are both swept: speedup per
                      (size, delay) cell, one panel per algorithm (and combination of the other
                      swept axes), blue where the algorithm wins, red where it loses, and the
                      critical delay of each size (the smallest delay from which it wins at
                      every larger delay, interpolated linearly between the two cells around
                      it) marked with a black line.
  speedup_cdf         the CDF of the per-iteration speedup (baseline time / algorithm time of
                      the same iteration: same arrivals) of every algorithm, one panel per
                      sweep point (pages as above). Drawn only when iterations differ; otherwise
                      the output says why not.

Titles and labels are in words with units (the YAML key in brackets). Every panel of a figure
shares the y range. An axis whose positive values span a decade or more is logarithmic
(symmetric-log when it includes 0). Figures are 3.4 in (one panel) or 7 in wide, fonts 8 pt and
up; PNGs at 200 dpi; SVG and PDF are vector (for papers). The layout is computed from the font metrics, not
by matplotlib's tight_layout (which costs seconds). Needs matplotlib (Debian:
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
    from matplotlib.colors import TwoSlopeNorm
    from matplotlib.ticker import FixedLocator, FuncFormatter, LogLocator, MaxNLocator, NullFormatter, NullLocator
except ImportError:
    sys.stderr.write("plot.py: matplotlib is missing (apt-get install python3-matplotlib)\n")
    sys.exit(2)

MAX_PANELS = 12
MAX_PAGES = 4  # a figure that would need more pages is not drawn, and the output says why
COINCIDE = 0.015  # lines closer than this share of the y axis everywhere are named in a note (one hides the other)
WIN_MARGIN = 1e-6  # a speedup within this of 1 is a tie, not a win
BOOTSTRAP_RESAMPLES = 1000
BOOTSTRAP_SEED = 20250601  # fixed: the same results give the same bands
PNG_DPI = 200  # screens and docs; papers take the vector formats (svg, pdf)
ONE_COLUMN_IN = 3.4
TWO_COLUMNS_IN = 7.0
FONT_PT = 8
CHAR_IN = FONT_PT * 0.6 / 72  # width of one 8 pt character (DejaVu Sans, digits and lower case)
LINE_IN = FONT_PT * 1.35 / 72  # height of one 8 pt line
X_DECADE_RATIO = 16  # a swept axis goes logarithmic from a 16x span (4..64 ranks, 64MiB..1GiB)
# (rows, columns) for 1..12 panels: no empty cell, or exactly one, which holds the legend.
LAYOUT = {1: (1, 1), 2: (1, 2), 3: (1, 3), 4: (1, 4), 5: (2, 3), 6: (2, 3), 7: (2, 4), 8: (2, 4),
          9: (3, 3), 10: (2, 5), 11: (3, 4), 12: (3, 4)}
PANEL_HEIGHT_IN = {1: 2.3, 2: 2.2, 3: 1.8, 4: 1.6, 5: 1.5}
# Algorithms other than the baseline: colour, marker, line style, hollow marker. Neighbours
# differ in all four, so lines that coincide (RHD on Ring at powers of two) stay apart.
STYLES = [("C0", "o", "-", False), ("C1", "s", (0, (4, 1.5)), True), ("C2", "^", ":", False),
          ("C3", "D", "-.", True), ("C4", "v", (0, (1, 1)), False), ("C5", "P", (0, (6, 2, 1, 2)), True),
          ("C6", "X", "-", True), ("C7", "*", "--", False)]
BASELINE_STYLE = {"color": "black", "linestyle": (0, (3, 2)), "linewidth": 1.0}
# Swept keys in words (the YAML key follows in brackets); other keys are shown as written.
AXIS_WORDS = {
    "ranks": "GPUs", "size": "message size", "delay": "straggler delay",
    "policy": "straggler prediction policy", "persistence": "straggler persistence",
    "prediction.detection": "straggler detection time", "topology.ecmp": "ECMP routing",
    "network.model": "network model", "iterations": "iterations",
}
BOOLEAN_WORDS = {"true": "on", "false": "off"}
# The same keys as panel titles show them before the value ('' : the value alone, its unit says
# what it is: 64MiB is a message size).
TITLE_WORDS = {"size": "", "network.model": "", "delay": "delay", "policy": "policy",
               "persistence": "persistence", "prediction.detection": "detection", "topology.ecmp": "ECMP"}

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


def paginate(items, limit, group=1):
    """`items` cut into pages of at most `limit`, pages as equal as possible, each page a
    multiple of `group` items where `group` <= `limit` (groups stay on one page)."""
    if len(items) <= limit:
        return [list(items)]
    group = group if 1 <= group <= limit else 1
    per_page = (limit // group) * group
    pages_needed = math.ceil(len(items) / per_page)
    size = math.ceil(len(items) / group / pages_needed) * group
    return [list(items[i:i + size]) for i in range(0, len(items), size)]


def human_bytes(v):
    for unit, scale in (("GiB", 2 ** 30), ("MiB", 2 ** 20), ("KiB", 2 ** 10)):
        if v >= scale:
            q = v / scale
            return (f"{q:.0f}" if abs(q - round(q)) < 1e-9 else f"{q:.3g}") + unit
    return f"{v:.0f}B"


def human_number(v):
    return f"{v:.0f}" if abs(v - round(v)) < 1e-9 and abs(v) < 1e6 else f"{v:.3g}"


def axis_words(key):
    """'straggler delay [delay]': the key in words, the YAML key after it."""
    words = AXIS_WORDS.get(key)
    return f"{words} [{key}]" if words else key


def value_words(key, value):
    """A swept value as a panel title shows it, short: '64MiB', '8 GPUs', 'ECMP on',
    'policy oracle', 'delay 2ms'."""
    text = BOOLEAN_WORDS.get(str(value).lower(), str(value)) if key == "topology.ecmp" else str(value)
    if key == "ranks":
        return f"{text} GPUs"
    word = TITLE_WORDS.get(key, key)
    return f"{word} {text}" if word else text


def tick_text(v):
    """A tick label: at most 3 significant digits, no trailing zeros."""
    if v == 0:
        return "0"
    text = f"{v:.3g}"
    return text.replace("e+0", "e").replace("e-0", "e-")


def y_ticks(scale, lo, hi):
    """Major tick positions in [lo, hi]: 1-2-5 steps on a log axis, 4-6 nice steps otherwise."""
    if scale == "log":
        ticks = [t for t in LogLocator(base=10, subs=(1.0, 2.0, 5.0)).tick_values(lo, hi) if lo <= t <= hi]
        if len(ticks) > 7:
            ticks = [t for t in LogLocator(base=10, subs=(1.0,)).tick_values(lo, hi) if lo <= t <= hi]
        if len(ticks) < 2:
            ticks = [t for t in LogLocator(base=10, subs=tuple(range(1, 10))).tick_values(lo, hi)
                     if lo <= t <= hi]
        return ticks
    return [t for t in MaxNLocator(nbins=5, steps=[1, 2, 2.5, 5, 10]).tick_values(lo, hi) if lo <= t <= hi]


# --- axes ---------------------------------------------------------------------------------

class XAxis:
    """How one swept axis is drawn: positions, tick labels, scale."""

    def __init__(self, axis):
        self.key = axis["key"]
        self.labels = list(axis["values"])
        numeric = axis["numeric"]
        self.numeric = all(v is not None for v in numeric)
        self.scale, self.linthresh = "linear", None
        self.title = axis_words(self.key)
        if not self.numeric:
            self.positions = list(range(len(self.labels)))
            if self.key == "topology.ecmp":
                self.labels = [BOOLEAN_WORDS.get(str(v).lower(), str(v)) for v in self.labels]
            return
        # Positions in SI units; the tick labels are the values as written, units included.
        unit = axis["unit"]
        self.positions = list(numeric)
        self.values = list(numeric)  # the positions, until drawn evenly spaced (columns())
        self.scale, self.linthresh = value_scale(self.positions, X_DECADE_RATIO)
        self.base = 2 if unit == "B" or (unit == "" and all(float(v).is_integer() for v in numeric)) else 10

    def apply(self, ax, width_in):
        """Scale, ticks at every swept value, labels on as many as fit without overlapping:
        every value's when they fit side by side, else upright (turned 90 degrees) when every
        value's fits that way, else as many as fit side by side. Returns the height the tick
        labels take, in inches."""
        if not self.numeric:
            ax.set_xticks(self.positions)
            ax.set_xticklabels(self.labels)
            ax.set_xlim(-0.5, len(self.labels) - 0.5)
            ax.xaxis.set_minor_locator(NullLocator())
            return LINE_IN
        set_scale(ax.set_xscale, self.scale, self.linthresh, self.base)
        kept = self.fitting_labels(width_in)
        upright = False
        if len(kept) < len(self.positions):
            turned = self.fitting_labels(width_in, upright=True)
            if len(turned) == len(self.positions):
                kept, upright = turned, True
        ax.xaxis.set_major_locator(FixedLocator([self.positions[i] for i in kept]))
        ax.xaxis.set_major_formatter(FuncFormatter(lambda x, _pos: self.label_at(x)))
        ax.xaxis.set_minor_locator(FixedLocator(self.positions))
        ax.xaxis.set_minor_formatter(NullFormatter())
        if upright:
            ax.tick_params(axis="x", which="major", labelrotation=90)
            ax.margins(x=min(0.25, (LINE_IN / 2 + 0.02) / max(width_in, 0.5)))
            return max(len(self.labels[i]) for i in kept) * FONT_PT * 0.62 / 72 + 0.04
        # Room at both ends for half of the outermost labels, so that they stay over their own
        # panel instead of running into the next one's ("4GiB256KiB" between two panels).
        if kept:
            half_in = max(len(self.labels[kept[0]]), len(self.labels[kept[-1]])) * FONT_PT * 0.62 / 72 / 2
            ax.margins(x=min(0.25, (half_in + 0.02) / max(width_in, 0.5)))
        return LINE_IN

    def labels_fit(self, width_in):
        """Whether every value gets its tick label in a panel `width_in` wide (side by side or
        upright)."""
        n = len(self.positions)
        return len(self.fitting_labels(width_in)) == n or len(self.fitting_labels(width_in, upright=True)) == n

    def columns(self, count):
        """The columns of a figure of `count` panels over this axis in which every swept value
        gets its tick label: the layout's own when they fit, else fewer (wider panels, at most
        one empty cell). Where no width fits them as they lie (a dense stretch of a log axis:
        1.5ms, 2ms, ..., 4ms among 0..20ms), the values are drawn evenly spaced, in order (the
        axis title says so), at the most columns that fit; where even that fails, the layout's
        own columns, labelling as many values as fit."""
        most = LAYOUT[count][1]
        if not self.numeric:
            return most
        fitting = [c for c in range(most, 0, -1) if c * math.ceil(count / c) - count <= 1]
        for cols in fitting:
            if self.labels_fit(panel_width(cols)):
                return cols
        scaled = (self.positions, self.scale, self.linthresh, self.title)
        self.positions = list(range(len(self.positions)))
        self.scale, self.linthresh = "linear", None
        self.title = f"{scaled[3]} (evenly spaced)"
        for cols in fitting:
            if self.labels_fit(panel_width(cols)):
                return cols
        self.positions, self.scale, self.linthresh, self.title = scaled
        return most

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

    def fitting_labels(self, width_in, upright=False):
        """Indices of the values to label so that no two labels (8 pt characters; `upright`:
        turned 90 degrees, one line high) overlap: the first and the last, then round values
        (powers of the log base, multiples of a power of ten), then the rest in order; each only
        when it clears every label kept so far."""
        ts = [self.transformed(x) for x in self.positions]
        lo, hi = min(ts), max(ts)
        if hi <= lo:
            return list(range(len(ts)))
        per_in = (hi - lo) / max(width_in - 0.55, 0.5)
        char_in = FONT_PT * 0.62 / 72

        def clears(i, j):
            if upright:
                return abs(ts[i] - ts[j]) >= (LINE_IN + 0.02) * per_in
            room = ((len(self.labels[i]) + len(self.labels[j])) / 2 + 0.8) * char_in * per_in
            return abs(ts[i] - ts[j]) >= room

        def round_value(v):
            if v <= 0:
                return True
            if self.scale != "linear" and math.isclose(math.log(v, self.base), round(math.log(v, self.base)),
                                                       abs_tol=1e-9):
                return True
            return math.isclose(v / 10 ** math.floor(math.log10(v)), 1.0, abs_tol=1e-9)

        def one_two_five(v):  # 2 and 5 times a power of ten: the next round values (2ms, 5ms)
            return v > 0 and any(math.isclose(v / 10 ** math.floor(math.log10(v)), m, abs_tol=1e-9)
                                 for m in (2.0, 5.0))

        n = len(ts)
        inner = range(1, n - 1)
        order = [0, n - 1] + [i for i in inner if round_value(self.values[i])] + \
            [i for i in inner if not round_value(self.values[i]) and one_two_five(self.values[i])] + \
            [i for i in inner if not round_value(self.values[i]) and not one_two_five(self.values[i])]
        kept = []
        for i in order:
            if i not in kept and all(clears(i, j) for j in kept):
                kept.append(i)
        return sorted(kept)


def panel_width(cols):
    """The width of one panel of a figure with `cols` columns (Figure)."""
    return (ONE_COLUMN_IN if cols == 1 else TWO_COLUMNS_IN) / cols


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


_RESAMPLES = {}


def resample_indices(n):
    """The bootstrap's iteration indices for runs of n iterations: one fixed-seed draw shared by
    every point and algorithm (pairing needs the same indices for the baseline and the
    algorithm; sharing them across points makes the bands comparable and the plot fast)."""
    if n not in _RESAMPLES:
        _RESAMPLES[n] = np.random.default_rng(BOOTSTRAP_SEED).integers(0, n, size=(BOOTSTRAP_RESAMPLES, n))
    return _RESAMPLES[n]


def paired_bootstrap(baseline, times):
    """95% interval of mean(baseline) / mean(times) over iteration resamples, paired."""
    n = min(len(baseline), len(times))
    idx = resample_indices(n)
    ratios = baseline[:n][idx].mean(axis=1) / times[:n][idx].mean(axis=1)
    lo, hi = np.percentile(ratios, [2.5, 97.5])
    return float(lo), float(hi)


def critical_delay(delays, speedups):
    """The smallest delay from which the algorithm wins (speedup > 1 + WIN_MARGIN: a tie is no
    win) at this and every larger delay, interpolated linearly to speedup 1 between the last
    delay where it does not win and the first where it does; None when it does not win at the
    largest delay; delays[0] when it wins everywhere."""
    wins = [v > 1 + WIN_MARGIN for v in speedups]
    if not delays or not wins[-1]:
        return None
    k = len(speedups) - 1
    while k > 0 and wins[k - 1]:
        k -= 1
    if k == 0:
        return delays[0]
    d0, d1, s0, s1 = delays[k - 1], delays[k], speedups[k - 1], speedups[k]
    return d0 + min(max((1 - s0) / (s1 - s0), 0.0), 1.0) * (d1 - d0) if s1 != s0 else d1


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
        self.name = result["experiment"]["name"]
        self.intervals = {}

    def speedup(self, point, label):
        return point["summary"][label]["speedup"]

    def mean_time(self, point, label):
        t = self.times.get((point["point"], label))
        return float(np.mean(t)) if t is not None and len(t) else None

    def interval(self, point, label):
        """The bootstrap interval of the point's speedup, or None without random iterations."""
        base = self.times.get((point["point"], self.baseline))
        mine = self.times.get((point["point"], label))
        if not self.random or base is None or mine is None or len(base) < 2:
            return None
        key = (point["point"], label)
        if key not in self.intervals:
            self.intervals[key] = paired_bootstrap(base, mine)
        return self.intervals[key]

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
    when the grid has one, else above the panels). Panel positions are computed in inches from
    the font size, the tick labels and the title lines (no tight_layout pass)."""

    def __init__(self, count, title, notes, legend_entries, sharey=True, right_in=0.12, panel_h=None, cols=None):
        self.rows, self.cols = LAYOUT[count]
        if cols is not None and cols < self.cols:  # wider panels (XAxis.columns)
            self.rows, self.cols = math.ceil(count / cols), cols
        self.count = count
        self.width = ONE_COLUMN_IN if self.cols == 1 else TWO_COLUMNS_IN
        self.panel_w = panel_width(self.cols)
        self.header = textwrap.wrap(title, int(self.width / ((FONT_PT + 1) / FONT_PT * CHAR_IN * 1.05)))
        self.notes = [line for note in notes for line in textwrap.wrap(note, int(self.width / (CHAR_IN * 0.95)))]
        self.title_chars = max(int((self.panel_w - 0.2) / CHAR_IN), 12)
        self.spare = self.rows * self.cols > count
        # At most 4 columns (3 in one column of panels), in rows of equal length: a legend block
        # over the middle of the figure, not a line across its whole width.
        most = 4 if self.cols > 1 else 3
        n = max(len(legend_entries), 1)
        ncol = math.ceil(n / math.ceil(n / most))
        self.legend_rows = 0 if self.spare or not legend_entries else math.ceil(len(legend_entries) / ncol)
        self.ncol = ncol
        self.right_in = right_in
        self.top_in = 0.08 + LINE_IN * (len(self.header) + len(self.notes)) + 0.19 * self.legend_rows
        self.height = self.rows * max(PANEL_HEIGHT_IN[self.cols], panel_h or 0) + self.top_in
        self.fig, grid = plt.subplots(self.rows, self.cols, figsize=(self.width, self.height), squeeze=False,
                                      sharey=sharey)
        self.axes = [grid[i // self.cols][i % self.cols] for i in range(count)]
        self.spare_ax = grid[-1][-1] if self.spare else None
        y = 1 - 0.05 / self.height
        for line in self.header:
            self.fig.text(0.5, y, line, ha="center", va="top", fontsize=FONT_PT + 1, weight="bold")
            y -= LINE_IN * (FONT_PT + 1) / FONT_PT / self.height
        for line in self.notes:
            self.fig.text(0.5, y, line, ha="center", va="top", fontsize=FONT_PT, style="italic")
            y -= LINE_IN / self.height
        self.legend_y = y
        self.title_lines = [0] * count
        self.ytick_chars = 4
        self.xtick_in = LINE_IN  # the height of the x tick labels (more when turned upright)
        self.has_xlabel = [False] * count
        self.has_ylabel = False

    def set_title(self, i, text):
        if text:
            wrapped = textwrap.fill(text, self.title_chars)
            self.axes[i].set_title(wrapped, pad=3)
            self.title_lines[i] = wrapped.count("\n") + 1

    def label_axes(self, xlabel, ylabel):
        """The y label on the first column; the x label under the lowest panel of each column,
        or once, centred under the bottom row, when it is wider than a panel."""
        self.has_ylabel = bool(ylabel)
        once = self.cols > 1 and len(xlabel) * CHAR_IN > self.panel_w - 0.3
        for i, ax in enumerate(self.axes):
            if i % self.cols == 0:
                ax.set_ylabel(ylabel)
            if i + self.cols >= self.count and not once:
                ax.set_xlabel(xlabel)
                self.has_xlabel[i] = True
        if once:
            self.fig.text(0.5, 0.04 / self.height, xlabel, ha="center", va="bottom")
            for i in range((self.rows - 1) * self.cols, self.count):
                self.has_xlabel[i] = True

    def set_y(self, scale, linthresh, lo, hi):
        """The shared y range and its labelled ticks; the widest label sizes the left margin."""
        ax = self.axes[0]
        set_scale(ax.set_yscale, scale, linthresh)
        ax.set_ylim(lo, hi)
        ticks = y_ticks("log" if scale == "log" else "linear", lo, hi) if scale != "symlog" else None
        if ticks:
            for a in self.axes:
                a.yaxis.set_major_locator(FixedLocator(ticks))
                a.yaxis.set_major_formatter(FuncFormatter(lambda v, _pos: tick_text(v)))
                a.yaxis.set_minor_locator(NullLocator())
            self.ytick_chars = max(len(tick_text(t)) for t in ticks)

    def place(self):
        """Panel positions from the margins each row and column needs."""
        left = 0.06 + (LINE_IN + 0.04 if self.has_ylabel else 0) + self.ytick_chars * CHAR_IN + 0.08
        bottom = 0.06 + self.xtick_in + 0.06 + (LINE_IN if any(self.has_xlabel) else 0)
        below = self.xtick_in + 0.1  # under each panel: its tick labels (its x label, where it has one)
        row_h = (self.height - self.top_in - bottom - 0.02) / self.rows
        col_w = (self.width - left - self.right_in) / self.cols
        gap_w = 0.12 if self.axes[0].get_shared_y_axes().joined(self.axes[0], self.axes[-1]) else \
            0.1 + LINE_IN + self.ytick_chars * CHAR_IN
        for r in range(self.rows):
            cells = [i for i in range(r * self.cols, min((r + 1) * self.cols, self.count))]
            title_in = max([self.title_lines[i] for i in cells] + [0]) * LINE_IN + (0.06 if cells else 0)
            xlabel_in = LINE_IN if any(self.has_xlabel[i] for i in cells) and r < self.rows - 1 else 0
            gap_below = (below + xlabel_in) if r < self.rows - 1 else 0
            for i in cells + ([self.rows * self.cols - 1] if self.spare and r == self.rows - 1 else []):
                c = i % self.cols
                x0 = left + c * col_w + (gap_w if c > 0 else 0) / 2
                w = col_w - (gap_w if c > 0 else 0) / 2 - (gap_w / 2 if c < self.cols - 1 else 0)
                y_top = self.height - self.top_in - r * row_h - title_in
                y_bottom = self.height - self.top_in - (r + 1) * row_h + gap_below
                if r == self.rows - 1:
                    y_bottom = bottom
                ax = self.axes[i] if i < self.count else self.spare_ax
                ax.set_position([x0 / self.width, y_bottom / self.height, max(w, 0.3) / self.width,
                                 max(y_top - y_bottom, 0.3) / self.height])

    def finish(self, handles, labels, grid=True):
        if self.spare:
            self.spare_ax.axis("off")
            if handles:
                self.spare_ax.legend(handles, labels, loc="center", frameon=False)
        elif handles:
            self.fig.legend(handles, labels, loc="upper center", bbox_to_anchor=(0.5, self.legend_y),
                            ncol=self.ncol, frameon=False, handlelength=2.6, columnspacing=1.2)
        if grid:
            for ax in self.axes:
                ax.grid(True, which="major", alpha=0.35)
        self.place()

    def save(self, out_dir, stem, formats):
        paths = []
        for fmt in formats:
            path = os.path.join(out_dir, f"{stem}.{fmt}")
            # zlib level 3: a few percent larger PNGs, written 2-3x faster than the default 6
            extra = {"pil_kwargs": {"compress_level": 3}} if fmt == "png" else {}
            self.fig.savefig(path, format=fmt, dpi=PNG_DPI, **extra)
            paths.append(path)
        plt.close(self.fig)
        return paths


def y_range(values, reference=None):
    """(scale, linthresh, lo, hi) covering `values` (and `reference`): log when they span a
    decade."""
    values = [v for v in values if v is not None and math.isfinite(v)]
    if reference is not None:
        values.append(reference)
    if not values:
        return "linear", None, 0.0, 1.0
    scale, linthresh = value_scale(values)
    if scale != "linear":
        # A marker at the extreme value stays whole inside the panel (x1.15 clipped it).
        return scale, linthresh, min(values) / 1.3, max(values) * 1.3
    pad = 0.06 * (max(values) - min(values) or abs(max(values)) or 1)
    return "linear", None, min(values) - pad, max(values) + pad


def page_stem(stem, page, pages):
    return stem if page == 0 else f"{stem}_{page + 1}"


def page_title(title, page, pages):
    return title if pages == 1 else f"{title} (page {page + 1} of {pages})"


def combos_of(data, axes):
    """The distinct value combinations of `axes` over the finished points, categorical axes
    varying fastest (so that panels of, e.g., oracle and adaptive sit side by side)."""
    order = sorted(range(len(axes)), key=lambda j: 0 if all(v is not None for v in axes[j]["numeric"]) else 1)
    axes_sorted = [axes[j] for j in order]
    index = {a["key"]: {v: k for k, v in enumerate(a["values"])} for a in axes_sorted}
    combos = []
    for p in data.points:
        combo = tuple(p["values"][a["key"]] for a in axes)
        if combo not in combos:
            combos.append(combo)
    combos.sort(key=lambda c: tuple(index[axes[j]["key"]].get(c[j], 0) for j in order))
    inner = 1
    for a in axes_sorted:
        if not all(v is not None for v in a["numeric"]):
            inner *= len(a["values"])
    return combos, (inner if inner <= MAX_PANELS else 1)


def combo_title(axes, combo):
    return ", ".join(value_words(a["key"], c) for a, c in zip(axes, combo))


def coinciding(series, scale="linear", lo=0.0, hi=1.0):
    """Notes naming the labels whose lines overlap in the figure, {label: [values]}: at every point
    closer than COINCIDE of the y axis' height [lo, hi] on its scale (on a log axis 1.4% apart
    hides one line under the other as surely as 0.1% does)."""
    def t(v):
        return math.log(v) if scale == "log" and v > 0 else v

    height = (t(hi) - t(lo)) if hi > lo else 1.0
    labels = list(series)
    notes, seen = [], set()
    for i, a in enumerate(labels):
        same = [b for b in labels[i + 1:] if b not in seen and len(series[a]) == len(series[b]) and series[a] and
                all(abs(t(x) - t(y)) <= COINCIDE * height for x, y in zip(series[a], series[b]))]
        if same:
            seen.update(same)
            apart = max(abs(x / y - 1) for b in same for x, y in zip(series[a], series[b]) if y)
            notes.append(f"{' and '.join([a] + same)} overlap: at most {apart:.1%} apart at every point.")
    return notes


def too_many(stem, panels, pages, skipped, instead):
    """True (and the reason in `skipped`) when a figure would need more than MAX_PAGES pages."""
    if pages <= MAX_PAGES:
        return False
    skipped.append(f"{stem}: {panels} panels would need {pages} pages (at most {MAX_PAGES} are drawn); "
                   f"{instead}")
    return True


def plot_per_axis(data, axis_index, formats, out_dir, kind, skipped):
    """speedup_vs_<axis> (kind "speedup") or time_vs_<axis> (kind "time")."""
    result = data.result
    axis = result["axes"][axis_index]
    x = XAxis(axis)
    others = [a for j, a in enumerate(result["axes"]) if j != axis_index and len(a["values"]) > 1]
    combos, group = combos_of(data, others)
    pages = paginate(combos, MAX_PANELS, group)
    stem = f"{kind}_vs_" + safe(axis["key"])
    if too_many(stem, len(combos), len(pages), skipped,
                "see speedup_heatmap and the other axes' figures, or sweep fewer values"):
        return []
    labels = data.others if kind == "speedup" else [data.baseline] + data.others
    value_of = data.speedup if kind == "speedup" else (lambda p, label: data.mean_time(p, label) * 1e3)
    series = {label: [] for label in labels}
    for p in data.points:
        for label in labels:
            v = value_of(p, label)
            if v is not None:
                series[label].append(v)
    scale, _, lo, hi = y_range([v for vs in series.values() for v in vs], reference=1.0 if kind == "speedup" else None)
    same = coinciding(series, scale, lo, hi)
    written = []
    for page, shown in enumerate(pages):
        cols = x.columns(len(shown))  # every swept value labelled (may space them evenly)
        if kind == "speedup":
            notes = [f"y: mean {data.baseline} time / mean time ({data.metric} time)."]
            notes.append(data.uncertainty_note("shaded" if x.numeric else "error bars"))
            title = f"{data.name}: speedup over {data.baseline} vs {x.title}"
            legend = [data.baseline + " (baseline)"] + data.others
        else:
            notes = [f"y: mean {data.metric} time per {x.title}, every algorithm (not normalized)."]
            title = f"{data.name}: {data.metric} time vs {x.title}"
            legend = list(labels)
        notes += same
        fig = Figure(len(shown), page_title(title, page, len(pages)), notes, legend, cols=cols)
        all_y = []
        handles = {}
        dodge = 0.5 / max(len(labels), 1)
        for i, (combo, ax) in enumerate(zip(shown, fig.axes)):
            selected = {p["values"][axis["key"]]: p for p in data.points
                        if tuple(p["values"][a["key"]] for a in others) == combo}
            if kind == "speedup":
                handles[data.baseline] = ax.axhline(1.0, zorder=5, **BASELINE_STYLE)
            for j, label in enumerate(labels):
                is_base = kind == "time" and label == data.baseline
                color, marker, linestyle, hollow = ("black", "o", "--", True) if is_base else \
                    style_of(j - (1 if kind == "time" else 0))
                xs, ys, lo, hi = [], [], [], []
                for pos, value in zip(x.positions, axis["values"]):
                    p = selected.get(value)
                    if p is None:
                        continue
                    xs.append(pos)
                    ys.append(value_of(p, label))
                    band = data.interval(p, label) if kind == "speedup" else None
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
                    offset = (j - (len(labels) - 1) / 2) * dodge
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
            fig.xtick_in = max(fig.xtick_in, x.apply(ax, fig.panel_w))
            fig.set_title(i, combo_title(others, combo))
        if kind == "speedup":
            fig.label_axes(x.title, f"speedup over {data.baseline}")
            fig.set_y(*y_range(all_y, reference=1.0))
            order = [data.baseline] + data.others
        else:
            fig.label_axes(x.title, f"{data.metric} time (ms)")
            fig.set_y(*y_range(all_y))
            order = labels
        fig.finish([handles[label] for label in order if label in handles], legend)
        written += fig.save(out_dir, page_stem(stem, page, len(pages)), formats)
    return written


def heatmap_axes(result):
    """(size axis index, delay axis index) when both are swept with two or more values."""
    size = [j for j, a in enumerate(result["axes"]) if a["key"] == "size" and len(a["values"]) > 1]
    delay = [j for j, a in enumerate(result["axes"]) if a.get("straggler_delay") and len(a["values"]) > 1
             and all(v is not None for v in a["numeric"])]
    return (size[0], delay[0]) if size and delay else None


def plot_heatmap(data, size_index, delay_index, formats, out_dir, skipped):
    result = data.result
    size_axis, delay_axis = result["axes"][size_index], result["axes"][delay_index]
    others = [a for j, a in enumerate(result["axes"]) if j not in (size_index, delay_index) and len(a["values"]) > 1]
    combos, _group = combos_of(data, others)
    panels = [(label, combo) for combo in combos for label in data.others]
    pages = paginate(panels, MAX_PANELS, len(data.others) if len(data.others) <= MAX_PANELS else 1)
    if too_many("speedup_heatmap", len(panels), len(pages), skipped, "sweep fewer values of the other axes"):
        return []
    sizes, delays = size_axis["values"], delay_axis["values"]
    delay_s = delay_axis["numeric"]
    grids = {}
    for label, combo in panels:
        m = np.full((len(sizes), len(delays)), np.nan)
        for p in data.points:
            if tuple(p["values"][a["key"]] for a in others) != combo:
                continue
            i = sizes.index(p["values"][size_axis["key"]])
            j = delays.index(p["values"][delay_axis["key"]])
            m[i, j] = data.speedup(p, label)
        grids[(label, combo)] = m
    finite = np.concatenate([g[np.isfinite(g)] for g in grids.values()])
    vmin, vmax = min(float(finite.min()), 0.99), max(float(finite.max()), 1.01)
    norm = TwoSlopeNorm(vcenter=1.0, vmin=vmin, vmax=vmax)
    written = []
    for page, shown in enumerate(pages):
        notes = [f"colour: speedup over {data.baseline} (mean {data.baseline} time / mean time, {data.metric} "
                 f"time); blue: faster than {data.baseline}, red: slower.",
                 "black line: the critical delay of each size (from it on the algorithm wins at every larger "
                 "delay; interpolated between cells); no line: it never wins at the largest delay."]
        title = f"{data.name}: speedup over {data.baseline} by {axis_words('size')} and {axis_words('delay')}"
        fig = Figure(len(shown), page_title(title, page, len(pages)), notes, [], sharey=True, right_in=0.75,
                     panel_h=0.7 + 0.17 * len(sizes))
        image = None
        for i, ((label, combo), ax) in enumerate(zip(shown, fig.axes)):
            m = grids[(label, combo)]
            image = ax.imshow(m, origin="lower", aspect="auto", cmap="RdBu", norm=norm, interpolation="nearest")
            xs, ys = [], []
            for r in range(len(sizes)):
                d = critical_delay(list(delay_s), [float(v) for v in m[r]]) if np.all(np.isfinite(m[r])) else None
                if d is None:
                    continue
                k = next((k for k in range(len(delay_s)) if delay_s[k] >= d), len(delay_s) - 1)
                col = k if k == 0 or delay_s[k] == delay_s[k - 1] else \
                    (k - 1) + (d - delay_s[k - 1]) / (delay_s[k] - delay_s[k - 1])
                xs.append(col)
                ys.append(r)
            if xs:
                ax.plot(xs, ys, color="black", marker="|", markersize=7, linewidth=1.2, zorder=4)
            step = max(1, math.ceil(len(delays) * (max(len(d) for d in delays) + 1.5) * CHAR_IN / (fig.panel_w - 0.3)))
            ax.set_xticks(range(0, len(delays), step))
            ax.set_xticklabels(delays[::step])
            ax.set_yticks(range(len(sizes)))
            ax.set_yticklabels(sizes)
            ax.xaxis.set_minor_locator(NullLocator())
            ax.yaxis.set_minor_locator(NullLocator())
            fig.set_title(i, ", ".join([label] + ([combo_title(others, combo)] if combo else [])))
        fig.ytick_chars = max(len(s) for s in sizes)
        fig.label_axes(axis_words("delay"), axis_words("size"))
        fig.finish([], [], grid=False)
        bar = fig.fig.add_axes([1 - 0.68 / fig.width, 0.45 / fig.height, 0.1 / fig.width,
                                1 - (fig.top_in + 0.55) / fig.height])
        colorbar = fig.fig.colorbar(image, cax=bar)
        below = [t for t in MaxNLocator(nbins=3, steps=[1, 2, 2.5, 5, 10]).tick_values(vmin, 1.0) if vmin <= t < 1]
        above = [t for t in MaxNLocator(nbins=3, steps=[1, 2, 2.5, 5, 10]).tick_values(1.0, vmax) if 1 < t <= vmax]
        colorbar.set_ticks(below + [1.0] + above)
        colorbar.set_ticklabels([tick_text(t) for t in below + [1.0] + above])
        colorbar.set_label(f"speedup over {data.baseline}")
        written += fig.save(out_dir, page_stem("speedup_heatmap", page, len(pages)), formats)
    return written


def plot_speedup_cdf(data, formats, out_dir, skipped):
    result = data.result
    axes = [a for a in result["axes"] if len(a["values"]) > 1]
    pages = paginate(data.points, MAX_PANELS)
    if too_many("speedup_cdf", len(data.points), len(pages), skipped,
                "the per-iteration speedups are in results.csv (column speedup)"):
        return []
    written = []
    for page, points in enumerate(pages):
        notes = [f"per iteration: {data.baseline} time / algorithm time, the same arrivals ({data.metric} time); "
                 f"right of the dashed line at 1 the algorithm was faster in that iteration.",
                 f"{data.iterations} iterations per run."]
        title = f"{data.name}: CDF of the per-iteration speedup over {data.baseline}"
        legend = [data.baseline + " (baseline)"] + data.others
        fig = Figure(len(points), page_title(title, page, len(pages)), notes, legend, sharey=True)
        handles = {}
        ratios_all = []
        for i, (p, ax) in enumerate(zip(points, fig.axes)):
            base = data.times.get((p["point"], data.baseline))
            handles[data.baseline] = ax.axvline(1.0, zorder=5, **BASELINE_STYLE)
            for j, label in enumerate(data.others):
                t = data.times.get((p["point"], label))
                if t is None or base is None or len(t) == 0:
                    continue
                n = min(len(t), len(base))
                r = np.sort(base[:n] / t[:n])
                ratios_all += [float(r[0]), float(r[-1])]
                ys = np.arange(1, n + 1) / n
                color, _marker, linestyle, _hollow = style_of(j)
                (h,) = ax.step(r, ys, where="post", color=color, linestyle=linestyle, zorder=3)
                handles[label] = h
            fig.set_title(i, combo_title(axes, tuple(p["values"][a["key"]] for a in axes)))
        scale, linthresh, lo, hi = y_range(ratios_all, reference=1.0)
        for ax in fig.axes:
            set_scale(ax.set_xscale, scale, linthresh)
            ax.set_xlim(lo, hi)
            ticks = y_ticks(scale, lo, hi) if scale != "symlog" else None
            if ticks:
                ax.xaxis.set_major_locator(FixedLocator(ticks))
                ax.xaxis.set_major_formatter(FuncFormatter(lambda v, _pos: tick_text(v)))
                ax.xaxis.set_minor_locator(NullLocator())
        fig.label_axes(f"speedup over {data.baseline} in one iteration", "fraction of iterations")
        fig.set_y("linear", None, 0.0, 1.02)
        drawn = [(handles[label], text) for label, text in zip([data.baseline] + data.others, legend)
                 if label in handles]
        fig.finish([h for h, _ in drawn], [text for _, text in drawn])
        written += fig.save(out_dir, page_stem("speedup_cdf", page, len(pages)), formats)
    return written


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
        written += plot_per_axis(data, k, formats, out_dir, "speedup", skipped)
        if not all(v is not None for v in result["axes"][k]["numeric"]):
            written += plot_per_axis(data, k, formats, out_dir, "time", skipped)
    if not swept:
        skipped.append("speedup_vs_<axis>: no swept axis with two or more values")
    both = heatmap_axes(result)
    if both and data.others:
        written += plot_heatmap(data, both[0], both[1], formats, out_dir, skipped)
    if data.iterations == 1:
        skipped.append("speedup_cdf: 1 iteration per run, a CDF needs several "
                       "(set iterations: in the YAML or --iterations)")
    elif not data.random:
        skipped.append(f"speedup_cdf: the {data.iterations} iterations of each run are identical "
                       "(no random delays), a CDF would be a vertical line")
    elif data.others:
        written += plot_speedup_cdf(data, formats, out_dir, skipped)
    print("plots: " + (" ".join(written) if written else "none"))
    for why in skipped:
        print("plots: no " + why)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
