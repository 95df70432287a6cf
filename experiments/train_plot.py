#!/usr/bin/env python3
"""Plots of a training job (`stragglesim train`), written into a new folder.

    python3 experiments/train_plot.py [--persistence 0,0.25,0.5,0.75,0.9,1] [--steps N]
        [--lost reference|own] [--stragglesim BIN] [--format png,svg,pdf] JOB.yaml OUT_DIR

OUT_DIR must not exist: the script creates it and writes only there (on failure it removes what
it wrote). It runs `stragglesim train JOB.yaml --json --steps-csv --ranks-csv` once, and once
more per persistence value with `--persistence P` (every persistent straggler of the job on its
home rank in a fraction P of the steps, elsewhere otherwise), then writes:

  train.json, steps.csv, ranks.csv     what `train` wrote (one row per step, per rank)
  lost_vs_persistence.csv              persistence, algorithm, options, mode, mean_step_s,
                                       lost_fraction, lost_gpu_hours_per_day (against the run's
                                       own no-delay step), reference_mean_step_s,
                                       lost_vs_reference, lost_vs_reference_gpu_hours_per_day
                                       (against the mode's common reference; per run and value)
  step_time_cdf                        the CDF of the step time of every run (algorithm, mode)
  idle_per_rank                        each rank's mean idle time per step (waiting for the
                                       collective beyond its own compute), one line per run
  lost_gpu_hours_vs_persistence        GPU-hours lost per day against the stragglers'
                                       persistence, per run: with --lost reference (the default)
                                       against the mode's common reference (the same job without
                                       delays on NCCL's choice, comparable across algorithms),
                                       with --lost own against each run's own no-delay step

`--persistence none` skips the sweep (a job whose delays have no persistent straggler). The
`stragglesim` binary: --stragglesim, else `stragglesim` on PATH, else the one installed beside
this script (PREFIX/bin/stragglesim for PREFIX/share/stragglesim/train_plot.py), else
build/experiments/stragglesim of this checkout. Each `train` run prints a progress line on
standard error (which run, how long it took). Needs matplotlib (Debian: python3-matplotlib):
when the interpreter running the script lacks it, the script runs itself again with the first of
$STRAGGLESIM_PYTHON, python3, /usr/bin/python3 that has it (as `stragglesim run` finds one for
plot.py); exits with status 2 when none has it and 1 on bad arguments or when `train` fails (its
message is passed on).
"""
import argparse
import csv
import json
import math
import os
import shutil
import subprocess
import sys
import time

FORMATS = ("png", "svg", "pdf")

# Set in the environment of a re-run, so that an interpreter without matplotlib is tried once.
RERUN_ENV = "STRAGGLESIM_TRAIN_PLOT_RERUN"


def python_with_matplotlib():
    """The first of $STRAGGLESIM_PYTHON, python3 (on PATH), /usr/bin/python3 that imports
    matplotlib, or None."""
    candidates = [os.environ.get("STRAGGLESIM_PYTHON"), shutil.which("python3"), "/usr/bin/python3"]
    for py in candidates:
        if not py:
            continue
        try:
            ok = subprocess.run([py, "-c", "import matplotlib"], capture_output=True, check=False).returncode == 0
        except OSError:
            ok = False
        if ok:
            return py
    return None


try:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
except ImportError:
    other = None if os.environ.get(RERUN_ENV) else python_with_matplotlib()
    if other is None:
        sys.stderr.write("train_plot.py: no python3 with matplotlib (apt-get install python3-matplotlib, "
                         "or set STRAGGLESIM_PYTHON)\n")
        sys.exit(2)
    sys.stderr.write(f"train_plot.py: {sys.executable or 'this python'} lacks matplotlib; running with {other}\n")
    sys.stderr.flush()
    os.execve(other, [other, os.path.abspath(__file__)] + sys.argv[1:], dict(os.environ, **{RERUN_ENV: "1"}))

PNG_DPI = 200
WIDTH_IN = 7.0
HEIGHT_IN = 3.0
plt.rcParams.update({"font.size": 8, "axes.titlesize": 9, "legend.fontsize": 7, "axes.linewidth": 0.6,
                     "grid.linewidth": 0.4, "lines.linewidth": 1.2, "lines.markersize": 3})


class Failure(Exception):
    """Bad arguments or a failed `train` run: the message, exit 1."""


def parse_list(text, name, parse, check):
    values = []
    for item in text.split(","):
        item = item.strip()
        try:
            v = parse(item)
        except ValueError:
            raise Failure(f"{name}: '{item}' is not valid") from None
        if not check(v):
            raise Failure(f"{name}: '{item}' is out of range")
        values.append(v)
    if not values:
        raise Failure(f"{name}: empty")
    return list(dict.fromkeys(values))


