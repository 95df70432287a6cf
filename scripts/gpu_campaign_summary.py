#!/usr/bin/env python3
"""The summary table of a GPU campaign folder (scripts/gpu_campaign.sh): per run and size, the
median time after the last arrival and from the first arrival, the median arrival spread without
a delay, the wrong elements, and, where the run's transport moves a known number of bytes through
device memory, those bytes over the time from the first arrival (every byte of the collective is
moved in it) against the copy bandwidth measured in the same campaign.

    python3 scripts/gpu_campaign_summary.py DIR [--stragglesim BIN]

Bytes moved through device memory per byte a schedule transfers: single-gpu transport (a copy
into scratch, then the apply kernel) 5 per reduced byte, 4 per copied byte; direct transport (one
kernel reads the peer and the local chunk and writes once) 3 and 2, plus 2 for a byte it stages
through scratch (a sender that writes, in the same round, a range it sends). The schedule's reduced and
copied bytes come from `stragglesim schedule ALG --ranks N --format json` when the simulator's
binary is given or found beside this script's build; without it that column is left out.
Only the standard library: it runs on a GPU machine with nothing installed."""
import csv
import json
import os
import re
import statistics
import subprocess
import sys
import tempfile

FACTORS = {"single-gpu": (5, 4), "direct": (3, 2)}


def median(xs):
    return statistics.median(xs) if xs else float("nan")


def read_copy_bandwidth(folder):
    """The copy bandwidth of the largest size in ceilings.txt, bytes read + written per s."""
    path = os.path.join(folder, "ceilings.txt")
    best = None
    if os.path.exists(path):
        for line in open(path):
            m = re.search(r"bytes=(\d+) copy_s=(\S+) copy_GBps_rw=(\S+)", line)
            if m:
                best = (int(m.group(1)), float(m.group(3)) * 1e9)
    return best[1] if best else None


def schedule_bytes(binary, algorithm, ranks, options, cache):
    """(reduced, copied) chunk units summed over every transfer, and the chunk count."""
    key = (algorithm, ranks, options)
    if key in cache:
        return cache[key]
    result = None
    if binary:
        with tempfile.TemporaryDirectory() as tmp:
            out = os.path.join(tmp, "s.json")
            cmd = [binary, "schedule", algorithm, "--ranks", str(ranks), "--format", "json", "-o", out]
            for opt in options.split(";") if options else []:
                cmd += ["--option", opt]
            if subprocess.run(cmd, capture_output=True).returncode == 0:
                s = json.load(open(out))
                red = cop = sred = scop = 0
                for rnd in s["rounds"]:
                    # What each rank writes in this round: a transfer whose source range the
                    # sender also writes in the round is staged by the direct transport.
                    writes = {}
                    for t in rnd["transfers"]:
                        writes.setdefault(t["dst"], []).append(t["chunks"])
                    for t in rnd["transfers"]:
                        width = t["chunks"][1] - t["chunks"][0]
                        staged = any(b < t["chunks"][1] and t["chunks"][0] < e
                                     for b, e in writes.get(t["src"], []))
                        if t["op"] == "reduce":
                            red += width
                            sred += width if staged else 0
                        else:
                            cop += width
                            scop += width if staged else 0
                result = (red, cop, sred, scop, s["chunks"])
    cache[key] = result
    return result


def main():
    args = sys.argv[1:]
    if not args or args[0].startswith("-"):
        sys.exit(__doc__)
    folder = args[0]
    binary = None
    if "--stragglesim" in args:
        binary = args[args.index("--stragglesim") + 1]
    else:
        guess = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "build",
                             "experiments", "stragglesim")
        if os.access(guess, os.X_OK):
            binary = guess
    copy_bw = read_copy_bandwidth(folder)
    cache = {}
    print(f"copy bandwidth (read + written): "
          f"{copy_bw / 1e12:.2f} TB/s" if copy_bw else "copy bandwidth: not measured")
    header = ("run", "bytes", "after_last_ms", "time_ms", "spread_us", "wrong", "moved_GB", "of_copy_bw")
    print("%-44s %11s %13s %9s %9s %5s %8s %10s" % header)
    for name in sorted(os.listdir(folder)):
        if not name.endswith(".csv") or name.startswith("tl-"):
            continue
        rows = list(csv.DictReader(open(os.path.join(folder, name))))
        by_size = {}
        for r in rows:
            by_size.setdefault(int(r["bytes"]), []).append(r)
        for size in sorted(by_size):
            rs = by_size[size]
            alg, ranks = rs[0]["algorithm"], int(rs[0]["ranks"])
            after = median([float(r["after_last_arrival_s"]) for r in rs])
            total = median([float(r["time_s"]) for r in rs])
            spread = median([float(r.get("arrival_spread_s") or "nan") for r in rs])
            wrong = sum(int(r["wrong"]) for r in rs if r.get("wrong"))
            transport = "direct" if name.startswith("direct-") else (
                "single-gpu" if name.startswith("single-gpu-") else None)
            moved = ratio = ""
            options = "gpus_per_node=4" if alg in ("hierarchical", "stragglar_hier") else ""
            counts = schedule_bytes(binary, alg.split("+")[0], ranks, options, cache) if transport else None
            if counts:
                red, cop, sred, scop, chunks = counts
                fr, fc = FACTORS[transport]
                units = red * fr + cop * fc
                if transport == "direct":  # a staged byte is also copied into scratch: 2 more
                    units += 2 * (sred + scop)
                b = units * size / chunks
                moved = "%.3f" % (b / 1e9)
                if copy_bw and total > 0:
                    ratio = "%.0f%%" % (100 * b / total / copy_bw)
            spread_us = "" if spread != spread else "%.1f" % (spread * 1e6)
            print("%-44s %11d %13.4f %9.4f %9s %5d %8s %10s" % (
                name[:-4], size, after * 1e3, total * 1e3, spread_us, wrong, moved, ratio))


if __name__ == "__main__":
    main()
