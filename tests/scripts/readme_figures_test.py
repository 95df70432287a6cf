#!/usr/bin/env python3
"""README figures against a rerun of the shipped experiment they come from.

README.md shows the summary of `stragglesim run` on configs/experiments/default.yaml (a
```console block starting `$ stragglesim run -o results/default`) and quotes one of its
speedups in the opening paragraph ("makes a 1 GiB AllReduce X.XXXx faster than what NCCL runs
on N GPUs"). This reruns the experiment (`--no-plots`, about a second) and checks every time,
speedup and loss share in those rows, and the quoted speedup, against the rerun's summary:
times and speedups within 0.1% (the README prints 4 significant digits; a rerun is
deterministic, so any difference beyond rounding is a stale figure), loss shares within 0.1
percentage points.

  readme_figures_test.py STRAGGLESIM SOURCE_DIR [README]   exit 0: agree, 1: a figure differs
"""
import os
import re
import subprocess
import sys
import tempfile

CELL = re.compile(r"(\d+(?:\.\d+)?)(ns|us|ms|s)(?: \((\d+\.\d+)x, loses (\d+\.\d+)%\))?")
UNIT = {"ns": 1e-9, "us": 1e-6, "ms": 1e-3, "s": 1.0}


def cells(line):
    """ranks, size and the cells (seconds, speedup or None, loss % or None) of a summary row."""
    parts = line.split()
    if len(parts) < 3 or not parts[0].isdigit():
        return None
    found = [(float(m.group(1)) * UNIT[m.group(2)],
              float(m.group(3)) if m.group(3) else None,
              float(m.group(4)) if m.group(4) else None)
             for m in CELL.finditer(line[line.index(parts[1]) + len(parts[1]):])]
    return (parts[0], parts[1]), found, parts[-1]


def summary_rows(text):
    rows = {}
    for line in text.splitlines():
        row = cells(line)
        if row and row[1]:
            rows[row[0]] = (row[1], row[2])
    return rows


def readme_block(readme):
    lines = readme.splitlines()
    start = next(i for i, l in enumerate(lines) if l.startswith("$ stragglesim run -o results/default"))
    end = next(i for i in range(start, len(lines)) if lines[i].startswith("```"))
    return "\n".join(lines[start + 1:end])


def close(a, b, rel):
    return abs(a - b) <= rel * max(abs(a), abs(b))


def main():
    binary, source = sys.argv[1], sys.argv[2]
    readme_path = sys.argv[3] if len(sys.argv) > 3 else os.path.join(source, "README.md")
    readme = open(readme_path, encoding="utf-8").read()
    shown = summary_rows(readme_block(readme))
    if not shown:
        print(f"{readme_path}: no summary rows under `$ stragglesim run -o results/default`")
        return 1
    with tempfile.TemporaryDirectory(prefix="ssim_readme_") as out:
        run = subprocess.run([binary, "run", os.path.join(source, "configs/experiments/default.yaml"),
                              "--no-plots", "-o", os.path.join(out, "default")],
                             capture_output=True, text=True, check=False)
    if run.returncode != 0:
        print(f"stragglesim run failed ({run.returncode}):\n{run.stderr}")
        return 1
    rerun = summary_rows(run.stdout)
    errors = []
    for key, (want, winner) in shown.items():
        if key not in rerun:
            errors.append(f"README row {key}: no such point in the rerun")
            continue
        got, got_winner = rerun[key]
        if len(got) != len(want):
            errors.append(f"README row {key}: {len(want)} cells, the rerun has {len(got)}")
            continue
        for col, (w, g) in enumerate(zip(want, got)):
            if not close(w[0], g[0], 1e-3):
                errors.append(f"row {key} column {col + 1}: README {w[0]:.6g} s, rerun {g[0]:.6g} s")
            if (w[1] is None) != (g[1] is None) or (w[1] is not None and not close(w[1], g[1], 1e-3)):
                errors.append(f"row {key} column {col + 1}: README speedup {w[1]}, rerun {g[1]}")
            if (w[2] is None) != (g[2] is None) or (w[2] is not None and abs(w[2] - g[2]) > 0.1):
                errors.append(f"row {key} column {col + 1}: README loses {w[2]}%, rerun {g[2]}%")
        if winner != got_winner:
            errors.append(f"row {key}: README winner {winner}, rerun {got_winner}")
    # The opening paragraph's speedup: StragglAR (the first column) at 1 GiB on N GPUs.
    m = re.search(r"makes a 1 GiB AllReduce (\d+\.\d+)x faster than what NCCL runs on (\d+) GPUs",
                  " ".join(readme.split()))
    if not m:
        errors.append("README: the opening paragraph's speedup ('makes a 1 GiB AllReduce "
                      "X.XXXx faster than what NCCL runs on N GPUs') is not there")
    elif (m.group(2), "1GiB") not in rerun or rerun[(m.group(2), "1GiB")][0][0][1] is None:
        errors.append(f"README quotes {m.group(2)} GPUs at 1 GiB: no such point in the rerun")
    elif not close(float(m.group(1)), rerun[(m.group(2), "1GiB")][0][0][1], 1e-3):
        errors.append(f"README: {m.group(1)}x on {m.group(2)} GPUs, rerun "
                      f"{rerun[(m.group(2), '1GiB')][0][0][1]}x")
    for e in errors:
        print(e)
    print(f"{len(shown)} README rows checked against a rerun of configs/experiments/default.yaml: "
          f"{'ok' if not errors else str(len(errors)) + ' differences'}")
    return 1 if errors else 0


if __name__ == "__main__":
    sys.exit(main())