def find_stragglesim(given):
    if given:
        return given
    on_path = shutil.which("stragglesim")
    if on_path:
        return on_path
    here = os.path.dirname(os.path.abspath(__file__))
    installed = os.path.join(here, "..", "..", "bin", "stragglesim")
    if os.path.isfile(installed) and os.access(installed, os.X_OK):
        return os.path.normpath(installed)
    return os.path.join(here, "..", "build", "experiments", "stragglesim")


def train(binary, args, progress):
    """Runs `stragglesim train ARGS`; its stdout, or Failure with its message. `progress` (what
    the run is, e.g. "run 2/7, persistence 0.25") goes to standard error before and after."""
    sys.stderr.write(f"train_plot.py: {progress}: stragglesim train ...\n")
    sys.stderr.flush()
    start = time.monotonic()
    try:
        r = subprocess.run([binary, "train"] + args, capture_output=True, text=True, check=False)
    except OSError as e:
        raise Failure(f"cannot run {binary}: {e.strerror}") from None
    if r.returncode != 0:
        raise Failure(r.stderr.strip() or f"stragglesim train exited {r.returncode}")
    sys.stderr.write(f"train_plot.py: {progress}: done in {time.monotonic() - start:.1f} s\n")
    sys.stderr.flush()
    return r.stdout


def run_label(algorithm, options, mode):
    return algorithm + (f"({options})" if options else "") + " " + mode


def write_text(path, text):
    with open(path, "x") as f:  # never over an existing file
        f.write(text)


def save(fig, out_dir, stem, formats):
    paths = []
    for fmt in formats:
        path = os.path.join(out_dir, f"{stem}.{fmt}")
        with open(path, "xb") as f:
            fig.savefig(f, format=fmt, dpi=PNG_DPI)
        paths.append(path)
    plt.close(fig)
    return paths


def figure(title, xlabel, ylabel):
    fig, ax = plt.subplots(figsize=(WIDTH_IN, HEIGHT_IN))
    ax.set_title(title)
    ax.set_xlabel(xlabel)
    ax.set_ylabel(ylabel)
    ax.grid(True, alpha=0.35)
    return fig, ax


def finish(fig, ax):
    ax.legend(loc="center left", bbox_to_anchor=(1.01, 0.5), frameon=False)
    fig.subplots_adjust(left=0.08, right=0.66, bottom=0.15, top=0.88)


def plot_cdf(steps_csv, out_dir, formats):
    runs = {}
    with open(steps_csv, newline="") as f:
        for row in csv.DictReader(f):
            key = run_label(row["algorithm"], row["options"], row["mode"])
            runs.setdefault(key, []).append(float(row["step_time_s"]) * 1e3)
    fig, ax = figure("Step time CDF", "step time (ms)", "fraction of steps")
    for label, times in runs.items():
        times.sort()
        n = len(times)
        ax.step(times, [(k + 1) / n for k in range(n)], where="post", label=label)
    ax.set_ylim(0, 1.02)
    finish(fig, ax)
    return save(fig, out_dir, "step_time_cdf", formats)


def plot_idle(ranks_csv, out_dir, formats):
    runs = {}
    with open(ranks_csv, newline="") as f:
        for row in csv.DictReader(f):
            key = run_label(row["algorithm"], row["options"], row["mode"])
            runs.setdefault(key, []).append((int(row["rank"]), float(row["mean_idle_s"]) * 1e3))
    fig, ax = figure("Idle time per rank (waiting beyond its own compute)", "rank",
                     "mean idle per step (ms)")
    for label, points in runs.items():
        points.sort()
        ax.plot([p[0] for p in points], [p[1] for p in points], marker="o", label=label)
    finish(fig, ax)
    return save(fig, out_dir, "idle_per_rank", formats)


# --lost: the column plotted and the axis label.
LOST = {"reference": ("lost_vs_reference_gpu_hours_per_day", "GPU-hours lost per day (vs common reference)"),
        "own": ("lost_gpu_hours_per_day", "GPU-hours lost per day (vs own no-delay step)")}


def plot_lost(rows, out_dir, formats, cluster_gpus, lost="reference"):
    column, label = LOST[lost]
    runs = {}
    for r in rows:
        runs.setdefault(run_label(r["algorithm"], r["options"], r["mode"]), []).append(
            (r["persistence"], r[column]))
    fig, ax = figure(f"GPU-hours lost per day at {cluster_gpus} GPUs", "straggler persistence [--persistence]",
                     label)
    for label, points in runs.items():
        ax.plot([p[0] for p in points], [p[1] for p in points], marker="o", label=label)
    finish(fig, ax)
    return save(fig, out_dir, "lost_gpu_hours_vs_persistence", formats)


def make(args, out_dir):
    binary = find_stragglesim(args.stragglesim)
    extra = ["--steps", str(args.steps)] if args.steps else []
    steps_csv = os.path.join(out_dir, "steps.csv")
    ranks_csv = os.path.join(out_dir, "ranks.csv")
    runs = 1 + (len(args.persistence) if args.persistence is not None else 0)
    summary = train(binary, [args.config, "--json", "--steps-csv", steps_csv, "--ranks-csv", ranks_csv] + extra,
                    f"run 1/{runs}, the job as configured")
    write_text(os.path.join(out_dir, "train.json"), summary)
    cluster_gpus = json.loads(summary)["config"]["cluster_gpus"]
    written = plot_cdf(steps_csv, out_dir, args.formats)
    written += plot_idle(ranks_csv, out_dir, args.formats)
    if args.persistence is None:
        return written
    rows = []
    for i, p in enumerate(args.persistence):
        try:
            out = train(binary, [args.config, "--json", "--persistence", repr(p)] + extra,
                        f"run {i + 2}/{runs}, persistence {p:g}")
        except Failure as e:
            raise Failure(f"{e} (--persistence none skips the sweep)") from None
        result = json.loads(out)
        for run in result["runs"]:
            if "lost_vs_reference" not in run:
                raise Failure(f"{binary} reports no lost_vs_reference (a stragglesim before the common reference)")
            rows.append({"persistence": p, "algorithm": run["algorithm"], "options": run["options"],
                         "mode": run["mode"], "mean_step_s": run["mean_step_s"],
                         "lost_fraction": run["lost_fraction"],
                         "lost_gpu_hours_per_day": run["lost_gpu_hours_per_day"],
                         "reference_mean_step_s": run["reference_mean_step_s"],
                         "lost_vs_reference": run["lost_vs_reference"],
                         "lost_vs_reference_gpu_hours_per_day": run["lost_vs_reference_gpu_hours_per_day"]})
    path = os.path.join(out_dir, "lost_vs_persistence.csv")
    with open(path, "x", newline="") as f:
        w = csv.DictWriter(f, fieldnames=list(rows[0].keys()), lineterminator="\n")
        w.writeheader()
        for r in rows:
            w.writerow({k: (repr(v) if isinstance(v, float) else v) for k, v in r.items()})
    written.append(path)
    written += plot_lost(rows, out_dir, args.formats, cluster_gpus, args.lost)
    return written


def main(argv):
    parser = argparse.ArgumentParser(prog="train_plot.py", description="Plots of a `stragglesim train` job")
    parser.add_argument("--persistence", default="0,0.25,0.5,0.75,0.9,1",
                        help="comma-separated persistences in [0, 1] for the lost GPU-hours plot, or none")
    parser.add_argument("--steps", type=int, default=0, help="override the job's step count")
    parser.add_argument("--lost", default="reference",
                        help="GPU-hours lost against: reference (the mode's common reference, the default) or own "
                             "(each run's own no-delay step)")
    parser.add_argument("--stragglesim", default="", help="the stragglesim binary")
    parser.add_argument("--format", default="png", help="comma-separated: png, svg, pdf (default png)")
    parser.add_argument("config", help="a `stragglesim train` job (YAML)")
    parser.add_argument("out_dir", help="a folder to create (must not exist)")
    try:
        args = parser.parse_args(argv[1:])
    except SystemExit as e:  # argparse exits 2, which here means "no matplotlib"
        return 1 if e.code else 0
    try:
        args.formats = parse_list(args.format, "--format", str, lambda v: v in FORMATS)
        if args.lost not in LOST:
            raise Failure(f"--lost: '{args.lost}' is not one of reference, own")
        if args.persistence.strip() == "none":
            args.persistence = None
        else:
            args.persistence = parse_list(args.persistence, "--persistence", float,
                                          lambda v: math.isfinite(v) and 0 <= v <= 1)
        if args.steps < 0:
            raise Failure("--steps must be >= 1")
        if not os.path.isfile(args.config):
            raise Failure(f"{args.config}: no such file")
    except Failure as e:
        sys.stderr.write(f"train_plot.py: {e}\n")
        return 1
    out_dir = args.out_dir
    try:
        os.mkdir(out_dir)
    except FileExistsError:
        sys.stderr.write(f"train_plot.py: {out_dir} exists; give a folder to create (nothing is written over)\n")
        return 1
    except OSError as e:
        sys.stderr.write(f"train_plot.py: cannot create {out_dir}: {e.strerror}\n")
        return 1
    try:
        written = make(args, out_dir)
    except BaseException as e:  # the folder is ours: leave nothing half done
        shutil.rmtree(out_dir, ignore_errors=True)
        if isinstance(e, Failure):
            sys.stderr.write(f"train_plot.py: {e}\n")
            return 1
        raise
    print("plots: " + " ".join(written))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
